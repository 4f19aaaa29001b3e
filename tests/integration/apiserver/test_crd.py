"""CRDs over HTTP: establishment, discovery, validation, defaulting, pruning,
field validation, status subresource and deletion."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from support.http import call

from pycontroller.testing import APIServer, wait_for

GROUP = "example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def widget_crd() -> dict[str, Any]:
    port = {
        "type": "object",
        "required": ["port"],
        "properties": {
            "name": {"type": "string"},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
        },
    }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "color": {"type": "string", "default": "blue"},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port"],
                        "items": port,
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string", "enum": ["Ready", "Failed"]}},
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                    ],
                }
            ],
        },
    }


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 1, **spec},
    }


Raw = Callable[..., tuple[int, dict[str, str], Any]]
"""``support.http.call`` bound to one server: (status, headers, decoded body)."""


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    r: Raw = functools.partial(call, apiserver)
    code, _, body = r("POST", CRDS, widget_crd())
    assert code == 201, body
    return r


def test_created_crd_is_established_and_discoverable(raw: Raw) -> None:
    def established() -> bool:
        _, _, crd = raw("GET", f"{CRDS}/widgets.example.com")
        conds = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
        return conds.get("Established") == "True" and conds.get("NamesAccepted") == "True"

    wait_for(established, what="the CRD to be Established")
    _, _, crd = raw("GET", f"{CRDS}/widgets.example.com")
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]

    code, _, groups = raw("GET", "/apis")
    assert code == 200
    g = next(g for g in groups["groups"] if g["name"] == GROUP)
    assert g["preferredVersion"]["version"] == "v1"
    code, _, res = raw("GET", "/apis/example.com/v1")
    assert code == 200
    names = {r["name"]: r for r in res["resources"]}
    assert names["widgets"]["kind"] == "Widget" and names["widgets"]["shortNames"] == ["wd"]
    assert names["widgets/status"]["verbs"] == ["get", "patch", "update"]

    code, headers, agg = raw("GET", "/apis", headers={"Accept": f"{AGGREGATED},application/json"})
    assert code == 200 and headers["Content-Type"] == AGGREGATED
    assert any(item["metadata"]["name"] == GROUP for item in agg["items"])


def test_invalid_object_is_rejected_naming_each_field(raw: Raw) -> None:
    bad = widget("bad", size=0, ports=[{"port": 80}, {"port": 80}, {"port": 70000}])
    code, _, status = raw("POST", WIDGETS, bad)
    assert code == 422, status
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    causes = {c["field"]: c for c in status["details"]["causes"]}
    assert causes["spec.size"]["message"] == (
        "Invalid value: 0: spec.size in body should be greater than or equal to 1"
    )
    assert causes["spec.ports[2].port"]["reason"] == "FieldValueInvalid"
    assert causes["spec.ports[1]"]["reason"] == "FieldValueDuplicate"
    # errors.NewInvalid(GroupKind, ...): the qualified kind, then the aggregate.
    assert status["message"].startswith('Widget.example.com "bad" is invalid: [')
    assert status["details"]["kind"] == "Widget" and status["details"]["group"] == GROUP

    missing = widget("missing")
    del missing["spec"]["size"]
    code, _, status = raw("POST", WIDGETS, missing)
    assert code == 422
    assert status["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}
    ]


def test_defaults_applied_and_unknown_fields_pruned(raw: Raw) -> None:
    obj = widget("w", ports=[{"port": 80, "extra": 1}], bogus=True)
    code, headers, created = raw("POST", WIDGETS + "?fieldValidation=Ignore", obj)
    assert code == 201, created
    assert "Warning" not in headers
    assert created["spec"] == {
        "size": 1,
        "color": "blue",
        "ports": [{"port": 80, "protocol": "TCP"}],
    }
    _, _, stored = raw("GET", f"{WIDGETS}/w")
    assert stored["spec"] == created["spec"]


def test_field_validation_strict_and_warn(raw: Raw) -> None:
    code, _, status = raw("POST", WIDGETS + "?fieldValidation=Strict", widget("s", bogus=1))
    assert code == 400, status
    assert status["reason"] == "BadRequest"
    assert 'unknown field "spec.bogus"' in status["message"]
    assert raw("GET", f"{WIDGETS}/s")[0] == 404

    code, headers, created = raw("POST", WIDGETS + "?fieldValidation=Warn", widget("w", bogus=1))
    assert code == 201
    assert 'unknown field \\"spec.bogus\\"' in headers["Warning"] or (
        'unknown field "spec.bogus"' in headers["Warning"]
    )
    assert "bogus" not in created["spec"]


def test_status_subresource_is_validated(raw: Raw) -> None:
    code, _, created = raw("POST", WIDGETS, widget("st"))
    assert code == 201
    obj = copy.deepcopy(created)
    obj["status"] = {"phase": "Exploded"}
    code, _, status = raw("PUT", f"{WIDGETS}/st/status", obj)
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "status.phase"
    obj["status"] = {"phase": "Ready", "junk": 1}
    code, _, updated = raw("PUT", f"{WIDGETS}/st/status", obj)
    assert code == 200, updated
    assert updated["status"] == {"phase": "Ready"}


def test_table_uses_printer_columns(raw: Raw) -> None:
    raw("POST", WIDGETS, widget("t", size=3))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    code, _, table = raw("GET", WIDGETS, headers={"Accept": accept})
    assert code == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Phase"]
    assert table["rows"][0]["cells"] == ["t", 3, None]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert table["metadata"]["resourceVersion"]


def test_openapi_v3_serves_crd_schema(raw: Raw) -> None:
    code, _, index = raw("GET", "/openapi/v3")
    assert code == 200
    url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    code, _, doc = raw("GET", url)
    assert code == 200
    schema = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["properties"]["spec"]["required"] == ["size"]


def test_crd_delete_removes_objects_and_endpoints(apiserver: APIServer, raw: Raw) -> None:
    for name in ("a", "b"):
        assert raw("POST", WIDGETS, widget(name))[0] == 201
    code, _, _ = raw("DELETE", f"{CRDS}/widgets.example.com")
    assert code == 200

    def gone() -> bool:
        return raw("GET", f"{CRDS}/widgets.example.com")[0] == 404

    wait_for(gone, what="the CRD to be gone")
    assert raw("GET", WIDGETS)[0] == 404
    assert raw("GET", "/apis/example.com/v1")[0] == 404
    _, _, groups = raw("GET", "/apis")
    assert all(g["name"] != GROUP for g in groups["groups"])
    # Re-creating the CRD serves an empty collection: the objects were deleted.
    assert raw("POST", CRDS, widget_crd())[0] == 201
    code, _, lst = wait_for(lambda: (r := raw("GET", WIDGETS))[0] == 200 and r)
    assert lst["items"] == []


def test_invalid_crd_is_rejected(raw: Raw) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["scope"] = "Everywhere"
    code, _, status = raw("POST", CRDS, crd)
    assert code == 422
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"spec.versions", "spec.scope"} <= fields


def test_kubernetes_client_custom_objects(apiserver: APIServer, raw: Raw) -> None:
    api = client.CustomObjectsApi(apiserver.api_client())
    created = api.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", widget("k"))
    assert created["spec"]["color"] == "blue"
    got = api.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "k")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    groups = client.ApisApi(apiserver.api_client()).get_api_versions()
    assert GROUP in [g.name for g in groups.groups]
