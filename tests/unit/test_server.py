"""Metrics and health server over real HTTP on 127.0.0.1:0."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from pycontroller.errors import ApiError
from pycontroller.server import (
    MetricsHealthServer,
    parse_bind_address,
    serve_metrics_and_health,
)


def get(server: MetricsHealthServer, path: str, method: str = "GET") -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        body = resp.read().decode()
        return resp.status, resp.getheader("Content-Type") or "", body
    finally:
        conn.close()


@pytest.fixture
def ready() -> threading.Event:
    return threading.Event()


@pytest.fixture
def server(ready: threading.Event) -> Iterator[MetricsHealthServer]:
    def informers_synced() -> bool:
        return ready.is_set()

    s = serve_metrics_and_health(
        "127.0.0.1:0", readiness_checks={"informers": informers_synced, "always": lambda: True}
    )
    yield s
    s.shutdown()


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        (":8080", ("0.0.0.0", 8080)),
        ("8081", ("0.0.0.0", 8081)),
        ("[::1]:9090", ("::1", 9090)),
        ("localhost:0", ("localhost", 0)),
    ],
)
def test_parse_bind_address(addr: str, expected: tuple[str, int]) -> None:
    assert parse_bind_address(addr) == expected


@pytest.mark.parametrize("addr", ["abc", "127.0.0.1:x", ":70000", "[::1]"])
def test_parse_bind_address_invalid(addr: str) -> None:
    with pytest.raises(ValueError):
        parse_bind_address(addr)


def test_ephemeral_port_and_address(server: MetricsHealthServer) -> None:
    assert server.port > 0
    assert server.address == f"127.0.0.1:{server.port}"
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_healthz(server: MetricsHealthServer) -> None:
    assert get(server, "/healthz")[0::2] == (200, "ok")
    assert get(server, "/livez")[0::2] == (200, "ok")
    status, _, body = get(server, "/healthz?verbose")
    assert status == 200 and "healthz check passed" in body


def test_readyz_follows_checks(server: MetricsHealthServer, ready: threading.Event) -> None:
    status, _, body = get(server, "/readyz")
    assert status == 500
    assert "[-]informers failed" in body
    assert "[+]always ok" in body
    assert "readyz check failed" in body
    assert get(server, "/readyz/always")[0] == 200
    assert get(server, "/readyz/informers")[0] == 500
    ready.set()
    assert get(server, "/readyz")[0::2] == (200, "ok")
    status, _, body = get(server, "/readyz?verbose")
    assert status == 200 and "[+]informers ok" in body


def test_metrics_exposes_default_registry(server: MetricsHealthServer) -> None:
    import pycontroller.controller  # noqa: F401  registers controller_runtime_* metrics

    status, ctype, body = get(server, "/metrics")
    assert status == 200
    assert ctype.startswith("text/plain")
    assert "# TYPE controller_runtime_reconcile_total counter" in body
    assert "process_" in body or "python_" in body


def test_metrics_custom_registry() -> None:
    reg = CollectorRegistry()
    c = Counter("my_things_total", "things", registry=reg)
    c.inc(3)
    with serve_metrics_and_health("127.0.0.1:0", registry=reg) as s:
        status, _, body = get(s, "/metrics")
    assert status == 200
    assert "my_things_total 3.0" in body
    assert "controller_runtime" not in body


def test_unknown_path_404(server: MetricsHealthServer) -> None:
    assert get(server, "/nope")[0] == 404
    assert get(server, "/readyz/unknown")[0] == 404


def test_head_request(server: MetricsHealthServer) -> None:
    status, _, body = get(server, "/healthz", method="HEAD")
    assert status == 200 and body == ""


def test_sequence_checks_and_raising_check() -> None:
    def cache_synced() -> bool:
        return True

    def broken() -> bool:
        raise ApiError(500, "InternalError", "x")

    with serve_metrics_and_health("127.0.0.1:0", [cache_synced, lambda: True, broken]) as s:
        status, _, body = get(s, "/readyz")
    assert status == 500
    assert "[+]cache_synced ok" in body
    assert "[+]check-1 ok" in body
    assert "[-]broken failed" in body


def test_health_checks_param() -> None:
    alive = threading.Event()
    with serve_metrics_and_health("127.0.0.1:0", health_checks={"watchdog": alive.is_set}) as s:
        assert get(s, "/healthz")[0] == 500
        alive.set()
        assert get(s, "/healthz")[0] == 200
        assert get(s, "/readyz")[0] == 200  # no readiness checks: ready


def test_shutdown_closes_port() -> None:
    s = serve_metrics_and_health("127.0.0.1:0")
    port = s.port
    assert get(s, "/healthz")[0] == 200
    s.shutdown()
    s.shutdown()  # idempotent
    with pytest.raises(OSError):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/healthz")
        conn.getresponse()


def test_port_in_use_raises() -> None:
    with serve_metrics_and_health("127.0.0.1:0") as s, pytest.raises(OSError):
        MetricsHealthServer(f"127.0.0.1:{s.port}")


def test_keep_alive_connection_serves_several_requests(server: MetricsHealthServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for path in ("/healthz", "/metrics", "/readyz"):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            assert resp.status in (200, 500)
    finally:
        conn.close()
