"""ResourceQuota as on a cluster, over HTTP: kube-controller-manager's quota
controller fills ``status.hard`` / ``status.used``, and kube-apiserver
1.32's ResourceQuota admission plugin refuses what a quota does not allow
with kube's 403s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request
from support.objects import claim, container, pod

from pycontroller.testing import APIServer, wait_for

NS = "/api/v1/namespaces/default"
QUOTAS = f"{NS}/resourcequotas"
PODS = f"{NS}/pods"
CONFIGMAPS = f"{NS}/configmaps"
SERVICES = f"{NS}/services"
CLAIMS = f"{NS}/persistentvolumeclaims"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def quota(name: str, hard: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name},
        "spec": {"hard": hard, **spec},
    }


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container()]}},
        },
    }


def make(server: APIServer, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, obj)
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def status_of(server: APIServer, name: str) -> dict[str, Any]:
    code, out = request(server, "GET", f"{QUOTAS}/{name}")
    assert code == 200, out
    return dict(out.get("status") or {})


def wait_status(server: APIServer, name: str, used: dict[str, str]) -> dict[str, Any]:
    """Poll until the controller reports ``used`` (and ``hard`` = spec)."""

    def done() -> dict[str, Any]:
        code, out = request(server, "GET", f"{QUOTAS}/{name}")
        assert code == 200, out
        status = out.get("status") or {}
        if status.get("used") == used and status.get("hard") == out["spec"]["hard"]:
            return dict(out)
        return {}  # not yet

    return wait_for(done, timeout=10, what=f"quota {name} used={used}")


def forbidden(kind: str, name: str, why: str, group: str = "") -> dict[str, Any]:
    """Kube's 403; ``kind`` is the resource (qualified by ``group`` in the message)."""
    subject = f"{kind}.{group}" if group else kind
    details = (
        {"name": name, "group": group, "kind": kind} if group else {"name": name, "kind": kind}
    )
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{subject} "{name}" is forbidden: {why}',
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


def test_controller_fills_status(server: APIServer) -> None:
    make(server, CONFIGMAPS, configmap("existing"))
    hard = {
        "pods": "10",
        "configmaps": "5",
        "count/deployments.apps": "3",
        "requests.cpu": "2",
        "limits.memory": "4Gi",
        "services": "2",
        "persistentvolumeclaims": "1",
        "requests.storage": "10Gi",
        "secrets": "4",
    }
    make(server, QUOTAS, quota("q", hard))
    # The namespace's kube-root-ca.crt is not made here: only our ConfigMap counts.
    out = wait_status(
        server,
        "q",
        {
            "pods": "0",
            "configmaps": "1",
            "count/deployments.apps": "0",
            "requests.cpu": "0",
            "limits.memory": "0",
            "services": "0",
            "persistentvolumeclaims": "0",
            "requests.storage": "0",
            "secrets": "0",
        },
    )
    assert out["status"]["hard"] == hard
    # Usage sums as Go's Quantity.Add does and prints as Quantity.String.
    make(
        server,
        PODS,
        pod("a", container(requests={"cpu": "500m"}, limits={"cpu": "1", "memory": "512Mi"})),
    )
    make(
        server,
        PODS,
        pod("b", container(requests={"cpu": "500m"}, limits={"cpu": "1", "memory": "512Mi"})),
    )
    make(server, DEPLOYMENTS, deployment("d"))
    wait_status(
        server,
        "q",
        {
            "pods": "2",
            "configmaps": "1",
            "count/deployments.apps": "1",
            "requests.cpu": "1",
            "limits.memory": "1Gi",
            "services": "0",
            "persistentvolumeclaims": "0",
            "requests.storage": "0",
            "secrets": "0",
        },
    )


