"""An HTTPS admission webhook endpoint on loopback for tests of the embedded
API server's webhook calls, and helpers to answer AdmissionReviews."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import trustme

Review = dict[str, Any]
Handler = Callable[[Review], dict[str, Any]]


def allow(review: Review, **extra: Any) -> dict[str, Any]:
    return {"uid": review["request"]["uid"], "allowed": True, **extra}


def deny(review: Review, status: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": False}
    if status is not None:
        out["status"] = status
    return out


def patch_response(review: Review, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return allow(
        review, patchType="JSONPatch", patch=base64.b64encode(json.dumps(ops).encode()).decode()
    )


class WebhookServer:
    """An HTTPS webhook endpoint on loopback: each path answers with its handler."""

    def __init__(self, ca: trustme.CA) -> None:
        self.handlers: dict[str, Handler] = {}
        self.reviews: dict[str, list[Review]] = {}
        self.raw: dict[str, Callable[[], tuple[int, bytes]]] = {}
        self.queries: list[str] = []
        outer = self

        class _H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                path, _, query = self.path.partition("?")
                outer.queries.append(query)
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.reviews.setdefault(path, []).append(review)
                if path in outer.raw:
                    code, body = outer.raw[path]()
                else:
                    response = outer.handlers[path](review)
                    code = 200
                    body = json.dumps(
                        {
                            "apiVersion": review["apiVersion"],
                            "kind": "AdmissionReview",
                            "response": response,
                        }
                    ).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1", "localhost", "hook.default.svc").configure_cert(ctx)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.ca_bundle = base64.b64encode(ca.cert_pem.bytes()).decode()
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
