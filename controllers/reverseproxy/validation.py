"""Defaults and validation of ReverseProxy and TCPReverseProxy objects (pure).

Defaults (``with_defaults``)
----------------------------
The original set defaults in two places; both are kept, and the controller
applies all of them again to its in-memory copy so that an API server that
applies no CRD defaults (or has an older CRD) renders the same thing:

* **CRD defaults** (``crds/*.yaml``, as the original's ``+kubebuilder:default``
  markers): ``replicas: 1``, ``servicePort: 80``, ``workerConnections: 1024``;
  ReverseProxy ``rewrite[].flag: break`` and the three proxy timeouts
  ``15s``; TCPReverseProxy ``protocol: TCP`` and ``proxyTimeout: 10m``.
* **Controller defaults** (the original's mutating webhook, which we do not
  run): ``image`` empty -> the controller's ``--nginx-image`` (default
  ``$DEFAULT_NGINX_IMAGE``, as the webhook read it); ReverseProxy
  ``proxySetHeader`` keys lowercased, ``host`` set to the URL host (with any
  port) of ``proxyPass`` when absent or empty, ``logFormat`` absent -> nginx's
  combined format (``""`` still turns access logging off). They are applied
  in memory on every reconcile and never written into the stored spec, so
  the stored object is what the user wrote (no webhook, no second writer of
  the spec).

Validation (``validate``)
-------------------------
The original templated every string raw into nginx.conf, and relied on
``nginx -t`` at admission, which catches syntax errors but not injected
directives (prior art section 6, points 4, 5 and 9). Here every field has a
grammar, checked by the CRD schema at admission (patterns, enums, bounds, CEL
on the name) *and* again here, for API servers that enforce none of it:

* structured values (``proxyPass``, header names, ``resolver`` entries,
  ``servers[].server``, timeouts, ``hash``) must match a grammar that has no
  whitespace, quotes, ``;``, ``{``, ``}`` or ``#``;
* free text (header values, rewrite regex and replacement, ``logFormat``)
  may contain any printable character; ``nginx.render`` quotes and escapes
  it, so it is one nginx token whatever it holds. Control characters
  (newlines included) are refused;
* a ``$`` in text nginx interpolates (header values, rewrite replacements,
  ``logFormat``, ``hash``) must start a variable nginx knows (``$1``..``$9``
  in rewrite replacements), because an unknown one fails nginx at start,
  which the original's ``nginx -t`` caught and we no longer run;
* a rewrite regex must compile (Python's ``re``, after mapping PCRE's
  ``(?<name>`` to ``(?P<name>``): a few exotic PCRE constructs are refused
  rather than crash-looping the nginx pods;
* header names that differ only by case are refused (the original kept one
  at random, prior art 6.6);
* the object name plus the child prefix fits 63 characters and is a DNS
  label (prior art 6.9); numbers are bounded.

``validate`` never raises and never mutates its argument, for any input
(wrongly typed fields included); it returns ``[]`` iff ``nginx.render`` and
``resources.desired_children`` accept the object. Each message starts with
the field path (``spec.proxySetHeader[x-a]: ...``); values quoted in messages
are cut to 100 characters, and ``message(problems)`` joins them into at most
``MAX_MESSAGE_LENGTH`` characters (the reconciler's condition and event text).
A bracketed host must be an IPv6 address (nginx refuses ``[1.2.3.4]``).
"""

from __future__ import annotations

import copy
import ipaddress
import re
import warnings
from typing import Any
from urllib.parse import urlsplit

from controllers.reverseproxy import names
from pycontroller.labels import is_qualified_name, is_valid_label_value
from pycontroller.meta import join_problems, shorten

Obj = dict[str, Any]

#: The original's default log format (nginx's ``combined``).
COMBINED_LOG_FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" '
    '$status $body_bytes_sent "$http_referer" "$http_user_agent"'
)

# CRD defaults (also in crds/*.yaml; a unit test pins them equal).
DEFAULT_REPLICAS = 1
DEFAULT_SERVICE_PORT = 80
DEFAULT_WORKER_CONNECTIONS = 1024
DEFAULT_REWRITE_FLAG = "break"
DEFAULT_PROXY_TIMEOUT_HTTP = "15s"
DEFAULT_PROTOCOL = "TCP"
DEFAULT_PROXY_TIMEOUT_TCP = "10m"
HTTP_TIMEOUT_FIELDS = ("proxyReadTimeout", "proxySendTimeout", "proxyConnectTimeout")

