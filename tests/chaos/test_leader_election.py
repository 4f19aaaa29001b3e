"""Leader election: two controller processes with ``--leader-elect``.

One scenario, in phases (each process's log is printed on failure):

1. the test holds the Lease itself; a controller started now stays a standby
   and makes no write at all while Balancers wait to be reconciled;
2. the test releases the Lease: the standby takes it within a retry period and
   converges; a second process joins as standby;
3. ``kill -9`` of the leader: nothing writes until the standby holds the
   Lease, which it takes within lease duration + retry period, and then it
   converges the work created after the kill;
4. SIGTERM of the new leader (with a fresh standby waiting): it exits cleanly,
   the Lease is released, and the standby takes over within seconds, not a
   lease duration.

The CLI has no lease-duration flags yet, so the defaults apply (15 s lease,
10 s renew deadline, 2 s retry period); if the flags appear, shorter ones are used.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from chaos.harness import (
    REPO,
    Cluster,
    ControllerProcess,
    MutationGenerator,
    StateChecker,
    controller_writes,
    wait_converged,
)
from controllers.balancer.__main__ import LEADER_ELECTION_ID
from pycontroller.leaderelection import format_micro_time
from pycontroller.testing import APIServer, wait_for

LEASE_NAMESPACE = "default"
LEASE_PATH = f"/leases/{LEADER_ELECTION_ID}"
NS = "chaos-a"
#: Slack for a loaded CI machine (2 cores shared with the rest of the suite).
SLACK = 10.0


@cache
def lease_timing() -> tuple[float, float, float, list[str]]:
    """(lease duration, renew deadline, retry period, extra CLI args)."""
    out = subprocess.run(
        [sys.executable, "-m", "controllers.balancer", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    if "--leader-election-lease-duration" in out and "--leader-election-retry-period" in out:
        return (
            6.0,
            4.0,
            1.0,
            [
                "--leader-election-lease-duration=6",
                "--leader-election-renew-deadline=4",
                "--leader-election-retry-period=1",
            ],
        )
    return 15.0, 10.0, 2.0, []


class LeaseHolder:
    """The test itself holding the Lease (renewing every second) until ``release``."""

    def __init__(self, cluster: Cluster, identity: str = "chaos-test-holder") -> None:
        self.cluster = cluster
        self.identity = identity
        self.writes = 0
        self._stop = threading.Event()
        now = format_micro_time(time.time())
        self.lease: dict[str, Any] = cluster.leases.create(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEADER_ELECTION_ID, "namespace": LEASE_NAMESPACE},
                "spec": {
                    "holderIdentity": identity,
                    "leaseDurationSeconds": 15,
                    "acquireTime": now,
                    "renewTime": now,
                    "leaseTransitions": 0,
                },
            },
            namespace=LEASE_NAMESPACE,
        )
        self.writes += 1
        self._thread = threading.Thread(target=self._renew, name="lease-holder", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        deadline = time.monotonic() + 120  # bounded even if the test forgets to stop it
        while not self._stop.wait(1.0) and time.monotonic() < deadline:
            self._put(self.identity, 15)

    def _put(self, holder: str, duration: int) -> None:
        lease = dict(self.lease)
        lease["spec"] = {
            **lease["spec"],
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "renewTime": format_micro_time(time.time()),
        }
        self.lease = self.cluster.leases.update(lease)  # PUT only: every GET is a controller's
        self.writes += 1

    def stop_renewing(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def release(self) -> None:
        """Give the Lease up as client-go does (holder "", leaseDurationSeconds 1)."""
        self.stop_renewing()
        self._put("", 1)


def holder(cluster: Cluster) -> str:
    lease = cluster.leases.get(LEADER_ELECTION_ID, namespace=LEASE_NAMESPACE)
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def lease_gets(server: APIServer, since: int) -> int:
    return sum(1 for r in server.request_log[since:] if r.method == "GET" and LEASE_PATH in r.path)


def lease_writes(server: APIServer, since: int) -> list[int]:
    """Indexes (in the request log) of successful writes to the Lease."""
    return [
        i
        for i, r in enumerate(server.request_log[since:], start=since)
        if r.method in ("PUT", "POST", "PATCH") and LEASE_PATH in r.path and r.status < 300
    ]


def wait_new_watches(server: APIServer, since: int, n: int = 4, timeout: float = 60) -> None:
    """Wait until ``n`` watch requests were made after log index ``since`` (a new
    process's informers have listed and are watching)."""
    wait_for(
        lambda: sum(1 for r in server.request_log[since:] if "watch=true" in r.path) >= n,
        timeout,
        interval=0.1,
        what=f"{n} new watches",
    )


def create(cluster: Cluster, gen: MutationGenerator, names: list[str]) -> None:
    for name in names:
        spec = gen.random_spec()
        cluster.create_balancer(NS, name, spec)
        gen.model[(NS, name)] = spec


def converged(cluster: Cluster, gen: MutationGenerator, timeout: float) -> float:
    ok, elapsed, report = wait_converged(
        cluster, StateChecker(), timeout=timeout, expected=gen.model, namespaces=[NS]
    )
    assert ok, f"not converged after {elapsed:.1f}s:\n{report.format()}"
    return elapsed


@pytest.mark.timeout(240)
def test_only_the_leader_writes_and_takeover_is_bounded(
    chaos_server: APIServer,
    cluster: Cluster,
    kubeconfig: str,
    controllers: Callable[..., ControllerProcess],
    chaos_summary: Callable[[str], None],
) -> None:
    server = chaos_server
    lease_duration, _renew, retry_period, args = lease_timing()
    le_args = ("--leader-elect", *args)
    gen = MutationGenerator(seed=11, count=0)
    figures: dict[str, float] = {}

    # 1. The test holds the Lease: a controller is a standby and writes nothing.
    held = LeaseHolder(cluster)
    start = len(server.request_log)
    first = controllers(kubeconfig, "first", *le_args).start()
    wait_new_watches(server, start)
    create(cluster, gen, ["le-0", "le-1", "le-2"])
    seen = len(server.request_log)
    wait_for(
        lambda: lease_gets(server, seen) >= 3,
        4 * retry_period + SLACK,
        interval=0.1,
        what="the standby polling the Lease",
    )
    held.stop_renewing()
    records = server.request_log[start:]
    assert controller_writes(records) == 0, "a standby wrote while another process led"
    standby_lease_writes = len(lease_writes(server, start)) - (held.writes - 1)
    assert standby_lease_writes == 0, "the standby wrote the Lease another process holds"
    assert holder(cluster) == held.identity
    assert first.running

    # 2. Released: the standby takes over within a retry period and converges.
    released = time.monotonic()
    held.release()
    first_id = wait_for(
        lambda: (h := holder(cluster)) not in ("", held.identity) and h,
        retry_period + SLACK,
        interval=0.05,
        what="the standby taking the released Lease",
    )
    figures["takeover_after_release_s"] = time.monotonic() - released
    converged(cluster, gen, 60)
    start = len(server.request_log)
    second = controllers(kubeconfig, "second", *le_args).start()
    wait_new_watches(server, start)
    create(cluster, gen, ["le-3", "le-4"])
    converged(cluster, gen, 60)
    assert holder(cluster) == first_id, "leadership moved while the leader was healthy"

    # 3. kill -9 of the leader: nobody writes until the standby holds the Lease,
    #    which happens within lease duration + retry period; then new work converges.
    killed_at_index = len(server.request_log)
    first.kill()
    killed = time.monotonic()
    assert first.wait(10) == -9
    create(cluster, gen, ["le-5", "le-6"])
    second_id = wait_for(
        lambda: (h := holder(cluster)) not in ("", first_id) and h,
        lease_duration + retry_period + SLACK,
        interval=0.1,
        what="the standby taking over the dead leader's Lease",
    )
    figures["takeover_after_kill_s"] = time.monotonic() - killed
    converged(cluster, gen, lease_duration + retry_period + SLACK)
    figures["converged_after_kill_s"] = time.monotonic() - killed
    assert figures["converged_after_kill_s"] <= lease_duration + retry_period + SLACK
    acquired = lease_writes(server, killed_at_index)
    assert acquired, "no Lease write after the kill"
    before = server.request_log[killed_at_index : acquired[0]]
    assert controller_writes(before) == 0, "something wrote before the new leader held the Lease"

    # 4. SIGTERM of the leader with a standby waiting: clean exit, Lease released,
    #    takeover in seconds (not a lease duration).
    start = len(server.request_log)
    third = controllers(kubeconfig, "third", *le_args).start()
    wait_new_watches(server, start)
    second.terminate()
    rc = second.wait(25 + SLACK)
    exited = time.monotonic()
    assert rc == 0, f"the leader exited with {rc} on SIGTERM"
    assert holder(cluster) != second_id, "the Lease was not released on SIGTERM"
    third_id = wait_for(
        lambda: (h := holder(cluster)) not in ("", second_id) and h,
        2 * retry_period + SLACK / 2,
        interval=0.05,
        what="the standby taking the released Lease",
    )
    figures["takeover_after_sigterm_s"] = time.monotonic() - exited
    assert figures["takeover_after_sigterm_s"] < lease_duration
    create(cluster, gen, ["le-7"])
    converged(cluster, gen, 60)
    assert third_id not in (first_id, second_id)
    assert third.running
    timing = f"lease {lease_duration:g}s, retry {retry_period:g}s"
    chaos_summary(
        f"leader election ({timing}): " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items())
    )
