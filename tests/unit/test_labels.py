"""Label selector parsing, validation and matching (apimachinery labels/selector_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pycontroller.labels import (
    Operator,
    Requirement,
    Selector,
    everything,
    is_qualified_name,
    is_valid_label_value,
    nothing,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
)

# Input -> canonical string (whitespace removed, requirements sorted by key).
GOOD = [
    ("", ""),
    ("   ", ""),
    ("x=a,y=b,z=c", "x=a,y=b,z=c"),
    ("x!=a,y=b", "x!=a,y=b"),
    ("x==a", "x==a"),
    ("x=", "x="),
    ("x= ", "x="),
    ("x=,z= ", "x=,z="),
    ("x= ,z= ", "x=,z="),
    ("!x", "!x"),
    ("x", "x"),
    ("a ", "a"),
    ("\rx", "x"),
    ("x>1", "x>1"),
    ("x>1,z<5", "x>1,z<5"),
    ("x=a,a=x", "a=x,x=a"),
    ("notin=in", "notin=in"),
    ("x in (abc,def)", "x in (abc,def)"),
    ("x in (def,abc,abc)", "x in (abc,def)"),
    ("foo  in\t (abc)", "foo in (abc)"),
    ("x notin\n (abc)", "x notin (abc)"),
    ("x in (abc,)", "x in (,abc)"),
    ("x in ()", "x in ()"),
    ("x notin ( )", "x notin ()"),
    ("x notin (, a)", "x notin (,a)"),
    ("x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"),
    ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
    ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
    (
        "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
        "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
    ),
    ("app=web , tier != db , !legacy", "app=web,!legacy,tier!=db"),
    ("x..x in (a,b)", "x..x in (a,b)"),
    ("x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"),
]

BAD = [
    ("x=a||y=b", "a||y"),
    ("x==a==b", "'=='"),
    ("!x=a", "'='"),
    ("x<a", "integer"),
    ("x>", "integer"),
    ("x,,y", "position 2"),
    (",x,y", "position 0"),
    ("x nott in (y)", "'nott'"),
    ("a in (xyz),", "end of string"),
    ("a in (xyz)b notin ()", "'b'"),
    ("x in a", "'('"),
    ("x in (a", "end of string"),
    ("x in (a,b", "end of string"),
    ("x in (a b)", "'b'"),
    ("x=(a,b)", "'('"),
    ("x. in (a,b)", "'x.'"),
    (".x. in (a,b)", "'.x.'"),
    ("x in in", "'in'"),
    ("x in .", "'.'"),
    (". in (a)", "'.'"),
    ("!", "end of string"),
    ("=a", "'='"),
    ("a" * 64, "63"),
    ("x=" + "v" * 64, "63"),
    ("x=-a", "'-a'"),
    ("Example.com/x=y", "prefix"),
    ("a/b/c=d", "qualified name"),
    ("/x=y", "prefix part must be non-empty"),
    ("x/=y", "name part must be non-empty"),
]


@pytest.mark.parametrize(("text", "canonical"), GOOD)
def test_parse_good(text: str, canonical: str) -> None:
    sel = parse_selector(text)
    assert str(sel) == canonical
    # The canonical form parses back to an equal selector.
    assert parse_selector(canonical) == sel
    assert str(parse_selector(canonical)) == canonical


@pytest.mark.parametrize(("text", "fragment"), BAD)
def test_parse_bad(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_selector(text)
    assert fragment in str(info.value)
    assert repr(text) in str(info.value)


def test_deterministic_parse() -> None:
    assert str(parse_selector("x=a,a=x")) == str(parse_selector("a=x,x=a"))


MATCH_CASES: list[tuple[str, dict[str, str], bool]] = [
    ("", {"x": "y"}, True),
    ("x=y", {"x": "y"}, True),
    ("x==y", {"x": "y"}, True),
    ("x=y,z=w", {"x": "y", "z": "w"}, True),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
    ("notin=in", {"notin": "in"}, True),
    ("x", {"x": "z"}, True),
    ("!x", {"y": "z"}, True),
    ("x>1", {"x": "2"}, True),
    ("x<1", {"x": "0"}, True),
    ("x=z", {}, False),
    ("x=y", {"x": "z"}, False),
    ("x=y,z=w", {"x": "w", "z": "w"}, False),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
    ("x", {"y": "z"}, False),
    ("!x", {"x": "z"}, False),
    ("x>1", {"x": "0"}, False),
    ("x<1", {"x": "2"}, False),
    ("x>1", {}, False),
    ("z>1", {"z": "v2"}, False),
    # strconv.ParseInt refuses a trailing newline; so must we ("$" matches before one).
    ("x>1", {"x": "5\n"}, False),
    # != and notin match objects lacking the key, as in Kubernetes.
    ("x!=y", {}, True),
    ("x notin (a,b)", {}, True),
    ("x notin (a,b)", {"x": "a"}, False),
    ("x notin (a,b)", {"x": "c"}, True),
    ("x in (a,b)", {"x": "b"}, True),
    ("x in (a,b)", {}, False),
    ("x in ()", {"x": ""}, True),
    ("x in ()", {"x": "a"}, False),
    ("x=", {"x": ""}, True),
    ("x=", {}, False),
    ("x notin (),y", {"y": ""}, True),
    ("!x,y", {"y": ""}, True),
    ("x notin (),!y", {"y": ""}, False),
    ("x,y in (a)", {"x": "1"}, False),
    ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
]


@pytest.mark.parametrize(("text", "labels", "expected"), MATCH_CASES)
def test_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(text).matches(labels) is expected


def test_none_labels_are_no_labels() -> None:
    assert parse_selector("!x").matches(None)
    assert not parse_selector("x").matches(None)
    assert parse_selector(None).matches(None)


def test_everything_and_nothing() -> None:
    assert everything().empty() and everything().matches({"x": "y"})
    assert parse_selector(None).empty()
    assert parse_selector("").empty()
    assert not parse_selector("x").empty()
    assert not nothing().empty()
    assert not nothing().matches({})
    assert not nothing().matches({"x": "y"})


def test_dict_of_equalities() -> None:
    sel = parse_selector({"app": "web", "tier": "front"})
    assert str(sel) == "app=web,tier=front"
    assert sel.matches({"app": "web", "tier": "front", "extra": "1"})
    assert not sel.matches({"app": "web"})
    assert parse_selector({}).empty()
    assert selector_from_set(None).empty()
    # A dict whose matchLabels value is a string is an equality on a label literally
    # named matchLabels, not a LabelSelector.
    assert str(parse_selector({"matchLabels": "x"})) == "matchLabels=x"


@pytest.mark.parametrize(
    "bad",
    [{"app": 1}, {"bad key!": "v"}, {"app": "-bad"}, {"app": "v" * 64}],
)
def test_dict_selector_validation(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        parse_selector(bad)


def test_label_selector_dict() -> None:
    ls = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "edge"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "owner", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist", "values": []},
        ],
    }
    sel = selector_from_label_selector(ls)
    assert str(sel) == "app=web,env notin (dev),!legacy,owner,tier in (edge,front)"
    assert parse_selector(ls) == sel
    assert sel.matches({"app": "web", "tier": "edge", "owner": "me"})
    assert sel.matches({"app": "web", "tier": "edge", "owner": "me", "env": "prod"})
    assert not sel.matches({"app": "web", "tier": "edge", "owner": "me", "env": "dev"})
    assert not sel.matches({"app": "web", "tier": "edge", "owner": "me", "legacy": "1"})
    assert not sel.matches({"app": "web", "tier": "back", "owner": "me"})
    assert not sel.matches({"app": "web", "tier": "edge"})


def test_label_selector_empty_and_none() -> None:
    assert selector_from_label_selector({}).empty()
    assert selector_from_label_selector({"matchLabels": {}, "matchExpressions": []}).empty()
    assert not selector_from_label_selector(None).matches({})
    assert parse_selector({"matchLabels": {}}).empty()


@pytest.mark.parametrize(
    ("ls", "fragment"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, "'Gt'"),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "empty"),
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "empty"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "empty"),
        ({"matchExpressions": [{"key": "a b", "operator": "Exists"}]}, "'a b'"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "key"),
        ({"matchExpressions": ["a"]}, "matchExpressions[0]"),
        ({"matchExpressions": {"key": "a"}}, "list"),
        ({"matchLabels": {"a": "b c"}}, "'b c'"),
        ({"matchLabels": ["a"]}, "matchLabels"),
        ({"matchLabel": {"a": "b"}}, "matchLabel"),
    ],
)
def test_label_selector_dict_errors(ls: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        selector_from_label_selector(ls)
    assert fragment in str(info.value)


def test_parse_selector_rejects_other_types() -> None:
    with pytest.raises(ValueError):
        parse_selector(42)  # type: ignore[arg-type]
    sel = parse_selector("a=b")
    assert parse_selector(sel) is sel


def test_requirement_new_validation() -> None:
    assert str(Requirement.new("x", Operator.IN, ["foo"])) == "x in (foo)"
    assert str(Requirement.new("x", "notin", ["foo"])) == "x notin (foo)"
    assert str(Requirement.new("x", Operator.EXISTS)) == "x"
    assert str(Requirement.new("x", Operator.DOES_NOT_EXIST)) == "!x"
    assert str(Requirement.new("1foo", Operator.IN, ["bar"])) == "1foo in (bar)"
    assert str(Requirement.new("y", Operator.GREATER_THAN, ["1"])) == "y>1"
    assert str(Requirement.new("z", Operator.LESS_THAN, ["6"])) == "z<6"
    for key, op, vals in [
        ("x", Operator.IN, []),
        ("x", Operator.NOT_IN, []),
        ("x", Operator.EQUALS, ["a", "b"]),
        ("x", Operator.EXISTS, ["a"]),
        ("foo", Operator.GREATER_THAN, ["bar"]),
        ("barz", Operator.LESS_THAN, ["blah"]),
        ("a" * 254, Operator.EXISTS, []),
        ("x", "bogus", []),
    ]:
        with pytest.raises(ValueError):
            Requirement.new(key, op, vals)


def test_selector_add_and_equality() -> None:
    sel = parse_selector("b=1").add(Requirement.new("a", Operator.EXISTS))
    assert str(sel) == "a,b=1"
    assert sel == parse_selector("a,b=1")
    assert hash(sel) == hash(parse_selector("b=1,a"))
    assert sel != parse_selector("a")
    assert isinstance(sel, Selector)
    assert "a,b=1" in repr(sel)


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("app", True),
        ("app.kubernetes.io/name", True),
        ("MyName", True),
        ("my.name", True),
        ("123-abc", True),
        ("a" * 63, True),
        ("example.com/" + "a" * 63, True),
        ("", False),
        ("a" * 64, False),
        ("-a", False),
        ("a-", False),
        ("a b", False),
        ("Example.com/a", False),
        ("a/b/c", False),
        ("/a", False),
        ("a/", False),
        ("x" * 254 + "/a", False),
    ],
)
def test_is_qualified_name(key: str, valid: bool) -> None:
    assert (is_qualified_name(key) == []) is valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [("", True), ("a", True), ("a.b_c-d", True), ("v" * 63, True), ("v" * 64, False),
     ("-a", False), ("a_", False), ("a b", False), ("a/b", False)],
)  # fmt: skip
def test_is_valid_label_value(value: str, valid: bool) -> None:
    assert (is_valid_label_value(value) == []) is valid


@pytest.mark.parametrize(
    ("value", "label1123", "subdomain", "label1035"),
    [
        ("a", True, True, True),
        ("abc-123", True, True, True),
        ("1abc", True, True, False),
        ("a.b", False, True, False),
        ("a" * 63, True, True, True),
        ("a" * 64, False, True, False),
        (".".join(["a" * 63] * 4)[:253], False, True, False),
        ("a" * 254, False, False, False),
        ("", False, False, False),
        ("A", False, False, False),
        ("a-", False, False, False),
        ("-a", False, False, False),
        ("abc\n", False, False, False),
        (None, False, False, False),
    ],
)
def test_dns_name_helpers(value: object, label1123: bool, subdomain: bool, label1035: bool) -> None:
    from pycontroller.labels import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain

    assert is_dns1123_label(value) is label1123
    assert is_dns1123_subdomain(value) is subdomain
    assert is_dns1035_label(value) is label1035


def test_label_value_with_trailing_newline_is_invalid() -> None:
    assert is_valid_label_value("abc\n")
    assert is_qualified_name("abc\n")
