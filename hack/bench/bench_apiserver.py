"""Benchmark: clients against the embedded API server: streaming vs paged list, and kopf.

1. Streaming list (WatchList) vs paged LIST, on the server: the embedded
   APIServer runs in its own process (``apiserver_proc.py``) filled with
   ``--pods`` Pods; each round syncs a pycontroller informer once with the
   server's WatchList feature off (the informer falls back to pages of 500)
   and once with it on (one streaming watch), each client in a fresh
   process. The client's sync time is taken over rounds; in one more round
   the server traces its Python allocations (``tracemalloc``) during each
   sync and records the most it held at once above what it held before.
   RSS is recorded too but shows little: the free space the fill left in the
   allocator absorbs a sync. Ratio: streaming peak / paged peak.
2. kopf ``@kopf.index`` vs pycontroller vs raw paged GET + ``json.loads``
   on the same server with ``--kopf-pods`` Pods (kopf run embedded in a
   thread: ``client.py``'s ``kopf`` variant). Here the server's time is in
   every figure (each page is encoded by the embedded server while the client
   waits): the canned-bytes figures of ``bench_sync.py`` are the client-only
   ones.

    .venv/bin/python hack/bench/bench_apiserver.py [--quick] [--pods N] [--kopf-pods N]
        [--rounds N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


class ServerProcess:
    """``apiserver_proc.py`` in a subprocess, driven line by line over stdin."""

    def __init__(self, pods: int, kubeconfig: str) -> None:
        cmd = [sys.executable, str(HERE / "apiserver_proc.py"), "--pods", str(pods)]
        cmd += ["--kubeconfig", kubeconfig]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split(maxsplit=2)
        if not line or line[0] != "READY":
            self.proc.kill()
            raise RuntimeError(f"embedded server did not start: {line}")
        self.url = line[1]
        self.info: dict[str, Any] = json.loads(line[2])

    def command(self, cmd: str) -> dict[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        answer: dict[str, int] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def client(server: ServerProcess, variant: str, objects: int, kubeconfig: str) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / "client.py"), "--embedded", "--url", server.url]
    cmd += ["--variant", variant, "--objects", str(objects), "--kubeconfig", kubeconfig]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"variant": variant, "error": " | ".join(tail) or f"exit {proc.returncode}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def watch_list(pods: int, rounds: int, kubeconfig: str) -> dict[str, Any]:
    t0 = time.monotonic()
    server = ServerProcess(pods, kubeconfig)
    print(f"== streaming vs paged list: {pods} Pods (filled in {server.info['fill_s']:.0f} s)")
    runs: dict[str, list[dict[str, Any]]] = {"paged": [], "stream": []}
    # The last round traces the server's allocations (tracemalloc slows it, so
    # that round's sync time is kept apart, as traced_sync_s); the others time.
    total = max(rounds, 2)
    try:
        for r in range(total):
            traced = r == total - 1
            for mode in ("paged", "stream"):
                server.command("watch_list " + ("on" if mode == "stream" else "off"))
                before = server.command("trace_start" if traced else "reset_peak")["VmRSS"]
                result = client(server, f"ours_{mode}", pods, kubeconfig)
                mem = server.command("trace_peak" if traced else "peak")
                result["server_rss_before"] = before
                result["server_hwm_bytes"] = mem["VmHWM"] - before
                if traced:
                    result["server_peak_bytes"] = mem["traced_peak"]
                    result["traced_sync_s"] = result.pop("sync_s", None)
                result["round"] = r
                runs[mode].append(result)
                if "error" in result:
                    brief = result["error"]
                elif traced:
                    brief = (
                        f"traced: server allocated at most {mem['traced_peak'] / 1e6:.1f} MB "
                        f"during the sync (client {result['traced_sync_s']:.2f} s)"
                    )
                else:
                    brief = (
                        f"client sync {result['sync_s']:.2f} s, server VmHWM "
                        f"+{result['server_hwm_bytes'] / 1e6:.1f} MB over {before / 1e6:.0f} MB"
                    )
                print(f"  round {r + 1} {mode:<7} {brief}", flush=True)
    finally:
        server.close()
    print(f"   ({time.monotonic() - t0:.0f} s)", flush=True)
    return {"pods": pods, "fill_s": server.info["fill_s"], "runs": runs}


def kopf(pods: int, rounds: int, kubeconfig: str) -> dict[str, Any]:
    t0 = time.monotonic()
    server = ServerProcess(pods, kubeconfig)
    print(f"== kopf @kopf.index vs pycontroller: {pods} Pods on the embedded server")
    variants = ["raw", "ours_paged", "kopf"]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    try:
        server.command("watch_list off")
        for r in range(rounds):
            for variant in variants:
                result = client(server, variant, pods, kubeconfig)
                result["round"] = r
                runs[variant].append(result)
                brief = result.get("error") or f"sync {result['sync_s']:.3f} s"
                print(f"  round {r + 1} {variant:<10} {brief}", flush=True)
    finally:
        server.close()
    print(f"   ({time.monotonic() - t0:.0f} s)", flush=True)
    return {"pods": pods, "runs": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 Pods, 500 for kopf, 1 round")
    parser.add_argument("--pods", type=int, help="Pods for streaming vs paged (default 30,000)")
    parser.add_argument("--kopf-pods", type=int, help="Pods for kopf (default 2,000)")
    parser.add_argument("--rounds", type=int, help="rounds (default 3; quick 1)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "apiserver.json"))
    args = parser.parse_args()
    pods = args.pods or (1000 if args.quick else 30_000)
    kopf_pods = args.kopf_pods or (500 if args.quick else 2000)
    rounds = args.rounds or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(Path(tmp) / "kubeconfig")
        out = {
            "rounds": rounds,
            "watch_list": watch_list(pods, rounds, kubeconfig),
            "kopf": kopf(kopf_pods, rounds, kubeconfig),
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
