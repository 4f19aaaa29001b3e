"""Isolation: one key whose sync raises or hangs never stops the others converging.

First with the library alone (``pycontroller.Controller`` and a sync function that
raises for one key and hangs for another), then over the Balancer controller (a
subprocess) with one Balancer whose child requests always fail (500) and one whose
child requests hang, using path-regex faults on their namespaces.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from chaos.harness import (
    Cluster,
    ControllerProcess,
    MutationGenerator,
    StateChecker,
    wait_converged,
)
from controllers.balancer import names
from pycontroller import Controller
from pycontroller.testing import APIServer, wait_for
from pycontroller.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue

OK_NS = "chaos-a"
FAIL_NS = "chaos-fail"
HANG_NS = "chaos-hang"


@pytest.mark.timeout(60)
def test_a_raising_and_a_hanging_key_do_not_stop_the_others() -> None:
    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(0.005, 0.2))
    release = threading.Event()
    done: set[str] = set()
    attempts = {"raise": 0, "hang": 0}
    lock = threading.Lock()

    def sync(key: str) -> None:
        if key == "raise":
            with lock:
                attempts["raise"] += 1
            raise RuntimeError("this key always fails")
        if key == "hang":
            with lock:
                attempts["hang"] += 1
            release.wait(30)  # bounded: the test releases it
            return
        with lock:
            done.add(key)

    controller = Controller("chaos-isolation", queue, sync, graceful_shutdown_timeout=5)
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(2, stop), daemon=True)
    runner.start()
    try:
        queue.add("hang")
        queue.add("raise")
        wait_for(lambda: attempts["hang"] == 1, 10, what="the hanging sync to start")
        first = [f"ns/a-{i}" for i in range(100)]
        for key in first:
            queue.add(key)
        wait_for(lambda: done >= set(first), 15, what="the other keys beside a hung one")
        # Keys added later still go through, and the failing key keeps being retried.
        later = [f"ns/b-{i}" for i in range(100)]
        for key in later:
            queue.add(key)
            queue.add("raise")
        wait_for(lambda: done >= set(first + later), 15, what="keys added later")
        wait_for(lambda: attempts["raise"] >= 3, 10, what="the failing key retried")
        assert attempts["hang"] == 1, "the hanging key was handed to a second worker"
    finally:
        release.set()
        stop.set()
        runner.join(timeout=15)
    assert not runner.is_alive()


def reconciled(cluster: Cluster, namespace: str, name: str) -> dict | None:  # type: ignore[type-arg]
    status = cluster.balancers.get(name, namespace=namespace).get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == names.CONDITION_RECONCILED:
            return dict(cond)
    return None


@pytest.mark.timeout(240)
def test_a_failing_and_a_hanging_balancer_do_not_stop_the_others(
    chaos_server: APIServer,
    cluster: Cluster,
    kubeconfig: str,
    controllers: Callable[..., ControllerProcess],
    chaos_summary: Callable[[str], None],
) -> None:
    server = chaos_server
    cluster.ensure_namespaces([FAIL_NS, HANG_NS])
    gen = MutationGenerator(seed=31, count=0)

    def create(namespace: str, name: str) -> None:
        spec = gen.random_spec()
        cluster.create_balancer(namespace, name, spec)
        gen.model[(namespace, name)] = spec

    children = r"^/(api/v1|apis/apps/v1)/namespaces/{}/(services|configmaps|deployments)"
    server.fail_next(500, times=10**6, path_regex=children.format(FAIL_NS))
    server.set_latency(20, children.format(HANG_NS))
    create(FAIL_NS, "broken")
    create(HANG_NS, "stuck")
    for i in range(8):
        create(OK_NS, f"fine-{i}")
    controllers(kubeconfig, "isolation").start()

    wait_for(lambda: server.faults.delayed() >= 1, 60, interval=0.05, what="a hung request")
    ok, first, report = wait_converged(
        cluster, StateChecker(), timeout=60, expected=gen.model, namespaces=[OK_NS]
    )
    assert ok, f"the others did not converge beside a failing and a hung key:\n{report.format()}"
    # More work while the two keys are still broken.
    create(OK_NS, "fine-late")
    spec = gen.model[(OK_NS, "fine-0")]
    spec["backends"][0]["weight"] = spec["backends"][0]["weight"] % 100 + 1
    cluster.update_balancer(OK_NS, "fine-0", spec)
    ok, elapsed, report = wait_converged(
        cluster, StateChecker(), timeout=30, expected=gen.model, namespaces=[OK_NS]
    )
    assert ok, f"later work did not converge beside the broken keys:\n{report.format()}"
    cond = wait_for(
        lambda: reconciled(cluster, FAIL_NS, "broken"), 30, what="a status on the failing key"
    )
    assert cond["status"] == "False" and cond["reason"] == names.REASON_RECONCILE_FAILED, cond

    # The faults end: the two broken Balancers converge too, and nothing else moved.
    server.clear_faults()
    t0 = time.monotonic()
    ok, elapsed, report = wait_converged(cluster, StateChecker(), timeout=90, expected=gen.model)
    assert ok, f"no convergence {elapsed:.0f}s after the faults ended:\n{report.format()}"
    chaos_summary(
        f"isolation: the others converged {first:.1f}s after a request of the hung Balancer "
        f"started hanging (another always failing); both converged {time.monotonic() - t0:.1f}s "
        "after the faults ended"
    )
