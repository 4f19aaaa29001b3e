"""``python -m controllers.network --embedded`` as a subprocess: it serves, syncs a Network
(a Synced Event), and exits 0 on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.testing import wait_for

REPO = Path(__file__).resolve().parents[2]


class Proc:
    """The CLI as a child process; stdout and stderr lines collected by threads."""

    def __init__(self, *args: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "controllers.network", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        for stream in (self.popen.stdout, self.popen.stderr):
            threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(list(self.lines))

    def find(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        def match() -> re.Match[str] | None:
            if self.popen.poll() is not None and not self.lines:
                raise AssertionError(f"exited {self.popen.returncode}:\n{self.output()}")
            return next((m for line in list(self.lines) if (m := re.search(pattern, line))), None)

        return wait_for(match, timeout, interval=0.05, what=f"{pattern!r} in\n{self.output()}")


def test_embedded_syncs_and_stops_on_sigterm_with_exit_0() -> None:
    proc = Proc("--embedded")
    try:
        kubeconfig = proc.find(r"^kubeconfig: (\S+)").group(1)
        proc.find(r"Starting 2 workers for controller networks")
        api = load_config(kubeconfig)
        networks = ResourceClient(api, "samplecrd.k8s.io", "v1", "networks")
        events = ResourceClient(api, "", "v1", "events")
        networks.create(
            {
                "apiVersion": "samplecrd.k8s.io/v1",
                "kind": "Network",
                "metadata": {"name": "cli"},
                "spec": {"cidr": "192.168.0.0/16", "gateway": "192.168.0.1"},
            },
            "default",
        )
        wait_for(
            lambda: [e for e in events.list("default")["items"] if e["reason"] == "Synced"],
            15,
            what="a Synced Event",
        )
        proc.find(r"Syncing default/cli cidr=192\.168\.0\.0/16 gateway=192\.168\.0\.1")
        api.close()
        started = time.monotonic()
        proc.popen.send_signal(signal.SIGTERM)
        code = proc.popen.wait(15)
    finally:
        if proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait(5)
    assert code == 0, proc.output()
    assert time.monotonic() - started < 10
    assert "exit_code=0" in proc.output()


def test_help_lists_the_manager_flags() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "controllers.network", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    for flag in ("--kubeconfig", "--embedded", "--master", "--graceful-shutdown-timeout"):
        assert flag in out
