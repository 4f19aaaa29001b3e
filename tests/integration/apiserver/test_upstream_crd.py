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
SCHEMA = "spec.validation.openAPIV3Schema"

Raw = Callable[..., tuple[int, dict[str, str], Any]]


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def serve(raw: Raw, properties: dict[str, Any], subresources: dict[str, Any] | None = None) -> None:
    """Create the cluster-scoped ``zeros`` CRD and wait until it serves."""
    schema = {"type": "object", "properties": properties}
    manifest = crds.crd("zeros", "Zero", schema=schema, scope="Cluster", subresources=subresources)
    code, _, body = raw("POST", CRDS, manifest)
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
         "Required value: because it is defined in spec.validation.openAPIV3Schema.properties[a].anyOf[0].properties[x]"),
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


STATUS = {"status": {}}
SCALE = {
    "status": {},
    "scale": {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    },
}


def put_status(raw: Raw, name: str, **fields: Any) -> tuple[int, dict[str, str], Any]:
    """Replace ``zeros/name`` through ``/status`` with ``fields`` (metadata kept)."""
    code, _, cur = raw("GET", f"{ZEROS}/{name}")
    assert code == 200, cur
    return raw(
        "PUT", f"{ZEROS}/{name}/status", {**zero(name, **fields), "metadata": cur["metadata"]}
    )


# subresources_test.go TestValidateOnlyStatus: status_strategy.go ValidateUpdate
# -> ValidateStatusUpdate validates .status alone against the status schema
# (its go-openapi names relative to it: "num in body ..."); the spec sent is
# ignored (PrepareForUpdate keeps the old one).
def test_status_write_validates_only_status(raw: Raw) -> None:
    num = {"type": "object", "properties": {"num": {"type": "integer", "maximum": 10}}}
    serve(raw, {"spec": num, "status": num}, STATUS)
    assert raw("POST", ZEROS, zero("z", spec={"num": 10}))[0] == 201
    code, _, body = put_status(raw, "z", spec={"num": 15}, status={"num": 10})
    assert code == 200, body
    assert body["spec"] == {"num": 10}
    code, _, status = put_status(raw, "z", spec={"num": 15}, status={"num": 15})
    assert code == 422, status
    assert status["message"] == (
        'Zero.example.com "z" is invalid: status.num: Invalid value: 15: '
        "num in body should be less than or equal to 10"
    )
    code, _, status = put_status(raw, "z", status="x")
    assert code == 422, status
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "string":  in body must be of type object: "string"',
            "field": "status",
        }
    ]


# status_strategy.go ValidateUpdate: no schemaobjectmeta.Validate (embedded
# resources are not checked) and neither the schema nor the CEL validator is
# given the ratcheting options strategy.go's ValidateUpdate passes, so an
# unchanged invalid value blocks a status write (a main write ratchets it).
def test_status_write_skips_embedded_checks_and_does_not_ratchet(raw: Raw) -> None:
    embedded = {"type": "object", "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True}  # fmt: skip
    props: dict[str, Any] = {
        "spec": {"type": "object", "properties": {"c": {"type": "string"}}},
        "status": {"type": "object", "properties": {"e": embedded, "s": {"type": "string"},
                                                    "n": {"type": "integer"}}},
        "p": {"type": "string"},
    }  # fmt: skip
    serve(raw, props, STATUS)
    assert raw("POST", ZEROS, zero("z", spec={"c": "bad"}))[0] == 201
    code, _, body = put_status(raw, "z", spec={"c": "bad"}, status={"e": {"apiVersion": "", "kind": ""}, "s": "long"})  # fmt: skip
    assert code == 200, body
    assert body["status"]["e"] == {"apiVersion": "", "kind": ""}
    # strategy.go ValidateUpdate checks the embedded resources of the whole
    # new object, the kept status included.
    code, _, status = put(raw, "z", spec={"c": "bad"}, p="x")
    assert code == 422, status
    assert [c["field"] for c in status["details"]["causes"]] == [
        "status.e.apiVersion",
        "status.e.kind",
    ]
    stored = {"e": {"apiVersion": "v1", "kind": "K"}, "s": "long"}
    assert put_status(raw, "z", spec={"c": "bad"}, status=stored)[0] == 200
    props["status"]["properties"]["s"]["maxLength"] = 1
    props["p"]["maxLength"] = 1
    reschema(raw, props, zero("probe", p="xx"))
    code, _, status = put_status(raw, "z", spec={"c": "bad"}, status={**stored, "n": 1})
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueTooLong", "message": "Too long: may not be more than 1 bytes",
         "field": "status.s"}
    ]  # fmt: skip
    code, _, body = put(raw, "z", spec={"c": "bad"}, p="y")
    assert code == 200, body.get("message")
    # A rule failing on the old spec: a main write only warns, a status write fails.
    props["status"]["properties"]["s"].pop("maxLength")
    props["spec"]["properties"]["c"]["x-kubernetes-validations"] = [{"rule": "self == 'ok'"}]
    reschema(raw, props, zero("probe", spec={"c": "bad"}))
    code, headers, body = put(raw, "z", spec={"c": "bad"}, p="z")
    assert code == 200, body
    assert "failed rule" in headers.get("Warning", "")
    code, _, status = put_status(raw, "z", spec={"c": "bad"}, status={**stored, "n": 2})
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": "Invalid value: \"string\": failed rule: self == 'ok'",
         "field": "spec.c"}
    ]  # fmt: skip


