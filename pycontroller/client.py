"""ResourceClient: raw-JSON REST calls for one API resource over an ``ApiClient``.

The ``kubernetes`` package supplies configuration (host, TLS, credentials)
and its urllib3 connection pool; everything else is done here so that objects
stay plain ``dict``s decoded straight from the response bytes (orjson when
installed). Model classes are never built.

Behaviour worth knowing:

- Client-side rate limiting: every request (including the *start* of a
  watch, never the reads of its stream) takes a token from a token bucket.
  By default all ``ResourceClient``s built on the same ``ApiClient`` share one
  bucket (QPS 20, burst 30: controller-runtime's defaults; client-go's own
  ``rest.Config`` defaults are 5 and 10); change it
  with ``set_rate_limiter(api_client, TokenBucketRateLimiter(qps, burst))``
  or give one client its own with ``rate_limiter=``.
- Retry-After (client-go's ``checkWait``): when a 429 or any 5xx answer
  carries ``Retry-After`` (whole seconds, as client-go parses it), the
  request (any verb, and the start of a watch) sleeps that long (capped at
  ``MAX_RETRY_AFTER``) and is retried, up to
  ``max_retries`` times (default 10, as client-go); after that, or without
  ``Retry-After``, the error is raised (``TooManyRequestsError`` for a 429;
  ``retry_after`` carries the header's value) and, for a watch, the
  reflector backs off.
- Other non-2xx answers raise the matching ``pycontroller.errors`` class.
  An answer whose body is not a ``Status`` (a proxy's HTML page, plain text)
  is turned into one as client-go's ``newUnstructuredResponseError`` does:
  reason and message by status code (a 409 to a POST is ``AlreadyExists``,
  otherwise ``Conflict``; a 404 "the server could not find the requested
  resource (get pods p)"; a 5xx 'an error on the server ("<body>") has
  prevented the request from succeeding'), the body's text kept in a
  ``details.causes`` entry of reason ``UnexpectedServerResponse`` and, unlike
  client-go, also appended to the message when the message lacks it.
  Transport failures raise ``ConnectionError`` (``ConnectionRefusedError``
  when the server refused the connection) chained to the urllib3 error. A
  request whose answer broke off (connection reset, EOF) is sent again once
  only if it is a GET (client-go retries no write on a transport error); a
  read timeout is never retried, so ``request_timeout`` bounds the call.
- ``Warning`` response headers (deprecated APIs, unknown fields...) are
  logged at WARNING as "Warning: <text>", like client-go's default
  ``WarningLogger`` (code 299 only).
- ``watch`` returns a ``WatchStream``: an iterator of decoded events read line
  by line from the streaming response. An ``ERROR`` event (for example 410
  Expired) is *yielded*, not raised; the reflector turns it into a relist.
  A line that is not a JSON object (garbage, or an event cut short and
  followed by more lines) ends the stream as client-go's ``StreamWatcher``
  does: one last ``ERROR`` event is yielded, a ``Status`` with code 500,
  reason ``InternalError``, message "unable to decode an event from the watch
  stream: ..." and a ``details.causes`` entry with reason
  ``WATCH_DECODE_ERROR_CAUSE`` (``"ClientWatchDecoding"``), then the stream
  closes. Nothing after the bad line is yielded, so a consumer that resumes
  from the last resourceVersion it applied gets the lost event again from the
  server. An incomplete last line at end of stream (the connection dropped
  mid-event: client-go's ``io.ErrUnexpectedEOF``) ends the stream quietly.
  The stream ends (``StopIteration``) when the server closes it, the socket
  read times out (``timeout_seconds`` + ``WATCH_READ_SLACK``: a dead
  connection cannot hang a reader forever) or ``close()`` is called — from
  any thread, which wakes a blocked reader at once.
- ``metadata_only=True`` makes ``list``, ``watch`` and ``get`` ask for
  ``PartialObjectMetadata`` (client-go's ``metadata`` client: the ``Accept``
  headers ``METADATA_LIST_ACCEPT``/``METADATA_ACCEPT``): objects are
  ``{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
  "metadata": {...}}`` and lists ``PartialObjectMetadataList``. Writes still
  send and return full objects.
- Metrics (Prometheus default registry): ``rest_client_requests_total{code,
  method,host}`` and ``rest_client_request_duration_seconds{verb,host}``
  (time to response headers).
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import quote, urlencode, urlsplit

import urllib3
from kubernetes.client import ApiClient
from prometheus_client import Counter, Histogram

from . import _json
from ._metrics import register
from .clock import REAL_CLOCK, Clock
from .consistency import record_write
from .errors import ApiError, api_error_from_status
from .flowcontrol import TokenBucket

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "METADATA_ACCEPT",
    "METADATA_LIST_ACCEPT",
    "PATCH_CONTENT_TYPES",
    "WATCH_DECODE_ERROR_CAUSE",
    "RateLimiter",
    "ResourceClient",
    "TokenBucketRateLimiter",
    "WatchStream",
    "rate_limiter_for",
    "set_impersonation",
    "set_rate_limiter",
    "watch_decode_error_event",
]

logger = logging.getLogger(__name__)

DEFAULT_QPS = 20.0
DEFAULT_BURST = 30
# Longest Retry-After we honour by sleeping; larger values are clamped.
MAX_RETRY_AFTER = 60.0
# Seconds beyond the server-side watch timeout before a silent read gives up.
WATCH_READ_SLACK = 30.0
# Read timeout when the caller lets the server choose the watch timeout
# (kube-apiserver picks at most 2 x --min-request-timeout = 3600 s).
WATCH_DEFAULT_READ_TIMEOUT = 3600.0 + WATCH_READ_SLACK
CONNECT_TIMEOUT = 30.0


class _TransportRetry(urllib3.Retry):
    """urllib3's Retry, minus read timeouts: a request the server did not
    answer within the read timeout is not sent again (client-go's request
    timeout bounds the whole call; its ``isErrRetryableFunc`` retries only
    connection resets and EOFs)."""

    def _is_read_error(self, err: Exception) -> bool:
        if isinstance(err, urllib3.exceptions.ReadTimeoutError):
            return False  # counted as "other" (0 allowed): raised at once
        return bool(super()._is_read_error(err))


# Transport-level retries only: a connection that could not be opened (the
# request was never sent), or, for GET only, an answer that broke off (a reset
# or EOF, e.g. a pooled keep-alive connection the server had already closed):
# client-go never re-sends a write after a transport error, as it may have
# been applied. HTTP statuses are never retried here; 429 and 5xx with
# Retry-After are handled by ResourceClient itself.
_TRANSPORT_RETRIES = _TransportRetry(
    total=2,
    connect=2,
    read=1,
    redirect=0,
    status=0,
    other=0,
    allowed_methods=frozenset({"GET"}),
    raise_on_status=False,
    respect_retry_after_header=False,
)

#: ``Accept`` of a metadata-only list (client-go ``metadata`` client, JSON only).
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#: ``Accept`` of a metadata-only get or watch.
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


# --------------------------------------------------------------------------- metrics


_REQUESTS = register(
    Counter,
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
)
_LATENCY = register(
    Histogram,
    "rest_client_request_duration_seconds",
    "Request latency in seconds (to response headers), by verb and host.",
    ["verb", "host"],
    # component-base's restclient requestLatency buckets.
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
)


# --------------------------------------------------------------------------- rate limiting


class RateLimiter(Protocol):
    """What a ResourceClient needs from a client-side rate limiter."""

    def accept(self) -> None:
        """Block until the caller may send one request."""
        ...


class TokenBucketRateLimiter(TokenBucket):
    """A thread-safe token bucket: ``qps`` tokens per second, at most ``burst`` saved.

    Like client-go's ``flowcontrol.NewTokenBucketRateLimiter`` (x/time/rate
    reservations, see ``pycontroller.flowcontrol``): ``accept`` takes a token,
    going into debt if none is left, and sleeps until the debt is paid, so
    waiting callers are served in order and the long-run rate never exceeds
    ``qps``. The bucket starts full. ``qps <= 0`` disables limiting.
    """

    def __init__(
        self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST, *, clock: Clock = REAL_CLOCK
    ) -> None:
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when qps > 0")
        super().__init__(qps, burst, clock=clock)

    def accept(self) -> None:
        delay = self.reserve()
        if delay > 0:
            self._clock.sleep(delay)


_limiters_lock = threading.Lock()
_limiters: weakref.WeakKeyDictionary[Any, RateLimiter] = weakref.WeakKeyDictionary()


def rate_limiter_for(api_client: Any) -> RateLimiter:
    """The limiter shared by every ResourceClient on ``api_client`` (created on first use)."""
    with _limiters_lock:
        limiter = _limiters.get(api_client)
        if limiter is None:
            limiter = TokenBucketRateLimiter(DEFAULT_QPS, DEFAULT_BURST)
            _limiters[api_client] = limiter
        return limiter


def set_rate_limiter(api_client: Any, limiter: RateLimiter) -> None:
    """Replace the shared limiter of ``api_client`` (affects clients built afterwards too)."""
    with _limiters_lock:
        _limiters[api_client] = limiter


# --------------------------------------------------------------------------- impersonation

_impersonation: weakref.WeakKeyDictionary[Any, tuple[tuple[str, str], ...]] = (
    weakref.WeakKeyDictionary()
)

_HEADER_TOKEN_CHARS = frozenset(
    "!#$&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def _header_key_escape(key: str) -> str:
    """client-go's ``headerKeyEscape``: %-encode every byte that is not a header
    token character (and ``%`` itself)."""
    return "".join(
        chr(b) if chr(b) in _HEADER_TOKEN_CHARS else f"%{b:02X}" for b in key.encode("utf-8")
    )


def set_impersonation(
    api_client: Any,
    user: str,
    *,
    uid: str | None = None,
    groups: Iterable[str] = (),
    extra: Mapping[str, Iterable[str]] | None = None,
) -> None:
    """Make every ResourceClient request on ``api_client`` impersonate ``user``
    (client-go's ``rest.ImpersonationConfig`` and impersonating round tripper:
    ``Impersonate-User``, ``Impersonate-Uid``, one ``Impersonate-Group`` per
    group, ``Impersonate-Extra-<key>`` per value). ``load_config`` calls it for a
    kubeconfig user's ``as``/``as-uid``/``as-groups``/``as-user-extra``. A
    request whose headers already carry ``Impersonate-User`` is left alone."""
    headers: list[tuple[str, str]] = [("Impersonate-User", user)]
    if uid:
        headers.append(("Impersonate-Uid", uid))
    headers.extend(("Impersonate-Group", group) for group in groups)
    for key, values in (extra or {}).items():
        name = "Impersonate-Extra-" + _header_key_escape(key)
        headers.extend((name, value) for value in values)
    with _limiters_lock:
        _impersonation[api_client] = tuple(headers)


# --------------------------------------------------------------------------- helpers


def _camel(name: str) -> str:
    name = name.strip("_")
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _encode_query(params: Mapping[str, Any]) -> str:
    """Map snake_case keyword arguments to Kubernetes query parameters.

    ``continue_``/``_continue`` become ``continue``; ``None`` values are dropped;
    booleans become ``true``/``false``; a list value repeats the parameter.
    """
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        name = _camel(key)
        if isinstance(value, list | tuple):
            pairs.extend((name, _query_value(v)) for v in value)
        else:
            pairs.append((name, _query_value(value)))
    return urlencode(pairs)


_RETRY_AFTER_RE = re.compile(r"[+-]?[0-9]+")


def _parse_retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header, parsed as client-go's
    ``retryAfterSeconds`` (``strconv.Atoi``): a whole number, else None."""
    if not value or not _RETRY_AFTER_RE.fullmatch(value):
        return None
    return float(max(0, int(value)))


