"""Decoding a request body as kube-apiserver's JSON serializer does.

kube-apiserver decodes a built-in object into its Go struct with
``sigs.k8s.io/json`` (case-sensitive ``encoding/json``): a value of the wrong
JSON type (``metadata.name: 5``, a number in a ConfigMap's ``data``, an object
where a list belongs) fails the decode, and the handler answers 400 BadRequest
through ``transformDecodeError`` (``handlers/rest.go``)::

    ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot
    unmarshal number into Go struct field ObjectMeta.metadata.name of type string

Fields the struct does not have are dropped; with ``fieldValidation=Strict``
they are a 400 ``strict decoding error: unknown field "spec.foo"``, with
``Warn`` (the default) a warning. A custom resource is decoded as unstructured
JSON, but its ``metadata`` goes through ``metav1.ObjectMeta`` on its own
(apiextensions-apiserver ``GetObjectMetaWithOptions``), so a wrong type there is
the same 400 with the field path relative to ``ObjectMeta``.

The Go types come from the Kubernetes OpenAPI definitions that the
``kubernetes-validate`` package ships (the version this server reports,
1.32, read once by ``definitions.py`` for the whole server), rather than from
hand-written per-kind tables. What they cannot tell:
named string types (``v1.Protocol`` is reported as ``string``) and the exact
``time.Parse`` messages (times are type-checked, not parsed).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from typing import Any

from pycontroller.testing.apiserver.gofmt import quote as go_quote
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import quantity
from pycontroller.testing.apiserver.schema.definitions import (
    REF_PREFIX,
    by_gvk,
    definitions,
    ref_name,
)
from pycontroller.testing.apiserver.status import StatusError, bad_request, invalid_patch

__all__ = [
    "DecodeResult",
    "check_unknown_fields",
    "decode_body",
    "decode_patched",
    "type_error_message",
]

logger = logging.getLogger(__name__)

_META_V1 = "io.k8s.apimachinery.pkg.apis.meta.v1."
_TIME_TYPES = frozenset({_META_V1 + "Time", _META_V1 + "MicroTime"})
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_OBJECT_META = _META_V1 + "ObjectMeta"
# reflect.Type.String() of the anonymous struct SimpleMetaFactory.Interpret decodes into.
_FIND_KIND_TYPE = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)
_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


class _TypeError(Exception):
    """A Go ``*json.UnmarshalTypeError`` (gets struct/field context) or, with
    ``plain``, another decode error reported as is."""

    def __init__(self, message: str, *, plain: bool = False, go_type: str = "", value: str = ""):
        super().__init__(message)
        self.message = message
        self.plain = plain
        self.go_type = go_type
        self.value = value


def type_error_message(value: str, go_type: str, struct: str | None, field: str) -> str:
    """``json.UnmarshalTypeError.Error()``."""
    if struct is not None or field:
        return (
            f"json: cannot unmarshal {value} into Go struct field {struct or ''}.{field} "
            f"of type {go_type}"
        )
    return f"json: cannot unmarshal {value} into Go value of type {go_type}"


def json_kind(v: Any) -> str:
    """The JSON value kind Go's ``UnmarshalTypeError`` names (``bool``,
    ``number``, ``string``, ``array``, ``object``, ``null``)."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def _types(node: dict[str, Any]) -> list[str]:
    t = node.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if x != "null"]
    return []


