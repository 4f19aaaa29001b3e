"""Benchmark: CPU of the Balancer controller while a 1 s resync finds nothing to do.

The embedded API server runs in a subprocess (``python -m
pycontroller.testing.apiserver``), so the CPU measured here is the
controller's alone. ``--balancers`` Balancers with three backends each are
created; ``BalancerController`` (resync 1 s, ``--workers`` workers, no client
rate limit, Events to a ``FakeRecorder`` so that no Event backlog drains
during the measurement) converges them; then, idle, for ``--seconds``:

- CPU: ``time.process_time()`` of this process over the window, as a
  fraction of one core (target: under 20%);
- syncs per second (every Balancer should be synced once a second) and CPU
  per sync;
- writes the server saw in the window (should be zero).

Then a direct profile of the no-op path: ``Reconciler.sync`` of every key in
a loop on this thread (``--profile`` prints its top cProfile entries).

``--compare REV`` first runs the same in a subprocess with ``controllers/``
as of git revision ``REV`` (extracted with ``git archive`` and put first on
``PYTHONPATH``), then with the working tree's, and prints both: side by side
in one run, so that a shared machine's drift cancels out as far as it can.

    .venv/bin/python hack/bench/bench_balancer_resync.py [--balancers N]
        [--workers N] [--seconds S] [--profile] [--compare REV]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import re
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "crds" / "balancer.yaml"
NS = "default"


def balancer(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "exposer.hliangzhao.io/v1alpha1",
        "kind": "Balancer",
        "metadata": {"name": f"b{i:04d}", "namespace": NS},
        "spec": {
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 5678}],
            "selector": {"app": f"app{i}"},
            "backends": [
                {"name": f"v{j}", "weight": w, "selector": {"version": f"v{j}"}}
                for j, w in ((1, 40), (2, 20), (3, 40))
            ],
        },
    }


def start_server(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycontroller.testing.apiserver",
            "--port",
            "0",
            "--crd",
            str(CRD),
            "--kubeconfig",
            str(tmp / "kubeconfig"),
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"listening on (\S+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, m.group(1)


def commits(url: str) -> int:
    """The server's resourceVersion: one per committed write, of any kind."""
    import urllib.request

    req = urllib.request.Request(
        f"{url}/api/v1/namespaces?limit=1", headers={"Authorization": "Bearer embedded"}
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return int(json.loads(resp.read())["metadata"]["resourceVersion"])


def run(args: argparse.Namespace) -> dict[str, float]:
    from kubernetes import client as k8s

    from controllers.balancer import names, reconcile
    from controllers.balancer.compat import BalancerController
    from pycontroller.client import ResourceClient, TokenBucketRateLimiter, set_rate_limiter
    from pycontroller.record import FakeRecorder

    tmp = Path(tempfile.mkdtemp())
    proc, url = start_server(tmp)
    stop = threading.Event()
    try:
        conf = k8s.Configuration()
        conf.host = url
        conf.api_key = {"authorization": "embedded"}
        conf.api_key_prefix = {"authorization": "Bearer"}
        api = k8s.ApiClient(conf)
        set_rate_limiter(api, TokenBucketRateLimiter(0, 1))  # no client-side limit
        balancers = ResourceClient(api, names.GROUP, names.VERSION, names.PLURAL)
        for i in range(args.balancers):
            balancers.create(balancer(i), namespace=NS)

        syncs = [0]
        captured: list[Any] = []
        real_sync = reconcile.Reconciler.sync

        def counting_sync(self: Any, key: str) -> Any:
            if not captured:
                captured.append(self)
            syncs[0] += 1
            return real_sync(self, key)

        reconcile.Reconciler.sync = counting_sync  # type: ignore[method-assign]
        ctl = BalancerController(api, resync_period=1.0, recorder=FakeRecorder())
        t = threading.Thread(target=ctl.run, args=(args.workers, stop), daemon=True)
        t0 = time.perf_counter()
        t.start()

        def converged() -> bool:
            items = balancers.list(namespace=NS)["items"]
            return len(items) == args.balancers and all(
                (b.get("status") or {}).get("observedGeneration") == b["metadata"]["generation"]
                for b in items
            )

        deadline = time.monotonic() + 300
        while not converged():
            if time.monotonic() > deadline:
                raise RuntimeError("not converged after 300 s")
            time.sleep(0.5)
        converge_s = time.perf_counter() - t0
        time.sleep(3)  # let the last watch events and first resyncs pass

        rv0 = commits(url)
        print(
            f"converged in {converge_s:.1f} s; measuring {args.seconds:.0f} s of idle resyncs "
            f"(pid {os.getpid()})",
            file=sys.stderr,
            flush=True,
        )
        s0, cpu0, w0 = syncs[0], time.process_time(), time.perf_counter()
        time.sleep(args.seconds)
        s1, cpu1, w1 = syncs[0], time.process_time(), time.perf_counter()
        writes = commits(url) - rv0
        wall = w1 - w0
        out = {
            "converge_s": converge_s,
            "cpu_core": (cpu1 - cpu0) / wall,
            "syncs_per_s": (s1 - s0) / wall,
            "cpu_ms_per_sync": (cpu1 - cpu0) / max(1, s1 - s0) * 1e3,
            "writes": float(writes),
        }

        # The no-op path alone, on this thread (the workers keep resyncing meanwhile).
        rec = captured[0]
        keys = [f"{NS}/b{i:04d}" for i in range(args.balancers)]
        rounds = 3
        prof = cProfile.Profile() if args.profile else None
        c0 = time.thread_time()
        if prof is not None:
            prof.enable()
        for _ in range(rounds):
            for key in keys:
                real_sync(rec, key)
        if prof is not None:
            prof.disable()
        out["noop_sync_ms"] = (time.thread_time() - c0) / (rounds * len(keys)) * 1e3
        if prof is not None:
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(30)
            print(buf.getvalue(), file=sys.stderr)
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=10)
    return out


def show(label: str, r: dict[str, float], args: argparse.Namespace) -> None:
    print(
        f"{label:>7}: {args.balancers} Balancers converged in {r['converge_s']:.1f} s | idle 1 s "
        f"resync: {r['cpu_core'] * 100:5.1f}% of a core, {r['syncs_per_s']:6.1f} syncs/s, "
        f"{r['cpu_ms_per_sync']:.2f} ms CPU/sync (all threads), writes {r['writes']:.0f} | "
        f"no-op Reconciler.sync alone {r['noop_sync_ms']:.3f} ms",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--balancers", type=int, default=500)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--compare", metavar="REV", help="also run controllers/ as of this revision")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:  # the --compare child: one JSON line
        print(json.dumps(run(args)))
        return 0
    results: dict[str, dict[str, float]] = {}
    if args.compare:
        old = Path(tempfile.mkdtemp())
        archive = subprocess.run(
            ["git", "archive", "--format=tar", args.compare, "controllers"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(old, filter="data")
        argv = [sys.executable, __file__, "--json", f"--balancers={args.balancers}"]
        argv += [f"--workers={args.workers}", f"--seconds={args.seconds}"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(old), str(ROOT)])}
        child = subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
        results["before"] = json.loads(child.stdout.strip().splitlines()[-1])
        show("before", results["before"], args)
    results["after"] = run(args)
    show("after", results["after"], args)
    if args.compare:
        b, a = results["before"], results["after"]
        print("ratios before/after:")
        for k in ("cpu_core", "cpu_ms_per_sync", "noop_sync_ms"):
            print(f"  {k:>16}: {b[k] / a[k]:6.1f}x  ({b[k]:.4f} -> {a[k]:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
