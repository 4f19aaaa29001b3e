"""The Builder's PriorityQueue over the embedded API server: a real change is
reconciled before the backlog of an initial list of 10,000 ConfigMaps."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from pycontroller import Manager, Request, ResourceClient
from pycontroller.testing import APIServer, wait_for
from pycontroller.workqueue import PriorityQueue

CONFIGMAPS = ("", "v1", "configmaps")
N = 10_000
# Each backlog reconcile takes about a millisecond, so the whole backlog would
# take 10 s or more: ample time for the change to overtake it.
RECONCILE_SECONDS = 0.001
# The changed key must be reconciled while at least this many initial-list keys
# are still unreconciled. With a FIFO queue it would be reconciled last (its key
# was listed last, and the change collapses into its queued entry): 0 remain.
MIN_BACKLOG_LEFT = N // 2


def fill(apiserver: APIServer, n: int) -> None:
    """Commit ``n`` ConfigMaps straight into the server's storage (as a create would)."""
    storage = apiserver.storage
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with storage.lock:
        for i in range(n):
            obj: dict[str, Any] = {
                "kind": "ConfigMap",
                "apiVersion": "v1",
                "metadata": {
                    "name": f"cm-{i:05d}",
                    "namespace": "default",
                    "uid": str(uuid.uuid4()),
                    "creationTimestamp": now,
                },
                "data": {"i": str(i)},
            }
            storage.commit("ADDED", ("", "configmaps"), obj, None)


@pytest.mark.timeout(60)
def test_a_real_change_overtakes_the_initial_backlog(apiserver: APIServer) -> None:
    fill(apiserver, N)
    mgr = Manager(apiserver.api_client(), graceful_shutdown_timeout=5.0)
    store = mgr.informers.for_resource(*CONFIGMAPS).get_store()
    changed = Request("default", f"cm-{N - 1:05d}")  # listed last: the back of the backlog
    lock = threading.Lock()
    reconciled: set[Request] = set()
    # Unreconciled initial-list keys when the changed key's reconcile saw the change.
    backlog_left: list[int] = []

    def reconcile(request: Request) -> None:
        if request == changed:
            obj = store.get_by_key(str(request))
            if obj is not None and obj["data"].get("changed") == "yes":
                with lock:
                    backlog_left.append(N - len(reconciled))
        with lock:
            reconciled.add(request)
        time.sleep(RECONCILE_SECONDS)

    ctrl = mgr.controller("priority-it").for_(*CONFIGMAPS).complete(reconcile)
    queue = ctrl.queue
    assert isinstance(queue, PriorityQueue)

    def progress() -> int:
        with lock:
            return len(reconciled)

    stop = threading.Event()
    thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
    thread.start()
    try:
        # The whole initial list is queued (or done) and the backlog is being worked.
        wait_for(
            lambda: progress() >= 100 and progress() + len(queue) >= N - 1,
            timeout=30,
            what="the initial list queued and the backlog started",
        )
        assert changed not in reconciled
        client = ResourceClient(apiserver.api_client(), *CONFIGMAPS)
        client.patch(changed.name, {"data": {"changed": "yes"}}, "default")
        wait_for(lambda: bool(backlog_left), timeout=20, what="the change reconciled")
        (left,) = backlog_left
        assert (
            left >= MIN_BACKLOG_LEFT
        ), f"the change was reconciled with only {left} of {N} backlog keys left"
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive(), "Manager.run did not return"
    assert progress() < N, "stop left the rest of the backlog queued"
