"""PriorityQueue: controller-runtime priorityqueue_test.go semantics on a fake clock."""

from __future__ import annotations

import gc
import random
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from pycontroller.controller import Controller
from pycontroller.workqueue import (
    LOW_PRIORITY,
    ItemExponentialFailureRateLimiter,
    PriorityQueue,
    PrometheusMetricsProvider,
    Queue,
    RateLimitingQueue,
)
from pycontroller.workqueue.metrics import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    SettableGaugeMetric,
)

WaitUntil = Callable[..., None]


def _drain(q: PriorityQueue) -> list[Any]:
    out = []
    while len(q):
        item, shutdown = q.get()
        assert not shutdown
        out.append(item)
        q.done(item)
    return out


# -- ordering ----------------------------------------------------------------


def test_low_priority_is_controller_runtimes() -> None:
    assert LOW_PRIORITY == -100


def test_highest_priority_first_fifo_within_a_priority() -> None:
    q = PriorityQueue()
    q.add_with_opts("low-1", priority=LOW_PRIORITY)
    q.add("normal-1")
    q.add_with_opts("high-1", priority=10)
    q.add_with_opts("low-2", priority=LOW_PRIORITY)
    q.add("normal-2")
    q.add_with_opts("high-2", priority=10)
    assert len(q) == 6
    assert _drain(q) == ["high-1", "high-2", "normal-1", "normal-2", "low-1", "low-2"]
    q.shut_down()


def test_get_with_priority() -> None:
    q = PriorityQueue()
    q.add_with_opts("a", priority=3)
    assert q.get_with_priority() == ("a", 3, False)
    q.done("a")
    q.shut_down()
    assert q.get_with_priority() == (None, 0, True)


def test_real_change_is_reconciled_before_a_10000_item_initial_backlog() -> None:
    q = PriorityQueue()
    for i in range(10_000):
        q.add_with_opts(f"default/cm-{i}", priority=LOW_PRIORITY)
    q.add("default/changed")
    assert len(q) == 10_001
    assert q.get() == ("default/changed", False)
    q.done("default/changed")
    # The backlog still comes out in list order.
    assert [q.get()[0] for _ in range(3)] == ["default/cm-0", "default/cm-1", "default/cm-2"]
    q.shut_down()


def test_adds_and_gets_are_logarithmic() -> None:
    """100k adds and gets stay well under what a linear insert (100k * 100k / 2) would take."""
    q = PriorityQueue()
    start = time.perf_counter()
    for i in range(100_000):
        q.add_with_opts(i, priority=i % 7)
    for _ in range(100_000):
        item, _ = q.get()
        q.done(item)
    assert time.perf_counter() - start < 20  # about 1 s; generous for a shared machine
    q.shut_down()


# -- de-duplication ----------------------------------------------------------


def test_duplicate_keeps_the_highest_priority() -> None:
    q = PriorityQueue()
    q.add_with_opts("x", priority=LOW_PRIORITY)
    q.add_with_opts("x", priority=5)
    q.add_with_opts("x", priority=1)  # lower: ignored
    assert len(q) == 1
    assert q.get_with_priority() == ("x", 5, False)
    q.done("x")
    assert len(q) == 0
    q.shut_down()


def test_raised_priority_goes_behind_the_entries_at_its_new_priority() -> None:
    """controller-runtime's lockedAddWithOpts gives a raised entry a new added
    counter: it is not handed out before entries already queued at that priority."""
    q = PriorityQueue()
    q.add_with_opts("a", priority=1)
    q.add_with_opts("b", priority=0)
    q.add_with_opts("c", priority=1)
    q.add_with_opts("b", priority=1)  # raised after c was queued at 1: behind c
    q.add_with_opts("a", priority=1)  # not raised: keeps its place
    assert _drain(q) == ["a", "c", "b"]
    q.shut_down()


