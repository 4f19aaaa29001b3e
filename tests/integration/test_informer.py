"""SharedIndexInformer over the embedded API server: order, dropped watches, relists, outages."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pycontroller.cache import (
    DeletedFinalStateUnknown,
    ListWatch,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from pycontroller.client import ResourceClient, TokenBucketRateLimiter
from pycontroller.handlers import enqueue_key, generation_changed, predicate_handler
from pycontroller.testing import APIServer, wait_for
from pycontroller.workqueue import Queue


def cm(name: str, value: int = 0, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": {"v": str(value)},
    }


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[Any, ...]] = []
        self.resyncs = 0

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        with self.lock:
            self.events.append(
                ("add", obj["metadata"]["name"], obj["data"]["v"], is_in_initial_list)
            )

    def on_update(self, old: Any, new: Any) -> None:
        if old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]:
            # A relist re-delivering an unchanged object (client-go does this too).
            with self.lock:
                self.resyncs += 1
            return
        with self.lock:
            self.events.append(("update", new["metadata"]["name"], new["data"]["v"]))

    def on_delete(self, obj: Any) -> None:
        with self.lock:
            if isinstance(obj, DeletedFinalStateUnknown):
                self.events.append(("tombstone", obj.key))
            else:
                self.events.append(("delete", obj["metadata"]["name"]))

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self.lock:
            return list(self.events)

    def values(self, name: str) -> list[int]:
        return [int(e[2]) for e in self.snapshot() if e[0] in ("add", "update") and e[1] == name]


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    ev = threading.Event()
    yield ev
    ev.set()


def informer_for(
    server: APIServer, namespace: str | None = "default", *, fifo: str = "real"
) -> tuple[SharedIndexInformer, ResourceClient]:
    """An informer on configmaps, and a separate client (not rate-limited) to write with."""
    client = ResourceClient(server.api_client(), "", "v1", "configmaps")
    writer = ResourceClient(
        server.api_client(), "", "v1", "configmaps", rate_limiter=TokenBucketRateLimiter(qps=0)
    )
    informer = SharedIndexInformer(
        ListWatch.from_client(client, namespace=namespace),
        name="cms",
        fifo="delta" if fifo == "delta" else "real",
    )
    return informer, writer


def list_requests(server: APIServer) -> list[str]:
    """LISTs and streamed lists (informers stream their lists by default)."""
    return [
        r.path
        for r in server.requests("GET", r"/configmaps")
        if ("watch=true" not in r.path or "sendInitialEvents=true" in r.path)
        and re.search(r"/configmaps(\?|$)", r.path)
    ]


def watch_requests(server: APIServer) -> list[str]:
    return [r.path for r in server.requests("GET", r"/configmaps\?.*watch=true")]


def test_initial_list_and_live_events_reach_cache_and_handlers(
    apiserver: APIServer, stop: threading.Event
) -> None:
    inf, client = informer_for(apiserver)
    client.create(cm("a", 1))
    client.create(cm("b", 1))
    rec = Recorder()
    reg = inf.add_event_handler(rec)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, reg.has_synced, timeout=10)
    assert sorted(rec.snapshot()) == [("add", "a", "1", True), ("add", "b", "1", True)]
    client.patch("a", {"data": {"v": "2"}}, "default")
    client.create(cm("c", 1))
    client.delete("b", "default")
    client.patch("a", {"data": {"v": "3"}}, "default")
    wait_for(lambda: len(rec.snapshot()) == 6)
    live = rec.snapshot()[2:]
    assert [e for e in live if e[1] == "a"] == [("update", "a", "2"), ("update", "a", "3")]
    assert [e for e in live if e[1] != "a"] == [("add", "c", "1", False), ("delete", "b")]
    assert sorted(inf.get_store().list_keys()) == ["default/a", "default/c"]
    assert inf.get_store().get_by_key("default/a")["data"]["v"] == "3"
    assert inf.last_sync_resource_version() == str(apiserver.resource_version)


@pytest.mark.parametrize("fifo", ["real", "delta"])
def test_add_update_delete_add_of_one_key_is_four_events_in_order(
    apiserver: APIServer, stop: threading.Event, fifo: str
) -> None:
    """In-order informers (RealFIFO, the default) deliver every event of a key;
    the DeltaFIFO keeps them too (it merges only consecutive deletions)."""
    inf, client = informer_for(apiserver, fifo=fifo)
    rec = Recorder()
    reg = inf.add_event_handler(rec)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, reg.has_synced, timeout=10)
    client.create(cm("k", 1))
    client.patch("k", {"data": {"v": "2"}}, "default")
    client.delete("k", "default")
    client.create(cm("k", 3))
    wait_for(lambda: len(rec.snapshot()) == 4)
    assert rec.snapshot() == [
        ("add", "k", "1", False),
        ("update", "k", "2"),
        ("delete", "k"),
        ("add", "k", "3", False),
    ]
    assert inf.get_store().get_by_key("default/k")["data"]["v"] == "3"


def test_dropped_watches_lose_and_reorder_nothing(
    apiserver: APIServer, stop: threading.Event
) -> None:
    inf, client = informer_for(apiserver)
    names = [f"c{i}" for i in range(8)]
    for n in names:
        client.create(cm(n, 0))
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    writes_per_key = 40
    dropping = threading.Event()

    def dropper() -> None:
        # Drop the watch each time a new one has opened and delivered something, so
        # every watch ends mid-stream (a watch dropped before its first event would
        # count as a "very short watch" and make the reflector relist instead).
        dropped_at = 0  # number of watch requests when we last dropped
        while not dropping.is_set():
            while not dropping.is_set() and len(watch_requests(apiserver)) == dropped_at:
                time.sleep(0.005)
            seen = len(rec.snapshot())
            while not dropping.is_set() and len(rec.snapshot()) == seen:
                time.sleep(0.005)
            time.sleep(0.02)
            dropped_at = len(watch_requests(apiserver))
            apiserver.drop_watches()

    t = threading.Thread(target=dropper, daemon=True)
    t.start()

    def writer(name: str) -> None:
        for v in range(1, writes_per_key + 1):
            client.patch(name, {"data": {"v": str(v)}}, "default")

    writers = [threading.Thread(target=writer, args=(n,), daemon=True) for n in names]
    try:
        for w in writers:
            w.start()
        for w in writers:
            w.join(60)
    finally:
        dropping.set()
        t.join()
    apiserver.drop_watches()
    wait_for(lambda: all(rec.values(n)[-1:] == [writes_per_key] for n in names), timeout=20)
    assert len(watch_requests(apiserver)) > 3, "the test must actually drop watches"
    for n in names:
        seen = rec.values(n)
        assert seen == sorted(set(seen)), f"{n}: reordered or duplicated: {seen}"
        assert inf.get_store().get_by_key(f"default/{n}")["data"]["v"] == str(writes_per_key)
    if len(list_requests(apiserver)) == 1:
        # Only resumed watches (no relist): every single update was delivered.
        for n in names:
            assert rec.values(n) == list(range(writes_per_key + 1)), n


def test_compacted_history_forces_relist_with_tombstones(
    apiserver: APIServer, stop: threading.Event
) -> None:
    inf, client = informer_for(apiserver)
    client.create(cm("keep", 1))
    client.create(cm("doomed", 1))
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    wait_for(lambda: len(watch_requests(apiserver)) == 1)
    client.patch("keep", {"data": {"v": "1", "x": "y"}}, "default")  # the watch sees an event
    wait_for(lambda: len(rec.snapshot()) == 3)
    # Keep the informer from re-watching (429 = retry the watch later, no relist)...
    apiserver.fail_next(429, times=1000, method="GET", path_regex=r"configmaps\?.*watch=true")
    apiserver.drop_watches()
    wait_for(lambda: any(r.status == 429 for r in apiserver.request_log))
    # ...while the world changes and the history it would resume from is compacted.
    client.delete("doomed", "default")
    client.create(cm("new", 1))
    client.patch("keep", {"data": {"v": "2"}}, "default")
    apiserver.compact()
    apiserver.clear_faults()
    wait_for(lambda: ("tombstone", "default/doomed") in rec.snapshot(), timeout=30)
    wait_for(lambda: sorted(inf.get_store().list_keys()) == ["default/keep", "default/new"])
    tail = rec.snapshot()[3:]
    assert ("add", "new", "1", False) in tail
    assert ("update", "keep", "2") in tail
    assert len(list_requests(apiserver)) >= 2


def test_server_restart_is_survived_with_backoff(
    apiserver: APIServer, stop: threading.Event
) -> None:
    inf, client = informer_for(apiserver)
    client.create(cm("a", 1))
    rec = Recorder()
    inf.add_event_handler(rec)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    wait_for(lambda: len(watch_requests(apiserver)) == 1)
    apiserver.stop()
    time.sleep(1.0)  # the informer sees connection refused and backs off
    apiserver.start()
    client.create(cm("b", 1))
    client.patch("a", {"data": {"v": "2"}}, "default")
    wait_for(lambda: len(rec.snapshot()) == 3, timeout=30)
    assert rec.snapshot()[1:] in (
        [("add", "b", "1", False), ("update", "a", "2")],
        [("update", "a", "2"), ("add", "b", "1", False)],
    )
    assert inf.get_store().get_by_key("default/a")["data"]["v"] == "2"


def test_bookmarks_advance_the_resume_resource_version(
    apiserver_factory: Callable[..., APIServer], stop: threading.Event
) -> None:
    server = apiserver_factory(bookmark_interval=0.1)
    inf, client = informer_for(server)
    secrets = ResourceClient(server.api_client(), "", "v1", "secrets")
    client.create(cm("a", 1))
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    cm_rv = int(inf.last_sync_resource_version())
    for i in range(3):  # unrelated writes move the global resourceVersion on
        secrets.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"s{i}", "namespace": "default"},
            }
        )
    target = server.resource_version
    wait_for(lambda: int(inf.last_sync_resource_version() or 0) >= target, timeout=10)
    server.drop_watches()
    wait_for(lambda: len(watch_requests(server)) >= 2)
    resumed = watch_requests(server)[-1]
    m = re.search(r"resourceVersion=(\d+)", resumed)
    assert m is not None and int(m.group(1)) >= target > cm_rv
    assert len(list_requests(server)) == 1


def test_stop_returns_promptly_with_a_watch_open(apiserver: APIServer) -> None:
    inf, _ = informer_for(apiserver)
    stop = threading.Event()
    thread = inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    wait_for(lambda: apiserver.watch_count() == 1)
    t0 = time.monotonic()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - t0 < 5


CRD = Path(__file__).resolve().parents[2] / "crds" / "balancer.yaml"
SAMPLE = Path(__file__).resolve().parents[2] / "crds" / "samples" / "balancer.yaml"


def test_recreated_object_passes_generation_predicate_after_relist(
    apiserver_factory: Callable[..., APIServer], stop: threading.Event
) -> None:
    """Deleted and re-created (same name, same spec, generation 1 again) while the
    watch was down, then a compaction forces a relist: the informer reports an
    update with a new uid, and a generation_changed-filtered handler must see it."""
    server = apiserver_factory(crds=[str(CRD)])
    balancers = ResourceClient(
        server.api_client(),
        "exposer.hliangzhao.io",
        "v1alpha1",
        "balancers",
        rate_limiter=TokenBucketRateLimiter(qps=0),
    )
    sample = yaml.safe_load(SAMPLE.read_text())
    first = balancers.create(sample, "default")
    assert first["metadata"]["generation"] == 1
    informer = SharedIndexInformer(
        ListWatch.from_client(balancers, namespace="default"), name="balancers"
    )
    queue = Queue()
    informer.add_event_handler(predicate_handler(enqueue_key(queue), generation_changed))
    informer.start(stop)
    assert wait_for_cache_sync(stop, informer.has_synced, timeout=10)
    assert queue.get(timeout=5) == ("default/balancer-sample", False)
    queue.done("default/balancer-sample")
    wait_for(lambda: server.watch_count() == 1)
    # Keep the informer from re-watching (429: it retries the watch, no relist)...
    server.fail_next(429, times=1000, method="GET", path_regex=r"balancers\?.*watch=true")
    server.drop_watches()
    wait_for(lambda: any(r.status == 429 for r in server.request_log))
    # ...while the Balancer is deleted and created again, and the history compacted.
    balancers.delete("balancer-sample", "default")
    second = balancers.create(sample, "default")
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert second["metadata"]["generation"] == first["metadata"]["generation"]
    server.compact()
    server.clear_faults()
    wait_for(
        lambda: (informer.get_store().get_by_key("default/balancer-sample") or {})
        .get("metadata", {})
        .get("uid")
        == second["metadata"]["uid"],
        timeout=30,
        what="the relist to cache the re-created Balancer",
    )
    item, shutdown = queue.get(timeout=5)
    assert (item, shutdown) == ("default/balancer-sample", False)
