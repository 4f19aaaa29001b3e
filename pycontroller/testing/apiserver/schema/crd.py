"""CustomResourceDefinitions: validation, conversion to ``ResourceType``s, status.

Pure functions used by the embedded API server's apiextensions.k8s.io/v1
support:

- ``validate_crd(crd)`` returns kube-style ``StatusCause``s for an invalid
  CRD (the checks of apiextensions' ``ValidateCustomResourceDefinition`` that
  matter in tests: names, group, scope, versions, one storage version,
  structural schema basics, printer columns, list-type map keys,
  ``selectableFields``).
- ``crd_to_resource_types(crd)`` gives one ``ResourceType`` per *served*
  version.
- ``established_status(crd)`` is the status the apiextensions controllers
  (naming + establishing) converge to: ``NamesAccepted`` and ``Established``
  true, ``acceptedNames`` filled, ``storedVersions`` including the storage
  version.

Invariant: inputs are never mutated; every returned structure is fresh.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.labels import is_dns1123_subdomain
from pycontroller.meta import is_status_condition_true, set_status_condition
from pycontroller.testing.apiserver.gofmt import quote as _go_quote
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.structural import go_value, validate_value
from pycontroller.testing.apiserver.status import required_cause

logger = logging.getLogger(__name__)

__all__ = [
    "accepted_names",
    "crd_to_resource_types",
    "default_crd",
    "established_status",
    "storage_version",
    "validate_crd",
]

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_VERSION_NAME = _DNS1035_LABEL
_PRINTER_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
_RULE_REASONS = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)
_SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")
MAX_SELECTABLE_FIELDS = 8  # validation.MaxSelectableFields

Cause = dict[str, Any]
PathPart = str | int


def _required(path: str, detail: str = "") -> Cause:
    return required_cause(path, detail)


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {go_value(value)}: {detail}",
        "field": path,
    }


def _unsupported(path: str, value: Any, supported: Sequence[str]) -> Cause:
    quoted = ", ".join(json.dumps(s) for s in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {go_value(value)}: supported values: {quoted}",
        "field": path,
    }


def _duplicate(path: str, value: Any) -> Cause:
    return {
        "reason": "FieldValueDuplicate",
        "message": f"Duplicate value: {go_value(value)}",
        "field": path,
    }


def _forbidden(path: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": path}


def _versions(crd: dict[str, Any]) -> list[dict[str, Any]]:
    spec = crd.get("spec") or {}
    versions = spec.get("versions") or []
    return [v for v in versions if isinstance(v, dict)]


def storage_version(crd: dict[str, Any]) -> str | None:
    """The name of the version marked ``storage: true`` (first if several)."""
    for v in _versions(crd):
        if v.get("storage"):
            name = v.get("name")
            return str(name) if name else None
    return None


def _names(crd: dict[str, Any]) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    return names if isinstance(names, dict) else {}


# --------------------------------------------------------------------------
# Conversion
# --------------------------------------------------------------------------


def crd_to_resource_types(crd: dict[str, Any]) -> list[ResourceType]:
    """One ``ResourceType`` per served version of a (valid) CRD, in spec order.

    ``schema`` is the version's ``schema.openAPIV3Schema`` (deep-copied so
    later edits of ``crd`` cannot change a served type), ``printer_columns``
    its ``additionalPrinterColumns``; ``extra`` carries ``storage``,
    ``deprecated``/``deprecationWarning``, the ``scale`` subresource and
    ``selectable_fields`` (the version's ``selectableFields`` JSON paths, for
    field selectors and the OpenAPI ``x-kubernetes-selectable-fields``).
    """
    spec = crd.get("spec") or {}
    names = _names(crd)
    kind = str(names.get("kind", ""))
    plural = str(names.get("plural", ""))
    singular = str(names.get("singular") or kind.lower())
    crd_name = str((crd.get("metadata") or {}).get("name") or f"{plural}.{spec.get('group', '')}")
    out: list[ResourceType] = []
    for v in _versions(crd):
        if not v.get("served"):
            continue
        subresources = v.get("subresources") or {}
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        extra: dict[str, Any] = {
            "storage": bool(v.get("storage")),
            "selectable_fields": tuple(
                str(f.get("jsonPath") or "") for f in v.get("selectableFields") or ()
            ),
        }
        if "scale" in subresources:
            extra["scale"] = copy.deepcopy(subresources["scale"])
        if v.get("deprecated"):
            extra["deprecated"] = True
            if v.get("deprecationWarning"):
                extra["deprecationWarning"] = v["deprecationWarning"]
        out.append(
            ResourceType(
                group=str(spec.get("group", "")),
                version=str(v.get("name", "")),
                kind=kind,
                plural=plural,
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=singular,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                has_status="status" in subresources,
                schema=copy.deepcopy(schema) if isinstance(schema, dict) else None,
                printer_columns=tuple(
                    copy.deepcopy(c) for c in (v.get("additionalPrinterColumns") or ())
                ),
                crd_name=crd_name,
                name_rule="path",
                extra=extra,
            )
        )
    return out


def default_crd(crd: dict[str, Any]) -> None:
    """Apply apiextensions/v1 defaulting to ``crd`` in place (the one exception
    to "inputs are never mutated"; call it on the object being stored):
    ``spec.names.singular`` (lower-case kind), ``spec.names.listKind``
    (``<Kind>List``) and ``spec.conversion.strategy: None``, as
    ``SetDefaults_CustomResourceDefinitionSpec`` does."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind")
        if not names.get("singular") and isinstance(kind, str):
            names["singular"] = kind.lower()
        if not names.get("listKind") and isinstance(kind, str) and kind:
            names["listKind"] = f"{kind}List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}


