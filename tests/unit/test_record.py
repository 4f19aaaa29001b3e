"""EventRecorder and EventCorrelator: client-go's events_cache/event tests (reference §7.4)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller._time import format_rfc3339
from pycontroller.clock import FakeClock
from pycontroller.errors import AlreadyExistsError, ApiError, InvalidError, NotFoundError
from pycontroller.record import (
    AGGREGATE_MESSAGE_PREFIX,
    EventCorrelator,
    EventRecorder,
    FakeRecorder,
    get_event_key,
    get_spam_key,
    object_reference,
)
from pycontroller.testing import wait_for


class IntervalClock(FakeClock):
    """client-go's SimpleIntervalClock: every reading advances time by ``interval``."""

    def __init__(self, interval: float) -> None:
        super().__init__()
        self.interval = interval

    def now(self) -> float:
        value = super().now()
        self.step(self.interval)
        return value

    def time(self) -> float:
        value = super().time()
        self.step(self.interval)
        return value


POD: dict[str, Any] = {
    "kind": "Pod",
    "apiVersion": "v1",
    "metadata": {"name": "foo", "namespace": "baz", "uid": "bar", "resourceVersion": "7"},
}


def make_event(
    clock: FakeClock,
    reason: str = "Started",
    message: str = "some message",
    *,
    name: str = "foo",
    namespace: str = "baz",
    field_path: str = "",
    type: str = "Normal",
) -> dict[str, Any]:
    ts = format_rfc3339(clock.time())
    ref: dict[str, Any] = {
        "kind": "Pod",
        "apiVersion": "v1",
        "namespace": namespace,
        "name": name,
        "uid": f"uid-{name}",
    }
    if field_path:
        ref["fieldPath"] = field_path
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{int(clock.time() * 1e9):x}", "namespace": namespace},
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": "kublet.node1"},
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
        "type": type,
    }


def written(c: EventCorrelator, event: dict[str, Any], n: int = 1) -> Any:
    """Correlate ``event`` ``n`` times, recording state as a sink would; return the last result."""
    result = None
    for _ in range(n):
        result = c.correlate(event)
        if not result.skip:
            stored = dict(result.event)
            stored["metadata"] = dict(stored["metadata"], resourceVersion="1")
            c.update_state(stored)
    return result


# -- correlator (§7.4 cases 1-10) -------------------------------------------


def test_single_event() -> None:
    clock = IntervalClock(5)
    c = EventCorrelator(clock=clock)
    ev = make_event(clock)
    r = c.correlate(ev)
    assert not r.skip and r.patch is None
    assert r.event["count"] == 1
    assert r.event["firstTimestamp"] == r.event["lastTimestamp"]
    assert ev["count"] == 1  # argument not mutated


def test_identical_event_twice_counts_up_with_patch() -> None:
    clock = IntervalClock(5)
    c = EventCorrelator(clock=clock)
    first = make_event(clock)
    r1 = written(c, first)
    second = make_event(clock)
    r2 = c.correlate(second)
    assert r2.event["count"] == 2
    assert r2.event["metadata"]["name"] == r1.event["metadata"]["name"]
    assert r2.event["metadata"]["name"].startswith("foo.")
    assert r2.event["firstTimestamp"] == first["firstTimestamp"]
    assert r2.event["firstTimestamp"] != r2.event["lastTimestamp"]
    assert r2.patch == {
        "count": 2,
        "lastTimestamp": second["lastTimestamp"],
        "message": "some message",
    }


def test_ten_identical_then_one_more_counts_eleven() -> None:
    clock = IntervalClock(30)
    c = EventCorrelator(clock=clock)
    written(c, make_event(clock), 10)
    r = c.correlate(make_event(clock))
    assert r.event["count"] == 11
    assert not r.event["message"].startswith(AGGREGATE_MESSAGE_PREFIX)


def test_spam_filter_skips_after_burst() -> None:
    clock = IntervalClock(1)
    c = EventCorrelator(clock=clock)
    results = [c.correlate(make_event(clock)) for _ in range(26)]
    assert [r.skip for r in results[:25]] == [False] * 25
    r = c.correlate(make_event(clock))
    assert r.skip
    # A skipped event still counts (the count is kept before spam filtering).
    assert r.event["count"] == 27


