"""HTTP layer: a ``ThreadingHTTPServer`` request handler and REST routing.

One daemon thread per connection, HTTP/1.1 keep-alive, JSON bodies, and
chunked ``Transfer-Encoding`` for watch streams (one JSON event per line,
written and flushed as soon as it is queued). Routes:

    /api/v1[/watch]/namespaces/{ns}/{plural}[/{name}[/{sub}]]
    /api/v1[/watch]/{plural}[/{name}[/{sub}]]          (cluster-scoped, or all namespaces)
    /apis/{group}/{version}/...                         (the same below the group version)
    /api, /apis, /apis/{g}[/{v}], /version, /openapi/*  (discovery, via discovery.py/openapi.py)

Subresources: ``status`` (kinds that have it) and ``scale`` (deployments and
CRDs declaring it; ``autoscaling/v1`` Scale bodies); the special ones
(``token``, ``finalize``, ``eviction``, the kubelet-only ``log``/``exec``/...)
go to ``reviews.serve``. Every error answer is a
``Status`` body. Each request is appended to the
server's request log once, with the status it got (a watch logs 200 when the
stream starts).

This layer only translates: it parses the request, calls one verb of
``rest.REST`` (the registry: get, list, create, update, patch, delete,
delete-collection with its propagation, scale), and encodes what the verb
returns into a ``Reply`` that ``_handle`` returns. Errors have one path: a
verb raises ``StatusError`` and ``_dispatch`` answers with its ``Status``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from pycontroller import _json
from pycontroller.testing.apiserver.gofmt import quote as go_quote
from pycontroller.testing.apiserver.http import negotiation, partial, protobuf
from pycontroller.testing.apiserver.http.auth import authorize_request
from pycontroller.testing.apiserver.http.discovery import discovery_response, version_info
from pycontroller.testing.apiserver.http.negotiation import (
    Negotiated,
    encode_json,
    encode_json_pretty,
    encode_yaml,
)
from pycontroller.testing.apiserver.http.openapi_v2 import openapi_v2_reply
from pycontroller.testing.apiserver.http.table import to_table
from pycontroller.testing.apiserver.registry import admission_policy, listoptions, reviews
from pycontroller.testing.apiserver.registry import options as request_options
from pycontroller.testing.apiserver.registry.eviction import KUBELET_ONLY
from pycontroller.testing.apiserver.registry.rest import (
    JOB_DELETE_WARNING,
    ORPHAN_BY_DEFAULT,
    DeleteOptions,
    WriteOptions,
    parse_resource_version,
    patch_type,
    rkey,
)
from pycontroller.testing.apiserver.registry.scale import scale_paths
from pycontroller.testing.apiserver.registry.selectors import (
    Selector,
    parse_field_selector,
    parse_label,
)
from pycontroller.testing.apiserver.registry.watch import INITIAL_EVENTS_END, Watcher
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import goshape
from pycontroller.testing.apiserver.schema.decode import (
    check_unknown_fields,
    decode_body,
    go_json_syntax_error,
    json_parse_error,
)
from pycontroller.testing.apiserver.schema.openapi import openapi_response
from pycontroller.testing.apiserver.schema.structural import check_embedded_types
from pycontroller.testing.apiserver.status import (
    StatusError,
    bad_request,
    internal_error,
    method_not_allowed,
    request_entity_too_large,
    unsupported_media_type,
)

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.server import APIServer

__all__ = ["Route", "make_http_server", "route"]

# The types the special subresources decode their bodies into.
_BODY_KINDS = {"eviction": "Eviction", "token": "TokenRequest", "binding": "Binding"}

logger = logging.getLogger(__name__)

JSON = "application/json"

# kube-apiserver's --max-request-body-bytes default (3 MiB): a longer body is
# refused with 413 (handlers/rest.go limitedReadBody).
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024

# The verbs served; any other method is 405 MethodNotAllowed, as go-restful
# answers through kube's ServiceErrorHandler (a Status, never an HTML page).
# Oversized bodies up to this length are read and dropped before the 413.
_DRAIN_MAX = 64 * 1024 * 1024

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
# A watch writes its events in chunks of about this many bytes (or 256 events).
_STREAM_CHUNK = 64 * 1024
# How long a watch with sendInitialEvents waits for a resourceVersion the
# storage has not reached before answering "Too large resource version"
# (the watch cache's blockTimeout).
_FRESHNESS_WAIT = 3.0


@dataclass
class Route:
    rt: ResourceType
    namespace: str | None  # None: cluster-scoped or all namespaces
    name: str | None
    subresource: str
    watch_path: bool  # legacy /watch/ prefix


def _not_found_path() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def route(server: APIServer, path: str) -> Route | None:
    """Map a request path to a resource route; None when it is not a resource path."""
    parts = [unquote(p) for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    watch_path = False
    if rest[0] == "watch":
        watch_path = True
        rest = rest[1:]
        if not rest:
            raise _not_found_path()
    reg = server.registry
    if rest[0] == "namespaces" and len(rest) >= 3:
        rt = reg.get(group, version, rest[2])
        if rt is not None and rt.namespaced:
            if len(rest) > 5 and rest[4] != "proxy":  # proxy/{path...}
                raise _not_found_path()
            return Route(
                rt,
                rest[1],
                rest[3] if len(rest) > 3 else None,
                rest[4] if len(rest) > 4 else "",
                watch_path,
            )
        if group == "" and len(rest) == 3:
            ns_rt = reg.get("", version, "namespaces")
            if ns_rt is None:
                raise _not_found_path()
            return Route(ns_rt, None, rest[1], rest[2], watch_path)
        raise _not_found_path()
    rt = reg.get(group, version, rest[0])
    if rt is None or (len(rest) > 3 and rest[2] != "proxy"):
        raise _not_found_path()
    name = rest[1] if len(rest) > 1 else None
    if rt.namespaced and name is not None:
        raise _not_found_path()
    return Route(rt, None, name, rest[2] if len(rest) > 2 else "", watch_path)


def _without_type_meta(obj: Any) -> Any:
    """``obj`` without ``kind``/``apiVersion`` (a shallow copy if it had them)."""
    if isinstance(obj, dict) and ("kind" in obj or "apiVersion" in obj):
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return obj


@dataclass
class Reply:
    """A finished answer: what a handled request returns (errors raise ``StatusError``)."""

    code: int
    body: bytes
    ctype: str = JSON
    headers: dict[str, str] = field(default_factory=dict)


def _warning(text: str) -> str:
    """A ``Warning`` header value (RFC 7234 ``299 - "text"``, quotes escaped)."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _query_int64(params: dict[str, str], name: str) -> int | None:
    """An int64 query parameter as ``runtime.Convert_Slice_string_To_int64``
    reads it (``strconv.ParseInt(s, 10, 64)``): None when absent (or empty:
    a zero); otherwise the number, or the parameter codec's error, which the
    list and delete-collection handlers answer as a 400 with strconv's bare
    message (``errors.NewBadRequest(err.Error())`` in handlers/get.go)."""
    value = params.get(name)
    if value is None or value == "":
        return None
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not digits or not digits.isascii() or not digits.isdigit():
        raise bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: invalid syntax")
    n = int(value)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: value out of range")
    return n


