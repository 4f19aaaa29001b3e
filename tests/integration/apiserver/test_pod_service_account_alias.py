"""``spec.serviceAccount``, the deprecated alias of ``serviceAccountName``, as
kube's v1 conversion of every pod spec keeps it (Pods and pod templates): a
controller comparing its desired template with the live one must expect it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        # A pod naming a missing ServiceAccount is refused (ServiceAccount admission).
        for name in ("builder", "legacy", "new"):
            body = {"metadata": {"name": name}}
            request(s, "POST", "/api/v1/namespaces/default/serviceaccounts", body)
        yield s


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"serviceAccountName": "builder"}, ("builder", "builder")),
        ({"serviceAccount": "legacy"}, ("legacy", "legacy")),
        ({"serviceAccountName": "new", "serviceAccount": "old"}, ("new", "new")),
        # The ServiceAccount admission plugin's default.
        ({}, ("default", "default")),
    ],
    ids=["name", "alias-only", "name-wins", "none"],
)
def test_pods_carry_both_names(
    server: APIServer, given: dict[str, str], expected: tuple[str | None, str | None]
) -> None:
    name = f"p-{len(given)}-{abs(hash(tuple(sorted(given.items())))) % 10_000}"
    code, out = request(server, "POST", PODS, pod(name, **given))
    assert code == 201, out
    spec = out["spec"]
    assert (spec.get("serviceAccountName"), spec.get("serviceAccount")) == expected


def test_a_deployment_template_carries_both_names(server: APIServer) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "serviceAccountName": "runner",
                    "containers": [{"name": "c", "image": "nginx"}],
                },
            },
        },
    }
    code, out = request(server, "POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert code == 201, out
    template = out["spec"]["template"]["spec"]
    assert template["serviceAccountName"] == template["serviceAccount"] == "runner"
