"""Structural-schema handling for custom objects: pruning, defaulting, validation.

This mirrors what apiextensions-apiserver does to a custom object before it is
stored, in the same order:

1. **Pruning** (``structuralpruning``): fields not specified by the schema are
   dropped, except where ``x-kubernetes-preserve-unknown-fields: true`` says
   to keep them (only at that level: specified properties below it are still
   pruned), under ``additionalProperties``, and ``apiVersion``/``kind``/
   ``metadata`` at the root and in ``x-kubernetes-embedded-resource`` objects
   (whatever the schema says about them; ``metadata`` keeps only ObjectMeta's
   fields).
   ``null`` values of non-nullable properties are dropped unless the property
   has a default (then the default replaces the null).
2. **Defaulting** (``structuraldefaulting``): a missing property with a
   ``default`` gets a deep copy of it; defaulting recurses into present and
   freshly defaulted values, array items and ``additionalProperties`` values.
3. **Validation** with the ``jsonschema`` package against the OpenAPI v3
   schema (converted to draft 4, where OpenAPI 3.0's boolean
   ``exclusiveMinimum`` lives), then ``x-kubernetes-list-type`` set/map
   uniqueness, embedded-resource ``apiVersion``/``kind`` presence and
   ``x-kubernetes-validations`` CEL rules (a subset, see ``cel.py``; rules
   outside it are skipped, never failed).

Errors are returned as Kubernetes ``StatusCause`` dicts
(``{"reason", "message", "field"}``) whose ``field`` uses kube's path form
(``spec.ports[0].port``) and whose ``message`` is the field error body exactly
as ``k8s.io/apimachinery/pkg/util/validation/field`` renders it, e.g.
``Invalid value: 0: spec.ports[0].port in body should be greater than or
equal to 1``.

Invariant: the schemas handed in (``ResourceType.schema``) are never mutated;
converted validators are cached per schema object.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import ipaddress
import json
import logging
import math
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Container, Iterator, Sequence
from typing import Any, cast

import jsonschema
import jsonschema.validators

from pycontroller.labels import is_dns1123_subdomain
from pycontroller.testing.apiserver.gofmt import quote as _go_quote
from pycontroller.testing.apiserver.registry import scale as scale_mod
from pycontroller.testing.apiserver.registry.names import (
    label_value_errors,
    qualified_name_errors,
    validate_name,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import cel, decode
from pycontroller.testing.apiserver.status import bad_request

logger = logging.getLogger(__name__)

__all__ = [
    "apply_defaults",
    "check_embedded_types",
    "field_path",
    "go_value",
    "prune",
    "unknown_fields",
    "validate_custom_object",
    "validate_value",
]

Schema = dict[str, Any]
PathPart = str | int

# Fields that always survive pruning at the root and in embedded resources.
_ROOT_KEEP = ("apiVersion", "kind", "metadata")
# ObjectMeta's JSON fields: anything else in a custom object's metadata is dropped.
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)

_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_EMBEDDED = "x-kubernetes-embedded-resource"
_INT_OR_STRING = "x-kubernetes-int-or-string"
_LIST_TYPE = "x-kubernetes-list-type"
_MAP_TYPE = "x-kubernetes-map-type"
_LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
# Private keyword carried into converted schemas so type errors can name the
# schema's own type(s) (without the "null" that `nullable` adds).
_KUBE_TYPE = "x-pycontroller-type"


# --------------------------------------------------------------------------
# Paths and Go-style value rendering
# --------------------------------------------------------------------------


def field_path(parts: Sequence[PathPart]) -> str:
    """Render a path as kube's ``field.Path`` does: ``spec.ports[0].port``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out = f"{out}.{p}" if out else p
    return out


def _go_float(v: float) -> str:
    """Format like Go's ``%v`` for float64 (strconv 'g', shortest, eprec 6)."""
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    if v == 0:
        return "0"
    r = repr(v)  # shortest round-trip digits
    mantissa, _, exp_s = r.partition("e")
    exp_from_repr = int(exp_s) if exp_s else 0
    neg = mantissa.startswith("-")
    mantissa = mantissa.lstrip("-")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    if frac_part == "0":
        frac_part = ""
    # decimal exponent of the first significant digit
    stripped_int = int_part.lstrip("0")
    if stripped_int:
        exp = len(stripped_int) - 1 + exp_from_repr
    else:
        exp = -(len(frac_part) - len(frac_part.lstrip("0"))) - 1 + exp_from_repr
    digits = digits.rstrip("0") or "0"
    sign = "-" if neg else ""
    if exp < -4 or exp >= 6:
        m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{m}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= 0:
        if len(digits) <= exp + 1:
            return sign + digits + "0" * (exp + 1 - len(digits))
        return sign + digits[: exp + 1] + "." + digits[exp + 1 :]
    return sign + "0." + "0" * (-exp - 1) + digits


def _go_sharp_v(v: Any) -> str:
    """Go's ``%#v`` of a decoded-JSON value inside ``interface{}``."""
    if v is None:
        return "interface {}(nil)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, str):
        return _go_quote(v)
    if isinstance(v, dict):
        inner = ", ".join(f"{_go_quote(str(k))}:{_go_sharp_v(v[k])}" for k in sorted(v))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(_go_sharp_v(x) for x in v) + "}"
    return repr(v)


