"""Controller + informer + workqueue + client over the embedded API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from pycontroller import Controller, NotFoundError, ResourceClient, Result
from pycontroller.cache import SharedInformerFactory, split_meta_namespace_key
from pycontroller.handlers import enqueue_key
from pycontroller.testing import APIServer, wait_for
from pycontroller.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

ANNOTATION = "example.pycontroller.io/seen-data"

_n = 0


def unique(prefix: str) -> str:
    global _n
    _n += 1
    return f"{prefix}-{_n}"


class Annotator:
    """Level-based sync: annotate every ConfigMap with a digest of its data."""

    def __init__(self, apiserver: APIServer, name: str) -> None:
        api = apiserver.api_client()
        self.factory = SharedInformerFactory(api)
        informer = self.factory.for_resource("", "v1", "configmaps")
        self.lister = self.factory.lister("", "v1", "configmaps")
        self.client = ResourceClient(api, "", "v1", "configmaps")
        self.queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.01, 0.2), name=name)
        informer.add_event_handler(enqueue_key(self.queue))
        self.calls: list[str] = []
        self.errors = 0
        self._lock = threading.Lock()
        self.controller = Controller(name, self.queue, self.sync, has_synced=[informer.has_synced])

    def sync(self, key: str) -> Result | None:
        with self._lock:
            self.calls.append(key)
        namespace, name = split_meta_namespace_key(key)
        try:
            cm = self.lister.get(name, namespace)
        except NotFoundError:
            return None
        want = ",".join(sorted((cm.get("data") or {}).keys()))
        if (cm["metadata"].get("annotations") or {}).get(ANNOTATION) == want:
            return None
        self.client.patch(name, {"metadata": {"annotations": {ANNOTATION: want}}}, namespace)
        return None


@pytest.fixture
def annotator(apiserver: APIServer) -> Iterator[Annotator]:
    a = Annotator(apiserver, unique("annotator"))
    stop = threading.Event()
    a.factory.start(stop)
    t = threading.Thread(target=a.controller.run, args=(3, stop), daemon=True)
    t.start()
    yield a
    stop.set()
    t.join(15)
    assert not t.is_alive()
    a.factory.shutdown(5)


def cms(apiserver: APIServer) -> ResourceClient:
    return ResourceClient(apiserver.api_client(), "", "v1", "configmaps")


def annotation(client: ResourceClient, name: str) -> str | None:
    try:
        obj = client.get(name, "default")
    except NotFoundError:
        return None
    value: str | None = (obj["metadata"].get("annotations") or {}).get(ANNOTATION)
    return value


def make_cm(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def test_converges_on_existing_and_new_objects(apiserver: APIServer) -> None:
    client = cms(apiserver)
    client.create(make_cm("before", {"a": "1"}))  # exists before the informer lists
    a = Annotator(apiserver, unique("annotator"))
    stop = threading.Event()
    a.factory.start(stop)
    t = threading.Thread(target=a.controller.run, args=(2, stop), daemon=True)
    t.start()
    try:
        wait_for(lambda: annotation(client, "before") == "a", what="pre-existing object")
        client.create(make_cm("after", {"x": "1", "y": "2"}))
        wait_for(lambda: annotation(client, "after") == "x,y", what="new object")
        client.patch("after", {"data": {"z": "3"}}, "default")
        wait_for(lambda: annotation(client, "after") == "x,y,z", what="updated object")
        client.delete("after", "default")
        wait_for(lambda: "default/after" in a.calls and annotation(client, "after") is None)
    finally:
        stop.set()
        t.join(15)
        a.factory.shutdown(5)
    assert not t.is_alive()


def test_retries_injected_failures_until_converged(
    apiserver: APIServer, annotator: Annotator
) -> None:
    client = cms(apiserver)
    apiserver.fail_next(status=500, times=3, method="PATCH", path_regex="/configmaps/flaky")
    client.create(make_cm("flaky", {"k": "v"}))
    wait_for(lambda: annotation(client, "flaky") == "k", what="convergence after failures")
    patches = [
        r.status for r in apiserver.request_log if r.method == "PATCH" and "/flaky" in r.path
    ]
    assert patches[:4] == [500, 500, 500, 200]
    name = annotator.controller.name
    errors = REGISTRY.get_sample_value(
        "controller_runtime_reconcile_errors_total", {"controller": name}
    )
    assert errors == 3
    wait_for(lambda: annotator.queue.num_requeues("default/flaky") == 0, what="forget")


def test_conflict_is_retried(apiserver: APIServer, annotator: Annotator) -> None:
    client = cms(apiserver)
    apiserver.fail_next(status=409, times=1, method="PATCH", path_regex="/configmaps/c1")
    client.create(make_cm("c1", {"k": "v"}))
    wait_for(lambda: annotation(client, "c1") == "k", what="convergence after conflict")


def test_many_objects_converge_with_few_writes(apiserver: APIServer, annotator: Annotator) -> None:
    client = cms(apiserver)
    for i in range(30):
        client.create(make_cm(f"m{i}", {f"k{i}": "v"}))

    def done() -> bool:
        items = client.list("default")["items"]
        got = {
            c["metadata"]["name"]: (c["metadata"].get("annotations") or {}).get(ANNOTATION)
            for c in items
        }
        return all(got.get(f"m{i}") == f"k{i}" for i in range(30))

    wait_for(done, what="30 objects annotated")
    time.sleep(0.3)  # let the informer deliver the annotation updates
    # Level-based: exactly one PATCH per object (the update events it causes are no-ops).
    patches = [
        r for r in apiserver.request_log if r.method == "PATCH" and "/configmaps/m" in r.path
    ]
    assert len(patches) == 30


def test_stop_during_a_large_sync_writes_only_the_in_flight_keys(apiserver: APIServer) -> None:
    """SIGTERM-like stop during the initial sync of 60 ConfigMaps: no new key is
    taken, in-flight syncs finish, and the backlog is left for the next leader."""
    client = cms(apiserver)
    for i in range(60):
        client.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"big-{i:02d}"},
             "data": {"k": "v"}},
            "default",
        )  # fmt: skip
    a = Annotator(apiserver, unique("bigsync"))
    real_sync = a.sync

    def slow_sync(key: str) -> Result | None:
        result = real_sync(key)
        time.sleep(0.1)
        return result

    a.controller = Controller(
        a.controller.name,
        a.queue,
        slow_sync,
        has_synced=list(a.controller._has_synced),
        graceful_shutdown_timeout=5.0,
    )
    stop = threading.Event()
    a.factory.start(stop)
    returned: list[bool] = []
    t = threading.Thread(target=lambda: returned.append(a.controller.run(3, stop)), daemon=True)
    t.start()
    try:
        wait_for(lambda: apiserver.writes("configmaps") >= 60 + 6, what="a few syncs")
        writes_at_stop = apiserver.writes("configmaps")
        t0 = time.monotonic()
        stop.set()
        t.join(10)
        assert not t.is_alive()
        assert time.monotonic() - t0 < 2.0
        assert returned == [True]
        assert apiserver.writes("configmaps") - writes_at_stop <= 3  # at most the in-flight ones
        assert apiserver.writes("configmaps") < 60 + 60  # the backlog was not drained
    finally:
        stop.set()
        a.factory.shutdown(5)