# --------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------


def _now() -> str:
    return format_rfc3339(time.time())


def accepted_names(crd: dict[str, Any]) -> dict[str, Any]:
    """``spec.names`` with ``singular`` and ``listKind`` defaulted as kube does."""
    names = copy.deepcopy(_names(crd))
    kind = str(names.get("kind", ""))
    names.setdefault("singular", kind.lower())
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind"):
        names["listKind"] = f"{kind}List"
    return names


CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def _conditions(crd: dict[str, Any]) -> list[dict[str, Any]]:
    st = crd.get("status")
    if not isinstance(st, dict):
        st = crd["status"] = {}
    conds = st.get("conditions")
    if not isinstance(conds, list):
        conds = st["conditions"] = []
    return conds


def set_condition(crd: dict[str, Any], ctype: str, status: str, reason: str, message: str) -> None:
    """``apiextensionshelpers.SetCRDCondition``, in place: meta's
    ``SetStatusCondition`` (``pycontroller.meta``) on ``status.conditions``."""
    condition = {"type": ctype, "status": status, "reason": reason, "message": message}
    set_status_condition(_conditions(crd), condition)


def is_condition_true(crd: dict[str, Any], ctype: str) -> bool:
    """``apiextensionshelpers.IsCRDConditionTrue``."""
    st = crd.get("status")
    conds = st.get("conditions") if isinstance(st, dict) else None
    return is_status_condition_true(conds if isinstance(conds, list) else None, ctype)


def established_status(crd: dict[str, Any]) -> dict[str, Any]:
    """The converged status of an accepted CRD.

    Keeps ``lastTransitionTime`` of conditions that were already true (so an
    update does not look like a transition) and appends the current storage
    version to the existing ``status.storedVersions``.
    """
    old_status = crd.get("status") or {}
    old_conds = {
        c.get("type"): c for c in (old_status.get("conditions") or []) if isinstance(c, dict)
    }
    now = _now()

    def cond(ctype: str, reason: str, message: str) -> dict[str, Any]:
        prev = old_conds.get(ctype)
        ltt = prev.get("lastTransitionTime") if prev and prev.get("status") == "True" else None
        return {
            "type": ctype,
            "status": "True",
            "lastTransitionTime": ltt or now,
            "reason": reason,
            "message": message,
        }

    stored = [str(s) for s in (old_status.get("storedVersions") or [])]
    sv = storage_version(crd)
    if sv and sv not in stored:
        stored.append(sv)
    ours = {
        "NamesAccepted": cond("NamesAccepted", "NoConflicts", "no conflicts found"),
        "Established": cond(
            "Established", "InitialNamesAccepted", "the initial names have been accepted"
        ),
    }
    # Other controllers' conditions (Terminating) stay where they are.
    conditions = [
        ours.pop(str(c.get("type")), c)
        for c in (old_status.get("conditions") or [])
        if isinstance(c, dict)
    ]
    return {
        "conditions": [*conditions, *ours.values()],
        "acceptedNames": accepted_names(crd),
        "storedVersions": stored,
    }


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _schema_path(parts: Sequence[PathPart]) -> str:
    """kube renders schema paths as ``...openAPIV3Schema.properties[spec].type``."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif p.startswith("["):
            out += p
        else:
            out = f"{out}.{p}" if out else p
    return out


_JUNCTORS = ("allOf", "anyOf", "oneOf")
# Keys a schema under a junctor (anyOf...) may not carry, with kube's detail.
_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _nested_causes(v: Any, s: Any, path: list[PathPart], spath: list[PathPart]) -> Iterator[Cause]:
    """``validateNestedValueValidation`` (keys forbidden under a junctor) and
    ``validateNestedValueValidationCompleteness`` (every field it names is
    specified in the structural node ``s`` at ``spath``)."""
    if not isinstance(v, dict):
        return
    for key, detail in _NESTED_FORBIDDEN:
        set_ = v.get(key) not in (None, False, "", [], {})
        if set_ or (key == "additionalProperties" and key in v):
            yield _forbidden(_schema_path([*path, key]), detail)
    for junctor in _JUNCTORS:
        for i, sub in enumerate(v.get(junctor) or []):
            yield from _nested_causes(sub, s, [*path, junctor, i], spath)
    if "not" in v:
        yield from _nested_causes(v["not"], s, [*path, "not"], spath)
    s_props = (s.get("properties") if isinstance(s, dict) else None) or {}
    props = v.get("properties")
    if isinstance(props, dict):
        if "metadata" in props:
            yield _forbidden(
                _schema_path([*path, "properties", "[metadata]"]),
                "must not be specified in a nested context",
            )
        for name, sub in props.items():
            sub_path = [*path, "properties", f"[{name}]"]
            s_sub = [*spath, "properties", f"[{name}]"]
            if name not in s_props:
                detail = f"because it is defined in {_schema_path(sub_path)}"
                yield _required(_schema_path(s_sub), detail)
            else:
                yield from _nested_causes(sub, s_props[name], sub_path, s_sub)
    if "items" in v:
        s_items = s.get("items") if isinstance(s, dict) else None
        if s_items is None:
            detail = f"because it is defined in {_schema_path([*path, 'items'])}"
            yield _required(_schema_path([*spath, "items"]), detail)
        else:
            yield from _nested_causes(v["items"], s_items, [*path, "items"], [*spath, "items"])


def _structural_extras(s: dict[str, Any], path: list[PathPart], *, root: bool) -> Iterator[Cause]:
    """The rest of schema/validation.go ``validateStructuralInvariants``:
    additionalProperties at the root or beside an embedded resource, the
    root metadata restriction, embedded resources without fields, and value
    validations under junctors."""
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if "additionalProperties" in s:
        if root:
            yield _forbidden(
                _schema_path([*path, "additionalProperties"]), "must not be used at the root"
            )
        if embedded:
            yield _forbidden(
                _schema_path([*path, "additionalProperties"]),
                "must not be used if x-kubernetes-embedded-resource is set",
            )
    raw_props = s.get("properties")
    props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
    meta = props.get("metadata")
    if root and isinstance(meta, dict):
        rest = {k: v for k, v in meta.items() if k not in ("type", "default", "properties")}
        meta_props = meta.get("properties") or {}
        if meta_props and not set(meta_props) <= {"name", "generateName"}:
            rest["properties"] = meta_props
        if rest:
            yield _forbidden(
                _schema_path([*path, "properties", "[metadata]"]),
                "must not specify anything other than name and generateName, "
                "but metadata is implicitly specified",
            )
    if embedded and not s.get("x-kubernetes-preserve-unknown-fields") and not props:
        yield _required(
            _schema_path([*path, "properties"]),
            "must not be empty if x-kubernetes-embedded-resource is true "
            "without x-kubernetes-preserve-unknown-fields",
        )
    for junctor in (*_JUNCTORS, "not"):
        subs = s.get(junctor)
        if junctor == "not":
            subs = [subs] if subs is not None else []
        if not isinstance(subs, list):
            continue
        for i, sub in enumerate(subs):
            if junctor == "anyOf" and subs == _INT_OR_STRING_ANY_OF:
                continue
            first = junctor == "allOf" and i == 0 and isinstance(sub, dict)
            if first and sub.get("anyOf") == _INT_OR_STRING_ANY_OF:
                sub = {k: v for k, v in sub.items() if k != "anyOf"}
            sub_path: list[PathPart] = [*path, junctor] if junctor == "not" else [*path, junctor, i]
            yield from _nested_causes(sub, s, sub_path, path)


def _invalid_strings(path: str, values: list[Any], detail: str) -> Cause:
    """``field.Invalid`` of a ``[]string`` value (printed ``%#v``)."""
    shown = "[]string{" + ", ".join(_go_quote(str(v)) for v in values) + "}"
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": path,
    }


