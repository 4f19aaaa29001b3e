"""Soak: 50 concurrent watchers and 5 writers for 20 seconds. Every watcher
must see every event, in resourceVersion order, with no gaps; the server keeps
answering throughout."""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from pycontroller.testing import APIServer

CM = "/api/v1/namespaces/default/configmaps"
WATCHERS = 50
WRITERS = 5
DURATION = 20.0


class Watch(threading.Thread):
    def __init__(self, server: APIServer, since: int) -> None:
        super().__init__(daemon=True)
        u = urlsplit(server.url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        self.conn.request("GET", f"{CM}?watch=true&resourceVersion={since}")
        self.sock = self.conn.sock
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200
        self.rvs: list[int] = []
        self.types: dict[str, int] = {}
        self.error: BaseException | None = None
        self.closing = False

    def run(self) -> None:
        try:
            while True:
                line = self.resp.readline()
                if not line:
                    return
                ev = json.loads(line)
                self.rvs.append(int(ev["object"]["metadata"]["resourceVersion"]))
                self.types[ev["type"]] = self.types.get(ev["type"], 0) + 1
        except (OSError, ValueError, http.client.HTTPException) as err:
            if not self.closing:
                self.error = err

    def close(self) -> None:
        self.closing = True
        with contextlib.suppress(OSError):
            if self.sock is not None:
                self.sock.shutdown(socket.SHUT_RDWR)
        self.join(5)
        self.conn.close()


def writer(server: APIServer, idx: int, stop: threading.Event, errors: list[str]) -> int:
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    rnd = random.Random(idx)
    live: list[str] = []
    n = 0
    seq = 0

    def call(method: str, path: str, body: Any, ctype: str = "application/json") -> int:
        conn.request(method, path, body=json.dumps(body).encode(), headers={"Content-Type": ctype})
        resp = conn.getresponse()
        resp.read()
        return resp.status

    while not stop.is_set():
        op = rnd.random()
        if not live or op < 0.4:
            name = f"w{idx}-{seq}"
            seq += 1
            status = call("POST", CM, {"metadata": {"name": name}, "data": {"v": "0"}})
            if status == 201:
                live.append(name)
        elif op < 0.85:
            name = rnd.choice(live)
            status = call(
                "PATCH",
                f"{CM}/{name}",
                {"data": {"v": str(n)}},
                "application/merge-patch+json",
            )
        else:
            name = live.pop(rnd.randrange(len(live)))
            status = call("DELETE", f"{CM}/{name}", {})
        if status >= 300:
            errors.append(f"{idx}: {status}")
        n += 1
    conn.close()
    return n


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_soak_many_watchers_many_writers(apiserver: APIServer) -> None:
    start_rv = apiserver.resource_version
    watchers = [Watch(apiserver, start_rv) for _ in range(WATCHERS)]
    for w in watchers:
        w.start()
    stop = threading.Event()
    errors: list[str] = []
    counts = [0] * WRITERS

    def run_writer(i: int) -> None:
        counts[i] = writer(apiserver, i, stop, errors)

    threads = [threading.Thread(target=run_writer, args=(i,), daemon=True) for i in range(WRITERS)]
    for t in threads:
        t.start()
    # The server keeps answering reads during the soak.
    u = urlsplit(apiserver.url)
    deadline = time.monotonic() + DURATION
    reads = 0
    while time.monotonic() < deadline:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        conn.request("GET", f"{CM}?limit=5")
        resp = conn.getresponse()
        assert resp.status == 200
        resp.read()
        conn.close()
        reads += 1
        time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors[:10]
    final_rv = apiserver.resource_version
    expected = list(range(start_rv + 1, final_rv + 1))
    assert len(expected) == sum(counts) > 200
    drain_deadline = time.monotonic() + 60
    while time.monotonic() < drain_deadline:
        if all(len(w.rvs) >= len(expected) or w.error for w in watchers):
            break
        time.sleep(0.05)
    for w in watchers:
        w.close()
    for i, w in enumerate(watchers):
        assert w.error is None, f"watcher {i}: {w.error!r}"
        mismatch = next(
            (j for j, (a, b) in enumerate(zip(w.rvs, expected, strict=False)) if a != b), None
        )
        assert (
            w.rvs == expected
        ), f"watcher {i} saw {len(w.rvs)} of {len(expected)} events (first mismatch at {mismatch})"
    assert reads >= 10
