"""controllers.reverseproxy.resources.desired_children: golden children, the
original's shapes, owner references, the configsum rollout, purity."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from controllers.reverseproxy import names
from controllers.reverseproxy.nginx import render
from controllers.reverseproxy.resources import config_sum, desired_children
from controllers.reverseproxy.validation import InvalidSpec


def test_golden_children(case: str, golden: Any) -> None:
    obj = golden.load(case)
    children = desired_children(obj, nginx_image=golden.image)
    text = yaml.safe_dump_all(children, sort_keys=False)
    expected = golden.path(case, "children.yaml")
    if golden.may_update(case, "children.yaml"):
        expected.write_text(text)
    assert text == expected.read_text()


def test_shapes_of_the_original(golden: Any) -> None:
    obj = golden.load("whoami")
    cm, deploy, svc = desired_children(obj, nginx_image="nginx:1.25")
    name = "ngx-proxy-whoami"
    selector = {
        "app.kubernetes.io/managed-by": "nginx-operator",
        "app.kubernetes.io/instance": name,
    }
    ref = {
        "apiVersion": "nginx.lin2ur.cn/v1",
        "kind": "ReverseProxy",
        "name": "whoami",
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for child in (cm, deploy, svc):
        assert child["metadata"]["name"] == name
        assert child["metadata"]["namespace"] == "default"
        assert child["metadata"]["ownerReferences"] == [ref]
    text = render(obj)
    assert cm["data"] == {"nginx.conf": text}
    assert cm["metadata"]["labels"] == {**selector, "nginx-operator/configsum": config_sum(text)}
    assert deploy["metadata"]["labels"] == selector  # no configsum on the Deployment itself
    spec = deploy["spec"]
    assert spec["selector"] == {"matchLabels": selector}
    assert spec["template"]["metadata"]["labels"]["nginx-operator/configsum"] == config_sum(text)
    pod = spec["template"]["spec"]
    assert pod["enableServiceLinks"] is False and pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    assert container["command"] == ["nginx"] and container["image"] == "nginx:1.25"
    assert container["volumeMounts"][0] == {
        "name": "config",
        "mountPath": "/etc/nginx/nginx.conf",
        "subPath": "nginx.conf",
    }
    assert [(p["name"], p["containerPort"]) for p in container["ports"]] == [
        ("nginx", 8080),
        ("probe", 3001),
    ]
    assert container["securityContext"]["runAsUser"] == 101
    assert container["livenessProbe"]["httpGet"] == {"path": "/_/ping", "port": "probe"}
    assert svc["spec"] == {
        "type": "ClusterIP",
        "selector": selector,
        "ports": [{"name": "nginx", "port": 80, "targetPort": "nginx", "protocol": "TCP"}],
    }


def test_udp_and_prefix_of_tcp(golden: Any) -> None:
    cm, deploy, svc = desired_children(golden.load("udp"), nginx_image="i")
    assert cm["metadata"]["name"] == "ngx-tcpproxy-dns"
    assert deploy["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] == "UDP"
    assert svc["spec"]["ports"][0]["protocol"] == "UDP"
    assert svc["spec"]["ports"][0]["port"] == 53


def test_a_config_change_changes_the_pod_template_and_nothing_else(golden: Any) -> None:
    obj = golden.load("whoami")
    before = desired_children(obj, nginx_image="i")
    obj["spec"]["proxySetHeader"]["x-powered-by"] = "other"
    after = desired_children(obj, nginx_image="i")
    assert before[0]["data"] != after[0]["data"]
    old_labels = before[1]["spec"]["template"]["metadata"]["labels"]
    new_labels = after[1]["spec"]["template"]["metadata"]["labels"]
    assert old_labels[names.LABEL_CONFIGSUM] != new_labels[names.LABEL_CONFIGSUM]
    assert before[1]["spec"]["selector"] == after[1]["spec"]["selector"]
    assert before[2] == after[2]


def test_pod_labels_operator_keys_win_and_image_defaults(golden: Any) -> None:
    obj = golden.load("full")
    labels = desired_children(obj)[1]["spec"]["template"]["metadata"]["labels"]
    assert labels["team"] == "web"
    assert labels["app.kubernetes.io/instance"] == "ngx-proxy-full"
    obj = golden.load("minimal")
    image = desired_children(obj, nginx_image="registry/nginx:x")[1]["spec"]["template"]["spec"]
    assert image["containers"][0]["image"] == "registry/nginx:x"


def test_limits_imply_requests_as_the_api_server_stores_them() -> None:
    obj = {
        "kind": "ReverseProxy",
        "metadata": {"name": "r", "namespace": "d", "uid": "u"},
        "spec": {"proxyPass": "http://a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
    }
    (container,) = desired_children(obj, nginx_image="i")[1]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}


def test_pure_and_unshared(golden: Any) -> None:
    obj = golden.load("full")
    before = copy.deepcopy(obj)
    first = desired_children(obj, nginx_image="i")
    assert obj == before
    assert desired_children(obj, nginx_image="i") == first
    first[1]["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": "X"})
    first[1]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"] = {}
    assert obj == before


def test_invalid_and_ownerless_objects_raise(golden: Any) -> None:
    obj = golden.load("minimal")
    obj["metadata"]["name"] = "n" * 54  # ngx-proxy- + 54 = 64 characters
    with pytest.raises(InvalidSpec, match="metadata.name"):
        desired_children(obj, nginx_image="i")
    obj = golden.load("minimal")
    del obj["metadata"]["uid"]
    with pytest.raises(ValueError, match="uid"):
        desired_children(obj, nginx_image="i")
