"""Storage object in-use protection over HTTP: new claims and volumes get
the protection finalizer (the ``StorageObjectInUseProtection`` admission
plugin), and a deleted claim stays Terminating while a scheduled pod uses it,
then goes (kube-controller-manager's pvc-protection controller); a deleted
volume goes once it is not Bound (pv-protection)."""

from __future__ import annotations

from typing import Any

from support.http import request
from support.objects import claim, pod

from pycontroller.testing import APIServer, wait_for

CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
PODS = "/api/v1/namespaces/default/pods"
VOLUMES = "/api/v1/persistentvolumes"


def gone(server: APIServer, path: str) -> bool:
    return request(server, "GET", path)[0] == 404


def mounting(name: str, claim_name: str, node: str = "node-1") -> dict[str, Any]:
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return pod(name, volumes=volumes, nodeName=node)


def test_a_new_claim_and_volume_carry_the_finalizer(apiserver: APIServer) -> None:
    code, out = request(apiserver, "POST", CLAIMS, claim("c0", "1Gi"))
    assert code == 201, out
    assert out["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "v0"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/v0"},
        },
    }
    code, out = request(apiserver, "POST", VOLUMES, volume)
    assert code == 201, out
    assert out["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    # Not bound: deleting it releases it at once.
    assert request(apiserver, "DELETE", f"{VOLUMES}/v0")[0] == 200
    wait_for(lambda: gone(apiserver, f"{VOLUMES}/v0"), 10, what="the volume gone")


def test_a_claim_in_use_stays_until_its_pod_is_gone(apiserver: APIServer) -> None:
    assert request(apiserver, "POST", CLAIMS, claim("data", "1Gi"))[0] == 201
    assert request(apiserver, "POST", PODS, mounting("user", "data"))[0] == 201
    # Not scheduled: does not hold the claim.
    assert request(apiserver, "POST", PODS, mounting("pending", "other", node=""))[0] == 201
    code, out = request(apiserver, "DELETE", f"{CLAIMS}/data")
    assert code == 200 and out["metadata"]["deletionTimestamp"], out
    # The controller has had its chance (a later pass, woken by another
    # claim's release) and kept it.
    assert request(apiserver, "POST", CLAIMS, claim("free", "1Gi"))[0] == 201
    assert request(apiserver, "DELETE", f"{CLAIMS}/free")[0] == 200
    wait_for(lambda: gone(apiserver, f"{CLAIMS}/free"), 10, what="the unused claim gone")
    code, out = request(apiserver, "GET", f"{CLAIMS}/data")
    assert code == 200 and out["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    request(apiserver, "DELETE", f"{PODS}/user?gracePeriodSeconds=0")
    wait_for(lambda: gone(apiserver, f"{CLAIMS}/data"), 10, what="the claim gone with its pod")


def test_a_generic_ephemeral_volume_holds_its_claim(apiserver: APIServer) -> None:
    assert request(apiserver, "POST", CLAIMS, claim("eph-scratch", "1Gi"))[0] == 201
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }
    }
    body = pod("eph", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}])
    body["spec"]["nodeName"] = "node-1"
    code, out = request(apiserver, "POST", PODS, body)
    assert code == 201, out
    assert request(apiserver, "DELETE", f"{CLAIMS}/eph-scratch")[0] == 200
    assert request(apiserver, "POST", CLAIMS, claim("tick", "1Gi"))[0] == 201
    assert request(apiserver, "DELETE", f"{CLAIMS}/tick")[0] == 200
    wait_for(lambda: gone(apiserver, f"{CLAIMS}/tick"), 10, what="the unused claim gone")
    assert request(apiserver, "GET", f"{CLAIMS}/eph-scratch")[0] == 200
    # A finished pod no longer holds its ephemeral claim.
    _, current = request(apiserver, "GET", f"{PODS}/eph")
    current["status"] = {**current["status"], "phase": "Succeeded"}
    assert request(apiserver, "PUT", f"{PODS}/eph/status", current)[0] == 200
    wait_for(lambda: gone(apiserver, f"{CLAIMS}/eph-scratch"), 10, what="the claim released")
