"""The CEL subset used for CRD x-kubernetes-validations rules."""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.cel import CELError, evaluate
from pycontroller.testing.apiserver.schema.structural import validate_custom_object

SELF = {
    "metadata": {"name": "abc"},
    "spec": {
        "replicas": 3,
        "backends": [{"name": "v1", "weight": 40}, {"name": "v2", "weight": 60}],
        "labels": {"a": "x"},
    },
}


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("size(self.metadata.name) <= 63", True),
        ("self.metadata.name.matches('^[a-z]+$')", True),
        ("self.metadata.name.matches('^[0-9]+$')", False),
        ("self.spec.backends.all(b, b.weight > 0)", True),
        ("self.spec.backends.exists(b, b.name == 'v2')", True),
        ("self.spec.backends.exists_one(b, b.weight >= 40)", False),
        ("self.spec.backends.map(b, b.weight).sum() == 100", True),
        ("self.spec.backends.filter(b, b.weight > 50).size() == 1", True),
        ("has(self.spec.replicas) && !has(self.spec.paused)", True),
        ("self.spec.replicas > 5 ? false : true", True),
        ("'a' in self.spec.labels && !('b' in self.spec.labels)", True),
        ("self.spec.labels['a'] == 'x'", True),
        ("self.spec.backends[1].name.startsWith('v')", True),
        ("[1, 2, 3].isSorted() && [3, 1].min() == 1 && [3, 1].max() == 3", True),
        ("7 / 2 == 3 && -7 / 2 == -3 && -7 % 2 == -1 && 2 * 3 - 1 == 5", True),
        ("'ab' + 'c' == 'abc' && 'Ab'.lowerAscii() == 'ab' && ' x '.trim() == 'x'", True),
        ("'a,b'.split(',') == ['a', 'b'] && ['a', 'b'].join('-') == 'a-b'", True),
        ("int('42') == 42 && string(42) == '42' && double(1) == 1.0", True),
        ("{'k': [1, 2]}.k.size() == 2", True),
        ("true == 1", False),
        ("1 == 1.0", True),
        ('"x\\ty".size() == 3', True),
        ("r'a\\d'.size() == 3", True),
        # CEL's commutative && / ||: an error on one side is absorbed by false/true.
        ("self.spec.missing == 1 && false", False),
        ("self.spec.missing == 1 || true", True),
    ],
)
def test_evaluate(rule: str, expected: bool) -> None:
    assert evaluate(rule, SELF) is expected


@pytest.mark.parametrize(
    "rule",
    [
        "self.spec.missing == 1",  # no such key
        "self.spec.replicas + 'x' == 1",  # no such overload
        "self.spec.replicas < 'x'",
        "self.spec.",  # parse error
        "duration('1s') > duration('0s')",  # unsupported function
        "1 / 0 == 0",
    ],
)
def test_errors(rule: str) -> None:
    with pytest.raises(CELError):
        evaluate(rule, SELF)


def test_old_self() -> None:
    assert evaluate("self == oldSelf", 1, 1) is True
    assert evaluate("self >= oldSelf", 1, 2) is False


def rt_with(
    rules_at_spec: list[dict[str, Any]], *, root: list[dict[str, Any]] | None = None
) -> ResourceType:
    spec: dict[str, Any] = {
        "type": "object",
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "mode": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "mode is immutable"}
            ]},
            "items": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "size": {"type": "integer", "x-kubernetes-validations": [
                            {"rule": "self >= oldSelf", "message": "size may not shrink"}
                        ]},
                    },
                },
            },
        },
        "x-kubernetes-validations": rules_at_spec,
    }  # fmt: skip
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": spec}}
    if root:
        schema["x-kubernetes-validations"] = root
    return ResourceType(
        group="example.com",
        version="v1",
        kind="Range",
        plural="ranges",
        schema=schema,
        crd_name="ranges.example.com",
    )


def obj(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Range", "metadata": {"name": "r"},
            "spec": spec}  # fmt: skip


def test_rule_failure_becomes_a_cause() -> None:
    rt = rt_with([{"rule": "self.min <= self.max", "message": "min must not exceed max"}])
    assert validate_custom_object(rt, obj(min=1, max=2)) == []
    assert validate_custom_object(rt, obj(min=3, max=2)) == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": min must not exceed max',
            "field": "spec",
        }
    ]


def test_rule_reason_field_path_and_default_message() -> None:
    rt = rt_with(
        [
            {"rule": "self.min <= self.max", "reason": "FieldValueForbidden", "fieldPath": ".min"},
            {"rule": "self.max < 100"},
        ]
    )
    causes = validate_custom_object(rt, obj(min=300, max=200))
    assert causes == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: failed rule: self.min <= self.max",
            "field": "spec.min",
        },
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "object": failed rule: self.max < 100',
            "field": "spec",
        },
    ]


def test_root_rule_field_is_nil_like_kube() -> None:
    rt = rt_with([], root=[{"rule": "self.metadata.name.size() > 2", "message": "long names only"}])
    (cause,) = validate_custom_object(rt, obj())
    assert cause["field"] == "<nil>"
    assert cause["message"] == 'Invalid value: "object": long names only'


def test_message_expression() -> None:
    rt = rt_with(
        [{"rule": "self.min <= self.max", "messageExpression": "'min ' + string(self.min)"}]
    )
    (cause,) = validate_custom_object(rt, obj(min=5, max=1))
    assert cause["message"] == 'Invalid value: "object": min 5'


def test_unevaluable_rules_are_skipped() -> None:
    rt = rt_with([{"rule": "self.min <= self.max"}, {"rule": "quantity(self.q).isGreaterThan(1)"}])
    # min/max missing -> evaluation error -> skipped, as is the unsupported function.
    assert validate_custom_object(rt, obj()) == []


def test_transition_rules_need_old_values() -> None:
    rt = rt_with([])
    created = obj(mode="fast", items=[{"name": "a", "size": 5}])
    assert validate_custom_object(rt, created) == []
    changed = obj(mode="slow", items=[{"name": "a", "size": 4}, {"name": "b", "size": 1}])
    causes = validate_custom_object(rt, changed, old=created)
    assert [(c["field"], c["message"]) for c in causes] == [
        ("spec.mode", 'Invalid value: "string": mode is immutable'),
        ("spec.items[0].size", 'Invalid value: "integer": size may not shrink'),
    ]


def test_garbage_only_raises_cel_error() -> None:
    """Any input either evaluates or raises CELError (never another exception)."""
    rng = random.Random(7)
    alphabet = list("self.a.b[0]()'\"!&|=<>+-*/%?:,{} 123 size all exists has in true null x\\u")
    for _ in range(3000):
        src = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        with contextlib.suppress(CELError):
            evaluate(src, {"a": {"b": [1, 2]}}, {"a": {}})


def test_number_literals() -> None:
    assert evaluate("0x10 == 16 && 3u == 3 && 1e3 == 1000.0 && .5 == 0.5", None) is True
    with pytest.raises(CELError):
        evaluate("2.u", None)
