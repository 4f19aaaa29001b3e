"""DeltaFIFO: a per-key queue of accumulated changes (client-go ``delta_fifo.go``,
release-1.32 "classic" semantics).

Producers (the reflector) call ``add``/``update``/``delete``/``replace``/
``resync``; one consumer (the informer) calls ``pop``. Every change to an
object is appended to that object's ``Deltas`` (oldest first); the key keeps
its place in the queue until popped, so a busy object never jumps ahead of
others nor starves them.

Invariants (all under ``DeltaFIFO._lock``):

* a key is in ``_queue`` iff it is in ``_items``; ``_queue`` has no duplicates;
* ``_items[key]`` is never empty;
* of the deltas of one key, only two *consecutive* ``Deleted`` deltas are ever
  merged (the one carrying the most information is kept).

``pop`` calls ``process`` while holding the queue's lock, so the consumer can
update the known-objects store atomically with respect to ``replace`` and
``resync`` deletion detection. ``process`` must therefore be quick and must
not call back into this queue. ``pop_batch`` does the same for up to
``max_items`` keys per lock acquisition (the informer uses it: one wake-up and
one lock round-trip per batch instead of per key). Objects inside the deltas
are shared: never mutate them.

With :meth:`DeltaFIFO.set_producer_drain`, a producer whose call leaves a
backlog of queued keys pops and processes them itself (still under the lock,
in queue order, exactly as ``pop_batch`` would) and then briefly yields the
interpreter: the informer uses it so that watch events reach its cache in
small batches on the reflector's thread and its handlers keep pace, while its
own thread handles what is left when the producer goes quiet.
"""

from __future__ import annotations

import builtins
import enum
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from itertools import chain, repeat
from typing import Any, NamedTuple

from .store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyFuncError,
    KeyListerGetter,
    _dict_key,
    meta_namespace_key_func,
)

logger = logging.getLogger(__name__)


class DeltaType(str, enum.Enum):
    """What happened to an object."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"
    """The object was listed again by a relist (only if ``emit_delta_type_replaced``)."""
    SYNC = "Sync"
    """A periodic resync (or a relist with ``emit_delta_type_replaced=False``)."""

    def __str__(self) -> str:
        return self.value


class Delta(NamedTuple):
    """One change: its type and the object after it (or a tombstone for deletions)."""

    type: DeltaType
    object: Any


Deltas = list[Delta]
"""The changes to one object, oldest first."""

PopProcessFunc = Callable[[Deltas, bool], None]
"""``process(deltas, is_in_initial_list)``, called by ``pop`` under the queue's lock."""

PopBatchProcessFunc = Callable[[list[tuple[str, Deltas, bool]]], None]
"""``process(batch)``, called by ``pop_batch`` under the queue's lock with
``(key, deltas, is_in_initial_list)`` triples in queue order."""

# ``Delta(t, o)`` goes through NamedTuple's Python-level ``__new__``; on the hot
# paths ``_new_delta(Delta, (t, o))`` builds the identical tuple subclass directly.
_new_delta = tuple.__new__
# Enum member lookups cost an attribute walk each; the per-event paths use these.
_ADDED = DeltaType.ADDED
_UPDATED = DeltaType.UPDATED
_DELETED = DeltaType.DELETED


def _yield_interpreter() -> None:
    """Let other threads run now (a zero sleep releases the GIL for a moment).

    A producer calls it after draining, outside the queue's lock: the threads
    ``process`` woke (an informer's handlers) then run in step with the
    stream instead of at the interpreter's next forced switch, milliseconds
    and thousands of changes later.
    """
    time.sleep(0)


def _process_in_producer(
    process: PopBatchProcessFunc, batch: list[tuple[str, Deltas, bool]]
) -> None:
    """Run a drain's ``process``; as the consumer's loop does, log a failure and
    drop the batch (the producer's own change was queued: its call succeeds)."""
    try:
        process(batch)
    except Exception:
        logger.exception("DeltaFIFO: processing deltas in the producer failed")


def _no_key(obj: Any) -> None:
    """Stands in for ``_dict_key`` when the queue has a custom key function."""
    return None


TransformFunc = Callable[[Any], Any]


