"""Ready-made informer transforms (``SharedIndexInformer(..., transform=...)``).

A transform runs on every object the informer receives, before it is cached
or handed to handlers (client-go ``TransformFunc``). It gets the object as
the API server sent it, freshly decoded and not yet shared, so it may change
it in place; it must return the object to cache and must not fail on what it
does not understand (``DeletedFinalStateUnknown`` tombstones, non-dicts).
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

__all__ = ["compact_metadata", "strip_managed_fields"]

_T = TypeVar("_T")


def strip_managed_fields(obj: _T) -> _T:
    """Drop ``metadata.managedFields`` from ``obj`` and return ``obj``.

    controller-runtime's ``cache.TransformStripManagedFields``: the
    server-side-apply field ownership is often the largest part of a cached
    object and controllers rarely read it, so stripping it cuts the memory of
    the cache (use a fresh GET when a controller does need it). Changes the
    dict in place, and only when the key is there: an object already in the
    cache (which readers may be iterating) is never touched, since it was
    stripped on its way in. Anything that is not a dict with a ``metadata``
    dict, such as a ``DeletedFinalStateUnknown``, is returned unchanged.
    """
    if isinstance(obj, dict):
        metadata = obj.get("metadata")
        if isinstance(metadata, dict) and "managedFields" in metadata:
            del metadata["managedFields"]
    return obj


class _SharedEmpty(dict):  # type: ignore[type-arg]
    """The one read-only empty mapping ``compact_metadata`` puts at every leaf
    of ``managedFields[].fieldsV1``. It is a ``dict`` (``== {}``, serialises
    as ``{}`` with ``json`` and ``orjson``) that refuses changes instead of
    silently changing every cached object at once; copies of it (``copy``,
    ``deepcopy``, pickling) are ordinary empty dicts."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            "this managedFields leaf is shared by cached objects and read-only: "
            "copy.deepcopy the object before changing it"
        )

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]

    def __copy__(self) -> dict[str, object]:
        return {}

    def __deepcopy__(self, memo: object) -> dict[str, object]:
        return {}

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (dict, ())

    def __repr__(self) -> str:
        return "{}"


_EMPTY = _SharedEmpty()
_intern = sys.intern
# Label and annotation values longer than this are not interned: long values
# (kubectl's last-applied-configuration) are seldom shared between objects.
_INTERN_MAX = 128


def _share_leaves(fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        if type(value) is dict:
            if value:
                _share_leaves(value)
            else:
                fields[key] = _EMPTY


def _intern_values(d: dict[str, Any]) -> None:
    for key, value in d.items():
        if type(value) is str and len(value) <= _INTERN_MAX:
            d[key] = _intern(value)


def compact_metadata(obj: _T) -> _T:
    """Make ``obj``'s metadata share what equal metadata of other objects holds.

    The parts of metadata that repeat across objects are stored once instead
    of once per object: the strings of ``namespace``, ``generateName``,
    ``creationTimestamp``, label and annotation values, owner references and
    ``managedFields`` entries (manager, operation, apiVersion, time, ...) are
    interned (``sys.intern``; strings are immutable, so sharing is
    invisible), and every empty ``{}`` leaf of a ``fieldsV1`` tree, most of
    its nodes, becomes one shared read-only empty mapping. The object keeps
    its content and its ``==``; it serialises as before.

    Metadata-only informers (``SharedInformerFactory.for_resource(...,
    metadata_only=True)``) apply it by default: with Pod-shaped metadata it
    cuts what the cache holds by about a third. Cached objects are read-only
    (as in client-go); this one makes changing a ``fieldsV1`` leaf in place
    raise instead of changing every object: ``copy.deepcopy`` first.
    Idempotent; anything that is not a dict with a ``metadata`` dict is
    returned unchanged.
    """
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is not dict:
        return obj
    for key in ("namespace", "generateName", "creationTimestamp"):
        value = meta.get(key)
        if type(value) is str:
            meta[key] = _intern(value)
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if type(values) is dict:
            _intern_values(values)
    for ref in meta.get("ownerReferences") or ():
        if type(ref) is dict:
            _intern_values(ref)
    for entry in meta.get("managedFields") or ():
        if type(entry) is dict:
            _intern_values(entry)
            fields = entry.get("fieldsV1")
            if type(fields) is dict:
                _share_leaves(fields)
    return obj
