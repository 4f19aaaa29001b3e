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


def reschema(raw: Raw, properties: dict[str, Any], probe: dict[str, Any]) -> None:
    """Replace the ``zeros`` schema and wait until ``probe`` (newly invalid)
    is refused by a dry-run create."""
    path = f"{CRDS}/zeros.example.com"
    code, _, crd = raw("GET", path)
    assert code == 200, crd
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": properties,
    }
    code, _, body = raw("PUT", path, crd)
    assert code == 200, body
    wait_for(lambda: raw("POST", f"{ZEROS}?dryRun=All", probe)[0] == 422, what="the new schema")


def put(raw: Raw, name: str, **fields: Any) -> tuple[int, dict[str, str], Any]:
    """Replace the fields of ``zeros/name`` (other than metadata) with ``fields``."""
    code, _, cur = raw("GET", f"{ZEROS}/{name}")
    assert code == 200, cur
    return raw("PUT", f"{ZEROS}/{name}", {**zero(name, **fields), "metadata": cur["metadata"]})


# ratcheting_test.go "Map Type List Reordering Grandfathers Invalid Key":
# a list-type=map list correlates by key, so reordering an unchanged list
# that exceeds a new maxItems is ratcheted; adding an item is not.
def test_ratcheting_map_list_reorder_grandfathers_max_items(raw: Raw) -> None:
    item = {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "field": {"type": "string"}},
    }
    props = {"field": {"type": "array", "x-kubernetes-list-type": "map",
                       "x-kubernetes-list-map-keys": ["name"], "items": item}}  # fmt: skip
    serve(raw, props)
    items = [{"name": n, "field": "value"} for n in ("nginx", "etcd", "kube-apiserver")]
    assert raw("POST", ZEROS, zero("z", field=items))[0] == 201
    props["field"]["maxItems"] = 2
    reschema(raw, props, zero("probe", field=items))
    reordered = [items[2], items[0], items[1]]
    code, _, body = put(raw, "z", field=reordered)
    assert code == 200, body
    code, _, status = put(raw, "z", field=[*reordered, {"name": "dev", "field": "value"}])
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueTooMany", "message": "Too many: 4: must have at most 2 items",
         "field": "field"}
    ]  # fmt: skip
    # A changed value under an unchanged key is not ratcheted by its siblings.
    changed = [{**items[2], "field": "changed"}, items[0], items[1]]
    assert put(raw, "z", field=changed)[0] == 422


# ratcheting_test.go "ArrayItems do not correlate by index": items of an
# atomic list have no old value, so their errors ratchet only while the whole
# list is unchanged.
def test_ratcheting_atomic_list_items_do_not_correlate_by_index(raw: Raw) -> None:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    props = {"values": {"type": "array", "items": string_map}, "otherField": {"type": "string"}}
    serve(raw, props)
    values = [{"name": "1", "key": "value"}, {"name": "2", "key": "value"}]
    assert raw("POST", ZEROS, zero("z", values=values))[0] == 201
    props["values"]["items"] = {
        "type": "object",
        "additionalProperties": {"type": "string", "minLength": 6},
    }
    reschema(raw, props, zero("probe", values=[{"k": "short"}]))
    assert put(raw, "z", values=[values[0], {"name": "2", "key": "bad"}])[0] == 422
    code, _, body = put(raw, "z", values=values, otherField="hello world")
    assert code == 200, body
    grown = [values[0], {**values[1], "key2": "valid value"}]
    code, _, status = put(raw, "z", values=grown, otherField="hello world")
    assert code == 422, status
    assert [c["field"] for c in status["details"]["causes"]] == [
        "values[0].key",
        "values[0].name",
        "values[1].key",
        "values[1].name",
    ]


