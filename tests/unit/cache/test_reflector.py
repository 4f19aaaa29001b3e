"""Reflector unit tests: a scripted ListWatch and a FakeClock (client-go reflector_test.go)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.fakes import FakeWatch, ScriptedListerWatcher, ev, obj, page

from pycontroller.cache import DeltaFIFO, ExponentialBackoff, Indexer, ListWatch, Reflector
from pycontroller.clock import FakeClock
from pycontroller.errors import ApiError, GoneError, TooManyRequestsError
from pycontroller.testing.wait import wait_for


class RecordingStore:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.items: dict[str, Any] = {}
        self.lock = threading.Lock()
        self.resync_error: Exception | None = None

    def _key(self, o: Any) -> str:
        return str(o["metadata"]["name"])

    def add(self, o: Any) -> None:
        with self.lock:
            self.calls.append(("add", self._key(o), o["metadata"]["resourceVersion"]))
            self.items[self._key(o)] = o

    def update(self, o: Any) -> None:
        with self.lock:
            self.calls.append(("update", self._key(o), o["metadata"]["resourceVersion"]))
            self.items[self._key(o)] = o

    def delete(self, o: Any) -> None:
        with self.lock:
            self.calls.append(("delete", self._key(o), o["metadata"]["resourceVersion"]))
            self.items.pop(self._key(o), None)

    def replace(self, objs: list[Any], rv: str) -> None:
        with self.lock:
            self.calls.append(("replace", sorted(self._key(o) for o in objs), rv))
            self.items = {self._key(o): o for o in objs}

    def resync(self) -> None:
        with self.lock:
            self.calls.append(("resync",))
        if self.resync_error is not None:
            raise self.resync_error

    def snapshot(self) -> list[tuple[Any, ...]]:
        with self.lock:
            return list(self.calls)


def step_while_waiting(clock: FakeClock, cond: Callable[[], bool], step: float, timeout: float = 5):
    """Step the clock by ``step`` whenever someone sleeps on it, until ``cond()``."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        if clock.waiters():
            clock.step(step)
        time.sleep(0.002)


class Runner:
    def __init__(self, reflector: Reflector, method: str = "run") -> None:
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._target, args=(reflector, method), daemon=True)

    def _target(self, reflector: Reflector, method: str) -> None:
        try:
            getattr(reflector, method)(self.stop)
        except BaseException as err:
            self.error = err

    def __enter__(self) -> Runner:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)
        assert not self.thread.is_alive(), "reflector did not stop"


# ------------------------------------------------------------------------------------ tests


def test_first_list_then_watch_options_and_events_in_order() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("foo", 1)], 1)]
    w = FakeWatch(
        [
            ev("MODIFIED", obj("foo", 2)),
            ev("ADDED", obj("bar", 3)),
            ev("ADDED", obj("baz", 4)),
            ev("DELETED", obj("bar", 5)),
        ]
    )
    lw.watches = [w]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", clock=FakeClock())
    with Runner(r):
        wait_for(lambda: r.last_sync_resource_version() == "5")
    assert lw.list_calls == [{"resource_version": "0", "limit": 500, "continue_": None}]
    assert len(lw.watch_calls) == 1
    call = lw.watch_calls[0]
    assert call["resource_version"] == "1"
    assert call["allow_bookmarks"] is True
    assert 300 <= call["timeout_seconds"] < 600
    assert store.snapshot() == [
        ("replace", ["foo"], "1"),
        ("update", "foo", "2"),
        ("add", "bar", "3"),
        ("add", "baz", "4"),
        ("delete", "bar", "5"),
    ]
    assert w.closed.is_set(), "stop must close the open watch"


