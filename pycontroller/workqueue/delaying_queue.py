"""A work queue that can add items after a delay (client-go ``delaying_queue.go``).

``add_after(item, delay)`` keeps the item *waiting* until ``clock.now()``
reaches its ready time, then ``add``s it. Waiting and queued are independent:
an item that is waiting can also be ``add``-ed directly; it is then processed
now and added again when its timer fires (collapsing only if it is still
queued then).

One daemon thread (started by the first delayed add) owns the timers. It keeps
a min-heap of ``(ready_at, seq, item)`` entries plus a map item -> its live
entry; an entry that no longer matches the map is stale and skipped when
popped (an item re-scheduled earlier leaves its later entry behind). The thread
moves every due entry into the queue, then blocks in ``clock.wait`` until the
earliest ready time; ``add_after`` wakes it only when the new entry becomes the
earliest, and ``shut_down`` wakes it to exit. It never polls.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import weakref
from typing import Any

from pycontroller.clock import Clock
from pycontroller.workqueue.metrics import (
    DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    CounterMetric,
    MetricsProvider,
)
from pycontroller.workqueue.queue import Queue

__all__ = ["DelayingQueue"]

# Longest single wait of the timer thread. Only matters for absurd delays
# (``math.inf``, years), which a real condition wait cannot take as a timeout;
# such an item is simply re-examined once a day.
_MAX_WAIT = 86_400.0


class DelayingQueue(Queue):
    """A ``Queue`` with ``add_after``.

    For the same waiting item the earliest ready time wins: a later
    ``add_after`` is ignored, an earlier one moves the item forward.
    ``shut_down`` discards the items still waiting. Every ``add_after`` before
    shutdown counts one ``workqueue_retries_total``.
    """

    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        unfinished_work_update_period: float = DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        super().__init__(
            name,
            clock=clock,
            metrics_provider=metrics_provider,
            unfinished_work_update_period=unfinished_work_update_period,
        )
        self._retries: CounterMetric | None = None
        if self._metrics_provider is not None:
            self._retries = self._metrics_provider.new_retries_metric(name)
        self._waiting_loop = _WaitingLoop(self, self._clock)

    def add_after(self, item: Any, delay: float) -> None:
        """Add ``item`` once ``delay`` clock seconds have passed (at once if ``delay <= 0``).

        Ignored after shutdown. ``delay = math.inf`` keeps the item waiting until
        shutdown. Raises ``ValueError`` for a NaN delay.
        """
        if delay != delay:
            raise ValueError("add_after: delay is NaN")
        if self._shutting_down:
            return
        if self._retries is not None:
            self._retries.inc()
        if delay <= 0:
            self.add(item)
            return
        self._waiting_loop.schedule(item, delay)

    def _stop_background(self) -> None:
        # Both shutdowns: the items still waiting are discarded.
        self._waiting_loop.stop()
        super()._stop_background()

    def _num_waiting(self) -> int:
        """Items waiting for their ready time (for tests and debugging)."""
        return self._waiting_loop.num_waiting()


class _WaitingLoop:
    """The timer thread of one ``DelayingQueue``.

    Holds only a weak reference to the queue: a queue dropped without
    ``shut_down`` stops its thread through a finalizer. ``_entries`` maps each
    waiting item to the ``(ready_at, seq)`` of its live heap entry; all state is
    guarded by ``_cond``. Lock order: ``_cond`` before the queue's lock (the
    thread calls ``queue.add`` while holding ``_cond``); the queue never takes
    ``_cond`` while holding its own lock.

    ``_cond``'s lock is reentrant because the finalizer (``stop``) may run in
    the timer thread itself while it holds ``_cond``: when the thread's own
    reference to the queue is the last one, dropping it finalizes the queue
    right there (a non-reentrant lock deadlocked the thread on itself). ``_run``
    only drops that reference where ``stop`` can safely clear the state, and
    re-checks ``_stopped`` right after.
    """

    def __init__(self, queue: DelayingQueue, clock: Clock) -> None:
        self._clock = clock
        self._cond = threading.Condition(threading.RLock())
        self._heap: list[tuple[float, int, Any]] = []
        self._entries: dict[Any, tuple[float, int]] = {}
        self._seq = itertools.count()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._ref = weakref.ref(queue)
        self._thread_name = f"workqueue-delay-{queue.name}"
        weakref.finalize(queue, self.stop)

    def schedule(self, item: Any, delay: float) -> None:
        ready_at = self._clock.now() + delay
        with self._cond:
            if self._stopped:
                return
            entries = self._entries
            current = entries.get(item)
            if current is not None and current[0] <= ready_at:
                return  # the earlier ready time wins
            seq = next(self._seq)
            entries[item] = (ready_at, seq)
            heap = self._heap
            heapq.heappush(heap, (ready_at, seq, item))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=self._thread_name, daemon=True
                )
                self._thread.start()
            elif heap[0][1] == seq:
                # New earliest entry: the thread is waiting for a later time.
                self._cond.notify()

    def num_waiting(self) -> int:
        with self._cond:
            return len(self._entries)

    def stop(self) -> None:
        """Stop the thread and discard the waiting items. Idempotent."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._entries.clear()
            self._cond.notify_all()

    def _run(self) -> None:
        clock = self._clock
        heap = self._heap
        entries = self._entries
        with self._cond:
            while not self._stopped:
                if not heap:
                    clock.wait(self._cond, None)
                    continue
                now = clock.now()
                ready_at = heap[0][0]
                if ready_at > now:
                    clock.wait(self._cond, min(ready_at - now, _MAX_WAIT))
                    continue
                queue = self._ref()
                if queue is None:
                    return
                while heap and heap[0][0] <= now:
                    _, seq, item = heapq.heappop(heap)
                    live = entries.get(item)
                    if live is None or live[1] != seq:
                        continue  # stale: the item was re-scheduled earlier
                    del entries[item]
                    queue.add(item)
                del queue
