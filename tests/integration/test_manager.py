"""Manager over the embedded API server: probes, metrics, graceful shutdown, leader election."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pycontroller import Manager, Request, ResourceClient
from pycontroller.manager import RELEASE_GRACE
from pycontroller.testing import APIServer, wait_for

CONFIGMAPS = ("", "v1", "configmaps")


def cm(name: str, data: dict[str, str] | None = None) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


class Running:
    """``mgr.run(stop)`` on a thread; ``stop()`` sets the event and returns (code, seconds)."""

    def __init__(self, mgr: Manager) -> None:
        self.mgr = mgr
        self.event = threading.Event()
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.code = self.mgr.run(self.event)

    def stop(self, timeout: float = 15.0) -> tuple[int | None, float]:
        started = time.monotonic()
        self.event.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "Manager.run did not return"
        return self.code, time.monotonic() - started


@contextmanager
def running(mgr: Manager) -> Iterator[Running]:
    r = Running(mgr)
    try:
        yield r
    finally:
        if r.thread.is_alive():
            r.stop()


def test_probes_metrics_and_a_builder_controller(apiserver: APIServer) -> None:
    """Readiness follows cache sync; workqueue metrics appear without the app asking."""
    api = apiserver.api_client()
    cms = ResourceClient(api, *CONFIGMAPS)
    cms.create(cm("a"))
    mgr = Manager(api, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="127.0.0.1:0")
    seen: list[Request] = []
    mgr.controller("mgr-it-probes").for_(*CONFIGMAPS).complete(seen.append)
    # Informers are listed slowly at first: readiness must wait for the cache.
    apiserver.set_latency(1.0, path_regex=r"^/api/v1/configmaps\?")
    with running(mgr) as r:
        metrics, health = wait_for(lambda: mgr.servers, what="servers")
        assert http_get(f"{health.url}/healthz")[0] == 200
        assert http_get(f"{health.url}/readyz")[0] == 500
        apiserver.clear_faults()
        wait_for(lambda: http_get(f"{health.url}/readyz")[0] == 200, what="ready")
        wait_for(lambda: Request("default", "a") in seen, what="reconcile of default/a")
        code, body = http_get(f"{metrics.url}/metrics")
        assert code == 200
        assert 'workqueue_adds_total{name="mgr-it-probes"}' in body
        assert 'controller_runtime_reconcile_total{controller="mgr-it-probes"' in body
        assert r.stop()[0] == 0


def test_stop_lets_in_flight_reconciles_finish_and_hands_out_no_new_keys(
    apiserver: APIServer,
) -> None:
    api = apiserver.api_client()
    cms = ResourceClient(api, *CONFIGMAPS)
    for i in range(20):
        cms.create(cm(f"c{i}"))
    mgr = Manager(api, graceful_shutdown_timeout=10.0)
    entered = threading.Event()
    release = threading.Event()
    done: list[str] = []

    def reconcile(req: Request) -> None:
        entered.set()
        release.wait(10)
        done.append(req.name)

    mgr.controller("mgr-it-inflight").for_(*CONFIGMAPS).with_options(workers=2).complete(reconcile)
    r = Running(mgr)
    wait_for(entered.is_set, what="a reconcile in flight")
    r.event.set()
    time.sleep(0.3)  # stopping has begun; the in-flight pair is still blocked
    release.set()
    code, _ = r.stop()
    assert code == 0
    assert 1 <= len(done) <= 2, f"only in-flight keys finish after stop, got {done}"


def test_a_hung_reconcile_is_abandoned_at_the_deadline(apiserver: APIServer) -> None:
    api = apiserver.api_client()
    ResourceClient(api, *CONFIGMAPS).create(cm("hang"))
    mgr = Manager(api, graceful_shutdown_timeout=1.0)
    entered = threading.Event()
    never = threading.Event()

    def reconcile(req: Request) -> None:
        entered.set()
        never.wait(60)

    mgr.controller("mgr-it-hung").for_(*CONFIGMAPS).complete(reconcile)
    r = Running(mgr)
    try:
        wait_for(entered.is_set, what="the reconcile to hang")
        code, seconds = r.stop()
        assert code != 0, "abandoned work must show in the exit code"
        assert seconds < 1.0 + 3.0, f"run returned {seconds:.1f}s after stop (deadline 1 s)"
    finally:
        never.set()


def test_informers_warm_before_leadership_and_the_lease_is_released(
    apiserver: APIServer,
) -> None:
    api = apiserver.api_client()
    leases = ResourceClient(api, "coordination.k8s.io", "v1", "leases")
    now = "2030-01-01T00:00:00.000000Z"
    leases.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "mgr-it-lease", "namespace": "default"},
            "spec": {
                "holderIdentity": "someone-else",
                "leaseDurationSeconds": 3,
                "acquireTime": now,
                "renewTime": now,
            },
        }
    )
    ResourceClient(api, *CONFIGMAPS).create(cm("x"))
    mgr = Manager(
        api,
        health_probe_bind_address="127.0.0.1:0",
        leader_election=True,
        leader_election_id="mgr-it-lease",
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
    )
    seen: list[Request] = []
    mgr.controller("mgr-it-leader").for_(*CONFIGMAPS).complete(seen.append)
    with running(mgr) as r:
        (server,) = wait_for(lambda: mgr.servers, what="server")
        # A standby's cache is warm (and it is ready) while another holds the Lease.
        wait_for(lambda: http_get(f"{server.url}/readyz")[0] == 200, what="standby ready")
        assert seen == [] and mgr.elector is not None and not mgr.elector.is_leader()
        # The other holder stops renewing: we take over with a synced cache.
        wait_for(lambda: Request("default", "x") in seen, timeout=15, what="leading reconcile")
        assert r.stop()[0] == 0
    lease = leases.get("mgr-it-lease", "default")
    assert not lease["spec"].get("holderIdentity"), "the Lease is released on stop"


def test_a_burst_of_events_does_not_delay_reconcile_writes(apiserver: APIServer) -> None:
    """Events have a budget of their own: once a burst of Events has used up a
    bucket's worth of requests, reconcile writes still go out at once."""
    api = apiserver.api_client()
    mgr = Manager(api, kube_api_qps=5, kube_api_burst=5)  # --kube-api-qps 5 --kube-api-burst 5
    recorder = mgr.recorder("mgr-it-events")
    for i in range(30):
        recorder.event(cm(f"obj{i}"), "Normal", "Burst", f"event {i}")
    wait_for(lambda: apiserver.writes("events") >= 5, what="the Events' first burst")
    client = mgr.client(*CONFIGMAPS)
    started = time.monotonic()
    for i in range(4):
        client.create(cm(f"w{i}"))
    elapsed = time.monotonic() - started
    recorder.shutdown(0.1)
    assert elapsed < 0.5, f"4 writes within burst 5 took {elapsed:.2f}s behind the Events"


