"""Watch fan-out: one ``Watcher`` per open watch stream.

The storage pushes every committed ``Event`` to every registered watcher
*while holding the storage lock*, so each watcher's queue receives events in
strictly increasing resourceVersion order with no gaps. ``push`` never blocks:
it filters (resource, namespace, selectors), turns selector transitions into
ADDED/DELETED as kube-apiserver's watch cache does, and appends to an
unbounded-but-capped deque. A watcher whose backlog exceeds ``capacity`` is
marked too slow and closed (kube terminates such watchers too); writers are
never slowed by a slow reader.

The HTTP thread that owns the stream pops items with ``next`` and encodes them
(``Event.encode`` caches the encoded line per apiVersion, so fan-out to many
watchers encodes each event once).

A watch that starts with the current state (``sendInitialEvents=true``, or a
legacy watch from resourceVersion "" or "0") gets it through ``set_initial``:
a list of *references* to the stored objects (never copies, never
``WatchItem``s), handed out one ADDED item at a time before anything queued,
so streaming 30,000 objects costs one list of pointers plus what the stream
encodes at once. ``next`` then hands out one ``INITIAL_EVENTS_END`` item if the
watch asked for the end-of-initial-events bookmark; queued events follow.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pycontroller import _json
from pycontroller.testing.apiserver.registry.selectors import Selector

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.http.faults import Faults

__all__ = ["INITIAL_EVENTS_END", "Event", "WatchItem", "Watcher"]

RKey = tuple[str, str]  # (group, plural)

#: ``WatchItem.type`` of the marker that ends the initial events: the stream
#: writes the BOOKMARK annotated ``k8s.io/initial-events-end`` there.
INITIAL_EVENTS_END = "INITIAL_EVENTS_END"


@dataclass(eq=False)
class Event:
    """A committed change. ``obj`` carries the event's resourceVersion; ``old``
    is the previous stored object (None for ADDED). Both are never mutated."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    rkey: RKey
    namespace: str
    name: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    _encoded: dict[tuple[str, str], bytes] = field(default_factory=dict, repr=False)

    def encode(self, etype: str, api_version: str | None) -> bytes:
        """``{"type": etype, "object": obj}\\n``; cached (racy but idempotent)."""
        key = (etype, api_version or "")
        data = self._encoded.get(key)
        if data is None:
            obj = self.obj
            if api_version and obj.get("apiVersion") != api_version:
                obj = dict(obj)
                obj["apiVersion"] = api_version
            data = _json.dumps({"type": etype, "object": obj}) + b"\n"
            self._encoded[key] = data
        return data


@dataclass(slots=True)
class WatchItem:
    type: str
    event: Event | None = None  # None for synthetic items
    obj: dict[str, Any] | None = None
    # Monotonic time before which ``next`` holds the item back (0: at once).
    ready_at: float = 0.0


