"""Review: PriorityQueue depth-by-priority metrics against controller-runtime.

controller-runtime ``pkg/internal/metrics/workqueue.go`` (``depthWithPriorityMetric``)
caps the ``priority`` label of ``workqueue_depth`` at 25 distinct values per
queue; from the 26th distinct priority on, every update goes to the series
``priority="exceeded_cardinality_limit"``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from pycontroller.workqueue import PriorityQueue, PrometheusMetricsProvider

DEPTH = "workqueue_depth"


def _depth(registry: CollectorRegistry, **labels: str) -> float | None:
    return registry.get_sample_value(DEPTH, labels)


def _priority_series(registry: CollectorRegistry, name: str) -> set[str]:
    out = set()
    for family in registry.collect():
        if family.name != "workqueue_depth":
            continue
        for sample in family.samples:
            if sample.labels.get("name") == name and "priority" in sample.labels:
                out.add(sample.labels["priority"])
    return out


def test_priority_label_cardinality_is_capped_at_25_per_queue() -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    q = PriorityQueue("capped", metrics_provider=provider)
    for p in range(25):
        q.add_with_opts(f"item-{p}", priority=p)
    assert _priority_series(registry, "capped") == {str(p) for p in range(25)}

    # The 26th distinct priority, and every update after it, go to the placeholder.
    q.add_with_opts("item-25", priority=25)
    q.add_with_opts("item-26", priority=26)
    q.add_with_opts("again-0", priority=0)  # a priority seen before: placeholder too
    assert _depth(registry, name="capped", priority="exceeded_cardinality_limit") == 3
    assert _depth(registry, name="capped", priority="25") is None
    assert _depth(registry, name="capped", priority="26") is None
    assert _depth(registry, name="capped", priority="0") == 1  # frozen at its last value

    # A get (highest priority first: item-26) decrements the placeholder series.
    assert q.get_with_priority() == ("item-26", 26, False)
    assert _depth(registry, name="capped", priority="exceeded_cardinality_limit") == 2
    assert len(_priority_series(registry, "capped")) == 26
    q.shut_down()


def test_cardinality_is_counted_per_queue() -> None:
    registry = CollectorRegistry()
    provider = PrometheusMetricsProvider(registry)
    first = PriorityQueue("first", metrics_provider=provider)
    second = PriorityQueue("second", metrics_provider=provider)
    for p in range(20):
        first.add_with_opts(p, priority=p)
        second.add_with_opts(p, priority=100 + p)
    assert len(_priority_series(registry, "first")) == 20
    assert len(_priority_series(registry, "second")) == 20
    assert _depth(registry, name="first", priority="exceeded_cardinality_limit") is None
    assert _depth(registry, name="second", priority="exceeded_cardinality_limit") is None
    for q in (first, second):
        q.shut_down()
