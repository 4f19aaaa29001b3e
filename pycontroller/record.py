"""Event recording: client-go's ``tools/record`` (EventRecorder + EventCorrelator).

``EventRecorder.event(obj, type, reason, message)`` builds a core/v1 Event
about ``obj`` and hands it to a background thread through a bounded queue;
the caller never blocks and never sees an exception (a full queue, an
unsupported type or an object without a name are logged and dropped).

The background thread runs every event through the ``EventCorrelator``:

1. aggregate: 10 distinct messages for the same object/type/reason within
   600 s turn into one event "(combined from similar events): <message>";
2. count/dedup: an event identical to one already written (same source,
   object, fieldPath, type, reason, message) becomes a PATCH of ``count``,
   ``lastTimestamp`` and ``message`` on the first Event instead of a new one;
3. spam filter: a token bucket per source+object+type (burst 25, one token
   per 300 s) drops the excess. Dropped events still increment the count
   kept in step 2, as in client-go.

Then it writes: PATCH when the correlator says the event was seen before
(CREATE if that PATCH answers 404), CREATE otherwise; the server's reply
updates the correlator. Events the thread finds queued together that land on
the same Event object are coalesced into one write with the final count (a
burst of repeats costs one PATCH, not one per repeat; client-go writes each).
Transport errors, undecodable replies, 429 and 5xx are retried (up to
``max_tries`` attempts, ``retry_interval`` apart, the first sleep randomised);
other API errors drop the event. (client-go drops every status error; retrying
429/5xx is our deliberate deviation, since the API server asks for a retry.)

Any other error while correlating or writing an event drops that event (or
that coalesced write; logged), never the batch's other events, and the thread
carries on: the writer loop is a deliberate thread boundary. AlreadyExists and
NamespaceTerminating rejections are expected and logged at debug level only.

Events have their own request budget: the recorder's client takes tokens
from its own bucket (``rate_limiter=``, default QPS 20 / burst 30), never
from the bucket the controller's other clients on the same ``ApiClient``
share, so a burst of Events never delays a reconcile's writes (as in
controller-runtime, whose event broadcaster gets a client of its own).

``flush(timeout)`` waits until every accepted event has been written or
dropped, so tests need not sleep; ``shutdown()`` flushes and stops the thread
and never blocks indefinitely (events still queued after the timeout are
dropped).
"""

from __future__ import annotations

import collections
import logging
import queue
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import urllib3

from pycontroller._time import format_rfc3339
from pycontroller.client import RateLimiter, ResourceClient, TokenBucketRateLimiter
from pycontroller.clock import REAL_CLOCK, Clock
from pycontroller.errors import AlreadyExistsError, ApiError, NotFoundError
from pycontroller.flowcontrol import TokenBucket
from pycontroller.labels import is_dns1123_subdomain

logger = logging.getLogger(__name__)

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "CorrelationResult",
    "EventCorrelator",
    "EventRecorder",
    "EventSink",
    "FakeRecorder",
    "Recorder",
]

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"
_VALID_TYPES = frozenset({EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING})

# client-go defaults (tools/record/events_cache.go, event.go).
DEFAULT_LRU_SIZE = 4096
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL = 600.0
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
DEFAULT_QUEUE_SIZE = 1000
DEFAULT_MAX_TRIES = 12
DEFAULT_RETRY_INTERVAL = 10.0
# Most events the writer thread takes off the queue at once (and may coalesce).
_MAX_BATCH = 256

AGGREGATE_MESSAGE_PREFIX = "(combined from similar events): "
# The Status cause the API server gives when a namespace is being deleted.
_NAMESPACE_TERMINATING = "NamespaceTerminating"

Event = dict[str, Any]


_name_lock = threading.Lock()
_last_name_ns = 0