def test_a_raising_runnable_stops_the_manager_with_an_error(apiserver: APIServer) -> None:
    mgr = Manager(apiserver.api_client())

    class Boom:
        def run(self, stop: threading.Event) -> None:
            raise RuntimeError("boom")

    mgr.add(Boom())
    r = Running(mgr)
    r.thread.join(10)
    assert not r.thread.is_alive() and r.code not in (None, 0)


def test_runnables_without_leader_election_run_on_standbys(apiserver: APIServer) -> None:
    api = apiserver.api_client()
    now = "2030-01-01T00:00:00.000000Z"
    ResourceClient(api, "coordination.k8s.io", "v1", "leases").create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "held", "namespace": "default"},
            "spec": {"holderIdentity": "other", "leaseDurationSeconds": 300, "renewTime": now},
        }
    )
    mgr = Manager(api, leader_election=True, leader_election_id="held")
    ran: dict[str, threading.Event] = {"any": threading.Event(), "leader": threading.Event()}

    class Everywhere:
        def __init__(self, key: str, needs: bool) -> None:
            self.key, self.needs = key, needs

        def need_leader_election(self) -> bool:
            return self.needs

        def run(self, stop: threading.Event) -> None:
            ran[self.key].set()
            stop.wait()

    mgr.add(Everywhere("any", False))
    mgr.add(Everywhere("leader", True))
    with running(mgr) as r:
        wait_for(ran["any"].is_set, what="the non-leader runnable")
        assert not ran["leader"].is_set()
        assert r.stop()[0] == 0


