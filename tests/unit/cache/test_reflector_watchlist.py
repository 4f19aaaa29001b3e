"""Reflector streaming lists against scripted ListerWatchers: what is replaced,
which resourceVersion each stream starts from, and when it gives up for LIST."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from support.fakes import FakeWatch, RecordingStore, ScriptedListerWatcher, ev, obj, page

from pycontroller.cache import Reflector
from pycontroller.errors import ApiError
from pycontroller.testing import wait_for


def end(rv: int) -> dict[str, Any]:
    meta = {"resourceVersion": str(rv), "annotations": {"k8s.io/initial-events-end": "true"}}
    return {"type": "BOOKMARK", "object": {"metadata": meta}}


def status(code: int, reason: str) -> dict[str, Any]:
    return {
        "type": "ERROR",
        "object": {"kind": "Status", "code": code, "reason": reason, "message": reason},
    }


LW = ScriptedListerWatcher


Store = RecordingStore


def start(r: Reflector) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,), daemon=True)
    t.start()
    return stop, t


def finish(stop: threading.Event, t: threading.Thread) -> None:
    stop.set()
    t.join(5)
    assert not t.is_alive()


def test_stream_is_replaced_once_then_watched() -> None:
    lw, store = LW(), Store()
    stream = FakeWatch(
        [
            ev("ADDED", obj("a", 2)),
            ev("ADDED", obj("b", 3)),
            ev("MODIFIED", obj("a", 4)),  # tolerated before the end: latest wins
            ev("ADDED", obj("c", 5)),
            ev("DELETED", obj("c", 6)),
            end(7),
            ev("ADDED", obj("d", 8)),
        ]
    )
    lw.watches = [stream]
    r = Reflector(lw, store, "t")
    stop, t = start(r)
    try:
        wait_for(lambda: ("add", "d") in store.snapshot())
        assert store.snapshot() == [("replace", ["a", "b"], "7"), ("add", "d")]
        assert r.last_sync_resource_version() == "8"
        (call,) = lw.watch_calls
        assert call["send_initial_events"] is True
        assert call["resource_version_match"] == "NotOlderThan"
        assert call["allow_bookmarks"] is True and call["resource_version"] == ""
        assert lw.list_calls == []
    finally:
        finish(stop, t)


def test_gone_in_the_stream_restarts_from_a_consistent_read() -> None:
    lw, store = LW(), Store()
    first = FakeWatch([ev("ADDED", obj("a", 2)), end(3), ev("ADDED", obj("b", 4))])
    lw.watches = [first]
    r = Reflector(lw, store, "t")
    stop, t = start(r)
    try:
        wait_for(lambda: len(lw.watch_calls) == 1 and r.last_sync_resource_version() == "4")
        # The watch ends; its resume is 410: relist by streaming from "4"; that
        # stream says 410 too: stream again from "".
        lw.watches = [
            FakeWatch([status(410, "Expired")], end=True),
            FakeWatch([status(410, "Expired")], end=True),
            FakeWatch([ev("ADDED", obj("b", 9)), end(9)]),
        ]
        first.end()
        wait_for(lambda: ("replace", ["b"], "9") in store.snapshot())
        rvs = [(c.get("send_initial_events", False), c["resource_version"]) for c in lw.watch_calls]
        assert rvs[:4] == [(True, ""), (False, "4"), (True, "4"), (True, "")]
        assert lw.list_calls == []
    finally:
        finish(stop, t)


@pytest.mark.parametrize(
    "failure",
    [
        ApiError(422, "Invalid", "sendInitialEvents is forbidden"),
        TypeError("watch() got an unexpected keyword argument 'send_initial_events'"),
    ],
)
def test_unsupported_falls_back_to_list_and_remembers(failure: BaseException) -> None:
    lw, store = LW(), Store()
    lw.watches = [failure]
    lw.lists = [page([obj("a", 2)], 2)]
    r = Reflector(lw, store, "t")
    stop, t = start(r)
    try:
        wait_for(lambda: ("replace", ["a"], "2") in store.snapshot())
        assert not r.uses_watch_list()
        wait_for(lambda: len(lw.watch_calls) == 2)
        assert "send_initial_events" not in lw.watch_calls[1]
    finally:
        finish(stop, t)


def test_idle_stream_without_end_falls_back_after_the_timeout() -> None:
    lw, store = LW(), Store()
    lw.watches = [FakeWatch([ev("ADDED", obj("a", 2))])]  # then silence
    lw.lists = [page([obj("a", 2)], 2)]
    r = Reflector(lw, store, "t", watch_list_timeout=0.3)
    t0 = time.monotonic()
    stop, t = start(r)
    try:
        wait_for(lambda: ("replace", ["a"], "2") in store.snapshot())
        assert time.monotonic() - t0 >= 0.3
        # For this attempt only: a slow stream is no sign the server cannot
        # stream (client-go's fallback is per attempt); the next relist streams.
        assert len(lw.list_calls) == 1 and r.uses_watch_list()
    finally:
        finish(stop, t)


def test_other_errors_fall_back_once_without_remembering() -> None:
    lw, store = LW(), Store()
    lw.watches = [ApiError(500, "InternalError", "boom")]
    lw.lists = [page([obj("a", 2)], 2)]
    r = Reflector(lw, store, "t")
    stop, t = start(r)
    try:
        wait_for(lambda: ("replace", ["a"], "2") in store.snapshot())
        assert r.uses_watch_list()
    finally:
        finish(stop, t)


def test_plain_fakes_are_listed_unless_asked() -> None:
    lw, store = LW(), Store()
    lw.supports_watch_list = False  # type: ignore[misc]
    r = Reflector(lw, store, "t")
    assert not r.uses_watch_list()
    assert Reflector(lw, store, "t", use_watch_list=True).uses_watch_list()
    assert not Reflector(LW(), store, "t", use_watch_list=False).uses_watch_list()


def test_stop_while_streaming_returns_promptly() -> None:
    lw, store = LW(), Store()
    lw.watches = [FakeWatch([ev("ADDED", obj("a", 2))])]
    r = Reflector(lw, store, "t", watch_list_timeout=60)
    stop, t = start(r)
    wait_for(lambda: len(lw.watch_calls) == 1)
    t0 = time.monotonic()
    finish(stop, t)
    assert time.monotonic() - t0 < 2
    assert store.snapshot() == []
