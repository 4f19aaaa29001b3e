"""Controller worker boundary: retries, backoff, forget, requeue_after, drain, metrics."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY

from pycontroller.clock import FakeClock
from pycontroller.controller import Controller, Result, TerminalError
from pycontroller.testing import wait_for
from pycontroller.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue


def sample(name: str, **labels: str) -> float:
    value = REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


_counter = 0


def unique_name(prefix: str) -> str:
    """Metrics are process-global: give every test its own controller label."""
    global _counter
    _counter += 1
    return f"{prefix}-{_counter}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> Iterator[RateLimitingQueue]:
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0, clock=clock), clock=clock)
    yield q
    q.shut_down()


class Failing:
    """A sync that raises for its first ``failures`` calls per key, then returns ``result``."""

    def __init__(self, failures: int, result: Result | None = None) -> None:
        self.failures = failures
        self.result = result
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, key: str) -> Result | None:
        with self._lock:
            self.calls.append(key)
            n = self.calls.count(key)
        if n <= self.failures:
            raise RuntimeError(f"boom {n}")
        return self.result


def test_result_defaults_and_frozen() -> None:
    r = Result()
    assert r.requeue is False and r.requeue_after == 0
    with pytest.raises(AttributeError):
        r.requeue = True  # type: ignore[misc]
    assert Result(requeue_after=3) == Result(False, 3)


def test_success_forgets_and_counts(queue: RateLimitingQueue) -> None:
    name = unique_name("ok")
    sync = Failing(0)
    c = Controller(name, queue, sync)
    queue.rate_limiter.when("ns/a")  # one recorded failure to be forgotten
    queue.add("ns/a")
    assert queue.num_requeues("ns/a") == 1
    assert c.process_next_work_item() is True
    assert sync.calls == ["ns/a"]
    assert queue.num_requeues("ns/a") == 0
    assert len(queue) == 0
    assert sample("controller_runtime_reconcile_total", controller=name, result="success") == 1
    assert sample("controller_runtime_reconcile_time_seconds_count", controller=name) == 1
    assert sample("controller_runtime_active_workers", controller=name) == 0


def test_error_requeues_with_exponential_backoff_then_forget(
    queue: RateLimitingQueue, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    name = unique_name("retry")
    sync = Failing(3)
    c = Controller(name, queue, sync)
    queue.add("ns/a")
    caplog.set_level(logging.ERROR, logger="pycontroller.controller")
    for attempt, delay in enumerate([1.0, 2.0, 4.0], start=1):
        assert c.process_next_work_item()
        assert queue.num_requeues("ns/a") == attempt
        assert len(queue) == 0  # waiting for its backoff
        clock.step(delay - 0.01)
        time.sleep(0.02)
        assert len(queue) == 0, f"attempt {attempt}: requeued before its {delay}s backoff"
        clock.step(0.01)
        wait_for(lambda: len(queue) == 1, what="requeue after backoff")
    assert c.process_next_work_item()
    assert sync.calls == ["ns/a"] * 4
    assert queue.num_requeues("ns/a") == 0  # forgotten on success
    assert sample("controller_runtime_reconcile_errors_total", controller=name) == 3
    assert sample("controller_runtime_reconcile_total", controller=name, result="error") == 3
    assert sample("controller_runtime_reconcile_total", controller=name, result="success") == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 3
    for rec in errors:
        msg = rec.getMessage()
        assert name in msg and "ns/a" in msg
        assert rec.exc_info is not None and isinstance(rec.exc_info[1], RuntimeError)


def test_max_retries_drops_key(
    queue: RateLimitingQueue, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    name = unique_name("maxretries")
    sync = Failing(100)
    c = Controller(name, queue, sync, max_retries=2)
    queue.add("k")
    caplog.set_level(logging.ERROR, logger="pycontroller.controller")
    for _ in range(2):
        assert c.process_next_work_item()
        clock.step(1000)
        wait_for(lambda: len(queue) == 1, what="requeue")
    assert queue.num_requeues("k") == 2
    assert c.process_next_work_item()  # third failure: dropped
    assert queue.num_requeues("k") == 0
    clock.step(1000)
    time.sleep(0.05)
    assert len(queue) == 0
    assert len(sync.calls) == 3
    assert "dropping" in caplog.records[-1].getMessage()
    assert "k" in caplog.records[-1].getMessage()
    # A later event for the key starts afresh.
    queue.add("k")
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 1


def test_max_retries_zero_never_retries(queue: RateLimitingQueue) -> None:
    c = Controller(unique_name("zero"), queue, Failing(1), max_retries=0)
    queue.add("k")
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 0
    assert queue._num_waiting() == 0


@pytest.mark.parametrize(
    "raised",
    [
        lambda: TerminalError("spec.port: must be a number"),
        # Wrapped, as Go's fmt.Errorf("...: %w", reconcile.TerminalError(err)).
        lambda: _chained(ValueError("sync failed"), TerminalError("spec.port: must be a number")),
    ],
    ids=["direct", "in-cause-chain"],
)
def test_terminal_error_is_counted_and_not_requeued(
    queue: RateLimitingQueue,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    raised: object,
) -> None:
    name = unique_name("terminal")
    calls: list[str] = []

    def sync(key: str) -> Result | None:
        calls.append(key)
        raise raised()  # type: ignore[operator]

    c = Controller(name, queue, sync)
    caplog.set_level(logging.ERROR, logger="pycontroller.controller")
    queue.add("ns/a")
    queue.add("ns/b")
    assert c.process_next_work_item() and c.process_next_work_item()
    assert calls == ["ns/a", "ns/b"]
    clock.step(1000)  # far past any backoff: nothing comes back by itself
    time.sleep(0.05)
    assert len(queue) == 0
    assert queue.num_requeues("ns/a") == 0  # never went through the rate limiter
    assert sample("controller_runtime_terminal_reconcile_errors_total", controller=name) == 2
    assert sample("controller_runtime_reconcile_errors_total", controller=name) == 2
    assert sample("controller_runtime_reconcile_total", controller=name, result="error") == 2
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(logged) == 2 and all("terminal" in m and name in m for m in logged)
    # A later event brings the key back, and a sync that succeeds is a success.
    calls.clear()
    c2 = Controller(name, queue, Failing(0))
    queue.add("ns/a")
    assert c2.process_next_work_item()
    assert sample("controller_runtime_reconcile_total", controller=name, result="success") == 1


def _chained(outer: Exception, cause: Exception) -> Exception:
    outer.__cause__ = cause
    return outer


def test_an_error_with_a_terminal_error_only_as_context_is_retried(
    queue: RateLimitingQueue,
) -> None:
    """Only ``raise ... from`` (``__cause__``) wraps; an exception raised while
    handling a TerminalError (implicit ``__context__``) is an ordinary error."""
    name = unique_name("terminal-context")

    def sync(key: str) -> Result | None:
        try:
            raise TerminalError("bad spec")
        except TerminalError:
            raise RuntimeError("cleanup failed")  # noqa: B904

    c = Controller(name, queue, sync)
    queue.add("ns/a")
    assert c.process_next_work_item()
    assert queue.num_requeues("ns/a") == 1
    assert sample("controller_runtime_terminal_reconcile_errors_total", controller=name) == 0


def test_requeue_after_forgets_and_adds_after(queue: RateLimitingQueue, clock: FakeClock) -> None:
    name = unique_name("after")
    c = Controller(name, queue, Failing(0, Result(requeue_after=30)))
    queue.rate_limiter.when("k")  # a prior failure, to be forgotten
    queue.add("k")
    assert queue.num_requeues("k") == 1
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 0
    clock.step(29)
    time.sleep(0.02)
    assert len(queue) == 0
    clock.step(1)
    wait_for(lambda: len(queue) == 1, what="requeue_after")
    assert (
        sample("controller_runtime_reconcile_total", controller=name, result="requeue_after") == 1
    )


def test_requeue_after_wins_over_requeue(queue: RateLimitingQueue, clock: FakeClock) -> None:
    c = Controller(unique_name("both"), queue, Failing(0, Result(requeue=True, requeue_after=5)))
    queue.add("k")
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 0
    clock.step(5)
    wait_for(lambda: len(queue) == 1)


def test_requeue_true_is_rate_limited(queue: RateLimitingQueue, clock: FakeClock) -> None:
    name = unique_name("requeue")
    c = Controller(name, queue, Failing(0, Result(requeue=True)), max_retries=0)
    queue.add("k")
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 1  # max_retries applies to errors only
    clock.step(1)
    wait_for(lambda: len(queue) == 1)
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 2
    assert sample("controller_runtime_reconcile_total", controller=name, result="requeue") == 2
    assert sample("controller_runtime_reconcile_errors_total", controller=name) == 0


def test_done_is_called_even_when_sync_raises(queue: RateLimitingQueue) -> None:
    c = Controller(unique_name("done"), queue, Failing(1), max_retries=0)
    queue.add("k")
    assert c.process_next_work_item()
    # If done() had been skipped the key would still be "processing" and this
    # add would not make it available again.
    queue.add("k")
    assert len(queue) == 1


def test_base_exception_is_not_swallowed(queue: RateLimitingQueue) -> None:
    def sync(key: str) -> None:
        raise KeyboardInterrupt

    c = Controller(unique_name("kbd"), queue, sync)
    queue.add("k")
    with pytest.raises(KeyboardInterrupt):
        c.process_next_work_item()
    queue.add("k")
    assert len(queue) == 1  # done() still ran


def test_process_returns_false_on_shutdown(queue: RateLimitingQueue) -> None:
    c = Controller(unique_name("sd"), queue, Failing(0))
    queue.shut_down()
    assert c.process_next_work_item() is False


def test_invalid_arguments(queue: RateLimitingQueue) -> None:
    with pytest.raises(ValueError):
        Controller("", queue, Failing(0))
    with pytest.raises(ValueError):
        Controller("x", queue, Failing(0), max_retries=-1)
    with pytest.raises(ValueError):
        Controller("x", queue, Failing(0), graceful_shutdown_timeout=-1)
    c = Controller(unique_name("bad"), queue, Failing(0))
    with pytest.raises(ValueError):
        c.run(0, threading.Event())


# -- run(): real threads, real clock, tiny backoff ---------------------------


def fast_queue() -> RateLimitingQueue:
    return RateLimitingQueue(ItemExponentialFailureRateLimiter(0.001, 0.01))


def start(
    c: Controller, workers: int, stop: threading.Event, returned: list[bool] | None = None
) -> threading.Thread:
    """Run ``c`` on a daemon thread; ``run``'s return value is appended to ``returned``."""

    def target() -> None:
        result = c.run(workers, stop)
        if returned is not None:
            returned.append(result)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t


