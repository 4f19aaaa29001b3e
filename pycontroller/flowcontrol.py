"""Token buckets: the one rate-limiting primitive of the library.

Used by the workqueue's ``BucketRateLimiter`` (overall retry rate), the
client's request throttle (QPS/burst, like client-go's ``flowcontrol``) and
the event recorder's spam filter. Semantics are those of Go's
``x/time/rate`` limiter: the bucket starts full with ``burst`` tokens and
refills at ``qps`` tokens per clock second, never above ``burst``.

- ``reserve()`` always takes a token, going into debt when none is left, and
  returns how long the caller must wait before using it: with no time
  passing, the first ``burst`` calls return 0 and call ``burst + k`` returns
  ``k / qps``. Waiting callers are therefore served in order and the long-run
  rate never exceeds ``qps``.
- ``try_accept()`` takes a token only if one is available now.

``qps`` that is infinite or ``<= 0`` means "unlimited" (callers that must
reject such values validate before constructing). Thread-safe. A clock read
that is older than one already seen never moves the bucket backwards.
"""

from __future__ import annotations

import math
import threading

from pycontroller.clock import REAL_CLOCK, Clock


class TokenBucket:
    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        self.qps = float(qps)
        self.burst = int(burst)
        self.unlimited = math.isinf(self.qps) or self.qps <= 0
        self._clock: Clock = clock if clock is not None else REAL_CLOCK
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def _refill_locked(self, now: float) -> None:
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now

    def reserve(self, now: float | None = None) -> float:
        """Take a token and return the seconds to wait before using it (0 if available)."""
        if self.unlimited:
            return 0.0
        if now is None:
            now = self._clock.now()
        with self._lock:
            self._refill_locked(now)
            self._tokens -= 1.0
            tokens = self._tokens
        return 0.0 if tokens >= 0 else -tokens / self.qps

    def try_accept(self, now: float | None = None) -> bool:
        """Take a token if one is available now; never blocks, never goes into debt."""
        if self.unlimited:
            return True
        if now is None:
            now = self._clock.now()
        with self._lock:
            self._refill_locked(now)
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False