def _list_type_causes(
    s: dict[str, Any], path: list[PathPart], t: Any, type_path: str
) -> Iterator[Cause]:
    """validation.go ``ValidateCustomResourceDefinitionOpenAPISchema``'s
    x-kubernetes-list-type / -list-map-keys checks, then
    ``validateMapListKeysMapSet`` (``requireMapListKeysMapSetValidation``)."""
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and t != "object":
        detail = "must be object if x-kubernetes-map-type is specified"
        yield _invalid(type_path, t, detail) if t else _required(type_path, detail)
    if map_type is not None and map_type not in ("atomic", "granular"):
        yield _unsupported(
            _schema_path([*path, "x-kubernetes-map-type"]), map_type, ("atomic", "granular")
        )
    list_type = s.get("x-kubernetes-list-type")
    lt_path = _schema_path([*path, "x-kubernetes-list-type"])
    if list_type is not None and t != "array":
        detail = "must be array if x-kubernetes-list-type is specified"
        yield _invalid(type_path, t, detail) if t else _required(type_path, detail)
    elif list_type == "set" and isinstance(s.get("items"), dict):
        # requireAtomicSetType; the bad value is the item's list type (a
        # nil pointer prints "null").
        item = s["items"]
        item_list_type = item.get("x-kubernetes-list-type")
        detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
        shown = "null" if item_list_type is None else item_list_type
        if item.get("type") == "array" and item_list_type not in (None, "atomic"):
            yield _invalid(_schema_path([*path, "items", "x-kubernetes-list-type"]), shown, detail)
        elif item.get("type") == "object" and item.get("x-kubernetes-map-type") != "atomic":
            yield _invalid(_schema_path([*path, "items", "x-kubernetes-map-type"]), shown, detail)
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        yield _unsupported(lt_path, list_type, ("atomic", "set", "map"))
    keys = s.get("x-kubernetes-list-map-keys") or []
    if not isinstance(keys, list):
        keys = []
    keys_path = _schema_path([*path, "x-kubernetes-list-map-keys"])
    detail = "must be map if x-kubernetes-list-map-keys is non-empty"
    if keys and list_type is None:
        yield _required(lt_path, detail)
    elif keys and list_type != "map":
        yield _invalid(lt_path, list_type, detail)
    raw_items = s.get("items")
    items: dict[str, Any] = raw_items if isinstance(raw_items, dict) else {}
    item_props: dict[str, Any] = items.get("properties") or {}
    if list_type == "map":
        if not keys:
            yield _required(keys_path, "must not be empty if x-kubernetes-list-type is map")
        if raw_items is None:
            yield _required(
                _schema_path([*path, "items"]),
                "must have a schema if x-kubernetes-list-type is map",
            )
        elif items.get("type") != "object":
            yield _invalid(
                _schema_path([*path, "items", "type"]),
                items.get("type", ""),
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        else:
            seen: set[str] = set()
            for k in keys:
                prop = item_props.get(k)
                if isinstance(prop, dict):
                    if prop.get("type") in ("array", "object"):
                        yield _invalid(
                            _schema_path([*path, "items", "properties", f"[{k}]", "type"]),
                            "object",
                            "must be a scalar type if parent array's x-kubernetes-list-type is map",
                        )
                else:
                    yield _invalid_strings(
                        keys_path, keys, "entries must all be names of item properties"
                    )
                if k in seen:
                    yield _invalid_strings(keys_path, keys, "must not contain duplicate entries")
                seen.add(str(k))
    if list_type in ("set", "map") and raw_items is not None and isinstance(raw_items, dict):
        if items.get("nullable"):
            yield _forbidden(
                _schema_path([*path, "items", "nullable"]),
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        if list_type == "map":
            required = items.get("required") or []
            for k in keys:
                prop = item_props.get(k)
                if not isinstance(prop, dict):
                    continue
                prop_path = [*path, "items", "properties", f"[{k}]"]
                if k not in required and prop.get("default") is None:
                    yield _required(
                        _schema_path([*prop_path, "default"]),
                        "this property is in x-kubernetes-list-map-keys, so it must have a "
                        "default or be a required property",
                    )
                if prop.get("nullable"):
                    yield _forbidden(
                        _schema_path([*prop_path, "nullable"]),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )


def _rule_causes(s: dict[str, Any], rule: dict[str, Any], path: list[PathPart]) -> Iterator[Cause]:
    """validation.go: one x-kubernetes-validations rule's fields."""

    def text(key: str) -> str:
        v = rule.get(key)
        return v if isinstance(v, str) else ""

    def where(key: str) -> str:
        return _schema_path([*path, key])

    def newlines(v: str) -> bool:
        return "\n" in v or "\r" in v

    body, message, expr = text("rule").strip(), text("message"), text("messageExpression")
    if not body:
        yield _required(where("rule"), "rule is not specified")
    elif message and not message.strip():
        yield _invalid(where("message"), message, "message must be non-empty if specified")
    elif newlines(message.strip()):
        yield _invalid(where("message"), message, "message must not contain line breaks")
    elif newlines(body) and not message.strip():
        yield _required(where("message"), "message must be specified if rule contains line breaks")
    if expr and not expr.strip():
        yield _required(
            where("messageExpression"), "messageExpression must be non-empty if specified"
        )
    reason = rule.get("reason")
    if reason is not None and reason not in _RULE_REASONS:
        yield _unsupported(where("reason"), reason, _RULE_REASONS)
    fpath = text("fieldPath")
    if fpath and not fpath.strip():
        yield _invalid(where("fieldPath"), fpath, "fieldPath must be non-empty if specified")
    if newlines(fpath):
        yield _invalid(where("fieldPath"), fpath, "fieldPath must not contain line breaks")
    if fpath:
        try:
            _selectable_field_schema(fpath, s, allow_array=True)
        except ValueError:
            yield _invalid(where("fieldPath"), fpath, "fieldPath must be a valid path")


# CEL syntax check of x-kubernetes-validations (cel/compilation.go compileRule:
# ``compilation failed: `` + cel-go ``issues.String()``). kube type-checks too;
# without cel-go's checker and Kubernetes' libraries only *syntax* errors can be
# told apart honestly, so only those refuse a CRD. The parse is cel-python's
# (a maintained, spec-following Lark grammar), not our cel.py evaluator: that is
# a hand-written subset, and a rule it cannot evaluate may still be valid.
try:
    from celpy.celparser import CELParseError, CELParser
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken
except ImportError:  # pragma: no cover - cel-python is in the testing extra
    CELParser = None  # type: ignore[assignment,misc]

# Syntax cel-go 0.22 (kube 1.32) parses and cel-python 0.5 does not: optional
# field/index/list/map entries (``.?a``, ``[?0]``, ``[?x]``, ``{?'k': v}``),
# backquoted identifiers, trailing commas in list/map/message literals. A rule
# showing any of them (even inside a string literal) is never refused.
_CEL_NOT_JUDGED = re.compile(r"[.\[{,]\s*\?|`|,\s*[\]}]")


@functools.lru_cache(maxsize=4096)
def _cel_syntax_error(text: str) -> str | None:
    """cel-go's ``issues.String()`` for ``text``'s first syntax error, or
    None (also when unsure). Exact: the ``ERROR: <input>:L:C: Syntax error: ``
    header (at cel-python's position, which is the offending token's, or the
    end of input as ANTLR reports ``<EOF>``) and the `` | `` snippet lines.
    Not exact: the wording after ``Syntax error: `` (ANTLR's "mismatched
    input ... expecting {...}" is not reproduced), and cel-go may list more
    than one error where this gives the first."""
    if CELParser is None or _CEL_NOT_JUDGED.search(text):
        return None
    try:
        CELParser().parse(text)
        return None
    except CELParseError as e:
        cause = e.__context__
    except Exception:  # RecursionError etc.: not a verdict on the syntax
        return None
    lines = text.split("\n")
    if isinstance(cause, UnexpectedCharacters):
        line, col = cause.line, cause.column - 1
        what = f"token recognition error at: '{cause.char}'"
    elif isinstance(cause, UnexpectedToken) and cause.token.type != "$END":
        line, col = cause.line, cause.column - 1
        what = f"mismatched input '{cause.token}'"
    else:  # the end of input: ANTLR's EOF token sits after the last character
        line, col = len(lines), len(lines[-1])
        what = "mismatched input '<EOF>'"
    out = f"ERROR: <input>:{line}:{col + 1}: Syntax error: {what}"
    if 1 <= line <= len(lines):
        # common/errors.go ToDisplayString: tabs as spaces, a wide dot/caret
        # for each multi-byte character.
        snippet = lines[line - 1].replace("\t", " ")
        dots = "".join("\uff0e" if ord(ch) > 0x7F else "." for ch in snippet[:col])
        at = snippet[col : col + 1]
        caret = "\uff3e" if at and ord(at) > 0x7F else "^"
        out += f"\n | {snippet}\n | {dots}{caret}"
    return out


def _go_rule_value(rule: dict[str, Any]) -> str:
    """The internal ``apiextensions.ValidationRule`` printed ``%#v``. A set
    reason / optionalOldSelf is a pointer whose address kube prints; ours is a
    placeholder."""

    def text(key: str) -> str:
        v = rule.get(key)
        return _go_quote(v if isinstance(v, str) else "")

    def pointer(key: str, go_type: str) -> str:
        return f"({go_type})({'nil' if rule.get(key) is None else '0xc000000000'})"

    return (
        f"apiextensions.ValidationRule{{Rule:{text('rule')}, Message:{text('message')}, "
        f"MessageExpression:{text('messageExpression')}, "
        f"Reason:{pointer('reason', '*apiextensions.FieldValueErrorReason')}, "
        f"FieldPath:{text('fieldPath')}, "
        f"OptionalOldSelf:{pointer('optionalOldSelf', '*bool')}}}"
    )


def _cel_syntax_causes(s: Any, path: list[PathPart]) -> Iterator[Cause]:
    """validation.go: each rule's CEL compilation, children first (their
    errors are gathered before the node's own rules are compiled). Run only on
    a schema with no other errors, as kube compiles CEL only then."""
    if not isinstance(s, dict):
        return
    props = s.get("properties")
    if isinstance(props, dict):
        for name, prop in props.items():
            yield from _cel_syntax_causes(prop, [*path, "properties", f"[{name}]"])
    if isinstance(s.get("additionalProperties"), dict):
        yield from _cel_syntax_causes(s["additionalProperties"], [*path, "additionalProperties"])
    if isinstance(s.get("items"), dict):
        yield from _cel_syntax_causes(s["items"], [*path, "items"])
    rules = s.get("x-kubernetes-validations")
    if not isinstance(rules, list):
        return
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        body, expr = rule.get("rule"), rule.get("messageExpression")
        if not isinstance(body, str) or not body.strip():
            continue
        where = [*path, "x-kubernetes-validations", i]
        error = _cel_syntax_error(body)
        if error is not None:
            detail = f"compilation failed: {error}"
            yield _invalid_text(_schema_path([*where, "rule"]), _go_rule_value(rule), detail)
        elif isinstance(expr, str) and expr:
            error = _cel_syntax_error(expr)
            if error is not None:
                detail = f"messageExpression compilation failed: {error}"
                where_expr = _schema_path([*where, "messageExpression"])
                yield _invalid_text(where_expr, _go_rule_value(rule), detail)


def _invalid_text(path: str, shown: str, detail: str) -> Cause:
    """``field.Invalid`` whose value kube prints as ``shown``."""
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": path,
    }


def _validate_schema_node(s: Any, path: list[PathPart], *, root: bool) -> Iterator[Cause]:
    """Structural-schema basics (apiextensions ``ValidateStructural``)."""
    if not isinstance(s, dict):
        yield _invalid(_schema_path(path), s, "must be an object")
        return
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        # validation.go ValidateCustomResourceDefinitionOpenAPISchema.
        preserve_path = _schema_path([*path, "x-kubernetes-preserve-unknown-fields"])
        yield _invalid(preserve_path, False, "must be true or undefined")
    t = s.get("type")
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    type_path = _schema_path([*path, "type"])
    if embedded and t != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        yield _invalid(type_path, t, detail) if t else _required(type_path, detail)
    elif root:
        if not t:
            yield _required(type_path, "must not be empty at the root")
        elif t != "object":
            yield _invalid(type_path, t, "must be object at the root")
    elif not t and not preserve and not int_or_string:
        # schema/validation.go validateStructuralInvariants, by level.
        where = "array items" if path and path[-1] == "items" else "object fields"
        yield _required(type_path, f"must not be empty for specified {where}")
    yield from _structural_extras(s, path, root=root)
    if t and t not in _SCHEMA_TYPES:
        yield _unsupported(_schema_path([*path, "type"]), t, _SCHEMA_TYPES)
    if int_or_string and t:
        yield _invalid(
            _schema_path([*path, "type"]),
            t,
            "must be empty if x-kubernetes-int-or-string is true",
        )
    if s.get("uniqueItems"):
        yield _forbidden(
            _schema_path([*path, "uniqueItems"]),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        )
    if s.get("$ref"):
        yield _forbidden(_schema_path([*path, "$ref"]), "$ref is not supported")
    props = s.get("properties")
    addl = s.get("additionalProperties")
    if props is not None and addl not in (None, False):
        yield _forbidden(
            _schema_path([*path, "additionalProperties"]),
            "additionalProperties and properties are mutual exclusive",
        )
    if isinstance(props, dict):
        for name, prop in props.items():
            yield from _validate_schema_node(prop, [*path, "properties", f"[{name}]"], root=False)
    if isinstance(addl, dict):
        yield from _validate_schema_node(addl, [*path, "additionalProperties"], root=False)
    if t == "array":
        items = s.get("items")
        if items is None:
            yield _required(_schema_path([*path, "items"]), "must be specified")
        elif isinstance(items, dict):
            yield from _validate_schema_node(items, [*path, "items"], root=False)
        else:
            yield _forbidden(_schema_path([*path, "items"]), "items must be a schema object")
    yield from _list_type_causes(s, path, t, type_path)
    rules = s.get("x-kubernetes-validations")
    if rules is not None:
        rules_path = [*path, "x-kubernetes-validations"]
        if not isinstance(rules, list):
            yield _invalid(_schema_path(rules_path), rules, "must be a list of rules")
        else:
            for i, rule in enumerate(rules):
                yield from _rule_causes(s, rule if isinstance(rule, dict) else {}, [*rules_path, i])
    # A default must itself validate (kube also requires it to be pruned).
    if "default" in s and not root:
        default = s["default"]
        if default is not None or s.get("nullable"):
            # defaulting/validation.go: ValidateCustomResource(pth.Child("default"), ...),
            # each error named below the default.
            default_path = _schema_path([*path, "default"])
            for cause in validate_value(s, default):
                sub = cause["field"]
                if sub in ("", "<nil>"):
                    field = default_path
                elif sub.startswith("["):
                    field = default_path + sub
                else:
                    field = f"{default_path}.{sub}"
                yield {**cause, "field": field}


def _simple_json_path_cause(path: str, value: str) -> Cause | None:
    """validation.go ``validateSimpleJSONPath`` (a split never yields nothing)."""
    if not value.startswith("."):
        return _invalid(path, value, "must be a simple json path starting with .")
    return None


def _validate_scale_paths(scale: Any, base: str, causes: list[Cause]) -> None:
    """validation.go ``ValidateCustomResourceDefinitionSubresources``, scale."""
    if not isinstance(scale, dict):
        scale = {}
    for key, prefixes, where in (
        ("specReplicasPath", (".spec.",), ".spec"),
        ("statusReplicasPath", (".status.",), ".status"),
        ("labelSelectorPath", (".spec.", ".status."), "either .spec or .status"),
    ):
        value = scale.get(key)
        path = f"{base}.{key}"
        if not value or not isinstance(value, str):
            if key != "labelSelectorPath":
                causes.append(_required(path))
            continue
        bad = _simple_json_path_cause(path, value)
        if bad is not None:
            causes.append(bad)
        elif not value.startswith(prefixes):
            causes.append(_invalid(path, value, f"should be a json path under {where}"))


def _validate_names(crd: dict[str, Any], causes: list[Cause]) -> None:
    names = _names(crd)
    base = "spec.names"
    plural = names.get("plural")
    if not plural:
        causes.append(_required(f"{base}.plural"))
    elif not isinstance(plural, str) or not _DNS1035_LABEL.match(plural):
        causes.append(
            _invalid(
                f"{base}.plural",
                plural,
                "a lowercase RFC 1123 label must "
                "consist of lower case alphanumeric characters or '-'",
            )
        )
    kind = names.get("kind")
    if not kind:
        causes.append(_required(f"{base}.kind"))
    elif not isinstance(kind, str) or not re.match(r"^[A-Za-z]([-A-Za-z0-9]*[A-Za-z0-9])?$", kind):
        causes.append(
            _invalid(
                f"{base}.kind",
                kind,
                "may have mixed case, but should " "otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
            )
        )
    singular = names.get("singular")
    if singular and (not isinstance(singular, str) or not _DNS1035_LABEL.match(singular)):
        causes.append(
            _invalid(
                f"{base}.singular",
                singular,
                "a lowercase RFC 1123 label must "
                "consist of lower case alphanumeric characters or '-'",
            )
        )
    list_kind = names.get("listKind")
    if list_kind and kind and list_kind == kind:
        causes.append(
            _invalid(f"{base}.listKind", list_kind, "kind and listKind may not be " "the same")
        )
    for field in ("shortNames", "categories"):
        values = names.get(field) or []
        if not isinstance(values, list):
            causes.append(_invalid(f"{base}.{field}", values, "must be a list of strings"))
            continue
        seen: set[str] = set()
        for i, v in enumerate(values):
            if not isinstance(v, str) or not _DNS1035_LABEL.match(v):
                causes.append(
                    _invalid(f"{base}.{field}[{i}]", v, "must be a lowercase RFC " "1123 label")
                )
            elif v in seen:
                causes.append(_duplicate(f"{base}.{field}[{i}]", v))
            seen.add(v)


_PRINTER_COLUMN_FORMATS = (
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "password",
)


def _validate_printer_columns(columns: Any, base: str, causes: list[Cause]) -> None:
    """validation.go ``ValidateCustomResourceColumnDefinition`` (names need
    not be unique; the path's internal field name is ``JSONPath``)."""
    if not isinstance(columns, list):
        causes.append(_invalid(base, columns, "must be a list"))
        return
    types = "must be one of " + ",".join(sorted(_PRINTER_COLUMN_TYPES))
    formats = "must be one of " + ",".join(sorted(_PRINTER_COLUMN_FORMATS))
    for i, col in enumerate(columns):
        p = f"{base}[{i}]"
        if not isinstance(col, dict):
            causes.append(_invalid(p, col, "must be an object"))
            continue
        if not col.get("name"):
            causes.append(_required(f"{p}.name"))
        ctype = col.get("type")
        if not ctype:
            causes.append(_required(f"{p}.type", types))
        elif ctype not in _PRINTER_COLUMN_TYPES:
            causes.append(_invalid(f"{p}.type", ctype, types))
        fmt = col.get("format")
        if fmt and fmt not in _PRINTER_COLUMN_FORMATS:
            causes.append(_invalid(f"{p}.format", fmt, formats))
        jp = col.get("jsonPath")
        if not jp:
            causes.append(_required(f"{p}.JSONPath"))
        elif not isinstance(jp, str) or not jp.startswith("."):
            causes.append(
                _invalid(f"{p}.JSONPath", jp, "must be a simple json path starting with .")
            )


def _selectable_field_schema(
    json_path: str, schema: dict[str, Any], *, allow_array: bool = False
) -> tuple[str, Any]:
    """apiextensions ``cel.ValidFieldPath`` (selectable fields: without array
    notation): the field path (``spec.color``, ``spec.labels[k]``) and the
    schema it points to; ``ValueError`` with kube's reason for an invalid path."""
    tokens = re.findall(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]]+", json_path)
    path, node, i = "", schema, 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "[" and not allow_array:
            raise ValueError("array notation is not allowed")
        if tok not in ".[":
            raise ValueError(f"expected [ or . but got: {tok}")
        if i + 1 >= len(tokens):
            raise ValueError("unexpected end of JSON path")
        name = tokens[i + 1]
        if tok == "[":
            if len(name) < 2 or name[0] != "'" or name[-1] != "'":
                raise ValueError(f"expected single quoted string but got {name}")
            name = re.sub(r"\\(.)", r"\1", name[1:-1])
            if i + 2 >= len(tokens) or tokens[i + 2] != "]":
                raise ValueError("expected ]")
            i += 1
        props = node.get("properties") if isinstance(node, dict) else None
        addl = node.get("additionalProperties") if isinstance(node, dict) else None
        if props:
            if name not in props:
                raise ValueError("does not refer to a valid field")
            path, node = f"{path}.{name}" if path else name, props[name]
        elif isinstance(addl, dict):
            path, node = f"{path}[{name}]", addl
        else:
            raise ValueError("does not refer to a valid field")
        i += 2
    return path, node


