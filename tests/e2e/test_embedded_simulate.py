"""``make run`` (``python -m controllers.balancer --embedded``) as a subprocess:
with the simulated workloads its API server runs, the sample Balancer's nginx
Deployment rolls out, its Services get endpoints and the Balancer reaches
``Available=True`` with the reason ``controllers/balancer/reconcile.py``
derives from the Deployment's ``availableReplicas``."""

from __future__ import annotations

from typing import Any

import yaml
from support.cli import REPO, CLIProc

from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.errors import NotFoundError
from pycontroller.testing import wait_for

SAMPLES = REPO / "crds" / "samples"


class Proc(CLIProc):
    module = "controllers.balancer"


def test_make_run_balancer_reaches_available() -> None:
    proc = Proc("--embedded", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
    try:
        kubeconfig = proc.find(r"^kubeconfig: (\S+)").group(1)
        api = load_config(kubeconfig=kubeconfig)
        balancers = ResourceClient(api, "exposer.hliangzhao.io", "v1alpha1", "balancers")
        pods = ResourceClient(api, "", "v1", "pods")
        deployments = ResourceClient(api, "apps", "v1", "deployments")
        endpoints = ResourceClient(api, "", "v1", "endpoints")
        for doc in yaml.safe_load_all((SAMPLES / "http-echo.yaml").read_text()):
            if doc:
                pods.create(doc, namespace="default")
        with (SAMPLES / "balancer.yaml").open() as f:
            balancers.create(yaml.safe_load(f), namespace="default")

        def available() -> dict[str, Any] | None:
            b = balancers.get("balancer-sample", "default")
            for c in (b.get("status") or {}).get("conditions") or []:
                if c.get("type") == "Available" and c.get("status") == "True":
                    return dict(c)
            return None

        cond = wait_for(available, timeout=30, interval=0.1, what=f"Available\n{proc.output()}")
        assert cond["reason"] == "MinimumReplicasAvailable"
        [d] = [
            d
            for d in deployments.list("default")["items"]
            if any(r.get("kind") == "Balancer" for r in d["metadata"].get("ownerReferences") or [])
        ]
        assert d["status"]["availableReplicas"] >= 1
        assert d["status"]["observedGeneration"] == d["metadata"]["generation"]
        # Every echo pod runs, and a backend Service selecting one has its IP.
        echo = {p["metadata"]["name"]: p for p in pods.list("default")["items"]}
        assert all(echo[f"echo-v{i}"]["status"]["phase"] == "Running" for i in (1, 2, 3))

        def backend_ips() -> set[str]:
            ips: set[str] = set()
            try:
                items = endpoints.list("default")["items"]
            except NotFoundError:
                return ips
            for ep in items:
                for s in ep.get("subsets") or []:
                    ips.update(a["ip"] for a in s.get("addresses") or [])
            return ips

        want = {echo[f"echo-v{i}"]["status"]["podIP"] for i in (1, 2, 3)}
        wait_for(lambda: want <= backend_ips(), timeout=10, what="backend endpoints")
    finally:
        code = proc.stop()
    assert code == 0, proc.output()
