"""Graceful shutdown on SIGINT/SIGTERM (sample-controller's ``signals.SetupSignalHandler``).

The first SIGINT or SIGTERM sets the returned ``threading.Event``: pass it
as ``stop`` to every ``run(stop)`` so components drain and return. A second
signal exits the process at once with status 1 (``os._exit``: no cleanup),
for when a graceful shutdown hangs.

Python runs signal handlers in the main thread only, so this must be called
from the main thread (RuntimeError otherwise), and the main thread must not
block in a call that ignores signals. ``Event.wait`` is fine. The handler
takes no locks (it may interrupt the main thread inside ``stop.wait()``,
holding the Event's lock): it writes to a pipe, and a watcher thread sets the
Event a moment later. Calling it again
installs fresh handlers and returns a new Event (the old one is no longer set
by signals).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

logger = logging.getLogger(__name__)

__all__ = ["SHUTDOWN_SIGNALS", "setup_signal_handler"]

SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def setup_signal_handler() -> threading.Event:
    """Install SIGINT/SIGTERM handlers; return the Event the first signal sets."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("setup_signal_handler must be called from the main thread")
    stop = threading.Event()
    received: list[int] = []
    read_fd, write_fd = os.pipe()

    def watch() -> None:
        # Sets ``stop`` on behalf of the handler (see below), off the main thread.
        data = os.read(read_fd, 1)
        if data:
            logger.info(
                "Received %s, shutting down (send it again to exit at once)",
                signal.Signals(data[0]).name,
            )
            stop.set()

    threading.Thread(target=watch, name="signal-watcher", daemon=True).start()

    def handler(signum: int, frame: FrameType | None) -> None:
        # Runs on the main thread between bytecodes, possibly while that very
        # thread holds a lock, e.g. the Event's own inside ``stop.wait()``:
        # calling ``stop.set()`` here could deadlock. So the handler takes no
        # lock at all: it writes a byte to a pipe the watcher thread reads.
        received.append(signum)
        if len(received) > 1:
            os._exit(1)  # second signal: the graceful path is taking too long or is stuck
        os.write(write_fd, bytes([signum]))

    for sig in SHUTDOWN_SIGNALS:
        signal.signal(sig, handler)
    return stop
