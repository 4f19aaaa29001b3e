"""Leader election over real Leases on the embedded API server (short durations)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pycontroller import EventRecorder, LeaderElector, LeaseLock, ResourceClient
from pycontroller.errors import NotFoundError
from pycontroller.leaderelection import LeaderElectionRecord
from pycontroller.testing import APIServer, wait_for

LEASE = "my-lock"
DURATIONS = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2}


class Candidate:
    """One LeaderElector in a thread, recording its callbacks."""

    def __init__(self, apiserver: APIServer, identity: str, **kw: Any) -> None:
        self.identity = identity
        self.lock = LeaseLock(apiserver.api_client(), "default", LEASE, identity, **kw)
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.leading_stopped = threading.Event()
        self.new_leaders: list[str] = []
        self.stop = threading.Event()
        self.elector = LeaderElector(
            self.lock,
            on_started_leading=self._started,
            on_stopped_leading=self.stopped.set,
            on_new_leader=self.new_leaders.append,
            **DURATIONS,
        )
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)

    def _started(self, stop_leading: threading.Event) -> None:
        self.started.set()
        stop_leading.wait()
        self.leading_stopped.set()

    def start(self) -> Candidate:
        self.thread.start()
        return self

    def shutdown(self) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive()


@pytest.fixture
def candidates(apiserver: APIServer) -> Iterator[Callable[..., Candidate]]:
    made: list[Candidate] = []

    def make(identity: str, **kw: Any) -> Candidate:
        c = Candidate(apiserver, identity, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        if c.thread.is_alive():
            c.shutdown()


def lease(apiserver: APIServer) -> dict[str, Any]:
    client = ResourceClient(apiserver.api_client(), "coordination.k8s.io", "v1", "leases")
    return client.get(LEASE, "default")


def test_exactly_one_leads_then_release_hands_over(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a").start()
    b = candidates("b").start()
    wait_for(lambda: a.started.is_set() or b.started.is_set(), what="a leader")
    time.sleep(1.0)  # several renew periods: the other must not take over meanwhile
    leader, follower = (a, b) if a.started.is_set() else (b, a)
    assert leader.elector.is_leader()
    assert not follower.started.is_set()
    assert not follower.elector.is_leader()
    spec = lease(apiserver)["spec"]
    assert spec["holderIdentity"] == leader.identity
    assert spec["leaseDurationSeconds"] == 2
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"].endswith("Z") and len(spec["renewTime"]) == len(
        "2006-01-02T15:04:05.000000Z"
    )
    wait_for(lambda: follower.new_leaders == [leader.identity], what="follower sees leader")

    # The leader stops and releases: the follower takes over well before the
    # 2 s lease would have expired.
    leader.shutdown()
    assert leader.stopped.is_set() and leader.leading_stopped.is_set()
    assert not leader.elector.is_leader()
    assert lease(apiserver)["spec"]["holderIdentity"] in ("", follower.identity)  # released
    wait_for(follower.started.is_set, timeout=2.0, what="takeover within the lease duration")
    spec = lease(apiserver)["spec"]
    assert spec["holderIdentity"] == follower.identity
    assert spec["leaseTransitions"] == 1
    assert follower.elector.is_leader()


def test_renewal_failures_stop_leading(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a").start()
    wait_for(a.started.is_set, what="a leads")
    lost_at = time.monotonic()
    # Every write to the lease fails from now on.
    apiserver.fail_next(status=500, times=100_000, method="PUT", path_regex=f"/leases/{LEASE}")
    wait_for(a.leading_stopped.is_set, timeout=10, what="a stops leading")
    # Not before the renew deadline: transient failures are tolerated that long.
    assert time.monotonic() - lost_at >= DURATIONS["renew_deadline"] - 0.3
    wait_for(a.stopped.is_set, what="on_stopped_leading")
    a.thread.join(10)
    assert not a.thread.is_alive()
    assert not a.elector.is_leader()
    assert lease(apiserver)["spec"]["holderIdentity"] == "a"  # the release failed too

    # Writes work again: a new candidate takes over once a's lease expired.
    apiserver.clear_faults()
    b = candidates("b").start()
    wait_for(b.started.is_set, timeout=10, what="b takes over after expiry")
    spec = lease(apiserver)["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


def test_transient_renewal_failure_is_tolerated(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a").start()
    wait_for(a.started.is_set, what="a leads")
    apiserver.fail_next(status=500, times=2, method="PUT", path_regex=f"/leases/{LEASE}")
    time.sleep(1.0)
    assert a.elector.is_leader()
    assert not a.leading_stopped.is_set()


def test_lease_taken_over_behind_our_back_stops_leading(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a").start()
    wait_for(a.started.is_set, what="a leads")
    client = ResourceClient(apiserver.api_client(), "coordination.k8s.io", "v1", "leases")
    current = client.get(LEASE, "default")
    current["spec"]["holderIdentity"] = "intruder"
    current["spec"]["leaseDurationSeconds"] = 30
    client.update(current)
    wait_for(a.leading_stopped.is_set, timeout=10, what="a stops leading")
    a.thread.join(10)
    assert lease(apiserver)["spec"]["holderIdentity"] == "intruder"  # not released by a
    wait_for(lambda: "intruder" in a.new_leaders, what="on_new_leader(intruder)")


def test_stop_before_acquiring(apiserver: APIServer, candidates: Callable[..., Candidate]) -> None:
    a = candidates("a").start()
    wait_for(a.started.is_set, what="a leads")
    b = candidates("b").start()
    time.sleep(0.5)
    b.shutdown()
    assert b.stopped.is_set() and not b.started.is_set()
    assert lease(apiserver)["spec"]["holderIdentity"] == "a"


def test_lease_lock_against_server(apiserver: APIServer) -> None:
    lock = LeaseLock(apiserver.api_client(), "default", "direct", "me", labels={"app": "x"})
    with pytest.raises(NotFoundError):
        lock.get()
    with pytest.raises(RuntimeError):
        lock.update(LeaderElectionRecord(holder_identity="me"))
    rec = LeaderElectionRecord("me", 10, "2026-01-01T00:00:00.000000Z", None, 0)
    lock.create(rec)
    assert lock.get() == rec
    rec2 = LeaderElectionRecord("me", 10, rec.acquire_time, "2026-01-01T00:00:01.000000Z", 0)
    lock.update(rec2)
    client = ResourceClient(apiserver.api_client(), "coordination.k8s.io", "v1", "leases")
    obj = client.get("direct", "default")
    assert obj["metadata"]["labels"] == {"app": "x"}
    assert LeaderElectionRecord.from_lease_spec(obj["spec"]) == rec2


def test_leader_events_are_recorded(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    recorder = EventRecorder(apiserver.api_client(), "le-test", retry_interval=0.1)
    try:
        a = candidates("a", event_recorder=recorder).start()
        wait_for(a.started.is_set, what="a leads")
        a.shutdown()
        assert recorder.flush(10)
        events = ResourceClient(apiserver.api_client(), "", "v1", "events")
        messages = sorted(
            e["message"] for e in events.list("default")["items"] if e["reason"] == "LeaderElection"
        )
        assert messages == ["a became leader", "a stopped leading"]
        involved = events.list("default")["items"][0]["involvedObject"]
        assert involved["kind"] == "Lease" and involved["name"] == LEASE
    finally:
        recorder.shutdown()


def test_slow_renewals_past_the_deadline_stop_leading(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    a = candidates("a", request_timeout=0.5).start()
    wait_for(a.started.is_set, what="a leads")
    apiserver.set_latency(2.0, path_regex=f"/leases/{LEASE}")
    try:
        wait_for(a.leading_stopped.is_set, timeout=10, what="a stops leading")
        a.thread.join(10)
        assert not a.thread.is_alive()
        assert a.stopped.is_set()
        assert not a.elector.is_leader()
    finally:
        apiserver.set_latency(0, path_regex=f"/leases/{LEASE}")


def test_a_stalled_renewal_is_given_up_at_the_renew_deadline(
    apiserver: APIServer, candidates: Callable[..., Candidate]
) -> None:
    # One renewal request that hangs far longer than the lease: client-go cancels
    # it at the renew deadline (its context reaches the Lease GET and PUT); the
    # leader must step down by then, not when the request finally returns, or it
    # would still lead after another candidate may already have taken over.
    a = candidates("a", request_timeout=30.0).start()
    wait_for(a.started.is_set, what="a leads")
    apiserver.set_latency(6.0, path_regex=f"/leases/{LEASE}")  # 4x the renew deadline
    stalled = time.monotonic()
    try:
        wait_for(a.leading_stopped.is_set, timeout=15, what="a stops leading")
        # the last renewal plus the renew deadline (1.5 s) and a retry period
        assert time.monotonic() - stalled < DURATIONS["renew_deadline"] + 1.5
        assert not a.elector.is_leader()
    finally:
        apiserver.set_latency(0, path_regex=f"/leases/{LEASE}")


LONG = {"lease_duration": 10.0, "renew_deadline": 8.0, "retry_period": 0.2}


def long_lease_elector(
    apiserver: APIServer, identity: str, leading: threading.Event
) -> tuple[LeaderElector, threading.Event, threading.Thread]:
    """An elector with a 10 s lease: only a release lets another take over within 10 s."""
    stop = threading.Event()

    def lead(stop_leading: threading.Event) -> None:
        leading.set()
        stop_leading.wait()

    elector = LeaderElector(
        LeaseLock(apiserver.api_client(), "default", LEASE, identity),
        on_started_leading=lead,
        on_stopped_leading=lambda: None,
        release_on_cancel=True,
        **LONG,
    )
    thread = threading.Thread(target=elector.run, args=(stop,), daemon=True)
    thread.start()
    return elector, stop, thread


def test_stop_releases_the_lease_promptly(apiserver: APIServer) -> None:
    leading = threading.Event()
    elector, stop, thread = long_lease_elector(apiserver, "a", leading)
    assert leading.wait(5)
    assert lease(apiserver)["spec"]["leaseDurationSeconds"] == 10
    t0 = time.monotonic()
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - t0 < 1.0  # no renew_deadline or lease_duration wait
    spec = lease(apiserver)["spec"]
    assert spec.get("holderIdentity", "") == ""  # client-go's release: holder cleared ...
    assert spec["leaseDurationSeconds"] == 1  # ... and a 1 s lease
    assert not elector.is_leader()


def test_another_elector_takes_over_within_a_retry_period_after_stop(
    apiserver: APIServer,
) -> None:
    a_leading, b_leading = threading.Event(), threading.Event()
    a, a_stop, a_thread = long_lease_elector(apiserver, "a", a_leading)
    assert a_leading.wait(5)
    b, b_stop, b_thread = long_lease_elector(apiserver, "b", b_leading)
    try:
        time.sleep(0.5)  # b campaigns against a valid 10 s lease
        assert not b_leading.is_set()
        t0 = time.monotonic()
        a_stop.set()
        # b polls every retry_period (0.2 s, jittered up to 2x): far below the 10 s lease.
        assert b_leading.wait(2.0), "b did not take over: the lease was not released"
        assert time.monotonic() - t0 < 1.5
        a_thread.join(5)
        spec = lease(apiserver)["spec"]
        assert spec["holderIdentity"] == "b"
        assert spec["leaseDurationSeconds"] == 10
        assert spec["leaseTransitions"] == 1
        assert b.is_leader() and not a.is_leader()
    finally:
        a_stop.set()
        b_stop.set()
        a_thread.join(5)
        b_thread.join(5)
