"""Queue: client-go queue_test.go cases plus multi-threaded invariants."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from pycontroller.workqueue import Queue

WaitUntil = Callable[..., None]


def _start(target: Any, *args: Any) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def _add_all(q: Queue, items: Any) -> None:
    for item in items:
        q.add(item)


def _join_all(threads: list[threading.Thread], timeout: float = 10.0) -> None:
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), f"{t.name} did not exit"


@pytest.mark.parametrize("drain", [False, True], ids=["shut_down", "shut_down_with_drain"])
def test_basic_many_producers_and_consumers(drain: bool) -> None:
    q = Queue()
    producers = [_start(_add_all, q, range(50)) for _ in range(50)]
    received: list[Any] = []
    lock = threading.Lock()

    def consume() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            with lock:
                received.append(item)
            q.done(item)

    consumers = [_start(consume) for _ in range(10)]
    _join_all(producers)
    if drain:
        q.shut_down_with_drain()
    else:
        q.shut_down()
    q.add("added after shutdown!")
    _join_all(consumers)
    assert "added after shutdown!" not in received
    assert set(received) == set(range(50))
    assert len(q) == 0


def test_add_while_processing_is_processed_exactly_once_more(wait_until: WaitUntil) -> None:
    q = Queue()
    counts: Counter[Any] = Counter()
    lock = threading.Lock()
    items = range(200)

    def consume() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            with lock:
                counts[item] += 1
                first = counts[item] == 1
            if first:
                q.add(item)  # dirty while processing: handed out once more after done
                q.add(item)  # collapses with the previous add
            q.done(item)

    consumers = [_start(consume) for _ in range(10)]
    # Each item is added exactly once, by one of five producers.
    producers = [_start(_add_all, q, items[p::5]) for p in range(5)]
    _join_all(producers)

    def all_twice() -> bool:
        with lock:
            return all(counts[i] >= 2 for i in items)

    wait_until(all_twice)
    q.shut_down_with_drain()
    _join_all(consumers)
    assert counts == Counter({i: 2 for i in items})
    assert len(q) == 0


def test_add_while_processing_single_thread_exact() -> None:
    q = Queue()
    for i in range(10):
        q.add(i)
    seen: Counter[Any] = Counter()
    while len(q):
        item, shutdown = q.get()
        assert not shutdown
        seen[item] += 1
        if seen[item] == 1:
            q.add(item)
            q.add(item)
            q.add(item)
        q.done(item)
    assert seen == Counter({i: 2 for i in range(10)})


def test_no_item_processed_concurrently_and_nothing_lost(wait_until: WaitUntil) -> None:
    q = Queue()
    keys = [f"ns/obj-{i}" for i in range(20)]
    seq_lock = threading.Lock()
    seq = 0
    last_add: dict[str, int] = {}
    last_start: dict[str, int] = {}
    in_flight: set[str] = set()
    violations: list[str] = []

    def produce(seed: int) -> None:
        nonlocal seq
        rnd = random.Random(seed)
        for _ in range(500):
            key = rnd.choice(keys)
            with seq_lock:
                seq += 1
                last_add[key] = seq
            q.add(key)

    def consume() -> None:
        nonlocal seq
        while True:
            key, shutdown = q.get()
            if shutdown:
                return
            with seq_lock:
                if key in in_flight:
                    violations.append(key)
                in_flight.add(key)
                seq += 1
                last_start[key] = seq
            # Give other consumers a chance to (wrongly) receive the same key.
            for _ in range(50):
                pass
            with seq_lock:
                in_flight.discard(key)
            q.done(key)

    consumers = [_start(consume) for _ in range(8)]
    producers = [_start(produce, s) for s in range(8)]
    _join_all(producers)

    def every_add_processed() -> bool:
        with seq_lock:
            return all(last_start.get(k, -1) > n for k, n in last_add.items())

    wait_until(every_add_processed, msg="every add followed by a processing")
    q.shut_down_with_drain()
    _join_all(consumers)
    assert violations == []
    assert in_flight == set()


def test_len() -> None:
    q = Queue()
    q.add("foo")
    assert len(q) == 1
    q.add("bar")
    assert len(q) == 2
    q.add("foo")
    assert len(q) == 2


def test_fifo_order() -> None:
    q = Queue()
    for item in ["c", "a", "b", "a", "d", "c"]:
        q.add(item)
    out = []
    while len(q):
        item, _ = q.get()
        out.append(item)
        q.done(item)
    assert out == ["c", "a", "b", "d"]


def test_reinsert() -> None:
    q = Queue()
    q.add("foo")
    item, shutdown = q.get()
    assert (item, shutdown) == ("foo", False)
    q.add("foo")
    assert len(q) == 0  # dirty, but waits for done
    q.done("foo")
    assert len(q) == 1
    item, shutdown = q.get()
    assert (item, shutdown) == ("foo", False)
    q.done("foo")
    assert len(q) == 0


def test_collapse() -> None:
    q = Queue()
    q.add("bar")
    q.add("bar")
    item, _ = q.get()
    assert item == "bar"
    q.done(item)
    assert len(q) == 0


def test_collapse_while_processing() -> None:
    q = Queue()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add("foo")
    q.add("foo")
    # Never handed to a second worker while the first holds it.
    assert q.get(timeout=0.05) == (None, False)
    result: list[tuple[Any, bool]] = []
    second = _start(lambda: result.append(q.get()))
    second.join(0.05)
    assert result == []
    q.done("foo")
    second.join(5)
    assert result == [("foo", False)]
    q.done("foo")
    assert len(q) == 0


def test_get_blocks_until_add(wait_until: WaitUntil) -> None:
    q = Queue()
    result: list[tuple[Any, bool]] = []
    getter = _start(lambda: result.append(q.get()))
    wait_until(lambda: q._waiting == 1)
    q.add("x")
    getter.join(5)
    assert result == [("x", False)]


def test_get_timeout_returns_none_not_shutdown() -> None:
    q = Queue()
    assert q.get(timeout=0.01) == (None, False)
    assert q.get(timeout=0) == (None, False)
    q.add(1)
    assert q.get(timeout=0) == (1, False)


def test_shut_down_wakes_every_blocked_getter(wait_until: WaitUntil) -> None:
    q = Queue()
    results: list[tuple[Any, bool]] = []
    lock = threading.Lock()

    def get() -> None:
        r = q.get()
        with lock:
            results.append(r)

    getters = [_start(get) for _ in range(5)]
    getters.append(_start(lambda: results.append(q.get(timeout=60))))
    wait_until(lambda: q._waiting == 6, msg="all getters blocked")
    q.shut_down()
    _join_all(getters)
    assert results == [(None, True)] * 6
    assert q.shutting_down()


def test_items_queued_before_shutdown_are_still_handed_out() -> None:
    q = Queue()
    q.add("a")
    q.add("b")
    q.shut_down()
    q.add("c")
    assert len(q) == 2
    assert q.get() == ("a", False)
    assert q.get() == ("b", False)
    assert q.get() == (None, True)
    assert q.get(timeout=1) == (None, True)


def test_done_requeues_dirty_item_even_after_shutdown() -> None:
    q = Queue()
    q.add("foo")
    q.get()
    q.add("foo")
    q.shut_down()
    q.done("foo")
    assert q.get() == ("foo", False)
    q.done("foo")
    assert q.get() == (None, True)


def test_done_of_unknown_or_waiting_item_is_ignored() -> None:
    q = Queue()
    q.done("never-added")
    q.add("foo")
    q.done("foo")  # misuse: foo was never handed out
    assert len(q) == 1
    assert q.get() == ("foo", False)
    q.done("foo")
    q.done("foo")
    assert len(q) == 0


def test_shut_down_is_idempotent() -> None:
    q = Queue()
    assert not q.shutting_down()
    q.shut_down()
    q.shut_down()
    q.shut_down_with_drain()  # nothing processing: returns at once
    assert q.shutting_down()


def test_shut_down_with_drain_waits_for_done(wait_until: WaitUntil) -> None:
    q = Queue()
    q.add("foo")
    q.add("bar")
    foo, _ = q.get()
    bar, _ = q.get()
    drained = threading.Event()

    def drain() -> None:
        q.shut_down_with_drain()
        drained.set()

    drainer = _start(drain)
    wait_until(q.shutting_down)
    assert q.get() == (None, True)
    wait_until(lambda: q._waiting == 1, msg="drain blocked")
    q.done(foo)
    assert not drained.wait(0.05)
    q.done(bar)
    drainer.join(5)
    assert drained.is_set()


def test_shut_down_does_not_wait_for_processing() -> None:
    q = Queue()
    q.add("foo")
    q.add("bar")
    q.get()
    q.get()
    q.shut_down()  # returns at once: would hang the test otherwise
    assert q.shutting_down()


def test_shut_down_releases_pending_drain(wait_until: WaitUntil) -> None:
    q = Queue()
    q.add("foo")
    q.add("bar")
    q.get()
    q.get()
    drainer = _start(q.shut_down_with_drain)
    wait_until(lambda: q._waiting == 1, msg="drain blocked")
    q.shut_down()
    drainer.join(5)
    assert not drainer.is_alive()


def test_drain_with_dirty_item(wait_until: WaitUntil) -> None:
    q = Queue()
    q.add("foo")
    item, _ = q.get()
    q.add("foo")  # dirty while processing
    drainer = _start(q.shut_down_with_drain)
    wait_until(q.shutting_down)
    assert q.get() == (None, True)
    q.done(item)  # puts foo back in the queue
    assert q.get() == ("foo", False)
    q.done("foo")
    assert q.get() == (None, True)
    drainer.join(5)
    assert not drainer.is_alive()
    assert len(q) == 0


def test_unhashable_item_raises() -> None:
    q = Queue()
    with pytest.raises(TypeError):
        q.add(["not", "hashable"])
