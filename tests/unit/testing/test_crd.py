"""CRD validation, conversion to ResourceTypes and established status."""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import pytest
import yaml

from pycontroller.testing.apiserver.schema.crd import (
    crd_to_resource_types,
    default_crd,
    established_status,
    validate_crd,
)
from pycontroller.testing.apiserver.schema.structural import unknown_fields, validate_custom_object


def make_crd() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "default": 1},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port"],
                        "items": {
                            "type": "object",
                            "required": ["port"],
                            "properties": {"port": {"type": "integer"}},
                        },
                    },
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    columns = [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "kind": "Widget",
                "shortNames": ["wd"],
                "categories": ["all"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                },
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": False,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
                },
                {
                    "name": "v1alpha1",
                    "served": False,
                    "storage": False,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
                },
            ],
        },
    }


def fields(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["field"]: c for c in validate_crd(crd)}


def test_valid_crd() -> None:
    assert validate_crd(make_crd()) == []


def test_resource_types_per_served_version() -> None:
    crd = make_crd()
    rts = crd_to_resource_types(crd)
    assert [rt.version for rt in rts] == ["v1", "v1beta1"]
    v1, beta = rts
    assert v1.group == "example.com" and v1.kind == "Widget" and v1.plural == "widgets"
    assert v1.singular == "widget" and v1.short_names == ("wd",) and v1.categories == ("all",)
    assert v1.namespaced and v1.has_status and not beta.has_status
    assert v1.crd_name == "widgets.example.com" and v1.name_rule == "path"
    assert v1.printer_columns == ({"name": "Size", "type": "integer", "jsonPath": ".spec.size"},)
    assert beta.printer_columns == ()
    assert v1.schema == crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert v1.extra["storage"] is True and beta.extra["storage"] is False
    # The served schema is a copy: editing the CRD dict does not change it.
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = "string"
    assert v1.schema is not None and v1.schema["type"] == "object"


def test_cluster_scope() -> None:
    crd = make_crd()
    crd["spec"]["scope"] = "Cluster"
    assert not crd_to_resource_types(crd)[0].namespaced


def test_established_status() -> None:
    crd = make_crd()
    st = established_status(crd)
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["Established"]["status"] == "True"
    assert conds["Established"]["reason"] == "InitialNamesAccepted"
    assert conds["NamesAccepted"]["status"] == "True"
    assert conds["NamesAccepted"]["reason"] == "NoConflicts"
    assert conds["Established"]["lastTransitionTime"].endswith("Z")
    assert st["acceptedNames"] == {
        "plural": "widgets",
        "kind": "Widget",
        "shortNames": ["wd"],
        "categories": ["all"],
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert st["storedVersions"] == ["v1"]
    # Stored versions accumulate; existing transition times are kept.
    crd["status"] = {
        "storedVersions": ["v1beta1"],
        "conditions": [
            {"type": "Established", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}
        ],
    }
    st2 = established_status(crd)
    assert st2["storedVersions"] == ["v1beta1", "v1"]
    est = next(c for c in st2["conditions"] if c["type"] == "Established")
    assert est["lastTransitionTime"] == "2020-01-01T00:00:00Z"


def test_name_must_be_plural_dot_group() -> None:
    crd = make_crd()
    crd["metadata"]["name"] = "widget.example.com"
    c = fields(crd)["metadata.name"]
    assert c["reason"] == "FieldValueInvalid"
    assert c["message"] == (
        'Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group'
    )


def test_exactly_one_storage_version() -> None:
    crd = make_crd()
    crd["spec"]["versions"][1]["storage"] = True
    c = fields(crd)["spec.versions"]
    assert "must have exactly one version marked as storage version" in c["message"]
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"][1]["storage"] = False
    assert "spec.versions" in fields(crd)


def test_required_names_and_scope() -> None:
    crd = make_crd()
    del crd["spec"]["names"]["plural"]
    del crd["spec"]["names"]["kind"]
    crd["spec"]["scope"] = "Global"
    f = fields(crd)
    assert f["spec.names.plural"]["reason"] == "FieldValueRequired"
    assert f["spec.names.kind"]["reason"] == "FieldValueRequired"
    assert f["spec.scope"] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        "field": "spec.scope",
    }


def test_group_needs_a_dot() -> None:
    crd = make_crd()
    crd["spec"]["group"] = "example"
    crd["metadata"]["name"] = "widgets.example"
    assert fields(crd)["spec.group"]["reason"] == "FieldValueInvalid"


def test_structural_schema_basics() -> None:
    crd = make_crd()
    base = "spec.versions[0].schema.openAPIV3Schema"
    s = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    s["type"] = "string"
    assert fields(crd)[f"{base}.type"]["message"] == (
        'Invalid value: "string": must be object at the root'
    )
    s["type"] = "object"
    del s["properties"]["spec"]["properties"]["size"]["type"]
    f = fields(crd)
    assert f[f"{base}.properties[spec].properties[size].type"]["reason"] == "FieldValueRequired"
    s["properties"]["spec"]["properties"]["size"]["type"] = "integer"
    del s["properties"]["spec"]["properties"]["ports"]["items"]
    assert f"{base}.properties[spec].properties[ports].items" in fields(crd)