def _at_rv(obj: dict[str, Any], rv: int) -> dict[str, Any]:
    """``obj`` (shared, not mutated) with its resourceVersion set to ``rv``."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta["resourceVersion"] = str(rv)
    out["metadata"] = meta
    return out


class Watcher:
    """A registered watch. States: open -> closed (by client, stop, drop or
    overflow). ``closed_reason`` says why, for logging."""

    def __init__(
        self,
        rkey: RKey,
        namespace: str | None,
        selector: Selector,
        *,
        capacity: int = 100_000,
        faults: Faults | None = None,
    ) -> None:
        self.rkey = rkey
        self.namespace = namespace
        self.selector = selector
        self.capacity = capacity
        # Its ``watch_event_delay`` holds queued events back (``delay_watch_events``).
        self.faults = faults
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque[WatchItem] = collections.deque()
        self.closed = False
        self.closed_reason = ""
        # Set by the HTTP layer: called by ``abort`` to tear the socket down.
        self.on_abort: Any = None
        # Set by the HTTP layer before registration: hand out an
        # INITIAL_EVENTS_END item after the initial state (set_initial).
        self.initial_end = False
        # The resourceVersion the initial state was taken at (None: no initial state).
        self.initial_rv: int | None = None
        # Invariant: _initial[_initial_pos:] are the initial objects not yet
        # handed out; they all come before anything in _queue.
        self._initial: list[dict[str, Any]] = []
        self._initial_pos = 0
        self._initial_end_pending = False
        # A watch from a resourceVersion not reached yet: events up to it are
        # not sent (cacheWatcher.process sends only those newer than it).
        self.min_rv = 0
        # The resourceVersion the watch starts from (the requested one, the
        # initial state's, or the last replayed event's): a periodic bookmark
        # goes out only past it (cacheWatcher.processInterval, process).
        self.start_rv = 0

    # --- producer side (storage lock held) ----------------------------------------

    def push(self, ev: Event) -> None:
        if ev.rkey != self.rkey or self.closed or ev.rv <= self.min_rv:
            return
        if self.namespace is not None and ev.namespace != self.namespace:
            return
        sel = self.selector
        if sel.empty:
            etype = ev.type
        else:
            now = sel.matches(ev.obj) if ev.type != "DELETED" else False
            before = sel.matches(ev.old) if ev.old is not None else False
            if ev.type == "DELETED":
                if not before:
                    return
                etype = "DELETED"
            elif ev.type == "ADDED":
                if not now:
                    return
                etype = "ADDED"
            elif now and before:
                etype = "MODIFIED"
            elif now:
                etype = "ADDED"
            elif before:
                # Stopped matching: DELETED with the previous object content at
                # the event's resourceVersion (cacheWatcher.convertToWatchEvent).
                assert ev.old is not None
                self._append(WatchItem("DELETED", None, _at_rv(ev.old, ev.rv)))
                return
            else:
                return
        self._append(WatchItem(etype, ev))

    def push_synthetic(self, etype: str, obj: dict[str, Any]) -> None:
        self._append(WatchItem(etype, None, obj))

    def set_initial(self, objs: list[dict[str, Any]], rv: int) -> None:
        """The current state at ``rv``: ``objs`` (stored objects, shared, not
        yet filtered by the selector) go out as ADDED before any queued event.
        Call under the storage lock, before the watcher is registered."""
        with self._cond:
            self._initial = objs
            self._initial_pos = 0
            self.initial_rv = rv
            self.start_rv = max(self.start_rv, rv)
            self._initial_end_pending = self.initial_end

    def _append(self, item: WatchItem) -> None:
        faults = self.faults
        if faults is not None and faults.watch_event_delay > 0:
            item.ready_at = time.monotonic() + faults.watch_event_delay
        overflow = False
        with self._cond:
            if self.closed:
                return
            if len(self._queue) >= self.capacity:
                self.closed = True
                self.closed_reason = "too slow"
                self._queue.clear()
                overflow = True
            else:
                self._queue.append(item)
            self._cond.notify()
        if overflow:
            # The stream's thread may be blocked writing to a client that does
            # not read: tear the connection down so it can finish.
            cb = self.on_abort
            if cb is not None:
                with contextlib.suppress(OSError):
                    cb()

    # --- consumer side -------------------------------------------------------------

    def next(self, timeout: float | None) -> WatchItem | None:
        """The next item, or None on timeout or when closed."""
        with self._cond:
            if self._initial and not self.closed:
                item = self._next_initial_locked()
                if item is not None:
                    return item
            if self._initial_end_pending and not self.closed:
                self._initial_end_pending = False
                return WatchItem(INITIAL_EVENTS_END)
            if not self._queue and not self.closed:
                self._cond.wait(timeout)
            if self._queue and not self.closed:
                # Items are in commit order: a held-back head holds back the rest.
                left = self._queue[0].ready_at - time.monotonic()
                if left > 0:
                    self._cond.wait(left if timeout is None else min(left, timeout))
                    if self.closed or not self._queue:
                        return None
                    if self._queue[0].ready_at > time.monotonic():
                        return None
                return self._queue.popleft()
            return None

    def _next_initial_locked(self) -> WatchItem | None:
        """The next initial object the selector matches (None when they are
        all out; the snapshot list is then released)."""
        objs = self._initial
        pos = self._initial_pos
        sel = self.selector
        n = len(objs)
        while pos < n:
            obj = objs[pos]
            pos += 1
            if sel.empty or sel.matches(obj):
                self._initial_pos = pos
                return WatchItem("ADDED", None, obj)
        self._initial = []
        self._initial_pos = 0
        return None

    def backlog(self) -> int:
        """Items ``next`` can hand out at once (initial objects counted
        before selector filtering)."""
        with self._cond:
            return (
                len(self._queue)
                + len(self._initial)
                - self._initial_pos
                + self._initial_end_pending
            )

    def close(self, reason: str = "closed") -> None:
        with self._cond:
            if not self.closed:
                self.closed = True
                self.closed_reason = reason
            self._queue.clear()
            self._initial = []
            self._initial_pos = 0
            self._initial_end_pending = False
            self._cond.notify_all()

    def abort(self) -> None:
        """Close and tear down the stream's connection abruptly (drop_watches)."""
        self.close("dropped")
        cb = self.on_abort
        if cb is not None:
            with contextlib.suppress(OSError):
                cb()
