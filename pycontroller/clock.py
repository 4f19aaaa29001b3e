"""Clocks: the seam that lets tests step time instead of sleeping.

Every component whose behaviour depends on time (delaying queue, rate
limiters, reflector backoff and resync, leader election, event correlation,
queue metrics) takes a ``Clock``. Production code uses ``RealClock``; tests
pass a ``FakeClock`` and call ``step``.

Two kinds of time are exposed:

- ``now()``: monotonic seconds, for deadlines and durations;
- ``time()``: seconds since the Unix epoch, for timestamps written to objects.

Waiting always goes through the clock (``wait`` on a condition the caller
holds, or ``sleep`` with a stop event) so that a ``FakeClock.step`` wakes the
waiter at once. Callers must re-check their predicate after ``wait`` returns:
wake-ups may be spurious.
"""

from __future__ import annotations

import threading
import time as _time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def time(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Wait on ``cond`` (held by the caller) for at most ``timeout`` clock seconds."""
        ...

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        """Sleep ``seconds`` clock seconds; return True early if ``stop`` is set."""
        ...


class RealClock:
    """The wall and monotonic clocks of the process."""

    def now(self) -> float:
        return _time.monotonic()

    def time(self) -> float:
        return _time.time()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is not None and timeout <= 0:
            return
        cond.wait(timeout)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        if stop is None:
            if seconds > 0:
                _time.sleep(seconds)
            return False
        return stop.wait(max(seconds, 0.0))


REAL_CLOCK = RealClock()


class FakeClock:
    """A clock that only moves when a test calls ``step`` or ``set``.

    ``wait`` and ``sleep`` block until the fake time reaches their deadline;
    ``step`` wakes every waiter so it re-checks. ``waiters()`` tells a test how
    many threads are currently blocked on this clock, so it can step time only
    once the code under test is actually waiting.

    No lost wake-ups: callers read ``now()``, decide, then ``wait``. If a
    ``step`` lands between the two, ``wait`` returns at once, because each
    thread remembers the clock generation its last ``now()`` saw.
    """

    # Real seconds a blocked sleeper waits before re-checking its stop event.
    _STOP_POLL = 0.01

    def __init__(self, start: float = 1_000.0, epoch: float = 1_700_000_000.0) -> None:
        self._lock = threading.Lock()
        self._now = start
        # Bumped by every step/set; a waiter whose last now() saw an older
        # generation must not block (time moved after it looked).
        self._generation = 0
        self._seen = threading.local()
        self._epoch_offset = epoch - start
        self._conds: dict[int, tuple[threading.Condition, int]] = {}
        self._sleep_cond = threading.Condition()
        self._sleepers = 0

    def now(self) -> float:
        with self._lock:
            self._seen.generation = self._generation
            return self._now

    def time(self) -> float:
        with self._lock:
            self._seen.generation = self._generation
            return self._now + self._epoch_offset

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            self._generation += 1
        self._notify()

    def set(self, now: float) -> None:
        with self._lock:
            self._now = now
            self._generation += 1
        self._notify()

    def waiters(self) -> int:
        with self._lock:
            return sum(n for _, n in self._conds.values()) + self._sleepers

    def _notify(self) -> None:
        with self._lock:
            conds = [c for c, _ in self._conds.values()]
        for cond in conds:
            with cond:
                cond.notify_all()
        with self._sleep_cond:
            self._sleep_cond.notify_all()

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        if timeout is not None and timeout <= 0:
            return
        key = id(cond)
        with self._lock:
            if getattr(self._seen, "generation", self._generation) != self._generation:
                # Time moved since this thread last read it: let it re-check.
                self._seen.generation = self._generation
                return
            c, n = self._conds.get(key, (cond, 0))
            self._conds[key] = (c, n + 1)
        try:
            # Returns on the caller's own notify or on any step(); the caller
            # re-checks its deadline against now().
            cond.wait()
        finally:
            with self._lock:
                c, n = self._conds[key]
                if n <= 1:
                    del self._conds[key]
                else:
                    self._conds[key] = (c, n - 1)

    def sleep(self, seconds: float, stop: threading.Event | None = None) -> bool:
        deadline = self.now() + seconds
        with self._sleep_cond:
            with self._lock:
                self._sleepers += 1
            try:
                while self.now() < deadline:
                    if stop is not None and stop.is_set():
                        return True
                    self._sleep_cond.wait(self._STOP_POLL if stop is not None else None)
            finally:
                with self._lock:
                    self._sleepers -= 1
        return stop is not None and stop.is_set()
