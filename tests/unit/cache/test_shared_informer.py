"""SharedIndexInformer unit tests over a scripted ListWatch (no server)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.fakes import FakeWatch, obj, page

from pycontroller.cache import (
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    ListWatch,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from pycontroller.clock import FakeClock
from pycontroller.testing.wait import wait_for


class FakeLW:
    """Lists come from ``lists`` (the last repeats); each watch is a new FakeWatch."""

    def __init__(self, *lists: dict[str, Any]) -> None:
        self.lists = list(lists)
        self.watches: list[FakeWatch] = []
        self.list_calls = 0
        self.lock = threading.Lock()

    def list(self, **opts: Any) -> dict[str, Any]:
        with self.lock:
            self.list_calls += 1
            return self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]

    def watch(self, **opts: Any) -> FakeWatch:
        w = FakeWatch()
        with self.lock:
            self.watches.append(w)
        return w

    def current(self) -> FakeWatch:
        wait_for(lambda: bool(self.watches))
        with self.lock:
            return self.watches[-1]

    def listwatch(self) -> ListWatch:
        return ListWatch(self.list, self.watch)


class Recorder:
    """A handler recording (kind, name, rv...) tuples; optional hook runs inside each call."""

    def __init__(self, hook: Callable[[str, Any], None] | None = None) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()
        self.hook = hook

    def _rec(self, *e: Any) -> None:
        with self.lock:
            self.events.append(e)

    def on_add(self, o: Any, is_in_initial_list: bool) -> None:
        if self.hook:
            self.hook("add", o)
        self._rec(
            "add", o["metadata"]["name"], o["metadata"]["resourceVersion"], is_in_initial_list
        )

    def on_update(self, old: Any, new: Any) -> None:
        if self.hook:
            self.hook("update", new)
        self._rec(
            "update",
            new["metadata"]["name"],
            old["metadata"]["resourceVersion"],
            new["metadata"]["resourceVersion"],
        )

    def on_delete(self, o: Any) -> None:
        if self.hook:
            self.hook("delete", o)
        if isinstance(o, DeletedFinalStateUnknown):
            self._rec("tombstone", o.key)
        else:
            self._rec("delete", o["metadata"]["name"], o["metadata"]["resourceVersion"])

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self.lock:
            return list(self.events)


@pytest.fixture
def stop() -> Any:
    ev = threading.Event()
    yield ev
    ev.set()


def started(
    lw: FakeLW, stop: threading.Event, *handlers: Any, **kwargs: Any
) -> SharedIndexInformer:
    inf = SharedIndexInformer(lw.listwatch(), **kwargs)
    for h in handlers:
        inf.add_event_handler(h)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
    return inf


# ------------------------------------------------------------------------------------ tests


def test_initial_list_then_live_events_map_to_handler_calls(stop: threading.Event) -> None:
    lw = FakeLW(page([obj("a", 1), obj("b", 2)], 2))
    rec = Recorder()
    inf = SharedIndexInformer(lw.listwatch(), name="t")
    assert not inf.has_synced()
    reg = inf.add_event_handler(rec)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, reg.has_synced, timeout=5)
    w = lw.current()
    w.push("ADDED", obj("c", 3))
    w.push("MODIFIED", obj("a", 4))
    w.push("DELETED", obj("b", 5))
    w.push("ADDED", obj("a", 6))  # an ADDED for a cached key is an update
    wait_for(lambda: len(rec.snapshot()) == 6)
    assert sorted(rec.snapshot()[:2]) == [("add", "a", "1", True), ("add", "b", "2", True)]
    live = rec.snapshot()[2:]
    # The DeltaFIFO keeps order per key (keys may interleave differently).
    assert [e for e in live if e[1] == "a"] == [
        ("update", "a", "1", "4"),
        ("update", "a", "4", "6"),
    ]
    assert [e for e in live if e[1] != "a"] == [("add", "c", "3", False), ("delete", "b", "5")]
    assert sorted(inf.get_store().list_keys()) == ["ns/a", "ns/c"]
    assert inf.last_sync_resource_version() == "6"


def test_indexer_is_updated_before_handlers_are_told(stop: threading.Event) -> None:
    lw = FakeLW(page([], 1))
    seen: list[Any] = []
    inf_holder: list[SharedIndexInformer] = []

    def hook(kind: str, o: Any) -> None:
        cached = inf_holder[0].get_indexer().get_by_key("ns/x")
        seen.append((kind, cached["metadata"]["resourceVersion"] if cached else None))

    inf = SharedIndexInformer(lw.listwatch())
    inf_holder.append(inf)
    inf.add_event_handler(Recorder(hook))
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
    w = lw.current()
    w.push("ADDED", obj("x", 2))
    wait_for(lambda: len(seen) == 1)
    w.push("DELETED", obj("x", 3))
    wait_for(lambda: len(seen) == 2)
    # At delivery time the cache already reflects the event (or a later one).
    assert seen[0][0] == "add" and seen[0][1] in ("2", None)
    assert seen[1] == ("delete", None)


def test_relist_emits_tombstones_and_unchanged_updates(stop: threading.Event) -> None:
    lw = FakeLW(page([obj("a", 1), obj("b", 2)], 2), page([obj("a", 1), obj("c", 9)], 9))
    rec = Recorder()
    inf = started(lw, stop, rec)
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "x"}
    lw.current().q.put({"type": "ERROR", "object": gone})
    # run() backs off (0.8-1.6 s real) and relists.
    wait_for(lambda: len(rec.snapshot()) >= 5, timeout=10)
    tail = rec.snapshot()[2:]
    assert ("tombstone", "ns/b") in tail
    assert ("add", "c", "9", False) in tail
    # "a" did not change: with no resync configured every handler still sees it (client-go).
    assert ("update", "a", "1", "1") in tail
    assert sorted(inf.get_store().list_keys()) == ["ns/a", "ns/c"]


def test_late_handler_gets_replay_of_cache_then_live_events(stop: threading.Event) -> None:
    lw = FakeLW(page([obj("a", 1), obj("b", 2)], 2))
    inf = started(lw, stop)
    late = Recorder()
    reg = inf.add_event_handler(late)
    wait_for(reg.has_synced)
    assert sorted(late.snapshot()) == [("add", "a", "1", True), ("add", "b", "2", True)]
    lw.current().push("MODIFIED", obj("a", 3))
    wait_for(lambda: len(late.snapshot()) == 3)
    assert late.snapshot()[2] == ("update", "a", "1", "3")


def test_slow_handler_does_not_block_others(stop: threading.Event) -> None:
    lw = FakeLW(page([], 1))
    gate = threading.Event()
    slow = Recorder(lambda kind, o: gate.wait(10))
    fast = Recorder()
    inf = started(lw, stop, slow, fast)
    w = lw.current()
    for i in range(200):
        w.push("ADDED", obj(f"o{i}", i + 2))
    wait_for(lambda: len(fast.snapshot()) == 200)
    wait_for(lambda: inf.last_sync_resource_version() == "201")
    assert len(slow.snapshot()) == 0
    gate.set()
    wait_for(lambda: len(slow.snapshot()) == 200)
    assert [e[1] for e in slow.snapshot()] == [f"o{i}" for i in range(200)]


def test_handler_exception_is_logged_and_delivery_continues(
    stop: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    lw = FakeLW(page([], 1))
    got: list[str] = []

    def add(o: Any) -> None:
        got.append(o["metadata"]["name"])
        if o["metadata"]["name"] == "bad":
            raise RuntimeError("handler bug")

    started(lw, stop, ResourceEventHandlerFuncs(add_func=add))
    w = lw.current()
    w.push("ADDED", obj("bad", 2))
    w.push("ADDED", obj("good", 3))
    wait_for(lambda: got == ["bad", "good"])
    assert any("handler bug" in (r.exc_text or "") for r in caplog.records)


def test_remove_event_handler_stops_notifications(stop: threading.Event) -> None:
    lw = FakeLW(page([], 1))
    a, b = Recorder(), Recorder()
    inf = SharedIndexInformer(lw.listwatch())
    inf.add_event_handler(a)
    reg_b = inf.add_event_handler(b)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
    inf.remove_event_handler(reg_b)
    inf.remove_event_handler(reg_b)  # idempotent
    lw.current().push("ADDED", obj("x", 2))
    wait_for(lambda: len(a.snapshot()) == 1)
    time.sleep(0.05)
    assert b.snapshot() == []


def test_transform_runs_before_caching(stop: threading.Event) -> None:
    def drop_managed(o: Any) -> Any:
        o = dict(o)
        o["metadata"] = {k: v for k, v in o["metadata"].items() if k != "managedFields"}
        return o

    item = obj("a", 1)
    item["metadata"]["managedFields"] = [{"manager": "x"}]
    lw = FakeLW(page([item], 1))
    seen: list[Any] = []
    inf = started(lw, stop, ResourceEventHandlerFuncs(add_func=seen.append), transform=drop_managed)
    wait_for(lambda: len(seen) == 1)
    assert "managedFields" not in seen[0]["metadata"]
    assert "managedFields" not in inf.get_store().get_by_key("ns/a")["metadata"]


def test_resync_replays_cache_only_to_due_handlers() -> None:
    clock = FakeClock()
    stop = threading.Event()
    try:
        lw = FakeLW(page([obj("a", 1), obj("b", 2)], 2))
        inf = SharedIndexInformer(lw.listwatch(), resync_period=10, clock=clock)
        resyncing, quiet = Recorder(), Recorder()
        inf.add_event_handler(resyncing)
        inf.add_event_handler(quiet, resync_period=0)
        inf.start(stop)
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
        lw.current()
        wait_for(lambda: len(resyncing.snapshot()) == 2 and len(quiet.snapshot()) == 2)
        clock.step(10)
        wait_for(lambda: len(resyncing.snapshot()) == 4)
        assert sorted(resyncing.snapshot()[2:]) == [
            ("update", "a", "1", "1"),
            ("update", "b", "2", "2"),
        ]
        # A real change still reaches everyone; the resync does not.
        lw.current().push("MODIFIED", obj("a", 3))
        wait_for(lambda: len(quiet.snapshot()) == 3)
        assert quiet.snapshot()[2] == ("update", "a", "1", "3")
        assert all(e[0] == "add" for e in quiet.snapshot()[:2])
    finally:
        stop.set()


def test_handler_resync_period_smaller_than_informer_lowers_check_period() -> None:
    clock = FakeClock()
    stop = threading.Event()
    try:
        lw = FakeLW(page([obj("a", 1)], 1))
        inf = SharedIndexInformer(lw.listwatch(), resync_period=100, clock=clock)
        rec = Recorder()
        inf.add_event_handler(rec, resync_period=0.2)  # raised to the 1 s minimum
        inf.start(stop)
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
        lw.current()
        clock.step(1)
        wait_for(lambda: ("update", "a", "1", "1") in rec.snapshot())
    finally:
        stop.set()


def test_run_stops_promptly_and_rejects_new_handlers() -> None:
    lw = FakeLW(page([obj("a", 1)], 1))
    stop = threading.Event()
    inf = SharedIndexInformer(lw.listwatch())
    thread = inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
    stop.set()
    thread.join(3)
    assert not thread.is_alive()
    assert inf.is_stopped()
    with pytest.raises(RuntimeError):
        inf.add_event_handler(Recorder())


def test_wait_for_cache_sync_false_on_stop_or_timeout() -> None:
    stop = threading.Event()
    assert wait_for_cache_sync(stop, lambda: False, timeout=0.15) is False
    stop.set()
    assert wait_for_cache_sync(stop, lambda: False) is False
    assert wait_for_cache_sync(stop, lambda: True) is True


def test_filtering_handler_turns_crossing_updates_into_add_or_delete() -> None:
    rec = Recorder()
    h = FilteringResourceEventHandler(
        lambda o: o["metadata"].get("labels", {}).get("app") == "x", rec
    )
    yes1, yes2, no = obj("a", 1, app="x"), obj("a", 2, app="x"), obj("a", 3, app="y")
    h.on_add(yes1, True)
    h.on_add(no, True)
    h.on_update(yes1, yes2)
    h.on_update(yes2, no)
    h.on_update(no, yes1)
    h.on_update(no, no)
    h.on_delete(yes1)
    h.on_delete(no)
    assert rec.snapshot() == [
        ("add", "a", "1", True),
        ("update", "a", "1", "2"),
        ("delete", "a", "2"),
        ("add", "a", "1", False),
        ("delete", "a", "1"),
    ]


def test_handler_funcs_accept_one_or_two_argument_add() -> None:
    one: list[Any] = []
    two: list[Any] = []
    ResourceEventHandlerFuncs(add_func=lambda o: one.append(o)).on_add("x", True)
    ResourceEventHandlerFuncs(add_func=lambda o, initial: two.append((o, initial))).on_add(
        "y", True
    )
    ResourceEventHandlerFuncs().on_update("a", "b")  # missing funcs are no-ops
    assert one == ["x"] and two == [("y", True)]


def test_add_indexers_after_start_indexes_existing_objects(stop: threading.Event) -> None:
    lw = FakeLW(page([obj("a", 1, app="x"), obj("b", 2, app="y")], 2))
    inf = started(lw, stop)
    inf.add_indexers({"app": lambda o: [o["metadata"]["labels"]["app"]]})
    assert [o["metadata"]["name"] for o in inf.get_indexer().by_index("app", "x")] == ["a"]


@pytest.mark.parametrize("fifo", ["real", "delta"])
def test_relist_batch_mixes_changes_and_unchanged_updates_per_listener_flags(fifo: str) -> None:
    """One popped batch holding real changes and unchanged-RV (resync-like) updates:
    a non-syncing handler gets only the real ones, in order; a syncing one gets all.

    A RealFIFO relist delivers its tombstones first, then the listed objects
    (client-go's Replace); a DeltaFIFO queues the tombstone behind the listed keys."""
    clock = FakeClock()
    stop = threading.Event()
    try:
        lw = FakeLW(page([obj("a", 1), obj("b", 2), obj("c", 3)], 3))
        inf = SharedIndexInformer(
            lw.listwatch(),
            resync_period=10,
            clock=clock,
            fifo="real" if fifo == "real" else "delta",
        )
        syncing, quiet = Recorder(), Recorder()
        inf.add_event_handler(syncing)
        inf.add_event_handler(quiet, resync_period=0)
        inf.start(stop)
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
        wait_for(lambda: len(syncing.snapshot()) == 3 and len(quiet.snapshot()) == 3)
        lw.current()  # the watch is open: the resync timer counts from the list
        clock.step(10)  # the resync check marks only `syncing` as due (flags stay set)
        wait_for(lambda: len(syncing.snapshot()) == 6)
        # A relist: a unchanged, b changed, c gone, d new -> one batch of deltas.
        lw.lists = [page([obj("a", 1), obj("b", 5), obj("d", 6)], 6)]
        lw.current().push("ERROR", {"code": 410, "reason": "Expired"})
        wait_for(lambda: clock.waiters() > 0)  # the reflector backs off (< 1.6 s) ...
        clock.step(2)  # ... then relists (the next resync is not due before t=20)
        wait_for(lambda: len(quiet.snapshot()) == 6)
        tombstone: list[Any] = [("tombstone", "ns/c")]
        first, last = (tombstone, []) if fifo == "real" else ([], tombstone)
        assert quiet.snapshot()[3:] == [
            *first,
            ("update", "b", "2", "5"),
            ("add", "d", "6", False),
            *last,
        ]
        wait_for(lambda: len(syncing.snapshot()) == 10)
        assert syncing.snapshot()[6:] == [
            *first,
            ("update", "a", "1", "1"),
            ("update", "b", "2", "5"),
            ("add", "d", "6", False),
            *last,
        ]
    finally:
        stop.set()


def test_late_handler_registration_syncs_after_its_replay_is_delivered(
    stop: threading.Event,
) -> None:
    lw = FakeLW(page([obj(f"o{i}", i) for i in range(2000)], 2000))
    inf = started(lw, stop)
    gate = threading.Event()
    late = Recorder(hook=lambda kind, o: gate.wait(5))
    reg = inf.add_event_handler(late)
    assert not reg.has_synced()
    gate.set()
    wait_for(reg.has_synced)
    assert len(late.snapshot()) == 2000
    assert all(e[0] == "add" and e[3] is True for e in late.snapshot())


@pytest.mark.parametrize("seed", range(10))
def test_batch_fast_path_matches_the_per_delta_loop(seed: int) -> None:
    """One-delta batches take a map/zip path (``Indexer.upsert_many``): same cache,
    same notifications (kinds, objects, initial flags) as the general loop, with
    or without indices, and with a key repeated (RealFIFO batches)."""
    from pycontroller.cache import NAMESPACE_INDEX, Indexer, meta_namespace_index_func
    from pycontroller.cache.delta_fifo import Delta, DeltaType
    from pycontroller.cache.shared_informer import _upsert_batch

    rnd = random.Random(seed)
    cached = {f"ns/o{i}": obj(f"o{i}", i) for i in range(0, 40, 2)}
    names = rnd.sample(range(40), 25)
    kind = rnd.choice([DeltaType.REPLACED, DeltaType.UPDATED, DeltaType.SYNC, DeltaType.ADDED])
    batch = [(f"ns/o{i}", [Delta(kind, obj(f"o{i}", 100 + i))], rnd.random() < 0.5) for i in names]
    if seed % 3 == 0:  # only keys not cached yet: all adds
        batch = [b for b in batch if b[0] not in cached]
    if seed % 3 == 1:  # only cached keys: all updates
        batch = [b for b in batch if b[0] in cached]
    if seed % 3 == 2:  # a key several times (in order: each sees the previous as old)
        i = names[0]
        batch += [(f"ns/o{i}", [Delta(DeltaType.UPDATED, obj(f"o{i}", 200 + i))], False)]
        batch.insert(1, (f"ns/o{i}", [Delta(DeltaType.UPDATED, obj(f"o{i}", 300 + i))], False))

    expected_items = dict(cached)
    expected_notes: list[Any] = []
    expected_initial = 0
    for k, deltas, initial in batch:
        old = expected_items.get(k)
        expected_items[k] = deltas[0].object
        if old is None:
            expected_notes += [0, deltas[0].object, initial]
            expected_initial += initial
        else:
            expected_notes += [1, old, deltas[0].object]

    indices = {NAMESPACE_INDEX: meta_namespace_index_func} if seed % 2 else None
    indexer = Indexer(indexers=indices)
    indexer.replace(list(cached.values()), "1")

    def items() -> dict[str, Any]:
        return {k: indexer.get_by_key(k) for k in indexer.list_keys()}

    with indexer.batch() as txn:
        result = _upsert_batch(txn, batch)
    assert result is not None
    notes, initial = result
    assert items() == expected_items
    if indices:
        assert len(indexer.by_index(NAMESPACE_INDEX, "ns")) == len(expected_items)
    assert [n if isinstance(n, int) else id(n) for n in notes] == [
        n if isinstance(n, int) else id(n) for n in expected_notes
    ]
    assert initial == expected_initial

    # Batches the loop must handle are left untouched.
    two = [("ns/o1", [Delta(kind, obj("o1", 1)), Delta(kind, obj("o1", 2))], False)]
    gone = [("ns/o2", [Delta(DeltaType.DELETED, obj("o2", 2))], False)]
    for other in (two, gone, []):
        before = items()
        with indexer.batch() as txn:
            assert _upsert_batch(txn, other) is None
        assert items() == before


def test_watch_burst_reaches_cache_and_handlers_in_order(stop: threading.Event) -> None:
    """A burst of watch events is applied in small batches by the reflector's thread
    (and the informer's): nothing is lost or reordered, the cache ends at the last state."""
    lw = FakeLW(page([obj(f"o{i}", i) for i in range(50)], 50))
    rec = Recorder()
    inf = started(lw, stop, rec)
    watch = lw.current()
    for n in range(1, 2001):
        watch.push("MODIFIED", obj(f"o{n % 50}", 50 + n))
    wait_for(lambda: len(rec.snapshot()) == 50 + 2000, timeout=30)
    updates = [e for e in rec.snapshot() if e[0] == "update"]
    for i in range(50):
        rvs = [int(e[3]) for e in updates if e[1] == f"o{i}"]
        assert rvs == sorted(rvs) and len(rvs) == 40
        olds = [int(e[2]) for e in updates if e[1] == f"o{i}"]
        assert olds == [i] + rvs[:-1]  # each update's old is the previous version
    store = inf.get_store()
    assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.list()} == {
        f"o{n % 50}": str(50 + n) for n in range(1951, 2001)
    }


