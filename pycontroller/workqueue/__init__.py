"""Work queues for controllers (client-go ``util/workqueue``).

``Queue`` -> ``DelayingQueue`` (``add_after``) -> ``RateLimitingQueue``
(``add_rate_limited``, ``forget``, ``num_requeues``), ``PriorityQueue`` (the
same methods plus ``add_with_opts(..., priority=)``; ``LOW_PRIORITY`` for
initial-list and resync events), the rate limiters, and
Prometheus metrics behind a provider protocol. To export queue metrics, call
``set_global_metrics_provider(PrometheusMetricsProvider())`` before creating
named queues.
"""

from __future__ import annotations

from pycontroller.workqueue.delaying_queue import DelayingQueue
from pycontroller.workqueue.metrics import (
    MetricsProvider,
    PrometheusMetricsProvider,
    set_global_metrics_provider,
)
from pycontroller.workqueue.priority_queue import LOW_PRIORITY, PriorityQueue
from pycontroller.workqueue.queue import Queue
from pycontroller.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from pycontroller.workqueue.rate_limiting_queue import RateLimitingQueue

# Plain sorted() order (pinned by tests/unit/workqueue/test_metrics.py), not ruff's
# isort-style order, which would put the LOW_PRIORITY constant first.
__all__ = [  # noqa: RUF022
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "LOW_PRIORITY",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "PriorityQueue",
    "PrometheusMetricsProvider",
    "Queue",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
    "set_global_metrics_provider",
]
