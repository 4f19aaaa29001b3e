"""Graceful shutdown on SIGINT/SIGTERM (sample-controller's ``signals.SetupSignalHandler``).

The first SIGINT or SIGTERM sets the returned ``threading.Event``: pass it
as ``stop`` to every ``run(stop)`` so components drain and return. A second
signal exits the process at once with status 1 (``os._exit``: no cleanup),
for when a graceful shutdown hangs.

Python runs signal handlers in the main thread only, so this must be called
from the main thread (RuntimeError otherwise), and the main thread must not
block in a call that ignores signals. ``Event.wait`` is fine. Calling it again
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

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            # Second signal: the graceful path is taking too long or is stuck.
            os._exit(1)
        logger.info(
            "Received %s, shutting down (send it again to exit at once)",
            signal.Signals(signum).name,
        )
        stop.set()

    for sig in SHUTDOWN_SIGNALS:
        signal.signal(sig, handler)
    return stop
