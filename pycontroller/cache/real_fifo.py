"""RealFIFO: every change, in order (client-go ``the_real_fifo.go``, with the
1.36 ``InOrderInformers`` and ``AtomicFIFO`` behaviour).

Unlike :class:`~pycontroller.cache.delta_fifo.DeltaFIFO`, which keeps one
queue slot per key and accumulates that key's deltas in it, a RealFIFO is a
plain queue of events: an object changed three times is three entries, at the
three places in the stream where the changes happened, and deletions are
never merged. Consumers see exactly the order the producer (the reflector)
saw.

A ``replace`` (a relist) and a ``resync`` are each queued as *one atomic
unit* (client-go's ``ReplacedAll``/``SyncAll``): the unit is popped alone and
handed to ``process`` in one call, whatever its size, so a consumer applies a
whole relist (its synthetic deletions first, then the listed objects) at
once, and readers of its cache never see half of it.

Invariants (all under ``RealFIFO._lock``):

* ``_queue`` holds entries in arrival order; an entry is either one event,
  ``(key, [delta])``, or an atomic unit (a :class:`_Unit` of such pairs,
  never empty);
* ``_initial_population_count`` counts the entries of the first ``replace``
  (a unit counts as one entry) that are not popped yet.

The consumer interface is :class:`DeltaFIFO`'s: ``pop`` (one event, or one
unit's events as a single ``Deltas``), ``pop_batch`` and
``set_producer_drain`` hand ``process`` a list of ``(key, deltas,
is_in_initial_list)`` triples where every ``deltas`` holds exactly one delta;
one key may appear several times in a batch, in event order. ``process`` runs
under the queue's lock, so it must be quick and must not call back into the
queue. Objects are shared: never mutate them.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable
from functools import partial
from itertools import chain, repeat
from typing import Any

from .delta_fifo import (
    _KEY_ERRORS,
    ClosedError,
    Delta,
    Deltas,
    DeltaType,
    PopBatchProcessFunc,
    PopProcessFunc,
    TransformFunc,
    _new_delta,
    _process_in_producer,
    _yield_interpreter,
    fifo_key_of,
)
from .store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyListerGetter,
    _dict_key,
    meta_namespace_key_func,
)

__all__ = ["RealFIFO"]

logger = logging.getLogger(__name__)

_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED

_Entry = tuple[str, Deltas]
"""One queued event: its key and a one-delta ``Deltas``."""


class _Unit(builtins.list[_Entry]):
    """An atomic group of events (a relist or a resync), popped and processed together."""

    __slots__ = ()


class RealFIFO:
    """An in-order queue of every change (see the module docstring).

    ``known_objects`` (normally the informer's Indexer) is what ``replace``
    checks for vanished objects and what ``resync`` re-emits; without it,
    ``resync`` does nothing and ``replace`` detects deletions among queued
    events only. ``transformer`` is applied to every object entering the
    queue except tombstones and resync'd objects (already transformed).
    ``emit_delta_type_replaced`` (default true, as client-go's RealFIFO):
    relisted objects get ``Replaced``, else ``Sync``.
    """

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key_func,
        known_objects: KeyListerGetter | None = None,
        emit_delta_type_replaced: bool = True,
        *,
        transformer: TransformFunc | None = None,
    ) -> None:
        self._key_func = key_func
        self._dict_keys = key_func is meta_namespace_key_func
        self._known_objects = known_objects
        self._emit_delta_type_replaced = emit_delta_type_replaced
        self._transformer = transformer
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[_Entry | _Unit] = deque()
        self._populated = False
        self._initial_population_count = 0
        self._closed = False
        # Consumers blocked in wait(): producers notify only when there are any.
        self._waiting = 0
        self._drain: PopBatchProcessFunc | None = None
        self._drain_backlog = 0
        self._drain_batch = 0

    def set_producer_drain(
        self, process: PopBatchProcessFunc, backlog: int = 64, max_items: int = 512
    ) -> None:
        """Let producers process the queue themselves (as :meth:`DeltaFIFO.set_producer_drain`).

        After an ``add``/``update``/``delete`` that leaves at least ``backlog``
        entries queued, the producing thread pops them (up to ``max_items``
        events per call of ``process``, an atomic unit always whole) and
        processes them under the lock; a ``replace`` or ``resync`` processes
        everything queued up to and including its own unit at once. An
        exception from ``process`` is logged and that batch dropped. After
        draining, outside the lock, the producer yields the interpreter.
        """
        if backlog < 1 or max_items < 1:
            raise ValueError("backlog and max_items must be at least 1")
        with self._lock:
            self._drain = process
            self._drain_backlog = backlog
            self._drain_batch = max_items

    # ------------------------------------------------------------------ keys

    key_of = fifo_key_of  # the same keys as DeltaFIFO's

    # ------------------------------------------------------------- producers

    def add(self, obj: Any) -> None:
        """Queue an ``Added`` event."""
        self._event(_ADDED, obj)

    def update(self, obj: Any) -> None:
        """Queue an ``Updated`` event."""
        self._event(_UPDATED, obj)

    def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` event (always: the consumer decides what an unknown
        key's deletion means, as with client-go's RealFIFO)."""
        self._event(_DELETED, obj)

    @property
    def transformer(self) -> TransformFunc | None:
        """The transform applied to objects entering the queue (None: none)."""
        return self._transformer

    def replace(
        self, objs: Iterable[Any], resource_version: str = "", *, transformed: bool = False
    ) -> None:
        """Queue a relist as one atomic unit.

        The unit holds, in this order: ``Deleted`` with a
        :class:`DeletedFinalStateUnknown` for every key that is queued (its
        last queued event not a deletion) or known, but absent from ``objs``
        (carrying the last object seen: the newest queued, else the known
        one); then ``Replaced`` (``Sync`` without ``emit_delta_type_replaced``)
        for every listed object, in list order. Nothing is queued when the
        unit would be empty. ``resource_version`` is ignored. ``transformed``:
        the caller already applied ``transformer`` to ``objs`` (the reflector
        does, page by page, so a list's discarded fields are freed as it
        arrives).
        """
        action = DeltaType.REPLACED if self._emit_delta_type_replaced else DeltaType.SYNC
        objs = builtins.list(objs)
        fast_key = _dict_key if self._dict_keys else None
        key_of = self.key_of
        # Keys first (a key error leaves the queue untouched), then the transform.
        if fast_key is not None:
            keys = [fast_key(obj) or key_of(obj) for obj in objs]
        else:
            keys = [key_of(obj) for obj in objs]
        if self._transformer is not None and not transformed:
            transformer = self._transformer
            objs = [o if isinstance(o, DeletedFinalStateUnknown) else transformer(o) for o in objs]
        listed = set(keys)
        with self._lock:
            unit = _Unit()
            last_queued: dict[str, Delta] = {}
            for key, queued in self._events_locked():
                last_queued[key] = queued[0]
            for key, delta in last_queued.items():
                if key in listed or delta.type is _DELETED:
                    continue
                unit.append((key, [_tombstone(key, delta.object)]))
            if self._known_objects is not None:
                for key in self._known_objects.list_keys():
                    if key in listed or key in last_queued:
                        continue
                    try:
                        known = self._known_objects.get_by_key(key)
                    except _KEY_ERRORS:
                        logger.exception("lookup of known key %s failed; empty tombstone", key)
                        known = None
                    else:
                        if known is None:
                            logger.info("known key %s vanished; empty tombstone", key)
                    unit.append((key, [_tombstone(key, known)]))
            # [(key, [Delta(action, obj)]), ...] built with C-level map/zip.
            replaced = map(_new_delta, repeat(Delta), zip(repeat(action), objs))
            unit.extend(zip(keys, map(builtins.list, zip(replaced, strict=False)), strict=True))
            if unit:
                self._queue.append(unit)
            if not self._populated:
                self._populated = True
                self._initial_population_count = len(self._queue)
            self._notify_locked()
            drained = self._drain_all_locked()
        if drained:
            _yield_interpreter()

    def resync(self) -> None:
        """Queue ``Sync`` for every known object with no queued event, as one atomic unit.

        A queued event always wins over a stale resync. Does nothing without
        ``known_objects`` (or when every known key has an event queued).
        """
        if self._known_objects is None:
            return
        with self._lock:
            queued = {key for key, _ in self._events_locked()}
            unit = _Unit()
            for key in self._known_objects.list_keys():
                if key in queued:
                    continue
                try:
                    obj = self._known_objects.get_by_key(key)
                except _KEY_ERRORS:
                    logger.exception("known-objects lookup of %s failed; not resyncing it", key)
                    continue
                if obj is None:
                    logger.info("key %s vanished from known objects; not resyncing it", key)
                    continue
                unit.append((key, [_new_delta(Delta, (DeltaType.SYNC, obj))]))
            if not unit:
                return
            self._queue.append(unit)
            self._notify_locked()
            drained = self._drain_all_locked()
        if drained:
            _yield_interpreter()

    # -------------------------------------------------------------- consumer

    def pop(self, process: PopProcessFunc, timeout: float | None = None) -> Deltas:
        """Block until something is queued, remove the head entry, ``process`` it, return it.

        The head is one event (a one-delta ``Deltas``) or one atomic unit (all
        its deltas, possibly of many keys, as one ``Deltas``).
        ``process(deltas, is_in_initial_list)`` runs under the queue's lock;
        an exception propagates (the entry is not re-queued). Raises
        :class:`ClosedError` on a closed, empty queue and ``TimeoutError``
        after ``timeout`` seconds with nothing to pop.
        """
        with self._cond:
            self._wait_for_items_locked(timeout)
            is_in_initial_list = not self._has_synced_locked()
            entry = self._queue.popleft()
            if self._initial_population_count > 0:
                self._initial_population_count -= 1
            if type(entry) is _Unit:
                deltas: Deltas = [d for _, ds in entry for d in ds]
            else:
                deltas = entry[1]  # type: ignore[assignment]
            process(deltas, is_in_initial_list)
            return deltas

    def pop_batch(
        self, process: PopBatchProcessFunc, max_items: int = 1024, timeout: float | None = None
    ) -> int:
        """Like :meth:`pop`, for up to ``max_items`` events in one lock acquisition.

        Calls ``process(batch)`` once, under the lock, with ``(key, [delta],
        is_in_initial_list)`` triples in queue order (a key may repeat). An
        atomic unit at the head is popped alone and whole, whatever its size;
        a unit behind single events waits for the next call. Returns the
        number of events popped. ``ClosedError``/``TimeoutError`` as :meth:`pop`.
        """
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        with self._cond:
            self._wait_for_items_locked(timeout)
            return self._pop_batch_locked(process, max_items)

    # ----------------------------------------------------------- inspection

    def list_keys(self) -> builtins.list[str]:
        """Keys of the queued events, in queue order (a key may repeat)."""
        with self._lock:
            return [key for key, _ in self._events_locked()]

    def list(self) -> builtins.list[Any]:
        """The object of every queued event, in queue order."""
        with self._lock:
            return [deltas[0].object for _, deltas in self._events_locked()]

    def get_by_key(self, key: str) -> Deltas | None:
        """The queued deltas of ``key``, oldest first, or ``None``."""
        with self._lock:
            found = [d for k, deltas in self._events_locked() if k == key for d in deltas]
        return found or None

    def get(self, obj: Any) -> Deltas | None:
        return self.get_by_key(self.key_of(obj))

    def __len__(self) -> int:
        """Queued entries (an atomic unit counts as one)."""
        return len(self._queue)

    def queued_items(self) -> int:
        """Queued entries, without taking the lock (for metrics scrapes)."""
        return len(self._queue)

    def has_synced(self) -> bool:
        """True once the first ``replace``'s unit (and whatever was queued before
        it) was popped, or once anything was added/updated/deleted first."""
        with self._lock:
            return self._has_synced_locked()

    def close(self) -> None:
        """Close the queue and wake every blocked ``pop``; queued entries still pop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        with self._lock:
            return self._closed

    # ------------------------------------------------------------- internals

    def _event(self, action: DeltaType, obj: Any) -> None:
        key = (_dict_key(obj) if self._dict_keys else None) or self.key_of(obj)
        if self._transformer is not None and not isinstance(obj, DeletedFinalStateUnknown):
            obj = self._transformer(obj)
        entry = (key, [_new_delta(Delta, (action, obj))])
        with self._lock:
            self._populated = True
            self._queue.append(entry)
            if self._waiting:
                self._wake_locked()
            if self._drain is None or len(self._queue) < self._drain_backlog:
                return
            self._drain_locked()
        _yield_interpreter()

    def _events_locked(self) -> builtins.list[_Entry]:
        events: builtins.list[_Entry] = []
        for entry in self._queue:
            if isinstance(entry, _Unit):
                events.extend(entry)
            else:
                events.append(entry)
        return events

    def _has_synced_locked(self) -> bool:
        return self._populated and self._initial_population_count == 0

    def _wait_for_items_locked(self, timeout: float | None) -> None:
        if self._queue:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._queue:
            if self._closed:
                raise ClosedError("RealFIFO: manipulating with closed queue")
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("RealFIFO.pop timed out")
            self._waiting += 1
            try:
                self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    def _notify_locked(self) -> None:
        if self._waiting:
            self._wake_locked()

    def _wake_locked(self) -> None:
        self._cond.notify_all()

    def _pop_batch_locked(self, process: PopBatchProcessFunc, max_items: int) -> int:
        """Pop a unit alone, or up to ``max_items`` single events before the next unit."""
        queue = self._queue
        count = self._initial_population_count
        if type(queue[0]) is _Unit:
            unit = queue.popleft()
            initial = not self._has_synced_locked()
            if count:
                self._initial_population_count = count - 1
            batch = builtins.list(zip(*zip(*unit, strict=True), repeat(initial), strict=False))
            process(batch)
            return len(batch)
        popleft = queue.popleft
        entries: builtins.list[Any] = []
        take = entries.append
        while queue and len(entries) < max_items and type(queue[0]) is not _Unit:
            take(popleft())
        n = len(entries)
        n_initial = n if not self._populated else min(n, count)
        self._initial_population_count = count - min(n, count)
        keys, deltas = zip(*entries, strict=True)
        batch = builtins.list(
            zip(
                keys,
                deltas,
                chain(repeat(True, n_initial), repeat(False, n - n_initial)),
                strict=True,
            )
        )
        process(batch)
        return n

    def _drain_locked(self) -> bool:
        """Producer's share after a single event: batches while the backlog lasts."""
        process = self._drain
        drained = False
        while process is not None and len(self._queue) >= self._drain_backlog:
            drained = True
            self._pop_batch_locked(partial(_process_in_producer, process), self._drain_batch)
        return drained

    def _drain_all_locked(self) -> bool:
        """Producer's share after a ``replace``/``resync``: everything queued, its unit included."""
        process = self._drain
        if process is None or not self._queue:
            return False
        while self._queue:
            self._pop_batch_locked(partial(_process_in_producer, process), self._drain_batch)
        return True


def _tombstone(key: str, obj: Any) -> Delta:
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return _new_delta(Delta, (_DELETED, DeletedFinalStateUnknown(key, obj)))