# What a key function or a known-objects lookup raises for a malformed object
# (a missing field, a wrong type, a non-mapping). Anything else is a bug in
# the caller's code and propagates unchanged: the library's only catch-all is
# the controller's worker boundary.
_KEY_ERRORS: tuple[type[Exception], ...] = (KeyError, ValueError, TypeError, AttributeError)


def fifo_key_of(self: Any, obj: Any) -> str:
    """Key of ``obj``: a tombstone's key, a non-empty ``Deltas``' newest object's key,
    else the key function's answer. Raises :class:`KeyFuncError`.

    The ``key_of`` method of both FIFOs (bound in each class body, so the hot
    path pays no extra call); ``self`` is a DeltaFIFO or RealFIFO and only its
    ``_key_func`` and ``_dict_keys`` are read (typed ``Any``: mypy refuses a
    protocol as the self type of a function bound in two classes).
    """
    if self._dict_keys:
        key = _dict_key(obj)  # plain decoded dicts: no isinstance chain, no try
        if key is not None:
            return key
    if isinstance(obj, list):
        if not obj:
            raise KeyFuncError(obj, "0 length Deltas object; can't get key")
        last = obj[-1]
        obj = last.object if isinstance(last, Delta) else last
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    key_func: KeyFunc = self._key_func
    try:
        return key_func(obj)
    except KeyFuncError:
        raise
    except _KEY_ERRORS as err:
        raise KeyFuncError(obj, str(err)) from err


class ClosedError(Exception):
    """``pop`` was called on a closed, empty queue."""

    def __init__(self, message: str = "DeltaFIFO: manipulating with closed queue") -> None:
        super().__init__(message)


class RequeueError(Exception):
    """Raised by a ``process`` function to put the popped deltas back in the queue.

    The deltas go to the end of the queue unless the key was queued again in
    the meantime. ``pop`` then raises ``err`` (with this exception as its
    context) if given, or returns the deltas normally.
    """

    def __init__(self, err: BaseException | None = None) -> None:
        super().__init__(
            str(err) if err is not None else "the popped item should be requeued without an error"
        )
        self.err = err


def newest(deltas: Deltas) -> Delta | None:
    """The most recent delta, or ``None`` for an empty list."""
    return deltas[-1] if deltas else None


def oldest(deltas: Deltas) -> Delta | None:
    """The least recent delta, or ``None`` for an empty list."""
    return deltas[0] if deltas else None


def _dedup_deltas(deltas: Deltas) -> None:
    """Merge the last two deltas in place if both are deletions.

    The kept delta is the older one, unless the older one is a tombstone
    (then the newer one carries more information).
    """
    if len(deltas) < 2:
        return
    a, b = deltas[-1], deltas[-2]
    if a.type is DeltaType.DELETED and b.type is DeltaType.DELETED:
        keep = a if isinstance(b.object, DeletedFinalStateUnknown) else b
        deltas[-2:] = [keep]