_WARNING_CODE_RE = re.compile(r"[0-9]{3}")


def _parse_warning_header(header: str) -> tuple[tuple[int, str, str] | None, str]:
    """One RFC 7234 warning ``code agent "text" ["date"]`` from the front of
    ``header``: ``((code, agent, text), rest)``, or ``(None, "")`` when it is
    malformed (apimachinery's ``net.ParseWarningHeader``)."""
    header = header.strip()
    parts = header.split(" ", 2)
    if len(parts) != 3 or not _WARNING_CODE_RE.fullmatch(parts[0]) or not parts[1]:
        return None, ""
    code, agent, rest = int(parts[0]), parts[1], parts[2]
    if not rest.startswith('"'):
        return None, ""
    chars: list[str] = []
    i, escaping = 1, False
    while i < len(rest):
        ch = rest[i]
        i += 1
        if escaping:
            chars.append(ch)
            escaping = False
        elif ch == "\\":
            escaping = True
        elif ch == '"':
            break
        else:
            chars.append(ch)
    else:
        return None, ""  # unterminated text
    text = "".join(chars)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return None, ""
    rest = rest[i:].strip()
    if rest.startswith('"'):  # warn-date
        end = rest.find('"', 1)
        if end < 0:
            return None, ""
        rest = rest[end + 1 :].strip()
    if rest:
        if not rest.startswith(","):
            return None, ""
        rest = rest[1:].strip()
    return (code, agent, text), rest


