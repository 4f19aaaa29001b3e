"""Reflector over the embedded API server, writing into an Indexer."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pycontroller.cache import Indexer, ListWatch, Reflector
from pycontroller.client import ResourceClient, TokenBucketRateLimiter
from pycontroller.testing import APIServer, wait_for


def cm(name: str, value: int = 0, ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": {"v": str(value)},
    }


def rv_param(path: str) -> str | None:
    m = re.search(r"resourceVersion=(\d*)", path)
    return m.group(1) if m else None


@pytest.fixture
def setup(
    apiserver: APIServer,
) -> Iterator[tuple[APIServer, ResourceClient, Indexer, Callable[..., Reflector]]]:
    client = ResourceClient(
        apiserver.api_client(), "", "v1", "configmaps", rate_limiter=TokenBucketRateLimiter(qps=0)
    )
    store = Indexer()
    stops: list[threading.Event] = []
    threads: list[threading.Thread] = []

    def run(**kwargs: Any) -> Reflector:
        # These tests pin the paged LIST + watch protocol; streamed lists are
        # tested in test_watchlist.py.
        kwargs.setdefault("use_watch_list", False)
        r = Reflector(ListWatch.from_client(client, namespace="default"), store, "cms", **kwargs)
        stop = threading.Event()
        t = threading.Thread(target=r.run, args=(stop,), daemon=True)
        t.start()
        stops.append(stop)
        threads.append(t)
        return r

    yield apiserver, client, store, run
    for s in stops:
        s.set()
    for t in threads:
        t.join(5)
        assert not t.is_alive()


def watches(server: APIServer) -> list[str]:
    return [r.path for r in server.requests("GET", r"configmaps\?.*watch=true")]


def lists(server: APIServer) -> list[str]:
    return [
        r.path
        for r in server.requests("GET", r"/configmaps")
        if "watch=true" not in r.path and re.search(r"/configmaps(\?|$)", r.path)
    ]


def test_paged_list_then_watch_mirror_the_server(setup: Any) -> None:
    server, client, store, run = setup
    server.watch_cache = False  # the watch cache would answer the list at "0" unpaged
    for i in range(5):
        client.create(cm(f"c{i}"))
    r = run(page_size=2)
    wait_for(lambda: len(watches(server)) == 1)
    assert sorted(store.list_keys()) == [f"default/c{i}" for i in range(5)]
    pages = lists(server)
    assert len(pages) == 3 and all("limit=2" in p for p in pages)
    assert "continue=" in pages[1] and rv_param(pages[1]) is None
    client.patch("c1", {"data": {"v": "9"}}, "default")
    client.delete("c2", "default")
    client.create(cm("new"))
    wait_for(lambda: r.last_sync_resource_version() == str(server.resource_version))
    assert store.get_by_key("default/c1")["data"]["v"] == "9"
    assert store.get_by_key("default/c2") is None
    assert store.get_by_key("default/new") is not None


def test_expired_continue_token_falls_back_to_full_list(setup: Any) -> None:
    server, client, store, run = setup
    server.watch_cache = False  # the watch cache would answer the list at "0" unpaged
    for i in range(5):
        client.create(cm(f"c{i}"))
    server.fail_next(410, method="GET", path_regex=r"continue=")
    run(page_size=2)
    wait_for(lambda: len(watches(server)) == 1)
    assert sorted(store.list_keys()) == [f"default/c{i}" for i in range(5)]
    last_list = lists(server)[-1]
    assert "limit=" not in last_list and "continue=" not in last_list


def test_dropped_watch_resumes_from_last_event_rv(setup: Any) -> None:
    server, client, store, run = setup
    r = run()
    wait_for(lambda: len(watches(server)) == 1)
    client.create(cm("a"))
    client.patch("a", {"data": {"v": "1"}}, "default")
    wait_for(lambda: r.last_sync_resource_version() == str(server.resource_version))
    last = r.last_sync_resource_version()
    server.drop_watches()
    wait_for(lambda: len(watches(server)) == 2)
    assert rv_param(watches(server)[1]) == last
    assert len(lists(server)) == 1, "a dropped watch resumes, it does not relist"


def test_429_on_watch_retries_the_watch_without_relisting(setup: Any) -> None:
    server, client, store, run = setup
    r = run()
    wait_for(lambda: len(watches(server)) == 1)
    client.create(cm("a"))
    wait_for(lambda: store.get_by_key("default/a") is not None)
    server.fail_next(429, times=1, method="GET", path_regex=r"watch=true")
    server.drop_watches()
    wait_for(lambda: len(watches(server)) == 3, timeout=15)
    statuses = [x.status for x in server.requests("GET", r"configmaps\?.*watch=true")]
    assert statuses[1] == 429
    assert rv_param(watches(server)[2]) == r.last_sync_resource_version()
    assert len(lists(server)) == 1


def test_compaction_during_outage_relists(setup: Any) -> None:
    server, client, store, run = setup
    client.create(cm("a"))
    client.create(cm("b"))
    r = run()
    wait_for(lambda: len(watches(server)) == 1)
    client.create(cm("c"))  # the watch delivers an event, so its end is not "very short"
    wait_for(lambda: store.get_by_key("default/c") is not None)
    server.fail_next(429, times=1000, method="GET", path_regex=r"watch=true")
    server.drop_watches()
    wait_for(lambda: any(x.status == 429 for x in server.request_log))
    client.delete("b", "default")
    server.compact()
    server.clear_faults()
    wait_for(lambda: store.get_by_key("default/b") is None, timeout=30)
    assert len(lists(server)) == 2  # one relist, after the 410
    assert r.last_sync_resource_version() == str(server.resource_version)
