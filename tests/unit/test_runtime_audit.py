"""Audit against controller-runtime / apimachinery / client-go: divergences found and fixed.

Each test names the upstream behaviour it pins.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller import Manager, Request, ResourceClient
from pycontroller.testing import APIServer, wait_for

# --------------------------------------------------------------------------- builder: owns


class _Recorded:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    def __call__(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def seen(self, request: Request) -> bool:
        with self._lock:
            return request in self.requests


@pytest.fixture
def manager(apiserver: APIServer) -> Iterator[tuple[Manager, threading.Event]]:
    mgr = Manager(apiserver.api_client(), graceful_shutdown_timeout=5.0, tune_gc=False)
    stop = threading.Event()
    yield mgr, stop
    stop.set()


def _run(mgr: Manager, stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(lambda: all(i.has_synced() for i in mgr.informers.informers().values()), what="caches")
    return thread


def _secret(name: str, owner_kind: str, owner_name: str) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": owner_kind, "name": owner_name, "uid": f"uid-{owner_name}"}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [{**ref, "controller": True}],
        },
    }


def test_owns_ignores_a_controller_of_another_kind_in_the_same_group_before_any_owner_is_cached(
    apiserver: APIServer, manager: tuple[Manager, threading.Event]
) -> None:
    # controller-runtime's EnqueueRequestForOwner (OnlyControllerOwner) compares the
    # controller reference's group *and* kind with the For type's, always; the kind
    # comes from the scheme/RESTMapper, not from objects that happen to be cached.
    mgr, stop = manager
    reconcile = _Recorded()
    mgr.controller("cms").for_("", "v1", "configmaps").owns("", "v1", "secrets").complete(reconcile)
    _run(mgr, stop)
    secrets = ResourceClient(apiserver.api_client(), "", "v1", "secrets")
    secrets.create(_secret("by-pod", "Pod", "p"))  # core group, but a Pod: not ours
    secrets.create(_secret("by-cm", "ConfigMap", "cm"))
    # One worker, one handler: the Pod-owned secret's key (if any) came first.
    wait_for(lambda: reconcile.seen(Request("default", "cm")), what="owner reconciled")
    assert not reconcile.seen(Request("default", "p"))


# --------------------------------------------------------------------------- health probes


def _get(url: str) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_healthz_serves_each_check_under_its_own_path() -> None:
    # controller-runtime's healthz.Handler backs both the liveness and the
    # readiness endpoint: "<endpoint>/<name>" runs that one check, and with no
    # checks at all "<endpoint>/ping" answers (the default Ping check).
    from pycontroller.server import serve_metrics_and_health

    with serve_metrics_and_health(
        "127.0.0.1:0", {}, health_checks={"alive": lambda: True, "stuck": lambda: False}
    ) as server:
        assert _get(server.url + "/healthz/alive")[0] == 200
        assert _get(server.url + "/healthz/stuck")[0] == 500
        assert _get(server.url + "/livez/alive")[0] == 200
        assert _get(server.url + "/healthz/unknown")[0] == 404
        assert _get(server.url + "/readyz/ping") == (200, "ok")  # no readiness checks
        assert _get(server.url + "/healthz/ping")[0] == 404  # there are health checks


# --------------------------------------------------------------------------- events


def test_eventf_formats_gos_default_verb() -> None:
    # client-go's Eventf is fmt.Sprintf(messageFmt, args...); its conformance case
    # (TestEventf) formats "some verbose message: %v" with 1. "%v" is Go's
    # default verb: it formats as str() does, next to the usual %-conversions.
    from pycontroller.record import FakeRecorder

    rec = FakeRecorder()
    rec.eventf({}, "Normal", "Started", "some verbose message: %v", 1)
    rec.eventf({}, "Normal", "Scaled", "%v of %d (%s), 100%%v", "a", 2, "b")
    assert rec.events == [
        "Normal Started some verbose message: 1",
        "Normal Scaled a of 2 (b), 100%v",
    ]


# --------------------------------------------------------------------------- controller


@pytest.fixture
def fake_clock() -> Any:
    from pycontroller.clock import FakeClock

    return FakeClock()


@pytest.fixture
def rl_queue(fake_clock: Any) -> Iterator[Any]:
    from pycontroller.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

    q = RateLimitingQueue(
        ItemExponentialFailureRateLimiter(1.0, 100.0, clock=fake_clock), clock=fake_clock
    )
    yield q
    q.shut_down()


def test_result_requeue_after_accepts_a_timedelta(rl_queue: Any, fake_clock: Any) -> None:
    # controller-runtime's Result.RequeueAfter is a time.Duration; Python's is
    # datetime.timedelta. It used to escape the worker boundary as a TypeError
    # (comparing a timedelta with 0), killing the worker thread.
    from datetime import timedelta

    from pycontroller import Controller, Result

    assert Result(requeue_after=timedelta(seconds=30)).requeue_after == 30
    c = Controller(
        "audit-timedelta", rl_queue, lambda key: Result(requeue_after=timedelta(seconds=30))
    )
    rl_queue.add("k")
    assert c.process_next_work_item()
    fake_clock.step(29)
    assert len(rl_queue) == 0
    fake_clock.step(1)
    wait_for(lambda: len(rl_queue) == 1, what="requeue_after a timedelta")


def test_a_malformed_result_is_a_sync_error_not_a_dead_worker(rl_queue: Any) -> None:
    # "An exception never kills a worker": a Result that cannot be acted on is
    # refused where it is built (in the sync function), so it is retried with
    # backoff like any error, as controller-runtime requeues a reconcile error.
    from pycontroller import Controller, Result

    with pytest.raises(TypeError):
        Result(requeue_after="5")  # type: ignore[arg-type]
    c = Controller("audit-bad-result", rl_queue, lambda key: Result(requeue_after="5"))  # type: ignore[arg-type]
    rl_queue.add("k")
    assert c.process_next_work_item()
    assert rl_queue.num_requeues("k") == 1