def test_paging_follows_continue_tokens_without_resource_version() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [
        page([obj("a", 1), obj("b", 1)], 10, "c1"),
        page([obj("c", 1), obj("d", 1)], 10, "c2"),
        page([obj("e", 1)], 10),
    ]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", page_size=2, clock=FakeClock())
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
    assert lw.list_calls == [
        {"resource_version": "0", "limit": 2, "continue_": None},
        {"resource_version": None, "limit": 2, "continue_": "c1"},
        {"resource_version": None, "limit": 2, "continue_": "c2"},
    ]
    assert store.snapshot()[0] == ("replace", ["a", "b", "c", "d", "e"], "10")
    assert lw.watch_calls[0]["resource_version"] == "10"


def test_expired_continue_token_falls_back_to_one_full_list() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [
        page([obj("a", 1)], 10, "c1"),
        GoneError(410, "Expired", "continue token too old"),
        page([obj("a", 1), obj("b", 1), obj("c", 1)], 12),
    ]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", clock=FakeClock())
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
    assert [c["resource_version"] for c in lw.list_calls] == ["0", None, "0"]
    assert lw.list_calls[2]["limit"] is None and lw.list_calls[2]["continue_"] is None
    assert store.snapshot()[0] == ("replace", ["a", "b", "c"], "12")
    assert r.last_sync_resource_version() == "12"


def test_server_ignoring_limit_is_one_page() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj(f"o{i}", 1) for i in range(7)], 3)]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", page_size=2, clock=FakeClock())
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
    assert len(lw.list_calls) == 1
    assert store.snapshot()[0][1] == [f"o{i}" for i in range(7)]


def test_watch_error_event_410_relists_at_last_rv_after_backoff() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 10), page([obj("a", 1)], 20)]
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    lw.watches = [FakeWatch([ev("MODIFIED", obj("a", 11)), ev("ERROR", gone)])]
    store = RecordingStore()
    backoff = ExponentialBackoff(clock=clock, rand=lambda: 0.0)
    r = Reflector(lw.as_listwatch(), store, "t", clock=clock, backoff=backoff)
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.list_calls) == 2, 0.8)
        wait_for(lambda: len(lw.watch_calls) == 2)
    # The RV is not "unavailable" after a watch 410: the relist asks for >= the last RV.
    assert [c["resource_version"] for c in lw.list_calls] == ["0", "11"]
    assert lw.list_calls[1]["limit"] is None  # no paging for a not-older-than list
    assert lw.watch_calls[1]["resource_version"] == "20"


def test_list_410_retries_at_once_with_consistent_read() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "x"}
    lw.lists = [
        page([obj("a", 1)], 10),
        GoneError(410, "Expired", "too old"),
        page([obj("a", 1), obj("b", 1)], 30),
    ]
    lw.watches = [FakeWatch([ev("ERROR", gone)])]
    store = RecordingStore()
    r = Reflector(
        lw.as_listwatch(), store, "t", clock=clock, backoff=ExponentialBackoff(clock=clock)
    )
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.watch_calls) == 2, 2.0)
    assert [c["resource_version"] for c in lw.list_calls] == ["0", "10", ""]
    assert store.snapshot()[-1] == ("replace", ["a", "b"], "30")


def test_too_large_resource_version_on_list_retries_with_consistent_read() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [
        page([obj("a", 1)], 20),
        ApiError(504, "Timeout", "Too large resource version: 20, current: 10"),
        page([obj("a", 1)], 30),
    ]
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "x"}
    lw.watches = [FakeWatch([ev("ERROR", gone)])]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=clock)
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.watch_calls) == 2, 2.0)
    assert [c["resource_version"] for c in lw.list_calls] == ["0", "20", ""]


def test_bookmark_advances_rv_and_watch_resumes_without_relist() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 5)]
    lw.watches = [
        FakeWatch(
            [ev("MODIFIED", obj("a", 6)), ev("BOOKMARK", {"metadata": {"resourceVersion": "9"}})],
            end=True,
        ),
        FakeWatch([ev("ADDED", obj("b", 12))], end=True),
    ]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", clock=clock)
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 3)
    assert [c["resource_version"] for c in lw.watch_calls] == ["5", "9", "12"]
    assert len(lw.list_calls) == 1
    # Bookmarks never touch the store.
    assert store.snapshot() == [("replace", ["a"], "5"), ("update", "a", "6"), ("add", "b", "12")]