def test_unique_events_on_different_objects() -> None:
    clock = IntervalClock(1)
    c = EventCorrelator(clock=clock)
    for i in range(30):
        written(c, make_event(clock, name=f"pod{i}"))
    r = c.correlate(make_event(clock, name="new"))
    assert r.event["count"] == 1 and not r.skip


def test_similar_events_aggregate_after_ten_messages() -> None:
    clock = IntervalClock(1)
    c = EventCorrelator(clock=clock)
    for i in range(9):
        written(c, make_event(clock, message=f"similar message {i}"))
    r = written(c, make_event(clock, message="similar message"))
    assert r.event["message"] == AGGREGATE_MESSAGE_PREFIX + "similar message"
    assert r.event["count"] == 1
    assert r.event["reason"] == "Started"
    assert r.event["involvedObject"]["name"] == "foo"
    assert r.event["metadata"]["name"].startswith("foo.")
    # One more similar event counts up on the aggregate event.
    r2 = c.correlate(make_event(clock, message="similar message 99"))
    assert r2.event["count"] == 2
    assert r2.event["metadata"]["name"] == r.event["metadata"]["name"]
    assert r2.patch is not None and r2.patch["count"] == 2


def test_different_field_path_is_not_deduplicated() -> None:
    clock = IntervalClock(1)
    c = EventCorrelator(clock=clock)
    written(c, make_event(clock, field_path="spec.containers{container1}"))
    r = c.correlate(make_event(clock, field_path="spec.containers{container2}"))
    assert r.event["count"] == 1 and r.patch is None


def test_aggregation_window_resets_after_interval() -> None:
    clock = IntervalClock(600)
    c = EventCorrelator(clock=clock)
    for i in range(9):
        written(c, make_event(clock, message=f"similar message {i}"))
    r = c.correlate(make_event(clock, message="similar message"))
    assert r.event["message"] == "similar message"
    assert r.event["count"] == 1


def test_spam_filter_keys() -> None:
    clock = IntervalClock(1)
    c = EventCorrelator(clock=clock, spam_burst=1)
    assert not c.correlate(make_event(clock, reason="Original")).skip
    assert c.correlate(make_event(clock, reason="Different")).skip  # same object+type

    def key_with_reason(event: Any) -> str:
        return get_spam_key(event) + str(event.get("reason"))

    c2 = EventCorrelator(clock=clock, spam_burst=1, spam_key_func=key_with_reason)
    assert not c2.correlate(make_event(clock, reason="Original")).skip
    assert not c2.correlate(make_event(clock, reason="Different")).skip
    assert c2.correlate(make_event(clock, reason="Different", message="other")).skip


def test_spam_filter_refills_one_token_per_300s() -> None:
    clock = FakeClock()
    c = EventCorrelator(clock=clock, spam_burst=2)
    assert not c.correlate(make_event(clock, reason="a")).skip
    assert not c.correlate(make_event(clock, reason="b")).skip
    assert c.correlate(make_event(clock, reason="c")).skip
    clock.step(299)
    assert c.correlate(make_event(clock, reason="d")).skip
    clock.step(2)
    assert not c.correlate(make_event(clock, reason="e")).skip
    assert c.correlate(make_event(clock, reason="f")).skip


def test_update_state_uses_server_view() -> None:
    clock = FakeClock()
    c = EventCorrelator(clock=clock)
    ev = make_event(clock)
    r = c.correlate(ev)
    server = dict(r.event, count=5)
    server["metadata"] = dict(r.event["metadata"], resourceVersion="42", name="srv-name")
    c.update_state(server)
    r2 = c.correlate(make_event(clock))
    assert r2.event["count"] == 6
    assert r2.event["metadata"]["name"] == "srv-name"
    assert r2.event["metadata"]["resourceVersion"] == "42"


def test_event_key_includes_message_and_field_path() -> None:
    clock = FakeClock()
    a = make_event(clock)
    assert get_event_key(a) != get_event_key(make_event(clock, message="other"))
    assert get_event_key(a) != get_event_key(make_event(clock, field_path="x"))
    assert get_spam_key(a) == get_spam_key(make_event(clock, reason="Other", message="m"))