def go_value(v: Any) -> str:
    """Render a bad value as ``field.Error.ErrorBody`` does (``%#v``, but null as ``"null"``)."""
    return '"null"' if v is None else _go_sharp_v(v)


def _num(v: Any) -> str:
    if isinstance(v, float):
        return _go_float(v)
    return str(v)


def _cause(reason: str, message: str, path: Sequence[PathPart]) -> dict[str, Any]:
    return {"reason": reason, "message": message, "field": field_path(path)}


def _invalid(path: Sequence[PathPart], value: Any, detail: str) -> dict[str, Any]:
    return _cause("FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}", path)


def _json_type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


# --------------------------------------------------------------------------
# Pruning
# --------------------------------------------------------------------------


def _is_object_schema(s: Schema) -> bool:
    return s.get("type") == "object" or "properties" in s or "additionalProperties" in s


def _prune_object(
    obj: dict[str, Any],
    s: Schema,
    path: list[PathPart],
    dropped: list[str],
    *,
    root: bool,
    mutate: bool,
) -> None:
    props: dict[str, Schema] = s.get("properties") or {}
    addl = s.get("additionalProperties")
    preserve = bool(s.get(_PRESERVE))
    embedded = bool(s.get(_EMBEDDED))
    keep_always = _ROOT_KEEP if (root or embedded) else ()
    for key in list(obj):
        value = obj[key]
        sub_path = [*path, key]
        if key in keep_always:
            # Never pruned by the schema (kubebuilder CRDs say `metadata: {type:
            # object}`); metadata is coerced to ObjectMeta's fields instead.
            if key == "metadata" and isinstance(value, dict):
                for mkey in list(value):
                    if mkey not in _OBJECT_META_FIELDS:
                        dropped.append("." + field_path([*sub_path, mkey]))
                        if mutate:
                            del value[mkey]
            continue
        if key in props:
            prop = props[key]
            if value is None and not prop.get("nullable") and "default" not in prop:
                # kube: non-nullable nulls without a default are pruned.
                if mutate:
                    del obj[key]
                continue
            _prune_value(value, prop, sub_path, dropped, mutate=mutate)
        elif isinstance(addl, dict):
            _prune_value(value, addl, sub_path, dropped, mutate=mutate)
        elif addl is True or preserve:
            continue
        else:
            dropped.append("." + field_path(sub_path))
            if mutate:
                del obj[key]