# Bounds (also in the CRDs).
MAX_REPLICAS = 1000
MAX_WORKER_PROCESSES = 1024
MAX_WORKER_CONNECTIONS = 65535
MAX_INT32 = 2**31 - 1
MAX_SERVERS = 256
MAX_LIST = 64  # rewrite, proxyHideHeader, proxySetHeader, resolver
MAX_TEXT = 4096
MAX_URL = 2048
MAX_NAME = 256

# --- grammars -----------------------------------------------------------------------

_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = rf"{_LABEL}(\.{_LABEL})*"
IPV6 = r"\[[0-9A-Fa-f:.]+\]"
HOST = rf"({HOSTNAME}|{IPV6})"
PORT = r"[0-9]{1,5}"
#: ``http(s)://host[:port][/path]``: no user info, query, fragment or variables.
PROXY_PASS_PATTERN = rf"^https?://{HOST}(:{PORT})?(/[A-Za-z0-9._~%!&()*+,=:@/-]*)?$"
#: An HTTP header name (letters, digits, ``-``, ``_``, ``.``).
HEADER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
#: A resolver address: host or [IPv6] with an optional port.
RESOLVER_PATTERN = rf"^{HOST}(:{PORT})?$"
#: A stream upstream server: host:port (nginx requires the port).
SERVER_PATTERN = rf"^{HOST}:{PORT}$"
HTTP_TIMEOUT_PATTERN = r"^[0-9]{1,8}s$"
TCP_TIMEOUT_PATTERN = r"^[0-9]{1,8}(s|m)$"
#: ``hash`` key: literal characters and ``$variables``, optionally `` consistent``.
HASH_PATTERN = r"^[A-Za-z0-9_.:$-]+( consistent)?$"
#: Printable text (no control characters, newlines included).
TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*$"
#: Like TEXT_PATTERN, without whitespace (rewrite replacements, images).
WORD_PATTERN = r"^[^\x00-\x20\x7f]+$"

_PROXY_PASS = re.compile(PROXY_PASS_PATTERN)
_HEADER_NAME = re.compile(HEADER_NAME_PATTERN)
_RESOLVER = re.compile(RESOLVER_PATTERN)
_SERVER = re.compile(SERVER_PATTERN)
_HTTP_TIMEOUT = re.compile(HTTP_TIMEOUT_PATTERN)
_TCP_TIMEOUT = re.compile(TCP_TIMEOUT_PATTERN)
_HASH = re.compile(HASH_PATTERN)
_TEXT = re.compile(TEXT_PATTERN)
_WORD = re.compile(WORD_PATTERN)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PORT_SUFFIX = re.compile(r":([0-9]{1,5})$")
_BRACKETED = re.compile(r"\[([^\]]*)\]")

#: Longest value quoted in a problem (longer ones are cut, with "...").
_MAX_SHOWN = 100
#: Longest ``validation.message``: an events.k8s.io note's limit (1 kB); a
#: condition message may hold 32 kB (the CRDs' ``maxLength``).
MAX_MESSAGE_LENGTH = 1024


def _cut(text: str) -> str:
    return shorten(text, _MAX_SHOWN)


def _show(value: Any) -> str:
    """``repr(value)``, cut to ``_MAX_SHOWN`` characters: safe in a message."""
    return _cut(repr(value))


def _key(key: Any) -> str:
    """A map key for a field path (``spec.proxySetHeader[<key>]``): as is if
    it is short printable text, else quoted and cut like a value."""
    if isinstance(key, str) and len(key) <= _MAX_SHOWN and _TEXT.fullmatch(key):
        return key
    return _show(key)


def message(problems: list[str], limit: int = MAX_MESSAGE_LENGTH) -> str:
    """``problems`` in at most ``limit`` characters (``pycontroller.meta.join_problems``)."""
    return join_problems(problems, limit)


# --- nginx variables ------------------------------------------------------------------

