"""``/openapi/v2`` as kube-openapi 1.32's handler serves it (JSON or protobuf).

kube-openapi ``pkg/handler/handler.go`` (the version k8s 1.32 pins):

- ``Accept`` (empty: ``*/*``) is parsed with goautoneg (clauses sorted by q,
  then specificity; ``q=0`` is not a refusal) and the first clause matching,
  in order, ``application/json``, ``application/com.github.proto-openapi.
  spec.v2@v1.0+protobuf`` or ``application/com.github.proto-openapi.spec.v2.
  v1.0+protobuf`` wins; the two protobuf ones answer ``Content-Type:
  application/com.github.proto-openapi.spec.v2.v1.0+protobuf``. Nothing
  matching: 406 with no body.
- The protobuf body is ``proto.Marshal(openapi_v2.ParseDocument(json))``:
  gnostic's ``openapi.v2.Document`` built from the JSON document, which
  ``to_document`` does from the rules hack/gen-proto.py reads out of gnostic's
  generated ``OpenAPIv2.go`` (``_proto/openapiv2/rules.py``).
- ``ETag`` is the quoted upper-case hex SHA-512 of the JSON bytes, for both
  forms (``Vary: Accept`` keeps caches apart); ``Last-Modified`` is when the
  JSON was built. ``http.ServeContent`` then answers ``If-None-Match`` /
  ``If-Modified-Since`` with 304, ``If-Match`` / ``If-Unmodified-Since`` with
  412, a single byte ``Range`` with 206 (``Accept-Ranges: bytes``).
- The whole handler is wrapped in NYTimes' gziphandler: ``Vary:
  Accept-Encoding`` always, and bodies of at least 1400 bytes gzipped when
  ``Accept-Encoding`` offers gzip with q > 0.

The encoded documents are cached per served JSON document (which
``schema.openapi`` rebuilds when the set of types, e.g. CRDs, changes).
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

import yaml
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from pycontroller.testing.apiserver._proto.openapiv2 import OpenAPIv2_pb2 as pb
from pycontroller.testing.apiserver._proto.openapiv2.rules import RULES
from pycontroller.testing.apiserver.http.discovery import RegistryView
from pycontroller.testing.apiserver.http.negotiation import media_ranges
from pycontroller.testing.apiserver.schema.openapi import openapi_response

logger = logging.getLogger(__name__)

__all__ = ["PROTOBUF", "openapi_v2_reply", "to_document", "yaml_v3"]

JSON = "application/json"
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# (type, subtype, Content-Type answered, protobuf?) in the handler's order.
_ACCEPTED = (
    ("application", "json", JSON, False),
    ("application", "com.github.proto-openapi.spec.v2@v1.0+protobuf", PROTOBUF, True),
    ("application", "com.github.proto-openapi.spec.v2.v1.0+protobuf", PROTOBUF, True),
)
_GZIP_MIN_SIZE = 1400  # gziphandler.DefaultMinSize


# --- JSON -> openapi.v2.Document (gnostic's NewDocument) --------------------------


class _Num:
    """A JSON number as yaml.v3 reads it: its text and tag (!!int / !!float)."""

    __slots__ = ("tag", "text")

    def __init__(self, text: str, tag: str) -> None:
        self.text = text
        self.tag = tag


class InvalidDocument(ValueError):
    """gnostic would refuse the document (kube answers 503)."""


def _string(v: Any) -> str | None:
    """``compiler.StringForScalarNode``: strings, ints and null (as "")."""
    if isinstance(v, str):
        return v
    if isinstance(v, _Num) and v.tag == "!!int":
        return v.text
    if v is None:
        return ""
    return None


def _scalar(field: Any, v: Any) -> Any:
    """A scalar field's value from ``v``, or raise as gnostic records an error."""
    t = field.type
    if t == FieldDescriptor.TYPE_STRING:
        s = _string(v)
        if s is not None:
            return s
    elif t == FieldDescriptor.TYPE_BOOL:
        if isinstance(v, bool):
            return v
    elif t == FieldDescriptor.TYPE_INT64:
        if isinstance(v, _Num) and v.tag == "!!int":
            try:
                return int(v.text, 10)
            except ValueError:
                pass
    elif t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT) and isinstance(v, _Num):
        return float(v.text)
    raise InvalidDocument(f"has unexpected value for {field.name}")


def _is_repeated(field: Any) -> bool:
    return bool(field.is_repeated)