def test_very_short_watch_relists() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([], 5), page([], 7)]
    lw.watches = [FakeWatch(end=True)]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=clock)
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.list_calls) == 2, 2.0)
        wait_for(lambda: len(lw.watch_calls) == 2)
    assert lw.watch_calls[1]["resource_version"] == "7"


@pytest.mark.parametrize(
    "failure",
    [ConnectionRefusedError("refused"), TooManyRequestsError(message="slow down", retry_after=1)],
)
def test_watch_start_refused_or_429_backs_off_and_retries_same_rv(failure: Exception) -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 5)]
    lw.watches = [failure, failure, failure, FakeWatch([ev("ADDED", obj("b", 6))])]
    sleeps: list[float] = []
    backoff = ExponentialBackoff(clock=clock, rand=lambda: 0.0)
    orig_next = backoff.next

    def recording_next() -> float:
        d = orig_next()
        sleeps.append(d)
        return d

    backoff.next = recording_next  # type: ignore[method-assign]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=clock, backoff=backoff)
    with Runner(r):
        step_while_waiting(clock, lambda: r.last_sync_resource_version() == "6", 0.4)
    assert len(lw.list_calls) == 1, "no relist on refused/429 watch starts"
    assert [c["resource_version"] for c in lw.watch_calls[:4]] == ["5", "5", "5", "5"]
    assert sleeps[:3] == [0.8, 1.6, 3.2]


def test_other_watch_start_error_relists_after_backoff() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([], 5), page([], 8)]
    lw.watches = [ApiError(500, "InternalError", "boom")]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=clock)
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.watch_calls) == 2, 1.0)
    assert len(lw.list_calls) == 2
    assert lw.watch_calls[1]["resource_version"] == "8"


def test_list_failure_is_retried_with_growing_backoff() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [ConnectionRefusedError("down")] * 3 + [page([obj("a", 1)], 4)]
    errors: list[BaseException] = []
    start = clock.now()
    r = Reflector(
        lw.as_listwatch(),
        RecordingStore(),
        "t",
        clock=clock,
        backoff=ExponentialBackoff(clock=clock, rand=lambda: 0.0),
        watch_error_handler=lambda _r, e: errors.append(e),
    )
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.watch_calls) == 1, 0.1)
    assert len(lw.list_calls) == 4
    assert len(errors) == 3 and all(isinstance(e, ConnectionRefusedError) for e in errors)
    # 0.8 + 1.6 + 3.2 of clock time had to pass before the 4th list.
    assert clock.now() - start >= 5.6 - 1e-9


def test_backoff_sequence_caps_and_resets_after_two_quiet_minutes() -> None:
    clock = FakeClock()
    b = ExponentialBackoff(clock=clock, rand=lambda: 0.0)
    seq = [b.next() for _ in range(9)]
    assert seq == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])
    clock.step(119)
    assert b.next() == pytest.approx(30.0)  # not quiet long enough
    clock.step(121)
    assert b.next() == pytest.approx(0.8)
    assert b.next() == pytest.approx(1.6)


def test_backoff_jitter_range() -> None:
    clock = FakeClock()
    b = ExponentialBackoff(clock=clock)
    for base in (0.8, 1.6, 3.2):
        d = b.next()
        assert base <= d < 2 * base
    assert ExponentialBackoff(clock=clock, rand=lambda: 0.5).next() == pytest.approx(1.2)


def test_resync_timer_calls_store_resync_when_allowed() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 5)]
    store = RecordingStore()
    allowed = [False]
    r = Reflector(
        lw.as_listwatch(),
        store,
        "t",
        resync_period=10,
        clock=clock,
        should_resync=lambda: allowed[0],
    )
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
        clock.step(10)
        time.sleep(0.2)
        assert ("resync",) not in store.snapshot()
        allowed[0] = True
        clock.step(10)
        wait_for(lambda: store.snapshot().count(("resync",)) == 1)
        clock.step(10)
        wait_for(lambda: store.snapshot().count(("resync",)) == 2)