# validator.go ValidateScaleSpec / ValidateScaleStatus, run by
# customResourceStrategy.Validate and ValidateUpdate: the replicas at the scale
# paths must be int64 in [0, MaxInt32] and the selector a string; the field is
# the path as written (leading dot), unstructured.Nested* errors verbatim.
@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"spec": {"replicas": -1}}, ".spec.replicas", "Invalid value: -1: should be a non-negative integer"),
        ({"spec": {"replicas": 2147483648}}, ".spec.replicas",
         "Invalid value: 2147483648: should be less than or equal to 2147483647"),
        ({"spec": {"replicas": "foo"}}, ".spec.replicas",
         "Invalid value: 0: .spec.replicas accessor error: foo is of the type string, expected int64"),
        ({"spec": {"replicas": 1.5}}, ".spec.replicas",
         "Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64"),
    ],
)  # fmt: skip
def test_scale_spec_values_are_validated_on_writes(
    raw: Raw, fields: dict[str, Any], field: str, message: str
) -> None:
    serve(raw, {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
          | {"status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, SCALE)  # fmt: skip
    cause = {"reason": "FieldValueInvalid", "message": message, "field": field}
    code, _, status = raw("POST", ZEROS, zero("z", **fields))
    assert code == 422, status
    assert status["details"]["causes"] == [cause]
    assert status["message"] == f'Zero.example.com "z" is invalid: {field}: {message}'
    assert raw("POST", ZEROS, zero("z", spec={"replicas": 1}))[0] == 201
    code, _, status = put(raw, "z", **fields)
    assert code == 422, status
    assert status["details"]["causes"] == [cause]
    # A status write runs ValidateScaleStatus only: the spec is the old one anyway.
    code, _, body = put_status(raw, "z", spec={"replicas": 1}, status={"replicas": 2})
    assert code == 200, body


@pytest.mark.parametrize(
    ("status", "field", "message"),
    [
        ({"replicas": -1}, ".status.replicas", "Invalid value: -1: should be a non-negative integer"),
        ({"replicas": 2147483648}, ".status.replicas",
         "Invalid value: 2147483648: should be less than or equal to 2147483647"),
        ({"replicas": True}, ".status.replicas",
         "Invalid value: 0: .status.replicas accessor error: true is of the type bool, expected int64"),
        ({"selector": 5}, ".status.selector",
         'Invalid value: "": .status.selector accessor error: 5 is of the type int64, expected string'),
        ({"selector": {"a": "b"}}, ".status.selector",
         'Invalid value: "": .status.selector accessor error: map[a:b] is of the type map[string]interface {}, expected string'),
    ],
)  # fmt: skip
def test_scale_status_values_are_validated_on_status_writes(
    raw: Raw, status: dict[str, Any], field: str, message: str
) -> None:
    serve(raw, {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, SCALE)  # fmt: skip
    assert raw("POST", ZEROS, zero("z", spec={"replicas": 1}))[0] == 201
    code, _, body = put_status(raw, "z", status=status)
    assert code == 422, body
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": message, "field": field}
    ]


# The same on a status write whose status is not an object: the status
# schema's error (relative name, empty), then NestedFieldNoCopy's on both paths.
def test_scale_status_paths_through_a_non_object(raw: Raw) -> None:
    serve(raw, {"status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, SCALE)
    assert raw("POST", ZEROS, zero("z"))[0] == 201
    code, _, body = put_status(raw, "z", status="x")
    assert code == 422, body
    assert body["details"]["causes"] == [
        {"reason": "FieldValueTypeInvalid",
         "message": 'Invalid value: "string":  in body must be of type object: "string"', "field": "status"},
        {"reason": "FieldValueInvalid", "field": ".status.replicas",
         "message": "Invalid value: 0: .status.replicas accessor error: x is of the type string, expected map[string]interface{}"},
        {"reason": "FieldValueInvalid", "field": ".status.selector",
         "message": 'Invalid value: "": .status.selector accessor error: x is of the type string, expected map[string]interface{}'},
    ]  # fmt: skip


LIST = f"{SCHEMA}.properties[l]"


def list_schema(**list_fields: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"l": {"type": "array", **list_fields}}}


# validation.go ValidateCustomResourceDefinitionOpenAPISchema (map keys) and
# validateMapListKeysMapSet (requireMapListKeysMapSetValidation, true on create).
def test_list_map_keys_must_be_required_or_defaulted_and_not_nullable(raw: Raw) -> None:
    item = {"type": "object", "nullable": True, "properties": {
        "a": {"type": "string"}, "b": {"type": "string", "nullable": True},
        "c": {"type": "string", "default": "x"}, "d": {"type": "string"}}, "required": ["d"]}  # fmt: skip
    got = crd_causes(raw, list_schema(items=item, **{"x-kubernetes-list-type": "map",
                     "x-kubernetes-list-map-keys": ["a", "b", "c", "d"]}))  # fmt: skip
    assert got == [
        {"reason": "FieldValueForbidden", "field": f"{LIST}.items.nullable",
         "message": "Forbidden: cannot be nullable when x-kubernetes-list-type is map"},
        {"reason": "FieldValueRequired", "field": f"{LIST}.items.properties[a].default",
         "message": "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"},
        {"reason": "FieldValueRequired", "field": f"{LIST}.items.properties[b].default",
         "message": "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"},
        {"reason": "FieldValueForbidden", "field": f"{LIST}.items.properties[b].nullable",
         "message": "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("list_fields", "expected"),
    [
        ({"x-kubernetes-list-map-keys": ["a"]},
         [("FieldValueRequired", f"{LIST}.x-kubernetes-list-type",
           "Required value: must be map if x-kubernetes-list-map-keys is non-empty")]),
        ({"x-kubernetes-list-type": "set", "x-kubernetes-list-map-keys": ["a"]},
         [("FieldValueInvalid", f"{LIST}.items.x-kubernetes-map-type",
           'Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set'),
          ("FieldValueInvalid", f"{LIST}.x-kubernetes-list-type",
           'Invalid value: "set": must be map if x-kubernetes-list-map-keys is non-empty')]),
        ({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "z", "a"]},
         [("FieldValueInvalid", f"{LIST}.x-kubernetes-list-map-keys",
           'Invalid value: []string{"a", "z", "a"}: entries must all be names of item properties'),
          ("FieldValueInvalid", f"{LIST}.x-kubernetes-list-map-keys",
           'Invalid value: []string{"a", "z", "a"}: must not contain duplicate entries')]),
        ({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["o"]},
         [("FieldValueInvalid", f"{LIST}.items.properties[o].type",
           "Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map")]),
    ],
)  # fmt: skip
def test_list_map_keys_crd_errors(
    raw: Raw, list_fields: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    item = {"type": "object", "required": ["a", "o"], "properties": {
        "a": {"type": "string"}, "o": {"type": "object", "properties": {"x": {"type": "string"}}}}}  # fmt: skip
    got = crd_causes(raw, list_schema(items=item, **list_fields))
    assert [(c["reason"], c["field"], c["message"]) for c in got] == expected


MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"


# subresources_test.go TestStatusSubresource, TestGeneration, TestScaleSubresource
# and TestSubresourcePatch on one object: create drops status; a status write
# keeps the spec and the generation, a main write keeps the status and bumps
# the generation; /scale shows and writes only the replicas; no-op and empty
# patches of either subresource leave the resourceVersion; no strategic merge.
def test_status_and_scale_subresources(raw: Raw) -> None:
    serve(raw, {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, SCALE)  # fmt: skip
    code, _, obj = raw("POST", ZEROS, zero("z", spec={"num": 10, "replicas": 3}, status={"replicas": 7}))  # fmt: skip
    assert code == 201, obj
    assert "status" not in obj
    assert obj["metadata"]["generation"] == 1
    code, _, obj = put_status(raw, "z", spec={"num": 20, "replicas": 3}, status={"num": 20})
    assert code == 200, obj
    assert (obj["spec"]["num"], obj["status"]["num"], obj["metadata"]["generation"]) == (10, 20, 1)
    code, _, obj = put(raw, "z", spec={"num": 40, "replicas": 3}, status={"num": 40})
    assert code == 200, obj
    assert (obj["spec"]["num"], obj["status"]["num"], obj["metadata"]["generation"]) == (40, 20, 2)

    patch = {"spec": {"num": 999}, "status": {"num": 999}}
    code, _, obj = raw("PATCH", f"{ZEROS}/z/status", patch, MERGE)
    assert code == 200, obj
    assert (obj["spec"]["num"], obj["status"]["num"], obj["metadata"]["generation"]) == (40, 999, 2)
    rv = obj["metadata"]["resourceVersion"]
    for body in (patch, {}):
        code, _, obj = raw("PATCH", f"{ZEROS}/z/status", body, MERGE)
        assert (code, obj["metadata"]["resourceVersion"]) == (200, rv), obj

    code, _, obj = put_status(raw, "z", status={"num": 999, "selector": "bar"})
    assert code == 200, obj
    code, _, scale = raw("GET", f"{ZEROS}/z/scale")
    assert code == 200, scale
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 0, "selector": "bar"}
    scale["spec"]["replicas"] = 5
    scale["status"]["selector"] = "baz"
    code, _, scale = raw("PUT", f"{ZEROS}/z/scale", scale)
    assert code == 200, scale
    assert (scale["spec"], scale["status"]) == ({"replicas": 5}, {"replicas": 0, "selector": "bar"})
    code, _, obj = raw("GET", f"{ZEROS}/z")
    assert (obj["spec"]["replicas"], obj["status"]["selector"]) == (5, "bar")
    assert obj["metadata"]["generation"] == 3

    patch = {"spec": {"replicas": 7}, "status": {"replicas": 7}}
    code, _, scale = raw("PATCH", f"{ZEROS}/z/scale", patch, MERGE)
    assert code == 200, scale
    assert (scale["spec"], scale["status"]["replicas"]) == ({"replicas": 7}, 0)
    rv = scale["metadata"]["resourceVersion"]
    for body in (patch, {}):
        code, _, scale = raw("PATCH", f"{ZEROS}/z/scale", body, MERGE)
        assert (code, scale["metadata"]["resourceVersion"]) == (200, rv), scale
    for sub in ("status", "scale"):
        code, _, status = raw("PATCH", f"{ZEROS}/z/{sub}", patch, SMP)
        assert code == 415, status
        assert status["reason"] == "UnsupportedMediaType"

    code, _, status = put(raw, "z", spec={"replicas": 2**63 - 1})
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": ".spec.replicas",
         "message": "Invalid value: 9223372036854775807: should be less than or equal to 2147483647"}
    ]  # fmt: skip


# validation.go ValidateCustomResourceDefinitionSubresources / validateSimpleJSONPath
# (TestScaleSubresource: "foo,bar" is refused).
@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("specReplicasPath", "foo,bar", 'Invalid value: "foo,bar": must be a simple json path starting with .'),
        ("specReplicasPath", ".status.r", 'Invalid value: ".status.r": should be a json path under .spec'),
        ("statusReplicasPath", ".spec.r", 'Invalid value: ".spec.r": should be a json path under .status'),
        ("labelSelectorPath", ".metadata.labels",
         'Invalid value: ".metadata.labels": should be a json path under either .spec or .status'),
        ("statusReplicasPath", "", "Required value"),
    ],
)  # fmt: skip
def test_scale_paths_must_be_json_paths(raw: Raw, key: str, value: str, message: str) -> None:
    manifest = crds.crd("foos", "Foo", subresources={**SCALE, "scale": {**SCALE["scale"], key: value}})  # fmt: skip
    code, _, status = raw("POST", CRDS, manifest)
    assert code == 422, status
    assert status["details"]["causes"] == [
        {"reason": "FieldValueRequired" if not value else "FieldValueInvalid",
         "field": f"spec.subresources.scale.{key}", "message": message}
    ]  # fmt: skip


TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"


# table_test.go TestTableGet: additionalPrinterColumns with their type, format,
# description (a default one naming the path) and priority; an integer column
# of a string value is null, a string column of an array is its JSON.
@pytest.mark.parametrize("accept", [TABLE_V1, TABLE_V1BETA1])
def test_printer_columns_table(raw: Raw, accept: str) -> None:
    columns = [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Alpha", "type": "string", "jsonPath": ".spec.alpha"},
        {"name": "Beta", "type": "integer", "description": "the beta field", "format": "int64",
         "priority": 42, "jsonPath": ".spec.beta"},
        {"name": "Gamma", "type": "integer", "description": "a column with wrongly typed values",
         "jsonPath": ".spec.gamma"},
        {"name": "Epsilon", "type": "string", "description": "an array of integers as string",
         "jsonPath": ".spec.epsilon"},
    ]  # fmt: skip
    manifest = crds.crd("zeros", "Zero", scope="Cluster")
    manifest["spec"]["versions"][0]["additionalPrinterColumns"] = columns
    assert raw("POST", CRDS, manifest)[0] == 201
    wait_for(lambda: raw("GET", ZEROS)[0] == 200, what="zeros to be served")
    spec = {"alpha": "foo_123", "beta": 10, "gamma": "bar", "delta": "hello", "epsilon": [1, 2, 3]}
    assert raw("POST", ZEROS, zero("foo", spec=spec))[0] == 201
    code, _, tbl = raw("GET", ZEROS, headers={"Accept": accept})
    assert code == 200, tbl
    assert tbl["kind"] == "Table"
    assert tbl["apiVersion"] == ("meta.k8s.io/v1" if accept == TABLE_V1 else "meta.k8s.io/v1beta1")
    defs = tbl["columnDefinitions"]
    assert (defs[0]["name"], defs[0]["type"], defs[0]["format"]) == ("Name", "string", "name")
    assert defs[1:] == [
        {"name": "Age", "type": "date", "format": "", "priority": 0,
         "description": "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp"},
        {"name": "Alpha", "type": "string", "format": "", "priority": 0,
         "description": "Custom resource definition column (in JSONPath format): .spec.alpha"},
        {"name": "Beta", "type": "integer", "format": "int64", "priority": 42,
         "description": "the beta field"},
        {"name": "Gamma", "type": "integer", "format": "", "priority": 0,
         "description": "a column with wrongly typed values"},
        {"name": "Epsilon", "type": "string", "format": "", "priority": 0,
         "description": "an array of integers as string"},
    ]  # fmt: skip
    (row,) = tbl["rows"]
    cells = row["cells"]
    assert cells[0] == "foo"
    assert cells[1].endswith("s")
    assert cells[2:] == ["foo_123", 10, None, "[1,2,3]"]


# tableconvertor.go cellForJSONValue and jsonpath PrintResults (string
# columns: a non-string value as its JSON): a date that does not parse is
# "<invalid>", an integer column truncates a float, a number column widens an
# integer, a value of another type (or a missing one) is null.
def test_printer_column_cells_by_type(raw: Raw) -> None:
    cols = [("d", "date"), ("i", "integer"), ("n", "number"), ("b", "boolean"),
            ("s", "string"), ("o", "string"), ("f", "string"), ("m", "string")]  # fmt: skip
    manifest = crds.crd("zeros", "Zero", scope="Cluster")
    manifest["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": name.upper(), "type": typ, "jsonPath": f".spec.{name}"} for name, typ in cols
    ]
    assert raw("POST", CRDS, manifest)[0] == 201
    wait_for(lambda: raw("GET", ZEROS)[0] == 200, what="zeros to be served")
    spec = {"d": "yesterday", "i": 3.7, "n": 2, "b": "true", "s": 1.5,
            "o": {"b": [True, None], "a": "x"}, "f": 1e21}  # fmt: skip
    assert raw("POST", ZEROS, zero("foo", spec=spec))[0] == 201
    code, _, tbl = raw("GET", ZEROS, headers={"Accept": TABLE_V1})
    assert code == 200, tbl
    cells = tbl["rows"][0]["cells"][1:]
    assert cells == ["<invalid>", 3, 2.0, None, "1.5", '{"a":"x","b":[true,null]}', "1e+21", None]


