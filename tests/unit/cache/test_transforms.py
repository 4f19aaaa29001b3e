"""Ready-made informer transforms: strip_managed_fields, alone and on a SharedIndexInformer."""

from __future__ import annotations

import copy
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
