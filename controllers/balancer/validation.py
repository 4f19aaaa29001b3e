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

* ``spec.backends`` and ``spec.ports`` have at most ``MAX_BACKENDS`` and
  ``MAX_PORTS`` items, the CRD's ``maxItems`` (a test pins them equal), so an
  API server without schema enforcement cannot make the controller create
  thousands of Services, or render an nginx.conf beyond a ConfigMap's 1 MiB:
  the longest valid config is about 400 kB. An oversized list is reported
  once and its items are not looked at (bounded work for any input).

Invariants: ``validate`` never raises and never mutates its argument, for
any input (including wrongly-typed fields); it returns ``[]`` iff the spec
is valid; otherwise one message per problem, each
starting with the path of the offending field (``spec.ports[1].name: ...``),
in a fixed order (metadata, spec.selector, backends, ports). A wrong JSON
type is named as JSON names it (``spec.backends: must be a list, got
object``). Values quoted in messages are ``repr``-escaped (a newline or a
quote in a name cannot break a message or a log line) and shortened.

``message(problems)`` joins the problems into the one text the reconciler
puts in the ``Reconciled`` condition and the Warning event, at most
``MAX_MESSAGE_LENGTH`` characters (a condition message may hold 32 kB, an
events.k8s.io note only 1 kB).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from controllers.balancer import names
from pycontroller.labels import is_qualified_name, is_valid_label_value
from pycontroller.meta import join_problems, shorten

_MAX_INT32 = 2**31 - 1
#: The CRD's ``spec.backends`` ``maxItems`` (one Service per backend).
MAX_BACKENDS = 64
#: The CRD's ``spec.ports`` ``maxItems``.
MAX_PORTS = 64
#: Longest ``message(problems)``: an events.k8s.io note's limit (1 kB).
MAX_MESSAGE_LENGTH = 1024
#: Longest quoted value in a problem (longer ones are cut, with "...").
_MAX_SHOWN = 100
_IANA_SVC_NAME_RE = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, as kube-apiserver's messages use it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any) -> str:
    """``repr(value)``, cut to ``_MAX_SHOWN`` characters: safe in a message."""
    return shorten(repr(value), _MAX_SHOWN)


def _label_problem(value: Any) -> str | None:
    if value is None or value == "":
        return "is required (a non-empty string)"
    if not isinstance(value, str):
        return f"must be a string, got {json_type(value)}"
    if not names.is_dns1035_label(value):
        if len(value) > names.DNS_LABEL_MAX_LENGTH:
            return (
                f"{_show(value)} is {len(value)} characters, longer than "
                f"{names.DNS_LABEL_MAX_LENGTH}"
            )
        return (
            f"{_show(value)} is not a DNS-1035 label (lower-case letters, digits and '-', "
            "starting with a letter, ending with a letter or digit)"
        )
    return None


def _int_problem(value: Any, low: int, high: int) -> str | None:
    if value is None:
        return "is required"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{_show(value)} is not an integer (got {json_type(value)})"
    if not low <= value <= high:
        return f"{value} is out of range [{low}, {high}]"
    return None


def _label_key_problem(key: Any) -> str | None:
    if not isinstance(key, str):
        return f"key {_show(key)} is not a string"
    errors = is_qualified_name(key)
    if errors:
        return f"key {_show(key)} is not a valid label key: {'; '.join(errors)}"
    return None


def _label_value_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"value {_show(value)} is not a string (got {json_type(value)})"
    errors = is_valid_label_value(value)
    if errors:
        return f"value {_show(value)} is not a valid label value: {'; '.join(errors)}"
    return None


def _check_selector(selector: Any, field: str, problems: list[str]) -> None:
    if selector is None:
        return
    if not isinstance(selector, dict):
        problems.append(
            f"{field}: must be a map of label keys to values, got {json_type(selector)}"
        )
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
                f"{_show(value)} is neither a port number nor a valid port name "
                "(IANA service name: at most 15 characters of [a-z0-9-], one letter at least)"
            )
        return None
    return _int_problem(value, 1, 65535)


def _list(spec: dict[str, Any], field: str, max_items: int, problems: list[str]) -> list[Any]:
    """``spec[field]`` if it is a list of 1..``max_items`` items, else ``[]`` and a problem."""
    value = spec.get(field)
    if value is None or value == []:
        problems.append(f"spec.{field}: at least one item is required")
        return []
    if not isinstance(value, list):
        problems.append(f"spec.{field}: must be a list, got {json_type(value)}")
        return []
    if len(value) > max_items:
        problems.append(f"spec.{field}: must have at most {max_items} items, got {len(value)}")
        return []
    return value


def _objects(items: list[Any], field: str, problems: list[str]) -> Iterator[tuple[str, Any]]:
    """(``field[i]``, item) for every item that is an object; a problem for the others."""
    for i, item in enumerate(items):
        item_field = f"{field}[{i}]"
        if isinstance(item, dict):
            yield item_field, item
        else:
            problems.append(f"{item_field}: must be an object, got {json_type(item)}")


def _check_unique_name(
    value: Any, field: str, what: str, seen: set[str], problems: list[str]
) -> bool:
    """Check ``field.name``; True iff it is a valid label not in ``seen`` (then added)."""
    problem = _label_problem(value)
    if problem:
        problems.append(f"{field}.name: {problem}")
    elif value in seen:
        problems.append(f"{field}.name: duplicate {what} name {_show(value)}")
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
                    f"{field}.name: the backend Service name {_show(service)} is "
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
            problems.append(f"{field}.protocol: {_show(protocol)} is not one of 'TCP', 'UDP'")
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


def validate(balancer: object) -> list[str]:
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
    if spec is None:
        problems.append("spec: is required (an object)")
        return problems
    if not isinstance(spec, dict):
        problems.append(f"spec: must be an object, got {json_type(spec)}")
        return problems
    _check_selector(spec.get("selector"), "spec.selector", problems)
    _check_backends(name, _list(spec, "backends", MAX_BACKENDS, problems), problems)
    _check_ports(_list(spec, "ports", MAX_PORTS, problems), problems)
    return problems


def message(problems: list[str], limit: int = MAX_MESSAGE_LENGTH) -> str:
    """``problems`` in at most ``limit`` characters (``pycontroller.meta.join_problems``)."""
    return join_problems(problems, limit)