def _unique_name_suffix(clock: Clock) -> str:
    """Hex nanoseconds of ``clock.time()``, strictly increasing within the process.

    client-go uses the raw UnixNano; two events about one object in the same
    nanosecond (or under a fake clock that did not move) would then share a
    name and the second create would fail with AlreadyExists.
    """
    global _last_name_ns
    with _name_lock:
        ns = max(int(clock.time() * 1e9), _last_name_ns + 1)
        _last_name_ns = ns
    return f"{ns:x}"


def _ref(event: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = event.get("involvedObject")
    return ref if isinstance(ref, Mapping) else {}


def _source(event: Mapping[str, Any]) -> Mapping[str, Any]:
    src = event.get("source")
    return src if isinstance(src, Mapping) else {}


def _join(*values: Any) -> str:
    """client-go's key concatenation: every value as a string, missing ones as ""."""
    return "".join(str(v or "") for v in values)


def get_event_key(event: Mapping[str, Any]) -> str:
    """client-go ``getEventKey``: everything that makes two events identical."""
    ref, src = _ref(event), _source(event)
    return _join(
        src.get("component"),
        src.get("host"),
        ref.get("kind"),
        ref.get("namespace"),
        ref.get("name"),
        ref.get("fieldPath"),
        ref.get("uid"),
        ref.get("apiVersion"),
        event.get("type"),
        event.get("reason"),
        event.get("message"),
    )


def get_spam_key(event: Mapping[str, Any]) -> str:
    """client-go ``getSpamKey``: source + object + type (no reason, no message)."""
    ref, src = _ref(event), _source(event)
    return _join(
        src.get("component"),
        src.get("host"),
        ref.get("kind"),
        ref.get("namespace"),
        ref.get("name"),
        ref.get("uid"),
        ref.get("apiVersion"),
        event.get("type"),
    )


def aggregate_by_reason(event: Mapping[str, Any]) -> tuple[str, str]:
    """client-go ``EventAggregatorByReasonFunc``: (aggregate key, local key = message)."""
    ref, src = _ref(event), _source(event)
    key = _join(
        src.get("component"),
        src.get("host"),
        ref.get("kind"),
        ref.get("namespace"),
        ref.get("name"),
        ref.get("uid"),
        ref.get("apiVersion"),
        event.get("type"),
        event.get("reason"),
        event.get("reportingComponent"),
        event.get("reportingInstance"),
    )
    return key, str(event.get("message") or "")


def _new_event(
    metadata: dict[str, Any],
    ref: dict[str, Any],
    type: str,
    reason: str,
    message: str,
    source: dict[str, Any],
    *,
    now: float,
    reporting_component: str | None,
    reporting_instance: str | None,
) -> Event:
    """A core/v1 Event seen once at ``now``; empty reporting fields are left out."""
    ts = format_rfc3339(now)
    event: Event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": metadata,
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
        "type": type,
    }
    if reporting_component:
        event["reportingComponent"] = reporting_component
    if reporting_instance:
        event["reportingInstance"] = reporting_instance
    return event


