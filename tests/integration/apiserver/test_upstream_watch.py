"""WATCH answers ported from kube-apiserver 1.32's tests (test/e2e/apimachinery/
watch.go, test/integration/apiserver/watchcache_test.go, apiserver_test.go)
and checked against the 1.32 code they exercise with the watch cache on:
``Cacher.Watch``, ``cacheWatcher.convertToWatchEvent`` / ``processInterval``,
``watchCache.getAllEventsSinceLocked`` and the handler's ``serveWatch``."""

from __future__ import annotations

import copy
import functools
import queue
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from integration.apiserver.test_apiserver_watch import Stream, names
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

CM = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
END = "k8s.io/initial-events-end"


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    r: Raw = functools.partial(call, apiserver)
    return r


def _update(raw: Raw, path: str, mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """watch.go updateConfigMap: GET, mutate, PUT; the stored object."""
    _, _, obj = raw("GET", path)
    mutate(obj)
    code, _, out = raw("PUT", path, obj)
    assert code == 200, out
    return out  # type: ignore[no-any-return]


def _rv(obj: dict[str, Any]) -> str:
    return obj["metadata"]["resourceVersion"]  # type: ignore[no-any-return]


def _at(obj: dict[str, Any], rv: str) -> dict[str, Any]:
    """``obj`` with its resourceVersion set to ``rv`` (updateResourceVersion)."""
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = rv
    return out


# --- selectors: cacheWatcher.convertToWatchEvent -------------------------------


def test_object_that_stops_matching_the_selector_is_deleted(raw: Raw, apiserver: APIServer) -> None:
    # watch.go "should observe an object deletion if it stops meeting the
    # requirements of the selector" (ADDED/MODIFIED equal to what the writes
    # returned), and cache_watcher.go convertToWatchEvent: a DELETED for an
    # object that stops matching carries "the previous object content, but
    # with the event's resource version"; one that matches again is ADDED.
    sel = quote("watch-this-configmap in (label-changed-and-restored)")
    s = Stream(apiserver, f"{CM}?watch=true&labelSelector={sel}")
    path = f"{CM}/e2e-watch-test-label-changed"
    labels = {"watch-this-configmap": "label-changed-and-restored"}
    _, _, created = raw("POST", CM, {"metadata": {"name": path.rsplit("/")[-1], "labels": labels}})
    first = _update(raw, path, lambda c: c.setdefault("data", {}).update(mutation="1"))
    moved = _update(raw, path, lambda c: c["metadata"]["labels"].update({labels.popitem()[0]: "x"}))
    evs = s.take(3)
    assert [e["type"] for e in evs] == ["ADDED", "MODIFIED", "DELETED"]
    assert evs[0]["object"] == created and evs[1]["object"] == first
    assert evs[2]["object"] == _at(first, _rv(moved))
    _update(raw, path, lambda c: c["data"].update(mutation="2"))  # not seen
    restore = {"watch-this-configmap": "label-changed-and-restored"}
    restored = _update(raw, path, lambda c: c["metadata"]["labels"].update(restore))
    third = _update(raw, path, lambda c: c["data"].update(mutation="3"))
    assert raw("DELETE", path)[0] == 200
    evs = s.take(3)
    assert [e["type"] for e in evs] == ["ADDED", "MODIFIED", "DELETED"]
    assert evs[0]["object"] == restored and evs[1]["object"] == third
    assert evs[2]["object"] == _at(third, str(apiserver.resource_version))
    s.close()


def test_pod_that_stops_matching_a_field_selector(raw: Raw, apiserver: APIServer) -> None:
    # convertToWatchEvent filters the previous object on its own fields
    # (PrevObjFields): a pod leaving status.phase=Pending is DELETED as it was
    # (Pending), at the status update's resourceVersion.
    pods = "/api/v1/namespaces/default/pods"
    s = Stream(apiserver, f"{pods}?watch=1&fieldSelector=status.phase%3DPending")
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    code, _, created = raw("POST", pods, pod)
    assert code == 201 and created["status"]["phase"] == "Pending"
    running = _update(raw, f"{pods}/p/status", lambda p: p["status"].update(phase="Running"))
    evs = s.take(2)
    assert [e["type"] for e in evs] == ["ADDED", "DELETED"]
    assert evs[1]["object"] == _at(created, _rv(running))
    s.close()


def test_deletion_with_finalizers(raw: Raw, apiserver: APIServer) -> None:
    # store.go Delete (finalizers keep the object: an update setting
    # deletionTimestamp) and Update -> deleteWithoutFinalizers: the emptied
    # object is never stored, so the DELETED event carries the last stored
    # state, finalizers and all, at the deletion's resourceVersion.
    body = {"metadata": {"name": "f", "finalizers": ["example.com/keep"]}}
    assert raw("POST", CM, body)[0] == 201
    s = Stream(apiserver, f"{CM}?watch=true&resourceVersion={apiserver.resource_version}")
    code, _, marked = raw("DELETE", f"{CM}/f")
    assert code == 200 and "deletionTimestamp" in marked["metadata"]
    code, _, emptied = raw("PATCH", f"{CM}/f", {"metadata": {"finalizers": None}}, MERGE)
    assert code == 200 and "finalizers" not in emptied["metadata"]
    evs = s.take(2)
    assert names(evs) == [("MODIFIED", "f"), ("DELETED", "f")]
    assert evs[0]["object"] == marked
    assert evs[1]["object"] == _at(marked, str(apiserver.resource_version))
    s.close()


# --- bookmarks -------------------------------------------------------------------


def _watch_list(apiserver: APIServer, path: str, extra: str = "") -> Stream:
    q = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    return Stream(apiserver, f"{path}?{q}{extra}")


def test_bookmark_objects_are_the_kinds_empty_object(raw: Raw, apiserver: APIServer) -> None:
    # cacher.go setInitialEventsEndBookmarkIfRequested (and the periodic
    # bookmarks alike): the bookmark object is c.newFunc() with only its
    # resourceVersion set (and the initial-events-end annotation), marshalled
    # as Go does: a built-in kind's zero struct (metav1.Time null, non-pointer
    # structs {}, slices without omitempty null); an unstructured custom
    # resource only has apiVersion, kind and the metadata set.
    assert raw("POST", CM, {"metadata": {"name": "a"}})[0] == 201
    s = _watch_list(apiserver, CM)
    ev = s.take(2)[1]
    rv = str(apiserver.resource_version)
    assert ev == {
        "type": "BOOKMARK",
        "object": {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {
                "resourceVersion": rv,
                "creationTimestamp": None,
                "annotations": {END: "true"},
            },
        },
    }
    s.close()
    s = _watch_list(apiserver, "/api/v1/namespaces/default/pods")
    assert s.take(1)[0]["object"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "resourceVersion": rv,
            "creationTimestamp": None,
            "annotations": {END: "true"},
        },
        "spec": {"containers": None},
        "status": {},
    }
    s.close()