def _prune_value(
    value: Any, s: Schema, path: list[PathPart], dropped: list[str], *, mutate: bool
) -> None:
    if isinstance(value, dict):
        # A dict under a non-object schema (wrong type, int-or-string, bare
        # preserve-unknown-fields) is left alone; validation reports type errors.
        if _is_object_schema(s) or s.get(_EMBEDDED):
            _prune_object(value, s, path, dropped, root=False, mutate=mutate)
    elif isinstance(value, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _prune_value(item, items, [*path, i], dropped, mutate=mutate)


def prune(schema: Schema, obj: dict[str, Any]) -> list[str]:
    """Drop fields the schema does not specify from ``obj`` (in place).

    Returns the dropped paths (``.spec.foo``). ``apiVersion``, ``kind`` and
    ``metadata`` are always kept at the root.
    """
    dropped: list[str] = []
    _prune_object(obj, schema, [], dropped, root=True, mutate=True)
    return dropped


def unknown_fields(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Paths (``.spec.foo``, ``.spec.ports[0].bar``) that pruning would drop.

    Does not mutate ``obj``. Returns ``[]`` for resources without a schema.
    Used for ``fieldValidation=Strict`` (reject) and ``Warn`` (warning header).
    """
    if rt.schema is None:
        return []
    dropped: list[str] = []
    _prune_object(obj, rt.schema, [], dropped, root=True, mutate=False)
    return dropped


# --------------------------------------------------------------------------
# Defaulting
# --------------------------------------------------------------------------


def _default_value(value: Any, s: Schema, skip: Container[str] = ()) -> None:
    """Apply ``s``'s defaults inside ``value``; keys in ``skip`` (this level only) are left."""
    if isinstance(value, dict):
        props: dict[str, Schema] = s.get("properties") or {}
        for key, prop in props.items():
            if key in skip:
                continue
            if "default" in prop and (
                key not in value or (value[key] is None and not prop.get("nullable"))
            ):
                value[key] = copy.deepcopy(prop["default"])
            if key in value:
                _default_value(value[key], prop)
        addl = s.get("additionalProperties")
        if isinstance(addl, dict):
            for key, v in value.items():
                if key not in props and key not in skip:
                    _default_value(v, addl)
    elif isinstance(value, list):
        items = s.get("items")
        if isinstance(items, dict):
            for item in value:
                _default_value(item, items)


def apply_defaults(schema: Schema, obj: dict[str, Any]) -> None:
    """Apply schema ``default``s to ``obj`` in place (apiextensions semantics).

    The root's ``apiVersion``/``kind``/``metadata`` are never defaulted.
    """
    _default_value(obj, schema, skip=_ROOT_KEEP)


# --------------------------------------------------------------------------
# Conversion to a draft-4 JSON Schema for the jsonschema package
# --------------------------------------------------------------------------

_SCHEMA_MAP_KEYS = ("properties", "patternProperties", "definitions")
_SCHEMA_LIST_KEYS = ("allOf", "anyOf", "oneOf")
_DROP_KEYS = frozenset(
    {
        "default",
        "example",
        "description",
        "title",
        "externalDocs",
        "nullable",
        "id",
        "$schema",
        "$ref",
        _PRESERVE,
        _EMBEDDED,
        _INT_OR_STRING,
        _LIST_TYPE,
        _LIST_MAP_KEYS,
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    }
)


def _convert(s: Schema) -> Schema:
    out: Schema = {}
    for key, value in s.items():
        if key in _DROP_KEYS:
            continue
        if key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            out[key] = {n: _convert(p) for n, p in value.items()}
        elif key in ("additionalProperties", "additionalItems"):
            out[key] = _convert(value) if isinstance(value, dict) else value
        elif key == "items":
            if isinstance(value, dict):
                out[key] = _convert(value)
            elif isinstance(value, list):
                out[key] = [_convert(x) for x in value]
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [_convert(x) for x in value]
        elif key == "not" and isinstance(value, dict):
            out[key] = _convert(value)
        elif key == "required":
            if value:
                out[key] = list(value)
        elif key == "type":
            continue  # handled below
        elif key == "pattern":
            # kube patterns are RE2; the few RE2-only constructs Python's re
            # lacks would crash validation, so such a pattern is not enforced.
            try:
                re.compile(str(value))
            except re.error:
                logger.warning("schema pattern %r is not supported; not enforced", value)
                continue
            out[key] = value
        else:
            out[key] = value
    types: list[str] = []
    if s.get(_INT_OR_STRING):
        types = ["integer", "string"]
    elif isinstance(s.get("type"), str) and s["type"]:
        types = [s["type"]]
    if types:
        out[_KUBE_TYPE] = ",".join(types)
        out["type"] = [*types, "null"] if s.get("nullable") else types
    if s.get("nullable") and "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _is_integer(checker: Any, instance: Any) -> bool:
    # go-openapi accepts float64 values that are whole numbers as integers.
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):
        return True
    return isinstance(instance, float) and instance.is_integer()


_TYPE_CHECKER = jsonschema.Draft4Validator.TYPE_CHECKER.redefine("integer", _is_integer)
_Validator: Any = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft4Validator, type_checker=_TYPE_CHECKER
)

_FORMAT_CHECKER = jsonschema.FormatChecker(formats=())

_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2})$")
_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w))+$|^0$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")


def _parses(parse: Callable[[str], object], *errors: type[Exception]) -> Callable[[str], bool]:
    """A check that ``parse(v)`` does not raise one of ``errors``."""

    def check(v: str) -> bool:
        try:
            parse(v)
        except errors:
            return False
        return True

    return check


def _date_time_ok(v: str) -> bool:
    return bool(_DATE_TIME.match(v)) and _parses(
        lambda x: datetime.datetime.fromisoformat(x.replace("z", "Z").replace("Z", "+00:00")),
        ValueError,
    )(v)


# OpenAPI formats kube-apiserver checks, as predicates on strings (non-strings
# are left to the ``type`` keyword, so they pass here).
_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time_ok,
    "datetime": _date_time_ok,
    "date": lambda v: len(v) == 10 and _parses(datetime.date.fromisoformat, ValueError)(v),
    "byte": _parses(lambda v: base64.b64decode(v, validate=True), binascii.Error, ValueError),
    "uuid": _parses(uuid.UUID, ValueError),
    "ipv4": _parses(ipaddress.IPv4Address, ValueError),
    "ipv6": _parses(ipaddress.IPv6Address, ValueError),
    "cidr": lambda v: "/" in v
    and _parses(lambda x: ipaddress.ip_network(x, strict=False), ValueError)(v),
    "mac": lambda v: bool(_MAC.match(v)),
    "hostname": is_dns1123_subdomain,
    "email": lambda v: bool(_EMAIL.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
}


def _register_format(name: str, ok: Callable[[str], bool]) -> None:
    _FORMAT_CHECKER.checks(name)(lambda v: not isinstance(v, str) or ok(v))


for _name, _ok in _FORMATS.items():
    _register_format(_name, _ok)


class _Compiled:
    """A converted schema and its validator; holds ``source`` so ``id()`` stays unique."""

    __slots__ = ("has_embedded", "has_rules", "source", "validator")

    def __init__(self, source: Schema) -> None:
        self.source = source
        self.validator = _Validator(_convert(source), format_checker=_FORMAT_CHECKER)
        # kube builds a CEL validator only for schemas with rules somewhere.
        text = json.dumps(source)
        self.has_rules = '"x-kubernetes-validations"' in text
        self.has_embedded = '"x-kubernetes-embedded-resource"' in text