def with_uid(o: dict[str, Any], uid: str) -> dict[str, Any]:
    o["metadata"]["uid"] = uid
    return o


def test_relisted_recreated_object_reaches_non_syncing_handlers() -> None:
    """Deleted and re-created while the watch was down, then relisted under the same
    resourceVersion (a server that reuses it): a new uid is a change, never a resync."""
    clock = FakeClock()
    stop = threading.Event()
    try:
        lw = FakeLW(page([with_uid(obj("a", 1), "u1"), with_uid(obj("b", 2), "u2")], 2))
        inf = SharedIndexInformer(lw.listwatch(), resync_period=10, clock=clock)
        syncing, quiet = Recorder(), Recorder()
        inf.add_event_handler(syncing)
        inf.add_event_handler(quiet, resync_period=0)
        inf.start(stop)
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
        wait_for(lambda: len(syncing.snapshot()) == 2 and len(quiet.snapshot()) == 2)
        lw.current()  # the watch is open: the resync timer counts from the list
        clock.step(10)  # the resync check marks only `syncing` as due
        wait_for(lambda: len(syncing.snapshot()) == 4)
        lw.lists = [page([with_uid(obj("a", 1), "u3"), with_uid(obj("b", 2), "u2")], 2)]
        lw.current().push("ERROR", {"code": 410, "reason": "Expired"})
        wait_for(lambda: clock.waiters() > 0)
        clock.step(2)
        wait_for(lambda: len(syncing.snapshot()) == 6)
        wait_for(lambda: len(quiet.snapshot()) >= 3)
        assert quiet.snapshot()[2:] == [("update", "a", "1", "1")]  # b, unchanged, skipped
        assert inf.get_store().get_by_key("ns/a")["metadata"]["uid"] == "u3"
    finally:
        stop.set()