def test_controller_status_manager_and_hard_follows_spec(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"configmaps": "2"}))
    out = wait_status(server, "q", {"configmaps": "0"})
    managers = [
        (m.get("manager"), m["operation"], m.get("subresource"))
        for m in out["metadata"]["managedFields"]
    ]
    assert ("kube-controller-manager", "Update", "status") in managers
    entry = next(m for m in out["metadata"]["managedFields"] if m.get("subresource") == "status")
    assert entry["fieldsV1"] == {
        "f:status": {
            "f:hard": {".": {}, "f:configmaps": {}},
            "f:used": {".": {}, "f:configmaps": {}},
        }
    }
    rv = out["metadata"]["resourceVersion"]
    # The controller writes nothing while nothing changes.
    make(server, PODS, pod("unrelated"))
    code, again = request(server, "GET", f"{QUOTAS}/q")
    assert again["metadata"]["resourceVersion"] == rv
    # A new spec.hard is reflected in status.hard (and its usage counted).
    out["spec"]["hard"] = {"configmaps": "3", "pods": "4"}
    code, updated = request(server, "PUT", f"{QUOTAS}/q", out)
    assert code == 200, updated
    wait_status(server, "q", {"configmaps": "0", "pods": "1"})


def test_object_counts_refused_at_the_limit(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"configmaps": "2", "count/deployments.apps": "1"}))
    wait_status(server, "q", {"configmaps": "0", "count/deployments.apps": "0"})
    make(server, CONFIGMAPS, configmap("a"))
    make(server, CONFIGMAPS, configmap("b"))
    code, out = request(server, "POST", CONFIGMAPS, configmap("c"))
    assert code == 403
    assert out == forbidden(
        "configmaps",
        "c",
        "exceeded quota: q, requested: configmaps=1, used: configmaps=2, limited: configmaps=2",
    )
    make(server, DEPLOYMENTS, deployment("d1"))
    code, out = request(server, "POST", DEPLOYMENTS, deployment("d2"))
    assert code == 403
    assert out == forbidden(
        "deployments",
        "d2",
        "exceeded quota: q, requested: count/deployments.apps=1, "
        "used: count/deployments.apps=1, limited: count/deployments.apps=1",
        group="apps",
    )


def test_admission_raises_used_at_once(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"configmaps": "1"}))
    wait_status(server, "q", {"configmaps": "0"})
    # The quota is charged before the object is stored: no window for a second create.
    server.quota_controller.stop()
    try:
        make(server, CONFIGMAPS, configmap("a"))
        status = status_of(server, "q")
        assert status["used"] == {"configmaps": "1"}
        code, out = request(server, "POST", CONFIGMAPS, configmap("b"))
        assert code == 403, out
        code, got = request(server, "GET", f"{QUOTAS}/q")
        managers = {
            (m.get("manager"), m.get("subresource")) for m in got["metadata"]["managedFields"]
        }
        assert ("kube-apiserver", "status") in managers
    finally:
        server.quota_controller.start()


def test_pods_refused_then_allowed_after_a_delete(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"pods": "2", "count/pods": "5"}))
    wait_status(server, "q", {"pods": "0", "count/pods": "0"})
    make(server, PODS, pod("a"))
    make(server, PODS, pod("b"))
    code, out = request(server, "POST", PODS, pod("c"))
    assert code == 403
    assert out == forbidden(
        "pods", "c", "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    )
    code, _ = request(server, "DELETE", f"{PODS}/a?gracePeriodSeconds=0")
    assert code == 200
    wait_status(server, "q", {"pods": "1", "count/pods": "1"})
    make(server, PODS, pod("c"))
    wait_status(server, "q", {"pods": "2", "count/pods": "2"})


def test_terminal_pods_do_not_count(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"pods": "1", "count/pods": "5"}))
    wait_status(server, "q", {"pods": "0", "count/pods": "0"})
    out = make(server, PODS, pod("done"))
    out["status"] = {"phase": "Succeeded"}
    code, got = request(server, "PUT", f"{PODS}/done/status", out)
    assert code == 200, got
    wait_status(server, "q", {"pods": "0", "count/pods": "1"})
    make(server, PODS, pod("next"))


