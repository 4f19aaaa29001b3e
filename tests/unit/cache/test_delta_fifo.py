"""DeltaFIFO behaviour, ported from client-go release-1.32 delta_fifo_test.go."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pycontroller.cache import (
    ClosedError,
    DeletedFinalStateUnknown,
    Delta,
    DeltaFIFO,
    Deltas,
    DeltaType,
    Indexer,
    KeyFuncError,
    RequeueError,
)

ADDED, UPDATED, DELETED = DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED
REPLACED, SYNC = DeltaType.REPLACED, DeltaType.SYNC
DFSU = DeletedFinalStateUnknown


def o(name: str, val: int = 0) -> dict[str, Any]:
    """A test object keyed by its name (client-go's testFifoObject)."""
    return {"name": name, "val": val}


def key(obj: Any) -> str:
    return str(obj["name"])


def known(*objs: dict[str, Any]) -> Indexer:
    store = Indexer(key_func=key)
    for obj in objs:
        store.add(obj)
    return store


def noop(deltas: Deltas, is_in_initial_list: bool) -> None:
    pass


def pop(fifo: DeltaFIFO) -> Deltas:
    return fifo.pop(noop, timeout=5)


def newest_val(deltas: Deltas) -> Any:
    obj = deltas[-1].object
    return obj.obj["val"] if isinstance(obj, DFSU) else obj["val"]


def assert_empty(fifo: DeltaFIFO) -> None:
    assert fifo.list_keys() == []
    with pytest.raises(TimeoutError):
        fifo.pop(noop, timeout=0.01)


def test_delta_types_and_delta() -> None:
    assert [t.value for t in DeltaType] == ["Added", "Updated", "Deleted", "Replaced", "Sync"]
    assert DeltaType.ADDED == "Added" and isinstance(DeltaType.SYNC, str)
    d = Delta(DeltaType.ADDED, {"x": 1})
    assert d.type is DeltaType.ADDED and d.object == {"x": 1}
    assert d == Delta(ADDED, {"x": 1})


def test_basic_two_producers_in_order() -> None:
    """Each producer's values come out in increasing order; nothing is lost."""
    fifo = DeltaFIFO(key_func=key)
    n = 500

    def producer(prefix: str) -> None:
        for i in range(n):
            fifo.add(o(f"{prefix}{i}", i))

    threads = [threading.Thread(target=producer, args=(p,)) for p in ("a", "b")]
    for t in threads:
        t.start()
    last = {"a": -1, "b": -1}
    for _ in range(2 * n):
        deltas = pop(fifo)
        obj = deltas[-1].object
        prefix = obj["name"][0]
        assert obj["val"] > last[prefix]
        last[prefix] = obj["val"]
    for t in threads:
        t.join()
    assert last == {"a": n - 1, "b": n - 1}
    assert_empty(fifo)


def test_replace_with_delete_delta_in_queue() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 1)), emit_delta_type_replaced=False)
    fifo.delete(o("foo", 1))
    fifo.replace([o("foo", 2)], "0")
    assert pop(fifo) == [Delta(DELETED, o("foo", 1)), Delta(SYNC, o("foo", 2))]


@pytest.mark.parametrize("with_known", [True, False])
@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        (
            [("add", o("foo", 1)), ("replace", [])],
            [Delta(ADDED, o("foo", 1)), Delta(DELETED, DFSU("foo", o("foo", 1)))],
        ),
        (
            [("add", o("foo", 1)), ("delete", o("foo", 1)), ("replace", [])],
            [Delta(ADDED, o("foo", 1)), Delta(DELETED, o("foo", 1))],
        ),
        (
            [("add", o("foo", 1)), ("replace", [o("foo", 1)]), ("replace", [o("foo", 1)])],
            [Delta(ADDED, o("foo", 1)), Delta(SYNC, o("foo", 1)), Delta(SYNC, o("foo", 1))],
        ),
        (
            [
                ("add", o("foo", 1)),
                ("replace", [o("foo", 1)]),
                ("replace", [o("foo", 1)]),
                ("replace", []),
            ],
            [
                Delta(ADDED, o("foo", 1)),
                Delta(SYNC, o("foo", 1)),
                Delta(SYNC, o("foo", 1)),
                Delta(DELETED, DFSU("foo", o("foo", 1))),
            ],
        ),
        (
            # Two tombstones in a row merge.
            [("add", o("foo", 1)), ("replace", []), ("replace", [])],
            [Delta(ADDED, o("foo", 1)), Delta(DELETED, DFSU("foo", o("foo", 1)))],
        ),
        (
            [("add", o("foo", 1)), ("delete", o("foo", 1)), ("add", o("foo", 2)), ("replace", [])],
            [
                Delta(ADDED, o("foo", 1)),
                Delta(DELETED, o("foo", 1)),
                Delta(ADDED, o("foo", 2)),
                Delta(DELETED, DFSU("foo", o("foo", 2))),
            ],
        ),
    ],
)
def test_replace_makes_deletions_for_objects_only_in_queue(
    with_known: bool, ops: list[tuple[str, Any]], expected: Deltas
) -> None:
    fifo = DeltaFIFO(
        key_func=key,
        known_objects=known() if with_known else None,
        emit_delta_type_replaced=False,
    )
    for op, arg in ops:
        if op == "replace":
            fifo.replace(arg, "0")
        else:
            getattr(fifo, op)(arg)
    assert pop(fifo) == expected
    assert_empty(fifo)