class _Walker:
    """Walks a decoded JSON value along the definitions like Go's decoder."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs
        self.unknown: list[str] = []

    def go_type(self, node: dict[str, Any]) -> str:
        name = ref_name(node)
        if name is not None:
            if name in _TIME_TYPES:
                return "string"
            if name == _INT_OR_STRING:
                return "int32"
            if name == _QUANTITY:
                return "resource.Quantity"
            parts = name.split(".")
            return f"{parts[-2]}.{parts[-1]}" if len(parts) > 1 else name
        types = _types(node)
        if not types:
            return "interface {}"
        t = types[0]
        if t == "array":
            return "[]" + self.go_type(node.get("items") or {})
        if t == "object":
            addl = node.get("additionalProperties")
            if isinstance(addl, dict):
                return "map[string]" + self.go_type(addl)
            return "map[string]interface {}"
        if t == "string":
            return "[]uint8" if node.get("format") == "byte" else "string"
        if t == "integer":
            return str(node.get("format") or "int64")
        if t == "number":
            return "float32" if node.get("format") == "float" else "float64"
        if t == "boolean":
            return "bool"
        return "interface {}"

    def walk(
        self,
        value: Any,
        node: dict[str, Any],
        struct: str | None,
        stack: list[str],
        path: str,
    ) -> Any:
        """Check ``value``; returns it with unknown struct fields removed.
        Raises ``_TypeError`` carrying the Go error text (context applied)."""
        if value is None:
            return None  # null is a no-op (or a nil pointer/map/slice) in Go
        name = ref_name(node)
        if name is not None:
            return self._walk_ref(value, name, struct, stack, path)
        types = _types(node)
        if not types:
            return value  # free-form (RawExtension, JSON, FieldsV1 ...)
        t = types[0]
        kind = json_kind(value)
        if t == "object":
            if not isinstance(value, dict):
                raise self._err(kind, self.go_type(node), struct, stack)
            props = node.get("properties")
            if isinstance(props, dict):
                return self._walk_struct(value, props, struct, stack, path)
            addl = node.get("additionalProperties")
            if isinstance(addl, dict):
                return {
                    k: self.walk(v, addl, struct, stack, f"{path}[{k}]") for k, v in value.items()
                }
            return value
        if t == "array":
            if not isinstance(value, list):
                raise self._err(kind, self.go_type(node), struct, stack)
            items = node.get("items") or {}
            return [self.walk(v, items, struct, stack, f"{path}[{i}]") for i, v in enumerate(value)]
        if t == "string":
            if not isinstance(value, str):
                raise self._err(kind, self.go_type(node), struct, stack)
            if node.get("format") == "byte":
                _check_base64(value)
            return value
        if t == "boolean":
            if not isinstance(value, bool):
                raise self._err(kind, "bool", struct, stack)
            return value
        if t in ("integer", "number"):
            go = self.go_type(node)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise self._err(kind, go, struct, stack)
            if t == "integer":
                lo, hi = _INT_RANGES.get(go, _INT_RANGES["int64"])
                if isinstance(value, float) or not lo <= value <= hi:
                    raise self._err(f"number {_go_number(value)}", go, struct, stack)
            return value
        return value

    def _walk_ref(
        self, value: Any, name: str, struct: str | None, stack: list[str], path: str
    ) -> Any:
        kind = json_kind(value)
        if name in _TIME_TYPES:
            # metav1.Time.UnmarshalJSON: json.Unmarshal(b, &str) (a type error,
            # which then gets the field context), then time.Parse (not checked).
            if not isinstance(value, str):
                raise self._err(kind, "string", struct, stack)
            return value
        if name == _INT_OR_STRING:
            # intstr.IntOrString.UnmarshalJSON: a string, else json.Unmarshal into int32.
            if isinstance(value, str):
                return value
            if isinstance(value, int | float) and not isinstance(value, bool):
                lo, hi = _INT_RANGES["int32"]
                if isinstance(value, float) or not lo <= value <= hi:
                    raise self._err(f"number {_go_number(value)}", "int32", struct, stack)
                return value
            raise self._err(kind, "int32", struct, stack)
        if name == _QUANTITY:
            # resource.Quantity.UnmarshalJSON parses a string or a number's text.
            try:
                quantity.check(value)
            except quantity.QuantityError as err:
                raise _TypeError(str(err), plain=True) from None
            return value
        node = self.defs.get(name)
        if node is None:
            return value
        short = name.rsplit(".", 1)[-1]
        types = _types(node)
        if isinstance(node.get("properties"), dict):
            if not isinstance(value, dict):
                raise self._err(kind, self.go_type({"$ref": REF_PREFIX + name}), struct, stack)
            return self._walk_struct(value, node["properties"], short, stack, path)
        if not types:
            return value
        return self.walk(value, node, struct, stack, path)

    def _walk_struct(
        self,
        value: dict[str, Any],
        props: dict[str, Any],
        struct: str | None,
        stack: list[str],
        path: str,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, v in value.items():
            sub = f"{path}.{key}" if path else key
            prop = props.get(key)
            if not isinstance(prop, dict):
                self.unknown.append(sub)
                continue
            out[key] = self.walk(v, prop, struct, [*stack, key], sub)
        return out

    @staticmethod
    def _err(value: str, go_type: str, struct: str | None, stack: list[str]) -> _TypeError:
        return _TypeError(
            type_error_message(value, go_type, struct, ".".join(stack)),
            go_type=go_type,
            value=value,
        )


def _go_number(v: int | float) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return repr(v)
    return str(v)


_B64 = re.compile(r"[A-Za-z0-9+/]")


def _check_base64(s: str) -> None:
    """``base64.StdEncoding`` as Go's decoder checks a ``[]byte`` field."""
    s = s.replace("\r", "").replace("\n", "")  # Go's decoder skips newlines
    try:
        base64.b64decode(s, validate=True)
        return
    except (binascii.Error, ValueError):
        pass
    pos = len(s)
    for i, ch in enumerate(s):
        if ch == "=":
            pos = i
            break
        if not _B64.match(ch):
            pos = i
            break
    else:
        # Only a length/padding problem: Go reports the last full quantum.
        pos = len(s) - len(s) % 4
    raise _TypeError(f"illegal base64 data at input byte {pos}", plain=True)