# versioning_test.go testStoragedVersionInCRDStatus and basic_test.go
# testSimpleVersionedCRUD (conversion strategy None): every served version
# reads and writes the same objects with its own apiVersion, an unserved
# version is not found, and status.storedVersions keeps each storage version.
def test_versions_with_none_conversion(raw: Raw) -> None:
    manifest = crds.crd("zeros", "Zero", scope="Cluster", version="v1beta1")
    v1beta1 = manifest["spec"]["versions"][0]
    v1beta2 = {**v1beta1, "name": "v1beta2", "storage": False}
    v0 = {**v1beta1, "name": "v0", "served": False, "storage": False}
    manifest["spec"]["versions"] = [v1beta1, v1beta2, v0]
    code, _, crd = raw("POST", CRDS, manifest)
    assert code == 201, crd
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    base = "/apis/example.com"
    wait_for(lambda: raw("GET", f"{base}/v1beta2/zeros")[0] == 200, what="zeros to be served")
    obj = {"apiVersion": "example.com/v1beta2", "kind": "Zero", "metadata": {"name": "z"}, "spec": {"a": 1}}  # fmt: skip
    code, _, created = raw("POST", f"{base}/v1beta2/zeros", obj)
    assert code == 201, created
    assert created["apiVersion"] == "example.com/v1beta2"
    code, _, got = raw("GET", f"{base}/v1beta1/zeros/z")
    assert (code, got["apiVersion"], got["spec"]) == (200, "example.com/v1beta1", {"a": 1})
    code, _, listed = raw("GET", f"{base}/v1beta1/zeros")
    assert [i["apiVersion"] for i in listed["items"]] == ["example.com/v1beta1"]
    assert listed["apiVersion"] == "example.com/v1beta1"
    for method, path, body in (("GET", "/z", None), ("GET", "", None), ("POST", "", obj)):
        code, _, status = raw(method, f"{base}/v0/zeros{path}", body)
        assert (code, status["reason"]) == (404, "NotFound"), status
    # A body of another version is refused by the version written to
    # (update.go / create.go AcceptsGroupVersion: only the endpoint's).
    code, _, status = raw("PUT", f"{base}/v1beta1/zeros/z", {**got, "apiVersion": "example.com/v1beta2"})  # fmt: skip
    assert (code, status["reason"]) == (400, "BadRequest"), status
    assert status["message"] == (
        "the API version in the data (example.com/v1beta2) does not match the expected "
        "API version (example.com/v1beta1)"
    )
    code, _, status = raw("POST", f"{base}/v1beta1/zeros", {**obj, "metadata": {"name": "y"}})
    assert (code, status["reason"]) == (400, "BadRequest"), status
    code, _, crd = raw("GET", f"{CRDS}/zeros.example.com")
    assert crd["status"]["storedVersions"] == ["v1beta1"]
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"][1]["storage"] = True
    code, _, crd = raw("PUT", f"{CRDS}/zeros.example.com", crd)
    assert code == 200, crd
    assert crd["status"]["storedVersions"] == ["v1beta1", "v1beta2"]
    code, _, got = raw("GET", f"{base}/v1beta1/zeros/z")
    assert (code, got["apiVersion"]) == (200, "example.com/v1beta1")


