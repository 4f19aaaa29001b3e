"""``POST pods/{name}/eviction`` as kube-apiserver 1.32 answers it (its
PodDisruptionBudget checks, dry run, RBAC, discovery), the simulated
disruption controller that keeps PDB status, ``kubectl drain``, and the
clear 404 of the subresources only a kubelet serves."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.http import call, request
from support.kubectl import KUBECTL, Kubectl

from pycontroller import ResourceClient
from pycontroller.testing import APIServer, wait_for
from pycontroller.testing.apiserver import simulate

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def eviction(name: str, version: str = "policy/v1", **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": version,
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": NS},
    }
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


def evict(server: APIServer, name: str, query: str = "", **kw: Any) -> tuple[int, Any]:
    return request(server, "POST", f"{PODS}/{name}/eviction{query}", eviction(name, **kw))


def running_pod(server: APIServer, name: str, *, ready: bool = True) -> dict[str, Any]:
    """A pod as a kubelet leaves it: Running, Ready (or not)."""
    code, obj = request(server, "POST", PODS, pod(name))
    assert code == 201, obj
    for _ in range(20):  # a simulated kubelet may write the status in between: retry a 409
        obj["status"] = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        }
        code, out = request(server, "PUT", f"{PODS}/{name}/status", obj)
        if code != 409:
            break
        obj = request(server, "GET", f"{PODS}/{name}")[1]
    assert code == 200, out
    return dict(out)


def pdb(
    server: APIServer, name: str, status: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }
    code, obj = request(server, "POST", PDBS, body)
    assert code == 201, obj
    if status is not None:
        obj["status"] = {"observedGeneration": obj["metadata"]["generation"], **status}
        code, obj = request(server, "PUT", f"{PDBS}/{name}/status", obj)
        assert code == 200, obj
    return obj


def exists(server: APIServer, name: str) -> bool:
    return request(server, "GET", f"{PODS}/{name}")[0] == 200


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def test_without_a_budget_the_pod_is_deleted_with_kubes_success_status(
    server: APIServer,
) -> None:
    running_pod(server, "p")
    code, status = evict(server, "p")
    assert (code, status) == (
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
    assert not exists(server, "p")
    # policy/v1beta1 Evictions are accepted too; a missing pod is kube's 404.
    running_pod(server, "q")
    assert evict(server, "q", version="policy/v1beta1")[0] == 201
    code, status = evict(server, "q")
    assert code == 404 and status["message"] == 'pods "q" not found'
    assert status["details"] == {"name": "q", "kind": "pods"}


def test_the_pod_gets_the_disruption_target_condition_before_it_is_deleted(
    server: APIServer,
) -> None:
    running_pod(server, "p")
    rv = server.resource_version
    assert evict(server, "p")[0] == 201
    url = f"{server.url}{PODS}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
    with urllib.request.urlopen(url, timeout=10) as resp:
        events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    # The condition, then the pod store's graceful delete: an unscheduled pod's
    # grace period is 0, so the deletionTimestamp write (MODIFIED) is followed
    # at once by its removal (DELETED).
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    assert "deletionTimestamp" not in events[0]["object"]["metadata"]
    assert events[1]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    cond = events[0]["object"]["status"]["conditions"][-1]
    assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }


def test_a_budget_with_no_disruption_allowed_refuses_with_429(server: APIServer) -> None:
    running_pod(server, "p")
    pdb(
        server,
        "web",
        minAvailable=1,
        status={
            "disruptionsAllowed": 0,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        },
    )
    code, headers, status = call(server, "POST", f"{PODS}/p/eviction", eviction("p"))
    assert code == 429
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": TOO_MANY,
        "reason": "TooManyRequests",
        "details": {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web needs 1 healthy pods and has 1 "
                    "currently",
                }
            ]
        },
        "code": 429,
    }
    assert "Retry-After" not in headers
    assert exists(server, "p")


def test_a_budget_not_yet_observed_is_still_being_processed(server: APIServer) -> None:
    running_pod(server, "p")
    pdb(server, "web", minAvailable=1)  # no status: observedGeneration 0 < generation 1
    code, headers, status = call(server, "POST", f"{PODS}/p/eviction", eviction("p"))
    assert code == 429 and status["message"] == TOO_MANY
    assert status["details"] == {
        "causes": [
            {
                "reason": "DisruptionBudget",
                "message": "The disruption budget web is still being processed by the server.",
            }
        ],
        "retryAfterSeconds": 10,
    }
    assert headers["Retry-After"] == "10"
    assert exists(server, "p")


def test_an_allowed_disruption_is_spent_and_recorded(server: APIServer) -> None:
    running_pod(server, "p")
    pdb(
        server,
        "web",
        minAvailable=1,
        status={
            "disruptionsAllowed": 1,
            "currentHealthy": 2,
            "desiredHealthy": 1,
            "expectedPods": 2,
        },
    )
    before = time.time()
    assert evict(server, "p")[0] == 201
    assert not exists(server, "p")
    _, budget = request(server, "GET", f"{PDBS}/web")
    status = budget["status"]
    assert status["disruptionsAllowed"] == 0
    assert list(status["disruptedPods"]) == ["p"]
    stamp = status["disruptedPods"]["p"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "DisruptionAllowed",
        "False",
        "InsufficientPods",
    )
    assert cond["observedGeneration"] == 1
    assert (
        time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone >= int(before) - 1
    )


def test_terminal_and_unready_pods(server: APIServer) -> None:
    blocked = {
        "disruptionsAllowed": 0,
        "currentHealthy": 2,
        "desiredHealthy": 2,
        "expectedPods": 3,
    }
    pdb(server, "web", minAvailable=2, status=blocked)
    # A terminal pod is deleted whatever the budget.
    done = running_pod(server, "done")
    done["status"]["phase"] = "Succeeded"
    assert request(server, "PUT", f"{PODS}/done/status", done)[0] == 200
    assert evict(server, "done")[0] == 201
    # A pod not Ready is deleted when the budget is met (IfHealthyBudget), and
    # the budget is not spent.
    running_pod(server, "unready", ready=False)
    assert evict(server, "unready")[0] == 201
    _, budget = request(server, "GET", f"{PDBS}/web")
    assert "disruptedPods" not in budget["status"]
    # A Ready one is refused.
    running_pod(server, "ready")
    assert evict(server, "ready")[0] == 429


def test_unhealthy_pod_eviction_policy(server: APIServer) -> None:
    starved = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 2}
    pdb(server, "web", minAvailable=2, status={**starved, "expectedPods": 2})
    # IfHealthyBudget (the default): the budget is not met, an unready pod stays.
    running_pod(server, "unready", ready=False)
    code, status = evict(server, "unready")
    assert code == 429 and "needs 2 healthy pods and has 0 currently" in str(status)
    _, budget = request(server, "GET", f"{PDBS}/web")
    budget["spec"]["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    assert request(server, "PUT", f"{PDBS}/web", budget)[0] == 200
    _, budget = request(server, "GET", f"{PDBS}/web")
    budget["status"]["observedGeneration"] = budget["metadata"]["generation"]
    assert request(server, "PUT", f"{PDBS}/web/status", budget)[0] == 200
    assert evict(server, "unready")[0] == 201


def test_two_budgets_are_kubes_500(server: APIServer) -> None:
    running_pod(server, "p")
    ok = {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}
    pdb(server, "a", maxUnavailable=1, status=ok)
    pdb(server, "b", maxUnavailable=1, status=ok)
    pdb(server, "other", maxUnavailable=0, selector={"matchLabels": {"app": "other"}})
    code, status = evict(server, "p")
    assert (code, status) == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction "
            "subresource does not support.",
            "code": 500,
        },
    )
    assert exists(server, "p")


def test_name_mismatch_is_a_400(server: APIServer) -> None:
    running_pod(server, "p")
    code, status = request(server, "POST", f"{PODS}/p/eviction", eviction("other"))
    assert (code, status["reason"], status["message"]) == (
        400,
        "BadRequest",
        "name in URL does not match name in Eviction object",
    )
    assert exists(server, "p")
    # Only POST is served.
    assert request(server, "GET", f"{PODS}/p/eviction")[0] == 405


def test_dry_run_changes_nothing(server: APIServer) -> None:
    running_pod(server, "p")
    allowed = {
        "disruptionsAllowed": 1,
        "currentHealthy": 2,
        "desiredHealthy": 1,
        "expectedPods": 2,
    }
    before = pdb(server, "web", minAvailable=1, status=allowed)
    rv = server.resource_version
    assert evict(server, "p", "?dryRun=All")[0] == 201
    assert evict(server, "p", dryRun=["All"])[0] == 201
    assert server.resource_version == rv
    assert exists(server, "p")
    _, after = request(server, "GET", f"{PDBS}/web")
    assert after["status"] == before["status"]
    # The query's and the body's dry run must agree (kube's plain error).
    code, status = evict(server, "p", "?dryRun=All", dryRun=["Other"])
    assert code == 500 and status["message"] == (
        "Non-matching dry-run options in request and content: [All] and [Other]"
    )


def test_delete_options_preconditions_are_honoured(server: APIServer) -> None:
    p = running_pod(server, "p")
    code, status = evict(server, "p", preconditions={"uid": "not-the-uid"})
    assert code == 409 and status["reason"] == "Conflict"
    assert exists(server, "p")
    code, _ = evict(server, "p", preconditions={"uid": p["metadata"]["uid"]}, gracePeriodSeconds=0)
    assert code == 201 and not exists(server, "p")


def test_discovery_lists_pods_eviction() -> None:
    with APIServer() as server:
        _, v1 = request(server, "GET", "/api/v1")
        [entry] = [r for r in v1["resources"] if r["name"] == "pods/eviction"]
        assert entry == {
            "name": "pods/eviction",
            "singularName": "",
            "namespaced": True,
            "group": "policy",
            "version": "v1",
            "kind": "Eviction",
            "verbs": ["create"],
        }


def test_rbac_create_pods_eviction_is_what_it_takes() -> None:
    with APIServer(authorizer="RBAC") as server:
        admin = server.api_client()
        running_pod(server, "p")
        sa = f"system:serviceaccount:{NS}:drainer"
        auth = {"Authorization": f"Bearer {server.token_for(sa)}"}
        code, _, status = call(server, "POST", f"{PODS}/p/eviction", eviction("p"), headers=auth)
        assert code == 403 and status["message"] == (
            f'pods "p" is forbidden: User "{sa}" cannot create resource "pods/eviction" in API '
            f'group "" in the namespace "{NS}"'
        )
        ResourceClient(admin, "rbac.authorization.k8s.io", "v1", "roles").create(
            {
                "metadata": {"name": "evictor"},
                "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}],
            },
            namespace=NS,
        )
        ResourceClient(admin, "rbac.authorization.k8s.io", "v1", "rolebindings").create(
            {
                "metadata": {"name": "drainer-evicts"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "evictor",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "drainer", "namespace": NS}],
            },
            namespace=NS,
        )
        # Allowed to evict, not to delete.
        assert call(server, "DELETE", f"{PODS}/p", headers=auth)[0] == 403
        code, _, status = call(server, "POST", f"{PODS}/p/eviction", eviction("p"), headers=auth)
        assert code == 201 and status["status"] == "Success"
        assert not exists(server, "p")


@pytest.mark.parametrize("sub", ["log", "exec", "attach", "portforward", "proxy"])
def test_kubelet_only_pod_subresources_say_so(server: APIServer, sub: str) -> None:
    running_pod(server, "p")
    method = "GET" if sub == "log" else "POST"
    # A body that is not JSON (a proxied request's) is not read.
    code, status = request(server, method, f"{PODS}/p/{sub}", b"\x00 not json")
    assert code == 404 and status["reason"] == "NotFound"
    assert status["message"] == (
        f"pods/{sub} is not served: the embedded API server (pycontroller.testing) has no "
        "kubelet (no containers, no pod network) to serve it"
    )
    assert status["details"] == {"name": "p", "kind": f"pods/{sub}"}
    # A pod that does not exist is kube's plain 404.
    assert request(server, method, f"{PODS}/nope/{sub}")[1]["message"] == 'pods "nope" not found'


def test_node_and_service_proxies_say_so() -> None:
    with APIServer(simulate=["kubelet"]) as server:
        wait_for(lambda: request(server, "GET", "/api/v1/nodes/node-1")[0] == 200)
        code, status = request(server, "GET", "/api/v1/nodes/node-1:10250/proxy/metrics")
        assert code == 404 and status["message"].startswith("nodes/proxy is not served")
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"ports": [{"port": 80}]},
        }
        assert request(server, "POST", f"/api/v1/namespaces/{NS}/services", svc)[0] == 201
        path = f"/api/v1/namespaces/{NS}/services/http:web:80/proxy/"
        code, status = request(server, "GET", path)
        assert code == 404 and status["message"].startswith("services/proxy is not served")


# --- the simulated disruption controller --------------------------------------------


def deployment(replicas: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    # Replacement pods stay unready until a test sets the gate.
                    "readinessGates": [{"conditionType": "example.com/ready"}],
                    "containers": [{"name": "nginx", "image": "nginx"}],
                },
            },
        },
    }


def pods_of_web(server: APIServer) -> list[dict[str, Any]]:
    _, listed = request(server, "GET", f"{PODS}?labelSelector=app%3Dweb")
    return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]


def open_gate(server: APIServer, p: dict[str, Any]) -> None:
    conds = [c for c in p["status"].get("conditions") or [] if c["type"] != "example.com/ready"]
    p["status"]["conditions"] = [*conds, {"type": "example.com/ready", "status": "True"}]
    code, out = request(server, "PUT", f"{PODS}/{p['metadata']['name']}/status", p)
    assert code == 200, out


def budget_status(server: APIServer, name: str = "web") -> dict[str, Any]:
    _, obj = request(server, "GET", f"{PDBS}/{name}")
    status: dict[str, Any] = obj["status"]
    return status


def three_ready_pods(server: APIServer) -> list[dict[str, Any]]:
    assert (
        request(server, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", deployment())[0]
        == 201
    )
    scheduled = wait_for(
        lambda: (
            lambda ps: ps
            if len(ps) == 3 and all(p["status"].get("phase") == "Running" for p in ps)
            else None
        )(pods_of_web(server)),  # fmt: skip
        what="three running pods",
    )
    for p in scheduled:
        open_gate(server, p)
    return scheduled


def test_disruption_simulation_is_opt_in_and_listed() -> None:
    assert "disruption" in simulate.SIMULATIONS
    assert "disruption" not in getattr(simulate, "DEFAULT_SIMULATIONS", simulate.SIMULATIONS)


def test_simulated_budget_allows_one_eviction_then_refuses() -> None:
    with APIServer(simulate=["deployments", "kubelet", "disruption"]) as server:
        three_ready_pods(server)
        pdb(server, "web", minAvailable=2)

        def settled() -> dict[str, Any] | None:
            s = budget_status(server)
            return s if s.get("currentHealthy") == 3 else None

        status = wait_for(settled, what="the PDB status of three ready pods")
        assert {k: v for k, v in status.items() if k != "conditions"} == {
            "observedGeneration": 1,
            "disruptionsAllowed": 1,
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
        }
        [cond] = status["conditions"]
        assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
            "DisruptionAllowed",
            "True",
            "SufficientPods",
            "",
        )
        first, second = sorted(p["metadata"]["name"] for p in pods_of_web(server))[:2]
        assert evict(server, first)[0] == 201
        code, refusal = evict(server, second)
        assert code == 429 and refusal["message"] == TOO_MANY
        assert re.fullmatch(
            r"The disruption budget web needs 2 healthy pods and has [23] currently",
            refusal["details"]["causes"][0]["message"],
        )
        assert exists(server, second)

        # The controller recounts: the replacement pod is not Ready (its gate),
        # the evicted one is gone, so its disruptedPods entry is dropped.
        def recounted() -> dict[str, Any] | None:
            s = budget_status(server)
            return s if s.get("currentHealthy") == 2 and "disruptedPods" not in s else None

        status = wait_for(recounted, what="the PDB recounted after the eviction")
        assert status["disruptionsAllowed"] == 0 and status["expectedPods"] == 3
        assert status["conditions"][0]["reason"] == "InsufficientPods"
        # Once the replacement is Ready, one disruption is allowed again.
        [new] = [p for p in pods_of_web(server) if p["metadata"]["name"] not in (first, second)
                 and not any(c["type"] == "example.com/ready" for c in p["status"].get(
                     "conditions") or [])]  # fmt: skip
        open_gate(server, new)
        wait_for(lambda: budget_status(server).get("disruptionsAllowed") == 1, what="allowed")
        assert evict(server, second)[0] == 201


def test_simulated_percentages_use_the_deployment_scale() -> None:
    with APIServer(simulate=["deployments", "kubelet", "disruption"]) as server:
        three_ready_pods(server)
        pdb(server, "web", maxUnavailable="34%")
        # ceil(34% of 3) = 2 may be unavailable: desiredHealthy 1, 2 disruptions.
        status = wait_for(
            lambda: (lambda s: s if s.get("currentHealthy") == 3 else None)(budget_status(server)),
            what="PDB status",
        )
        assert (status["expectedPods"], status["desiredHealthy"]) == (3, 1)
        assert status["disruptionsAllowed"] == 2
        # A bare pod the selector matches has no controller: left out of the scale.
        running_pod(server, "bare")
        time.sleep(0.2)
        assert budget_status(server)["expectedPods"] == 3


def test_simulated_pods_of_an_unknown_controller_fail_safe() -> None:
    with APIServer(simulate=["disruption"]) as server:
        # A controller none of kube's finders knows (and that exists, so the
        # garbage collector keeps the pod).
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}
        _, owner = request(server, "POST", f"/api/v1/namespaces/{NS}/configmaps", cm)
        p = pod("orphan")
        p["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "owner",
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
        assert request(server, "POST", PODS, p)[0] == 201
        pdb(server, "web", minAvailable="50%")

        def failed() -> dict[str, Any] | None:
            s = budget_status(server)
            return s if s.get("conditions") else None

        status = wait_for(failed, what="the PDB's SyncFailed condition")
        [cond] = status["conditions"]
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "False",
            "SyncFailed",
            'found no controllers for pod "orphan"',
        )
        assert status["disruptionsAllowed"] == 0
        assert "observedGeneration" not in status


def test_simulated_disrupted_pods_expire_after_two_minutes() -> None:
    with APIServer(simulate=["disruption"]) as server:
        running_pod(server, "p")
        pdb(server, "web", minAvailable=0)
        wait_for(lambda: budget_status(server).get("disruptionsAllowed") == 1, what="allowed")
        obj = request(server, "GET", f"{PDBS}/web")[1]
        obj["status"]["disruptedPods"] = {"p": "2020-01-01T00:00:00Z"}
        obj["status"]["disruptionsAllowed"] = 0
        assert request(server, "PUT", f"{PDBS}/web/status", obj)[0] == 200
        wait_for(
            lambda: "disruptedPods" not in budget_status(server)
            and budget_status(server)["disruptionsAllowed"] == 1,
            what="the stale disruptedPods entry dropped",
        )
        fresh = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        obj = request(server, "GET", f"{PDBS}/web")[1]
        obj["status"]["disruptedPods"] = {"p": fresh}
        assert request(server, "PUT", f"{PDBS}/web/status", obj)[0] == 200
        time.sleep(0.2)
        status = budget_status(server)
        assert status["disruptedPods"] == {"p": fresh}
        assert (status["currentHealthy"], status["disruptionsAllowed"]) == (0, 0)


def test_cli_accepts_simulate_disruption() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pycontroller.testing.apiserver", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert "disruption" in out


# --- kubectl drain ----------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_drain_evicts_the_pods_of_the_node(tmp_path: Path) -> None:
    with APIServer(simulate=["deployments", "kubelet", "disruption"]) as server:
        kubectl = Kubectl(server, tmp_path)
        d = deployment()
        del d["spec"]["template"]["spec"]["readinessGates"]
        assert request(server, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", d)[0] == 201
        kubectl("rollout", "status", "deployment/web", "--timeout=30s")
        before = {p["metadata"]["name"] for p in pods_of_web(server)}
        assert len(before) == 3
        done = kubectl(
            "drain",
            "node-1",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=30s",
        )
        out = done.stdout + done.stderr
        assert "node/node-1 cordoned" in out and "node/node-1 drained" in out
        for name in before:
            assert f"pod/{name} evicted" in out
            assert not exists(server, name)
        node = request(server, "GET", "/api/v1/nodes/node-1")[1]
        assert node["spec"]["unschedulable"] is True
        evictions = server.requests("POST", r"/pods/[^/]+/eviction$")
        assert len(evictions) == 3 and {r.status for r in evictions} == {201}
