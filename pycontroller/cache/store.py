"""Object keys, tombstones and the store protocols (client-go ``store.go``).

Objects are plain ``dict``s as the API server sent them. Their cache key is
``"<namespace>/<name>"``, or just ``"<name>"`` for cluster-scoped objects.

Invariants and misuse:

* A key function must be pure and total over the objects a store holds; it is
  called without any store lock held.
* Objects handed out by a store are shared with it: never mutate them. Use
  :func:`deep_copy` for a private, mutable copy.
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

KeyFunc = Callable[[Any], str]
"""Computes the cache key of an object."""

_T = TypeVar("_T")


class KeyFuncError(ValueError, KeyError):
    """A key could not be computed for an object (client-go ``KeyError``).

    It is both a ``ValueError`` (the object is malformed) and a ``KeyError``
    (its metadata lookup failed), so callers catching either see it.
    ``obj`` is the offending object; the cause, if any, is ``__cause__``.
    """

    def __init__(self, obj: Any, reason: str) -> None:
        super().__init__(f"couldn't create key for object {obj!r}: {reason}")
        self.obj = obj
        self.reason = reason

    def __str__(self) -> str:
        # KeyError.__str__ would repr() the message; keep it readable.
        return str(self.args[0])


class DeletedFinalStateUnknown(NamedTuple):
    """Tombstone for an object deleted while the watch was down.

    The final state of the object is unknown, so ``obj`` may be stale, and it
    may be ``None`` when the cache did not hold the object either. Handlers
    receiving deletions must unwrap it (see :func:`deletion_handling_meta_namespace_key_func`).
    """

    key: str
    obj: Any


def _dict_key(obj: Any) -> str | None:
    """The key of a plain decoded ``dict`` with string metadata, else ``None``.

    Hot path (called for every object entering a cache): exact ``type`` checks
    instead of ``isinstance(obj, Mapping)`` (an ABC check costs ~10x more).
    ``None`` sends the caller to the general path, which also produces the
    errors; an empty name goes there too.
    """
    if type(obj) is dict:
        meta = obj.get("metadata")
        if type(meta) is dict:
            name = meta.get("name")
            if type(name) is str and name:
                namespace = meta.get("namespace")
                if not namespace:
                    return name
                if type(namespace) is str:
                    return f"{namespace}/{name}"
    return None


def _meta(obj: Any) -> tuple[str, str]:
    """Return ``(namespace, name)`` of an object's metadata."""
    if type(obj) is dict:  # fast path for decoded JSON; same result as the Mapping branch
        meta = obj.get("metadata")
        if type(meta) is dict:
            namespace = meta.get("namespace") or ""
            name = meta.get("name") or ""
            if type(namespace) is str and type(name) is str:
                return namespace, name
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            raise KeyFuncError(obj, "object has no metadata")
        namespace = meta.get("namespace") or ""
        name = meta.get("name") or ""
    else:
        # Tolerate model objects (kubernetes.client models) with attribute metadata.
        meta = getattr(obj, "metadata", None)
        if meta is None:
            raise KeyFuncError(obj, "object has no metadata")
        namespace = getattr(meta, "namespace", None) or ""
        name = getattr(meta, "name", None) or ""
    if not isinstance(namespace, str) or not isinstance(name, str):
        raise KeyFuncError(obj, "metadata.namespace and metadata.name must be strings")
    return namespace, name


def meta_namespace_key_func(obj: Any) -> str:
    """Return ``"ns/name"`` (or ``"name"`` when cluster-scoped) for ``obj``.

    A ``str`` is taken to be a key already and returned unchanged (client-go's
    ``ExplicitKey``). Raises :class:`KeyFuncError` if ``obj`` has no metadata.
    """
    key = _dict_key(obj)
    if key is not None:
        return key
    if isinstance(obj, str):
        return obj
    namespace, name = _meta(obj)
    if namespace:
        return f"{namespace}/{name}"
    return name


def deletion_handling_meta_namespace_key_func(obj: Any) -> str:
    """Like :func:`meta_namespace_key_func`, but a tombstone yields its ``key``.

    Use it as the key function of stores that receive deletions from a
    ``DeltaFIFO`` (the informer's indexer does).
    """
    key = _dict_key(obj)
    if key is not None:
        return key
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key_func(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key into ``(namespace, name)``; namespace is ``""`` if absent.

    Raises ``ValueError`` for more than one ``"/"`` or an empty name.
    """
    parts = key.split("/")
    if len(parts) == 1:
        namespace, name = "", parts[0]
    elif len(parts) == 2:
        namespace, name = parts
    else:
        raise ValueError(f"unexpected key format: {key!r}")
    if not name:
        raise ValueError(f"unexpected key format: {key!r} (empty name)")
    return namespace, name


def deep_copy(obj: _T) -> _T:
    """Return a private, mutable deep copy of a cached object."""
    return copy.deepcopy(obj)


@runtime_checkable
class KeyListerGetter(Protocol):
    """What a ``DeltaFIFO`` needs from its known objects (usually the Indexer)."""

    def list_keys(self) -> builtins.list[str]: ...

    def get_by_key(self, key: str) -> Any | None: ...


class Store(Protocol):
    """The generic object store (client-go ``Store``).

    ``add`` and ``update`` upsert; ``delete`` of a missing object is a no-op;
    ``replace`` swaps in the full new contents atomically.
    """

    def add(self, obj: Any) -> None: ...

    def update(self, obj: Any) -> None: ...

    def delete(self, obj: Any) -> None: ...

    def list(self) -> builtins.list[Any]: ...

    def list_keys(self) -> builtins.list[str]: ...

    def get(self, obj: Any) -> Any | None: ...

    def get_by_key(self, key: str) -> Any | None: ...

    def replace(self, objs: builtins.list[Any], resource_version: str) -> None: ...

    def resync(self) -> None: ...


class ReflectorStore(Protocol):
    """The narrow store a reflector writes into (a ``DeltaFIFO`` or an ``Indexer``)."""

    def add(self, obj: Any) -> None: ...

    def update(self, obj: Any) -> None: ...

    def delete(self, obj: Any) -> None: ...

    def replace(self, objs: builtins.list[Any], resource_version: str) -> None: ...

    def resync(self) -> None: ...
