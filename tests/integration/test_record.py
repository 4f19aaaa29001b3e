"""EventRecorder against the embedded API server: real Events, aggregation by PATCH."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller import EventRecorder, ResourceClient
from pycontroller.testing import APIServer


@pytest.fixture
def pod(apiserver: APIServer) -> dict[str, Any]:
    pods = ResourceClient(apiserver.api_client(), "", "v1", "pods")
    return pods.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
    )


@pytest.fixture
def recorder(apiserver: APIServer) -> Iterator[EventRecorder]:
    r = EventRecorder(apiserver.api_client(), "test-controller", retry_interval=0.05)
    yield r
    r.shutdown()


def events(apiserver: APIServer, namespace: str = "default") -> list[dict[str, Any]]:
    client = ResourceClient(apiserver.api_client(), "", "v1", "events")
    items: list[dict[str, Any]] = client.list(namespace)["items"]
    return items


def test_ten_identical_events_make_one_event_with_count_ten(
    apiserver: APIServer, recorder: EventRecorder, pod: dict[str, Any]
) -> None:
    writes_before = apiserver.writes("events")
    for _ in range(10):
        recorder.event(pod, "Normal", "Synced", "Pod synced successfully")
    assert recorder.flush(10)
    (ev,) = events(apiserver)
    assert ev["count"] == 10
    assert ev["reason"] == "Synced" and ev["type"] == "Normal"
    assert ev["message"] == "Pod synced successfully"
    assert ev["involvedObject"]["name"] == "web"
    assert ev["involvedObject"]["uid"] == pod["metadata"]["uid"]
    assert ev["involvedObject"]["kind"] == "Pod"
    assert ev["source"]["component"] == "test-controller"
    assert ev["reportingComponent"] == "test-controller"
    assert ev["metadata"]["name"].startswith("web.")
    writes = apiserver.writes("events") - writes_before
    assert 1 <= writes <= 10
    posts = [r for r in apiserver.request_log if r.method == "POST" and "/events" in r.path]
    assert len(posts) == 1  # one create; every repeat was a PATCH (or coalesced)


def test_repeat_after_flush_patches_count_and_last_timestamp(
    apiserver: APIServer, recorder: EventRecorder, pod: dict[str, Any]
) -> None:
    recorder.eventf(pod, "Warning", "Failed", "attempt failed: %s", "timeout")
    assert recorder.flush(10)
    (first,) = events(apiserver)
    recorder.eventf(pod, "Warning", "Failed", "attempt failed: %s", "timeout")
    assert recorder.flush(10)
    (second,) = events(apiserver)
    assert second["metadata"]["name"] == first["metadata"]["name"]
    assert second["count"] == 2
    assert second["firstTimestamp"] == first["firstTimestamp"]
    assert second["lastTimestamp"] >= first["lastTimestamp"]
    patches = [r for r in apiserver.request_log if r.method == "PATCH" and "/events/" in r.path]
    assert len(patches) == 1 and patches[0].status == 200


def test_different_reasons_are_different_events(
    apiserver: APIServer, recorder: EventRecorder, pod: dict[str, Any]
) -> None:
    recorder.event(pod, "Normal", "Created", "created")
    recorder.event(pod, "Normal", "Started", "started")
    recorder.event(pod, "Warning", "Started", "started")
    assert recorder.flush(10)
    got = sorted((e["type"], e["reason"], e["count"]) for e in events(apiserver))
    assert got == [("Normal", "Created", 1), ("Normal", "Started", 1), ("Warning", "Started", 1)]


def test_cluster_scoped_object_events_go_to_default(
    apiserver: APIServer, recorder: EventRecorder
) -> None:
    ns = ResourceClient(apiserver.api_client(), "", "v1", "namespaces", namespaced=False)
    obj = ns.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    recorder.event(obj, "Normal", "Provisioned", "namespace ready")
    assert recorder.flush(10)
    (ev,) = events(apiserver, "default")
    assert ev["involvedObject"]["name"] == "team-a"
    assert "namespace" not in ev["involvedObject"]


def test_deleted_event_is_recreated(
    apiserver: APIServer, recorder: EventRecorder, pod: dict[str, Any]
) -> None:
    recorder.event(pod, "Normal", "Synced", "ok")
    assert recorder.flush(10)
    (ev,) = events(apiserver)
    client = ResourceClient(apiserver.api_client(), "", "v1", "events")
    client.delete(ev["metadata"]["name"], "default")
    recorder.event(pod, "Normal", "Synced", "ok")
    assert recorder.flush(10)
    (again,) = events(apiserver)
    assert again["count"] == 2
    assert again["metadata"]["name"] == ev["metadata"]["name"]


def test_server_errors_are_retried(
    apiserver: APIServer, recorder: EventRecorder, pod: dict[str, Any]
) -> None:
    apiserver.fail_next(status=500, times=2, method="POST", path_regex="/events")
    recorder.event(pod, "Normal", "Synced", "ok")
    assert recorder.flush(10)
    (ev,) = events(apiserver)
    assert ev["count"] == 1
    statuses = [
        r.status for r in apiserver.request_log if r.method == "POST" and "/events" in r.path
    ]
    assert statuses == [500, 500, 201]


def test_unreachable_server_never_blocks_or_raises(apiserver: APIServer) -> None:
    api = apiserver.api_client()
    apiserver.stop()
    r = EventRecorder(api, "c", retry_interval=0.01, max_tries=2)
    try:
        pod = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "x"}}
        for _ in range(5):
            r.event(pod, "Normal", "R", "m")
        assert r.flush(10)
    finally:
        r.shutdown()
