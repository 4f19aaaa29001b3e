"""Benchmark: the embedded API server's garbage collector under many owned objects.

Over HTTP against an in-process ``APIServer``:

1. fill: create ``--owners`` ReplicaSets, then ``--pods`` Pods spread over them
   (each Pod owned by one ReplicaSet), from ``--threads`` client threads with
   keep-alive connections; wall time and Pods/s.
2. per-write cost with the server full: ``--writes`` sequential label patches
   of owned Pods (every one is a write to an owned object, which woke the
   old collector) and as many creates of unowned ConfigMaps; mean latency.
3. collect: delete every owner (Background) and time until the last Pod is
   gone.

Process CPU (``time.process_time``: client, server and collector threads
together) is printed for each phase. ``--compare REV`` first runs the same
workload with ``gc.py`` as of git revision ``REV`` swapped in (its class is
loaded from ``git show REV:pycontroller/testing/apiserver/registry/gc.py``), then with
the working tree's collector, and prints the ratios: measured side by side in
one run, so that a shared machine's drift cancels out as far as it can.

    .venv/bin/python hack/bench/bench_apiserver_gc.py [--pods N] [--owners N]
        [--threads N] [--writes N] [--compare REV]
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pycontroller.testing import APIServer

NS = "bench"
ROOT = Path(__file__).resolve().parents[2]


class Conn:
    """One keep-alive connection; ``call`` raises on an unexpected status."""

    def __init__(self, url: str) -> None:
        u = urlsplit(url)
        self._c = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=60)

    def call(
        self, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        self._c.request(method, path, body=data, headers={"Content-Type": ctype})
        resp = self._c.getresponse()
        raw = resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status} {raw[:300]!r}")
        return json.loads(raw) if raw else None

    def close(self) -> None:
        self._c.close()


def replicaset(i: int) -> dict[str, Any]:
    labels = {"app": f"rs-{i}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"rs-{i}", "labels": labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }


def pod(i: int, owner: dict[str, Any]) -> dict[str, Any]:
    om = owner["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{om['name']}-{i:06d}",
            "labels": dict(om["labels"]),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": om["name"],
                    "uid": om["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80}],
                    "env": [{"name": "N", "value": str(i)}],
                }
            ]
        },
    }


def legacy_gc_class(rev: str) -> Any:
    src = subprocess.run(
        ["git", "show", f"{rev}:pycontroller/testing/apiserver/registry/gc.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "legacy_gc.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("legacy_gc", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.GarbageCollector


def make_server(gc_class: Any | None) -> APIServer:
    server = APIServer()
    if gc_class is not None:
        # Swap the collector before start: unhook the current one's listener.
        storage = server.storage
        storage._listeners = [cb for cb in storage._listeners if cb != server.gc._on_event]
        server.gc = gc_class(server.rest)
    return server.start()


def pods_left(server: APIServer) -> int:
    # The bucket's size (a private read): cheap enough to poll every 20 ms.
    return len(server.storage._objects.get(("", "pods"), {}))


def run(label: str, gc_class: Any | None, args: argparse.Namespace) -> dict[str, float]:
    server = make_server(gc_class)
    out: dict[str, float] = {}
    try:
        c = Conn(server.url)
        c.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        owners = [
            c.call("POST", f"/apis/apps/v1/namespaces/{NS}/replicasets", replicaset(i))
            for i in range(args.owners)
        ]

        # 1. fill
        errors: list[BaseException] = []

        def fill(t: int) -> None:
            conn = Conn(server.url)
            try:
                for i in range(t, args.pods, args.threads):
                    conn.call(
                        "POST", f"/api/v1/namespaces/{NS}/pods", pod(i, owners[i % len(owners)])
                    )
            except BaseException as err:  # reported below
                errors.append(err)
            finally:
                conn.close()

        cpu0, t0 = time.process_time(), time.perf_counter()
        threads = [threading.Thread(target=fill, args=(t,)) for t in range(args.threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        out["fill_s"] = time.perf_counter() - t0
        out["fill_cpu_s"] = time.process_time() - cpu0
        if errors:
            raise errors[0]

        # 2. per-write cost with the server full
        cpu0, t0 = time.process_time(), time.perf_counter()
        for i in range(args.writes):
            name = f"{owners[i % len(owners)]['metadata']['name']}-{i:06d}"
            c.call(
                "PATCH",
                f"/api/v1/namespaces/{NS}/pods/{name}",
                {"metadata": {"labels": {"touched": str(i)}}},
                "application/merge-patch+json",
            )
        out["owned_patch_ms"] = (time.perf_counter() - t0) / args.writes * 1e3
        out["owned_patch_cpu_ms"] = (time.process_time() - cpu0) / args.writes * 1e3
        cpu0, t0 = time.process_time(), time.perf_counter()
        for i in range(args.writes):
            c.call("POST", f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": f"cm-{i}"}})
        out["unowned_create_ms"] = (time.perf_counter() - t0) / args.writes * 1e3
        out["unowned_create_cpu_ms"] = (time.process_time() - cpu0) / args.writes * 1e3

        # 3. collect
        cpu0, t0 = time.process_time(), time.perf_counter()
        for o in owners:
            c.call("DELETE", f"/apis/apps/v1/namespaces/{NS}/replicasets/{o['metadata']['name']}")
        deadline = time.monotonic() + 300
        while pods_left(server) and time.monotonic() < deadline:
            time.sleep(0.02)
        out["collect_s"] = time.perf_counter() - t0
        out["collect_cpu_s"] = time.process_time() - cpu0
        left = pods_left(server)
        if left:
            raise RuntimeError(f"{label}: {left} Pods left after 300 s")
        c.close()
    finally:
        server.stop()
    print(
        f"{label:>10}: fill {args.pods} Pods {out['fill_s']:7.2f} s "
        f"({args.pods / out['fill_s']:6.0f}/s, cpu {out['fill_cpu_s']:.2f} s) | "
        f"owned PATCH {out['owned_patch_ms']:6.2f} ms | "
        f"unowned POST {out['unowned_create_ms']:6.2f} ms"
        f" | collect {out['collect_s']:6.2f} s (cpu {out['collect_cpu_s']:.2f} s)",
        flush=True,
    )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--owners", type=int, default=100)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--compare", metavar="REV", help="also run gc.py as of this git revision")
    args = ap.parse_args()
    results: dict[str, dict[str, float]] = {}
    if args.compare:
        results["before"] = run("before", legacy_gc_class(args.compare), args)
    results["after"] = run("after", None, args)
    if args.compare:
        b, a = results["before"], results["after"]
        print("ratios before/after (higher = the working tree is faster):")
        for k in a:
            print(f"  {k:>22}: {b[k] / a[k]:7.1f}x  ({b[k]:.3f} -> {a[k]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
