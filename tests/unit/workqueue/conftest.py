"""Shared fixtures for the workqueue tests: a counting fake clock and polling."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from pycontroller.clock import FakeClock
from pycontroller.testing.wait import wait_for
from pycontroller.workqueue.metrics import (
    NoopMetricsProvider,
    get_global_metrics_provider,
    set_global_metrics_provider,
)

WaitUntil = Callable[..., None]


def _wait_until(pred: Callable[[], bool], timeout: float = 5.0, msg: str = "") -> None:
    wait_for(pred, timeout, interval=0.001, what=msg or repr(pred))


class CountingClock(FakeClock):
    """A FakeClock that counts ``wait`` calls (each is one wake-up of a waiting loop)."""

    def __init__(self) -> None:
        super().__init__()
        self._count_lock = threading.Lock()
        self.wait_calls = 0

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        with self._count_lock:
            self.wait_calls += 1
        super().wait(cond, timeout)

    def step_and_settle(self, seconds: float, waiters: int = 1) -> None:
        """Step once ``waiters`` threads block on the clock; return once one waits again.

        A background loop that waits again has finished reacting to the step
        (it only calls ``wait`` after it has moved every due item).
        """
        _wait_until(lambda: self.waiters() >= waiters, msg="loop waiting on the clock")
        before = self.wait_calls
        self.step(seconds)
        _wait_until(lambda: self.wait_calls > before, msg="loop woke up and waited again")
        _wait_until(lambda: self.waiters() >= waiters, msg="loop waiting again")


@pytest.fixture
def clock() -> CountingClock:
    return CountingClock()


@pytest.fixture
def wait_until() -> WaitUntil:
    return _wait_until


@pytest.fixture(autouse=True)
def _restore_global_metrics_provider() -> Iterator[None]:
    before = get_global_metrics_provider()
    set_global_metrics_provider(NoopMetricsProvider())
    try:
        yield
    finally:
        set_global_metrics_provider(before)
