"""Kubernetes protobuf bodies (``application/vnd.kubernetes.protobuf``).

Go clients, kubectl among them, send built-in kinds as protobuf and ask for
protobuf answers. The server works on kube's JSON form of objects, so this
module converts between that form and the upstream messages, compiled from
k8s.io/api and k8s.io/apimachinery by ``hack/gen-proto.py`` into ``_proto``.

A body is ``k8s\\x00`` followed by a ``runtime.Unknown``: the type's
``apiVersion`` and ``kind``, and the message itself in ``raw``
(``k8s.io/apimachinery/pkg/runtime/serializer/protobuf``).

The conversion walks the message descriptors. What ``.proto`` files do not
say, kube's JSON takes from the Go types, and so does this module, through
``_proto.gotypes`` (generated from the same tag's Go sources):

- a field's JSON name, and inlined structs (``Volume``'s ``VolumeSource``),
  whose fields appear in the parent object;
- ``omitempty``: Go writes every non-pointer field on the wire, so a zero
  ``""``/``0``/``false`` on the wire is dropped from JSON when the field is
  ``omitempty``, kept when it is not (``containerPort: 0``);
- pointers: a pointer field is on the wire only when set, so its zero is kept
  (``replicas: 0``); a non-pointer struct is always in JSON (``status: {}``,
  ``resources: {}``; a zero ``metav1.Time`` is ``null``);
- named slice types (``Verbs``, ``ExtraValue``), an ``items`` message on the
  wire and a plain list in JSON.

Types with their own JSON form are listed in ``_SPECIAL``: ``Quantity``
(string), ``IntOrString`` (int or string), ``Time`` and ``MicroTime``
(RFC 3339), ``Duration`` (Go's ``1h2m3s``), ``RawExtension`` and ``FieldsV1``
(embedded JSON). ``bytes`` fields are base64 strings in JSON (Secret data).

``message_paths`` finds where a message type is embedded in a kind (where
``ObjectMeta`` sits below the root: pod templates, claim templates), for the
registry to give those places the shape Go marshals.

Lists are the ``{Kind}List`` messages; their items carry no ``kind`` or
``apiVersion``, as in kube's JSON for typed lists. Custom resources have no
messages: ``message_class`` returns None for them.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from pycontroller.testing.apiserver._proto import gotypes
from pycontroller.testing.apiserver.http import negotiation
from pycontroller.testing.apiserver.status import StatusError, bad_request

__all__ = [
    "MEDIA_TYPE",
    "ProtobufError",
    "Step",
    "decode",
    "decode_request",
    "encode",
    "encode_response",
    "from_json",
    "is_protobuf",
    "message_class",
    "message_paths",
    "prefers_protobuf",
    "prefers_protobuf_status",
    "prefers_protobuf_watch",
    "status_body",
    "to_json",
    "watch_frame",
]

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_MEDIA_TYPE = MEDIA_TYPE + ";stream=watch"

# runtime/serializer/protobuf: every body starts with these four bytes.
MAGIC = b"k8s\x00"

_PKG = "pycontroller.testing.apiserver._proto"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"


class ProtobufError(ValueError):
    """A body or object that cannot be converted (the caller answers 400)."""


# --- messages ------------------------------------------------------------------


def _module_for(package: str) -> str:
    """``k8s.io.api.apps.v1`` -> the generated module that defines it."""
    assert package.startswith("k8s.io.")
    return f"{_PKG}.k8s_io.{package[len('k8s.io.') :]}.generated_pb2"


@functools.cache
def _load(package: str) -> bool:
    try:
        importlib.import_module(_module_for(package))
    except ModuleNotFoundError:
        return False
    return True


def message_class(api_version: str, kind: str) -> type[Message] | None:
    """The generated message class for a built-in ``kind`` (None when there is none).

    The meta kinds registered in every group version (``DeleteOptions``,
    ``Status``, ...) and ``meta.k8s.io/v1`` resolve to apimachinery's."""
    if api_version == "meta.k8s.io/v1":
        packages = [_META]
    elif api_version == "meta.k8s.io/v1beta1":
        # v1beta1's PartialObjectMetadata is an alias of v1's; its list is
        # its own message (items = 1, metadata = 2), not in the compiled protos.
        if kind == "PartialObjectMetadataList":
            return _v1beta1_partial_list()
        packages = [_META] if kind == "PartialObjectMetadata" else []
    elif api_version in gotypes.GROUP_VERSIONS:
        packages = [gotypes.GROUP_VERSIONS[api_version], _META]
    else:
        return None  # a custom resource, or no such group version
    for package in packages:
        if not _load(package):
            continue
        try:
            desc = descriptor_pool.Default().FindMessageTypeByName(f"{package}.{kind}")
        except KeyError:
            continue
        cls: type[Message] = message_factory.GetMessageClass(desc)
        return cls
    return None


