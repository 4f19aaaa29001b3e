"""The exported metrics, scraped from a real registry, against client-go /
controller-runtime: names, types, label names, buckets (seconds), and when
they move. Divergences left in place are strict xfails naming the upstream
behaviour."""

from __future__ import annotations

from typing import Any

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pycontroller.clock import FakeClock
from pycontroller.controller import Controller, Result, TerminalError
from pycontroller.workqueue import PrometheusMetricsProvider, RateLimitingQueue


def _scrape(registry: Any = prometheus_client.REGISTRY) -> dict[str, Any]:
    text = prometheus_client.generate_latest(registry).decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def _value(families: dict[str, Any], sample: str, **labels: str) -> float | None:
    for family in families.values():
        for s in family.samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return None


def _buckets(families: dict[str, Any], name: str, **labels: str) -> list[float]:
    return sorted(
        float(s.labels["le"])
        for s in families[name].samples
        if s.name == f"{name}_bucket"
        and s.labels["le"] != "+Inf"
        and all(s.labels.get(k) == v for k, v in labels.items())
    )


# client-go util/workqueue + component-base workqueue provider (DESIGN pins client-go's
# label set: `name` only, not controller-runtime's `name`+`controller`).
_WORKQUEUE = {
    # family name (as the parser reports it) -> (type, labels)
    "workqueue_depth": ("gauge", {"name"}),
    "workqueue_adds": ("counter", {"name"}),
    "workqueue_queue_duration_seconds": ("histogram", {"name"}),
    "workqueue_work_duration_seconds": ("histogram", {"name"}),
    "workqueue_unfinished_work_seconds": ("gauge", {"name"}),
    "workqueue_longest_running_processor_seconds": ("gauge", {"name"}),
    "workqueue_retries": ("counter", {"name"}),
}


def test_workqueue_metrics_names_types_labels_buckets_and_updates() -> None:
    registry = prometheus_client.CollectorRegistry()
    clock = FakeClock()
    q = RateLimitingQueue(
        name="audit", clock=clock, metrics_provider=PrometheusMetricsProvider(registry)
    )
    try:
        q.add("a")
        q.add("a")  # already dirty: not an add
        clock.step(2.0)
        item, _ = q.get()
        clock.step(3.0)
        q.done(item)
        q.add_after("b", 0)  # a retry, and an add
        fam = _scrape(registry)
        for name, (kind, labels) in _WORKQUEUE.items():
            assert fam[name].type == kind, name
            for s in fam[name].samples:
                assert set(s.labels) - {"le"} == labels, (name, s.labels)
        # ExponentialBuckets(10e-9, 10, 10): 1e-8 ... 10 seconds.
        want = [10.0**e for e in range(-8, 2)]
        for name in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
            assert _buckets(fam, name) == pytest.approx(want)
        assert _value(fam, "workqueue_adds_total", name="audit") == 2
        assert _value(fam, "workqueue_depth", name="audit") == 1
        assert _value(fam, "workqueue_retries_total", name="audit") == 1
        assert _value(fam, "workqueue_queue_duration_seconds_sum", name="audit") == 2.0
        assert _value(fam, "workqueue_work_duration_seconds_sum", name="audit") == 3.0
    finally:
        q.shut_down()


def test_retry_after_shutdown_is_not_counted() -> None:
    """client-go's AddAfter returns before metrics.retry() once shutting down."""
    registry = prometheus_client.CollectorRegistry()
    q = RateLimitingQueue(name="audit-down", metrics_provider=PrometheusMetricsProvider(registry))
    q.shut_down()
    q.add_after("x", 0)
    assert _value(_scrape(registry), "workqueue_retries_total", name="audit-down") == 0


# controller-runtime pkg/internal/controller/metrics/metrics.go
_RECONCILE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
                      0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0,
                      4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60]  # fmt: skip


def _run_controller(name: str, outcomes: list[Any]) -> dict[str, Any]:
    queue = RateLimitingQueue(name="")

    def sync(key: str) -> Result | None:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome  # type: ignore[no-any-return]

    ctrl = Controller(name, queue, sync)
    n = len(outcomes)
    for i in range(n):
        queue.add(f"k{i}")
    for _ in range(n):
        assert ctrl.process_next_work_item()
    queue.shut_down()
    return _scrape()


def test_controller_runtime_metrics_and_results() -> None:
    name = "audit-ctrl"
    fam = _run_controller(
        name,
        [
            None,
            Result(requeue=True),
            Result(requeue_after=5.0),
            RuntimeError("boom"),
            TerminalError("bad spec"),
        ],
    )
    types = {
        "controller_runtime_reconcile": "counter",
        "controller_runtime_reconcile_errors": "counter",
        "controller_runtime_terminal_reconcile_errors": "counter",
        "controller_runtime_reconcile_time_seconds": "histogram",
        "controller_runtime_max_concurrent_reconciles": "gauge",
        "controller_runtime_active_workers": "gauge",
    }
    for metric, kind in types.items():
        assert fam[metric].type == kind, metric
    for result, count in (("success", 1), ("requeue", 1), ("requeue_after", 1), ("error", 2)):
        got = _value(fam, "controller_runtime_reconcile_total", controller=name, result=result)
        assert got == count, result
    # errors_total counts terminal errors too; terminal_reconcile_errors_total only those.
    assert _value(fam, "controller_runtime_reconcile_errors_total", controller=name) == 2
    assert _value(fam, "controller_runtime_terminal_reconcile_errors_total", controller=name) == 1
    assert _value(fam, "controller_runtime_reconcile_time_seconds_count", controller=name) == 5
    assert _value(fam, "controller_runtime_active_workers", controller=name) == 0
    assert _buckets(fam, "controller_runtime_reconcile_time_seconds", controller=name) == (
        pytest.approx(_RECONCILE_BUCKETS)
    )


def test_reconcile_panics_total_is_exported() -> None:
    """controller-runtime exports it, at 0 per controller from the start."""
    fam = _run_controller("audit-panics", [None])
    assert _value(fam, "controller_runtime_reconcile_panics_total", controller="audit-panics") == 0


def test_rest_client_requests_total_shape() -> None:
    import pycontroller.client  # noqa: F401  (registers the collectors)

    fam = _scrape()
    assert fam["rest_client_requests"].type == "counter"
    assert fam["rest_client_request_duration_seconds"].type == "histogram"
    text = prometheus_client.generate_latest().decode()
    assert (
        "# HELP rest_client_requests_total Number of HTTP requests, partitioned by status "
        "code, method, and host." in text
    )


def test_rest_client_request_duration_buckets() -> None:
    """client-go (component-base restclient): 0.005 .. 60 s."""
    from pycontroller.client import _LATENCY

    _LATENCY.labels("GET", "audit-host").observe(0.01)
    fam = _scrape()
    got = _buckets(fam, "rest_client_request_duration_seconds", host="audit-host")
    assert got == [0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0]


def test_informer_metric_shapes() -> None:
    import pycontroller.cache.informer_metrics  # noqa: F401

    fam = _scrape()
    for name, kind in (
        ("informer_queued_items", "gauge"),
        ("informer_processing_latency_seconds", "histogram"),
        ("informer_store_resource_version", "gauge"),
    ):
        assert fam[name].type == kind
        assert fam[name].documentation
