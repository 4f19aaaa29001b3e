"""Hypothesis strategies for Balancer objects (issue 9, "Bad input").

``balancers()`` draws a valid Balancer and then applies 0 to 3 mutations,
each breaking one thing the way a hostile or careless user would: the
characters ``; { } # " '``, newlines, tabs, NUL, unicode and emoji in every
string field; names of 53/54/63/64/253 characters and name+backend
combinations just inside and just outside the 63-character Service name;
duplicate backend and port names, duplicate (port, protocol) pairs; ports,
target ports and weights at and past their bounds; lower-case and unknown
protocols; wrong JSON types for every field and for whole lists and the
spec; missing required fields; lists one past the CRD's ``maxItems`` (and
exactly at it); unknown fields. About a third of the draws stay valid, so
the render and ``nginx -t`` paths get exercised too.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from controllers.balancer import names, validation

Obj = dict[str, Any]
Draw = Callable[[st.SearchStrategy[Any]], Any]


def reproducible(max_examples: int) -> settings:
    """Settings for CI: the same examples on every run, no database, no
    deadline; ``HYPOTHESIS_MAX_EXAMPLES`` overrides the count."""
    return settings(
        max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", max_examples)),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=False,
    )


NASTY_CHARS = [*";{}#\"'\n\r\t \\$`\x00/.:_-", "é", "ü", "名", "\u200b", "🙂", "İ"]

#: Short DNS-1035 labels: valid names that keep name+backend far below 54.
labels = st.from_regex(r"[a-z]([-a-z0-9]{0,8}[a-z0-9])?", fullmatch=True)

#: Text built mostly from characters that mean something to nginx or YAML.
nasty_text = st.text(
    alphabet=st.sampled_from([*NASTY_CHARS, "a", "b", "z", "0", "9"]), min_size=1, max_size=24
)

#: Values of the wrong JSON type for any field.
wrong_types: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.just([]),
    st.lists(st.integers(0, 3), min_size=1, max_size=2),
    st.just({}),
    st.dictionaries(st.sampled_from(["name", "port", "x"]), st.integers(0, 2), max_size=2),
)

INJECTIONS = [
    "v1-backend:80;server 10.9.8.7:22 weight=1000;#",
    "v1;",
    "v1 }",
    "v1}",
    "v1{",
    "v1#",
    'v1"',
    "v1'",
    "v1\n",
    "v1\nserver evil:22;",
    "v1\r",
    "v 1",
    "v1\t",
    "ü",
    "名前",
]
BAD_LABELS = [
    "",
    "V1",
    "1v",
    "v-",
    "-v",
    "v.1",
    "v_1",
    "a" * 54,
    "a" * 63,
    "a" * 64,
    "a" * 253,
    *INJECTIONS,
]
bad_labels: st.SearchStrategy[Any] = st.one_of(st.sampled_from(BAD_LABELS), nasty_text, wrong_types)

#: Balancer names: invalid ones a schema-less server still admits (DNS-1123
#: subdomains up to 253 characters) and ones any server refuses.
BAD_BALANCER_NAMES = [
    "a" * 64,
    "a" * 253,
    "a" * 63,  # a valid name, but too long next to any backend name
    "a" * 254,
    "a.b",
    "1abc",
    "abc-",
    "Abc",
    "ab_c",
    "a;b",
    "a b",
    "a\nb",
    "名",
]

good_weights = st.one_of(st.integers(1, 100), st.sampled_from([1, 2**31 - 1]))
bad_weights: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from([0, -1, 2**31, 2**63, "5", "5;", 1.5, 2.0, True]), wrong_types
)
good_ports = st.one_of(st.integers(1024, 65535), st.sampled_from([1, 53, 80, 443, 65535]))
bad_ports: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from([0, -1, 65536, 70000, 2**63, "80", "80;", 80.5, 80.0, True]), wrong_types
)
good_protocols = st.sampled_from([None, "TCP", "UDP"])  # None: field absent
bad_protocols: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["tcp", "udp", "Tcp", "SCTP", "", "TCP;", "UDP }", "TCP\n", "udp;#", "HTTP"]),
    nasty_text,
    wrong_types,
)
good_target_ports = st.one_of(
    st.none(), st.integers(1, 65535), st.sampled_from(["http", "web-port", "p8080"])
)
bad_target_ports: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from([0, 65536, "", "80", "http_port", "a-very-long-port-name", "x;y", "a--b"]),
    nasty_text,
    wrong_types,
)
good_selector_keys = st.sampled_from(["app", "version", "example.com/tier", "k8s.io/x-y"])
good_selector_values = st.one_of(labels, st.just(""))
bad_selector_keys: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["", "a/b/c", "-x", "x;y", "名", "a" * 64, "/x", "x/"]), nasty_text
)
bad_selector_values: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["v 1", "a" * 64, "x;", "-v", "v\n"]), nasty_text, wrong_types
)
good_selectors = st.dictionaries(good_selector_keys, good_selector_values, max_size=2)


@st.composite
def valid_balancers(draw: Draw) -> Obj:
    """A Balancer ``validate()`` accepts (short names, distinct ports)."""
    backend_names = draw(st.lists(labels, min_size=1, max_size=3, unique=True))
    ports = draw(
        st.lists(
            st.tuples(labels, good_ports, good_protocols, good_target_ports),
            min_size=1,
            max_size=3,
            unique_by=(lambda p: p[0], lambda p: (p[1], p[2] or "TCP")),
        )
    )
    spec: Obj = {
        "backends": [
            {"name": b, "weight": draw(good_weights), "selector": draw(good_selectors)}
            for b in backend_names
        ],
        "ports": [],
    }
    for port_name, number, protocol, target in ports:
        port: Obj = {"name": port_name, "port": number}
        if protocol is not None:
            port["protocol"] = protocol
        if target is not None:
            port["targetPort"] = target
        spec["ports"].append(port)
    if draw(st.booleans()):
        spec["selector"] = draw(good_selectors)
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {"name": draw(labels), "namespace": "default"},
        "spec": spec,
    }


# -- mutations: each breaks (or stretches) one thing, if it still exists ------


def _spec(obj: Obj) -> Obj | None:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else None


def _items(obj: Obj, field: str) -> list[Obj]:
    spec = _spec(obj)
    items = spec.get(field) if spec is not None else None
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, dict)]


def _pick(draw: Draw, items: list[Obj]) -> Obj | None:
    return draw(st.sampled_from(items)) if items else None


def _set_in_item(field: str, key: str, values: st.SearchStrategy[Any]) -> Any:
    def mutate(draw: Draw, obj: Obj) -> None:
        item = _pick(draw, _items(obj, field))
        if item is not None:
            item[key] = draw(values)

    return mutate


def _delete_in_item(field: str, key: str) -> Any:
    def mutate(draw: Draw, obj: Obj) -> None:
        item = _pick(draw, _items(obj, field))
        if item is not None:
            item.pop(key, None)

    return mutate


def _bad_name(draw: Draw, obj: Obj) -> None:
    obj["metadata"]["name"] = draw(st.sampled_from(BAD_BALANCER_NAMES))


def _long_combination(draw: Draw, obj: Obj) -> None:
    # 14 + 40 = 54: the Service name has exactly 63 characters (valid);
    # one more character on either side makes it 64 (invalid).
    extra = draw(st.sampled_from([(0, 0), (1, 0), (0, 1)]))
    backends = _items(obj, "backends")
    if backends:
        obj["metadata"]["name"] = "n" * (14 + extra[0])
        backends[0]["name"] = "b" * (40 + extra[1])


def _bad_selector(field: str | None) -> Any:
    def mutate(draw: Draw, obj: Obj) -> None:
        target = _spec(obj) if field is None else _pick(draw, _items(obj, field))
        if target is None:
            return
        kind = draw(st.sampled_from(["type", "key", "value"]))
        if kind == "type":
            target["selector"] = draw(st.one_of(nasty_text, wrong_types))
        elif kind == "key":
            target["selector"] = {draw(bad_selector_keys): "v"}
        else:
            target["selector"] = {"app": draw(bad_selector_values)}

    return mutate


def _duplicate(field: str, change: Callable[[Obj], None]) -> Any:
    def mutate(draw: Draw, obj: Obj) -> None:
        items = _items(obj, field)
        spec = _spec(obj)
        if items and spec is not None and isinstance(spec.get(field), list):
            twin = copy.deepcopy(items[0])
            change(twin)
            spec[field].append(twin)

    return mutate


def _bump_port(port: Obj) -> None:
    port["port"] = port["port"] + 1 if isinstance(port.get("port"), int) else 8080


def _rename(item: Obj) -> None:
    item["name"] = f"{item.get('name')}x"


def _wrong_list(field: str) -> Any:
    def mutate(draw: Draw, obj: Obj) -> None:
        spec = _spec(obj)
        if spec is not None:
            value = draw(
                st.one_of(st.just({"name": "v1", "weight": 1, "port": 80}), nasty_text, wrong_types)
            )
            if value is None and draw(st.booleans()):
                spec.pop(field, None)
            else:
                spec[field] = value

    return mutate


def _wrong_item(field: str) -> Any:
    def mutate(draw: Draw, obj: Obj) -> None:
        spec = _spec(obj)
        if spec is not None and isinstance(spec.get(field), list) and spec[field]:
            spec[field][0] = draw(st.one_of(nasty_text, wrong_types))

    return mutate


def _wrong_spec(draw: Draw, obj: Obj) -> None:
    value = draw(st.one_of(st.just("missing"), nasty_text, wrong_types))
    if value == "missing":
        obj.pop("spec", None)
    else:
        obj["spec"] = value


def _many(field: str) -> Any:
    limit = validation.MAX_BACKENDS if field == "backends" else validation.MAX_PORTS

    def mutate(draw: Draw, obj: Obj) -> None:
        spec = _spec(obj)
        if spec is None:
            return
        count = draw(st.sampled_from([limit, limit + 1]))
        if field == "backends":
            spec[field] = [{"name": f"b{i}", "weight": i + 1} for i in range(count)]
        else:
            spec[field] = [{"name": f"p{i}", "port": 10000 + i} for i in range(count)]

    return mutate


def _unknown_field(draw: Draw, obj: Obj) -> None:
    spec = _spec(obj)
    if spec is not None:
        spec[draw(st.sampled_from(["backend", "replicas", "x;y"]))] = draw(wrong_types)


# Hostile first: with few examples, hypothesis draws early entries more often.
MUTATIONS: list[tuple[str, Any]] = [
    ("backends wrong type", _wrong_list("backends")),
    ("bad metadata.name", _bad_name),
    ("backends at/over maxItems", _many("backends")),
    ("backend item wrong type", _wrong_item("backends")),
    ("name + backend at 63/64", _long_combination),
    ("bad backend name", _set_in_item("backends", "name", bad_labels)),
    ("bad weight", _set_in_item("backends", "weight", bad_weights)),
    ("bad backend selector", _bad_selector("backends")),
    ("bad spec.selector", _bad_selector(None)),
    ("duplicate backend", _duplicate("backends", lambda b: b.update(weight=7))),
    ("bad port name", _set_in_item("ports", "name", bad_labels)),
    ("bad port", _set_in_item("ports", "port", bad_ports)),
    ("bad protocol", _set_in_item("ports", "protocol", bad_protocols)),
    ("bad targetPort", _set_in_item("ports", "targetPort", bad_target_ports)),
    ("duplicate port name", _duplicate("ports", _bump_port)),
    ("duplicate port/protocol", _duplicate("ports", _rename)),
    ("ports wrong type", _wrong_list("ports")),
    ("port item wrong type", _wrong_item("ports")),
    ("spec wrong type", _wrong_spec),
    ("no backend name", _delete_in_item("backends", "name")),
    ("no weight", _delete_in_item("backends", "weight")),
    ("no port name", _delete_in_item("ports", "name")),
    ("no port", _delete_in_item("ports", "port")),
    ("ports at/over maxItems", _many("ports")),
    ("unknown field", _unknown_field),
]


@st.composite
def balancers(draw: Draw, *, max_mutations: int = 3) -> Obj:
    """A valid Balancer with 0..``max_mutations`` mutations (see the module doc)."""
    obj: Obj = draw(valid_balancers())
    for _ in range(draw(st.integers(0, max_mutations))):
        _, mutate = draw(st.sampled_from(MUTATIONS))
        mutate(draw, obj)
    return obj


def _sample(name: str = "sample", **spec: Any) -> Obj:
    base: Obj = {
        "backends": [{"name": "v1", "weight": 40}, {"name": "v2", "weight": 20}],
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 5678}],
    }
    base.update(spec)
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {"name": name, "namespace": "default"},
        "spec": base,
    }


def _without_spec() -> Obj:
    obj = _sample("no-spec")
    del obj["spec"]
    return obj


#: The issue's findings and the prior art's attacks, run on every test run
#: (``@example``) on top of the drawn Balancers.
EXPLICIT: list[Obj] = [
    _sample("a" * 64),
    _sample("b" * 253),
    _sample("dotted.name"),
    _sample(backends={"name": "v1", "weight": 1}),
    _sample(backends=["v1", "v2"]),
    _sample(backends=[{"name": f"b{i}", "weight": 1} for i in range(1000)]),
    _sample(ports="80"),
    _without_spec(),
    _sample(
        backends=[
            {"name": "v1", "weight": 1},
            {"name": "v1-backend:80;server 10.9.8.7:22 weight=1000;#", "weight": 1},
        ]
    ),
    _sample(ports=[{"name": "http; proxy_pass evil", "port": 80}]),
    _sample(ports=[{"name": "http", "protocol": "udp;#", "port": 80}]),
    _sample(ports=[{"name": "http", "protocol": "tcp", "port": 70000}]),
    _sample(backends=[{"name": "v1", "weight": "40;server evil:22"}]),
]
