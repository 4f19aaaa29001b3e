"""The real ``kubectl`` against an embedded server, for tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pycontroller.testing import APIServer

KUBECTL = shutil.which("kubectl")


class Kubectl:
    """Runs kubectl with the server's kubeconfig and a private discovery cache.

    ``kubectl(*args)`` (or ``run``) returns the finished process; with
    ``check`` (the default) a non-zero exit fails the test with kubectl's output.
    """

    def __init__(self, server: APIServer, tmp: Path, *, timeout: float = 60) -> None:
        if KUBECTL is None:
            raise RuntimeError("kubectl is not installed")
        self.tmp = tmp
        self.timeout = timeout
        self.kubeconfig = str(server.write_kubeconfig(tmp / "kubeconfig"))
        self.base = [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", str(tmp / "cache")]

    def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*self.base, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        return proc

    run = __call__

    def write(self, name: str, text: str) -> str:
        path = self.tmp / name
        path.write_text(text)
        return str(path)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
