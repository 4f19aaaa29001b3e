"""Discovery, /version and OpenAPI over HTTP with the ``kubernetes`` client."""

from __future__ import annotations

from typing import Any

from kubernetes import client, dynamic
from support import crds
from support.http import call

from pycontroller.testing import APIServer

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def get(server: APIServer, path: str, accept: str = "application/json") -> tuple[int, str, Any]:
    status, headers, body = call(server, "GET", path, headers={"Accept": accept})
    return status, headers.get("Content-Type", ""), body


def test_version(apiserver: APIServer) -> None:
    info = client.VersionApi(apiserver.api_client()).get_code()
    assert (info.major, info.minor) == ("1", "32")
    assert info.git_version.startswith("v1.32.")


def test_core_and_group_discovery_with_client(apiserver: APIServer) -> None:
    api = apiserver.api_client()
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    for name in ("apps", "apiextensions.k8s.io", "rbac.authorization.k8s.io",
                 "coordination.k8s.io", "events.k8s.io"):  # fmt: skip
        assert groups[name].preferred_version.version == "v1"
    core = client.CoreV1Api(api).get_api_resources()
    by_name = {r.name: r for r in core.resources}
    for plural in ("namespaces", "pods", "services", "configmaps", "secrets", "events",
                   "serviceaccounts"):  # fmt: skip
        assert plural in by_name
    assert by_name["namespaces"].namespaced is False
    assert "ns" in by_name["namespaces"].short_names
    assert "pods/status" in by_name
    apps = client.AppsV1Api(api).get_api_resources()
    assert {r.name for r in apps.resources} >= {"deployments", "deployments/status"}


def test_aggregated_and_legacy_agree(apiserver: APIServer) -> None:
    code, ctype, legacy = get(apiserver, "/apis")
    assert code == 200 and ctype == "application/json"
    code, ctype, agg = get(apiserver, "/apis", f"{AGGREGATED},application/json")
    assert code == 200 and ctype == AGGREGATED
    assert [g["name"] for g in legacy["groups"]] == [i["metadata"]["name"] for i in agg["items"]]
    for item in agg["items"]:
        group = item["metadata"]["name"]
        version = item["versions"][0]["version"]
        code, _, res = get(apiserver, f"/apis/{group}/{version}")
        assert code == 200
        legacy_names = {r["name"] for r in res["resources"] if "/" not in r["name"]}
        agg_names = {r["resource"] for r in item["versions"][0]["resources"]}
        assert legacy_names == agg_names, group


def test_unknown_group_is_404(apiserver: APIServer) -> None:
    code, _, status = get(apiserver, "/apis/nope.example.com/v1")
    assert code == 404 and status["kind"] == "Status"
    code, _, status = get(apiserver, "/apis/nope.example.com")
    assert code == 404


def test_openapi_v3_index_and_documents(apiserver: APIServer) -> None:
    code, _, index = get(apiserver, "/openapi/v3")
    assert code == 200
    assert "api/v1" in index["paths"] and "apis/apps/v1" in index["paths"]
    code, _, doc = get(apiserver, index["paths"]["apis/apps/v1"]["serverRelativeURL"])
    assert code == 200
    dep = doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]
    assert dep["x-kubernetes-group-version-kind"][0]["kind"] == "Deployment"
    code, _, v2 = get(apiserver, "/openapi/v2")
    assert code == 200 and v2["swagger"] == "2.0"
    assert "io.k8s.api.batch.v1.CronJob" in v2["definitions"]
    # Protobuf (client-go's OpenAPISchema) is served too: gnostic's Document,
    # tested in test_openapi_v2_protobuf.py.


def test_dynamic_client_discovers_crds(apiserver_factory: Any) -> None:
    """The ``kubernetes`` DynamicClient walks legacy discovery per group/version."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer", "default": 1}},
            }
        },
    }
    crd = crds.crd("widgets", "Widget", schema=schema, subresources={"status": {}})
    server = apiserver_factory(crds=[crd])
    dyn = dynamic.DynamicClient(server.api_client())
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    assert widgets.name == "widgets" and widgets.namespaced
    assert widgets.status is not None and widgets.status.name == "widgets/status"
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {}}
    created = widgets.create(body=body, namespace="default")
    assert created.spec.size == 1
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deployments.name == "deployments" and "deploy" in deployments.short_names