def test_resync_error_ends_watch_and_relists() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([], 5), page([], 6)]
    store = RecordingStore()
    store.resync_error = RuntimeError("resync broke")
    r = Reflector(lw.as_listwatch(), store, "t", resync_period=1, clock=clock)
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
        clock.step(1)  # the resync timer fires and fails
        step_while_waiting(clock, lambda: len(lw.list_calls) == 2, 1.0)
    assert lw.idle[0].closed.is_set()


def test_stop_wakes_a_blocked_watch_promptly() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [page([], 5)]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=FakeClock())
    runner = Runner(r, "list_and_watch")
    with runner:
        wait_for(lambda: len(lw.watch_calls) == 1)
        t0 = time.monotonic()
        runner.stop.set()
        runner.thread.join(2)
        assert not runner.thread.is_alive()
        assert time.monotonic() - t0 < 2
    assert runner.error is None
    assert lw.idle[0].closed.is_set()


def test_list_and_watch_with_stop_already_set_does_nothing() -> None:
    lw = ScriptedListerWatcher()
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=FakeClock())
    stop = threading.Event()
    stop.set()
    r.list_and_watch(stop)
    r.run(stop)
    assert lw.list_calls == [] and lw.watch_calls == []


def test_list_error_propagates_from_list_and_watch() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [ApiError(403, "Forbidden", "access denied")]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=FakeClock())
    with pytest.raises(ApiError, match="access denied"):
        r.list_and_watch(threading.Event())


def test_paging_latch_keeps_paging_relists_when_rv0_list_was_paginated() -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "x"}
    lw.lists = [page([obj("a", 1)], 10, "c1"), page([obj("b", 1)], 10), page([], 11)]
    lw.watches = [FakeWatch([ev("ERROR", gone)])]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "t", clock=clock)
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.watch_calls) == 2, 2.0)
    assert lw.list_calls[2] == {"resource_version": "10", "limit": 500, "continue_": None}


def test_events_flow_into_a_delta_fifo_in_order() -> None:
    indexer = Indexer()
    fifo = DeltaFIFO(known_objects=indexer)
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 1)]
    w = FakeWatch()
    lw.watches = [w]
    r = Reflector(lw.as_listwatch(), fifo, "t", clock=FakeClock())
    with Runner(r):
        for rv in range(2, 50):
            w.push("MODIFIED", obj("a", rv))
        wait_for(lambda: r.last_sync_resource_version() == "49")
    deltas = fifo.pop(lambda d, initial: None, timeout=1)
    rvs = [d.object["metadata"]["resourceVersion"] for d in deltas]
    assert rvs == [str(i) for i in range(1, 50)]