def test_compute_quota_message_and_sums(server: APIServer) -> None:
    make(
        server, QUOTAS, quota("compute", {"requests.cpu": "1", "limits.cpu": "2", "memory": "1Gi"})
    )
    wait_status(server, "compute", {"requests.cpu": "0", "limits.cpu": "0", "memory": "0"})
    code, out = request(
        server,
        "POST",
        PODS,
        pod(
            "p",
            container("c", requests={"cpu": "100m"}),
            container("d", requests={"cpu": "100m", "memory": "1Mi"}),
        ),
    )
    assert code == 403
    assert out == forbidden(
        "pods", "p", "failed quota: compute: must specify limits.cpu for: c,d; memory for: c"
    )
    # A limit without a request is its request (SetDefaults_Pod).
    make(server, PODS, pod("a", container(limits={"cpu": "600m", "memory": "512Mi"})))
    wait_status(
        server, "compute", {"requests.cpu": "600m", "limits.cpu": "600m", "memory": "512Mi"}
    )
    code, out = request(
        server, "POST", PODS, pod("b", container(limits={"cpu": "500m", "memory": "256Mi"}))
    )
    assert code == 403
    assert out == forbidden(
        "pods",
        "b",
        "exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, "
        "limited: requests.cpu=1",
    )
    make(server, PODS, pod("b", container(limits={"cpu": "400m", "memory": "512Mi"})))
    wait_status(server, "compute", {"requests.cpu": "1", "limits.cpu": "1", "memory": "1Gi"})


def test_status_unknown(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"configmaps": "2"}))
    out = wait_status(server, "q", {"configmaps": "0"})
    # status.hard names a resource whose usage status.used lacks.
    out["status"] = {"hard": {"configmaps": "2", "secrets": "1"}, "used": {"configmaps": "0"}}
    server.quota_controller.stop()
    try:
        code, got = request(server, "PUT", f"{QUOTAS}/q/status", out)
        assert code == 200, got
        code, got = request(
            server,
            "POST",
            f"{NS}/secrets",
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
        )
        assert code == 403
        assert got == forbidden("secrets", "s", "status unknown for quota: q, resources: secrets")
    finally:
        server.quota_controller.start()
    wait_status(server, "q", {"configmaps": "0"})


def test_services_nodeports_and_type_change(server: APIServer) -> None:
    make(
        server,
        QUOTAS,
        quota("q", {"services": "5", "services.nodeports": "1", "services.loadbalancers": "0"}),
    )
    wait_status(
        server, "q", {"services": "0", "services.nodeports": "0", "services.loadbalancers": "0"}
    )
    svc = make(
        server,
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]},
        },
    )
    wait_status(
        server, "q", {"services": "1", "services.nodeports": "0", "services.loadbalancers": "0"}
    )
    svc["spec"]["type"] = "NodePort"
    code, out = request(server, "PUT", f"{SERVICES}/s", svc)
    assert code == 403
    assert out == forbidden(
        "services",
        "s",
        "exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, "
        "limited: services.nodeports=1",
    )


def test_claim_storage_on_create_and_resize(server: APIServer) -> None:
    make(
        server,
        QUOTAS,
        quota(
            "storage",
            {
                "requests.storage": "10Gi",
                "persistentvolumeclaims": "3",
                "gold.storageclass.storage.k8s.io/requests.storage": "5Gi",
            },
        ),
    )
    wait_status(
        server,
        "storage",
        {
            "requests.storage": "0",
            "persistentvolumeclaims": "0",
            "gold.storageclass.storage.k8s.io/requests.storage": "0",
        },
    )
    make(server, CLAIMS, claim("a", "4Gi", "gold"))
    code, out = request(server, "POST", CLAIMS, claim("b", "2Gi", "gold"))
    assert code == 403
    assert out == forbidden(
        "persistentvolumeclaims",
        "b",
        "exceeded quota: storage, "
        "requested: gold.storageclass.storage.k8s.io/requests.storage=2Gi, "
        "used: gold.storageclass.storage.k8s.io/requests.storage=4Gi, "
        "limited: gold.storageclass.storage.k8s.io/requests.storage=5Gi",
    )
    plain = make(server, CLAIMS, claim("b", "5Gi"))
    wait_status(
        server,
        "storage",
        {
            "requests.storage": "9Gi",
            "persistentvolumeclaims": "2",
            "gold.storageclass.storage.k8s.io/requests.storage": "4Gi",
        },
    )
    # A resize (of a bound claim) is charged by its growth.
    plain["status"] = {"phase": "Bound"}
    code, plain = request(server, "PUT", f"{CLAIMS}/b/status", plain)
    assert code == 200, plain
    plain["spec"]["resources"]["requests"]["storage"] = "7Gi"
    code, out = request(server, "PUT", f"{CLAIMS}/b", plain)
    assert code == 403
    assert out == forbidden(
        "persistentvolumeclaims",
        "b",
        "exceeded quota: storage, requested: requests.storage=2Gi, used: requests.storage=9Gi, "
        "limited: requests.storage=10Gi",
    )
    plain["spec"]["resources"]["requests"]["storage"] = "6Gi"
    code, out = request(server, "PUT", f"{CLAIMS}/b", plain)
    assert code == 200, out
    wait_status(
        server,
        "storage",
        {
            "requests.storage": "10Gi",
            "persistentvolumeclaims": "2",
            "gold.storageclass.storage.k8s.io/requests.storage": "4Gi",
        },
    )