# validation.go ValidateCustomResourceColumnDefinition: the type and format
# from fixed sets (sorted in the message), a simple JSONPath (the internal
# field name, "JSONPath"); names need not be unique.
def test_printer_column_definitions_are_validated(raw: Raw) -> None:
    manifest = crds.crd("foos", "Foo")
    manifest["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "A", "type": "float", "format": "int16", "jsonPath": "spec.a"},
        {"name": "A", "jsonPath": ".spec.a"},
        {"name": "", "type": "string", "format": "date-time"},
    ]
    code, _, status = raw("POST", CRDS, manifest)
    assert code == 422, status
    col = "spec.additionalPrinterColumns"
    assert [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]] == [
        ("FieldValueInvalid", f"{col}[0].type", 'Invalid value: "float": must be one of boolean,date,integer,number,string'),
        ("FieldValueInvalid", f"{col}[0].format",
         'Invalid value: "int16": must be one of byte,date,date-time,double,float,int32,int64,password'),
        ("FieldValueInvalid", f"{col}[0].JSONPath", 'Invalid value: "spec.a": must be a simple json path starting with .'),
        ("FieldValueRequired", f"{col}[1].type", "Required value: must be one of boolean,date,integer,number,string"),
        ("FieldValueRequired", f"{col}[2].name", "Required value"),
        ("FieldValueRequired", f"{col}[2].JSONPath", "Required value"),
    ]  # fmt: skip


