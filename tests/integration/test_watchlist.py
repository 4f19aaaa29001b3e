"""Streaming lists (WatchList) and metadata-only informers over the embedded API
server: the reflector streams its list (no LIST in the request log), applies it
with one replace, keeps watching on the same stream, resumes after drops,
relists by streaming after compaction (tombstones for what went away), falls
back to paged LIST by itself against servers without the feature (and
remembers), and its consistency check catches a stream that differs from a
LIST. The factory makes metadata-only informers caching PartialObjectMetadata."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller.cache import (
    DeletedFinalStateUnknown,
    DeltaFIFO,
    Indexer,
    Lister,
    ListWatch,
    Reflector,
    SharedIndexInformer,
    SharedInformerFactory,
    meta_namespace_key_func,
    wait_for_cache_sync,
)
from pycontroller.cache.reflector import (
    WATCH_LIST_INCONSISTENCY_DETECTOR_ENV,
    WatchListInconsistencyError,
)
from pycontroller.client import ResourceClient, TokenBucketRateLimiter
from pycontroller.testing import APIServer, wait_for

STREAMED = r"configmaps\?.*sendInitialEvents=true"


def cm(name: str, value: int = 0, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {"v": str(value)},
    }


def writer(server: APIServer) -> ResourceClient:
    return ResourceClient(
        server.api_client(), "", "v1", "configmaps", rate_limiter=TokenBucketRateLimiter(qps=0)
    )


def lw(server: APIServer) -> ListWatch:
    client = ResourceClient(server.api_client(), "", "v1", "configmaps")
    return ListWatch.from_client(client, namespace="default")


def streamed(server: APIServer) -> list[str]:
    return [r.path for r in server.requests("GET", STREAMED)]


def lists(server: APIServer) -> list[str]:
    return [
        r.path
        for r in server.requests("GET", r"/configmaps")
        if "watch=true" not in r.path and re.search(r"/configmaps(\?|$)", r.path)
    ]


def watches(server: APIServer) -> list[str]:
    """Plain watches (not streamed lists)."""
    return [
        r.path
        for r in server.requests("GET", r"configmaps\?.*watch=true")
        if "sendInitialEvents" not in r.path
    ]


def rv_param(path: str) -> str | None:
    m = re.search(r"resourceVersion=(\d*)", path)
    return m.group(1) if m else None


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        with self.lock:
            self.events.append(("add", obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        if old["metadata"]["resourceVersion"] != new["metadata"]["resourceVersion"]:
            with self.lock:
                self.events.append(("update", new["metadata"]["name"]))

    def on_delete(self, obj: Any) -> None:
        with self.lock:
            if isinstance(obj, DeletedFinalStateUnknown):
                self.events.append(("tombstone", obj.key))
            else:
                self.events.append(("delete", obj["metadata"]["name"]))

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self.lock:
            return list(self.events)


class Running:
    """Reflectors and informers started in threads, stopped at teardown."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def reflector(self, r: Reflector) -> Reflector:
        def run() -> None:
            try:
                r.run(self.stop)
            except BaseException as err:
                self.errors.append(err)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)
        return r

    def informer(self, inf: SharedIndexInformer) -> SharedIndexInformer:
        self.threads.append(inf.start(self.stop))
        return inf


@pytest.fixture
def running() -> Iterator[Running]:
    r = Running()
    yield r
    r.stop.set()
    for t in r.threads:
        t.join(5)
        assert not t.is_alive()


# --------------------------------------------------------------------------- streaming


def test_streamed_list_then_watch_on_the_same_stream(
    apiserver: APIServer, running: Running
) -> None:
    client = writer(apiserver)
    for i in range(5):
        client.create(cm(f"c{i}"))
    store = Indexer(meta_namespace_key_func)
    r = running.reflector(Reflector(lw(apiserver), store, "cms"))
    wait_for(lambda: len(store.list_keys()) == 5)
    assert sorted(store.list_keys()) == [f"default/c{i}" for i in range(5)]
    assert r.last_sync_resource_version() == str(apiserver.resource_version)
    (path,) = streamed(apiserver)
    assert "watch=true" in path and "allowWatchBookmarks=true" in path
    assert "resourceVersionMatch=NotOlderThan" in path
    assert rv_param(path) is None  # the first stream is a consistent read ("")
    assert lists(apiserver) == [] and watches(apiserver) == []
    # Changes arrive on the same stream: no new request.
    client.patch("c1", {"data": {"v": "9"}}, "default")
    client.delete("c2", "default")
    client.create(cm("new"))
    wait_for(lambda: r.last_sync_resource_version() == str(apiserver.resource_version))
    assert store.get_by_key("default/c1")["data"]["v"] == "9"
    assert store.get_by_key("default/c2") is None
    assert store.get_by_key("default/new")["kind"] == "ConfigMap"
    assert len(streamed(apiserver)) == 1 and watches(apiserver) == [] and lists(apiserver) == []


