"""Pure rendering of a Balancer into the ``nginx.conf`` its proxy pods run.

The text is byte-for-byte what the Go project's ``nginx.NewConfig`` produces
(including ``listen 80 ;`` with its space, the blank line before every block
and before each upstream's closing brace), so that a ConfigMap written by the
Go controller and by this one are identical and no rollout happens when one
replaces the other::

    events {
        worker_connections 1024;
    }
    stream {
    <for each port:>
                                   <- blank line
    server {
        listen <port> [udp];       <- "listen 80 ;" for TCP
        proxy_pass upstream_<port name>;
    }
    <for each port:>
                                   <- blank line
    upstream upstream_<port name> {
        server <N>-<backend>-backend:<port> weight=<weight>;   <- every backend
                                   <- blank line
    }
    }

Ports and backends appear in spec order. Weights apply per TCP connection /
UDP session (the ``stream`` module), with nginx's smooth weighted round-robin.

Invariants:

* ``render`` never mutates its argument and depends on nothing but it
  (no clock, no randomness): equal input, equal text.
* Every name interpolated into the text is a DNS-1035 label and every number
  is a Python ``int`` in range, or ``render`` raises ``ValueError``. Callers
  run ``validation.validate()`` first and never render an invalid spec; the
  checks here are defence in depth so that no input can ever inject nginx
  directives (prior-art bug B6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.balancer import names

_HEADER = "events {\n    worker_connections 1024;\n}\nstream {\n"
_FOOTER = "}\n"


def _label(value: Any, field: str) -> str:
    if not names.is_dns1035_label(value):
        raise ValueError(f"{field}: {value!r} is not a DNS-1035 label")
    return str(value)


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{field}: {value!r} is not an integer in [{low}, {high}]")
    return int(value)


def _object(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{field}: must be an object")
    return value


def _objects(value: Any, field: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not value:
        # An upstream without a server is an error to nginx ("no servers are
        # inside upstream"); an empty stream block is not, but a Balancer
        # without ports has no Service either: refuse both, as validate() does.
        raise ValueError(f"{field}: must be a non-empty list")
    return [_object(item, f"{field}[{i}]") for i, item in enumerate(value)]


def _protocol(port: Mapping[str, Any], field: str) -> str:
    protocol = port.get("protocol") or "TCP"
    if protocol not in ("TCP", "UDP"):
        raise ValueError(f"{field}: {protocol!r} is not TCP or UDP")
    return str(protocol)


def _server_block(port: int, protocol: str, upstream: str) -> str:
    # The Go template prints the lower-cased protocol only for "udp", and an
    # empty string (hence "listen 80 ;") for everything else.
    listen_param = "udp" if protocol == "UDP" else ""
    return f"\nserver {{\n    listen {port} {listen_param};\n    proxy_pass {upstream};\n}}\n"


def _upstream_block(upstream: str, port: int, backends: list[tuple[str, int]]) -> str:
    servers = "".join(f"    server {host}:{port} weight={weight};\n" for host, weight in backends)
    return f"\nupstream {upstream} {{\n{servers}\n}}\n"


def render(balancer: Mapping[str, Any]) -> str:
    """Return the nginx.conf text for ``balancer`` (a Balancer object as the
    API server returns it, or as loaded from YAML).

    Raises ``ValueError`` (never another exception, whatever the input's
    shape) if ``metadata``/``spec`` or an item is not an object,
    ``spec.backends`` or ``spec.ports`` is not a non-empty list, a name that
    would reach the text is not a
    DNS-1035 label, a port or weight is not an in-range integer, or a
    protocol is not TCP/UDP (missing protocol means TCP, as in the CRD's
    default). Duplicate names/ports are not checked here (nginx would reject
    them, it cannot be injected through them): that is ``validate()``'s job.
    """
    name = _label(_object(balancer.get("metadata"), "metadata").get("name"), "metadata.name")
    spec = _object(balancer.get("spec"), "spec")
    ports = _objects(spec.get("ports"), "spec.ports")
    backends = _objects(spec.get("backends"), "spec.backends")

    hosts: list[tuple[str, int]] = []
    for i, backend in enumerate(backends):
        backend_name = _label(backend.get("name"), f"spec.backends[{i}].name")
        weight = _int(backend.get("weight"), f"spec.backends[{i}].weight", 1, 2**31 - 1)
        host = names.backend_service_name(name, backend_name)
        hosts.append((_label(host, f"spec.backends[{i}].name (Service name)"), weight))

    servers: list[str] = []
    upstreams: list[str] = []
    for i, port in enumerate(ports):
        upstream = names.upstream_name(_label(port.get("name"), f"spec.ports[{i}].name"))
        number = _int(port.get("port"), f"spec.ports[{i}].port", 1, 65535)
        protocol = _protocol(port, f"spec.ports[{i}].protocol")
        servers.append(_server_block(number, protocol, upstream))
        upstreams.append(_upstream_block(upstream, number, hosts))

    return _HEADER + "".join(servers) + "".join(upstreams) + _FOOTER