@pytest.mark.parametrize("with_known", [True, False])
def test_replace_emits_replaced_then_tombstone(with_known: bool) -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known() if with_known else None)
    fifo.add(o("foo", 1))
    fifo.replace([o("foo", 1)], "1")
    fifo.replace([], "2")
    assert pop(fifo) == [
        Delta(ADDED, o("foo", 1)),
        Delta(REPLACED, o("foo", 1)),
        Delta(DELETED, DFSU("foo", o("foo", 1))),
    ]


def test_requeue_on_pop() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 10))

    def requeue_quietly(deltas: Deltas, initial: bool) -> None:
        assert deltas[0].object["name"] == "foo"
        raise RequeueError()

    assert pop_with(fifo, requeue_quietly)[0].object == o("foo", 10)
    assert fifo.get_by_key("foo") is not None

    def requeue_with_error(deltas: Deltas, initial: bool) -> None:
        raise RequeueError(ValueError("test error"))

    with pytest.raises(ValueError, match="test error"):
        fifo.pop(requeue_with_error, timeout=5)
    assert fifo.get_by_key("foo") is not None

    fifo.pop(noop, timeout=5)
    assert fifo.get_by_key("foo") is None


def pop_with(fifo: DeltaFIFO, process: Callable[[Deltas, bool], None]) -> Deltas:
    return fifo.pop(process, timeout=5)


def test_requeue_goes_to_the_back_and_keeps_newer_deltas() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("a", 1))
    fifo.add(o("b", 1))

    def requeue(deltas: Deltas, initial: bool) -> None:
        raise RequeueError()

    pop_with(fifo, requeue)
    assert fifo.list_keys() == ["b", "a"]

    # Requeue is a no-op when the key was queued again meanwhile.
    def requeue_after_new_event(deltas: Deltas, initial: bool) -> None:
        raise RequeueError()

    assert newest_val(pop(fifo)) == 1  # b
    fifo.add(o("c", 1))
    pop_with(fifo, requeue_after_new_event)  # pops a, requeues it behind c
    assert fifo.list_keys() == ["c", "a"]


def test_process_error_propagates_without_requeue() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 1))

    def fail(deltas: Deltas, initial: bool) -> None:
        raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        fifo.pop(fail, timeout=5)
    assert fifo.get_by_key("foo") is None
    assert_empty(fifo)


def test_add_update_delete_merge() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 10))
    fifo.update(o("foo", 12))
    fifo.delete(o("foo", 15))
    assert fifo.list() == [o("foo", 15)]
    assert fifo.list_keys() == ["foo"]
    deltas = pop(fifo)
    assert [d.type for d in deltas] == [ADDED, UPDATED, DELETED]
    assert newest_val(deltas) == 15
    assert_empty(fifo)
    assert fifo.get_by_key("foo") is None


def test_transformer() -> None:
    calls: dict[str, int] = {}

    def transform(obj: Any) -> Any:
        ident = f"{obj['name']}@{obj['val']}"
        calls[ident] = calls.get(ident, 0) + 1
        return {**obj, "transformed": True}

    fifo = DeltaFIFO(key_func=key, known_objects=known(), transformer=transform)
    fifo.add(o("foo", 10))
    fifo.add(o("bar", 11))
    fifo.update(o("foo", 12))
    fifo.delete(o("foo", 15))
    fifo.replace([], "")
    fifo.add(o("bar", 16))
    fifo.replace([], "")
    assert fifo.list_keys() == ["foo", "bar"]

    first = pop(fifo)
    assert first[-1] == Delta(DELETED, {**o("foo", 15), "transformed": True})
    second = pop(fifo)
    assert second[-1].type is DELETED
    tomb = second[-1].object
    assert isinstance(tomb, DFSU) and tomb.key == "bar"
    assert tomb.obj == {**o("bar", 16), "transformed": True}
    assert all(count == 1 for count in calls.values()), calls


def test_resync_is_not_transformed() -> None:
    seen: list[Any] = []

    def transform(obj: Any) -> Any:
        seen.append(obj)
        return obj

    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5)), transformer=transform)
    fifo.resync()
    assert pop(fifo) == [Delta(SYNC, o("foo", 5))]
    assert seen == []


def test_enqueueing_no_lister() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 10))
    fifo.update(o("bar", 15))
    fifo.add(o("qux", 17))
    fifo.delete(o("qux", 18))
    fifo.delete(o("baz", 20))  # unknown and not queued: ignored
    assert [newest_val(pop(fifo)) for _ in range(3)] == [10, 15, 18]
    assert_empty(fifo)


def test_enqueueing_with_lister() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5), o("bar", 6), o("baz", 7)))
    fifo.add(o("foo", 10))
    fifo.update(o("bar", 15))
    fifo.delete(o("baz", 20))  # known, so queued
    fifo.delete(o("zzz", 1))  # neither known nor queued: ignored
    assert [newest_val(pop(fifo)) for _ in range(3)] == [10, 15, 20]
    assert_empty(fifo)


def test_add_replace() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 10))
    fifo.replace([o("foo", 15)], "0")
    assert newest_val(pop(fifo)) == 15
    assert_empty(fifo)


def test_resync_non_existing() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5)))
    fifo.delete(o("foo", 10))
    fifo.resync()
    deltas = fifo.get_by_key("foo")
    assert deltas == [Delta(DELETED, o("foo", 10))]


