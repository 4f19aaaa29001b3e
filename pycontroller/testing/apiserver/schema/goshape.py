"""The shape Go's encoding/json gives a built-in object.

kube-apiserver decodes a built-in object into its Go struct, defaults it,
stores it as protobuf and answers with the stored bytes decoded and
marshalled by encoding/json. So what a client reads is never what it sent but
that struct's JSON:

- a non-pointer struct field is always written, ``{}`` when empty
  (``omitempty`` has no effect on structs: ``status: {}``, ``resources: {}``,
  ``lastState: {}``, a template's ``metadata``);
- a non-pointer ``metav1.Time`` (``MicroTime``, ``RawExtension``) that is
  zero is ``null`` (``creationTimestamp: null`` in templates,
  ``lastProbeTime: null`` in conditions, ``startedAt: null``); a zero
  ``Quantity`` is ``"0"``, a zero ``IntOrString`` ``0``, a zero ``Duration``
  ``"0s"``;
- a scalar without ``omitempty`` is written with its zero value (``0``,
  ``""``, ``false``: ``restartCount: 0``); one with ``omitempty`` is left out
  when zero or ``null`` (``hostNetwork: false`` is not stored);
- a pointer is left out when ``null`` (with ``omitempty``), kept otherwise,
  zero or not (``replicas: 0``);
- a slice or map is left out when empty (``omitempty``) or written as
  ``null`` (no ``omitempty``: an EndpointSlice's ``endpoints: null``; an
  empty one is ``null`` too, as protobuf storage does not keep it).

``shape(rt, obj)`` applies these rules in place, from the generated protobuf
descriptors (field types, nested messages) and the Go facts of
``_proto/gotypes.py`` (JSON names, ``omitempty``, pointers, inlined structs).
Each message gets a precomputed plan: the fields that must be filled when
missing, and what to do with each field present. Custom resources are
unstructured in kube and are left alone. Quantities are written as
``Quantity.MarshalJSON`` does (``quantity.py``: ``1024Mi`` is ``1Gi``, a
number ``2`` is ``"2"``); other values are not normalised.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver._proto import gotypes
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import quantity

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = ["shape"]

_META = "k8s.io.apimachinery.pkg.apis.meta.v1."

# Types with their own JSON form (a Go struct with MarshalJSON) and what Go
# writes for their zero value.
_SPECIAL_ZERO: dict[str, Any] = {
    _META + "Time": None,
    _META + "MicroTime": None,
    _META + "Duration": "0s",
    _META + "FieldsV1": None,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": None,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "0",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": 0,
}

# What to do with a field present in the object (see _shape).
_OMIT_ZERO = 0  # omitempty scalar: drop when zero or null
_OMIT_NULL = 1  # omitempty pointer (scalar or special): drop when null
_STRUCT = 2  # a struct (pointer or not): shape it; null is dropped (omitempty) or kept
_LIST = 3  # a slice: empty is dropped (omitempty) or null; items shaped
_MAP = 4  # a map: empty is dropped (omitempty) or null; values shaped
_BYTES = 5  # []byte: empty is dropped (omitempty) or null
_QUANTITY = 6  # a resource.Quantity: written in its canonical form (null: as _OMIT_NULL)
_QUANTITY_MAP = 7  # a map of quantities (ResourceList): as _MAP, values canonical

_QUANTITY_TYPE = "k8s.io.apimachinery.pkg.api.resource.Quantity"

# The zero of each protobuf scalar type (string, bool, numbers).
_STRING_TYPES = frozenset({9})  # TYPE_STRING
_BOOL_TYPES = frozenset({8})  # TYPE_BOOL
_BYTES_TYPE = 12


class _Plan:
    """One message's fields as Go marshals them.

    ``fill``: (JSON name, value, message) of the fields written even when
    unset: set to ``value`` when missing or null (a fresh ``{}`` shaped by
    ``message``'s plan when ``message`` is not None). ``ops``: JSON name ->
    (op, message or None, omitempty) for the fields present."""

    __slots__ = ("fill", "ops")

    def __init__(self) -> None:
        self.fill: tuple[tuple[str, Any, str | None], ...] = ()
        self.ops: dict[str, tuple[int, str | None, bool]] = {}


def _facts(desc: Descriptor) -> list[tuple[FieldDescriptor, str, bool, bool, bool]]:
    """(field, JSON name, omitempty, pointer, inlined) of each field of ``desc``."""
    facts = gotypes.FIELDS.get(desc.full_name, {})
    out = []
    for fd in desc.fields:
        name, _, flags = facts.get(fd.number, f"{fd.name}|o").partition("|")
        out.append((fd, name, "o" in flags, "p" in flags, "i" in flags))
    return out


def _element(fd: FieldDescriptor) -> tuple[str, str | None]:
    """(``list``, ``map`` or ``one``; the message to shape in it, if any)."""
    mt = fd.message_type
    if mt is not None and mt.GetOptions().map_entry:
        vmt = mt.fields_by_name["value"].message_type
        return "map", _shapeable(vmt)
    if fd.is_repeated:
        return "list", _shapeable(mt)
    return "one", None


def _shapeable(mt: Descriptor | None) -> str | None:
    """The name of ``mt`` if its values are structs to shape (not a special
    type, nor a named slice type, nor a scalar)."""
    if mt is None:
        return None
    name: str = mt.full_name
    if name in _SPECIAL_ZERO or name in gotypes.LIST_WRAPPERS:
        return None
    return name


@functools.cache
def _plan(full_name: str) -> _Plan:
    """The plan of the message ``full_name`` (built once; nested messages are
    planned when first reached, so recursive types are fine)."""
    from google.protobuf import descriptor_pool

    desc = descriptor_pool.Default().FindMessageTypeByName(full_name)
    plan = _Plan()
    fill: list[tuple[str, Any, str | None]] = []
    _add_fields(desc, plan, fill)
    plan.fill = tuple(fill)
    return plan


def _add_fields(desc: Descriptor, plan: _Plan, fill: list[tuple[str, Any, str | None]]) -> None:
    for fd, name, omitempty, pointer, inline in _facts(desc):
        mt = fd.message_type
        if inline and mt is not None:
            _add_fields(mt, plan, fill)  # an embedded struct: its fields are ours
            continue
        shape, elem = _element(fd)
        if shape == "map":
            values = mt.fields_by_name["value"].message_type if mt is not None else None
            quantities = values is not None and values.full_name == _QUANTITY_TYPE
            plan.ops[name] = (_QUANTITY_MAP if quantities else _MAP, elem, omitempty)
            if not omitempty:
                fill.append((name, None, None))
            continue
        if shape == "list":
            plan.ops[name] = (_LIST, elem, omitempty)
            if not omitempty:
                fill.append((name, None, None))
            continue
        if mt is not None and mt.full_name in gotypes.LIST_WRAPPERS:
            plan.ops[name] = (_LIST, None, omitempty)
            if not omitempty:
                fill.append((name, None, None))
            continue
        if mt is not None and mt.full_name in _SPECIAL_ZERO:
            if pointer:
                if omitempty:
                    plan.ops[name] = (_OMIT_NULL, None, True)
                else:
                    fill.append((name, None, None))
            else:  # a struct with MarshalJSON: always written
                fill.append((name, _SPECIAL_ZERO[mt.full_name], None))
            if mt.full_name == _QUANTITY_TYPE:
                plan.ops[name] = (_QUANTITY, None, pointer and omitempty)
            continue
        if mt is not None:
            plan.ops[name] = (_STRUCT, mt.full_name, omitempty and pointer)
            if not pointer:
                fill.append((name, None, mt.full_name))
            elif not omitempty:
                fill.append((name, None, None))
            continue
        if fd.type == _BYTES_TYPE:
            plan.ops[name] = (_BYTES, None, omitempty)
            if not omitempty:
                fill.append((name, None, None))
            continue
        if pointer:
            if omitempty:
                plan.ops[name] = (_OMIT_NULL, None, True)
            else:
                fill.append((name, None, None))
            continue
        zero: Any = "" if fd.type in _STRING_TYPES else False if fd.type in _BOOL_TYPES else 0
        if omitempty:
            plan.ops[name] = (_OMIT_ZERO, None, True)
        else:
            fill.append((name, zero, None))


def _canonical_quantity(value: Any) -> Any:
    """``value`` as ``Quantity.MarshalJSON`` writes it (left alone if it does
    not parse: the strict decoder answers that with a 400 before a write)."""
    try:
        return quantity.canonical(value)
    except quantity.QuantityError:
        return value


def _shape(obj: dict[str, Any], plan: _Plan) -> None:
    for name, value, message in plan.fill:
        if obj.get(name) is None:
            if message is None:
                obj[name] = value
            else:
                obj[name] = {}
    ops = plan.ops
    for name, v in list(obj.items()):
        op = ops.get(name)
        if op is None:
            continue
        kind, message, omitempty = op
        if kind == _STRUCT:
            if isinstance(v, dict):
                if message is not None:
                    _shape(v, _plan(message))
            elif v is None and omitempty:
                del obj[name]
        elif kind == _OMIT_ZERO:
            if v is None or v == "" or (v == 0 and not isinstance(v, str)):
                del obj[name]
        elif kind == _OMIT_NULL:
            if v is None:
                del obj[name]
        elif kind == _QUANTITY:
            if v is None:
                if omitempty:
                    del obj[name]
            else:
                obj[name] = _canonical_quantity(v)
        elif not v:  # an empty (or null) slice, map or []byte
            if omitempty:
                del obj[name]
            else:
                obj[name] = None
        elif kind == _QUANTITY_MAP:
            if isinstance(v, dict):
                for k, item in v.items():
                    v[k] = _canonical_quantity(item)
        elif message is not None:
            sub = _plan(message)
            if kind == _LIST and isinstance(v, list):
                for i, item in enumerate(v):
                    if item is None:
                        item = v[i] = {}
                    if isinstance(item, dict):
                        _shape(item, sub)
            elif kind == _MAP and isinstance(v, dict):
                for k, item in v.items():
                    if item is None:
                        item = v[k] = {}
                    if isinstance(item, dict):
                        _shape(item, sub)


@functools.cache
def _root(api_version: str, kind: str) -> str | None:
    """The message of a built-in kind (None: a kind without one)."""
    from pycontroller.testing.apiserver.http import protobuf

    cls = protobuf.message_class(api_version, kind)
    if cls is None:
        return None
    name: str = cls.DESCRIPTOR.full_name
    return name


def shape(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Give ``obj``, a built-in ``rt`` object, the shape Go marshals, in place.
    Custom resources (and kinds without a Go type) are left as they are."""
    if rt.is_crd:
        return
    name = _root(rt.api_version, rt.kind)
    if name is not None:
        _shape(obj, _plan(name))
