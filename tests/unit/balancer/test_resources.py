"""controllers.balancer.resources: golden children, the properties every
child must have, purity, and the config hash."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from controllers.balancer import names
from controllers.balancer.nginx import render
from controllers.balancer.resources import config_hash, desired_children


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (nginx.conf) as literal blocks, so the
    golden files show the config as nginx sees it."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(children: list[dict[str, Any]]) -> str:
    return yaml.dump_all(children, Dumper=_Dumper, sort_keys=False, width=100)


def test_golden(case: str, golden: Any) -> None:
    path = golden.path(case, "children.yaml")
    children = desired_children(golden.load(case))
    if golden.may_update(case, "children.yaml"):
        path.write_text(_dump(children))
    assert children == list(yaml.safe_load_all(path.read_text()))


def test_sample_children_match_go_names_and_order(sample: dict[str, Any]) -> None:
    kinds_names = [(c["kind"], c["metadata"]["name"]) for c in desired_children(sample)]
    assert kinds_names == [
        ("Service", "balancer-sample-v1-backend"),
        ("Service", "balancer-sample-v2-backend"),
        ("Service", "balancer-sample-v3-backend"),
        ("ConfigMap", "balancer-sample-proxy-configmap"),
        ("Deployment", "balancer-sample-proxy"),
        ("Service", "balancer-sample"),
    ]


def test_every_child_is_owned_and_namespaced(case: str, golden: Any) -> None:
    balancer = golden.load(case)
    meta = balancer["metadata"]
    for child in desired_children(balancer):
        assert child["metadata"]["namespace"] == meta["namespace"]
        assert child["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "exposer.hliangzhao.io/v1alpha1",
                "kind": "Balancer",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert names.is_dns1035_label(child["metadata"]["name"]) or child["kind"] != "Service"


def test_backend_services(sample: dict[str, Any]) -> None:
    services = desired_children(sample)[:3]
    for i, svc in enumerate(services, start=1):
        assert svc["metadata"]["labels"] == {names.LABEL_BALANCER_NAME: "balancer-sample"}
        assert svc["spec"] == {
            "type": "ClusterIP",
            "selector": {"app": "test", "version": f"v{i}"},
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 5678}],
        }


def test_backend_selector_overrides_shared_and_target_port_defaults(sample: dict[str, Any]) -> None:
    sample["spec"]["selector"] = {"app": "test", "version": "shared"}
    del sample["spec"]["backends"][2]["selector"]
    del sample["spec"]["ports"][0]["targetPort"]
    del sample["spec"]["ports"][0]["protocol"]
    v1, _, v3 = desired_children(sample)[:3]
    assert v1["spec"]["selector"] == {"app": "test", "version": "v1"}
    assert v3["spec"]["selector"] == {"app": "test", "version": "shared"}
    assert v1["spec"]["ports"] == [
        {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}
    ]


def test_configmap_holds_rendered_config(sample: dict[str, Any]) -> None:
    cm = desired_children(sample)[3]
    assert cm["metadata"]["labels"] == {names.LABEL_BALANCER_NAME: "balancer-sample"}
    assert cm["data"] == {"nginx.conf": render(sample)}


def test_deployment(sample: dict[str, Any]) -> None:
    dep = desired_children(sample, nginx_image="registry.example/nginx:9")[4]
    label = {names.LABEL_BALANCER_NAME: "balancer-sample"}
    assert dep["metadata"]["labels"] == label
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["selector"] == {"matchLabels": label}
    template = dep["spec"]["template"]
    assert template["metadata"]["labels"] == label
    assert template["metadata"]["annotations"] == {
        names.ANNOTATION_CONFIGMAP_HASH: config_hash(render(sample))
    }
    pod = template["spec"]
    (container,) = pod["containers"]
    assert container["name"] == "nginx"
    assert container["image"] == "registry.example/nginx:9"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert container["readinessProbe"]["tcpSocket"] == {"port": 80}
    assert container["livenessProbe"]["tcpSocket"] == {"port": 80}
    assert container["resources"]["requests"]
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/nginx/nginx.conf")
    assert mount["subPath"] == "nginx.conf"
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"] == {"name": "balancer-sample-proxy-configmap"}
    # restricted securityContext, port 80 bindable without root
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["sysctls"] == [
        {"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}
    ]


def test_default_image(sample: dict[str, Any]) -> None:
    dep = desired_children(sample)[4]
    image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == names.DEFAULT_NGINX_IMAGE


def test_udp_only_has_no_tcp_probe_and_high_port_no_sysctl(golden: Any) -> None:
    dep = desired_children(golden.load("udp-only"))[-2]
    pod = dep["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "readinessProbe" not in container
    assert "livenessProbe" not in container
    assert container["ports"] == [{"containerPort": 5514, "protocol": "UDP"}]
    assert "sysctls" not in pod["securityContext"]


def test_probe_uses_first_tcp_port(golden: Any) -> None:
    dep = desired_children(golden.load("udp-multiport"))[-2]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["tcpSocket"] == {"port": 53}


def test_frontend_service(sample: dict[str, Any]) -> None:
    front = desired_children(sample)[-1]
    assert front["metadata"]["name"] == "balancer-sample"
    assert "labels" not in front["metadata"]  # see names: label-selected lists are backends only
    assert front["spec"] == {
        "type": "ClusterIP",
        "selector": {names.LABEL_BALANCER_NAME: "balancer-sample"},
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}],
    }


def test_does_not_mutate_input_nor_share_structure(case: str, golden: Any) -> None:
    balancer = golden.load(case)
    before = copy.deepcopy(balancer)
    children = desired_children(balancer)
    assert balancer == before
    # Mutating the output must not reach the input or a later call's output.
    for child in children:
        child["spec" if "spec" in child else "data"].clear()
        child["metadata"]["ownerReferences"][0]["uid"] = "changed"
    assert balancer == before
    assert desired_children(balancer) == desired_children(golden.load(case))


def test_deterministic(case: str, golden: Any) -> None:
    assert _dump(desired_children(golden.load(case))) == _dump(desired_children(golden.load(case)))


def test_hash_changes_iff_config_changes(sample: dict[str, Any]) -> None:
    def template_hash(b: dict[str, Any]) -> str:
        dep = next(c for c in desired_children(b) if c["kind"] == "Deployment")
        value: str = dep["spec"]["template"]["metadata"]["annotations"][
            names.ANNOTATION_CONFIGMAP_HASH
        ]
        return value

    base = template_hash(sample)
    assert base == config_hash(render(sample))
    # Changes that do not reach nginx.conf keep the hash (no rollout).
    same = copy.deepcopy(sample)
    same["spec"]["selector"]["extra"] = "label"
    same["spec"]["ports"][0]["targetPort"] = 8080
    same["metadata"]["uid"] = "another-uid"
    assert render(same) == render(sample)
    assert template_hash(same) == base
    # Every change that reaches nginx.conf changes the hash.
    for mutate in (
        lambda b: b["spec"]["backends"][0].update(weight=41),
        lambda b: b["spec"]["backends"].pop(),
        lambda b: b["spec"]["backends"][0].update(name="v9"),
        lambda b: b["spec"]["ports"][0].update(port=81),
        lambda b: b["spec"]["ports"][0].update(protocol="UDP"),
        lambda b: b["spec"]["ports"][0].update(name="web"),
    ):
        changed = copy.deepcopy(sample)
        mutate(changed)
        assert render(changed) != render(sample)
        assert template_hash(changed) != base


def test_config_hash_is_stable() -> None:
    # sha256("") prefix: pinned so that the value never changes across
    # processes or releases (a change would roll every nginx pod).
    assert config_hash("") == "e3b0c44298fc1c14"
    assert config_hash("a") != config_hash("b")


def test_invalid_spec_raises_with_validation_messages(sample: dict[str, Any]) -> None:
    sample["spec"]["backends"][1]["name"] = "v1"
    with pytest.raises(ValueError, match=r"spec\.backends\[1\]\.name: duplicate"):
        desired_children(sample)


def test_injection_never_reaches_children(sample: dict[str, Any]) -> None:
    sample["spec"]["backends"].append(
        {"name": "v1-backend:80;server 10.9.8.7:22 weight=1000;#", "weight": 1}
    )
    with pytest.raises(ValueError, match=r"spec\.backends\[3\]\.name"):
        desired_children(sample)


def test_longest_valid_names_give_valid_children(sample: dict[str, Any]) -> None:
    subdomain = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
    sample["metadata"]["name"] = "n" * 53
    sample["spec"]["backends"] = [{"name": "b", "weight": 1}]
    sample["spec"]["ports"][0]["name"] = "p" * 63
    for child in desired_children(sample):
        name = child["metadata"]["name"]
        if child["kind"] == "Service":
            assert names.is_dns1035_label(name), name
        else:
            assert len(name) <= 253 and subdomain.fullmatch(name), name
        for value in (child["metadata"].get("labels") or {}).values():
            assert len(value) <= 63
    backend_service = desired_children(sample)[0]
    assert len(backend_service["metadata"]["name"]) == 63


def test_children_validate_against_the_kubernetes_schemas(case: str, golden: Any) -> None:
    # Strict: an unknown or misspelt field anywhere in a child is an error.
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for child in desired_children(golden.load(case)):
        try:
            kubernetes_validate.validate(child, "1.32.0", strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{child['kind']} {child['metadata']['name']}: {err.path}: {err.message}")