class _LRU:
    """A small LRU map (client-go uses golang-lru with 4096 entries)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: collections.OrderedDict[str, Any] = collections.OrderedDict()

    def get(self, key: str) -> Any | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def add(self, key: str, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self._size:
            self._data.popitem(last=False)


@dataclass
class _AggregateRecord:
    local_keys: set[str]
    last_timestamp: float


@dataclass
class _EventLog:
    count: int
    first_timestamp: str
    name: str
    resource_version: str

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> _EventLog:
        """What the count/dedup step remembers of ``event``."""
        meta = event.get("metadata") or {}
        return cls(
            count=int(event.get("count") or 1),
            first_timestamp=str(event.get("firstTimestamp") or ""),
            name=str(meta.get("name") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        )


@dataclass(frozen=True)
class CorrelationResult:
    """``event`` to write; ``patch`` (a merge patch) when it updates an existing Event; ``skip``."""

    event: Event
    patch: dict[str, Any] | None
    skip: bool


class EventCorrelator:
    """client-go's EventCorrelator: aggregate, then count/dedup, then spam-filter.

    As in client-go's ``NewEventCorrelatorWithOptions``, an option given as 0
    takes its default (cache size 4096, 10 messages in 600 s, burst 25 at one
    token per 300 s).

    Thread-safe (one internal lock), though the recorder's single writer
    thread is the only caller in practice. ``correlate`` may return a *new*
    event dict (aggregation, or a copy with count/name taken from the cache);
    it never mutates its argument.
    """

    def __init__(
        self,
        *,
        clock: Clock = REAL_CLOCK,
        lru_size: int = DEFAULT_LRU_SIZE,
        max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS,
        max_interval: float = DEFAULT_AGGREGATE_INTERVAL,
        spam_burst: int = DEFAULT_SPAM_BURST,
        spam_qps: float = DEFAULT_SPAM_QPS,
        spam_key_func: Callable[[Mapping[str, Any]], str] = get_spam_key,
        aggregate_key_func: Callable[[Mapping[str, Any]], tuple[str, str]] = aggregate_by_reason,
    ) -> None:
        # client-go's populateDefaults: a zero-valued option means the default.
        lru_size = lru_size or DEFAULT_LRU_SIZE
        max_events = max_events or DEFAULT_AGGREGATE_MAX_EVENTS
        max_interval = max_interval or DEFAULT_AGGREGATE_INTERVAL
        spam_burst = spam_burst or DEFAULT_SPAM_BURST
        spam_qps = spam_qps or DEFAULT_SPAM_QPS
        self._clock = clock
        self._lock = threading.Lock()
        self._aggregate_cache = _LRU(lru_size)
        self._log_cache = _LRU(lru_size)
        self._spam_cache = _LRU(lru_size)
        self._max_events = max_events
        self._max_interval = max_interval
        self._spam_burst = spam_burst
        self._spam_qps = spam_qps
        self._spam_key_func = spam_key_func
        self._aggregate_key_func = aggregate_key_func

    def correlate(self, event: Mapping[str, Any]) -> CorrelationResult:
        with self._lock:
            aggregated, key = self._aggregate_locked(event)
            observed, patch = self._observe_locked(aggregated, key)
            skip = not self._spam_accept_locked(observed)
            return CorrelationResult(observed, patch, skip)

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Remember the server's view (name, resourceVersion, count) of a written Event."""
        key, entry = get_event_key(event), _EventLog.of(event)
        with self._lock:
            self._log_cache.add(key, entry)

    def _update_state_after_write(self, event: Mapping[str, Any], sent_count: int) -> None:
        """``update_state`` for the reply to a write that carried ``count = sent_count``.

        client-go correlates the next event only after this one is written, so
        events it correlated meanwhile (spam-filtered ones still count) never
        exist. The recorder correlates a whole batch before writing it: keep
        the increments correlated after the written event on top of the
        server's count instead of losing them.
        """
        key, entry = get_event_key(event), _EventLog.of(event)
        with self._lock:
            last: _EventLog | None = self._log_cache.get(key)
            if last is not None and last.name == entry.name and last.count > sent_count:
                entry.count += last.count - sent_count
            self._log_cache.add(key, entry)

    def _aggregate_locked(self, event: Mapping[str, Any]) -> tuple[Event, str]:
        agg_key, local_key = self._aggregate_key_func(event)
        now = self._clock.now()
        record: _AggregateRecord | None = self._aggregate_cache.get(agg_key)
        if record is None or now - record.last_timestamp > self._max_interval:
            record = _AggregateRecord(set(), now)
        record.local_keys.add(local_key)
        record.last_timestamp = now
        self._aggregate_cache.add(agg_key, record)
        if len(record.local_keys) < self._max_events:
            return dict(event), get_event_key(event)
        # Too many similar events: keep the set bounded and emit the combined event.
        record.local_keys.pop()
        now = self._clock.time()
        ref = dict(_ref(event))
        meta = event.get("metadata") or {}
        combined = _new_event(
            {
                "name": f"{ref.get('name', '')}.{_unique_name_suffix(self._clock)}",
                "namespace": meta.get("namespace", ""),
            },
            ref,
            event.get("type", ""),
            event.get("reason", ""),
            AGGREGATE_MESSAGE_PREFIX + str(event.get("message") or ""),
            dict(_source(event)),
            now=now,
            reporting_component=event.get("reportingComponent"),
            reporting_instance=event.get("reportingInstance"),
        )
        return combined, agg_key

    def _observe_locked(self, event: Event, key: str) -> tuple[Event, dict[str, Any] | None]:
        patch: dict[str, Any] | None = None
        last: _EventLog | None = self._log_cache.get(key)
        if last is not None:
            meta = dict(event.get("metadata") or {})
            meta["name"] = last.name
            meta["resourceVersion"] = last.resource_version
            event = dict(event, metadata=meta)
            event["count"] = last.count + 1
            event["firstTimestamp"] = last.first_timestamp
            # The strategic two-way patch client-go computes from {count: 0,
            # lastTimestamp: zero, message: ""} carries exactly these fields.
            patch = {
                "count": event["count"],
                "lastTimestamp": event.get("lastTimestamp"),
                "message": event.get("message", ""),
            }
        self._log_cache.add(key, _EventLog.of(event))
        return event, patch

    def _spam_accept_locked(self, event: Event) -> bool:
        key = self._spam_key_func(event)
        now = self._clock.now()
        bucket: TokenBucket | None = self._spam_cache.get(key)
        if bucket is None:
            bucket = TokenBucket(self._spam_qps, self._spam_burst, clock=self._clock)
            self._spam_cache.add(key, bucket)
        return bucket.try_accept(now)


