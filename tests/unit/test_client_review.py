"""ResourceClient against client-go's rest client: unstructured error answers
(newUnstructuredResponseError), Retry-After parsing (retryAfterSeconds),
transport retries (only GETs, never a read timeout), Warning headers."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from support.fakes import SleepRecorder
from support.stub_http import Stub, stub_server

from pycontroller.client import ResourceClient, TokenBucketRateLimiter, set_rate_limiter
from pycontroller.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError


@pytest.fixture
def stub() -> Iterator[tuple[Stub, k8s.ApiClient]]:
    with stub_server() as (state, url):
        cfg = k8s.Configuration()
        cfg.host = url
        api = k8s.ApiClient(cfg)
        set_rate_limiter(api, TokenBucketRateLimiter(qps=0, burst=0))
        yield state, api


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


# ------------------------------------------------------------ unstructured error answers


def test_unstructured_409_to_a_post_is_already_exists(stub: tuple[Stub, k8s.ApiClient]) -> None:
    state, api = stub
    client = ResourceClient(api, "", "v1", "configmaps")
    state.responses = [(409, {"Content-Type": "text/plain"}, b"exists")] * 2
    with pytest.raises(AlreadyExistsError) as info:
        client.create(cm("a"))
    assert info.value.reason == "AlreadyExists"
    assert info.value.message.startswith("the server reported a conflict (post configmaps)")
    with pytest.raises(ConflictError) as conflict:
        client.update(cm("a"))
    assert type(conflict.value) is ConflictError and conflict.value.reason == "Conflict"
    assert "(put configmaps a)" in conflict.value.message


def test_unstructured_404_and_5xx_messages(stub: tuple[Stub, k8s.ApiClient]) -> None:
    state, api = stub
    client = ResourceClient(api, "apps", "v1", "deployments")
    html = {"Content-Type": "text/html"}
    state.responses = [(404, html, b"<html>nope</html>"), (502, html, b"<html>bad gw</html>")]
    with pytest.raises(NotFoundError) as nf:
        client.get("d", "ns")
    assert nf.value.reason == "NotFound"
    assert nf.value.message.startswith(
        "the server could not find the requested resource (get deployments.apps d)"
    )
    assert nf.value.causes == [
        {"reason": "UnexpectedServerResponse", "message": "<html>nope</html>"}
    ]
    with pytest.raises(ApiError) as err:
        client.list("ns")
    assert err.value.status == 502 and err.value.reason == "InternalError"
    assert err.value.message == (
        'an error on the server ("<html>bad gw</html>") has prevented the request '
        "from succeeding (get deployments.apps)"
    )


def test_json_body_that_is_not_a_status_is_unstructured(
    stub: tuple[Stub, k8s.ApiClient],
) -> None:
    state, api = stub
    state.responses = [(404, {"Content-Type": "application/json"}, b'{"error": "x"}')]
    with pytest.raises(NotFoundError) as nf:
        ResourceClient(api, "", "v1", "pods").get("p", "ns")
    assert nf.value.reason == "NotFound"
    assert nf.value.body is not None and nf.value.body["kind"] == "Status"
    assert nf.value.causes[0]["message"] == "unknown"


# ------------------------------------------------------------ Retry-After parsing


def test_fractional_retry_after_is_not_a_retry(stub: tuple[Stub, k8s.ApiClient]) -> None:
    # client-go's retryAfterSeconds is strconv.Atoi: "1.5" is no Retry-After.
    state, api = stub
    sleeps = SleepRecorder()
    client = ResourceClient(api, "", "v1", "pods", clock=sleeps)
    state.responses = [(503, {"Retry-After": "1.5"}, b"busy")]
    with pytest.raises(ApiError) as err:
        client.list()
    assert err.value.status == 503 and err.value.retry_after is None
    assert len(state.requests) == 1 and sleeps.sleeps == []


def test_integer_retry_after_is_retried(stub: tuple[Stub, k8s.ApiClient]) -> None:
    state, api = stub
    sleeps = SleepRecorder()
    client = ResourceClient(api, "", "v1", "pods", clock=sleeps)
    state.responses = [(503, {"Retry-After": "2"}, b"busy")]
    assert client.list()["items"] == []
    assert len(state.requests) == 2 and sleeps.sleeps == [2.0]


# ------------------------------------------------------------ transport retries


class RawServer:
    """Accepts connections, reads one request head and body each, then either
    closes the connection without an answer or keeps it silent."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.requests: list[str] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.stop = threading.Event()
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(5)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                key, _, value = line.partition(b":")
                if key.strip().lower() == b"content-length":
                    length = int(value)
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                rest += chunk
            self.requests.append(head.split(b"\r\n")[0].decode())
            if self.mode == "close":
                conn.close()
            else:
                self.held.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.sock.close()