def test_dry_run_does_not_consume(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"configmaps": "1"}))
    wait_status(server, "q", {"configmaps": "0"})
    rv = status_of(server, "q")
    code, out = request(server, "POST", f"{CONFIGMAPS}?dryRun=All", configmap("a"))
    assert code == 201, out
    code, got = request(server, "GET", f"{QUOTAS}/q")
    assert got["status"]["used"] == {"configmaps": "0"}
    assert rv["used"] == got["status"]["used"]
    make(server, CONFIGMAPS, configmap("a"))
    # ...but a dry run is refused as the request would be.
    code, out = request(server, "POST", f"{CONFIGMAPS}?dryRun=All", configmap("b"))
    assert code == 403
    assert out == forbidden(
        "configmaps",
        "b",
        "exceeded quota: q, requested: configmaps=1, used: configmaps=1, limited: configmaps=1",
    )


def test_scopes(server: APIServer) -> None:
    make(server, QUOTAS, quota("best-effort", {"pods": "1"}, scopes=["BestEffort"]))
    wait_status(server, "best-effort", {"pods": "0"})
    make(server, PODS, pod("a"))
    code, out = request(server, "POST", PODS, pod("b"))
    assert code == 403, out
    # A pod with requests is not BestEffort: the quota does not apply.
    make(server, PODS, pod("c", container(requests={"cpu": "100m"})))
    wait_status(server, "best-effort", {"pods": "1"})


def test_priority_class_scope_selector(server: APIServer) -> None:
    code, out = request(
        server,
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    )
    assert code == 201, out
    selector = {
        "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]
    }
    make(server, QUOTAS, quota("high", {"pods": "1"}, scopeSelector=selector))
    wait_status(server, "high", {"pods": "0"})
    make(server, PODS, pod("a", priorityClassName="high"))
    code, out = request(server, "POST", PODS, pod("b", priorityClassName="high"))
    assert code == 403
    assert out == forbidden(
        "pods", "b", "exceeded quota: high, requested: pods=1, used: pods=1, limited: pods=1"
    )
    make(server, PODS, pod("c"))  # no class: not in the quota's scope
    wait_status(server, "high", {"pods": "1"})


def test_load_balancers(server: APIServer) -> None:
    make(server, QUOTAS, quota("q", {"services.loadbalancers": "1", "count/services": "9"}))
    wait_status(server, "q", {"services.loadbalancers": "0", "count/services": "0"})

    def lb(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        }

    make(server, SERVICES, lb("a"))
    code, out = request(server, "POST", SERVICES, lb("b"))
    assert code == 403
    assert out == forbidden(
        "services",
        "b",
        "exceeded quota: q, requested: services.loadbalancers=1, "
        "used: services.loadbalancers=1, limited: services.loadbalancers=1",
    )
    wait_status(server, "q", {"services.loadbalancers": "1", "count/services": "1"})
