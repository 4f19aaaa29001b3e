"""Watch conformance of the embedded API server: initial state, resume from a
resourceVersion, 410 after compaction, bookmarks, timeouts, selector
transitions, namespace scoping, drop_watches and restarts."""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import socket
import threading
import time
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from kubernetes import client, watch
from support.http import request

from pycontroller.testing import APIServer, wait_for

CM = "/api/v1/namespaces/default/configmaps"


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": data}


class Stream:
    """A raw watch stream read in a thread into a queue of decoded events
    (None marks a clean end, an exception an abrupt one)."""

    def __init__(self, server: APIServer, path: str, accept: str | None = None) -> None:
        u = urlsplit(server.url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.conn.request("GET", path, headers={"Accept": accept} if accept else {})
        self.sock = self.conn.sock
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = dict(self.resp.getheaders())
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
        except Exception as err:  # abrupt close
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
        # Shut the socket down first: closing the response would wait for the
        # reader thread's blocked readline (it holds the buffer's lock).
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)
        self.conn.close()


def names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def test_watch_from_zero_sends_current_state_then_changes(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, cm("a"))
    request(apiserver, "POST", CM, cm("b"))
    s = Stream(apiserver, f"{CM}?watch=true&resourceVersion=0")
    assert s.status == 200
    assert s.headers.get("Transfer-Encoding") == "chunked"
    assert names(s.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
    request(apiserver, "PATCH", f"{CM}/a", {"data": {"x": "1"}}, "application/merge-patch+json")
    _, deleted = request(apiserver, "DELETE", f"{CM}/b")
    evs = s.take(2)
    assert names(evs) == [("MODIFIED", "a"), ("DELETED", "b")]
    # A ConfigMap's DELETE answers a Status (no ReturnDeletedObject), not the object.
    assert deleted["kind"] == "Status" and deleted["details"]["name"] == "b"
    assert evs[1]["object"]["metadata"]["resourceVersion"] == str(apiserver.resource_version)
    s.close()


def test_watch_from_resource_version_replays_in_order(apiserver: APIServer) -> None:
    _, a = request(apiserver, "POST", CM, cm("a"))
    rv = a["metadata"]["resourceVersion"]
    for i in range(5):
        request(
            apiserver, "PATCH", f"{CM}/a", {"data": {"i": str(i)}}, "application/merge-patch+json"
        )
    request(apiserver, "POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    request(apiserver, "POST", CM, cm("b"))
    s = Stream(apiserver, f"{CM}?watch=1&resourceVersion={rv}")
    evs = s.take(6)
    assert names(evs) == [("MODIFIED", "a")] * 5 + [("ADDED", "b")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)
    assert [e["object"]["data"].get("i") for e in evs[:5]] == ["0", "1", "2", "3", "4"]
    s.close()


def test_watch_too_old_resource_version_gets_expired_error(apiserver: APIServer) -> None:
    _, a = request(apiserver, "POST", CM, cm("a"))
    request(apiserver, "POST", CM, cm("b"))
    apiserver.compact()
    s = Stream(apiserver, f"{CM}?watch=true&resourceVersion={a['metadata']['resourceVersion']}")
    assert s.status == 200
    ev = s.next()
    assert ev["type"] == "ERROR"
    st = ev["object"]
    assert st["kind"] == "Status" and st["code"] == 410 and st["reason"] == "Expired"
    assert st["message"].startswith(
        f"too old resource version: {a['metadata']['resourceVersion']} ("
    )
    assert s.next() is None  # stream ends
    # Watching from the current RV after compaction works.
    s2 = Stream(apiserver, f"{CM}?watch=true&resourceVersion={apiserver.resource_version}")
    request(apiserver, "POST", CM, cm("c"))
    assert names(s2.take(1)) == [("ADDED", "c")]
    s2.close()


def test_history_size_bounds_replay(apiserver_factory: Any) -> None:
    server = apiserver_factory(history_size=5)
    _, a = request(server, "POST", CM, cm("a"))
    for i in range(10):
        request(server, "PATCH", f"{CM}/a", {"data": {"i": str(i)}}, "application/merge-patch+json")
    s = Stream(server, f"{CM}?watch=true&resourceVersion={a['metadata']['resourceVersion']}")
    assert s.next()["type"] == "ERROR"
    s = Stream(server, f"{CM}?watch=true&resourceVersion={server.resource_version - 3}")
    assert len(s.take(3)) == 3


def test_bookmarks(apiserver_factory: Any) -> None:
    server = apiserver_factory(bookmark_interval=0.1)
    s = Stream(server, f"{CM}?watch=true&resourceVersion=0&allowWatchBookmarks=true")
    # Nothing newer than the watch's start yet: no bookmark (cacheWatcher.process).
    with pytest.raises(queue.Empty):
        s.next(timeout=0.3)
    request(server, "POST", CM, cm("a"))
    # Bookmarks after the write reflect the new global RV (other kinds too).
    request(server, "POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    deadline = time.monotonic() + 5
    seen_add = False
    while time.monotonic() < deadline:
        ev = s.next()
        if ev["type"] == "ADDED":
            seen_add = True
        if ev["type"] == "BOOKMARK" and ev["object"]["metadata"]["resourceVersion"] == str(
            server.resource_version
        ):
            assert ev["object"] == {
                "kind": "ConfigMap",
                "apiVersion": "v1",
                # The zero ConfigMap as Go marshals it.
                "metadata": {
                    "resourceVersion": str(server.resource_version),
                    "creationTimestamp": None,
                },
            }
            break
    else:
        pytest.fail("no bookmark at the current resourceVersion")
    assert seen_add
    s.close()
    # Without allowWatchBookmarks: no bookmarks.
    s2 = Stream(server, f"{CM}?watch=true&resourceVersion={server.resource_version}")
    with pytest.raises(queue.Empty):
        s2.next(timeout=0.4)
    s2.close()


def test_timeout_seconds_ends_stream_cleanly(apiserver: APIServer) -> None:
    t0 = time.monotonic()
    s = Stream(apiserver, f"{CM}?watch=true&timeoutSeconds=1")
    assert s.next(timeout=5) is None
    assert 0.9 <= time.monotonic() - t0 < 4


def test_selector_transitions(apiserver: APIServer) -> None:
    s = Stream(apiserver, f"{CM}?watch=true&labelSelector=" + quote("app=web"))
    request(apiserver, "POST", CM, cm("a", {"app": "db"}))
    request(apiserver, "POST", CM, cm("b", {"app": "web"}))
    assert names(s.take(1)) == [("ADDED", "b")]
    # a starts matching: ADDED.
    request(
        apiserver,
        "PATCH",
        f"{CM}/a",
        {"metadata": {"labels": {"app": "web"}}},
        "application/merge-patch+json",
    )
    assert names(s.take(1)) == [("ADDED", "a")]
    request(apiserver, "PATCH", f"{CM}/a", {"data": {"x": "1"}}, "application/merge-patch+json")
    assert names(s.take(1)) == [("MODIFIED", "a")]
    # a stops matching: DELETED carrying its previous state at the new
    # resourceVersion (cacheWatcher.convertToWatchEvent).
    _, moved = request(
        apiserver,
        "PATCH",
        f"{CM}/a",
        {"metadata": {"labels": {"app": "db"}}},
        "application/merge-patch+json",
    )
    ev = s.take(1)[0]
    assert ev["type"] == "DELETED" and ev["object"]["metadata"]["labels"] == {"app": "web"}
    assert ev["object"]["metadata"]["resourceVersion"] == moved["metadata"]["resourceVersion"]
    request(apiserver, "DELETE", f"{CM}/a")  # not matching: nothing
    request(apiserver, "DELETE", f"{CM}/b")
    assert names(s.take(1)) == [("DELETED", "b")]
    s.close()
    fs = Stream(apiserver, f"{CM}?watch=true&fieldSelector=" + quote("metadata.name=z"))
    request(apiserver, "POST", CM, cm("y"))
    request(apiserver, "POST", CM, cm("z"))
    assert names(fs.take(1)) == [("ADDED", "z")]
    fs.close()


def test_namespaced_and_all_namespaces_watch(apiserver: APIServer) -> None:
    request(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "other"}})
    ns_stream = Stream(apiserver, f"{CM}?watch=true")
    all_stream = Stream(apiserver, "/api/v1/configmaps?watch=true")
    legacy = Stream(apiserver, "/api/v1/watch/namespaces/other/configmaps")
    request(apiserver, "POST", "/api/v1/namespaces/other/configmaps", cm("o"))
    request(apiserver, "POST", CM, cm("d"))
    assert names(ns_stream.take(1)) == [("ADDED", "d")]
    assert names(all_stream.take(2)) == [("ADDED", "o"), ("ADDED", "d")]
    assert names(legacy.take(1)) == [("ADDED", "o")]
    for st in (ns_stream, all_stream, legacy):
        st.close()


def test_drop_watches_closes_streams_abruptly(apiserver: APIServer) -> None:
    streams = [Stream(apiserver, f"{CM}?watch=true") for _ in range(3)]
    wait_for(lambda: apiserver.watch_count() >= 3, 5, what="3 open watches")
    apiserver.drop_watches()
    for s in streams:
        end = s.next()
        assert end is None or isinstance(end, Exception)
    wait_watch_count(apiserver, 0)
    # The server keeps serving.
    assert request(apiserver, "GET", CM)[0] == 200


def test_stop_ends_watches_and_restart_resumes(apiserver: APIServer) -> None:
    _, a = request(apiserver, "POST", CM, cm("a"))
    s = Stream(apiserver, f"{CM}?watch=true&resourceVersion={a['metadata']['resourceVersion']}")
    apiserver.stop()
    end = s.next()
    assert end is None or isinstance(end, Exception)
    apiserver.start()
    request(apiserver, "POST", CM, cm("b"))
    s2 = Stream(apiserver, f"{CM}?watch=true&resourceVersion={a['metadata']['resourceVersion']}")
    assert names(s2.take(1)) == [("ADDED", "b")]
    s2.close()


def test_kubernetes_client_watch(apiserver: APIServer) -> None:
    api = client.CoreV1Api(apiserver.api_client())
    lst = api.list_namespaced_config_map("default")
    got: list[tuple[str, str]] = []

    def run() -> None:
        w = watch.Watch()
        for ev in w.stream(
            api.list_namespaced_config_map,
            "default",
            resource_version=lst.metadata.resource_version,
            timeout_seconds=2,
        ):
            got.append((ev["type"], ev["object"].metadata.name))
            if len(got) == 2:
                w.stop()

    t = threading.Thread(target=run)
    t.start()
    api.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
    api.delete_namespaced_config_map("x", "default")
    t.join(10)
    assert got == [("ADDED", "x"), ("DELETED", "x")]


def test_slow_watcher_does_not_block_writers(apiserver: APIServer) -> None:
    u = urlsplit(apiserver.url)
    sock = socket.create_connection((u.hostname, u.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(f"GET {CM}?watch=true HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    big = "x" * 20000
    t0 = time.monotonic()
    for i in range(60):
        request(apiserver, "POST", CM, cm(f"c{i}", big=big))
    assert time.monotonic() - t0 < 10
    sock.close()


def wait_watch_count(server: APIServer, n: int, timeout: float = 5.0) -> None:
    wait_for(lambda: server.watch_count() == n, timeout, what=f"{n} open watches")


def test_abandoned_watch_is_cleaned_up(apiserver: APIServer) -> None:
    s = Stream(apiserver, f"{CM}?watch=true")
    wait_watch_count(apiserver, 1)
    s.close()
    wait_watch_count(apiserver, 0)


def test_too_slow_watcher_is_closed(apiserver: APIServer) -> None:
    apiserver.max_watch_backlog = 5
    u = urlsplit(apiserver.url)
    sock = socket.create_connection((u.hostname, u.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(f"GET {CM}?watch=true HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    wait_watch_count(apiserver, 1)
    big = "x" * 50000
    for i in range(100):
        request(apiserver, "POST", CM, cm(f"c{i}", big=big))
        if apiserver.watch_count() == 0:
            break
    wait_watch_count(apiserver, 0)
    sock.close()
    # A fast watcher with the same limit keeps up.
    s = Stream(apiserver, f"{CM}?watch=true&resourceVersion={apiserver.resource_version}")
    request(apiserver, "POST", CM, cm("fast"))
    assert names(s.take(1)) == [("ADDED", "fast")]
    s.close()


def test_fail_next_on_watch_and_single_object_watch(apiserver: APIServer) -> None:
    apiserver.fail_next(status=503, path_regex=r"watch=true")
    assert request(apiserver, "GET", f"{CM}?watch=true")[0] == 503
    s = Stream(apiserver, "/api/v1/watch/namespaces/default/configmaps/one")
    assert s.status == 200
    request(apiserver, "POST", CM, cm("two"))
    request(apiserver, "POST", CM, cm("one"))
    assert names(s.take(1)) == [("ADDED", "one")]
    s.close()


def test_timeout_seconds_zero_means_no_deadline(apiserver: APIServer) -> None:
    s = Stream(apiserver, f"{CM}?watch=true&timeoutSeconds=0")
    request(apiserver, "POST", CM, cm("later"))
    assert names(s.take(1)) == [("ADDED", "later")]
    s.close()


@pytest.mark.apiserver(bookmark_interval=0.05, history_size=3)
def test_marker_configures_fixture(apiserver: APIServer) -> None:
    assert apiserver.bookmark_interval == 0.05
    assert apiserver.storage.history_size == 3
