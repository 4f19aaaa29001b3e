"""Simulated workloads (``APIServer(simulate=[...])``) over HTTP: the
Deployment and ReplicaSet controllers, the scheduler and kubelet of
``node-1``, the Endpoints and EndpointSlice controllers; off by default, and
their writes never in the request log."""

from __future__ import annotations

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pycontroller import ResourceClient
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer, wait_for

NS = "default"
ALL = ("deployments", "kubelet", "endpoints")


class Clients:
    def __init__(self, server: APIServer) -> None:
        api = server.api_client()
        self.deployments = ResourceClient(api, "apps", "v1", "deployments")
        self.replicasets = ResourceClient(api, "apps", "v1", "replicasets")
        self.pods = ResourceClient(api, "", "v1", "pods")
        self.services = ResourceClient(api, "", "v1", "services")
        self.endpoints = ResourceClient(api, "", "v1", "endpoints")
        self.slices = ResourceClient(api, "discovery.k8s.io", "v1", "endpointslices")
        self.nodes = ResourceClient(api, "", "v1", "nodes", namespaced=False)

    def rs_of(self, name: str) -> list[dict[str, Any]]:
        d = self.deployments.get(name, NS)
        uid = d["metadata"]["uid"]
        return [
            rs
            for rs in self.replicasets.list(NS)["items"]
            if any(r.get("uid") == uid for r in rs["metadata"].get("ownerReferences") or [])
        ]

    def pods_of(self, rs: dict[str, Any]) -> list[dict[str, Any]]:
        uid = rs["metadata"]["uid"]
        return [
            p
            for p in self.pods.list(NS)["items"]
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer(simulate=ALL) as s:
        yield s


@pytest.fixture
def k(server: APIServer) -> Clients:
    return Clients(server)


def deployment(name: str = "web", replicas: int = 3, image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": image,
                            "ports": [{"name": "http", "containerPort": 8080}],
                        }
                    ]
                },
            },
        },
    }


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def rolled_out(k: Clients, name: str) -> dict[str, Any] | None:
    """The Deployment once ``kubectl rollout status`` would say it is done."""
    d = k.deployments.get(name, NS)
    st = d.get("status") or {}
    n = d["spec"]["replicas"]
    progressing = condition(d, "Progressing") or {}
    if (
        st.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and st.get("updatedReplicas", 0) == n
        and st.get("replicas", 0) == n
        and st.get("availableReplicas", 0) == n
        and progressing.get("reason") == "NewReplicaSetAvailable"
    ):
        return d
    return None


# --- default off -----------------------------------------------------------------------


def test_off_by_default_nothing_acts_on_objects() -> None:
    with APIServer() as s:
        k = Clients(s)
        k.deployments.create(deployment(), namespace=NS)
        k.pods.create(
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            namespace=NS,
        )
        rv = s.resource_version
        time.sleep(0.5)
        assert s.resource_version == rv
        assert k.deployments.get("web", NS)["status"] == {}  # Go's zero status, no controller
        assert k.pods.get("p", NS)["status"]["phase"] == "Pending"
        assert "nodeName" not in k.pods.get("p", NS)["spec"]
        assert s.simulator.enabled is False


def test_unknown_simulation_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown simulation.*'pods'"):
        APIServer(simulate=["kubelet", "pods"])


# --- deployments ------------------------------------------------------------------------