def test_object_reference() -> None:
    assert object_reference(POD) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "namespace": "baz",
        "name": "foo",
        "uid": "bar",
        "resourceVersion": "7",
    }
    ref = {"kind": "Pod", "name": "foo", "namespace": "baz", "fieldPath": "spec.containers[2]"}
    assert object_reference(ref) == ref
    assert object_reference({"metadata": {}}) is None


# -- recorder over a fake sink ---------------------------------------------


class FakeSink:
    """An in-memory events endpoint with the API server's create/patch semantics."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail: list[Exception] = []
        self.gate: threading.Event | None = None
        self._rv = 0
        self._lock = threading.Lock()

    def _next_failure(self) -> None:
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail:
            raise self.fail.pop(0)

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        with self._lock:
            self.calls.append(("create", obj["metadata"]["name"]))
        self._next_failure()
        with self._lock:
            key = (namespace or "default", obj["metadata"]["name"])
            if key in self.events:
                raise AlreadyExistsError(409, "AlreadyExists", "exists")
            assert "resourceVersion" not in obj["metadata"]
            self._rv += 1
            stored = dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(self._rv)))
            self.events[key] = stored
            return dict(stored)

    def patch(
        self, name: str, patch: Any, namespace: str | None = None, patch_type: str = "merge"
    ) -> dict[str, Any]:
        with self._lock:
            self.calls.append(("patch", name))
        self._next_failure()
        with self._lock:
            key = (namespace or "default", name)
            if key not in self.events:
                raise NotFoundError(message="gone")
            self._rv += 1
            stored = dict(self.events[key], **patch)
            stored["metadata"] = dict(stored["metadata"], resourceVersion=str(self._rv))
            self.events[key] = stored
            return dict(stored)


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture
def recorder(sink: FakeSink) -> Iterator[EventRecorder]:
    r = EventRecorder(None, "eventTest", sink=sink, retry_interval=0.0, clock=FakeClock())
    yield r
    r.shutdown(timeout=5)


def test_eventf_builds_core_v1_event(recorder: EventRecorder, sink: FakeSink) -> None:
    ref = {
        "kind": "Pod",
        "apiVersion": "v1",
        "namespace": "baz",
        "name": "foo",
        "uid": "bar",
        "fieldPath": "spec.containers[2]",
    }
    recorder.eventf(ref, "Normal", "Started", "some verbose message: %d", 1)
    assert recorder.flush(5)
    assert len(sink.events) == 1
    ev = next(iter(sink.events.values()))
    assert ev["apiVersion"] == "v1" and ev["kind"] == "Event"
    assert ev["metadata"]["name"].startswith("foo.")
    int(ev["metadata"]["name"][len("foo.") :], 16)
    assert ev["metadata"]["namespace"] == "baz"
    assert ev["message"] == "some verbose message: 1"
    assert ev["involvedObject"] == ref
    assert ev["source"] == {"component": "eventTest"}
    assert ev["reportingComponent"] == "eventTest"
    assert ev["count"] == 1 and ev["type"] == "Normal" and ev["reason"] == "Started"
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2023-11-14T22:13:20Z"
    # Repeating it patches the same Event.
    recorder.eventf(ref, "Normal", "Started", "some verbose message: %d", 1)
    assert recorder.flush(5)
    assert len(sink.events) == 1
    assert next(iter(sink.events.values()))["count"] == 2
    assert [c[0] for c in sink.calls] == ["create", "patch"]


def test_event_from_api_object(recorder: EventRecorder, sink: FakeSink) -> None:
    recorder.event(POD, "Warning", "Failed", "it failed")
    assert recorder.flush(5)
    ev = next(iter(sink.events.values()))
    assert ev["involvedObject"] == {
        "kind": "Pod",
        "apiVersion": "v1",
        "namespace": "baz",
        "name": "foo",
        "uid": "bar",
        "resourceVersion": "7",
    }
    assert ev["type"] == "Warning"


def test_no_namespace_goes_to_default(recorder: EventRecorder, sink: FakeSink) -> None:
    node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1", "uid": "u"}}
    recorder.event(node, "Normal", "Ready", "ready")
    assert recorder.flush(5)
    ((ns, _),) = sink.events
    assert ns == "default"


def test_unsupported_type_dropped(
    recorder: EventRecorder, sink: FakeSink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="pycontroller.record")
    recorder.event(POD, "Foo", "Started", "x")
    recorder.event({"metadata": {}}, "Normal", "Started", "no name")
    recorder.event("not an object", "Normal", "Started", "x")  # type: ignore[arg-type]
    assert recorder.flush(5)
    assert sink.calls == []
    assert any("Unsupported event type" in r.getMessage() for r in caplog.records)


def test_ten_identical_events_one_object_count_ten(recorder: EventRecorder, sink: FakeSink) -> None:
    for _ in range(10):
        recorder.event(POD, "Normal", "Synced", "synced ok")
    assert recorder.flush(5)
    assert len(sink.events) == 1
    ev = next(iter(sink.events.values()))
    assert ev["count"] == 10
    ops = [c[0] for c in sink.calls]
    assert ops[0] == "create" and set(ops[1:]) <= {"patch"}
    assert len(ops) <= 10


def test_one_by_one_repeats_patch_each_time(recorder: EventRecorder, sink: FakeSink) -> None:
    for _ in range(5):
        recorder.event(POD, "Normal", "Synced", "synced ok")
        assert recorder.flush(5)
    assert [c[0] for c in sink.calls] == ["create"] + ["patch"] * 4
    assert next(iter(sink.events.values()))["count"] == 5


def test_burst_of_repeats_coalesces_into_one_patch(recorder: EventRecorder, sink: FakeSink) -> None:
    sink.gate = threading.Event()
    recorder.event(POD, "Normal", "Synced", "synced ok")
    wait_for(lambda: sink.calls, 5)
    assert sink.calls == [("create", sink.calls[0][1])]  # the writer is blocked in create
    for _ in range(9):
        recorder.event(POD, "Normal", "Synced", "synced ok")
    sink.gate.set()
    assert recorder.flush(5)
    assert [c[0] for c in sink.calls] == ["create", "patch"]
    ev = next(iter(sink.events.values()))
    assert ev["count"] == 10
    assert len(sink.events) == 1


def test_burst_on_new_event_creates_once_with_final_count(sink: FakeSink) -> None:
    sink.gate = threading.Event()
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0)
    try:
        r.event(POD, "Normal", "First", "m")
        wait_for(lambda: sink.calls, 5)
        for _ in range(4):
            r.event(POD, "Normal", "Second", "m")  # all queued behind the blocked write
        sink.gate.set()
        assert r.flush(5)
        assert [c[0] for c in sink.calls] == ["create", "create"]
        counts = sorted(e["count"] for e in sink.events.values())
        assert counts == [1, 4]
        # The correlator learnt the server's state: the next repeat patches count 5.
        r.event(POD, "Normal", "Second", "m")
        assert r.flush(5)
        assert sink.calls[-1][0] == "patch"
        assert sorted(e["count"] for e in sink.events.values()) == [1, 5]
    finally:
        sink.gate.set()
        r.shutdown()


def test_patch_404_creates(recorder: EventRecorder, sink: FakeSink) -> None:
    recorder.event(POD, "Normal", "Synced", "m")
    assert recorder.flush(5)
    sink.events.clear()  # the Event was deleted (TTL) behind our back
    recorder.event(POD, "Normal", "Synced", "m")
    assert recorder.flush(5)
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    ev = next(iter(sink.events.values()))
    assert ev["count"] == 2


def test_server_error_is_retried(recorder: EventRecorder, sink: FakeSink) -> None:
    sink.fail = [ApiError(500, "InternalError", "boom"), ConnectionRefusedError("down")]
    recorder.event(POD, "Normal", "Synced", "m")
    assert recorder.flush(5)
    assert len(sink.calls) == 3
    assert len(sink.events) == 1


def test_retries_give_up_after_max_tries(sink: FakeSink) -> None:
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, max_tries=3)
    try:
        sink.fail = [ApiError(503, "ServiceUnavailable", "x")] * 5
        r.event(POD, "Normal", "Synced", "m")
        assert r.flush(5)
        assert len(sink.calls) == 3
        assert sink.events == {}
    finally:
        r.shutdown()


def test_client_error_is_not_retried(recorder: EventRecorder, sink: FakeSink) -> None:
    sink.fail = [InvalidError(422, "Invalid", "bad")]
    recorder.event(POD, "Normal", "Synced", "m")
    assert recorder.flush(5)
    assert len(sink.calls) == 1
    # The recorder keeps working afterwards.
    recorder.event(POD, "Normal", "Other", "m2")
    assert recorder.flush(5)
    assert len(sink.events) == 1


def test_spam_filter_through_recorder(recorder: EventRecorder, sink: FakeSink) -> None:
    for i in range(30):
        recorder.event(POD, "Normal", f"Reason{i}", "m")
    assert recorder.flush(5)
    assert len(sink.events) == 25


def test_similar_events_aggregate_through_recorder(recorder: EventRecorder, sink: FakeSink) -> None:
    for i in range(12):
        recorder.eventf(POD, "Normal", "Scaled", "scaled to %d", i)
    assert recorder.flush(5)
    messages = sorted(e["message"] for e in sink.events.values())
    assert len(sink.events) == 10  # 9 distinct + one combined event counting up
    combined = [
        e for e in sink.events.values() if e["message"].startswith(AGGREGATE_MESSAGE_PREFIX)
    ]
    assert len(combined) == 1, messages
    assert combined[0]["count"] == 3


def test_full_queue_drops_without_blocking(
    sink: FakeSink, caplog: pytest.LogCaptureFixture
) -> None:
    sink.gate = threading.Event()
    r = EventRecorder(None, "c", sink=sink, queue_size=2, retry_interval=0.0)
    caplog.set_level(logging.ERROR, logger="pycontroller.record")
    try:
        r.event(POD, "Normal", "R0", "m")
        wait_for(lambda: sink.calls, 5)
        for i in range(1, 20):  # the writer is blocked: 2 fit in the queue, 17 are dropped
            r.event(POD, "Normal", f"R{i}", "m")
        assert sum("queue full" in rec.getMessage() for rec in caplog.records) == 17
        sink.gate.set()
        assert r.flush(5)
        assert sorted(e["reason"] for e in sink.events.values()) == ["R0", "R1", "R2"]
    finally:
        sink.gate.set()
        r.shutdown()


def test_bad_format_never_raises(recorder: EventRecorder, sink: FakeSink) -> None:
    recorder.eventf(POD, "Normal", "Bad", "%d %d", "x")
    assert recorder.flush(5)
    assert len(sink.events) == 1


def test_annotated_eventf(recorder: EventRecorder, sink: FakeSink) -> None:
    recorder.annotated_eventf(POD, {"a": "b"}, "Normal", "R", "n=%s", 3)
    assert recorder.flush(5)
    ev = next(iter(sink.events.values()))
    assert ev["metadata"]["annotations"] == {"a": "b"}
    assert ev["message"] == "n=3"


def test_shutdown_flushes_then_drops(sink: FakeSink) -> None:
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0)
    for i in range(5):
        r.event(POD, "Normal", f"R{i}", "m")
    r.shutdown(timeout=5)
    assert len(sink.events) == 5
    r.event(POD, "Normal", "Late", "m")
    assert r.flush(1)
    assert len(sink.events) == 5
    r.shutdown()  # idempotent
    assert not r._thread.is_alive()


def test_shutdown_abandons_retry_sleep(sink: FakeSink) -> None:
    r = EventRecorder(None, "c", sink=sink, retry_interval=3600.0)
    sink.fail = [ApiError(500, "InternalError", "x")] * 3
    r.event(POD, "Normal", "R", "m")
    wait_for(lambda: sink.calls, 5)
    assert not r.flush(0.1)
    r.shutdown(timeout=0.1)
    r._thread.join(5)
    assert not r._thread.is_alive()


def test_distinct_names_under_a_frozen_clock(sink: FakeSink) -> None:
    r = EventRecorder(None, "c", sink=sink, retry_interval=0.0, clock=FakeClock())
    try:
        r.event(POD, "Normal", "A", "m")
        r.event(POD, "Normal", "B", "m")
        assert r.flush(5)
        assert len(sink.events) == 2
    finally:
        r.shutdown()


def test_empty_component_rejected(sink: FakeSink) -> None:
    with pytest.raises(ValueError):
        EventRecorder(None, "", sink=sink)


def test_fake_recorder() -> None:
    f = FakeRecorder()
    f.eventf(POD, "Normal", "Started", "n=%d", 2)
    f.event(POD, "Warning", "Failed", "x")
    assert f.events == ["Normal Started n=2", "Warning Failed x"]


def test_tombstone_is_unwrapped(recorder: EventRecorder, sink: FakeSink) -> None:
    from pycontroller.cache import DeletedFinalStateUnknown

    recorder.event(DeletedFinalStateUnknown("baz/foo", POD), "Normal", "Deleted", "gone")  # type: ignore[arg-type]
    assert recorder.flush(5)
    ev = next(iter(sink.events.values()))
    assert ev["involvedObject"]["name"] == "foo"


def test_undecodable_reply_is_a_failed_attempt(recorder: EventRecorder, sink: FakeSink) -> None:
    # A 2xx reply whose body is not JSON surfaces as ValueError from the client.
    sink.fail = [ValueError("Expecting value: line 1 column 1 (char 0)")]
    recorder.event(POD, "Normal", "R", "m")
    assert recorder.flush(5)
    assert [c[0] for c in sink.calls] == ["create", "create"]
    assert len(sink.events) == 1
    assert recorder._thread.is_alive()


def test_unexpected_error_drops_the_batch_not_the_writer_thread(
    recorder: EventRecorder, sink: FakeSink, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="pycontroller.record")
    sink.fail = [RuntimeError("sink bug")]
    recorder.event(POD, "Normal", "First", "m")
    assert recorder.flush(5)
    assert recorder._thread.is_alive()
    assert any("sink bug" in (rec.exc_text or "") for rec in caplog.records)
    recorder.event(POD, "Normal", "Second", "m")
    assert recorder.flush(5)
    assert [e["reason"] for e in sink.events.values()] == ["Second"]


def test_shutdown_with_full_queue_returns(sink: FakeSink) -> None:
    sink.gate = threading.Event()
    r = EventRecorder(None, "c", sink=sink, queue_size=2, retry_interval=0.0)
    try:
        r.event(POD, "Normal", "R0", "m")
        wait_for(lambda: sink.calls, 5)
        r.event(POD, "Normal", "R1", "m")
        r.event(POD, "Normal", "R2", "m")  # the queue is now full; the writer is blocked
        done = threading.Event()
        t = threading.Thread(target=lambda: (r.shutdown(timeout=0.2), done.set()), daemon=True)
        t.start()
        assert done.wait(5), "shutdown blocked on a full queue"
    finally:
        sink.gate.set()
    r._thread.join(5)
    assert not r._thread.is_alive()
    assert r.flush(1)  # the dropped events are no longer pending


def test_recorder_writes_through_its_own_token_bucket() -> None:
    """client-go's broadcaster has its own budget: Events never spend the tokens
    the controller's other clients on the same ApiClient share."""
    from kubernetes.client import ApiClient, Configuration

    from pycontroller.client import TokenBucketRateLimiter, rate_limiter_for

    cfg = Configuration()
    cfg.host = "http://127.0.0.1:9"
    api = ApiClient(configuration=cfg)
    own = EventRecorder(api, "budget-test")
    given = TokenBucketRateLimiter(1, 1)
    shared = EventRecorder(api, "budget-test-2", rate_limiter=given)
    try:
        assert own._sink._rate_limiter is not rate_limiter_for(api)  # type: ignore[attr-defined]
        assert shared._sink._rate_limiter is given  # type: ignore[attr-defined]
    finally:
        own.shutdown(0)
        shared.shutdown(0)