#: Variables of nginx's http core, proxy, upstream and realip modules (1.22).
HTTP_VARIABLES = frozenset(
    """
    args binary_remote_addr body_bytes_sent bytes_sent connection connection_requests
    connection_time content_length content_type document_root document_uri host hostname
    https is_args limit_rate msec nginx_version pid pipe proxy_protocol_addr
    proxy_protocol_port proxy_protocol_server_addr proxy_protocol_server_port query_string
    realpath_root remote_addr remote_port remote_user request request_body
    request_completion request_filename request_id request_length request_method
    request_time request_uri scheme server_addr server_name server_port server_protocol
    status tcpinfo_rtt tcpinfo_rttvar tcpinfo_snd_cwnd tcpinfo_rcv_space time_iso8601
    time_local uri proxy_add_x_forwarded_for proxy_host proxy_port upstream_addr
    upstream_bytes_received upstream_bytes_sent upstream_cache_status
    upstream_connect_time upstream_header_time upstream_response_length
    upstream_response_time upstream_status realip_remote_addr realip_remote_port
    """.split()
)
#: Prefixes of nginx's per-name http variables (``$http_user_agent``...).
HTTP_VARIABLE_PREFIXES = (
    "arg_",
    "cookie_",
    "http_",
    "sent_http_",
    "sent_trailer_",
    "upstream_cookie_",
    "upstream_http_",
    "upstream_trailer_",
)
#: Variables of nginx's stream core and upstream modules (1.22).
STREAM_VARIABLES = frozenset(
    """
    binary_remote_addr bytes_received bytes_sent connection hostname msec nginx_version
    pid protocol proxy_protocol_addr proxy_protocol_port proxy_protocol_server_addr
    proxy_protocol_server_port remote_addr remote_port server_addr server_port
    session_time status time_iso8601 time_local upstream_addr upstream_bytes_received
    upstream_bytes_sent upstream_connect_time upstream_first_byte_time
    upstream_session_time
    """.split()
)
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z0-9_]*)\}|([A-Za-z0-9_]*))")


def _unknown_variables(text: str, *, stream: bool = False, captures: bool = False) -> list[str]:
    """The ``$references`` in ``text`` nginx would refuse (``"$"`` for a bare one)."""
    bad = []
    for match in _VARIABLE.finditer(text):
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if not name:
            bad.append(match.group(0))
        elif name.isdigit():
            if not (captures and len(name) == 1):
                bad.append(match.group(0))
        elif stream:
            if name.lower() not in STREAM_VARIABLES:
                bad.append(match.group(0))
        elif name.lower() not in HTTP_VARIABLES and not name.lower().startswith(
            HTTP_VARIABLE_PREFIXES
        ):
            bad.append(match.group(0))
    return bad


# --- defaults ---------------------------------------------------------------------------


def proxy_pass_host(proxy_pass: Any) -> str:
    """The host (with any port) of a ``proxyPass`` URL, ``""`` if there is none.

    Go's ``url.Parse(...).Host``, which the original's webhook used.
    """
    if not isinstance(proxy_pass, str):
        return ""
    try:
        netloc = urlsplit(proxy_pass).netloc
    except ValueError:
        return ""
    return netloc.rpartition("@")[2]


def with_defaults(obj: Any, *, nginx_image: str | None = None) -> Obj:
    """A deep copy of ``obj`` with every default applied (see the module docstring).

    ``nginx_image`` fills an absent or empty ``spec.image`` when given. Never
    raises and never mutates ``obj``; fields of the wrong type are left as
    they are (``validate`` reports them).
    """
    out: Obj = copy.deepcopy(obj) if isinstance(obj, dict) else {}
    spec = out.get("spec")
    if spec is None:
        spec = out["spec"] = {}
    if not isinstance(spec, dict):
        return out
    kind = names.kind_of(out)
    if nginx_image and not spec.get("image"):
        spec["image"] = nginx_image
    spec.setdefault("replicas", DEFAULT_REPLICAS)
    spec.setdefault("servicePort", DEFAULT_SERVICE_PORT)
    spec.setdefault("workerConnections", DEFAULT_WORKER_CONNECTIONS)
    if kind is names.TCP_REVERSE_PROXY:
        spec.setdefault("protocol", DEFAULT_PROTOCOL)
        spec.setdefault("proxyTimeout", DEFAULT_PROXY_TIMEOUT_TCP)
        return out
    for field in HTTP_TIMEOUT_FIELDS:
        spec.setdefault(field, DEFAULT_PROXY_TIMEOUT_HTTP)
    rewrites = spec.get("rewrite")
    for rule in rewrites if isinstance(rewrites, list) else ():
        if isinstance(rule, dict):
            rule.setdefault("flag", DEFAULT_REWRITE_FLAG)
    if spec.get("logFormat") is None:
        spec["logFormat"] = COMBINED_LOG_FORMAT
    headers = spec.get("proxySetHeader")
    if headers is None:
        headers = {}
    if isinstance(headers, dict):
        lowered = {str(k).lower(): v for k, v in headers.items()}
        if not lowered.get("host"):
            host = proxy_pass_host(spec.get("proxyPass"))
            if host:
                lowered["host"] = host
        spec["proxySetHeader"] = lowered
    return out