class FakeClient:
    resource = "/v1/pods"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def list(self, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        self.calls.append(("list", namespace, params))
        return page([], 1)

    def watch(self, namespace: str | None = None, **params: Any) -> FakeWatch:
        self.calls.append(("watch", namespace, params))
        return FakeWatch(end=True)


def test_listwatch_from_client_maps_options_to_client_calls() -> None:
    fake = FakeClient()
    lw = ListWatch.from_client(fake, namespace="ns", label_selector="a=b")  # type: ignore[arg-type]
    lw.list(resource_version="", limit=500, continue_=None)
    lw.list(resource_version=None, limit=500, continue_="tok")
    lw.watch(resource_version="7", timeout_seconds=321, allow_bookmarks=True)
    assert fake.calls == [
        ("list", "ns", {"label_selector": "a=b", "limit": 500}),
        ("list", "ns", {"label_selector": "a=b", "limit": 500, "continue_": "tok"}),
        (
            "watch",
            "ns",
            {
                "label_selector": "a=b",
                "resource_version": "7",
                "timeout_seconds": 321,
                "allow_bookmarks": True,
            },
        ),
    ]
    assert "/v1/pods" in repr(lw)


def test_reflector_metrics_count_lists_and_events() -> None:
    from prometheus_client import REGISTRY

    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1), obj("b", 1)], 3)]
    w = FakeWatch([ev("ADDED", obj("c", 4))])
    lw.watches = [w]
    r = Reflector(lw.as_listwatch(), RecordingStore(), "metrics-test", clock=FakeClock())
    with Runner(r):
        wait_for(lambda: r.last_sync_resource_version() == "4")
    labels = {"name": "metrics-test"}
    assert REGISTRY.get_sample_value("reflector_lists_total", labels) == 1
    assert REGISTRY.get_sample_value("reflector_list_items_total", labels) == 2
    assert REGISTRY.get_sample_value("reflector_watch_events_total", labels) == 1
    assert REGISTRY.get_sample_value("reflector_last_resource_version", labels) == 4


def test_listed_items_get_kind_and_api_version_from_the_list() -> None:
    # kube-apiserver omits kind/apiVersion on the items of a built-in type's LIST.
    lw = ScriptedListerWatcher()
    own = {**obj("own", 1), "kind": "Other", "apiVersion": "x/v1"}
    first = {**page([obj("a", 1), own], 10, "c1"), "kind": "ConfigMapList", "apiVersion": "v1"}
    second = {**page([obj("b", 1)], 10), "kind": "ConfigMapList", "apiVersion": "v1"}
    lw.lists = [first, second]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", page_size=2, clock=FakeClock())
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
    listed = store.items
    assert listed["a"]["kind"] == "ConfigMap" and listed["a"]["apiVersion"] == "v1"
    assert listed["b"]["kind"] == "ConfigMap" and listed["b"]["apiVersion"] == "v1"
    assert listed["own"]["kind"] == "Other" and listed["own"]["apiVersion"] == "x/v1"
    assert listed["a"] is first["items"][0], "items are completed in place, not copied"


def test_list_without_kind_leaves_items_alone() -> None:
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 10)]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "t", clock=FakeClock())
    with Runner(r):
        wait_for(lambda: len(lw.watch_calls) == 1)
    assert "kind" not in store.items["a"] and "apiVersion" not in store.items["a"]


def test_page_items_fast_check_and_fallback() -> None:
    """Complete items are returned untouched; one incomplete item (or an item that
    is not an object) sends the page through the per-item fill."""
    from pycontroller.cache.reflector import _page_items

    complete = [{**obj(n, 1), "kind": "Thing", "apiVersion": "x/v1"} for n in "ab"]
    page_ = {"kind": "ThingList", "apiVersion": "x/v1", "items": complete}
    assert _page_items(page_) is complete
    mixed: list[Any] = [*complete, obj("c", 1), "not-an-object", {**obj("d", 1), "kind": "Own"}]
    out = _page_items({"kind": "ThingList", "apiVersion": "x/v1", "items": mixed})
    assert [i.get("kind") if isinstance(i, dict) else i for i in out] == [
        "Thing",
        "Thing",
        "Thing",
        "not-an-object",
        "Own",
    ]
    assert out[2]["apiVersion"] == "x/v1" and out[4]["apiVersion"] == "x/v1"


# -- watch input the reflector cannot apply -------------------------------------------


def decode_errors(name: str) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value("reflector_watch_decode_errors_total", {"name": name})
    return 0.0 if value is None else value


