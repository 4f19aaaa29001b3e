"""A streamed list that stalls, or fails for a reason that says nothing about
the server's support, falls back to LIST for that attempt only: the next
relist streams again (client-go never turns streaming lists off)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.fakes import FakeWatch, RecordingStore, ScriptedListerWatcher, ev, obj, page

from pycontroller.cache import Reflector
from pycontroller.clock import FakeClock
from pycontroller.errors import ApiError
from pycontroller.testing.wait import wait_for

END = {"k8s.io/initial-events-end": "true"}


def end(rv: int) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {"metadata": {"resourceVersion": str(rv), "annotations": END}},
    }


def gone() -> dict[str, Any]:
    return {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
    }


LW = ScriptedListerWatcher


Store = RecordingStore


def step_until(clock: FakeClock, cond: Callable[[], bool], step: float = 1.0) -> None:
    """Step the fake clock (watch-list idle timer, backoffs) until ``cond()``."""
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        clock.step(step)
        time.sleep(0.005)


def run(r: Reflector) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    t = threading.Thread(target=r.run, args=(stop,), daemon=True)
    t.start()
    return stop, t


def test_a_stalled_stream_lists_once_and_the_next_relist_streams_again() -> None:
    clock = FakeClock()
    stalled = FakeWatch()  # the headers came, then nothing (a slow server or proxy)
    watches: list[Any] = [
        stalled,
        FakeWatch([gone()], end=True),  # the watch after the LIST: 410, relist
        FakeWatch([ev("ADDED", obj("b", 9)), end(9)]),
    ]
    lw, store = LW(watches, [page([obj("a", 2)], 2)]), Store()
    r = Reflector(lw, store, "t", clock=clock, watch_list_timeout=5)
    stop, t = run(r)
    try:
        step_until(clock, lambda: ("replace", ["a"], "2") in store.snapshot())
        assert stalled.closed.is_set()
        assert r.uses_watch_list()  # not switched off for good
        step_until(clock, lambda: ("replace", ["b"], "9") in store.snapshot())
        assert lw.streamed()[:3] == [True, False, True]
        assert len(lw.list_calls) == 1
        assert r.uses_watch_list()
    finally:
        stop.set()
        t.join(5)
    assert not t.is_alive()


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refusal_that_is_not_about_streaming_falls_back_once(status: int) -> None:
    lw = LW([ApiError(status, "Nope", "no"), FakeWatch()], [page([obj("a", 2)], 2)])
    store = Store()
    r = Reflector(lw, store, "t")
    stop, t = run(r)
    try:
        wait_for(lambda: ("replace", ["a"], "2") in store.snapshot(), timeout=5)
        assert r.uses_watch_list()
    finally:
        stop.set()
        t.join(5)
    assert not t.is_alive()
