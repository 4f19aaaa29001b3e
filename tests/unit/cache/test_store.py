"""Keys, tombstones and basic store behaviour (client-go store_test.go, object-names)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from pycontroller.cache import (
    DeletedFinalStateUnknown,
    Indexer,
    KeyFuncError,
    deep_copy,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
    split_meta_namespace_key,
)


def obj(name: str, namespace: str = "", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, **extra}


def test_meta_namespace_key_func() -> None:
    assert meta_namespace_key_func(obj("a", "ns")) == "ns/a"
    assert meta_namespace_key_func(obj("node-1")) == "node-1"
    assert meta_namespace_key_func({"metadata": {"name": "x", "namespace": ""}}) == "x"
    # An explicit key passes through unchanged.
    assert meta_namespace_key_func("ns/already-a-key") == "ns/already-a-key"


@pytest.mark.parametrize("bad", [{}, {"metadata": None}, {"metadata": "x"}, 42])
def test_meta_namespace_key_func_rejects_objects_without_metadata(bad: Any) -> None:
    with pytest.raises(KeyFuncError) as info:
        meta_namespace_key_func(bad)
    assert isinstance(info.value, ValueError)
    assert "couldn't create key" in str(info.value)


def test_deletion_handling_key_func_unwraps_tombstones() -> None:
    tombstone = DeletedFinalStateUnknown("ns/gone", None)
    assert deletion_handling_meta_namespace_key_func(tombstone) == "ns/gone"
    assert deletion_handling_meta_namespace_key_func(obj("a", "ns")) == "ns/a"
    # Plain key func does not know tombstones (they have no metadata).
    with pytest.raises(KeyFuncError):
        meta_namespace_key_func(tombstone)


def test_tombstone_is_a_named_tuple() -> None:
    o = obj("a", "ns")
    t = DeletedFinalStateUnknown(key="ns/a", obj=o)
    assert t.key == "ns/a" and t.obj is o
    assert t == DeletedFinalStateUnknown("ns/a", o)
    key, inner = t
    assert (key, inner) == ("ns/a", o)


@pytest.mark.parametrize(
    ("key", "expected"),
    [("a/b", ("a", "b")), ("b", ("", "b")), ("/x", ("", "x"))],
)
def test_split_meta_namespace_key(key: str, expected: tuple[str, str]) -> None:
    assert split_meta_namespace_key(key) == expected


@pytest.mark.parametrize("key", ["a/b/c", "a//b", "", "a/"])
def test_split_meta_namespace_key_errors(key: str) -> None:
    with pytest.raises(ValueError):
        split_meta_namespace_key(key)


def test_key_round_trip() -> None:
    for o in (obj("a", "ns"), obj("cluster-thing")):
        ns, name = split_meta_namespace_key(meta_namespace_key_func(o))
        assert (ns, name) == (o["metadata"].get("namespace", ""), o["metadata"]["name"])


def test_store_basics() -> None:
    """client-go doTestStore: upsert, delete, list, replace."""
    store = Indexer(key_func=lambda o: o["id"])
    store.add({"id": "foo", "val": "bar"})
    assert store.get_by_key("foo") == {"id": "foo", "val": "bar"}
    assert store.get({"id": "foo"}) == {"id": "foo", "val": "bar"}

    store.update({"id": "foo", "val": "baz"})
    assert store.get_by_key("foo") == {"id": "foo", "val": "baz"}

    store.delete({"id": "foo", "val": "ignored: deletion is by key"})
    assert store.get_by_key("foo") is None
    store.delete({"id": "foo"})  # deleting a missing key is a no-op

    for key, val in (("a", "b"), ("c", "d"), ("e", "e")):
        store.add({"id": key, "val": val})
    assert sorted(o["val"] for o in store.list()) == ["b", "d", "e"]
    assert sorted(store.list_keys()) == ["a", "c", "e"]

    store.replace([{"id": "foo", "val": "foo"}, {"id": "bar", "val": "bar"}], "0")
    assert sorted(o["val"] for o in store.list()) == ["bar", "foo"]
    assert store.get_by_key("a") is None
    store.resync()  # no-op
    assert len(store) == 2


def test_replace_key_error_changes_nothing() -> None:
    store = Indexer()
    store.add(obj("keep", "ns"))
    with pytest.raises(KeyFuncError):
        store.replace([obj("new", "ns"), {"no": "metadata"}], "1")
    assert store.list_keys() == ["ns/keep"]


def test_add_of_keyless_object_raises() -> None:
    store = Indexer()
    with pytest.raises(KeyFuncError):
        store.add({"spec": {}})
    assert store.list() == []


def test_deep_copy_is_independent() -> None:
    store = Indexer()
    original = obj("a", "ns", spec={"replicas": 1})
    store.add(original)
    mine = deep_copy(store.get_by_key("ns/a"))
    mine["spec"]["replicas"] = 5
    assert store.get_by_key("ns/a")["spec"]["replicas"] == 1


@pytest.mark.parametrize(
    "meta",
    [
        {"name": "a", "namespace": "ns"},
        {"name": "a"},
        {"name": "a", "namespace": ""},
        {"name": "a", "namespace": None},
        {"name": "", "namespace": "ns"},
        {"namespace": "ns"},
        {"name": "a", "namespace": 5},
        {"name": 5},
        {"name": None},
    ],
)
def test_plain_dict_fast_path_matches_the_mapping_path(meta: dict[str, Any]) -> None:
    """Plain dicts take a shortcut; any other Mapping must give the same answer."""
    plain = {"metadata": meta}
    other = MappingProxyType({"metadata": MappingProxyType(meta)})
    for func in (meta_namespace_key_func, deletion_handling_meta_namespace_key_func):
        try:
            expected: Any = func(other)
        except KeyFuncError:
            expected = KeyFuncError
        if expected is KeyFuncError:
            with pytest.raises(KeyFuncError):
                func(plain)
        else:
            assert func(plain) == expected
