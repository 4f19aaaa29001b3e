"""``BackgroundLoop``: the thread behind the server's own controllers.

The garbage collector, ClusterRole aggregation and the simulated components
all run the same way: a storage listener calls ``wake()``; the thread waits
for a wake-up or its ``next_timeout()``, lets a burst of commits settle for
``debounce`` seconds, and makes one pass (``run_pass``). A pass that raises is
logged and the loop goes on: a bug in one pass must not stop the server's
controllers. ``start()`` catches up with whatever happened while stopped.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["BackgroundLoop"]

logger = logging.getLogger(__name__)


class BackgroundLoop:
    """Subclasses implement ``run_pass`` and may override ``next_timeout``."""

    thread_name = "apiserver-loop"

    def __init__(self, debounce: float) -> None:
        self.debounce = debounce
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        self._wake.set()

    def run_pass(self, stop: threading.Event) -> None:
        raise NotImplementedError

    def next_timeout(self) -> float | None:
        """Seconds until a pass is due without a wake-up (None: never)."""
        return None

    def start(self) -> None:
        """Run in a daemon thread (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._wake.set()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        t = self._thread
        if t is not None:
            t.join(timeout=5)
        self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.next_timeout())
            if self._stop.is_set():
                return
            if self._wake.is_set():
                self._stop.wait(self.debounce)
            self._wake.clear()
            try:
                self.run_pass(self._stop)
            except Exception:
                logger.exception("%s: pass failed", self.thread_name)