def _build(name: str, v: Any) -> Message:
    """``New<name>(v)``: the message, or raise where gnostic returns an error."""
    msg = _message_class(name)()
    desc = msg.DESCRIPTOR
    # The irregular cases, listed.
    if name == "Any":
        msg.yaml = yaml_v3(v)  # type: ignore[attr-defined]
        return msg
    if name == "TypeItem":
        if isinstance(v, list):
            for item in v:
                if isinstance(item, list | dict):
                    raise InvalidDocument("has unexpected value for string array element")
                msg.value.append(_scalar_text(item))  # type: ignore[attr-defined]
        elif isinstance(v, dict):
            raise InvalidDocument("has unexpected value for string array")
        else:
            msg.value.append(_scalar_text(v))  # type: ignore[attr-defined]
        return msg
    if name == "StringArray":
        for item in v if isinstance(v, list) else []:
            msg.value.append(_string(item) or "")  # type: ignore[attr-defined]
        return msg
    if name == "ItemsItem":  # one schema (an array of schemas is not supported)
        msg.schema.append(_build("Schema", v))  # type: ignore[attr-defined]
        return msg
    if desc.oneofs_by_name.get("oneof") is not None:
        return _build_oneof(desc, msg, v)
    rule: Mapping[str, Any] = RULES.get(name, {})
    m = v if isinstance(v, dict) else {}
    missing = [k for k in rule.get("required", ()) if k not in m]
    if missing:
        raise InvalidDocument(f"{name} is missing required properties: {', '.join(missing)}")
    allowed = rule.get("allowed")
    if allowed is not None:
        patterns = [re.compile(p) for p in rule.get("patterns", ())]
        bad = [k for k in m if k not in allowed and not any(p.search(k) for p in patterns)]
        if bad:
            raise InvalidDocument(f"{name} has invalid properties: {', '.join(bad)}")
    keys: Mapping[str, str] = rule.get("keys", {})
    maps: Mapping[str, str] = rule.get("maps", {})
    enums: Mapping[str, list[str]] = rule.get("enums", {})
    for field in desc.fields:
        if field.name in maps:
            pattern = re.compile(maps[field.name]) if maps[field.name] else None
            assert field.message_type is not None  # a Named<Type> list
            value_field = field.message_type.fields_by_name["value"]
            out = getattr(msg, field.name)
            for k, item in m.items():
                if pattern is not None and not pattern.search(k):
                    continue
                pair = out.add(name=k)
                if value_field.message_type is None:  # NamedString
                    pair.value = _string(item) or ""
                else:
                    pair.value.CopyFrom(_build(value_field.message_type.name, item))
            continue
        key = keys.get(field.name)
        if key is None or key not in m:
            continue
        item = m[key]
        if field.message_type is not None:
            if _is_repeated(field):
                # A value that is not a list is skipped, as gnostic does.
                for x in item if isinstance(item, list) else []:
                    getattr(msg, field.name).append(_build(field.message_type.name, x))
            else:
                getattr(msg, field.name).CopyFrom(_build(field.message_type.name, item))
            continue
        if _is_repeated(field):
            if not isinstance(item, list):
                raise InvalidDocument(f"has unexpected value for {key}")
            values = [s for s in (_string(x) for x in item) if s is not None]
            getattr(msg, field.name).extend(values)
            if field.name in enums and any(s not in enums[field.name] for s in values):
                raise InvalidDocument(f"has unexpected value for {key}")
        else:
            value = _scalar(field, item)
            setattr(msg, field.name, value)
            if field.name in enums and value not in enums[field.name]:
                raise InvalidDocument(f"has unexpected value for {key}")
    return msg


def _build_oneof(desc: Any, msg: Message, v: Any) -> Message:
    """Each alternative is tried in order; the last that builds wins."""
    matched = False
    for field in desc.fields:
        if field.message_type is not None:
            try:
                built = _build(field.message_type.name, v)
            except InvalidDocument:
                continue
            getattr(msg, field.name).CopyFrom(built)
            matched = True
        elif isinstance(v, bool):  # bool boolean (AdditionalPropertiesItem)
            setattr(msg, field.name, v)
            matched = True
    if not matched:
        raise InvalidDocument(f"contains an invalid {desc.name}")
    return msg


def _scalar_text(v: Any) -> str:
    """A scalar node's ``Value`` (its text)."""
    if isinstance(v, _Num):
        return v.text
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return str(v)


def _load(body: bytes) -> Any:
    return json.loads(
        body,
        parse_int=lambda s: _Num(s, "!!int"),
        parse_float=lambda s: _Num(s, "!!float"),
    )


def to_document(body: bytes) -> Message:
    """``openapi_v2.ParseDocument``: the JSON document as a gnostic
    ``openapi.v2.Document``."""
    return _build("Document", _load(body))


def _message_class(name: str) -> type[Message]:
    cls: type[Message] = getattr(pb, name)
    return cls


