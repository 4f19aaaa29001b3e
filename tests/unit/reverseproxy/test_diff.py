"""controllers.reverseproxy.diff: only owned fields are compared and written."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from controllers.reverseproxy.diff import drifted, overlay, quantity
from controllers.reverseproxy.resources import desired_children

OBJ = {
    "apiVersion": "nginx.lin2ur.cn/v1",
    "kind": "ReverseProxy",
    "metadata": {"name": "p", "namespace": "d", "uid": "u1"},
    "spec": {
        "proxyPass": "http://up",
        "nodeSelector": {"disk": "ssd"},
        "env": [{"name": "A", "value": "1"}],
        "resources": {"limits": {"cpu": "0.5", "memory": "1Gi"}},
    },
}


def children() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    cm, deploy, svc = desired_children(copy.deepcopy(OBJ), nginx_image="nginx:1.25")
    return cm, deploy, svc


def as_server_stores(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with what the API server and other actors add to it."""
    live = copy.deepcopy(obj)
    live["metadata"].update(
        uid="child", resourceVersion="7", labels={**obj["metadata"]["labels"], "foreign": "x"}
    )
    if obj["kind"] == "Deployment":
        live["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
        live["spec"].update(strategy={"type": "RollingUpdate"}, revisionHistoryLimit=10)
        tpl = live["spec"]["template"]
        tpl["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "now"}
        tpl["spec"].update(dnsPolicy="ClusterFirst", restartPolicy="Always")
        tpl["spec"]["volumes"][0]["configMap"]["defaultMode"] = 420
        container = tpl["spec"]["containers"][0]
        container.update(
            imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log"
        )
        container["livenessProbe"]["httpGet"]["scheme"] = "HTTP"
        container["env"][0]["valueFrom"] = None
        del container["env"][0]["valueFrom"]
        container["resources"] = {
            "limits": {"cpu": "500m", "memory": "1Gi"},
            "requests": {"cpu": "500m", "memory": "1024Mi"},
        }
        live["status"] = {"replicas": 1}
    if obj["kind"] == "Service":
        live["spec"].update(clusterIP="10.0.0.1", clusterIPs=["10.0.0.1"], sessionAffinity="None")
    return live


def test_server_defaults_and_foreign_fields_are_not_drift() -> None:
    for child in children():
        live = as_server_stores(child)
        assert not drifted(child, live), child["kind"]
        assert overlay(child, live) == live


@pytest.mark.parametrize(
    ("kind", "edit"),
    [
        ("ConfigMap", lambda o: o["data"].update({"nginx.conf": "hacked"})),
        ("ConfigMap", lambda o: o["data"].update({"extra": "key"})),
        ("ConfigMap", lambda o: o["metadata"]["labels"].pop("nginx-operator/configsum")),
        ("Service", lambda o: o["spec"]["ports"][0].update(port=81)),
        ("Service", lambda o: o["spec"]["selector"].update(extra="x")),
        ("Service", lambda o: o["spec"].update(type="NodePort")),
        ("Deployment", lambda o: o["spec"].update(replicas=5)),
        (
            "Deployment",
            lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="evil"),
        ),
        (
            "Deployment",
            lambda o: o["spec"]["template"]["spec"]["containers"].append({"name": "side"}),
        ),
        (
            "Deployment",
            lambda o: o["spec"]["template"]["spec"].update(nodeSelector={"disk": "hdd"}),
        ),
        (
            "Deployment",
            lambda o: o["spec"]["template"]["spec"].update(affinity={"podAffinity": {}}),
        ),
        (
            "Deployment",
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "B"}),
        ),
        (
            "Deployment",
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].update(
                cpu="2"
            ),
        ),
        ("Deployment", lambda o: o["spec"]["template"]["metadata"]["labels"].update(extra="x")),
        ("Deployment", lambda o: o["metadata"].update(ownerReferences=[])),
    ],
)
def test_any_owned_drift_is_seen_and_overlay_repairs_only_it(kind: str, edit: Any) -> None:
    child = next(c for c in children() if c["kind"] == kind)
    clean = as_server_stores(child)
    live = copy.deepcopy(clean)
    edit(live)
    assert drifted(child, live)
    repaired = overlay(child, live)
    assert not drifted(child, repaired)
    assert overlay(child, repaired) == repaired  # idempotent
    # what others set survives the repair
    assert repaired["metadata"]["labels"]["foreign"] == "x"
    assert repaired["metadata"]["resourceVersion"] == "7"
    if kind == "Deployment":
        assert repaired["spec"]["template"]["metadata"]["annotations"] == {
            "kubectl.kubernetes.io/restartedAt": "now"
        }
        assert repaired["spec"]["strategy"] == {"type": "RollingUpdate"}
        assert repaired["status"] == {"replicas": 1}
    if kind == "Service":
        assert repaired["spec"]["clusterIP"] == "10.0.0.1"


def test_fields_dropped_from_the_spec_are_removed() -> None:
    _, old, _ = children()
    live = as_server_stores(old)
    spec = copy.deepcopy(OBJ)
    del spec["spec"]["nodeSelector"], spec["spec"]["env"], spec["spec"]["resources"]
    _, new, _ = desired_children(spec, nginx_image="nginx:1.25")
    assert drifted(new, live)
    pod = overlay(new, live)["spec"]["template"]["spec"]
    assert "nodeSelector" not in pod
    assert "env" not in pod["containers"][0]
    assert pod["containers"][0]["resources"] == {}


def test_foreign_owner_references_are_kept() -> None:
    cm, _, _ = children()
    live = as_server_stores(cm)
    other = {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "other"}
    live["metadata"]["ownerReferences"] = [other, *live["metadata"]["ownerReferences"]]
    assert not drifted(cm, live)


def test_quantity() -> None:
    assert quantity("500m") == quantity("0.5") == Decimal("0.5")
    assert quantity("1Gi") == quantity("1024Mi") == quantity(2**30)
    assert quantity("1e3") == quantity("1k")
    assert quantity("abc") is None and quantity(True) is None