def test_resync() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5)))
    fifo.resync()
    assert fifo.get_by_key("foo") == [Delta(SYNC, o("foo", 5))]


def test_resync_without_known_objects_is_noop() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.resync()
    assert fifo.list_keys() == []


def test_resync_only_for_keys_without_pending_deltas() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5), o("bar", 6)))
    fifo.update(o("foo", 6))
    fifo.resync()
    assert fifo.get_by_key("foo") == [Delta(UPDATED, o("foo", 6))]
    assert fifo.get_by_key("bar") == [Delta(SYNC, o("bar", 6))]
    assert pop(fifo) == [Delta(UPDATED, o("foo", 6))]
    assert pop(fifo) == [Delta(SYNC, o("bar", 6))]


def test_delete_existing_non_propagated() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known())
    fifo.add(o("foo", 5))
    fifo.delete(o("foo", 6))
    deltas = fifo.get_by_key("foo")
    assert deltas is not None and len(deltas) == 2
    assert deltas[-1] == Delta(DELETED, o("foo", 6))


def test_deleted_dedup_only_when_consecutive() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 1)))
    fifo.delete(o("foo", 1))
    fifo.delete(o("foo", 2))  # consecutive: the older real deletion wins
    assert fifo.get_by_key("foo") == [Delta(DELETED, o("foo", 1))]
    fifo.add(o("foo", 3))
    fifo.delete(o("foo", 4))  # not consecutive with the first deletion
    assert fifo.get_by_key("foo") == [
        Delta(DELETED, o("foo", 1)),
        Delta(ADDED, o("foo", 3)),
        Delta(DELETED, o("foo", 4)),
    ]
    # Other consecutive types are never merged.
    fifo.update(o("foo", 5))
    fifo.update(o("foo", 5))
    assert fifo.get_by_key("foo")[-2:] == [Delta(UPDATED, o("foo", 5))] * 2  # type: ignore[index]


def test_real_deletion_replaces_preceding_tombstone() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 1))
    fifo.replace([], "")
    fifo.delete(o("foo", 2))
    assert fifo.get_by_key("foo") == [Delta(ADDED, o("foo", 1)), Delta(DELETED, o("foo", 2))]


def replace_case(ko: Indexer | None, emit: bool = False) -> DeltaFIFO:
    return DeltaFIFO(key_func=key, known_objects=ko, emit_delta_type_replaced=emit)


def three_known() -> Indexer:
    return known(o("foo", 5), o("bar", 6), o("baz", 7))


def pops(fifo: DeltaFIFO, n: int) -> list[Deltas]:
    out = [pop(fifo) for _ in range(n)]
    assert_empty(fifo)
    return out


def test_replace_makes_deletions_a() -> None:
    fifo = replace_case(three_known())
    fifo.delete(o("baz", 10))
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 3) == [
        [Delta(DELETED, o("baz", 10))],
        [Delta(SYNC, o("foo", 5))],
        [Delta(DELETED, DFSU("bar", o("bar", 6)))],
    ]


def test_replace_makes_deletions_b() -> None:
    fifo = replace_case(three_known())
    fifo.add(o("baz", 10))
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 3) == [
        [Delta(ADDED, o("baz", 10)), Delta(DELETED, DFSU("baz", o("baz", 10)))],
        [Delta(SYNC, o("foo", 5))],
        [Delta(DELETED, DFSU("bar", o("bar", 6)))],
    ]


def test_replace_makes_deletions_c() -> None:
    fifo = replace_case(three_known())
    fifo.delete(o("bar", 6))
    fifo.add(o("bar", 100))
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 3) == [
        [
            Delta(DELETED, o("bar", 6)),
            Delta(ADDED, o("bar", 100)),
            Delta(DELETED, DFSU("bar", o("bar", 100))),
        ],
        [Delta(SYNC, o("foo", 5))],
        [Delta(DELETED, DFSU("baz", o("baz", 7)))],
    ]


def test_replace_makes_deletions_d() -> None:
    fifo = replace_case(three_known())
    fifo.replace([o("bar", 100), o("foo", 5)], "0")
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 3) == [
        [Delta(SYNC, o("bar", 100)), Delta(DELETED, DFSU("bar", o("bar", 100)))],
        [Delta(SYNC, o("foo", 5)), Delta(SYNC, o("foo", 5))],
        [Delta(DELETED, DFSU("baz", o("baz", 7)))],
    ]


def test_replace_makes_deletions_e_no_known_objects() -> None:
    fifo = replace_case(None)
    fifo.add(o("baz", 10))
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 2) == [
        [Delta(ADDED, o("baz", 10)), Delta(DELETED, DFSU("baz", o("baz", 10)))],
        [Delta(SYNC, o("foo", 5))],
    ]


def test_replace_makes_deletions_replaced() -> None:
    fifo = replace_case(three_known(), emit=True)
    fifo.delete(o("baz", 10))
    fifo.replace([o("foo", 6)], "0")
    assert pops(fifo, 3) == [
        [Delta(DELETED, o("baz", 10))],
        [Delta(REPLACED, o("foo", 6))],
        [Delta(DELETED, DFSU("bar", o("bar", 6)))],
    ]