def _limit(params: dict[str, str]) -> int:
    """ListOptions.limit of a list or a delete-collection (0: none)."""
    return _query_int64(params, "limit") or 0


def _truthy(v: str | None) -> bool:
    """A boolean query parameter as ``runtime.Convert_Slice_string_To_bool``
    reads it: absent is false, "0" and "false" (any case) are false, and
    anything else, the empty string included, is true (so ``?watch=yes`` and
    ``?watch=`` are watches, as on a cluster)."""
    return v is not None and v != "0" and v.lower() != "false"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pycontroller-apiserver/0.1"
    server: _HTTPServer

    # --- plumbing ------------------------------------------------------------------

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without TCP_NODELAY,
        # Nagle + delayed ACK would add ~40 ms to every keep-alive response,
        # and watch events must reach the client at once.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_OPTIONS(self) -> None:
        self._dispatch("OPTIONS")

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # BaseHTTPRequestHandler answers a method it has no do_X for with an
        # HTML 501 page; route it through the normal path instead, which
        # answers kube's 405 Status (and logs the request).
        command = getattr(self, "command", None)
        if code == 501 and isinstance(command, str) and command and command not in _METHODS:
            self._dispatch(command.upper())
            return
        super().send_error(code, message, explain)

    def _read_body(self) -> bytes:
        """The request body, refused with 413 past ``MAX_REQUEST_BODY_BYTES``
        (a declared Content-Length is checked before anything is read; the
        connection is then closed, since the body was left unread)."""
        limit = MAX_REQUEST_BODY_BYTES
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                line = self.rfile.readline()
                try:
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                except ValueError as err:
                    self.close_connection = True
                    raise bad_request("malformed chunked request body") from err
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                if len(out) + size > limit:
                    self._discard_chunks(size, len(out))
                    raise request_entity_too_large(limit)
                out += self.rfile.read(size)
                self.rfile.readline()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError as err:
            self.close_connection = True
            raise bad_request("invalid Content-Length") from err
        if length > limit:
            self._discard(length)
            raise request_entity_too_large(limit)
        return self.rfile.read(length) if length > 0 else b""

    def _discard_chunks(self, size: int, seen: int) -> None:
        """``_discard`` for a chunked body: drop the rest (from a chunk of ``size``
        bytes, ``seen`` read before it) up to ``_DRAIN_MAX`` in all, then close."""
        self.close_connection = True
        while size > 0 and seen + size <= _DRAIN_MAX:
            if len(self.rfile.read(size)) < size:
                return
            seen += size
            self.rfile.readline()
            try:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            except ValueError:
                return
        if size == 0:
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass

    def _discard(self, length: int) -> None:
        """Drop an oversized body unread into memory, so the client, which may
        still be sending it, reads the 413 instead of a connection reset (as
        Go's server drains a little before closing). Past ``_DRAIN_MAX`` the
        connection is just closed."""
        if length > _DRAIN_MAX:
            self.close_connection = True
            return
        remaining = length
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 16))
            if not chunk:
                self.close_connection = True
                return
            remaining -= len(chunk)

    def _send(
        self, code: int, body: bytes, ctype: str = JSON, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _status_body(self, err: StatusError) -> tuple[bytes, str]:
        """An error's Status as kube's ``ErrorNegotiated`` writes it: in the
        media type negotiated under ``DefaultEndpointRestrictions`` (no
        transforms; protobuf whatever the resource: a custom resource's
        serializers include protobuf for ``Status``, only its objects are
        refused it), or, when nothing can be served, ``WriteRawJSON``'s
        indented JSON."""
        chosen = negotiation.choose(self.headers.get("Accept") or "", negotiation.DEFAULT)
        if chosen is None:
            return encode_json_pretty(err.body), JSON
        return self._encode(err.body, chosen, "v1", "Status")

    def _pretty(self, chosen: Negotiated) -> bool:
        query = parse_qs(urlsplit(self.path).query).get("pretty", [""])[0]
        return negotiation.is_pretty(chosen, query, self.headers.get("User-Agent") or "")

    def _encode(
        self, obj: dict[str, Any], chosen: Negotiated, api_version: str = "", kind: str = ""
    ) -> tuple[bytes, str]:
        """``obj`` (already transformed) in the negotiated media type, and
        that type: the body and ``Content-Type`` of ``SerializeObject``.
        ``api_version``/``kind`` name its protobuf message (default: its own)."""
        media = chosen.media_type
        if media == negotiation.PROTOBUF:
            try:
                return protobuf.encode(obj, api_version, kind), media
            except protobuf.ProtobufError as err:
                # Kinds without a message: the client accepts JSON too, as a rule.
                logger.warning("answering JSON: %s does not encode as protobuf: %s", kind, err)
        elif media == negotiation.YAML:
            return encode_yaml(obj), media
        if self._pretty(chosen):
            return encode_json_pretty(obj), JSON
        return encode_json(obj), JSON

    def _negotiate(self, rt: ResourceType, *, tables: bool = True) -> Negotiated:
        """``NegotiateOutputMediaType`` for a request to ``rt`` (its scope:
        a custom resource's objects are not served as protobuf); 406 when
        nothing the client accepts can be served. ``tables``: whether the
        endpoint converts to Tables (not a subresource without a table
        convertor, not a streaming list)."""
        endpoint = negotiation.CUSTOM_RESOURCE if rt.is_crd else negotiation.RESOURCE
        if not tables:
            endpoint = endpoint.without_tables()
        return negotiation.output(self.headers.get("Accept") or "", endpoint)

    def _negotiate_stream(self, rt: ResourceType, *, tables: bool = True) -> Negotiated:
        """``_negotiate`` for a watch: also ``NegotiateOutputMediaTypeStream``."""
        endpoint = negotiation.CUSTOM_RESOURCE if rt.is_crd else negotiation.RESOURCE
        if not tables:
            endpoint = endpoint.without_tables()
        return negotiation.output_stream(self.headers.get("Accept") or "", endpoint)

    def _dispatch(self, method: str) -> None:
        app = self.server.app
        raw_path = self.path
        code = 500
        logged = False
        try:
            try:
                body = self._read_body()
                delay = app.faults.latency_for(raw_path)
                if delay > 0:
                    time.sleep(delay)
                app.faults.check(method, raw_path)
                reply = self._handle(method, raw_path, body)
                if reply is None:  # a watch: streamed and logged already
                    code, logged = 200, True
                else:
                    # Log before answering: a client that reads the log right
                    # after the response must find its request there.
                    code = reply.code
                    app.record(method, raw_path, code)
                    logged = True
                    self._send(reply.code, reply.body, reply.ctype, reply.headers)
            except StatusError as err:
                code = err.code
                app.record(method, raw_path, code)
                logged = True
                body, ctype = self._status_body(err)
                self._send(err.code, body, ctype, err.headers)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True
        except Exception as err:
            logger.exception("internal error serving %s %s", method, raw_path)
            code = 500
            try:
                e = internal_error(str(err))
                if not logged:
                    app.record(method, raw_path, code)
                    logged = True
                body, ctype = self._status_body(e)
                self._send(500, body, ctype)
            except OSError:
                self.close_connection = True
        finally:
            if not logged:
                app.record(method, raw_path, code)

    # --- request handling --------------------------------------------------------

    def _handle(self, method: str, raw_path: str, body: bytes) -> Reply | None:
        """The answer to one request (None: a watch, streamed here); errors raise."""
        app = self.server.app
        split = urlsplit(raw_path)
        path = split.path
        # A repeated parameter counts once, with its first value (Go's url.Values.Get,
        # and apimachinery's Convert_Slice_string_To_string for the options structs).
        params = {k: v[0] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        accept = self.headers.get("Accept") or ""
        if method not in _METHODS:
            raise method_not_allowed()
        user = authorize_request(
            app.authenticator, app.authorizer, method, path, params, self.headers
        )
        admission_policy.REQUEST_USER.set(user)  # request.userInfo for admission policies
        if path.rstrip("/") == "/version":
            # version.Info is written indented, without a final newline (WriteRawJSON).
            return Reply(200, json.dumps(version_info(), indent=2).encode())
        if path in ("/healthz", "/livez", "/readyz"):
            return Reply(200, b"ok", "text/plain; charset=utf-8")
        r = route(app, path)
        if r is None:
            if method == "GET" and path == "/openapi/v2":
                return Reply(*openapi_v2_reply(app.registry, method, self.headers))
            if method == "GET":
                for fn in (discovery_response, openapi_response):
                    res = fn(app.registry, path, accept)
                    if res is not None:
                        rcode, rbody, rctype = res
                        return Reply(rcode, rbody, rctype)
            raise _not_found_path()
        rt = r.rt
        if r.subresource == "scale" and r.name is not None and scale_paths(rt) is not None:
            return self._scale(method, r, body, params)
        if rt.extra.get("virtual") or r.subresource in reviews.SPECIAL_SUBRESOURCES:
            # Reviews, serviceaccounts/token, namespaces/finalize, pods/eviction
            # and the kubelet-only subresources (reviews.py, eviction.py). The
            # writes negotiate first, as kube's create/update handlers do (no
            # Tables: these storages have no table convertor).
            chosen = None
            if method in ("POST", "PUT") and r.subresource not in KUBELET_ONLY:
                chosen = self._negotiate(rt, tables=False)
            special = reviews.serve(
                app.rest, app.authenticator, app.authorizer, user, method, rt, r.namespace,
                r.name, r.subresource,
                self._decode(body, _BODY_KINDS.get(r.subresource or "", rt.kind))
                if body.strip() and r.subresource not in KUBELET_ONLY
                else {},
                WriteOptions(dry_run=params.get("dryRun") == "All",
                             user_agent=self.headers.get("User-Agent") or ""),
            )  # fmt: skip
            if special is not None:
                if chosen is None:
                    return Reply(special[0], encode_json(special[1]))
                return self._reply(special[0], rt, special[1], chosen)
        if r.subresource and not (r.subresource == "status" and rt.has_status):
            raise _not_found_path()
        if r.watch_path or (method == "GET" and r.name is None and _truthy(params.get("watch"))):
            if method != "GET":
                raise method_not_allowed()
            self._watch(r, params)
            return None
        if method == "GET":
            if r.name is None:
                # The parameter codec's numbers before the selectors (url.Values
                # to v1.ListOptions, then v1 to internal, where selectors parse).
                _query_int64(params, "timeoutSeconds")
                limit = _limit(params)
                sel = Selector(
                    parse_label(params.get("labelSelector")),
                    parse_field_selector(params.get("fieldSelector"), rt),
                )
                causes = listoptions.validate_list_options(params)
                if causes:
                    raise listoptions.invalid_list_options(causes)
                chosen = self._negotiate(rt)
                self._check_list_freshness(params, limit)
                out = app.rest.list(
                    rt,
                    r.namespace,
                    sel,
                    resource_version=params.get("resourceVersion"),
                    resource_version_match=params.get("resourceVersionMatch"),
                    limit=limit,
                    continue_token=params.get("continue"),
                )
            else:
                requested = parse_resource_version(params.get("resourceVersion"))
                chosen = self._negotiate(rt)
                if requested > 0:
                    # Cacher.Get: WaitUntilFreshAndGet, as a list not older than it.
                    too_large = self._wait_for_resource_version(requested)
                    if too_large is not None:
                        raise too_large
                out = app.rest.get(rt, r.namespace or "", r.name)
            return self._reply(200, rt, out, chosen)
        opts = self._write_options(params)
        if method == "POST":
            if r.name is not None:
                raise method_not_allowed()
            chosen = self._negotiate(rt)
            request_options.check_write("CreateOptions", params)
            obj = app.rest.create(rt, r.namespace, self._decode_object(rt, body, opts), opts)
            return self._reply(201, rt, obj, chosen, opts)
        if method == "PUT":
            if r.name is None:
                raise method_not_allowed()
            chosen = self._negotiate(rt)
            request_options.check_write("UpdateOptions", params)
            obj, created = app.rest.update_answer(
                rt,
                r.namespace,
                r.name,
                self._decode_object(rt, body, opts),
                opts,
                subresource=r.subresource,
            )
            # UpdateResource: 201 when the update created the object.
            return self._reply(201 if created else 200, rt, obj, chosen, opts)
        if method == "PATCH":
            if r.name is None:
                raise method_not_allowed()
            chosen = self._negotiate(rt)
            ctype = self.headers.get("Content-Type") or ""
            # 415 before the options' 422, as kube's patch handler.
            request_options.check_write("PatchOptions", params, patch_type=patch_type(rt, ctype))
            obj, created = app.rest.patch(
                rt, r.namespace, r.name, ctype, body, opts, subresource=r.subresource
            )
            return self._reply(201 if created else 200, rt, obj, chosen, opts)
        if method == "DELETE":
            chosen = self._negotiate(rt)
            delete = DeleteOptions.parse(params, self._decode(body) if body.strip() else None)
            # The Job store's Delete/DeleteCollection: no policy given orphans
            # the pods (ORPHAN_BY_DEFAULT), and says so.
            warned = WriteOptions()
            if delete.propagation is None and rkey(rt) in ORPHAN_BY_DEFAULT:
                warned.warnings.append(JOB_DELETE_WARNING)
            if r.name is None:
                sel = Selector(
                    parse_label(params.get("labelSelector")),
                    parse_field_selector(params.get("fieldSelector"), rt),
                )
                listed = app.rest.delete_collection(
                    rt,
                    r.namespace,
                    sel,
                    propagation=delete.propagation,
                    dry_run=delete.dry_run,
                    grace_period_seconds=delete.grace_period_seconds,
                    limit=_limit(params),
                    continue_token=params.get("continue"),
                )
                return self._reply(200, rt, listed, chosen, warned)
            obj, deleted = app.rest.delete_answer(
                rt,
                r.namespace,
                r.name,
                propagation=delete.propagation,
                preconditions=delete.preconditions,
                dry_run=delete.dry_run,
                grace_period_seconds=delete.grace_period_seconds,
            )
            # DeleteResource: 202 if the object was not deleted at once and the
            # request set orphanDependents=false (only then, for old clients).
            accepted = not deleted and delete.orphan_dependents is False
            return self._reply(202 if accepted else 200, rt, obj, chosen, warned)
        raise method_not_allowed()

    def _write_options(self, params: dict[str, str]) -> WriteOptions:
        # Validated per verb (request_options.check_write) before use.
        return WriteOptions(
            dry_run=params.get("dryRun") == "All",
            field_validation=params.get("fieldValidation") or "Warn",
            field_manager=params.get("fieldManager") or "",
            force=_truthy(params.get("force")),
            user_agent=self.headers.get("User-Agent") or "",
        )

    def _scale(self, method: str, r: Route, body: bytes, params: dict[str, str]) -> Reply:
        """``/scale``: GET, PUT and PATCH of the ``autoscaling/v1`` Scale (rest.py)."""
        app = self.server.app
        assert r.name is not None
        opts = self._write_options(params)
        if method not in ("GET", "PUT", "PATCH"):
            raise method_not_allowed()
        chosen = self._negotiate(r.rt, tables=False)  # Scale has no table convertor
        if method == "GET":
            out = app.rest.get_scale(r.rt, r.namespace, r.name)
        elif method == "PUT":
            request_options.check_write("UpdateOptions", params)
            scale = self._decode(body, "Scale")
            out = app.rest.update_scale(r.rt, r.namespace, r.name, scale, opts)
        elif method == "PATCH":
            ctype = self.headers.get("Content-Type") or ""
            request_options.check_write("PatchOptions", params, patch_type=patch_type(r.rt, ctype))
            out = app.rest.patch_scale(r.rt, r.namespace, r.name, ctype, body, opts)
        headers: dict[str, str] = {}
        if opts.warnings:
            headers["Warning"] = ", ".join(_warning(w) for w in opts.warnings)
        if chosen.target is not None:
            out = partial.transform(r.rt, out, (chosen.target[2], chosen.target_api_version))
        out_body, ctype = self._encode(out, chosen)
        return Reply(200, out_body, ctype, headers)

    def _decode(self, body: bytes, kind: str = "") -> Any:
        """A request body decoded as ``NegotiateInputSerializer`` picks the
        decoder: by its ``Content-Type``, JSON when there is none, a 415 for
        a media type the resource does not take. Errors name ``kind`` (the
        type the body is decoded into) as ``transformDecodeError`` does."""
        raw_ctype = self.headers.get("Content-Type") or ""
        # mime.ParseMediaType: the media type without its parameters, lowercased.
        media = raw_ctype.split(";", 1)[0].strip().lower() or "application/json"
        if media == protobuf.MEDIA_TYPE:
            # Go typed clients (e.g. `kubectl create deployment`) send built-in
            # kinds as protobuf (protobuf.py).
            return protobuf.decode_request(body, raw_ctype.lower())
        if media == "application/json":
            try:
                value = _json.loads(body)
            except ValueError:
                value = None
            else:
                # The fast path: a document our parser takes is one Go takes,
                # unless it spells NaN or Infinity (the stdlib parser's extension).
                if b"NaN" not in body and b"Infinity" not in body:
                    return value
            # Go's scanner words the error (a pure-Python pass: errors only).
            err = go_json_syntax_error(body)
            if err is None:
                if value is not None:
                    return value
                # Invalid UTF-8 (which Go replaces) or an integer beyond 64 bits.
                return json.loads(body.decode("utf-8", "replace"))
            err = f"couldn't get version/kind; json parse error: {err}"
        elif media == "application/yaml":
            import yaml

            try:
                # sigs.k8s.io/yaml.YAMLToJSON: the first document of a stream.
                return next(iter(yaml.safe_load_all(body.decode("utf-8", "replace"))), None)
            except yaml.YAMLError as exc:
                err = f"error converting YAML to JSON: yaml: {str(exc).splitlines()[0]}"
        else:
            # (custom resources list protobuf too: crdHandler's serializers)
            raise unsupported_media_type(
                ["application/json", "application/yaml", protobuf.MEDIA_TYPE]
            )
        if kind:
            raise json_parse_error(kind, err, body)
        raise bad_request(err)

    def _decode_object(self, rt: ResourceType, body: bytes, opts: WriteOptions) -> Any:
        """A create/update body decoded as kube's serializer does: wrong JSON
        types are a 400, unknown fields of built-in kinds are dropped (a 400
        under ``fieldValidation=Strict``, a warning under ``Warn``)."""
        result = decode_body(rt, self._decode(body, rt.kind), body)
        if rt.is_crd:
            check_embedded_types(rt, result.obj)
        return check_unknown_fields(rt, result, opts.field_validation, opts.warnings)

    def _reply(
        self,
        code: int,
        rt: ResourceType,
        obj: dict[str, Any],
        chosen: Negotiated,
        opts: WriteOptions | None = None,
    ) -> Reply:
        """``obj`` as ``transformResponseObject`` writes it: transformed to the
        negotiated target (a Table, PartialObjectMetadata[List]), then encoded
        in the negotiated media type (JSON, YAML or protobuf)."""
        headers: dict[str, str] = {}
        warnings = list(opts.warnings) if opts is not None else []
        if rt.extra.get("deprecated"):
            default = f"{rt.api_version} {rt.kind} is deprecated"
            warnings.insert(0, str(rt.extra.get("deprecationWarning") or default))
        if warnings:
            headers["Warning"] = ", ".join(_warning(w) for w in warnings)
        out = self._transform(rt, obj, chosen)
        if out is obj:
            items = obj.get("items")
            if not rt.is_crd and isinstance(items, list):
                # kube-apiserver's JSON serializer drops TypeMeta on the items of a
                # typed (built-in) list; custom resource lists are unstructured and
                # keep each item's kind and apiVersion. GET and watch are unaffected.
                out = dict(obj)
                out["items"] = [_without_type_meta(i) for i in items]
        body, ctype = self._encode(out, chosen)
        return Reply(code, body, ctype, headers)

    def _transform(
        self, rt: ResourceType, obj: dict[str, Any], chosen: Negotiated
    ) -> dict[str, Any]:
        """``doTransformObject``: ``obj`` itself, or as the negotiated target."""
        kind = chosen.kind
        if kind is None or obj.get("kind") == "Status":
            return obj
        if kind == "Table":
            return to_table(
                rt,
                obj,
                include_object=self._include_object(),
                api_version=chosen.target_api_version,
            )
        return partial.transform(rt, obj, (kind, chosen.target_api_version))

    def _include_object(self) -> str:
        """``TableOptions.includeObject`` (``optionsForTransform``): the first
        ``includeObject`` parameter, ``Metadata`` when empty; another value
        is kube's 400."""
        values = parse_qs(urlsplit(self.path).query).get("includeObject") or [""]
        include = values[0] or "Metadata"
        if include not in ("Metadata", "Object", "None"):
            raise bad_request(
                "Unable to convert to Table as requested: includeObject: Invalid value: "
                f"{json.dumps(values[0])}: must be 'Metadata', 'Object', 'None', or empty"
            )
        return include

    def _peer_closed(self) -> bool:
        """True when the client has closed its end (checked while a watch is idle,
        so abandoned streams do not linger until the next event)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return peeked == b""
        except (OSError, ValueError):
            return True

    # --- watch -------------------------------------------------------------------

    def _watch(self, r: Route, params: dict[str, str]) -> None:
        app = self.server.app
        rt = r.rt
        # The parameter codec's numbers before the selectors, as for a list.
        seconds = _query_int64(params, "timeoutSeconds")
        _limit(params)
        sel = Selector(
            parse_label(params.get("labelSelector")),
            parse_field_selector(params.get("fieldSelector"), rt),
        )
        namespace = r.namespace
        if r.name is not None:
            # GET /api/v1/watch/namespaces/ns/pods/name: a watch of one object
            # (get.go ListResource): a field selector must require that name.
            if not sel.fields.empty:
                if sel.fields.name_equals() != r.name:
                    raise bad_request("fieldSelector metadata.name doesn't match requested name")
            else:
                sel = Selector(sel.labels, parse_field_selector(f"metadata.name={r.name}", rt))
        timeout = float(seconds) if seconds is not None else None
        if timeout == 0:
            timeout = None  # kube: 0 means the server's default (no client-set deadline)
        elif timeout is not None and timeout < 0:
            # kube's watch handler arms a timer of the negative duration, which
            # fires at once: the stream starts (200) and ends straight away.
            timeout = 0.0
        rv_param = params.get("resourceVersion") or ""
        bookmarks = _truthy(params.get("allowWatchBookmarks"))
        watch_list = app.watch_list
        if watch_list == "ignore":
            # A server (or proxy) that predates streaming lists: it drops their
            # parameters and serves a legacy watch (no end-of-list bookmark).
            params = {
                k: v
                for k, v in params.items()
                if k not in ("sendInitialEvents", "resourceVersionMatch")
            }
        causes = listoptions.validate_watch_options(params, watch_list_enabled=bool(watch_list))
        if causes:
            raise listoptions.invalid_list_options(causes)
        send_initial_param = params.get("sendInitialEvents")
        send_initial = _truthy(send_initial_param)
        # The output and stream negotiations (406 when nothing streamable is
        # acceptable: YAML has no stream serializer); a streaming list
        # refuses Tables (watchListEndpointRestrictions).
        chosen = self._negotiate_stream(rt, tables=not (send_initial and bookmarks))
        include_object = self._include_object() if chosen.kind == "Table" else "Metadata"
        requested = parse_resource_version(rv_param)
        since: int | None = None
        too_large: StatusError | None = None
        if send_initial:
            # The state "not older than" the resourceVersion ("" / "0": the
            # current one), then its changes (the cacher's waitUntilFreshAndBlock).
            initial = True
            if requested:
                too_large = self._wait_for_resource_version(requested)
        elif send_initial_param is not None:
            # sendInitialEvents=false: no initial state; "" and "0" watch from now.
            initial = False
            since = requested or app.storage.resource_version
        else:
            initial = rv_param in ("", "0")
            if not initial:
                since = requested
        watcher = Watcher(
            rkey(rt), namespace, sel, capacity=max(1, app.max_watch_backlog), faults=app.faults
        )
        watcher.initial_end = send_initial and bookmarks
        # The stream's framing is the negotiated media type's: protobuf frames
        # (custom resources get protobuf only with as=PartialObjectMetadata)
        # or JSON lines. Each object is transformed to the negotiated target.
        frame: Callable[..., bytes] | None = None
        frame_type = (rt.api_version, rt.kind)  # the protobuf message of each object
        if chosen.media_type == negotiation.PROTOBUF:
            frame = protobuf.watch_frame
        bookmark_type = (rt.kind, rt.api_version)
        convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        target = chosen.kind
        if target == "Table":
            table_version = chosen.target_api_version
            first = [True]

            def convert(o: dict[str, Any]) -> dict[str, Any]:
                # The first Table of the stream has the column definitions;
                # later ones are NoHeaders (watchEmbeddedEncoder).
                headers, first[0] = first[0], False
                return to_table(
                    rt,
                    app.rest.out(rt, o),
                    include_object=include_object,
                    api_version=table_version,
                    headers=headers,
                )
        elif target is not None:
            # A metadata-only watch: every object (bookmarks too) as PartialObjectMetadata.
            meta_api_version = chosen.target_api_version
            convert = lambda o: partial.as_partial(o, meta_api_version)  # noqa: E731
            bookmark_type = (partial.PARTIAL, meta_api_version)
            frame_type = (meta_api_version, partial.PARTIAL)
        elif rt.extra.get("stored_as"):
            # Another type's storage (events.k8s.io): convert each object.
            convert = lambda o: app.rest.out(rt, o)  # noqa: E731
        if frame is not None and protobuf.message_class(*frame_type) is None:
            frame = None  # no message for the kind: JSON lines rather than nothing
        sock = self.connection

        def abort() -> None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

        watcher.on_abort = abort
        error_event: bytes | None = None

        def error(status: dict[str, Any]) -> bytes:
            if frame is not None:
                return frame("ERROR", status, "v1", "Status")
            return encode_json({"type": "ERROR", "object": status})

        if too_large is not None:
            error_event = error(too_large.body)
        else:
            try:
                app.storage.watch(watcher, since=since, initial=initial)
            except StatusError as err:
                if err.code != 410:
                    raise
                error_event = error(err.body)
        # Headers: stream starts.
        app.record("GET", self.path, 200)
        self.send_response(200)
        self.send_header("Content-Type", chosen.content_type if frame else JSON)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if error_event is not None:
            self._chunk(error_event)
            self._chunk(b"")
            return
        app.register_watch(watcher)
        try:
            self._stream(
                watcher,
                rt,
                timeout,
                bookmarks,
                bookmark_type,
                convert,
                frame,
                frame_type,
            )
        except Exception:
            # Headers are sent: no Status can follow. End the stream abruptly so
            # the client notices and re-watches.
            logger.exception("watch stream %s failed", self.path)
            self.close_connection = True
        finally:
            app.storage.unwatch(watcher)
            app.unregister_watch(watcher)
            watcher.close()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _chunk_buffer(self, buf: bytearray) -> None:
        """``_chunk`` for a batch of events, written without copying it (a
        streamed list would otherwise hold each chunk two more times)."""
        if not buf:
            return
        if len(buf) < 16384:  # small: one write (and one packet) beats saving a copy
            self.wfile.write(b"%x\r\n%s\r\n" % (len(buf), buf))
            return
        write = self.wfile.write
        write(b"%x\r\n" % len(buf))
        write(buf)
        write(b"\r\n")

    def _check_list_freshness(self, params: dict[str, str], limit: int) -> None:
        """A list "not older than" a resourceVersion the storage has not
        reached: the cacher waits for it (``waitUntilFreshAndBlock``, 3 s),
        then answers "Too large resource version" (504, retry after 1 s); a
        paged one goes to etcd, which answers it at once
        (``validateMinimumResourceVersion``). Exact reads are not checked here."""
        if params.get("continue") or params.get("resourceVersionMatch") == "Exact":
            return
        if limit > 0 and params.get("resourceVersionMatch") != "NotOlderThan":
            return  # the legacy exact read (or "0"/"": nothing to wait for)
        requested = parse_resource_version(params.get("resourceVersion"))
        if requested <= 0:
            return
        if limit > 0:
            current = self.server.app.storage.resource_version
            if requested > current:
                err = listoptions.too_large_resource_version(requested, current)
                assert err.details is not None
                del err.details["retryAfterSeconds"]  # etcd's: retry 0 (omitted)
                raise err
            return
        too_large = self._wait_for_resource_version(requested)
        if too_large is not None:
            raise too_large

    def _wait_for_resource_version(self, requested: int) -> StatusError | None:
        """None once the storage has reached ``requested``; after
        ``_FRESHNESS_WAIT`` seconds in vain, the watch cache's "Too large
        resource version" error."""
        app = self.server.app
        deadline = time.monotonic() + _FRESHNESS_WAIT
        while True:
            current = app.storage.resource_version
            if current >= requested:
                return None
            if time.monotonic() >= deadline or app.stopping.is_set():
                return listoptions.too_large_resource_version(requested, current)
            time.sleep(0.05)

    def _bookmark(
        self,
        rt: ResourceType,
        rv: int,
        *,
        initial_end: bool = False,
        type_meta: tuple[str, str] | None = None,
        frame: Callable[..., bytes] | None = None,
    ) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {listoptions.INITIAL_EVENTS_ANNOTATION: "true"}
        kind, api_version = type_meta or (rt.kind, rt.api_version)
        obj = {"kind": kind, "apiVersion": api_version, "metadata": meta}
        if frame is not None:
            return frame("BOOKMARK", obj, api_version, kind)
        # The cacher's newFunc() object as encoding/json writes it: a built-in
        # kind's zero struct (creationTimestamp null, status {}, ...); a
        # PartialObjectMetadata has a metav1.ObjectMeta whatever the kind; an
        # unstructured custom resource has only what is set.
        if kind == partial.PARTIAL:
            meta["creationTimestamp"] = None
        elif (kind, api_version) == (rt.kind, rt.api_version):
            goshape.shape(rt, obj)
        return encode_json({"type": "BOOKMARK", "object": obj})

    def _stream(
        self,
        watcher: Watcher,
        rt: ResourceType,
        timeout: float | None,
        bookmarks: bool,
        bookmark_type: tuple[str, str],
        convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        frame: Callable[..., bytes] | None = None,
        frame_type: tuple[str, str] = ("", ""),
    ) -> None:
        """Write queued events until timeout, close, drop or server stop.

        ``convert`` turns each object into what is sent (a Table for
        ``as=Table`` watches); events are otherwise encoded once and shared.
        Events go out in chunks of at most 256 events or about
        ``_STREAM_CHUNK`` bytes, so streaming the initial state of a large
        collection holds little more than one chunk at a time. ``frame``
        (``protobuf.watch_frame``) encodes each event for a protobuf stream
        instead of a JSON line, each object as ``frame_type``'s message
        (apiVersion, kind). The ``INITIAL_EVENTS_END`` marker becomes the bookmark annotated
        ``k8s.io/initial-events-end`` at the resourceVersion of the initial
        state (``bookmark_type`` is its kind and apiVersion)."""
        app = self.server.app
        start = time.monotonic()
        deadline = start + timeout if timeout is not None else None
        interval = max(0.01, app.bookmark_interval)
        # cacheWatcher.nextBookmarkTime: every ``interval``, and 2 s before the
        # deadline; none once that time has passed (nor if it has at once).
        pre_timeout = deadline - 2.0 if deadline is not None else None

        def bookmark_after(now: float) -> float | None:
            due = now + interval
            if pre_timeout is not None:
                due = min(due, pre_timeout)
                if due <= now:
                    return None
            return due

        next_bookmark = bookmark_after(start) if bookmarks else None
        api_version = rt.api_version
        try:
            while True:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if watcher.closed or app.stopping.is_set():
                    self.close_connection = True
                    if watcher.closed_reason in ("dropped", "too slow"):
                        return  # connection already torn down: no terminating chunk
                    break
                wait = 0.5
                if deadline is not None:
                    wait = min(wait, deadline - now)
                if next_bookmark is not None:
                    wait = min(wait, max(0.0, next_bookmark - now))
                item = watcher.next(wait)
                if item is not None:
                    buf = bytearray()
                    n = 0
                    while item is not None:
                        if item.type == INITIAL_EVENTS_END:
                            buf += self._bookmark(
                                rt,
                                watcher.initial_rv or 0,
                                initial_end=True,
                                type_meta=bookmark_type,
                                frame=frame,
                            )
                        elif frame is not None:
                            obj = item.event.obj if item.event is not None else item.obj or {}
                            if convert is not None:
                                obj = convert(obj)
                            buf += frame(item.type, obj, *frame_type)
                        elif convert is not None:
                            obj = item.event.obj if item.event is not None else item.obj or {}
                            buf += encode_json({"type": item.type, "object": convert(obj)})
                        elif item.event is not None:
                            buf += item.event.encode(item.type, api_version)
                        else:
                            obj = item.obj or {}
                            if obj.get("apiVersion") != api_version:
                                obj = dict(obj)
                                obj["apiVersion"] = api_version
                            buf += encode_json({"type": item.type, "object": obj})
                        n += 1
                        if n >= 256 or len(buf) >= _STREAM_CHUNK:
                            break
                        item = watcher.next(0) if watcher.backlog() else None
                    self._chunk_buffer(buf)
                    continue
                if self._peer_closed():
                    self.close_connection = True
                    return
                now = time.monotonic()
                if next_bookmark is not None and now >= next_bookmark:
                    # Sent only if newer than the watch's start (bookmark_rv);
                    # due again later either way.
                    rv = app.storage.bookmark_rv(watcher)
                    if rv is not None:
                        self._chunk(self._bookmark(rt, rv, type_meta=bookmark_type, frame=frame))
                    next_bookmark = bookmark_after(now)
            self._chunk(b"")
        except OSError:
            self.close_connection = True


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], app: APIServer) -> None:
        self.app = app
        self._conns_lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        super().__init__(addr, _Handler)

    def track(self, conn: socket.socket, alive: bool) -> None:
        with self._conns_lock:
            if alive:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    def close_all_connections(self) -> None:
        with self._conns_lock:
            conns = list(self._conns)
            self._conns.clear()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("connection error from %s", client_address, exc_info=True)


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


def make_http_server(host: str, port: int, app: APIServer) -> _HTTPServer:
    """Bind ``host:port`` (IPv6 literals such as ``::1`` supported)."""
    cls = _HTTPServer6 if ":" in host else _HTTPServer
    return cls((host.strip("[]"), port), app)