# --- validation ---------------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, field: str, message: str) -> None:
        self.items.append(f"{field}: {message}")

    def int_in(self, field: str, value: Any, low: int, high: int, *, optional: bool) -> None:
        if value is None and optional:
            return
        if not _is_int(value) or not low <= value <= high:
            self.add(field, f"must be an integer in [{low}, {high}], not {_show(value)}")

    def matches(
        self, field: str, value: Any, pattern: re.Pattern[str], what: str, limit: int
    ) -> bool:
        if not isinstance(value, str):
            self.add(field, f"must be a string ({what}), not {type(value).__name__}")
            return False
        if len(value) > limit:
            self.add(field, f"must be at most {limit} characters")
            return False
        if not pattern.fullmatch(value):
            self.add(field, f"{_show(value)} is not {what}")
            return False
        return True

    def variables(self, field: str, text: str, **kwargs: bool) -> None:
        bad = _unknown_variables(text, **kwargs)
        if bad:
            shown = ", ".join(_cut(v) for v in sorted(set(bad)))
            self.add(field, f"unknown nginx variable(s) {shown}")

    def string_map(self, field: str, value: Any) -> None:
        """A map of label keys to label values (nodeSelector, podLabels)."""
        if value is None:
            return
        if not isinstance(value, dict):
            self.add(field, "must be a map of strings")
            return
        for key, val in value.items():
            if not isinstance(key, str) or is_qualified_name(key):
                self.add(f"{field}[{_key(key)}]", "is not a valid label key")
            if not isinstance(val, str) or is_valid_label_value(val):
                self.add(f"{field}[{_key(key)}]", f"{_show(val)} is not a valid label value")

    def port_range(self, field: str, value: str) -> None:
        """Check the ``host[:port]`` ``value`` (matched by a grammar above):
        the port is in range and a bracketed host is an IPv6 address.

        The grammars admit any of ``[0-9A-Fa-f:.]`` in brackets, which nginx
        refuses at start ("invalid IPv6 address") unless it is one.
        """
        bracketed = _BRACKETED.match(value)
        if bracketed:
            try:
                ipaddress.IPv6Address(bracketed.group(1))
            except ValueError:
                self.add(field, f"[{bracketed.group(1)}] is not an IPv6 address")
            value = value[bracketed.end() :]
        match = _PORT_SUFFIX.search(value)
        if match and not 1 <= int(match.group(1)) <= 65535:
            self.add(field, f"port {match.group(1)} is not in [1, 65535]")


def _validate_name(p: _Problems, obj: Obj, kind: names.Kind) -> None:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not _DNS_LABEL.fullmatch(name):
        p.add("metadata.name", f"{_show(name)} is not a DNS-1123 label (it names the Service)")
    elif len(name) > kind.max_name_length:
        p.add(
            "metadata.name",
            f"must be at most {kind.max_name_length} characters: the children are named "
            f"{kind.prefix}<name>, at most {names.DNS_LABEL_MAX_LENGTH}",
        )