def test_dropped_stream_resumes_as_a_plain_watch(apiserver: APIServer, running: Running) -> None:
    client = writer(apiserver)
    client.create(cm("a"))
    store = Indexer(meta_namespace_key_func)
    r = running.reflector(Reflector(lw(apiserver), store, "cms"))
    wait_for(lambda: store.get_by_key("default/a") is not None)
    client.patch("a", {"data": {"v": "1"}}, "default")
    wait_for(lambda: r.last_sync_resource_version() == str(apiserver.resource_version))
    last = r.last_sync_resource_version()
    apiserver.drop_watches()
    wait_for(lambda: len(watches(apiserver)) == 1)
    assert rv_param(watches(apiserver)[0]) == last
    client.create(cm("b"))
    wait_for(lambda: store.get_by_key("default/b") is not None)
    assert len(streamed(apiserver)) == 1 and lists(apiserver) == []


def test_relist_after_compaction_streams_and_tombstones(
    apiserver: APIServer, running: Running
) -> None:
    client = writer(apiserver)
    client.create(cm("keep", 1))
    client.create(cm("doomed", 1))
    inf = SharedIndexInformer(lw(apiserver), name="cms")
    rec = Recorder()
    inf.add_event_handler(rec)
    running.informer(inf)
    assert wait_for_cache_sync(running.stop, inf.has_synced, timeout=10)
    assert sorted(rec.snapshot()) == [("add", "doomed", True), ("add", "keep", True)]
    client.patch("keep", {"data": {"v": "2"}}, "default")  # the stream delivers an event
    wait_for(lambda: ("update", "keep") in rec.snapshot())
    # Keep it from re-watching while the world changes and history is compacted.
    apiserver.fail_next(429, times=1000, method="GET", path_regex=r"configmaps\?.*watch=true")
    apiserver.drop_watches()
    wait_for(lambda: any(x.status == 429 for x in apiserver.request_log))
    last = inf.last_sync_resource_version()
    client.delete("doomed", "default")
    client.create(cm("new", 1))
    apiserver.compact()
    apiserver.clear_faults()
    wait_for(lambda: ("tombstone", "default/doomed") in rec.snapshot(), timeout=30)
    wait_for(lambda: sorted(inf.get_store().list_keys()) == ["default/keep", "default/new"])
    assert ("add", "new", False) in rec.snapshot()
    # The relist was a second stream, "not older than" the last synced RV; no LIST.
    ok = [x.path for x in apiserver.requests("GET", STREAMED) if x.status == 200]
    assert len(ok) == 2 and rv_param(ok[1]) == last
    assert lists(apiserver) == []


def test_gone_while_streaming_restarts_from_a_consistent_read(
    apiserver: APIServer, running: Running
) -> None:
    client = writer(apiserver)
    client.create(cm("a"))
    store = Indexer(meta_namespace_key_func)
    r = running.reflector(Reflector(lw(apiserver), store, "cms"))
    wait_for(lambda: store.get_by_key("default/a") is not None)
    client.create(cm("b"))
    wait_for(lambda: store.get_by_key("default/b") is not None)
    # The next watch (a resume) is 410: relist by streaming; that stream is 410
    # too: stream again at once from "" (the last RV is unavailable).
    apiserver.fail_next(410, times=2, method="GET", path_regex=r"configmaps\?.*watch=true")
    apiserver.drop_watches()
    wait_for(lambda: len([x for x in apiserver.requests("GET", STREAMED) if x.status == 200]) == 2)
    ok = [x.path for x in apiserver.requests("GET", STREAMED) if x.status == 200]
    assert rv_param(ok[1]) is None
    client.create(cm("c"))
    wait_for(lambda: store.get_by_key("default/c") is not None)
    assert r.uses_watch_list() and lists(apiserver) == []


def test_use_watch_list_false_always_lists(apiserver: APIServer, running: Running) -> None:
    writer(apiserver).create(cm("a"))
    store = Indexer(meta_namespace_key_func)
    r = running.reflector(Reflector(lw(apiserver), store, "cms", use_watch_list=False))
    wait_for(lambda: store.get_by_key("default/a") is not None)
    assert not r.uses_watch_list()
    assert streamed(apiserver) == [] and len(lists(apiserver)) == 1