_BLOCKING = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
# field.Invalid(nil, nil, ...): a nil path prints "<nil>", a nil value "null".
_SKIPPED_RULES = {
    "reason": "FieldValueInvalid",
    "message": 'Invalid value: "null": some validation rules were not checked because the '
    "object was invalid; correct the existing errors to complete validation",
    "field": "<nil>",
}


_CACHE_SIZE = 256
_cache: OrderedDict[int, _Compiled] = OrderedDict()
_cache_lock = threading.Lock()


def _compiled(schema: Schema) -> _Compiled:
    key = id(schema)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit.source is schema:
            _cache.move_to_end(key)
            return hit
    compiled = _Compiled(schema)
    with _cache_lock:
        _cache[key] = compiled
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _error_causes(
    err: jsonschema.ValidationError, prefix: Sequence[PathPart] = ()
) -> Iterator[dict[str, Any]]:
    """``kubeOpenAPIResultToFieldErrors(prefix, ...)``: the go-openapi name in
    the message is relative to the validated value, the field is under ``prefix``."""
    rel: list[PathPart] = list(err.absolute_path)
    p = field_path(rel)
    path: list[PathPart] = [*prefix, *rel]
    kw = err.validator
    value: Any = cast(Any, err.validator_value)
    inst: Any = cast(Any, err.instance)
    sch: Schema = err.schema if isinstance(err.schema, dict) else {}
    if kw == "required":
        assert isinstance(inst, dict)
        for name in value:
            if name not in inst:
                yield _cause("FieldValueRequired", "Required value", [*path, name])
        return
    if kw == "type":
        want = sch.get(_KUBE_TYPE) or (value if isinstance(value, str) else ",".join(value))
        got = _json_type_name(inst)
        msg = (
            f"Invalid value: {_go_quote(got)}: {p} in body must be of type {want}: {_go_quote(got)}"
        )
        yield _cause("FieldValueTypeInvalid", msg, path)
        return
    if kw == "format":
        msg = f"{p} in body must be of type {value}: {_go_quote(str(inst))}"
        yield _cause("FieldValueTypeInvalid", f"Invalid value: {go_value(inst)}: {msg}", path)
        return
    if kw == "enum":
        allowed = [v if isinstance(v, str) else json.dumps(v) for v in value if v is not None]
        detail = ", ".join(_go_quote(v) for v in allowed)
        msg = f"Unsupported value: {go_value(inst)}: supported values: {detail}"
        yield _cause("FieldValueNotSupported", msg, path)
        return
    if kw == "maxLength":
        # field.TooLong, 1.32 wording (1.31: "must have at most N bytes").
        yield _cause("FieldValueTooLong", f"Too long: may not be more than {value} bytes", path)
        return
    if kw in ("maxItems", "maxProperties"):
        msg = f"Too many: {len(inst)}: must have at most {value} items"
        yield _cause("FieldValueTooMany", msg, path)
        return
    if kw == "minimum":
        op = "greater than" if sch.get("exclusiveMinimum") else "greater than or equal to"
        detail = f"{p} in body should be {op} {_num(value)}"
    elif kw == "maximum":
        op = "less than" if sch.get("exclusiveMaximum") else "less than or equal to"
        detail = f"{p} in body should be {op} {_num(value)}"
    elif kw == "minLength":
        detail = f"{p} in body should be at least {value} chars long"
    elif kw == "pattern":
        detail = f"{p} in body should match '{value}'"
    elif kw == "minItems":
        detail = f"{p} in body should have at least {value} items"
    elif kw == "minProperties":
        detail = f"{p} in body should have at least {value} properties"
    elif kw == "multipleOf":
        detail = f"{p} in body should be a multiple of {_num(value)}"
    elif kw == "uniqueItems":
        detail = f"{p} in body shouldn't contain duplicates"
    elif kw == "anyOf":
        detail = f"{p} in body must validate at least one schema (anyOf)"
    elif kw == "oneOf":
        detail = f"{p} in body must validate one and only one schema (oneOf)"
    elif kw == "allOf":
        detail = f"{p} in body must validate all the schemas (allOf)"
    elif kw == "not":
        detail = f"{p} in body must not validate the schema (not)"
    elif kw == "additionalProperties":
        detail = f"{p} in body is a forbidden property"
    else:
        detail = f"{p} in body {err.message}"
    yield _invalid(path, inst, detail)


_MISSING = object()
# What a rule outside our CEL subset may raise; such a rule is skipped.
_CEL_FAILURES = (
    cel.CELError,
    RecursionError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    ZeroDivisionError,
    OverflowError,
)
_CEL_REASONS = {
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
}


def _rule_field_path(path: list[PathPart], rule_field_path: Any) -> list[PathPart] | None:
    """Append a rule's ``fieldPath`` (``.spec.x``, ``.items[0]``, ``['a.b']``)."""
    if not rule_field_path:
        return path
    try:
        steps = re.findall(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\['([^']*)'\]", rule_field_path)
    except TypeError:
        return None
    out = list(path)
    for name, index, quoted in steps:
        out.append(int(index) if index else (name or quoted))
    return out


