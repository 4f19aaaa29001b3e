"""What kube 1.32's pod strategy does to a new pod (``PrepareForCreate``),
over HTTP: ``matchLabelKeys`` / ``mismatchLabelKeys`` merged into pod
(anti-)affinity selectors (before validation), the ``SchedulingGated``
condition, and AppArmor fields and deprecated annotations kept in sync."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
AA = "container.apparmor.security.beta.kubernetes.io/"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def pod(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "c", "image": "nginx"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": containers, **spec},
    }


def created(server: APIServer, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", PODS, body)
    assert code == 201, out
    return out


def test_match_label_keys_are_merged_into_pod_affinity_selectors(server: APIServer) -> None:
    term = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"role": "db"}},
        "matchLabelKeys": ["app", "absent"],
        "mismatchLabelKeys": ["tier"],
    }
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": {**term, "labelSelector": {}}}
            ],
        },
    }
    labels = {"app": "web", "tier": "front"}
    out = created(server, pod("aff", {"affinity": affinity}, labels=labels))
    got = out["spec"]["affinity"]
    required = got["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert required["labelSelector"] == {
        "matchLabels": {"role": "db"},
        "matchExpressions": [
            {"key": "app", "operator": "In", "values": ["web"]},
            {"key": "tier", "operator": "NotIn", "values": ["front"]},
        ],
    }
    preferred = got["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert preferred["podAffinityTerm"]["labelSelector"]["matchExpressions"] == [
        {"key": "app", "operator": "In", "values": ["web"]},
        {"key": "tier", "operator": "NotIn", "values": ["front"]},
    ]


def test_a_merged_key_the_selector_already_has_is_refused_for_pods_only(
    server: APIServer,
) -> None:
    """The merge runs before validation, so a key in both ``matchLabels`` and
    ``matchLabelKeys`` is refused on a Pod; a template is not merged."""
    term = {
        "topologyKey": "zone",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["app"],
    }
    spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    code, out = request(server, "POST", PODS, pod("both", spec, labels={"app": "web"}))
    assert code == 422, out
    assert [(c["field"], c["message"]) for c in out["details"]["causes"]] == [
        (
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0][0]",
            'Invalid value: "app": exists in both matchLabelKeys and labelSelector',
        )
    ]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "both"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {**spec, "containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    code, out = request(server, "POST", DEPLOYMENTS, deployment)
    assert code == 201, out
    tmpl = out["spec"]["template"]["spec"]["affinity"]["podAffinity"]
    assert (
        "matchExpressions"
        not in tmpl["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]
    )


def test_a_gated_pod_starts_with_the_scheduling_gated_condition(server: APIServer) -> None:
    out = created(server, pod("gated", {"schedulingGates": [{"name": "example.com/wait"}]}))
    conditions = out["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in conditions] == [
        (
            "PodScheduled",
            "False",
            "SchedulingGated",
            "Scheduling is blocked due to non-empty scheduling gates",
        )
    ]
    assert conditions[0]["lastProbeTime"] is None and conditions[0]["lastTransitionTime"]
    plain = created(server, pod("ungated", {}))
    assert "conditions" not in plain["status"]


def test_app_armor_fields_and_annotations_are_kept_in_sync(server: APIServer) -> None:
    spec = {
        "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "own",
                "image": "x",
                "securityContext": {
                    "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-nginx"}
                },
            },
            {"name": "inherits", "image": "x"},
            {"name": "annotated", "image": "x"},
            {"name": "same-as-pod", "image": "x"},
            {"name": "bad", "image": "x"},
        ],
    }
    annotations = {
        f"{AA}annotated": "unconfined",
        f"{AA}same-as-pod": "runtime/default",
        f"{AA}bad": "localhost/",
    }
    out = created(server, pod("aa", spec, annotations=annotations))
    assert out["metadata"]["annotations"] == {
        f"{AA}own": "localhost/k8s-nginx",
        f"{AA}inherits": "runtime/default",
        **annotations,
    }
    contexts = {c["name"]: c.get("securityContext") for c in out["spec"]["containers"]}
    assert contexts["annotated"] == {"appArmorProfile": {"type": "Unconfined"}}
    # The pod's own profile and an invalid annotation are not copied.
    assert contexts["same-as-pod"] is None and contexts["bad"] is None
    assert contexts["inherits"] is None


def test_windows_pods_are_left_alone(server: APIServer) -> None:
    spec = {
        "os": {"name": "windows"},
        "securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
    }
    code, out = request(server, "POST", PODS, pod("win", spec))
    # Windows pods may not set AppArmor at all (validation), and get no annotation.
    assert code == 422 or AA + "c" not in (out["metadata"].get("annotations") or {}), out