def test_duplicate_keeps_the_shortest_delay(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    q.add_with_opts("x", after=10.0)
    q.add_with_opts("x", after=5.0)
    q.add_with_opts("x", after=20.0)  # later: ignored
    assert q._num_waiting() == 1
    clock.step_and_settle(4.9)
    assert len(q) == 0
    clock.step_and_settle(0.1)
    assert _drain(q) == ["x"]
    clock.step_and_settle(20.0)  # the stale 10 s and 20 s entries must not fire
    assert len(q) == 0
    assert q._num_waiting() == 0
    q.shut_down()


def test_add_without_delay_makes_a_waiting_item_ready_once(clock: Any) -> None:
    """Unlike DelayingQueue, the item is not processed again when its timer would fire."""
    q = PriorityQueue(clock=clock)
    q.add_after("x", 5.0)
    clock.step_and_settle(0)
    q.add("x")
    assert len(q) == 1
    assert q._num_waiting() == 0
    assert _drain(q) == ["x"]
    clock.step_and_settle(10.0)
    assert len(q) == 0
    q.shut_down()


def test_delayed_add_of_a_ready_item_keeps_it_ready(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    q.add("x")
    q.add_with_opts("x", after=5.0, priority=3)  # the priority still counts
    assert q._num_waiting() == 0
    assert q.get_with_priority() == ("x", 3, False)
    q.done("x")
    assert q._timer is None  # nothing was ever scheduled
    clock.step(10.0)
    assert len(q) == 0
    q.shut_down()


def test_waiting_item_keeps_its_raised_priority_when_ready(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    q.add_with_opts("x", after=1.0, priority=LOW_PRIORITY)
    q.add_with_opts("x", after=2.0, priority=7)  # longer delay ignored, priority raised
    q.add("y")
    clock.step_and_settle(1.0)
    assert q.get_with_priority() == ("x", 7, False)
    q.shut_down()


def test_delayed_items_ordered_by_priority_once_ready(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    q.add_with_opts("late-low", after=1.0, priority=LOW_PRIORITY)
    q.add_with_opts("later-high", after=2.0, priority=1)
    q.add("now")
    clock.step_and_settle(2.0)
    assert _drain(q) == ["later-high", "now", "late-low"]
    q.shut_down()


# -- processing: an item is handed to one worker at a time ---------------------


def test_add_while_processing_is_queued_once_at_done() -> None:
    q = PriorityQueue()
    q.add("x")
    assert q.get() == ("x", False)
    for _ in range(3):
        q.add("x")
    q.add_with_opts("x", priority=2)
    assert len(q) == 0  # not handed out while processing
    q.add("y")
    q.done("x")
    assert len(q) == 2
    # x is queued at done, behind y, but its raised priority puts it first.
    assert q.get_with_priority() == ("x", 2, False)
    q.done("x")
    assert _drain(q) == ["y"]
    q.shut_down()


def test_requeued_at_done_goes_behind_items_added_meanwhile() -> None:
    q = PriorityQueue()
    q.add("x")
    q.get()
    q.add("x")
    q.add("y")
    q.done("x")
    assert _drain(q) == ["y", "x"]
    q.shut_down()


def test_delayed_add_that_fires_while_processing_waits_for_done(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    q.add("x")
    q.get()
    q.add_after("x", 1.0)
    clock.step_and_settle(1.0)
    assert q._num_waiting() == 0
    assert len(q) == 0  # parked: x is still processing
    q.done("x")
    assert _drain(q) == ["x"]
    q.shut_down()


def test_done_for_an_item_not_processing_is_ignored() -> None:
    q = PriorityQueue()
    q.add("x")
    q.done("x")
    q.done("never")
    assert _drain(q) == ["x"]
    q.shut_down()


def test_get_blocks_until_an_item_is_added() -> None:
    q = PriorityQueue()
    got: list[tuple[Any, bool]] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    time.sleep(0.02)
    assert not got
    q.add("x")
    t.join(5)
    assert got == [("x", False)]
    q.shut_down()


def test_get_timeout() -> None:
    q = PriorityQueue()
    assert q.get(timeout=0.01) == (None, False)
    q.shut_down()


# -- rate limiting -------------------------------------------------------------


def test_add_rate_limited_uses_the_limiter(clock: Any) -> None:
    q = PriorityQueue(rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    q.add_rate_limited("x")  # 1 s
    q.add_rate_limited("x")  # 2 s: the shorter delay is kept
    assert q.num_requeues("x") == 2
    clock.step_and_settle(0.999)
    assert len(q) == 0
    clock.step_and_settle(0.001)
    assert _drain(q) == ["x"]
    q.forget("x")
    assert q.num_requeues("x") == 0
    q.shut_down()


def test_rate_limited_with_after_takes_the_shorter(clock: Any) -> None:
    q = PriorityQueue(rate_limiter=ItemExponentialFailureRateLimiter(10.0, 100.0), clock=clock)
    q.add_with_opts("x", after=2.0, rate_limited=True)  # limiter says 10 s
    q.add_with_opts("y", after=20.0, rate_limited=True)  # limiter says 10 s
    clock.step_and_settle(2.0)
    assert _drain(q) == ["x"]
    clock.step_and_settle(8.0)
    assert _drain(q) == ["y"]
    q.shut_down()


def test_default_rate_limiter_is_per_item_exponential_on_the_queue_clock(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    assert isinstance(q.rate_limiter, ItemExponentialFailureRateLimiter)
    assert [q.rate_limiter.when("x") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    q.shut_down()


def test_nan_delay_is_refused() -> None:
    q = PriorityQueue()
    with pytest.raises(ValueError):
        q.add_after("x", float("nan"))
    with pytest.raises(ValueError):
        q.add_with_opts("x", after=float("nan"))
    q.shut_down()


# -- shutdown ------------------------------------------------------------------


def test_shutdown_hands_out_nothing_more(clock: Any) -> None:
    """controller-runtime: once shut down, get reports shutdown at once, ready items or not."""
    q = PriorityQueue(clock=clock)
    q.add("a")
    q.add_with_opts("b", priority=1)
    q.add_after("later", 1.0)
    q.shut_down()
    assert q.shutting_down()
    q.add("ignored")
    q.add_rate_limited("ignored")
    assert q.get() == (None, True)
    assert q.get_with_priority(timeout=0) == (None, 0, True)
    assert len(q) == 2  # still queued, never handed out
    assert q._num_waiting() == 0  # delayed items are discarded
    clock.step(5.0)
    assert q.get() == (None, True)


def test_shutdown_wakes_blocked_getters() -> None:
    q = PriorityQueue()
    results: list[tuple[Any, bool]] = []
    threads = [threading.Thread(target=lambda: results.append(q.get())) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.02)
    q.shut_down()
    for t in threads:
        t.join(5)
    assert results == [(None, True)] * 3


def test_item_parked_before_shutdown_is_not_handed_out_after_done() -> None:
    q = PriorityQueue()
    q.add("x")
    q.get()
    q.add("x")
    q.shut_down()
    q.done("x")
    assert len(q) == 1
    assert q.get() == (None, True)


def test_shut_down_with_drain_waits_for_processing_items(wait_until: WaitUntil) -> None:
    q = PriorityQueue()
    q.add("x")
    q.add("y")  # ready, not handed out: not waited for
    q.get()
    drained = threading.Event()

    def drain() -> None:
        q.shut_down_with_drain()
        drained.set()

    t = threading.Thread(target=drain)
    t.start()
    wait_until(q.shutting_down)
    assert not drained.wait(0.05)
    q.done("x")
    assert drained.wait(5)
    t.join(5)


def test_shut_down_releases_a_pending_drain(wait_until: WaitUntil) -> None:
    q = PriorityQueue()
    q.add("x")
    q.get()
    t = threading.Thread(target=q.shut_down_with_drain)
    t.start()
    wait_until(q.shutting_down)
    q.shut_down()
    t.join(5)
    assert not t.is_alive()


def test_timer_thread_exits_when_the_queue_is_dropped(clock: Any, wait_until: WaitUntil) -> None:
    q = PriorityQueue(clock=clock)
    q.add_after("x", 100.0)
    clock.step_and_settle(0)
    timer = q._timer
    assert timer is not None and timer.is_alive()
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None
    timer.join(5)
    assert not timer.is_alive()


def test_timer_thread_exits_on_shutdown(clock: Any) -> None:
    q = PriorityQueue(clock=clock)
    q.add_after("x", 100.0)
    clock.step_and_settle(0)
    timer = q._timer
    assert timer is not None
    q.shut_down()
    timer.join(5)
    assert not timer.is_alive()


# -- concurrency -----------------------------------------------------------------


def test_thread_safety_smoke() -> None:
    """Producers add at random priorities while workers process: no item is held by two
    workers at once, and every item added is processed after its last add."""
    q = PriorityQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.0005, 0.002))
    keys = [f"k{i}" for i in range(50)]
    lock = threading.Lock()
    in_flight: set[str] = set()
    violations: list[str] = []
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    tick = iter(range(10**9))

    def producer(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(2_000):
            key = rnd.choice(keys)
            with lock:
                last_add[key] = next(tick)
            choice = rnd.random()
            if choice < 0.1:
                q.add_with_opts(key, after=0.001, priority=rnd.randint(-2, 2))
            elif choice < 0.15:
                q.add_rate_limited(key)
            else:
                q.add_with_opts(key, priority=rnd.choice([LOW_PRIORITY, 0, 1]))

    def worker() -> None:
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            with lock:
                if key in in_flight:
                    violations.append(key)
                in_flight.add(key)
                last_start[key] = next(tick)
            time.sleep(0)
            with lock:
                in_flight.discard(key)
            q.done(key)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(4)]
    producers = [threading.Thread(target=producer, args=(s,), daemon=True) for s in range(3)]
    for t in workers + producers:
        t.start()
    for t in producers:
        t.join(30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with lock:
            if all(last_start.get(k, -1) > last_add[k] for k in last_add):
                break
        time.sleep(0.01)
    q.shut_down_with_drain()
    for t in workers:
        t.join(5)
    assert not violations
    assert all(last_start.get(k, -1) > last_add[k] for k in last_add)


def test_drop_in_for_the_controller(wait_until: WaitUntil) -> None:
    """Controller's retry policy runs unchanged on a PriorityQueue."""
    from pycontroller.controller import Result

    q = PriorityQueue(rate_limiter=ItemExponentialFailureRateLimiter(0.001, 0.01))
    attempts: Counter[str] = Counter()
    lock = threading.Lock()

    def sync(key: str) -> Result | None:
        with lock:
            attempts[key] += 1
            n = attempts[key]
        if key == "ns/fails-once" and n == 1:
            raise RuntimeError("boom")
        if key == "ns/requeue" and n == 1:
            return Result(requeue_after=0.01)
        return None

    ctrl = Controller("priority-queue-test", q, sync)
    stop = threading.Event()
    t = threading.Thread(target=ctrl.run, args=(2, stop))
    t.start()
    q.add_with_opts("ns/backlog", priority=LOW_PRIORITY)
    q.add("ns/fails-once")
    q.add("ns/requeue")
    wait_until(lambda: attempts == Counter({"ns/backlog": 1, "ns/fails-once": 2, "ns/requeue": 2}))
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert q.shutting_down()


# -- metrics ---------------------------------------------------------------------


class _Metric:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = 0.0
        self.observations: list[float] = []

    def inc(self) -> None:
        with self.lock:
            self.value += 1

    def dec(self) -> None:
        with self.lock:
            self.value -= 1

    def set(self, value: float) -> None:
        with self.lock:
            self.value = value

    def observe(self, value: float) -> None:
        with self.lock:
            self.observations.append(value)


class _PlainProvider:
    """A provider without new_depth_metric_with_priority: all priorities in one gauge."""

    def __init__(self) -> None:
        self.depth = _Metric()
        self.adds = _Metric()
        self.latency = _Metric()
        self.duration = _Metric()
        self.retries = _Metric()

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self.depth

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self.adds

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self.latency

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self.duration

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _Metric()

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _Metric()

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self.retries


def test_metrics_without_priority_support(clock: Any) -> None:
    mp = _PlainProvider()
    q = PriorityQueue("pq", clock=clock, metrics_provider=mp)
    q.add("a")
    q.add("a")  # duplicate: not counted
    q.add_with_opts("b", priority=LOW_PRIORITY)
    q.add_after("c", 1.0)  # counted once ready
    assert (mp.adds.value, mp.depth.value, mp.retries.value) == (2, 2, 1)
    clock.step_and_settle(1.0)
    assert (mp.adds.value, mp.depth.value) == (3, 3)
    clock.step(0.5)
    assert [q.get()[0] for _ in range(2)] == ["a", "c"]
    assert mp.depth.value == 1
    # Queue time counts from the add, or from the time a delayed item became ready.
    assert mp.latency.observations == pytest.approx([1.5, 0.5])
    clock.step(0.25)
    q.done("a")
    assert mp.duration.observations == pytest.approx([0.25])
    q.shut_down()


def _sample(registry: CollectorRegistry, metric: str, **labels: str) -> float | None:
    return registry.get_sample_value(metric, labels)


def test_prometheus_depth_by_priority_beside_plain_queues(clock: Any) -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    pq = PriorityQueue("pq", clock=clock, metrics_provider=provider)
    plain = RateLimitingQueue(name="plain", clock=clock, metrics_provider=provider)
    plain.add("x")
    for i in range(3):
        pq.add_with_opts(f"list-{i}", priority=LOW_PRIORITY)
    pq.add("change")
    pq.add_with_opts("list-0", priority=1)  # raised: moves between series
    depth = "workqueue_depth"
    assert _sample(registry, depth, name="plain") == 1  # unchanged label set
    assert _sample(registry, depth, name="pq", priority="-100") == 2
    assert _sample(registry, depth, name="pq", priority="0") == 1
    assert _sample(registry, depth, name="pq", priority="1") == 1
    assert _sample(registry, depth, name="pq") is None  # no unlabelled series for it

    assert pq.get_with_priority() == ("list-0", 1, False)
    assert _sample(registry, depth, name="pq", priority="1") == 0
    pq.add_with_opts("y", after=1.0, priority=5)
    assert _sample(registry, depth, name="pq", priority="5") is None  # not ready yet
    clock.step_and_settle(1.0)
    assert _sample(registry, depth, name="pq", priority="5") == 1
    assert _sample(registry, "workqueue_adds_total", name="pq") == 5
    assert _sample(registry, "workqueue_retries_total", name="pq") == 1
    for q in (pq, plain):
        q.shut_down()


def test_unnamed_queue_records_nothing() -> None:
    mp = _PlainProvider()
    q = PriorityQueue(metrics_provider=mp)
    q.add("a")
    q.add_after("b", 10.0)
    q.get()
    q.done("a")
    assert (mp.adds.value, mp.depth.value, mp.retries.value) == (0, 0, 0)
    assert q._metrics_loop is None
    q.shut_down()


def test_not_a_queue_subclass_but_same_protocol() -> None:
    for method in ("add", "get", "done", "shut_down", "shut_down_with_drain", "shutting_down"):
        assert callable(getattr(PriorityQueue, method))
        assert hasattr(Queue, method)
    for method in ("add_after", "add_rate_limited", "forget", "num_requeues"):
        assert callable(getattr(PriorityQueue, method))
        assert hasattr(RateLimitingQueue, method)


def _key_at_stop(base: Any) -> type[Any]:
    """``base`` where, the moment the Controller stops (its stopping flag set, the queue
    not yet shut down), a key arrives and an idle worker takes it."""

    class KeyAtStop(base):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.handed_out: list[Any] = []

        def get(self, timeout: float | None = None) -> tuple[Any, bool]:
            item, shutdown = super().get(timeout)
            if not shutdown:
                self.handed_out.append(item)
            return item, shutdown

        def shut_down(self) -> None:
            if not self.shutting_down():
                self.add("ns/at-stop")
                deadline = time.monotonic() + 5
                while "ns/at-stop" not in self.handed_out and time.monotonic() < deadline:
                    time.sleep(0.001)
                assert "ns/at-stop" in self.handed_out
            super().shut_down()

    KeyAtStop.__name__ = f"{base.__name__}KeyAtStop"
    return KeyAtStop


@pytest.mark.parametrize(
    ("queue_class", "synced_at_stop"),
    [(_key_at_stop(PriorityQueue), True), (_key_at_stop(RateLimitingQueue), False)],
)
def test_controller_key_handed_out_at_the_moment_of_stop(
    queue_class: type[Any], synced_at_stop: bool, wait_until: WaitUntil
) -> None:
    """The race of a key added just as the Controller stops. A PriorityQueue hands out
    nothing after shut_down, so a key it handed out came before the cut and is synced:
    no key is ever released unsynced. A client-go queue keeps handing out after
    shut_down, so the Controller checks its stopping flag after get and releases such a
    key unsynced (acceptable: the next leader rebuilds it)."""
    q = queue_class()
    synced: list[str] = []

    def sync(key: str) -> None:
        synced.append(key)

    ctrl = Controller(f"key-at-stop-{queue_class.__name__}", q, sync)
    stop = threading.Event()
    returned: list[bool] = []
    t = threading.Thread(target=lambda: returned.append(ctrl.run(1, stop)))
    t.start()
    q.add("ns/first")
    wait_until(lambda: synced == ["ns/first"])
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert returned == [True]
    assert q.handed_out == ["ns/first", "ns/at-stop"]
    if synced_at_stop:
        assert synced == q.handed_out  # every key handed out was synced
    else:
        assert synced == ["ns/first"]  # released unsynced


def test_controller_stop_syncs_no_new_keys_and_leaves_the_backlog_queued(
    wait_until: WaitUntil,
) -> None:
    """The Controller's graceful shutdown on a PriorityQueue: in-flight syncs finish,
    nothing else is taken, the backlog stays queued and is never handed out."""
    q = PriorityQueue()
    release = threading.Event()
    lock = threading.Lock()
    started: list[str] = []
    finished: list[str] = []

    def sync(key: str) -> None:
        with lock:
            started.append(key)
        release.wait(30)
        with lock:
            finished.append(key)

    keys = [f"ns/k{i:03d}" for i in range(100)]
    for k in keys:
        q.add_with_opts(k, priority=LOW_PRIORITY)
    ctrl = Controller("priority-queue-stop", q, sync)
    stop = threading.Event()
    returned: list[bool] = []
    t = threading.Thread(target=lambda: returned.append(ctrl.run(3, stop)))
    t.start()
    wait_until(lambda: len(started) == 3, msg="three syncs in flight")
    stop.set()
    wait_until(q.shutting_down, msg="run to shut the queue down")
    q.add("ns/after-stop")  # ignored
    release.set()
    t.join(10)
    assert not t.is_alive()
    assert returned == [True]
    assert sorted(finished) == sorted(started) == keys[:3]
    assert len(q) == 97
    assert q.get() == (None, True)
