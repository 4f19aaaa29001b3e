"""Simulated StatefulSet and DaemonSet controllers
(``APIServer(simulate=["statefulsets", "daemonsets", "kubelet"])``) over HTTP:
ordered and parallel pods, PVCs and their retention policy, revisions and
rolling updates, garbage collection, and daemon pods per Node with the
affinity, tolerations and status kube writes."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pycontroller import ResourceClient
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer, wait_for

NS = "default"
GATE = "example.com/ready"
KUBECTL = shutil.which("kubectl")


class Clients:
    def __init__(self, server: APIServer) -> None:
        api = server.api_client()
        self.sts = ResourceClient(api, "apps", "v1", "statefulsets")
        self.ds = ResourceClient(api, "apps", "v1", "daemonsets")
        self.revisions = ResourceClient(api, "apps", "v1", "controllerrevisions")
        self.pods = ResourceClient(api, "", "v1", "pods")
        self.pvcs = ResourceClient(api, "", "v1", "persistentvolumeclaims")
        self.nodes = ResourceClient(api, "", "v1", "nodes", namespaced=False)
        self.events = ResourceClient(api, "", "v1", "events")

    def pod_names(self, prefix: str) -> list[str]:
        return sorted(
            p["metadata"]["name"]
            for p in self.pods.list(NS)["items"]
            if p["metadata"]["name"].startswith(prefix)
        )

    def pvc_names(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in self.pvcs.list(NS)["items"])

    def make_ready(self, name: str) -> None:
        """Set the readiness-gate condition the template asks for."""
        cond = {"type": GATE, "status": "True"}
        self.pods.patch(
            name, {"status": {"conditions": [cond]}}, NS, "strategic", subresource="status"
        )


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer(simulate=["statefulsets", "daemonsets", "kubelet"]) as s:
        yield s


@pytest.fixture
def k(server: APIServer) -> Clients:
    return Clients(server)


def statefulset(
    name: str = "db", replicas: int = 3, *, gated: bool = False, claims: bool = False
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "postgres:16"}]}
    if gated:
        pod_spec["readinessGates"] = [{"conditionType": GATE}]
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
    }
    if claims:
        spec["volumeClaimTemplates"] = [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": spec,
    }


def until(cond: Callable[[], dict[str, Any] | None], what: str) -> dict[str, Any]:
    """``wait_for`` for a condition that returns the object once it holds."""
    out = wait_for(cond, what=what)
    assert out is not None
    return out


def when(
    get: Callable[[], dict[str, Any]], pred: Callable[[dict[str, Any]], bool]
) -> Callable[[], dict[str, Any] | None]:
    """A condition: ``get()`` once ``pred`` holds for it."""

    def cond() -> dict[str, Any] | None:
        obj = get()
        return obj if pred(obj) else None

    return cond


def set_image(client: ResourceClient, name: str, image: str) -> None:
    """``kubectl set image``: a strategic merge patch of the container."""
    containers = [{"name": "c", "image": image}]
    client.patch(
        name, {"spec": {"template": {"spec": {"containers": containers}}}}, NS, "strategic"
    )


def rolled_out(k: Clients, name: str) -> dict[str, Any] | None:
    """The StatefulSet once every replica is ready at the update revision."""
    s = k.sts.get(name, NS)
    st = s.get("status") or {}
    n = s["spec"]["replicas"]
    if (
        st.get("observedGeneration", 0) >= s["metadata"]["generation"]
        and st.get("readyReplicas", 0) == n
        and st.get("updatedReplicas", 0) == n
        and st.get("replicas") == n
        and st.get("currentRevision") == st.get("updateRevision")
    ):
        return s
    return None


def deletion_order(k: Clients, rv: str, prefix: str) -> list[str]:
    """Pod names in the order they got a deletionTimestamp since ``rv``."""
    order: list[str] = []
    for ev in k.pods.watch(NS, resource_version=rv, timeout_seconds=1):
        meta = ev["object"]["metadata"]
        name = meta.get("name", "")
        if name.startswith(prefix) and meta.get("deletionTimestamp") and name not in order:
            order.append(name)
    return order


# --- StatefulSets --------------------------------------------------------------------


def test_ordered_ready_creates_one_pod_at_a_time_with_kube_identity(
    server: APIServer, k: Clients
) -> None:
    server.clear_request_log()
    created = k.sts.create(statefulset(gated=True), namespace=NS)
    # db-0 is Running but not Ready (its readiness gate is unset): db-1 waits.
    wait_for(lambda: k.sts.get("db", NS)["status"]["replicas"] == 1, what="db-0 counted")
    assert k.pod_names("db-") == ["db-0"]
    k.make_ready("db-0")
    wait_for(lambda: k.pod_names("db-") == ["db-0", "db-1"], what="db-1 after db-0 is ready")
    k.make_ready("db-1")
    wait_for(lambda: "db-2" in k.pod_names("db-"), what="db-2")
    k.make_ready("db-2")
    s = until(lambda: rolled_out(k, "db"), what="all ready")
    assert server.writes() == 1 + 3  # the create and the three status patches
    st = s["status"]
    revision = st["currentRevision"]
    assert revision.startswith("db-")
    assert st == {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "currentRevision": revision,
        "updateRevision": revision,
        "collisionCount": 0,
        "availableReplicas": 3,
    }
    pod = k.pods.get("db-1", NS)
    assert pod["metadata"]["generateName"] == "db-"
    assert pod["metadata"]["labels"] == {
        "app": "db",
        "controller-revision-hash": revision,
        "statefulset.kubernetes.io/pod-name": "db-1",
        "apps.kubernetes.io/pod-index": "1",
    }
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("db-1", "db")
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": "db",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    [cr] = k.revisions.list(NS)["items"]
    assert cr["metadata"]["name"] == revision
    assert cr["revision"] == 1
    assert cr["metadata"]["labels"] == {
        "app": "db",
        "controller.kubernetes.io/hash": revision.removeprefix("db-"),
    }
    assert cr["data"]["spec"]["template"]["$patch"] == "replace"
    for obj in (cr, k.sts.get("db", NS)):
        managers = {m["manager"] for m in obj["metadata"]["managedFields"]}
        assert "kube-controller-manager" in managers
    assert {m["manager"] for m in cr["metadata"]["managedFields"]} == {"kube-controller-manager"}
    events = [e for e in k.events.list(NS)["items"] if e["involvedObject"]["name"] == "db"]
    assert [e["message"] for e in events if e["reason"] == "SuccessfulCreate"] == [
        f"create Pod db-{i} in StatefulSet db successful" for i in range(3)
    ]
    assert {e["source"]["component"] for e in events} == {"statefulset-controller"}


def test_scale_down_deletes_from_the_highest_ordinal_one_at_a_time(
    server: APIServer, k: Clients
) -> None:
    sts = statefulset(replicas=4)
    sts["spec"]["ordinals"] = {"start": 5}
    k.sts.create(sts, namespace=NS)
    s = until(lambda: rolled_out(k, "db"), what="rollout")
    assert k.pod_names("db-") == ["db-5", "db-6", "db-7", "db-8"]
    rv = s["metadata"]["resourceVersion"]
    k.sts.patch("db", {"spec": {"replicas": 1}}, NS)
    wait_for(lambda: k.pod_names("db-") == ["db-5"] and rolled_out(k, "db"), what="scale down")
    assert deletion_order(k, rv, "db-") == ["db-8", "db-7", "db-6"]
    # Each deletion waited for the previous pod to be gone.
    gone: list[str] = []
    for ev in k.pods.watch(NS, resource_version=rv, timeout_seconds=1):
        meta = ev["object"]["metadata"]
        if ev["type"] == "DELETED":
            gone.append(meta["name"])
        elif meta.get("deletionTimestamp") and meta["name"] not in gone:
            expected = {"db-7": "db-8", "db-6": "db-7"}.get(meta["name"])
            assert expected is None or expected in gone
    assert gone == ["db-8", "db-7", "db-6"]


def test_parallel_creates_every_pod_without_waiting(server: APIServer, k: Clients) -> None:
    sts = statefulset(gated=True)
    sts["spec"]["podManagementPolicy"] = "Parallel"
    k.sts.create(sts, namespace=NS)
    wait_for(lambda: k.pod_names("db-") == ["db-0", "db-1", "db-2"], what="all pods at once")
    s = until(
        when(lambda: k.sts.get("db", NS), lambda x: bool(x["status"]["replicas"] == 3)),
        what="status",
    )
    assert s["status"].get("readyReplicas", 0) == 0
    assert s["status"]["availableReplicas"] == 0


def test_claims_from_templates_and_when_scaled_delete(server: APIServer, k: Clients) -> None:
    sts = statefulset(claims=True)
    sts["spec"]["persistentVolumeClaimRetentionPolicy"] = {
        "whenDeleted": "Retain",
        "whenScaled": "Delete",
    }
    k.sts.create(sts, namespace=NS)
    until(lambda: rolled_out(k, "db"), what="rollout")
    assert k.pvc_names() == ["data-db-0", "data-db-1", "data-db-2"]
    pvc = k.pvcs.get("data-db-1", NS)
    assert pvc["metadata"]["labels"] == {"app": "db"}
    assert pvc["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
    assert "ownerReferences" not in pvc["metadata"]  # Retain on deletion, not scaled down
    assert {m["manager"] for m in pvc["metadata"]["managedFields"]} == {"kube-controller-manager"}
    pod = k.pods.get("db-1", NS)
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}} in pod["spec"][
        "volumes"
    ]
    k.sts.patch("db", {"spec": {"replicas": 1}}, NS)
    # The scaled-down pods become their claims' controllers, so the garbage
    # collector deletes the claims with the pods.
    wait_for(lambda: k.pvc_names() == ["data-db-0"], what="scaled-down claims collected")
    messages = {e["message"] for e in k.events.list(NS)["items"]}
    assert "create Claim data-db-2 Pod db-2 in StatefulSet db success" in messages
    # Scaling back up recreates them.
    k.sts.patch("db", {"spec": {"replicas": 2}}, NS)
    until(lambda: rolled_out(k, "db"), what="scale up")
    assert k.pvc_names() == ["data-db-0", "data-db-1"]
    # Settled: a pass writes nothing (claims' owners are as the policy says).
    assert server.simulator.sync_once() == 0
    # Retain on deletion: the claims outlive the set.
    k.sts.delete("db", NS)
    wait_for(lambda: not k.pod_names("db-"), what="pods collected")
    assert k.pvc_names() == ["data-db-0", "data-db-1"]


def test_min_ready_seconds_delays_available_replicas(server: APIServer, k: Clients) -> None:
    sts = statefulset(replicas=1)
    # Long enough that a loaded machine still sees the ready-not-available step.
    sts["spec"]["minReadySeconds"] = 3
    k.sts.create(sts, namespace=NS)
    s = until(
        when(lambda: k.sts.get("db", NS), lambda x: x["status"].get("readyReplicas") == 1),
        what="ready",
    )
    assert s["status"]["availableReplicas"] == 0
    until(
        when(lambda: k.sts.get("db", NS), lambda x: x["status"]["availableReplicas"] == 1),
        what="available after minReadySeconds",
    )


def test_when_deleted_delete_makes_the_set_the_claims_controller(
    server: APIServer, k: Clients
) -> None:
    sts = statefulset(replicas=2, claims=True)
    sts["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete"}
    created = k.sts.create(sts, namespace=NS)
    until(lambda: rolled_out(k, "db"), what="rollout")

    def owners() -> list[Any]:
        refs = [p["metadata"].get("ownerReferences") for p in k.pvcs.list(NS)["items"]]
        return refs if len(refs) == 2 and all(refs) else []

    for refs in wait_for(owners, what="claim owners"):
        assert refs == [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "name": "db",
                "uid": created["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    k.sts.delete("db", NS)
    wait_for(lambda: not k.pod_names("db-") and not k.pvc_names(), what="pods and claims")
    wait_for(lambda: not k.revisions.list(NS)["items"], what="revisions collected")


def test_rolling_update_in_reverse_order_with_partition(server: APIServer, k: Clients) -> None:
    k.sts.create(statefulset(), namespace=NS)
    s = until(lambda: rolled_out(k, "db"), what="rollout")
    first = s["status"]["currentRevision"]
    rv = s["metadata"]["resourceVersion"]
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    template = {"spec": {"containers": [{"name": "c", "image": "postgres:17"}]}}
    k.sts.patch("db", {"spec": {"updateStrategy": strategy, "template": template}}, NS, "strategic")

    def partitioned() -> dict[str, Any] | None:
        x = k.sts.get("db", NS)
        st = x["status"]
        ok = st.get("updatedReplicas") == 2 and st.get("readyReplicas") == 3
        return x if ok and st["observedGeneration"] == 2 else None

    s = until(partitioned, what="partitioned rollout")
    second = s["status"]["updateRevision"]
    assert second != first and s["status"]["currentRevision"] == first
    assert s["status"]["currentReplicas"] == 1
    images = {
        p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in k.pods.list(NS)["items"]
    }
    assert images == {"db-0": "postgres:16", "db-1": "postgres:17", "db-2": "postgres:17"}
    assert deletion_order(k, rv, "db-") == ["db-2", "db-1"]
    revs = {r["metadata"]["name"]: r["revision"] for r in k.revisions.list(NS)["items"]}
    assert revs == {first: 1, second: 2}
    k.sts.patch("db", {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}, NS)
    s = until(lambda: rolled_out(k, "db"), what="full rollout")
    assert s["status"]["currentRevision"] == second
    assert s["status"]["currentReplicas"] == 3
    labels = {p["metadata"]["labels"]["controller-revision-hash"] for p in k.pods.list(NS)["items"]}
    assert labels == {second}
    # Back to the first template: its revision is renumbered, not recreated.
    set_image(k.sts, "db", "postgres:16")
    s = until(lambda: rolled_out(k, "db"), what="rollback")
    assert s["status"]["updateRevision"] == first
    revs = {r["metadata"]["name"]: r["revision"] for r in k.revisions.list(NS)["items"]}
    assert revs == {first: 3, second: 2}


def test_on_delete_replaces_pods_only_when_deleted(server: APIServer, k: Clients) -> None:
    sts = statefulset(replicas=2)
    sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
    k.sts.create(sts, namespace=NS)
    s = until(lambda: rolled_out(k, "db"), what="rollout")
    set_image(k.sts, "db", "postgres:17")
    s = until(
        when(lambda: k.sts.get("db", NS), lambda x: bool(x["status"]["observedGeneration"] == 2)),
        what="update observed",
    )
    assert s["status"]["updateRevision"] != s["status"]["currentRevision"]
    assert s["status"]["currentReplicas"] == 2 and "updatedReplicas" not in s["status"]
    old_uid = k.pods.get("db-1", NS)["metadata"]["uid"]
    k.pods.delete("db-1", NS)

    def replaced() -> dict[str, Any] | None:
        try:
            p = k.pods.get("db-1", NS)
        except NotFoundError:
            return None
        ready = (p.get("status") or {}).get("phase") == "Running"
        return p if p["metadata"]["uid"] != old_uid and ready else None

    pod = until(replaced, what="db-1 recreated")
    assert pod["spec"]["containers"][0]["image"] == "postgres:17"
    assert k.pods.get("db-0", NS)["spec"]["containers"][0]["image"] == "postgres:16"
    s = until(
        when(lambda: k.sts.get("db", NS), lambda x: bool(x["status"].get("updatedReplicas") == 1)),
        what="status",
    )
    assert s["status"]["currentReplicas"] == 1


# --- DaemonSets ----------------------------------------------------------------------


def daemonset(name: str = "agent", image: str = "agent:1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "containers": [{"name": "c", "image": image}],
                },
            },
        },
    }


def node(
    name: str, labels: dict[str, str], taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
    }
    if taints:
        obj["spec"] = {"taints": taints}
    return obj


def daemon_pods(k: Clients) -> dict[str, dict[str, Any]]:
    """Daemon pods by the node their affinity names."""
    out = {}
    for p in k.pods.list(NS)["items"]:
        if p["metadata"]["name"].startswith("agent-") and not p["metadata"].get(
            "deletionTimestamp"
        ):
            terms = p["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"]
            out[terms[0]["matchFields"][0]["values"][0]] = p
    return out


def test_daemonset_pod_per_eligible_node_with_kube_affinity_tolerations_and_status(
    server: APIServer, k: Clients
) -> None:
    wait_for(lambda: k.nodes.list()["items"], what="node-1 registered")
    linux = {"kubernetes.io/os": "linux"}
    k.nodes.create(node("node-2", linux))
    k.nodes.create(node("node-3", {"kubernetes.io/os": "windows"}))
    k.nodes.create(
        node("node-4", linux, [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    )
    created = k.ds.create(daemonset(), namespace=NS)

    def settled() -> dict[str, Any] | None:
        x = k.ds.get("agent", NS)
        st = x["status"]
        return x if st.get("numberReady") == 1 and st.get("currentNumberScheduled") == 2 else None

    d = until(settled, what="daemon pods")
    assert d["status"] == {
        "currentNumberScheduled": 2,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 2,
        "numberReady": 1,
        "observedGeneration": 1,
        "updatedNumberScheduled": 2,
        "numberAvailable": 1,
        "numberUnavailable": 1,
    }
    pods = daemon_pods(k)
    assert sorted(pods) == ["node-1", "node-2"]
    [cr] = k.revisions.list(NS)["items"]
    h = cr["metadata"]["labels"]["controller-revision-hash"]
    assert cr["metadata"]["name"] == f"agent-{h}" and cr["revision"] == 1
    p1, p2 = pods["node-1"], pods["node-2"]
    assert p1["metadata"]["generateName"] == "agent-"
    # pod-template-generation: from the annotation kube-apiserver writes.
    assert p1["metadata"]["labels"] == {
        "app": "agent",
        "controller-revision-hash": h,
        "pod-template-generation": "1",
    }
    assert p1["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert p1["spec"]["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                        ]
                    }
                ]
            }
        }
    }
    assert [(t["key"], t["effect"]) for t in p1["spec"]["tolerations"]] == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    assert all(t["operator"] == "Exists" for t in p1["spec"]["tolerations"])
    # The scheduler binds node-1's pod; node-2 has no kubelet: its pod waits.
    assert (p1["spec"]["nodeName"], p1["status"]["phase"]) == ("node-1", "Running")
    assert "nodeName" not in p2["spec"] and p2["status"]["phase"] == "Pending"
    managers = {m["manager"] for m in d["metadata"]["managedFields"]}
    assert "kube-controller-manager" in managers
    # A toleration admits node-4; node-2 leaving deletes its pod.
    tolerations = [{"key": "dedicated", "operator": "Exists"}]
    k.ds.patch("agent", {"spec": {"template": {"spec": {"tolerations": tolerations}}}}, NS)
    wait_for(lambda: sorted(daemon_pods(k)) == ["node-1", "node-2", "node-4"], what="node-4")
    k.nodes.delete("node-2")
    wait_for(lambda: sorted(daemon_pods(k)) == ["node-1", "node-4"], what="node-2 pod deleted")
    d = until(
        when(
            lambda: k.ds.get("agent", NS),
            lambda x: bool(x["status"]["desiredNumberScheduled"] == 2),
        ),
        what="status",
    )
    k.ds.delete("agent", NS)
    wait_for(lambda: not daemon_pods(k), what="daemon pods collected")


def test_daemonset_rolling_update_replaces_pods_and_records_revisions(
    server: APIServer, k: Clients
) -> None:
    k.ds.create(daemonset(), namespace=NS)

    def done() -> dict[str, Any] | None:
        x = k.ds.get("agent", NS)
        st = x["status"]
        ok = (
            st.get("observedGeneration") == x["metadata"]["generation"]
            and st.get("updatedNumberScheduled") == st["desiredNumberScheduled"] == 1
            and st.get("numberAvailable") == 1
        )
        return x if ok else None

    until(done, what="first rollout")
    [first] = k.revisions.list(NS)["items"]
    old = daemon_pods(k)["node-1"]
    set_image(k.ds, "agent", "agent:2")
    wait_for(
        lambda: done() and daemon_pods(k)["node-1"]["metadata"]["uid"] != old["metadata"]["uid"],
        what="update",
    )
    new = daemon_pods(k)["node-1"]
    assert new["spec"]["containers"][0]["image"] == "agent:2"
    revs = {r["metadata"]["name"]: r["revision"] for r in k.revisions.list(NS)["items"]}
    second = f"agent-{new['metadata']['labels']['controller-revision-hash']}"
    assert revs == {first["metadata"]["name"]: 1, second: 2}


# --- kubectl -------------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_rollout_status_statefulset(server: APIServer, k: Clients, tmp_path: Path) -> None:
    assert KUBECTL is not None
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    k.sts.create(statefulset(claims=True), namespace=NS)
    done = subprocess.run(
        [
            KUBECTL,
            "--kubeconfig",
            kubeconfig,
            "rollout",
            "status",
            "statefulset/db",
            "--timeout=30s",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "partitioned roll out complete: 3 new pods have been updated" in done.stdout
