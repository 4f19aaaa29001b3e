"""Workqueue metrics: client-go metrics_test.go cases and the Prometheus provider."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry

import pycontroller.workqueue as wq
from pycontroller.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    PrometheusMetricsProvider,
    Queue,
    RateLimitingQueue,
    set_global_metrics_provider,
)
from pycontroller.workqueue.metrics import (
    DURATION_BUCKETS,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    NoopMetricsProvider,
    SettableGaugeMetric,
    get_global_metrics_provider,
)

WaitUntil = Callable[..., None]


class _Metric:
    """Records every call; thread-safe because the metrics loop sets gauges."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value = 0.0
        self.observations: list[float] = []
        self.sets = 0

    def inc(self) -> None:
        with self.lock:
            self.value += 1

    def dec(self) -> None:
        with self.lock:
            self.value -= 1

    def set(self, value: float) -> None:
        with self.lock:
            self.value = value
            self.sets += 1

    def observe(self, value: float) -> None:
        with self.lock:
            self.observations.append(value)


class _FakeProvider:
    def __init__(self) -> None:
        self.depth = _Metric()
        self.adds = _Metric()
        self.latency = _Metric()
        self.duration = _Metric()
        self.unfinished = _Metric()
        self.longest = _Metric()
        self.retries = _Metric()
        self.names: list[str] = []

    def new_depth_metric(self, name: str) -> GaugeMetric:
        self.names.append(name)
        return self.depth

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self.adds

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self.latency

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self.duration

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self.unfinished

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self.longest

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self.retries


def test_metrics(clock: Any, wait_until: WaitUntil) -> None:
    mp = _FakeProvider()
    q = Queue("test", clock=clock, metrics_provider=mp, unfinished_work_update_period=0.001)
    assert mp.names == ["test"]
    q.add("foo")
    assert mp.adds.value == 1
    assert mp.depth.value == 1

    clock.step(50e-6)
    item, _ = q.get()
    assert mp.depth.value == 0
    assert mp.latency.observations == pytest.approx([50e-6])

    # Adds while processing count once: the item becomes dirty once.
    for _ in range(5):
        q.add(item)
    assert mp.adds.value == 2
    assert mp.depth.value == 1

    clock.step(25e-6)
    q.done(item)
    assert mp.duration.observations == pytest.approx([25e-6])
    assert mp.depth.value == 1  # re-queued by done, not counted again

    item, _ = q.get()
    assert mp.depth.value == 0
    assert mp.latency.observations == pytest.approx([50e-6, 25e-6])

    sets = mp.unfinished.sets
    clock.step(0.001)
    wait_until(lambda: mp.unfinished.sets > sets)
    assert mp.unfinished.value == pytest.approx(0.001)
    assert mp.longest.value == pytest.approx(0.001)

    q.done(item)
    assert mp.duration.observations == pytest.approx([25e-6, 0.001])
    q.shut_down()


def test_unfinished_work_sums_ages_and_reports_longest(clock: Any, wait_until: WaitUntil) -> None:
    mp = _FakeProvider()
    q = Queue("sum", clock=clock, metrics_provider=mp)  # default 0.5 s period
    q.add("a")
    q.add("b")
    q.get()
    clock.step(1.0)  # a: 1 s so far
    wait_until(lambda: mp.unfinished.sets == 1)
    assert mp.unfinished.value == pytest.approx(1.0)
    q.get()
    wait_until(lambda: clock.waiters() == 1)
    clock.step(0.5)  # a: 1.5 s, b: 0.5 s
    wait_until(lambda: mp.unfinished.sets == 2)
    assert mp.unfinished.value == pytest.approx(2.0)
    assert mp.longest.value == pytest.approx(1.5)
    q.done("a")
    q.done("b")
    wait_until(lambda: clock.waiters() == 1)
    clock.step(0.5)
    wait_until(lambda: mp.unfinished.sets == 3)
    assert mp.unfinished.value == 0.0
    assert mp.longest.value == 0.0
    q.shut_down()


