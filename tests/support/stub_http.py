"""A scripted HTTP server on 127.0.0.1 for client tests: it answers each
request with the next queued ``(status, headers, body)`` (200 ``{}`` when
none is queued) and records what it was asked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Stub:
    def __init__(self) -> None:
        self.responses: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[str] = []  # "METHOD /path?query"
        self.headers: list[Any] = []  # each request's headers
        self.lock = threading.Lock()


@contextmanager
def stub_server() -> Iterator[tuple[Stub, str]]:
    """``(stub, "http://127.0.0.1:<port>")`` while the server runs."""
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            with state.lock:
                state.requests.append(f"{self.command} {self.path}")
                state.headers.append(self.headers)
                status, headers, body = (
                    state.responses.pop(0) if state.responses else (200, {}, b"{}")
                )
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
