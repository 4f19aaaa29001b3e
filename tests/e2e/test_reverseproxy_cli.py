"""``python -m controllers.reverseproxy --embedded`` as a subprocess: it starts
its own API server with both CRDs, prints a kubeconfig, converges the samples,
serves metrics and probes, and exits 0 on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from controllers.reverseproxy import names
from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.errors import NotFoundError
from pycontroller.testing import wait_for

REPO = Path(__file__).resolve().parents[2]


class Proc:
    """The operator as a child process; its output lines are collected by threads."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "controllers.reverseproxy", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))

    def line(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        regex = re.compile(pattern)

        def find() -> re.Match[str] | None:
            if self.popen.poll() is not None:
                raise AssertionError("exited:\n" + "\n".join(self.lines))
            return next((m for line in list(self.lines) if (m := regex.search(line))), None)

        return wait_for(find, timeout, interval=0.05, what=pattern)

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(15)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise


def converged(client: ResourceClient, name: str) -> bool:
    try:
        obj = client.get(name, namespace="default")
    except NotFoundError:
        return False
    return any(
        c.get("type") == "Reconciled"
        and c.get("status") == "True"
        and c.get("observedGeneration") == obj["metadata"]["generation"]
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def test_embedded_converges_the_samples_and_stops_on_sigterm() -> None:
    proc = Proc(
        "--embedded",
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
    )
    try:
        kubeconfig = proc.line(r"kubeconfig: (\S+)").group(1)
        for kind in names.KINDS:
            hint = proc.line(rf"apply -f (\S+/{kind.singular}\.yaml)").group(1)
            assert Path(hint).is_file()
        health = int(proc.line(r"serving health probes on 127\.0\.0\.1:(\d+)").group(1))
        metrics = int(proc.line(r"serving metrics on 127\.0\.0\.1:(\d+)").group(1))
        api = load_config(kubeconfig=kubeconfig)
        for kind in names.KINDS:
            client = ResourceClient(api, names.GROUP, names.VERSION, kind.plural)
            sample: dict[str, Any] = yaml.safe_load(
                (REPO / "crds" / "samples" / f"{kind.singular}.yaml").read_text()
            )
            client.create(sample, namespace="default")
            wait_for(lambda c=client, n=sample["metadata"]["name"]: converged(c, n), 20)
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=5) as resp:
            assert resp.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as resp:
            body = resp.read().decode()
        for kind in names.KINDS:
            # Builder-made controllers run a PriorityQueue: depth is exported per priority.
            assert re.search(
                rf'workqueue_depth\{{name="{kind.controller}",priority="-?\d+"\}}', body
            )
        started = time.monotonic()
        assert proc.stop() == 0, "\n".join(proc.lines)
        assert time.monotonic() - started < 10
    finally:
        if proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait()
