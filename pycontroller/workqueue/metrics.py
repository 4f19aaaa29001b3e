"""Workqueue metrics behind a small provider protocol (client-go ``workqueue/metrics.go``).

A queue asks a ``MetricsProvider`` for one metric object per measurement when it
is created, labelled by the queue's name. The default provider is a no-op;
``PrometheusMetricsProvider`` plugs in prometheus-client. Queues created with an
empty name, or while the no-op provider is in effect, record nothing and pay
nothing (their internal metrics object is ``None``).

Metric names, units and update rules are client-go's (subsystem ``workqueue``,
label ``name``):

- ``workqueue_depth``: +1 on every ``add`` that marks an item dirty (also while
  the item is being processed), -1 on every ``get``. A ``PriorityQueue``
  records its depth per priority: its series carry a second label,
  ``priority`` (controller-runtime's ``MetricsProviderWithPriority``), when
  its provider has ``new_depth_metric_with_priority``; otherwise it records
  the plain series. Like controller-runtime, a queue gets at most 25
  distinct ``priority`` values; after that its updates go to
  ``priority="exceeded_cardinality_limit"``.
- ``workqueue_adds_total``: +1 on every ``add`` that marks an item dirty.
- ``workqueue_queue_duration_seconds``: at ``get``, seconds since the first
  ``add`` after the previous ``get`` of that item.
- ``workqueue_work_duration_seconds``: at ``done``, seconds since the ``get``.
- ``workqueue_unfinished_work_seconds`` and
  ``workqueue_longest_running_processor_seconds``: set periodically (every 0.5 s
  by default, never after shutdown) to the sum and the maximum of the ages of
  the items being processed.
- ``workqueue_retries_total``: +1 on every ``add_after`` (so every
  ``add_rate_limited``) of a delaying queue.

``set_global_metrics_provider`` is client-go's ``SetProvider``: queues created
afterwards use that provider unless they are given one explicitly. Unlike
client-go, a later call replaces the provider (for queues created after it);
queues that already exist keep the provider they were built with.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import prometheus_client

from pycontroller._metrics import register

if TYPE_CHECKING:
    from pycontroller.clock import Clock


__all__ = [
    "CounterMetric",
    "DepthMetricWithPriority",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsProvider",
    "MetricsProviderWithPriority",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "SettableGaugeMetric",
    "get_global_metrics_provider",
    "set_global_metrics_provider",
]

# Default period of the unfinished-work / longest-running gauge updates.
DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD = 0.5

# client-go: prometheus.ExponentialBuckets(10e-9, 10, 10) = 1e-8 ... 10.
DURATION_BUCKETS: tuple[float, ...] = tuple(10.0**e for e in range(-8, 2))


class GaugeMetric(Protocol):
    """A gauge moved up and down by one (``workqueue_depth``)."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    """A gauge set to an absolute value (the unfinished-work gauges)."""

    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    """A monotonically increasing counter (adds, retries)."""

    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    """A distribution of observed durations in seconds."""

    def observe(self, value: float) -> None: ...


class MetricsProvider(Protocol):
    """Creates the metric objects of one named queue.

    Each method is called once per queue construction with the queue's name.
    Two queues with the same name may ask for the same metric: a provider must
    return a usable object both times (sharing one is fine), never raise.
    """

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...


class DepthMetricWithPriority(Protocol):
    """The depth gauge of a priority queue, moved by one at a given priority."""

    def inc(self, priority: int) -> None: ...

    def dec(self, priority: int) -> None: ...


@runtime_checkable
class MetricsProviderWithPriority(MetricsProvider, Protocol):
    """A provider that can label a priority queue's depth by priority.

    controller-runtime's ``MetricsProviderWithPriority``. A ``PriorityQueue``
    whose provider lacks ``new_depth_metric_with_priority`` records its depth
    in the plain ``new_depth_metric`` gauge, all priorities together.
    """

    def new_depth_metric_with_priority(self, name: str) -> DepthMetricWithPriority: ...


class _NoopMetric:
    """Accepts every metric call and records nothing."""

    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


_NOOP_METRIC = _NoopMetric()


class NoopMetricsProvider:
    """The default provider: queues built with it record no metrics at all."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC


_C = TypeVar("_C", bound=prometheus_client.metrics.MetricWrapperBase)


def _register(
    registry: prometheus_client.CollectorRegistry,
    cls: type[_C],
    name: str,
    documentation: str,
    **kwargs: Any,
) -> _C:
    """One collector labelled ``name`` in ``registry`` (reused if already there)."""
    return register(cls, name, documentation, ["name"], registry=registry, **kwargs)


