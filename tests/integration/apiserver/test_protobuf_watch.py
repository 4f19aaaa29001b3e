"""Protobuf watch streams and protobuf error ``Status`` bodies, over HTTP, as
kube-apiserver 1.32 serves them to clients whose Accept header negotiates
protobuf (client-go's typed clients send ``application/vnd.kubernetes.protobuf,
application/json``).

What kube writes (apimachinery ``runtime/serializer``: the protobuf media
type's stream serializer is ``RawSerializer`` with ``LengthDelimitedFramer``;
apiserver ``handlers/watch.go`` and ``watchEncoder``):

- ``Content-Type: application/vnd.kubernetes.protobuf;stream=watch``;
- each frame: a 4-byte big-endian length, then a *bare*
  ``k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent`` (no ``k8s\\x00``, no
  ``runtime.Unknown``: the raw serializer writes the message alone);
- the event's ``object.raw``: the object as a full protobuf body
  (``k8s\\x00`` + ``runtime.Unknown`` with its apiVersion and kind); a
  ``Status`` (``v1``/``Status``) for ERROR events.

Errors go through ``responsewriters.ErrorNegotiated``, which negotiates with
``DefaultEndpointRestrictions`` over serializers that include protobuf for
custom resources too: a protobuf client gets a protobuf ``Status`` whatever
it asked for.

Every frame and body is decoded with the generated message classes, not with
the server's own conversion code; the real ``kubectl`` (client-go) checks the
same over its typed clients when it is installed.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support import crds
from support.kubectl import KUBECTL, Kubectl

from pycontroller import ResourceClient, _json
from pycontroller.testing import APIServer
from pycontroller.testing.apiserver._proto.k8s_io.api.apps.v1 import generated_pb2 as apps
from pycontroller.testing.apiserver._proto.k8s_io.api.core.v1 import generated_pb2 as core
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.apis.meta.v1 import (
    generated_pb2 as meta,
)
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.runtime import (
    generated_pb2 as runtime,
)
from pycontroller.testing.apiserver.http import negotiation, protobuf

PB = "application/vnd.kubernetes.protobuf"
PB_WATCH = f"{PB};stream=watch"
CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


# --- HTTP and decoding helpers ---------------------------------------------------


def _open(
    server: APIServer,
    method: str,
    path: str,
    accept: str,
    body: bytes | None = None,
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    headers = {"Accept": accept}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    return conn, conn.getresponse()


def _read_exact(resp: http.client.HTTPResponse, size: int) -> bytes:
    """``size`` bytes of a (chunked) body; fewer only at its end."""
    data = b""
    for _ in range(size + 1):  # each read returns at least one byte or ends the body
        if len(data) >= size:
            break
        chunk = resp.read(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _next_frame(resp: http.client.HTTPResponse) -> bytes | None:
    """The next length-delimited frame, None at the end of the stream."""
    header = _read_exact(resp, 4)
    if not header:
        return None
    assert len(header) == 4, f"truncated frame header {header!r}"
    size = int.from_bytes(header, "big")
    data = _read_exact(resp, size)
    assert len(data) == size, f"truncated frame: {len(data)} of {size} bytes"
    return data


def _event(frame: bytes) -> Any:
    """The bare WatchEvent of a frame (checked to be nothing else)."""
    assert not frame.startswith(b"k8s\x00"), "a frame is a bare WatchEvent, not an envelope"
    event = meta.WatchEvent()
    event.ParseFromString(frame)
    # Exactly a WatchEvent: no fields the message does not know, and it
    # serializes back to the same bytes.
    assert event.SerializeToString() == frame
    return event


def _unknown(body: bytes) -> Any:
    assert body[:4] == b"k8s\x00", body[:16]
    env = runtime.Unknown()
    env.ParseFromString(body[4:])
    assert (env.contentEncoding, env.contentType) == ("", "")
    return env


def _object(raw: bytes, api_version: str, kind: str, cls: Any) -> Any:
    env = _unknown(raw)
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == (api_version, kind)
    obj = cls()
    obj.ParseFromString(env.raw)
    return obj


def _status(body: bytes) -> Any:
    status: Any = _object(body, "v1", "Status", meta.Status)
    return status


def _watch(
    server: APIServer, path: str, accept: str, limit: int
) -> tuple[str, list[Any], http.client.HTTPConnection]:
    """Content-Type and the first ``limit`` events (fewer if the stream ends)."""
    conn, resp = _open(server, "GET", path, accept)
    assert resp.status == 200
    events = []
    for _ in range(limit):
        frame = _next_frame(resp)
        if frame is None:
            break
        events.append(_event(frame))
    return resp.getheader("Content-Type") or "", events, conn


# --- watch streams -----------------------------------------------------------------


@pytest.mark.parametrize(
    "accept",
    [
        f"{PB}, */*",  # client-go's protobuf clients (kubectl: "...,application/json")
        PB_WATCH,
        f"*/*, {PB}",  # goautoneg puts the specific type before the wildcard
        f"{PB};pretty=1, application/json",  # pretty and unknown parameters are ignored
    ],
)
def test_configmap_changes_stream_as_protobuf_frames(apiserver: APIServer, accept: str) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    rv = cms.list(namespace="default")["metadata"]["resourceVersion"]
    created = cms.create({"metadata": {"name": "a"}, "data": {"k": "1"}}, namespace="default")
    created["data"]["k"] = "2"
    updated = cms.update(created, namespace="default")
    cms.delete("a", namespace="default")

    ctype, events, conn = _watch(apiserver, f"{CM}?watch=true&resourceVersion={rv}", accept, 3)
    conn.close()
    assert ctype == PB_WATCH
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    objs = [_object(e.object.raw, "v1", "ConfigMap", core.ConfigMap) for e in events]
    assert [o.metadata.name for o in objs] == ["a", "a", "a"]
    assert [o.metadata.namespace for o in objs] == ["default"] * 3
    assert [dict(o.data) for o in objs[:2]] == [{"k": "1"}, {"k": "2"}]
    assert objs[1].metadata.resourceVersion == updated["metadata"]["resourceVersion"]
    rvs = [int(o.metadata.resourceVersion) for o in objs]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3
    assert objs[0].metadata.uid == created["metadata"]["uid"]


def test_watch_path_of_one_object_streams_protobuf(apiserver: APIServer) -> None:
    # The legacy ``/watch/`` verb path, as ``?watch=true``.
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    cms.create({"metadata": {"name": "b"}, "data": {"x": "y"}}, namespace="default")
    ctype, events, conn = _watch(
        apiserver, "/api/v1/watch/namespaces/default/configmaps/b", f"{PB},application/json", 1
    )
    conn.close()
    assert ctype == PB_WATCH
    assert [e.type for e in events] == ["ADDED"]
    cm = _object(events[0].object.raw, "v1", "ConfigMap", core.ConfigMap)
    assert (cm.metadata.name, dict(cm.data)) == ("b", {"x": "y"})


@pytest.mark.apiserver(bookmark_interval=0.1)
def test_bookmarks_are_protobuf_objects_of_the_watched_kind(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    cms.create({"metadata": {"name": "a"}}, namespace="default")
    rv = cms.list(namespace="default")["metadata"]["resourceVersion"]
    # A bookmark goes out only past the watch's start (cacheWatcher.process):
    # another kind's write moves the resourceVersion on.
    secrets = ResourceClient(apiserver.api_client(), "", "v1", "secrets")
    secrets.create({"metadata": {"name": "s"}}, namespace="default")
    for path, api_version, kind, cls in (
        (CM, "v1", "ConfigMap", core.ConfigMap),
        (DEPLOYMENTS, "apps/v1", "Deployment", apps.Deployment),
    ):
        query = f"?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5"
        ctype, events, conn = _watch(apiserver, path + query, f"{PB}, */*", 1)
        conn.close()
        assert ctype == PB_WATCH
        assert [e.type for e in events] == ["BOOKMARK"]
        obj = _object(events[0].object.raw, api_version, kind, cls)
        assert int(obj.metadata.resourceVersion) >= int(rv)
        assert obj.metadata.name == "" and not obj.metadata.annotations


def test_expired_resource_version_is_a_protobuf_error_event(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    cms.create({"metadata": {"name": "a"}}, namespace="default")
    rv = cms.list(namespace="default")["metadata"]["resourceVersion"]
    cms.create({"metadata": {"name": "b"}}, namespace="default")
    apiserver.compact()

    ctype, events, conn = _watch(apiserver, f"{CM}?watch=true&resourceVersion={rv}", PB_WATCH, 5)
    conn.close()
    assert ctype == PB_WATCH
    assert [e.type for e in events] == ["ERROR"]  # and the stream ends
    status = _status(events[0].object.raw)
    assert (status.status, status.code, status.reason) == ("Failure", 410, "Expired")
    assert status.message.startswith("too old resource version")


def test_json_watches_are_unchanged(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    rv = cms.list(namespace="default")["metadata"]["resourceVersion"]
    created = cms.create({"metadata": {"name": "a"}, "data": {"k": "1"}}, namespace="default")
    for accept in ("application/json", f"application/json, {PB}", ""):
        conn, resp = _open(apiserver, "GET", f"{CM}?watch=true&resourceVersion={rv}", accept)
        assert resp.getheader("Content-Type") == "application/json"
        line = resp.readline()
        conn.close()
        # One JSON event per line, in the server's compact encoding.
        assert line == _json.dumps({"type": "ADDED", "object": created}) + b"\n"
    # A Table watch stays a JSON Table when protobuf only comes second.
    accept = f"application/json;as=Table;g=meta.k8s.io;v=v1, {PB}"
    conn, resp = _open(apiserver, "GET", f"{CM}?watch=true&resourceVersion={rv}", accept)
    assert resp.getheader("Content-Type") == "application/json"
    conn.close()


def test_custom_resource_watches_stay_json(apiserver: APIServer) -> None:
    _install_widgets(apiserver)
    conn, resp = _open(
        apiserver, "GET", f"{WIDGETS}?watch=true&timeoutSeconds=1", f"{PB}, application/json"
    )
    assert resp.getheader("Content-Type") == "application/json"
    assert resp.read() == b""  # no widgets: the stream just ends
    conn.close()


# --- error bodies --------------------------------------------------------------------


def test_not_found_is_a_protobuf_status(apiserver: APIServer) -> None:
    conn, resp = _open(apiserver, "GET", f"{CM}/missing", f"{PB}, application/json")
    body = resp.read()
    conn.close()
    assert (resp.status, resp.getheader("Content-Type")) == (404, PB)
    status = _status(body)
    assert (status.status, status.code, status.reason) == ("Failure", 404, "NotFound")
    assert status.message == 'configmaps "missing" not found'
    assert (status.details.name, status.details.kind) == ("missing", "configmaps")

    # JSON clients get JSON; Accept headers kube cannot serve are refused
    # before the get (getResourceHandler negotiates first): 406 in its raw JSON.
    for accept, code, reason in (
        ("application/json", 404, "NotFound"),
        ("text/html", 406, "NotAcceptable"),
        (f"{PB};as=Table;g=meta.k8s.io;v=v1", 406, "NotAcceptable"),
    ):
        conn, resp = _open(apiserver, "GET", f"{CM}/missing", accept)
        body = resp.read()
        conn.close()
        assert (resp.status, resp.getheader("Content-Type")) == (code, "application/json")
        assert json.loads(body)["reason"] == reason


def test_invalid_object_is_a_protobuf_status_with_causes(apiserver: APIServer) -> None:
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}})
    conn, resp = _open(apiserver, "POST", CM, f"{PB}, */*", body.encode())
    raw = resp.read()
    conn.close()
    assert (resp.status, resp.getheader("Content-Type")) == (422, PB)
    status = _status(raw)
    assert (status.code, status.reason) == (422, "Invalid")
    assert (status.details.kind, status.details.name) == ("ConfigMap", "Bad_Name")
    causes = [(c.reason, c.field) for c in status.details.causes]
    assert ("FieldValueInvalid", "metadata.name") in causes
    assert all(c.message for c in status.details.causes)
    assert status.message.startswith('ConfigMap "Bad_Name" is invalid: ')


def test_rejected_watch_request_is_a_protobuf_status(apiserver: APIServer) -> None:
    # An error before the stream starts is an ordinary error: ``stream=watch``
    # is allowed by the error writer's negotiation.
    conn, resp = _open(apiserver, "GET", f"{CM}?watch=true&labelSelector=a%20in", PB_WATCH)
    raw = resp.read()
    conn.close()
    assert resp.status >= 400 and resp.getheader("Content-Type") == PB
    status = _status(raw)
    assert status.code == resp.status and status.status == "Failure"


def test_custom_resource_errors_are_protobuf_too(apiserver: APIServer) -> None:
    # The custom resource's serializers include protobuf (its objects are
    # refused it by the scope's StandardSerializers, a Status is not).
    _install_widgets(apiserver)
    conn, resp = _open(apiserver, "GET", f"{WIDGETS}/missing", f"{PB}, application/json")
    raw = resp.read()
    conn.close()
    assert (resp.status, resp.getheader("Content-Type")) == (404, PB)
    status = _status(raw)
    assert (status.code, status.reason) == (404, "NotFound")
    assert status.details.name == "missing"
    # ... while its objects stay JSON.
    ResourceClient(apiserver.api_client(), "example.com", "v1", "widgets").create(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
        namespace="default",
    )
    conn, resp = _open(apiserver, "GET", f"{WIDGETS}/w", f"{PB}, application/json")
    obj = json.loads(resp.read())
    conn.close()
    assert resp.getheader("Content-Type") == "application/json" and obj["kind"] == "Widget"


# --- negotiation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "accept,resource,error",
    [
        (f"{PB}, application/json", True, True),
        (f"{PB}, */*", True, True),
        (PB_WATCH, True, True),
        (f"{PB};stream=other, application/json", False, False),
        (f"*/*, {PB}", True, True),  # specific before wildcard at equal q
        (f"application/*, {PB};q=0.5", True, True),  # goautoneg's Less, as it is
        (f"application/json;q=0.5, {PB}", True, True),
        (f"application/json, {PB}", False, False),
        (f"application/yaml, {PB}", False, False),
        (f"{PB};as=Table;g=meta.k8s.io;v=v1, application/json", False, False),
        (f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1", False, False),
        (f"{PB};sv=v1", True, False),  # a resource's scope serves sv=v1, errors do not
        (f"{PB};sv=v1, application/json", True, False),
        ("text/html", False, False),
        ("", False, False),
        (f"Application/Vnd.Kubernetes.Protobuf, {PB.upper()}", False, False),  # no case folding
    ],
)
def test_negotiation_matches_kube(accept: str, resource: bool, error: bool) -> None:
    assert protobuf.prefers_protobuf_watch(accept) is resource
    assert protobuf.prefers_protobuf(accept) is resource
    assert protobuf.prefers_protobuf_status(accept) is error


def test_accept_parsing_is_goautonegs() -> None:
    ranges = negotiation.media_ranges(" application/json ; q=0.5 ;as=Table , * ;q=0, text/x;q=abc")
    assert ranges == [
        ("application/json", {"as": "Table"}),
        ("text/x", {}),  # an unparsable q is 0, and a type beats a wildcard...
        ("*/*", {}),  # ...a bare "*", kept at q=0 (1.32 still matches it, last)
    ]
    # A custom resource's scope refuses protobuf for its objects.
    assert negotiation.negotiate(f"{PB}, */*", negotiation.CUSTOM_RESOURCE) == (
        "application/json",
        {},
    )
    assert negotiation.negotiate(PB, negotiation.CUSTOM_RESOURCE) is None  # kube: 406


# --- the real client-go ------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_reads_protobuf_watch_events_and_errors(
    apiserver: APIServer, tmp_path: Path
) -> None:
    kubectl = Kubectl(apiserver, tmp_path, timeout=30)
    # Typed clients: protobuf errors decoded into kube's messages.
    kubectl("create", "configmap", "a")
    dup = kubectl("create", "configmap", "a", check=False)
    assert dup.returncode == 1 and 'configmaps "a" already exists' in dup.stderr
    bad = kubectl("create", "configmap", "Bad_Name", check=False)
    assert bad.returncode == 1
    assert 'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"' in bad.stderr

    # `kubectl events --watch` watches Events with its typed client, which
    # asks for protobuf first: its output comes from the decoded frames.
    proc = kubectl.popen("events", "--watch", "-n", "default", "-v=8")
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(proc.stdout.readline, "")),  # type: ignore[union-attr]
        daemon=True,
    )
    reader.start()
    try:
        time.sleep(0.5)
        ResourceClient(apiserver.api_client(), "", "v1", "events").create(
            {
                "metadata": {"name": "e1"},
                "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "default"},
                "reason": "Tested",
                "message": "hello from a protobuf watch",
                "type": "Normal",
            },
            namespace="default",
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not any("protobuf watch" in x for x in lines):
            time.sleep(0.05)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert any("Tested" in x and "hello from a protobuf watch" in x for x in lines), (lines, err)
    assert any(
        "/events" in r.path and "watch=true" in r.path for r in list(apiserver.request_log)
    ), "kubectl did not watch"
    # client-go logs the watch response's headers at -v=8.
    assert f"Content-Type: {PB_WATCH}" in err


WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def _install_widgets(server: APIServer) -> None:
    crd = crds.crd("widgets", "Widget")
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    conn, resp = _open(server, "POST", path, "application/json", json.dumps(crd).encode())
    assert resp.status == 201, resp.read()
    conn.close()
    for _ in range(100):  # served once established (bounded: 5 s)
        conn, resp = _open(server, "GET", f"{WIDGETS}", "application/json")
        resp.read()
        conn.close()
        if resp.status == 200:
            return
        time.sleep(0.05)
    raise AssertionError("widgets are not served")
