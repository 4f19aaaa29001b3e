"""Rate limiters for the rate-limiting queue (client-go ``default_rate_limiters.go``).

A rate limiter answers "how long should this item wait before it is retried?"
and keeps per-item failure history. Every ``when(item)`` call counts as one
attempt. Callers must call ``forget(item)`` when the item succeeds, or its
backoff never resets and its history is kept forever.

All limiters are thread-safe and take an optional keyword-only ``clock``
(only the token bucket reads it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Any, Protocol, runtime_checkable

from pycontroller.clock import Clock
from pycontroller.flowcontrol import TokenBucket

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
]


@runtime_checkable
class RateLimiter(Protocol):
    """The three methods a rate-limiting queue needs."""

    def when(self, item: Any) -> float:
        """Seconds ``item`` should wait now; records one more attempt."""
        ...

    def forget(self, item: Any) -> None:
        """Drop ``item``'s history: it succeeded (or is given up on)."""
        ...

    def num_requeues(self, item: Any) -> int:
        """How many attempts have been recorded for ``item`` since its last ``forget``."""
        ...


class _ItemFailures:
    """Per-item attempt counts: the history behind ``num_requeues`` and ``forget``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def _record(self, item: Any) -> int:
        """Count one more attempt for ``item``; return the attempts counted before it."""
        with self._lock:
            before = self._failures.get(item, 0)
            self._failures[item] = before + 1
        return before

    def num_requeues(self, item: Any) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: Any) -> None:
        with self._lock:
            self._failures.pop(item, None)


class ItemExponentialFailureRateLimiter(_ItemFailures):
    """Per-item exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    The n-th ``when`` (counting from 0 since the last ``forget``) returns
    ``min(base_delay * 2**n, max_delay)``. Large ``n`` never overflows: the
    result stays ``max_delay``.
    """

    def __init__(self, base_delay: float, max_delay: float, *, clock: Clock | None = None) -> None:
        super().__init__()
        self.base_delay = base_delay
        self.max_delay = max_delay

    def when(self, item: Any) -> float:
        exp = self._record(item)
        try:
            backoff = self.base_delay * math.ldexp(1.0, exp)
        except OverflowError:
            return self.max_delay
        if math.isnan(backoff) or backoff > self.max_delay:
            return self.max_delay
        return backoff


class ItemFastSlowRateLimiter(_ItemFailures):
    """``fast_delay`` for an item's first ``max_fast_attempts`` attempts, then ``slow_delay``."""

    def __init__(
        self,
        fast_delay: float,
        slow_delay: float,
        max_fast_attempts: int,
        *,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts

    def when(self, item: Any) -> float:
        attempts = self._record(item) + 1
        return self.fast_delay if attempts <= self.max_fast_attempts else self.slow_delay


class BucketRateLimiter:
    """A token bucket shared by all items: overall retry rate ``qps``, bursts of ``burst``.

    The bucket starts full and refills at ``qps`` tokens per clock second up to
    ``burst``. Every ``when`` takes a token, even when none is available: it then
    reserves a future one and returns the wait until it exists (the semantics of
    Go's ``rate.Limiter.Reserve().Delay()``). So with no time passing, the first
    ``burst`` calls return 0 and call ``burst + k`` returns ``k / qps``.
    ``qps = math.inf`` never delays. There is no per-item state:
    ``num_requeues`` is always 0 and ``forget`` does nothing.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be > 0, got {qps!r}")
        if burst < 1 and not math.isinf(qps):
            raise ValueError(f"burst must be >= 1, got {burst!r}")
        self.qps = qps
        self.burst = burst
        self._bucket = TokenBucket(qps, burst, clock=clock)

    def when(self, item: Any) -> float:
        return self._bucket.reserve()

    def num_requeues(self, item: Any) -> int:
        return 0

    def forget(self, item: Any) -> None:
        pass


class MaxOfRateLimiter:
    """The largest delay of several limiters; every limiter sees every attempt.

    ``num_requeues`` is the largest count among them; ``forget`` is passed to all.
    With no limiters, ``when`` is always 0.
    """

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters: tuple[RateLimiter, ...] = limiters

    def when(self, item: Any) -> float:
        longest = 0.0
        for limiter in self.limiters:
            delay = limiter.when(item)
            if delay > longest:
                longest = delay
        return longest

    def num_requeues(self, item: Any) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: Any) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter:
    """Caps another limiter's delay at ``max_delay`` (client-go ``WithMaxWaitRateLimiter``)."""

    def __init__(self, limiter: RateLimiter, max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: Any) -> float:
        return min(self.limiter.when(item), self.max_delay)

    def num_requeues(self, item: Any) -> int:
        return self.limiter.num_requeues(item)

    def forget(self, item: Any) -> None:
        self.limiter.forget(item)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's default: per-item exponential 5 ms .. 1000 s, overall 10 qps with burst 100.

    Per item: 5 ms, 10 ms, 20 ms, ... up to 1000 s. Overall: after a burst of
    100 retries, retries are spaced 100 ms apart.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0, clock=clock),
        BucketRateLimiter(10.0, 100, clock=clock),
    )
