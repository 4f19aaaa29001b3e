"""RealFIFO: every event in order, several per key, deletes kept; atomic Replace/Resync.

Cases ported from client-go ``the_real_fifo_test.go`` where they apply (with the
1.36 ``AtomicFIFO`` behaviour: a Replace/Resync is one unit, popped whole).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from support.fakes import obj

from pycontroller.cache import (
    ClosedError,
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    Deltas,
    DeltaType,
    Indexer,
    RealFIFO,
)

A, U, D, R, S = (
    DeltaType.ADDED,
    DeltaType.UPDATED,
    DeltaType.DELETED,
    DeltaType.REPLACED,
    DeltaType.SYNC,
)


def known(*objs: dict[str, Any]) -> Indexer:
    indexer = Indexer()
    for o in objs:
        indexer.add(o)
    return indexer


def rv(o: Any) -> str:
    if isinstance(o, DeletedFinalStateUnknown):
        return f"DFSU({o.key},{rv(o.obj) if o.obj is not None else None})"
    return str(o["metadata"]["resourceVersion"])


def summary(deltas: Deltas) -> list[tuple[str, str]]:
    return [(d.type.value, rv(d.object)) for d in deltas]


def pop_all(fifo: RealFIFO | DeltaFIFO) -> list[list[tuple[str, str]]]:
    """Every pop (one event, or one atomic unit) until the queue is empty."""
    out = []
    while len(fifo):
        out.append(summary(fifo.pop(lambda d, initial: None, timeout=1)))
    return out


def test_events_of_several_keys_are_delivered_in_arrival_order() -> None:
    fifo = RealFIFO(known_objects=known())
    fifo.add(obj("a", 1))
    fifo.add(obj("b", 2))
    fifo.update(obj("a", 3))
    fifo.delete(obj("b", 4))
    fifo.add(obj("b", 5))
    assert fifo.list_keys() == ["ns/a", "ns/b", "ns/a", "ns/b", "ns/b"]
    assert pop_all(fifo) == [
        [("Added", "1")],
        [("Added", "2")],
        [("Updated", "3")],
        [("Deleted", "4")],
        [("Added", "5")],
    ]


def test_several_events_per_key_and_consecutive_deletes_are_all_kept() -> None:
    """client-go TestRealFIFO_basic / the DeltaFIFO dedup case: nothing merges."""
    fifo = RealFIFO(known_objects=known())
    fifo.add(obj("a", 1))
    fifo.update(obj("a", 2))
    fifo.delete(obj("a", 2))
    fifo.delete(DeletedFinalStateUnknown("ns/a", obj("a", 2)))
    assert fifo.get_by_key("ns/a") is not None
    assert summary(fifo.get_by_key("ns/a") or []) == [
        ("Added", "1"),
        ("Updated", "2"),
        ("Deleted", "2"),
        ("Deleted", "DFSU(ns/a,2)"),
    ]
    assert len(pop_all(fifo)) == 4


def test_delete_of_unknown_key_is_queued() -> None:
    """RealFIFO queues every delete (client-go's Delete has no known-objects check)."""
    fifo = RealFIFO(known_objects=known())
    fifo.delete(obj("ghost", 1))
    assert pop_all(fifo) == [[("Deleted", "1")]]


def test_replace_is_one_atomic_unit_with_tombstones_first() -> None:
    """Known foo/bar/baz; Replace([foo@5, qux@8]): bar and baz vanished -> tombstones
    carrying the known objects, then the listed objects, all in one pop."""
    fifo = RealFIFO(known_objects=known(obj("foo", 5), obj("bar", 6), obj("baz", 7)))
    fifo.replace([obj("foo", 5), obj("qux", 8)], "8")
    assert len(fifo) == 1
    [unit] = pop_all(fifo)
    assert sorted(unit[:2]) == [("Deleted", "DFSU(ns/bar,6)"), ("Deleted", "DFSU(ns/baz,7)")]
    assert unit[2:] == [("Replaced", "5"), ("Replaced", "8")]


def test_replace_makes_deletions_for_objects_only_in_queue() -> None:
    """client-go TestRealFIFO_ReplaceMakesDeletionsForObjectsInQueue: a queued key
    missing from the list gets a tombstone with its newest queued object, unless
    its last queued event already is a deletion."""
    fifo = RealFIFO(known_objects=known(obj("foo", 5), obj("bar", 6), obj("baz", 7)))
    fifo.delete(obj("baz", 10))
    fifo.update(obj("bar", 11))
    fifo.add(obj("new", 12))
    fifo.replace([obj("foo", 5)], "13")
    assert pop_all(fifo) == [
        [("Deleted", "10")],
        [("Updated", "11")],
        [("Added", "12")],
        [("Deleted", "DFSU(ns/bar,11)"), ("Deleted", "DFSU(ns/new,12)"), ("Replaced", "5")],
    ]


def test_replace_without_emit_replaced_uses_sync() -> None:
    fifo = RealFIFO(known_objects=known(), emit_delta_type_replaced=False)
    fifo.replace([obj("a", 1)], "1")
    assert pop_all(fifo) == [[("Sync", "1")]]


def test_empty_replace_of_empty_store_queues_nothing_and_syncs() -> None:
    fifo = RealFIFO(known_objects=known())
    assert not fifo.has_synced()
    fifo.replace([], "1")
    assert len(fifo) == 0 and fifo.has_synced()


def test_replace_key_error_leaves_the_queue_untouched() -> None:
    fifo = RealFIFO(known_objects=known(obj("a", 1)))
    with pytest.raises(KeyError):
        fifo.replace([obj("b", 2), {"no": "metadata"}], "2")
    assert len(fifo) == 0 and not fifo.has_synced()


def test_resync_is_one_unit_of_known_objects_without_queued_events() -> None:
    """client-go TestRealFIFO_Resync / UpdateResyncRace: a queued event wins over
    a stale resync of the same key."""
    fifo = RealFIFO(known_objects=known(obj("foo", 5), obj("bar", 6)))
    fifo.update(obj("foo", 7))
    fifo.resync()
    assert pop_all(fifo) == [[("Updated", "7")], [("Sync", "6")]]
    fifo.resync()
    [unit] = pop_all(fifo)
    assert sorted(unit) == [("Sync", "5"), ("Sync", "6")]


def test_resync_without_known_objects_or_with_all_keys_queued_does_nothing() -> None:
    RealFIFO().resync()
    fifo = RealFIFO(known_objects=known(obj("a", 1)))
    fifo.update(obj("a", 2))
    fifo.resync()
    assert len(fifo) == 1


@pytest.mark.parametrize(
    ("actions", "synced"),
    [
        ([], False),
        ([("add", "a")], True),
        ([("replace", [])], True),
        ([("replace", ["a", "b"])], False),
        ([("replace", ["a", "b"]), ("pop", None)], True),  # one atomic unit
        ([("add", "x"), ("replace", ["a"])], True),  # an Add came first
        ([("replace", ["a"]), ("replace", ["b"]), ("pop", None)], True),
    ],
)
def test_has_synced(actions: list[tuple[str, Any]], synced: bool) -> None:
    """client-go TestRealFIFO_HasSynced, with an atomic Replace: synced once the
    first Replace's unit (and everything queued before it) was popped."""
    fifo = RealFIFO(known_objects=known())
    for action, arg in actions:
        if action == "add":
            fifo.add(obj(arg, 1))
        elif action == "replace":
            fifo.replace([obj(n, 1) for n in arg], "1")
        else:
            fifo.pop(lambda d, initial: None, timeout=1)
    assert fifo.has_synced() is synced


def test_is_in_initial_list_flags_the_first_replace_only() -> None:
    fifo = RealFIFO(known_objects=known())
    fifo.replace([obj("a", 1), obj("b", 2)], "2")
    fifo.add(obj("c", 3))
    flags: list[tuple[str, bool]] = []

    def process(batch: list[tuple[str, Deltas, bool]]) -> None:
        flags.extend((key, initial) for key, _, initial in batch)

    while len(fifo):
        fifo.pop_batch(process, timeout=1)
    assert flags == [("ns/a", True), ("ns/b", True), ("ns/c", False)]


def test_pop_batch_takes_events_up_to_max_items_and_never_splits_a_unit() -> None:
    fifo = RealFIFO(known_objects=known())
    for i in range(5):
        fifo.add(obj("a", i))
    fifo.replace([obj(f"o{i}", 10 + i) for i in range(7)], "20")
    fifo.add(obj("z", 30))
    sizes: list[int] = []
    held: list[bool] = []

    def process(batch: list[tuple[str, Deltas, bool]]) -> None:
        sizes.append(len(batch))
        held.append(fifo._lock.locked())
        assert all(len(deltas) == 1 for _, deltas, _ in batch)

    popped = [fifo.pop_batch(process, max_items=3, timeout=1) for _ in range(4)]
    assert popped == sizes == [3, 2, 8, 1]  # 2 adds, then the unit (7 + tombstone of a)
    assert all(held)
    with pytest.raises(ValueError):
        fifo.pop_batch(process, max_items=0)


def test_producer_drain_processes_backlogs_and_whole_replaces_in_order() -> None:
    store = known()
    fifo = RealFIFO(known_objects=store)
    got: list[str] = []

    def process(batch: list[tuple[str, Deltas, bool]]) -> None:
        got.extend(rv(deltas[0].object) for _, deltas, _ in batch)

    fifo.set_producer_drain(process, backlog=3, max_items=2)
    fifo.add(obj("a", 1))
    fifo.update(obj("a", 2))
    assert got == [] and len(fifo) == 2
    fifo.update(obj("a", 3))  # backlog reached: this producer drains a batch of 2
    assert got == ["1", "2"] and len(fifo) == 1
    fifo.add(obj("b", 4))
    fifo.replace([obj("c", 5)], "5")  # everything queued, then the unit, at once
    assert got == ["1", "2", "3", "4", "DFSU(ns/a,3)", "DFSU(ns/b,4)", "5"]
    assert len(fifo) == 0 and fifo.has_synced()
    store.add(obj("c", 5))
    fifo.add(obj("d", 6))
    fifo.resync()  # a resync drains too
    assert got[7:] == ["6", "5"]
    with pytest.raises(ValueError):
        fifo.set_producer_drain(process, backlog=0)


def test_transformer_runs_on_events_and_replace_but_not_tombstones_or_resync() -> None:
    seen: list[str] = []

    def transform(o: Any) -> Any:
        seen.append(rv(o))
        return {**o, "transformed": True}

    fifo = RealFIFO(known_objects=known(obj("k", 9)), transformer=transform)
    fifo.add(obj("a", 1))
    fifo.delete(DeletedFinalStateUnknown("ns/b", obj("b", 2)))
    fifo.replace([obj("a", 3)], "3")
    assert seen == ["1", "3"]
    fifo.pop(lambda d, i: None, timeout=1)
    fifo.pop(lambda d, i: None, timeout=1)
    [tomb, replaced] = fifo.pop(lambda d, i: None, timeout=1)
    assert tomb.object == DeletedFinalStateUnknown("ns/k", obj("k", 9))
    assert replaced.object["transformed"]
    fifo.resync()
    assert seen == ["1", "3"]


def test_pop_unblocks_when_closed_and_closed_queue_still_drains() -> None:
    """client-go TestRealFIFO_PopShouldUnblockWhenClosed."""
    fifo = RealFIFO(known_objects=known())
    errors: list[BaseException] = []

    def pop() -> None:
        try:
            fifo.pop(lambda d, i: None)
        except ClosedError as err:
            errors.append(err)

    threads = [threading.Thread(target=pop) for _ in range(10)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    fifo.close()
    for t in threads:
        t.join(0.5)
    assert len(errors) == 10 and fifo.is_closed()

    closed = RealFIFO(known_objects=known())
    closed.add(obj("a", 1))
    closed.close()
    assert summary(closed.pop(lambda d, i: None)) == [("Added", "1")]
    with pytest.raises(ClosedError):
        closed.pop(lambda d, i: None)
    with pytest.raises(ClosedError):
        closed.pop_batch(lambda b: None)


def test_pop_times_out() -> None:
    with pytest.raises(TimeoutError):
        RealFIFO().pop(lambda d, i: None, timeout=0.01)


def test_pop_wakes_on_add_from_another_thread() -> None:
    fifo = RealFIFO(known_objects=known())
    timer = threading.Timer(0.05, fifo.add, args=(obj("a", 1),))
    timer.start()
    assert summary(fifo.pop(lambda d, i: None, timeout=5)) == [("Added", "1")]
    timer.join()


def test_where_real_and_delta_fifo_differ() -> None:
    """The same stream: RealFIFO keeps cross-key order and both deletions;
    DeltaFIFO groups a key's events in its first slot and merges the deletions."""
    stream = [
        ("add", obj("a", 1)),
        ("add", obj("b", 2)),
        ("update", obj("a", 3)),
        ("delete", obj("b", 4)),
        ("delete", DeletedFinalStateUnknown("ns/b", obj("b", 4))),
    ]
    real, delta = RealFIFO(known_objects=known()), DeltaFIFO(known_objects=known())
    for fifo in (real, delta):
        for action, o in stream:
            getattr(fifo, action)(o)
    assert pop_all(real) == [
        [("Added", "1")],
        [("Added", "2")],
        [("Updated", "3")],
        [("Deleted", "4")],
        [("Deleted", "DFSU(ns/b,4)")],
    ]
    assert pop_all(delta) == [
        [("Added", "1"), ("Updated", "3")],
        [("Added", "2"), ("Deleted", "4")],
    ]


def test_key_of_accepts_deltas_and_tombstones() -> None:
    fifo = RealFIFO()
    assert fifo.key_of(obj("a", 1)) == "ns/a"
    assert fifo.key_of([Delta(A, obj("b", 1))]) == "ns/b"
    assert fifo.key_of(DeletedFinalStateUnknown("x/y", None)) == "x/y"
    with pytest.raises(KeyError):
        fifo.key_of([])
    assert fifo.get(obj("a", 1)) is None
    assert (U, D, R, S) == (DeltaType.UPDATED, DeltaType.DELETED, DeltaType.REPLACED, S)
