"""Thread-safe store with secondary indices (client-go ``index.go`` and
``thread_safe_store.go``).

An *index function* maps an object to zero or more string values; the index
of that name maps each value to the set of keys of the objects producing it.

Invariants (all under ``Indexer._lock``):

* ``_items`` maps key -> object; ``_indices[name][value]`` contains ``key``
  iff ``value in _indexers[name](_items[key])``.
* Index value sets are never empty: a value whose last key leaves is dropped,
  so it disappears from :meth:`Indexer.list_index_func_values`.
* Every name in ``_indices`` is in ``_indexers`` and vice versa.

Misuse: objects returned by any method are shared with the store. Never
mutate them: the indices would silently go stale and other readers would see
the change. Use :func:`pycontroller.cache.deep_copy` for a mutable copy.

The only user code called under the lock is the index functions (so that the
indices stay consistent with the items); they must be fast, pure and must not
call back into the indexer. Key functions run before the lock is taken.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from .store import KeyFunc, _meta, meta_namespace_key_func

IndexFunc = Callable[[Any], list[str]]
"""Maps an object to the index values it is filed under."""

Indexers = dict[str, IndexFunc]
"""Index name -> index function."""

NAMESPACE_INDEX = "namespace"
"""Name of the conventional index by ``metadata.namespace``."""


def meta_namespace_index_func(obj: Any) -> list[str]:
    """Index objects by namespace (``""`` for cluster-scoped objects)."""
    if type(obj) is dict:  # fast path for decoded JSON (same answer as _meta)
        meta = obj.get("metadata")
        if type(meta) is dict:
            namespace = meta.get("namespace") or ""
            if type(namespace) is str:
                return [namespace]
    namespace, _ = _meta(obj)
    return [namespace]


# What an index function raises for a malformed object (a missing field, a
# wrong type, a non-mapping); wrapped in IndexFuncError. Anything else is a bug
# in the index function and propagates unchanged (the store stays consistent
# either way: index values are computed before anything changes).
_INDEX_FUNC_ERRORS: tuple[type[Exception], ...] = (KeyError, ValueError, TypeError, AttributeError)


# What ``Indexer._upsert_or_skip_locked`` returns for an object it did not store.
_SKIPPED: Any = object()


class IndexFuncError(RuntimeError):
    """An index function raised; client-go panics here ("unable to calculate an index entry")."""


class Indexer:
    """A thread-safe key -> object store maintaining secondary indices.

    ``add``/``update`` upsert, ``delete`` of a missing object is a no-op,
    ``replace`` swaps in new contents and rebuilds every index. All methods
    may be called from any thread.

    Returned objects are shared with the store: do not mutate them.
    """

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key_func,
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> None:
        self._key_func = key_func
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    # ----------------------------------------------------------------- store

    def add(self, obj: Any) -> None:
        """Insert or replace ``obj`` under its key and update every index."""
        self._upsert(obj)

    def _upsert(self, obj: Any, key: str | None = None) -> Any | None:
        """``add(obj)``, returning the object it replaced (``None`` if the key was new).

        ``key``, if given, must be what the key function returns for ``obj``.
        """
        with self._lock:
            return self._upsert_locked(obj, key)

    def _upsert_locked(self, obj: Any, key: str | None = None) -> Any | None:
        """``_upsert`` for a caller holding ``_lock``.

        The informer applies a popped batch of deltas under one acquisition
        of ``_lock`` (readers wait for the batch, then see all of it), passing
        the key its DeltaFIFO already computed.
        """
        if key is None:
            key = self._key_func(obj)
        items = self._items
        old = items.get(key)
        if self._indexers:
            self._update_indices_locked(old, obj, key)
        items[key] = obj
        return old

    def _delete_locked(self, obj: Any) -> None:
        """``delete`` for a caller holding ``_lock``."""
        key = self._key_func(obj)
        old = self._items.pop(key, None)
        if old is not None and self._indexers:
            self._update_indices_locked(old, None, key)

    @contextmanager
    def batch(self) -> Iterator[IndexerBatch]:
        """Hold the lock for a group of changes: ``with indexer.batch() as b: ...``.

        Readers wait for the whole group and then see all of it (the informer
        applies a popped batch of events, or an atomic relist, this way). Use
        only the yielded :class:`IndexerBatch` inside the block: any other
        method of this indexer would deadlock.
        """
        with self._lock:
            yield IndexerBatch(self)

    def upsert_many(
        self,
        keys: Sequence[str],
        objs: Sequence[Any],
        failures: builtins.list[tuple[int, Exception]] | None = None,
    ) -> builtins.list[Any | None]:
        """Store every ``objs[i]`` under ``keys[i]``, in order, under one lock acquisition.

        Returns what each replaced (``None`` where the key was new), as a
        sequence of :meth:`add` calls would. ``keys`` must be the key
        function's answers.

        An object whose index function raises is not stored (the store and
        its indices stay as they were for it). Without ``failures`` the first
        such exception propagates and the objects after it are not stored
        (as with a sequence of :meth:`add` calls); with a ``failures`` list,
        every other object is stored and ``(i, exception)`` is appended to
        ``failures`` for each object ``i`` that was not (its entry in the
        returned list is ``None``).
        """
        with self._lock:
            return self._upsert_many_locked(keys, objs, failures)

    def _upsert_many_locked(
        self,
        keys: Sequence[str],
        objs: Sequence[Any],
        failures: builtins.list[tuple[int, Exception]] | None = None,
    ) -> builtins.list[Any | None]:
        items = self._items
        if not self._indexers and len(set(keys)) == len(keys):
            # Distinct keys, no indices: C-level map/update, no per-object bytecode.
            olds = builtins.list(map(items.get, keys))
            items.update(zip(keys, objs, strict=True))
            return olds
        if failures is None or not self._indexers:  # without indices nothing can fail
            upsert = self._upsert_locked
            return [upsert(obj, key) for key, obj in zip(keys, objs, strict=True)]
        errors: builtins.list[Exception] = []
        upsert_or_skip = self._upsert_or_skip_locked
        olds = [upsert_or_skip(obj, key, errors) for key, obj in zip(keys, objs, strict=True)]
        if errors:  # rare: find the skipped positions (marked with _SKIPPED)
            skipped = [i for i, old in enumerate(olds) if old is _SKIPPED]
            for i, err in zip(skipped, errors, strict=True):
                olds[i] = None
                failures.append((i, err))
        return olds

    def _upsert_or_skip_locked(self, obj: Any, key: str, errors: builtins.list[Exception]) -> Any:
        """``_upsert_locked``, except that an exception (an index function's) is
        appended to ``errors`` and ``_SKIPPED`` returned, nothing changed.

        Kept a single frame (not a wrapper around ``_upsert_locked``): it is
        the per-object step of an informer's batches when it has indices.
        """
        try:
            items = self._items
            old = items.get(key)
            self._update_indices_locked(old, obj, key)  # raises before changing anything
            items[key] = obj
            return old
        except Exception as err:
            errors.append(err)
            return _SKIPPED

    def update(self, obj: Any) -> None:
        """Same as :meth:`add` (upsert); moves index entries whose values changed."""
        self.add(obj)

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key, if any, and its index entries."""
        self.delete_by_key(self._key_func(obj))

    def delete_by_key(self, key: str) -> None:
        """Remove the object stored under ``key``, if any."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None and self._indexers:
                self._update_indices_locked(old, None, key)

    def get(self, obj: Any) -> Any | None:
        """Return the stored object with ``obj``'s key, or ``None``."""
        return self.get_by_key(self._key_func(obj))

    def get_by_key(self, key: str) -> Any | None:
        """Return the stored object under ``key``, or ``None``."""
        with self._lock:
            return self._items.get(key)

    def list(self) -> builtins.list[Any]:
        """Return every stored object (unordered)."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """Return every key (unordered)."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def replace(self, objs: Iterable[Any], resource_version: str = "") -> None:
        """Atomically replace the contents with ``objs`` and rebuild all indices.

        A key-function error aborts before anything changes.
        ``resource_version`` is accepted for the store protocol and ignored.
        """
        items = {self._key_func(obj): obj for obj in objs}
        with self._lock:
            indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
            for key, obj in items.items():
                for name, func in self._indexers.items():
                    for value in self._index_values_locked(name, func, obj, key):
                        indices[name].setdefault(value, set()).add(key)
            self._items = items
            self._indices = indices

    def resync(self) -> None:
        """No-op: a plain store has nothing to resync (kept for the store protocol)."""

    # --------------------------------------------------------------- indices

    def get_indexers(self) -> dict[str, IndexFunc]:
        """Return a copy of the index name -> index function mapping."""
        with self._lock:
            return dict(self._indexers)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add new indices and index every object already stored.

        Raises ``ValueError`` if any name already exists (nothing is added then).
        """
        with self._lock:
            conflicts = sorted(set(indexers) & set(self._indexers))
            if conflicts:
                raise ValueError(f"indexer conflict: {conflicts}")
            new_indices: dict[str, dict[str, set[str]]] = {name: {} for name in indexers}
            for key, obj in self._items.items():
                for name, func in indexers.items():
                    for value in self._index_values_locked(name, func, obj, key):
                        new_indices[name].setdefault(value, set()).add(key)
            self._indexers.update(indexers)
            self._indices.update(new_indices)

    def index(self, index_name: str, obj: Any) -> builtins.list[Any]:
        """Return the stored objects sharing any of ``obj``'s values in the index.

        Raises ``KeyError`` for an unknown index name.
        """
        with self._lock:
            func = self._indexer_locked(index_name)
            values = self._index_values_locked(index_name, func, obj, "<query>")
            index = self._indices[index_name]
            keys: set[str] = set()
            for value in values:
                keys |= index.get(value, set())
            return [self._items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Return the sorted keys filed under ``value``; ``KeyError`` for an unknown index."""
        with self._lock:
            self._indexer_locked(index_name)
            return sorted(self._indices[index_name].get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[Any]:
        """Return the objects filed under ``value``; ``KeyError`` for an unknown index."""
        with self._lock:
            self._indexer_locked(index_name)
            return [self._items[k] for k in self._indices[index_name].get(value, ())]

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Return the values present in the index (unordered).

        Raises ``KeyError`` for an unknown index name (client-go returns an
        empty list; an unknown name here is almost always a typo).
        """
        with self._lock:
            self._indexer_locked(index_name)
            return list(self._indices[index_name])

    # ------------------------------------------------------------- internals

    def _indexer_locked(self, index_name: str) -> IndexFunc:
        try:
            return self._indexers[index_name]
        except KeyError:
            raise KeyError(f"index with name {index_name} does not exist") from None

    @staticmethod
    def _index_values_locked(name: str, func: IndexFunc, obj: Any, key: str) -> builtins.list[str]:
        try:
            values = func(obj)
        except _INDEX_FUNC_ERRORS as err:
            raise IndexFuncError(
                f"unable to calculate an index entry for key {key!r} on index {name!r}: {err}"
            ) from err
        # An index function's own list is used as is (it is not kept by the caller).
        return values if type(values) is list else list(values)

    def _update_indices_locked(self, old: Any | None, new: Any | None, key: str) -> None:
        """Move ``key`` from ``old``'s index values to ``new``'s, dropping emptied sets.

        New values are computed before anything changes, so a failing index
        function leaves the indices as they were.
        """
        changes: builtins.list[tuple[str, list[str], list[str]]] = []
        values_of = self._index_values_locked
        for name, func in self._indexers.items():
            old_values = values_of(name, func, old, key) if old is not None else []
            new_values = values_of(name, func, new, key) if new is not None else []
            if len(old_values) == 1 and old_values == new_values:
                continue
            changes.append((name, old_values, new_values))
        if not changes:
            return
        for name, old_values, new_values in changes:
            index = self._indices[name]
            for value in old_values:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)


class IndexerBatch:
    """The changes allowed while :meth:`Indexer.batch` holds the indexer's lock.

    Valid only inside that ``with`` block.
    """

    __slots__ = ("_indexer",)

    def __init__(self, indexer: Indexer) -> None:
        self._indexer = indexer

    def upsert(self, obj: Any, key: str | None = None) -> Any | None:
        """Store ``obj`` (under ``key`` if given: it must be the key function's
        answer); returns the object it replaced, or ``None`` if the key was new."""
        return self._indexer._upsert_locked(obj, key)

    def upsert_many(
        self,
        keys: Sequence[str],
        objs: Sequence[Any],
        failures: builtins.list[tuple[int, Exception]] | None = None,
    ) -> builtins.list[Any | None]:
        """:meth:`Indexer.upsert_many` inside the batch."""
        return self._indexer._upsert_many_locked(keys, objs, failures)

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key (a tombstone's key too), if any."""
        self._indexer._delete_locked(obj)
