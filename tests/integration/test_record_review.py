"""EventRecorder against the embedded API server: review against client-go ``tools/record``."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from pycontroller import EventRecorder, ResourceClient
from pycontroller.testing import APIServer


@pytest.fixture
def recorder(apiserver: APIServer) -> Iterator[EventRecorder]:
    r = EventRecorder(apiserver.api_client(), "test-controller", retry_interval=0.05)
    yield r
    r.shutdown()


def test_event_in_terminating_namespace_is_dropped_quietly(
    apiserver: APIServer, recorder: EventRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    """recordEvent: a NamespaceTerminating rejection is expected (logged at V(5))."""
    namespaces = ResourceClient(apiserver.api_client(), "", "v1", "namespaces", namespaced=False)
    namespaces.create(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "doomed", "finalizers": ["example.com/hold"]},
        }
    )
    namespaces.delete("doomed")
    assert namespaces.get("doomed")["metadata"].get("deletionTimestamp")
    caplog.set_level(logging.DEBUG, logger="pycontroller.record")
    ref = {"kind": "Pod", "apiVersion": "v1", "namespace": "doomed", "name": "web", "uid": "u1"}
    recorder.event(ref, "Normal", "Killing", "Stopping container")
    assert recorder.flush(10)
    rejected = [r for r in caplog.records if "being terminated" in r.getMessage()]
    assert rejected, "the rejection is logged"
    assert all(r.levelno < logging.WARNING for r in rejected)
    posts = [r for r in apiserver.request_log if r.method == "POST" and "/events" in r.path]
    assert len(posts) == 1 and posts[0].status == 403  # not retried