def _validate_selectable_fields(fields: Any, schema: Any, base: str, causes: list[Cause]) -> None:
    """apiextensions ``ValidateCustomResourceSelectableFields`` (and the
    no-schema check of ``validateCustomResourceDefinitionVersion``)."""
    if not isinstance(fields, list):
        causes.append(_invalid(base, fields, "must be a list"))
        return
    if not fields:
        return
    if not isinstance(schema, dict):
        causes.append(_invalid(base, "", "selectableFields may only be set when "
                               "version.schema.openAPIV3Schema is not included"))  # fmt: skip
        return
    unique: set[str] = set()
    for i, sf in enumerate(fields):
        p = f"{base}[{i}].jsonPath"
        jp = sf.get("jsonPath") if isinstance(sf, dict) else None
        if not jp:
            causes.append(_required(p))
            continue
        try:
            path, found = _selectable_field_schema(str(jp), schema)
        except ValueError as err:
            causes.append(_invalid(p, jp, f"is an invalid path: {err}"))
            continue
        if path.split(".")[0].split("[")[0] == "metadata":
            causes.append(_invalid(p, jp, "must not point to fields in metadata"))
        if not isinstance(found, dict) or found.get("type") not in ("string", "boolean", "integer"):
            causes.append(_invalid(p, jp, "must point to a field of type string, boolean or "
                                   "integer. Enum string fields and strings with formats are "
                                   "allowed."))  # fmt: skip
        if path in unique:
            causes.append(_duplicate(p, jp))
        unique.add(path)
    if len(unique) > MAX_SELECTABLE_FIELDS:
        causes.append({
            "reason": "FieldValueTooMany",
            "message": f"Too many: {len(unique)}: must have at most {MAX_SELECTABLE_FIELDS} items",
            "field": base,
        })  # fmt: skip


