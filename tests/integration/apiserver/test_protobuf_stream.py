"""Protobuf watch streams and protobuf error bodies, as kube-apiserver serves
them to clients that prefer protobuf (client-go's protobuf clients, kubectl).

A stream is ``application/vnd.kubernetes.protobuf;stream=watch``: frames of a
4-byte big-endian length and a bare ``meta.v1.WatchEvent``; each event's
``object.raw`` is a full protobuf body (``k8s\\x00`` + ``runtime.Unknown``).
Decoded here with the generated classes, not with the server's own code.
"""

from __future__ import annotations

import http.client
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from pycontroller import ResourceClient
from pycontroller.testing import APIServer
from pycontroller.testing.apiserver._proto.k8s_io.api.core.v1 import generated_pb2 as core
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.apis.meta.v1 import (
    generated_pb2 as meta,
)
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.runtime import (
    generated_pb2 as runtime,
)

PB = "application/vnd.kubernetes.protobuf"
CM = "/api/v1/namespaces/default/configmaps"


def _request(
    server: APIServer, path: str, accept: str, method: str = "GET"
) -> http.client.HTTPResponse:
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=10)
    conn.request(method, path, headers={"Accept": accept})
    return conn.getresponse()


def _envelope(raw: bytes) -> Any:
    assert raw[:4] == b"k8s\x00"
    env = runtime.Unknown()
    env.ParseFromString(raw[4:])
    return env


def _frames(resp: http.client.HTTPResponse) -> list[tuple[str, Any]]:
    """(type, runtime.Unknown of the object) of every frame until the stream ends."""
    data = resp.read()
    out = []
    while data:
        size = int.from_bytes(data[:4], "big")
        event = meta.WatchEvent()
        event.ParseFromString(data[4 : 4 + size])
        out.append((event.type, _envelope(event.object.raw)))
        data = data[4 + size :]
    return out


def _configmap(env: Any) -> Any:
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == ("v1", "ConfigMap")
    cm = core.ConfigMap()
    cm.ParseFromString(env.raw)
    return cm


def test_watch_streams_protobuf_frames_for_a_protobuf_client(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    cms.create({"metadata": {"name": "a"}, "data": {"k": "1"}}, namespace="default")
    rv = cms.list(namespace="default")["metadata"]["resourceVersion"]

    def writes() -> None:
        time.sleep(0.3)
        obj = cms.get("a", namespace="default")
        obj["data"]["k"] = "2"
        cms.update(obj, namespace="default")
        cms.delete("a", namespace="default")

    t = threading.Thread(target=writes)
    t.start()
    # client-go's Accept for a protobuf client.
    resp = _request(apiserver, f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=2",
                    f"{PB}, application/json")  # fmt: skip
    assert resp.status == 200
    assert resp.getheader("Content-Type") == f"{PB};stream=watch"
    frames = _frames(resp)
    t.join()
    assert [f[0] for f in frames] == ["MODIFIED", "DELETED"]
    modified = _configmap(frames[0][1])
    assert modified.metadata.name == "a" and dict(modified.data) == {"k": "2"}
    assert _configmap(frames[1][1]).metadata.name == "a"


def test_streamed_list_ends_with_a_protobuf_bookmark(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    for name in ("a", "b"):
        cms.create({"metadata": {"name": name}}, namespace="default")
    resp = _request(
        apiserver,
        f"{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&timeoutSeconds=1",
        f"{PB};stream=watch",
    )
    frames = _frames(resp)
    assert [f[0] for f in frames[:3]] == ["ADDED", "ADDED", "BOOKMARK"]
    assert sorted(_configmap(f[1]).metadata.name for f in frames[:2]) == ["a", "b"]
    bookmark = _configmap(frames[2][1])
    assert dict(bookmark.metadata.annotations) == {"k8s.io/initial-events-end": "true"}
    assert bookmark.metadata.resourceVersion


def test_expired_resource_version_is_a_protobuf_error_event(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    cms.create({"metadata": {"name": "a"}}, namespace="default")
    rv = cms.list(namespace="default")["metadata"]["resourceVersion"]
    cms.create({"metadata": {"name": "b"}}, namespace="default")
    apiserver.compact()
    resp = _request(apiserver, f"{CM}?watch=true&resourceVersion={rv}", f"{PB}, */*")
    frames = _frames(resp)
    assert [f[0] for f in frames] == ["ERROR"]
    env = frames[0][1]
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == ("v1", "Status")
    status = meta.Status()
    status.ParseFromString(env.raw)
    assert (status.code, status.reason) == (410, "Expired")


def test_json_clients_and_custom_resources_keep_json(apiserver: APIServer) -> None:
    ResourceClient(apiserver.api_client(), "", "v1", "configmaps").create(
        {"metadata": {"name": "a"}}, namespace="default"
    )
    resp = _request(apiserver, f"{CM}?watch=true&timeoutSeconds=1", "application/json")
    assert resp.getheader("Content-Type") == "application/json"
    assert b'"type":"ADDED"' in resp.read().replace(b" ", b"")


def test_errors_are_protobuf_status_when_the_client_prefers_it(apiserver: APIServer) -> None:
    resp = _request(apiserver, f"{CM}/missing", f"{PB}, application/json")
    assert resp.status == 404
    assert resp.getheader("Content-Type") == PB
    env = _envelope(resp.read())
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == ("v1", "Status")
    status = meta.Status()
    status.ParseFromString(env.raw)
    assert (status.code, status.reason, status.status) == (404, "NotFound", "Failure")
    assert status.message == 'configmaps "missing" not found'
    assert (status.details.name, status.details.kind) == ("missing", "configmaps")
    # A JSON client still gets JSON.
    resp = _request(apiserver, f"{CM}/missing", "application/json")
    assert resp.getheader("Content-Type") == "application/json"
