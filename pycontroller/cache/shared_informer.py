"""SharedIndexInformer: one list+watch feeding a cache and any number of handlers.

client-go ``shared_informer.go`` (1.36 semantics: ``InOrderInformers`` and
``AtomicFIFO``). Data flow::

    Reflector --> RealFIFO --pop_batch (under the FIFO lock)--> _handle_batch:
        update the Indexer, then queue the notifications to every listener
    listener (one thread + unbounded buffer per handler) --> handler

The queue is a :class:`RealFIFO` by default: every event reaches the cache
and the handlers in the order the reflector saw it, several per key and
deletions included, and a relist (or a resync) is applied as one atomic batch.
``fifo="delta"`` selects the classic :class:`DeltaFIFO` (per-key accumulation,
client-go before 1.33) instead.

``_handle_batch`` runs on the thread that queued the changes (the reflector's,
or its resync helper's) once ``DRAIN_BACKLOG`` entries are queued
(``set_producer_drain``), and on the informer's own thread for what
is left when the stream pauses; always under the FIFO lock, so batches are
applied and distributed in queue order.

Invariants and consequences:

- The Indexer is updated *before* any handler hears of the change, so a
  handler (or a worker it wakes) reading the cache sees at least that state.
- Delta -> notification: Added/Updated/Replaced/Sync become ``on_update(old,
  new)`` when the key was already cached and ``on_add(obj,
  is_in_initial_list)`` otherwise; Deleted becomes ``on_delete(obj)`` where
  ``obj`` may be a ``DeletedFinalStateUnknown`` (the watch missed the delete
  and a relist found the object gone).
- An update whose resourceVersion did not change (a periodic resync or an
  unchanged object seen again by a relist) only reaches listeners that are
  due for a resync (``_SharedProcessor.should_resync``). An update whose
  ``metadata.uid`` changed (deleted and re-created while the watch was down)
  is never treated as one: it reaches every listener.
- Each handler has its own thread and unbounded FIFO buffer: a slow handler
  delays only itself, never the others or the reflector. Notifications reach
  one handler in order; there is no ordering between handlers.
- A handler's exception is logged and the next notification is delivered.
- A handler added after ``start`` first receives ``on_add(obj, True)`` for
  every object already cached.
- Objects passed to handlers are the cached objects: never mutate them
  (``pycontroller.cache.deep_copy`` gives a private copy).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Literal, Protocol, runtime_checkable

from ..clock import REAL_CLOCK, Clock
from .delta_fifo import ClosedError, DeltaFIFO, Deltas, DeltaType
from .index import Indexer, IndexerBatch, IndexFunc
from .informer_metrics import InformerMetrics
from .listwatch import ListerWatcher
from .real_fifo import RealFIFO
from .reflector import DEFAULT_PAGE_SIZE, Reflector
from .store import (
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
)

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "FilteringResourceEventHandler",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "wait_for_cache_sync",
]

logger = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
# Seconds ``run`` waits, in total, for handler threads to finish when stopping.
LISTENER_STOP_GRACE = 5.0
# WaitForCacheSync's polling interval.
SYNC_POLL_PERIOD = 0.1
# Most keys the informer pops (and applies under the FIFO lock) at once.
POP_BATCH = 512
# Queued keys at which the producer (the reflector) applies them itself.
DRAIN_BACKLOG = 64


FifoKind = Literal["real", "delta"]
"""An informer's queue: ``"real"`` (:class:`RealFIFO`) or ``"delta"`` (:class:`DeltaFIFO`)."""


# --------------------------------------------------------------------------- handlers


@runtime_checkable
class ResourceEventHandler(Protocol):
    """Receives notifications from an informer, on the handler's own thread.

    ``on_add(obj, is_in_initial_list)``: ``is_in_initial_list`` is true for
    objects of the informer's first list (and for the replay a late handler
    gets). ``on_update(old, new)``: ``old is new`` on a periodic resync.
    ``on_delete(obj)``: ``obj`` may be a ``DeletedFinalStateUnknown``.
    """

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


