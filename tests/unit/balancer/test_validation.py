"""controllers.balancer.validation.validate: a table of invalid specs, each
with the field its message must name."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.balancer import validation
from controllers.balancer.validation import validate

CRD = Path(__file__).resolve().parents[3] / "crds" / "balancer.yaml"

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """A mutation setting ``path`` ("spec.ports.0.name") to ``value``."""

    def mutate(b: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = b
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value

    return mutate


def _del(path: str) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = b
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        del node[int(last) if last.isdigit() else last]

    return mutate


def _append(path: str, item: Any) -> Mutation:
    def mutate(b: dict[str, Any]) -> None:
        node: Any = b
        for key in path.split("."):
            node = node[key]
        node.append(copy.deepcopy(item))

    return mutate


# (id, mutation, field the single message must start with, words it must contain)
CASES: list[tuple[str, Mutation, str, str]] = [
    ("name-too-long", _set("metadata.name", "a" * 64), "metadata.name", "longer than 63"),
    ("name-digit", _set("metadata.name", "1balancer"), "metadata.name", "DNS-1035"),
    ("name-dot", _set("metadata.name", "bal.ancer"), "metadata.name", "DNS-1035"),
    ("name-missing", _del("metadata.name"), "metadata.name", "required"),
    ("spec-missing", _del("spec"), "spec", "required"),
    ("backends-missing", _del("spec.backends"), "spec.backends", "at least one"),
    ("backends-empty", _set("spec.backends", []), "spec.backends", "at least one"),
    (
        "backends-not-list",
        _set("spec.backends", {"v1": 1}),
        "spec.backends",
        "must be a list, got object",
    ),
    ("backends-string", _set("spec.backends", "v1"), "spec.backends", "got string"),
    ("ports-number", _set("spec.ports", 80), "spec.ports", "got number"),
    ("spec-array", _set("spec", []), "spec", "must be an object, got array"),
    ("spec-null", _set("spec", None), "spec", "required"),
    ("name-number", _set("metadata.name", 5), "metadata.name", "got number"),
    ("name-253", _set("metadata.name", "a" * 253), "metadata.name", "253 characters"),
    ("selector-array", _set("spec.selector", ["a"]), "spec.selector", "got array"),
    ("port-not-object", _set("spec.ports.0", None), "spec.ports[0]", "got null"),
    ("port-name-number", _set("spec.ports.0.name", 7), "spec.ports[0].name", "got number"),
    ("protocol-number", _set("spec.ports.0.protocol", 6), "spec.ports[0].protocol", "'TCP'"),
    (
        "too-many-backends",
        _set("spec.backends", [{"name": f"b{i}", "weight": 1} for i in range(1000)]),
        "spec.backends",
        "at most 64 items, got 1000",
    ),
    (
        "too-many-ports",
        _set("spec.ports", [{"name": f"p{i}", "port": i + 1} for i in range(65)]),
        "spec.ports",
        "at most 64 items, got 65",
    ),
    ("backend-not-object", _set("spec.backends.1", "v2"), "spec.backends[1]", "object"),
    ("backend-name-missing", _del("spec.backends.1.name"), "spec.backends[1].name", "required"),
    ("backend-name-empty", _set("spec.backends.1.name", ""), "spec.backends[1].name", "required"),
    (
        "backend-name-upper",
        _set("spec.backends.1.name", "V2"),
        "spec.backends[1].name",
        "DNS-1035",
    ),
    (
        "backend-name-injection",
        _set("spec.backends.1.name", "v1-backend:80;server 10.9.8.7:22 weight=1000;#"),
        "spec.backends[1].name",
        "DNS-1035",
    ),
    (
        "backend-name-dup",
        _set("spec.backends.2.name", "v1"),
        "spec.backends[2].name",
        "duplicate",
    ),
    (
        # 15 + 1 + 40 + 8 = 64 > 63: each name is fine alone, the Service name is not.
        "backend-service-name-too-long",
        _set("spec.backends.0.name", "b" * 40),
        "spec.backends[0].name",
        "longer than 63",
    ),
    ("weight-missing", _del("spec.backends.0.weight"), "spec.backends[0].weight", "required"),
    ("weight-zero", _set("spec.backends.0.weight", 0), "spec.backends[0].weight", "range"),
    ("weight-negative", _set("spec.backends.0.weight", -3), "spec.backends[0].weight", "range"),
    ("weight-huge", _set("spec.backends.0.weight", 2**31), "spec.backends[0].weight", "range"),
    ("weight-string", _set("spec.backends.0.weight", "40"), "spec.backends[0].weight", "integer"),
    ("weight-bool", _set("spec.backends.0.weight", True), "spec.backends[0].weight", "integer"),
    ("weight-float", _set("spec.backends.0.weight", 4.5), "spec.backends[0].weight", "integer"),
    (
        "backend-selector-not-map",
        _set("spec.backends.0.selector", ["version=v1"]),
        "spec.backends[0].selector",
        "map",
    ),
    (
        "backend-selector-bad-value",
        _set("spec.backends.0.selector", {"version": "v 1"}),
        "spec.backends[0].selector",
        "label value",
    ),
    (
        "selector-bad-key",
        _set("spec.selector", {"app/x/y": "test"}),
        "spec.selector",
        "prefix",
    ),
    (
        "selector-value-not-string",
        _set("spec.selector", {"app": 1}),
        "spec.selector",
        "not a string",
    ),
    ("ports-missing", _del("spec.ports"), "spec.ports", "at least one"),
    ("ports-empty", _set("spec.ports", []), "spec.ports", "at least one"),
    ("port-name-missing", _del("spec.ports.0.name"), "spec.ports[0].name", "required"),
    ("port-name-space", _set("spec.ports.0.name", "my port"), "spec.ports[0].name", "DNS-1035"),
    (
        "port-name-dup",
        _append("spec.ports", {"name": "http", "protocol": "TCP", "port": 81}),
        "spec.ports[1].name",
        "duplicate",
    ),
    (
        "port-dup-port-protocol",
        _append("spec.ports", {"name": "http2", "port": 80}),
        "spec.ports[1].port",
        "duplicate port 80/TCP",
    ),
    ("port-missing", _del("spec.ports.0.port"), "spec.ports[0].port", "required"),
    ("port-zero", _set("spec.ports.0.port", 0), "spec.ports[0].port", "range"),
    ("port-too-big", _set("spec.ports.0.port", 65536), "spec.ports[0].port", "range"),
    ("port-string", _set("spec.ports.0.port", "80"), "spec.ports[0].port", "integer"),
    ("protocol-lower", _set("spec.ports.0.protocol", "tcp"), "spec.ports[0].protocol", "TCP"),
    ("protocol-sctp", _set("spec.ports.0.protocol", "SCTP"), "spec.ports[0].protocol", "TCP"),
    (
        "target-port-range",
        _set("spec.ports.0.targetPort", 70000),
        "spec.ports[0].targetPort",
        "range",
    ),
    (
        "target-port-bad-name",
        _set("spec.ports.0.targetPort", "http_port"),
        "spec.ports[0].targetPort",
        "port name",
    ),
    (
        "target-port-name-too-long",
        _set("spec.ports.0.targetPort", "a-very-long-port-name"),
        "spec.ports[0].targetPort",
        "port name",
    ),
    (
        "target-port-name-digits-only",
        _set("spec.ports.0.targetPort", "5678"),
        "spec.ports[0].targetPort",
        "port name",
    ),
]


def test_sample_is_valid(sample: dict[str, Any]) -> None:
    assert validate(sample) == []


def test_golden_cases_are_valid(case: str, golden: Any) -> None:
    assert validate(golden.load(case)) == []


@pytest.mark.parametrize(
    ("mutate", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_invalid(sample: dict[str, Any], mutate: Mutation, field: str, words: str) -> None:
    mutate(sample)
    problems = validate(sample)
    assert len(problems) == 1, problems
    assert problems[0].startswith(field + ": "), problems
    assert words in problems[0], problems


def test_longest_valid_names(sample: dict[str, Any]) -> None:
    # len(N) + len(backend) == 54 gives a 63-character Service name: valid.
    sample["metadata"]["name"] = "n" * 14
    sample["spec"]["backends"][0]["name"] = "b" * 40
    assert validate(sample) == []
    sample["metadata"]["name"] = "n" * 63
    sample["spec"]["backends"] = [{"name": "b", "weight": 1}]
    problems = validate(sample)
    assert problems == [
        "spec.backends[0].name: the backend Service name "
        f"'{'n' * 63}-b-backend' is 73 characters, longer than 63 "
        "(metadata.name and spec.backends[].name together must be at most 54 characters)"
    ]


def test_udp_and_tcp_may_share_a_port(sample: dict[str, Any]) -> None:
    sample["spec"]["ports"].append({"name": "dns", "protocol": "UDP", "port": 80})
    assert validate(sample) == []


def test_several_problems_each_reported(sample: dict[str, Any]) -> None:
    sample["spec"]["backends"][0]["weight"] = 0
    sample["spec"]["ports"][0]["port"] = 0
    sample["metadata"]["name"] = "Bad"
    problems = validate(sample)
    assert [p.split(":")[0] for p in problems] == [
        "metadata.name",
        "spec.backends[0].weight",
        "spec.ports[0].port",
    ]


@pytest.mark.parametrize("garbage", [None, [], "x", 3, {"spec": "x"}, {"metadata": 1, "spec": {}}])
def test_never_raises(garbage: Any) -> None:
    assert validate(garbage)


def test_does_not_mutate(sample: dict[str, Any]) -> None:
    sample["spec"]["backends"][0]["weight"] = "bad"
    before = copy.deepcopy(sample)
    validate(sample)
    assert sample == before


def _crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    [version] = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_limits_are_the_crds() -> None:
    # The controller enforces the schema's bounds itself, for API servers
    # that do not; the two must not drift apart.
    spec = _crd_schema()["properties"]["spec"]["properties"]
    assert spec["backends"]["maxItems"] == validation.MAX_BACKENDS
    assert spec["ports"]["maxItems"] == validation.MAX_PORTS


def test_limits_are_inclusive(sample: dict[str, Any]) -> None:
    sample["metadata"]["name"] = "n"
    sample["spec"]["backends"] = [
        {"name": f"b{i}", "weight": 1} for i in range(validation.MAX_BACKENDS)
    ]
    sample["spec"]["ports"] = [
        {"name": f"p{i}", "port": i + 1} for i in range(validation.MAX_PORTS)
    ]
    assert validate(sample) == []


def test_an_oversized_list_is_not_walked(sample: dict[str, Any]) -> None:
    # 100,000 broken backends: one problem, found without looking at them.
    sample["spec"]["backends"] = [7] * 100_000
    assert validate(sample) == ["spec.backends: must have at most 64 items, got 100000"]


def test_quoted_values_are_escaped_and_short(sample: dict[str, Any]) -> None:
    sample["spec"]["backends"][0]["name"] = 'x;\n}"' + "\n" + "y" * 300
    [problem] = validate(sample)
    assert "\n" not in problem
    assert len(problem) < 300


def test_message_keeps_short_lists_whole() -> None:
    assert validation.message(["a: x", "b: y"]) == "a: x; b: y"


def test_message_is_bounded_and_counts_what_it_drops() -> None:
    problems = [f"spec.backends[{i}].weight: {'w' * 40}" for i in range(200)]
    text = validation.message(problems)
    assert len(text) <= validation.MAX_MESSAGE_LENGTH
    assert text.startswith("spec.backends[0].weight: ")
    kept = text.count("spec.backends[")
    assert text.endswith(f" (and {200 - kept} more problems)")


def test_message_cuts_a_huge_first_problem() -> None:
    text = validation.message(["spec.x: " + "z" * 5000, "spec.y: short"], limit=100)
    assert len(text) <= 100
    assert text.startswith("spec.x: zzz")
    assert text.endswith("... (and 1 more problem)")
