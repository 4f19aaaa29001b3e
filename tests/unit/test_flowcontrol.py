from __future__ import annotations

import math

import prometheus_client
import pytest

from pycontroller import controller
from pycontroller._metrics import register
from pycontroller.clock import FakeClock
from pycontroller.flowcontrol import TokenBucket


def test_reserve_burst_then_spacing_without_time_passing() -> None:
    bucket = TokenBucket(10, 3, clock=FakeClock())
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)


def test_refill_is_capped_at_burst_and_never_runs_backwards() -> None:
    clock = FakeClock()
    bucket = TokenBucket(2, 2, clock=clock)
    assert bucket.try_accept() and bucket.try_accept()
    assert not bucket.try_accept()
    clock.step(0.5)  # one token
    assert bucket.try_accept()
    assert not bucket.try_accept(now=clock.now() - 10)  # an old reading adds nothing
    clock.step(100)
    assert [bucket.try_accept() for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize("qps", [math.inf, 0, -1])
def test_unlimited(qps: float) -> None:
    bucket = TokenBucket(qps, 1, clock=FakeClock())
    assert all(bucket.reserve() == 0.0 for _ in range(100))
    assert all(bucket.try_accept() for _ in range(100))


def test_register_reuses_a_collector_of_the_same_type() -> None:
    registry = prometheus_client.CollectorRegistry()
    first = register(prometheus_client.Counter, "things_total", "d", ["a"], registry=registry)
    again = register(prometheus_client.Counter, "things_total", "d", ["a"], registry=registry)
    assert again is first
    with pytest.raises(ValueError):
        register(prometheus_client.Gauge, "things_total", "d", ["a"], registry=registry)


def test_controller_metrics_survive_a_second_registration() -> None:
    again = register(
        prometheus_client.Counter,
        "controller_runtime_reconcile_total",
        "x",
        ["controller", "result"],
    )
    assert again is controller.RECONCILE_TOTAL