def test_fallback_when_the_server_rejects_streaming(apiserver: APIServer, running: Running) -> None:
    apiserver.watch_list = False  # 422, as kube-apiserver with WatchList off
    client = writer(apiserver)
    client.create(cm("a"))
    store = Indexer(meta_namespace_key_func)
    r = running.reflector(Reflector(lw(apiserver), store, "cms"))
    wait_for(lambda: store.get_by_key("default/a") is not None)
    assert [x.status for x in apiserver.requests("GET", STREAMED)] == [422]
    assert len(lists(apiserver)) == 1 and not r.uses_watch_list()
    # Remembered: a relist (compacted history) is a LIST again, no new stream.
    client.create(cm("b"))
    wait_for(lambda: store.get_by_key("default/b") is not None)
    apiserver.fail_next(429, times=1000, method="GET", path_regex=r"watch=true")
    apiserver.drop_watches()
    wait_for(lambda: any(x.status == 429 for x in apiserver.request_log))
    client.create(cm("c"))
    apiserver.compact()
    apiserver.clear_faults()
    wait_for(lambda: store.get_by_key("default/c") is not None, timeout=30)
    assert len(lists(apiserver)) == 2
    assert [x.status for x in apiserver.requests("GET", STREAMED)] == [422]


def test_fallback_when_the_server_ignores_streaming(apiserver: APIServer, running: Running) -> None:
    apiserver.watch_list = "ignore"  # a legacy watch: no end bookmark ever comes
    writer(apiserver).create(cm("a"))
    store = Indexer(meta_namespace_key_func)
    t0 = time.monotonic()
    r = running.reflector(Reflector(lw(apiserver), store, "cms", watch_list_timeout=0.5))
    wait_for(lambda: store.get_by_key("default/a") is not None, timeout=10)
    assert time.monotonic() - t0 >= 0.5
    assert len(streamed(apiserver)) == 1 and len(lists(apiserver)) == 1
    # Per attempt: silence is no proof the server cannot stream (a slow one
    # looks the same), so the next relist tries streaming again.
    assert r.uses_watch_list()


def test_fallback_on_a_bookmark_without_the_end_annotation(
    apiserver_factory: Any, running: Running
) -> None:
    server = apiserver_factory(bookmark_interval=0.1)
    server.watch_list = "ignore"
    writer(server).create(cm("a"))
    store = Indexer(meta_namespace_key_func)
    # A long idle timeout: only the plain bookmark can end the attempt this fast.
    t0 = time.monotonic()
    r = running.reflector(Reflector(lw(server), store, "cms", watch_list_timeout=60))
    # kube sends a bookmark only past the watch's start: another kind's write
    # moves the resourceVersion on (cacheWatcher.process).
    wait_for(lambda: server.watch_count() >= 1, timeout=10)
    ResourceClient(server.api_client(), "", "v1", "secrets").create(
        {"metadata": {"name": "s", "namespace": "default"}}, namespace="default"
    )
    wait_for(lambda: len(lists(server)) == 1, timeout=10)
    wait_for(lambda: store.get_by_key("default/a") is not None)
    assert time.monotonic() - t0 < 10 and not r.uses_watch_list()


def test_informer_default_streams_and_syncs(apiserver: APIServer, running: Running) -> None:
    client = writer(apiserver)
    for i in range(3):
        client.create(cm(f"c{i}"))
    inf = running.informer(SharedIndexInformer(lw(apiserver), name="cms"))
    assert wait_for_cache_sync(running.stop, inf.has_synced, timeout=10)
    assert len(inf.get_store().list()) == 3
    assert len(streamed(apiserver)) == 1 and lists(apiserver) == []


# --------------------------------------------------------------------------- consistency check


class Dropping:
    """A ListerWatcher whose streamed lists lose one object (an injected inconsistency)."""

    supports_watch_list = True

    def __init__(self, inner: ListWatch, drop: str) -> None:
        self.inner = inner
        self.drop = drop

    def list(self, **options: Any) -> dict[str, Any]:
        return self.inner.list(**options)

    def watch(self, **options: Any) -> Any:
        stream = self.inner.watch(**options)
        if not options.get("send_initial_events"):
            return stream
        return _Filtered(stream, self.drop)


class _Filtered:
    def __init__(self, stream: Any, drop: str) -> None:
        self.stream = stream
        self.drop = drop

    def __iter__(self) -> _Filtered:
        return self

    def __next__(self) -> dict[str, Any]:
        while True:
            ev = next(self.stream)
            if ev["object"].get("metadata", {}).get("name") != self.drop:
                return ev

    def close(self) -> None:
        self.stream.close()


