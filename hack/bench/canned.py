"""A canned-bytes API server for client-side benchmarks (run as a subprocess).

Every answer is serialized once, up front, so the benchmarks measure the
clients, not the server: ``objects`` Pods or ConfigMaps in namespace
``bench`` (``hack/bench/objects.py``), served on loopback as

- ``GET /api/v1/namespaces/bench/<plural>`` (and the all-namespaces path):
  the whole list, or pages of ``limit`` items with ``continue`` tokens; list
  items carry no ``kind``/``apiVersion``, as kube-apiserver's lists of built-in
  types. ``Accept: ...;as=PartialObjectMetadataList;...`` serves
  ``PartialObjectMetadataList`` pages (metadata-only informers).
- ``?watch=true&sendInitialEvents=true``: a streaming list (KEP-3157): one
  ``ADDED`` per object, the ``BOOKMARK`` annotated ``k8s.io/initial-events-end``
  at the list's resourceVersion, then the watch below on the same stream.
  Under the path prefix ``/nostream`` the server answers 422 as a
  kube-apiserver without the WatchList feature, so a client given
  ``http://host:port/nostream`` as its host lists with pages.
- ``?watch=true``: held silent until ``GET /arm``, then ``events`` canned
  ``MODIFIED`` events (object ``n % objects``, a changed annotation), then
  idle, like a quiet watch. ``GET /disarm`` re-arms the gate for the next
  client.
- ``GET /stats``: how many lists, streaming lists and watches were served
  (so a benchmark can tell whether a client really streamed).

    python hack/bench/canned.py --kind pods --objects 10000 --events 20000

prints ``READY <port>`` once serving; stops when stdin closes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from objects import configmap, pod

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_CHUNK = 256 * 1024


try:  # a bench extra: serializing 300 MB of answers up front takes 4x less time
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    _loads: Callable[[bytes], Any] = orjson.loads
except ImportError:  # pragma: no cover - the same bytes, slower

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()

    _loads = json.loads


def _partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }


class Canned:
    """The serialized answers; built lazily per form (full, metadata-only)."""

    def __init__(self, kind: str, objects: int, events: int) -> None:
        make: Callable[..., dict[str, Any]] = pod if kind == "pods" else configmap
        self.kind = "Pod" if kind == "pods" else "ConfigMap"
        self.plural = kind
        self.objects = objects
        self.events = events
        self.list_rv = objects + 1
        self.items = [make(i, i + 1) for i in range(objects)]
        self._events = []
        for n in range(events):
            # object i at a later resourceVersion (a deep copy through JSON:
            # 5x cheaper than generating it again)
            obj = _loads(_dumps(self.items[n % objects]))
            obj["metadata"]["resourceVersion"] = str(self.list_rv + n + 1)
            obj["metadata"]["annotations"]["bench/seq"] = str(n)
            self._events.append(obj)
        self._cache: dict[tuple[str, Any], Any] = {}
        self._lock = threading.RLock()
        self.armed = threading.Event()
        self.shutdown = threading.Event()
        self.stats = {"lists": 0, "watch_lists": 0, "watches": 0, "rejected_watch_lists": 0}

    def _cached(self, key: tuple[str, Any], build: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = build()
            return self._cache[key]

    def _items(self, partial: bool) -> list[dict[str, Any]]:
        def build() -> list[dict[str, Any]]:
            out = []
            for obj in self.items:
                item = _partial(obj) if partial else dict(obj)
                item.pop("kind", None)
                item.pop("apiVersion", None)
                out.append(item)
            return out

        return self._cached(("items", partial), build)  # type: ignore[no-any-return]

    def page(self, limit: int, index: int, partial: bool) -> bytes:
        """Page ``index`` of the list in pages of ``limit`` (0: unpaged)."""

        def build() -> list[bytes]:
            items = self._items(partial)
            size = limit or len(items) or 1
            pages = []
            for n, start in enumerate(range(0, max(len(items), 1), size)):
                meta: dict[str, Any] = {"resourceVersion": str(self.list_rv)}
                if start + size < len(items):
                    meta["continue"] = str(n + 1)
                    meta["remainingItemCount"] = len(items) - start - size
                kind = "PartialObjectMetadataList" if partial else f"{self.kind}List"
                api = "meta.k8s.io/v1" if partial else "v1"
                doc = {"kind": kind, "apiVersion": api, "metadata": meta}
                doc["items"] = items[start : start + size]
                pages.append(_dumps(doc))
            return pages

        return self._cached(("pages", limit, partial), build)[index]  # type: ignore[no-any-return]

    def initial_events(self, partial: bool) -> bytes:
        def build() -> bytes:
            lines = []
            for obj in self.items:
                lines.append(_dumps({"type": "ADDED", "object": _partial(obj) if partial else obj}))
            bookmark = {
                "kind": "PartialObjectMetadata" if partial else self.kind,
                "apiVersion": "meta.k8s.io/v1" if partial else "v1",
                "metadata": {
                    "resourceVersion": str(self.list_rv),
                    "annotations": {INITIAL_EVENTS_END: "true"},
                },
            }
            lines.append(_dumps({"type": "BOOKMARK", "object": bookmark}))
            return b"\n".join(lines) + b"\n"

        return self._cached(("initial", partial), build)  # type: ignore[no-any-return]

    def watch_events(self, partial: bool) -> bytes:
        def build() -> bytes:
            lines = [
                _dumps({"type": "MODIFIED", "object": _partial(obj) if partial else obj})
                for obj in self._events
            ]
            return b"\n".join(lines) + b"\n" if lines else b""

        return self._cached(("events", partial), build)  # type: ignore[no-any-return]


def _status(code: int, reason: str, message: str) -> bytes:
    return _dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": {"group": "meta.k8s.io", "kind": "ListOptions"},
            "code": code,
        }
    )


def make_handler(canned: Canned) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _chunks(self, body: bytes) -> None:
            for off in range(0, len(body), _CHUNK):
                chunk = body[off : off + _CHUNK]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            path = url.path
            no_stream = path.startswith("/nostream/")
            if no_stream:
                path = path[len("/nostream") :]
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            partial = "as=PartialObjectMetadata" in (self.headers.get("Accept") or "")
            if path == "/arm":
                canned.armed.set()
                return self._send(200, b"{}")
            if path == "/disarm":
                canned.armed.clear()
                return self._send(200, b"{}")
            if path == "/stats":
                return self._send(200, _dumps(canned.stats))
            if not path.endswith("/" + canned.plural):
                return self._send(404, _status(404, "NotFound", f"{path} not found"))
            if query.get("watch") not in ("true", "1"):
                canned.stats["lists"] += 1
                limit = int(query.get("limit") or 0)
                index = int(query.get("continue") or 0)
                return self._send(200, canned.page(limit, index, partial))
            streaming = query.get("sendInitialEvents") == "true"
            if streaming and no_stream:
                canned.stats["rejected_watch_lists"] += 1
                message = (
                    'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
                    "sendInitialEvents is forbidden for watch unless the WatchList feature "
                    "gate is enabled"
                )
                return self._send(422, _status(422, "Invalid", message))
            canned.stats["watch_lists" if streaming else "watches"] += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with contextlib.suppress(OSError):
                if streaming:
                    self._chunks(canned.initial_events(partial))
                    self.wfile.flush()
                # The events wait for /arm, so a client is measured only once
                # its initial list has been processed.
                while not canned.armed.wait(0.5):
                    if canned.shutdown.is_set():
                        return
                self._chunks(canned.watch_events(partial))
                self.wfile.flush()
                canned.shutdown.wait(600)  # then stay open, idle, like a quiet watch
                self.wfile.write(b"0\r\n\r\n")

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("pods", "configmaps"), default="pods")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    canned = Canned(args.kind, args.objects, args.events)
    # Serialize the common forms before saying READY (the first client must
    # not pay for it).
    for partial in (False, True):
        canned.page(500, 0, partial)
        canned.initial_events(partial)
        canned.watch_events(partial)
    canned.page(0, 0, False)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(canned))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    sizes = {
        "list_bytes": len(canned.page(0, 0, False)),
        "event_bytes": len(canned.watch_events(False)),
    }
    print(f"READY {httpd.server_address[1]} {json.dumps(sizes)}", flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    canned.shutdown.set()
    canned.armed.set()
    httpd.shutdown()


if __name__ == "__main__":
    main()