def test_metric_shutdown(clock: Any, wait_until: WaitUntil) -> None:
    mp = _FakeProvider()
    q = Queue("test", clock=clock, metrics_provider=mp, unfinished_work_update_period=0.001)
    loop = q._metrics_loop
    assert loop is not None
    q.add("foo")
    q.get()
    clock.step(0.001)
    wait_until(lambda: mp.unfinished.sets >= 1)
    q.shut_down()
    loop._thread.join(5)
    assert not loop._thread.is_alive()
    sets = mp.unfinished.sets
    clock.step(10)
    assert mp.unfinished.sets == sets
    assert clock.waiters() == 0


def test_metrics_loop_exits_when_queue_is_dropped(clock: Any) -> None:
    import gc

    q = Queue("dropped", clock=clock, metrics_provider=_FakeProvider())
    loop = q._metrics_loop
    assert loop is not None
    del q
    gc.collect()
    loop._thread.join(5)
    assert not loop._thread.is_alive()
    assert loop._thread.daemon


def test_retries_counted_on_every_add_after(clock: Any) -> None:
    mp = _FakeProvider()
    q = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 10.0), "retry", clock=clock, metrics_provider=mp
    )
    q.add_after("a", 0)
    q.add_after("b", 5)
    q.add_rate_limited("c")
    q.add_rate_limited("c")
    assert mp.retries.value == 4
    assert mp.adds.value == 1  # only "a" is in the queue yet
    q.shut_down()
    q.add_after("d", 0)
    assert mp.retries.value == 4


def test_unnamed_queue_records_nothing(clock: Any) -> None:
    mp = _FakeProvider()
    q = RateLimitingQueue(name="", clock=clock, metrics_provider=mp)
    q.add("a")
    q.add_after("b", 1)
    item, _ = q.get()
    q.done(item)
    assert mp.names == []
    assert mp.adds.value == mp.depth.value == mp.retries.value == 0
    assert q._metrics is None and q._metrics_loop is None
    q.shut_down()


def test_noop_provider_is_the_default_and_records_nothing() -> None:
    assert isinstance(get_global_metrics_provider(), NoopMetricsProvider)
    q = Queue("named")
    assert q._metrics is None and q._metrics_loop is None


def test_global_provider_applies_to_queues_created_afterwards() -> None:
    mp = _FakeProvider()
    before = Queue("before")
    set_global_metrics_provider(mp)
    after = DelayingQueue("after")
    explicit = Queue("explicit", metrics_provider=NoopMetricsProvider())
    assert mp.names == ["after"]
    before.add(1)
    explicit.add(1)
    after.add(1)
    assert mp.adds.value == 1
    for q in (before, after, explicit):
        q.shut_down()


def _sample(registry: CollectorRegistry, metric: str, **labels: str) -> float | None:
    return registry.get_sample_value(metric, labels)


def test_prometheus_provider_names_units_and_labels(clock: Any, wait_until: WaitUntil) -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    a = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 1.0),
        "a",
        clock=clock,
        metrics_provider=provider,
        unfinished_work_update_period=1.0,
    )
    b = Queue("b", clock=clock, metrics_provider=PrometheusMetricsProvider(registry))
    a.add("x")
    a.add("y")
    b.add("x")
    assert _sample(registry, "workqueue_depth", name="a") == 2
    assert _sample(registry, "workqueue_depth", name="b") == 1
    assert _sample(registry, "workqueue_adds_total", name="a") == 2

    clock.step(0.25)
    item, _ = a.get()
    assert _sample(registry, "workqueue_depth", name="a") == 1
    assert _sample(registry, "workqueue_queue_duration_seconds_count", name="a") == 1
    assert _sample(registry, "workqueue_queue_duration_seconds_sum", name="a") == 0.25
    assert _sample(registry, "workqueue_queue_duration_seconds_bucket", name="a", le="1.0") == 1
    assert _sample(registry, "workqueue_queue_duration_seconds_bucket", name="a", le="0.1") == 0

    clock.step(2.0)
    wait_until(
        lambda: _sample(registry, "workqueue_unfinished_work_seconds", name="a") == 2.0,
        msg="unfinished work updated",
    )
    assert _sample(registry, "workqueue_longest_running_processor_seconds", name="a") == 2.0
    a.done(item)
    assert _sample(registry, "workqueue_work_duration_seconds_sum", name="a") == 2.0

    a.add_rate_limited("z")
    assert _sample(registry, "workqueue_retries_total", name="a") == 1
    for q in (a, b):
        q.shut_down()

    text = prometheus_client.generate_latest(registry).decode()
    for metric in (
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_work_duration_seconds_bucket",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries_total",
    ):
        assert f'{metric}{{name="a"}}' in text or f'{metric}{{le="1e-08",name="a"}}' in text
    assert 'name=""' not in text


