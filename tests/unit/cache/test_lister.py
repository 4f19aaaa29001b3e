"""Lister / NamespaceLister over an Indexer."""

from __future__ import annotations

from typing import Any

import pytest

from pycontroller.cache import (
    NAMESPACE_INDEX,
    Indexer,
    Lister,
    NamespaceLister,
    meta_namespace_index_func,
)
from pycontroller.errors import ApiError, NotFoundError


def obj(name: str, namespace: str = "", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"metadata": meta, "spec": {"replicas": 1}}


def names(objs: list[Any]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


@pytest.fixture(params=[True, False], ids=["with-ns-index", "without-ns-index"])
def indexer(request: pytest.FixtureRequest) -> Indexer:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func} if request.param else None)
    idx.add(obj("web-1", "prod", app="web", tier="front"))
    idx.add(obj("web-2", "prod", app="web", tier="back"))
    idx.add(obj("db-1", "prod", app="db"))
    idx.add(obj("web-1", "dev", app="web"))
    idx.add(obj("unlabelled", "dev"))
    idx.add(obj("node-a"))
    return idx


def test_list_all_and_by_selector(indexer: Indexer) -> None:
    lister = Lister(indexer)
    assert len(lister.list()) == 6
    assert len(lister.list("")) == 6
    assert names(lister.list("app=web")) == ["web-1", "web-1", "web-2"]
    assert names(lister.list({"app": "web", "tier": "front"})) == ["web-1"]
    assert names(lister.list("app in (db),!tier")) == ["db-1"]
    assert names(lister.list("app!=web")) == ["db-1", "node-a", "unlabelled"]
    assert names(lister.list({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})) == [
        "web-1",
        "web-2",
    ]


def test_malformed_selector_raises(indexer: Indexer) -> None:
    with pytest.raises(ValueError):
        Lister(indexer).list("app in (web")
    with pytest.raises(ValueError):
        Lister(indexer).namespaced("prod").list("=x")


def test_get(indexer: Indexer) -> None:
    lister = Lister(indexer)
    assert lister.get("web-1", "prod")["metadata"]["labels"]["tier"] == "front"
    assert lister.get("web-1", namespace="dev")["metadata"]["namespace"] == "dev"
    assert lister.get("node-a")["metadata"]["name"] == "node-a"


def test_get_missing_raises_not_found(indexer: Indexer) -> None:
    lister = Lister(indexer)
    with pytest.raises(NotFoundError) as info:
        lister.get("nope", "prod")
    err = info.value
    assert isinstance(err, ApiError)
    assert err.status == 404 and err.reason == "NotFound"
    assert '"prod/nope" not found' in err.message
    with pytest.raises(NotFoundError):
        lister.get("web-1")  # cluster-scoped key "web-1" does not exist


def test_not_found_message_names_resource() -> None:
    lister = Lister(Indexer(), resource="balancers.exposer.hliangzhao.io")
    with pytest.raises(NotFoundError) as info:
        lister.get("x", "default")
    assert info.value.message == 'balancers.exposer.hliangzhao.io "x" not found'
    with pytest.raises(NotFoundError) as info:
        lister.namespaced("default").get("y")
    assert info.value.message == 'balancers.exposer.hliangzhao.io "y" not found'


def test_namespaced(indexer: Indexer) -> None:
    prod = Lister(indexer).namespaced("prod")
    assert isinstance(prod, NamespaceLister)
    assert prod.namespace == "prod"
    assert names(prod.list()) == ["db-1", "web-1", "web-2"]
    assert names(prod.list("app=web")) == ["web-1", "web-2"]
    assert names(prod.list({"tier": "back"})) == ["web-2"]
    assert prod.get("db-1")["metadata"]["labels"] == {"app": "db"}
    with pytest.raises(NotFoundError):
        prod.get("unlabelled")

    dev = Lister(indexer).namespaced("dev")
    assert names(dev.list()) == ["unlabelled", "web-1"]
    assert names(dev.list("!app")) == ["unlabelled"]
    assert Lister(indexer).namespaced("empty").list() == []


def test_empty_namespace_view_is_namespace_all(indexer: Indexer) -> None:
    """client-go's ``Pods("").List``: ``""`` is ``metav1.NamespaceAll``, every
    object; ``get`` there finds a cluster-scoped object by its name."""
    everything = Lister(indexer).namespaced("")
    assert names(everything.list()) == names(Lister(indexer).list())
    assert "node-a" in names(everything.list()) and len(everything.list()) > 1
    assert everything.get("node-a")["metadata"]["name"] == "node-a"


def test_objects_are_shared_and_get_copy_is_private(indexer: Indexer) -> None:
    lister = Lister(indexer)
    shared = lister.get("web-1", "prod")
    assert shared is indexer.get_by_key("prod/web-1")

    mine = lister.get_copy("web-1", "prod")
    mine["spec"]["replicas"] = 9
    mine["metadata"]["labels"]["app"] = "changed"
    assert indexer.get_by_key("prod/web-1")["spec"]["replicas"] == 1
    assert names(lister.list("app=changed")) == []

    ns_copy = lister.namespaced("prod").get_copy("db-1")
    ns_copy["spec"]["replicas"] = 3
    assert indexer.get_by_key("prod/db-1")["spec"]["replicas"] == 1


def test_lister_sees_cache_updates() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    lister = Lister(idx)
    assert lister.list() == []
    idx.add(obj("a", "ns", app="x"))
    assert names(lister.namespaced("ns").list("app=x")) == ["a"]
    idx.update(obj("a", "ns", app="y"))
    assert lister.namespaced("ns").list("app=x") == []
    idx.delete(obj("a", "ns"))
    with pytest.raises(NotFoundError):
        lister.get("a", "ns")
    assert lister.indexer is idx
