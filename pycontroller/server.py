"""Metrics and health probes over HTTP (controller-runtime's metrics + health probe servers).

``serve_metrics_and_health(bind_address, readiness_checks=...)`` starts a
threaded HTTP server in a daemon thread and returns at once:

- ``GET /metrics``: the Prometheus text exposition of the default registry
  (or ``registry=``);
- ``GET /healthz`` (and ``/livez``): 200 ``ok`` while every health check
  passes (none by default: the process answering is the liveness signal);
- ``GET /readyz``: 200 ``ok`` when every readiness check returns True,
  else 500 with one ``[-]<name> failed`` line per failing check.
  ``?verbose`` lists every check; ``/readyz/<name>`` (and ``/healthz/<name>``,
  ``/livez/<name>``) runs one check, ``.../ping`` answers when there are none.

A check is a callable returning bool; one that raises an API, OS or value
error counts as failing (its error is logged). Informers' ``has_synced``
plug in as readiness checks. Checks run on the server's request threads: they
must be quick and thread-safe.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import prometheus_client
from prometheus_client import CollectorRegistry

from pycontroller.errors import ApiError

logger = logging.getLogger(__name__)

__all__ = [
    "Check",
    "Checks",
    "MetricsHealthServer",
    "parse_bind_address",
    "serve_metrics_and_health",
]

Check = Callable[[], bool]
Checks = Mapping[str, Check] | Sequence[Check]

# What a failing probe may raise; anything else is a bug and propagates (the
# request then fails, which a probe also reads as "not ready").
_CHECK_ERRORS: tuple[type[Exception], ...] = (ApiError, OSError, ValueError, RuntimeError)


def parse_bind_address(bind_address: str) -> tuple[str, int]:
    """Split a bind address into (host, port).

    Accepts ``"host:port"``, ``":port"`` (all interfaces), ``"[::1]:port"``
    and ``"port"``. Raises ValueError on anything else. Port 0 asks the OS for a free port.
    """
    addr = bind_address.strip()
    if addr.startswith("["):
        host, sep, port = addr[1:].partition("]:")
        if not sep:
            raise ValueError(f"invalid bind address {bind_address!r}")
    elif ":" in addr:
        host, _, port = addr.rpartition(":")
    else:
        host, port = "", addr
    try:
        port_num = int(port)
    except ValueError:
        raise ValueError(f"invalid port in bind address {bind_address!r}") from None
    if not 0 <= port_num <= 65535:
        raise ValueError(f"port out of range in bind address {bind_address!r}")
    return host or "0.0.0.0", port_num


def _named(checks: Checks | None) -> dict[str, Check]:
    if not checks:
        return {}
    if isinstance(checks, Mapping):
        return dict(checks)
    named: dict[str, Check] = {}
    for i, check in enumerate(checks):
        name = getattr(check, "__name__", "") or f"check-{i}"
        if name in named or name == "<lambda>":
            name = f"{name}-{i}" if name != "<lambda>" else f"check-{i}"
        named[name] = check
    return named


def _run_checks(checks: Mapping[str, Check]) -> list[tuple[str, bool]]:
    results = []
    for name, check in checks.items():
        try:
            ok = bool(check())
        except _CHECK_ERRORS as err:
            logger.warning("Health check %s raised: %s", name, err)
            ok = False
        results.append((name, ok))
    return results


def _ping() -> bool:
    """controller-runtime's ``healthz.Ping``: the process answers."""
    return True


