"""Streaming lists (WatchList, KEP-3157) and PartialObjectMetadata answers of the
embedded API server, over HTTP: initial ADDED events, the bookmark annotated
``k8s.io/initial-events-end``, resourceVersion semantics, kube's 422 for invalid
option combinations, servers without the feature, and metadata-only lists,
gets and watches."""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.http import call, request

from pycontroller.testing import APIServer

CM = "/api/v1/namespaces/default/configmaps"
STREAM = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
END = "k8s.io/initial-events-end"


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


class Stream:
    """A raw watch read in a thread (None marks a clean end)."""

    def __init__(self, server: APIServer, path: str, headers: dict[str, str] | None = None):
        u = urlsplit(server.url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.conn.request("GET", path, headers=headers or {})
        self.sock = self.conn.sock
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.events: queue.Queue[Any] = queue.Queue()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    break
                self.events.put(json.loads(line))
            self.events.put(None)
        except Exception as err:
            self.events.put(err)

    def next(self, timeout: float = 5.0) -> Any:
        return self.events.get(timeout=timeout)

    def take(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            ev = self.next(timeout)
            assert isinstance(ev, dict), f"stream ended early: {ev!r} after {out}"
            out.append(ev)
        return out

    def close(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)
        self.conn.close()


def names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def is_end(ev: dict[str, Any]) -> bool:
    meta = ev["object"]["metadata"]
    return ev["type"] == "BOOKMARK" and (meta.get("annotations") or {}).get(END) == "true"


# --------------------------------------------------------------------------- streaming lists


@pytest.mark.parametrize("rv", ["", "0"])
def test_stream_sends_state_then_end_bookmark_then_changes(apiserver: APIServer, rv: str) -> None:
    for name in ("b", "a", "c"):
        request(apiserver, "POST", CM, cm(name))
    # Another kind's write moves the global resourceVersion on.
    request(apiserver, "POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    list_rv = apiserver.resource_version
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true&resourceVersion={rv}")
    assert s.status == 200
    evs = s.take(4)
    assert names(evs[:3]) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
    # ConfigMap.Data is map[string]string `json:"data,omitempty"`: empty is left out.
    assert "data" not in evs[0]["object"]
    end = evs[3]
    assert is_end(end)
    assert end["object"]["kind"] == "ConfigMap" and end["object"]["apiVersion"] == "v1"
    assert end["object"]["metadata"] == {
        "resourceVersion": str(list_rv),
        "creationTimestamp": None,  # the zero ConfigMap as Go marshals it
        "annotations": {END: "true"},
    }
    # Then a normal watch on the same stream.
    request(apiserver, "POST", CM, cm("d"))
    request(apiserver, "DELETE", f"{CM}/a")
    assert names(s.take(2)) == [("ADDED", "d"), ("DELETED", "a")]
    s.close()


def test_stream_explicit_resource_version_is_not_older_than(apiserver: APIServer) -> None:
    _, a = request(apiserver, "POST", CM, cm("a"))
    request(apiserver, "POST", CM, cm("b"))
    request(apiserver, "PATCH", f"{CM}/a", {"data": {"x": "1"}}, "application/merge-patch+json")
    old_rv = a["metadata"]["resourceVersion"]
    apiserver.compact()  # an older RV is still fine: the answer is not older than it
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true&resourceVersion={old_rv}")
    evs = s.take(3)
    assert names(evs[:2]) == [("ADDED", "a"), ("ADDED", "b")]
    assert evs[0]["object"]["data"] == {"x": "1"}  # the current state, not the one at old_rv
    assert is_end(evs[2])
    assert evs[2]["object"]["metadata"]["resourceVersion"] == str(apiserver.resource_version)
    s.close()


def test_stream_future_resource_version_is_too_large(apiserver: APIServer) -> None:
    future = apiserver.resource_version + 100
    t0 = time.monotonic()
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true&resourceVersion={future}")
    assert s.status == 200
    ev = s.next(timeout=10)
    assert time.monotonic() - t0 >= 2.5  # the watch cache waits before giving up
    assert ev["type"] == "ERROR"
    st = ev["object"]
    assert st["code"] == 504 and st["reason"] == "Timeout"
    assert st["message"] == (
        f"Timeout: Too large resource version: {future}, current: {apiserver.resource_version}"
    )
    assert st["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    assert s.next() is None


def test_stream_waits_for_a_resource_version_reached_meanwhile(apiserver: APIServer) -> None:
    future = apiserver.resource_version + 1
    threading.Timer(0.3, lambda: request(apiserver, "POST", CM, cm("late"))).start()
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true&resourceVersion={future}")
    evs = s.take(2)
    assert names(evs[:1]) == [("ADDED", "late")] and is_end(evs[1])
    s.close()


def test_stream_without_bookmarks_has_no_end_marker(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, cm("a"))
    s = Stream(apiserver, f"{CM}?{STREAM}")
    assert names(s.take(1)) == [("ADDED", "a")]
    with pytest.raises(queue.Empty):
        s.next(timeout=0.3)
    s.close()


def test_stream_filters_by_selector_and_namespace(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, cm("a", {"app": "x"}))
    request(apiserver, "POST", CM, cm("b", {"app": "y"}))
    request(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    request(apiserver, "POST", "/api/v1/namespaces/other/configmaps", cm("c", {"app": "x"}))
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true&labelSelector=app%3Dx")
    evs = s.take(2)
    assert names(evs[:1]) == [("ADDED", "a")] and is_end(evs[1])
    # A change that makes b match arrives as ADDED after the end marker.
    request(apiserver, "PATCH", f"{CM}/b", {"metadata": {"labels": {"app": "x"}}},
            "application/merge-patch+json")  # fmt: skip
    assert names(s.take(1)) == [("ADDED", "b")]
    s.close()
    every = Stream(apiserver, f"/api/v1/configmaps?{STREAM}&allowWatchBookmarks=true")
    evs = every.take(4)
    assert sorted(n for _, n in names(evs[:3])) == ["a", "b", "c"] and is_end(evs[3])
    every.close()


def test_stream_changes_during_the_stream_follow_the_end_marker(apiserver: APIServer) -> None:
    for i in range(600):  # more than one chunk
        request(apiserver, "POST", CM, cm(f"cm-{i:04d}"))
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true")
    request(apiserver, "DELETE", f"{CM}/cm-0000")
    evs = s.take(602)
    assert [t for t, _ in names(evs[:600])] == ["ADDED"] * 600
    assert is_end(evs[600])
    assert names(evs[601:]) == [("DELETED", "cm-0000")]
    end_rv = int(evs[600]["object"]["metadata"]["resourceVersion"])
    assert int(evs[601]["object"]["metadata"]["resourceVersion"]) > end_rv
    s.close()


def test_send_initial_events_false_watches_from_now(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, cm("a"))
    s = Stream(
        apiserver,
        f"{CM}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan",
    )
    request(apiserver, "POST", CM, cm("b"))
    assert names(s.take(1)) == [("ADDED", "b")]
    s.close()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "watch=true&sendInitialEvents=true",
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            "watch=true&resourceVersionMatch=NotOlderThan",
            'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact",
            'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
            'resourceVersionMatch: Unsupported value: "Exact": supported values: '
            '"NotOlderThan"]',
        ),
        (
            "sendInitialEvents=true",
            'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
            "sendInitialEvents is forbidden for list",
        ),
    ],
)
def test_invalid_combinations_are_422(apiserver: APIServer, query: str, message: str) -> None:
    code, st = request(apiserver, "GET", f"{CM}?{query}")
    assert code == 422
    assert st["kind"] == "Status" and st["reason"] == "Invalid"
    assert st["message"] == message
    assert st["details"]["group"] == "meta.k8s.io" and st["details"]["kind"] == "ListOptions"
    assert all(c["reason"].startswith("FieldValue") for c in st["details"]["causes"])


def test_server_with_watch_list_off_answers_422(apiserver: APIServer) -> None:
    apiserver.watch_list = False
    code, st = request(apiserver, "GET", f"{CM}?{STREAM}&allowWatchBookmarks=true")
    assert code == 422
    assert st["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: sendInitialEvents is forbidden for watch unless the "
            "WatchList feature gate is enabled",
            "field": "sendInitialEvents",
        }
    ]


def test_server_ignoring_watch_list_serves_a_legacy_watch(apiserver: APIServer) -> None:
    apiserver.watch_list = "ignore"
    request(apiserver, "POST", CM, cm("a"))
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true&resourceVersion=")
    assert names(s.take(1)) == [("ADDED", "a")]  # legacy RV "": current state...
    with pytest.raises(queue.Empty):  # ...and no end marker
        s.next(timeout=0.3)
    s.close()


# --------------------------------------------------------------------------- metadata only


def test_list_as_partial_object_metadata_list(apiserver: APIServer) -> None:
    for name in ("a", "b", "c"):
        request(apiserver, "POST", CM, cm(name, {"k": name}, big="x" * 1000))
    code, headers, lst = call(apiserver, "GET", f"{CM}?limit=2", headers={"Accept": META_LIST})
    assert code == 200 and headers["Content-Type"] == "application/json"
    assert lst["kind"] == "PartialObjectMetadataList"
    assert lst["apiVersion"] == "meta.k8s.io/v1"
    assert lst["metadata"]["continue"] and lst["metadata"]["remainingItemCount"] == 1
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a", "b"]
    for item in lst["items"]:
        assert set(item) == {"kind", "apiVersion", "metadata"}
        assert item["kind"] == "PartialObjectMetadata" and item["apiVersion"] == "meta.k8s.io/v1"
        assert item["metadata"]["labels"] == {"k": item["metadata"]["name"]}
        assert item["metadata"]["uid"] and item["metadata"]["resourceVersion"]
    # client-go's metadata client puts protobuf first, and kube serves it
    # (test_negotiation.py decodes it); with protobuf last, JSON.
    accept = META_LIST.replace("application/json", "application/vnd.kubernetes.protobuf")
    code, _, lst = call(
        apiserver, "GET", CM, headers={"Accept": f"{META_LIST},{accept},application/json"}
    )
    assert code == 200 and lst["kind"] == "PartialObjectMetadataList" and len(lst["items"]) == 3


def test_get_and_write_as_partial_object_metadata(apiserver: APIServer) -> None:
    code, _, created = call(apiserver, "POST", CM, cm("a", big="x"), headers={"Accept": META})
    assert code == 201 and created["kind"] == "PartialObjectMetadata"
    assert "data" not in created and created["metadata"]["name"] == "a"
    code, _, got = call(apiserver, "GET", f"{CM}/a", headers={"Accept": META})
    assert code == 200 and got == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": created["metadata"],
    }
    # The wrong form is 406, as kube answers.
    code, _, st = call(apiserver, "GET", f"{CM}/a", headers={"Accept": META_LIST})
    assert code == 406 and st["reason"] == "NotAcceptable"
    assert st["message"] == (
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        "(*v1.ConfigMap)"
    )
    code, _, st = call(apiserver, "GET", CM, headers={"Accept": META})
    assert code == 406 and "is a list (*v1.ConfigMapList)" in st["message"]
    # Other media types are unaffected.
    code, _, full = call(apiserver, "GET", f"{CM}/a", headers={"Accept": "application/json"})
    assert code == 200 and full["kind"] == "ConfigMap" and full["data"] == {"big": "x"}


def test_watch_as_partial_object_metadata(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, cm("a", big="x"))
    s = Stream(apiserver, f"{CM}?{STREAM}&allowWatchBookmarks=true", headers={"Accept": META})
    evs = s.take(2)
    assert evs[0]["type"] == "ADDED"
    assert evs[0]["object"]["kind"] == "PartialObjectMetadata"
    assert set(evs[0]["object"]) == {"kind", "apiVersion", "metadata"}
    assert is_end(evs[1]) and evs[1]["object"]["kind"] == "PartialObjectMetadata"
    assert evs[1]["object"]["apiVersion"] == "meta.k8s.io/v1"
    request(apiserver, "PATCH", f"{CM}/a", {"data": {"y": "1"}}, "application/merge-patch+json")
    ev = s.next()
    assert ev["type"] == "MODIFIED" and ev["object"]["kind"] == "PartialObjectMetadata"
    assert "data" not in ev["object"]
    s.close()
