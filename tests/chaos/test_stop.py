"""Stop: SIGTERM during a large sync exits within the graceful-shutdown timeout
without draining the backlog; a hung sync does not hold the exit past the deadline
(and the exit code says work was abandoned); a restarted controller converges to
exactly the desired state."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from chaos.harness import (
    Cluster,
    ControllerProcess,
    MutationGenerator,
    StateChecker,
    controller_writes,
    wait_converged,
)
from pycontroller.testing import APIServer, wait_for

NS = "chaos-a"
HANG_NS = "chaos-hang"
#: Seconds of slack on top of a deadline (interpreter start-up and exit, a loaded machine).
SLACK = 6.0
WORKERS = 2


def status_writes(records: list) -> int:  # type: ignore[type-arg]
    """Writes of children and Balancer statuses (Events excluded: they are flushed at exit)."""
    return controller_writes(r for r in records if "/events" not in r.path)


def seed_balancers(cluster: Cluster, namespace: str, count: int, seed: int) -> dict:  # type: ignore[type-arg]
    gen = MutationGenerator(seed, count=0)
    model = {}
    for i in range(count):
        spec = gen.random_spec()
        spec["backends"] = [{"name": f"v{j}", "weight": j + 1} for j in range(3)]
        cluster.create_balancer(namespace, f"big-{i:02d}", spec)
        model[(namespace, f"big-{i:02d}")] = spec
    return model


@pytest.mark.timeout(240)
def test_sigterm_during_a_large_sync_exits_within_the_timeout(
    chaos_server: APIServer,
    cluster: Cluster,
    kubeconfig: str,
    controllers: Callable[..., ControllerProcess],
    chaos_summary: Callable[[str], None],
) -> None:
    server = chaos_server
    timeout = 5.0
    model = seed_balancers(cluster, NS, 60, seed=21)
    start = len(server.request_log)
    proc = controllers(kubeconfig, "large-sync", f"--graceful-shutdown-timeout={timeout:g}")
    proc.start()
    wait_for(
        lambda: status_writes(server.request_log[start:]) >= 20,
        60,
        interval=0.05,
        what="the initial sync under way",
    )
    signalled = len(server.request_log)
    proc.terminate()
    sent = time.monotonic()
    rc = proc.wait(timeout + SLACK)
    took = time.monotonic() - sent
    assert rc is not None, f"still running {timeout + SLACK:g}s after SIGTERM"
    assert rc == 0, f"exit code {rc}: in-flight reconciles should have finished in time"
    after = status_writes(server.request_log[signalled:])
    # In-flight reconciles may finish (each: 3 backends + 3 children + status, and one
    # status retry on a conflict), no more: the backlog (~400 writes) is not drained.
    assert after <= WORKERS * 8, f"{after} writes after SIGTERM: the backlog was drained"
    synced = sum(1 for b in cluster.balancers.list(namespace=NS)["items"] if b.get("status"))
    assert synced < len(model), "the sync finished before SIGTERM: nothing was tested"
    chaos_summary(
        f"stop: SIGTERM during a sync of {len(model)} Balancers: exit {rc} after {took:.1f}s "
        f"(--graceful-shutdown-timeout {timeout:g}), {after} child/status writes after it"
    )

    restarted = controllers(kubeconfig, "large-sync-restarted").start()
    ok, elapsed, report = wait_converged(
        cluster, StateChecker(), timeout=120, expected=model, namespaces=[NS]
    )
    assert ok, f"the restarted controller did not converge in {elapsed:.0f}s:\n{report.format()}"
    assert restarted.stop(timeout=30) == 0


@pytest.mark.timeout(240)
def test_a_hung_sync_does_not_hold_exit_past_the_deadline(
    chaos_server: APIServer,
    cluster: Cluster,
    kubeconfig: str,
    controllers: Callable[..., ControllerProcess],
    chaos_summary: Callable[[str], None],
) -> None:
    server = chaos_server
    timeout = 3.0
    cluster.ensure_namespaces([HANG_NS])
    model = seed_balancers(cluster, NS, 4, seed=22)
    model.update(seed_balancers(cluster, HANG_NS, 1, seed=23))
    # Every request for the hung Balancer's children waits two minutes.
    hang = r"^/(api/v1|apis/apps/v1)/namespaces/chaos-hang/"
    server.set_latency(120, hang)
    proc = controllers(kubeconfig, "hung", f"--graceful-shutdown-timeout={timeout:g}").start()
    wait_for(lambda: server.faults.delayed() >= 1, 60, interval=0.05, what="a hung request")
    ok, elapsed, report = wait_converged(
        cluster, StateChecker(), timeout=60, expected=model, namespaces=[NS]
    )
    assert ok, f"the other Balancers did not converge beside the hung one:\n{report.format()}"

    proc.terminate()
    sent = time.monotonic()
    rc = proc.wait(timeout + SLACK)
    took = time.monotonic() - sent
    assert rc is not None, f"a hung sync held the exit more than {timeout + SLACK:g}s"
    assert rc != 0, "the exit code does not say that a sync was abandoned"
    chaos_summary(
        f"stop: hung sync: exit {rc} after {took:.1f}s (--graceful-shutdown-timeout {timeout:g})"
    )

    server.set_latency(0, hang)
    controllers(kubeconfig, "hung-restarted").start()
    ok, elapsed, report = wait_converged(cluster, StateChecker(), timeout=90, expected=model)
    assert ok, f"the restarted controller did not converge in {elapsed:.0f}s:\n{report.format()}"
