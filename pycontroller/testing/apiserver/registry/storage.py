"""Versioned object store: one global resourceVersion, event history, watchers.

Invariants (all under ``lock``, a re-entrant lock callers hold for a whole
read-modify-write):

- ``_rv`` is the resourceVersion of the last committed write; every commit
  takes ``_rv + 1``, so resourceVersions are strictly increasing and global
  across resource types, like etcd revisions.
- Stored objects are never mutated after commit: writers build a new dict
  and commit it. Readers may therefore serialise stored objects without
  copying, and history entries can share them.
- ``_history`` holds the most recent events (at most ``history_size``);
  every event with ``rv > _complete_from`` is in it. A watch or an exact list
  at resourceVersion ``R`` is served iff ``R >= _complete_from``; older ones
  answer 410 Expired. ``compact()`` drops all history
  (``_complete_from = _rv``).
- Each commit is pushed to every watcher before the lock is released, so
  watchers see events in order without gaps.

Objects of one resource are keyed by ``(group, plural)`` (every served version
of a resource shares one storage, as in kube) and then ``(namespace, name)``
with ``namespace == ""`` for cluster-scoped objects.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from pycontroller.testing.apiserver.registry.watch import Event, RKey, Watcher
from pycontroller.testing.apiserver.status import expired

__all__ = ["Event", "Storage"]

logger = logging.getLogger(__name__)

ObjKey = tuple[str, str]  # (namespace, name)


def key_order(k: ObjKey) -> str:
    """The order etcd and the watch cache list objects in: by their storage
    key, ``.../<namespace>/<name>`` (so namespace "a-b" comes before "a")."""
    return f"{k[0]}/{k[1]}"


class Storage:
    def __init__(self, history_size: int = 10000) -> None:
        self.lock = threading.RLock()
        self.history_size = max(1, history_size)
        self._rv = 0
        self._objects: dict[RKey, dict[ObjKey, dict[str, Any]]] = {}
        self._history: collections.deque[Event] = collections.deque()
        self._complete_from = 0
        self._watchers: set[Watcher] = set()
        self._uids: dict[str, tuple[RKey, ObjKey]] = {}
        self._listeners: list[Callable[[Event], None]] = []

    # --- reads ---------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    @property
    def oldest_resource_version(self) -> int:
        """The oldest resourceVersion a watch or exact list may start from."""
        with self.lock:
            return self._complete_from

    def get(self, rkey: RKey, namespace: str, name: str) -> dict[str, Any] | None:
        with self.lock:
            return self._objects.get(rkey, {}).get((namespace, name))

    def by_uid(self, uid: str) -> dict[str, Any] | None:
        with self.lock:
            loc = self._uids.get(uid)
            if loc is None:
                return None
            return self._objects.get(loc[0], {}).get(loc[1])

    def location_of_uid(self, uid: str) -> tuple[RKey, ObjKey] | None:
        with self.lock:
            return self._uids.get(uid)

    def items(self, rkey: RKey, namespace: str | None = None) -> list[dict[str, Any]]:
        """Current objects of ``rkey`` (in ``namespace`` if given), sorted by key."""
        with self.lock:
            objs = self._objects.get(rkey, {})
            keys = sorted(
                (k for k in objs if namespace is None or k[0] == namespace), key=key_order
            )
            return [objs[k] for k in keys]

    def resource_keys(self) -> list[RKey]:
        with self.lock:
            return list(self._objects)

    def all_objects(self) -> Iterator[tuple[RKey, dict[str, Any]]]:
        """Every stored object (a snapshot list taken under the lock)."""
        with self.lock:
            snapshot = [(rk, o) for rk, objs in self._objects.items() for o in objs.values()]
        return iter(snapshot)

    def count_in_namespace(self, namespace: str) -> int:
        with self.lock:
            return sum(1 for objs in self._objects.values() for k in objs if k[0] == namespace)

    def snapshot(self, rkey: RKey, namespace: str | None, rv: int) -> list[dict[str, Any]]:
        """Objects of ``rkey`` as they were at resourceVersion ``rv``, sorted by key.

        Re-derived from the current state by undoing history newer than ``rv``;
        raises 410 Expired when that history is no longer retained.
        """
        with self.lock:
            if rv >= self._rv:
                return self.items(rkey, namespace)
            if rv < self._complete_from:
                raise expired(f"too old resource version: {rv} ({self._complete_from})")
            state = dict(self._objects.get(rkey, {}))
            for ev in reversed(self._history):
                if ev.rv <= rv:
                    break
                if ev.rkey != rkey:
                    continue
                k = (ev.namespace, ev.name)
                if ev.type == "ADDED":
                    state.pop(k, None)
                elif ev.old is not None:
                    state[k] = ev.old
            keys = sorted(
                (k for k in state if namespace is None or k[0] == namespace), key=key_order
            )
            return [state[k] for k in keys]

    # --- writes (caller holds ``lock``) ----------------------------------------------

    def commit(
        self,
        etype: str,
        rkey: RKey,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Stamp ``obj`` with the next resourceVersion, store (or remove, for
        DELETED) it, record the event and fan it out. ``obj`` must be a fresh
        dict owned by the storage from now on. Returns ``obj``."""
        with self.lock:
            self._rv += 1
            rv = self._rv
            meta = obj.setdefault("metadata", {})
            meta["resourceVersion"] = str(rv)
            ns = meta.get("namespace") or ""
            name = meta.get("name") or ""
            bucket = self._objects.setdefault(rkey, {})
            uid = meta.get("uid")
            if etype == "DELETED":
                bucket.pop((ns, name), None)
                if uid:
                    self._uids.pop(uid, None)
            else:
                bucket[(ns, name)] = obj
                if uid:
                    self._uids[uid] = (rkey, (ns, name))
            ev = Event(rv, etype, rkey, ns, name, obj, old)
            self._history.append(ev)
            while len(self._history) > self.history_size:
                dropped = self._history.popleft()
                self._complete_from = dropped.rv
            for w in list(self._watchers):
                if w.closed:
                    self._watchers.discard(w)
                    continue
                w.push(ev)
            listeners = list(self._listeners)
        for cb in listeners:
            try:
                cb(ev)
            except Exception:  # a listener bug must not break writes
                logger.exception("storage listener failed")
        return obj

    def add_listener(self, cb: Callable[[Event], None]) -> None:
        """``cb(event)`` after every commit (called with the lock held by the writer's
        thread; it must be quick and must not write)."""
        with self.lock:
            self._listeners.append(cb)

    def compact(self) -> None:
        with self.lock:
            self._history.clear()
            self._complete_from = self._rv

    # --- watch ---------------------------------------------------------------------

    def watch(
        self,
        watcher: Watcher,
        *,
        since: int | None,
        initial: bool,
    ) -> None:
        """Register ``watcher``. ``initial``: first hand it the current objects
        (``Watcher.set_initial``: references in key order, filtered and sent as
        ADDED lazily, so nothing is copied). ``since``: first replay retained
        history newer than it (410 Expired if too old). Atomic with respect to
        writes."""
        with self.lock:
            if initial:
                watcher.set_initial(self._initial_refs(watcher.rkey, watcher.namespace), self._rv)
            elif since is not None:
                if since < self._complete_from:
                    raise expired(f"too old resource version: {since} ({self._complete_from})")
                watcher.start_rv = since
                if since > self._rv:
                    # Not reached yet: the watch cache starts the watch there
                    # (getAllEventsSinceLocked has nothing to replay) and
                    # cacheWatcher.process drops events and bookmarks that are
                    # not newer (cacher/cache_watcher.go).
                    watcher.min_rv = since
                if since < self._rv:
                    newer: list[Event] = []
                    for ev in reversed(self._history):
                        if ev.rv <= since:
                            break
                        newer.append(ev)
                    for ev in reversed(newer):
                        watcher.push(ev)
                        if ev.rkey == watcher.rkey:
                            watcher.start_rv = max(watcher.start_rv, ev.rv)
            self._watchers.add(watcher)

    def _initial_refs(self, rkey: RKey, namespace: str | None) -> list[dict[str, Any]]:
        """``items()`` holding one list at a time: the sorted keys are replaced
        by their objects in place, so a streamed list of N objects costs the
        server one list of N references (lock held by the caller)."""
        objs = self._objects.get(rkey, {})
        refs: list[Any] = sorted(
            (k for k in objs if namespace is None or k[0] == namespace), key=key_order
        )
        for i, k in enumerate(refs):
            refs[i] = objs[k]
        return refs

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            self._watchers.discard(watcher)

    def watchers(self) -> list[Watcher]:
        with self.lock:
            return list(self._watchers)

    def bookmark_rv(self, watcher: Watcher) -> int | None:
        """The current resourceVersion if ``watcher`` has nothing queued (so a
        bookmark at it cannot overtake a pending event) and it is newer than
        the resourceVersion the watcher started from (cacheWatcher.process),
        else None."""
        with self.lock:
            if watcher.backlog() or self._rv <= watcher.start_rv:
                return None
            return self._rv
