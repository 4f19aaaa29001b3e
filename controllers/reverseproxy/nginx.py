"""Pure rendering of a ReverseProxy or TCPReverseProxy into its ``nginx.conf``.

The text is the original operator's ``internal/nginx/config.tpl`` as Go's
text/template renders it (every action is ``{{-``, so absent lines vanish
without leaving blank lines; the 9-space indent of the probe location; ``listen
8080 ;`` for TCP; no trailing newline), for the object after
``validation.with_defaults``. Set headers are sorted by key (Go ranges over
maps in sorted order); rewrites and hidden headers keep their order; the fixed
``proxy_set_header Upgrade $http_upgrade;`` comes first.

Differences from the original, both deliberate:

* **Quoting.** The original inserted every value raw, so a header value
  ``v; return 200 injected`` added a directive. Here every value that is not a
  plain nginx word (it holds whitespace, ``;``, ``{``, ``}``, quotes, ``\\``
  or ``#``) is written as one double-quoted token with ``\\`` and ``"``
  escaped, which nginx reads back as exactly the original string; plain values
  are written as the original did, so ordinary configs are byte-identical.
  ``logFormat`` stays in single quotes and ``proxyPass`` in double quotes, as
  in the original, escaped the same way. Structured fields (header names,
  resolver addresses, servers, timeouts, hash) cannot hold such characters
  at all (``validation``).
* **Resolver.** The ``resolver`` line is written only from ``spec.resolver``;
  the original fell back to the *controller's* ``/etc/resolv.conf``, which is
  wrong when the controller runs elsewhere (prior art 6.7) and would make this
  function impure. Upstream names in ``proxyPass`` and ``servers`` are literal,
  so nginx resolves them with the pod's own resolver at start either way.

``render`` raises ``validation.InvalidSpec`` (a ``ValueError``) for an object
``validation.validate`` rejects, never mutates its argument and depends on
nothing else.
"""

from __future__ import annotations

import re
from typing import Any, cast

from controllers.reverseproxy import names
from controllers.reverseproxy.types import (
    ReverseProxySpec,
    TCPReverseProxySpec,
    TCPReverseProxySpecServer,
)
from controllers.reverseproxy.validation import check

#: Characters that end or change an unquoted nginx token.
_NEEDS_QUOTES = re.compile(r"""[\s;{}"'\\#]""")

_HEAD = """\
daemon off;
pid /tmp/nginx.pid;

worker_processes {workers};
worker_rlimit_nofile 65535;

error_log /dev/stdout notice;
error_log /dev/stdout error;

events {{
    multi_accept       on;
    worker_connections {connections};
}}

http {{
    client_body_temp_path /tmp/client_temp;
    proxy_temp_path       /tmp/proxy_temp_path;
    fastcgi_temp_path     /tmp/fastcgi_temp;
    uwsgi_temp_path       /tmp/uwsgi_temp;
    scgi_temp_path        /tmp/scgi_temp;"""

_PING = f"""
        location = {names.PING_PATH} {{
            access_log off;
            return 200 '.';
        }}
    }}"""

_PROBE_SERVER = f"""

    server {{
        listen {names.PROBE_PORT};

         location = {names.PING_PATH} {{
             access_log off;
             return 200 '.';
         }}
    }}
}}"""


def _escape(text: str, quote: str) -> str:
    return text.replace("\\", "\\\\").replace(quote, "\\" + quote)


def quote(value: str) -> str:
    """``value`` as one nginx token: as is if it is a plain word, else double-quoted."""
    if value and not _NEEDS_QUOTES.search(value):
        return value
    return '"' + _escape(value, '"') + '"'


def _resolver(spec: ReverseProxySpec | TCPReverseProxySpec, indent: str) -> str:
    resolver = spec.get("resolver") or []
    if not resolver:
        return ""
    return f"\n{indent}resolver {' '.join(resolver)} ipv6=off;"


def _http(spec: ReverseProxySpec) -> str:
    out = []
    log_format = spec.get("logFormat")
    if log_format:
        out.append(f"\n    log_format operator '{_escape(log_format, chr(39))}';")
        out.append("\n    access_log /dev/stdout operator;")
    else:
        out.append("\n    access_log off;")
    out.append(f"\n\n    server {{\n        listen {names.PROXY_PORT};")
    out.append(_resolver(spec, " " * 8))
    out.append("\n\n        location / {")
    for rule in spec.get("rewrite") or []:
        out.append(
            f"\n            rewrite {quote(rule['regex'])} {quote(rule['replacement'])} "
            f"{rule['flag']};"
        )
    out.append(
        f"\n\n            proxy_read_timeout {spec['proxyReadTimeout']};"
        f"\n            proxy_send_timeout {spec['proxySendTimeout']};"
        f"\n            proxy_connect_timeout {spec['proxyConnectTimeout']};"
        "\n\n            proxy_ssl_server_name on;"
    )
    for header in spec.get("proxyHideHeader") or []:
        out.append(f"\n            proxy_hide_header {header};")
    out.append("\n\n            proxy_set_header Upgrade $http_upgrade;")
    headers = spec.get("proxySetHeader") or {}
    for key in sorted(headers, key=lambda k: k.encode()):
        out.append(f"\n            proxy_set_header {key} {quote(headers[key])};")
    out.append(f'\n\n            proxy_pass "{_escape(spec["proxyPass"], chr(34))}";\n        }}\n')
    out.append(_PING)
    return "".join(out)


def _server(server: TCPReverseProxySpecServer) -> str:
    text = str(server["server"])
    if server.get("weight") is not None:
        text += f" weight={server['weight']}"
    if server.get("maxConns") is not None:
        text += f" max_conns={server['maxConns']}"
    return text


def _stream(spec: TCPReverseProxySpec) -> str:
    out = ["\nstream {\n    upstream servers {"]
    if spec.get("hash"):
        out.append(f"\n        hash {spec['hash']};")
    for server in spec["servers"]:
        out.append(f"\n        server {_server(server)};")
    out.append("\n    }")
    out.append(_resolver(spec, " " * 4))
    udp = "udp" if spec["protocol"] == "UDP" else ""
    out.append(
        f"\n\n    server {{\n        listen {names.PROXY_PORT} {udp};"
        f"\n\n        proxy_timeout {spec['proxyTimeout']};"
        "\n\n        proxy_pass servers;\n    }\n}"
    )
    return "".join(out)


def render(obj: dict[str, Any]) -> str:
    """The nginx.conf of a ReverseProxy or TCPReverseProxy (kind from ``obj``)."""
    # check() passed: the spec, defaults filled in, has the shape types.py describes.
    spec: ReverseProxySpec | TCPReverseProxySpec = check(obj, check_name=False)["spec"]
    workers = spec.get("workerProcesses")
    text = _HEAD.format(
        workers="auto" if workers is None else workers,
        connections=spec["workerConnections"],
    )
    tcp = names.kind_of(obj) is names.TCP_REVERSE_PROXY
    if not tcp:
        text += _http(cast(ReverseProxySpec, spec))
    text += _PROBE_SERVER
    if tcp:
        text += _stream(cast(TCPReverseProxySpec, spec))
    return text