def test_replace_known_key_missing_gives_empty_tombstone() -> None:
    class Flaky:
        def list_keys(self) -> list[str]:
            return ["ghost"]

        def get_by_key(self, key: str) -> Any | None:
            return None

    fifo = DeltaFIFO(key_func=key, known_objects=Flaky())
    fifo.replace([], "0")
    assert pop(fifo) == [Delta(DELETED, DFSU("ghost", None))]


def test_replace_delta_type() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5)), emit_delta_type_replaced=True)
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 1) == [[Delta(REPLACED, o("foo", 5))]]


def test_emit_delta_type_replaced_false_gives_sync() -> None:
    fifo = DeltaFIFO(key_func=key, emit_delta_type_replaced=False)
    fifo.replace([o("foo", 5)], "0")
    assert pops(fifo, 1) == [[Delta(SYNC, o("foo", 5))]]


def test_update_resync_race() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known(o("foo", 5)))
    fifo.update(o("foo", 6))
    fifo.resync()
    assert pops(fifo, 1) == [[Delta(UPDATED, o("foo", 6))]]


def test_has_synced_correct_on_deletion() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=three_known(), emit_delta_type_replaced=False)
    fifo.replace([o("foo", 5)], "0")
    expected = [
        [Delta(SYNC, o("foo", 5))],
        [Delta(DELETED, DFSU("bar", o("bar", 6)))],
        [Delta(DELETED, DFSU("baz", o("baz", 7)))],
    ]
    flags: list[bool] = []
    for want in expected:
        assert not fifo.has_synced()
        got = fifo.pop(lambda d, initial: flags.append(initial), timeout=5)
        assert got == want
    assert flags == [True, True, True]
    assert fifo.has_synced()


def test_detect_line_jumpers() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 10))
    fifo.add(o("bar", 1))
    fifo.add(o("foo", 11))
    fifo.add(o("foo", 13))
    fifo.add(o("zab", 30))
    assert newest_val(pop(fifo)) == 13
    fifo.add(o("foo", 14))  # foo goes to the back of the queue
    assert [newest_val(pop(fifo)) for _ in range(3)] == [1, 30, 14]


def test_add_if_not_present() -> None:
    fifo = DeltaFIFO(key_func=key)
    with pytest.raises(KeyFuncError):
        fifo.add_if_not_present([])
    with pytest.raises(TypeError):
        fifo.add_if_not_present(o("x", 1))  # type: ignore[arg-type]
    fifo.add(o("b", 3))
    b3 = pop(fifo)
    fifo.add(o("c", 4))
    c4 = pop(fifo)
    assert fifo.list_keys() == []
    fifo.add(o("a", 1))
    fifo.add(o("b", 2))
    fifo.add_if_not_present(b3)  # ignored: b is present
    fifo.add_if_not_present(c4)
    assert len(fifo) == 3
    assert [newest_val(pop(fifo)) for _ in range(3)] == [1, 2, 4]


def test_key_of() -> None:
    fifo = DeltaFIFO(key_func=key)
    assert fifo.key_of(o("A")) == "A"
    assert fifo.key_of(DFSU("B", None)) == "B"
    assert fifo.key_of([Delta(ADDED, o("C"))]) == "C"
    assert fifo.key_of([Delta(DELETED, DFSU("D", None))]) == "D"
    with pytest.raises(KeyFuncError):
        fifo.key_of([])


@pytest.mark.parametrize(
    ("actions", "expected"),
    [
        ([], False),
        ([("add", o("a"))], True),
        ([("replace", [])], True),
        ([("replace", [o("a"), o("b")])], False),
        ([("replace", [o("a"), o("b")]), ("pop", None)], False),
        ([("replace", [o("a"), o("b")]), ("pop", None), ("pop", None)], True),
        ([("replace", [o("a", 1), o("a", 2)]), ("pop", None)], True),
        ([("delete", o("a"))], True),
        ([("update", o("a")), ("replace", [o("b")])], True),
    ],
)
def test_has_synced(actions: list[tuple[str, Any]], expected: bool) -> None:
    fifo = DeltaFIFO(key_func=key)
    for action, arg in actions:
        if action == "pop":
            pop(fifo)
        elif action == "replace":
            fifo.replace(arg, "0")
        else:
            getattr(fifo, action)(arg)
    assert fifo.has_synced() is expected


def test_is_in_initial_list_false_for_later_events() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.replace([o("a")], "0")
    fifo.add(o("b"))
    flags: list[bool] = []
    for _ in range(2):
        fifo.pop(lambda d, initial: flags.append(initial), timeout=5)
    assert flags == [True, False]


def test_pop_blocks_until_add() -> None:
    fifo = DeltaFIFO(key_func=key)
    result: list[Deltas] = []
    started = threading.Event()

    def consumer() -> None:
        started.set()
        result.append(fifo.pop(noop, timeout=10))

    t = threading.Thread(target=consumer)
    t.start()
    started.wait(5)
    time.sleep(0.05)  # give the consumer time to block; correctness does not depend on it
    assert result == []
    fifo.add(o("foo", 1))
    t.join(5)
    assert not t.is_alive()
    assert result == [[Delta(ADDED, o("foo", 1))]]


def test_pop_timeout() -> None:
    fifo = DeltaFIFO(key_func=key)
    with pytest.raises(TimeoutError):
        fifo.pop(noop, timeout=0.05)