def test_run_exceptions_never_kill_workers() -> None:
    q = fast_queue()
    name = unique_name("survive")
    sync = Failing(2)
    c = Controller(name, q, sync)
    stop = threading.Event()
    t = start(c, 3, stop)
    keys = [f"ns/k{i}" for i in range(30)]
    for k in keys:
        q.add(k)
    wait_for(lambda: len(sync.calls) == 90, what="every key to fail twice then succeed")
    assert sample("controller_runtime_reconcile_total", controller=name, result="success") == 30
    assert sample("controller_runtime_reconcile_total", controller=name, result="error") == 60
    assert sample("controller_runtime_max_concurrent_reconciles", controller=name) == 3
    # All three workers are still alive and serving.
    workers = [th for th in threading.enumerate() if th.name.startswith(f"{name}-worker-")]
    assert len(workers) == 3
    q.add("ns/late")
    wait_for(lambda: "ns/late" in sync.calls)
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert q.shutting_down()
    assert sample("controller_runtime_active_workers", controller=name) == 0
    assert not any(th.is_alive() for th in workers)


def test_run_no_key_processed_concurrently() -> None:
    q = fast_queue()
    in_flight: set[str] = set()
    overlaps: list[str] = []
    count: dict[str, int] = {}
    lock = threading.Lock()

    def sync(key: str) -> None:
        with lock:
            if key in in_flight:
                overlaps.append(key)
            in_flight.add(key)
            count[key] = count.get(key, 0) + 1
        q.add(key)  # re-added while processing: must wait until done
        time.sleep(0.001)
        with lock:
            in_flight.discard(key)

    c = Controller(unique_name("serial"), q, sync)
    stop = threading.Event()
    t = start(c, 8, stop)
    for k in ("a", "b", "c"):
        q.add(k)
    wait_for(lambda: all(count.get(k, 0) >= 20 for k in ("a", "b", "c")))
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert overlaps == []


