"""A delaying queue that retries items with backoff (client-go ``rate_limiting_queue.go``).

The controller pattern: on a failed sync call ``add_rate_limited(key)``; on
success call ``forget(key)``, or the key's backoff keeps growing and the
limiter remembers it forever. ``forget`` only clears the failure history: it
does not remove the key from the queue.
"""

from __future__ import annotations

from typing import Any

from pycontroller.clock import Clock
from pycontroller.workqueue.delaying_queue import DelayingQueue
from pycontroller.workqueue.metrics import DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD, MetricsProvider
from pycontroller.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]


class RateLimitingQueue(DelayingQueue):
    """A ``DelayingQueue`` whose ``add_rate_limited`` delay comes from a ``RateLimiter``.

    ``rate_limiter`` defaults to ``default_controller_rate_limiter()`` on the
    queue's clock. The limiter may be shared with other code, but its history
    is then shared too.
    """

    def __init__(
        self,
        rate_limiter: RateLimiter | None = None,
        name: str = "",
        *,
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        unfinished_work_update_period: float = DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD,
    ) -> None:
        super().__init__(
            name,
            clock=clock,
            metrics_provider=metrics_provider,
            unfinished_work_update_period=unfinished_work_update_period,
        )
        self.rate_limiter: RateLimiter = (
            rate_limiter
            if rate_limiter is not None
            else default_controller_rate_limiter(clock=self._clock)
        )

    def add_rate_limited(self, item: Any) -> None:
        """Add ``item`` after the delay the rate limiter gives it (one more attempt)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Any) -> None:
        """Reset ``item``'s backoff; call it when the item was processed successfully."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Any) -> int:
        """Attempts recorded for ``item`` since its last ``forget``."""
        return self.rate_limiter.num_requeues(item)