def test_default_queue_is_real_fifo_and_delta_fifo_is_an_option() -> None:
    from pycontroller.cache import DeltaFIFO, RealFIFO, SharedInformerFactory

    lw = FakeLW(page([], 1)).listwatch()
    assert isinstance(SharedIndexInformer(lw)._fifo, RealFIFO)
    assert isinstance(SharedIndexInformer(lw, fifo="delta")._fifo, DeltaFIFO)
    with pytest.raises(ValueError):
        SharedIndexInformer(lw, fifo="other")  # type: ignore[arg-type]
    from kubernetes.client import ApiClient

    api = ApiClient()
    factory = SharedInformerFactory(api, fifo="delta")
    assert isinstance(factory.for_resource("", "v1", "pods")._fifo, DeltaFIFO)
    assert isinstance(SharedInformerFactory(api).for_resource("", "v1", "pods")._fifo, RealFIFO)


def test_in_order_informer_delivers_every_event_across_keys_in_stream_order(
    stop: threading.Event,
) -> None:
    """RealFIFO (the default): whatever the batching, handlers see the stream's exact
    order across keys, several events per key, deletions included. (A DeltaFIFO
    would deliver a's update right after a's add if both were queued together.)"""
    lw = FakeLW(page([], 1))
    rec = Recorder()
    started(lw, stop, rec)
    w = lw.current()
    w.push("ADDED", obj("a", 2))
    w.push("ADDED", obj("b", 3))
    w.push("MODIFIED", obj("a", 4))
    w.push("DELETED", obj("b", 5))
    w.push("ADDED", obj("b", 6))
    w.push("DELETED", obj("a", 7))
    wait_for(lambda: len(rec.snapshot()) == 6)
    assert rec.snapshot() == [
        ("add", "a", "2", False),
        ("add", "b", "3", False),
        ("update", "a", "2", "4"),
        ("delete", "b", "5"),
        ("add", "b", "6", False),
        ("delete", "a", "7"),
    ]


@pytest.mark.parametrize("fifo", ["real", "delta"])
def test_relist_is_applied_atomically_and_has_synced_after_it(fifo: str) -> None:
    """The first list is one batch: has_synced turns true only once the cache holds
    all of it, and every initial object is delivered with is_in_initial_list."""
    stop = threading.Event()
    try:
        lw = FakeLW(page([obj(f"o{i}", i) for i in range(1500)], 1500))
        rec = Recorder()
        inf = started(lw, stop, rec, fifo=fifo)
        assert len(inf.get_store().list_keys()) == 1500
        wait_for(lambda: len(rec.snapshot()) == 1500)
        assert all(e[0] == "add" and e[3] is True for e in rec.snapshot())
    finally:
        stop.set()
