"""``python -m controllers.network --embedded`` as a subprocess: it serves, syncs a Network
(a Synced Event), and exits 0 on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from support.cli import REPO, CLIProc

from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.testing import wait_for


class Proc(CLIProc):
    module = "controllers.network"


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