def _validate_common(p: _Problems, spec: Obj) -> None:
    image = spec.get("image")
    if not image:
        p.add("spec.image", "must not be empty")
    else:
        p.matches("spec.image", image, _WORD, "an image reference", 512)
    p.int_in("spec.replicas", spec.get("replicas"), 0, MAX_REPLICAS, optional=False)
    p.int_in("spec.servicePort", spec.get("servicePort"), 1, 65535, optional=False)
    p.int_in(
        "spec.workerProcesses", spec.get("workerProcesses"), 1, MAX_WORKER_PROCESSES, optional=True
    )
    p.int_in(
        "spec.workerConnections",
        spec.get("workerConnections"),
        1,
        MAX_WORKER_CONNECTIONS,
        optional=False,
    )
    resolver = spec.get("resolver")
    if resolver is not None:
        if not isinstance(resolver, list) or len(resolver) > MAX_LIST:
            p.add("spec.resolver", f"must be a list of at most {MAX_LIST} addresses")
        else:
            for i, entry in enumerate(resolver):
                field = f"spec.resolver[{i}]"
                if p.matches(field, entry, _RESOLVER, "a host or IP with an optional port", 256):
                    p.port_range(field, entry)
    p.string_map("spec.nodeSelector", spec.get("nodeSelector"))
    p.string_map("spec.podLabels", spec.get("podLabels"))
    for field, types, what in (
        ("resources", dict, "an object"),
        ("affinity", dict, "an object"),
        ("env", list, "a list"),
    ):
        value = spec.get(field)
        if value is not None and not isinstance(value, types):
            p.add(f"spec.{field}", f"must be {what}")
    resources = spec.get("resources")
    if isinstance(resources, dict):
        for part in ("limits", "requests"):
            _validate_quantities(p, f"spec.resources.{part}", resources.get(part))
    env = spec.get("env")
    if isinstance(env, list):
        for i, var in enumerate(env):
            if not isinstance(var, dict) or not isinstance(var.get("name"), str) or not var["name"]:
                p.add(f"spec.env[{i}]", "must be an object with a name")


def _validate_quantities(p: _Problems, field: str, value: Any) -> None:
    """A ResourceList: a map of resource names to quantities (the renderer
    copies limits into requests, so both must be maps)."""
    if value is None:
        return
    if not isinstance(value, dict):
        p.add(field, "must be a map of resource names to quantities")
        return
    for key, quantity in value.items():
        if isinstance(quantity, bool) or not isinstance(quantity, str | int):
            p.add(f"{field}[{_key(key)}]", f"{_show(quantity)} is not a quantity")


def _validate_http(p: _Problems, spec: Obj) -> None:
    proxy_pass = spec.get("proxyPass")
    if proxy_pass is None or proxy_pass == "":
        p.add("spec.proxyPass", "is required")
    elif p.matches(
        "spec.proxyPass", proxy_pass, _PROXY_PASS, "an http(s)://host[:port][/path] URL", MAX_URL
    ):
        # The authority, as the grammar split it (urlsplit raises on a bad IPv6 literal).
        p.port_range("spec.proxyPass", proxy_pass.split("://", 1)[1].split("/", 1)[0])
    log_format = spec.get("logFormat")
    if log_format is not None and p.matches(
        "spec.logFormat", log_format, _TEXT, "printable text", MAX_TEXT
    ):
        p.variables("spec.logFormat", log_format)
    for field in HTTP_TIMEOUT_FIELDS:
        p.matches(f"spec.{field}", spec.get(field), _HTTP_TIMEOUT, "seconds like 15s", 9)
    rewrites = spec.get("rewrite")
    if rewrites is not None:
        if not isinstance(rewrites, list) or len(rewrites) > MAX_LIST:
            p.add("spec.rewrite", f"must be a list of at most {MAX_LIST} rules")
        else:
            for i, rule in enumerate(rewrites):
                _validate_rewrite(p, f"spec.rewrite[{i}]", rule)
    hide = spec.get("proxyHideHeader")
    if hide is not None:
        if not isinstance(hide, list) or len(hide) > MAX_LIST:
            p.add("spec.proxyHideHeader", f"must be a list of at most {MAX_LIST} header names")
        else:
            for i, header in enumerate(hide):
                p.matches(
                    f"spec.proxyHideHeader[{i}]", header, _HEADER_NAME, "a header name", MAX_NAME
                )
    headers = spec.get("proxySetHeader")
    if headers is not None:
        if not isinstance(headers, dict) or len(headers) > MAX_LIST:
            p.add("spec.proxySetHeader", f"must be a map of at most {MAX_LIST} headers")
            return
        for key, value in headers.items():
            field = f"spec.proxySetHeader[{_key(key)}]"
            p.matches(field, key, _HEADER_NAME, "a header name", MAX_NAME)
            if p.matches(field, value, _TEXT, "printable text", MAX_TEXT):
                p.variables(field, value)