def test_a_builder_controller_may_run_without_leadership(apiserver: APIServer) -> None:
    """``with_options(need_leader_election=False)`` (controller-runtime's
    ``NeedLeaderElection``): that controller reconciles on a standby; the
    others wait for the Lease."""
    api = apiserver.api_client()
    now = "2030-01-01T00:00:00.000000Z"
    ResourceClient(api, "coordination.k8s.io", "v1", "leases").create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "held-b", "namespace": "default"},
            "spec": {"holderIdentity": "other", "leaseDurationSeconds": 300, "renewTime": now},
        }
    )
    ResourceClient(api, *CONFIGMAPS).create(cm("x"))
    mgr = Manager(api, leader_election=True, leader_election_id="held-b")
    everywhere: list[Request] = []
    leader_only: list[Request] = []
    mgr.controller("mgr-it-anywhere").for_(*CONFIGMAPS).with_options(
        need_leader_election=False
    ).complete(everywhere.append)
    mgr.controller("mgr-it-leader").for_(*CONFIGMAPS).complete(leader_only.append)
    with running(mgr) as r:
        wait_for(lambda: Request("default", "x") in everywhere, what="reconcile on a standby")
        assert leader_only == []
        assert r.stop()[0] == 0


def test_run_installs_the_gc_policy_for_its_duration(apiserver: APIServer) -> None:
    """Full collections freeze their survivors while a Manager runs; the stock policy after."""
    import gc

    from pycontroller import _gc

    assert _gc._installed is None
    mgr = Manager(apiserver.api_client())
    with running(mgr) as r:
        tuner = wait_for(lambda: _gc._installed, what="gc policy installed")
        gc.collect()
        assert tuner.freezes >= 1 and gc.get_freeze_count() > 0
        code, _ = r.stop()
    assert code == 0
    assert _gc._installed is None and gc.get_freeze_count() == 0
    assert tuner._on_gc not in gc.callbacks

    plain = Manager(apiserver.api_client(), tune_gc=False)
    with running(plain) as r:
        wait_for(lambda: plain._started, what="running")
        gc.collect()
        assert _gc._installed is None and gc.get_freeze_count() == 0
        r.stop()


def _leader(api: Any, name: str, lease: str, grace: float, **kw: Any) -> Manager:
    return Manager(
        api,
        leader_election=True,
        leader_election_id=lease,
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
        graceful_shutdown_timeout=grace,
        name=name,
        **kw,
    )


