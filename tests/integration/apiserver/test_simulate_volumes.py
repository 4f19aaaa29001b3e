"""The simulated volume binding (``APIServer(simulate=["volumes", "kubelet"])``)
over HTTP: kind's default StorageClass, dynamic provisioning under
WaitForFirstConsumer and Immediate, static volumes, reclaim policies, and the
scheduler holding pods until their claims are bound."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller import ResourceClient
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer, wait_for

NS = "default"


class Clients:
    def __init__(self, server: APIServer) -> None:
        api = server.api_client()
        self.server = server
        self.claims = ResourceClient(api, "", "v1", "persistentvolumeclaims")
        self.volumes = ResourceClient(api, "", "v1", "persistentvolumes", namespaced=False)
        self.classes = ResourceClient(api, "storage.k8s.io", "v1", "storageclasses", False)
        self.pods = ResourceClient(api, "", "v1", "pods")
        self.events = ResourceClient(api, "", "v1", "events")

    def claim(self, name: str) -> dict[str, Any]:
        return self.claims.get(name, NS)

    def bound(self, name: str, timeout: float = 10) -> dict[str, Any]:
        wait_for(
            lambda: self.claim(name)["status"].get("phase") == "Bound",
            timeout=timeout,
            what=f"claim {name} Bound",
        )
        return self.claim(name)

    def reasons(self, name: str) -> list[str]:
        return [
            e["reason"]
            for e in self.events.list(NS)["items"]
            if e["involvedObject"].get("name") == name
        ]


@pytest.fixture
def k() -> Iterator[Clients]:
    with APIServer(simulate=["volumes", "kubelet"]) as server:
        clients = Clients(server)
        wait_for(lambda: clients.classes.list()["items"], what="the default StorageClass")
        yield clients


def claim(name: str, size: str = "1Gi", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def pod(name: str, *claims: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "main", "image": "busybox:1.36"}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ],
        },
    }


def test_kinds_default_class_waits_for_the_first_consumer(k: Clients) -> None:
    (sc,) = k.classes.list()["items"]
    assert sc["metadata"]["name"] == "standard"
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert (sc["provisioner"], sc["volumeBindingMode"]) == (
        "rancher.io/local-path",
        "WaitForFirstConsumer",
    )

    created = k.claims.create(claim("data"), namespace=NS)
    assert created["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission
    wait_for(lambda: "WaitForFirstConsumer" in k.reasons("data"), what="the waiting event")
    assert k.claim("data")["status"]["phase"] == "Pending"
    assert k.volumes.list()["items"] == []

    k.pods.create(pod("user", "data"), namespace=NS)
    bound = k.bound("data")
    uid = bound["metadata"]["uid"]
    ann = bound["metadata"]["annotations"]
    assert ann["volume.kubernetes.io/selected-node"] == "node-1"
    assert ann["volume.kubernetes.io/storage-provisioner"] == "rancher.io/local-path"
    assert ann["pv.kubernetes.io/bind-completed"] == "yes"
    assert ann["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert bound["spec"]["volumeName"] == f"pvc-{uid}"
    assert bound["status"]["capacity"] == {"storage": "1Gi"}
    assert bound["status"]["accessModes"] == ["ReadWriteOnce"]

    pv = k.volumes.get(f"pvc-{uid}")
    assert pv["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["uid"] == uid
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert pv["spec"]["storageClassName"] == "standard"
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == (
        "rancher.io/local-path"
    )
    term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["values"] == ["node-1"]

    # The pod was bound only once its claim was.
    wait_for(lambda: k.pods.get("user", NS)["spec"].get("nodeName") == "node-1", what="bound")
    reasons = k.reasons("data")
    assert reasons.index("WaitForFirstConsumer") < reasons.index("ExternalProvisioning")
    assert "ProvisioningSucceeded" in reasons


def test_a_pod_whose_claim_is_missing_is_unschedulable(k: Clients) -> None:
    k.pods.create(pod("orphan", "nowhere"), namespace=NS)

    def message() -> str:
        for c in k.pods.get("orphan", NS)["status"].get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return str(c["message"])
        return ""

    wait_for(message, what="PodScheduled=False")
    assert message() == (
        '0/1 nodes are available: persistentvolumeclaim "nowhere" not found. preemption: '
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    k.claims.create(claim("nowhere"), namespace=NS)
    wait_for(lambda: k.pods.get("orphan", NS)["spec"].get("nodeName"), what="scheduled at last")


def test_immediate_class_provisions_at_once_and_delete_reclaims(k: Clients) -> None:
    k.classes.create(
        {
            "metadata": {"name": "fast"},
            "provisioner": "example.com/fast",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
        }
    )
    k.claims.create(claim("quick", "2Gi", storageClassName="fast"), namespace=NS)
    bound = k.bound("quick")
    name = bound["spec"]["volumeName"]
    assert k.volumes.get(name)["spec"]["capacity"] == {"storage": "2Gi"}
    assert "volume.kubernetes.io/selected-node" not in bound["metadata"]["annotations"]

    k.claims.delete("quick", NS)

    def gone() -> bool:
        try:
            k.volumes.get(name)
        except NotFoundError:
            return True
        return False

    wait_for(gone, what="the provisioned volume deleted with its claim")


def test_static_volumes_bind_the_smallest_match_and_retain_is_released(k: Clients) -> None:
    def volume(name: str, size: str, **labels: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "manual",
                "hostPath": {"path": f"/data/{name}"},
            },
        }

    k.volumes.create(volume("big", "10Gi"))
    k.volumes.create(volume("small", "2Gi"))
    k.volumes.create(volume("tiny", "500Mi"))
    wait_for(
        lambda: all(v["status"].get("phase") == "Available" for v in k.volumes.list()["items"]),
        what="every volume Available",
    )
    k.claims.create(claim("want", "1Gi", storageClassName="manual"), namespace=NS)
    assert k.bound("want")["spec"]["volumeName"] == "small"
    pv = k.volumes.get("small")
    assert pv["status"]["phase"] == "Bound"
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"

    selected = claim("picky", "1Gi", storageClassName="manual")
    selected["spec"]["selector"] = {"matchLabels": {"tier": "gold"}}
    k.claims.create(selected, namespace=NS)
    k.volumes.create(volume("gold", "20Gi", tier="gold"))
    assert k.bound("picky")["spec"]["volumeName"] == "gold"

    k.claims.delete("want", NS)
    wait_for(
        lambda: k.volumes.get("small")["status"].get("phase") == "Released",
        what="a Retain volume Released",
    )


def test_a_claim_naming_its_volume_is_bound_to_it(k: Clients) -> None:
    k.volumes.create(
        {
            "metadata": {"name": "mine"},
            "spec": {
                "capacity": {"storage": "5Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "hostPath": {"path": "/data/mine"},
            },
        }
    )
    k.claims.create(claim("named", "1Gi", storageClassName="", volumeName="mine"), namespace=NS)
    bound = k.bound("named")
    assert bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert "pv.kubernetes.io/bound-by-controller" not in bound["metadata"]["annotations"]
    assert bound["status"]["capacity"] == {"storage": "5Gi"}


def test_without_a_class_or_volume_the_claim_waits(k: Clients) -> None:
    k.claims.create(claim("lost", storageClassName=""), namespace=NS)
    wait_for(lambda: "FailedBinding" in k.reasons("lost"), what="FailedBinding")
    assert k.claim("lost")["status"]["phase"] == "Pending"
