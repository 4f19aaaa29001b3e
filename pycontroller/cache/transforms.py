"""Ready-made informer transforms (``SharedIndexInformer(..., transform=...)``).

A transform runs on every object the informer receives, before it is cached
or handed to handlers (client-go ``TransformFunc``). It gets the object as
the API server sent it, freshly decoded and not yet shared, so it may change
it in place; it must return the object to cache and must not fail on what it
does not understand (``DeletedFinalStateUnknown`` tombstones, non-dicts).
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["strip_managed_fields"]

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
