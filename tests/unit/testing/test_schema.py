"""Structural schema pruning, defaulting and validation of custom objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.structural import (
    field_path,
    go_value,
    unknown_fields,
    validate_custom_object,
)

PORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["port"],
    "properties": {
        "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
        "targetPort": {"x-kubernetes-int-or-string": True},
    },
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["ports"],
            "properties": {
                "replicas": {"type": "integer", "default": 1, "minimum": 0},
                "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                "percent": {"type": "integer", "maximum": 100, "exclusiveMaximum": True},
                "ports": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 3,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port"],
                    "items": PORT_SCHEMA,
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string", "minLength": 2},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "mixed": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"inner": {"type": "object"}},
                },
                "note": {"type": "string", "nullable": True},
                "strict": {"type": "string"},
                "when": {"type": "string", "format": "date-time"},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"a": {"type": "string"}}}
                    },
                },
                "backends": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "weight": {"type": "integer", "default": 100},
                            "opts": {
                                "type": "object",
                                "default": {},
                                "properties": {"retries": {"type": "integer", "default": 3}},
                            },
                        },
                    },
                },
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string", "enum": ["Ready", "Failed"]},
                "conditions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["type", "status"],
                        "properties": {"type": {"type": "string"}, "status": {"type": "string"}},
                    },
                },
            },
        },
    },
}

RT = ResourceType(
    group="example.com",
    version="v1",
    kind="Widget",
    plural="widgets",
    has_status=True,
    schema=SCHEMA,
    crd_name="widgets.example.com",
    name_rule="path",
)


def thing_type(schema: dict[str, Any]) -> ResourceType:
    """The custom type ``things.example.com`` (example.com/v1 Thing) with ``schema``."""
    return ResourceType(
        group="example.com",
        version="v1",
        kind="Thing",
        plural="things",
        schema=schema,
        crd_name="things.example.com",
    )


def obj(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"ports": [{"port": 80}]}
    base.update(spec)
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "labels": {"a": "b"}},
        "spec": base,
    }


def causes_by_field(o: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for c in validate_custom_object(RT, o):
        out[c["field"]] = c
    return out


def test_valid_object_passes_and_gets_defaults() -> None:
    o = obj(backends=[{"name": "a"}, {"name": "b", "weight": 5, "opts": {"retries": 1}}])
    assert validate_custom_object(RT, o) == []
    assert o["spec"]["replicas"] == 1
    assert o["spec"]["ports"] == [{"port": 80, "protocol": "TCP"}]
    # defaults into array items, nested defaults applied inside defaulted objects
    assert o["spec"]["backends"][0] == {"name": "a", "weight": 100, "opts": {"retries": 3}}
    assert o["spec"]["backends"][1] == {"name": "b", "weight": 5, "opts": {"retries": 1}}
    assert o["metadata"] == {"name": "w", "namespace": "default", "labels": {"a": "b"}}


def test_defaults_are_copies() -> None:
    a = obj(backends=[{"name": "a"}])
    b = obj(backends=[{"name": "b"}])
    validate_custom_object(RT, a)
    validate_custom_object(RT, b)
    a["spec"]["backends"][0]["opts"]["retries"] = 9
    assert b["spec"]["backends"][0]["opts"]["retries"] == 3
    assert (
        SCHEMA["properties"]["spec"]["properties"]["backends"]["items"]["properties"]["opts"][
            "default"
        ]
        == {}
    )


def test_pruning_drops_unknown_fields_but_keeps_root_metadata() -> None:
    o = obj(unknown=1, free={"anything": {"x": 1}}, mixed={"keep": 1, "inner": {"gone": 1}})
    o["spec"]["ports"][0]["extra"] = True
    o["topLevel"] = "x"
    o["metadata"]["annotations"] = {"k": "v"}
    expected_unknown = [
        ".spec.unknown",
        ".spec.ports[0].extra",
        ".spec.mixed.inner.gone",
        ".topLevel",
    ]
    before = copy.deepcopy(o)
    assert sorted(unknown_fields(RT, o)) == sorted(expected_unknown)
    assert o == before, "unknown_fields must not mutate"
    assert validate_custom_object(RT, o) == []
    assert "unknown" not in o["spec"]
    assert "topLevel" not in o
    assert o["spec"]["ports"][0] == {"port": 80, "protocol": "TCP"}
    assert o["spec"]["free"] == {"anything": {"x": 1}}
    assert o["spec"]["mixed"] == {"keep": 1, "inner": {}}
    assert o["metadata"]["annotations"] == {"k": "v"}
    assert o["apiVersion"] == "example.com/v1" and o["kind"] == "Widget"


def test_additional_properties_kept_and_validated() -> None:
    o = obj(labels={"a": "x", "b": 3})
    assert unknown_fields(RT, o) == []
    c = causes_by_field(o)
    assert c["spec.labels.b"]["reason"] == "FieldValueTypeInvalid"
    assert o["spec"]["labels"]["a"] == "x"


def test_embedded_resource_keeps_type_meta_and_requires_it() -> None:
    o = obj(template={"metadata": {"name": "x"}, "spec": {"a": "1", "b": 2}, "junk": 1})
    assert sorted(unknown_fields(RT, o)) == [".spec.template.junk", ".spec.template.spec.b"]
    c = causes_by_field(o)
    assert c["spec.template.apiVersion"]["reason"] == "FieldValueRequired"
    assert c["spec.template.kind"]["reason"] == "FieldValueRequired"
    assert o["spec"]["template"] == {"metadata": {"name": "x"}, "spec": {"a": "1"}}
    o2 = obj(template={"apiVersion": "v1", "kind": "Pod", "spec": {}})
    assert validate_custom_object(RT, o2) == []


def test_null_handling() -> None:
    o = obj(note=None, strict=None, replicas=None)
    assert validate_custom_object(RT, o) == []
    assert o["spec"]["note"] is None  # nullable: kept
    assert "strict" not in o["spec"]  # non-nullable without default: pruned
    assert o["spec"]["replicas"] == 1  # non-nullable with default: defaulted


def test_minimum_message_and_path() -> None:
    o = obj(ports=[{"port": 80}, {"port": 0}])
    c = causes_by_field(o)
    assert c["spec.ports[1].port"] == {
        "reason": "FieldValueInvalid",
        "message": (
            "Invalid value: 0: spec.ports[1].port in body should be greater than or equal to 1"
        ),
        "field": "spec.ports[1].port",
    }


@pytest.mark.parametrize(
    ("spec", "field", "reason", "message"),
    [
        (
            {"ports": [{"port": 70000}]},
            "spec.ports[0].port",
            "FieldValueInvalid",
            "Invalid value: 70000: spec.ports[0].port in body should be "
            "less than or equal to 65535",
        ),
        (
            {"ratio": 0},
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 0: spec.ratio in body should be greater than 0",
        ),
        (
            {"percent": 100},
            "spec.percent",
            "FieldValueInvalid",
            "Invalid value: 100: spec.percent in body should be less than 100",
        ),
        (
            {"replicas": "three"},
            "spec.replicas",
            "FieldValueTypeInvalid",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        ),
        (
            {"replicas": 1.5},
            "spec.replicas",
            "FieldValueTypeInvalid",
            'Invalid value: "number": spec.replicas in body must be of type integer: "number"',
        ),
        (
            {"ports": [{"port": 80, "protocol": "SCTP"}]},
            "spec.ports[0].protocol",
            "FieldValueNotSupported",
            'Unsupported value: "SCTP": supported values: "TCP", "UDP"',
        ),
        (
            {"ports": [{"port": 80, "name": "abcdefghij"}]},
            "spec.ports[0].name",
            "FieldValueTooLong",
            "Too long: may not be more than 8 bytes",
        ),
        (
            {"ports": [{"port": 80, "name": "ABC"}]},
            "spec.ports[0].name",
            "FieldValueInvalid",
            "Invalid value: \"ABC\": spec.ports[0].name in body should match '^[a-z]+$'",
        ),
        (
            {"tags": ["a"]},
            "spec.tags[0]",
            "FieldValueInvalid",
            'Invalid value: "a": spec.tags[0] in body should be at least 2 chars long',
        ),
        (
            {"ports": []},
            "spec.ports",
            "FieldValueInvalid",
            "Invalid value: []interface {}{}: spec.ports in body should have at least 1 items",
        ),
        (
            {"ports": [{"port": 1}, {"port": 2}, {"port": 3}, {"port": 4}]},
            "spec.ports",
            "FieldValueTooMany",
            "Too many: 4: must have at most 3 items",
        ),
        (
            {"ports": [{"name": "web"}]},
            "spec.ports[0].port",
            "FieldValueRequired",
            "Required value",
        ),
        (
            {"ports": [{"port": 80, "targetPort": True}]},
            "spec.ports[0].targetPort",
            "FieldValueTypeInvalid",
            'Invalid value: "boolean": spec.ports[0].targetPort in body must be of type '
            'integer,string: "boolean"',
        ),
        (
            {"when": "yesterday"},
            "spec.when",
            "FieldValueTypeInvalid",
            'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
        ),
        (
            {"note": 5},
            "spec.note",
            "FieldValueTypeInvalid",
            'Invalid value: "integer": spec.note in body must be of type string: "integer"',
        ),
        (
            {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]},
            "spec.ports[1]",
            "FieldValueDuplicate",
            'Duplicate value: map[string]interface {}{"port":80}',
        ),
        (
            {"tags": ["aa", "bb", "aa"]},
            "spec.tags[2]",
            "FieldValueDuplicate",
            'Duplicate value: "aa"',
        ),
    ],
)
def test_keyword_errors(spec: dict[str, Any], field: str, reason: str, message: str) -> None:
    c = causes_by_field(obj(**spec))
    assert field in c, c
    assert c[field]["reason"] == reason
    assert c[field]["message"] == message


def test_missing_required_spec_at_root() -> None:
    rt = ResourceType(
        group="example.com",
        version="v1",
        kind="Widget",
        plural="widgets",
        schema={**SCHEMA, "required": ["spec"]},
        crd_name="widgets.example.com",
    )
    o = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert validate_custom_object(rt, o) == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec"}
    ]


def test_int_or_string_accepts_both() -> None:
    assert validate_custom_object(RT, obj(ports=[{"port": 1, "targetPort": 8080}])) == []
    assert validate_custom_object(RT, obj(ports=[{"port": 1, "targetPort": "http"}])) == []


def test_integral_float_is_an_integer() -> None:
    assert validate_custom_object(RT, obj(replicas=2.0)) == []


def test_every_error_reported_at_once() -> None:
    o = obj(ports=[{"port": 0, "protocol": "SCTP"}], replicas=-1)
    fields = {c["field"] for c in validate_custom_object(RT, o)}
    assert fields == {"spec.ports[0].port", "spec.ports[0].protocol", "spec.replicas"}


def test_status_is_validated_too() -> None:
    o = obj()
    o["status"] = {"phase": "Unknown", "conditions": [{"type": "Ready"}], "junk": 1}
    c = causes_by_field(o)
    assert c["status.phase"]["reason"] == "FieldValueNotSupported"
    assert c["status.conditions[0].status"]["reason"] == "FieldValueRequired"
    assert "junk" not in o["status"]


def test_ratcheting_keeps_unchanged_invalid_values() -> None:
    old = obj(ports=[{"port": 0}])
    validate_custom_object(RT, old)
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 2
    assert validate_custom_object(RT, new, old=old) == []
    new["spec"]["ports"][0]["port"] = -1
    assert [c["field"] for c in validate_custom_object(RT, new, old=old)] == ["spec.ports[0].port"]


def test_builtin_without_schema_untouched() -> None:
    rt = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps")
    o = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "junk": 1}
    assert validate_custom_object(rt, o) == []
    assert unknown_fields(rt, o) == []
    assert o["junk"] == 1


def test_object_without_properties_prunes_everything() -> None:
    rt = thing_type({"type": "object", "properties": {"spec": {"type": "object"}}})
    o = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {}, "spec": {"a": 1}}
    assert unknown_fields(rt, o) == [".spec.a"]
    validate_custom_object(rt, o)
    assert o["spec"] == {}


def test_helpers() -> None:
    assert field_path(["spec", "ports", 0, "port"]) == "spec.ports[0].port"
    assert field_path([]) == ""
    assert go_value(1.0) == "1"
    assert go_value(1e6) == "1e+06"
    assert go_value(0.5) == "0.5"
    assert go_value(True) == "true"
    assert go_value("a") == '"a"'
    assert go_value(None) == '"null"'
    assert go_value({"b": 1, "a": "x"}) == 'map[string]interface {}{"a":"x", "b":1}'


def test_root_metadata_never_pruned_by_schema_but_coerced_to_object_meta() -> None:
    rt = thing_type(
        {
            "type": "object",
            "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}},
        }
    )
    o = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t", "labels": {"a": "b"}, "bogus": 1},
    }
    assert unknown_fields(rt, o) == [".metadata.bogus"]
    assert validate_custom_object(rt, o) == []
    assert o["metadata"] == {"name": "t", "labels": {"a": "b"}}


def test_unsupported_pattern_is_not_enforced() -> None:
    rt = thing_type({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string", "pattern": "^\\pL+$"},
            "b": {"type": "string", "pattern": "^[a-z]+$"},
        }}},
    })  # fmt: skip
    o = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {},
         "spec": {"a": "x1", "b": "B"}}  # fmt: skip
    assert [c["field"] for c in validate_custom_object(rt, o)] == ["spec.b"]


KUBEBUILDER_CONDITION = {
    "type": "object",
    "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    "properties": {
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "message": {"type": "string", "maxLength": 32768},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "reason": {
            "type": "string",
            "maxLength": 1024,
            "minLength": 1,
            "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        },
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "type": {
            "type": "string",
            "maxLength": 316,
            "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        },
    },
}


def test_kubebuilder_style_conditions() -> None:
    rt = thing_type(
        {
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "status": {
                    "type": "object",
                    "properties": {
                        "conditions": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["type"],
                            "items": KUBEBUILDER_CONDITION,
                        }
                    },
                },
            },
        }
    )
    good = {
        "type": "Ready",
        "status": "True",
        "reason": "AsExpected",
        "message": "",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
        "observedGeneration": 2,
    }
    o = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
         "status": {"conditions": [good]}}  # fmt: skip
    assert validate_custom_object(rt, o) == []
    bad = {**good, "lastTransitionTime": "soon", "reason": "no spaces allowed"}
    o["status"]["conditions"] = [good, bad]
    fields = sorted(c["field"] for c in validate_custom_object(rt, o))
    assert fields == [
        "status.conditions[1]",
        "status.conditions[1].lastTransitionTime",
        "status.conditions[1].reason",
    ]


def test_errors_ordered_by_path_with_numeric_indices() -> None:
    ports = [{"port": 0 if i in (2, 10) else i + 1} for i in range(11)]
    rt = ResourceType(
        group="example.com",
        version="v1",
        kind="Widget",
        plural="widgets",
        schema={"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "items": PORT_SCHEMA}}}}},
        crd_name="widgets.example.com",
    )  # fmt: skip
    o = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}, "spec": {"ports": ports}}
    fields = [c["field"] for c in validate_custom_object(rt, o)]
    assert fields == ["spec.ports[2].port", "spec.ports[10].port"]
