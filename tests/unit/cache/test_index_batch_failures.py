"""An index function failing for one object drops only that object's delta:
every other object of the batch is stored and notified (fast path
``Indexer.upsert_many`` and the per-delta loop alike, both queues)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from support.fakes import FakeWatch, obj, page

from pycontroller.cache import Indexer, ListWatch, ResourceEventHandlerFuncs, SharedIndexInformer
from pycontroller.cache.delta_fifo import Delta, DeltaType
from pycontroller.cache.index import IndexFuncError
from pycontroller.cache.shared_informer import DRAIN_BACKLOG, _upsert_batch
from pycontroller.testing.wait import wait_for


def by_team(o: Any) -> list[str]:
    return [o["metadata"]["labels"]["team"]]  # KeyError without the label


def boom_on_bad(o: Any) -> list[str]:
    if o["metadata"]["name"].startswith("bad"):
        raise RuntimeError("index function bug")
    return ["x"]


def good(name: str, rv: int, team: str = "t") -> dict[str, Any]:
    return obj(name, rv, team=team)


def test_upsert_many_with_failures_stores_every_other_object() -> None:
    ix = Indexer(indexers={"team": by_team})
    ix.add(good("b", 1, "old"))
    objs = [good("a", 2), obj("b", 3), good("c", 4, "u"), obj("d", 5)]  # b and d: no label
    keys = ["ns/a", "ns/b", "ns/c", "ns/d"]
    failures: list[tuple[int, Exception]] = []
    olds = ix.upsert_many(keys, objs, failures)
    assert olds == [None, None, None, None]
    assert [i for i, _ in failures] == [1, 3]
    assert all(isinstance(err, IndexFuncError) for _, err in failures)
    # The failing objects were not stored: b keeps its old object and index entry.
    assert ix.get_by_key("ns/b") == good("b", 1, "old")
    assert ix.get_by_key("ns/d") is None
    assert sorted(ix.list_keys()) == ["ns/a", "ns/b", "ns/c"]
    assert ix.index_keys("team", "old") == ["ns/b"]
    assert ix.index_keys("team", "t") == ["ns/a"]
    assert ix.index_keys("team", "u") == ["ns/c"]
    # Without a failures list the first failure still propagates (as add() would).
    with pytest.raises(IndexFuncError):
        ix.upsert_many(["ns/e", "ns/f"], [good("e", 6), obj("f", 7)])
    assert ix.get_by_key("ns/e") is not None and ix.get_by_key("ns/f") is None


@pytest.mark.parametrize("initial", [True, False])
def test_fast_path_drops_only_the_failing_entry(initial: bool) -> None:
    ix = Indexer(indexers={"team": by_team})
    ix.add(good("b", 1, "old"))
    kind = DeltaType.REPLACED if initial else DeltaType.UPDATED
    entries = [good("a", 2), obj("b", 3), good("c", 4), good("b", 5, "new")]
    batch = [(f"ns/{o['metadata']['name']}", [Delta(kind, o)], initial) for o in entries]
    with ix.batch() as txn:
        result = _upsert_batch(txn, batch, "t")
    assert result is not None
    notes, n_initial = result
    # a: add; b@3: dropped; c: add; b@5: update from the cached b@1.
    assert notes == [
        0,
        entries[0],
        initial,
        0,
        entries[2],
        initial,
        1,
        good("b", 1, "old"),
        entries[3],
    ]
    assert n_initial == (2 if initial else 0)
    assert ix.get_by_key("ns/b") is entries[3]
    assert ix.index_keys("team", "new") == ["ns/b"] and ix.index_keys("team", "old") == []


class LW:
    def __init__(self, listed: dict[str, Any]) -> None:
        self.listed = listed
        self.watches: list[FakeWatch] = []
        self.lock = threading.Lock()

    def list(self, **opts: Any) -> dict[str, Any]:
        return self.listed

    def watch(self, **opts: Any) -> FakeWatch:
        w = FakeWatch()
        with self.lock:
            self.watches.append(w)
        return w


@pytest.mark.parametrize("fifo", ["real", "delta"])
@pytest.mark.parametrize("index_func", [by_team, boom_on_bad])
def test_informer_stores_and_notifies_all_but_the_failing_object(
    fifo: Any, index_func: Any
) -> None:
    listed = [good(f"o{i:02d}", i) for i in range(20)]
    listed[10] = obj("bad10", 10)  # no label
    lw = LW(page(listed, 20))
    inf = SharedIndexInformer(
        ListWatch(lw.list, lw.watch), indexers={"idx": index_func}, fifo=fifo, name="t"
    )
    adds: list[str] = []
    updates: list[str] = []
    lock = threading.Lock()

    def on_add(o: Any) -> None:
        with lock:
            adds.append(o["metadata"]["name"])

    def on_update(old: Any, new: Any) -> None:
        with lock:
            updates.append(new["metadata"]["name"])

    inf.add_event_handler(ResourceEventHandlerFuncs(on_add, on_update))
    stop = threading.Event()
    thread = inf.start(stop)
    try:
        wait_for(lambda: len(adds) == 19, timeout=5)
        assert "bad10" not in adds
        assert sorted(inf.get_store().list_keys()) == sorted(
            f"ns/{o['metadata']['name']}" for o in listed if o["metadata"]["name"] != "bad10"
        )
        wait_for(lambda: bool(lw.watches), timeout=5)
        watch = lw.watches[-1]
        # A burst larger than the producer's drain backlog, one bad object in it.
        burst = DRAIN_BACKLOG + 6
        for i in range(burst):
            name = "bad-w" if i == 7 else f"w{i:03d}"
            watch.push("ADDED", obj(name, 100 + i) if i == 7 else good(name, 100 + i))
        watch.push("MODIFIED", good("o03", 500, "moved"))
        wait_for(lambda: "o03" in updates, timeout=5)
        with lock:
            assert len(adds) == 19 + burst - 1 and "bad-w" not in adds
        keys = set(inf.get_store().list_keys())
        assert len(keys) == 19 + burst - 1 and "ns/bad-w" not in keys
        if index_func is by_team:
            assert inf.get_indexer().index_keys("idx", "moved") == ["ns/o03"]
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
