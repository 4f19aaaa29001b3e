"""Controller: worker threads draining a rate-limited workqueue into a sync function.

This is sample-controller's skeleton and controller-runtime's reconcile
handler in one place::

    run(workers, stop)
      -> wait for caches (every ``has_synced`` callable returns True)
      -> ``workers`` threads, each: while process_next_work_item(): pass
      -> stop set: workers take no new keys, the queue is shut down (not
         drained: the backlog stays queued, the next leader rebuilds it from
         its informers), in-flight syncs get until ``graceful_shutdown_timeout``
         (on the injected clock) to finish; return True if they all did,
         False if some were abandoned at the deadline

Graceful shutdown follows controller-runtime: once ``stop`` is set a worker
finishes the sync it is running and exits; it never starts another. The
queue's ``shut_down`` is the cut: a key handed out before it is synced, none
is handed out after it. A ``PriorityQueue`` (``hands_out_after_shut_down =
False``, as controller-runtime's) does that by itself. client-go's queues keep
handing out queued items after ``shut_down``, so with them a worker also
checks, after ``get``, whether ``run`` is stopping; a key it receives then (one
added at the very moment of stop) is released with ``done`` without being
synced or forgotten, and cannot be put back in the shut-down queue (the next
leader rebuilds it from its informers). A sync still running at the
deadline is abandoned: its worker is a daemon thread, each abandoned key is
logged with the controller name, and
``controller_runtime_reconcile_abandoned_total{controller}`` counts them
(this one is ours, not controller-runtime's). The abandoned key is not
``forget``-ed or re-queued by ``run``; if its sync ever returns, the usual
retry policy runs against the (shut-down) queue.

``process_next_work_item`` is the one worker-boundary function and holds all
retry policy:

- ``done(key)`` always, whatever happens;
- ``sync`` returned ``None`` or ``Result()``: ``forget(key)`` (its backoff resets);
- ``sync`` raised: ``add_rate_limited(key)`` (logged with the controller name,
  the key and the traceback), unless ``max_retries`` is set and the key has
  already been requeued that many times, in which case it is dropped with
  ``forget`` and an error log;
- ``sync`` raised a ``TerminalError`` (or an exception whose ``__cause__``
  chain holds one: ``raise X from TerminalError(...)``, Go's ``errors.Is``):
  logged and counted as an error, and not requeued, as controller-runtime's
  ``reconcile.TerminalError``; the key is synced again only when an event
  adds it (its failure backoff is left as it was, not ``forget``-ed);
- ``Result(requeue_after=s)`` with ``s > 0``: ``forget(key)`` then
  ``add_after(key, s)``;
- ``Result(requeue=True)``: ``add_rate_limited(key)`` (backoff grows; the
  ``max_retries`` limit applies only to errors, an explicit requeue is the
  sync function's own decision).
- with ``read_your_writes``, a key whose previous sync wrote objects the
  informers have not yet observed is not synced: ``add_after(key, backoff)``
  (neither ``forget`` nor the rate limiter: its failure backoff is left as
  it was), counted by ``controller_runtime_stale_sync_skips_total``; see
  ``pycontroller.consistency``.

It is the only catch-all ``except Exception`` in the library: an exception in
``sync`` never kills a worker. The queue guarantees that one key is never
handed to two workers at once, so ``sync`` needs no per-key locking.

Metrics (prometheus-client default registry, label ``controller``) use
controller-runtime's names: ``controller_runtime_reconcile_total{controller,
result}`` with result ``success``/``error``/``requeue``/``requeue_after``,
``controller_runtime_reconcile_errors_total``,
``controller_runtime_terminal_reconcile_errors_total`` (the errors among them
that were not requeued), ``controller_runtime_reconcile_panics_total`` (0:
whatever a sync raises is an error),
``controller_runtime_reconcile_time_seconds`` (histogram),
``controller_runtime_active_workers``,
``controller_runtime_max_concurrent_reconciles`` and
``controller_runtime_reconcile_abandoned_total`` (syncs abandoned at the
graceful-shutdown deadline).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from prometheus_client import Counter, Gauge, Histogram

from pycontroller._metrics import register
from pycontroller.clock import REAL_CLOCK, Clock
from pycontroller.consistency import ReadYourWrites

logger = logging.getLogger(__name__)

__all__ = ["Controller", "Result", "TerminalError", "WorkQueue"]

# How often run() re-checks has_synced while waiting for caches (client-go polls every 100 ms).
_CACHE_SYNC_POLL = 0.1
# How often run() checks whether every worker exited (the queue was shut down by someone else).
_STOP_POLL = 0.2


@dataclass(frozen=True)
class Result:
    """What a sync function asks the controller to do with its key next.

    ``requeue_after`` is seconds (a ``datetime.timedelta`` is converted).
    ``requeue_after > 0`` wins over ``requeue``: the key is processed again
    after that many seconds and its failure backoff is reset. ``requeue=True``
    re-adds the key through the rate limiter (growing backoff). Returning
    ``None`` is the same as ``Result()``: done, backoff reset.
    """

    requeue: bool = False
    requeue_after: float = 0

    def __post_init__(self) -> None:
        # Go's time.Duration is datetime.timedelta here; anything else that is not a
        # number is refused now, in the sync function (a sync error, retried), not
        # later in the worker, where it would end the worker thread.
        after: object = self.requeue_after
        if isinstance(after, timedelta):
            object.__setattr__(self, "requeue_after", after.total_seconds())
        elif not isinstance(after, int | float):
            raise TypeError(
                f"Result.requeue_after must be seconds or a timedelta, not {type(after).__name__}"
            )


class TerminalError(Exception):
    """An error retrying cannot fix: the controller logs and counts it, and does not requeue.

    controller-runtime's ``reconcile.TerminalError``. Raise it from a sync or
    reconcile function when the object itself must change before another
    attempt can succeed (the key comes back with the next event that adds
    it)::

        raise TerminalError(f"spec.template: {reason}")
        raise TerminalError("cannot parse spec") from err

    It is found anywhere in the raised exception's ``__cause__`` chain, so
    ``raise SomeError(...) from TerminalError(...)`` counts too.
    """


def _is_terminal(exc: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, TerminalError):
            return True
        seen.add(id(cur))
        cur = cur.__cause__
    return False


class WorkQueue(Protocol):
    """The part of ``pycontroller.workqueue.RateLimitingQueue`` a Controller uses.

    Optional: a class attribute ``hands_out_after_shut_down = False`` declares
    that ``get`` returns ``(None, True)`` at once after ``shut_down`` (as
    ``PriorityQueue``); a queue without it is taken to hand out queued items
    after ``shut_down``, as client-go's do.
    """

    def get(self, timeout: float | None = None) -> tuple[Any, bool]: ...

    def done(self, item: Any) -> None: ...

    def forget(self, item: Any) -> None: ...

    def add_rate_limited(self, item: Any) -> None: ...

    def add_after(self, item: Any, delay: float) -> None: ...

    def num_requeues(self, item: Any) -> int: ...

    def shut_down(self) -> None: ...

    def shut_down_with_drain(self) -> None: ...

    def shutting_down(self) -> bool: ...


# Reconcile duration buckets, as controller-runtime.
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip

RECONCILE_TOTAL: Counter = register(
    Counter,
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
)
RECONCILE_ERRORS: Counter = register(
    Counter,
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
)
TERMINAL_RECONCILE_ERRORS: Counter = register(
    Counter,
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
)
# controller-runtime counts recovered panics here; a sync that raises is an
# error (reconcile_errors_total) whatever it raised, so this stays 0. It is
# exported, per controller, so dashboards and alerts written for
# controller-runtime find it.
RECONCILE_PANICS: Counter = register(
    Counter,
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliation panics per controller",
    ["controller"],
)
RECONCILE_TIME: Histogram = register(
    Histogram,
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
)
ACTIVE_WORKERS: Gauge = register(
    Gauge,
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
)
MAX_CONCURRENT_RECONCILES: Gauge = register(
    Gauge,
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
)
RECONCILE_ABANDONED: Counter = register(
    Counter,
    "controller_runtime_reconcile_abandoned_total",
    "Reconciliations still running at the graceful-shutdown deadline, abandoned per controller",
    ["controller"],
)


class Controller:
    """Runs ``sync(key)`` for keys taken from ``queue`` on worker threads.

    ``queue`` is owned by the controller once ``run`` starts: ``run`` shuts it
    down when ``stop`` is set, so do not share one queue between controllers.
    Event handlers add keys to ``queue`` (usually ``"ns/name"`` strings).
    ``has_synced`` callables (informers' ``has_synced``) must all return True
    before any worker starts, so ``sync`` never acts on a partial cache.

    ``sync`` is user code: it is called without any controller lock held and
    may block; keep it level-based (read the desired state, converge).

    ``name`` labels the log lines and the metrics: two controllers with one
    name share their series. ``clock`` paces the cache-sync poll and the
    check for exited workers, measures the graceful-shutdown deadline, and
    times reconciles for the histogram. A single callable is accepted for
    ``has_synced`` too.

    ``graceful_shutdown_timeout``: seconds in-flight syncs get after ``stop``
    is set before they are abandoned; ``None`` waits for them however long
    they take.

    ``read_your_writes`` (a ``pycontroller.consistency.ReadYourWrites``,
    opt-in; Builder controllers get one): the writes a sync of a key makes
    through ``ResourceClient`` on its worker thread are recorded, and the
    key's next sync is deferred (``add_after`` with backoff, the queue's
    failure backoff untouched) until the informers have observed them, for at
    most the tracker's ``timeout``.
    """

    def __init__(
        self,
        name: str,
        queue: WorkQueue,
        sync: Callable[[str], Result | None],
        has_synced: Iterable[Callable[[], bool]] | Callable[[], bool] = (),
        max_retries: int | None = None,
        *,
        clock: Clock = REAL_CLOCK,
        graceful_shutdown_timeout: float | None = None,
        read_your_writes: ReadYourWrites | None = None,
    ) -> None:
        if not name:
            raise ValueError("controller name must not be empty")
        if max_retries is not None and max_retries < 0:
            raise ValueError("max_retries must be >= 0 or None")
        if graceful_shutdown_timeout is not None and not graceful_shutdown_timeout >= 0:
            raise ValueError("graceful_shutdown_timeout must be >= 0 or None")
        self.name = name
        self.queue = queue
        self._sync = sync
        self._has_synced: tuple[Callable[[], bool], ...] = (
            (has_synced,) if callable(has_synced) else tuple(has_synced)
        )
        self._max_retries = max_retries
        self._clock = clock
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        if read_your_writes is not None:
            read_your_writes.bind(name)
        self.read_your_writes = read_your_writes
        self._reconcile_total = {
            result: RECONCILE_TOTAL.labels(controller=name, result=result)
            for result in ("success", "error", "requeue", "requeue_after")
        }
        self._reconcile_errors = RECONCILE_ERRORS.labels(controller=name)
        self._terminal_errors = TERMINAL_RECONCILE_ERRORS.labels(controller=name)
        RECONCILE_PANICS.labels(controller=name)  # the series, at 0
        self._reconcile_time = RECONCILE_TIME.labels(controller=name)
        self._active_workers = ACTIVE_WORKERS.labels(controller=name)
        self._max_concurrent = MAX_CONCURRENT_RECONCILES.labels(controller=name)
        self._abandoned = RECONCILE_ABANDONED.labels(controller=name)
        # False for a queue that hands out nothing after shut_down (PriorityQueue):
        # then every key get() returns is synced (see the module docstring).
        self._check_stopping_after_get = bool(getattr(queue, "hands_out_after_shut_down", True))
        self._started = False
        self._lock = threading.Lock()
        # Guards the three fields below; notified when a worker exits.
        self._workers_cond = threading.Condition()
        # Set (before the queue is shut down) once run() is stopping: workers take no new key.
        self._stopping = False
        self._live_workers = 0
        # Worker thread ident -> the key it is syncing.
        self._in_flight: dict[int, Any] = {}

    def run(self, workers: int, stop: threading.Event) -> bool:
        """Block until ``stop`` is set, let in-flight syncs finish, and return.

        Waits for caches first; if ``stop`` is set while waiting, shuts the
        queue down and returns without starting workers. Returns early if the
        queue is shut down by someone else and every worker has exited.
        Calling ``run`` twice on one Controller raises RuntimeError.

        On ``stop`` no new key is synced and the backlog is left in the queue
        (see the module docstring). Returns True when every in-flight sync
        finished, False when some were still running at the
        ``graceful_shutdown_timeout`` deadline and were abandoned.
        """
        if workers < 1:
            raise ValueError("workers must be >= 1")
        with self._lock:
            if self._started:
                raise RuntimeError(f"controller {self.name!r} was already started")
            self._started = True
        logger.info("Starting controller %s", self.name)
        try:
            if not self._wait_for_caches(stop):
                logger.info("Controller %s stopped before caches synced", self.name)
                return True
            self._max_concurrent.set(workers)
            threads = [
                threading.Thread(target=self._worker, name=f"{self.name}-worker-{i}", daemon=True)
                for i in range(workers)
            ]
            logger.info("Starting %d workers for controller %s", workers, self.name)
            with self._workers_cond:
                self._live_workers = workers
            for t in threads:
                t.start()
            while not self._clock.sleep(_STOP_POLL, stop):
                if not any(t.is_alive() for t in threads):
                    logger.info("All workers of controller %s exited", self.name)
                    break
            finished = self._shut_down_workers()
            if finished:
                for t in threads:
                    t.join()
                logger.info("Controller %s stopped", self.name)
            return finished
        finally:
            # No-op when already shut down; makes get() return (None, True) for
            # anyone else still reading the queue.
            self._stop_workers()

    def _stop_workers(self) -> None:
        with self._workers_cond:
            self._stopping = True
        self.queue.shut_down()

    def _shut_down_workers(self) -> bool:
        """Stop handing out keys; wait for in-flight syncs until the deadline (False: abandoned)."""
        timeout = self.graceful_shutdown_timeout
        with self._workers_cond:
            in_flight = len(self._in_flight)
        logger.info(
            "Shutting down controller %s: %d sync(s) in flight, %s to finish",
            self.name,
            in_flight,
            "unlimited time" if timeout is None else f"{timeout:g}s",
        )
        deadline = None if timeout is None else self._clock.now() + timeout
        # Stopping before shut_down: a worker woken by the shutdown sees the flag.
        self._stop_workers()
        with self._workers_cond:
            while self._live_workers > 0:
                if deadline is None:
                    self._clock.wait(self._workers_cond, None)
                    continue
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    break
                self._clock.wait(self._workers_cond, remaining)
            if self._live_workers == 0:
                return True
            abandoned = list(self._in_flight.values())
        for key in abandoned:
            logger.error(
                "Controller %s: abandoning the sync of key %r, still running at the"
                " graceful-shutdown deadline (%gs)",
                self.name,
                key,
                timeout,
            )
        self._abandoned.inc(len(abandoned))
        logger.error(
            "Controller %s stopped with %d sync(s) abandoned at the graceful-shutdown deadline",
            self.name,
            len(abandoned),
        )
        return False

    def _wait_for_caches(self, stop: threading.Event) -> bool:
        if not self._has_synced:
            return not stop.is_set()
        logger.info("Waiting for caches to sync for controller %s", self.name)
        while not stop.is_set():
            if all(fn() for fn in self._has_synced):
                logger.info("Caches are synced for controller %s", self.name)
                return True
            self._clock.sleep(_CACHE_SYNC_POLL, stop)
        return False

    def _worker(self) -> None:
        me = threading.get_ident()
        try:
            while True:
                with self._workers_cond:
                    if self._stopping:
                        return
                key, priority, shutdown = self._get()
                if shutdown:
                    return
                with self._workers_cond:
                    stopping = self._stopping and self._check_stopping_after_get
                    if not stopping:
                        self._in_flight[me] = key
                if stopping:
                    # Possibly handed out after the queue's shut_down (client-go queues
                    # do): release it unsynced (no forget, its backoff stays).
                    logger.debug("Controller %s: stopping, key %r left unsynced", self.name, key)
                    self.queue.done(key)
                    return
                try:
                    self._process(key, priority)
                finally:
                    with self._workers_cond:
                        self._in_flight.pop(me, None)
        finally:
            with self._workers_cond:
                self._live_workers -= 1
                self._workers_cond.notify_all()

    def process_next_work_item(self) -> bool:
        """Take one key, sync it, apply the retry policy. False once the queue is shut down."""
        key, priority, shutdown = self._get()
        if shutdown:
            return False
        self._process(key, priority)
        return True

    def _get(self) -> tuple[Any, int, bool]:
        """The next key (``queue.get``) and the priority it was handed out at
        (0 on a queue without priorities)."""
        item, shutdown = self.queue.get()
        priority_of = getattr(self.queue, "handed_out_priority", None)
        priority = priority_of(item) if priority_of is not None and not shutdown else None
        return item, priority or 0, shutdown

    def _requeue(
        self, key: Any, priority: int, *, after: float = 0.0, rate_limited: bool = False
    ) -> None:
        """Add ``key`` back; on a priority queue at the priority it was handed
        out with (controller-runtime's ``AddWithOpts(..., Priority: priority)``),
        so a retried initial-list key does not jump ahead of real changes."""
        add_with_opts = getattr(self.queue, "add_with_opts", None)
        if add_with_opts is not None:
            add_with_opts(key, after=after, rate_limited=rate_limited, priority=priority)
        elif rate_limited:
            self.queue.add_rate_limited(key)
        else:
            self.queue.add_after(key, after)

    def _process(self, key: Any, priority: int = 0) -> None:
        self._active_workers.inc()
        try:
            self._reconcile_handler(key, priority)
        finally:
            self._active_workers.dec()
            self.queue.done(key)

    def _reconcile_handler(self, key: Any, priority: int = 0) -> None:
        ryw = self.read_your_writes
        if ryw is not None:
            # The cache has not observed this key's last writes: requeue, never block.
            delay = ryw.defer(key)
            if delay is not None:
                self._requeue(key, priority, after=delay)
                return
        start = self._clock.now()
        try:
            result = self._sync(key) if ryw is None else ryw.run(key, self._sync)
        except Exception as exc:  # the library's one catch-all: user code must never kill a worker
            self._reconcile_time.observe(max(self._clock.now() - start, 0.0))
            self._reconcile_errors.inc()
            self._reconcile_total["error"].inc()
            if _is_terminal(exc):
                self._terminal_errors.inc()
                logger.error(
                    "Controller %s: terminal error syncing key %r, not requeuing",
                    self.name,
                    key,
                    exc_info=True,
                )
                return
            requeues = self.queue.num_requeues(key)
            if self._max_retries is not None and requeues >= self._max_retries:
                logger.error(
                    "Controller %s: dropping key %r out of the queue after %d retries",
                    self.name,
                    key,
                    requeues,
                    exc_info=True,
                )
                self.queue.forget(key)
                return
            logger.error(
                "Controller %s: error syncing key %r, requeuing (retry %d)",
                self.name,
                key,
                requeues + 1,
                exc_info=True,
            )
            self._requeue(key, priority, rate_limited=True)
            return
        self._reconcile_time.observe(max(self._clock.now() - start, 0.0))
        if result is None:
            result = Result()
        elif not isinstance(result, Result):
            logger.error(
                "Controller %s: sync for key %r returned %r, not a Result or None;"
                " treating it as success",
                self.name,
                key,
                result,
            )
            result = Result()
        if result.requeue_after > 0:
            self.queue.forget(key)
            self._requeue(key, priority, after=result.requeue_after)
            self._reconcile_total["requeue_after"].inc()
            logger.debug(
                "Controller %s: key %r requeued after %ss", self.name, key, result.requeue_after
            )
        elif result.requeue:
            self._requeue(key, priority, rate_limited=True)
            self._reconcile_total["requeue"].inc()
            logger.debug("Controller %s: key %r requeued (rate limited)", self.name, key)
        else:
            self.queue.forget(key)
            self._reconcile_total["success"].inc()
            logger.debug("Controller %s: successfully synced key %r", self.name, key)