class _Corr:
    """apiserver ``cel/common.CorrelatedObject``: a new value, the old value it
    correlates with, and their schema; ``equal()`` is ``CachedDeepEqual``."""

    __slots__ = ("_children", "_eq", "_old_items", "old", "schema", "value")

    def __init__(self, value: Any, old: Any, schema: Schema) -> None:
        self.value = value
        self.old = old
        self.schema = schema
        self._children: dict[PathPart, _Corr | None] = {}
        self._eq: bool | None = None
        self._old_items: dict[str, Any] | None = None

    def key(self, name: str) -> _Corr | None:
        if name in self._children:
            return self._children[name]
        child: _Corr | None = None
        if (
            isinstance(self.value, dict)
            and isinstance(self.old, dict)
            and name in self.value
            and name in self.old
        ):
            props = self.schema.get("properties") or {}
            addl = self.schema.get("additionalProperties")
            sub = props.get(name) if name in props else addl if isinstance(addl, dict) else None
            if isinstance(sub, dict):
                child = _Corr(self.value[name], self.old[name], sub)
        self._children[name] = child
        return child

    def index(self, i: int) -> _Corr | None:
        """Only ``x-kubernetes-list-type: map`` items correlate (by key)."""
        if i in self._children:
            return self._children[i]
        child: _Corr | None = None
        items = self.schema.get("items")
        if (
            self.schema.get(_LIST_TYPE) == "map"
            and isinstance(self.value, list)
            and isinstance(self.old, list)
            and i < len(self.value)
            and isinstance(items, dict)
        ):
            keys: list[str] = list(self.schema.get(_LIST_MAP_KEYS) or [])
            if self._old_items is None:
                self._old_items = {}
                for o in self.old:
                    if isinstance(o, dict):
                        self._old_items.setdefault(_map_key(o, keys), o)
            item = self.value[i]
            if isinstance(item, dict):
                old_item = self._old_items.get(_map_key(item, keys))
                if old_item is not None:
                    child = _Corr(item, old_item, items)
        self._children[i] = child
        return child

    def equal(self) -> bool:
        if self._eq is None:
            self._eq = self._equal()
        return self._eq

    def _equal(self) -> bool:
        new, old = self.value, self.old
        if new is None or old is None:
            return new is None and old is None
        if isinstance(new, list) and isinstance(old, list):
            if len(new) != len(old):
                return False
            for i in range(len(new)):
                child = self.index(i)
                if child is None:
                    if self._old_items is None:
                        return _deep_equal(old, new)
                    return False
                if not child.equal():
                    return False
            return True
        if isinstance(new, dict) and isinstance(old, dict):
            if len(new) != len(old):
                return False
            for k in new:
                child = self.key(k)
                if child is None or not child.equal():
                    return False
            return True
        if isinstance(new, list | dict) or isinstance(old, list | dict):
            return False
        return _deep_equal(old, new)


def _map_key(item: dict[str, Any], keys: list[str]) -> str:
    return json.dumps([item.get(k) for k in keys], sort_keys=True)