def test_prometheus_buckets_like_client_go() -> None:
    assert list(DURATION_BUCKETS) == pytest.approx([1e-8 * 10**i for i in range(10)])
    registry = CollectorRegistry()
    q = Queue("buckets", metrics_provider=PrometheusMetricsProvider(registry))
    q.add(1)
    q.get()
    q.done(1)
    q.shut_down()
    text = prometheus_client.generate_latest(registry).decode()
    les = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("workqueue_work_duration_seconds_bucket")
    ]
    assert les == [
        "1e-08",
        "1e-07",
        "1e-06",
        "1e-05",
        "0.0001",
        "0.001",
        "0.01",
        "0.1",
        "1.0",
        "10.0",
        "+Inf",
    ]


def test_same_name_twice_and_providers_per_registry_coexist() -> None:
    r1, r2 = CollectorRegistry(), CollectorRegistry()
    q1 = Queue("dup", metrics_provider=PrometheusMetricsProvider(r1))
    q2 = Queue("dup", metrics_provider=PrometheusMetricsProvider(r1))
    q3 = Queue("dup", metrics_provider=PrometheusMetricsProvider(r2))
    q1.add(1)
    q2.add(1)
    q3.add(1)
    assert _sample(r1, "workqueue_depth", name="dup") == 2
    assert _sample(r2, "workqueue_depth", name="dup") == 1
    for q in (q1, q2, q3):
        q.shut_down()


def test_global_prometheus_provider_on_default_registry() -> None:
    """What the Balancer controller does: its /metrics then shows workqueue_depth."""
    set_global_metrics_provider(PrometheusMetricsProvider())
    set_global_metrics_provider(PrometheusMetricsProvider())  # safe to repeat
    q = RateLimitingQueue(name="balancer-test")
    q.add("default/lb")
    text = prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()
    assert 'workqueue_depth{name="balancer-test"} 1.0' in text
    q.get()
    q.done("default/lb")
    q.shut_down()


def test_public_api() -> None:
    assert wq.__all__ == sorted(wq.__all__)
    assert set(wq.__all__) == {
        "Queue",
        "DelayingQueue",
        "RateLimitingQueue",
        "PriorityQueue",
        "LOW_PRIORITY",
        "RateLimiter",
        "ItemExponentialFailureRateLimiter",
        "ItemFastSlowRateLimiter",
        "BucketRateLimiter",
        "MaxOfRateLimiter",
        "default_controller_rate_limiter",
        "MetricsProvider",
        "PrometheusMetricsProvider",
        "set_global_metrics_provider",
    }
    for name in wq.__all__:
        assert getattr(wq, name) is not None


def test_collectors_already_in_registry_are_reused() -> None:
    """A second copy of the metrics module (reload, importlib) must not crash on registration."""
    from pycontroller.workqueue.metrics import _PrometheusCollectors

    registry = CollectorRegistry()
    first = PrometheusMetricsProvider(registry)
    second_copy = _PrometheusCollectors(registry)  # what a reloaded module would build
    assert second_copy.depth is first._c.depth
    assert second_copy.adds is first._c.adds
    assert second_copy.retries is first._c.retries

    clash = CollectorRegistry()
    prometheus_client.Counter("workqueue_depth", "not a gauge", registry=clash)
    with pytest.raises(ValueError):
        PrometheusMetricsProvider(clash)