def validate_crd(crd: dict[str, Any]) -> list[Cause]:
    """Validate an apiextensions.k8s.io/v1 CRD; ``[]`` means valid.

    Causes carry kube's reasons (``FieldValueRequired``, ``FieldValueInvalid``,
    ``FieldValueNotSupported``, ``FieldValueDuplicate``, ``FieldValueForbidden``)
    and field paths as kube names them after converting the CRD to its
    internal version: ``spec.validation.openAPIV3Schema.type`` when every
    version has the same schema, else ``spec.versions[1].schema...``.
    """
    causes: list[Cause] = []
    meta = crd.get("metadata") or {}
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [_required("spec")]
    group = spec.get("group")
    names = _names(crd)
    if not group:
        causes.append(_required("spec.group"))
    elif not is_dns1123_subdomain(group):
        causes.append(
            _invalid(
                "spec.group",
                group,
                "a lowercase RFC 1123 subdomain must "
                "consist of lower case alphanumeric characters, '-' or '.'",
            )
        )
    elif "." not in group:
        causes.append(_invalid("spec.group", group, "should be a domain with at least one dot"))
    name = meta.get("name")
    plural = names.get("plural")
    if not name:
        causes.append(_required("metadata.name", "name or generateName is required"))
    elif plural and group and name != f"{plural}.{group}":
        causes.append(_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not names:
        causes.append(_required("spec.names"))
    else:
        _validate_names(crd, causes)
    scope = spec.get("scope")
    if not scope:
        causes.append(_required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(_unsupported("spec.scope", scope, ("Cluster", "Namespaced")))

    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        causes.append(
            _required("spec.versions", "must have exactly one version marked as " "storage version")
        )
        return causes
    storage_count = 0
    served_any = False
    seen_versions: set[str] = set()

    def at_top(key: str) -> bool:
        # The v1 -> internal conversion (apiextensions v1/conversion.go) moves
        # a field identical in every version to the spec, where it is
        # validated once: errors name spec.validation.openAPIV3Schema,
        # spec.subresources, spec.additionalPrinterColumns, spec.selectableFields.
        first = versions[0].get(key) if isinstance(versions[0], dict) else None
        return all(isinstance(v, dict) and v.get(key) == first for v in versions)

    top = {k: at_top(k) for k in ("schema", "subresources", "additionalPrinterColumns")}
    top["selectableFields"] = at_top("selectableFields")

    def where(i: int, key: str, base: str) -> str | None:
        """The path ``key`` of version ``i`` is validated at, or None (done at i 0)."""
        if not top[key]:
            return f"{base}.{key}"
        if i:
            return None
        return "spec.validation" if key == "schema" else f"spec.{key}"

    for i, v in enumerate(versions):
        base = f"spec.versions[{i}]"
        if not isinstance(v, dict):
            causes.append(_invalid(base, v, "must be an object"))
            continue
        vname = v.get("name")
        if not vname:
            causes.append(_required(f"{base}.name"))
        elif not isinstance(vname, str) or not _VERSION_NAME.match(vname):
            causes.append(
                _invalid(
                    f"{base}.name",
                    vname,
                    "a DNS-1035 label must consist of " "lower case alphanumeric characters or '-'",
                )
            )
        elif vname in seen_versions:
            causes.append(_duplicate(f"{base}.name", vname))
        else:
            seen_versions.add(vname)
        if v.get("storage"):
            storage_count += 1
        if v.get("served"):
            served_any = True
        for flag in ("served", "storage"):
            if flag in v and not isinstance(v[flag], bool):
                causes.append(_invalid(f"{base}.{flag}", v[flag], "must be a boolean"))
        schema_wrapper = v.get("schema")
        schema = schema_wrapper.get("openAPIV3Schema") if isinstance(schema_wrapper, dict) else None
        schema_at = where(i, "schema", base)
        if schema is None:
            path = f"{base}.schema.openAPIV3Schema"
            causes.append(_required(path, "schemas are required"))
        elif schema_at is not None:
            schema_base: list[PathPart] = [f"{schema_at}.openAPIV3Schema"]
            schema_causes = list(_validate_schema_node(schema, schema_base, root=True))
            if not schema_causes:
                schema_causes.extend(_cel_syntax_causes(schema, schema_base))
            causes.extend(schema_causes)
        subresources = v.get("subresources") or {}
        sub_at = where(i, "subresources", base)
        if sub_at is None:
            pass
        elif not isinstance(subresources, dict):
            causes.append(_invalid(sub_at, subresources, "must be an object"))
        else:
            scale = subresources.get("scale")
            if scale is not None:
                _validate_scale_paths(scale, f"{sub_at}.scale", causes)
        cols_at = where(i, "additionalPrinterColumns", base)
        if "additionalPrinterColumns" in v and cols_at is not None:
            _validate_printer_columns(v["additionalPrinterColumns"], cols_at, causes)
        fields_at = where(i, "selectableFields", base)
        if "selectableFields" in v and fields_at is not None:
            _validate_selectable_fields(v["selectableFields"], schema, fields_at, causes)
    if storage_count != 1:
        causes.append(
            _invalid(
                "spec.versions",
                [v.get("name") for v in _versions(crd)],
                "must have exactly one version marked as storage version",
            )
        )
    if not served_any:
        causes.append(
            _invalid(
                "spec.versions",
                [v.get("name") for v in _versions(crd)],
                "must have at least one version marked as served",
            )
        )
    _validate_conversion(spec.get("conversion"), causes)
    return causes


def _validate_conversion(conversion: Any, causes: list[Cause]) -> None:
    """validation.go ``validateCustomResourceConversion`` (URL and service
    details are not checked); v1's ``webhook.clientConfig`` and
    ``webhook.conversionReviewVersions`` are named by their internal fields."""
    if not isinstance(conversion, dict):
        return
    base = "spec.conversion"
    strategy = conversion.get("strategy")
    if not strategy:
        causes.append(_required(f"{base}.strategy"))
    elif strategy not in ("None", "Webhook"):
        causes.append(_unsupported(f"{base}.strategy", strategy, ("None", "Webhook")))
    webhook = conversion.get("webhook")
    webhook = webhook if isinstance(webhook, dict) else {}
    config = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions")
    cc_path, versions_path = f"{base}.webhookClientConfig", f"{base}.conversionReviewVersions"
    if strategy != "Webhook":
        detail = "should not be set when strategy is not set to Webhook"
        if config is not None:
            causes.append(_forbidden(cc_path, detail))
        if versions:
            causes.append(_forbidden(versions_path, detail))
        return
    if not isinstance(config, dict):
        causes.append(_required(cc_path, "required when strategy is set to Webhook"))
    elif (config.get("url") is None) == (config.get("service") is None):
        causes.append(_required(cc_path, "exactly one of url or service is required"))
    if not isinstance(versions, list) or not versions:
        causes.append(_required(versions_path))
        return
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            causes.append(_invalid(f"{versions_path}[{i}]", v, "duplicate version"))
            continue
        seen.add(v)
        if not isinstance(v, str) or not _DNS1035_LABEL.match(v) or len(v) > 63:
            causes.append(
                _invalid(
                    f"{versions_path}[{i}]",
                    v,
                    "a DNS-1035 label must consist of lower case alphanumeric characters or "
                    "'-', start with an alphabetic character, and end with an alphanumeric "
                    "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                    "'[a-z]([-a-z0-9]*[a-z0-9])?')",
                )
            )
    if not seen & {"v1", "v1beta1"}:
        causes.append(
            _invalid_strings(versions_path, versions, "must include at least one of v1, v1beta1")
        )
