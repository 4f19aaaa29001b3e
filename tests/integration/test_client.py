"""ResourceClient over the embedded API server: CRUD, errors, paging, watch, 429, rate limiting."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from support.fakes import SleepRecorder

from pycontroller.client import ResourceClient, TokenBucketRateLimiter
from pycontroller.clock import FakeClock
from pycontroller.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
    TooManyRequestsError,
)
from pycontroller.testing import APIServer, wait_for


def cm(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "data": {"k": name},
    }


@pytest.fixture
def cms(apiserver: APIServer) -> ResourceClient:
    return ResourceClient(apiserver.api_client(), "", "v1", "configmaps")


def test_crud_round_trip_returns_plain_dicts(cms: ResourceClient) -> None:
    created = cms.create(cm("a"))
    assert type(created) is dict and created["metadata"]["resourceVersion"]
    got = cms.get("a", "default")
    assert got["data"] == {"k": "a"}
    got["data"]["k"] = "changed"
    updated = cms.update(got)
    assert updated["data"]["k"] == "changed"
    patched = cms.patch("a", {"data": {"x": "1"}}, "default")
    assert patched["data"] == {"k": "changed", "x": "1"}
    jp = cms.patch("a", [{"op": "remove", "path": "/data/x"}], "default", patch_type="json")
    assert jp["data"] == {"k": "changed"}
    cms.delete("a", "default")
    with pytest.raises(NotFoundError):
        cms.get("a", "default")


def test_error_mapping(cms: ResourceClient) -> None:
    cms.create(cm("a"))
    with pytest.raises(AlreadyExistsError):
        cms.create(cm("a"))
    stale = cms.get("a", "default")
    cms.patch("a", {"data": {"v": "2"}}, "default")
    with pytest.raises(ConflictError):
        cms.update(stale)
    with pytest.raises(InvalidError):
        cms.create(cm("Not_A_Valid_Name"))
    with pytest.raises(NotFoundError):
        cms.delete("missing", "default")
    current = cms.get("a", "default")
    with pytest.raises(ConflictError):
        cms.delete("a", "default", preconditions={"resourceVersion": "1"})
    cms.delete(
        "a", "default", preconditions={"resourceVersion": current["metadata"]["resourceVersion"]}
    )


def test_list_selectors_and_paging(cms: ResourceClient) -> None:
    for i in range(7):
        cms.create(cm(f"c{i}", app="x" if i % 2 else "y"))
    cms.create(cm("other", ns="kube-system"))
    assert len(cms.list("default")["items"]) == 7
    assert len(cms.list()["items"]) >= 8
    odd = cms.list("default", label_selector="app=x")["items"]
    assert sorted(o["metadata"]["name"] for o in odd) == ["c1", "c3", "c5"]
    names: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = cms.list("default", limit=3, continue_=token)
        pages += 1
        names += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert pages == 3 and sorted(names) == [f"c{i}" for i in range(7)]
    assert sorted(o["metadata"]["name"] for o in cms.iter_list("default", page_size=2)) == names


def test_watch_yields_events_from_a_resource_version(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    rv = cms.list("default")["metadata"]["resourceVersion"]
    cms.create(cm("a"))
    cms.patch("a", {"data": {"v": "1"}}, "default")
    cms.delete("a", "default")
    stream = cms.watch("default", resource_version=rv, timeout_seconds=5)
    types = []
    for event in stream:
        if event["type"] != "BOOKMARK":
            types.append((event["type"], event["object"]["metadata"]["name"]))
        if len(types) == 3:
            break
    stream.close()
    assert types == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_from_compacted_rv_reports_410(apiserver: APIServer, cms: ResourceClient) -> None:
    rv = cms.list("default")["metadata"]["resourceVersion"]
    cms.create(cm("a"))
    apiserver.compact()
    try:
        stream = cms.watch("default", resource_version=rv, timeout_seconds=5)
    except GoneError:
        return  # HTTP 410 on the watch request itself
    first = next(stream)
    stream.close()
    assert first["type"] == "ERROR" and first["object"]["code"] == 410


def test_watch_close_unblocks_reader(cms: ResourceClient) -> None:
    stream = cms.watch("default", timeout_seconds=60)
    done = threading.Event()
    threading.Thread(target=lambda: (list(stream), done.set()), daemon=True).start()
    time.sleep(0.1)
    assert not done.is_set()
    stream.close()
    assert done.wait(3)


def test_429_retry_after_is_honoured(apiserver: APIServer) -> None:
    clock = SleepRecorder()
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps", clock=clock)
    apiserver.fail_next(429, times=2, method="GET", path_regex="configmaps")
    assert client.list("default")["items"] == []
    assert clock.sleeps == [1.0, 1.0]
    apiserver.fail_next(429, times=5, method="POST", path_regex="configmaps")
    limited = ResourceClient(
        apiserver.api_client(), "", "v1", "configmaps", clock=clock, max_retries=2
    )
    with pytest.raises(TooManyRequestsError) as info:
        limited.create(cm("a"))
    assert info.value.retry_after == 1.0


def test_5xx_with_retry_after_is_retried_like_client_go(apiserver: APIServer) -> None:
    """client-go's checkWait: a 429 or any 5xx carrying Retry-After is retried, every verb."""
    clock = SleepRecorder()
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps", clock=clock)
    apiserver.fail_next(503, times=2, method="GET", path_regex="configmaps", retry_after=2)
    assert client.list("default")["items"] == []
    apiserver.fail_next(500, method="POST", path_regex="configmaps", retry_after=1)
    assert client.create(cm("r"))["metadata"]["name"] == "r"
    assert clock.sleeps == [2.0, 2.0, 1.0]
    limited = ResourceClient(
        apiserver.api_client(), "", "v1", "configmaps", clock=clock, max_retries=1
    )
    apiserver.fail_next(504, times=3, method="GET", path_regex="configmaps", retry_after=1)
    with pytest.raises(ApiError) as info:
        limited.get("r", "default")
    assert info.value.status == 504 and info.value.retry_after == 1.0
    assert clock.sleeps == [2.0, 2.0, 1.0, 1.0]
    apiserver.clear_faults()
    # Without Retry-After a 5xx is not retried.
    apiserver.fail_next(503, method="GET", path_regex="configmaps")
    with pytest.raises(ApiError) as plain:
        client.get("r", "default")
    assert plain.value.status == 503 and plain.value.retry_after is None
    assert clock.sleeps == [2.0, 2.0, 1.0, 1.0]


