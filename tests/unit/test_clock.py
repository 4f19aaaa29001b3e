from __future__ import annotations

import threading
from collections.abc import Callable

from pycontroller.clock import FakeClock
from pycontroller.testing.wait import wait_for


def _poll(cond: Callable[[], bool], timeout: float = 5.0) -> bool:
    return wait_for(cond, timeout, interval=0.001)


def test_step_between_now_and_wait_is_not_lost() -> None:
    clock = FakeClock()
    cond = threading.Condition()
    with cond:
        deadline = clock.now() + 10
        # Another thread steps past the deadline after we looked at the time
        # but before we wait: wait must return instead of blocking forever.
        t = threading.Thread(target=clock.step, args=(10,))
        t.start()
        t.join()
        clock.wait(cond, deadline - 0)
        assert clock.now() >= deadline


def test_step_wakes_a_blocked_waiter() -> None:
    clock = FakeClock()
    cond = threading.Condition()
    woke = threading.Event()

    def waiter() -> None:
        with cond:
            deadline = clock.now() + 5
            while clock.now() < deadline:
                clock.wait(cond, deadline - clock.now())
        woke.set()

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    assert _poll(lambda: clock.waiters() == 1)
    clock.step(4)
    assert not woke.wait(0.05)
    clock.step(1)
    assert woke.wait(5)


def test_sleep_returns_on_step_or_stop() -> None:
    clock = FakeClock()
    stop = threading.Event()
    results: list[bool] = []
    t = threading.Thread(target=lambda: results.append(clock.sleep(3, stop)), daemon=True)
    t.start()
    assert _poll(lambda: clock.waiters() == 1)
    clock.step(3)
    t.join(5)
    assert results == [False]
    t = threading.Thread(target=lambda: results.append(clock.sleep(3, stop)), daemon=True)
    t.start()
    assert _poll(lambda: clock.waiters() == 1)
    stop.set()
    t.join(5)
    assert results == [False, True]