def test_metadata_only_bookmarks(apiserver: APIServer) -> None:
    # watch.go (handlers) transformObject -> asPartialObjectMetadata: the
    # bookmark's metav1.ObjectMeta marshals creationTimestamp null.
    u = f"{CM}?watch=1&allowWatchBookmarks=true&sendInitialEvents=true"
    u += "&resourceVersionMatch=NotOlderThan"
    s = Stream(apiserver, u, accept="application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    assert s.take(1)[0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {
            "resourceVersion": str(apiserver.resource_version),
            "creationTimestamp": None,
            "annotations": {END: "true"},
        },
    }
    s.close()


# --- custom resources across versions ------------------------------------------

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_watch_of_a_custom_resource_across_versions(raw: Raw, apiserver: APIServer) -> None:
    # watchcache_test.go / apiserver_test.go (TestWatchCacheUpdatedByEtcd-ish):
    # one watch cache per resource serves every version; each event is
    # converted to the version watched (strategy None: apiVersion only), the
    # bookmark is the unstructured newFunc object of that version.
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    crd = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema},
                {"name": "v2", "served": True, "storage": False, "schema": schema},
            ],
        },
    }
    assert raw("POST", CRDS, crd)[0] == 201
    v1 = "/apis/example.com/v1/namespaces/default/widgets"
    v2 = "/apis/example.com/v2/namespaces/default/widgets"
    deadline = time.monotonic() + 10
    while raw("GET", v2)[0] != 200:  # established
        assert time.monotonic() < deadline
        time.sleep(0.05)
    w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
    assert raw("POST", v1, w)[0] == 201
    s2 = _watch_list(apiserver, v2)
    s1 = Stream(apiserver, f"{v1}?watch=1&resourceVersion={apiserver.resource_version}")
    evs = s2.take(2)
    assert [(e["type"], e["object"]["apiVersion"]) for e in evs] == [
        ("ADDED", "example.com/v2"),
        ("BOOKMARK", "example.com/v2"),
    ]
    assert evs[1]["object"] == {
        "apiVersion": "example.com/v2",
        "kind": "Widget",
        "metadata": {
            "resourceVersion": str(apiserver.resource_version),
            "annotations": {END: "true"},
        },
    }
    code, _, out = raw("PATCH", f"{v2}/w", {"spec": {"a": 1}}, MERGE)
    assert code == 200 and out["apiVersion"] == "example.com/v2"
    assert raw("DELETE", f"{v2}/w")[0] == 200
    for s, version in ((s1, "v1"), (s2, "v2")):
        evs = s.take(2)
        assert [(e["type"], e["object"]["apiVersion"]) for e in evs] == [
            ("MODIFIED", f"example.com/{version}"),
            ("DELETED", f"example.com/{version}"),
        ]
        assert evs[1]["object"]["spec"] == {"a": 1}
        s.close()


# --- start points and scopes ------------------------------------------------------


