"""DelayingQueue: client-go delaying_queue_test.go cases on a fake clock, plus no-spin checks."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pycontroller.clock import RealClock
from pycontroller.workqueue import DelayingQueue

WaitUntil = Callable[..., None]


def _drain(q: DelayingQueue) -> list[Any]:
    out = []
    while len(q):
        item, shutdown = q.get()
        assert not shutdown
        out.append(item)
        q.done(item)
    return out


def test_simple_queue(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 0.050)
    clock.step_and_settle(0)  # the loop is running and has looked at the clock
    assert len(q) == 0
    clock.step_and_settle(0.060)
    assert len(q) == 1
    assert q.get() == ("foo", False)
    q.done("foo")
    clock.step_and_settle(10)
    assert len(q) == 0
    q.shut_down()


def test_ready_exactly_when_clock_reaches_ready_time(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    clock.step_and_settle(0.999)
    assert len(q) == 0
    clock.step_and_settle(0.001)
    assert len(q) == 1
    q.shut_down()


def test_deduping_earliest_ready_time_wins(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 0.050)
    q.add_after("foo", 0.070)  # later: ignored
    assert q._num_waiting() == 1
    clock.step_and_settle(0.060)
    assert _drain(q) == ["foo"]
    clock.step_and_settle(0.020)
    assert len(q) == 0

    q.add_after("foo", 0.050)
    q.add_after("foo", 0.030)  # earlier: wins
    assert q._num_waiting() == 1
    clock.step_and_settle(0.040)
    assert _drain(q) == ["foo"]
    clock.step_and_settle(0.020)  # the stale 50 ms entry must not fire
    assert len(q) == 0
    assert q._num_waiting() == 0
    q.shut_down()


def test_add_two_fire_early(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    q.add_after("bar", 0.050)
    clock.step_and_settle(0.060)
    assert _drain(q) == ["bar"]
    q.add_after("baz", 2.0)
    clock.step_and_settle(1.0)
    assert _drain(q) == ["foo"]
    clock.step_and_settle(2.0)
    assert _drain(q) == ["baz"]
    q.shut_down()


def test_ready_items_come_out_in_ready_time_order(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    q.add_after("bar", 0.500)
    q.add_after("baz", 0.250)
    clock.step_and_settle(2.0)
    assert len(q) == 3
    assert _drain(q) == ["baz", "bar", "foo"]
    q.shut_down()


def test_many_items_fire_in_order(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    delays = [((i * 7919) % 100 + 1) / 10 for i in range(100)]  # distinct 0.1 .. 10.0
    for i, d in enumerate(delays):
        q.add_after(i, d)
    clock.step_and_settle(10.0)
    expected = [i for _, i in sorted((d, i) for i, d in enumerate(delays))]
    assert _drain(q) == expected
    q.shut_down()


def test_non_positive_delay_adds_at_once(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("zero", 0)
    q.add_after("negative", -5)
    assert len(q) == 2
    # No timer thread was needed.
    assert q._waiting_loop._thread is None
    assert _drain(q) == ["zero", "negative"]
    q.shut_down()


def test_waiting_and_queued_are_independent(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    q.add("foo")
    assert _drain(q) == ["foo"]
    clock.step_and_settle(1.0)
    assert _drain(q) == ["foo"]
    q.shut_down()


def test_shut_down_discards_waiting_and_ignores_later_adds(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    clock.step_and_settle(0)
    q.shut_down()
    q._waiting_loop._thread.join(5)  # type: ignore[union-attr]
    assert not q._waiting_loop._thread.is_alive()  # type: ignore[union-attr]
    q.add_after("bar", 0)
    q.add_after("baz", 1.0)
    clock.step(5)
    assert len(q) == 0
    assert q._num_waiting() == 0
    assert q.get() == (None, True)


def test_shut_down_with_drain_stops_timer(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("foo", 1.0)
    q.add("now")
    item, _ = q.get()
    t = threading.Thread(target=q.shut_down_with_drain, daemon=True)
    t.start()
    q._waiting_loop._thread.join(5)  # type: ignore[union-attr]
    assert q._num_waiting() == 0
    q.done(item)
    t.join(5)
    assert not t.is_alive()


def test_idle_loop_does_not_spin(clock: Any, wait_until: WaitUntil) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("far", 3600)
    wait_until(lambda: clock.waiters() == 1)
    calls = clock.wait_calls
    time.sleep(0.05)
    assert clock.wait_calls == calls == 1
    # A later entry does not wake the loop; an earlier one does, once.
    q.add_after("later", 7200)
    time.sleep(0.02)
    assert clock.wait_calls == 1
    q.add_after("sooner", 60)
    wait_until(lambda: clock.wait_calls == 2)
    time.sleep(0.02)
    assert clock.wait_calls == 2
    # Each clock step wakes it exactly once.
    for _ in range(5):
        clock.step_and_settle(1)
    assert clock.wait_calls == 7
    # Nothing left: it waits without a deadline, still without spinning.
    clock.step_and_settle(7200)
    assert len(q) == 3
    calls = clock.wait_calls
    time.sleep(0.02)
    assert clock.wait_calls == calls
    q.shut_down()


class _CountingRealClock(RealClock):
    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        self.timeouts.append(timeout)
        super().wait(cond, timeout)


def test_real_clock_waits_for_the_time_to_the_next_item(wait_until: WaitUntil) -> None:
    clock = _CountingRealClock()
    q = DelayingQueue(clock=clock)
    q.add_after("far", 60)
    wait_until(lambda: len(clock.timeouts) == 1)
    time.sleep(0.05)
    assert len(clock.timeouts) == 1
    timeout = clock.timeouts[0]
    assert timeout is not None and 59 < timeout <= 60
    q.add_after("soon", 0.02)
    wait_until(lambda: len(q) == 1)
    assert q.get() == ("soon", False)
    q.shut_down()


def test_add_after_from_many_threads(clock: Any, wait_until: WaitUntil) -> None:
    q = DelayingQueue(clock=clock)

    def schedule(base: int) -> None:
        for i in range(100):
            q.add_after(base + i, 1 + i / 100)

    threads = [threading.Thread(target=schedule, args=(b * 1000,)) for b in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert q._num_waiting() == 800
    clock.step_and_settle(2)
    assert sorted(_drain(q)) == sorted(b * 1000 + i for b in range(8) for i in range(100))
    q.shut_down()


def test_dropped_queue_stops_its_timer_thread(clock: Any, wait_until: WaitUntil) -> None:
    import gc

    q = DelayingQueue(clock=clock)
    q.add_after("x", 10)
    thread = q._waiting_loop._thread
    assert thread is not None
    del q
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()


@pytest.mark.parametrize("delay", [0.0, 1e-9, 1e9])
def test_extreme_delays(clock: Any, delay: float) -> None:
    q = DelayingQueue(clock=clock)
    q.add_after("x", delay)
    if delay > 0:
        clock.step_and_settle(delay)
    assert _drain(q) == ["x"]
    q.shut_down()


def test_infinite_delay_waits_until_shutdown(wait_until: WaitUntil) -> None:
    clock = _CountingRealClock()
    q = DelayingQueue(clock=clock)
    q.add_after("never", math.inf)
    q.add_after("soon", 0.001)
    wait_until(lambda: len(q) == 1)
    assert q.get() == ("soon", False)
    # Only "never" is left: the loop waits the capped maximum, not inf.
    wait_until(lambda: bool(clock.timeouts) and clock.timeouts[-1] == 86_400)
    assert q._num_waiting() == 1
    q.shut_down()
    thread = q._waiting_loop._thread
    assert thread is not None
    thread.join(5)
    assert not thread.is_alive()


def test_nan_delay_is_rejected(clock: Any) -> None:
    q = DelayingQueue(clock=clock)
    with pytest.raises(ValueError):
        q.add_after("x", math.nan)
    assert q._num_waiting() == 0


def test_timer_thread_dropping_the_last_reference_does_not_deadlock(clock: Any) -> None:
    """The timer thread holds a strong reference to the queue while it moves due items;
    when that is the last one, the queue's finalizer (which stops the timer loop) runs in
    the timer thread itself, under the loop's lock. With a non-reentrant lock it
    deadlocked there; the thread must exit instead."""
    import gc
    import weakref

    in_add = threading.Event()
    dropped = threading.Event()

    class SlowAdd(DelayingQueue):
        def add(self, item: Any) -> None:
            super().add(item)
            in_add.set()
            assert dropped.wait(5)  # the test drops its reference meanwhile

    q = SlowAdd(clock=clock)
    q.add_after("x", 1.0)
    thread = q._waiting_loop._thread
    assert thread is not None
    ref = weakref.ref(q)
    clock.step(1.0)
    assert in_add.wait(5), "the timer thread did not move the due item"
    del q
    gc.collect()
    assert ref() is not None  # the timer thread's reference is the last one
    dropped.set()  # add returns; the timer thread drops the last reference
    thread.join(5)
    assert ref() is None
    assert not thread.is_alive(), "the timer thread deadlocked in the queue's finalizer"