class DecodeResult:
    """A decoded body: ``obj`` (unknown fields of built-in kinds dropped) and
    the unknown field paths found (for strict decoding or warnings)."""

    __slots__ = ("obj", "unknown")

    def __init__(self, obj: Any, unknown: list[str]) -> None:
        self.obj = obj
        self.unknown = unknown


def check_unknown_fields(
    rt: ResourceType, result: DecodeResult, field_validation: str, warnings: list[str]
) -> Any:
    """``result.obj`` once kube's ``fieldValidation`` has judged the unknown
    fields of a built-in kind: ``Strict`` a 400 ``strict decoding error``,
    ``Warn`` (the default) one warning each, appended to ``warnings``,
    ``Ignore`` nothing. Custom resources are never judged here."""
    if result.unknown and not rt.is_crd:
        if field_validation == "Strict":
            raise bad_request(
                "strict decoding error: "
                + ", ".join(f'unknown field "{p}"' for p in result.unknown)
            )
        if field_validation != "Ignore":
            warnings.extend(f'unknown field "{p}"' for p in result.unknown)
    return result.obj


def _summary(raw: bytes) -> str:
    """``summarizeData(body, 30)`` of handlers/rest.go."""
    if not raw:
        return "<empty>"
    if raw[:1] == b"{":
        text = raw[:30].decode("utf-8", "replace")
        return text + " ..." if len(raw) > 30 else text
    return raw[:30].hex() + (" ..." if len(raw) > 30 else "")


def _unrecognized(rt: ResourceType, err: str, raw: bytes) -> StatusError:
    return json_parse_error(rt.kind, err, raw)


