"""Benchmark: workqueue add/get/done cycle against queue.Queue put/get in the same run.

Prints the cost per item of pycontroller.workqueue.Queue (add + get + done),
RateLimitingQueue (the type controllers use) and Python's queue.Queue
(put + get), and the ratio to queue.Queue (target: <= 3x), for the cases below.
A named RateLimitingQueue recording Prometheus metrics is shown too, for
information (prometheus-client's own locking dominates its cost).

- single-threaded: one thread adds N items, then takes them all;
- 1 producer + K consumers: one thread adds N distinct items while K threads
  take them (and call done), measured until every item was consumed.

Usage: python hack/bench/bench_workqueue.py [--items N] [--consumers K] [--repeat R]
The best of R runs is reported for each case (least disturbed by noise).
"""

from __future__ import annotations

import argparse
import functools
import queue
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from prometheus_client import CollectorRegistry

from pycontroller.workqueue import (
    PrometheusMetricsProvider,
    Queue,
    RateLimitingQueue,
)

TARGET_RATIO = 3.0


def _single_workqueue(factory: Callable[[], Queue], items: list[str]) -> float:
    q = factory()
    add, get, done = q.add, q.get, q.done
    start = time.perf_counter()
    for item in items:
        add(item)
    for _ in items:
        item, _shutdown = get()
        done(item)
    elapsed = time.perf_counter() - start
    q.shut_down()
    return elapsed


def _single_stdlib(items: list[str]) -> float:
    q: queue.Queue[str] = queue.Queue()
    put, get = q.put, q.get
    start = time.perf_counter()
    for item in items:
        put(item)
    for _ in items:
        get()
    return time.perf_counter() - start


def _threaded_workqueue(factory: Callable[[], Queue], items: list[str], consumers: int) -> float:
    q = factory()
    remaining = [len(items)]
    lock = threading.Lock()
    finished = threading.Event()

    def consume() -> None:
        get, done = q.get, q.done
        while True:
            item, shutdown = get()
            if shutdown:
                return
            done(item)
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    finished.set()

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    add = q.add
    start = time.perf_counter()
    for item in items:
        add(item)
    finished.wait()
    elapsed = time.perf_counter() - start
    q.shut_down()
    for t in threads:
        t.join()
    return elapsed


def _threaded_stdlib(items: list[str], consumers: int) -> float:
    q: queue.Queue[str | None] = queue.Queue()
    remaining = [len(items)]
    lock = threading.Lock()
    finished = threading.Event()

    def consume() -> None:
        get = q.get
        while True:
            item = get()
            if item is None:
                return
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    finished.set()

    threads = [threading.Thread(target=consume, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    put = q.put
    start = time.perf_counter()
    for item in items:
        put(item)
    finished.wait()
    elapsed = time.perf_counter() - start
    for _ in threads:
        q.put(None)
    for t in threads:
        t.join()
    return elapsed


def _with_metrics() -> Queue:
    """A named RateLimitingQueue recording Prometheus metrics (informational case)."""
    return RateLimitingQueue(
        name="bench", metrics_provider=PrometheusMetricsProvider(CollectorRegistry())
    )


def _best(fn: Callable[[], float], repeat: int) -> float:
    return min(fn() for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n: int = args.items
    items = [f"namespace-{i % 50}/object-{i}" for i in range(n)]

    def per_item_us(seconds: float) -> float:
        return seconds / n * 1e6

    print(f"items={n} consumers={args.consumers} repeat={args.repeat} (best of repeat)")
    factories: dict[str, Callable[[], Queue]] = {
        "Queue": Queue,
        "RateLimitingQueue": RateLimitingQueue,
        "+ Prometheus metrics": _with_metrics,
    }
    k = args.consumers
    modes: list[tuple[str, Callable[[], float], Callable[[Callable[[], Queue]], float]]] = [
        (
            "single-threaded",
            lambda: _single_stdlib(items),
            lambda factory: _single_workqueue(factory, items),
        ),
        (
            f"1 producer + {k} consumers",
            lambda: _threaded_stdlib(items, k),
            lambda factory: _threaded_workqueue(factory, items, k),
        ),
    ]
    worst = 0.0
    for mode, run_stdlib, run_workqueue in modes:
        base = _best(run_stdlib, args.repeat)
        print(f"\n[{mode}]")
        print(f"  {'queue.Queue put+get':<34} {per_item_us(base):8.3f} us/item   1.00x")
        for label, factory in factories.items():
            elapsed = _best(functools.partial(run_workqueue, factory), args.repeat)
            ratio = elapsed / base
            metrics = label.startswith("+")
            if not metrics:
                worst = max(worst, ratio)
            print(
                f"  {label + ' add+get+done':<34} {per_item_us(elapsed):8.3f} us/item"
                f" {ratio:6.2f}x{'  (informational)' if metrics else ''}"
            )
    verdict = "OK" if worst <= TARGET_RATIO else "ABOVE TARGET"
    print(f"\nworst ratio without metrics {worst:.2f}x (target <= {TARGET_RATIO:.0f}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
