"""Indexer behaviour (client-go index_test.go and thread_safe_store_test.go)."""

from __future__ import annotations

import threading
from types import MappingProxyType
from typing import Any

import pytest

from pycontroller.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    KeyFuncError,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_index_func,
)


def pod(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def users_pod(name: str, users: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": {"users": users}}}


def users_index(obj: Any) -> list[str]:
    return str(obj["metadata"]["annotations"]["users"]).split(",")


def label_index(label: str) -> Any:
    def func(obj: Any) -> list[str]:
        value = obj["metadata"].get("labels", {}).get(label)
        return [value] if value is not None else []

    return func


def names(objs: list[Any]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


def test_index_by_value() -> None:
    store = Indexer(key_func=lambda o: o["key"], indexers={"by_val": lambda o: [o["val"]]})
    for key, val in (("a", "b"), ("c", "b"), ("e", "f"), ("g", "h")):
        store.add({"key": key, "val": val})
    assert {o["key"] for o in store.index("by_val", {"key": "q", "val": "b"})} == {"a", "c"}
    assert {o["key"] for o in store.index("by_val", {"key": "q", "val": "f"})} == {"e"}
    assert {o["key"] for o in store.index("by_val", {"key": "q", "val": "h"})} == {"g"}


def test_list_index_func_values() -> None:
    store = Indexer(indexers={"testmodes": label_index("foo")})
    store.add(pod("one", foo="bar"))
    store.add(pod("two", foo="bar"))
    store.add(pod("tre", foo="biz"))
    assert sorted(store.list_index_func_values("testmodes")) == ["bar", "biz"]


def test_multi_index_keys() -> None:
    store = Indexer(indexers={"byUser": users_index})
    store.add(users_pod("one", "ernie,bert"))
    store.add(users_pod("two", "bert,oscar"))
    store.add(users_pod("tre", "ernie,elmo"))

    expected = {
        "ernie": {"one", "tre"},
        "bert": {"one", "two"},
        "elmo": {"tre"},
        "oscar": {"two"},
        "elmo1": set(),
    }
    for user, pods in expected.items():
        assert names(store.by_index("byUser", user)) == pods
        assert store.index_keys("byUser", user) == sorted(f"ns/{p}" for p in pods)

    store.delete(users_pod("tre", "ernie,elmo"))
    assert names(store.by_index("byUser", "ernie")) == {"one"}
    assert names(store.by_index("byUser", "elmo")) == set()
    assert "elmo" not in store.list_index_func_values("byUser")

    store.update(users_pod("two", "oscar"))
    assert names(store.by_index("byUser", "bert")) == {"one"}
    assert names(store.by_index("byUser", "oscar")) == {"two"}

    # index() with several values returns each object once.
    found = store.index("byUser", users_pod("q", "ernie,bert"))
    assert sorted(o["metadata"]["name"] for o in found) == ["one"]


def test_update_moves_key_between_index_values() -> None:
    store = Indexer(indexers={"app": label_index("app")})
    store.add(pod("p", app="web"))
    assert store.index_keys("app", "web") == ["default/p"]
    store.update(pod("p", app="db"))
    assert store.index_keys("app", "web") == []
    assert store.index_keys("app", "db") == ["default/p"]
    assert store.list_index_func_values("app") == ["db"]
    # Losing the label removes the key from the index entirely.
    store.update(pod("p"))
    assert store.list_index_func_values("app") == []
    store.add(pod("p", app="web"))
    assert store.index_keys("app", "web") == ["default/p"]


def test_empty_index_sets_are_removed_and_nonempty_kept() -> None:
    store = Indexer(key_func=lambda o: o, indexers={"self": lambda o: [o]})
    store.add("k")
    assert store.list_index_func_values("self") == ["k"]
    store.delete("k")
    assert store.list_index_func_values("self") == []

    shared = Indexer(key_func=lambda o: o, indexers={"same": lambda o: ["v"]})
    shared.add("a")
    shared.add("b")
    shared.delete("a")
    assert shared.index_keys("same", "v") == ["b"]


def test_multiple_valued_index_updates() -> None:
    """client-go TestThreadSafeStoreIndexingFunctionsWithMultipleValues."""
    store = Indexer(key_func=lambda o: o[0], indexers={"split": lambda o: o[1].split(",")})

    def check(expected: dict[str, list[str]]) -> None:
        for value, keys in expected.items():
            assert store.index_keys("split", value) == keys, value

    store.add(("key1", "foo"))
    store.add(("key2", "bar"))
    check({"foo": ["key1"], "bar": ["key2"]})
    store.update(("key2", "foo,bar"))
    check({"foo": ["key1", "key2"], "bar": ["key2"]})
    store.update(("key1", "foo,bar"))
    check({"foo": ["key1", "key2"], "bar": ["key1", "key2"]})
    store.add(("key3", "foo,bar,baz"))
    check({"foo": ["key1", "key2", "key3"], "bar": ["key1", "key2", "key3"], "baz": ["key3"]})
    store.update(("key1", "foo"))
    check({"foo": ["key1", "key2", "key3"], "bar": ["key2", "key3"], "baz": ["key3"]})
    store.update(("key2", "bar"))
    check({"foo": ["key1", "key3"], "bar": ["key2", "key3"], "baz": ["key3"]})
    store.delete(("key1", "ignored"))
    check({"foo": ["key3"], "bar": ["key2", "key3"], "baz": ["key3"]})
    store.delete(("key3", "ignored"))
    check({"foo": [], "bar": ["key2"], "baz": []})
    assert sorted(store.list_index_func_values("split")) == ["bar"]


def test_namespace_index() -> None:
    store = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    store.add(pod("a", "ns1"))
    store.add(pod("b", "ns1"))
    store.add(pod("c", "ns2"))
    store.add({"metadata": {"name": "node"}})
    assert names(store.by_index(NAMESPACE_INDEX, "ns1")) == {"a", "b"}
    assert names(store.by_index(NAMESPACE_INDEX, "")) == {"node"}
    assert sorted(store.list_index_func_values(NAMESPACE_INDEX)) == ["", "ns1", "ns2"]


def test_replace_rebuilds_indices() -> None:
    store = Indexer(indexers={"app": label_index("app")})
    store.add(pod("old", app="web"))
    store.replace([pod("new1", app="db"), pod("new2", app="db")], "42")
    assert store.index_keys("app", "web") == []
    assert store.index_keys("app", "db") == ["default/new1", "default/new2"]
    assert store.list_index_func_values("app") == ["db"]
    store.delete(pod("new1"))
    assert store.index_keys("app", "db") == ["default/new2"]


def test_add_indexers_on_non_empty_store() -> None:
    store = Indexer(indexers={"app": label_index("app")})
    store.add(pod("a", app="web", tier="front"))
    store.add(pod("b", app="db", tier="back"))
    store.add_indexers({"tier": label_index("tier")})
    assert store.index_keys("tier", "front") == ["default/a"]
    assert store.index_keys("tier", "back") == ["default/b"]
    # New index stays maintained afterwards.
    store.update(pod("a", app="web", tier="back"))
    assert store.index_keys("tier", "back") == ["default/a", "default/b"]
    assert set(store.get_indexers()) == {"app", "tier"}


def test_add_indexers_conflict() -> None:
    store = Indexer(indexers={"app": label_index("app")})
    with pytest.raises(ValueError, match="app"):
        store.add_indexers({"app": label_index("x"), "other": label_index("y")})
    # Nothing from the failed call was added.
    with pytest.raises(KeyError):
        store.by_index("other", "v")


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.by_index("nope", "v"),
        lambda s: s.index_keys("nope", "v"),
        lambda s: s.index("nope", pod("a")),
        lambda s: s.list_index_func_values("nope"),
    ],
)
def test_unknown_index_name_raises_key_error(call: Any) -> None:
    store = Indexer()
    store.add(pod("a"))
    with pytest.raises(KeyError):
        call(store)


def test_unknown_index_value_is_empty() -> None:
    store = Indexer(indexers={"app": label_index("app")})
    assert store.by_index("app", "missing") == []
    assert store.index_keys("app", "missing") == []


def test_delete_with_tombstone_uses_stored_object_for_index() -> None:
    store = Indexer(
        key_func=deletion_handling_meta_namespace_key_func,
        indexers={NAMESPACE_INDEX: meta_namespace_index_func, "app": label_index("app")},
    )
    store.add(pod("a", "ns", app="web"))
    store.delete(DeletedFinalStateUnknown("ns/a", None))
    assert store.list() == []
    assert store.list_index_func_values("app") == []
    assert store.list_index_func_values(NAMESPACE_INDEX) == []


def test_failing_index_func_leaves_store_consistent() -> None:
    def picky(obj: Any) -> list[str]:
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("boom")
        return [obj["metadata"]["name"]]

    store = Indexer(indexers={"name": picky})
    store.add(pod("good"))
    with pytest.raises(Exception, match="boom"):
        store.add(pod("bad"))
    assert store.list_keys() == ["default/good"]
    assert store.list_index_func_values("name") == ["good"]


def test_concurrent_writers_keep_indices_exact() -> None:
    store = Indexer(
        indexers={"app": label_index("app"), NAMESPACE_INDEX: meta_namespace_index_func}
    )
    apps = ["a", "b", "c"]

    def writer(worker: int) -> None:
        for i in range(300):
            name = f"p{i % 30}"
            ns = f"ns{worker}"
            if i % 7 == 0:
                store.delete(pod(name, ns))
            else:
                store.update(pod(name, ns, app=apps[(i + worker) % 3]))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # Recompute indices from the items and compare with what the store keeps.
    objs = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o for o in store.list()}
    for app in apps:
        expected = sorted(k for k, o in objs.items() if o["metadata"]["labels"].get("app") == app)
        assert store.index_keys("app", app) == expected
    for w in range(8):
        expected = sorted(k for k in objs if k.startswith(f"ns{w}/"))
        assert store.index_keys(NAMESPACE_INDEX, f"ns{w}") == expected


