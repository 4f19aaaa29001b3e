"""Custom resources through the server core: CRDs installed at start from
files, the status subresource, schema validation and field validation, patch
types, finalizer generation bump, and CRD deletion removing its objects."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.http import call as request

from pycontroller.testing import APIServer, wait_for

ROOT = Path(__file__).resolve().parents[3]
BALANCERS = "/apis/exposer.hliangzhao.io/v1alpha1/namespaces/default/balancers"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def balancer(name: str = "b1", **spec_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "exposer.hliangzhao.io/v1alpha1",
        "kind": "Balancer",
        "metadata": {"name": name},
        "spec": {
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 5678}],
            "selector": {"app": "test"},
            "backends": [{"name": "v1", "weight": 100, "selector": {"version": "v1"}}],
            **spec_extra,
        },
    }


@pytest.fixture
def server(apiserver_factory: Any) -> APIServer:
    s: APIServer = apiserver_factory(crds=[ROOT / "crds"])
    return s


def test_crds_installed_from_directory_and_established(server: APIServer) -> None:
    code, _, crd = request(server, "GET", f"{CRDS}/balancers.exposer.hliangzhao.io")
    assert code == 200
    conds = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conds.get("Established") == "True"
    code, _, lst = request(server, "GET", BALANCERS)
    assert code == 200 and lst["kind"] == "BalancerList" and lst["items"] == []


def test_custom_resource_lifecycle_and_status(server: APIServer) -> None:
    code, _, b = request(server, "POST", BALANCERS, {**balancer(), "status": {"x": 1}})
    assert code == 201, b
    assert b["metadata"]["generation"] == 1 and "status" not in b
    code, _, b2 = request(
        server,
        "PATCH",
        f"{BALANCERS}/b1/status",
        {"status": {"activeBackendsNum": 1}},
        "application/merge-patch+json",
    )
    assert code == 200 and b2["status"]["activeBackendsNum"] == 1
    assert b2["metadata"]["generation"] == 1
    b2["spec"]["backends"][0]["weight"] = 50
    b2["status"] = {"activeBackendsNum": 7}
    code, _, b3 = request(server, "PUT", f"{BALANCERS}/b1", b2)
    assert code == 200
    assert b3["metadata"]["generation"] == 2
    assert b3["status"] == {"activeBackendsNum": 1}
    code, _, st = request(
        server,
        "PATCH",
        f"{BALANCERS}/b1",
        {"spec": {"selector": {"app": "x"}}},
        "application/strategic-merge-patch+json",
    )
    assert code == 415 and st["reason"] == "UnsupportedMediaType"
    # Custom resources take no strategic merge patch: it is not offered.
    assert st["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    code, _, b4 = request(
        server,
        "PATCH",
        f"{BALANCERS}/b1",
        [{"op": "replace", "path": "/spec/selector", "value": {"app": "y"}}],
        "application/json-patch+json",
    )
    assert code == 200 and b4["spec"]["selector"] == {"app": "y"}
    # POST, status PATCH, PUT, the refused strategic PATCH, json PATCH: every attempt counts.
    assert server.writes("balancers") == 5


def test_schema_validation_and_field_validation(server: APIServer) -> None:
    bad = balancer()
    bad["spec"]["ports"][0]["port"] = 0
    code, _, st = request(server, "POST", BALANCERS, bad)
    assert code == 422 and st["reason"] == "Invalid"
    assert any("spec.ports" in c["field"] for c in st["details"]["causes"])
    assert st["details"]["kind"] == "Balancer"
    extra = balancer("b2")
    extra["spec"]["foo"] = 1
    code, _, st = request(server, "POST", BALANCERS + "?fieldValidation=Strict", extra)
    assert code == 400 and "spec.foo" in st["message"]
    code, headers, created = request(server, "POST", BALANCERS, extra)
    assert code == 201
    assert headers.get("Warning") == '299 - "unknown field \\"spec.foo\\""'
    assert "foo" not in created["spec"]  # pruned


def test_finalizer_delete_bumps_cr_generation(server: APIServer) -> None:
    b = balancer()
    b["metadata"]["finalizers"] = ["example.com/cleanup"]
    request(server, "POST", BALANCERS, b)
    code, _, obj = request(server, "DELETE", f"{BALANCERS}/b1")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["generation"] == 2
    request(
        server,
        "PATCH",
        f"{BALANCERS}/b1",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    assert request(server, "GET", f"{BALANCERS}/b1")[0] == 404


def test_crd_deletion_removes_objects_and_types(server: APIServer) -> None:
    request(server, "POST", BALANCERS, balancer())
    code, _, _ = request(server, "DELETE", f"{CRDS}/balancers.exposer.hliangzhao.io")
    assert code == 200
    wait_for(lambda: request(server, "GET", BALANCERS)[0] == 404, 5, what="CRD's collection gone")
    assert request(server, "GET", BALANCERS)[0] == 404
    # Re-creating the CRD serves an empty collection.
    server.install_crd(ROOT / "crds" / "balancer.yaml")
    code, _, lst = request(server, "GET", BALANCERS)
    assert code == 200 and lst["items"] == []


def test_table_output(server: APIServer) -> None:
    request(server, "POST", BALANCERS, balancer())
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    conn.request(
        "GET", BALANCERS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    )
    resp = conn.getresponse()
    table = json.loads(resp.read())
    conn.close()
    assert resp.status == 200 and table["kind"] == "Table"
    assert table["columnDefinitions"][0]["name"] == "Name"
    assert table["rows"][0]["cells"][0] == "b1"


def gadget_crd() -> dict[str, Any]:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            },
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema},
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": False,
                    "deprecated": True,
                    "schema": schema,
                },
            ],
        },
    }


def test_multi_version_cluster_scoped_crd(apiserver: APIServer) -> None:
    code, _, _ = request(apiserver, "POST", CRDS, gadget_crd())
    assert code == 201
    old = "/apis/example.com/v1beta1/gadgets"
    new = "/apis/example.com/v1/gadgets"
    body = {"apiVersion": "example.com/v1beta1", "kind": "Gadget", "metadata": {"name": "g"}}
    code, headers, g = request(apiserver, "POST", old, {**body, "spec": {"a": 1}})
    assert code == 201 and "namespace" not in g["metadata"]
    assert headers.get("Warning") == '299 - "example.com/v1beta1 Gadget is deprecated"'
    code, headers, g1 = request(apiserver, "GET", f"{new}/g")
    assert code == 200 and g1["apiVersion"] == "example.com/v1" and g1["spec"] == {"a": 1}
    assert "Warning" not in headers
    # Namespaced paths do not exist for a cluster-scoped kind.
    assert request(apiserver, "GET", "/apis/example.com/v1/namespaces/default/gadgets")[0] == 404
    # One storage for both versions: the list via either version holds the object.
    _, _, lst = request(apiserver, "GET", old)
    assert [i["apiVersion"] for i in lst["items"]] == ["example.com/v1beta1"]


def test_custom_resources_require_resource_version_on_update(server: APIServer) -> None:
    _, _, b = request(server, "POST", BALANCERS, balancer())
    del b["metadata"]["resourceVersion"]
    code, _, st = request(server, "PUT", f"{BALANCERS}/b1", b)
    assert code == 422 and st["reason"] == "Invalid"
    assert st["message"] == (
        'balancers.exposer.hliangzhao.io "b1" is invalid: metadata.resourceVersion: '
        "Invalid value: 0x0: must be specified for an update"
    )
    assert st["details"]["causes"][0]["field"] == "metadata.resourceVersion"
