"""A rate-limiting work queue that hands out the highest priority first.

controller-runtime's ``pkg/controller/priorityqueue``, with the guarantees of
``Queue`` (one worker per item at a time, an item added while processing is
queued again exactly once at ``done``, duplicates collapse) and the methods of
``RateLimitingQueue``, plus ``add_with_opts(item, after=, rate_limited=,
priority=)``. Informer handlers add initial-list and resync events at
``LOW_PRIORITY``, so that a real change is reconciled before the backlog of a
restart.

Each item that needs processing has one entry, whatever the number of adds:

- a duplicate add keeps the highest priority and the shortest delay: an entry
  that is already ready stays ready whatever delay a later add asks for, a
  waiting entry moves to the earlier ready time, and an add without delay
  makes it ready at once (unlike ``DelayingQueue``, where a waiting item that
  is also added directly is processed twice);
- ready entries are handed out by priority, highest first, and in the order
  they became ready within a priority (an entry whose priority is raised goes
  behind the entries already queued at its new priority, as controller-runtime
  does since its fix 31d30b66);
- an entry that becomes ready while its item is being processed is *parked*:
  it is queued, behind the entries that became ready meanwhile, when ``done``
  is called;
- once shut down it hands out nothing, not even the ready entries:
  ``get`` returns ``(None, True)`` at once (controller-runtime's priority
  queue; client-go's queues hand out what was queued before ``shut_down``).
  So an item that ``get`` returned was handed out before ``shut_down``, and a
  consumer that stops by shutting the queue down needs no check of its own
  between ``get`` and processing (see ``hands_out_after_shut_down``).

State, all guarded by ``_lock`` (shared by ``_cond``, where getters and
drainers wait, and ``_timer_cond``, where the timer thread waits). An entry is
spread over dicts keyed by item rather than held in an object per item: ints
in dicts cost the garbage collector nothing, objects per queued item made it
the largest cost of ``add`` with a large backlog.

- ``_priority``: item -> priority, for every entry (the item is *dirty*);
- ``_waiting_until``: item -> ready time, for the entries still waiting;
- ``_order``: item -> its place in ``_ready``, for the queued entries (a
  ready entry of an item being processed is parked: in neither);
- ``_ready``: a heap of ``(-priority, order, item)`` for queued entries;
- ``_waiting``: a heap of ``(ready_at, seq, item)`` for waiting entries;
- ``_processing``: items handed out and not yet ``done``, with the priority
  they were handed out at.

Heaps are never searched: a change pushes a new tuple and leaves the old one
behind, and a popped tuple that no longer matches the dicts is stale and
skipped. So ``add`` and ``get`` are O(log n). Invariants: an item is in
``_order`` iff it has an entry that is not waiting and it is not processing;
then ``_ready`` holds exactly one live tuple for it, matching ``_order`` and
``_priority``. ``len`` is ``len(_order)``.

A daemon thread, started by the first delayed add, moves due entries from
``_waiting`` to ``_ready``; it blocks in ``clock.wait`` until the earliest
ready time and is woken only when an add makes a new earliest one. It holds
only a weak reference to the queue.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
import weakref
from typing import Any, ClassVar, cast

from pycontroller.clock import REAL_CLOCK, Clock
from pycontroller.workqueue.metrics import (
    DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    NOOP_GAUGE,
    CounterMetric,
    DepthMetricWithPriority,
    MetricsProvider,
    QueueMetrics,
    new_priority_depth_metric,
    resolve_provider,
)
from pycontroller.workqueue.queue import Queue, _UnfinishedWorkLoop
from pycontroller.workqueue.rate_limiters import ItemExponentialFailureRateLimiter, RateLimiter

logger = logging.getLogger(__name__)

__all__ = ["LOW_PRIORITY", "PriorityQueue"]

#: The priority of events that are not changes: an informer's initial list and
#: its periodic resyncs (controller-runtime's ``handler.LowPriority``).
LOW_PRIORITY = -100

# Longest single wait of the timer thread (see delaying_queue._MAX_WAIT).
_MAX_WAIT = 86_400.0


class PriorityQueue:
    """A rate-limiting work queue with priorities (controller-runtime's ``PriorityQueue``).

    A drop-in for ``RateLimitingQueue`` (and ``pycontroller.Controller``'s
    queue): ``add`` is ``add_with_opts(item)``, ``add_after`` is
    ``add_with_opts(item, after=delay)``, ``add_rate_limited`` is
    ``add_with_opts(item, rate_limited=True)``, all at priority 0.

    ``rate_limiter`` defaults to controller-runtime's default for this queue,
    a per-item exponential backoff from 5 ms to 1000 s on the queue's clock
    (no overall token bucket: the bucket would hold back the high-priority
    items behind a low-priority backlog). ``name`` labels the metrics (none
    when empty), with ``workqueue_depth`` by priority when the provider
    supports it. ``clock`` times the delays and the metrics.
    ``shut_down`` discards the items still waiting for their delay, and from
    then on ``get`` hands out nothing.
    """

    #: ``get`` returns ``(None, True)`` at once after ``shut_down``, whatever is
    #: still queued (``Queue.hands_out_after_shut_down`` is True). ``Controller``
    #: reads it: from such a queue every key ``get`` returns was handed out
    #: before the shutdown, so it is synced, never released unsynced.
    hands_out_after_shut_down: ClassVar[bool] = False

    def __init__(
        self,
        name: str = "",
        rate_limiter: RateLimiter | None = None,
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        unfinished_work_update_period: float = DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        self.rate_limiter: RateLimiter = (
            rate_limiter
            if rate_limiter is not None
            else ItemExponentialFailureRateLimiter(0.005, 1000.0, clock=self._clock)
        )
        # Reentrant: the weakref finalizer that stops the timer thread takes it,
        # and may run in the timer thread itself while it holds the lock.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._timer_cond = threading.Condition(self._lock)
        self._priority: dict[Any, int] = {}
        self._waiting_until: dict[Any, float] = {}
        self._order: dict[Any, int] = {}
        self._ready: list[tuple[int, int, Any]] = []
        self._waiting: list[tuple[float, int, Any]] = []
        self._processing: dict[Any, int] = {}
        self._next_order = itertools.count()
        self._seq = itertools.count()
        # Threads blocked on _cond (getters and drainers): notify only if any.
        self._getters = 0
        self._shutting_down = False
        self._drain = False
        self._timer: threading.Thread | None = None

        self._metrics: QueueMetrics | None = None
        self._depth: DepthMetricWithPriority | None = None
        self._retries: CounterMetric | None = None
        self._metrics_loop: _UnfinishedWorkLoop | None = None
        provider = resolve_provider(name, metrics_provider)
        if provider is not None:
            self._metrics = QueueMetrics(name, provider, self._clock, depth=NOOP_GAUGE)
            self._depth = new_priority_depth_metric(provider, name)
            self._retries = provider.new_retries_metric(name)
            # The loop only reads .name and calls _update_unfinished_work().
            self._metrics_loop = _UnfinishedWorkLoop(
                cast(Queue, self), self._clock, unfinished_work_update_period
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} len={len(self._order)}>"

    # -- adding --------------------------------------------------------------

    def add_with_opts(
        self,
        item: Any,
        *,
        after: float = 0.0,
        rate_limited: bool = False,
        priority: int = 0,
    ) -> None:
        """Mark ``item`` as needing processing, at ``priority``, after a delay.

        The delay is ``after`` clock seconds, or with ``rate_limited`` the
        rate limiter's delay for the item (one more attempt), or the shorter of
        the two when both are given; no delay (``<= 0``) means at once. A
        duplicate of an item that is waiting or queued keeps the highest
        priority and the shortest delay. Ignored after shutdown. Raises
        ``ValueError`` for a NaN ``after``. A delayed or rate-limited add counts
        one ``workqueue_retries_total``.
        """
        if after != after:
            raise ValueError("add_with_opts: after is NaN")
        if self._shutting_down:
            return
        if rate_limited:
            limited = self.rate_limiter.when(item)
            if after <= 0 or limited < after:
                after = limited
        self._add(item, after, priority, retry=after > 0 or rate_limited)

    def add(self, item: Any) -> None:
        """``add_with_opts(item)``: ready at once, at priority 0."""
        self._add(item, 0.0, 0, retry=False)

    def add_after(self, item: Any, delay: float) -> None:
        """``add_with_opts(item, after=delay)``.

        Counts a retry even for ``delay <= 0``, like client-go's ``AddAfter``.
        """
        if delay != delay:
            raise ValueError("add_after: delay is NaN")
        self._add(item, delay, 0, retry=True)

    def add_rate_limited(self, item: Any) -> None:
        """``add_with_opts(item, rate_limited=True)``."""
        self.add_with_opts(item, rate_limited=True)

    def forget(self, item: Any) -> None:
        """Reset ``item``'s backoff; call it when the item was processed successfully."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Any) -> int:
        """Attempts recorded for ``item`` since its last ``forget``."""
        return self.rate_limiter.num_requeues(item)

    def _add(self, item: Any, after: float, priority: int, *, retry: bool) -> None:
        with self._lock:
            if self._shutting_down:
                return
            if retry and self._retries is not None:
                self._retries.inc()
            ready_at = self._clock.now() + after if after > 0 else None
            current = self._priority.get(item)
            if current is None:
                self._priority[item] = priority
                if ready_at is not None:
                    self._schedule_locked(item, ready_at)
                else:
                    self._became_ready_locked(item, priority)
                return
            waiting_until = self._waiting_until.get(item)
            if priority > current:
                self._priority[item] = priority
                if waiting_until is None:
                    if self._depth is not None:
                        self._depth.dec(current)
                        self._depth.inc(priority)
                    if item in self._order:
                        # Queued: controller-runtime gives a raised entry a new
                        # added-counter, so it goes behind the entries already
                        # queued at its new priority.
                        self._order[item] = order = next(self._next_order)
                        heapq.heappush(self._ready, (-priority, order, item))
            if waiting_until is not None:
                if ready_at is None:
                    del self._waiting_until[item]
                    self._became_ready_locked(item, max(priority, current))
                elif ready_at < waiting_until:
                    self._schedule_locked(item, ready_at)

    def _became_ready_locked(self, item: Any, priority: int) -> None:
        """Count a new or no longer waiting entry as ready; queue it unless processing."""
        if self._metrics is not None:
            self._metrics.add(item)
        if self._depth is not None:
            self._depth.inc(priority)
        if item not in self._processing:
            self._queue_locked(item, priority)

    def _queue_locked(self, item: Any, priority: int) -> None:
        """Push a ready entry that has no live tuple in ``_ready``."""
        self._order[item] = order = next(self._next_order)
        heapq.heappush(self._ready, (-priority, order, item))
        if self._getters:
            self._cond.notify()

    def _schedule_locked(self, item: Any, ready_at: float) -> None:
        """Make ``item`` wait until ``ready_at``; wake or start the timer thread if earliest."""
        self._waiting_until[item] = ready_at
        waiting = self._waiting
        tup = (ready_at, next(self._seq), item)
        heapq.heappush(waiting, tup)
        if self._timer is None:
            self._timer = threading.Thread(
                target=_run_timer,
                args=(weakref.ref(self), self._timer_cond, self._clock),
                name=f"workqueue-priority-delay-{self.name}",
                daemon=True,
            )
            # Not at exit: daemon threads may be frozen holding the lock then.
            weakref.finalize(self, _wake_timer, self._timer_cond).atexit = False
            self._timer.start()
        elif waiting[0] is tup:
            self._timer_cond.notify()

    def _promote_due_locked(self) -> float | None:
        """Make the due waiting entries ready; seconds until the next one, None if none."""
        waiting = self._waiting
        waiting_until = self._waiting_until
        now = self._clock.now()
        while waiting:
            ready_at = waiting[0][0]
            if ready_at > now:
                return ready_at - now
            _, _, item = heapq.heappop(waiting)
            if waiting_until.get(item) != ready_at:
                continue  # stale: made ready or moved earlier since
            del waiting_until[item]
            self._became_ready_locked(item, self._priority[item])
        return None

    # -- handing out ---------------------------------------------------------

    def __len__(self) -> int:
        """Number of ready items waiting to be handed out (not those delayed or processing).

        Informational: by the time the caller looks, it may have changed. An
        empty queue is falsy: test a missing queue with ``is None``.
        """
        return len(self._order)

    def get(self, timeout: float | None = None) -> tuple[Any, bool]:
        """Take the ready item of highest priority, blocking while there is none.

        ``(item, False)``, then ``done(item)``; ``(None, False)`` when
        ``timeout`` (real seconds) expires. Unlike ``Queue.get``, returns
        ``(None, True)`` as soon as the queue is shut down, even with items
        still ready: nothing is handed out after ``shut_down``.
        """
        item, _, shutdown = self.get_with_priority(timeout)
        return item, shutdown

    def get_with_priority(self, timeout: float | None = None) -> tuple[Any, int, bool]:
        """``get``, also returning the item's priority (0 when nothing is returned)."""
        with self._lock:
            if self._shutting_down:
                return None, 0, True
            order = self._order
            if not order:
                deadline = None if timeout is None else time.monotonic() + timeout
                while not order and not self._shutting_down:
                    if deadline is None:
                        remaining = None
                    else:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return None, 0, False
                    self._getters += 1
                    try:
                        self._cond.wait(remaining)
                    finally:
                        self._getters -= 1
            if self._shutting_down:
                return None, 0, True
            ready = self._ready
            priorities = self._priority
            while True:
                neg_priority, position, item = heapq.heappop(ready)
                if order.get(item) == position and priorities[item] == -neg_priority:
                    break  # live (a stale tuple has an old position or priority)
            del order[item]
            priority = priorities.pop(item)
            self._processing[item] = priority
            if self._metrics is not None:
                self._metrics.get(item)
            if self._depth is not None:
                self._depth.dec(priority)
            return item, priority, False

    def handed_out_priority(self, item: Any) -> int | None:
        """The priority ``item`` was handed out at, while it is being processed
        (``None`` otherwise): the Controller requeues a key at it, as
        controller-runtime's ``AddWithOpts(..., Priority: priority)``."""
        with self._lock:
            return self._processing.get(item)

    def done(self, item: Any) -> None:
        """Mark ``item`` as processed; queue it if it became ready meanwhile.

        Ignored for an item that is not being processed. After ``shut_down`` a
        parked item is still queued (and counted by ``len``) but never handed
        out.
        """
        with self._lock:
            processing = self._processing
            if item not in processing:
                logger.debug("Queue %r: done(%r) for an item that is not processing", self, item)
                return
            del processing[item]
            if self._metrics is not None:
                self._metrics.done(item)
            priority = self._priority.get(item)
            if priority is not None and item not in self._waiting_until:
                self._queue_locked(item, priority)
            if not processing and self._drain and self._getters:
                # Wakes shut_down_with_drain (after shutdown, only drainers wait on _cond).
                self._cond.notify_all()

    # -- shutdown ------------------------------------------------------------

    def shut_down(self) -> None:
        """Stop accepting and handing out items, wake every blocked ``get``; returns at once.

        Ready items stay queued but are never handed out (``get`` returns
        ``(None, True)``); items waiting for their delay are discarded.
        Releases a pending ``shut_down_with_drain``. Idempotent.
        """
        self._shut_down(drain=False)

    def shut_down_with_drain(self) -> None:
        """Shut down like ``shut_down``, then block until every handed-out item is done.

        Only the items already handed out are waited for: the ready ones are
        not handed out any more. Workers must call ``done`` for theirs, or this
        blocks forever. A concurrent ``shut_down`` releases it early.
        """
        self._shut_down(drain=True)
        with self._lock:
            while self._processing and self._drain:
                self._getters += 1
                try:
                    self._cond.wait()
                finally:
                    self._getters -= 1

    def shutting_down(self) -> bool:
        """Whether ``shut_down`` or ``shut_down_with_drain`` has been called."""
        return self._shutting_down

    def _shut_down(self, *, drain: bool) -> None:
        if self._metrics_loop is not None:
            self._metrics_loop.stop()
        with self._lock:
            self._drain = drain
            self._shutting_down = True
            self._waiting.clear()
            for item in self._waiting_until:
                del self._priority[item]
            self._waiting_until.clear()
            self._cond.notify_all()
            self._timer_cond.notify_all()

    def _update_unfinished_work(self) -> bool:
        """Refresh the unfinished-work gauges; False once shut down."""
        with self._lock:
            if self._shutting_down:
                return False
            if self._metrics is not None:
                self._metrics.update_unfinished_work()
            return True

    def _num_waiting(self) -> int:
        """Items waiting for their ready time (for tests and debugging)."""
        with self._lock:
            return len(self._waiting_until)


def _run_timer(ref: weakref.ref[PriorityQueue], cond: threading.Condition, clock: Clock) -> None:
    """The timer thread: make due entries ready, then wait for the next ready time.

    Exits on shutdown or once the queue is garbage collected (its finalizer
    wakes this thread; the check before each wait covers a finalizer that ran
    here, when this thread dropped the last reference).
    """
    with cond:
        while True:
            queue = ref()
            if queue is None or queue._shutting_down:
                return
            delay = queue._promote_due_locked()
            del queue
            if ref() is None:
                return
            clock.wait(cond, None if delay is None else min(delay, _MAX_WAIT))


def _wake_timer(cond: threading.Condition) -> None:
    with cond:
        cond.notify_all()
