"""A DaemonSet's template generation, as apps/v1 shows it: the
``deprecated.daemonset.template.generation`` annotation kube-apiserver
writes (1 on create, +1 for each change of the pod template, never what a
client writes on update), and the ``pod-template-generation`` label the
DaemonSet controller puts on its pods from it."""

from __future__ import annotations

from typing import Any

from support.http import request

from pycontroller.testing import APIServer, wait_for

DS = "/apis/apps/v1/namespaces/default/daemonsets"
KEY = "deprecated.daemonset.template.generation"


def daemonset(name: str, image: str = "nginx:1", **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def generation(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["annotations"][KEY])


def test_the_template_generation_annotation(apiserver: APIServer) -> None:
    code, ds = request(apiserver, "POST", DS, daemonset("a"))
    assert code == 201, ds
    assert generation(ds) == "1"
    merge = "application/merge-patch+json"
    code, ds = request(apiserver, "PATCH", f"{DS}/a", {"spec": {"minReadySeconds": 5}}, merge)
    assert code == 200 and generation(ds) == "1", ds
    image = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}
    code, ds = request(apiserver, "PATCH", f"{DS}/a", image, merge)
    assert code == 200 and generation(ds) == "2", ds
    assert ds["metadata"]["generation"] == 3
    # A client cannot set it on update ...
    code, ds = request(
        apiserver, "PATCH", f"{DS}/a", {"metadata": {"annotations": {KEY: "9"}}}, merge
    )
    assert code == 200 and generation(ds) == "2", ds
    # ... but may start from its own on create.
    code, ds = request(apiserver, "POST", DS, daemonset("b", **{KEY: "5"}))
    assert code == 201 and generation(ds) == "5", ds


def test_daemon_pods_carry_the_generation(apiserver_factory: Any) -> None:
    server = apiserver_factory(simulate=["daemonsets", "kubelet"])
    code, ds = request(server, "POST", DS, daemonset("d"))
    assert code == 201, ds

    def labels() -> list[str]:
        _, pods = request(server, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dd")
        return [p["metadata"]["labels"].get("pod-template-generation", "") for p in pods["items"]]

    wait_for(lambda: labels() == ["1"], 10, what="a daemon pod of generation 1")
