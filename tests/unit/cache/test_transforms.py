"""Ready-made informer transforms (strip_managed_fields, compact_metadata), alone and on a
SharedIndexInformer, and the reflector applying a transform page by page."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support.fakes import FakeWatch, obj, page

from pycontroller.cache import (
    DeletedFinalStateUnknown,
    ListWatch,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    compact_metadata,
    strip_managed_fields,
    wait_for_cache_sync,
)
from pycontroller.testing.wait import wait_for

_MANAGED = [
    {
        "manager": "kubectl-client-side-apply",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:key": {}}},
    }
]


def managed(name: str, rv: int) -> dict[str, Any]:
    o = obj(name, rv)
    o["metadata"]["managedFields"] = copy.deepcopy(_MANAGED)
    o["data"] = {"key": "value"}
    return o


def test_strips_managed_fields_in_place_and_returns_the_object() -> None:
    o = managed("a", 1)
    out = strip_managed_fields(o)
    assert out is o
    assert o == {
        "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "1"},
        "data": {"key": "value"},
    }


def test_object_without_managed_fields_is_untouched() -> None:
    o = obj("a", 1)
    before = copy.deepcopy(o)
    assert strip_managed_fields(o) is o
    assert o == before


@pytest.mark.parametrize(
    "value",
    [
        DeletedFinalStateUnknown("ns/a", {"metadata": {"name": "a", "managedFields": []}}),
        None,
        "ns/a",
        42,
        {},
        {"metadata": None},
        {"metadata": "not a dict"},
        ["metadata"],
    ],
    ids=repr,
)
def test_anything_else_passes_through_unchanged(value: Any) -> None:
    before = copy.deepcopy(value)
    assert strip_managed_fields(value) is value
    assert value == before


def test_tombstone_object_is_not_stripped() -> None:
    """Like controller-runtime: a tombstone is not an object, its content is left alone."""
    inner = managed("a", 1)
    tomb = DeletedFinalStateUnknown("ns/a", inner)
    assert strip_managed_fields(tomb) is tomb
    assert "managedFields" in tomb.obj["metadata"]


class _LW:
    """One list answer, then one scripted watch."""

    def __init__(self, listing: dict[str, Any]) -> None:
        self.listing = listing
        self.watches: list[FakeWatch] = []
        self.lock = threading.Lock()

    def list(self, **opts: Any) -> dict[str, Any]:
        return copy.deepcopy(self.listing)

    def watch(self, **opts: Any) -> Iterator[dict[str, Any]]:
        w = FakeWatch()
        with self.lock:
            self.watches.append(w)
        return w

    def current(self) -> FakeWatch:
        wait_for(lambda: bool(self.watches))
        with self.lock:
            return self.watches[-1]


def test_as_informer_transform_nothing_cached_or_delivered_has_managed_fields() -> None:
    lw = _LW(page([managed("a", 1), managed("b", 2)], 2))
    events: list[tuple[str, Any]] = []
    lock = threading.Lock()

    def record(kind: str, o: Any) -> None:
        with lock:
            events.append((kind, o))

    stop = threading.Event()
    try:
        inf = SharedIndexInformer(ListWatch(lw.list, lw.watch), transform=strip_managed_fields)
        inf.add_event_handler(
            ResourceEventHandlerFuncs(
                add_func=lambda o: record("add", o),
                update_func=lambda old, new: record("update", new),
                delete_func=lambda o: record("delete", o),
            )
        )
        inf.start(stop)
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
        watch = lw.current()
        watch.push("ADDED", managed("c", 3))
        watch.push("MODIFIED", managed("a", 4))
        watch.push("DELETED", managed("b", 5))
        wait_for(lambda: len(events) == 5, what="5 events")

        with lock:
            assert [(k, o["metadata"]["name"]) for k, o in events] == [
                ("add", "a"),
                ("add", "b"),
                ("add", "c"),
                ("update", "a"),
                ("delete", "b"),
            ]
            assert all("managedFields" not in o["metadata"] for _, o in events)
            assert all(o["data"] == {"key": "value"} for _, o in events)
        cached = inf.get_store().list()
        assert sorted(o["metadata"]["name"] for o in cached) == ["a", "c"]
        assert all("managedFields" not in o["metadata"] for o in cached)
        assert inf.get_store().get_by_key("ns/a")["metadata"]["resourceVersion"] == "4"
    finally:
        stop.set()


# --- compact_metadata -----------------------------------------------------------------


def _pod_meta(i: int) -> dict[str, Any]:
    """Decoded afresh each time, as from the wire: equal strings are distinct objects."""
    return json.loads(json.dumps({
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "name": f"web-{i}", "namespace": "prod", "uid": f"uid-{i}",
            "resourceVersion": str(i), "generateName": "web-",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "5d8f"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-5d8f", "uid": "rs-uid", "controller": True}],
            "managedFields": [{
                "manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                             "f:spec": {"f:containers": {'k:{"name":"web"}': {
                                 ".": {}, "f:image": {}}}}},
            }],
        },
    }))  # fmt: skip


def _leaves(tree: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for v in tree.values():
        if isinstance(v, dict) and v:
            out.extend(_leaves(v))
        else:
            out.append(v)
    return out


def test_compact_metadata_keeps_content_and_shares_repeated_parts() -> None:
    a, b = _pod_meta(1), _pod_meta(2)
    before = copy.deepcopy(a)
    assert compact_metadata(a) is a and compact_metadata(b) is b
    assert a == before  # same content, same ==
    assert json.dumps(a, sort_keys=True) == json.dumps(before, sort_keys=True)
    am, bm = a["metadata"], b["metadata"]
    assert am["namespace"] is bm["namespace"]
    assert am["labels"]["pod-template-hash"] is bm["labels"]["pod-template-hash"]
    assert am["ownerReferences"][0]["uid"] is bm["ownerReferences"][0]["uid"]
    assert am["managedFields"][0]["manager"] is bm["managedFields"][0]["manager"]
    leaves = _leaves(am["managedFields"][0]["fieldsV1"]) + _leaves(
        bm["managedFields"][0]["fieldsV1"]
    )
    assert len(leaves) == 8 and len({id(x) for x in leaves}) == 1
    assert compact_metadata(a) == before  # idempotent


def test_shared_leaves_refuse_changes_and_copies_are_plain_dicts() -> None:
    a = compact_metadata(_pod_meta(1))
    leaf = a["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:containers"][
        'k:{"name":"web"}'
    ]["f:image"]
    with pytest.raises(TypeError, match="read-only"):
        leaf["x"] = 1
    with pytest.raises(TypeError):
        leaf.update({"x": 1})
    assert leaf == {} and not leaf
    copied = copy.deepcopy(a)
    copied_leaf = copied["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"][
        "f:containers"]['k:{"name":"web"}']["f:image"]  # fmt: skip
    assert type(copied_leaf) is dict
    copied_leaf["x"] = 1  # a deep copy is the caller's own
    assert leaf == {}
    assert type(pickle.loads(pickle.dumps(leaf))) is dict
    orjson = pytest.importorskip("orjson")
    assert orjson.loads(orjson.dumps(a)) == _pod_meta(1)


@pytest.mark.parametrize(
    "value", [None, "x", {}, {"metadata": None}, {"metadata": {"managedFields": None}}], ids=repr
)
def test_compact_metadata_passes_anything_else_through(value: Any) -> None:
    before = copy.deepcopy(value)
    assert compact_metadata(value) is value
    assert value == before


# --- the reflector applies the transform page by page ----------------------------------


def test_transform_runs_once_per_object_page_by_page_before_the_next_page() -> None:
    """Each page is transformed as it arrives (so what the transform drops is
    freed before the next page is decoded), and never again by the queue."""
    pages = {
        None: page([managed("a", 1), managed("b", 2)], 5, cont="p2"),
        "p2": page([managed("c", 3)], 5),
    }
    log: list[str] = []

    def transform(o: Any) -> Any:
        if isinstance(o, dict):
            log.append(f"transform {o['metadata']['name']}")
        return strip_managed_fields(o)

    def lister(**opts: Any) -> dict[str, Any]:
        log.append(f"list {opts.get('continue_')}")
        return copy.deepcopy(pages[opts.get("continue_")])

    lw = _LW(page([], 0))
    stop = threading.Event()
    try:
        inf = SharedIndexInformer(ListWatch(lister, lw.watch), transform=transform,
                                  use_watch_list=False)  # fmt: skip
        inf.start(stop)
        assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
        assert log == ["list None", "transform a", "transform b", "list p2", "transform c"]
        cached = inf.get_store().list()
        assert sorted(o["metadata"]["name"] for o in cached) == ["a", "b", "c"]
        assert all("managedFields" not in o["metadata"] for o in cached)
    finally:
        stop.set()


def test_a_metadata_only_factory_informer_compacts_by_default() -> None:
    from kubernetes.client import ApiClient

    from pycontroller.cache import SharedInformerFactory

    factory = SharedInformerFactory(ApiClient())
    meta = factory.for_resource("", "v1", "pods", metadata_only=True)
    full = factory.for_resource("", "v1", "pods")
    assert meta._transform is compact_metadata
    assert full._transform is None
    custom = SharedInformerFactory(ApiClient(), transform=strip_managed_fields)
    assert custom.for_resource("", "v1", "pods", metadata_only=True)._transform is (
        strip_managed_fields
    )