def _parse_warning_headers(values: list[str]) -> list[tuple[int, str, str]]:
    """Every warning of ``Warning`` header values (several may share one value,
    comma-separated); a malformed one ends the parsing of its value."""
    warnings: list[tuple[int, str, str]] = []
    for header in values:
        while header:
            warning, header = _parse_warning_header(header)
            if warning is None:
                break
            warnings.append(warning)
    return warnings


def _handle_warnings(headers: Any) -> None:
    """client-go's default ``WarningLogger``: log each 299 warning's text."""
    getlist = getattr(headers, "getlist", None)
    values = getlist("Warning") if getlist is not None else []
    if not values:
        return
    for code, _agent, text in _parse_warning_headers([str(v) for v in values]):
        if code == 299 and text:
            logger.warning("Warning: %s", text)


def _is_connection_refused(err: BaseException) -> bool:
    seen: set[int] = set()
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError):
            return True
        reason = getattr(cur, "reason", None)
        if isinstance(reason, BaseException) and _is_connection_refused_shallow(reason):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _is_connection_refused_shallow(err: BaseException) -> bool:
    if isinstance(err, ConnectionRefusedError):
        return True
    ctx = err.__cause__ or err.__context__
    return isinstance(ctx, ConnectionRefusedError)


# newUnstructuredResponseError keeps at most this much of a non-Status body.
_MAX_UNSTRUCTURED_BODY = 2048