def test_run_drains_in_flight_work_on_stop() -> None:
    q = fast_queue()
    entered = threading.Event()
    release = threading.Event()
    finished: list[str] = []

    def sync(key: str) -> None:
        entered.set()
        release.wait(10)
        finished.append(key)

    c = Controller(unique_name("drain"), q, sync)
    stop = threading.Event()
    returned: list[bool] = []
    t = start(c, 2, stop, returned)
    q.add("k")
    assert entered.wait(5)
    stop.set()
    wait_for(q.shutting_down, what="run to start draining")
    assert t.is_alive(), "run returned while a sync was still in flight"
    q.add("after-stop")  # ignored: the queue is shutting down
    release.set()
    t.join(10)
    assert not t.is_alive()
    assert finished == ["k"]
    assert returned == [True]  # every in-flight sync finished


class Gated:
    """A sync that records each key and blocks until ``release`` is set."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, key: str) -> None:
        with self._lock:
            self.started.append(key)
        self.release.wait(30)
        with self._lock:
            self.finished.append(key)


def test_stop_syncs_no_new_keys_and_leaves_the_backlog_queued() -> None:
    q = fast_queue()
    sync = Gated()
    c = Controller(unique_name("backlog"), q, sync)
    stop = threading.Event()
    returned: list[bool] = []
    keys = [f"ns/k{i:03d}" for i in range(100)]
    for k in keys:
        q.add(k)
    t = start(c, 3, stop, returned)
    wait_for(lambda: len(sync.started) == 3, what="three syncs in flight")
    stop.set()
    wait_for(q.shutting_down, what="run to shut the queue down")
    sync.release.set()
    t.join(10)
    assert not t.is_alive()
    # Only the in-flight keys were synced; nothing else was taken from the queue.
    assert sorted(sync.finished) == sorted(sync.started) == keys[:3]
    assert len(q) == 97
    assert returned == [True]
    for _ in range(97):
        key, shutdown = q.get()  # the backlog is still handed out, in order
        assert not shutdown
        q.done(key)
    assert q.get() == (None, True)


def test_hung_sync_is_abandoned_at_the_deadline(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    q = fast_queue()
    name = unique_name("hung")
    hang = threading.Event()
    entered = threading.Event()
    synced: list[str] = []

    def sync(key: str) -> None:
        synced.append(key)
        entered.set()
        hang.wait()  # forever, until the test ends

    c = Controller(name, q, sync, clock=clock, graceful_shutdown_timeout=5.0)
    stop = threading.Event()
    returned: list[bool] = []
    q.add("ns/hung")
    q.add("ns/waiting")
    caplog.set_level(logging.INFO, logger="pycontroller.controller")
    t = start(c, 1, stop, returned)
    try:
        assert entered.wait(5)
        stop.set()
        wait_for(lambda: clock.waiters() >= 1 and q.shutting_down(), what="run to wait")
        clock.step(4.9)
        time.sleep(0.05)
        assert t.is_alive(), "run returned before the deadline"
        clock.step(0.2)
        t.join(5)
        assert not t.is_alive()
        assert returned == [False]
        assert synced == ["ns/hung"]
        assert len(q) == 1  # never handed out: still queued
        assert q.num_requeues("ns/hung") == 0
        messages = [r.getMessage() for r in caplog.records]
        assert any(name in m and "'ns/hung'" in m and "abandon" in m for m in messages)
        assert sample("controller_runtime_reconcile_abandoned_total", controller=name) == 1
    finally:
        hang.set()


def test_hung_sync_abandoned_within_timeout_on_the_real_clock() -> None:
    q = fast_queue()
    hang = threading.Event()
    entered = threading.Event()

    def sync(key: str) -> None:
        entered.set()
        hang.wait()

    c = Controller(unique_name("hung-real"), q, sync, graceful_shutdown_timeout=0.5)
    stop = threading.Event()
    returned: list[bool] = []
    q.add("k")
    t = start(c, 2, stop, returned)
    try:
        assert entered.wait(5)
        began = time.monotonic()
        stop.set()
        t.join(5)
        elapsed = time.monotonic() - began
        assert not t.is_alive()
        assert returned == [False]
        assert 0.4 <= elapsed < 0.5 + 1.0
    finally:
        hang.set()


def test_in_flight_sync_finishing_before_the_deadline_returns_true(clock: FakeClock) -> None:
    q = fast_queue()
    sync = Gated()
    c = Controller(unique_name("intime"), q, sync, clock=clock, graceful_shutdown_timeout=5.0)
    stop = threading.Event()
    returned: list[bool] = []
    q.add("a")
    q.add("b")
    t = start(c, 1, stop, returned)
    wait_for(lambda: sync.started == ["a"])
    stop.set()
    wait_for(lambda: clock.waiters() >= 1 and q.shutting_down(), what="run to wait")
    clock.step(4.0)
    sync.release.set()  # finishes within the deadline: no clock step needed to notice
    t.join(5)
    assert not t.is_alive()
    assert returned == [True]
    assert sync.finished == ["a"]
    assert q.num_requeues("a") == 0


class CountingSynced:
    """A has_synced callable that counts its calls; True once ``synced`` is set."""

    def __init__(self) -> None:
        self.synced = threading.Event()
        self.calls = 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.synced.is_set()


def step_cache_polls(clock: FakeClock, synced: CountingSynced, polls: int) -> None:
    """Let run() poll has_synced ``polls`` more times by stepping the fake clock."""
    for _ in range(polls):
        wait_for(lambda: clock.waiters() == 1, what="run to sleep between cache polls")
        seen = synced.calls
        clock.step(0.1)
        wait_for(lambda s=seen: synced.calls > s, what="run to poll has_synced again")


def test_run_waits_for_caches(clock: FakeClock) -> None:
    q = fast_queue()
    synced = CountingSynced()
    sync = Failing(0)
    c = Controller(unique_name("caches"), q, sync, has_synced=[lambda: True, synced], clock=clock)
    stop = threading.Event()
    q.add("k")
    t = start(c, 1, stop)
    step_cache_polls(clock, synced, 3)
    assert synced.calls == 4  # one poll per clock step, on the injected clock
    assert sync.calls == []
    synced.synced.set()
    step_cache_polls(clock, synced, 1)
    wait_for(lambda: sync.calls == ["k"])
    stop.set()
    t.join(10)
    assert not t.is_alive()


def test_run_returns_if_stopped_before_caches_sync(clock: FakeClock) -> None:
    q = fast_queue()
    sync = Failing(0)
    synced = CountingSynced()
    c = Controller(unique_name("nosync"), q, sync, has_synced=[synced], clock=clock)
    stop = threading.Event()
    t = start(c, 1, stop)
    step_cache_polls(clock, synced, 2)
    wait_for(lambda: clock.waiters() == 1, what="run to wait for caches")
    stop.set()  # no clock step needed: the stop event ends the wait
    t.join(5)
    assert not t.is_alive()
    assert sync.calls == []
    assert q.shutting_down()


def test_run_twice_raises() -> None:
    q = fast_queue()
    c = Controller(unique_name("twice"), q, Failing(0))
    stop = threading.Event()
    stop.set()
    c.run(1, stop)
    with pytest.raises(RuntimeError):
        c.run(1, stop)


def test_run_returns_when_queue_shut_down_externally(clock: FakeClock) -> None:
    q = fast_queue()
    name = unique_name("ext")
    c = Controller(name, q, Failing(0), clock=clock)
    stop = threading.Event()
    t = start(c, 2, stop)
    wait_for(lambda: clock.waiters() == 1, what="run to wait for stop")
    q.shut_down()
    wait_for(
        lambda: not any(th.name.startswith(f"{name}-worker-") for th in threading.enumerate()),
        what="workers to exit",
    )
    assert t.is_alive()  # run notices on its next (fake) poll, not before
    clock.step(0.2)
    t.join(5)
    assert not t.is_alive()


def test_active_workers_gauge_during_sync() -> None:
    q = fast_queue()
    name = unique_name("active")
    gate = threading.Event()
    started = threading.Semaphore(0)

    def sync(key: str) -> None:
        started.release()
        gate.wait(10)

    c = Controller(name, q, sync)
    stop = threading.Event()
    t = start(c, 3, stop)
    q.add("a")
    q.add("b")
    assert started.acquire(timeout=5) and started.acquire(timeout=5)
    assert sample("controller_runtime_active_workers", controller=name) == 2
    gate.set()
    stop.set()
    t.join(10)
    assert sample("controller_runtime_active_workers", controller=name) == 0


def test_unexpected_return_value_is_success_and_worker_survives(
    queue: RateLimitingQueue, caplog: pytest.LogCaptureFixture
) -> None:
    name = unique_name("weird")

    def sync(key: str) -> Result | None:
        return True  # type: ignore[return-value]

    c = Controller(name, queue, sync)
    queue.add("k")
    caplog.set_level(logging.ERROR, logger="pycontroller.controller")
    assert c.process_next_work_item()
    assert queue.num_requeues("k") == 0
    assert "not a Result" in caplog.records[-1].getMessage()
    assert sample("controller_runtime_reconcile_total", controller=name, result="success") == 1


def test_single_has_synced_callable_accepted(clock: FakeClock) -> None:
    q = fast_queue()
    synced = CountingSynced()
    sync = Failing(0)
    c = Controller(unique_name("single"), q, sync, has_synced=synced, clock=clock)
    stop = threading.Event()
    q.add("k")
    t = start(c, 1, stop)
    step_cache_polls(clock, synced, 1)
    assert sync.calls == []
    synced.synced.set()
    step_cache_polls(clock, synced, 1)
    wait_for(lambda: sync.calls == ["k"])
    stop.set()
    t.join(10)
    assert not t.is_alive()


def test_a_retried_key_keeps_the_priority_it_was_handed_out_with() -> None:
    # controller-runtime requeues with AddWithOpts(Priority: priority): an
    # initial-list key that fails goes back at low priority, behind the same
    # priority's queue, not ahead of it.
    from pycontroller.workqueue import LOW_PRIORITY, PriorityQueue

    queue = PriorityQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.0, 0.0))
    queue.add_with_opts("a", priority=LOW_PRIORITY)
    queue.add_with_opts("b", priority=LOW_PRIORITY)
    synced: list[str] = []

    def sync(key: str) -> Result | None:
        synced.append(key)
        if key == "a" and synced.count("a") == 1:
            raise RuntimeError("first attempt fails")
        if key == "b":
            return Result(requeue=True) if synced.count("b") == 1 else None
        return None

    c = Controller("priority-retry", queue, sync)
    for _ in range(4):
        assert c.process_next_work_item()
    assert synced == ["a", "b", "a", "b"]
