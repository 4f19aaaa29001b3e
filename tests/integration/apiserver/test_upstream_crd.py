"""Custom-resource behaviour ported from kube 1.32's apiextensions-apiserver
(test/integration, pkg/apiserver/schema, pkg/registry/customresource) and
kubernetes test/integration/apiserver/crd_validation_expressions_test.go,
asserting kube's codes, reasons, causes and messages over real HTTP."""

# ruff: noqa: E501  (kube messages verbatim)
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from support import crds
from support.http import call

from pycontroller.testing import APIServer, wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ZEROS = "/apis/example.com/v1/zeros"
SCHEMA = "spec.versions[0].schema.openAPIV3Schema"

Raw = Callable[..., tuple[int, dict[str, str], Any]]


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def serve(raw: Raw, properties: dict[str, Any]) -> None:
    """Create the cluster-scoped ``zeros`` CRD and wait until it serves."""
    schema = {"type": "object", "properties": properties}
    code, _, body = raw("POST", CRDS, crds.crd("zeros", "Zero", schema=schema, scope="Cluster"))
    assert code == 201, body
    wait_for(lambda: raw("GET", ZEROS)[0] == 200, what="zeros to be served")


def zero(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Zero", "metadata": {"name": name}, **fields}


def causes(raw: Raw, obj: dict[str, Any]) -> list[dict[str, str]]:
    code, _, status = raw("POST", ZEROS, obj)
    assert code == 422, status
    assert status["reason"] == "Invalid"
    return list(status["details"]["causes"])


def crd_causes(raw: Raw, schema: dict[str, Any]) -> list[dict[str, str]]:
    code, _, status = raw("POST", CRDS, crds.crd("foos", "Foo", schema=schema))
    assert code == 422, status
    return list(status["details"]["causes"])


# validation_test.go TestCustomResourceValidationErrors with maxLength:
# kubeOpenAPIResultToFieldErrors -> field.TooLong, 1.32 wording.
def test_max_length_is_too_long_in_bytes(raw: Raw) -> None:
    serve(raw, {"s": {"type": "string", "maxLength": 3}})
    code, _, status = raw("POST", ZEROS, zero("z", s="abcd"))
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 3 bytes",
            "field": "s",
        }
    ]
    assert (
        status["message"]
        == 'Zero.example.com "z" is invalid: s: Too long: may not be more than 3 bytes'
    )


# objectmeta/validation.go validateEmbeddedResource (x-kubernetes-embedded-resource),
# as run by customResourceStrategy.Validate.
def test_embedded_resource_type_and_object_meta_are_validated(raw: Raw) -> None:
    serve(raw, {"e": {"type": "object", "x-kubernetes-embedded-resource": True,
                      "x-kubernetes-preserve-unknown-fields": True}})  # fmt: skip
    got = causes(raw, zero("empty", e={"apiVersion": "", "kind": ""}))
    assert got == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "": must not be empty',
            "field": "e.apiVersion",
        },
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "": must not be empty',
            "field": "e.kind",
        },
    ]
    got = causes(raw, zero("bad", e={"apiVersion": "a/b/c", "kind": "Pod_x"}))
    assert got == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c',
            "field": "e.apiVersion",
        },
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "Pod_x": may have mixed case, but should otherwise match: '
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character (e.g. "
            "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "field": "e.kind",
        },
    ]
    # Embedded metadata goes through ValidateObjectMeta (name: path segment rules).
    meta = {"name": "a/b", "labels": {"-x": "y"}}
    got = causes(raw, zero("meta", e={"apiVersion": "v1", "kind": "Pod", "metadata": meta}))
    assert {c["field"] for c in got} == {"e.metadata.name", "e.metadata.labels"}
    by_field = {c["field"]: c for c in got}
    assert by_field["e.metadata.name"]["message"] == "Invalid value: \"a/b\": may not contain '/'"
    # Mixed-case names are fine for embedded objects (ValidatePathSegmentName).
    ok = zero("ok", e={"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "UP"}})
    assert raw("POST", ZEROS, ok)[0] == 201


# strategy.go hasBlockingErr: a NotSupported/Required/TooLong/TooMany/TypeInvalid
# error skips the CEL rules with one field-less cause
# (crd_validation_expressions_test.go TestCustomResourceValidators).
def test_cel_rules_skipped_after_blocking_schema_error(raw: Raw) -> None:
    serve(raw, {"n": {"type": "integer", "maximum": 5},
                "s": {"type": "string", "enum": ["a", "b"]},
                "c": {"type": "integer",
                      "x-kubernetes-validations": [{"rule": "self > 10", "message": "  too small  "}]}})  # fmt: skip
    # Not blocking (plain Invalid): the rule runs, its message trimmed.
    got = causes(raw, zero("a", n=6, c=1))
    assert [c["message"] for c in got] == [
        "Invalid value: 6: n in body should be less than or equal to 5",
        'Invalid value: "integer": too small',
    ]
    code, _, status = raw("POST", ZEROS, zero("b", s="x", c=1))
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "x": supported values: "a", "b"',
            "field": "s",
        },
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "null": some validation rules were not checked because '
            "the object was invalid; correct the existing errors to complete validation",
            "field": "<nil>",
        },
    ]
    assert status["message"].endswith(
        '<nil>: Invalid value: "null": some validation rules were not checked because the '
        "object was invalid; correct the existing errors to complete validation]"
    )