# (reason, message) of NewGenericServerResponse by status code; None: the
# server's own text is the message.
_GENERIC_RESPONSES: dict[int, tuple[str, str | None]] = {
    404: ("NotFound", "the server could not find the requested resource"),
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", None),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    415: ("UnsupportedMediaType", None),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, "
        "but may still be processing the request",
    ),
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
}


def _is_status(body: dict[str, Any]) -> bool:
    """Whether an error body is a failed ``Status`` (client-go decodes it and
    uses it only then; anything else is an unstructured answer)."""
    kind = body.get("kind")
    if kind is None:  # older servers omit TypeMeta: judge by the fields
        return body.get("status") == "Failure" or "reason" in body
    return kind == "Status" and body.get("status") != "Success"


def _generic_status(
    status: int,
    data: bytes,
    content_type: str,
    retry_after: float | None,
    method: str,
    group: str,
    resource: str,
    name: str,
    decodable: bool,
) -> dict[str, Any]:
    """The ``Status`` of client-go's ``NewGenericServerResponse`` for an answer
    that carried none (``decodable``: the body was JSON, just not a Status)."""
    text = data[:_MAX_UNSTRUCTURED_BODY].decode("utf-8", "replace").strip()
    media = content_type.split(";", 1)[0].strip().lower()
    # client-go keeps the text of a text/* (or untyped) body, else "unknown";
    # we also keep a body that is not JSON at all, whatever its Content-Type.
    server_message = "unknown"
    if not media or media.startswith("text/") or not decodable:
        server_message = text
    reason = ""
    message = (
        f"the server responded with the status code {status} but did not return more information"
    )
    if status == 409:
        reason = "AlreadyExists" if method == "POST" else "Conflict"
        message = "the server reported a conflict"
    elif status == 406:
        reason = "NotAcceptable"
        message = (
            server_message
            if server_message and server_message != "unknown"
            else "the server was unable to respond with a content type that the client supports"
        )
    elif status in _GENERIC_RESPONSES:
        reason, fixed = _GENERIC_RESPONSES[status]
        message = fixed if fixed is not None else server_message
    elif status >= 500:
        reason = "InternalError"
        quoted = _json.dumps(server_message).decode("utf-8")
        message = f"an error on the server ({quoted}) has prevented the request from succeeding"
    if resource:
        qualified = f"{resource}.{group}" if group else resource
        target = f"{qualified} {name}" if name else qualified
        message = f"{message} ({method.lower()} {target})"
    if server_message and server_message != "unknown" and server_message not in message:
        # client-go keeps it only in the cause; the text is too useful to hide.
        message = f"{message}: {server_message}"
    details: dict[str, Any] = {
        "causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]
    }
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    if name:
        details["name"] = name
    if retry_after:
        details["retryAfterSeconds"] = int(retry_after)
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": details,
        "code": status,
    }


def _error_from_response(
    status: int,
    data: bytes,
    retry_after: float | None,
    *,
    content_type: str = "",
    method: str = "",
    group: str = "",
    resource: str = "",
    name: str = "",
) -> ApiError:
    body: dict[str, Any] | None = None
    decodable = False
    if data:
        try:
            decoded = _json.loads(data)
            decodable = True
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and _is_status(decoded):
            body = decoded
    if body is None:
        body = _generic_status(
            status, data, content_type, retry_after, method, group, resource, name, decodable
        )
    return api_error_from_status(status, body, retry_after)


def _auth_headers(api_client: Any) -> dict[str, str]:
    """Credentials from the client's Configuration (refreshed tokens included)."""
    headers: dict[str, str] = {}
    cfg = api_client.configuration
    try:
        settings = cfg.auth_settings()
    except Exception:  # a broken auth plugin must not hide the request error
        logger.exception("reading credentials from the client configuration failed")
        return headers
    for setting in settings.values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[str(setting["key"])] = str(setting["value"])
    return headers


# --------------------------------------------------------------------------- watch stream


_WATCH_EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})