@functools.cache
def _v1beta1_partial_list() -> type[Message]:
    """``meta.k8s.io/v1beta1`` ``PartialObjectMetadataList``, from apimachinery's
    ``pkg/apis/meta/v1beta1/generated.proto``, added to the default pool."""
    name = "k8s.io.apimachinery.pkg.apis.meta.v1beta1.PartialObjectMetadataList"
    pool = descriptor_pool.Default()
    try:
        desc = pool.FindMessageTypeByName(name)
    except KeyError:
        _load(_META)
        v1_file = pool.FindMessageTypeByName(f"{_META}.PartialObjectMetadata").file
        fdp = descriptor_pb2.FileDescriptorProto(
            name="k8s.io/apimachinery/pkg/apis/meta/v1beta1/generated.proto",
            package="k8s.io.apimachinery.pkg.apis.meta.v1beta1",
            dependency=[v1_file.name],
            syntax="proto2",
        )
        msg = fdp.message_type.add(name="PartialObjectMetadataList")
        field = descriptor_pb2.FieldDescriptorProto
        msg.field.add(
            name="metadata", number=2, label=field.LABEL_OPTIONAL,
            type=field.TYPE_MESSAGE, type_name=f".{_META}.ListMeta",
        )  # fmt: skip
        msg.field.add(
            name="items", number=1, label=field.LABEL_REPEATED,
            type=field.TYPE_MESSAGE, type_name=f".{_META}.PartialObjectMetadata",
        )  # fmt: skip
        pool.AddSerializedFile(fdp.SerializeToString())
        desc = pool.FindMessageTypeByName(name)
    cls: type[Message] = message_factory.GetMessageClass(desc)
    return cls


def _class_of(full_name: str) -> type[Message]:
    _load(full_name.rsplit(".", 1)[0])
    desc = descriptor_pool.Default().FindMessageTypeByName(full_name)
    cls: type[Message] = message_factory.GetMessageClass(desc)
    return cls


# --- field facts ---------------------------------------------------------------


@dataclass(frozen=True)
class _Field:
    fd: FieldDescriptor
    json_name: str
    omitempty: bool
    pointer: bool
    inline: bool


@functools.cache
def _fields(desc: Descriptor) -> tuple[_Field, ...]:
    facts = gotypes.FIELDS.get(desc.full_name, {})
    out = []
    for fd in desc.fields:
        name, _, flags = facts.get(fd.number, f"{fd.name}|o").partition("|")
        out.append(_Field(fd, name, "o" in flags, "p" in flags, "i" in flags))
    return tuple(out)


def _map_value(fd: FieldDescriptor) -> FieldDescriptor | None:
    """The value field of a map field's entries; None when ``fd`` is not a map."""
    mt = fd.message_type
    if mt is None or not mt.GetOptions().map_entry:
        return None
    return mt.fields_by_name["value"]


def _is_repeated(fd: FieldDescriptor) -> bool:
    return bool(fd.is_repeated)


@dataclass(frozen=True)
class Step:
    """One field on the way from a kind's root to a nested struct, as its JSON
    has it: ``name`` is the field's JSON name (None for an inlined struct,
    whose fields are its parent's), ``shape`` is ``one``, ``list`` (a
    repeated field: every item) or ``map`` (every value), and ``pointer``
    says whether Go leaves the field out when unset (a non-pointer struct
    is always marshalled)."""

    name: str | None
    shape: str
    pointer: bool


def message_paths(api_version: str, kind: str, message: str) -> tuple[tuple[Step, ...], ...]:
    """Every path from the root of ``kind``'s message to a field whose type
    is the message named ``message`` (``k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta``),
    through nested messages, repeated fields and map values, read from the
    generated descriptors and the Go facts of ``gotypes``. A recursive type
    is followed once per path. Empty when the kind has no message."""
    cls = message_class(api_version, kind)
    if cls is None:
        return ()
    out: list[tuple[Step, ...]] = []
    root = cast(Descriptor, cls.DESCRIPTOR)  # the pure-Python stubs' type, as upb's
    _find_paths(root, message, (), frozenset({root.full_name}), out)
    return tuple(out)


