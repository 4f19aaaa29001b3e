"""Priority-aware enqueueing: initial-list adds and resyncs at LOW_PRIORITY."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from support.fakes import FakeWatch, obj, page

from pycontroller.cache import DeletedFinalStateUnknown, ListWatch, SharedIndexInformer
from pycontroller.clock import FakeClock
from pycontroller.handlers import enqueue_key
from pycontroller.testing.wait import wait_for
from pycontroller.workqueue import LOW_PRIORITY, PriorityQueue, Queue
from pycontroller.workqueue.priority_handlers import (
    add_for_create,
    add_for_update,
    create_priority,
    update_priority,
)


class _RecordingPriorityQueue:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, int]] = []

    def add(self, item: Any) -> None:
        self.calls.append((item, 0))

    def add_with_opts(
        self, item: Any, *, after: float = 0.0, rate_limited: bool = False, priority: int = 0
    ) -> None:
        self.calls.append((item, priority))


def test_priorities() -> None:
    assert create_priority(True) == LOW_PRIORITY
    assert create_priority(False) == 0
    a1, a2 = obj("a", 1), obj("a", 2)
    assert update_priority(a1, a1) == LOW_PRIORITY  # a resync hands the same object
    assert update_priority(a1, obj("a", 1)) == LOW_PRIORITY  # an unchanged relist
    assert update_priority(a1, a2) == 0
    assert update_priority({}, {}) == 0  # no resourceVersion: counts as changed
    assert update_priority(DeletedFinalStateUnknown("ns/a", a1), a1) == LOW_PRIORITY
    # Re-created (new uid): a real change whatever the resourceVersion says.
    u1 = {"metadata": {**a1["metadata"], "uid": "u1"}}
    u2 = {"metadata": {**a1["metadata"], "uid": "u2"}}
    assert update_priority(u1, u2) == 0
    assert update_priority(u1, {"metadata": dict(u1["metadata"])}) == LOW_PRIORITY


def test_plain_queue_gets_plain_adds() -> None:
    q = Queue()
    add_for_create(q, "ns/a", True)
    add_for_update(q, "ns/b", obj("b", 1), obj("b", 1))
    assert len(q) == 2
    q.shut_down()


def test_handler_priorities_per_event() -> None:
    q = _RecordingPriorityQueue()
    h = enqueue_key(q)
    h.on_add(obj("listed", 1), True)
    h.on_add(obj("created", 2), False)
    h.on_update(obj("a", 3), obj("a", 3))
    h.on_update(obj("a", 3), obj("a", 4))
    h.on_delete(obj("gone", 5))
    h.on_delete(DeletedFinalStateUnknown("ns/tomb", obj("tomb", 6)))
    h.on_add({"no": "metadata"}, False)  # cannot be keyed: dropped
    assert q.calls == [
        ("ns/listed", LOW_PRIORITY),
        ("ns/created", 0),
        ("ns/a", LOW_PRIORITY),
        ("ns/a", 0),
        ("ns/gone", 0),
        ("ns/tomb", 0),
    ]


def test_informer_live_change_overtakes_the_initial_list_and_resyncs() -> None:
    """Over a SharedIndexInformer: a watch event is handed out before the initial list,
    and a resync does not push a real change back."""
    listing = page([obj(f"cm-{i}", i + 1) for i in range(50)], 50)
    watches: list[FakeWatch] = []
    lock = threading.Lock()

    def watch(**opts: Any) -> Iterator[dict[str, Any]]:
        w = FakeWatch()
        with lock:
            watches.append(w)
        return w

    clock = FakeClock()
    q = PriorityQueue()
    stop = threading.Event()
    try:
        inf = SharedIndexInformer(
            ListWatch(lambda **opts: listing, watch), resync_period=10, clock=clock
        )
        inf.add_event_handler(enqueue_key(q))
        inf.start(stop)
        wait_for(lambda: len(q) == 50, what="initial list queued")
        wait_for(lambda: bool(watches), what="watch started")
        watches[-1].push("ADDED", obj("new", 51))
        wait_for(lambda: len(q) == 51, what="watch event queued")
        assert q.get_with_priority() == ("ns/new", 0, False)
        q.done("ns/new")
        assert q.get_with_priority() == ("ns/cm-0", LOW_PRIORITY, False)
        q.done("ns/cm-0")

        # A change to a key still queued at low priority raises it.
        watches[-1].push("MODIFIED", obj("cm-49", 52))
        wait_for(lambda: q._priority.get("ns/cm-49") == 0, what="cm-49 raised")
        assert len(q) == 49
        assert q.get_with_priority() == ("ns/cm-49", 0, False)
        q.done("ns/cm-49")
        clock.step(10)  # resync: every key again, at low priority
        wait_for(lambda: len(q) == 51, what="resync queued")
        _, priority, _ = q.get_with_priority()
        assert priority == LOW_PRIORITY
    finally:
        stop.set()
        q.shut_down()
