"""``wait_for``: poll a condition until it holds or a deadline passes.

Tests of controllers and informers observe asynchronous effects; this is
the one polling helper they share (gomega's ``Eventually`` in Go tests).
It needs nothing beyond the standard library, so importing it does not pull
in the embedded API server's extra dependencies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["wait_for"]

T = TypeVar("T")


def wait_for(
    cond: Callable[[], T],
    timeout: float = 10.0,
    *,
    interval: float = 0.02,
    what: str = "condition",
) -> T:
    """Call ``cond()`` every ``interval`` seconds until it returns a truthy
    value, and return that value.

    ``cond`` is always called at least once, and once more at the deadline
    (so a slow machine that wakes up late still gets a last chance). If no
    call returned a truthy value by ``timeout`` seconds, raises
    ``AssertionError`` naming ``what`` and the last value returned. An
    exception raised by ``cond`` propagates at once (wrap it if a transient
    error should count as "not yet").
    """
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {what}; last value: {value!r}"
            )
        time.sleep(min(interval, left) if interval > 0 else 0)