class EventSink(Protocol):
    """Where events are written: ``pycontroller.ResourceClient`` for core/v1 events fits."""

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

    def patch(
        self, name: str, patch: Any, namespace: str | None = None, patch_type: str = "merge"
    ) -> dict[str, Any]: ...


class Recorder(Protocol):
    """The recording seam controllers depend on (``EventRecorder``, ``FakeRecorder``)."""

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None: ...

    def eventf(
        self, obj: Mapping[str, Any], type: str, reason: str, fmt: str, *args: Any
    ) -> None: ...


# "%%" or Go's default verb "%v" (client-go formats with fmt.Sprintf): "%v" is
# never a Python conversion, so it can only mean Go's, which prints str(arg).
_GO_DEFAULT_VERB = re.compile(r"%([%v])")


def _sprintf(fmt: str, args: tuple[Any, ...]) -> str:
    if not args:
        return fmt
    try:
        return _GO_DEFAULT_VERB.sub(lambda m: "%%" if m.group(1) == "%" else "%s", fmt) % args
    except (TypeError, ValueError, KeyError):
        logger.warning("Bad event message format %r for args %r", fmt, args)
        return f"{fmt} {args!r}"


def object_reference(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The involvedObject for ``obj``: an API object dict, or an ObjectReference dict.

    Returns None when no name can be found (the event is then dropped).
    """
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        ref: dict[str, Any] = {
            "kind": obj.get("kind", ""),
            "apiVersion": obj.get("apiVersion", ""),
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
    else:
        fields = ("kind", "apiVersion", "namespace", "name", "uid", "resourceVersion", "fieldPath")
        ref = {f: obj[f] for f in fields if f in obj}
    ref = {k: v for k, v in ref.items() if v}
    if not ref.get("name"):
        return None
    return ref


class EventRecorder:
    """Records core/v1 Events about objects, as client-go's recorder + broadcaster + sink.

    ``api_client`` is a ``kubernetes.client.ApiClient`` (events are written
    through a ``ResourceClient`` for core/v1 events); tests may pass ``sink=``
    instead. ``component`` is the event source (``source.component`` and
    ``reportingComponent``); ``host`` the optional ``source.host`` /
    ``reportingInstance``. ``rate_limiter`` paces the recorder's writes; by
    default a bucket of its own (QPS 20, burst 30), not the one the
    ``api_client``'s other clients share. Recorders may share one limiter
    (``Manager`` gives all of its recorders one).

    Thread-safe; ``event`` and ``eventf`` never block and never raise. After
    ``shutdown()`` further events are dropped (with a debug log).
    """

    def __init__(
        self,
        api_client: Any,
        component: str,
        *,
        host: str = "",
        clock: Clock = REAL_CLOCK,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        sink: EventSink | None = None,
        correlator: EventCorrelator | None = None,
        max_tries: int = DEFAULT_MAX_TRIES,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        if not component:
            raise ValueError("component must not be empty")
        if sink is None:
            sink = ResourceClient(
                api_client,
                "",
                "v1",
                "events",
                rate_limiter=rate_limiter if rate_limiter is not None else TokenBucketRateLimiter(),
            )
        self.component = component
        self.host = host
        self._clock = clock
        self._sink = sink
        self._correlator = correlator or EventCorrelator(clock=clock)
        self._max_tries = max(1, max_tries)
        self._retry_interval = retry_interval
        self._queue: queue.Queue[Event | None] = queue.Queue(maxsize=max(1, queue_size))
        self._cond = threading.Condition()
        self._pending = 0  # accepted events not yet written or dropped
        self._closed = False
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"event-recorder-{component}", daemon=True
        )
        self._thread.start()

    # -- public API -------------------------------------------------------

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """Record an event about ``obj``; ``type`` is "Normal" or "Warning"."""
        self._generate(obj, None, type, reason, message)

    def eventf(self, obj: Mapping[str, Any], type: str, reason: str, fmt: str, *args: Any) -> None:
        """``event`` with ``message = fmt % args``."""
        self._generate(obj, None, type, reason, _sprintf(fmt, args))

    def annotated_eventf(
        self,
        obj: Mapping[str, Any],
        annotations: Mapping[str, str],
        type: str,
        reason: str,
        fmt: str,
        *args: Any,
    ) -> None:
        """``eventf`` with annotations on the Event object."""
        self._generate(obj, annotations, type, reason, _sprintf(fmt, args))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait (real time) until every accepted event is written or dropped. False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def shutdown(self, timeout: float | None = 10.0) -> None:
        """Stop accepting events, flush, then stop the thread, within ``timeout`` s in all.

        Events still queued after the timeout are dropped; retries in progress
        are abandoned (a write in flight is not waited for past the timeout).
        Idempotent.
        """
        with self._cond:
            if self._closed:
                return
            self._closed = True
        end = None if timeout is None else time.monotonic() + timeout
        if not self.flush(timeout):
            logger.warning("Event recorder %s: shutting down with unwritten events", self.component)
        self._stopping.set()
        # Never block on a full queue (the writer may be stuck in a slow
        # write): make room by dropping queued events, then add the sentinel.
        # No producer can refill it: ``_closed`` is set.
        while True:
            try:
                self._queue.put_nowait(None)
                break
            except queue.Full:
                try:
                    dropped = self._queue.get_nowait()
                except queue.Empty:
                    continue
                if dropped is not None:
                    self._done(1)
        self._thread.join(None if end is None else max(0.0, end - time.monotonic()))

    stop = shutdown

    # -- building ---------------------------------------------------------

    def _generate(
        self,
        obj: Mapping[str, Any],
        annotations: Mapping[str, str] | None,
        type: str,
        reason: str,
        message: str,
    ) -> None:
        if isinstance(obj, tuple) and isinstance(getattr(obj, "obj", None), Mapping):
            obj = obj.obj  # a DeletedFinalStateUnknown tombstone: its last known state
        if not isinstance(obj, Mapping):
            logger.error("Could not construct reference to %r, will not report event", obj)
            return
        ref = object_reference(obj)
        if ref is None:
            logger.error(
                "Could not construct reference to object without a name, will not report event:"
                " %s %s %s",
                type,
                reason,
                message,
            )
            return
        if type not in _VALID_TYPES:
            logger.error("Unsupported event type: %r (reason %s)", type, reason)
            return
        event = self._make_event(ref, annotations, type, reason, message)
        with self._cond:
            if self._closed:
                logger.debug(
                    "Event recorder %s is shut down, dropping event %s", self.component, reason
                )
                return
            try:
                self._queue.put_nowait(event)
            except queue.Full:
                logger.error(
                    "Event recorder %s: queue full, dropping event %s/%s %s: %s",
                    self.component,
                    ref.get("namespace", ""),
                    ref.get("name", ""),
                    reason,
                    message,
                )
                return
            self._pending += 1

    def _make_event(
        self,
        ref: dict[str, Any],
        annotations: Mapping[str, str] | None,
        type: str,
        reason: str,
        message: str,
    ) -> Event:
        now = self._clock.time()
        name = f"{ref['name']}.{_unique_name_suffix(self._clock)}"
        if not is_dns1123_subdomain(name):
            name = str(uuid.uuid4())
        meta: dict[str, Any] = {"name": name, "namespace": ref.get("namespace") or "default"}
        if annotations:
            meta["annotations"] = dict(annotations)
        source = {"component": self.component}
        if self.host:
            source["host"] = self.host
        return _new_event(
            meta,
            ref,
            type,
            reason,
            message,
            source,
            now=now,
            reporting_component=self.component,
            reporting_instance=self.host,
        )

    # -- writing (background thread) ---------------------------------------

    def _done(self, n: int) -> None:
        """``n`` accepted events were written or dropped."""
        with self._cond:
            self._pending -= n
            if self._pending == 0:
                self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            events = [e for e in batch if e is not None]
            try:
                if events and not self._stopping.is_set():
                    self._record_batch(events)
            except Exception:
                # Thread boundary (deliberate, like the controller's worker
                # boundary): this thread is the recorder's only writer, and
                # ``event()`` promises never to raise into the caller, so a
                # bug or an unforeseen error while writing one batch must not
                # end it (flush() would then time out and every later event
                # would be lost). The batch is dropped and logged.
                logger.exception(
                    "Event recorder %s: dropping %d event(s) after an unexpected error",
                    self.component,
                    len(events),
                )
            finally:
                self._done(len(events))
            if len(events) < len(batch):  # the shutdown sentinel
                return

    def _record_batch(self, events: list[Event]) -> None:
        """Correlate events in order, then write each target Event once.

        Events that correlate onto the same Event object (identical repeats,
        or similar ones aggregated) within one batch coalesce into a single
        write carrying the final count: a burst of N repeats costs one PATCH
        (or one CREATE with count N), not N writes. The first result of a
        group decides between create and patch.
        """
        groups: dict[tuple[str, str], tuple[bool, CorrelationResult]] = {}
        for event in events:
            try:
                result = self._correlator.correlate(event)
            except Exception:
                # As in client-go, events are handled one by one: an error on
                # one (a bad custom key function...) drops that one only.
                logger.exception(
                    "Event recorder %s: dropping event %s after an unexpected error",
                    self.component,
                    event.get("reason"),
                )
                continue
            if result.skip:
                logger.debug(
                    "Event recorder %s: spam filter dropped event %s",
                    self.component,
                    event["reason"],
                )
                continue
            meta = result.event["metadata"]
            key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
            first = groups.get(key)
            groups[key] = (first[0] if first else result.patch is not None, result)
        for (namespace, name), (is_patch, result) in groups.items():
            try:
                self._write_with_retries(result.event, result.patch if is_patch else None)
            except Exception:
                # An error client-go cannot have (e.g. annotations that do not
                # encode as JSON): drop this Event's write, not the batch's others.
                logger.exception(
                    "Event recorder %s: dropping event %s/%s after an unexpected error",
                    self.component,
                    namespace,
                    name,
                )

    def _write_with_retries(self, event: Event, patch: dict[str, Any] | None) -> None:
        tries = 0
        while True:
            if self._write(event, patch):
                return
            tries += 1
            if tries >= self._max_tries:
                logger.error(
                    "Event recorder %s: unable to write event %s after %d tries, giving up",
                    self.component,
                    event["metadata"]["name"],
                    tries,
                )
                return
            delay = self._retry_interval * (random.random() if tries == 1 else 1.0)
            if self._clock.sleep(delay, self._stopping):
                logger.debug("Event recorder %s: stopping, abandoning retries", self.component)
                return

    def _write(self, event: Event, patch: dict[str, Any] | None) -> bool:
        """One attempt. True when done (written or dropped for good), False to retry."""
        namespace = event["metadata"]["namespace"]
        name = event["metadata"]["name"]
        try:
            written: dict[str, Any] | None = None
            if patch is not None and int(event.get("count") or 1) > 1:
                try:
                    written = self._sink.patch(name, patch, namespace=namespace)
                except NotFoundError:
                    written = None
            if written is None:
                body = dict(event)
                body["metadata"] = {
                    k: v for k, v in event["metadata"].items() if k != "resourceVersion"
                }
                written = self._sink.create(body, namespace=namespace)
        except ApiError as err:
            if isinstance(err, AlreadyExistsError) or any(
                isinstance(cause, Mapping) and cause.get("reason") == _NAMESPACE_TERMINATING
                for cause in err.causes
            ):
                # client-go: expected rejections, logged at V(5) only.
                logger.debug(
                    "Server rejected event %s/%s (will not retry): %s", namespace, name, err
                )
                return True
            if err.status == 429 or err.status >= 500:
                logger.warning(
                    "Unable to write event %s/%s (may retry after sleeping): %s",
                    namespace,
                    name,
                    err,
                )
                return False
            logger.error("Server rejected event %s/%s (will not retry): %s", namespace, name, err)
            return True
        except (OSError, urllib3.exceptions.HTTPError, ValueError) as err:
            # Transport errors, and replies that do not decode (ValueError,
            # e.g. a proxy's non-JSON 2xx body): this attempt failed.
            logger.warning(
                "Unable to write event %s/%s (may retry after sleeping): %s", namespace, name, err
            )
            return False
        if isinstance(written, Mapping):
            self._correlator._update_state_after_write(written, int(event.get("count") or 1))
        return True


class FakeRecorder:
    """A Recorder for tests: appends ``"<type> <reason> <message>"`` to ``events``.

    Unlike EventRecorder it has no correlation, no spam filter and no
    background thread. ``events`` is a plain list guarded by a lock; read
    it after the code under test returned.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[str] = []

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        with self._lock:
            self.events.append(f"{type} {reason} {message}")

    def eventf(self, obj: Mapping[str, Any], type: str, reason: str, fmt: str, *args: Any) -> None:
        self.event(obj, type, reason, _sprintf(fmt, args))

    def annotated_eventf(
        self,
        obj: Mapping[str, Any],
        annotations: Mapping[str, str],
        type: str,
        reason: str,
        fmt: str,
        *args: Any,
    ) -> None:
        """``eventf`` plus ``" map[k:v ...]"`` (keys sorted) when there are annotations."""
        line = f"{type} {reason} {_sprintf(fmt, args)}"
        if annotations:
            line += " map[" + " ".join(f"{k}:{annotations[k]}" for k in sorted(annotations)) + "]"
        with self._lock:
            self.events.append(line)