class ResourceEventHandlerFuncs:
    """A handler from optional functions; a missing function ignores that event.

    ``add_func`` is called as ``add_func(obj)`` or, if it accepts two
    positional arguments, ``add_func(obj, is_in_initial_list)``.
    """

    def __init__(
        self,
        add_func: Callable[..., Any] | None = None,
        update_func: Callable[[Any, Any], Any] | None = None,
        delete_func: Callable[[Any], Any] | None = None,
    ) -> None:
        self.add_func = add_func
        self.update_func = update_func
        self.delete_func = delete_func
        self._add_takes_initial = _accepts_two_args(add_func) if add_func else False

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if self.add_func is None:
            return
        if self._add_takes_initial:
            self.add_func(obj, is_in_initial_list)
        else:
            self.add_func(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if self.update_func is not None:
            self.update_func(old, new)

    def on_delete(self, obj: Any) -> None:
        if self.delete_func is not None:
            self.delete_func(obj)


def _accepts_two_args(func: Callable[..., Any]) -> bool:
    import inspect

    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return False
    positional = 0
    for param in sig.parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            return True
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


class FilteringResourceEventHandler:
    """Pass events to ``handler`` only for objects ``filter_func`` accepts.

    Updates follow client-go: both pass -> ``on_update``; only the new one
    passes -> ``on_add(new, False)``; only the old one passes ->
    ``on_delete(old)``; neither -> nothing. A delete of a tombstone is
    filtered on the tombstone itself, so ``filter_func`` should unwrap
    ``DeletedFinalStateUnknown`` if it inspects the object.
    """

    def __init__(self, filter_func: Callable[[Any], bool], handler: ResourceEventHandler) -> None:
        self.filter_func = filter_func
        self.handler = handler

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        new_ok = self.filter_func(new)
        old_ok = self.filter_func(old)
        if new_ok and old_ok:
            self.handler.on_update(old, new)
        elif new_ok:
            self.handler.on_add(new, False)
        elif old_ok:
            self.handler.on_delete(old)

    def on_delete(self, obj: Any) -> None:
        if self.filter_func(obj):
            self.handler.on_delete(obj)


# --------------------------------------------------------------------------- listeners

_ADD = 0
_UPDATE = 1
_DELETE = 2


def _determine_resync_period(desired: float, check: float) -> float:
    if desired == 0:
        return 0.0
    if check == 0:
        logger.warning(
            "a handler asked for resync every %ss but the informer never resyncs", desired
        )
        return 0.0
    return max(desired, check)


Notifications = list[Any]
"""A batch of notifications, *flat*: ``kind, a, b, kind, a, b, ...`` where each
triple is ``_ADD, obj, is_in_initial_list``, ``_UPDATE, old, new`` or
``_DELETE, obj, None``. Flat, because a tuple per notification would be one
more GC-tracked object per event alive until delivery (CPython's collector is
a large share of the per-event cost of a cache)."""


class _ProcessorListener:
    """One handler's unbounded buffer and delivery thread.

    The buffer is a ``deque`` of :data:`Notifications` batches guarded by a
    Condition. ``add_many`` appends a whole batch with one lock round-trip and never blocks
    on the handler, so the informer is never held up by it; the delivery
    thread takes everything buffered at once (swapping in an empty deque) and
    delivers it in order without holding the lock. Initial adds
    (``on_add(..., True)``) are counted when queued (``_initial_queued``, by
    the informer under its ``_block_deltas``) and when delivered
    (``_initial_delivered``, by the delivery thread only), for the
    registration's ``has_synced``. After ``stop`` nothing more is delivered
    (buffered notifications are dropped).
    """

    def __init__(
        self,
        handler: ResourceEventHandler,
        requested_resync: float,
        resync_period: float,
        name: str,
    ) -> None:
        self.handler = handler
        self.requested_resync_period = requested_resync
        self.resync_period = resync_period
        self.next_resync = 0.0
        self.name = name
        self._buffer: deque[Notifications] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._stopped = False
        self._initial_queued = 0
        self._initial_delivered = 0
        self._thread: threading.Thread | None = None

    def add_many(self, notes: Notifications, initial: int) -> None:
        """Buffer ``notes`` (``initial`` of them are initial adds) and wake the thread.

        The list is kept as is (callers hand over a list they no longer touch).
        """
        if self._stopped or not notes:
            return
        if initial:
            self._initial_queued += initial  # before buffering: never looks delivered early
        with self._cond:
            self._buffer.append(notes)
            self._cond.notify()

    def start(self) -> None:
        with self._cond:
            if self._thread is not None or self._stopped:
                return
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop delivering; undelivered notifications are dropped."""
        with self._cond:
            self._stopped = True
            self._buffer.clear()
            self._cond.notify()  # wakes the delivery thread

    def join(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def pending(self) -> int:
        return sum(len(notes) for notes in list(self._buffer)) // 3

    def initial_delivered(self) -> bool:
        # Read the queued count first: the delivered count only grows.
        queued = self._initial_queued
        return self._initial_delivered >= queued

    def should_resync(self, now: float) -> bool:
        return self.resync_period > 0 and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        self.next_resync = now + self.resync_period

    def _run(self) -> None:
        handler = self.handler
        cond = self._cond
        while True:
            with cond:
                while not self._buffer and not self._stopped:
                    cond.wait()
                if self._stopped:
                    return
                batches, self._buffer = self._buffer, deque()
            # Bound once per batch: the per-notification loop is the handler's hot path.
            on_add, on_update, on_delete = handler.on_add, handler.on_update, handler.on_delete
            for notes in batches:
                flat = iter(notes)
                for kind, a, b in zip(flat, flat, flat, strict=True):  # the flat triples
                    if self._stopped:
                        return
                    try:
                        if kind == _UPDATE:
                            on_update(a, b)
                        elif kind == _ADD:
                            on_add(a, b)
                        else:
                            on_delete(a)
                    except Exception:  # a handler bug must not kill delivery to it
                        logger.exception("%s: event handler %r failed", self.name, handler)
                    if kind == _ADD and b:
                        self._initial_delivered += 1


class ResourceEventHandlerRegistration:
    """Returned by ``add_event_handler``; pass it to ``remove_event_handler``.

    ``has_synced()`` is true once the informer has synced *and* this handler
    has been handed every object of the initial list (or of the replay it
    got when added late).
    """

    def __init__(self, informer: SharedIndexInformer, listener: _ProcessorListener) -> None:
        self._informer = informer
        self._listener = listener

    @property
    def handler(self) -> ResourceEventHandler:
        return self._listener.handler

    def has_synced(self) -> bool:
        return self._informer.has_synced() and self._listener.initial_delivered()

    def __repr__(self) -> str:
        return f"ResourceEventHandlerRegistration({self._listener.handler!r})"


class _SharedProcessor:
    """The set of listeners and their "syncing" flags (client-go ``sharedProcessor``)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        # listener -> syncing: may receive resync (unchanged-RV) updates.
        self._listeners: dict[_ProcessorListener, bool] = {}
        self._started = False

    def add_listener(self, listener: _ProcessorListener) -> None:
        with self._lock:
            self._listeners[listener] = True
            if self._started:
                listener.start()

    def remove_listener(self, listener: _ProcessorListener) -> bool:
        with self._lock:
            if self._listeners.pop(listener, None) is None:
                return False
        listener.stop()
        return True

    def listeners(self) -> list[_ProcessorListener]:
        with self._lock:
            return list(self._listeners)

    def start(self) -> None:
        with self._lock:
            self._started = True
            listeners = list(self._listeners)
        for listener in listeners:
            listener.start()

    def stop(self) -> list[_ProcessorListener]:
        with self._lock:
            self._started = False
            listeners = list(self._listeners)
        for listener in listeners:
            listener.stop()
        return listeners

    def distribute_many(self, notes: Notifications, initial: int) -> None:
        """Queue ``notes`` to every listener, in order (listeners share the list).

        An update whose resourceVersion did not change (a resync, or an
        unchanged object seen again by a relist) only goes to listeners
        currently syncing; it is looked for only when some listener is not
        (the flags are read under the same lock ``should_resync`` sets them
        with). ``initial`` notifications are initial adds (never resyncs).
        """
        with self._lock:
            listeners = self._listeners
            if all(listeners.values()):
                for listener in listeners:
                    listener.add_many(notes, initial)
                return
            without_sync = _without_resyncs(notes)
            for listener, syncing in listeners.items():
                listener.add_many(notes if syncing else without_sync, initial)

    def should_resync(self) -> bool:
        """Called when the reflector's resync timer fires: which listeners are due?"""
        now = self._clock.now()
        needed = False
        with self._lock:
            for listener in self._listeners:
                if listener.should_resync(now):
                    needed = True
                    self._listeners[listener] = True
                    listener.determine_next_resync(now)
                else:
                    self._listeners[listener] = False
        return needed

    def resync_check_period_changed(self, check: float) -> None:
        with self._lock:
            for listener in self._listeners:
                listener.resync_period = _determine_resync_period(
                    listener.requested_resync_period, check
                )


def _same_resource_version(old: Any, new: Any) -> bool:
    """client-go's ``isSync``: both have metadata and equal resourceVersions.

    Also requires an equal ``metadata.uid`` (when both have one): an object
    deleted and re-created under the same name is never a resync, whatever a
    (non-etcd) server says its resourceVersion is.
    """
    try:
        old_meta = old["metadata"]
        new_meta = new["metadata"]
        return bool(
            old_meta["resourceVersion"] == new_meta["resourceVersion"]
            and old_meta.get("uid") == new_meta.get("uid")
        )
    except (KeyError, TypeError, AttributeError):
        old_meta = old.get("metadata") if isinstance(old, dict) else None
        new_meta = new.get("metadata") if isinstance(new, dict) else None
        if not isinstance(old_meta, dict) or not isinstance(new_meta, dict):
            return False
        return bool(
            old_meta.get("resourceVersion") == new_meta.get("resourceVersion")
            and old_meta.get("uid") == new_meta.get("uid")
        )


def _without_resyncs(notes: Notifications) -> Notifications:
    """``notes`` minus the updates whose resourceVersion did not change."""
    kept: Notifications = []
    flat = iter(notes)
    for kind, a, b in zip(flat, flat, flat, strict=True):
        if kind != _UPDATE or not _same_resource_version(a, b):
            kept += (kind, a, b)
    return kept


def _upsert_batch(
    txn: IndexerBatch, batch: Sequence[tuple[str | None, Deltas, bool]], name: str = "informer"
) -> tuple[Notifications, int] | None:
    """``SharedIndexInformer._apply_locked`` for the common batch, with C-level map/zip.

    Applies to a batch where every entry has exactly one delta and none is a
    deletion (the first list; a stream of watch events), whose keys are the
    indexer's: stores every object with ``txn.upsert_many`` (one key may
    repeat: each entry then sees the previous one as its old object) and
    returns the notifications and the count of initial adds, exactly as the
    loop would. An entry whose index function fails is logged (``name``: the
    informer's) and dropped, as the loop drops it: not stored, not notified;
    every other entry is. Returns ``None`` (nothing changed) otherwise.
    """
    if not batch:
        return None
    keys, deltas_lists, flags = zip(*batch, strict=True)
    if any(map((1).__ne__, map(len, deltas_lists))):
        return None
    deltas = list(map(itemgetter(0), deltas_lists))
    if DeltaType.DELETED in map(itemgetter(0), deltas):
        return None
    objs = list(map(itemgetter(1), deltas))
    failures: list[tuple[int, Exception]] = []
    olds = txn.upsert_many(keys, objs, failures)
    if failures:  # rare: log and leave out the entries that were not stored
        for i, err in failures:
            logger.error("%s: processing deltas of %s failed; dropped", name, keys[i], exc_info=err)
        failed = {i for i, _ in failures}
        kept = [i for i in range(len(objs)) if i not in failed]
        objs = [objs[i] for i in kept]
        olds = [olds[i] for i in kept]
        flags = tuple(flags[i] for i in kept)
        if not objs:
            return [], 0
    n = len(objs)
    adds = olds.count(None)
    notes: Notifications
    if adds == n:
        notes = [_ADD, None, None] * n
        notes[1::3] = objs
        notes[2::3] = flags
        return notes, flags.count(True)
    notes = [_UPDATE, None, None] * n
    notes[1::3] = olds
    notes[2::3] = objs
    if adds == 0:
        return notes, 0
    initial = 0
    for i, old in enumerate(olds):  # a mix of adds and updates
        if old is None:
            j = 3 * i
            notes[j : j + 3] = (_ADD, objs[i], flags[i])
            initial += flags[i]
    return notes, initial


# --------------------------------------------------------------------------- informer


class SharedIndexInformer:
    """A shared cache of one resource plus event fan-out (see the module docstring).

    ``indexers`` are added to the cache's Indexer; ``transform`` (e.g. drop
    ``managedFields``) is applied to every object before it is cached.
    ``resync_period`` is the default per-handler resync period (0: never).
    Keyword-only: ``clock``, ``page_size`` and ``use_watch_list`` (for the
    reflector: None streams the initial list when the server supports it),
    and ``fifo``: ``"real"`` (default; a :class:`RealFIFO`, every event in
    order, relists atomic) or ``"delta"`` (a :class:`DeltaFIFO`, events of a
    key still queued are delivered together, consecutive deletions merged).
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        resync_period: float = 0,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Callable[[Any], Any] | None = None,
        name: str = "",
        *,
        clock: Clock = REAL_CLOCK,
        page_size: int = DEFAULT_PAGE_SIZE,
        use_watch_list: bool | None = None,
        fifo: FifoKind = "real",
    ) -> None:
        if fifo not in ("real", "delta"):
            raise ValueError(f"fifo must be 'real' or 'delta', not {fifo!r}")
        self.name = name or getattr(lister_watcher, "name", "") or "informer"
        self._use_watch_list = use_watch_list
        self._lister_watcher = lister_watcher
        self._clock = clock
        self._page_size = page_size
        self._default_resync = float(resync_period)
        self._resync_check_period = float(resync_period)
        self._indexer = Indexer(deletion_handling_meta_namespace_key_func, dict(indexers or {}))
        self._transform = transform
        fifo_class = RealFIFO if fifo == "real" else DeltaFIFO
        self._fifo: RealFIFO | DeltaFIFO = fifo_class(
            meta_namespace_key_func,
            known_objects=self._indexer,
            emit_delta_type_replaced=True,
            transformer=transform,
        )
        # Watch events reach the cache in batches of DRAIN_BACKLOG on the
        # reflector's thread; this informer's thread takes the rest.
        self._fifo.set_producer_drain(self._handle_batch, DRAIN_BACKLOG, POP_BATCH)
        self._processor = _SharedProcessor(clock)
        # Held while deltas are applied and distributed, and while a handler
        # is added after start, so a late handler's replay and the live
        # stream neither overlap nor leave a gap.
        self._block_deltas = threading.RLock()
        self._state_lock = threading.Lock()
        # client-go's SharedInformer.SetWatchErrorHandler (None: the reflector's default).
        self._watch_error_handler: Callable[[Reflector, BaseException], None] | None = None
        self._started = False
        self._stopped = False
        self._reflector: Reflector | None = None
        self._listener_seq = 0
        gvr = InformerMetrics.gvr_of(lister_watcher)
        self._metrics = (
            InformerMetrics(
                self,
                self.name,
                gvr,
                # Lock-free (a deque's len): a scrape never waits for a batch
                # being processed under the FIFO's lock.
                lambda inf: inf._fifo.queued_items(),
                lambda inf: inf.last_sync_resource_version(),
            )
            if gvr is not None
            else None
        )

    # ------------------------------------------------------------ handlers

    def add_event_handler(
        self, handler: ResourceEventHandler, resync_period: float | None = None
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``; returns its registration.

        ``resync_period`` defaults to the informer's; values under 1 s become
        1 s; a value under the informer's resync check period lowers that
        period before start and is raised to it after start. Raises
        ``RuntimeError`` once the informer has stopped, and ``TypeError`` if
        ``handler`` lacks a callable ``on_add``, ``on_update`` or ``on_delete``
        (wrap partial handlers in ``ResourceEventHandlerFuncs``).
        """
        missing = [
            m
            for m in ("on_add", "on_update", "on_delete")
            if not callable(getattr(handler, m, None))
        ]
        if missing:
            raise TypeError(
                f"handler {handler!r} for informer {self.name} has no {', '.join(missing)}:"
                " an event handler needs on_add, on_update and on_delete"
                " (ResourceEventHandlerFuncs fills in the ones you do not need)"
            )
        period = self._default_resync if resync_period is None else float(resync_period)
        with self._block_deltas:
            if self._stopped:
                raise RuntimeError(
                    f"handler {handler!r} was not added to informer {self.name}: it has stopped"
                )
            if period > 0:
                if period < MINIMUM_RESYNC_PERIOD:
                    logger.warning(
                        "%s: resync period %ss is too small, using %ss",
                        self.name,
                        period,
                        MINIMUM_RESYNC_PERIOD,
                    )
                    period = MINIMUM_RESYNC_PERIOD
                if period < self._resync_check_period:
                    if self._started:
                        logger.warning(
                            "%s: resync period %ss is smaller than the informer's check period "
                            "%ss and the informer has started; using %ss",
                            self.name,
                            period,
                            self._resync_check_period,
                            self._resync_check_period,
                        )
                        period = self._resync_check_period
                    else:
                        self._resync_check_period = period
                        self._processor.resync_check_period_changed(period)
            self._listener_seq += 1
            listener = _ProcessorListener(
                handler,
                period,
                _determine_resync_period(period, self._resync_check_period),
                f"{self.name}-handler-{self._listener_seq}",
            )
            listener.determine_next_resync(self._clock.now())
            self._processor.add_listener(listener)
            if self._started:
                objs = self._indexer.list()
                replay: Notifications = [_ADD, None, True] * len(objs)
                replay[1::3] = objs
                listener.add_many(replay, len(objs))
        return ResourceEventHandlerRegistration(self, listener)

    def remove_event_handler(self, registration: ResourceEventHandlerRegistration) -> None:
        """Stop notifying that handler (idempotent). Buffered notifications are dropped."""
        listener = getattr(registration, "_listener", None)
        if listener is None:
            return
        with self._block_deltas:
            self._processor.remove_listener(listener)

    def set_transform(self, transform: Callable[[Any], Any] | None) -> None:
        """Replace the transform given to the constructor; only before ``run``.

        client-go ``SharedInformer.SetTransform``: raises ``RuntimeError``
        ("informer has already started") once the informer has started.
        """
        with self._state_lock:
            if self._started:
                raise RuntimeError(f"informer {self.name} has already started")
            self._transform = transform
            self._fifo._transformer = transform

    def set_watch_error_handler(
        self, handler: Callable[[Reflector, BaseException], None] | None
    ) -> None:
        """Call ``handler(reflector, err)`` whenever a list or watch fails; only before ``run``.

        client-go ``SharedInformer.SetWatchErrorHandler``: the handler runs
        before the reflector backs off and retries (it cannot stop the retry);
        ``None`` restores the default (logging). Raises ``RuntimeError``
        ("informer has already started") once the informer has started.
        """
        with self._state_lock:
            if self._started:
                raise RuntimeError(f"informer {self.name} has already started")
            self._watch_error_handler = handler

    # ------------------------------------------------------------ cache

    def get_store(self) -> Indexer:
        """The cache (an Indexer). Its objects are shared: never mutate them."""
        return self._indexer

    def get_indexer(self) -> Indexer:
        return self._indexer

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes (existing objects are indexed at once). ``ValueError`` on a name clash."""
        with self._block_deltas:
            if self._stopped:
                raise RuntimeError(f"indexers not added to informer {self.name}: it has stopped")
            self._indexer.add_indexers(indexers)

    def has_synced(self) -> bool:
        """True once every object of the first list has been applied to the cache."""
        return self._started and self._fifo.has_synced()

    def last_sync_resource_version(self) -> str:
        reflector = self._reflector
        return reflector.last_sync_resource_version() if reflector is not None else ""

    def is_stopped(self) -> bool:
        return self._stopped

    def has_started(self) -> bool:
        return self._started

    # ------------------------------------------------------------ running

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run the informer in a daemon thread; returns the thread."""
        thread = threading.Thread(
            target=self.run, args=(stop,), name=f"informer-{self.name}", daemon=True
        )
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """List, watch and dispatch until ``stop`` is set (blocks). A second call returns."""
        with self._state_lock:
            if self._started or self._stopped:
                logger.warning("%s: informer already started; run() ignored", self.name)
                return
            with self._block_deltas:
                self._reflector = Reflector(
                    self._lister_watcher,
                    self._fifo,
                    self.name,
                    self._resync_check_period,
                    self._page_size,
                    clock=self._clock,
                    should_resync=self._processor.should_resync,
                    watch_error_handler=self._watch_error_handler,
                    use_watch_list=self._use_watch_list,
                )
                self._started = True
                self._processor.start()
        reflector = self._reflector
        reflector_thread = threading.Thread(
            target=self._run_reflector,
            args=(reflector, stop),
            name=f"reflector-{self.name}",
            daemon=True,
        )
        reflector_thread.start()
        try:
            while not stop.is_set():
                try:
                    self._fifo.pop_batch(self._handle_batch, POP_BATCH)
                except ClosedError:
                    break
                except Exception:  # keep the cache loop alive; the batch is dropped
                    logger.exception("%s: processing deltas failed", self.name)
        finally:
            self._fifo.close()
            reflector_thread.join()
            with self._block_deltas:
                self._stopped = True
                listeners = self._processor.stop()
            if self._metrics is not None:
                self._metrics.release()
            # Handlers finish the notification they are in; a stuck handler is
            # abandoned (its thread is a daemon) after a shared grace period.
            deadline = time.monotonic() + LISTENER_STOP_GRACE
            for listener in listeners:
                listener.join(timeout=max(0.0, deadline - time.monotonic()))
            logger.debug("%s: informer stopped", self.name)

    def _run_reflector(self, reflector: Reflector, stop: threading.Event) -> None:
        try:
            reflector.run(stop)
        finally:
            self._fifo.close()  # wakes the pop loop

    def _handle_batch(self, batch: Sequence[tuple[str | None, Deltas, bool]]) -> None:
        """Apply each key's deltas, oldest first, to the indexer; then notify.

        Runs under the FIFO lock (``pop_batch``) and ``_block_deltas``. Every
        delta updates the indexer before any handler hears of it; the batch's
        notifications are then queued to each listener at once, in order
        (handlers run on their own threads, so they see the same sequence as
        with per-delta queueing). A key whose processing fails is logged and
        its remaining deltas are dropped; the other keys are processed.

        The FIFO's key of an object is the indexer's key too (same key
        function, tombstones aside), so it is reused unless a transform ran
        after the FIFO computed it.
        """
        start = time.perf_counter()
        trust_keys = self._transform is None
        # One indexer lock acquisition for the whole batch (not one per delta);
        # handlers hear of the batch only after the indexer holds all of it.
        with self._block_deltas:
            with self._indexer.batch() as txn:
                result = None
                if trust_keys:
                    result = _upsert_batch(txn, batch, self.name)
                if result is None:
                    result = self._apply_locked(txn, batch, trust_keys)
            notes, initial = result
            if notes:
                self._processor.distribute_many(notes, initial)
        if self._metrics is not None:
            self._metrics.observe_processing(time.perf_counter() - start)

    def _apply_locked(
        self,
        txn: IndexerBatch,
        batch: Sequence[tuple[str | None, Deltas, bool]],
        trust_keys: bool,
    ) -> tuple[Notifications, int]:
        """``_handle_batch``'s general loop (inside ``txn``): every delta in
        turn; returns the notifications and the count of initial adds."""
        upsert = txn.upsert
        delete = txn.delete
        deleted = DeltaType.DELETED
        notes: Notifications = []  # flat triples, see Notifications
        note = notes.extend  # each call's 3-tuple is freed at once
        initial = 0
        for key, deltas, is_in_initial_list in batch:
            if not trust_keys:
                key = None
            try:
                for dtype, obj in deltas:
                    if dtype is deleted:
                        delete(obj)
                        note((_DELETE, obj, None))
                        continue
                    old = upsert(obj, key)
                    if old is None:
                        note((_ADD, obj, is_in_initial_list))
                        if is_in_initial_list:
                            initial += 1
                    else:
                        note((_UPDATE, old, obj))
            except Exception:  # keep the cache loop alive; this key's rest is dropped
                logger.exception("%s: processing deltas failed", self.name)
        return notes, initial

    def __repr__(self) -> str:
        return f"SharedIndexInformer({self.name!r})"


# --------------------------------------------------------------------------- sync waiting


def wait_for_cache_sync(
    stop: threading.Event, *has_synced: Callable[[], bool], timeout: float | None = None
) -> bool:
    """Poll (every 100 ms, first at once) until every ``has_synced()`` is true.

    Returns True when they all are; False if ``stop`` is set or ``timeout``
    seconds pass first.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if all(fn() for fn in has_synced):
            return True
        if stop.is_set():
            return False
        wait = SYNC_POLL_PERIOD
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            wait = min(wait, remaining)
        if stop.wait(wait):
            return all(fn() for fn in has_synced)