def _find_paths(
    desc: Descriptor,
    message: str,
    path: tuple[Step, ...],
    seen: frozenset[str],
    out: list[tuple[Step, ...]],
) -> None:
    for f in _fields(desc):
        fd = f.fd
        vfd = _map_value(fd)
        mt: Descriptor | None
        if vfd is not None:
            mt, shape = vfd.message_type, "map"
        else:
            mt, shape = fd.message_type, "list" if _is_repeated(fd) else "one"
        if mt is None:
            continue
        name = mt.full_name
        step = Step(None if f.inline else f.json_name, shape, f.pointer)
        if name == message:
            out.append((*path, step))
        elif name not in seen and name not in _SPECIAL and name not in gotypes.LIST_WRAPPERS:
            _find_paths(mt, message, (*path, step), seen | {name}, out)


# --- special types -------------------------------------------------------------

# time.ParseDuration's units, in nanoseconds (µ as U+00B5 and U+03BC).
_DURATION_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6,
                   "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def _format_duration(ns: int) -> str:
    """Go's ``time.Duration.String``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns, size) + unit
    out = sign
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + _trim(rest, 10**9) + "s"


def _trim(value: int, size: int) -> str:
    whole, frac = divmod(value, size)
    if not frac:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def _parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration``, in nanoseconds."""
    s = text.strip()
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-")
    if s == "0":
        return 0
    total = 0.0
    pos = 0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * round(total)


