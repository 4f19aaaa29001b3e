"""Rate limiters: client-go default_rate_limiters_test.go cases plus the token bucket."""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest

from pycontroller.clock import FakeClock
from pycontroller.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from pycontroller.workqueue.rate_limiters import WithMaxWaitRateLimiter

MS = 0.001


def test_exponential() -> None:
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1.0)
    assert [limiter.when("one") for _ in range(5)] == pytest.approx(
        [1 * MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS]
    )
    assert limiter.num_requeues("one") == 5
    assert limiter.when("two") == pytest.approx(1 * MS)
    assert limiter.when("two") == pytest.approx(2 * MS)
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(1 * MS)
    assert limiter.num_requeues("two") == 2


def test_exponential_caps_at_max() -> None:
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1.0)
    delays = [limiter.when("x") for _ in range(20)]
    assert delays[9] == pytest.approx(0.512)
    assert delays[10:] == [1.0] * 10


def test_exponential_overflow() -> None:
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1000.0)
    for _ in range(5):
        limiter.when("one")
    assert limiter.when("one") == pytest.approx(32 * MS)
    for _ in range(1000):
        limiter.when("overflow1")
    assert limiter.when("overflow1") == 1000.0

    limiter = ItemExponentialFailureRateLimiter(60.0, 1000 * 3600.0)
    limiter.when("two")
    limiter.when("two")
    assert limiter.when("two") == pytest.approx(240.0)
    for _ in range(1000):
        limiter.when("overflow2")
    assert limiter.when("overflow2") == 1000 * 3600.0


@pytest.mark.parametrize("base", [0.0, 1e-300, 1.0, 1e300])
def test_exponential_never_overflows(base: float) -> None:
    limiter = ItemExponentialFailureRateLimiter(base, 5.0)
    limiter._failures["x"] = 10**6
    delay = limiter.when("x")
    assert math.isfinite(delay)
    assert 0 <= delay <= 5.0
    assert limiter.num_requeues("x") == 10**6 + 1


def test_fast_slow() -> None:
    limiter = ItemFastSlowRateLimiter(5 * MS, 10.0, 3)
    assert [limiter.when("one") for _ in range(5)] == [5 * MS, 5 * MS, 5 * MS, 10.0, 10.0]
    assert limiter.num_requeues("one") == 5
    assert [limiter.when("two") for _ in range(2)] == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of() -> None:
    limiter = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(5 * MS, 3.0, 3),
        ItemExponentialFailureRateLimiter(1 * MS, 1.0),
    )
    assert [limiter.when("one") for _ in range(5)] == pytest.approx(
        [5 * MS, 5 * MS, 5 * MS, 3.0, 3.0]
    )
    assert limiter.num_requeues("one") == 5
    assert [limiter.when("two") for _ in range(2)] == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of_calls_every_limiter_and_reports_largest_count() -> None:
    fast_slow = ItemFastSlowRateLimiter(0.0, 0.0, 1)
    exponential = ItemExponentialFailureRateLimiter(1 * MS, 1.0)
    limiter = MaxOfRateLimiter(fast_slow, exponential)
    for _ in range(3):
        limiter.when("x")
    assert fast_slow.num_requeues("x") == 3
    assert exponential.num_requeues("x") == 3
    assert limiter.num_requeues("x") == 3
    assert MaxOfRateLimiter().when("x") == 0.0
    assert MaxOfRateLimiter().num_requeues("x") == 0


class _StepLimiter:
    """``first`` for the first ``n`` calls, ``then`` afterwards."""

    def __init__(self, first: float, then: float, n: int) -> None:
        self.first, self.then, self.n, self.calls = first, then, n, 0

    def when(self, item: Any) -> float:
        self.calls += 1
        return self.first if self.calls <= self.n else self.then

    def forget(self, item: Any) -> None:
        self.calls = 0

    def num_requeues(self, item: Any) -> int:
        return self.calls


def test_with_max_wait() -> None:
    limiter = WithMaxWaitRateLimiter(_StepLimiter(5 * MS, 1000.0, 100), 500.0)
    assert {limiter.when("one") for _ in range(100)} == {5 * MS}
    assert {limiter.when("one") for _ in range(100)} == {500.0}
    assert limiter.num_requeues("one") == 200
    limiter.forget("one")
    assert limiter.when("one") == 5 * MS


def test_bucket_burst_then_spacing_without_time_passing() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10, 100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    assert limiter.when("one") == pytest.approx(0.1)
    assert limiter.when("two") == pytest.approx(0.2)
    assert limiter.when("one") == pytest.approx(0.3)  # shared by all items
    assert limiter.num_requeues("one") == 0
    limiter.forget("one")  # no per-item state
    assert limiter.when("three") == pytest.approx(0.4)


def test_bucket_refills_up_to_burst() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10, 5, clock=clock)
    for _ in range(5):
        assert limiter.when("x") == 0.0
    assert limiter.when("x") == pytest.approx(0.1)  # reserved a future token: -1
    clock.step(0.35)  # -1 + 3.5 = 2.5 tokens
    assert limiter.when("x") == 0.0
    assert limiter.when("x") == 0.0
    assert limiter.when("x") == pytest.approx(0.05)
    clock.step(3600)  # refills to the burst, not beyond
    assert [limiter.when("x") for _ in range(5)] == [0.0] * 5
    assert limiter.when("x") == pytest.approx(0.1)


def test_bucket_ignores_clock_going_backwards() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(1, 1, clock=clock)
    assert limiter.when("x") == 0.0
    clock.step(-10)
    assert limiter.when("x") == pytest.approx(1.0)


def test_bucket_validation_and_infinite_rate() -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(0, 10)
    with pytest.raises(ValueError):
        BucketRateLimiter(10, 0)
    limiter = BucketRateLimiter(math.inf, 0)
    assert [limiter.when("x") for _ in range(1000)] == [0.0] * 1000


def test_default_controller_rate_limiter() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    per_item = [limiter.when("one") for _ in range(20)]
    assert per_item[:3] == pytest.approx([0.005, 0.010, 0.020])
    assert per_item[17] == pytest.approx(655.36)
    assert per_item[18:] == [1000.0, 1000.0]
    assert limiter.num_requeues("one") == 20
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    # 20 of the 100 burst tokens are used; 80 more items get only their
    # per-item delay...
    assert [limiter.when(i) for i in range(80)] == pytest.approx([0.005] * 80)
    # ...then the bucket spaces retries 100 ms apart.
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.when("b") == pytest.approx(0.2)


def test_limiters_satisfy_protocol() -> None:
    for limiter in (
        ItemExponentialFailureRateLimiter(1, 2),
        ItemFastSlowRateLimiter(1, 2, 3),
        BucketRateLimiter(1, 1),
        MaxOfRateLimiter(),
        WithMaxWaitRateLimiter(MaxOfRateLimiter(), 1),
        default_controller_rate_limiter(),
    ):
        assert isinstance(limiter, RateLimiter)


@pytest.mark.parametrize(
    "limiter",
    [
        ItemExponentialFailureRateLimiter(1 * MS, 1.0),
        ItemFastSlowRateLimiter(1 * MS, 1.0, 10),
        MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(1 * MS, 1.0), BucketRateLimiter(1e6, 10**6)
        ),
    ],
    ids=["exponential", "fast_slow", "max_of"],
)
def test_counts_are_exact_under_concurrency(limiter: RateLimiter) -> None:
    def hammer() -> None:
        for _ in range(500):
            limiter.when("shared")

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert limiter.num_requeues("shared") == 4000
