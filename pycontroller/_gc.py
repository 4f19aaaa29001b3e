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

What: whatever survives a collection of the middle or the oldest generation
is frozen (``gc.freeze()``: an O(1) move into the permanent generation that
collections skip), so no later collection walks it again: each object is
walked by at most two young collections. Frozen objects are still freed by
reference counting the moment they are unreferenced (decoded JSON has no
reference cycles); only garbage *cycles* among frozen objects wait. They are
reclaimed by a complete pass -- the next full collection, run with the
permanent generation unfrozen -- every ``full_interval`` seconds, and as soon
as the process's peak RSS has doubled since the last one (``GROWTH``), so
garbage cycles can never more than double the process. Measured at 30,000
cached Pods (``hack/bench/client.py``): initial sync 6.9 s -> 3.3 s, a burst
of 20,000 watch events 5.7 s -> 1.4 s (1.6 s with the collector off).

The middle generation is collected after every young collection
(``gc.set_threshold(young, 1, old)`` while installed; CPython's default waits
for 10): a decoded object that survives a young collection is almost always a
cache entry, and promoting it at the next collection walks it while it is
still in the CPU's caches, instead of after ten more young collections, when
it has gone cold. Each survivor is still walked twice before it is frozen, but
that second walk costs about half as much: measured on the same 20,000-event
burst at 30,000 Pods, collector time 0.50 -> 0.29 s and the process's CPU
-8% (4 A/B pairs, every pair lower). The initial list pays for it: in 6 A/B
pairs of the benchmark client at 30,000 Pods, sync took about 16% longer
(medians 5.3 s vs 4.6 s) while ingest took 8% less; the list is paid once,
the watch for the process's life. Cycles that die young are collected as
before; cyclic garbage that outlives two young collections is frozen sooner,
and waits for the complete pass as described above.

Only a process owner should change the policy: ``Manager.run`` installs it
(``Manager(tune_gc=False)`` keeps the stock collector); other programs call
``tune_gc()`` once. ``python_gc_*`` metrics from prometheus_client keep
counting collections either way.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import resource
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DEFAULT_FULL_INTERVAL", "MIDDLE_THRESHOLD", "GCTuner", "tune_gc", "tuned_gc"]

logger = logging.getLogger(__name__)

#: Seconds between complete passes (cycles among long-lived objects wait at most this).
DEFAULT_FULL_INTERVAL = 300.0
#: A complete pass also runs once the process's peak RSS exceeds GROWTH times what it
#: was after the last one (plus GROWTH_SLACK bytes): garbage cycles that pile up among
#: frozen objects can at most double the process before they are reclaimed, and a
#: cache that grows from empty costs complete passes at 1, 2, 4, ... times the slack.
GROWTH = 2.0
GROWTH_SLACK = 64 * 1024 * 1024
#: Seconds between two reads of the peak RSS (``getrusage``) from the collector's
#: callback: tens of microseconds in a large process with many threads, and the
#: middle generation is collected hundreds of times a second under a watch burst.
RSS_CHECK_INTERVAL = 0.05
#: Young collections between two collections of the middle generation while the
#: policy is installed (CPython's default: 10). See the module docstring.
MIDDLE_THRESHOLD = 1

_lock = threading.Lock()
_installed: GCTuner | None = None


class GCTuner:
    """Freeze what survives an older-generation collection; unfreeze for a complete pass
    every ``full_interval`` seconds or when the frozen objects have doubled.

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
        # Peak RSS right after the last complete pass (growth past it triggers the next).
        self._baseline = self._peak_rss()
        self._last_rss_check = self._last_complete
        self.freezes = 0
        self.complete_passes = 0
        self._installed = False
        # The thresholds found at install(), given back by uninstall().
        self._saved_threshold: tuple[int, ...] | None = None

    def install(self) -> None:
        if not self._installed:
            gc.callbacks.append(self._on_gc)
            self._installed = True
            self._saved_threshold = gc.get_threshold()
            young, _, *old = self._saved_threshold
            gc.set_threshold(young, MIDDLE_THRESHOLD, *old)

    def uninstall(self) -> None:
        if self._installed:
            gc.callbacks.remove(self._on_gc)
            self._installed = False
            if self._saved_threshold is not None and gc.get_threshold()[1] == MIDDLE_THRESHOLD:
                gc.set_threshold(*self._saved_threshold)  # unless someone changed it since
            self._saved_threshold = None
            gc.unfreeze()

    def _peak_rss(self) -> int:
        """Peak resident memory in bytes (one syscall; Linux reports KiB)."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        # Runs inside the collector, on whichever thread allocated: no locks, no
        # logging, nothing that allocates much.
        if phase != "stop":
            return
        generation = info.get("generation", 0)
        if self._complete_pass:
            if generation != 2:
                return  # wait for the full collection, which walks everything
            # This collection saw the permanent generation too.
            self._complete_pass = False
            self._last_complete = self._clock()
            self.complete_passes += 1
            gc.freeze()
            self.freezes += 1
            self._baseline = self._peak_rss()
            return
        if generation < 1:
            return
        # (gc.get_freeze_count() walks the whole permanent generation: far too slow here.)
        now = self._clock()
        if now - self._last_complete >= self.full_interval or (
            now - self._last_rss_check >= RSS_CHECK_INTERVAL and self._grown(now)
        ):
            # Let the next full collection see the permanent generation too.
            gc.unfreeze()
            self._complete_pass = True
            return
        gc.freeze()
        self.freezes += 1

    def _grown(self, now: float) -> bool:
        """Whether the peak RSS has passed ``GROWTH`` times the baseline (read at most
        every ``RSS_CHECK_INTERVAL`` seconds)."""
        self._last_rss_check = now
        return self._peak_rss() > GROWTH * self._baseline + GROWTH_SLACK


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