class DeltaFIFO:
    """A producer/consumer queue of :data:`Deltas`, keyed by object.

    ``known_objects`` (normally the informer's Indexer) lets ``delete`` accept
    deletions of objects that are no longer queued, lets ``replace`` detect
    objects that vanished while the watch was down, and is what ``resync``
    re-emits. Without it, ``delete`` of an unqueued key is ignored and
    ``resync`` does nothing.

    ``transformer`` (optional, keyword-only) is applied to every object
    entering the queue, except tombstones and resync'd objects (those come
    from ``known_objects`` and were transformed already).
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
        # The default key function's answer for a plain dict is _dict_key's.
        self._dict_keys = key_func is meta_namespace_key_func
        self._known_objects = known_objects
        self._emit_delta_type_replaced = emit_delta_type_replaced
        self._transformer = transformer
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._items: dict[str, Deltas] = {}
        self._queue: deque[str] = deque()
        # populated: anything was ever added (or a replace happened).
        # initial_population_count: items of the first replace not yet popped.
        self._populated = False
        self._initial_population_count = 0
        self._closed = False
        # Number of pop/pop_batch calls blocked in wait() and not yet woken;
        # producers skip the (comparatively costly) notify_all while the
        # consumer is busy or already woken. ``_wakeups`` counts notify_alls,
        # so a waiter can tell whether it was woken (and uncounted) or timed out.
        self._waiting = 0
        self._wakeups = 0
        # set_producer_drain: the process function and the backlog that triggers it.
        self._drain: PopBatchProcessFunc | None = None
        self._drain_backlog = 0
        self._drain_batch = 0

    def set_producer_drain(
        self, process: PopBatchProcessFunc, backlog: int = 64, max_items: int = 512
    ) -> None:
        """Let producers process the queue themselves once ``backlog`` keys are queued.

        After an ``add``/``update``/``delete``/``replace``/``resync`` that leaves
        at least ``backlog`` keys queued, the producing thread pops them (up
        to ``max_items`` per call of ``process``) and calls ``process`` under
        the queue's lock, exactly as :meth:`pop_batch` would; fewer than
        ``backlog`` keys are left for the consumer's ``pop``/``pop_batch``.
        A ``replace`` into an empty queue hands its listed objects to
        ``process`` at once (in batches of ``max_items``, whatever their
        number) before queueing its tombstones, unless two share a key.
        Order and ``is_in_initial_list`` are as with the consumer alone. An
        exception from ``process`` is logged and that batch dropped (the
        producer's call itself succeeds: its change was queued). After
        draining, and outside the lock, the producer yields the interpreter
        for a moment (``time.sleep(0)``) so that threads ``process`` woke run
        now.

        Why: on CPython a thread that is woken gets the interpreter only at
        the next forced switch (every 5 ms) while a producer is busy, so
        thousands of changes pile up in between, and the objects they replace
        are freed in bursts. Draining small batches where they are produced,
        and letting the woken threads (an informer's handlers) keep up, keeps
        the backlog, the memory in flight and the garbage collector's work
        small: a churning cache of 10,000 objects triggers about half as many
        young collections, and in 60,000 events no full collection instead of
        three (``hack/bench/bench_informer.py``).
        """
        if backlog < 1 or max_items < 1:
            raise ValueError("backlog and max_items must be at least 1")
        with self._lock:
            self._drain = process
            self._drain_backlog = backlog
            self._drain_batch = max_items

    # ------------------------------------------------------------------ keys

    key_of = fifo_key_of

    # ------------------------------------------------------------- producers

    def add(self, obj: Any) -> None:
        """Queue an ``Added`` delta."""
        with self._lock:
            self._populated = True
            key = _dict_key(obj) if self._dict_keys else None  # None: key_of decides
            self._queue_action_locked(_ADDED, obj, key=key)
            drained = self._drain_locked()
        if drained:
            _yield_interpreter()

    def update(self, obj: Any) -> None:
        """Queue an ``Updated`` delta (the watch's hot path: one per MODIFIED event)."""
        with self._lock:
            self._populated = True
            key = _dict_key(obj) if self._dict_keys else None  # None: key_of decides
            self._queue_action_locked(_UPDATED, obj, key=key)
            if self._drain is None or len(self._queue) < self._drain_backlog:
                return
            self._drain_locked()
        _yield_interpreter()

    def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` delta, unless the key is neither queued nor known.

        Without ``known_objects`` a deletion for an unqueued key is ignored.
        A lookup error in ``known_objects`` errs on the side of queueing.
        """
        key = self.key_of(obj)
        with self._lock:
            self._populated = True
            if self._known_objects is None:
                if key not in self._items:
                    return
            else:
                try:
                    known = self._known_objects.get_by_key(key) is not None
                    lookup_failed = False
                except _KEY_ERRORS:
                    logger.exception("known-objects lookup of %s failed; queueing deletion", key)
                    known, lookup_failed = False, True
                if not lookup_failed and not known and key not in self._items:
                    return
            self._queue_action_locked(DeltaType.DELETED, obj, key=key)
            drained = self._drain_locked()
        if drained:
            _yield_interpreter()

    def add_if_not_present(self, deltas: Deltas) -> None:
        """Put popped ``deltas`` back at the end of the queue unless their key is queued.

        Raises ``TypeError`` if ``deltas`` is not a list of :class:`Delta` and
        :class:`KeyFuncError` if it is empty.
        """
        if not isinstance(deltas, list) or not all(isinstance(d, Delta) for d in deltas):
            raise TypeError(f"object must be of type Deltas, but got: {deltas!r}")
        key = self.key_of(deltas)
        with self._lock:
            self._add_if_not_present_locked(key, list(deltas))

    @property
    def transformer(self) -> TransformFunc | None:
        """The transform applied to objects entering the queue (None: none)."""
        return self._transformer

    def replace(
        self, objs: Iterable[Any], resource_version: str = "", *, transformed: bool = False
    ) -> None:
        """Queue the result of a relist.

        Every listed object gets a ``Replaced`` delta (``Sync`` when
        ``emit_delta_type_replaced`` is false). Every key that was queued or
        known but is absent from ``objs`` gets ``Deleted`` with a
        :class:`DeletedFinalStateUnknown` carrying the last object seen: the
        newest queued object, or else the known object. ``resource_version``
        is ignored. ``transformed``: the caller already applied
        ``transformer`` to ``objs`` (the reflector does, page by page).
        """
        action = DeltaType.REPLACED if self._emit_delta_type_replaced else DeltaType.SYNC
        objs = builtins.list(objs)
        # Keys first (a key error leaves the queue untouched), then the transform.
        fast_key = _dict_key if self._dict_keys else _no_key
        key_of = self.key_of
        listed_keys = [fast_key(obj) or key_of(obj) for obj in objs]
        if self._transformer is not None and not transformed:
            transformer = self._transformer
            objs = [o if isinstance(o, DeletedFinalStateUnknown) else transformer(o) for o in objs]
        listed = set(listed_keys)
        with self._lock:
            items = self._items
            # Nothing queued (and no key twice, which the queue would merge): with
            # a drain, the entries go straight to it and none is left queued.
            direct = self._drain is not None and not items and len(listed) == len(listed_keys)
            if direct:
                self._drain_listed_locked(action, listed_keys, objs)
                listed_count = 0
            else:
                # Hot loop (every listed object): locals only, no per-item notify.
                # ``action`` is never Deleted: nothing to dedup.
                get_deltas = items.get
                enqueue = self._queue.append
                for key, obj in zip(listed_keys, objs, strict=True):
                    delta = _new_delta(Delta, (action, obj))
                    deltas = get_deltas(key)
                    if deltas is None:
                        items[key] = [delta]
                        enqueue(key)
                    else:
                        deltas.append(delta)
                listed_count = len(listed)
            self._notify_locked()

            queued_deletions = 0
            for key in [k for k in self._queue if k not in listed]:
                deleted_obj = items[key][-1].object
                if isinstance(deleted_obj, DeletedFinalStateUnknown):
                    deleted_obj = deleted_obj.obj
                queued_deletions += 1
                self._queue_action_locked(
                    DeltaType.DELETED, DeletedFinalStateUnknown(key, deleted_obj), key=key
                )

            if self._known_objects is not None:
                for key in self._known_objects.list_keys():
                    if key in listed or key in items:
                        continue
                    try:
                        deleted_obj = self._known_objects.get_by_key(key)
                    except _KEY_ERRORS:
                        logger.exception("lookup of known key %s failed; empty tombstone", key)
                        deleted_obj = None
                    else:
                        if deleted_obj is None:
                            logger.info("known key %s vanished; empty tombstone", key)
                    queued_deletions += 1
                    self._queue_action_locked(
                        DeltaType.DELETED, DeletedFinalStateUnknown(key, deleted_obj), key=key
                    )

            if not self._populated:
                self._populated = True
                self._initial_population_count = listed_count + queued_deletions
            drained = self._drain_locked()
        if drained or (direct and objs):
            _yield_interpreter()

    def resync(self) -> None:
        """Queue ``Sync`` for every known object whose key has no pending deltas.

        A pending event always wins over a stale resync. Does nothing without
        ``known_objects``.
        """
        if self._known_objects is None:
            return
        with self._lock:
            for key in self._known_objects.list_keys():
                try:
                    obj = self._known_objects.get_by_key(key)
                except _KEY_ERRORS:
                    logger.exception("known-objects lookup of %s failed; not resyncing it", key)
                    continue
                if obj is None:
                    logger.info("key %s vanished from known objects; not resyncing it", key)
                    continue
                obj_key = self.key_of(obj)
                if self._items.get(obj_key):
                    continue
                self._queue_action_locked(DeltaType.SYNC, obj, key=obj_key, transform=False)
            drained = self._drain_locked()
        if drained:
            _yield_interpreter()

    # -------------------------------------------------------------- consumer

    def pop(self, process: PopProcessFunc, timeout: float | None = None) -> Deltas:
        """Block until an item is queued, remove it, run ``process`` on it, return it.

        ``process(deltas, is_in_initial_list)`` runs while the queue's lock is
        held; ``is_in_initial_list`` is true while the first relist's items are
        being drained. If ``process`` raises, the item is *not* re-queued and
        the exception propagates, except :class:`RequeueError`, which puts the
        deltas back (see there).

        Raises :class:`ClosedError` if the queue is (or becomes) closed while
        empty; a closed queue still drains its items. Raises ``TimeoutError``
        if ``timeout`` seconds pass with nothing to pop.
        """
        with self._cond:
            self._wait_for_items_locked(timeout)
            is_in_initial_list = not self._has_synced_locked()
            key = self._queue.popleft()
            if self._initial_population_count > 0:
                self._initial_population_count -= 1
            deltas = self._items.pop(key)
            try:
                process(deltas, is_in_initial_list)
            except RequeueError as requeue:
                self._add_if_not_present_locked(key, deltas)
                if requeue.err is not None:
                    raise requeue.err from requeue
            return deltas

    def pop_batch(
        self, process: PopBatchProcessFunc, max_items: int = 1024, timeout: float | None = None
    ) -> int:
        """Like :meth:`pop`, for up to ``max_items`` keys in one lock acquisition.

        Blocks until something is queued, removes up to ``max_items`` keys
        from the head, and calls ``process(batch)`` once, under the queue's
        lock, with ``(key, deltas, is_in_initial_list)`` triples in queue
        order (each ``is_in_initial_list`` exactly as :meth:`pop` would have
        passed it; ``key`` is the queue's key of every delta's object, computed
        before any ``transformer`` ran). Returns the number of keys popped.

        The batch is removed before ``process`` runs: ``process`` must deal
        with a failing key itself (an exception propagates and drops the rest
        of the batch) and cannot requeue (use :meth:`pop` for
        :class:`RequeueError`). ``ClosedError`` and ``TimeoutError`` as in :meth:`pop`.
        """
        if max_items < 1:
            raise ValueError("max_items must be at least 1")
        with self._cond:
            self._wait_for_items_locked(timeout)
            n = self._pop_batch_locked(process, max_items)
            return n

    # ----------------------------------------------------------- inspection

    def list_keys(self) -> builtins.list[str]:
        """Keys in queue order."""
        with self._lock:
            return list(self._queue)

    def list(self) -> builtins.list[Any]:
        """The newest object of every queued key, in queue order."""
        with self._lock:
            return [self._items[k][-1].object for k in self._queue]

    def get(self, obj: Any) -> Deltas | None:
        """A copy of the deltas queued for ``obj``'s key, or ``None``."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> Deltas | None:
        """A copy of the deltas queued for ``key``, or ``None``.

        The list is a copy; the objects in it are shared (do not mutate them).
        """
        with self._lock:
            deltas = self._items.get(key)
            return list(deltas) if deltas is not None else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)

    def queued_items(self) -> int:
        """Queued keys, without taking the lock (for metrics scrapes)."""
        return len(self._queue)

    def has_synced(self) -> bool:
        """True once the first ``replace``'s items have all been popped, or once
        anything was added/updated/deleted before any ``replace``."""
        with self._lock:
            return self._has_synced_locked()

    def close(self) -> None:
        """Close the queue and wake every blocked ``pop``.

        Queued items can still be popped; ``pop`` on the empty, closed queue
        raises :class:`ClosedError`. Producers keep working.
        """
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        """Whether :meth:`close` was called."""
        with self._lock:
            return self._closed

    # ------------------------------------------------------------- internals

    def _has_synced_locked(self) -> bool:
        return self._populated and self._initial_population_count == 0

    def _wait_for_items_locked(self, timeout: float | None) -> None:
        """Wait (lock held) until the queue is non-empty; ClosedError / TimeoutError."""
        if self._queue:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._queue:
            if self._closed:
                raise ClosedError()
            if deadline is None:
                remaining = None
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("DeltaFIFO.pop timed out")
            self._waiting += 1
            wakeups = self._wakeups
            try:
                self._cond.wait(remaining)
            finally:
                if self._wakeups == wakeups:  # not woken by _wake_locked: still counted
                    self._waiting -= 1

    def _pop_batch_locked(self, process: PopBatchProcessFunc, max_items: int) -> int:
        """``pop_batch``'s work once something is queued (lock held)."""
        queue = self._queue
        n = min(max_items, len(queue))
        if n == len(queue):
            keys = builtins.list(queue)
            queue.clear()
        else:
            popleft = queue.popleft
            keys = [popleft() for _ in range(n)]
        # is_in_initial_list is "not has_synced()" before each key's decrement
        # of the initial count: true for the first ``initial`` keys only.
        count = self._initial_population_count
        initial = n if not self._populated else min(n, count)
        self._initial_population_count = count - min(n, count)
        # Built with C-level map/zip: no per-key bytecode on this hot path.
        batch = builtins.list(
            zip(
                keys,
                map(self._items.pop, keys),
                chain(repeat(True, initial), repeat(False, n - initial)),
                strict=True,
            )
        )
        process(batch)
        return n

    def _drain_listed_locked(
        self, action: DeltaType, keys: builtins.list[str], objs: builtins.list[Any]
    ) -> None:
        """``replace`` into an empty queue with a drain: each listed object's entry
        goes straight to the drain's ``process``, in batches of ``max_items``
        (the batches ``pop_batch`` would produce once they were queued)."""
        process = self._drain
        assert process is not None
        initial = repeat(not self._populated)  # nothing queued: all or none of it is initial
        chunk = self._drain_batch
        for start in range(0, len(objs), chunk):
            # [(key, [Delta(action, obj)], initial), ...] built with C-level map/zip.
            deltas = map(
                _new_delta, repeat(Delta), zip(repeat(action), objs[start : start + chunk])
            )
            batch = builtins.list(
                zip(
                    keys[start : start + chunk],
                    map(builtins.list, zip(deltas, strict=False)),
                    initial,
                    strict=False,
                )
            )
            _process_in_producer(process, batch)

    def _drain_locked(self) -> bool:
        """The producer's share of the work (see :meth:`set_producer_drain`).

        Returns whether any batch was processed.
        """
        process = self._drain
        drained = False
        while process is not None and len(self._queue) >= self._drain_backlog:
            drained = True
            self._pop_batch_locked(partial(_process_in_producer, process), self._drain_batch)
        return drained

    def _notify_locked(self) -> None:
        """Wake blocked consumers, if any (a consumer only waits on an empty queue)."""
        if self._waiting:
            self._wake_locked()

    def _wake_locked(self) -> None:
        """Wake every blocked consumer (``_waiting`` is non-zero)."""
        self._waiting = 0
        self._wakeups += 1
        self._cond.notify_all()

    def _add_if_not_present_locked(self, key: str, deltas: Deltas) -> None:
        self._populated = True
        if key in self._items:
            return
        self._queue.append(key)
        self._items[key] = deltas
        self._notify_locked()

    def _queue_action_locked(
        self, action: DeltaType, obj: Any, *, key: str | None = None, transform: bool = True
    ) -> None:
        """Append a delta for ``obj``, merging consecutive deletions.

        A new key goes to the end of the queue; a queued key keeps its place.
        """
        if key is None:
            key = self.key_of(obj)
        if (
            transform
            and self._transformer is not None
            and not isinstance(obj, DeletedFinalStateUnknown)
        ):
            obj = self._transformer(obj)
        delta = _new_delta(Delta, (action, obj))
        deltas = self._items.get(key)
        if deltas is None:
            self._items[key] = [delta]
            self._queue.append(key)
        else:
            deltas.append(delta)
            if action is _DELETED:  # only two Deleted deltas ever merge
                _dedup_deltas(deltas)
        if self._waiting:
            self._wake_locked()
