"""A controller's ``python -m`` CLI as a child process, for the e2e CLI tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

from pycontroller.testing import wait_for

REPO = Path(__file__).resolve().parents[2]


class CLIProc:
    """``python -m <module> *args`` run from the repository root; stdout and stderr
    lines collected by threads. Subclasses name the ``module``."""

    module: ClassVar[str]

    def __init__(self, *args: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.popen = subprocess.Popen(
            [sys.executable, "-m", self.module, *args],
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
        """The first output line matching ``pattern``, waited for up to ``timeout`` s."""

        def match() -> re.Match[str] | None:
            if self.popen.poll() is not None and not self.lines:
                raise AssertionError(f"exited {self.popen.returncode}:\n{self.output()}")
            return next((m for line in list(self.lines) if (m := re.search(pattern, line))), None)

        return wait_for(match, timeout, interval=0.05, what=f"{pattern!r} in\n{self.output()}")

    def stop(self) -> int:
        """SIGTERM, then the exit code (killed after 15 s without an exit)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                return self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait()