def _parse_time(text: Any) -> datetime:
    if not isinstance(text, str):
        raise ValueError(f"invalid time {text!r}")
    try:
        t = datetime.fromisoformat(text)
    except ValueError as err:
        raise ValueError(f'parsing time "{text}": {err}') from err
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _time_to_json(msg: Any) -> Any:
    if not msg.seconds and not msg.nanos:
        return None  # Go's zero time: JSON null
    t = datetime.fromtimestamp(msg.seconds, UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _time_from_json(value: Any, msg: Any) -> None:
    msg.seconds = int(_parse_time(value).timestamp())


def _micro_time_to_json(msg: Any) -> Any:
    if not msg.seconds and not msg.nanos:
        return None
    t = datetime.fromtimestamp(msg.seconds, UTC).replace(microsecond=msg.nanos // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _micro_time_from_json(value: Any, msg: Any) -> None:
    t = _parse_time(value)
    msg.seconds = int(t.replace(microsecond=0).timestamp())
    msg.nanos = t.microsecond * 1000


def _raw_to_json(msg: Any) -> Any:
    raw = bytes(getattr(msg, _raw_field(msg)))
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return decode(raw)
    try:
        return json.loads(raw)
    except ValueError as err:
        raise ProtobufError(f"embedded object is neither JSON nor protobuf: {err}") from err


def _raw_from_json(value: Any, msg: Any) -> None:
    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    setattr(msg, _raw_field(msg), raw)


def _raw_field(msg: Any) -> str:
    # RawExtension's bytes are ``raw``, FieldsV1's ``Raw`` (its Go name).
    return "Raw" if msg.DESCRIPTOR.name == "FieldsV1" else "raw"


def _int_or_string_to_json(msg: Any) -> Any:
    return msg.strVal if msg.type == 1 else msg.intVal


def _int_or_string_from_json(value: Any, msg: Any) -> None:
    if isinstance(value, str):
        msg.type, msg.strVal = 1, value
    elif isinstance(value, int) and not isinstance(value, bool):
        msg.type, msg.intVal = 0, value
    else:
        raise ValueError(f"invalid int-or-string {value!r}")


def _quantity_from_json(value: Any, msg: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"invalid quantity {value!r}")
    msg.string = value if isinstance(value, str) else json.dumps(value)


def _duration_from_json(value: Any, msg: Any) -> None:
    if not isinstance(value, str):
        raise ValueError(f"invalid duration {value!r}")
    msg.duration = _parse_duration(value)


# full message name -> (to JSON, from JSON into the message)
_SPECIAL: dict[str, tuple[Callable[[Any], Any], Callable[[Any, Any], None]]] = {
    f"{_META}.Time": (_time_to_json, _time_from_json),
    f"{_META}.MicroTime": (_micro_time_to_json, _micro_time_from_json),
    f"{_META}.Duration": (lambda m: _format_duration(m.duration), _duration_from_json),
    f"{_META}.FieldsV1": (_raw_to_json, _raw_from_json),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": (_raw_to_json, _raw_from_json),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": (
        lambda m: m.string or "0",
        _quantity_from_json,
    ),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": (
        _int_or_string_to_json,
        _int_or_string_from_json,
    ),
}


# --- message -> JSON -----------------------------------------------------------


def to_json(msg: Message) -> dict[str, Any]:
    """kube's JSON form of a message (no ``kind``/``apiVersion``: the envelope has them)."""
    out: dict[str, Any] = {}
    _fill_json(msg, out)
    return out


def _message_to_json(msg: Any) -> Any:
    name = msg.DESCRIPTOR.full_name
    special = _SPECIAL.get(name)
    if special is not None:
        return special[0](msg)
    if name in gotypes.LIST_WRAPPERS:
        return [_scalar_to_json(msg.DESCRIPTOR.fields_by_name["items"], v) for v in msg.items]
    return to_json(msg)


def _scalar_to_json(fd: FieldDescriptor, value: Any) -> Any:
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return int(value) if float(value).is_integer() else value
    return value


def _value_to_json(fd: FieldDescriptor, value: Any) -> Any:
    if fd.message_type is not None:
        return _message_to_json(value)
    return _scalar_to_json(fd, value)


def _fill_json(msg: Any, out: dict[str, Any]) -> None:
    for f in _fields(msg.DESCRIPTOR):
        fd = f.fd
        vfd = _map_value(fd)
        if vfd is not None:
            entries = getattr(msg, fd.name)
            if entries:
                out[f.json_name] = {k: _value_to_json(vfd, v) for k, v in sorted(entries.items())}
            continue
        if _is_repeated(fd):
            items = getattr(msg, fd.name)
            if items:
                out[f.json_name] = [_value_to_json(fd, v) for v in items]
            continue
        present = msg.HasField(fd.name)
        if fd.message_type is not None:
            if f.pointer and not present:
                continue
            sub = getattr(msg, fd.name)
            if f.inline:
                _fill_json(sub, out)
            else:
                out[f.json_name] = _message_to_json(sub)
            continue
        value = getattr(msg, fd.name)
        if f.pointer:
            if present:
                out[f.json_name] = _scalar_to_json(fd, value)
        elif value or not (f.omitempty or fd.type == FieldDescriptor.TYPE_BYTES):
            out[f.json_name] = _scalar_to_json(fd, value)


# --- JSON -> message -----------------------------------------------------------


def from_json(obj: dict[str, Any], cls: type[Message]) -> Message:
    """The message of class ``cls`` for kube's JSON ``obj`` (unknown keys are ignored)."""
    msg = cls()
    _fill_message(obj, msg, "")
    return msg


def _fill_message(obj: Any, msg: Any, path: str) -> None:
    if not isinstance(obj, dict):
        raise ProtobufError(f"{path or 'object'}: expected an object, got {obj!r:.60}")
    for f in _fields(msg.DESCRIPTOR):
        fd = f.fd
        if f.inline:
            sub = getattr(msg, fd.name)
            sub.SetInParent()
            _fill_message(obj, sub, path)
            continue
        value = obj.get(f.json_name)
        if value is None:
            continue
        where = f"{path}.{f.json_name}" if path else f.json_name
        try:
            _set_field(msg, f, value, where)
        except (TypeError, ValueError) as err:
            if isinstance(err, ProtobufError):
                raise
            raise ProtobufError(f"{where}: {err}") from err


def _set_field(msg: Any, f: _Field, value: Any, where: str) -> None:
    fd = f.fd
    vfd = _map_value(fd)
    if vfd is not None:
        if not isinstance(value, dict):
            raise ProtobufError(f"{where}: expected an object")
        target = getattr(msg, fd.name)
        for k, v in value.items():
            if v is None and vfd.message_type is None:
                continue
            if vfd.message_type is not None:
                _set_message(v, target[k], f"{where}.{k}")
            else:
                target[k] = _scalar_from_json(vfd, v)
        return
    if _is_repeated(fd):
        if not isinstance(value, list):
            raise ProtobufError(f"{where}: expected a list")
        target = getattr(msg, fd.name)
        for i, item in enumerate(value):
            if fd.message_type is not None:
                _set_message(item, target.add(), f"{where}[{i}]")
            else:
                target.append(_scalar_from_json(fd, item))
        return
    if fd.message_type is not None:
        sub = getattr(msg, fd.name)
        sub.SetInParent()
        _set_message(value, sub, where)
        return
    setattr(msg, fd.name, _scalar_from_json(fd, value))


def _set_message(value: Any, msg: Any, where: str) -> None:
    name = msg.DESCRIPTOR.full_name
    special = _SPECIAL.get(name)
    if special is not None:
        if value is not None:
            special[1](value, msg)
        return
    if name in gotypes.LIST_WRAPPERS:
        if not isinstance(value, list):
            raise ProtobufError(f"{where}: expected a list")
        ifd = msg.DESCRIPTOR.fields_by_name["items"]
        msg.items.extend(_scalar_from_json(ifd, v) for v in value)
        return
    if value is not None:
        _fill_message(value, msg, where)


_INT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


def _scalar_from_json(fd: FieldDescriptor, value: Any) -> Any:
    """The proto value of a JSON scalar; TypeError for the wrong JSON type
    (the caller adds the field path)."""
    t = fd.type
    if t == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {value!r:.60}")
        return value
    if t == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise TypeError(f"expected a boolean, got {value!r:.60}")
        return value
    if t in _INT_TYPES:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer, got {value!r:.60}")
        return value
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"expected a number, got {value!r:.60}")
        return float(value)
    if t == FieldDescriptor.TYPE_BYTES:
        if not isinstance(value, str):
            raise TypeError(f"expected a base64 string, got {value!r:.60}")
        try:
            return base64.b64decode(value, validate=True)
        except ValueError as err:
            raise TypeError(f"illegal base64 data: {err}") from err
    raise TypeError(f"unsupported field type {t}")


