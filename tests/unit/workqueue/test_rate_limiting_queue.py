"""RateLimitingQueue: client-go rate_limiting_queue_test.go plus the controller retry pattern."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from pycontroller.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)

WaitUntil = Callable[..., None]
MS = 0.001


def _ready_at(q: RateLimitingQueue, item: Any) -> float:
    return q._waiting_loop._entries[item][0]


def test_rate_limiting_queue(clock: Any) -> None:
    limiter = ItemExponentialFailureRateLimiter(1 * MS, 1.0)
    q = RateLimitingQueue(limiter, clock=clock)
    assert isinstance(q, DelayingQueue)
    start = clock.now()

    q.add_rate_limited("one")
    assert _ready_at(q, "one") == pytest.approx(start + 1 * MS)
    q.add_rate_limited("one")  # +2 ms: later, so the +1 ms entry stays
    assert _ready_at(q, "one") == pytest.approx(start + 1 * MS)
    assert q.num_requeues("one") == 2

    q.add_rate_limited("two")
    assert _ready_at(q, "two") == pytest.approx(start + 1 * MS)
    q.add_rate_limited("two")
    assert q.num_requeues("two") == 2

    q.forget("one")
    assert q.num_requeues("one") == 0
    assert q.num_requeues("two") == 2
    assert limiter.when("one") == pytest.approx(1 * MS)  # the next delay starts over

    clock.step_and_settle(1 * MS)
    assert sorted([q.get()[0], q.get()[0]]) == ["one", "two"]
    q.shut_down()


def test_delays_grow_with_each_failure(clock: Any) -> None:
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), clock=clock)
    for expected_delay in (1.0, 2.0, 4.0):
        q.add_rate_limited("k")
        clock.step_and_settle(expected_delay - 0.5)
        assert len(q) == 0
        clock.step_and_settle(0.5)
        assert len(q) == 1
        item, _ = q.get()
        q.done(item)
    assert q.num_requeues("k") == 3
    q.forget("k")
    q.add_rate_limited("k")
    clock.step_and_settle(1.0)
    assert len(q) == 1
    q.shut_down()


def test_default_rate_limiter_uses_queue_clock(clock: Any) -> None:
    q = RateLimitingQueue(clock=clock)
    assert isinstance(q.rate_limiter, MaxOfRateLimiter)
    start = clock.now()
    q.add_rate_limited("x")
    assert _ready_at(q, "x") == pytest.approx(start + 0.005)
    clock.step_and_settle(0.005)
    assert q.get() == ("x", False)
    q.shut_down()


def test_forget_does_not_remove_item_from_queue() -> None:
    q = RateLimitingQueue()
    q.add("x")
    q.forget("x")
    assert len(q) == 1
    q.shut_down()


def test_add_rate_limited_after_shutdown_is_ignored(clock: Any) -> None:
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.0, 0.0), clock=clock)
    q.shut_down()
    q.add_rate_limited("x")
    assert len(q) == 0
    assert q.get() == (None, True)


def test_controller_retry_pattern(clock: Any, wait_until: WaitUntil) -> None:
    """Workers fail each key twice, then succeed; each key is synced exactly three times."""
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.010, 1.0), clock=clock)
    keys = [f"default/obj-{i}" for i in range(30)]
    attempts: Counter[str] = Counter()
    in_flight: set[str] = set()
    violations: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            with lock:
                if key in in_flight:
                    violations.append(key)
                in_flight.add(key)
                attempts[key] += 1
                fail = attempts[key] < 3
            if fail:
                q.add_rate_limited(key)
            else:
                q.forget(key)
            with lock:
                in_flight.discard(key)
            q.done(key)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(4)]
    for t in workers:
        t.start()
    for key in keys:
        q.add(key)

    def settled(n: int) -> bool:
        with lock:
            return all(attempts[k] == n for k in keys) and q._num_waiting() == 30 * (n < 3)

    wait_until(lambda: settled(1))
    clock.step_and_settle(0.010)  # first retry after 10 ms
    wait_until(lambda: settled(2))
    clock.step_and_settle(0.015)  # second retry is 20 ms after the first
    assert all(attempts[k] == 2 for k in keys)
    clock.step_and_settle(0.0051)
    wait_until(lambda: settled(3))
    q.shut_down_with_drain()
    for t in workers:
        t.join(5)
        assert not t.is_alive()
    assert violations == []
    assert all(q.num_requeues(k) == 0 for k in keys)
