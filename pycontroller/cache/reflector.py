"""Reflector: keeps a store in step with the server by list + watch (client-go ``reflector.go``).

Protocol, following client-go 1.32:

1. **List** (paged, ``page_size`` items per page) at the "relist" resource
   version: ``"0"`` the first time, the last synced RV afterwards, ``""`` (a
   consistent read) if that RV turned out to be unavailable (410/Expired or
   "too large resource version" on the list: retried at once with ``""``).
   An expired ``continue`` token makes one unpaged list at the original RV.
   Then ``store.replace(items, list_rv)``. When the store is a queue with a
   ``transformer``, the reflector applies it to each page as it arrives and
   tells ``replace`` so (``transformed=True``): what a transform drops is
   freed page by page instead of after the whole list (client-go transforms
   in the queue, after the list); streamed lists likewise, per object.
2. **Watch** from the last synced RV with ``allow_bookmarks=True`` and
   ``timeout_seconds`` random in [300, 600). Every event (bookmarks too)
   advances the last synced RV, so a watch that ends normally (server
   timeout, dropped connection) is reopened from exactly there with no
   relist and no delay: nothing is lost, duplicated or reordered, because
   the server replays every change after that RV in order.
3. A 410 Gone/Expired (HTTP status or ``ERROR`` event) ends
   ``list_and_watch``; ``run`` backs off and relists. 429 and connection
   refused when opening a watch back off and retry the *watch* at the same RV.
   Any other error ends ``list_and_watch`` (``run`` backs off, relists).
4. ``run`` repeats ``list_and_watch`` until ``stop`` is set, waiting one
   backoff step after every return: 0.8 s doubling to 30 s, each step
   jittered to [d, 2d), reset after 2 minutes without a backoff.

Watch events are applied as client-go's ``watchHandler`` does, and nothing is
skipped silently:

- an undecodable line ends the watch (``WatchStream`` yields an ``ERROR``
  event whose Status has the cause ``ClientWatchDecoding``, as client-go's
  ``StreamWatcher``): the reflector counts it in
  ``reflector_watch_decode_errors_total{name}``, backs off one step and
  re-watches from the last resourceVersion it *applied* (never past the bad
  line), so the server sends the lost event again from its history. A second
  decode error at the same resourceVersion (no progress in between) relists;
- an event of unknown type, or an ``ADDED``/``MODIFIED``/``DELETED`` event
  whose object has no ``metadata``, is logged as an error naming the
  reflector and the event type, and the watch continues; it does not move the
  resourceVersion on;
- a store that raises while applying an event is logged; the watch continues.

**Streaming lists** (WatchList, KEP-3157; client-go 1.35's default). With
``use_watch_list=None`` (the default) a reflector whose ListerWatcher declares
``supports_watch_list`` (``ListWatch.from_client`` does; scripted fakes do
not, so they are always listed) and ``True`` for any ListerWatcher replace step
1 by one watch with ``send_initial_events=True``,
``resource_version_match="NotOlderThan"`` and bookmarks, from the last synced
RV (``""``, a consistent read, the first time or after a 410/too large RV):

- the server sends ADDED for every object, then a BOOKMARK annotated
  ``k8s.io/initial-events-end: "true"`` at the list's RV. The streamed objects
  are collected apart from the store (keyed by namespace/name) and, at the
  bookmark, handed over with one ``store.replace(objs, rv)`` exactly as a
  LIST's items are (so objects gone since the last list are deleted as
  ``DeletedFinalStateUnknown`` and the store syncs at that replace); the
  watch then goes on *on the same stream*;
- a 410/Expired or "too large resource version" while streaming starts the
  stream again at once from ``""``; 429 and connection refused back off and
  retry; a stream that ends early is reopened;
- the reflector falls back to paged LIST + watch by itself, and remembers it
  (it lists on every later relist), only on a definitive sign that the
  server does not support streaming lists: the watch is refused with 400 or
  422 (kube-apiserver without the WatchList feature answers 422), the
  ListerWatcher rejects the options (``TypeError``), or the server ignores
  them: a BOOKMARK without the annotation arrives first. Any other failure
  of the stream, and a stream that goes ``watch_list_timeout`` seconds
  without any event and without the end bookmark (slow, or a server that
  ignored the request), falls back to LIST for this attempt only: the next
  relist streams again (client-go never stops trying);
- ``check_watch_list_consistency`` (default: the environment variable
  ``KUBE_WATCHLIST_INCONSISTENCY_DETECTOR``, parsed as Go's ParseBool, as
  client-go's data consistency detector) LISTs at the bookmark's RV
  (``resourceVersionMatch=Exact``) before the replace and compares the
  objects (by uid); a difference is logged as an error and raises
  ``WatchListInconsistencyError``, which ends ``run`` (client-go panics):
  meant for tests and CI, never production.

While watching, a helper thread calls ``store.resync()`` every
``resync_period`` seconds (when ``should_resync()`` allows) and, once
``stop`` is set, closes the open watch so a blocked read returns at once.
Every LIST request and watch open runs on a short-lived daemon thread that
the reflector stops waiting for once ``stop`` is set (client-go cancels them
through its context): ``run`` returns within ``_POLL`` seconds, and whatever
the abandoned request returns later is discarded (a watch closed).

The store is only written from the thread running ``list_and_watch``, so
the store sees events in server order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
from collections.abc import Callable, Iterator
from functools import partial
from itertools import repeat
from typing import Any, TypeVar

from prometheus_client import Counter, Gauge

from .._metrics import register
from ..client import WATCH_DECODE_ERROR_CAUSE
from ..clock import REAL_CLOCK, Clock
from ..errors import ApiError, GoneError, TooManyRequestsError, api_error_from_status
from .listwatch import ListerWatcher
from .store import ReflectorStore

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_WATCH_LIST_TIMEOUT",
    "INITIAL_EVENTS_ANNOTATION",
    "WATCH_LIST_INCONSISTENCY_DETECTOR_ENV",
    "ExponentialBackoff",
    "Reflector",
    "VeryShortWatchError",
    "WatchListInconsistencyError",
]

logger = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300.0
# A watch that ends this fast with no events is treated as an error (relist).
VERY_SHORT_WATCH = 1.0
# Real seconds between checks of ``stop`` (and of the resync deadline).
_POLL = 0.05
# Watch event types that carry an object to apply (and so need its metadata).
_OBJECT_EVENTS = frozenset(("ADDED", "MODIFIED", "DELETED"))
# Watch events are counted locally and added to the metric in batches.
_METRIC_FLUSH = 256
#: ``metav1.InitialEventsAnnotationKey``: the bookmark that ends a streamed list.
INITIAL_EVENTS_ANNOTATION = "k8s.io/initial-events-end"
#: Seconds a streamed list may go without any event and without its end bookmark
#: before the reflector gives it up and LISTs instead (for that attempt only).
DEFAULT_WATCH_LIST_TIMEOUT = 5.0
# Statuses that refuse a streamed list's options outright (kube-apiserver without
# the WatchList feature: 422 Invalid): the server does not do streaming lists.
# Other 4xx (401, 403, 404...) say nothing about that: LIST for that attempt only.
_WATCH_LIST_REJECTED = frozenset((400, 422))
#: client-go's switch for the watch-list data consistency detector.
WATCH_LIST_INCONSISTENCY_DETECTOR_ENV = "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR"
_GO_TRUE = frozenset(("1", "t", "T", "TRUE", "true", "True"))


def _metric(factory: Any, name: str, doc: str) -> Any:
    return register(factory, name, doc, ["name"])


_LISTS = _metric(Counter, "reflector_lists_total", "Number of lists done by a reflector.")
_LIST_ITEMS = _metric(
    Counter, "reflector_list_items_total", "Items received by a reflector's lists."
)
_WATCHES = _metric(Counter, "reflector_watches_total", "Number of watches opened by a reflector.")
_SHORT_WATCHES = _metric(
    Counter, "reflector_short_watches_total", "Watches that ended at once without any event."
)
_EVENTS = _metric(Counter, "reflector_watch_events_total", "Watch events received by a reflector.")
_RELISTS = _metric(
    Counter, "reflector_relists_total", "Lists after the first one (the watch could not resume)."
)
_DECODE_ERRORS = _metric(
    Counter,
    "reflector_watch_decode_errors_total",
    "Watches ended by an undecodable event (re-watched from the last applied resourceVersion).",
)
_LAST_RV = _metric(
    Gauge, "reflector_last_resource_version", "Last resourceVersion a reflector synced (numeric)."
)
_WATCH_LISTS = _metric(
    Counter,
    "reflector_watch_lists_total",
    "Lists a reflector received as a stream (watch with sendInitialEvents).",
)
_WATCH_LIST_FALLBACKS = _metric(
    Counter,
    "reflector_watch_list_fallbacks_total",
    "Streamed lists given up for a paged LIST.",
)


def _page_items(page: dict[str, Any]) -> list[Any]:
    """The page's items, each given the list's ``apiVersion`` and ``kind`` if it lacks them.

    kube-apiserver omits ``kind``/``apiVersion`` on the items of a LIST of a
    built-in type (client-go fills them in from its scheme); downstream code
    (event recorders, reconcilers filtering children by kind) needs them.
    Items are completed in place (``setdefault``, no copy); an item that has
    its own values keeps them. Watch events already carry both fields.
    """
    items = page.get("items") or []
    list_kind = page.get("kind")
    api_version = page.get("apiVersion")
    kind = list_kind[:-4] if isinstance(list_kind, str) and list_kind.endswith("List") else None
    if not kind:  # "" from a bare "List": nothing to derive
        kind = None
    if not isinstance(api_version, str) or not api_version:
        api_version = None
    if kind is None and api_version is None:
        return items
    try:  # the common case (every item complete, e.g. a CRD's list) at C speed
        if all(map(dict.__contains__, items, repeat("kind"))) and all(
            map(dict.__contains__, items, repeat("apiVersion"))
        ):
            return items
    except TypeError:  # an item that is not a dict: the loop below skips it
        pass
    for item in items:
        if type(item) is not dict or ("kind" in item and "apiVersion" in item):
            continue  # the common case, checked first: nothing to fill in
        if kind is not None:
            item.setdefault("kind", kind)
        if api_version is not None:
            item.setdefault("apiVersion", api_version)
    return items


class VeryShortWatchError(Exception):
    """A watch closed less than a second after opening without delivering any event."""


class WatchListInconsistencyError(AssertionError):
    """The consistency check found a streamed list that differs from a LIST at its
    resourceVersion (client-go panics; ``Reflector.run`` lets this through)."""


class _StopRequested(Exception):
    pass


class _WatchListUnsupported(Exception):
    """The server (or the ListerWatcher) does not do streaming lists."""


class _WatchListStalled(Exception):
    """A streamed list made no progress for ``watch_list_timeout`` seconds (LIST this time)."""


_T = TypeVar("_T")


class _AbandonableCall:
    """One blocking call (a LIST page, a watch open) run on a daemon thread so
    that the reflector's thread can give up waiting for it when ``stop`` is set.

    An abandoned call runs to its own end (its request timeout); its result
    is then handed to ``discard`` (an open watch is closed) and its error is
    dropped: nothing of it reaches the store.
    """

    __slots__ = ("_abandoned", "_discard", "_done", "_fn", "_lock", "_outcome")

    def __init__(self, fn: Callable[[], Any], discard: Callable[[Any], None] | None) -> None:
        self._fn = fn
        self._discard = discard
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self._outcome: tuple[bool, Any] | None = None

    def run(self) -> None:
        try:
            outcome: tuple[bool, Any] = (True, self._fn())
        except BaseException as err:  # handed to the waiting thread
            outcome = (False, err)
        with self._lock:
            if not self._abandoned:
                self._outcome = outcome
                self._done.set()
                return
        if outcome[0] and self._discard is not None:
            self._discard(outcome[1])
        elif not outcome[0]:
            logger.debug("an abandoned list/watch call failed: %s", outcome[1])

    def wait(self, stop: threading.Event) -> Any:
        """The call's result (its exception is raised); ``_StopRequested`` once
        ``stop`` is set, whether or not the call has finished."""
        done = self._done
        while not done.wait(_POLL):
            if stop.is_set():
                with self._lock:
                    if self._outcome is None:
                        self._abandoned = True  # run() discards what comes
                        raise _StopRequested()
                break
        assert self._outcome is not None
        ok, value = self._outcome
        if stop.is_set():  # finished, but too late: nothing of it may be applied
            if ok and self._discard is not None:
                self._discard(value)
            raise _StopRequested()
        if not ok:
            raise value
        return value


def _go_parse_bool(value: str | None) -> bool:
    return value in _GO_TRUE


class ExponentialBackoff:
    """client-go 1.32's ``exponentialBackoffManager`` (thread-safe).

    ``next()`` returns ``d + rand() * jitter * d`` and then doubles ``d`` up to
    ``cap``. If more than ``reset_after`` clock seconds passed since the last
    ``next()`` call, ``d`` first goes back to ``initial`` (so the backoff only
    grows while failures keep coming).
    """

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        *,
        clock: Clock = REAL_CLOCK,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self._clock = clock
        self._rand = rand
        self._lock = threading.Lock()
        self._duration = initial
        self._last = clock.now()

    def next(self) -> float:
        with self._lock:
            now = self._clock.now()
            if now - self._last > self.reset_after:
                self._duration = self.initial
            self._last = now
            d = self._duration
            self._duration = min(d * self.factor, self.cap) if self.factor else d
        if self.jitter > 0:
            d += self._rand() * self.jitter * d
        return d


def _is_gone(err: BaseException) -> bool:
    if isinstance(err, GoneError):
        return True
    return isinstance(err, ApiError) and (err.status == 410 or err.reason in ("Expired", "Gone"))


def _is_watch_decode_error(err: BaseException) -> bool:
    """The ERROR a ``WatchStream`` yields for a line it could not decode."""
    return isinstance(err, ApiError) and any(
        cause.get("reason") == WATCH_DECODE_ERROR_CAUSE for cause in err.causes
    )


def _is_too_large_rv(err: BaseException) -> bool:
    if not isinstance(err, ApiError):
        return False
    text = "Too large resource version"
    for cause in err.causes:
        if cause.get("reason") == "ResourceVersionTooLarge" or cause.get("type") == (
            "ResourceVersionTooLarge"
        ):
            return True
        if err.status == 504 and cause.get("message") == text:
            return True
    return text in (err.message or "")


def _is_connection_refused(err: BaseException) -> bool:
    cur: BaseException | None = err
    depth = 0
    while cur is not None and depth < 8:
        if isinstance(cur, ConnectionRefusedError):
            return True
        cur = cur.__cause__ or cur.__context__
        depth += 1
    return False


def _default_watch_error_handler(reflector: Reflector, err: BaseException) -> None:
    if _is_gone(err):
        logger.info("%s: watch closed: %s", reflector.name, err)
    else:
        logger.warning("%s: list/watch failed: %s", reflector.name, err)


class Reflector:
    """Mirror a resource into ``store`` (a DeltaFIFO or an Indexer) by list + watch.

    ``store`` needs ``add``, ``update``, ``delete``, ``replace(items, rv)``
    and ``resync``. Keyword-only: ``clock`` (backoff, resync, short-watch
    detection), ``backoff`` (an ``ExponentialBackoff``), ``should_resync``
    (asked each time the resync timer fires; the informer's processor uses
    it), ``watch_error_handler(reflector, err)``, ``rand`` (for the watch
    timeout), ``use_watch_list`` (None: stream the list when the
    ListerWatcher supports it, falling back to LIST; True: try streaming
    with any ListerWatcher; False: always LIST), ``watch_list_timeout`` and
    ``check_watch_list_consistency`` (see the module docstring). One
    Reflector must be run by one thread at a time.
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        store: ReflectorStore,
        name: str = "",
        resync_period: float = 0,
        page_size: int = DEFAULT_PAGE_SIZE,
        *,
        clock: Clock = REAL_CLOCK,
        backoff: ExponentialBackoff | None = None,
        should_resync: Callable[[], bool] | None = None,
        watch_error_handler: Callable[[Reflector, BaseException], None] | None = None,
        rand: Callable[[], float] = random.random,
        use_watch_list: bool | None = None,
        watch_list_timeout: float = DEFAULT_WATCH_LIST_TIMEOUT,
        check_watch_list_consistency: bool | None = None,
    ) -> None:
        self.lister_watcher = lister_watcher
        self.use_watch_list = use_watch_list
        self.watch_list_timeout = float(watch_list_timeout)
        if check_watch_list_consistency is None:
            check_watch_list_consistency = _go_parse_bool(
                os.environ.get(WATCH_LIST_INCONSISTENCY_DETECTOR_ENV)
            )
        self.check_watch_list_consistency = check_watch_list_consistency
        # Set once the server showed it does not do streaming lists (it refused
        # the options with 400/422, or a plain bookmark came first): every later
        # (re)list is a paged LIST. Nothing else sets it (a failed or stalled
        # stream falls back to LIST for that attempt only).
        self._watch_list_unsupported = False
        # Events seen by the streamed list in progress (read by its watchdog).
        self._watch_list_progress = 0
        self.store = store
        self.name = name or getattr(lister_watcher, "name", "") or "reflector"
        self.resync_period = float(resync_period)
        self.page_size = page_size
        self.should_resync = should_resync
        self.watch_error_handler = watch_error_handler or _default_watch_error_handler
        self._clock = clock
        self._rand = rand
        self._backoff = backoff or ExponentialBackoff(clock=clock)
        self._lock = threading.Lock()
        self._last_sync_rv = ""
        self._rv_unavailable = False
        self._paginated_result = False
        self._lists = 0
        self._watch: Iterator[dict[str, Any]] | None = None
        self._resync_error: BaseException | None = None
        self._m_lists = _LISTS.labels(self.name)
        self._m_list_items = _LIST_ITEMS.labels(self.name)
        self._m_watches = _WATCHES.labels(self.name)
        self._m_short = _SHORT_WATCHES.labels(self.name)
        self._m_events = _EVENTS.labels(self.name)
        self._m_relists = _RELISTS.labels(self.name)
        self._m_decode_errors = _DECODE_ERRORS.labels(self.name)
        self._m_last_rv = _LAST_RV.labels(self.name)
        self._m_watch_lists = _WATCH_LISTS.labels(self.name)
        self._m_watch_list_fallbacks = _WATCH_LIST_FALLBACKS.labels(self.name)

    # ------------------------------------------------------------------ state

    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list or event (bookmarks included) applied."""
        return self._last_sync_rv

    def _set_last_sync_rv(self, rv: str) -> None:
        # A single reference assignment is atomic; readers never see a torn value.
        self._last_sync_rv = rv

    def _publish_rv(self, rv: str) -> None:
        with contextlib.suppress(ValueError):
            self._m_last_rv.set(float(int(rv)))

    def _relist_resource_version(self) -> str:
        with self._lock:
            if self._rv_unavailable:
                return ""
            return self._last_sync_rv or "0"

    def _rewatch_resource_version(self) -> str:
        """Where a streamed list starts: the last synced RV ("not older than"),
        or "" (the most recent, consistent) the first time or once it was
        unavailable."""
        with self._lock:
            if self._rv_unavailable:
                return ""
            return self._last_sync_rv

    def uses_watch_list(self) -> bool:
        """Whether the next (re)list will be tried as a stream."""
        if self.use_watch_list is False or self._watch_list_unsupported:
            return False
        if self.use_watch_list:
            return True
        return bool(getattr(self.lister_watcher, "supports_watch_list", False))

    def _call(
        self,
        stop: threading.Event,
        fn: Callable[[], _T],
        discard: Callable[[Any], None] | None = None,
    ) -> _T:
        """``fn()`` (a LIST page or a watch open), given up when ``stop`` is set.

        client-go cancels these requests through their context; here the call
        runs on a daemon thread and this thread stops waiting for it: raises
        ``_StopRequested`` within ``_POLL`` seconds of ``stop``. What the
        abandoned call returns later goes to ``discard`` (``_close_quietly``
        for a watch). ``fn``'s own exceptions are raised here.
        """
        if stop.is_set():
            raise _StopRequested()
        call = _AbandonableCall(fn, discard)
        threading.Thread(target=call.run, name=f"reflector-{self.name}-call", daemon=True).start()
        result: _T = call.wait(stop)
        return result

    def _list_page(
        self,
        stop: threading.Event,
        rv: str | None,
        limit: int | None,
        token: str | None,
        **options: Any,
    ) -> dict[str, Any]:
        """One LIST request (a page), given up when ``stop`` is set."""
        return self._call(
            stop,
            partial(
                self.lister_watcher.list,
                resource_version=rv,
                limit=limit,
                continue_=token,
                **options,
            ),
        )

    def _open_watch(
        self, stop: threading.Event, rv: str, **options: Any
    ) -> Iterator[dict[str, Any]]:
        """Open a watch at ``rv`` with bookmarks (plus ``options``: a streamed
        list's), given up when ``stop`` is set (a late stream is closed)."""
        return self._call(
            stop,
            partial(
                self.lister_watcher.watch,
                resource_version=rv,
                timeout_seconds=self._watch_timeout(),
                allow_bookmarks=True,
                **options,
            ),
            self._close_quietly,
        )

    # ------------------------------------------------------------------ run loop

    def run(self, stop: threading.Event) -> None:
        """Call ``list_and_watch`` until ``stop`` is set, backing off after each return."""
        logger.debug("%s: starting", self.name)
        while not stop.is_set():
            try:
                self.list_and_watch(stop)
            except WatchListInconsistencyError:
                logger.exception("%s: stopping: the streamed list was inconsistent", self.name)
                raise
            except Exception as err:  # every list/watch failure is retried with backoff
                if stop.is_set():
                    break
                try:
                    self.watch_error_handler(self, err)
                except Exception:
                    logger.exception("%s: watch error handler failed", self.name)
            if stop.is_set():
                break
            self._clock.sleep(self._backoff.next(), stop)
        logger.debug("%s: stopped", self.name)

    def list_and_watch(self, stop: threading.Event) -> None:
        """List once, then watch (re-opening watches) until an error or ``stop``.

        Returns normally when stopped or when the watch can no longer resume
        (410 and the like; ``run`` relists). Raises when the list fails or a
        watch cannot be opened for a reason other than 429/connection refused.
        """
        if stop.is_set():
            return
        watch: Iterator[dict[str, Any]] | None = None
        try:
            if self.uses_watch_list():
                watch = self._watch_list_or_none(stop)
            if watch is None:
                self._list(stop)
        except _StopRequested:
            return
        if stop.is_set():
            if watch is not None:
                self._close_quietly(watch)
            return
        done = threading.Event()
        self._resync_error = None
        # The first resync is due a period after the list, counted here rather
        # than when the helper thread gets to run (a clock stepped meanwhile
        # would otherwise push it a whole period further).
        period = self.resync_period
        first_resync = self._clock.now() + period if period > 0 else None
        helper = threading.Thread(
            target=self._watch_helper,
            args=(stop, done, first_resync),
            name=f"reflector-{self.name}",
            daemon=True,
        )
        helper.start()
        try:
            self._watch_loop(stop, watch)
        finally:
            done.set()
            helper.join()

    # ------------------------------------------------------------------ list

    def _list(self, stop: threading.Event) -> None:
        rv = self._relist_resource_version()
        try:
            items, list_rv = self._paged_list(rv, stop)
        except ApiError as err:
            if not (_is_gone(err) or _is_too_large_rv(err)):
                raise
            logger.info(
                "%s: list at rv %r failed (%s); relisting from the latest", self.name, rv, err
            )
            with self._lock:
                self._rv_unavailable = True
            items, list_rv = self._paged_list("", stop)
        with self._lock:
            self._rv_unavailable = False
        self._lists += 1
        self._m_lists.inc()
        if self._lists > 1:
            self._m_relists.inc()
        self._m_list_items.inc(len(items))
        self._replace(items, list_rv)
        self._set_last_sync_rv(list_rv)
        self._publish_rv(list_rv)
        logger.debug("%s: listed %d items at rv %s", self.name, len(items), list_rv)

    def _early_transform(self) -> Callable[[Any], Any] | None:
        """The store's transform when the reflector may apply it as a list
        arrives (a queue with a ``transformer`` and ``replace(...,
        transformed=True)``): each page's items, each streamed object, are
        transformed at once, so whatever the transform drops is freed before
        the next page is decoded and the process's peak memory follows the
        cache, not the raw list."""
        tf = getattr(self.store, "transformer", None)
        return tf if callable(tf) else None

    def _transform_page(self, items: list[Any]) -> list[Any]:
        tf = self._early_transform()
        if tf is None:
            return items
        return [tf(o) for o in items]

    def _replace(self, items: list[Any], rv: str) -> None:
        if self._early_transform() is not None:
            self.store.replace(items, rv, transformed=True)  # type: ignore[call-arg]
        else:
            self.store.replace(items, rv)

    def _page_limit(self, rv: str) -> int | None:
        if self.page_size <= 0:
            return None
        if self.page_size != DEFAULT_PAGE_SIZE:
            return self.page_size  # an explicit page size is always used
        if rv in ("", "0") or self._paginated_result:
            return self.page_size
        # A list "not older than" a known RV can be served whole from the
        # server's watch cache: don't page it (client-go does the same).
        return None

    def _paged_list(self, rv: str, stop: threading.Event) -> tuple[list[Any], str]:
        limit = self._page_limit(rv)
        items: list[Any] = []
        token: str | None = None
        paginated = False
        while True:
            if stop.is_set():
                raise _StopRequested()
            try:
                # A continued page's resourceVersion is the token's.
                page = self._list_page(stop, None if token else rv, limit, token)
            except ApiError as err:
                if token is None or not _is_gone(err):
                    raise
                logger.info(
                    "%s: continue token expired (%s); listing everything at rv %r",
                    self.name,
                    err,
                    rv,
                )
                page = self._list_page(stop, rv, None, None)
                if rv == "0":
                    # tools/pager List: the first page was paginated, so the
                    # result counts as paginated (the relist latch below).
                    self._paginated_result = True
                meta = page.get("metadata") or {}
                items = self._transform_page(list(_page_items(page)))
                return items, str(meta.get("resourceVersion") or "")
            page_items = self._transform_page(_page_items(page))
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if not paginated and token is None:
                return list(page_items), str(meta.get("resourceVersion") or "")
            items.extend(page_items)
            paginated = True
            if token is None:
                if rv == "0":
                    self._paginated_result = True
                return items, str(meta.get("resourceVersion") or "")

    # ------------------------------------------------------------------ streamed list

    def _watch_list_or_none(self, stop: threading.Event) -> Iterator[dict[str, Any]] | None:
        """The open stream after a streamed list was applied, or None to LIST instead."""
        try:
            return self._watch_list(stop)
        except (_StopRequested, WatchListInconsistencyError):
            raise
        except _WatchListUnsupported as err:
            self._watch_list_unsupported = True
            self._m_watch_list_fallbacks.inc()
            logger.info(
                "%s: the server does not support streaming lists (%s); listing from now on",
                self.name,
                err,
            )
        except _WatchListStalled as err:
            # Slow (a large state, a busy server or proxy) or a server that ignored
            # the request: LIST this time, stream again at the next relist.
            self._m_watch_list_fallbacks.inc()
            logger.warning("%s: %s; falling back to LIST for this attempt", self.name, err)
        except Exception as err:
            if stop.is_set():
                raise _StopRequested() from err
            self._m_watch_list_fallbacks.inc()
            logger.warning(
                "%s: the streamed list ended with an error, falling back to LIST/WATCH "
                "(making progress is better than deadlocking): %s",
                self.name,
                err,
            )
        return None

    def _watch_list(self, stop: threading.Event) -> Iterator[dict[str, Any]]:
        """client-go's ``watchList``: stream the state, replace the store, return the stream."""
        while True:
            if stop.is_set():
                raise _StopRequested()
            rv = self._rewatch_resource_version()
            start = self._clock.now()
            try:
                watch = self._open_watch(
                    stop, rv, send_initial_events=True, resource_version_match="NotOlderThan"
                )
            except _StopRequested:
                raise
            except TypeError as err:
                raise _WatchListUnsupported(
                    f"the ListerWatcher rejects the options: {err}"
                ) from err
            except Exception as open_err:
                if stop.is_set():
                    raise _StopRequested() from open_err
                if isinstance(open_err, TooManyRequestsError) or _is_connection_refused(open_err):
                    logger.info(
                        "%s: streamed list at rv %r failed (%s); backing off",
                        self.name,
                        rv,
                        open_err,
                    )
                    self._clock.sleep(self._backoff.next(), stop)
                    continue
                if _is_gone(open_err) or _is_too_large_rv(open_err):
                    with self._lock:
                        self._rv_unavailable = True
                    continue
                if isinstance(open_err, ApiError) and open_err.status in _WATCH_LIST_REJECTED:
                    raise _WatchListUnsupported(str(open_err)) from open_err
                raise
            self._m_watches.inc()
            try:
                result = self._collect_initial_events(watch, stop)
            except ApiError as err:
                self._close_quietly(watch)
                if _is_gone(err) or _is_too_large_rv(err):
                    continue  # the RV is marked unavailable: stream again from ""
                if isinstance(err, TooManyRequestsError) or err.status == 429:
                    self._clock.sleep(self._backoff.next(), stop)
                    continue
                raise
            except BaseException:
                self._close_quietly(watch)
                raise
            if result is None:  # ended early: stream again from the same RV
                self._close_quietly(watch)
                if self._clock.now() - start < VERY_SHORT_WATCH and not stop.is_set():
                    self._m_short.inc()
                    raise VeryShortWatchError(
                        f"very short watch: {self.name}: the streamed list ended at once "
                        "without its end bookmark"
                    )
                logger.info(
                    "%s: the streamed list ended before its end; streaming again", self.name
                )
                self._clock.sleep(self._backoff.next(), stop)
                continue
            objs, list_rv = result
            break
        with self._lock:
            self._rv_unavailable = False
        if self.check_watch_list_consistency:
            try:
                self._check_watch_list_consistency(objs, list_rv, stop)
            except BaseException:
                self._close_quietly(watch)
                raise
        self._lists += 1
        self._m_lists.inc()
        self._m_watch_lists.inc()
        if self._lists > 1:
            self._m_relists.inc()
        self._m_list_items.inc(len(objs))
        try:
            self._replace(objs, list_rv)
        except BaseException:
            self._close_quietly(watch)
            raise
        self._set_last_sync_rv(list_rv)
        self._publish_rv(list_rv)
        logger.debug("%s: streamed %d items at rv %s", self.name, len(objs), list_rv)
        return watch

    def _collect_initial_events(
        self, watch: Iterator[dict[str, Any]], stop: threading.Event
    ) -> tuple[list[Any], str] | None:
        """Read the initial events up to the end bookmark: ``(objects, list RV)``;
        None when the stream ended before it. Raises ``_WatchListUnsupported``
        when the server shows it ignored the request, an ``ApiError`` for an
        ERROR event (410 and too-large RV mark the RV unavailable first)."""
        with self._lock:
            self._watch = watch
        self._watch_list_progress = 0
        idle = threading.Event()
        done = threading.Event()
        watchdog = threading.Thread(
            target=self._watch_list_watchdog,
            args=(watch, stop, done, idle),
            name=f"reflector-{self.name}-watchlist",
            daemon=True,
        )
        watchdog.start()
        # Keyed by namespace/name, in arrival order: what a temporary store holds.
        items: dict[tuple[Any, Any], Any] = {}
        tf = self._early_transform()
        try:
            for event in watch:
                self._watch_list_progress += 1
                etype = event.get("type")
                obj = event.get("object")
                if etype == "ADDED" and type(obj) is dict:
                    meta = obj.get("metadata")
                    if type(meta) is dict:  # the hot path: one per object
                        items[(meta.get("namespace"), meta.get("name"))] = (
                            obj if tf is None else tf(obj)
                        )
                        continue
                if stop.is_set():
                    raise _StopRequested()
                if type(obj) is not dict:
                    logger.error(
                        "%s: %r event without an object in a streamed list, ignored: %.200r",
                        self.name,
                        etype,
                        event,
                    )
                    continue
                meta = obj.get("metadata")
                if etype == "ERROR":
                    code = obj.get("code")
                    try:
                        status = int(code) if code else 500
                    except (TypeError, ValueError):
                        status = 500
                    err = api_error_from_status(status, obj)
                    if _is_gone(err) or _is_too_large_rv(err):
                        with self._lock:
                            self._rv_unavailable = True
                    raise err
                if type(meta) is not dict:
                    logger.error(
                        "%s: %s event whose object has no metadata in a streamed list, "
                        "ignored: %.200r",
                        self.name,
                        etype,
                        obj,
                    )
                    continue
                if etype == "BOOKMARK":
                    annotations = meta.get("annotations")
                    if (
                        type(annotations) is dict
                        and annotations.get(INITIAL_EVENTS_ANNOTATION) == "true"
                    ):
                        return list(items.values()), str(meta.get("resourceVersion") or "")
                    # kube-apiserver sends no other bookmark before this one.
                    raise _WatchListUnsupported(
                        "a bookmark without the k8s.io/initial-events-end annotation came first"
                    )
                key = (meta.get("namespace"), meta.get("name"))
                if etype in ("ADDED", "MODIFIED"):
                    items[key] = obj if tf is None else tf(obj)
                elif etype == "DELETED":
                    items.pop(key, None)
                else:
                    logger.error(
                        "%s: unable to understand watch event of type %r, ignored: %.200r",
                        self.name,
                        etype,
                        event,
                    )
        finally:
            done.set()
            watchdog.join()
            with self._lock:
                self._watch = None
        if stop.is_set():
            raise _StopRequested()
        if idle.is_set():
            raise _WatchListStalled(
                f"the streamed list sent no event and no end bookmark for "
                f"{self.watch_list_timeout:g}s ({len(items)} objects received)"
            )
        return None

    def _watch_list_watchdog(
        self,
        watch: Iterator[dict[str, Any]],
        stop: threading.Event,
        done: threading.Event,
        idle: threading.Event,
    ) -> None:
        """Close the stream when ``stop`` is set, or when it makes no progress
        for ``watch_list_timeout`` seconds (``idle``: a slow stream, or a server
        that ignored the request and is now just watching; the reflector LISTs
        for this attempt and streams again at the next relist)."""
        seen = -1
        since = self._clock.now()
        while not done.wait(_POLL):
            if stop.is_set():
                self._close_quietly(watch)
                return
            progress = self._watch_list_progress
            now = self._clock.now()
            if progress != seen:
                seen, since = progress, now
            elif now - since >= self.watch_list_timeout:
                idle.set()
                self._close_quietly(watch)
                return

    def _check_watch_list_consistency(
        self, objs: list[Any], rv: str, stop: threading.Event
    ) -> None:
        """client-go's ``checkDataConsistency``: LIST at exactly ``rv`` and compare."""
        logger.warning(
            "%s: data consistency check for the streamed list is enabled: one more LIST", self.name
        )
        while True:
            if stop.is_set():
                raise _StopRequested()
            try:
                page = self._list_page(stop, rv, None, None, resource_version_match="Exact")
                break
            except _StopRequested:
                raise
            except Exception as err:  # retried until stop, as client-go
                logger.error(
                    "%s: the consistency check's LIST failed, retrying: %s", self.name, err
                )
                self._clock.sleep(1.0, stop)
        listed = self._transform_page(_page_items(page))  # as the streamed objects were

        def by_uid(items: list[Any]) -> dict[Any, Any]:
            return {
                (i.get("metadata") or {}).get("uid") or id(i): i for i in items if type(i) is dict
            }

        want, got = by_uid(listed), by_uid(objs)
        if want == got and len(listed) == len(objs):
            return
        missing = sorted(str(k) for k in want.keys() - got.keys())
        extra = sorted(str(k) for k in got.keys() - want.keys())
        changed = sorted(str(k) for k in want.keys() & got.keys() if want[k] != got[k])
        logger.error(
            "%s: data inconsistency detected: the streamed list at rv %s differs from a LIST: "
            "%d missing (uids %s), %d extra (%s), %d different (%s)",
            self.name,
            rv,
            len(missing),
            missing[:5],
            len(extra),
            extra[:5],
            len(changed),
            changed[:5],
        )
        raise WatchListInconsistencyError(
            f"data inconsistency detected for {self.name}: the streamed list at rv {rv} "
            f"differs from a LIST ({len(missing)} missing, {len(extra)} extra, "
            f"{len(changed)} different)"
        )

    # ------------------------------------------------------------------ watch

    def _watch_timeout(self) -> int:
        return int(MIN_WATCH_TIMEOUT + self._rand() * MIN_WATCH_TIMEOUT)

    def _watch_loop(
        self, stop: threading.Event, first: Iterator[dict[str, Any]] | None = None
    ) -> None:
        """Watch (``first``: an open stream to go on with, that of a streamed list)."""
        # The resourceVersion of the last decode error: a second one with no
        # progress since means the server keeps sending it; relist instead.
        decode_error_rv: str | None = None
        while not stop.is_set():
            rv = self.last_sync_resource_version()
            try:
                if first is not None:
                    watch, first = first, None
                else:
                    watch = self._open_watch(stop, rv)
                    self._m_watches.inc()
            except Exception as open_err:
                if stop.is_set():
                    return
                if isinstance(open_err, TooManyRequestsError) or _is_connection_refused(open_err):
                    logger.info(
                        "%s: watch at rv %s failed (%s); backing off", self.name, rv, open_err
                    )
                    self._clock.sleep(self._backoff.next(), stop)
                    continue
                raise
            with self._lock:
                self._watch = watch
            if stop.is_set():
                self._close_watch()
            try:
                err = self._handle_watch(watch, stop)
            finally:
                with self._lock:
                    self._watch = None
                self._close_quietly(watch)
            if stop.is_set():
                return
            if err is None:
                continue  # normal end: resume from the last RV, no relist
            if _is_gone(err):
                logger.info("%s: watch at rv %s expired (%s); relisting", self.name, rv, err)
                return
            if isinstance(err, TooManyRequestsError):
                self._clock.sleep(self._backoff.next(), stop)
                continue
            if _is_watch_decode_error(err):
                self._m_decode_errors.inc()
                resume = self.last_sync_resource_version()
                if resume == decode_error_rv:
                    logger.error("%s: %s again at rv %s; relisting", self.name, err, resume)
                    return
                decode_error_rv = resume
                logger.error(
                    "%s: watch ended: %s; re-watching from rv %s (the last applied)",
                    self.name,
                    err,
                    resume,
                )
                self._clock.sleep(self._backoff.next(), stop)
                continue
            logger.warning("%s: watch ended with an error: %s; relisting", self.name, err)
            return

    def _handle_watch(
        self, watch: Iterator[dict[str, Any]], stop: threading.Event
    ) -> BaseException | None:
        """Apply events to the store in order; return why the watch ended (None: normal).

        This is the per-event hot path: it avoids locks (the last-RV string is
        replaced atomically) and counts events locally, flushing the metric
        every ``_METRIC_FLUSH`` events and at the end.
        """
        start = self._clock.now()
        count = 0
        unflushed = 0
        store_add = self.store.add
        store_update = self.store.update
        store_delete = self.store.delete
        is_stopped = stop.is_set
        last_rv = ""
        try:
            for event in watch:
                if is_stopped():
                    return None
                etype = event.get("type")
                obj = event.get("object")
                if type(obj) is not dict:
                    if etype == "ERROR":
                        return api_error_from_status(500, {"message": repr(obj)})
                    logger.error(
                        "%s: %r watch event without an object, ignored: %.200r",
                        self.name,
                        etype,
                        event,
                    )
                    continue
                meta = obj.get("metadata")
                if type(meta) is not dict and etype in _OBJECT_EVENTS:
                    logger.error(
                        "%s: %s watch event whose object has no metadata, ignored: %.200r",
                        self.name,
                        etype,
                        obj,
                    )
                    continue
                try:
                    if etype == "MODIFIED":
                        store_update(obj)
                    elif etype == "ADDED":
                        store_add(obj)
                    elif etype == "DELETED":
                        store_delete(obj)
                    elif etype == "ERROR":
                        code = obj.get("code")
                        try:
                            status = int(code) if code else 500
                        except (TypeError, ValueError):
                            status = 500
                        return api_error_from_status(status, obj)
                    elif etype != "BOOKMARK":
                        logger.error(
                            "%s: unable to understand watch event of type %r, ignored: %.200r",
                            self.name,
                            etype,
                            event,
                        )
                        continue
                except Exception:  # a store error must not end the watch
                    logger.exception("%s: applying a %s event failed", self.name, etype)
                if type(meta) is dict:
                    rv = meta.get("resourceVersion")
                    if rv:
                        last_rv = self._last_sync_rv = str(rv)
                count += 1
                unflushed += 1
                if unflushed >= _METRIC_FLUSH:
                    self._m_events.inc(unflushed)
                    unflushed = 0
                if self._resync_error is not None:
                    return self._resync_error
        finally:
            if unflushed:
                self._m_events.inc(unflushed)
            if last_rv:
                self._publish_rv(last_rv)
        if self._resync_error is not None:
            return self._resync_error
        if count == 0 and self._clock.now() - start < VERY_SHORT_WATCH and not stop.is_set():
            self._m_short.inc()
            return VeryShortWatchError(
                f"very short watch: {self.name}: unexpected watch close - "
                "watch lasted less than a second and no items received"
            )
        return None

    def _close_watch(self) -> None:
        with self._lock:
            watch = self._watch
        self._close_quietly(watch)

    def _close_quietly(self, watch: Any) -> None:
        close = getattr(watch, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                logger.debug("%s: closing a watch failed", self.name, exc_info=True)

    def _watch_helper(
        self, stop: threading.Event, done: threading.Event, next_resync: float | None
    ) -> None:
        """Resync timer (first due at ``next_resync``), and closer of the open
        watch once ``stop`` is set."""
        period = self.resync_period
        while not done.is_set():
            if stop.is_set():
                self._close_watch()
                return
            if next_resync is not None and self._clock.now() >= next_resync:
                try:
                    if self.should_resync is None or self.should_resync():
                        self.store.resync()
                except Exception as err:
                    logger.warning("%s: resync failed: %s", self.name, err)
                    self._resync_error = err
                    self._close_watch()
                    return
                next_resync = self._clock.now() + period
            done.wait(_POLL)

    def __repr__(self) -> str:
        return f"Reflector({self.name!r}, rv={self.last_sync_resource_version()!r})"