#: ``details.causes[].reason`` of the ``ERROR`` event a ``WatchStream`` yields
#: for a line it cannot decode (client-go's ``ClientWatchDecodingCause``).
WATCH_DECODE_ERROR_CAUSE = "ClientWatchDecoding"


def watch_decode_error_event(message: str) -> dict[str, Any]:
    """The ``ERROR`` event for an undecodable watch line (client-go's StreamWatcher)."""
    text = f"unable to decode an event from the watch stream: {message}"
    return {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": text,
            "reason": "InternalError",
            "details": {"causes": [{"reason": WATCH_DECODE_ERROR_CAUSE, "message": text}]},
            "code": 500,
        },
    }


class WatchStream:
    """Iterator of decoded watch events from one streaming HTTP response.

    Events are decoded one line at a time as bytes arrive; the whole stream
    is never buffered. ``close()`` is thread-safe and idempotent: called from
    another thread it shuts the socket down so that a reader blocked in
    ``next()`` returns (the iteration ends) immediately. Iteration also ends,
    quietly (logged at debug), on EOF, a read timeout or a connection reset;
    callers resume from the last resourceVersion they saw.

    A line that is not a JSON object is never skipped: the stream yields one
    ``ERROR`` event (see ``watch_decode_error_event``) and ends, so the
    caller's last resourceVersion stays *before* the bad line. An incomplete
    last line at EOF ends the stream quietly (logged at info).
    """

    # Large reads: fewer syscalls, and fewer GIL releases for a thread that
    # competes with the informer's CPU-bound threads (read1 returns at once
    # with whatever has arrived, so this adds no latency).
    _CHUNK = 256 * 1024

    def __init__(self, response: Any, description: str = "") -> None:
        self._resp = response
        self._description = description
        self._pending: deque[bytes] = deque()
        self._partial = b""
        # The incomplete last line found at EOF (an object identity, not a value).
        self._tail: bytes | None = None
        self._closed = False
        self._eof = False
        self._lock = threading.Lock()
        self.events = 0
        # urllib3 >= 2.3 has read1 (returns what is available, without waiting
        # to fill the buffer); older versions expose http.client's on ``_fp``.
        read1 = getattr(response, "read1", None)
        if read1 is None:
            read1 = response._fp.read1
        self._read1 = read1

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> dict[str, Any]:
        while True:
            while self._pending:
                line = self._pending.popleft()
                try:
                    event = _json.loads(line)
                except ValueError as err:
                    if not line.strip():  # whitespace-only lines are skipped quietly
                        continue
                    if self._eof and not self._pending and line is self._tail:
                        # Cut short by EOF: the connection dropped mid-event.
                        logger.info(
                            "watch %s: unexpected EOF in the middle of an event (%d bytes)",
                            self._description,
                            len(line),
                        )
                        continue
                    return self._decode_error(f"{err}: {line[:200]!r}")
                if not isinstance(event, dict):
                    return self._decode_error(f"not a JSON object: {line[:200]!r}")
                etype = event.get("type")
                if etype not in _WATCH_EVENT_TYPES:
                    # client-go's watch Decoder refuses it, so the event is
                    # not lost: the watch ends and resumes before it.
                    return self._decode_error(f"got invalid watch event type: {etype}")
                self.events += 1
                return event
            if self._eof or self._closed:
                self._finish()
                raise StopIteration
            self._fill()

    def _decode_error(self, message: str) -> dict[str, Any]:
        """End the stream at an undecodable line; the ERROR event to yield last."""
        logger.warning(
            "watch %s: unable to decode an event from the watch stream: %s; ending the watch",
            self._description,
            message,
        )
        self._pending.clear()
        self._partial = b""
        self.close()
        self._finish()
        return watch_decode_error_event(message)

    def _fill(self) -> None:
        try:
            chunk = self._read1(self._CHUNK)
        except Exception as err:  # timeouts, resets, shutdown from close()
            if not self._closed:
                logger.debug("watch %s ended: %s", self._description, err)
            chunk = b""
        if not chunk:
            self._eof = True
            tail = self._partial.strip()
            self._partial = b""
            if tail and not self._closed:
                self._tail = tail
                self._pending.append(tail)
            return
        if b"\n" not in chunk:
            self._partial += chunk
            return
        parts = (self._partial + chunk).split(b"\n")
        self._partial = parts.pop()
        self._pending.extend(filter(None, parts))  # C-level: drops empty lines

    def _finish(self) -> None:
        with self._lock:
            resp, self._resp = self._resp, None
        if resp is not None:
            try:
                resp.close()
            except Exception:  # already broken; nothing to release
                logger.debug("closing watch response %s failed", self._description, exc_info=True)

    def close(self) -> None:
        """Stop the stream; wakes a reader blocked in another thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            resp = self._resp
        if resp is None:
            return
        try:
            resp.shutdown()
        except Exception:
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        self._finish()


# --------------------------------------------------------------------------- the client


class ResourceClient:
    """REST verbs for one resource (``group``/``version``/``plural``); objects are dicts.

    Thread-safe: one instance may be shared by every worker. ``group`` is
    ``""`` for the core API. For a namespaced resource, ``list``/``watch``
    with ``namespace=None`` cover all namespaces; ``get``/``patch``/``delete``
    with ``namespace=None`` use ``"default"`` (like kubectl); ``create`` and
    ``update`` take the namespace from the object (``"default"`` if unset).
    Passing a namespace for a cluster-scoped resource is a ``ValueError``.
    """

    def __init__(
        self,
        api_client: ApiClient,
        group: str,
        version: str,
        plural: str,
        namespaced: bool = True,
        *,
        rate_limiter: RateLimiter | None = None,
        request_timeout: float | None = 60.0,
        max_retries: int = 10,
        clock: Clock = REAL_CLOCK,
        metadata_only: bool = False,
    ) -> None:
        self.api_client = api_client
        self.group = group
        self.version = version
        self.plural = plural
        self.namespaced = namespaced
        self.metadata_only = metadata_only
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self._clock = clock
        self._rate_limiter = (
            rate_limiter if rate_limiter is not None else rate_limiter_for(api_client)
        )
        host = str(api_client.configuration.host or "").rstrip("/")
        self._base = host
        self._host_label = urlsplit(host).netloc or host
        self._prefix = f"/api/{version}" if not group else f"/apis/{group}/{version}"

    # ---------------------------------------------------------------- identity

    @property
    def api_version(self) -> str:
        """``apiVersion`` of the resource's objects (``v1`` or ``group/version``)."""
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def resource(self) -> str:
        """``group/version/plural`` (``/v1/pods`` style has an empty group)."""
        return f"{self.group}/{self.version}/{self.plural}"

    def __repr__(self) -> str:
        return f"ResourceClient({self.resource!r}, namespaced={self.namespaced})"

    # ---------------------------------------------------------------- paths

    def _path(self, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        parts = [self._prefix]
        if namespace:  # None or "": all namespaces (collections) / cluster scope
            if not self.namespaced:
                raise ValueError(f"{self.plural} is cluster-scoped: namespace {namespace!r} given")
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError("name must not be empty")
            parts.append(quote(name, safe=""))
        if sub:
            parts.append(sub)
        return "/".join(parts)

    def _ns_for_item(self, namespace: str | None) -> str | None:
        if not self.namespaced:
            return namespace  # None unless misused, which _path rejects
        return namespace if namespace else "default"

    def _ns_of(self, obj: Mapping[str, Any], namespace: str | None = None) -> str | None:
        if not self.namespaced:
            return None
        meta = obj.get("metadata") or {}
        return namespace or meta.get("namespace") or "default"

    @staticmethod
    def _name_of(obj: Mapping[str, Any]) -> str:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise ValueError("object has no metadata.name")
        return str(name)

    # ---------------------------------------------------------------- transport

    def _open(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        read_timeout: float | None,
        accept: str = "application/json",
        name: str | None = None,
    ) -> Any:
        """Send one request (rate-limited) and return the unread urllib3 response.

        Non-2xx answers are read, closed and raised as ``ApiError``s.
        """
        url = self._base + path
        if query:
            encoded = _encode_query(query)
            if encoded:
                url += "?" + encoded
        headers = urllib3.HTTPHeaderDict()
        for key, value in (getattr(self.api_client, "default_headers", None) or {}).items():
            headers[str(key)] = str(value)
        headers.update(_auth_headers(self.api_client))
        impersonate = _impersonation.get(self.api_client)
        if impersonate and "Impersonate-User" not in headers:
            for key, value in impersonate:
                headers.add(key, value)
        headers["Accept"] = accept
        if content_type is not None:
            headers["Content-Type"] = content_type
        connect = CONNECT_TIMEOUT if read_timeout is None else min(CONNECT_TIMEOUT, read_timeout)
        timeout = urllib3.Timeout(connect=connect, read=read_timeout)
        self._rate_limiter.accept()
        start = time.perf_counter()
        try:
            resp = self.api_client.rest_client.pool_manager.request(
                method,
                url,
                body=body,
                headers=headers,
                timeout=timeout,
                preload_content=False,
                retries=_TRANSPORT_RETRIES,
            )
        except urllib3.exceptions.HTTPError as err:
            _REQUESTS.labels("<error>", method, self._host_label).inc()
            msg = f"{method} {url}: {err}"
            if _is_connection_refused(err):
                raise ConnectionRefusedError(msg) from err
            raise ConnectionError(msg) from err
        _LATENCY.labels(method, self._host_label).observe(time.perf_counter() - start)
        _REQUESTS.labels(str(resp.status), method, self._host_label).inc()
        _handle_warnings(getattr(resp, "headers", None))
        if 200 <= resp.status < 300:
            return resp
        try:
            data = resp.read()
        except urllib3.exceptions.HTTPError:
            data = b""
        finally:
            resp.release_conn()
        raise _error_from_response(
            resp.status,
            data,
            _parse_retry_after(resp.headers.get("Retry-After")),
            content_type=str(resp.headers.get("Content-Type") or ""),
            method=method,
            group=self.group,
            resource=self.plural,
            name=name or "",
        )

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        name: str | None = None,
    ) -> dict[str, Any]:
        """A complete request/response exchange, retried as ``_open_retrying`` says."""
        payload: bytes | None = None
        if body is not None:
            if isinstance(body, bytes):
                payload = body
            elif isinstance(body, str):
                payload = body.encode("utf-8")
            else:
                payload = _json.dumps(body)
        resp = self._open_retrying(
            method,
            path,
            query=query,
            body=payload,
            content_type=content_type if payload is not None else None,
            read_timeout=self.request_timeout,
            accept=accept,
            name=name,
        )
        try:
            data = resp.read()
        except urllib3.exceptions.HTTPError as err:
            raise ConnectionError(f"{method} {path}: reading the response: {err}") from err
        finally:
            resp.release_conn()
        result: dict[str, Any] = _json.loads(data) if data else {}
        return result

    def _open_retrying(self, method: str, path: str, **kwargs: Any) -> Any:
        """``_open`` with client-go's retry policy (``rest.Request``'s ``checkWait``).

        An answer of 429 or any 5xx that carries ``Retry-After`` is retried
        after that many seconds (capped at ``MAX_RETRY_AFTER``), at most
        ``max_retries`` times, for every verb (the body is sent again) and for
        the start of a watch. Without ``Retry-After``, or once the retries are
        spent, the error is raised.
        """
        attempt = 0
        while True:
            try:
                return self._open(method, path, **kwargs)
            except ApiError as err:
                retry_after = err.retry_after
                retryable = err.status == 429 or err.status >= 500
                if not retryable or retry_after is None or attempt >= self.max_retries:
                    raise
                attempt += 1
                delay = min(retry_after, MAX_RETRY_AFTER)
                logger.info(
                    "Got a Retry-After %.0fs response (%d) for attempt %d/%d to %s %s",
                    delay,
                    err.status,
                    attempt,
                    self.max_retries,
                    method,
                    path,
                )
                self._clock.sleep(delay)

    # ---------------------------------------------------------------- verbs

    def list(self, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        """GET the collection; returns the decoded List (``items``, ``metadata``).

        Keyword arguments become query parameters: ``label_selector``,
        ``field_selector``, ``limit``, ``continue_`` (or ``_continue``),
        ``resource_version``, ``resource_version_match``, ``timeout_seconds``...
        """
        accept = METADATA_LIST_ACCEPT if self.metadata_only else "application/json"
        result = self._call("GET", self._path(namespace), query=params, accept=accept)
        if result.get("items") is None:
            result["items"] = []
        return result

    def watch(
        self,
        namespace: str | None = None,
        resource_version: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
        **params: Any,
    ) -> WatchStream:
        """Open a watch; returns a ``WatchStream`` of decoded events.

        Events are ``{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR",
        "object": {...}}``. ``ERROR`` events are yielded (their object is a
        ``Status``), not raised. Opening is retried on Retry-After as every
        request is; other errors opening the watch raise.
        """
        query: dict[str, Any] = dict(params)
        query["watch"] = True
        if resource_version is not None:
            query["resource_version"] = resource_version
        if timeout_seconds is not None:
            query["timeout_seconds"] = int(timeout_seconds)
        if allow_bookmarks:
            query["allow_watch_bookmarks"] = True
        read_timeout = (
            float(timeout_seconds) + WATCH_READ_SLACK
            if timeout_seconds is not None
            else WATCH_DEFAULT_READ_TIMEOUT
        )
        path = self._path(namespace)
        accept = METADATA_ACCEPT if self.metadata_only else "application/json"
        resp = self._open_retrying(
            "GET", path, query=query, read_timeout=read_timeout, accept=accept
        )
        return WatchStream(resp, f"{self.resource} from rv {resource_version}")

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any]:
        accept = METADATA_ACCEPT if self.metadata_only else "application/json"
        return self._call(
            "GET", self._path(self._ns_for_item(namespace), name), accept=accept, name=name
        )

    def create(
        self, obj: Mapping[str, Any], namespace: str | None = None, **params: Any
    ) -> dict[str, Any]:
        """POST ``obj``; extra keyword arguments are query parameters (``dry_run``...)."""
        path = self._path(self._ns_of(obj, namespace))
        return self._wrote(self._call("POST", path, query=params, body=obj), params)

    def update(self, obj: Mapping[str, Any], **params: Any) -> dict[str, Any]:
        """PUT ``obj`` (optimistic concurrency on its ``metadata.resourceVersion``)."""
        name = self._name_of(obj)
        path = self._path(self._ns_of(obj), name)
        return self._wrote(self._call("PUT", path, query=params, body=obj, name=name), params)

    def update_status(self, obj: Mapping[str, Any], **params: Any) -> dict[str, Any]:
        """PUT ``obj`` to the ``/status`` subresource."""
        name = self._name_of(obj)
        path = self._path(self._ns_of(obj), name, "status")
        return self._wrote(self._call("PUT", path, query=params, body=obj, name=name), params)

    def patch(
        self,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: str = "merge",
        *,
        field_manager: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """PATCH with ``patch_type`` "merge", "json", "strategic" or "apply".

        ``patch`` is a dict/list (encoded as JSON) or pre-encoded str/bytes.
        Server-side apply needs a field manager: it defaults to
        ``"pycontroller"`` and ``force`` defaults to True (a controller owns
        the fields it applies), both only for "apply".
        """
        try:
            content_type = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(
                f"unknown patch_type {patch_type!r}; use one of {sorted(PATCH_CONTENT_TYPES)}"
            ) from None
        query: dict[str, Any] = dict(params)
        if patch_type == "apply":
            query["field_manager"] = field_manager or "pycontroller"
            query["force"] = True if force is None else force
        else:
            if field_manager is not None:
                query["field_manager"] = field_manager
            if force is not None:
                raise ValueError("force is only valid for patch_type='apply'")
        path = self._path(self._ns_for_item(namespace), name, subresource)
        result = self._call(
            "PATCH", path, query=query, body=patch, content_type=content_type, name=name
        )
        return self._wrote(result, params)

    def apply(
        self,
        obj: Mapping[str, Any],
        field_manager: str,
        force: bool = False,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply ``obj`` as ``field_manager``: PATCH with
        ``application/apply-patch+yaml`` (a JSON body is valid YAML), creating
        the object if it does not exist.

        The server merges ``obj`` into the live object and records that
        ``field_manager`` owns exactly the fields ``obj`` sets; fields it applied
        before and leaves out now are removed unless another manager owns them.
        Changing a field another manager owns raises ``ConflictError`` (its
        ``body["details"]["causes"]`` name each field and owner) unless
        ``force`` takes the fields over. The namespace is ``namespace``, else
        ``obj``'s, else "default".
        """
        name = self._name_of(obj)
        path = self._path(self._ns_of(obj, namespace), name)
        query = {"field_manager": field_manager, "force": force}
        result = self._call(
            "PATCH",
            path,
            query=query,
            body=obj,
            content_type=PATCH_CONTENT_TYPES["apply"],
            name=name,
        )
        return self._wrote(result)

    def delete(
        self,
        name: str,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, Any] | None = None,
        *,
        grace_period_seconds: int | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """DELETE with a ``DeleteOptions`` body; returns the server's answer.

        ``propagation_policy`` is "Foreground", "Background" or "Orphan";
        ``preconditions`` is ``{"uid": ..., "resourceVersion": ...}``.
        """
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = int(grace_period_seconds)
        path = self._path(self._ns_for_item(namespace), name)
        result = self._call("DELETE", path, query=params, body=options, name=name)
        ns = self._ns_for_item(namespace)
        return self._wrote(result, params, name=name, namespace=ns, deleted=True)

    def _wrote(
        self,
        result: dict[str, Any],
        params: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        namespace: str | None = None,
        deleted: bool = False,
    ) -> dict[str, Any]:
        """A write's answer, recorded for read-your-writes (``pycontroller.consistency``:
        a no-op unless a tracked reconcile runs on this thread)."""
        record_write(
            self.resource,
            self.namespaced,
            result,
            name=name,
            namespace=namespace,
            deleted=deleted,
            params=params,
        )
        return result

    def iter_list(
        self, namespace: str | None = None, *, page_size: int = 500, **params: Any
    ) -> Iterator[dict[str, Any]]:
        """Yield every item of the collection, following ``continue`` tokens."""
        token: str | None = None
        while True:
            page = self.list(namespace, limit=page_size, continue_=token, **params)
            yield from page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return
