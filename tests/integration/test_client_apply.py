"""``ResourceClient.apply``: server-side apply through our client against the
embedded API server (creation, field ownership, conflicts, force, namespaces)."""

from __future__ import annotations

from typing import Any

import pytest

from pycontroller import ConflictError, ResourceClient
from pycontroller.testing import APIServer


@pytest.fixture
def configmaps(apiserver: APIServer) -> ResourceClient:
    return ResourceClient(apiserver.api_client(), "", "v1", "configmaps")


@pytest.fixture
def deployments(apiserver: APIServer) -> ResourceClient:
    return ResourceClient(apiserver.api_client(), "apps", "v1", "deployments")


def cm(name: str, namespace: str | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def managers(obj: dict[str, Any]) -> dict[str, str]:
    return {e["manager"]: e["operation"] for e in obj["metadata"]["managedFields"]}


def test_apply_creates_then_updates(configmaps: ResourceClient) -> None:
    created = configmaps.apply(cm("a", k="1"), field_manager="ctrl")
    assert created["metadata"]["namespace"] == "default"
    assert created["data"] == {"k": "1"}
    assert managers(created) == {"ctrl": "Apply"}
    updated = configmaps.apply(cm("a", k="2"), field_manager="ctrl")
    assert updated["data"] == {"k": "2"}
    assert configmaps.get("a")["data"] == {"k": "2"}


def test_apply_removes_what_the_manager_stops_applying(configmaps: ResourceClient) -> None:
    configmaps.apply(cm("a", k="1", extra="x"), field_manager="ctrl")
    out = configmaps.apply(cm("a", k="1"), field_manager="ctrl")
    assert out["data"] == {"k": "1"}


def test_conflict_raises_conflict_error_with_causes(deployments: ResourceClient) -> None:
    deployments.apply(deployment(2), field_manager="owner")
    with pytest.raises(ConflictError) as info:
        deployments.apply(deployment(3), field_manager="intruder")
    err = info.value
    assert err.status == 409
    assert err.message == 'Apply failed with 1 conflict: conflict with "owner": .spec.replicas'
    assert err.causes == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "owner"',
            "field": ".spec.replicas",
        }
    ]
    assert deployments.get("web")["spec"]["replicas"] == 2


def test_force_takes_ownership(deployments: ResourceClient) -> None:
    deployments.apply(deployment(2), field_manager="owner")
    out = deployments.apply(deployment(3), field_manager="intruder", force=True)
    assert out["spec"]["replicas"] == 3
    owned = {e["manager"]: e["fieldsV1"] for e in out["metadata"]["managedFields"]}
    assert "f:replicas" in owned["intruder"]["f:spec"]
    assert "f:replicas" not in owned["owner"]["f:spec"]


def test_namespace_from_argument_or_object(
    apiserver: APIServer, configmaps: ResourceClient
) -> None:
    ns = ResourceClient(apiserver.api_client(), "", "v1", "namespaces", namespaced=False)
    ns.create({"metadata": {"name": "team"}})
    from_obj = configmaps.apply(cm("b", "team", k="1"), field_manager="ctrl")
    assert from_obj["metadata"]["namespace"] == "team"
    from_arg = configmaps.apply(cm("c", k="1"), field_manager="ctrl", namespace="team")
    assert from_arg["metadata"]["namespace"] == "team"
    assert configmaps.get("c", namespace="team")["data"] == {"k": "1"}
