"""``Accept: application/json;as=Table;g=meta.k8s.io;v=v1`` over HTTP."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from support.http import call

from pycontroller.testing import APIServer

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def get(server: APIServer, path: str, accept: str = TABLE) -> tuple[int, Any]:
    status, _, body = call(server, "GET", path, headers={"Accept": accept})
    return status, body


def make_deployment(server: APIServer, name: str, replicas: int) -> None:
    apps = client.AppsV1Api(server.api_client())
    labels = {"app": name}
    apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                },
            },
        },
    )


def test_builtin_list_as_table(apiserver: APIServer) -> None:
    make_deployment(apiserver, "a", 2)
    make_deployment(apiserver, "b", 1)
    code, table = get(apiserver, "/apis/apps/v1/namespaces/default/deployments")
    assert code == 200 and table["kind"] == "Table"
    cols = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
    assert cols == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    rows = {r["cells"][0]: r for r in table["rows"]}
    assert rows["a"]["cells"][1] == "0/2" and rows["b"]["cells"][1] == "0/1"
    assert rows["a"]["object"]["kind"] == "PartialObjectMetadata"
    assert rows["a"]["object"]["metadata"]["name"] == "a"
    assert table["metadata"]["resourceVersion"]


def test_single_object_and_include_object(apiserver: APIServer) -> None:
    make_deployment(apiserver, "one", 1)
    path = "/apis/apps/v1/namespaces/default/deployments/one"
    code, table = get(apiserver, path + "?includeObject=Object")
    assert code == 200
    (row,) = table["rows"]
    assert row["cells"][0] == "one"
    assert row["object"]["kind"] == "Deployment" and row["object"]["spec"]["replicas"] == 1
    code, table = get(apiserver, path + "?includeObject=None")
    assert table["rows"][0]["object"] is None


def test_paged_table_carries_continue(apiserver: APIServer) -> None:
    core = client.CoreV1Api(apiserver.api_client())
    for i in range(3):
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": f"cm{i}"}, "data": {"k": "v"}}
        )
    code, table = get(apiserver, "/api/v1/namespaces/default/configmaps?limit=2")
    assert code == 200 and len(table["rows"]) == 2
    assert table["metadata"]["continue"]
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][1] == 1


def test_plain_json_without_table_accept(apiserver: APIServer) -> None:
    code, body = get(apiserver, "/api/v1/namespaces", accept="application/json")
    assert code == 200 and body["kind"] == "NamespaceList"


def test_node_wide_columns_with_both_addresses(apiserver: APIServer) -> None:
    # printers.go printNode: Internal-IP and External-IP (wide), the first
    # address of each type, "<none>" without one.
    status = {
        "addresses": [
            {"type": "Hostname", "address": "n1"},
            {"type": "ExternalIP", "address": "203.0.113.7"},
            {"type": "InternalIP", "address": "10.0.0.7"},
        ]
    }
    assert (
        call(apiserver, "POST", "/api/v1/nodes", {"metadata": {"name": "n1"}, "status": status})[0]
        == 201
    )
    assert call(apiserver, "POST", "/api/v1/nodes", {"metadata": {"name": "n2"}})[0] == 201
    code, table = get(apiserver, "/api/v1/nodes")
    assert code == 200
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == [
        "Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
        "OS-Image", "Kernel-Version", "Container-Runtime",
    ]  # fmt: skip
    rows = {r["cells"][0]: r["cells"] for r in table["rows"]}
    assert rows["n1"][5:7] == ["10.0.0.7", "203.0.113.7"]
    assert rows["n2"][5:7] == ["<none>", "<none>"]
