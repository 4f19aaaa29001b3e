"""Bad input to the library, as a hostile or broken server (or caller) would give it.

Watch streams carrying undecodable, truncated or non-object lines, unknown event
types and objects without metadata; bad label selectors; raising event handlers.
In every case: a clear error, the informer keeps running, and nothing is lost
from the cache.

The watch tests serve list and watch over real HTTP from a scripted server on
loopback (the embedded APIServer only ever writes well-formed lines), and read
them with ResourceClient -> WatchStream -> Reflector -> SharedIndexInformer.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client import REGISTRY

from pycontroller.cache import (
    Indexer,
    Lister,
    ListWatch,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from pycontroller.client import ResourceClient, TokenBucketRateLimiter, set_rate_limiter
from pycontroller.testing import wait_for


def cm(name: str, rv: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)},
        "data": {"v": str(rv)},
    }


def line(etype: str, obj: Any) -> bytes:
    return json.dumps({"type": etype, "object": obj}).encode() + b"\n"


class ScriptedAPI:
    """Serves one list, and per watch ``resourceVersion`` a script of chunks.

    A watch whose script ends with ``HOLD`` stays open (idle) until the test ends;
    otherwise the stream is ended after its chunks (the connection closes, possibly
    mid-line). A watch from an unscripted resourceVersion is held open, empty.
    """

    HOLD = object()

    def __init__(self, items: list[dict[str, Any]], list_rv: int) -> None:
        self.list_body = json.dumps(
            {
                "kind": "ConfigMapList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(list_rv)},
                "items": items,
            }
        ).encode()
        self.watches: dict[str, list[Any]] = {}
        self.watch_rvs: list[str] = []
        self.lists = 0
        self.lock = threading.Lock()
        self.done = threading.Event()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if "watch=true" not in self.path:
                    with api.lock:
                        api.lists += 1
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(api.list_body)))
                    self.end_headers()
                    self.wfile.write(api.list_body)
                    return
                m = re.search(r"resourceVersion=(\d*)", self.path)
                rv = m.group(1) if m else ""
                with api.lock:
                    api.watch_rvs.append(rv)
                    script = api.watches.pop(rv, [ScriptedAPI.HOLD])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in script:
                    if chunk is ScriptedAPI.HOLD:
                        api.done.wait(30)
                        break
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

        return Handler


@pytest.fixture
def scripted() -> Iterator[Callable[[list[dict[str, Any]], int], tuple[ScriptedAPI, Any]]]:
    """``make(items, list_rv) -> (ScriptedAPI, ApiClient)``; servers stop at teardown."""
    servers: list[ThreadingHTTPServer] = []
    holder: list[ScriptedAPI] = []

    def make(items: list[dict[str, Any]], list_rv: int) -> tuple[ScriptedAPI, k8s.ApiClient]:
        api = ScriptedAPI(items, list_rv)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(httpd)
        holder.append(api)
        cfg = k8s.Configuration()
        cfg.host = f"http://127.0.0.1:{httpd.server_address[1]}"
        api_client = k8s.ApiClient(cfg)
        set_rate_limiter(api_client, TokenBucketRateLimiter(qps=0))
        return api, api_client

    yield make
    for api in holder:
        api.done.set()
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def informer_on(api_client: k8s.ApiClient, name: str) -> SharedIndexInformer:
    client = ResourceClient(api_client, "", "v1", "configmaps")
    # The scripted server serves LIST + watch only (no streamed lists).
    return SharedIndexInformer(
        ListWatch.from_client(client, namespace="default"), name=name, use_watch_list=False
    )


def decode_errors(name: str) -> float:
    value = REGISTRY.get_sample_value("reflector_watch_decode_errors_total", {"name": name})
    return 0.0 if value is None else value


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    ev = threading.Event()
    yield ev
    ev.set()


def cached(inf: SharedIndexInformer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in inf.get_store().list()}


# -------------------------------------------------------------------------- watch lines


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(b"<html>502 Bad Gateway</html>\n", id="not-json"),
        pytest.param(line("ADDED", cm("c", 7))[:40] + b"\n", id="truncated-line"),
        pytest.param(b"[1, 2, 3]\n", id="json-not-an-object"),
        pytest.param(b"\xff\xfe\x00garbage\n", id="not-utf8"),
        # client-go's watch Decoder: "got invalid watch event type".
        pytest.param(line("FROBNICATED", cm("c", 7)), id="unknown-type"),
        pytest.param(json.dumps({"object": cm("c", 7)}).encode() + b"\n", id="no-type"),
    ],
)
def test_undecodable_watch_line_loses_no_event(
    scripted: Any, stop: threading.Event, bad: bytes
) -> None:
    """The line standing for c@7 is garbage: the watch ends there, the informer
    re-watches from rv 6 (the last it applied) and the server sends c@7 again."""
    api, api_client = scripted([cm("a", 5)], 5)
    api.watches["5"] = [line("ADDED", cm("b", 6)), bad, line("ADDED", cm("d", 8)), api.HOLD]
    api.watches["6"] = [line("ADDED", cm("c", 7)), line("ADDED", cm("d", 8)), api.HOLD]
    name = f"input-decode-{bad[:6].hex()}"
    before = decode_errors(name)
    inf = informer_on(api_client, name)
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    wait_for(lambda: cached(inf) == {"a": "5", "b": "6", "c": "7", "d": "8"}, timeout=15)
    assert api.watch_rvs == ["5", "6"]
    assert api.lists == 1  # resumed, not relisted
    assert decode_errors(name) == before + 1
    assert inf.last_sync_resource_version() == "8"


def test_watch_cut_mid_event_resumes_from_the_last_applied_rv(
    scripted: Any, stop: threading.Event
) -> None:
    """The connection drops in the middle of c@7 (client-go's unexpected EOF): a
    plain end of watch, resumed from rv 6; not a decode error."""
    api, api_client = scripted([cm("a", 5)], 5)
    api.watches["5"] = [line("ADDED", cm("b", 6)), line("ADDED", cm("c", 7))[:30]]
    api.watches["6"] = [line("ADDED", cm("c", 7)), api.HOLD]
    before = decode_errors("input-eof")
    inf = informer_on(api_client, "input-eof")
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    wait_for(lambda: cached(inf) == {"a": "5", "b": "6", "c": "7"}, timeout=15)
    assert api.watch_rvs[:2] == ["5", "6"]
    assert api.lists == 1
    assert decode_errors("input-eof") == before


def test_events_without_a_usable_object_are_logged_and_skipped(
    scripted: Any, stop: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    api, api_client = scripted([cm("a", 5)], 5)
    api.watches["5"] = [
        line("ADDED", cm("b", 6)),
        line("ADDED", {"kind": "ConfigMap", "data": {"v": "?"}}),
        line("MODIFIED", "not an object"),
        line("ADDED", cm("c", 8)),
        api.HOLD,
    ]
    caplog.set_level("ERROR", logger="pycontroller.cache.reflector")
    inf = informer_on(api_client, "input-odd")
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=10)
    wait_for(lambda: cached(inf) == {"a": "5", "b": "6", "c": "8"}, timeout=15)
    assert api.watch_rvs == ["5"]  # the one watch went on
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 2, errors
    assert all("input-odd" in e for e in errors)
    assert "ADDED" in errors[0] and "no metadata" in errors[0]
    assert "'MODIFIED'" in errors[1]


# -------------------------------------------------------------------------- selectors


BAD_SELECTORS = [
    "x in (1",
    "a=b=c",
    "!",
    "x notin",
    "=v",
    "a,,b",
    "bad key!=1",
    "x>a",
    "x=1,",
    "a=" + "v" * 64,
]


@pytest.mark.parametrize("selector", BAD_SELECTORS)
def test_bad_label_selector_is_a_value_error_naming_it(selector: str) -> None:
    indexer = Indexer()
    indexer.add({"metadata": {"name": "a", "namespace": "ns", "labels": {"x": "1"}}})
    lister = Lister(indexer)
    with pytest.raises(ValueError) as info:
        lister.list(selector)
    assert repr(selector) in str(info.value)
    with pytest.raises(ValueError) as info:
        lister.namespaced("ns").list(selector)
    assert repr(selector) in str(info.value)


@pytest.mark.parametrize("selector", [{"x": 1}, {"x y": "1"}, 5, ["x=1"]])
def test_bad_selector_types_and_keys_are_value_errors(selector: Any) -> None:
    lister = Lister(Indexer())
    with pytest.raises(ValueError):
        lister.list(selector)


# -------------------------------------------------------------------------- handlers


def test_raising_handlers_never_stop_the_informer_or_other_handlers(
    scripted: Any, stop: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    api, api_client = scripted([cm("a", 5)], 5)
    api.watches["5"] = [line("ADDED", cm("b", 6)), line("MODIFIED", cm("a", 7)), api.HOLD]
    inf = informer_on(api_client, "input-raising")

    def boom(*args: Any) -> None:
        raise RuntimeError("handler bug")

    class Broken:
        """Not even a complete handler: on_update and on_delete are missing."""

        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            raise KeyError("metadata")

    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def record(kind: str) -> Any:
        def fn(obj: Any, *rest: Any) -> None:
            with lock:
                seen.append((kind, obj["metadata"]["resourceVersion"]))

        return fn

    caplog.set_level("ERROR", logger="pycontroller.cache.shared_informer")
    inf.add_event_handler(ResourceEventHandlerFuncs(boom, boom, boom))
    with pytest.raises(TypeError, match="on_update, on_delete"):  # refused, not a dead thread
        inf.add_event_handler(Broken())  # type: ignore[arg-type]
    reg = inf.add_event_handler(
        ResourceEventHandlerFuncs(record("add"), lambda old, new: record("update")(new))
    )
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, reg.has_synced, timeout=10)
    wait_for(lambda: len(seen) == 3, timeout=15)
    with lock:
        assert seen[0] == ("add", "5")
        assert sorted(seen[1:]) == [("add", "6"), ("update", "7")]
    assert cached(inf) == {"a": "7", "b": "6"}
    assert sum("handler bug" in (r.exc_text or "") for r in caplog.records) >= 3
    # A handler added now still gets a replay of the whole cache.
    late: list[str] = []
    inf.add_event_handler(ResourceEventHandlerFuncs(lambda o: late.append(o["metadata"]["name"])))
    wait_for(lambda: sorted(late) == ["a", "b"])
