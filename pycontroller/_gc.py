"""A garbage-collector policy for processes that cache many decoded objects.

Why: CPython's cyclic collector runs a *full* collection whenever the objects
that survived younger collections since the last full one exceed a quarter of
those that survived it (``long_lived_pending > long_lived_total / 4``). An
informer's cache is made of exactly such survivors: every decoded object is a
tree of dicts and lists that stays alive. At the initial list, the heap grows
by 25% again and again; under a watch stream, every replaced object adds to
the pending count. Each full collection walks *every* tracked container of
the process. With 10,000 cached Pods (6 KB of JSON each) one full collection
takes about 0.6 s, and they dominate: measured with ``hack/bench/client.py``,
a 20,000-event watch burst took 5.4 s with the stock policy, of which 5.2 s
were nine full collections; 1.1 s with the collector off. Go's concurrent
collector has no such pause, so client-go never needed this.

What: after each full collection the survivors are frozen (``gc.freeze()``:
an O(1) move into the permanent generation that collections skip), so the
next full collection walks only what survived since. Frozen objects are still
freed by reference counting the moment they are unreferenced (decoded JSON
has no reference cycles); only *cycles* among frozen objects wait. So that
they are reclaimed too, every ``full_interval`` seconds the next full
collection runs with the permanent generation unfrozen: one complete pass, as
the stock policy would do many times.

Only a process owner should change the policy: ``Manager.run`` installs it
(``Manager(tune_gc=False)`` keeps the stock collector); other programs call
``tune_gc()`` once. ``python_gc_*`` metrics from prometheus_client keep
counting collections either way.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DEFAULT_FULL_INTERVAL", "GCTuner", "tune_gc", "tuned_gc"]

logger = logging.getLogger(__name__)

#: Seconds between complete passes (cycles among long-lived objects wait at most this).
DEFAULT_FULL_INTERVAL = 300.0

_lock = threading.Lock()
_installed: GCTuner | None = None


class GCTuner:
    """Freeze the survivors of each full collection; unfreeze for one pass every interval.

    ``install()``/``uninstall()`` add and remove a ``gc.callbacks`` hook;
    ``uninstall()`` also unfreezes, handing everything back to the stock
    collector. ``clock`` is injectable for tests (monotonic seconds).
    """

    def __init__(
        self,
        full_interval: float = DEFAULT_FULL_INTERVAL,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if full_interval <= 0:
            raise ValueError("full_interval must be > 0")
        self.full_interval = float(full_interval)
        self._clock = clock
        self._last_complete = clock()
        # True while the permanent generation is unfrozen for a complete pass.
        self._complete_pass = False
        self.freezes = 0
        self.complete_passes = 0
        self._installed = False

    def install(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._on_gc)
            self._installed = True

    def uninstall(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._on_gc)
            self._installed = False
            gc.unfreeze()

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        # Runs inside the collector, on whichever thread allocated: no locks, no I/O
        # beyond a debug log, nothing that allocates much.
        if phase != "stop" or info.get("generation") != 2:
            return
        now = self._clock()
        if self._complete_pass:
            # This collection walked everything, frozen objects included.
            self._complete_pass = False
            self._last_complete = now
            self.complete_passes += 1
        elif now - self._last_complete >= self.full_interval:
            # Let the next full collection see the permanent generation too.
            gc.unfreeze()
            self._complete_pass = True
            return
        gc.freeze()
        self.freezes += 1


def tune_gc(full_interval: float = DEFAULT_FULL_INTERVAL) -> GCTuner:
    """Install the process-wide policy once; later calls return the installed tuner."""
    global _installed
    with _lock:
        if _installed is None:
            _installed = GCTuner(full_interval)
            _installed.install()
            logger.debug(
                "gc: freezing survivors of full collections (complete pass every %.0fs)",
                full_interval,
            )
        return _installed


@contextlib.contextmanager
def tuned_gc(full_interval: float = DEFAULT_FULL_INTERVAL) -> Iterator[GCTuner]:
    """``tune_gc()`` for the duration of a block (``Manager.run``).

    On exit, the policy is removed again if this block installed it, so a
    process (a test run) that runs several Managers one after another gets the
    stock collector back between them.
    """
    global _installed
    with _lock:
        mine = _installed is None
    tuner = tune_gc(full_interval)
    try:
        yield tuner
    finally:
        if mine:
            with _lock:
                if _installed is tuner:
                    tuner.uninstall()
                    _installed = None
