"""Benchmark: the Balancer controller at scale, and the same reconcile written with kopf.

Each run starts a fresh embedded APIServer (in this process, with the
Balancer CRD; no simulations, so Deployments never become available and a
converged Balancer's status is written once), starts the controller as a
subprocess against it, waits until its watches are open, then creates
``--balancers`` Balancers (3 backends each: ``crds/samples/balancer.yaml``'s
spec) at once, in process (so the server's ``request_log`` holds only the
controller's requests), and measures:

- time to converge: every Balancer has ``status.observedGeneration`` equal
  to its generation and ``Reconciled=True``, and its 6 children (3 backend
  Services, ConfigMap, Deployment, front Service) exist;
- requests by verb and resource from the server's ``request_log`` (target:
  exactly one create per child and one status write per Balancer; Events
  counted apart, all of them: the run waits until the controller has written
  nothing for 2 s, ``drained_s`` after the creates);
- idle (pycontroller runs only, ``--idle`` seconds after convergence, with
  ``--resync-period 1``): writes (target zero) and the controller process's
  CPU (``/proc/<pid>/stat`` user+system over wall time; target < 20% of a
  core).

Runs: ``python -m controllers.balancer --workers 4 --resync-period 1`` with
``--kube-api-qps 200`` and without a client-side limit (``ours-unlimited``:
``--kube-api-qps -1``, as kopf, which has none; the comparison with kopf uses
this run), then ``kopf_balancer.py`` (kopf with 4 workers). ``ours-default``
(the default limit, 20 requests/s: about 3 minutes, bound by the limit
alone) runs only when asked for with ``--runs``: no target needs it, and it
would cost ``make bench`` a sixth of its 20 minutes.

    .venv/bin/python hack/bench/bench_balancer.py [--quick] [--balancers N] [--idle S]
        [--runs ours-200,ours-unlimited,kopf[,ours-default]] [--out PATH]
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from controllers.balancer import names
from pycontroller.testing import APIServer
from pycontroller.testing.apiserver.registry.rest import WriteOptions
from pycontroller.testing.apiserver.server import WRITE_METHODS, resource_of

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NAMESPACE = "bench"
CHILDREN = {"services": 4, "configmaps": 1, "deployments": 1}  # per Balancer
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def controller_command(run: str, kubeconfig: str, workers: int) -> list[str]:
    if run == "kopf":
        return [sys.executable, str(HERE / "kopf_balancer.py"), "--kubeconfig", kubeconfig]
    qps = run.split("-", 1)[1]
    if qps == "unlimited":  # as kopf, which has no client-side limit: qps <= 0 disables it
        qps = "-1"
    cmd = [sys.executable, "-m", "controllers.balancer", "--kubeconfig", kubeconfig]
    cmd += ["--metrics-bind-address", "0", "--health-probe-bind-address", "0"]
    cmd += ["--workers", str(workers), "--resync-period", "1", "--log-level", "warning"]
    if qps != "default":
        cmd += ["--kube-api-qps", qps]
    return cmd


def owned_children(server: APIServer) -> dict[str, int]:
    counts = {}
    for plural in CHILDREN:
        group = "apps" if plural == "deployments" else ""
        counts[plural] = sum(
            1
            for obj in server.storage.items((group, plural), NAMESPACE)
            if any(
                ref.get("kind") == names.KIND for ref in obj["metadata"].get("ownerReferences", [])
            )
        )
    return counts


def converged(server: APIServer, n: int) -> bool:
    done = 0
    for b in server.storage.items((names.GROUP, names.PLURAL), NAMESPACE):
        status = b.get("status") or {}
        if status.get("observedGeneration") != b["metadata"].get("generation"):
            continue
        if any(
            c.get("type") == names.CONDITION_RECONCILED and c.get("status") == "True"
            for c in status.get("conditions") or []
        ):
            done += 1
    if done < n:
        return False
    counts = owned_children(server)
    return all(counts[p] >= k * n for p, k in CHILDREN.items())


def classify(records: list[Any]) -> dict[str, int]:
    """``"<VERB> <resource>[/status]"`` -> count (``WATCH`` for watch GETs)."""
    out: collections.Counter[str] = collections.Counter()
    for r in records:
        path, _, query = r.path.partition("?")
        verb = r.method
        if (verb == "GET" and "watch=true" in query) or "watch=1" in query:
            verb = "WATCH"
        resource = resource_of(r.path) or path
        if path.endswith("/status"):
            resource += "/status"
        out[f"{verb} {resource}"] += 1
        if r.status == 409:
            out["conflicts (409)"] += 1
    return dict(sorted(out.items()))


def wait_ready(server: APIServer, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Until the controller's watches are open and their number is stable for 1 s."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"controller exited with {proc.returncode}")
        count = server.watch_count()
        if count != last:
            last, since = count, time.monotonic()
        elif count > 0 and time.monotonic() - since >= 1.0:
            return
        time.sleep(0.1)
    raise RuntimeError("controller watches not open in time")


def wait_quiet(server: APIServer, start: int, quiet: float, timeout: float) -> float:
    """Until no write has been logged (since ``start``) for ``quiet`` seconds; the
    monotonic time of the last write seen."""
    deadline = time.monotonic() + timeout
    seen, last_write = start, time.monotonic()
    while time.monotonic() < deadline:
        log = server.request_log
        if any(r.method in WRITE_METHODS for r in log[seen:]):
            last_write = time.monotonic()
        seen = len(log)
        if time.monotonic() - last_write >= quiet:
            break
        time.sleep(0.1)
    return last_write


def one_run(run: str, balancers: int, workers: int, idle: float, log_dir: Path) -> dict[str, Any]:
    spec = yaml.safe_load((ROOT / "crds/samples/balancer.yaml").read_text())["spec"]
    server = APIServer(crds=[str(ROOT / "crds/balancer.yaml")]).start()
    rest, registry = server.rest, server.registry
    rest.create(
        registry.get("", "v1", "namespaces"),
        None,
        {"metadata": {"name": NAMESPACE}},
        WriteOptions(),
    )  # type: ignore[arg-type]
    kubeconfig = server.write_kubeconfig(log_dir / f"kubeconfig-{run}")
    log = (log_dir / f"{run}.log").open("wb")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        controller_command(run, kubeconfig, workers),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    out: dict[str, Any] = {"run": run, "balancers": balancers, "workers": workers}
    try:
        wait_ready(server, proc)
        rt = registry.get(names.GROUP, names.VERSION, names.PLURAL)
        start = len(server.request_log)
        t0 = time.monotonic()
        cpu_server0, cpu_ctrl0 = cpu_seconds(os.getpid()), cpu_seconds(proc.pid)
        for i in range(balancers):
            body = {
                "apiVersion": names.API_VERSION,
                "kind": names.KIND,
                "metadata": {"name": f"lb-{i:04d}", "namespace": NAMESPACE},
                "spec": copy.deepcopy(spec),
            }
            rest.create(rt, NAMESPACE, body, WriteOptions())  # type: ignore[arg-type]
        created_s = time.monotonic() - t0
        deadline = t0 + 1800
        while not converged(server, balancers):
            if time.monotonic() > deadline or proc.poll() is not None:
                out["error"] = f"not converged: {owned_children(server)}"
                break
            time.sleep(0.25)
        out["converge_s"] = time.monotonic() - t0
        # What bounds convergence: the server (this process, GIL-bound) or the controller.
        out["server_cpu"] = (cpu_seconds(os.getpid()) - cpu_server0) / out["converge_s"]
        out["controller_cpu"] = (cpu_seconds(proc.pid) - cpu_ctrl0) / out["converge_s"]
        out["create_balancers_s"] = created_s
        # The Events of convergence go out on their own budget and may trail it:
        # wait until the controller has written nothing for 2 s (at most 120 s),
        # so that they count in the requests and not as writes of idle resyncs.
        out["drained_s"] = wait_quiet(server, start, quiet=2.0, timeout=120) - t0
        records = server.request_log[start:]
        out["requests"] = classify(records)
        out["total_requests"] = len(records)
        out["writes"] = sum(1 for r in records if r.method in WRITE_METHODS)
        out["event_writes"] = sum(
            1 for r in records if r.method in WRITE_METHODS and resource_of(r.path) == "events"
        )
        if idle > 0 and "error" not in out:
            mark = len(server.request_log)
            cpu0, t1 = cpu_seconds(proc.pid), time.monotonic()
            time.sleep(idle)
            cpu1, t2 = cpu_seconds(proc.pid), time.monotonic()
            idle_records = server.request_log[mark:]
            out["idle"] = {
                "seconds": t2 - t1,
                "cpu_fraction": (cpu1 - cpu0) / (t2 - t1),
                "writes": sum(1 for r in idle_records if r.method in WRITE_METHODS),
                "requests": classify(idle_records),
            }
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        server.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 Balancers, 5 s idle")
    parser.add_argument("--balancers", type=int, help="default 500 (quick 20)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--idle", type=float, help="idle seconds measured (default 30; quick 5)")
    parser.add_argument("--runs", default="ours-200,ours-unlimited,kopf")
    parser.add_argument("--out", default=str(ROOT / "bench" / "balancer.json"))
    args = parser.parse_args()
    balancers = args.balancers or (20 if args.quick else 500)
    idle = args.idle if args.idle is not None else (5.0 if args.quick else 30.0)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in args.runs.split(","):
            print(f"== {run}: {balancers} Balancers, {args.workers} workers", flush=True)
            # Idle is measured once, at the higher QPS (the resync path does no writes).
            res = one_run(run, balancers, args.workers, idle if run == "ours-200" else 0, Path(tmp))
            results.append(res)
            if "error" in res:
                log = (Path(tmp) / f"{run}.log").read_text(errors="replace").splitlines()
                res["log_tail"] = log[-15:]
                print("  ERROR", res["error"], *log[-15:], sep="\n    ")
            print(
                f"  converged in {res.get('converge_s', float('nan')):.1f} s, "
                f"{res.get('total_requests')} requests, {res.get('writes')} writes "
                f"({res.get('event_writes')} Events); CPU over convergence: server "
                f"{res.get('server_cpu', 0):.0%}, controller {res.get('controller_cpu', 0):.0%} "
                "of a core",
                flush=True,
            )
            for key, count in (res.get("requests") or {}).items():
                print(f"    {key:<40} {count}")
            if "idle" in res:
                i = res["idle"]
                print(
                    f"  idle {i['seconds']:.0f} s of 1 s resyncs: {i['writes']} writes, "
                    f"CPU {i['cpu_fraction']:.0%} of a core",
                    flush=True,
                )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"runs": results}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