def raw_client(server: RawServer, **kwargs: Any) -> ResourceClient:
    cfg = k8s.Configuration()
    cfg.host = server.url
    api = k8s.ApiClient(cfg)
    return ResourceClient(
        api, "", "v1", "configmaps", rate_limiter=TokenBucketRateLimiter(0, 0), **kwargs
    )


@pytest.mark.parametrize("method", ["DELETE", "PUT"])
def test_write_whose_answer_broke_off_is_not_sent_again(method: str) -> None:
    # client-go's isErrRetryableFunc: "We are not automatically retrying
    # 'write' operations, as they are not idempotent."
    server = RawServer("close")
    try:
        client = raw_client(server)
        with pytest.raises(ConnectionError):
            if method == "DELETE":
                client.delete("a", "default")
            else:
                client.update(cm("a"))
        assert [r.split()[0] for r in server.requests] == [method]
    finally:
        server.close()


def test_get_whose_answer_broke_off_is_sent_again_once() -> None:
    server = RawServer("close")
    try:
        with pytest.raises(ConnectionError):
            raw_client(server).get("a", "default")
        assert [r.split()[0] for r in server.requests] == ["GET", "GET"]
    finally:
        server.close()


def test_read_timeout_is_not_retried() -> None:
    server = RawServer("hold")
    try:
        client = raw_client(server, request_timeout=0.5)
        start = time.monotonic()
        with pytest.raises(ConnectionError):
            client.get("a", "default")
        assert time.monotonic() - start < 0.95  # one timeout, not two
        assert len(server.requests) == 1
    finally:
        server.close()


# ------------------------------------------------------------ Warning headers


def test_parse_warning_headers_like_apimachinery() -> None:
    from pycontroller.client import _parse_warning_headers

    values = [
        '299 - "first, with comma", 299 kube "second \\"quoted\\"" "Tue, 15 Nov 1994 08:12:31 GMT"',
        '199 agent "misc"',
        "garbage",
        '299 - "after garbage"',
    ]
    assert _parse_warning_headers(values) == [
        (299, "-", "first, with comma"),
        (299, "kube", 'second "quoted"'),
        (199, "agent", "misc"),
        (299, "-", "after garbage"),
    ]


def test_warning_headers_are_logged(
    stub: tuple[Stub, k8s.ApiClient], caplog: pytest.LogCaptureFixture
) -> None:
    state, api = stub
    state.responses = [
        (200, {"Warning": '299 - "v1 Thing is deprecated", 199 - "not shown"'}, b"{}"),
        (404, {"Warning": '299 - "also on errors"'}, b""),
    ]
    client = ResourceClient(api, "", "v1", "pods")
    with caplog.at_level(logging.WARNING, logger="pycontroller.client"):
        client.get("p", "ns")
        with pytest.raises(NotFoundError):
            client.get("p", "ns")
    messages = [r.getMessage() for r in caplog.records if r.name == "pycontroller.client"]
    assert messages == ["Warning: v1 Thing is deprecated", "Warning: also on errors"]