# tableconvertor.New: a column whose JSONPath does not parse ends the list
# (the convertor keeps the columns before it; the handler logs and serves it).
def test_printer_columns_stop_at_an_unparsable_json_path(raw: Raw) -> None:
    manifest = crds.crd("zeros", "Zero", scope="Cluster")
    manifest["spec"]["versions"][0]["additionalPrinterColumns"] = [
        {"name": "A", "type": "string", "jsonPath": ".spec.a"},
        {"name": "B", "type": "string", "jsonPath": ".spec.b["},
        {"name": "C", "type": "string", "jsonPath": ".spec.c"},
    ]
    code, _, body = raw("POST", CRDS, manifest)
    assert code == 201, body
    wait_for(lambda: raw("GET", ZEROS)[0] == 200, what="zeros to be served")
    assert raw("POST", ZEROS, zero("foo", spec={"a": "x", "b": "y", "c": "z"}))[0] == 201
    code, _, tbl = raw("GET", ZEROS, headers={"Accept": TABLE_V1})
    assert code == 200, tbl
    assert [c["name"] for c in tbl["columnDefinitions"]] == ["Name", "A"]
    assert tbl["rows"][0]["cells"] == ["foo", "x"]


# validation.go ValidateCustomResourceDefinitionOpenAPISchema: x-kubernetes-map-type
# needs an object and is atomic or granular; a set's items are atomic
# (requireAtomicSetType, true on create; the bad value is the item's
# x-kubernetes-list-type, a nil pointer printed "null").
@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"type": "string", "x-kubernetes-map-type": "atomic"},
         [("FieldValueInvalid", "type", 'Invalid value: "string": must be object if x-kubernetes-map-type is specified')]),
        ({"type": "object", "x-kubernetes-map-type": "foo"},
         [("FieldValueNotSupported", "x-kubernetes-map-type", 'Unsupported value: "foo": supported values: "atomic", "granular"')]),
        ({"type": "array", "x-kubernetes-list-type": "set",
          "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
         [("FieldValueInvalid", "items.x-kubernetes-map-type",
           'Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set')]),
        ({"type": "array", "x-kubernetes-list-type": "set",
          "items": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}},
         [("FieldValueInvalid", "items.x-kubernetes-list-type",
           'Invalid value: "set": must be atomic as item of a list with x-kubernetes-list-type=set')]),
    ],
)  # fmt: skip
def test_map_type_and_set_item_rules(
    raw: Raw, prop: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    got = crd_causes(raw, {"type": "object", "properties": {"l": prop}})
    assert [(c["reason"], c["field"], c["message"]) for c in got] == [
        (reason, f"{LIST}.{field}", message) for reason, field, message in expected
    ]


def test_atomic_set_items_are_fine(raw: Raw) -> None:
    items = {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}}}  # fmt: skip
    schema = {"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "set", "items": items}}}  # fmt: skip
    code, _, body = raw("POST", CRDS, crds.crd("foos", "Foo", schema=schema))
    assert code == 201, body


# validation.go ValidateCustomResourceDefinitionOpenAPISchema, each
# x-kubernetes-validations rule: rule, message, messageExpression, reason and
# fieldPath checks, one else-if chain for rule and message.
@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({"rule": "  "}, [("FieldValueRequired", "rule", "Required value: rule is not specified")]),
        ({"rule": "true", "message": "  "},
         [("FieldValueInvalid", "message", 'Invalid value: "  ": message must be non-empty if specified')]),
        ({"rule": "true &&\ntrue"},
         [("FieldValueRequired", "message", "Required value: message must be specified if rule contains line breaks")]),
        ({"rule": "true", "messageExpression": " "},
         [("FieldValueRequired", "messageExpression", "Required value: messageExpression must be non-empty if specified")]),
        ({"rule": "true", "fieldPath": " "},
         [("FieldValueInvalid", "fieldPath", 'Invalid value: " ": fieldPath must be non-empty if specified'),
          ("FieldValueInvalid", "fieldPath", 'Invalid value: " ": fieldPath must be a valid path')]),
        ({"rule": "true", "fieldPath": ".a\\n"},
         [("FieldValueInvalid", "fieldPath", 'Invalid value: ".a\\\\n": fieldPath must be a valid path')]),
        ({"rule": "true", "fieldPath": ".a\n"},
         [("FieldValueInvalid", "fieldPath", 'Invalid value: ".a\\n": fieldPath must not contain line breaks'),
          ("FieldValueInvalid", "fieldPath", 'Invalid value: ".a\\n": fieldPath must be a valid path')]),
        ({"rule": "true", "fieldPath": "['a']"}, []),
        ({"rule": "true", "fieldPath": ".nope"},
         [("FieldValueInvalid", "fieldPath", 'Invalid value: ".nope": fieldPath must be a valid path')]),
    ],
)  # fmt: skip
def test_validation_rule_fields_are_checked(
    raw: Raw, rule: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    prop = {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [rule]}  # fmt: skip
    if not expected:
        schema = {"type": "object", "properties": {"l": prop}}
        code, _, body = raw("POST", CRDS, crds.crd("foos", "Foo", schema=schema))
        assert code == 201, body
        return
    got = crd_causes(raw, {"type": "object", "properties": {"l": prop}})
    base = f"{LIST}.x-kubernetes-validations[0]"
    assert [(c["reason"], c["field"], c["message"]) for c in got] == [
        (reason, f"{base}.{field}", message) for reason, field, message in expected
    ]


# validation.go validateCustomResourceConversion (v1's conversion.webhook is
# the internal webhookClientConfig / conversionReviewVersions, hence the paths).
@pytest.mark.parametrize(
    ("conversion", "expected"),
    [
        ({"strategy": "Foo"},
         [("FieldValueNotSupported", "spec.conversion.strategy", 'Unsupported value: "Foo": supported values: "None", "Webhook"')]),
        ({"strategy": "Webhook"},
         [("FieldValueRequired", "spec.conversion.webhookClientConfig", "Required value: required when strategy is set to Webhook"),
          ("FieldValueRequired", "spec.conversion.conversionReviewVersions", "Required value")]),
        ({"strategy": "Webhook", "webhook": {"clientConfig": {}, "conversionReviewVersions": ["v9", "v9"]}},
         [("FieldValueRequired", "spec.conversion.webhookClientConfig", "Required value: exactly one of url or service is required"),
          ("FieldValueInvalid", "spec.conversion.conversionReviewVersions[1]", 'Invalid value: "v9": duplicate version'),
          ("FieldValueInvalid", "spec.conversion.conversionReviewVersions",
           'Invalid value: []string{"v9", "v9"}: must include at least one of v1, v1beta1')]),
        ({"strategy": "None", "webhook": {"clientConfig": {"url": "https://x.example.com"}, "conversionReviewVersions": ["v1"]}},
         [("FieldValueForbidden", "spec.conversion.webhookClientConfig", "Forbidden: should not be set when strategy is not set to Webhook"),
          ("FieldValueForbidden", "spec.conversion.conversionReviewVersions", "Forbidden: should not be set when strategy is not set to Webhook")]),
    ],
)  # fmt: skip
def test_conversion_is_validated(
    raw: Raw, conversion: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    manifest = crds.crd("foos", "Foo")
    manifest["spec"]["conversion"] = conversion
    code, _, status = raw("POST", CRDS, manifest)
    assert code == 422, status
    assert [
        (c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]
    ] == expected


# cel/compilation.go compileRule: a rule (then its messageExpression) cel-go
# cannot parse is refused, validation.go field.Invalid(..., schema.XValidations[i],
# cr.Error.Detail): the value is the internal ValidationRule printed %#v.
def _rule_value(rule: str, message_expression: str = "") -> str:
    return (
        f'apiextensions.ValidationRule{{Rule:"{rule}", Message:"", MessageExpression:"{message_expression}", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}'
    )


@pytest.mark.parametrize(
    ("rule", "header", "caret"),
    [
        # admission/plugin/cel validator_test.go: "fail to compile test" -> 1:6
        (
            "fail to compile test",
            "ERROR: <input>:1:6: Syntax error: ",
            "\n | fail to compile test\n | .....^",
        ),
        # "object.x in [1, 2, " -> 1:20, at the end of input
        (
            "self.a in [1, 2, ",
            "ERROR: <input>:1:18: Syntax error: ",
            "\n | self.a in [1, 2, \n | .................^",
        ),
    ],
)
def test_rule_syntax_errors_refuse_the_crd(raw: Raw, rule: str, header: str, caret: str) -> None:
    prop = {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [{"rule": rule}]}  # fmt: skip
    got = crd_causes(raw, {"type": "object", "properties": {"l": prop}})
    assert [(c["reason"], c["field"]) for c in got] == [
        ("FieldValueInvalid", f"{LIST}.x-kubernetes-validations[0].rule")
    ]
    message = got[0]["message"]
    # Only the prefix up to "Syntax error: " and the snippet are cel-go's own;
    # the parser's wording after it is cel-python's.
    assert message.startswith(f"Invalid value: {_rule_value(rule)}: compilation failed: {header}")
    assert message.endswith(caret)


def test_message_expression_syntax_errors_refuse_the_crd(raw: Raw) -> None:
    rule = {"rule": "true", "messageExpression": "'a' +"}
    prop = {"type": "object", "x-kubernetes-validations": [rule]}
    got = crd_causes(raw, {"type": "object", "properties": {"l": prop}})
    assert [(c["reason"], c["field"]) for c in got] == [
        ("FieldValueInvalid", f"{LIST}.x-kubernetes-validations[0].messageExpression")
    ]
    assert got[0]["message"].startswith(
        f"Invalid value: {_rule_value('true', rule['messageExpression'])}: messageExpression compilation failed: "
        "ERROR: <input>:1:6: Syntax error: "
    )


def test_cel_syntax_is_not_checked_when_the_schema_has_errors(raw: Raw) -> None:
    rule = {"rule": "self ==", "fieldPath": ".nope"}
    prop = {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [rule]}  # fmt: skip
    got = crd_causes(raw, {"type": "object", "properties": {"l": prop}})
    assert [c["field"] for c in got] == [f"{LIST}.x-kubernetes-validations[0].fieldPath"]


@pytest.mark.parametrize(
    "rule",
    [
        "self.a.matches('^[a-z]+$')",
        "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
        "isURL(self.a) && url(self.a).getScheme() == 'https'",
        "self.l.all(x, x.startsWith('k')) && self.l.exists_one(x, x == 'k')",
        "self.?a.orValue('') == '' && self.l[?0].hasValue()",
        "[?self.?a].size() <= 1 && {?'k': self.?a}.size() <= 1",
        "[1, 2,].size() == 2 && {'a': 1,}.size() == 1",
        "has(self.a) ? self.a != '' : true",
        "oldSelf == self || self.l.map(x, x + '!').size() > 0",
        "'%s'.format([self.a]) != '' && cel.bind(n, 1, n == 1)",
        "!(self.a in ['x', 'y']) && size(self.l) < 3 && self.l.sort() == self.l",
    ],
)
def test_valid_rules_with_extension_functions_and_optional_syntax_are_accepted(
    raw: Raw, rule: str
) -> None:
    prop = {"type": "object", "properties": {"a": {"type": "string"}, "l": {"type": "array", "items": {"type": "string"}}},
            "x-kubernetes-validations": [{"rule": rule, "messageExpression": "'bad: ' + string(self.?a.orValue(''))"}]}  # fmt: skip
    code, _, body = raw(
        "POST", CRDS, crds.crd("foos", "Foo", schema={"type": "object", "properties": {"l": prop}})
    )
    assert code == 201, body


# v1/conversion.go Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_...:
# a schema identical in every version moves to spec.validation before the CRD is
# validated, so its errors name spec.validation.openAPIV3Schema (as on every
# real cluster); schemas that differ are validated, and named, per version.
def test_schema_errors_name_spec_validation_when_every_version_has_that_schema(
    raw: Raw,
) -> None:
    bad = {"type": "object", "properties": {"a": {}}}
    good = {"type": "object", "properties": {"a": {"type": "string"}}}
    doc = crds.crd("foos", "Foo", schema=bad)
    v1 = doc["spec"]["versions"][0]
    doc["spec"]["versions"] = [v1, {**v1, "name": "v2", "storage": False}]
    code, _, status = raw("POST", CRDS, doc)
    assert code == 422
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.validation.openAPIV3Schema.properties[a].type"
    ]
    doc["spec"]["versions"][0] = {**v1, "schema": {"openAPIV3Schema": good}}
    code, _, status = raw("POST", CRDS, doc)
    assert code == 422
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.versions[1].schema.openAPIV3Schema.properties[a].type"
    ]