def test_schema_required_and_default_must_validate() -> None:
    crd = make_crd()
    del crd["spec"]["versions"][0]["schema"]
    f = fields(crd)
    assert f["spec.versions[0].schema.openAPIV3Schema"]["message"] == (
        "Required value: schemas are required"
    )
    crd = make_crd()
    s = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    s["properties"]["spec"]["properties"]["size"]["default"] = 0
    key = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].default"
    assert "should be greater than or equal to 1" in fields(crd)[key]["message"]


def test_list_map_keys_required() -> None:
    crd = make_crd()
    s = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del s["properties"]["spec"]["properties"]["ports"]["x-kubernetes-list-map-keys"]
    key = (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[ports]"
        ".x-kubernetes-list-map-keys"
    )
    assert fields(crd)[key]["reason"] == "FieldValueRequired"


def test_printer_columns_validated() -> None:
    crd = make_crd()
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "X", "type": "float", "jsonPath": ".spec.x"},
        {"name": "Y", "type": "string"},
    ]
    f = fields(crd)
    # apiextensions validation.go ValidateCustomResourceColumnDefinition:
    # field.Invalid for the type, the path named by its internal field JSONPath.
    assert f["spec.versions[0].additionalPrinterColumns[0].type"]["reason"] == "FieldValueInvalid"
    assert f["spec.versions[0].additionalPrinterColumns[1].JSONPath"]["reason"] == (
        "FieldValueRequired"
    )


def test_duplicate_version_names() -> None:
    crd = make_crd()
    crd["spec"]["versions"][1]["name"] = "v1"
    assert fields(crd)["spec.versions[1].name"]["reason"] == "FieldValueDuplicate"


def test_default_crd() -> None:
    crd = make_crd()
    default_crd(crd)
    assert crd["spec"]["names"]["singular"] == "widget"
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    crd["spec"]["names"]["singular"] = "wdg"
    default_crd(crd)
    assert crd["spec"]["names"]["singular"] == "wdg"
    assert validate_crd(crd) == []


def test_repository_balancer_crd_and_sample() -> None:
    """The project's own CRD passes validation and accepts its sample."""
    root = pathlib.Path(__file__).resolve().parents[3]
    crd_path = root / "crds" / "balancer.yaml"
    sample_path = root / "crds" / "samples" / "balancer.yaml"
    if not crd_path.exists() or not sample_path.exists():
        pytest.skip("crds/balancer.yaml not present")
    crd = yaml.safe_load(crd_path.read_text())
    assert validate_crd(crd) == []
    (rt,) = crd_to_resource_types(crd)
    assert (rt.group, rt.version, rt.kind) == ("exposer.hliangzhao.io", "v1alpha1", "Balancer")
    sample = yaml.safe_load(sample_path.read_text())
    sample["metadata"]["namespace"] = "default"
    assert unknown_fields(rt, sample) == []
    assert validate_custom_object(rt, sample) == []
    bad = copy.deepcopy(sample)
    bad["spec"]["ports"][0]["port"] = 0
    causes = validate_custom_object(rt, bad)
    assert [c["field"] for c in causes] == ["spec.ports[0].port"]


def test_repository_balancer_cel_rules() -> None:
    """The Balancer CRD's x-kubernetes-validations rules are enforced."""
    root = pathlib.Path(__file__).resolve().parents[3]
    crd_path = root / "crds" / "balancer.yaml"
    sample_path = root / "crds" / "samples" / "balancer.yaml"
    if not crd_path.exists() or not sample_path.exists():
        pytest.skip("crds/balancer.yaml not present")
    (rt,) = crd_to_resource_types(yaml.safe_load(crd_path.read_text()))
    sample = yaml.safe_load(sample_path.read_text())

    long_name = copy.deepcopy(sample)
    long_name["metadata"]["name"] = "b" * 53  # <= 63, but 53 + len("v1") > 54
    causes = validate_custom_object(rt, long_name)
    assert [c["field"] for c in causes] == ["<nil>"]
    assert causes[0]["message"].startswith('Invalid value: "object": metadata.name and each')

    dup = copy.deepcopy(sample)
    dup["spec"]["ports"].append({"name": "http2", "port": 80, "targetPort": 8080})
    causes = validate_custom_object(rt, dup)
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.ports", 'Invalid value: "array": each (port, protocol) pair must be unique')
    ]
    dup["spec"]["ports"][1]["protocol"] = "UDP"
    assert validate_custom_object(rt, dup) == []


def test_validation_rules_are_checked() -> None:
    crd = make_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [
        {"rule": "self.size > 0", "message": "ok", "reason": "FieldValueInvalid"},
        {"rule": "  "},
        {"rule": "true", "reason": "Nope"},
        {"rule": "true", "message": "two\nlines"},
    ]
    base = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    f = fields(crd)
    assert set(f) == {f"{base}[1].rule", f"{base}[2].reason", f"{base}[3].message"}
    assert f[f"{base}[2].reason"]["reason"] == "FieldValueNotSupported"
