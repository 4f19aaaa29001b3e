"""Controller-level validation of a Balancer: the problems that can slip past
the CRD schema (or reach us from an API server that does not enforce it).

The schema (``crds/balancer.yaml``) bounds each field alone; it cannot see
that ``N-<backend>-backend`` is longer than 63 characters, and an API server
without CEL support, an older CRD version or a hand-edited object may let
anything through. ``validate()`` re-checks every property the renderers
rely on, so that an invalid spec never reaches nginx.conf or the API server
(prior-art bugs B6, B7):

* ``metadata.name`` is a DNS-1035 label (it is the front Service's name);
* ``spec.backends`` is a non-empty list; each backend has a DNS-1035 ``name``,
  unique among backends, such that ``N-<name>-backend`` is at most 63
  characters; an integer ``weight`` in [1, 2**31-1]; an optional ``selector``
  of valid label keys and values;
* ``spec.selector`` is an optional map of valid label keys and values;
* ``spec.ports`` is a non-empty list; each port has a DNS-1035 ``name``,
  unique among ports (it becomes the upstream name and the Service port
  name); ``protocol`` TCP or UDP (absent means TCP); an integer ``port`` in
  [1, 65535], the pair (port, protocol) unique; an optional ``targetPort``
  that is an integer in [1, 65535] or an IANA service name (a named
  container port).

Invariants: ``validate`` never raises and never mutates its argument, for
any input (including wrongly-typed fields); it returns ``[]`` iff the spec
is valid; otherwise one message per problem, each
starting with the path of the offending field (``spec.ports[1].name: ...``),
in a fixed order (metadata, spec.selector, backends, ports).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from controllers.balancer import names
from pycontroller.labels import is_qualified_name, is_valid_label_value

_MAX_INT32 = 2**31 - 1
_IANA_SVC_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def _label_problem(value: Any) -> str | None:
    if not isinstance(value, str) or value == "":
        return "is required (a non-empty string)"
    if not names.is_dns1035_label(value):
        if len(value) > names.DNS_LABEL_MAX_LENGTH:
            return f"{value!r} is longer than {names.DNS_LABEL_MAX_LENGTH} characters"
        return (
            f"{value!r} is not a DNS-1035 label (lower-case letters, digits and '-', "
            "starting with a letter, ending with a letter or digit)"
        )
    return None


def _int_problem(value: Any, low: int, high: int) -> str | None:
    if value is None:
        return "is required"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{value!r} is not an integer"
    if not low <= value <= high:
        return f"{value} is out of range [{low}, {high}]"
    return None


def _label_key_problem(key: Any) -> str | None:
    if not isinstance(key, str):
        return f"key {key!r} is not a string"
    errors = is_qualified_name(key)
    if errors:
        return f"key {key!r} is not a valid label key: {'; '.join(errors)}"
    return None


def _label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"value {value!r} is not a string"
    errors = is_valid_label_value(value)
    if errors:
        return f"value {value!r} is not a valid label value: {'; '.join(errors)}"
    return None


def _check_selector(selector: Any, field: str, problems: list[str]) -> None:
    if selector is None:
        return
    if not isinstance(selector, dict):
        problems.append(f"{field}: must be a map of label keys to values")
        return
    for key, value in selector.items():
        problem = _label_key_problem(key) or _label_value_problem(value)
        if problem:
            problems.append(f"{field}: {problem}")


def _target_port_problem(value: Any) -> str | None:
    if isinstance(value, str):
        if (
            len(value) > 15
            or not _IANA_SVC_NAME_RE.fullmatch(value)
            or "--" in value
            or not re.search(r"[a-z]", value)
        ):
            return (
                f"{value!r} is neither a port number nor a valid port name "
                "(IANA service name: at most 15 characters of [a-z0-9-], one letter at least)"
            )
        return None
    return _int_problem(value, 1, 65535)


def _list(spec: dict[str, Any], field: str, problems: list[str]) -> list[Any]:
    value = spec.get(field)
    if value is None or value == []:
        problems.append(f"spec.{field}: at least one item is required")
        return []
    if not isinstance(value, list):
        problems.append(f"spec.{field}: must be a list")
        return []
    return value


def _objects(items: list[Any], field: str, problems: list[str]) -> Iterator[tuple[str, Any]]:
    """(``field[i]``, item) for every item that is an object; a problem for the others."""
    for i, item in enumerate(items):
        item_field = f"{field}[{i}]"
        if isinstance(item, dict):
            yield item_field, item
        else:
            problems.append(f"{item_field}: must be an object")


def _check_unique_name(
    value: Any, field: str, what: str, seen: set[str], problems: list[str]
) -> bool:
    """Check ``field.name``; True iff it is a valid label not in ``seen`` (then added)."""
    problem = _label_problem(value)
    if problem:
        problems.append(f"{field}.name: {problem}")
    elif value in seen:
        problems.append(f"{field}.name: duplicate {what} name {value!r}")
    else:
        seen.add(value)
        return True
    return False


def _check_backends(name: str | None, backends: list[Any], problems: list[str]) -> None:
    seen: set[str] = set()
    for field, backend in _objects(backends, "spec.backends", problems):
        backend_name: Any = backend.get("name")
        if _check_unique_name(backend_name, field, "backend", seen, problems) and name is not None:
            service = names.backend_service_name(name, backend_name)
            if len(service) > names.DNS_LABEL_MAX_LENGTH:
                problems.append(
                    f"{field}.name: the backend Service name {service!r} is "
                    f"{len(service)} characters, longer than {names.DNS_LABEL_MAX_LENGTH}"
                    f" (metadata.name and spec.backends[].name together must be at most "
                    f"{names.MAX_NAME_AND_BACKEND_LENGTH} characters)"
                )
        problem = _int_problem(backend.get("weight"), 1, _MAX_INT32)
        if problem:
            problems.append(f"{field}.weight: {problem}")
        _check_selector(backend.get("selector"), f"{field}.selector", problems)


def _check_ports(ports: list[Any], problems: list[str]) -> None:
    seen_names: set[str] = set()
    seen_ports: set[tuple[int, str]] = set()
    for field, port in _objects(ports, "spec.ports", problems):
        _check_unique_name(port.get("name"), field, "port", seen_names, problems)
        protocol: Any = port.get("protocol")
        protocol_ok = protocol is None or protocol in ("TCP", "UDP")
        if not protocol_ok:
            problems.append(f"{field}.protocol: {protocol!r} is not one of 'TCP', 'UDP'")
        number: Any = port.get("port")
        problem = _int_problem(number, 1, 65535)
        if problem:
            problems.append(f"{field}.port: {problem}")
        elif protocol_ok:
            pair = (number, protocol or "TCP")
            if pair in seen_ports:
                problems.append(
                    f"{field}.port: duplicate port {number}/{pair[1]} "
                    "(port and protocol must be unique)"
                )
            seen_ports.add(pair)
        if "targetPort" in port:
            problem = _target_port_problem(port["targetPort"])
            if problem:
                problems.append(f"{field}.targetPort: {problem}")


def validate(balancer: dict[str, Any]) -> list[str]:
    """Return the problems that make ``balancer`` impossible to implement
    safely, one message per problem naming the field; ``[]`` if valid."""
    problems: list[str] = []
    if not isinstance(balancer, dict):
        return ["balancer: must be an object"]
    meta = balancer.get("metadata")
    raw_name = meta.get("name") if isinstance(meta, dict) else None
    problem = _label_problem(raw_name)
    name: str | None = None
    if problem:
        problems.append(f"metadata.name: {problem}")
    else:
        name = raw_name
    spec = balancer.get("spec")
    if not isinstance(spec, dict):
        problems.append("spec: is required (an object)")
        return problems
    _check_selector(spec.get("selector"), "spec.selector", problems)
    _check_backends(name, _list(spec, "backends", problems), problems)
    _check_ports(_list(spec, "ports", problems), problems)
    return problems
