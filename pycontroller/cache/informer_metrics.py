"""Informer metrics (KEP-4346, client-go 1.36's alpha ``informer_*`` metrics).

Names, help texts and labels (``name``, ``group``, ``version``, ``resource``)
are client-go's:

- ``informer_queued_items`` (gauge): items currently queued in the FIFO;
- ``informer_processing_latency_seconds`` (histogram): time taken to process
  what was popped from the queue (here one observation per popped batch of up
  to ``POP_BATCH`` keys: indexer updates plus handing the notifications to the
  listeners, as client-go's ``HandleDeltas``);
- ``informer_store_resource_version`` (gauge): the 15 least significant digits
  of the resourceVersion the store has reached.

The two gauges are read when scraped (``set_function``), so the informer's hot
path pays nothing for them; the callables hold the informer weakly, and
``InformerMetrics.release`` (called when the informer stops) removes its series.
As in client-go, only an informer that knows its resource (``ListWatch.from_client``
records it) publishes; a second informer with the same name and resource
replaces the first one's gauges.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from prometheus_client import Gauge, Histogram

from .._metrics import register

__all__ = ["InformerMetrics"]

_LABELS = ("name", "group", "version", "resource")

_QUEUED = register(
    Gauge, "informer_queued_items", "Number of items currently queued in the FIFO.", _LABELS
)
_LATENCY = register(
    Histogram,
    "informer_processing_latency_seconds",
    "Time taken to process events after popping from the queue.",
    _LABELS,
    buckets=(
        0.0001,
        0.00025,
        0.0005,
        0.001,
        0.0025,
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.25,
        0.5,
        1,
        2.5,
        5,
        10,
    ),  # fmt: skip
)
_STORE_RV = register(
    Gauge,
    "informer_store_resource_version",
    "The 15 least significant digits of the resource version of the store.",
    _LABELS,
)

_RV_MODULUS = 10**15


def _rv_value(rv: str) -> float:
    try:
        return float(int(rv) % _RV_MODULUS)
    except ValueError:
        return 0.0


class InformerMetrics:
    """The series of one informer. ``queue_len`` and ``store_rv`` are called at
    scrape time; they receive the owner (held weakly) and return 0 / "" once
    it is gone."""

    def __init__(
        self,
        owner: Any,
        name: str,
        gvr: tuple[str, str, str],
        queue_len: Callable[[Any], int],
        store_rv: Callable[[Any], str],
    ) -> None:
        self._labels = (name, *gvr)
        ref = weakref.ref(owner)

        def queued() -> float:
            o = ref()
            return float(queue_len(o)) if o is not None else 0.0

        def resource_version() -> float:
            o = ref()
            return _rv_value(store_rv(o)) if o is not None else 0.0

        _QUEUED.labels(*self._labels).set_function(queued)
        _STORE_RV.labels(*self._labels).set_function(resource_version)
        self.observe_processing = _LATENCY.labels(*self._labels).observe

    def release(self) -> None:
        """Remove this informer's series (idempotent)."""
        for metric in (_QUEUED, _STORE_RV, _LATENCY):
            with contextlib.suppress(KeyError):
                metric.remove(*self._labels)

    @staticmethod
    def gvr_of(lister_watcher: Any) -> tuple[str, str, str] | None:
        """``(group, version, resource)`` a ListerWatcher records, if any."""
        gvr = getattr(lister_watcher, "gvr", None)
        if isinstance(gvr, tuple) and len(gvr) == 3:
            return (str(gvr[0]), str(gvr[1]), str(gvr[2]))
        return None
