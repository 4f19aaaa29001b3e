"""deploy/network/ is valid Kubernetes, runs the controller's CLI with flags it parses, and its
RBAC grants exactly the requests the controller makes (read from the embedded server's log)."""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.rbac import rbac_needed

from controllers.network.controller import COMPONENT, NETWORKS, setup
from pycontroller import Manager
from pycontroller.testing import APIServer, wait_for

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy" / "network"
CRD = REPO / "crds" / "network.yaml"
K8S_VERSION = "1.32.0"


def _objects() -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (doc["kind"], doc["metadata"]["name"]): doc
        for path in sorted(DEPLOY.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }


def test_kustomization_lists_every_manifest_in_order() -> None:
    kustomization = yaml.safe_load((DEPLOY / "Kustomization").read_text())
    assert kustomization["resources"] == sorted(p.name for p in DEPLOY.glob("*.yaml"))
    assert sorted(p.name for p in DEPLOY.iterdir() if not p.name.endswith(".yaml")) == [
        "Kustomization"
    ]


@pytest.mark.parametrize(
    "path",
    [*sorted(DEPLOY.glob("*.yaml")), CRD, REPO / "crds" / "samples" / "network.yaml"],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_manifests_are_valid(path: Path) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc["apiVersion"] != "samplecrd.k8s.io/v1":
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_deployment_runs_the_network_cli_with_flags_it_parses() -> None:
    objects = _objects()
    deployment = objects[("Deployment", "network-controller")]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "controllers.network"]
    args = Manager.parse_args(container["args"], name=COMPONENT)
    assert args.graceful_shutdown_timeout < pod["terminationGracePeriodSeconds"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert args.health_probe_bind_address == f":{ports['health']}"
    assert args.metrics_bind_address == f":{ports['metrics']}"
    assert pod["serviceAccountName"] == "network-controller"
    binding = objects[("ClusterRoleBinding", "network-controller")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "network-controller", "namespace": "network-system"}
    ]


def test_rbac_grants_exactly_what_the_controller_uses(apiserver_factory: Any) -> None:
    server: APIServer = apiserver_factory(crds=[str(CRD)])

    def call(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        # The test's own requests carry pretty=true, which the controller never sends.
        req = urllib.request.Request(
            f"{server.url}{path}?pretty=true",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/merge-patch+json"}
            if method == "PATCH"
            else {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    mgr = Manager(server.api_client(), name=COMPONENT, graceful_shutdown_timeout=5)
    setup(mgr)
    stop = threading.Event()
    thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
    thread.start()
    base = f"/apis/{NETWORKS[0]}/{NETWORKS[1]}/namespaces/default/networks"
    try:
        body = {"apiVersion": "samplecrd.k8s.io/v1", "kind": "Network", "metadata": {"name": "n"}}
        call("POST", base, {**body, "spec": {"cidr": "10.0.0.0/8"}})

        def count() -> int:
            events = call("GET", "/api/v1/namespaces/default/events")["items"]
            return sum(int(e.get("count") or 1) for e in events if e["reason"] == "Synced")

        wait_for(lambda: count() == 1, what="first sync")
        call("PATCH", f"{base}/n", {"spec": {"gateway": "10.0.0.1"}})
        wait_for(lambda: count() == 2, what="second sync (an aggregated, patched Event)")
        call("DELETE", f"{base}/n")
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive()
    used = {
        rbac
        for r in server.request_log
        if "pretty=true" not in r.path
        for rbac in rbac_needed(r.method, r.path)
    }
    role = _objects()[("ClusterRole", "network-controller")]
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert used == granted