class _DepthGauge(prometheus_client.Gauge):
    """``workqueue_depth``: the plain series (label ``name``) of the queues, plus
    the series of priority queues (labels ``name`` and ``priority``).

    controller-runtime gives every series of its gauge a ``priority`` label,
    empty for the queues without priorities. Here the series of the other
    queues keep exactly the label set they always had (``{name="..."}``, which
    dashboards and alerts select on) and only priority queues add the label:
    one metric family whose samples have two label sets, which the exposition
    formats and Prometheus accept. The priority series live in a dict beside
    the labelled children and are appended to the family in ``collect``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Set before the base class registers the collector (registration may collect).
        self._priority_lock = threading.Lock()
        self._priority_depths: dict[tuple[str, str], float] = {}
        super().__init__(*args, **kwargs)

    def move_priority(self, name: str, priority: str, amount: float) -> None:
        """Add ``amount`` to the series ``{name=name, priority=priority}``."""
        key = (name, priority)
        with self._priority_lock:
            self._priority_depths[key] = self._priority_depths.get(key, 0.0) + amount

    def collect(self) -> Iterable[prometheus_client.Metric]:
        families = list(super().collect())
        with self._priority_lock:
            depths = sorted(self._priority_depths.items())
        if depths:
            family = families[0]
            for (name, priority), value in depths:
                family.add_sample(family.name, {"name": name, "priority": priority}, value)
        return families


# controller-runtime (pkg/internal/metrics/workqueue.go, depthWithPriorityMetric):
# a priority queue's depth gets one series per priority for at most this many
# distinct priorities; from the first priority beyond it on, every update of
# that queue goes to the series labelled with the placeholder.
_MAX_RECOMMENDED_UNIQUE_PRIORITIES = 25
_PRIORITY_CARDINALITY_EXCEEDED = "exceeded_cardinality_limit"


class _PriorityDepth:
    """One priority queue's view of ``_DepthGauge``: ``inc``/``dec`` at a priority.

    Bounds the label's cardinality like controller-runtime: once the queue has
    used more than ``_MAX_RECOMMENDED_UNIQUE_PRIORITIES`` distinct priorities,
    all its later updates (of any priority) move the single series
    ``priority="exceeded_cardinality_limit"``; the series recorded before keep
    their last values.
    """

    __slots__ = ("_gauge", "_lock", "_name", "_observed")

    def __init__(self, gauge: _DepthGauge, name: str) -> None:
        self._gauge = gauge
        self._name = name
        self._lock = threading.Lock()
        # None once the limit is reached.
        self._observed: set[int] | None = set()

    def _label(self, priority: int) -> str:
        with self._lock:
            observed = self._observed
            if observed is None:
                return _PRIORITY_CARDINALITY_EXCEEDED
            observed.add(priority)
            if len(observed) > _MAX_RECOMMENDED_UNIQUE_PRIORITIES:
                self._observed = None
                return _PRIORITY_CARDINALITY_EXCEEDED
        return str(priority)

    def inc(self, priority: int) -> None:
        self._gauge.move_priority(self._name, self._label(priority), 1.0)

    def dec(self, priority: int) -> None:
        self._gauge.move_priority(self._name, self._label(priority), -1.0)


class _PrometheusCollectors:
    """The seven labelled collectors registered once in one registry."""

    def __init__(self, registry: prometheus_client.CollectorRegistry) -> None:
        self.depth = _register(
            registry,
            _DepthGauge,
            "workqueue_depth",
            "Current depth of the workqueue.",
        )
        self.adds = _register(
            registry,
            prometheus_client.Counter,
            "workqueue_adds_total",
            "Total number of adds handled by the workqueue.",
        )
        self.latency = _register(
            registry,
            prometheus_client.Histogram,
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in the workqueue before being requested.",
            buckets=DURATION_BUCKETS,
        )
        self.work_duration = _register(
            registry,
            prometheus_client.Histogram,
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from the workqueue takes.",
            buckets=DURATION_BUCKETS,
        )
        self.unfinished_work = _register(
            registry,
            prometheus_client.Gauge,
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress that work_duration has not observed yet. "
            "Large values indicate stuck threads; the rate at which it grows is "
            "the number of stuck threads.",
        )
        self.longest_running = _register(
            registry,
            prometheus_client.Gauge,
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor of the workqueue has been running.",
        )
        self.retries = _register(
            registry,
            prometheus_client.Counter,
            "workqueue_retries_total",
            "Total number of retries handled by the workqueue.",
        )


class PrometheusMetricsProvider:
    """Workqueue metrics in a prometheus-client registry, labelled ``name``.

    Install it for every queue created afterwards with
    ``set_global_metrics_provider(PrometheusMetricsProvider())``. The collectors
    are registered in ``registry`` on first use of that registry and reused by
    every later provider for the same registry, so constructing it twice is
    safe. A collector of the same type already registered under a workqueue
    metric name (this module loaded twice) is reused; one of another type makes
    the constructor raise prometheus-client's duplicate-name ``ValueError``.
    """

    def __init__(
        self, registry: prometheus_client.CollectorRegistry = prometheus_client.REGISTRY
    ) -> None:
        self.registry = registry
        # register() hands back the collectors a previous provider (or a
        # reloaded module) registered, so every provider on a registry shares them.
        self._c = _PrometheusCollectors(registry)

    def new_depth_metric(self, name: str) -> GaugeMetric:
        child: GaugeMetric = self._c.depth.labels(name=name)
        return child

    def new_depth_metric_with_priority(self, name: str) -> DepthMetricWithPriority:
        return _PriorityDepth(self._c.depth, name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        child: CounterMetric = self._c.adds.labels(name=name)
        return child

    def new_latency_metric(self, name: str) -> HistogramMetric:
        child: HistogramMetric = self._c.latency.labels(name=name)
        return child

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        child: HistogramMetric = self._c.work_duration.labels(name=name)
        return child

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        child: SettableGaugeMetric = self._c.unfinished_work.labels(name=name)
        return child

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        child: SettableGaugeMetric = self._c.longest_running.labels(name=name)
        return child

    def new_retries_metric(self, name: str) -> CounterMetric:
        child: CounterMetric = self._c.retries.labels(name=name)
        return child


_global_lock = threading.Lock()
_global_provider: MetricsProvider = NoopMetricsProvider()


def set_global_metrics_provider(provider: MetricsProvider) -> None:
    """Use ``provider`` for every queue created from now on without an explicit one.

    Queues that already exist are not affected. Typically called once at start-up:
    ``set_global_metrics_provider(PrometheusMetricsProvider())``.
    """
    global _global_provider
    with _global_lock:
        _global_provider = provider


def get_global_metrics_provider() -> MetricsProvider:
    """The provider a queue created now without ``metrics_provider=`` would use."""
    with _global_lock:
        return _global_provider


class _UnlabelledDepth:
    """A priority queue's depth in a provider's plain gauge: priorities are dropped."""

    __slots__ = ("_gauge",)

    def __init__(self, gauge: GaugeMetric) -> None:
        self._gauge = gauge

    def inc(self, priority: int) -> None:
        self._gauge.inc()

    def dec(self, priority: int) -> None:
        self._gauge.dec()


NOOP_GAUGE: GaugeMetric = _NOOP_METRIC


def new_priority_depth_metric(provider: MetricsProvider, name: str) -> DepthMetricWithPriority:
    """The depth metric of priority queue ``name``: by priority when ``provider`` can."""
    if isinstance(provider, MetricsProviderWithPriority):
        return provider.new_depth_metric_with_priority(name)
    return _UnlabelledDepth(provider.new_depth_metric(name))


def resolve_provider(name: str, provider: MetricsProvider | None) -> MetricsProvider | None:
    """The provider queue ``name`` records with, or None when it records nothing.

    ``provider=None`` means the global provider at the time of the call. An
    empty name or the no-op provider records nothing.
    """
    if not name:
        return None
    if provider is None:
        provider = get_global_metrics_provider()
    if isinstance(provider, NoopMetricsProvider):
        return None
    return provider


class QueueMetrics:
    """The per-queue recorder (client-go ``defaultQueueMetrics``).

    Not thread-safe on its own: every method is called under the owning queue's
    lock, which also guards ``_add_times`` and ``_processing_start_times``.
    """

    __slots__ = (
        "_add_times",
        "_adds",
        "_clock",
        "_depth",
        "_latency",
        "_longest_running",
        "_processing_start_times",
        "_unfinished_work",
        "_work_duration",
    )

    def __init__(
        self,
        name: str,
        provider: MetricsProvider,
        clock: Clock,
        *,
        depth: GaugeMetric | None = None,
    ) -> None:
        self._clock = clock
        # A priority queue passes a no-op here and keeps its depth per priority
        # (new_priority_depth_metric), so that it creates no plain depth series.
        self._depth = depth if depth is not None else provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._unfinished_work = provider.new_unfinished_work_seconds_metric(name)
        self._longest_running = provider.new_longest_running_processor_seconds_metric(name)
        # item -> time of the first add since its last get
        self._add_times: dict[Any, float] = {}
        # item -> time it was handed out by get
        self._processing_start_times: dict[Any, float] = {}

    def add(self, item: Any) -> None:
        self._adds.inc()
        self._depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def get(self, item: Any) -> None:
        self._depth.dec()
        now = self._clock.now()
        self._processing_start_times[item] = now
        started = self._add_times.pop(item, None)
        if started is not None:
            self._latency.observe(now - started)

    def done(self, item: Any) -> None:
        started = self._processing_start_times.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.now() - started)

    def update_unfinished_work(self) -> None:
        now = self._clock.now()
        total = 0.0
        oldest = 0.0
        for started in self._processing_start_times.values():
            age = now - started
            total += age
            if age > oldest:
                oldest = age
        self._unfinished_work.set(total)
        self._longest_running.set(oldest)
