"""``Request``: what a builder-made controller's reconcile function receives.

controller-runtime's ``reconcile.Request``: the namespace and name of one
object, nothing else. Reconcile is level-based: it reads the object's current
state (from a lister) instead of trusting any event that led here, so the
request carries no object, no event type and no old state.

``str(request)`` is the workqueue key (``"ns/name"``, or ``"name"`` for a
cluster-scoped object) and ``Request.from_key`` inverts it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._objmeta import object_meta
from .cache.store import split_meta_namespace_key

__all__ = ["Request"]


class Request(NamedTuple):
    """The object to reconcile: ``Request(namespace, name)``; namespace ``""`` if cluster-scoped."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_key(cls, key: str) -> Request:
        """The request for a queue key ``"ns/name"`` or ``"name"``.

        Raises ``ValueError`` for a malformed key (more than one ``"/"``, an
        empty name), as ``split_meta_namespace_key`` does.
        """
        namespace, name = split_meta_namespace_key(key)
        return cls(namespace, name)

    @classmethod
    def from_object(cls, obj: Any) -> Request:
        """The request for an object (a ``DeletedFinalStateUnknown`` is unwrapped).

        Raises ``ValueError`` when the object has no ``metadata.name``.
        """
        meta = object_meta(obj)
        if not meta.get("name"):
            raise ValueError("object has no metadata.name")
        return cls(str(meta.get("namespace") or ""), str(meta["name"]))