def test_the_lease_is_renewed_while_in_flight_reconciles_finish(apiserver: APIServer) -> None:
    # SIGTERM during a reconcile longer than the lease: the leader keeps renewing
    # until its reconcile returned, so the standby cannot lead meanwhile
    # (controller-runtime cancels leader election only after the runnables stopped).
    api = apiserver.api_client()
    ResourceClient(api, *CONFIGMAPS).create(cm("x"))
    events: list[tuple[str, str, float]] = []
    lock = threading.Lock()
    started = threading.Event()

    def reconciler(name: str, seconds: float) -> Any:
        def reconcile(request: Request) -> None:
            with lock:
                events.append((name, "start", time.monotonic()))
            started.set()
            time.sleep(seconds)  # the work itself, not a wait for a condition
            with lock:
                events.append((name, "end", time.monotonic()))

        return reconcile

    a = _leader(api, "a", "mgr-it-drain", grace=8.0)
    a.controller("drain-a").for_(*CONFIGMAPS).complete(reconciler("a", 4.5))
    b = _leader(apiserver.api_client(), "b", "mgr-it-drain", grace=8.0)
    b.controller("drain-b").for_(*CONFIGMAPS).complete(reconciler("b", 0.0))
    with running(a) as ra:
        wait_for(started.is_set, what="a's reconcile")
        assert a.elector is not None and a.elector.is_leader()
        rb = Running(b)  # the standby
        wait_for(lambda: b.elector is not None, what="b campaigning")
        code, took = ra.stop()
        assert code == 0 and took >= 4.0, (code, took)
        wait_for(lambda: any(e[0] == "b" for e in events), timeout=15, what="b leads")
        a_end = next(t for who, what, t in events if who == "a" and what == "end")
        b_start = next(t for who, what, t in events if who == "b" and what == "start")
        assert b_start > a_end, "the standby led while the old leader still reconciled"
        rb.stop()


def test_lost_leadership_abandons_in_flight_work_at_once(apiserver: APIServer) -> None:
    # controller-runtime skips the graceful shutdown when the lease is lost:
    # another leader may already be acting.
    api = apiserver.api_client()
    ResourceClient(api, *CONFIGMAPS).create(cm("x"))
    started = threading.Event()
    release = threading.Event()

    def reconcile(request: Request) -> None:
        started.set()
        release.wait(30)

    mgr = _leader(api, "lost", "mgr-it-lost", grace=20.0)
    mgr.controller("lost").for_(*CONFIGMAPS).complete(reconcile)
    try:
        with running(mgr) as r:
            wait_for(started.is_set, what="reconcile")
            apiserver.fail_next(500, times=1000, path_regex=r"/leases/")
            lost_at = time.monotonic()
            r.thread.join(15)
            assert not r.thread.is_alive(), "Manager.run did not return after losing the lease"
            # renew deadline (2 s) + a retry period; not the 20 s grace period
            assert time.monotonic() - lost_at < 6.0
            assert r.code == 1
    finally:
        release.set()
        apiserver.clear_faults()


def test_healthz_serves_the_leader_election_check(apiserver: APIServer) -> None:
    mgr = _leader(
        apiserver.api_client(),
        "hz",
        "mgr-it-healthz",
        grace=2.0,
        health_probe_bind_address="127.0.0.1:0",
    )
    mgr.controller("hz").for_(*CONFIGMAPS).complete(lambda r: None)
    with running(mgr):
        (server,) = wait_for(lambda: mgr.servers, what="server")
        wait_for(lambda: mgr.elector is not None and mgr.elector.is_leader(), what="leader")
        status, body = http_get(f"{server.url}/healthz?verbose")
        assert status == 200 and "leader-election" in body, body
        # client-go's leader-election metric, as controller-runtime exposes it
        sample = 'leader_election_master_status{name="mgr-it-healthz"} 1.0'
        assert sample in http_get(f"{server.url}/metrics")[1]


def test_a_hanging_event_write_does_not_stretch_shutdown(apiserver: APIServer) -> None:
    mgr = Manager(apiserver.api_client(), graceful_shutdown_timeout=2.0, name="ev")
    recorder = mgr.recorder("ev")
    apiserver.set_latency(20.0, path_regex=r"/events")
    try:
        with running(mgr) as r:
            obj = cm("x")
            obj["metadata"]["uid"] = "u1"
            recorder.event(obj, "Normal", "Test", "hello")
            wait_for(lambda: apiserver.faults.delayed() > 0, what="the Event write in flight")
            _, took = r.stop(timeout=30)
            # within the deadline and the release grace, not twice the budget
            assert took < 2.0 + RELEASE_GRACE + 1.0, took
    finally:
        apiserver.clear_faults()