def test_pop_should_unblock_when_closed() -> None:
    fifo = DeltaFIFO(key_func=key)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def consumer() -> None:
        try:
            fifo.pop(noop)
        except BaseException as err:  # recorded for the assertion below
            with lock:
                errors.append(err)

    threads = [threading.Thread(target=consumer, daemon=True) for _ in range(10)]
    for t in threads:
        t.start()
    fifo.close()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)
    assert len(errors) == 10
    assert all(isinstance(e, ClosedError) for e in errors)
    assert fifo.is_closed()


def test_closed_queue_still_drains() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("a", 1))
    fifo.close()
    assert fifo.is_closed()
    assert pop(fifo) == [Delta(ADDED, o("a", 1))]
    with pytest.raises(ClosedError):
        fifo.pop(noop, timeout=5)
    fifo.add(o("b", 2))  # producers still work after close
    assert pop(fifo) == [Delta(ADDED, o("b", 2))]


def test_get_by_key_returns_copy() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("foo", 1))
    copy = fifo.get_by_key("foo")
    assert copy is not None
    copy.append(Delta(UPDATED, o("foo", 2)))
    assert fifo.get_by_key("foo") == [Delta(ADDED, o("foo", 1))]
    assert fifo.get(o("foo")) == [Delta(ADDED, o("foo", 1))]
    assert fifo.get_by_key("missing") is None


def test_process_runs_under_lock_with_known_objects() -> None:
    """The informer pattern: process updates the known-objects store under the FIFO lock."""
    store = Indexer(key_func=key)
    fifo = DeltaFIFO(key_func=key, known_objects=store)

    def process(deltas: Deltas, initial: bool) -> None:
        for d in deltas:
            if d.type is DELETED:
                store.delete(d.object.obj if isinstance(d.object, DFSU) else d.object)
            else:
                store.update(d.object)

    fifo.replace([o("a", 1), o("b", 1)], "1")
    fifo.pop(process, timeout=5)
    fifo.pop(process, timeout=5)
    assert sorted(store.list_keys()) == ["a", "b"]
    fifo.replace([o("b", 2)], "2")
    while fifo.list_keys():
        fifo.pop(process, timeout=5)
    assert store.list_keys() == ["b"]
    assert store.get_by_key("b") == o("b", 2)


def test_many_producers_and_consumers_lose_nothing_and_keep_order() -> None:
    fifo = DeltaFIFO(key_func=key)
    producers, per_producer, keys_per_producer = 6, 400, 10
    seen: dict[str, list[int]] = {}
    seen_lock = threading.Lock()

    def producer(p: int) -> None:
        for i in range(per_producer):
            fifo.update(o(f"p{p}-k{i % keys_per_producer}", i))

    def process(deltas: Deltas, initial: bool) -> None:
        # Runs under the FIFO lock, so per-key batches are recorded in pop order.
        name = deltas[0].object["name"]
        with seen_lock:
            seen.setdefault(name, []).extend(d.object["val"] for d in deltas)

    def consumer() -> None:
        while True:
            try:
                fifo.pop(process)
            except ClosedError:
                return

    consumers = [threading.Thread(target=consumer) for _ in range(4)]
    prods = [threading.Thread(target=producer, args=(p,)) for p in range(producers)]
    for t in consumers + prods:
        t.start()
    for t in prods:
        t.join()
    deadline = time.monotonic() + 20
    while fifo.list_keys() and time.monotonic() < deadline:
        time.sleep(0.01)
    fifo.close()
    for t in consumers:
        t.join(10)
    assert not any(t.is_alive() for t in consumers)

    total = sum(len(v) for v in seen.values())
    assert total == producers * per_producer
    for p in range(producers):
        for k in range(keys_per_producer):
            vals = seen[f"p{p}-k{k}"]
            assert vals == list(range(k, per_producer, keys_per_producer))


def test_informer_pattern_converges_under_concurrency() -> None:
    """Writers, relists and resyncs race a consumer that applies deltas to the
    known-objects store; after a final relist of the true state, the store equals it."""
    store = Indexer(key_func=key)
    fifo = DeltaFIFO(key_func=key, known_objects=store)
    truth: dict[str, dict[str, Any]] = {}
    truth_lock = threading.Lock()
    stop = threading.Event()

    def apply(deltas: Deltas, initial: bool) -> None:
        for d in deltas:
            if d.type is DELETED:
                target = d.object
                if isinstance(target, DFSU):
                    store.delete_by_key(target.key)
                else:
                    store.delete(target)
            else:
                store.update(d.object)

    def consumer() -> None:
        while True:
            try:
                fifo.pop(apply)
            except ClosedError:
                return

    def writer(w: int) -> None:
        for i in range(300):
            name = f"w{w}-{i % 15}"
            with truth_lock:
                if i % 5 == 4 and name in truth:
                    del truth[name]
                    fifo.delete(o(name, i))
                else:
                    truth[name] = o(name, i)
                    fifo.update(truth[name])

    def relister() -> None:
        while not stop.is_set():
            with truth_lock:
                fifo.replace(list(truth.values()), "")
            fifo.resync()
            time.sleep(0.001)

    threads = [threading.Thread(target=consumer), threading.Thread(target=relister)]
    writers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    threads[1].join()
    with truth_lock:
        fifo.replace(list(truth.values()), "")
    deadline = time.monotonic() + 20
    while fifo.list_keys() and time.monotonic() < deadline:
        time.sleep(0.01)
    fifo.close()
    threads[0].join(10)
    assert not threads[0].is_alive()
    assert {k: store.get_by_key(k) for k in store.list_keys()} == truth