def _validate_rewrite(p: _Problems, field: str, rule: Any) -> None:
    if not isinstance(rule, dict):
        p.add(field, "must be an object with regex and replacement")
        return
    regex = rule.get("regex")
    if not regex:
        p.add(f"{field}.regex", "is required")
    elif p.matches(f"{field}.regex", regex, _TEXT, "printable text", MAX_TEXT):
        try:
            with warnings.catch_warnings():  # FutureWarnings of re about nested sets
                warnings.simplefilter("ignore")
                re.compile(re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", regex))
        except re.error as err:
            p.add(f"{field}.regex", f"is not a valid regular expression: {err}")
    replacement = rule.get("replacement")
    if not replacement:
        p.add(f"{field}.replacement", "is required")
    elif p.matches(
        f"{field}.replacement", replacement, _WORD, "a URI without whitespace", MAX_TEXT
    ):
        p.variables(f"{field}.replacement", replacement, captures=True)
    if rule.get("flag") not in ("last", "break"):
        p.add(f"{field}.flag", f"must be last or break, not {_show(rule.get('flag'))}")


def _validate_tcp(p: _Problems, spec: Obj) -> None:
    servers = spec.get("servers")
    if not isinstance(servers, list) or not servers or len(servers) > MAX_SERVERS:
        p.add("spec.servers", f"must be a list of 1 to {MAX_SERVERS} servers")
    else:
        for i, server in enumerate(servers):
            field = f"spec.servers[{i}]"
            if not isinstance(server, dict):
                p.add(field, "must be an object with a server")
                continue
            if p.matches(f"{field}.server", server.get("server"), _SERVER, "host:port", 256):
                p.port_range(f"{field}.server", server["server"])
            p.int_in(f"{field}.weight", server.get("weight"), 1, MAX_INT32, optional=True)
            p.int_in(f"{field}.maxConns", server.get("maxConns"), 0, MAX_INT32, optional=True)
    hash_ = spec.get("hash")
    if hash_ and p.matches("spec.hash", hash_, _HASH, "a hash key [consistent]", MAX_NAME):
        p.variables("spec.hash", hash_, stream=True)
    if spec.get("protocol") not in ("TCP", "UDP"):
        p.add("spec.protocol", f"must be TCP or UDP, not {_show(spec.get('protocol'))}")
    p.matches("spec.proxyTimeout", spec.get("proxyTimeout"), _TCP_TIMEOUT, "like 10m or 30s", 9)


def validate(obj: Any, *, nginx_image: str | None = None, check_name: bool = True) -> list[str]:
    """Problems with ``obj`` after ``with_defaults(obj, nginx_image=...)``; ``[]``: valid.

    Without ``nginx_image`` an empty ``spec.image`` is not reported (the
    renderer does not need it; the controller always passes its image).
    Without ``check_name`` only the spec is checked (the renderer's case: the
    name never reaches nginx.conf).
    """
    p = _Problems()
    if not isinstance(obj, dict):
        return ["object: must be a mapping"]
    kind = names.kind_of(obj)
    if check_name:
        _validate_name(p, obj, kind)
    raw = obj.get("spec")
    if not isinstance(raw, dict) and raw is not None:
        return [*p.items, "spec: must be an object"]
    headers = (raw or {}).get("proxySetHeader")
    if isinstance(headers, dict):
        seen: dict[str, str] = {}
        for key in headers:
            lower = str(key).lower()
            if lower in seen:
                p.add(
                    "spec.proxySetHeader",
                    f"{_show(seen[lower])} and {_show(key)} differ only by case",
                )
            seen[lower] = str(key)
    spec = with_defaults(obj, nginx_image="-" if nginx_image is None else nginx_image)["spec"]
    _validate_common(p, spec)
    if kind is names.TCP_REVERSE_PROXY:
        _validate_tcp(p, spec)
    else:
        _validate_http(p, spec)
    return p.items


class InvalidSpec(ValueError):
    """An object ``validate`` rejects; ``problems`` holds its messages."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def check(obj: Any, *, nginx_image: str | None = None, check_name: bool = True) -> Obj:
    """``with_defaults(obj)`` if it is valid, else raise ``InvalidSpec``."""
    problems = validate(obj, nginx_image=nginx_image, check_name=check_name)
    if problems:
        raise InvalidSpec(problems)
    return with_defaults(obj, nginx_image=nginx_image)