def test_watch_start_honours_retry_after(apiserver: APIServer) -> None:
    """Opening a watch is retried after Retry-After too (client-go's Request.Watch)."""
    clock = SleepRecorder()
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps", clock=clock)
    apiserver.fail_next(429, times=2, method="GET", path_regex="watch=", retry_after=1)
    stream = client.watch("default", resource_version="0", timeout_seconds=5)
    try:
        assert clock.sleeps == [1.0, 1.0]
        client.create(cm("w"))
        event = next(iter(stream))
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "w"
    finally:
        stream.close()
    # Retries exhausted: the error reaches the caller (the reflector then backs off).
    limited = ResourceClient(
        apiserver.api_client(), "", "v1", "configmaps", clock=clock, max_retries=1
    )
    apiserver.fail_next(429, times=2, method="GET", path_regex="watch=", retry_after=3)
    with pytest.raises(TooManyRequestsError) as info:
        limited.watch("default", resource_version="0", timeout_seconds=5)
    assert info.value.retry_after == 3.0 and clock.sleeps == [1.0, 1.0, 3.0]


def test_server_errors_are_api_errors(apiserver: APIServer, cms: ResourceClient) -> None:
    apiserver.fail_next(500, method="GET", path_regex="configmaps")
    with pytest.raises(ApiError) as info:
        cms.list()
    assert info.value.status == 500
    assert cms.list()["items"] is not None


def test_rate_limiter_throttles_requests(apiserver: APIServer) -> None:
    clock = FakeClock()
    limiter = TokenBucketRateLimiter(qps=1, burst=2, clock=clock)
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps", rate_limiter=limiter)
    done: list[int] = []

    def work() -> None:
        for i in range(4):
            client.list("default")
            done.append(i)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    wait_for(clock.waiters, 5)
    assert len(done) == 2, "the burst is spent; the third request waits for a token"
    clock.step(1.0)
    wait_for(lambda: len(done) >= 3, 5)
    assert len(done) == 3
    clock.step(1.0)
    t.join(5)
    assert len(done) == 4