def test_key_func_bug_is_not_wrapped() -> None:
    def buggy(obj: Any) -> str:
        raise RuntimeError("bug in the key function")

    fifo = DeltaFIFO(key_func=buggy)
    with pytest.raises(RuntimeError) as info:
        fifo.add(o("a"))
    assert type(info.value) is RuntimeError

    fifo = DeltaFIFO(key_func=lambda obj: obj["missing"])
    with pytest.raises(KeyFuncError):
        fifo.add(o("a"))


# ------------------------------------------------------------------ pop_batch


def collect_batch(out: list[tuple[str, Deltas, bool]]) -> Callable[[Any], None]:
    def process(batch: list[tuple[str, Deltas, bool]]) -> None:
        out.extend(batch)

    return process


def test_pop_batch_pops_head_keys_in_order_with_pop_flags() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known())
    fifo.replace([o("a", 1), o("b", 1), o("c", 1)], "0")
    fifo.update(o("a", 2))
    got: list[tuple[str, Deltas, bool]] = []
    assert fifo.pop_batch(collect_batch(got), max_items=2, timeout=5) == 2
    assert [(k, [d.type for d in ds], flag) for k, ds, flag in got] == [
        ("a", [REPLACED, UPDATED], True),
        ("b", [REPLACED], True),
    ]
    assert not fifo.has_synced()
    fifo.add(o("d"))
    got.clear()
    assert fifo.pop_batch(collect_batch(got), timeout=5) == 2
    assert [(k, flag) for k, _, flag in got] == [("c", True), ("d", False)]
    assert fifo.has_synced()
    assert_empty(fifo)


def test_pop_batch_runs_under_the_lock_and_validates() -> None:
    fifo = DeltaFIFO(key_func=key)
    fifo.add(o("a"))
    held: list[bool] = []
    fifo.pop_batch(lambda batch: held.append(fifo._lock.locked()), timeout=5)
    assert held == [True]
    with pytest.raises(ValueError):
        fifo.pop_batch(lambda batch: None, max_items=0)
    with pytest.raises(TimeoutError):
        fifo.pop_batch(lambda batch: None, timeout=0.01)
    fifo.close()
    with pytest.raises(ClosedError):
        fifo.pop_batch(lambda batch: None)


def test_pop_batch_wakes_a_blocked_consumer() -> None:
    fifo = DeltaFIFO(key_func=key)
    got: list[tuple[str, Deltas, bool]] = []
    t = threading.Thread(target=lambda: fifo.pop_batch(collect_batch(got), timeout=5))
    t.start()
    time.sleep(0.05)
    fifo.replace([o("a"), o("b")], "0")
    t.join(5)
    assert [k for k, _, _ in got] == ["a", "b"]