def _interpret(rt: ResourceType, obj: Any, raw: bytes) -> tuple[str, str]:
    """``SimpleMetaFactory.Interpret``: the body's (kind, version), defaulted
    from the URL's type; a 400 when they cannot be read."""
    if not isinstance(obj, dict):
        if obj is None:
            return rt.kind, rt.version
        err = type_error_message(json_kind(obj), _FIND_KIND_TYPE, None, "")
        raise _unrecognized(rt, f"couldn't get version/kind; json parse error: {err}", raw)
    for key in ("apiVersion", "kind"):
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            err = type_error_message(json_kind(v), "string", "", key)
            raise _unrecognized(rt, f"couldn't get version/kind; json parse error: {err}", raw)
    api_version = obj.get("apiVersion") or ""
    if api_version.count("/") > 1:
        raise _unrecognized(rt, f"unexpected GroupVersion string: {api_version}", raw)
    version = api_version.rpartition("/")[2] if api_version else rt.version
    return obj.get("kind") or rt.kind, version


def _check(rt: ResourceType, obj: dict[str, Any]) -> DecodeResult:
    """Walk ``obj`` as ``rt``'s Go type; raises ``_TypeError``."""
    defs = definitions()
    walker = _Walker(defs)
    if rt.is_crd:
        meta = obj.get("metadata")
        if meta is not None and _OBJECT_META in defs:
            # GetObjectMetaWithOptions unmarshals metadata alone into ObjectMeta.
            walker._walk_ref(meta, _OBJECT_META, None, [], "metadata")
        return DecodeResult(obj, [])
    name = by_gvk(rt.group, rt.version, rt.kind)
    node = defs.get(name) if name else None
    if node is None or not isinstance(node.get("properties"), dict):
        return DecodeResult(obj, [])
    out = walker._walk_struct(obj, node["properties"], rt.kind, [], "")
    return DecodeResult(out, walker.unknown)


def decode_body(rt: ResourceType, obj: Any, raw: bytes) -> DecodeResult:
    """Check a decoded create/update body of ``rt`` as kube's decoder would.

    Raises ``StatusError`` (400) for what kube cannot decode. ``raw`` is the
    request body (quoted in the message when the kind cannot be read)."""
    kind, version = _interpret(rt, obj, raw)
    try:
        return _check(rt, obj if obj is not None else {})
    except _TypeError as err:
        raise bad_request(
            f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {err.message}'
        ) from None


def decode_patched(rt: ResourceType, obj: dict[str, Any]) -> DecodeResult:
    """Check the result of a patch as kube's patcher decodes it.

    kube (``handlers/patch.go``) decodes the patched JSON into the Go type and
    turns a failure into 422 Invalid of an unnamed object, with field ``patch``
    and the patched document as the value::

         "" is invalid: patch: Invalid value: "{...}": json: cannot unmarshal ...

    (``errors.NewInvalid(schema.GroupKind{}, "", ...)``: ``"%s %q is
    invalid"`` with an empty kind, so the message starts with a space.)
    """
    try:
        return _check(rt, obj)
    except _TypeError as err:
        doc = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        raise invalid_patch(json.dumps(doc, ensure_ascii=False), err.message) from None


# --- Go's encoding/json syntax check -----------------------------------------

_GO_SPACE = b" \t\r\n"
_GO_HEX = b"0123456789abcdefABCDEF"
_GO_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}


