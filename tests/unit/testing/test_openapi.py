"""OpenAPI v3 index and group/version documents."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.openapi import definition_name, openapi_response

WIDGET_SCHEMA = {
    "type": "object",
    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
}


class FakeRegistry:
    def __init__(self, types: list[ResourceType]) -> None:
        self.types = types

    def all(self) -> list[ResourceType]:
        return list(self.types)


WIDGET = ResourceType(
    group="example.com",
    version="v1",
    kind="Widget",
    plural="widgets",
    has_status=True,
    schema=WIDGET_SCHEMA,
    crd_name="widgets.example.com",
)
NAMESPACE = ResourceType(
    group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False
)
DEPLOYMENT = ResourceType(
    group="apps", version="v1", kind="Deployment", plural="deployments", has_status=True
)
REGISTRY = FakeRegistry([NAMESPACE, DEPLOYMENT, WIDGET])


def get(path: str, registry: FakeRegistry = REGISTRY) -> tuple[int, Any]:
    res = openapi_response(registry, path, "application/json")
    assert res is not None
    code, body, ctype = res
    assert ctype == "application/json"
    return code, json.loads(body)


def test_non_openapi_paths() -> None:
    assert openapi_response(REGISTRY, "/apis", "application/json") is None


def test_index_lists_every_group_version_with_content_hash() -> None:
    code, index = get("/openapi/v3")
    assert code == 200
    assert set(index["paths"]) == {"api/v1", "apis/apps/v1", "apis/example.com/v1"}
    url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/example.com/v1?hash=")
    res = openapi_response(REGISTRY, url, "application/json")
    assert res is not None
    assert url.endswith(hashlib.sha512(res[1]).hexdigest().upper())


def test_crd_document_schema_and_gvk() -> None:
    code, doc = get("/openapi/v3/apis/example.com/v1")
    assert code == 200 and doc["openapi"].startswith("3.")
    schemas = doc["components"]["schemas"]
    widget = schemas["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Widget", "version": "v1"}
    ]
    assert widget["properties"]["spec"] == WIDGET_SCHEMA["properties"]["spec"]
    assert widget["properties"]["metadata"]["allOf"][0]["$ref"].endswith(".ObjectMeta")
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    assert schemas["com.example.v1.WidgetList"]["x-kubernetes-group-version-kind"][0]["kind"] == (
        "WidgetList"
    )
    # The registry's schema was not modified.
    assert "apiVersion" not in WIDGET_SCHEMA["properties"]


def test_every_patch_operation_lists_field_validation() -> None:
    """What kubectl's QueryParamVerifierV3 checks before sending fieldValidation."""
    for gv, kind in (
        ("apis/example.com/v1", "Widget"),
        ("api/v1", "Namespace"),
        ("apis/apps/v1", "Deployment"),
    ):
        _, doc = get(f"/openapi/v3/{gv}")
        patches = [item["patch"] for item in doc["paths"].values() if "patch" in item]
        assert patches, gv
        for op in patches:
            assert op["x-kubernetes-group-version-kind"]["kind"] == kind
            names = {(p["name"], p["in"]) for p in op["parameters"]}
            assert ("fieldValidation", "query") in names
            assert ("fieldManager", "query") in names
            content = op["requestBody"]["content"]
            assert "application/merge-patch+json" in content
            assert "application/apply-patch+yaml" in content
            # Built-ins advertise strategic merge patches (kubectl builds them
            # from the published schema), custom resources do not, as in kube.
            smp = "application/strategic-merge-patch+json" in content
            assert smp is (kind != "Widget")


def test_paths_follow_scope() -> None:
    _, doc = get("/openapi/v3/apis/example.com/v1")
    assert set(doc["paths"]) == {
        "/apis/example.com/v1/namespaces/{namespace}/widgets",
        "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}",
        "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status",
        "/apis/example.com/v1/widgets",
    }
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert item["patch"]["operationId"] == "patchExampleComV1NamespacedWidget"
    assert item["get"]["x-kubernetes-action"] == "get"
    _, doc = get("/openapi/v3/api/v1")
    assert set(doc["paths"]) == {"/api/v1/namespaces", "/api/v1/namespaces/{name}"}


def test_builtin_schema_is_the_pinned_definition() -> None:
    _, doc = get("/openapi/v3/apis/apps/v1")
    schemas = doc["components"]["schemas"]
    dep = schemas["io.k8s.api.apps.v1.Deployment"]
    assert dep["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert dep["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}
    ]
    kind = dep["properties"]["kind"]
    assert "enum" not in kind and kind["type"] == "string"
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert schemas["io.k8s.api.core.v1.Container"]["required"] == ["name"]
    # Every reference resolves within the document.
    refs = set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(doc)))
    assert refs <= set(schemas)


def test_v2_is_one_swagger_document_of_every_kind() -> None:
    reg = FakeRegistry([NAMESPACE, DEPLOYMENT, WIDGET])
    code, doc = get("/openapi/v2", reg)
    assert code == 200 and doc["swagger"] == "2.0"
    defs = doc["definitions"]
    spec = defs["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
    assert "com.example.v1.Widget" in defs
    refs = set(re.findall(r'"#/definitions/([^"]+)"', json.dumps(doc)))
    assert refs <= set(defs)
    post = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"]
    assert post["parameters"][0]["in"] == "body"
    assert post["x-kubernetes-group-version-kind"]["kind"] == "Deployment"


def test_definition_names() -> None:
    assert definition_name(NAMESPACE) == "io.k8s.api.core.v1.Namespace"
    assert definition_name(DEPLOYMENT) == "io.k8s.api.apps.v1.Deployment"
    assert definition_name(WIDGET) == "com.example.v1.Widget"
    rbac = ResourceType(group="rbac.authorization.k8s.io", version="v1", kind="Role",
                        plural="roles")  # fmt: skip
    assert definition_name(rbac) == "io.k8s.api.rbac.v1.Role"


def test_unknown_documents_are_404_and_protobuf_v2_is_406() -> None:
    code, doc = get("/openapi/v3/apis/nope.io/v1")
    assert code == 404 and doc["kind"] == "Status"
    # client-go's OpenAPISchema asks for protobuf only; 406 makes it fall back.
    res = openapi_response(
        FakeRegistry([NAMESPACE]),
        "/openapi/v2",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    )
    assert res is not None and res[0] == 406


def test_documents_follow_registry_changes() -> None:
    reg = FakeRegistry([NAMESPACE])
    _, index = get("/openapi/v3", reg)
    assert set(index["paths"]) == {"api/v1"}
    reg.types.append(WIDGET)
    _, index = get("/openapi/v3", reg)
    assert "apis/example.com/v1" in index["paths"]
