"""Streaming list (WatchList) versus paged LIST: server peak memory and client sync time.

    .venv/bin/python hack/bench/watchlist.py [--objects 30000] [--rounds 3]

The embedded API server runs in a child process filled with ``--objects``
ConfigMaps of about 1 KB in one namespace. The parent syncs a
``SharedIndexInformer`` on them, once with ``use_watch_list=False`` (paged
LIST, 500 per page, then watch) and once with ``use_watch_list=True`` (one
watch with ``sendInitialEvents=true``), alternating, ``--rounds`` times each.

- Client time: from ``informer.start`` to ``has_synced`` (the cache holds every
  object), server without tracemalloc; medians.
- Server peak memory: in a second child with ``tracemalloc`` started after the
  fill; before each sync the peak is reset, after it the peak above the
  memory in use at the reset is read (bytes the server allocated at once to
  serve that sync, Python allocations only); medians.

Prints a Markdown table and a JSON line. Not a test: figures depend on the
machine; the ratio is what matters (issue 12's target: streaming <= 0.5x of
paged at 30k).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NAMESPACE = "bench"


def configmap(i: int) -> dict[str, Any]:
    """About 1 KB of JSON once stored (metadata included)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:06d}",
            "namespace": NAMESPACE,
            "labels": {"app": f"app-{i % 50}", "tier": "bench"},
            "annotations": {"bench/index": str(i)},
        },
        "data": {"payload": f"{i:08d}" * 90, "key": f"value-{i}"},
    }


# --------------------------------------------------------------------------- child: server


def serve(objects: int, trace: bool) -> None:
    """Run a filled server; answer commands on stdin (one per line) on stdout."""
    import tracemalloc

    from pycontroller.testing import APIServer
    from pycontroller.testing.apiserver.registry.rest import WriteOptions

    server = APIServer(history_size=1000)
    # The paged LIST compared is etcd's (--watch-cache=false): kube's watch
    # cache answers an informer's list at resourceVersion 0 whole, in one page.
    server.watch_cache = False
    rt = server.registry.get("", "v1", "namespaces")
    assert rt is not None
    server.rest.create(rt, None, {"metadata": {"name": NAMESPACE}}, WriteOptions())
    cms = server.registry.get("", "v1", "configmaps")
    assert cms is not None
    for i in range(objects):
        server.rest.create(cms, NAMESPACE, configmap(i), WriteOptions())
    server.start()
    baseline = 0
    if trace:
        tracemalloc.start()
    print(json.dumps({"url": server.url}), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "reset":
            if trace:
                tracemalloc.reset_peak()
                baseline = tracemalloc.get_traced_memory()[0]
            print(json.dumps({"ok": True}), flush=True)
        elif cmd == "peak":
            peak = tracemalloc.get_traced_memory()[1] - baseline if trace else 0
            print(json.dumps({"peak": peak}), flush=True)
        elif cmd == "quit":
            break
    server.stop()


class Child:
    def __init__(self, objects: int, trace: bool) -> None:
        args = [sys.executable, __file__, "--serve", "--objects", str(objects)]
        if trace:
            args.append("--trace")
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        self.url = self.ask(None)["url"]

    def ask(self, cmd: str | None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if cmd is not None:
            self.proc.stdin.write(cmd + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server process ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        try:
            self.ask_quit()
        finally:
            self.proc.wait(30)

    def ask_quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()


# --------------------------------------------------------------------------- parent: client


def sync_once(url: str, use_watch_list: bool, objects: int) -> float:
    from kubernetes import client as k8s

    from pycontroller.cache import ListWatch, SharedIndexInformer
    from pycontroller.client import ResourceClient, TokenBucketRateLimiter

    cfg = k8s.Configuration()
    cfg.host = url
    api = k8s.ApiClient(cfg)
    rc = ResourceClient(api, "", "v1", "configmaps", rate_limiter=TokenBucketRateLimiter(qps=0))
    informer = SharedIndexInformer(
        ListWatch.from_client(rc, namespace=NAMESPACE),
        name=f"bench-{'stream' if use_watch_list else 'paged'}",
        use_watch_list=use_watch_list,
    )
    stop = threading.Event()
    t0 = time.perf_counter()
    thread = informer.start(stop)
    while not informer.has_synced():
        time.sleep(0.001)
    elapsed = time.perf_counter() - t0
    assert len(informer.get_store().list_keys()) == objects
    stop.set()
    thread.join(30)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.objects, args.trace)
        return

    modes = {"paged LIST": False, "streaming": True}
    times: dict[str, list[float]] = {m: [] for m in modes}
    peaks: dict[str, list[int]] = {m: [] for m in modes}

    server = Child(args.objects, trace=False)
    try:
        for _ in range(args.rounds):
            for mode, use in modes.items():
                times[mode].append(sync_once(server.url, use, args.objects))
    finally:
        server.close()

    server = Child(args.objects, trace=True)
    try:
        for _ in range(args.rounds):
            for mode, use in modes.items():
                server.ask("reset")
                sync_once(server.url, use, args.objects)
                peaks[mode].append(int(server.ask("peak")["peak"]))
    finally:
        server.close()

    t = {m: statistics.median(v) for m, v in times.items()}
    p = {m: statistics.median(v) for m, v in peaks.items()}
    print(f"\n{args.objects} ConfigMaps of ~1 KB, medians of {args.rounds} rounds\n")
    print("| | client sync time | server peak memory (tracemalloc) |")
    print("|---|---|---|")
    for m in modes:
        print(f"| {m} | {t[m]:.2f} s | {p[m] / 2**20:.2f} MiB |")
    ratio_t = t["streaming"] / t["paged LIST"]
    ratio_p = p["streaming"] / p["paged LIST"] if p["paged LIST"] else float("nan")
    print(f"| streaming / paged | {ratio_t:.2f}x | {ratio_p:.2f}x |")
    print(
        json.dumps(
            {
                "objects": args.objects,
                "rounds": args.rounds,
                "time_s": times,
                "peak_bytes": peaks,
                "ratio_time": ratio_t,
                "ratio_peak": ratio_p,
            }
        )
    )


if __name__ == "__main__":
    main()