# --- yaml.v3's Marshal of a node read from JSON (gnostic's Any.yaml) ------------------

_V3_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_V3_SPECIAL = frozenset(
    "true True TRUE false False FALSE ~ null Null NULL .nan .NaN .NAN .inf .Inf .INF "
    "+.inf +.Inf +.INF -.inf -.Inf -.INF <<".split()
) | {""}
_V3_TIMESTAMP = re.compile(
    r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"([Tt ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]*)?(Z|[-+][0-9]{1,2}(:[0-9]{2})?)?)?$"
)
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+)$")


def _v3_resolves_to_non_string(s: str) -> bool:
    """Whether yaml.v3's ``resolve("", s)`` gives a tag other than !!str (then a
    string is written double-quoted)."""
    if s in _V3_SPECIAL:
        return True
    if not s or s[0] not in "+-.0123456789":
        return False
    if s[0] == ".":
        return _V3_FLOAT.match(s) is not None
    if _V3_TIMESTAMP.match(s):
        return True
    plain = s.replace("_", "")
    return bool(_GO_INT.match(plain) or _V3_FLOAT.match(plain))


class _V3Emitter(yaml.emitter.Emitter):
    """PyYAML's emitter (a libyaml port, as yaml.v3's) with yaml.v3's indentation:
    sequences are indented in mappings, and a collection's indent is the next
    multiple of 4, except right after a sequence's ``- `` (+2)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        self.indents.append(self.indent)
        if self.indent is None:
            self.indent = self.best_indent if flow else 0
        elif not indentless:
            if self.states and self.states[-1] == self.expect_block_sequence_item:
                self.indent += 2
            else:
                step = self.best_indent
                self.indent = step * ((self.indent + step) // step)

    def expect_block_sequence(self) -> None:
        self.increase_indent(flow=False, indentless=False)
        self.state = self.expect_first_block_sequence_item

    def expect_document_start(self, first: bool = False) -> None:
        self.open_ended = False  # yaml.v3 writes no "..." after a plain scalar
        super().expect_document_start(first)


def _events(v: Any, out: list[yaml.Event]) -> None:
    if isinstance(v, dict):
        out.append(yaml.MappingStartEvent(None, None, True, flow_style=False))
        for k, item in v.items():
            _events(k, out)
            _events(item, out)
        out.append(yaml.MappingEndEvent())
    elif isinstance(v, list):
        out.append(yaml.SequenceStartEvent(None, None, True, flow_style=False))
        for item in v:
            _events(item, out)
        out.append(yaml.SequenceEndEvent())
    else:
        style = None
        if isinstance(v, str):
            if "\n" in v:
                style = "|"
            elif _v3_resolves_to_non_string(v):
                style = '"'
        out.append(yaml.ScalarEvent(None, None, (True, True), _scalar_text(v), style=style))


def yaml_v3(v: Any) -> str:
    """gnostic's ``compiler.Marshal``: yaml.v3 block style, indent 4, no wrapping."""
    events: list[yaml.Event] = [yaml.StreamStartEvent(), yaml.DocumentStartEvent()]
    _events(v, events)
    events += [yaml.DocumentEndEvent(), yaml.StreamEndEvent()]
    chunks: list[str] = []

    class _Out:
        def write(self, s: str) -> None:
            chunks.append(s)

    emitter = _V3Emitter(_Out(), indent=4, width=2**31 - 1, allow_unicode=True)
    for event in events:
        emitter.emit(event)
    return "".join(chunks)


# --- the handler ---------------------------------------------------------------------


class Headers(Protocol):
    """Request headers (``http.client.HTTPMessage``: case-insensitive ``get``)."""

    def get(self, name: str, default: None = None) -> str | None: ...


class _Served:
    """One JSON document, its ETag and build time, and its protobuf (lazily)."""

    __slots__ = ("_lock", "_proto", "etag", "json", "modified")

    def __init__(self, body: bytes) -> None:
        self.json = body
        self.etag = '"' + hashlib.sha512(body).hexdigest().upper() + '"'
        self.modified = int(time.time())
        self._proto: bytes | None = None
        self._lock = threading.Lock()

    def proto(self) -> bytes:
        with self._lock:
            if self._proto is None:
                self._proto = to_document(self.json).SerializeToString()
            return self._proto


_cache_lock = threading.Lock()
_cache: dict[int, _Served] = {}


def _served(registry: RegistryView) -> _Served:
    res = openapi_response(registry, "/openapi/v2", JSON)
    assert res is not None
    body = res[1]
    with _cache_lock:
        hit = _cache.get(id(registry))
        if hit is not None and hit.json is body:  # the same cached document
            return hit
        if len(_cache) > 16:
            _cache.clear()
        served = _cache[id(registry)] = _Served(body)
        return served


