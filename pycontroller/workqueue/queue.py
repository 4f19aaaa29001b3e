"""The basic work queue (client-go ``workqueue.Type``).

Guarantees, for items compared by ``hash``/``==`` (so items must be hashable,
and should be immutable: usually ``"ns/name"`` keys):

- an item is never handed to two workers at once: once ``get`` returns it, it
  is not handed out again until ``done(item)``;
- an item added while it is being processed is remembered (it is *dirty*) and
  queued again exactly once when ``done`` is called;
- adding an item that is already waiting is a no-op (duplicates collapse);
- otherwise items are handed out in the order they were added (FIFO).

State, all guarded by one lock (``_lock``, shared by ``_cond``):

- ``_queue``: items waiting to be handed out, in order;
- ``_dirty``: items that need processing;
- ``_processing``: items handed out and not yet ``done``.

Invariant: an item is in ``_queue`` iff it is in ``_dirty`` and not in
``_processing``; it appears in ``_queue`` at most once.

Misuse: every item returned by ``get`` must be passed to ``done`` exactly once,
or it is never handed out again and ``shut_down_with_drain`` blocks forever.
``done`` for an item that is not being processed is ignored.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from collections import deque
from typing import Any, ClassVar

from pycontroller.clock import REAL_CLOCK, Clock
from pycontroller.workqueue.metrics import (
    DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    MetricsProvider,
    QueueMetrics,
    resolve_provider,
)

logger = logging.getLogger(__name__)

__all__ = ["Queue"]


class Queue:
    """A FIFO work queue with per-item exclusion and de-duplication.

    ``name`` labels the queue's metrics; an empty name records none.
    ``metrics_provider`` defaults to the global provider (see
    ``set_global_metrics_provider``) at construction time. ``clock`` times the
    metrics (and the delay of subclasses). When metrics are recorded, a daemon
    thread refreshes the unfinished-work gauges every
    ``unfinished_work_update_period`` clock seconds until ``shut_down``.
    """

    #: ``get`` keeps handing out the items queued before ``shut_down`` (client-go).
    #: ``PriorityQueue`` sets it False: it hands out nothing after ``shut_down``.
    hands_out_after_shut_down: ClassVar[bool] = True

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        unfinished_work_update_period: float = DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        self.name = name
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Any] = deque()
        self._dirty: set[Any] = set()
        self._processing: set[Any] = set()
        # Threads blocked on _cond (getters and drainers): notify only if any.
        self._waiting = 0
        self._shutting_down = False
        self._drain = False
        # The provider this queue records with, None when it records nothing;
        # subclasses create their own metrics from it.
        self._metrics_provider = resolve_provider(name, metrics_provider)
        self._metrics: QueueMetrics | None = None
        self._metrics_loop: _UnfinishedWorkLoop | None = None
        if self._metrics_provider is not None:
            self._metrics = QueueMetrics(name, self._metrics_provider, self._clock)
            self._metrics_loop = _UnfinishedWorkLoop(
                self, self._clock, unfinished_work_update_period
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} len={len(self._queue)}>"

    def add(self, item: Any) -> None:
        """Mark ``item`` as needing processing.

        Ignored after shutdown. An item already waiting is not queued twice. An
        item being processed is queued again when its ``done`` is called.
        """
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self._dirty.add(item)
            if self._metrics is not None:
                self._metrics.add(item)
            if item in self._processing:
                return
            self._queue.append(item)
            if self._waiting:
                self._cond.notify()

    def __len__(self) -> int:
        """Number of items waiting to be handed out (not those being processed).

        Informational: by the time the caller looks, it may have changed. Like
        any container, an empty queue is falsy: test a missing queue with
        ``is None``, not ``queue or default``.
        """
        return len(self._queue)

    def get(self, timeout: float | None = None) -> tuple[Any, bool]:
        """Take the next item, blocking while the queue is empty.

        Returns ``(item, False)``; the caller must call ``done(item)`` when it has
        finished with it. Returns ``(None, True)`` once the queue is shut down
        and empty: items queued before ``shut_down`` are still handed out.
        ``timeout`` bounds the wait in real seconds (not the queue's clock, so a
        test with a fake clock cannot hang on it); when it expires with nothing
        to hand out, returns ``(None, False)``. Don't add ``None`` as an item if
        you use a timeout: it would be indistinguishable from one.
        """
        with self._lock:
            queue = self._queue
            if not queue and not self._shutting_down:
                deadline = None if timeout is None else time.monotonic() + timeout
                while not queue and not self._shutting_down:
                    if deadline is None:
                        remaining = None
                    else:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return None, False
                    self._waiting += 1
                    try:
                        self._cond.wait(remaining)
                    finally:
                        self._waiting -= 1
                if not queue:
                    return None, True
            elif not queue:
                return None, True
            item = queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if self._metrics is not None:
                self._metrics.get(item)
            return item, False

    def done(self, item: Any) -> None:
        """Mark ``item`` as processed; queue it again if it was added meanwhile.

        A re-queued item is handed out even after ``shut_down`` (it was added
        before). Ignored for an item that is not being processed.
        """
        with self._lock:
            processing = self._processing
            if item not in processing:
                logger.debug("Queue %r: done(%r) for an item that is not processing", self, item)
                return
            processing.remove(item)
            if self._metrics is not None:
                self._metrics.done(item)
            if item in self._dirty:
                self._queue.append(item)
                if self._waiting:
                    self._cond.notify()
            elif not processing and self._drain and self._waiting:
                # Wakes shut_down_with_drain.
                self._cond.notify_all()

    def shut_down(self) -> None:
        """Stop accepting items and wake every blocked ``get``; returns at once.

        Items already queued are still handed out. Releases a pending
        ``shut_down_with_drain``. Idempotent.
        """
        self._stop_background()
        with self._lock:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()

    def shut_down_with_drain(self) -> None:
        """Shut down like ``shut_down``, then block until every handed-out item is done.

        Workers must keep calling ``done`` (and may keep calling ``get`` to
        finish the queued items), or this blocks forever. A concurrent
        ``shut_down`` releases it early.
        """
        self._stop_background()
        with self._lock:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            while self._processing and self._drain:
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1

    def shutting_down(self) -> bool:
        """Whether ``shut_down`` or ``shut_down_with_drain`` has been called."""
        return self._shutting_down

    def _stop_background(self) -> None:
        """Stop the helper threads of this queue. Must not hold ``_lock``."""
        if self._metrics_loop is not None:
            self._metrics_loop.stop()

    def _update_unfinished_work(self) -> bool:
        """Refresh the unfinished-work gauges; False once shut down."""
        with self._lock:
            if self._shutting_down:
                return False
            if self._metrics is not None:
                self._metrics.update_unfinished_work()
            return True


class _UnfinishedWorkLoop:
    """Calls ``queue._update_unfinished_work()`` every ``period`` clock seconds.

    Runs in a daemon thread that holds only a weak reference to the queue, so a
    queue that is dropped without ``shut_down`` does not keep a thread alive for
    long: the thread exits at its next tick, or at once when the queue is
    garbage collected (a finalizer stops it). Ticks missed while the clock jumps
    are skipped, like a Go ticker.
    """

    def __init__(self, queue: Queue, clock: Clock, period: float) -> None:
        if not period > 0:
            raise ValueError(f"unfinished_work_update_period must be > 0, got {period!r}")
        self._clock = clock
        self._period = period
        self._cond = threading.Condition()
        self._stopped = False
        ref = weakref.ref(queue)
        weakref.finalize(queue, self.stop)
        self._thread = threading.Thread(
            target=self._run,
            args=(ref,),
            name=f"workqueue-metrics-{queue.name}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _run(self, ref: weakref.ref[Queue]) -> None:
        clock = self._clock
        period = self._period
        next_tick = clock.now() + period
        while True:
            with self._cond:
                while not self._stopped:
                    now = clock.now()
                    if now >= next_tick:
                        break
                    clock.wait(self._cond, next_tick - now)
                if self._stopped:
                    return
            queue = ref()
            if queue is None or not queue._update_unfinished_work():
                return
            del queue
            now = clock.now()
            # Next multiple of the period after now (skips missed ticks).
            next_tick += period * (math.floor((now - next_tick) / period) + 1)
