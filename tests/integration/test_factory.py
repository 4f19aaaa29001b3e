"""SharedInformerFactory over the embedded API server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller.cache import NAMESPACE_INDEX, ResourceEventHandlerFuncs, SharedInformerFactory
from pycontroller.client import ResourceClient
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer, wait_for


def cm(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
    }


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    ev = threading.Event()
    yield ev
    ev.set()


def test_same_informer_per_resource_and_listers_after_sync(
    apiserver: APIServer, stop: threading.Event
) -> None:
    api = apiserver.api_client()
    cms = ResourceClient(api, "", "v1", "configmaps")
    cms.create(cm("a", app="x"))
    cms.create(cm("b", app="y"))
    cms.create(cm("c", ns="kube-system", app="x"))
    factory = SharedInformerFactory(api)
    inf = factory.for_resource("", "v1", "configmaps")
    assert factory.for_resource("", "v1", "configmaps") is inf
    ns_inf = factory.for_resource("", "v1", "namespaces", namespaced=False)
    assert ns_inf is not inf
    lister = factory.lister("", "v1", "configmaps")
    factory.start(stop)
    synced = factory.wait_for_cache_sync(stop, timeout=10)
    assert synced == {"/v1/configmaps": True, "/v1/namespaces": True}
    assert lister.get("a", "default")["metadata"]["labels"] == {"app": "x"}
    assert sorted(o["metadata"]["name"] for o in lister.list("app=x")) == ["a", "c"]
    assert [o["metadata"]["name"] for o in lister.namespaced("kube-system").list()] == ["c"]
    with pytest.raises(NotFoundError):
        lister.get("zzz", "default")
    assert len(inf.get_indexer().by_index(NAMESPACE_INDEX, "default")) == 2
    ns_names = {o["metadata"]["name"] for o in factory.lister("", "v1", "namespaces").list()}
    assert {"default", "kube-system"} <= ns_names
    factory.shutdown()


def test_namespace_and_label_selector_restrict_what_is_cached(
    apiserver: APIServer, stop: threading.Event
) -> None:
    api = apiserver.api_client()
    cms = ResourceClient(api, "", "v1", "configmaps")
    cms.create(cm("in", app="x"))
    cms.create(cm("wrong-label", app="y"))
    cms.create(cm("wrong-ns", ns="kube-system", app="x"))
    factory = SharedInformerFactory(api, namespace="default", label_selector="app=x")
    inf = factory.for_resource("", "v1", "configmaps")
    adds: list[str] = []
    inf.add_event_handler(
        ResourceEventHandlerFuncs(add_func=lambda o: adds.append(o["metadata"]["name"]))
    )
    factory.start(stop)
    assert factory.wait_for_cache_sync(stop, timeout=10) == {"/v1/configmaps": True}
    assert inf.get_store().list_keys() == ["default/in"]
    cms.create(cm("later", app="x"))
    cms.create(cm("later-other", ns="kube-public", app="x"))
    wait_for(lambda: "later" in adds)
    assert sorted(adds) == ["in", "later"]
    factory.shutdown()


def test_start_is_incremental_and_shutdown_joins(apiserver: APIServer) -> None:
    api = apiserver.api_client()
    factory = SharedInformerFactory(api, resync_period=0)
    stop = threading.Event()
    first = factory.for_resource("", "v1", "configmaps")
    factory.start(stop)
    second = factory.for_resource("", "v1", "secrets")
    assert not second.has_started()
    factory.start(stop)  # starts only the new one
    assert factory.wait_for_cache_sync(stop, timeout=10) == {
        "/v1/configmaps": True,
        "/v1/secrets": True,
    }
    assert first.has_synced() and second.has_synced()
    factory.shutdown(timeout=5)
    assert first.is_stopped() and second.is_stopped()
    with pytest.raises(RuntimeError):
        factory.start(stop)


def test_user_stop_event_stops_factory_informers(apiserver: APIServer) -> None:
    factory = SharedInformerFactory(apiserver.api_client())
    inf = factory.for_resource("", "v1", "configmaps")
    stop = threading.Event()
    factory.start(stop)
    assert factory.wait_for_cache_sync(stop, timeout=10)["/v1/configmaps"]
    stop.set()
    wait_for(inf.is_stopped, timeout=5)
    factory.shutdown(timeout=5)


def test_wait_for_cache_sync_times_out_when_server_fails(apiserver: APIServer) -> None:
    apiserver.fail_next(500, times=1000, method="GET", path_regex=r"configmaps")
    factory = SharedInformerFactory(apiserver.api_client())
    factory.for_resource("", "v1", "configmaps")
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=0.5) == {"/v1/configmaps": False}
    finally:
        factory.shutdown(timeout=5)


def test_handler_helpers_feed_a_workqueue_from_a_live_informer(
    apiserver: APIServer, stop: threading.Event
) -> None:
    from pycontroller.handlers import (
        enqueue_key,
        enqueue_owner,
        generation_changed,
        predicate_handler,
    )
    from pycontroller.workqueue import Queue

    api = apiserver.api_client()
    cms = ResourceClient(api, "", "v1", "configmaps")
    owner = cms.create(cm("owner"))
    child = cm("child")
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": owner["metadata"]["uid"],
            "controller": True,
        }
    ]
    factory = SharedInformerFactory(api)
    inf = factory.for_resource("", "v1", "configmaps")
    keys, owners = Queue(), Queue()
    inf.add_event_handler(predicate_handler(enqueue_key(keys), generation_changed))
    inf.add_event_handler(enqueue_owner(owners, "ConfigMap", ""))
    factory.start(stop)
    assert factory.wait_for_cache_sync(stop, timeout=10)["/v1/configmaps"]
    cms.create(child)
    wait_for(lambda: len(owners) == 1 and len(keys) == 2)
    assert owners.get(timeout=1) == ("default/owner", False)
    got = {keys.get(timeout=1)[0], keys.get(timeout=1)[0]}
    assert got == {"default/owner", "default/child"}
    factory.shutdown(timeout=5)