def test_undecodable_watch_line_rewatches_from_the_last_applied_rv(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """client-go: a decode error ends the watch; the next watch starts at the last RV
    applied, so the server sends the event behind the bad line again."""
    from pycontroller.client import watch_decode_error_event

    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 5)]
    bad = watch_decode_error_event("Expecting value: line 1 column 1 (char 0): b'{oops'")
    lw.watches = [
        # What WatchStream yields for [a@6, <garbage for b@7>, c@8]: a, then the error.
        FakeWatch([ev("MODIFIED", obj("a", 6)), bad], end=True),
        # The re-watch from rv 6: the server replays b@7 and c@8 from its history.
        FakeWatch([ev("ADDED", obj("b", 7)), ev("ADDED", obj("c", 8))]),
    ]
    store = RecordingStore()
    before = decode_errors("decode-test")
    backoff = ExponentialBackoff(clock=clock, rand=lambda: 0.0)
    r = Reflector(lw.as_listwatch(), store, "decode-test", clock=clock, backoff=backoff)
    with caplog.at_level("ERROR", logger="pycontroller.cache.reflector"), Runner(r):
        step_while_waiting(clock, lambda: r.last_sync_resource_version() == "8", 0.8)
    assert [c["resource_version"] for c in lw.watch_calls] == ["5", "6"]
    assert len(lw.list_calls) == 1  # no relist
    assert store.snapshot() == [
        ("replace", ["a"], "5"),
        ("update", "a", "6"),
        ("add", "b", "7"),
        ("add", "c", "8"),
    ]
    assert decode_errors("decode-test") == before + 1
    assert any(
        "decode-test" in m and "unable to decode" in m
        for m in (x.getMessage() for x in caplog.records)
    )


def test_repeated_decode_error_at_the_same_rv_relists() -> None:
    from pycontroller.client import watch_decode_error_event

    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 5), page([obj("a", 1), obj("b", 7)], 9)]
    bad = watch_decode_error_event("garbage")
    lw.watches = [FakeWatch([bad], end=True), FakeWatch([bad], end=True)]
    store = RecordingStore()
    before = decode_errors("decode-twice")
    backoff = ExponentialBackoff(clock=clock, rand=lambda: 0.0)
    r = Reflector(lw.as_listwatch(), store, "decode-twice", clock=clock, backoff=backoff)
    with Runner(r):
        step_while_waiting(clock, lambda: len(lw.watch_calls) == 3, 0.8)
    assert [c["resource_version"] for c in lw.watch_calls] == ["5", "5", "9"]
    assert len(lw.list_calls) == 2
    assert store.items.keys() == {"a", "b"}
    assert decode_errors("decode-twice") == before + 2


@pytest.mark.parametrize(
    ("event", "what"),
    [
        ({"type": "FROBNICATED", "object": obj("x", 7)}, "'FROBNICATED'"),
        ({"object": obj("x", 7)}, "None"),
        ({"type": "ADDED", "object": {"kind": "ConfigMap", "data": {}}}, "ADDED"),
        ({"type": "MODIFIED", "object": {"metadata": "nope"}}, "MODIFIED"),
        ({"type": "DELETED", "object": ["not", "an", "object"]}, "'DELETED'"),
    ],
)
def test_unknown_event_types_and_objects_without_metadata_are_logged_and_skipped(
    event: dict[str, Any], what: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    lw = ScriptedListerWatcher()
    lw.lists = [page([obj("a", 1)], 5)]
    lw.watches = [FakeWatch([ev("MODIFIED", obj("a", 6)), event, ev("ADDED", obj("b", 8))])]
    store = RecordingStore()
    r = Reflector(lw.as_listwatch(), store, "odd-events", clock=clock)
    with caplog.at_level("ERROR", logger="pycontroller.cache.reflector"), Runner(r):
        wait_for(lambda: r.last_sync_resource_version() == "8")
    # The watch went on: nothing lost around the odd event, no relist, no re-watch.
    assert store.snapshot() == [("replace", ["a"], "5"), ("update", "a", "6"), ("add", "b", "8")]
    assert len(lw.list_calls) == 1 and len(lw.watch_calls) == 1
    errors = [x.getMessage() for x in caplog.records if x.levelname == "ERROR"]
    assert len(errors) == 1
    assert "odd-events" in errors[0] and what in errors[0]
