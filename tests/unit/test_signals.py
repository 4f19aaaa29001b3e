"""setup_signal_handler: first SIGTERM/SIGINT sets the event, a second exits at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pycontroller.signals import setup_signal_handler
from pycontroller.testing import wait_for

REPO = Path(__file__).resolve().parents[2]

# The child sets up the handler, says "ready", then waits for the stop event.
# After it is set it reports "stopping" and simulates a slow graceful shutdown.
CHILD = """
import sys, time
from pycontroller.signals import setup_signal_handler
stop = setup_signal_handler()
print("ready", flush=True)
if sys.argv[2] == "spin":
    # Spend most of the time inside Event.wait's locked section, where a
    # handler that took the Event's lock itself would deadlock.
    while not stop.wait(0.00001):
        pass
else:
    stop.wait()
print("stopping", flush=True)
time.sleep(float(sys.argv[1]))
print("graceful exit", flush=True)
"""


def spawn(shutdown_seconds: float, mode: str = "block") -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(shutdown_seconds), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_first_signal_sets_event_and_lets_process_finish(sig: signal.Signals) -> None:
    proc = spawn(0.0)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out.split() == ["stopping", "graceful", "exit"]


@pytest.mark.parametrize("attempt", range(5))
def test_signal_during_busy_wait_never_deadlocks(attempt: int) -> None:
    proc = spawn(0.0, "spin")
    time.sleep(0.01 * attempt)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out.split() == ["stopping", "graceful", "exit"]


def test_second_signal_exits_immediately() -> None:
    proc = spawn(60.0)
    assert proc.stdout is not None
    proc.send_signal(signal.SIGTERM)
    assert proc.stdout.readline().strip() == "stopping"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert "graceful exit" not in out


def test_must_be_called_from_main_thread() -> None:
    errors: list[BaseException] = []

    def target() -> None:
        try:
            setup_signal_handler()
        except RuntimeError as err:
            errors.append(err)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    assert len(errors) == 1 and "main thread" in str(errors[0])


def test_in_process_handler_sets_event() -> None:
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        stop = setup_signal_handler()
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for(stop.is_set, 5)
        assert stop.is_set()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
