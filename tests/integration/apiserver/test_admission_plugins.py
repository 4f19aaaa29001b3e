"""kube-apiserver 1.32's default mutating admission plugins that change what a
controller reads back: Priority, DefaultTolerationSeconds, DefaultStorageClass,
DefaultIngressClass — over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


def priority_class(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def test_a_pod_gets_priority_and_the_default_tolerations(server: APIServer) -> None:
    code, out = request(server, "POST", PODS, pod("p"))
    assert code == 201, out
    spec = out["spec"]
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert spec["tolerations"] == [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    # An update without the admitted fields keeps them (the plugins run again).
    out["spec"].pop("priority")
    code, out = request(server, "PUT", f"{PODS}/p", out)
    assert code == 200, out
    assert out["spec"]["priority"] == 0
    assert len(out["spec"]["tolerations"]) == 2


def test_a_pod_that_tolerates_everything_gets_no_toleration(server: APIServer) -> None:
    code, out = request(server, "POST", PODS, pod("p", tolerations=[{"operator": "Exists"}]))
    assert code == 201, out
    assert out["spec"]["tolerations"] == [{"operator": "Exists"}]
    code, out = request(
        server,
        "POST",
        PODS,
        pod(
            "q",
            tolerations=[
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
        ),
    )
    assert code == 201, out
    assert [t["key"] for t in out["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert "tolerationSeconds" not in out["spec"]["tolerations"][0]


def test_priority_classes_name_the_priority(server: APIServer) -> None:
    code, classes = request(server, "GET", PRIORITY_CLASSES)
    assert code == 200
    assert {c["metadata"]["name"]: c["value"] for c in classes["items"]} == {
        "system-cluster-critical": 2000000000,
        "system-node-critical": 2000001000,
    }
    code, out = request(
        server, "POST", PODS, pod("critical", priorityClassName="system-node-critical")
    )
    assert code == 201, out
    assert out["spec"]["priority"] == 2000001000
    code, out = request(server, "POST", PODS, pod("missing", priorityClassName="nope"))
    assert code == 403, out
    assert (
        out["message"] == 'pods "missing" is forbidden: no PriorityClass with name nope was found'
    )
    code, out = request(server, "POST", PODS, pod("stated", priority=7))
    assert code == 403, out
    assert out["message"] == (
        'pods "stated" is forbidden: the integer value of priority (7) must not be provided '
        "in pod spec; priority admission controller computed 0 from the given PriorityClass name"
    )


def test_the_global_default_priority_class_names_new_pods(server: APIServer) -> None:
    body = priority_class("batch", 100, globalDefault=True, preemptionPolicy="Never")
    assert request(server, "POST", PRIORITY_CLASSES, body)[0] == 201
    code, out = request(server, "POST", PODS, pod("p"))
    assert code == 201, out
    assert out["spec"]["priorityClassName"] == "batch"
    assert out["spec"]["priority"] == 100
    assert out["spec"]["preemptionPolicy"] == "Never"
    code, out = request(server, "POST", PODS, pod("q", preemptionPolicy="PreemptLowerPriority"))
    assert code == 403, out
    assert (
        "the string value of PreemptionPolicy (PreemptLowerPriority) must not be" in out["message"]
    )
    code, out = request(
        server, "POST", PRIORITY_CLASSES, priority_class("other", 5, globalDefault=True)
    )
    assert code == 403, out
    assert out["message"] == (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass batch is '
        "already marked as default. Only one default can exist"
    )


def test_default_storage_class_and_ingress_class(server: APIServer) -> None:
    def storage_class(name: str, default: bool) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if default:
            meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": meta,
            "provisioner": "example.com/disk",
        }

    classes = "/apis/storage.k8s.io/v1/storageclasses"
    assert request(server, "POST", classes, storage_class("slow", False))[0] == 201
    pvcs = "/api/v1/namespaces/default/persistentvolumeclaims"

    def pvc(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                **spec,
            },
        }

    code, out = request(server, "POST", pvcs, pvc("before"))
    assert code == 201, out
    assert "storageClassName" not in out["spec"]  # no default class yet
    assert request(server, "POST", classes, storage_class("fast", True))[0] == 201
    code, out = request(server, "POST", pvcs, pvc("after"))
    assert code == 201, out
    assert out["spec"]["storageClassName"] == "fast"
    code, out = request(server, "POST", pvcs, pvc("none", storageClassName=""))
    assert code == 201, out
    assert out["spec"]["storageClassName"] == ""  # "" asks for no class

    ingress_classes = "/apis/networking.k8s.io/v1/ingressclasses"
    ic = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {
            "name": "nginx",
            "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
        },
        "spec": {"controller": "k8s.io/ingress-nginx"},
    }
    assert request(server, "POST", ingress_classes, ic)[0] == 201
    ingresses = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
    backend = {"service": {"name": "web", "port": {"number": 80}}}

    def ingress(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name}
        if annotations:
            meta["annotations"] = annotations
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": meta,
            "spec": {"defaultBackend": backend},
        }

    code, out = request(server, "POST", ingresses, ingress("i"))
    assert code == 201, out
    assert out["spec"]["ingressClassName"] == "nginx"
    code, out = request(
        server, "POST", ingresses, ingress("legacy", {"kubernetes.io/ingress.class": "other"})
    )
    assert code == 201, out
    assert "ingressClassName" not in out["spec"]


def _owned_spec_fields(obj: dict[str, Any]) -> set[str]:
    owned: set[str] = set()
    for entry in obj["metadata"].get("managedFields") or []:
        owned |= set((entry.get("fieldsV1") or {}).get("f:spec") or {})
    return owned


def test_fields_admission_adds_are_owned_by_no_manager(server: APIServer) -> None:
    """kube's handlers run the field manager before mutating admission: what
    admission adds is not the writer's, so an apply that leaves it out keeps it."""
    code, out = request(server, "POST", f"{PODS}?fieldManager=creator", pod("created"))
    assert code == 201, out
    owned = _owned_spec_fields(out)
    assert "f:containers" in owned
    assert not owned & {"f:tolerations", "f:priority", "f:preemptionPolicy"}, owned
    applied = pod("applied")
    for _ in range(2):
        code, out = request(
            server,
            "PATCH",
            f"{PODS}/applied?fieldManager=applier",
            applied,
            "application/apply-patch+yaml",
        )
        assert code in (200, 201), out
        assert out["spec"]["priority"] == 0
        assert len(out["spec"]["tolerations"]) == 2
        assert not _owned_spec_fields(out) & {"f:tolerations", "f:priority"}
