"""EventRecorder / EventCorrelator: review against client-go ``tools/record``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller.clock import FakeClock
from pycontroller.errors import AlreadyExistsError, ApiError, NotFoundError
from pycontroller.record import (
    DEFAULT_AGGREGATE_INTERVAL,
    DEFAULT_AGGREGATE_MAX_EVENTS,
    DEFAULT_LRU_SIZE,
    DEFAULT_SPAM_BURST,
    DEFAULT_SPAM_QPS,
    EventCorrelator,
    EventRecorder,
    FakeRecorder,
)
from pycontroller.testing import wait_for


def pod(name: str = "foo") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "baz", "uid": f"uid-{name}"},
    }


class Sink:
    """Minimal events endpoint: create/patch with the API server's semantics.

    ``gate`` (when set) blocks every call until it is set; ``raise_for`` maps a
    reason to an exception raised (every time) for events with that reason.
    """

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.gate: threading.Event | None = None
        self.raise_for: dict[str, Exception] = {}
        self.fail: list[Exception] = []
        self._rv = 0
        self._lock = threading.Lock()

    def _enter(self, verb: str, name: str, reason: str) -> None:
        with self._lock:
            self.calls.append((verb, name))
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail:
            raise self.fail.pop(0)
        if reason in self.raise_for:
            raise self.raise_for[reason]

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self._enter("create", obj["metadata"]["name"], obj.get("reason", ""))
        with self._lock:
            key = (namespace or "default", obj["metadata"]["name"])
            if key in self.events:
                raise AlreadyExistsError(409, "AlreadyExists", "exists")
            self._rv += 1
            stored = dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(self._rv)))
            self.events[key] = stored
            return dict(stored)

    def patch(
        self, name: str, patch: Any, namespace: str | None = None, patch_type: str = "merge"
    ) -> dict[str, Any]:
        key = (namespace or "default", name)
        self._enter("patch", name, self.events.get(key, {}).get("reason", ""))
        with self._lock:
            if key not in self.events:
                raise NotFoundError(message="gone")
            self._rv += 1
            stored = dict(self.events[key], **patch)
            stored["metadata"] = dict(stored["metadata"], resourceVersion=str(self._rv))
            self.events[key] = stored
            return dict(stored)

    def by_reason(self, reason: str) -> dict[str, Any]:
        (ev,) = [e for e in self.events.values() if e["reason"] == reason]
        return ev


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def blocked_batch(recorder: EventRecorder, sink: Sink, emit: Any) -> None:
    """Run ``emit()`` while the writer is blocked, so its events form one batch."""
    sink.gate = threading.Event()
    n = len(sink.calls)
    recorder.event(pod("blocker"), "Normal", "Blocker", "m")
    wait_for(lambda: len(sink.calls) > n, 5)
    emit()
    sink.gate.set()


# -- events_cache.go: NewEventCorrelatorWithOptions / populateDefaults ----------


def test_zero_valued_correlator_options_take_client_go_defaults(clock: FakeClock) -> None:
    """populateDefaults: every zero-valued option means "the default"."""
    c = EventCorrelator(
        clock=clock, lru_size=0, max_events=0, max_interval=0, spam_burst=0, spam_qps=0
    )
    assert c._max_events == DEFAULT_AGGREGATE_MAX_EVENTS
    assert c._max_interval == DEFAULT_AGGREGATE_INTERVAL
    assert c._spam_burst == DEFAULT_SPAM_BURST
    assert c._spam_qps == DEFAULT_SPAM_QPS
    assert c._log_cache._size == DEFAULT_LRU_SIZE
    ev = {
        "metadata": {"name": "foo.1", "namespace": "baz"},
        "involvedObject": {"kind": "Pod", "name": "foo", "namespace": "baz"},
        "source": {"component": "c"},
        "type": "Normal",
        "reason": "R",
        "message": "m",
        "count": 1,
    }
    # max_events=0 must not turn every event into a "combined" one, lru_size=0
    # must not forget every event, spam_qps=0 must not disable the filter.
    first = c.correlate(ev)
    assert first.event["message"] == "m" and first.patch is None
    second = c.correlate(ev)
    assert second.event["count"] == 2 and second.patch is not None
    skipped = [c.correlate(ev).skip for _ in range(DEFAULT_SPAM_BURST)]
    assert skipped[-1] is True and skipped.count(True) == 2


# -- event.go recordToSink: each event is handled on its own ------------------


def test_unexpected_error_on_one_event_does_not_drop_the_others(
    sink: Sink, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="pycontroller.record")
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, clock=clock)
    try:
        sink.raise_for["Bad"] = TypeError("Object of type datetime is not JSON serializable")

        def emit() -> None:
            r.event(pod("a"), "Normal", "Before", "m")
            r.event(pod("b"), "Normal", "Bad", "m")
            r.event(pod("c"), "Normal", "After", "m")
            wait_for(lambda: r._queue.qsize() == 3, 5)

        blocked_batch(r, sink, emit)
        assert r.flush(5)
        reasons = sorted(e["reason"] for e in sink.events.values())
        assert reasons == ["After", "Before", "Blocker"]
        assert any("JSON serializable" in (rec.exc_text or "") for rec in caplog.records)
        assert r._thread.is_alive()
    finally:
        r.shutdown(5)


# -- events_cache.go eventObserve + updateState: skipped events still count ------


def test_spam_skipped_events_in_a_batch_still_count(sink: Sink, clock: FakeClock) -> None:
    """client-go writes each event before correlating the next, so an event the
    spam filter drops right after a written one still adds to the count the
    next written one carries; coalescing writes must not lose it."""
    correlator = EventCorrelator(clock=clock, spam_burst=2)
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, clock=clock, correlator=correlator)
    try:
        obj = pod()
        r.event(obj, "Warning", "Failed", "boom")  # token 1: create, count 1
        assert r.flush(5)

        def emit() -> None:
            r.event(obj, "Warning", "Failed", "boom")  # token 2: count 2, written
            r.event(obj, "Warning", "Failed", "boom")  # no token: skipped, count 3
            wait_for(lambda: r._queue.qsize() == 2, 5)

        blocked_batch(r, sink, emit)
        assert r.flush(5)
        assert sink.by_reason("Failed")["count"] == 2
        clock.step(300)  # one token
        r.event(obj, "Warning", "Failed", "boom")
        assert r.flush(5)
        assert sink.by_reason("Failed")["count"] == 4
    finally:
        r.shutdown(5)


def test_sequential_counts_follow_the_server_view(sink: Sink, clock: FakeClock) -> None:
    """updateState: the server's count wins when nothing was correlated since."""
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, clock=clock)
    try:
        obj = pod()
        r.event(obj, "Normal", "R", "m")
        assert r.flush(5)
        ev = sink.by_reason("R")
        key = ("baz", ev["metadata"]["name"])
        sink.events[key] = dict(ev, count=7)  # another writer bumped it
        r.event(obj, "Normal", "R", "m")
        assert r.flush(5)
        assert sink.by_reason("R")["count"] == 2  # our patch carries our count
        r.event(obj, "Normal", "R", "m")
        assert r.flush(5)
        assert sink.by_reason("R")["count"] == 3
    finally:
        r.shutdown(5)