def random_script(
    rnd: random.Random, steps: int, names: str, ops: list[tuple[float, str]]
) -> list[tuple[str, Any]]:
    """``steps`` random producer calls (and pops): ``ops`` maps cumulative
    probabilities to operations; a replace lists half of ``names``."""
    script: list[tuple[str, Any]] = []
    for _ in range(steps):
        r = rnd.random()
        name = rnd.choice(names)
        op = next(op for bound, op in ops if r < bound)
        arg: Any
        if op == "replace":
            arg = [o(n, rnd.randrange(9)) for n in rnd.sample(names, len(names) // 2)]
        elif op in ("add", "update"):
            arg = o(name, rnd.randrange(9))
        elif op == "delete":
            arg = o(name)
        elif op == "pop":
            arg = rnd.randrange(1, 4)
        else:
            arg = None
        script.append((op, arg))
    return script


def applying(store: Indexer, trace: list[Any]) -> Callable[[str, Deltas, bool], None]:
    """A consumer like an informer's: apply each popped key's deltas to ``store``
    (the queue's known objects) and record them in ``trace``."""

    def apply(k: str, deltas: Deltas, initial: bool) -> None:
        for d in deltas:
            if d.type is DELETED:
                store.delete_by_key(k)
            else:
                store.add(d.object)
        trace.append((k, [(d.type, d.object) for d in deltas], initial))

    return apply


@pytest.mark.parametrize("seed", range(20))
def test_pop_batch_matches_pop_step_by_step(seed: int) -> None:
    """Random producer scripts: pop_batch yields what repeated pop would, flags included."""
    rnd = random.Random(seed)
    ops = [(0.25, "replace"), (0.5, "add"), (0.65, "delete"), (0.75, "resync"), (1.0, "pop")]
    script = random_script(rnd, 40, "abcdef", ops)

    def run(batched: bool) -> list[Any]:
        store = known(o("a", 0), o("b", 0))  # so an early resync queues before "populated"
        fifo = DeltaFIFO(key_func=key, known_objects=store)
        trace: list[Any] = []

        apply = applying(store, trace)

        for action, arg in script:
            if action == "pop":
                for _ in range(arg if not batched else 1):
                    if not len(fifo):
                        break
                    if batched:
                        fifo.pop_batch(lambda b: [apply(*item) for item in b], max_items=arg)
                    else:
                        fifo.pop(lambda d, i: apply(fifo.key_of(d), d, i), timeout=5)
                trace.append(("synced", fifo.has_synced()))
            elif action == "replace":
                fifo.replace(arg, "0")
            elif action == "resync":
                fifo.resync()
            else:
                getattr(fifo, action)(arg)
        return trace

    assert run(batched=True) == run(batched=False)


# ------------------------------------------------------------ producer drain


def test_producer_drain_processes_the_backlog_in_the_producing_thread() -> None:
    fifo = DeltaFIFO(key_func=key, known_objects=known())
    seen: list[tuple[str, bool, str]] = []

    def process(batch: list[tuple[str, Deltas, bool]]) -> None:
        assert fifo._lock.locked()
        seen.extend((k, flag, threading.current_thread().name) for k, _, flag in batch)

    fifo.set_producer_drain(process, backlog=3, max_items=2)

    def produce(method: str, *args: Any) -> None:
        t = threading.Thread(target=getattr(fifo, method), args=args, name=f"producer-{method}")
        t.start()
        t.join(5)

    # A list into an empty queue goes straight to process, whatever its length.
    produce("replace", [o("a"), o("b")], "0")
    assert seen == [("a", True, "producer-replace"), ("b", True, "producer-replace")]
    assert fifo.list_keys() == [] and fifo.has_synced()
    produce("add", o("c"))
    produce("add", o("d"))
    assert fifo.list_keys() == ["c", "d"]  # 2 < 3: left for the consumer
    produce("add", o("e"))
    # Three queued: drained in batches of at most 2 until fewer than 3 are left.
    assert seen[2:] == [("c", False, "producer-add"), ("d", False, "producer-add")]
    assert fifo.list_keys() == ["e"]
    got: list[tuple[str, Deltas, bool]] = []
    fifo.pop_batch(collect_batch(got), timeout=5)  # the consumer takes the rest
    assert [(k, flag) for k, _, flag in got] == [("e", False)]


def test_producer_drain_runs_after_every_kind_of_change() -> None:
    store = known(o("k1"), o("k2"))
    fifo = DeltaFIFO(key_func=key, known_objects=store)
    calls: list[list[str]] = []
    fifo.set_producer_drain(lambda batch: calls.append([k for k, _, _ in batch]), backlog=1)
    fifo.add(o("a"))
    fifo.update(o("a", 1))
    fifo.delete(o("k1"))
    fifo.replace([o("k2"), o("b")], "0")  # the list, then a tombstone for "k1"
    fifo.resync()  # Sync for k1 and k2 (nothing queued for them)
    assert calls == [["a"], ["a"], ["k1"], ["k2", "b"], ["k1"], ["k1", "k2"]]
    assert fifo.list_keys() == []


def test_producer_drain_logs_a_failing_batch_and_keeps_going(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fifo = DeltaFIFO(key_func=key)
    batches: list[list[str]] = []

    def process(batch: list[tuple[str, Deltas, bool]]) -> None:
        keys = [k for k, _, _ in batch]
        if keys == ["boom"]:
            raise RuntimeError("bad batch")
        batches.append(keys)

    fifo.set_producer_drain(process, backlog=1)
    fifo.add(o("boom"))  # the producer's call succeeds; the batch is dropped, logged
    fifo.add(o("ok"))
    assert batches == [["ok"]]
    assert "processing deltas in the producer failed" in caplog.text
    with pytest.raises(ValueError):
        fifo.set_producer_drain(process, backlog=0)
    with pytest.raises(ValueError):
        fifo.set_producer_drain(process, max_items=0)


def test_producer_drain_list_path_transforms_and_leaves_duplicate_keys_to_the_queue() -> None:
    batches: list[list[tuple[str, list[tuple[DeltaType, Any]], bool]]] = []
    fifo = DeltaFIFO(key_func=key, transformer=lambda obj: {**obj, "seen": True})
    fifo.set_producer_drain(
        lambda batch: batches.append(
            [(k, [(d.type, d.object) for d in ds], f) for k, ds, f in batch]
        ),
        backlog=10,
    )
    fifo.replace([o("a", 1), o("b", 1)], "0")
    assert batches == [
        [
            ("a", [(REPLACED, {"name": "a", "val": 1, "seen": True})], True),
            ("b", [(REPLACED, {"name": "b", "val": 1, "seen": True})], True),
        ]
    ]
    # The same key twice in one list: queued (one entry, both deltas), as without a drain.
    batches.clear()
    fifo.replace([o("a", 2), o("c", 2), o("a", 3)], "0")
    assert batches == []
    assert fifo.list_keys() == ["a", "c"]
    assert [d.object["val"] for d in fifo.get_by_key("a") or []] == [2, 3]


@pytest.mark.parametrize("seed", range(20))
def test_producer_drain_matches_a_consumer_popping_at_the_backlog(seed: int) -> None:
    """Random scripts: draining in the producer hands ``process`` exactly what a
    consumer would get that pops whenever the backlog is reached, and pops a list
    replacing an empty queue at once; flags included."""
    rnd = random.Random(seed)
    backlog, max_items = rnd.randrange(1, 4), rnd.randrange(1, 4)
    ops = [(0.15, "replace"), (0.45, "add"), (0.7, "update"), (0.85, "delete"), (1.0, "resync")]
    script = random_script(rnd, 60, "abcdefgh", ops)

    def run(drain: bool) -> list[Any]:
        store = known(o("a", 0), o("b", 0))
        fifo = DeltaFIFO(key_func=key, known_objects=store)
        trace: list[Any] = []

        apply = applying(store, trace)

        def process(batch: list[tuple[str, Deltas, bool]]) -> None:
            for item in batch:
                apply(*item)

        if drain:
            fifo.set_producer_drain(process, backlog=backlog, max_items=max_items)
        for action, arg in script:
            was_empty = len(fifo) == 0
            if action == "replace":
                fifo.replace(arg, "0")
            elif action == "resync":
                fifo.resync()
            else:
                getattr(fifo, action)(arg)
            if not drain:
                listed = len(arg) if action == "replace" and was_empty else 0
                while listed > 0:  # the listed entries lead the queue
                    listed -= fifo.pop_batch(process, max_items=min(max_items, listed), timeout=5)
                while len(fifo) >= backlog:
                    fifo.pop_batch(process, max_items=max_items, timeout=5)
            trace.append(("synced", fifo.has_synced(), fifo.list_keys()))
        return trace

    assert run(drain=True) == run(drain=False)


def test_blocked_consumers_are_woken_once_and_never_missed() -> None:
    """Producers notify a blocked consumer once (not per change); a consumer that
    timed out stops being counted; no change is ever left without a wake-up."""
    fifo = DeltaFIFO(key_func=key)
    with pytest.raises(TimeoutError):
        fifo.pop(noop, timeout=0.01)
    assert fifo._waiting == 0  # the timed-out waiter uncounted itself
    n = 3000
    got: list[str] = []

    def consume() -> None:
        while len(got) < n:
            fifo.pop_batch(lambda batch: got.extend(k for k, _, _ in batch), timeout=5)

    consumer = threading.Thread(target=consume)
    consumer.start()
    rnd = random.Random(7)
    for i in range(n):
        fifo.add(o(f"k{i}"))
        if rnd.random() < 0.02:
            time.sleep(0.001)  # let the consumer block again now and then
    consumer.join(30)
    assert not consumer.is_alive()
    assert got == [f"k{i}" for i in range(n)]


# ------------------------------------------------------- default key function


def kobj(name: str, ns: str = "ns", rv: int = 1) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(rv)}
    if ns:
        meta["namespace"] = ns
    return {"metadata": meta}


def test_default_key_func_first_replace_counts_distinct_keys_and_finds_known_deletions() -> None:
    store = Indexer()
    store.add(kobj("gone"))
    fifo = DeltaFIFO(known_objects=store)
    fifo.replace([kobj("a", rv=1), kobj("node", ns=""), kobj("a", rv=2)], "5")
    assert fifo.list_keys() == ["ns/a", "node", "ns/gone"]
    a = fifo.get_by_key("ns/a")
    assert a is not None and [d.object["metadata"]["resourceVersion"] for d in a] == ["1", "2"]
    gone = fifo.get_by_key("ns/gone")
    assert gone is not None and gone[0] == Delta(DELETED, DFSU("ns/gone", kobj("gone")))
    assert [pop(fifo) for _ in range(2)] and not fifo.has_synced()
    pop(fifo)
    assert fifo.has_synced()


def test_default_key_func_replace_over_queued_items_tombstones_the_unlisted() -> None:
    fifo = DeltaFIFO()
    fifo.add(kobj("x"))
    fifo.add(kobj("y"))
    fifo.replace([kobj("y", rv=2)], "5")
    x = fifo.get_by_key("ns/x")
    assert x is not None and [d.type for d in x] == [ADDED, DELETED]
    assert x[-1].object == DFSU("ns/x", kobj("x"))
    y = fifo.get_by_key("ns/y")
    assert y is not None and [d.type for d in y] == [ADDED, REPLACED]


def test_default_key_func_errors_and_odd_metadata_match_the_general_path() -> None:
    fifo = DeltaFIFO()
    with pytest.raises(KeyFuncError):
        fifo.add({"metadata": {"name": "a", "namespace": 5}})
    with pytest.raises(KeyFuncError):
        fifo.update({"no": "metadata"})
    fifo.update({"metadata": {"name": "", "namespace": "ns"}})  # client-go allows it
    assert fifo.list_keys() == ["ns/"]
    assert fifo.has_synced()


def test_default_key_func_update_appends_in_place_and_wakes_a_waiting_pop() -> None:
    fifo = DeltaFIFO(transformer=None)
    fifo.add(kobj("a", rv=1))
    fifo.update(kobj("a", rv=2))  # queued key: appended, keeps its place
    fifo.update(kobj("b", rv=3))  # new key: goes to the end
    assert fifo.list_keys() == ["ns/a", "ns/b"]
    a = fifo.get_by_key("ns/a")
    assert a is not None and [d.type for d in a] == [ADDED, UPDATED]
    assert [pop(fifo)[-1].object["metadata"]["resourceVersion"] for _ in range(2)] == ["2", "3"]
    got: list[Deltas] = []
    t = threading.Thread(target=lambda: got.append(pop(fifo)))
    t.start()
    time.sleep(0.05)
    fifo.update(kobj("c", rv=4))
    t.join(5)
    assert got and got[0] == [Delta(UPDATED, kobj("c", rv=4))]


def test_update_with_transformer_transforms_on_the_default_key_path() -> None:
    def mark(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, "seen": True}

    fifo = DeltaFIFO(transformer=mark)
    fifo.update(kobj("a"))
    deltas = fifo.get_by_key("ns/a")
    assert deltas is not None and deltas[0].object["seen"] is True