class _ThreadingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class MetricsHealthServer:
    """A running metrics/health server. ``port``/``host``/``address`` tell where it listens.

    ``shutdown()`` stops serving and closes the socket (idempotent). Also a
    context manager.
    """

    def __init__(
        self,
        bind_address: str,
        readiness_checks: Checks | None = None,
        health_checks: Checks | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        host, port = parse_bind_address(bind_address)
        self._readiness = _named(readiness_checks)
        self._health = _named(health_checks)
        self._registry = registry or prometheus_client.REGISTRY
        handler = self._make_handler()
        self._httpd = _ThreadingHTTPServer((host, port), handler)
        self.host: str = host
        self.port: int = int(self._httpd.server_address[1])
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"metrics-health-{self.port}",
            daemon=True,
        )
        self._thread.start()
        logger.info("Serving metrics and health probes on %s", self.address)

    @property
    def address(self) -> str:
        """``host:port`` (IPv6 hosts in brackets); a connectable URL is ``http://`` + this."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """``http://`` + ``address``; a server on all interfaces is reached on loopback."""
        if self.host == "0.0.0.0":
            return f"http://127.0.0.1:{self.port}"
        return f"http://{self.address}"

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> MetricsHealthServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                server._handle(self, head=False)

            def do_HEAD(self) -> None:
                server._handle(self, head=True)

            def log_message(self, format: str, *args: Any) -> None:
                logger.debug("%s - %s", self.address_string(), format % args)

        return Handler

    def _handle(self, req: BaseHTTPRequestHandler, *, head: bool) -> None:
        parts = urlsplit(req.path)
        path = parts.path.rstrip("/") or "/"
        verbose = "verbose" in parse_qs(parts.query, keep_blank_values=True)
        content_type = "text/plain; charset=utf-8"
        if path == "/metrics":
            body = prometheus_client.generate_latest(self._registry)
            status = HTTPStatus.OK
            content_type = prometheus_client.CONTENT_TYPE_LATEST
        elif path in ("/healthz", "/livez"):
            status, body = self._probe(path[1:], self._health, verbose)
        elif path == "/readyz":
            status, body = self._probe("readyz", self._readiness, verbose)
        elif (one := self._one_check(path)) is not None:
            status, body = self._probe(*one, verbose)
        else:
            status, body = HTTPStatus.NOT_FOUND, b"404 page not found\n"
        req.send_response(status)
        req.send_header("Content-Type", content_type)
        req.send_header("Content-Length", str(len(body)))
        req.send_header("X-Content-Type-Options", "nosniff")
        req.end_headers()
        if not head:
            req.wfile.write(body)

    def _one_check(self, path: str) -> tuple[str, dict[str, Check]] | None:
        """``/<endpoint>/<name>``: that one check (controller-runtime's ``healthz.Handler``
        serves each check below both probe endpoints; with no checks, ``ping``)."""
        endpoint, _, name = path[1:].partition("/")
        checks = {"healthz": self._health, "livez": self._health, "readyz": self._readiness}
        if endpoint not in checks or not name:
            return None
        if name in checks[endpoint]:
            return endpoint, {name: checks[endpoint][name]}
        if name == "ping" and not checks[endpoint]:
            return endpoint, {"ping": _ping}
        return None

    @staticmethod
    def _probe(kind: str, checks: Mapping[str, Check], verbose: bool) -> tuple[HTTPStatus, bytes]:
        results = _run_checks(checks)
        failed = any(not ok for _, ok in results)
        if not failed and not verbose:
            return HTTPStatus.OK, b"ok"
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed" for name, ok in results]
        lines.append(f"{kind} check {'failed' if failed else 'passed'}")
        status = HTTPStatus.INTERNAL_SERVER_ERROR if failed else HTTPStatus.OK
        return status, ("\n".join(lines) + "\n").encode()


def serve_metrics_and_health(
    bind_address: str,
    readiness_checks: Checks | None = None,
    *,
    health_checks: Checks | None = None,
    registry: CollectorRegistry | None = None,
) -> MetricsHealthServer:
    """Start serving ``/metrics``, ``/healthz``, ``/livez`` and ``/readyz`` on ``bind_address``.

    ``readiness_checks``: a mapping name -> callable, or a sequence of
    callables (named after their ``__name__``, else ``check-<i>``).
    ``health_checks``: the same, for ``/healthz`` and ``/livez``. Returns the
    running server; call ``shutdown()`` to stop it. Raises OSError if the
    address cannot be bound.
    """
    return MetricsHealthServer(
        bind_address, readiness_checks, health_checks=health_checks, registry=registry
    )
