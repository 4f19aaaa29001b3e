"""The embedded API server in its own process, filled with benchmark Pods, driven over stdin.

    python hack/bench/apiserver_proc.py --pods N --kubeconfig PATH

creates namespace ``bench`` and ``N`` Pods (``objects.pod``, complete with
status and managedFields, committed straight to the server's storage: filling
is not what is measured; each gets a uid and a resourceVersion, and loses its
ownerReferences, as its ReplicaSet does not exist), prints ``READY <url>``
and then answers one line of JSON per command read from stdin:

- ``watch_list on|off``: serve streaming lists, or answer them 422 (a server
  without the WatchList feature, so clients list with pages);
- ``reset_peak``: reset this process's peak RSS (``/proc/self/clear_refs``:
  ``5``), answer the current RSS;
- ``peak``: answer the current and peak RSS (``VmRSS``, ``VmHWM``) in bytes;
- ``trace_start`` / ``trace_peak``: trace Python allocations
  (``tracemalloc``) from the first command to the second, which answers
  ``traced_peak``: the most memory allocated at any moment in between, in
  bytes. Unlike RSS, this is not hidden by the allocator's free space left
  over from filling the server (RSS then hardly moves during a sync).

Stops when stdin closes.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from objects import pod

from pycontroller.testing import APIServer
from pycontroller.testing.apiserver.registry.rest import WriteOptions


def memory() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


def fill(server: APIServer, pods: int) -> None:
    rest, registry = server.rest, server.registry
    namespaces = registry.get("", "v1", "namespaces")
    rest.create(namespaces, None, {"metadata": {"name": "bench"}}, WriteOptions())  # type: ignore[arg-type]
    # Straight into storage, as the objects of a running cluster: the
    # generator's Pods are complete (defaults, status, managedFields), so the
    # REST create path (which would reset their status, as a create does, and
    # recompute managedFields) adds nothing to what is measured but a minute.
    # Each gets a uid and its resourceVersion from the storage; the
    # ownerReferences go (their ReplicaSets do not exist here, and the
    # server's garbage collector would delete the Pods as orphans).
    storage = server.storage
    with storage.lock:
        for i in range(pods):
            body = pod(i, 1)
            meta = body["metadata"]
            meta.pop("resourceVersion", None)
            meta.pop("ownerReferences", None)
            meta["uid"] = str(uuid.uuid4())
            storage.commit("ADDED", ("", "pods"), body, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args()
    server = APIServer(history_size=1000)
    # The paged LIST compared is etcd's (--watch-cache=false): kube's watch
    # cache answers an informer's list at resourceVersion 0 whole, in one page.
    server.watch_cache = False
    t0 = time.monotonic()
    fill(server, args.pods)
    server.start()
    server.write_kubeconfig(args.kubeconfig)
    gc.collect()
    fill_s = time.monotonic() - t0
    print(f"READY {server.url} {json.dumps({'fill_s': fill_s})}", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        answer: dict[str, Any] = {}
        if cmd[:1] == ["watch_list"]:
            server.watch_list = cmd[1] == "on"
        elif cmd[:1] == ["reset_peak"]:
            gc.collect()
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        elif cmd[:1] == ["trace_start"]:
            gc.collect()
            tracemalloc.start()
        elif cmd[:1] == ["trace_peak"]:
            _, answer["traced_peak"] = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        answer.update(memory())
        print(json.dumps(answer), flush=True)
    server.stop()


if __name__ == "__main__":
    main()