def test_consistency_check_catches_an_injected_difference(apiserver: APIServer) -> None:
    client = writer(apiserver)
    for name in ("a", "b", "c"):
        client.create(cm(name))
    store = Indexer(meta_namespace_key_func)
    r = Reflector(Dropping(lw(apiserver), "b"), store, "cms", check_watch_list_consistency=True)
    stop = threading.Event()
    with pytest.raises(WatchListInconsistencyError, match="1 missing"):
        r.list_and_watch(stop)
    assert store.list_keys() == []  # never applied
    # run() does not retry it: the reflector stops, loudly.
    with pytest.raises(WatchListInconsistencyError):
        r.run(stop)
    exact = [x.path for x in apiserver.requests("GET", r"resourceVersionMatch=Exact")]
    assert exact and all("watch" not in p for p in exact)


def test_consistency_check_passes_a_faithful_stream(
    apiserver: APIServer, running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WATCH_LIST_INCONSISTENCY_DETECTOR_ENV, "true")
    client = writer(apiserver)
    for name in ("a", "b"):
        client.create(cm(name))
    store = Indexer(meta_namespace_key_func)
    r = Reflector(lw(apiserver), store, "cms")
    assert r.check_watch_list_consistency
    running.reflector(r)
    wait_for(lambda: len(store.list_keys()) == 2)
    (check,) = lists(apiserver)
    assert "resourceVersionMatch=Exact" in check
    assert rv_param(check) == r.last_sync_resource_version()
    assert running.errors == []


# --------------------------------------------------------------------------- metadata only


def test_metadata_only_informer(apiserver: APIServer, running: Running) -> None:
    client = writer(apiserver)
    client.create(cm("a", 1, app="web"))
    client.create(cm("b", 2, app="db"))
    factory = SharedInformerFactory(apiserver.api_client())
    full = factory.for_resource("", "v1", "configmaps")
    meta = factory.for_resource("", "v1", "configmaps", metadata_only=True)
    assert meta is not full
    assert factory.for_resource("", "v1", "configmaps", True, True) is meta
    assert set(factory.informers()) == {"/v1/configmaps", "/v1/configmaps#metadata"}
    factory.start(running.stop)
    assert all(factory.wait_for_cache_sync(running.stop, timeout=10).values())
    obj = meta.get_store().get_by_key("default/a")
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.k8s.io/v1"
    assert set(obj) == {"kind", "apiVersion", "metadata"}
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert full.get_store().get_by_key("default/a")["data"] == {"v": "1"}
    lister: Lister[Any] = factory.lister("", "v1", "configmaps", metadata_only=True)
    assert [o["metadata"]["name"] for o in lister.list("app=web")] == ["a"]
    assert lister.namespaced("default").get("b")["metadata"]["labels"] == {"app": "db"}
    # Live changes reach it as metadata too.
    client.patch("b", {"metadata": {"labels": {"app": "web"}}}, "default")
    wait_for(lambda: len(lister.list("app=web")) == 2)
    client.delete("a", "default")
    wait_for(lambda: meta.get_store().get_by_key("default/a") is None)
    assert all(o["kind"] == "PartialObjectMetadata" for o in meta.get_store().list())
    # Both streamed their lists, neither LISTed.
    assert len(streamed(apiserver)) == 2 and lists(apiserver) == []


def test_metadata_only_client_and_paged_list(apiserver: APIServer) -> None:
    client = writer(apiserver)
    for i in range(5):
        client.create(cm(f"c{i}", i))
    meta = ResourceClient(apiserver.api_client(), "", "v1", "configmaps", metadata_only=True)
    page = meta.list("default", limit=2)
    assert page["kind"] == "PartialObjectMetadataList" and page["metadata"]["continue"]
    assert [set(i) for i in page["items"]] == [{"kind", "apiVersion", "metadata"}] * 2
    assert [i["metadata"]["name"] for i in meta.iter_list("default", page_size=2)] == [
        f"c{i}" for i in range(5)
    ]
    assert meta.get("c3", "default")["kind"] == "PartialObjectMetadata"
    # A metadata-only reflector that always lists fills a DeltaFIFO with metadata.
    fifo = DeltaFIFO(meta_namespace_key_func)
    r = Reflector(
        ListWatch.from_client(meta, "default"), fifo, "m", use_watch_list=False, page_size=2
    )
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,), daemon=True)
    t.start()
    try:
        wait_for(lambda: len(fifo.list_keys()) == 5)
        assert all(o["kind"] == "PartialObjectMetadata" for o in fifo.list())
    finally:
        stop.set()
        t.join(5)