# --- envelope ------------------------------------------------------------------


def is_protobuf(content_type: str) -> bool:
    """True for a ``Content-Type`` of kube's protobuf media type."""
    return content_type.split(";", 1)[0].strip().lower() == MEDIA_TYPE


def _negotiated_protobuf(accept: str, endpoint: negotiation.Endpoint) -> bool:
    chosen = negotiation.negotiate(accept, endpoint)
    if chosen is None or chosen[0] != MEDIA_TYPE:
        return False
    # A transform (as=PartialObjectMetadata) is not the object itself.
    return negotiation.convert_target(chosen[1]) is None


def prefers_protobuf(accept: str) -> bool:
    """True when kube answers a built-in resource's request in plain protobuf.

    kube's negotiation (``negotiation.negotiate`` with a resource's scope):
    the clauses in goautoneg's order, the first one served wins; ``pretty``
    and unknown parameters are ignored, ``stream=watch`` is allowed, an
    ``as=`` transform to a Table is not (Tables are JSON or YAML). Protobuf
    chosen with ``as=PartialObjectMetadata`` is not plain: False."""
    return _negotiated_protobuf(accept, negotiation.RESOURCE)


def prefers_protobuf_watch(accept: str) -> bool:
    """``prefers_protobuf`` for a watch of a built-in resource.

    The watch handler negotiates twice, the output media type and then its
    stream serializer, from the same clauses and scope; both land on the
    same type (protobuf has a stream serializer, ``LengthDelimitedFramer``)."""
    return _negotiated_protobuf(accept, negotiation.RESOURCE)


def prefers_protobuf_status(accept: str) -> bool:
    """True when kube writes an error's ``Status`` in protobuf.

    ``responsewriters.ErrorNegotiated`` negotiates with
    ``DefaultEndpointRestrictions`` (no transforms, ``stream=watch``
    allowed) over the scope's serializers, which include protobuf for
    custom resources too (``Status`` is a built-in type), so a protobuf
    client gets protobuf errors for any request."""
    return _negotiated_protobuf(accept, negotiation.DEFAULT)