# ratcheting.go: a Required error belongs to the object declaring it, so it
# ratchets while that object is unchanged (a new required field does not
# block updates elsewhere).
def test_ratcheting_required_is_ratcheted_with_its_object(raw: Raw) -> None:
    spec = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    props = {"spec": spec, "other": {"type": "string"}}
    serve(raw, props)
    assert raw("POST", ZEROS, zero("z", spec={"b": "x"}))[0] == 201
    props["spec"] = {**spec, "required": ["a"]}
    reschema(raw, props, zero("probe", spec={"b": "x"}))
    code, _, body = put(raw, "z", spec={"b": "x"}, other="changed")
    assert code == 200, body
    code, _, status = put(raw, "z", spec={"b": "y"}, other="changed")
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.a"}
    ]


# cel/validation.go validateExpressions: a failing rule without oldSelf on an
# unchanged (correlated) value is a warning, not an error; transition rules
# are never ratcheted (ratcheting_test.go CEL_transition_rules_should_not_ratchet).
def test_ratcheting_cel_rules_warn_and_transition_rules_still_run(raw: Raw) -> None:
    props = {"s": {"type": "string"}, "t": {"type": "string"}, "o": {"type": "string"}}
    serve(raw, props)
    assert raw("POST", ZEROS, zero("z", s="bad", t="myStringValue"))[0] == 201
    props["s"]["x-kubernetes-validations"] = [{"rule": "self == 'ok'", "message": "must be ok"}]
    reschema(raw, props, zero("probe", s="bad"))
    code, headers, body = put(raw, "z", s="bad", t="myStringValue", o="new")
    assert code == 200, body
    assert headers.get("Warning") == '299 - "s: Invalid value: \\"string\\": must be ok"'
    props["t"]["x-kubernetes-validations"] = [
        {"rule": "oldSelf != 'myStringValue' || self == 'validstring'"}
    ]
    props["p"] = {"type": "string", "maxLength": 1}  # only to probe the new schema
    reschema(raw, props, zero("probe", p="xx"))
    code, _, status = put(raw, "z", s="bad", t="myStringValue", o="newer")
    assert code == 422, status
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: \"string\": failed rule: oldSelf != 'myStringValue' || self == 'validstring'",
            "field": "t",
        }
    ]
    assert put(raw, "z", s="bad", t="validstring", o="newer")[0] == 200


# ratcheting_test.go "CEL Optional OldSelf": optionalOldSelf rules run on
# create (oldSelf = optional.none()) and are not ratcheted on updates.
def test_ratcheting_optional_old_self(raw: Raw) -> None:
    rule = {
        "rule": "!oldSelf.hasValue()",
        "message": "oldSelf must be null",
        "optionalOldSelf": True,
    }
    serve(raw, {"field": {"type": "string", "x-kubernetes-validations": [rule]}})
    code, _, body = raw("POST", ZEROS, zero("z", field="value"))
    assert code == 201, body
    code, _, status = put(raw, "z", field="value2")
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "string": oldSelf must be null',
         "field": "field"}
    ]  # fmt: skip
    assert put(raw, "z", field="value")[0] == 422


# cel/validation.go validateArray: only list-type=map items correlate with
# old items; a set's items ratchet only with the whole (unchanged) set.
def test_ratcheting_set_items_are_not_correlated_for_rules(raw: Raw) -> None:
    tags = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    serve(raw, {"tags": tags})
    assert raw("POST", ZEROS, zero("z", tags=["a"]))[0] == 201
    tags["items"] = {
        "type": "string",
        "x-kubernetes-validations": [{"rule": "self.startsWith('k')"}],
    }
    reschema(raw, {"tags": tags}, zero("probe", tags=["x"]))
    code, _, status = put(raw, "z", tags=["a", "kb"])
    assert code == 422, status
    assert [c["field"] for c in status["details"]["causes"]] == ["tags[0]"]