def test_deployment_gets_replicaset_pods_and_status_as_kube_writes_them(
    server: APIServer, k: Clients
) -> None:
    server.clear_request_log()
    k.deployments.create(deployment(), namespace=NS)
    d = wait_for(lambda: rolled_out(k, "web"), what="rollout")
    # Only the test's own create is in the log: the simulation writes in process.
    assert server.writes() == 1
    assert d["metadata"]["generation"] == 1
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    st = d["status"]
    assert st["observedGeneration"] == 1
    assert (st["replicas"], st["updatedReplicas"], st["readyReplicas"]) == (3, 3, 3)
    assert st["availableReplicas"] == 3
    assert "unavailableReplicas" not in st  # zero: omitted, as Go's omitempty does
    assert [c["type"] for c in st["conditions"]] == ["Available", "Progressing"]
    available = condition(d, "Available")
    assert available is not None
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    assert available["message"] == "Deployment has minimum availability."
    [rs] = k.rs_of("web")
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{h}"
    progressing = condition(d, "Progressing")
    assert progressing is not None
    assert progressing["status"] == "True"
    assert progressing["message"] == f'ReplicaSet "web-{h}" has successfully progressed.'
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": h}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
    }
    [ref] = rs["metadata"]["ownerReferences"]
    assert ref == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "web",
        "uid": d["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert rs["status"]["observedGeneration"] == rs["metadata"]["generation"]
    assert rs["status"]["availableReplicas"] == 3
    pods = k.pods_of(rs)
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith(f"web-{h}-")
        assert p["metadata"]["labels"] == {"app": "web", "pod-template-hash": h}
        [pref] = p["metadata"]["ownerReferences"]
        assert (pref["kind"], pref["name"], pref["controller"]) == (
            "ReplicaSet",
            rs["metadata"]["name"],
            True,
        )
    managers = {m["manager"] for m in rs["metadata"]["managedFields"]}
    assert managers == {"kube-controller-manager"}
    # Events as kubectl describe shows them.
    events = ResourceClient(server.api_client(), "", "v1", "events").list(NS)["items"]
    scaling = [e for e in events if e["reason"] == "ScalingReplicaSet"]
    assert [(e["involvedObject"]["name"], e["message"]) for e in scaling] == [
        ("web", f"Scaled up replica set web-{h} from 0 to 3")
    ]
    assert scaling[0]["source"] == {"component": "deployment-controller"}
    created = [e for e in events if e["reason"] == "SuccessfulCreate"]
    assert sorted(e["message"] for e in created) == sorted(
        f"Created pod: {p['metadata']['name']}" for p in pods
    )


def test_template_change_rolls_out_a_new_replicaset_and_rollback_reuses_the_old(
    server: APIServer, k: Clients
) -> None:
    k.deployments.create(deployment(), namespace=NS)
    d = wait_for(lambda: rolled_out(k, "web"), what="first rollout")
    [first] = k.rs_of("web")
    # Watch ReplicaSets through the rollout: the total never exceeds
    # replicas + maxSurge (25% of 3, rounded up: 1).
    totals: list[int] = []
    rv = first["metadata"]["resourceVersion"]
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    d["metadata"]["annotations"]["kubernetes.io/change-cause"] = "bump nginx"
    k.deployments.update(d)
    d = wait_for(lambda: rolled_out(k, "web"), what="second rollout")
    assert d["metadata"]["generation"] == 2
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    sizes: dict[str, int] = {}
    for ev in k.replicasets.watch(NS, resource_version=rv, timeout_seconds=1):
        obj = ev["object"]
        if ev["type"] in ("ADDED", "MODIFIED"):
            sizes[obj["metadata"]["name"]] = obj["spec"]["replicas"]
            totals.append(sum(sizes.values()))
    assert totals and max(totals) <= 4
    rs = {r["metadata"]["name"]: r for r in k.rs_of("web")}
    second = next(r for n, r in rs.items() if n != first["metadata"]["name"])
    assert rs[first["metadata"]["name"]]["spec"]["replicas"] == 0
    assert second["spec"]["replicas"] == 3
    assert second["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert second["metadata"]["annotations"]["kubernetes.io/change-cause"] == "bump nginx"
    assert {p["spec"]["containers"][0]["image"] for p in k.pods.list(NS)["items"]} == {"nginx:1.28"}
    # Roll back to the first template: its ReplicaSet is reused as revision 3.
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    k.deployments.update(d)
    d = wait_for(lambda: rolled_out(k, "web"), what="rollback")
    old = k.replicasets.get(first["metadata"]["name"], NS)
    assert old["spec"]["replicas"] == 3
    assert old["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert old["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert len(k.rs_of("web")) == 2


def test_scale_subresource_scales_pods_and_gc_deletes_them_with_the_deployment(
    server: APIServer, k: Clients
) -> None:
    k.deployments.create(deployment(replicas=1), namespace=NS)
    wait_for(lambda: rolled_out(k, "web"), what="rollout")
    req = urllib.request.Request(
        f"{server.url}/apis/apps/v1/namespaces/default/deployments/web/scale",
        data=json.dumps({"spec": {"replicas": 4}}).encode(),
        method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert json.loads(resp.read())["spec"]["replicas"] == 4
    d = wait_for(lambda: rolled_out(k, "web"), what="scale up")
    assert d["status"]["availableReplicas"] == 4
    [rs] = k.rs_of("web")
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "4"
    assert len(k.pods_of(rs)) == 4
    d["spec"]["replicas"] = 2
    k.deployments.update(d)
    wait_for(lambda: len(k.pods_of(rs)) == 2 and rolled_out(k, "web"), what="scale down")
    k.deployments.delete("web", NS)
    wait_for(lambda: not k.replicasets.list(NS)["items"], what="ReplicaSets collected")
    wait_for(lambda: not k.pods.list(NS)["items"], what="pods collected")


def test_recreate_strategy_scales_old_down_before_new_up(server: APIServer, k: Clients) -> None:
    d = deployment(replicas=2)
    d["spec"]["strategy"] = {"type": "Recreate"}
    k.deployments.create(d, namespace=NS)
    d = wait_for(lambda: rolled_out(k, "web"), what="rollout")
    [first] = k.rs_of("web")
    rv = first["metadata"]["resourceVersion"]
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    k.deployments.update(d)
    wait_for(lambda: rolled_out(k, "web") and len(k.rs_of("web")) == 2, what="recreate")
    # The new ReplicaSet is created only once the old one reached zero.
    seen_zero = False
    for ev in k.replicasets.watch(NS, resource_version=rv, timeout_seconds=1):
        obj = ev["object"]
        if obj["metadata"]["name"] == first["metadata"]["name"]:
            seen_zero = seen_zero or obj["spec"]["replicas"] == 0
        elif ev["type"] == "ADDED":
            assert seen_zero
    assert seen_zero


def test_without_kubelet_pods_stay_pending_and_the_rollout_times_out() -> None:
    with APIServer(simulate=["deployments"]) as s:
        k = Clients(s)
        d = deployment(replicas=2)
        d["spec"]["progressDeadlineSeconds"] = 1
        k.deployments.create(d, namespace=NS)

        def timed_out() -> dict[str, Any] | None:
            c = condition(k.deployments.get("web", NS), "Progressing")
            return c if c and c["reason"] == "ProgressDeadlineExceeded" else None

        progressing = wait_for(timed_out, timeout=10, what="ProgressDeadlineExceeded")
        assert progressing["status"] == "False"
        assert progressing["message"].endswith("has timed out progressing.")
        d = k.deployments.get("web", NS)
        available = condition(d, "Available")
        assert available is not None
        assert (available["status"], available["reason"]) == (
            "False",
            "MinimumReplicasUnavailable",
        )
        assert d["status"]["replicas"] == 2
        assert d["status"]["unavailableReplicas"] == 2
        assert "availableReplicas" not in d["status"]
        pods = k.pods.list(NS)["items"]
        assert len(pods) == 2
        assert all(p["status"]["phase"] == "Pending" for p in pods)
        assert all("nodeName" not in p["spec"] for p in pods)
        with pytest.raises(NotFoundError):
            k.nodes.get("node-1")


def test_min_ready_seconds_delays_availability(server: APIServer, k: Clients) -> None:
    d = deployment(replicas=1)
    d["spec"]["minReadySeconds"] = 2
    k.deployments.create(d, namespace=NS)
    wait_for(
        lambda: k.deployments.get("web", NS).get("status", {}).get("readyReplicas") == 1,
        what="ready",
    )
    ready_at = time.monotonic()
    assert "availableReplicas" not in k.deployments.get("web", NS)["status"]
    wait_for(lambda: rolled_out(k, "web"), timeout=10, what="available")
    assert time.monotonic() - ready_at >= 0.9  # whole-second timestamps


def test_status_update_carries_the_revision_annotation_without_a_generation_bump() -> None:
    with APIServer() as s:
        k = Clients(s)
        k.deployments.create(deployment(), namespace=NS)
        d = k.deployments.get("web", NS)
        d["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
        d["status"] = {"observedGeneration": 1}
        out = k.deployments.update_status(d)
        assert out["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
        assert out["metadata"]["generation"] == 1


# --- kubelet ------------------------------------------------------------------------------


def bare_pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "echo"}},
        "spec": {
            "containers": [
                {
                    "name": "echo",
                    "image": "hashicorp/http-echo:1.0",
                    "ports": [{"name": "http", "containerPort": 5678}],
                }
            ],
            **spec,
        },
    }


def running(k: Clients, name: str) -> dict[str, Any] | None:
    p = k.pods.get(name, NS)
    return p if (p.get("status") or {}).get("phase") == "Running" else None


def test_kubelet_schedules_and_runs_pods_on_a_ready_node(server: APIServer, k: Clients) -> None:
    server.clear_request_log()
    k.pods.create(bare_pod("p1"), namespace=NS)
    p = wait_for(lambda: running(k, "p1"), what="running pod")
    assert server.writes() == 1
    assert p["spec"]["nodeName"] == "node-1"
    st = p["status"]
    assert st["hostIP"] == st["hostIPs"][0]["ip"]
    assert st["podIP"].startswith("10.244.")
    assert st["podIPs"] == [{"ip": st["podIP"]}]
    assert st["startTime"]
    assert [(c["type"], c["status"]) for c in st["conditions"]] == [
        ("PodReadyToStartContainers", "True"),
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    [cs] = st["containerStatuses"]
    assert cs["name"] == "echo"
    assert cs["ready"] is True and cs["started"] is True and cs["restartCount"] == 0
    assert cs["image"] == "docker.io/hashicorp/http-echo:1.0"
    assert cs["containerID"].startswith("containerd://")
    assert "startedAt" in cs["state"]["running"]
    node = k.nodes.get("node-1")
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-1"
    k.pods.create(bare_pod("p2"), namespace=NS)
    p2 = wait_for(lambda: running(k, "p2"), what="second pod")
    assert p2["status"]["podIP"] != st["podIP"]


def test_readiness_gates_and_node_selectors_are_honoured(server: APIServer, k: Clients) -> None:
    k.pods.create(
        bare_pod("gated", readinessGates=[{"conditionType": "example.com/ok"}]), namespace=NS
    )
    p = wait_for(lambda: running(k, "gated"), what="running")
    ready = next(c for c in p["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ReadinessGatesNotReady")
    p["status"]["conditions"].append({"type": "example.com/ok", "status": "True"})
    k.pods.update_status(p)

    def ready_now() -> bool:
        conds = k.pods.get("gated", NS)["status"]["conditions"]
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

    wait_for(ready_now, what="Ready once the gate is True")
    k.pods.create(bare_pod("elsewhere", nodeSelector={"disk": "ssd"}), namespace=NS)

    def unschedulable() -> dict[str, Any] | None:
        p = k.pods.get("elsewhere", NS)
        c = next(
            (c for c in p["status"].get("conditions") or [] if c["type"] == "PodScheduled"), None
        )
        return c if c and c.get("reason") == "Unschedulable" else None

    c = wait_for(unschedulable, what="Unschedulable")
    assert c["status"] == "False"
    assert "nodeName" not in k.pods.get("elsewhere", NS)["spec"]


# --- endpoints ----------------------------------------------------------------------------


def service(name: str = "echo", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"tier": "web"}},
        "spec": {
            "selector": {"app": "echo"},
            "ports": [{"name": "web", "port": 80, "targetPort": "http"}],
            **spec,
        },
    }


def test_endpoints_and_slices_follow_ready_pods(server: APIServer, k: Clients) -> None:
    k.services.create(service(), namespace=NS)
    k.pods.create(bare_pod("a"), namespace=NS)
    k.pods.create(bare_pod("b", readinessGates=[{"conditionType": "example.com/ok"}]), namespace=NS)
    a = wait_for(lambda: running(k, "a"), what="a running")
    b = wait_for(lambda: running(k, "b"), what="b running")

    def endpoints() -> dict[str, Any] | None:
        try:
            ep = k.endpoints.get("echo", NS)
        except NotFoundError:
            return None
        subsets = ep.get("subsets") or []
        return ep if subsets and subsets[0].get("notReadyAddresses") else None

    ep = wait_for(endpoints, what="Endpoints with both pods")
    assert ep["metadata"]["labels"] == {"tier": "web"}
    assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]
    [subset] = ep["subsets"]
    assert subset["ports"] == [{"name": "web", "port": 5678, "protocol": "TCP"}]
    assert subset["addresses"] == [
        {
            "ip": a["status"]["podIP"],
            "nodeName": "node-1",
            "targetRef": {"kind": "Pod", "namespace": NS, "name": "a", "uid": a["metadata"]["uid"]},
        }
    ]
    assert [x["targetRef"]["name"] for x in subset["notReadyAddresses"]] == ["b"]
    [es] = k.slices.list(NS, label_selector="kubernetes.io/service-name=echo")["items"]
    assert es["metadata"]["name"].startswith("echo-")
    assert es["metadata"]["labels"] == {
        "tier": "web",
        "kubernetes.io/service-name": "echo",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    svc = k.services.get("echo", NS)
    [ref] = es["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"]) == ("Service", svc["metadata"]["uid"], True)
    assert es["addressType"] == "IPv4"
    assert es["ports"] == [{"name": "web", "port": 5678, "protocol": "TCP"}]
    by_pod = {e["targetRef"]["name"]: e for e in es["endpoints"]}
    assert by_pod["a"]["addresses"] == [a["status"]["podIP"]]
    assert by_pod["a"]["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert by_pod["b"]["conditions"]["ready"] is False
    assert by_pod["b"]["nodeName"] == "node-1"
    # A deleted pod leaves both.
    k.pods.delete("a", NS)

    def without_a() -> bool:
        ep = k.endpoints.get("echo", NS)
        names = [
            x["targetRef"]["name"]
            for s in ep.get("subsets") or []
            for x in [*s.get("addresses", []), *s.get("notReadyAddresses", [])]
        ]
        [es] = k.slices.list(NS, label_selector="kubernetes.io/service-name=echo")["items"]
        return names == ["b"] and [e["targetRef"]["name"] for e in es["endpoints"]] == ["b"]

    wait_for(without_a, what="pod a gone from Endpoints and EndpointSlice")
    assert b["status"]["podIP"]
    # Deleting the Service deletes its Endpoints; the GC its slices.
    k.services.delete("echo", NS)
    wait_for(lambda: not k.endpoints.list(NS)["items"], what="Endpoints deleted")
    wait_for(lambda: not k.slices.list(NS)["items"], what="EndpointSlices collected")


def test_services_without_selector_are_left_alone_and_empty_ones_get_a_placeholder(
    server: APIServer, k: Clients
) -> None:
    k.services.create(service("manual", selector=None), namespace=NS)
    k.services.create(service("empty", selector={"app": "nothing"}), namespace=NS)
    es = wait_for(
        lambda: k.slices.list(NS, label_selector="kubernetes.io/service-name=empty")["items"],
        what="placeholder slice",
    )
    assert es[0]["endpoints"] is None and es[0]["ports"] is None
    ep = k.endpoints.get("empty", NS)
    assert "subsets" not in ep
    time.sleep(0.3)
    with pytest.raises(NotFoundError):
        k.endpoints.get("manual", NS)
    assert not k.slices.list(NS, label_selector="kubernetes.io/service-name=manual")["items"]


# --- lifecycle -----------------------------------------------------------------------------


def test_stop_pauses_the_simulation_and_start_resumes_it(server: APIServer, k: Clients) -> None:
    k.deployments.create(deployment(replicas=2), namespace=NS)
    wait_for(lambda: rolled_out(k, "web"), what="rollout")
    server.stop()
    rv = server.resource_version
    time.sleep(0.3)
    assert server.resource_version == rv
    server.start()
    d = k.deployments.get("web", NS)
    d2 = copy.deepcopy(d)
    d2["spec"]["replicas"] = 3
    k.deployments.update(d2)
    wait_for(
        lambda: (r := rolled_out(k, "web")) is not None and r["status"]["availableReplicas"] == 3,
        what="scaled after restart",
    )
    # Idle: the simulation writes nothing once converged.
    rv = server.resource_version
    time.sleep(0.5)
    assert server.resource_version == rv


# --- standalone server -----------------------------------------------------------------


def test_cli_simulate_flag_runs_the_named_simulations(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycontroller.testing.apiserver",
            "--port",
            str(port),
            "--kubeconfig",
            str(tmp_path / "kubeconfig"),
            "--simulate",
            "kubelet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
    )
    try:
        assert proc.stdout is not None
        assert f"http://127.0.0.1:{port}" in proc.stdout.readline()
        url = f"http://127.0.0.1:{port}/api/v1/nodes/node-1"

        def node() -> dict[str, Any] | None:
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    obj: dict[str, Any] = json.loads(resp.read())
                    return obj
            except urllib.error.HTTPError:
                return None

        n = wait_for(node, what="node-1 registered by the simulated kubelet")
        assert n["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    bad = subprocess.run(
        [sys.executable, "-m", "pycontroller.testing.apiserver", "--simulate", "pods"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        timeout=30,
    )
    assert bad.returncode == 2 and "invalid choice: 'pods'" in bad.stderr