def watch_frame(
    event_type: str, obj: dict[str, Any], api_version: str = "", kind: str = ""
) -> bytes:
    """One event of a protobuf watch stream (``WATCH_MEDIA_TYPE``).

    As kube-apiserver writes it: the stream serializer of the protobuf media
    type is the *raw* one, so a frame is a 4-byte big-endian length followed
    by a bare ``meta.v1.WatchEvent`` message (no ``k8s\\x00``, no
    ``runtime.Unknown``); the event's ``object.raw`` holds the object encoded
    by the full serializer, envelope and all (``runtime/serializer``'s
    ``LengthDelimitedFramer`` and ``protoRawSerializer``; apiserver's
    ``watchEncoder``). Raises ``ProtobufError`` for an object the messages
    cannot hold."""
    event: Any = _class_of(f"{_META}.WatchEvent")()
    event.type = event_type
    event.object.raw = encode(obj, api_version, kind)
    data: bytes = event.SerializeToString()
    return len(data).to_bytes(4, "big") + data


def status_body(status: dict[str, Any]) -> bytes:
    """A ``Status`` (an error answer) as protobuf."""
    return encode(status, "v1", "Status")


def _envelope(body: bytes) -> Any:
    if not body.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix "
            f"{list(MAGIC)}"
        )
    envelope: Any = _class_of(_UNKNOWN)()
    try:
        envelope.ParseFromString(body[len(MAGIC) :])
    except DecodeError as err:
        raise ProtobufError(f"malformed protobuf envelope: {err}") from err
    return envelope


def decode(body: bytes, api_version: str = "", kind: str = "") -> dict[str, Any]:
    """kube's JSON form (with ``apiVersion`` and ``kind``) of a protobuf body.

    ``api_version`` and ``kind`` are the defaults for an envelope without
    them (kube's decoder takes them from the request path). Raises
    ``ProtobufError`` for a body that is not protobuf or whose kind has no
    message, as kube answers a body it cannot decode."""
    envelope = _envelope(body)
    if envelope.contentEncoding:
        raise ProtobufError(f"unsupported content encoding {envelope.contentEncoding!r}")
    version = envelope.typeMeta.apiVersion or api_version
    kind = envelope.typeMeta.kind or kind
    cls = message_class(version, kind)
    if cls is None:
        raise ProtobufError(f'no kind "{kind}" is registered for version "{version}"')
    msg = cls()
    try:
        msg.ParseFromString(envelope.raw)
    except DecodeError as err:
        raise ProtobufError(f"malformed {kind}: {err}") from err
    out: dict[str, Any] = {"apiVersion": version, "kind": kind}
    out.update(to_json(msg))
    return out


def encode(obj: dict[str, Any], api_version: str = "", kind: str = "") -> bytes:
    """The protobuf body of kube's JSON ``obj`` (``k8s\\x00`` + ``runtime.Unknown``).

    ``api_version``/``kind`` default to the object's own. Raises
    ``ProtobufError`` when the kind has no message (a custom resource)."""
    version = api_version or str(obj.get("apiVersion") or "")
    kind = kind or str(obj.get("kind") or "")
    cls = message_class(version, kind)
    if cls is None:
        raise ProtobufError(f'no protobuf message for kind "{kind}" in version "{version}"')
    envelope: Any = _class_of(_UNKNOWN)()
    envelope.typeMeta.apiVersion = version
    envelope.typeMeta.kind = kind
    envelope.raw = from_json(obj, cls).SerializeToString()
    envelope.contentEncoding = ""
    envelope.contentType = ""
    body: bytes = envelope.SerializeToString()
    return MAGIC + body


# --- HTTP ----------------------------------------------------------------------


def decode_request(body: bytes, content_type: str) -> dict[str, Any]:
    """A protobuf request body as kube's JSON form, or the ``StatusError`` kube answers.

    A kind without a message (a custom resource) is 415, as kube-apiserver
    answers protobuf for custom resources; a body that does not decode is 400."""
    try:
        envelope = _envelope(body)
    except ProtobufError as err:
        raise bad_request(str(err)) from None
    version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if message_class(version, kind) is None:
        raise StatusError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format - accepted media types "
            f'include: application/json, application/yaml (got "{content_type}": no '
            f'protobuf message for kind "{kind}" in version "{version}")',
        )
    try:
        return decode(body)
    except ProtobufError as err:
        raise bad_request(str(err)) from None


def encode_response(obj: dict[str, Any]) -> bytes | None:
    """The protobuf body of a response object, or None to answer JSON.

    None for a kind without a message, and for an object the messages cannot
    hold (logged: the client asked for protobuf but also accepts JSON)."""
    version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    if message_class(version, kind) is None:
        return None
    try:
        return encode(obj)
    except ProtobufError as err:
        logger.warning("answering JSON: %s %s does not encode as protobuf: %s", version, kind, err)
        return None