# strategy.go ValidateUpdate: list-type set/map duplicates are checked on
# update only when the old object had none.
def test_ratcheting_list_type_duplicates_only_when_old_had_none(raw: Raw) -> None:
    props = {"tags": {"type": "array", "items": {"type": "string"}}, "o": {"type": "string"}}
    serve(raw, props)
    assert raw("POST", ZEROS, zero("dup", tags=["a", "a"]))[0] == 201
    assert raw("POST", ZEROS, zero("uniq", tags=["a", "b"]))[0] == 201
    props["tags"]["x-kubernetes-list-type"] = "set"
    reschema(raw, props, zero("probe", tags=["x", "x"]))
    code, _, body = put(raw, "dup", tags=["b", "b", "c", "c"], o="x")
    assert code == 200, body
    code, _, status = put(raw, "uniq", tags=["b", "b"])
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueDuplicate", "message": 'Duplicate value: "b"', "field": "tags[1]"}
    ]


# customresource_handler.go unstructuredSchemaCoercer.apply -> objectmeta
# Coerce: an embedded resource's apiVersion/kind must be strings and its
# metadata must decode as ObjectMeta, else the decode fails
# (transformDecodeError: 400 "... cannot be handled as a Zero: <field.Error>").
@pytest.mark.parametrize(
    ("embedded", "error"),
    [
        ({"apiVersion": 1, "kind": "K"}, "e.apiVersion: Invalid value: 1: must be a string"),
        ({"apiVersion": "v1", "kind": True}, "e.kind: Invalid value: true: must be a string"),
        ({"apiVersion": "v1", "kind": "K", "metadata": "x"},
         'e.metadata: Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta'),
        ({"apiVersion": "v1", "kind": "K", "metadata": {"name": 1}},
         'e.metadata: Invalid value: map[string]interface {}{"name":1}: json: cannot unmarshal '
         "number into Go struct field ObjectMeta.name of type string"),
    ],
)  # fmt: skip
def test_embedded_resource_wrong_json_types_are_bad_request(
    raw: Raw, embedded: dict[str, Any], error: str
) -> None:
    serve(raw, {"e": {"type": "object", "x-kubernetes-embedded-resource": True,
                      "x-kubernetes-preserve-unknown-fields": True}})  # fmt: skip
    code, _, status = raw("POST", ZEROS, zero("z", e=embedded))
    assert code == 400, status
    assert status["reason"] == "BadRequest"
    assert status["message"] == f'Zero in version "v1" cannot be handled as a Zero: {error}'
    assert raw("POST", ZEROS, zero("z", e={"apiVersion": "v1", "kind": "K"}))[0] == 201
    code, _, status = put(raw, "z", e=embedded)
    assert code == 400, status
    assert status["message"] == f'Zero in version "v1" cannot be handled as a Zero: {error}'


# validation.go ValidateCustomResourceDefinitionOpenAPISchema: only true is
# accepted for x-kubernetes-preserve-unknown-fields.
def test_preserve_unknown_fields_false_is_refused(raw: Raw) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}}}  # fmt: skip
    assert {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: false: must be true or undefined",
        "field": f"{SCHEMA}.properties[a].x-kubernetes-preserve-unknown-fields",
    } in crd_causes(raw, schema)


# defaulting/validation.go validate -> ValidateCustomResource(pth.Child("default")):
# the default's own schema errors, one cause each, named below ".default"
# (validation_test.go "defaults with invalid values"); a scalar's go-openapi
# name is empty, hence " in body ...".
def test_invalid_defaults_report_their_schema_errors(raw: Raw) -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "integer", "maximum": 5, "default": 6},
        "c": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": 42}},
        "d": {"type": "object", "additionalProperties": {"type": "string", "pattern": "b"},
              "default": {"good": "b", "bad": "a"}},
    }}  # fmt: skip
    got = sorted(crd_causes(raw, schema), key=lambda c: c["field"])
    assert got == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 6:  in body should be less than or equal to 5",
            "field": f"{SCHEMA}.properties[a].default",
        },
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "integer": foo in body must be of type string: "integer"',
            "field": f"{SCHEMA}.properties[c].default.foo",
        },
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: \"a\": bad in body should match 'b'",
            "field": f"{SCHEMA}.properties[d].default.bad",
        },
    ]