def test_streamed_list_from_a_compacted_resource_version(raw: Raw, apiserver: APIServer) -> None:
    # watch_cache.go getAllEventsSinceLocked: with sendInitialEvents=true the
    # interval is the store's current state, before any "too old" check, so
    # an old resourceVersion is served (NotOlderThan), not answered 410.
    _, _, a = raw("POST", CM, {"metadata": {"name": "a"}})
    assert raw("POST", CM, {"metadata": {"name": "b"}})[0] == 201
    apiserver.compact()
    s = _watch_list(apiserver, CM, f"&resourceVersion={_rv(a)}")
    evs = s.take(3)
    assert names(evs) == [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", "")]
    assert _rv(evs[2]["object"]) == str(apiserver.resource_version)
    s.close()
    # sendInitialEvents=false from there: the legacy "too old" ERROR event.
    q = "watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
    s = Stream(apiserver, f"{CM}?{q}&resourceVersion={_rv(a)}")
    ev = s.next()
    assert s.status == 200 and ev["type"] == "ERROR"
    # errors.NewResourceExpired's Status, "(oldest - 1)" in parentheses.
    assert ev["object"] == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {_rv(a)} ({apiserver.resource_version})",
        "reason": "Expired",
        "code": 410,
    }
    assert s.next() is None
    s.close()


def test_watch_in_a_namespace_that_does_not_exist(apiserver: APIServer) -> None:
    # Watches (like lists) do not check the namespace: a 200 stream, empty
    # until its timeoutSeconds ends it cleanly.
    s = Stream(apiserver, "/api/v1/namespaces/nowhere/configmaps?watch=1&timeoutSeconds=1")
    assert s.status == 200
    assert s.next(timeout=5) is None
    s.close()


def test_watch_of_one_namespace_by_name(raw: Raw, apiserver: APIServer) -> None:
    # requestinfo.go: /api/v1/watch/namespaces/foo is a watch of the
    # namespace "foo" (namespace == name, which Cacher.Watch's scope undoes
    # for namespaces); other namespaces are not seen.
    s = Stream(apiserver, "/api/v1/watch/namespaces/foo")
    assert s.status == 200
    for ns in ("bar", "foo"):
        assert raw("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    assert names(s.take(1)) == [("ADDED", "foo")]
    s.close()


def test_get_of_a_name_with_watch_is_a_get(raw: Raw) -> None:
    # requestinfo.go: only a request without a name becomes a list or watch;
    # GET .../configmaps/x?watch=true is a plain GET.
    assert raw("POST", CM, {"metadata": {"name": "x"}})[0] == 201
    code, headers, obj = raw("GET", f"{CM}/x?watch=true")
    assert code == 200 and obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "x"
    assert "Transfer-Encoding" not in headers


@pytest.mark.apiserver(bookmark_interval=0.05)
def test_periodic_bookmarks_only_past_the_start(raw: Raw, apiserver: APIServer) -> None:
    # cacher.go dispatchEvents sends every watcher a bookmark at the last
    # processed resourceVersion; cache_watcher.go process passes it on only
    # if it is newer than the resourceVersion the watch started from
    # (processInterval: the requested one, the initial state's or the last
    # replayed event's). bookmark_interval stands in for the bookmark timer.
    _, _, a = raw("POST", CM, {"metadata": {"name": "a"}})
    no_initial = "sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
    for q in ("resourceVersion=0", "resourceVersion=" + _rv(a), no_initial):
        s = Stream(apiserver, f"{CM}?watch=1&allowWatchBookmarks=true&{q}")
        evs = s.take(1) if q == "resourceVersion=0" else []
        assert names(evs) == ([("ADDED", "a")] if evs else [])
        with pytest.raises(queue.Empty):
            s.next(timeout=0.3)
        s.close()
    s = Stream(apiserver, f"{CM}?watch=1&allowWatchBookmarks=true&resourceVersion=0")
    assert names(s.take(1)) == [("ADDED", "a")]
    assert raw("POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})[0] == 201
    ev = s.next()
    assert ev["type"] == "BOOKMARK" and _rv(ev["object"]) == str(apiserver.resource_version)
    s.close()


def test_a_bookmark_comes_two_seconds_before_the_timeout(raw: Raw, apiserver: APIServer) -> None:
    # cache_watcher.go nextBookmarkTime (a): besides every minute, a watcher
    # with a deadline gets a bookmark 2s before it (once: none after), at the
    # cacher's last processed resourceVersion if newer than the start.
    s = Stream(
        apiserver,
        f"{CM}?watch=1&allowWatchBookmarks=true&timeoutSeconds=4"
        f"&resourceVersion={apiserver.resource_version}",
    )
    t0 = time.monotonic()
    assert raw("POST", CM, {"metadata": {"name": "a"}})[0] == 201
    assert names(s.take(1)) == [("ADDED", "a")]
    ev = s.next()
    assert ev["type"] == "BOOKMARK" and _rv(ev["object"]) == str(apiserver.resource_version)
    assert 1.5 < time.monotonic() - t0 < 3.5
    assert s.next() is None  # then the clean end, no other bookmark
    assert time.monotonic() - t0 >= 3.5
    s.close()