# strategy.go: list-type errors are reported once, before the CEL rules'
# (a Duplicate is not a blocking error, so the rules still run).
def test_list_type_error_once_then_rules(raw: Raw) -> None:
    serve(raw, {"tags": {"type": "array", "items": {"type": "string"},
                         "x-kubernetes-list-type": "set",
                         "x-kubernetes-validations": [{"rule": "size(self) < 2", "message": "few"}]}})  # fmt: skip
    got = causes(raw, zero("d", tags=["a", "a"]))
    assert [(c["reason"], c["field"]) for c in got] == [
        ("FieldValueDuplicate", "tags[1]"),
        ("FieldValueInvalid", "tags"),
    ]


# schema/validation.go validateStructuralInvariants / validateNestedValueValidation,
# apiextensions validation.go ValidateCustomResourceDefinitionOpenAPISchema
# (validation_test.go TestForbiddenFieldsInSchema, TestNonStructuralSchemaCondition*).
@pytest.mark.parametrize(
    ("schema", "field", "message"),
    [
        ({"type": "object", "properties": {"a": {}}},
         f"{SCHEMA}.properties[a].type", "Required value: must not be empty for specified object fields"),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {}}}},
         f"{SCHEMA}.properties[a].items.type", "Required value: must not be empty for specified array items"),
        ({"type": "object", "additionalProperties": False},
         f"{SCHEMA}.additionalProperties", "Forbidden: must not be used at the root"),
        ({"type": "object", "properties": {"z": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}},
         f"{SCHEMA}.properties[z].uniqueItems",
         "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
        ({"type": "object", "$ref": "#/definition/zeta"}, f"{SCHEMA}.$ref", "Forbidden: $ref is not supported"),
        ({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}},
         f"{SCHEMA}.properties[metadata]",
         "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"),
        ({"type": "object", "properties": {"e": {"type": "object", "x-kubernetes-embedded-resource": True}}},
         f"{SCHEMA}.properties[e].properties",
         "Required value: must not be empty if x-kubernetes-embedded-resource is true without "
         "x-kubernetes-preserve-unknown-fields"),
        ({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}},
         f"{SCHEMA}.properties[a].anyOf[0].type", "Forbidden: must be empty to be structural"),
        ({"type": "object", "properties": {"a": {"type": "object", "anyOf": [{"properties": {"x": {"type": "string"}}}]}}},
         f"{SCHEMA}.properties[a].properties[x]",
         "Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.properties[a].anyOf[0].properties[x]"),
        ({"type": "object", "properties": {"a": {"type": "string", "x-kubernetes-list-type": "set"}}},
         f"{SCHEMA}.properties[a].type", 'Invalid value: "string": must be array if x-kubernetes-list-type is specified'),
    ],
)  # fmt: skip
def test_crd_schema_rejections(raw: Raw, schema: dict[str, Any], field: str, message: str) -> None:
    got = crd_causes(raw, schema)
    assert {"field": field, "message": message} in [
        {"field": c["field"], "message": c["message"]} for c in got
    ], got
