"""Discovery documents (legacy and aggregated) and /version."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pycontroller.testing.apiserver.http.discovery import (
    AGGREGATED_V2_CONTENT_TYPE,
    discovery_response,
    version_info,
    version_priority_key,
)
from pycontroller.testing.apiserver.resource_types import ResourceType

KUBECTL_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


class FakeRegistry:
    def __init__(self, types: list[ResourceType]) -> None:
        self.types = types

    def all(self) -> list[ResourceType]:
        return list(self.types)


def crd_type(version: str) -> ResourceType:
    return ResourceType(
        group="example.com",
        version=version,
        kind="Widget",
        plural="widgets",
        singular="widget",
        short_names=("wd",),
        categories=("all",),
        has_status=True,
        schema={"type": "object"},
        crd_name="widgets.example.com",
        name_rule="path",
    )


REGISTRY = FakeRegistry(
    [
        ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps",
                     short_names=("cm",)),
        ResourceType(group="", version="v1", kind="Namespace", plural="namespaces",
                     namespaced=False, has_status=True, short_names=("ns",)),
        ResourceType(group="apps", version="v1", kind="Deployment", plural="deployments",
                     has_status=True, short_names=("deploy",), categories=("all",)),
        crd_type("v1beta1"),
        crd_type("v1"),
        crd_type("v1alpha1"),
    ]
)  # fmt: skip


def get(path: str, accept: str = "application/json") -> tuple[int, Any, str]:
    res = discovery_response(REGISTRY, path, accept)
    assert res is not None
    code, body, ctype = res
    return code, json.loads(body), ctype


def test_non_discovery_paths_return_none() -> None:
    for path in ("/api/v1/namespaces", "/apis/apps/v1/deployments", "/healthz", "/openapi/v3"):
        assert discovery_response(REGISTRY, path, "application/json") is None


def test_api_versions() -> None:
    code, doc, ctype = get("/api")
    assert (code, ctype) == (200, "application/json")
    assert doc["kind"] == "APIVersions" and doc["versions"] == ["v1"]


def test_core_resource_list_with_subresources() -> None:
    code, doc, _ = get("/api/v1")
    assert code == 200
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["namespaces"]["shortNames"] == ["ns"]
    assert by_name["namespaces/status"]["verbs"] == ["get", "patch", "update"]
    assert "configmaps/status" not in by_name
    cm = by_name["configmaps"]
    assert cm["kind"] == "ConfigMap" and cm["singularName"] == "configmap"
    assert set(cm["verbs"]) >= {"create", "get", "list", "watch", "patch", "delete"}


def test_group_list_orders_versions_by_priority() -> None:
    code, doc, _ = get("/apis")
    assert code == 200 and doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    assert [g["name"] for g in doc["groups"]] == ["apps", "example.com"]
    ex = groups["example.com"]
    assert [v["version"] for v in ex["versions"]] == ["v1", "v1beta1", "v1alpha1"]
    assert ex["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}


def test_group_and_group_version() -> None:
    code, doc, _ = get("/apis/example.com")
    assert code == 200 and doc["kind"] == "APIGroup" and doc["name"] == "example.com"
    code, doc, _ = get("/apis/example.com/v1beta1/")
    assert code == 200 and doc["groupVersion"] == "example.com/v1beta1"
    widgets = next(r for r in doc["resources"] if r["name"] == "widgets")
    assert widgets["categories"] == ["all"] and widgets["shortNames"] == ["wd"]
    assert any(r["name"] == "widgets/status" for r in doc["resources"])


@pytest.mark.parametrize("path", ["/apis/nope.io", "/apis/example.com/v9", "/api/v2"])
def test_unknown_group_or_version_is_404_status(path: str) -> None:
    code, doc, _ = get(path)
    assert code == 404
    assert doc["kind"] == "Status" and doc["reason"] == "NotFound" and doc["code"] == 404


def test_aggregated_discovery_for_kubectl_accept() -> None:
    code, doc, ctype = get("/apis", KUBECTL_ACCEPT)
    assert code == 200 and ctype == AGGREGATED_V2_CONTENT_TYPE
    assert doc["kind"] == "APIGroupDiscoveryList"
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    groups = {g["metadata"]["name"]: g for g in doc["items"]}
    ex = groups["example.com"]
    assert [v["version"] for v in ex["versions"]] == ["v1", "v1beta1", "v1alpha1"]
    res = ex["versions"][0]["resources"][0]
    assert res["resource"] == "widgets"
    assert res["responseKind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert res["scope"] == "Namespaced" and res["singularResource"] == "widget"
    assert res["subresources"][0]["subresource"] == "status"
    assert ex["versions"][0]["freshness"] == "Current"

    code, doc, ctype = get("/api", KUBECTL_ACCEPT)
    assert ctype == AGGREGATED_V2_CONTENT_TYPE
    (core,) = doc["items"]
    assert "name" not in core["metadata"]
    scopes = {r["resource"]: r["scope"] for r in core["versions"][0]["resources"]}
    assert scopes == {"configmaps": "Namespaced", "namespaces": "Cluster"}


def test_plain_json_accept_gets_legacy() -> None:
    _, doc, ctype = get("/apis", "application/json, */*")
    assert ctype == "application/json" and doc["kind"] == "APIGroupList"
    _, doc, ctype = get("/apis", "")
    assert doc["kind"] == "APIGroupList"


def test_v2beta1_when_preferred() -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    _, doc, ctype = get("/apis", accept)
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    assert "v=v2beta1" in ctype


def test_version_priority() -> None:
    versions = ["v1alpha1", "foo", "v2", "v1beta2", "v1", "v1beta1", "v10alpha1", "bar"]
    assert sorted(versions, key=version_priority_key) == [
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v10alpha1",
        "v1alpha1",
        "bar",
        "foo",
    ]


def test_version_info() -> None:
    info = version_info()
    assert info["major"] == "1" and info["minor"] == "32"
    assert info["gitVersion"] == "v1.32.0-pycontroller"
    assert "/" in info["platform"]