def test_index_func_errors_wrap_only_malformed_object_errors() -> None:
    from pycontroller.cache.index import IndexFuncError

    def by_label(obj: Any) -> list[str]:
        return [obj["metadata"]["labels"]["app"]]  # KeyError when unlabelled

    store = Indexer(indexers={"app": by_label})
    with pytest.raises(IndexFuncError, match="'default/a'"):
        store.add(pod("a"))

    def buggy(obj: Any) -> list[str]:
        raise RuntimeError("bug in the index function")

    store = Indexer(indexers={"x": buggy})
    with pytest.raises(RuntimeError, match="bug in the index function") as info:
        store.add(pod("b"))
    assert type(info.value) is RuntimeError  # not wrapped: not the library's catch-all
    assert store.list_keys() == []


def test_upsert_returns_the_replaced_object_and_keeps_indices() -> None:
    idx = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    a1 = {"metadata": {"name": "a", "namespace": "x"}}
    a2 = {"metadata": {"name": "a", "namespace": "x", "labels": {"v": "2"}}}
    assert idx._upsert(a1) is None
    assert idx._upsert(a2, "x/a") is a1
    assert idx.get_by_key("x/a") is a2
    assert idx.by_index(NAMESPACE_INDEX, "x") == [a2]


def test_namespace_index_func_fast_path_matches_mapping_path() -> None:
    for meta in ({"name": "a", "namespace": "x"}, {"name": "a"}, {"name": "a", "namespace": None}):
        proxy = MappingProxyType({"metadata": MappingProxyType(meta)})
        assert meta_namespace_index_func({"metadata": meta}) == meta_namespace_index_func(proxy)
    with pytest.raises(KeyFuncError):
        meta_namespace_index_func({"metadata": {"name": "a", "namespace": 5}})


def test_store_without_indexers_still_answers() -> None:
    idx = Indexer()
    idx.add({"metadata": {"name": "a", "namespace": "x"}})
    idx.delete({"metadata": {"name": "a", "namespace": "x"}})
    assert idx.list() == [] and idx.list_keys() == []
