"""``python -m pycontroller.testing.apiserver``: serves, writes a kubeconfig,
prints the kubectl command, installs CRDs from a directory, stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_cli_serves_and_prints_kubectl_command(tmp_path: Path) -> None:
    port = free_port()
    kubeconfig = tmp_path / "dev.kubeconfig"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pycontroller.testing.apiserver",
            "--port",
            str(port),
            "--kubeconfig",
            str(kubeconfig),
            "--crd",
            str(ROOT / "crds"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert f"http://127.0.0.1:{port}" in lines[0]
        assert lines[1].strip() == f"kubectl --kubeconfig {kubeconfig} get all"
        cfg = yaml.safe_load(kubeconfig.read_text())
        assert cfg["clusters"][0]["cluster"]["server"] == f"http://127.0.0.1:{port}"
        url = f"http://127.0.0.1:{port}/apis/exposer.hliangzhao.io/v1alpha1/balancers"
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert json.loads(resp.read())["kind"] == "BalancerList"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
