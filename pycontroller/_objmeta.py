"""Reading an informer event's object: tombstones unwrapped, metadata as a dict.

Every handler, predicate and metadata helper receives either an object (a
dict as the API server sends it) or a ``DeletedFinalStateUnknown`` wrapping
the last state the cache knew. These two helpers are the one place that
unwraps it. Both only read: the dicts they return are the cache's own, so
never mutate them.
"""

from __future__ import annotations

from typing import Any

from .cache.store import DeletedFinalStateUnknown

__all__ = ["object_meta", "unwrap"]


def unwrap(obj: Any) -> Any:
    """The object a ``DeletedFinalStateUnknown`` wraps; any other value as is."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


def object_meta(obj: Any) -> dict[str, Any]:
    """``obj["metadata"]`` for reading (``{}`` when absent); tombstones are unwrapped."""
    obj = unwrap(obj)
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}