def _go_quote_char(c: int) -> str:
    """``quoteChar`` of encoding/json's scanner."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    q = go_quote(chr(c))
    return "'" + q[1:-1] + "'"


def go_json_syntax_error(data: bytes) -> str | None:
    """The message of the ``SyntaxError`` Go's ``json.Unmarshal`` (its
    ``checkValid`` scanner) reports for ``data``, or None when ``data`` is
    one valid JSON value. Python's parser takes what Go refuses (``NaN``,
    ``Infinity``) and words its errors differently."""
    stack: list[str] = []  # "key", "value" (of an object), "array"
    n = len(data)
    i = 0

    def at(pos: int) -> int:
        # At the end the scanner is stepped with a space (scanner.eof).
        return data[pos] if pos < n else ord(" ")

    def bad(pos: int, context: str) -> str:
        return f"invalid character {_go_quote_char(at(pos))} {context}"

    def skip(j: int) -> int:
        while j < n and data[j] in _GO_SPACE:
            j += 1
        return j

    while True:
        # a value begins (stateBeginValue)
        i = skip(i)
        if i >= n:
            return "unexpected end of JSON input"
        c = data[i]
        if c == ord("{"):
            i = skip(i + 1)
            if i < n and data[i] == ord("}"):
                i += 1
            else:
                stack.append("key")
                if i >= n:
                    return "unexpected end of JSON input"
                if data[i] != ord('"'):
                    return bad(i, "looking for beginning of object key string")
                continue
        elif c == ord("["):
            i = skip(i + 1)
            if i < n and data[i] == ord("]"):
                i += 1
            else:
                stack.append("array")
                continue
        elif c == ord('"'):
            i += 1
            while True:
                if i >= n:
                    return "unexpected end of JSON input"
                c = data[i]
                if c == ord('"'):
                    i += 1
                    break
                if c == ord("\\"):
                    i += 1
                    if at(i) == ord("u"):
                        for _ in range(4):
                            i += 1
                            if at(i) not in _GO_HEX:
                                return bad(i, "in \\u hexadecimal character escape")
                    elif at(i) not in b'bfnrt\\/"':
                        return bad(i, "in string escape code")
                elif c < 0x20:
                    return bad(i, "in string literal")
                i += 1
        elif c == ord("-") or ord("0") <= c <= ord("9"):
            if c == ord("-"):
                i += 1
                if not ord("0") <= at(i) <= ord("9"):
                    return bad(i, "in numeric literal")
            if data[i] == ord("0"):
                i += 1
            else:
                while i < n and ord("0") <= data[i] <= ord("9"):
                    i += 1
            if i < n and data[i] == ord("."):
                i += 1
                if not ord("0") <= at(i) <= ord("9"):
                    return bad(i, "after decimal point in numeric literal")
                while i < n and ord("0") <= data[i] <= ord("9"):
                    i += 1
            if i < n and data[i] in b"eE":
                i += 1
                if i < n and data[i] in b"+-":
                    i += 1
                if not ord("0") <= at(i) <= ord("9"):
                    return bad(i, "in exponent of numeric literal")
                while i < n and ord("0") <= data[i] <= ord("9"):
                    i += 1
        elif c in _GO_LITERALS:
            word = _GO_LITERALS[c]
            for k in range(1, len(word)):
                if at(i + k) != word[k]:
                    expect = chr(word[k])
                    return bad(i + k, f"in literal {word.decode()} (expecting '{expect}')")
            i += len(word)
        else:
            return bad(i, "looking for beginning of value")
        # a value ended (stateEndValue)
        while True:
            i = skip(i)
            if not stack:
                return None if i >= n else bad(i, "after top-level value")
            if i >= n:
                return "unexpected end of JSON input"
            c, top = data[i], stack[-1]
            if top == "key":
                if c != ord(":"):
                    return bad(i, "after object key")
                stack[-1] = "value"
                i += 1
                break
            if top == "value":
                if c == ord(","):
                    stack[-1] = "key"
                    i = skip(i + 1)
                    if i >= n:
                        return "unexpected end of JSON input"
                    if data[i] != ord('"'):
                        return bad(i, "looking for beginning of object key string")
                    break
                if c != ord("}"):
                    return bad(i, "after object key:value pair")
                stack.pop()
                i += 1
                continue
            if c == ord(","):
                i += 1
                break
            if c != ord("]"):
                return bad(i, "after array element")
            stack.pop()
            i += 1


def json_parse_error(kind: str, err: str, raw: bytes) -> StatusError:
    """``transformDecodeError`` of a body whose kind could not be read (into
    a ``kind``): its syntax, or its apiVersion/kind fields."""
    return bad_request(
        f"the object provided is unrecognized (must be of type {kind}): {err} " f"({_summary(raw)})"
    )