# -- event.go recordEvent: NamespaceTerminating is not an error ------------------


def test_namespace_terminating_is_logged_quietly(
    sink: Sink, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pycontroller.record")
    body = {
        "kind": "Status",
        "reason": "Forbidden",
        "code": 403,
        "details": {"causes": [{"reason": "NamespaceTerminating", "message": "terminating"}]},
    }
    sink.fail = [ApiError(403, "Forbidden", "namespace baz is being terminated", body)]
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, clock=clock)
    try:
        r.event(pod(), "Normal", "R", "m")
        assert r.flush(5)
        assert [c[0] for c in sink.calls] == ["create"]  # not retried
        records = [rec for rec in caplog.records if "being terminated" in rec.getMessage()]
        assert records and all(rec.levelno == logging.DEBUG for rec in records)
    finally:
        r.shutdown(5)


def test_other_forbidden_is_still_an_error(
    sink: Sink, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pycontroller.record")
    sink.fail = [ApiError(403, "Forbidden", "events is forbidden: no RBAC")]
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, clock=clock)
    try:
        r.event(pod(), "Normal", "R", "m")
        assert r.flush(5)
        records = [rec for rec in caplog.records if "no RBAC" in rec.getMessage()]
        assert records and all(rec.levelno == logging.ERROR for rec in records)
    finally:
        r.shutdown(5)


# -- fake.go: FakeRecorder.AnnotatedEventf ----------------------------------------


def test_fake_recorder_annotated_eventf() -> None:
    f = FakeRecorder()
    f.annotated_eventf(pod(), {"b": "2", "a": "1"}, "Warning", "R", "n=%d", 3)
    f.annotated_eventf(pod(), {}, "Normal", "S", "plain")
    assert f.events == ["Warning R n=3 map[a:1 b:2]", "Normal S plain"]


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    wait_for(
        lambda: not [
            t
            for t in set(threading.enumerate()) - before
            if t.name.startswith("event-recorder") and t.is_alive()
        ],
        5,
    )
