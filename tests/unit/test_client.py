"""ResourceClient against a tiny canned HTTP server on loopback, plus pure helpers."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client import REGISTRY
from support.fakes import SleepRecorder

from pycontroller.client import (
    WATCH_DECODE_ERROR_CAUSE,
    ResourceClient,
    TokenBucketRateLimiter,
    WatchStream,
    _encode_query,
    rate_limiter_for,
    set_rate_limiter,
)
from pycontroller.clock import FakeClock
from pycontroller.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
    TooManyRequestsError,
)


class Canned:
    """Responses to serve, in order: (status, headers, body bytes or list of chunks)."""

    def __init__(self) -> None:
        self.responses: list[tuple[int, dict[str, str], Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.release = threading.Event()


def make_handler(canned: Canned) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with canned.lock:
                canned.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                status, headers, payload = (
                    canned.responses.pop(0) if canned.responses else (200, {}, b"{}")
                )
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            if isinstance(payload, list):  # streamed chunks; None = wait for release
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in payload:
                    if chunk is None:
                        canned.release.wait(10)
                        continue
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[Canned, k8s.ApiClient]]:
    canned = Canned()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(canned))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{httpd.server_address[1]}"
    cfg.api_key = {"authorization": "secret"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    api = k8s.ApiClient(cfg)
    set_rate_limiter(api, TokenBucketRateLimiter(qps=0, burst=0))
    yield canned, api
    canned.release.set()
    httpd.shutdown()
    httpd.server_close()


def status_body(code: int, reason: str, message: str = "m") -> bytes:
    return json.dumps(
        {"kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message}
    ).encode()


# ------------------------------------------------------------------------------------ tests


def test_query_encoding() -> None:
    q = _encode_query(
        {
            "label_selector": "a=b,c in (d)",
            "limit": 5,
            "continue_": "tok",
            "_continue": None,
            "allow_watch_bookmarks": True,
            "resource_version": "0",
        }
    )
    assert q == (
        "labelSelector=a%3Db%2Cc+in+%28d%29&limit=5&continue=tok"
        "&allowWatchBookmarks=true&resourceVersion=0"
    )


def test_paths_and_verbs(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    pods = ResourceClient(api, "", "v1", "pods")
    deploys = ResourceClient(api, "apps", "v1", "deployments")
    nodes = ResourceClient(api, "", "v1", "nodes", namespaced=False)
    canned.responses = [(200, {}, b'{"items": null, "metadata": {}}')] + [(200, {}, b"{}")] * 8
    assert pods.list() == {"items": [], "metadata": {}}
    deploys.list("ns", label_selector="app=x")
    pods.get("p", "ns")
    nodes.get("n1")
    deploys.create({"metadata": {"name": "d", "namespace": "ns2"}})
    pods.create({"metadata": {"name": "p"}})
    deploys.update({"metadata": {"name": "d", "namespace": "ns"}, "spec": {}})
    deploys.update_status({"metadata": {"name": "d", "namespace": "ns"}, "status": {}})
    pods.delete("p", "ns", propagation_policy="Foreground", preconditions={"uid": "u1"})
    got = [(r["method"], r["path"]) for r in canned.requests]
    assert got == [
        ("GET", "/api/v1/pods"),
        ("GET", "/apis/apps/v1/namespaces/ns/deployments?labelSelector=app%3Dx"),
        ("GET", "/api/v1/namespaces/ns/pods/p"),
        ("GET", "/api/v1/nodes/n1"),
        ("POST", "/apis/apps/v1/namespaces/ns2/deployments"),
        ("POST", "/api/v1/namespaces/default/pods"),
        ("PUT", "/apis/apps/v1/namespaces/ns/deployments/d"),
        ("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/status"),
        ("DELETE", "/api/v1/namespaces/ns/pods/p"),
    ]
    assert json.loads(canned.requests[-1]["body"]) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u1"},
    }
    assert canned.requests[0]["headers"]["authorization"] == "Bearer secret"
    with pytest.raises(ValueError):
        nodes.get("n1", "ns")


@pytest.mark.parametrize(
    ("patch_type", "content_type", "query"),
    [
        ("merge", "application/merge-patch+json", ""),
        ("json", "application/json-patch+json", ""),
        ("strategic", "application/strategic-merge-patch+json", ""),
        ("apply", "application/apply-patch+yaml", "?fieldManager=pycontroller&force=true"),
    ],
)
def test_patch_content_types(
    server: tuple[Canned, k8s.ApiClient], patch_type: str, content_type: str, query: str
) -> None:
    canned, api = server
    cms = ResourceClient(api, "", "v1", "configmaps")
    body: Any = (
        [{"op": "add", "path": "/data/a", "value": "1"}] if patch_type == "json" else {"data": {}}
    )
    cms.patch("c", body, "ns", patch_type=patch_type)
    req = canned.requests[-1]
    assert req["method"] == "PATCH"
    assert req["path"] == "/api/v1/namespaces/ns/configmaps/c" + query
    assert req["headers"]["content-type"] == content_type
    assert json.loads(req["body"]) == body


def test_patch_rejects_unknown_type(server: tuple[Canned, k8s.ApiClient]) -> None:
    _, api = server
    with pytest.raises(ValueError, match="patch_type"):
        ResourceClient(api, "", "v1", "configmaps").patch("c", {}, "ns", patch_type="yaml")


@pytest.mark.parametrize(
    ("status", "reason", "cls"),
    [
        (404, "NotFound", NotFoundError),
        (409, "AlreadyExists", AlreadyExistsError),
        (409, "Conflict", ConflictError),
        (410, "Expired", GoneError),
        (422, "Invalid", InvalidError),
        (500, "InternalError", ApiError),
    ],
)
def test_error_mapping(
    server: tuple[Canned, k8s.ApiClient], status: int, reason: str, cls: type[ApiError]
) -> None:
    canned, api = server
    canned.responses = [(status, {}, status_body(status, reason, "details here"))]
    with pytest.raises(cls) as info:
        ResourceClient(api, "", "v1", "pods").get("p", "ns")
    assert type(info.value) is cls
    assert info.value.status == status and info.value.reason == reason
    assert info.value.message == "details here"
    assert info.value.body is not None and info.value.body["kind"] == "Status"


def test_non_json_error_body_keeps_text(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    canned.responses = [(503, {}, b"upstream unavailable")]
    with pytest.raises(ApiError, match="upstream unavailable") as info:
        ResourceClient(api, "", "v1", "pods").list()
    assert info.value.status == 503


def test_429_with_retry_after_is_retried_then_succeeds(
    server: tuple[Canned, k8s.ApiClient],
) -> None:
    canned, api = server
    clock = SleepRecorder()
    throttled = (429, {"Retry-After": "2"}, status_body(429, "TooManyRequests"))
    canned.responses = [throttled, throttled, (200, {}, b'{"metadata": {"name": "p"}}')]
    got = ResourceClient(api, "", "v1", "pods", clock=clock).get("p", "ns")
    assert got == {"metadata": {"name": "p"}}
    assert clock.sleeps == [2.0, 2.0]
    assert len(canned.requests) == 3


def test_429_retries_are_bounded(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    clock = SleepRecorder()
    canned.responses = [(429, {"Retry-After": "1"}, status_body(429, "TooManyRequests"))] * 4
    client = ResourceClient(api, "", "v1", "pods", clock=clock, max_retries=3)
    with pytest.raises(TooManyRequestsError) as info:
        client.create({"metadata": {"name": "p"}}, "ns")
    assert info.value.retry_after == 1.0
    assert clock.sleeps == [1.0, 1.0, 1.0]


def test_429_without_retry_after_raises_at_once(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    clock = SleepRecorder()
    canned.responses = [(429, {}, status_body(429, "TooManyRequests"))]
    with pytest.raises(TooManyRequestsError) as info:
        ResourceClient(api, "", "v1", "pods", clock=clock).get("p", "ns")
    assert info.value.retry_after is None and clock.sleeps == []


def test_watch_streams_events_line_by_line(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    e1 = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "a"}}}).encode()
    e2 = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}}).encode()
    # The first event is split across chunks, the second arrives only after a pause.
    canned.responses = [(200, {}, [e1[:10], e1[10:] + b"\n", None, e2 + b"\n"])]
    client = ResourceClient(api, "", "v1", "pods")
    stream = client.watch("ns", resource_version="5", timeout_seconds=30)
    first = next(stream)
    assert first["object"]["metadata"]["name"] == "a"  # delivered before the stream ended
    canned.release.set()
    assert next(stream)["type"] == "ERROR"  # yielded, not raised
    assert list(stream) == []
    path = canned.requests[0]["path"]
    assert path.startswith("/api/v1/namespaces/ns/pods?")
    assert "watch=true" in path and "resourceVersion=5" in path
    assert "timeoutSeconds=30" in path and "allowWatchBookmarks=true" in path


def test_watch_close_from_another_thread_wakes_the_reader(
    server: tuple[Canned, k8s.ApiClient],
) -> None:
    canned, api = server
    canned.responses = [(200, {}, [b'{"type":"BOOKMARK","object":{}}\n', None])]
    stream = ResourceClient(api, "", "v1", "pods").watch()
    assert next(stream)["type"] == "BOOKMARK"
    result: list[Any] = []
    reader = threading.Thread(target=lambda: result.append(list(stream)), daemon=True)
    reader.start()
    time.sleep(0.1)
    assert reader.is_alive()
    t0 = time.monotonic()
    stream.close()
    reader.join(3)
    assert not reader.is_alive() and result == [[]]
    assert time.monotonic() - t0 < 3


class ChunkedResponse:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)
        self.closed = False

    def read1(self, n: int) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""

    def close(self) -> None:
        self.closed = True


def ev(key: str, value: int) -> dict[str, Any]:
    """An event as the framing tests write it: a type and one marker field."""
    return {"type": "ADDED", key: value}


def test_watch_stream_splitting_edge_cases() -> None:
    resp = ChunkedResponse(
        [
            *(b'{"type":"ADDED","a":', b"1}\n\n", b'{"type":"ADDED","b":2}\n{"type":"ADDED","c"'),
            *(b":3}", b"\n", b'{"type":"ADDED","d":4}'),
        ]
    )
    stream = WatchStream(resp)
    assert list(stream) == [ev("a", 1), ev("b", 2), ev("c", 3), ev("d", 4)]
    assert resp.closed


def is_decode_error(event: dict[str, Any]) -> bool:
    status = event["object"]
    return (
        event["type"] == "ERROR"
        and status["code"] == 500
        and status["reason"] == "InternalError"
        and status["message"].startswith("unable to decode an event from the watch stream")
        and status["details"]["causes"][0]["reason"] == WATCH_DECODE_ERROR_CAUSE
    )


def test_watch_stream_skips_blank_lines_quietly() -> None:
    resp = ChunkedResponse([b'{"type":"ADDED","a":1}\r\n\n \r\n\t\n', b'{"type":"ADDED","b":2}\n'])
    assert list(WatchStream(resp)) == [ev("a", 1), ev("b", 2)]


@pytest.mark.parametrize(
    "bad",
    [
        b"{oops",  # not JSON
        b'{"type":"ADDED","object":{"metadata":{"name":"x","resourceV',  # truncated line
        b"[1, 2]",  # JSON, not an event object
        b'"ADDED"',
        b"\xff\xfe",  # not UTF-8
        b'{"type":"FROBNICATED","object":{}}',  # client-go: "got invalid watch event type"
        b'{"object":{}}',  # no type at all
    ],
)
def test_watch_stream_ends_with_an_error_event_at_an_undecodable_line(
    bad: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """client-go's StreamWatcher: a decode error is an ERROR event and the end of the
    watch; nothing after the bad line is yielded (the consumer re-watches from there)."""
    resp = ChunkedResponse([b'{"type":"ADDED","a":1}\n', bad + b"\n", b'{"type":"ADDED","b":2}\n'])
    with caplog.at_level("WARNING", logger="pycontroller.client"):
        events = list(WatchStream(resp, "pods from rv 5"))
    assert events[0] == ev("a", 1)
    assert len(events) == 2 and is_decode_error(events[1])
    assert resp.closed
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "pods from rv 5" in warnings[0] and "unable to decode" in warnings[0]


def test_watch_stream_truncated_at_eof_ends_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """The connection dropped mid-event (client-go's io.ErrUnexpectedEOF): a plain end,
    so the consumer resumes from the last event it applied."""
    resp = ChunkedResponse([b'{"type":"ADDED","a":1}\n{"type":"ADDED","obj'])
    with caplog.at_level("INFO", logger="pycontroller.client"):
        assert list(WatchStream(resp)) == [ev("a", 1)]
    assert any("unexpected EOF" in r.getMessage() for r in caplog.records)


def test_watch_over_http_ends_at_a_garbage_line(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    e1 = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "a"}}}).encode()
    e2 = json.dumps({"type": "ADDED", "object": {"metadata": {"name": "b"}}}).encode()
    canned.responses = [(200, {}, [e1 + b"\n" + e2[:15] + b"\n", e2 + b"\n", None])]
    stream = ResourceClient(api, "", "v1", "pods").watch("ns", resource_version="5")
    assert next(stream)["object"]["metadata"]["name"] == "a"
    assert is_decode_error(next(stream))
    t0 = time.monotonic()
    assert list(stream) == []  # closed at once: the server's next chunk is never awaited
    assert time.monotonic() - t0 < 2


def test_connection_refused_is_a_connection_refused_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    cfg = k8s.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    api = k8s.ApiClient(cfg)
    with pytest.raises(ConnectionRefusedError):
        ResourceClient(api, "", "v1", "pods").list()
    with pytest.raises(ConnectionError):
        ResourceClient(api, "", "v1", "pods").watch()


def test_token_bucket_burst_then_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucketRateLimiter(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    assert not bucket.try_accept()
    clock.step(10)
    assert bucket.try_accept()
    unlimited = TokenBucketRateLimiter(qps=0, burst=0, clock=clock)
    assert all(unlimited.reserve() == 0 for _ in range(1000))


def test_rate_limiter_is_shared_per_api_client(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    fresh = k8s.ApiClient(api.configuration)
    assert rate_limiter_for(fresh) is rate_limiter_for(fresh)
    assert rate_limiter_for(fresh) is not rate_limiter_for(api)
    clock = FakeClock()
    shared = TokenBucketRateLimiter(qps=1, burst=2, clock=clock)
    set_rate_limiter(fresh, shared)
    a = ResourceClient(fresh, "", "v1", "pods")
    b = ResourceClient(fresh, "", "v1", "configmaps")
    a.list()
    b.list()
    # Both clients drew from one bucket of 2: the next request would have to wait 1 s.
    assert shared.reserve() == pytest.approx(1.0)


def test_requests_are_counted_in_metrics(server: tuple[Canned, k8s.ApiClient]) -> None:
    canned, api = server
    host = api.configuration.host.split("//")[1]
    labels = {"code": "404", "method": "GET", "host": host}
    before = REGISTRY.get_sample_value("rest_client_requests_total", labels) or 0.0
    canned.responses = [(404, {}, status_body(404, "NotFound"))]
    with pytest.raises(NotFoundError):
        ResourceClient(api, "", "v1", "pods").get("x", "ns")
    assert REGISTRY.get_sample_value("rest_client_requests_total", labels) == before + 1
    count = REGISTRY.get_sample_value(
        "rest_client_request_duration_seconds_count", {"verb": "GET", "host": host}
    )
    assert count is not None and count >= 1


@pytest.mark.parametrize("use_stdlib", [False, True])
def test_json_loads_takes_every_buffer_type_and_raises_value_error(
    use_stdlib: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pycontroller import _json

    if use_stdlib:
        monkeypatch.setattr(_json, "loads", _json._stdlib_loads)
    doc = b'{"a": [1, "x"]}'
    for data in (doc, bytearray(doc), memoryview(doc), doc.decode()):
        assert _json.loads(data) == {"a": [1, "x"]}
    with pytest.raises(ValueError):
        _json.loads(b"{not json")
