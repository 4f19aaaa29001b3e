"""The harness itself: determinism, valid specs, a checker that sees every kind of
difference, fault plans that meet the issue's minimums, and the 429 Retry-After fault.
(A checker that cannot fail would make every chaos run green.)"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request

from chaos.harness import (
    BURST_TARGETS,
    CRD,
    FAULT_429,
    FAULT_500,
    FAULT_503,
    FAULT_COMPACTION,
    FAULT_RESTART,
    FAULT_WATCH_DROP,
    NOT_HARNESS,
    OP_CREATE,
    OP_DELETE,
    OP_RECREATE,
    ChaosConfig,
    ClusterState,
    FaultPlan,
    MutationGenerator,
    StateChecker,
    balancer_object,
    expected_status,
)
from controllers.balancer import names, resources
from controllers.balancer.validation import validate
from pycontroller.testing import APIServer


def test_mutations_are_deterministic_valid_and_cover_every_kind() -> None:
    a, b = MutationGenerator(1, 50), MutationGenerator(1, 50)
    ma, mb = a.take(300), b.take(300)
    assert ma == mb
    assert ma != MutationGenerator(2, 50).take(300)
    assert len({(m.namespace, m.name) for m in ma if m.op == OP_CREATE}) == 50
    assert set(a.counts) >= {OP_CREATE, OP_DELETE, OP_RECREATE, "change-weights"}
    assert {"add-backend", "remove-backend", "add-port", "remove-port"} <= set(a.counts)
    for m in ma:
        if m.spec is not None:
            assert not validate(balancer_object(m.namespace, m.name, m.spec)), m


def test_the_final_pass_updates_every_balancer_in_place() -> None:
    gen = MutationGenerator(3, 50)
    gen.take(300)
    before = dict(gen.model)
    final = gen.final_pass()
    assert sorted((m.namespace, m.name) for m in final) == sorted(before)
    assert all(m.op not in (OP_CREATE, OP_DELETE, OP_RECREATE) for m in final)
    assert all(m.spec != before[(m.namespace, m.name)] for m in final)
    again = MutationGenerator(3, 50)
    again.take(300)
    assert again.final_pass() == final


def test_fault_plans_meet_the_minimums_and_scale() -> None:
    counts = FaultPlan.build(ChaosConfig(seed=1)).counts()
    assert counts[FAULT_WATCH_DROP] >= 10 and counts[FAULT_COMPACTION] >= 3
    assert counts[FAULT_RESTART] >= 2 and counts[FAULT_429] >= 1
    assert counts[FAULT_500] >= 1 and counts[FAULT_503] >= 1
    assert FaultPlan.build(ChaosConfig(seed=1)).at == FaultPlan.build(ChaosConfig(seed=1)).at
    big = ChaosConfig(seed=1, mutations=3000)
    assert big.watch_drops == 10  # explicit parameters are kept; from_env scales


def test_bursts_never_hit_the_harness_writes() -> None:
    import re

    harness = [
        "/apis/exposer.hliangzhao.io/v1alpha1/namespaces/chaos-a/balancers",
        "/apis/exposer.hliangzhao.io/v1alpha1/namespaces/chaos-a/balancers/lb-01",
    ]
    controller = [
        "/apis/exposer.hliangzhao.io/v1alpha1/namespaces/chaos-a/balancers/lb-01/status",
        "/apis/exposer.hliangzhao.io/v1alpha1/balancers?watch=true&resourceVersion=5",
        "/api/v1/namespaces/chaos-a/services",
        "/apis/apps/v1/namespaces/chaos-b/deployments/lb-01-proxy",
    ]
    for path in harness:
        assert not re.search(NOT_HARNESS, path), path
        for target in BURST_TARGETS.values():
            assert not re.search(target, path), (target, path)
    for path in controller:
        assert re.search(NOT_HARNESS, path), path


def _converged_state() -> tuple[ClusterState, dict]:  # type: ignore[type-arg]
    gen = MutationGenerator(5, 6)
    for _ in range(12):
        gen.next()
    balancers, children = [], {}
    for i, ((ns, name), spec) in enumerate(sorted(gen.model.items())):
        b = balancer_object(ns, name, spec)
        b["metadata"].update(uid=f"uid-{i}", generation=1)
        desired = resources.desired_children(b)
        for child in desired:
            live = copy.deepcopy(child)
            live["metadata"]["uid"] = f"child-{i}-{child['metadata']['name']}"
            live["metadata"]["resourceVersion"] = "7"  # server-filled fields are ignored
            if child["kind"] == "Service":
                live["spec"]["clusterIP"] = "10.0.0.1"
            children[(child["kind"], ns, child["metadata"]["name"])] = live
        deployment = children[("Deployment", ns, names.deployment_name(name))]
        b["status"] = expected_status(b, desired, deployment)
        for cond in b["status"]["conditions"]:
            cond["lastTransitionTime"] = "2024-01-01T00:00:00Z"
        balancers.append(b)
    return ClusterState(balancers, children), gen.model


def test_the_checker_accepts_a_converged_state_and_sees_every_difference() -> None:
    checker = StateChecker()
    state, model = _converged_state()
    assert checker.check(state, model).ok
    b0 = state.balancers[0]
    ns, name = b0["metadata"]["namespace"], b0["metadata"]["name"]

    s = copy.deepcopy(state)
    del s.children[("ConfigMap", ns, names.configmap_name(name))]
    assert len(checker.check(s, model).missing) == 1

    s = copy.deepcopy(state)
    svc = copy.deepcopy(s.children[("Service", ns, name)])
    svc["metadata"]["name"] = f"{name}-gone-backend"
    s.children[("Service", ns, f"{name}-gone-backend")] = svc
    assert len(checker.check(s, model).extra) == 1

    s = copy.deepcopy(state)
    s.balancers = s.balancers[1:]  # its children are now orphans, and the model misses it
    report = checker.check(s, model)
    assert len(report.missing) == 1 and len(report.extra) == len(resources.desired_children(b0))

    s = copy.deepcopy(state)
    cm = s.children[("ConfigMap", ns, names.configmap_name(name))]
    cm["data"][names.NGINX_CONF_KEY] += "# stale\n"
    svc = s.children[("Service", ns, name)]
    svc["spec"]["ports"][0]["port"] += 1
    dep = s.children[("Deployment", ns, names.deployment_name(name))]
    dep["metadata"]["ownerReferences"][0]["uid"] = "previous-incarnation"
    assert len(checker.check(s, model).stale) == 3

    s = copy.deepcopy(state)
    s.balancers[0]["status"]["activeBackendsNum"] += 1
    s.balancers[1]["status"]["conditions"][0]["status"] = "False"
    del s.balancers[2]["status"]
    assert len(checker.check(s, model).wrong_status) == 3

    s = copy.deepcopy(state)
    s.balancers[0]["spec"]["backends"][0]["weight"] += 1
    assert checker.check(s, model).stale  # the server does not hold what the harness wrote


def test_retry_after_on_injected_429() -> None:
    with APIServer(crds=[str(CRD)]) as server:
        server.fail_next(429, times=1, path_regex="/api/v1/namespaces$", retry_after=3)
        server.fail_next(503, times=1, path_regex="/api/v1/namespaces$")
        try:
            urllib.request.urlopen(server.url + "/api/v1/namespaces", timeout=10)
        except urllib.error.HTTPError as err:
            assert err.code == 429
            assert err.headers["Retry-After"] == "3"
            assert json.loads(err.read())["details"]["retryAfterSeconds"] == 3
        else:
            raise AssertionError("no 429")
        try:
            urllib.request.urlopen(server.url + "/api/v1/namespaces", timeout=10)
        except urllib.error.HTTPError as err:
            assert err.code == 503 and "Retry-After" not in err.headers
        else:
            raise AssertionError("no 503")
        assert server.faults.pending() == 0