def _deep_equal(a: Any, b: Any) -> bool:
    """``reflect.DeepEqual`` on decoded JSON: ``True`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list | str) or isinstance(b, dict | list | str):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _schema_error_ratcheted(root: _Corr, node: Sequence[PathPart]) -> bool:
    """``ratchetingValueValidator``: the errors of a node are dropped when it,
    or an ancestor reached through correlatable steps, is unchanged (the
    root's ``apiVersion``/``kind`` never correlate)."""
    cur: _Corr | None = root
    for depth, step in enumerate(node):
        assert cur is not None
        if cur.equal():
            return True
        if isinstance(step, int):
            cur = cur.index(step)
        elif depth == 0 and step in ("apiVersion", "kind"):
            cur = None
        else:
            cur = cur.key(step)
        if cur is None:
            return False
    return cur is not None and cur.equal()


_COMBINATORS = frozenset({"allOf", "anyOf", "oneOf", "not"})


def _error_node(err: jsonschema.ValidationError) -> list[PathPart]:
    """The instance path of the schema node whose validator raised ``err``:
    descendants of ``allOf``/``anyOf``/``oneOf``/``not`` are validated
    without ratcheting, so their errors belong to the combinator's node."""
    steps = 0
    schema_path = list(err.absolute_schema_path)
    i = 0
    while i < len(schema_path):
        kw = schema_path[i]
        if kw in _COMBINATORS:
            break
        if kw in ("properties", "patternProperties"):
            steps += 1
            i += 2
            continue
        if kw in ("additionalProperties", "items"):
            steps += 1
        i += 1
    return list(err.absolute_path)[: min(steps, len(err.absolute_path))]


def _cel_causes(
    value: Any,
    s: Schema,
    path: list[PathPart],
    old: Any,
    ratchet: tuple[_Corr | None, _Corr | None],
    warnings: list[str] | None,
) -> Iterator[dict[str, Any]]:
    """Evaluate ``x-kubernetes-validations`` rules at one schema node.

    cel/validation.go ``validateExpressions``: transition rules (using
    ``oldSelf``) run only with a correlated old value, or with
    ``optionalOldSelf`` also without one (``oldSelf`` an optional); a failing
    rule that does not use ``oldSelf`` on a value whose nearest correlatable
    node is unchanged is a warning instead of an error (ratcheting). Rules
    that fail to parse or evaluate are skipped (see ``cel.py``).
    """
    rules = s.get("x-kubernetes-validations")
    if value is None or not isinstance(rules, list) or not rules:
        return
    cur, parent = ratchet
    for rule in rules:
        if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
            continue
        src = rule["rule"]
        transition = cel.uses_old_self(src)
        optional_old = rule.get("optionalOldSelf") is True
        if transition and old is _MISSING and not optional_old:
            continue
        try:
            if optional_old:
                old_self: Any = cel.optional(old is not _MISSING, None if old is _MISSING else old)
                result = cel.evaluate(src, value, old_self)
            elif transition:
                result = cel.evaluate(src, value, old)
            else:
                result = cel.evaluate(src, value)
        except _CEL_FAILURES as err:
            logger.debug("CEL rule %r not evaluated: %s", src, err)
            continue
        if result is not False:
            continue
        raw_message = rule.get("message")
        message = raw_message.strip() if isinstance(raw_message, str) else ""
        expr = rule.get("messageExpression")
        if isinstance(expr, str):
            try:
                text = cel.evaluate(expr, value)
                if isinstance(text, str) and text.strip():
                    message = text.strip()
            except _CEL_FAILURES:
                pass
        if not message:
            message = f"failed rule: {src.strip()}"
        err_path = _rule_field_path(path, rule.get("fieldPath"))
        if err_path is None:
            err_path = path
        field = field_path(err_path) or "<nil>"
        reason = rule.get("reason") if rule.get("reason") in _CEL_REASONS else "FieldValueInvalid"
        type_name = str(s.get("type", ""))
        if reason == "FieldValueForbidden":
            text_out = f"Forbidden: {message}"
        elif reason == "FieldValueRequired":
            text_out = f"Required value: {message}"
        elif reason == "FieldValueDuplicate":
            text_out = f"Duplicate value: {_go_quote(type_name)}"
        else:
            text_out = f"Invalid value: {_go_quote(type_name)}: {message}"
        ratcheted = cur.equal() if cur is not None else parent is not None and parent.equal()
        if not transition and ratcheted:
            if warnings is not None:
                warnings.append(f"{field}: {text_out}")
            continue
        yield {"reason": reason, "message": text_out, "field": field}


def _cel_walk(
    value: Any,
    s: Schema,
    path: list[PathPart],
    old: Any,
    ratchet: tuple[_Corr | None, _Corr | None],
    warnings: list[str] | None,
) -> Iterator[dict[str, Any]]:
    """cel/validation.go ``validate``: the rules of ``s``, then those below,
    ``old`` the correlated old value (map entries unless the map is atomic,
    ``list-type: map`` items by key) and ``ratchet`` the
    ``ratchetingOptions`` (current correlation, nearest correlated parent)."""
    yield from _cel_causes(value, s, path, old, ratchet, warnings)
    cur, parent = ratchet
    if isinstance(value, dict):
        props: dict[str, Schema] = s.get("properties") or {}
        addl = s.get("additionalProperties")
        old_map = old if isinstance(old, dict) and s.get(_MAP_TYPE) != "atomic" else {}
        for key, v in value.items():
            sub = props.get(key) if key in props else addl if isinstance(addl, dict) else None
            if not isinstance(sub, dict):
                continue
            if cur is None:
                child = ratchet
            elif parent is None and not path and key in ("apiVersion", "kind"):
                child = (None, None)
            else:
                child = (cur.key(key), cur)
            yield from _cel_walk(v, sub, [*path, key], old_map.get(key, _MISSING), child, warnings)
    elif isinstance(value, list):
        items = s.get("items")
        if not isinstance(items, dict):
            return
        keys: list[str] = list(s.get(_LIST_MAP_KEYS) or [])
        old_by_key: dict[str, Any] = {}
        if s.get(_LIST_TYPE) == "map" and isinstance(old, list):
            for o in old:
                if isinstance(o, dict):
                    old_by_key.setdefault(_map_key(o, keys), o)
        for i, item in enumerate(value):
            item_old = (
                old_by_key.get(_map_key(item, keys), _MISSING)
                if (old_by_key and isinstance(item, dict))
                else _MISSING
            )
            child = ratchet if cur is None else (cur.index(i), cur)
            yield from _cel_walk(item, items, [*path, i], item_old, child, warnings)


def _embedded_causes(value: dict[str, Any], path: list[PathPart]) -> Iterator[dict[str, Any]]:
    """objectmeta ``validateEmbeddedResource``: apiVersion/kind present,
    non-empty and well-formed; embedded metadata through ``ValidateObjectMeta``
    with ``path.ValidatePathSegmentName`` names."""
    for key in ("apiVersion", "kind"):
        if key not in value:
            yield _cause("FieldValueRequired", "Required value: must not be empty", [*path, key])
    for key in ("apiVersion", "kind"):
        v = value.get(key)
        if key not in value or not isinstance(v, str):
            continue
        if not v:
            yield _invalid([*path, key], v, "must not be empty")
        elif key == "apiVersion":
            if v.count("/") > 1:  # schema.ParseGroupVersion
                yield _invalid([*path, key], v, f"unexpected GroupVersion string: {v}")
        else:
            errs = validate_name("dns1035", v.lower())
            if errs:
                detail = "may have mixed case, but should otherwise match: " + ",".join(errs)
                yield _invalid([*path, key], v, detail)
    meta = value.get("metadata")
    if isinstance(meta, dict):
        yield from _embedded_meta_causes(meta, [*path, "metadata"])


def _embedded_meta_causes(meta: dict[str, Any], path: list[PathPart]) -> Iterator[dict[str, Any]]:
    generate = meta.get("generateName")
    if isinstance(generate, str) and generate:
        # ValidatePathSegmentName(prefix=true): only '/' and '%' matter.
        for ch in ("/", "%"):
            if ch in generate:
                yield _invalid([*path, "generateName"], generate, f"may not contain '{ch}'")
    name = meta.get("name")
    if isinstance(name, str) and name:
        for msg in validate_name("path", name):
            yield _invalid([*path, "name"], name, msg)
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        for msg in validate_name("label", namespace):
            yield _invalid([*path, "namespace"], namespace, msg)
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            for msg in qualified_name_errors(str(k)):
                yield _invalid([*path, "labels"], str(k), msg)
            if isinstance(v, str):
                for msg in label_value_errors(v):
                    yield _invalid([*path, "labels"], v, msg)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for k in annotations:
            for msg in qualified_name_errors(str(k).lower()):
                yield _invalid([*path, "annotations"], str(k), msg)


def _structural_causes(
    value: Any, s: Schema, path: list[PathPart], *, embedded: bool
) -> Iterator[dict[str, Any]]:
    """Walking ``value`` along the schema: embedded resources
    (``embedded``, objectmeta ``Validate``) or ``x-kubernetes-list-type``
    set/map uniqueness (listtype ``ValidateListSetsAndMaps``)."""
    if isinstance(value, dict):
        if s.get(_EMBEDDED) and embedded:
            yield from _embedded_causes(value, path)
        props: dict[str, Schema] = s.get("properties") or {}
        addl = s.get("additionalProperties")
        for key, v in value.items():
            if key in props:
                yield from _structural_causes(v, props[key], [*path, key], embedded=embedded)
            elif isinstance(addl, dict):
                yield from _structural_causes(v, addl, [*path, key], embedded=embedded)
    elif isinstance(value, list):
        list_type = s.get(_LIST_TYPE)
        if list_type == "set" and not embedded:
            seen: list[Any] = []
            for i, item in enumerate(value):
                if item in seen:
                    yield _cause(
                        "FieldValueDuplicate", f"Duplicate value: {go_value(item)}", [*path, i]
                    )
                else:
                    seen.append(item)
        keys: list[str] = list(s.get(_LIST_MAP_KEYS) or [])
        if list_type == "map" and not embedded:
            seen_keys: list[dict[str, Any]] = []
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                km = {k: item[k] for k in keys if k in item}
                if km in seen_keys:
                    msg = f"Duplicate value: {_go_sharp_v(km)}"
                    yield _cause("FieldValueDuplicate", msg, [*path, i])
                else:
                    seen_keys.append(km)
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                yield from _structural_causes(item, items, [*path, i], embedded=embedded)


def _error_order(err: jsonschema.ValidationError) -> list[tuple[int, int, str]]:
    """Errors sorted by path, array indices numerically (``[2]`` before ``[10]``)."""
    return [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in err.absolute_path]


def validate_value(
    schema: Schema,
    obj: Any,
    *,
    old: Any = None,
    warnings: list[str] | None = None,
    extra: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Validate ``obj`` against ``schema`` without pruning or defaulting.

    With ``old`` (an update), strategy.go ``ValidateUpdate`` with
    CRDValidationRatcheting (beta, on by default since 1.30): schema errors
    of a node that is unchanged from ``old`` (or has an unchanged correlated
    ancestor) are dropped, list-type duplicates are checked only when ``old``
    had none, and failing CEL rules without ``oldSelf`` on unchanged values
    become ``warnings``. ``extra`` (validator.go's scale checks) follows the
    schema errors.
    """
    validator = _compiled(schema).validator
    root = None if old is None else _Corr(obj, old, schema)
    causes: list[dict[str, Any]] = []
    for err in sorted(validator.iter_errors(obj), key=_error_order):
        if root is not None and _schema_error_ratcheted(root, _error_node(err)):
            continue
        causes.extend(_error_causes(err))
    causes.extend(extra)
    causes.extend(_structural_causes(obj, schema, [], embedded=True))
    if old is None or not any(_structural_causes(old, schema, [], embedded=False)):
        causes.extend(_structural_causes(obj, schema, [], embedded=False))
    if _compiled(schema).has_rules:
        # strategy.go hasBlockingErr: these error types skip the CEL rules.
        if any(c["reason"] in _BLOCKING for c in causes):
            causes.append(dict(_SKIPPED_RULES))
        else:
            old_value = _MISSING if old is None else old
            causes.extend(_cel_walk(obj, schema, [], old_value, (root, None), warnings))
    return causes


def _validate_status_update(
    schema: Schema, obj: dict[str, Any], old: dict[str, Any], extra: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """status_strategy.go ``ValidateUpdate``: ``.status`` alone against the
    status schema (``ValidateStatusUpdate``, no ratcheting option: every
    error counts), ``extra`` (``ValidateScaleStatus``), no embedded-resource
    checks, list-type duplicates only when ``old`` had none, then the CEL
    rules of the whole object with ``old`` but without ratcheting."""
    causes: list[dict[str, Any]] = []
    status_schema = (schema.get("properties") or {}).get("status")
    if "status" in obj and isinstance(status_schema, dict):
        validator = _compiled(status_schema).validator
        for err in sorted(validator.iter_errors(obj["status"]), key=_error_order):
            causes.extend(_error_causes(err, ("status",)))
    causes.extend(extra)
    new_dups = list(_structural_causes(obj, schema, [], embedded=False))
    if new_dups and not any(_structural_causes(old, schema, [], embedded=False)):
        causes.extend(new_dups)
    if _compiled(schema).has_rules:
        if any(c["reason"] in _BLOCKING for c in causes):
            causes.append(dict(_SKIPPED_RULES))
        else:
            causes.extend(_cel_walk(obj, schema, [], old, (None, None), None))
    return causes


def _coerce_error(value: Any, s: Schema, path: list[PathPart], rt: ResourceType) -> str | None:
    """objectmeta ``coercer.coerce`` without dropping: the first embedded
    resource whose apiVersion/kind is not a string or whose metadata does not
    decode as ``ObjectMeta``, as a ``field.Error`` string."""
    if isinstance(value, dict):
        if s.get(_EMBEDDED):
            for key, v in value.items():
                if key in ("apiVersion", "kind") and not isinstance(v, str):
                    where = field_path([*path, key])
                    return f"{where}: Invalid value: {go_value(v)}: must be a string"
                if key == "metadata" and v is not None:
                    try:
                        decode._check(rt, {"metadata": v})
                    except decode._TypeError as err:
                        where = field_path([*path, key])
                        return f"{where}: Invalid value: {go_value(v)}: {err.message}"
        props: dict[str, Schema] = s.get("properties") or {}
        addl = s.get("additionalProperties")
        for key, v in value.items():
            sub = props.get(key) if key in props else addl if isinstance(addl, dict) else None
            if isinstance(sub, dict):
                found = _coerce_error(v, sub, [*path, key], rt)
                if found:
                    return found
    elif isinstance(value, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                found = _coerce_error(item, items, [*path, i], rt)
                if found:
                    return found
    return None


def check_embedded_types(rt: ResourceType, obj: Any) -> None:
    """customresource_handler.go ``unstructuredSchemaCoercer.apply``: a
    custom object whose embedded resources have a non-string apiVersion/kind
    or undecodable metadata cannot be decoded; 400 BadRequest through
    ``transformDecodeError``."""
    if rt.schema is None or not isinstance(obj, dict) or not _compiled(rt.schema).has_embedded:
        return  # (no embedded resource: nothing to walk on this write)
    error = _coerce_error(obj, rt.schema, [], rt)
    if error is None:
        return
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else rt.kind
    api_version = obj.get("apiVersion")
    version = api_version.rpartition("/")[2] if isinstance(api_version, str) else rt.version
    raise bad_request(f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {error}')


def validate_custom_object(
    rt: ResourceType,
    obj: dict[str, Any],
    *,
    old: dict[str, Any] | None = None,
    warnings: list[str] | None = None,
    subresource: str = "",
) -> list[dict[str, Any]]:
    """Prune, default and validate a custom object in place; return causes.

    ``obj`` is mutated: unknown fields are dropped and defaults applied, so
    that what is stored is what kube would store. The whole object (spec and
    status) is validated, a ``status`` write as status_strategy.go does; an
    empty list means valid. A resource without a schema (built-ins) is left
    alone and always valid.
    """
    schema = rt.schema
    if schema is None:
        return []
    _prune_object(obj, schema, [], [], root=True, mutate=True)
    apply_defaults(schema, obj)
    # Defaults are pruned already in a valid CRD; prune again so a default
    # carrying unknown fields cannot leak them into storage.
    _prune_object(obj, schema, [], [], root=True, mutate=True)
    paths = scale_mod.scale_paths(rt) if rt.is_crd else None
    if subresource == "status" and old is not None:
        extra = scale_mod.validate_scale(obj, paths, spec=False) if paths else []
        return _validate_status_update(schema, obj, old, extra)
    extra = scale_mod.validate_scale(obj, paths, spec=True) if paths else []
    return validate_value(schema, obj, old=old, warnings=warnings, extra=extra)