def _accepts_gzip(header: str) -> bool:
    """gziphandler's acceptsGzip: ``gzip`` listed with q > 0."""
    q_gzip = 0.0
    for coding in header.split(","):
        q = 1.0
        name = ""
        for n, part in enumerate(coding.split(";")):
            part = part.strip()
            q = 1.0  # reset for every parameter, as parseCoding does
            if n == 0:
                name = part.lower()
            elif part.startswith("q="):
                try:
                    q = min(max(float(part[2:]), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        if name == "gzip":
            q_gzip = q
    return q_gzip > 0.0


def _etag_list_matches(header: str, etag: str, *, weak: bool) -> bool:
    for candidate in header.split(","):
        c = candidate.strip()
        if c == "*":
            return True
        if weak:
            if c.removeprefix("W/") == etag:
                return True
        elif c == etag:
            return True
    return False


def _http_time(header: str) -> int | None:
    try:
        parsed = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return int(parsed.timestamp())


def _range(header: str, size: int) -> tuple[int, int] | None | str:
    """One ``bytes=`` range as ``(start, length)``; None to ignore; "416"."""
    if not header.startswith("bytes="):
        return "416"
    specs = [s.strip() for s in header[len("bytes=") :].split(",") if s.strip()]
    if len(specs) != 1 or "-" not in specs[0]:
        return None  # several ranges (multipart/byteranges) are not served
    start_s, end_s = (x.strip() for x in specs[0].split("-", 1))
    try:
        if not start_s:
            n = min(int(end_s), size)
            return (size - n, n) if n > 0 else "416"
        start = int(start_s)
        if start >= size:
            return "416"
        end = min(int(end_s), size - 1) if end_s else size - 1
    except ValueError:
        return "416"
    if end < start:
        return "416"
    return start, end - start + 1


def openapi_v2_reply(
    registry: RegistryView, method: str, headers: Headers
) -> tuple[int, bytes, str, dict[str, str]]:
    """``(status, body, Content-Type, headers)`` for ``GET /openapi/v2``."""
    out = {"Vary": "Accept-Encoding, Accept"}
    gz = _accepts_gzip(headers.get("Accept-Encoding") or "")
    chosen = None
    for media, _ in media_ranges(headers.get("Accept") or "*/*"):  # goautoneg's order
        typ, _, sub = media.partition("/")
        for a_type, a_sub, ctype, proto in _ACCEPTED:
            if typ in (a_type, "*") and sub in (a_sub, "*"):
                chosen = (ctype, proto)
                break
        if chosen:
            break
    if chosen is None:
        return 406, b"", JSON, out
    ctype, proto = chosen
    served = _served(registry)
    try:
        body = served.proto() if proto else served.json
    except InvalidDocument as err:
        logger.error("Error in OpenAPI handler: %s", err)
        return 503, b"", JSON, out
    out["Etag"] = served.etag
    out["Last-Modified"] = email.utils.formatdate(served.modified, usegmt=True)
    # http.ServeContent's preconditions.
    if_match = headers.get("If-Match")
    if if_match is not None:
        if not _etag_list_matches(if_match, served.etag, weak=False):
            return 412, b"", ctype, out
    else:
        ius = _http_time(headers.get("If-Unmodified-Since") or "")
        if ius is not None and served.modified > ius:
            return 412, b"", ctype, out
    inm = headers.get("If-None-Match")
    if inm is not None:
        if _etag_list_matches(inm, served.etag, weak=True):
            del out["Last-Modified"]
            return 304, b"", ctype, out
    else:
        ims = _http_time(headers.get("If-Modified-Since") or "")
        if ims is not None and served.modified <= ims:
            del out["Last-Modified"]
            return 304, b"", ctype, out
    code = 200
    rng = headers.get("Range")
    if rng and method in ("GET", "HEAD"):
        if_range = headers.get("If-Range")
        if if_range is None or if_range == served.etag:
            r = _range(rng, len(body))
            if r == "416":
                out["Content-Range"] = f"bytes */{len(body)}"
                return 416, b"invalid range\n", "text/plain; charset=utf-8", out
            if isinstance(r, tuple):
                start, length = r
                out["Content-Range"] = f"bytes {start}-{start + length - 1}/{len(body)}"
                body = body[start : start + length]
                code = 206
    out["Accept-Ranges"] = "bytes"
    if gz and len(body) >= _GZIP_MIN_SIZE:
        out["Content-Encoding"] = "gzip"
        body = gzip.compress(body, compresslevel=6, mtime=0)
    return code, body, ctype, out
