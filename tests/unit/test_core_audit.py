"""Audit of pycontroller's cache and workqueue against client-go: each test pins
a behaviour where pycontroller differed from client-go (or the DESIGN
contract) before its fix."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from support.fakes import FakeWatch, ScriptedListerWatcher, ev, obj, page

from pycontroller.cache import (
    ListWatch,
    Reflector,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from pycontroller.clock import FakeClock
from pycontroller.errors import ApiError, GoneError
from pycontroller.testing.wait import wait_for


@pytest.fixture
def stop() -> Any:
    ev = threading.Event()
    yield ev
    ev.set()


# ------------------------------------------------- SharedIndexInformer setters


def test_set_watch_error_handler_receives_list_errors(stop: threading.Event) -> None:
    """client-go shared_informer.go SetWatchErrorHandler (TestSharedInformerErrorHandling):
    a failing list reaches the informer's watch error handler."""
    clock = FakeClock()

    def failing_list(**_: Any) -> dict[str, Any]:
        raise ApiError(403, "Forbidden", "Access Denied")

    inf = SharedIndexInformer(ListWatch(failing_list, lambda **_: FakeWatch()), clock=clock)
    seen: list[tuple[Reflector, BaseException]] = []
    inf.set_watch_error_handler(lambda r, err: seen.append((r, err)))
    inf.start(stop)
    wait_for(lambda: bool(seen))
    reflector, err = seen[0]
    assert isinstance(reflector, Reflector)
    assert "Access Denied" in str(err)
    assert not inf.has_synced()


def test_set_watch_error_handler_and_set_transform_refused_after_start(
    stop: threading.Event,
) -> None:
    """client-go: SetWatchErrorHandler/SetTransform after start fail with
    "informer has already started"."""
    inf = SharedIndexInformer(
        ListWatch(lambda **_: page([obj("a", 1)], 1), lambda **_: FakeWatch()),
    )
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
    with pytest.raises(RuntimeError, match="already started"):
        inf.set_watch_error_handler(lambda r, e: None)
    with pytest.raises(RuntimeError, match="already started"):
        inf.set_transform(lambda o: o)


@pytest.mark.parametrize("fifo", ["real", "delta"])
def test_set_transform_before_start_applies_to_cache_and_handlers(
    stop: threading.Event, fifo: Any
) -> None:
    """client-go SetTransform: the transform set before Run runs on every
    object before it is cached or handed to a handler."""
    watch = FakeWatch()

    def upper(o: Any) -> Any:
        if isinstance(o, dict):
            o = {**o, "metadata": {**o["metadata"], "name": o["metadata"]["name"].upper()}}
        return o

    inf = SharedIndexInformer(
        ListWatch(lambda **_: page([obj("a", 1)], 1), lambda **_: watch), fifo=fifo
    )
    inf.set_transform(upper)
    names: list[str] = []
    inf.add_event_handler(_AddNames(names))
    inf.start(stop)
    assert wait_for_cache_sync(stop, inf.has_synced, timeout=5)
    watch.push("ADDED", obj("b", 2))
    wait_for(lambda: len(names) == 2)
    assert names == ["A", "B"]
    assert sorted(inf.get_store().list_keys()) == ["ns/A", "ns/B"]


class _AddNames:
    def __init__(self, names: list[str]) -> None:
        self.names = names

    def on_add(self, o: Any, is_in_initial_list: bool) -> None:
        self.names.append(o["metadata"]["name"])

    def on_update(self, old: Any, new: Any) -> None:
        pass

    def on_delete(self, o: Any) -> None:
        pass


# ------------------------------------------------------------------ Reflector


class _Store:
    def __init__(self) -> None:
        self.replaced: list[tuple[list[str], str]] = []

    def add(self, o: Any) -> None:
        pass

    def update(self, o: Any) -> None:
        pass

    def delete(self, o: Any) -> None:
        pass

    def replace(self, objs: list[Any], rv: str) -> None:
        self.replaced.append((sorted(o["metadata"]["name"] for o in objs), rv))

    def resync(self) -> None:
        pass


def _run_until(reflector: Reflector, clock: FakeClock, cond: Any, timeout: float = 5) -> None:
    """Run ``reflector`` in a thread, stepping ``clock`` past each backoff, until ``cond()``."""
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,), daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    try:
        while not cond():
            assert time.monotonic() < deadline, "condition not met in time"
            if clock.waiters():
                clock.step(2.0)
            time.sleep(0.002)
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_paging_latch_is_set_by_a_paginated_rv0_list_that_fell_back_to_a_full_list() -> None:
    """client-go tools/pager List: ``paginatedResult`` is true once a page had
    a continue token, also when a later page's token expired and the full
    list was used; reflector.go then keeps paging relists (the latch)."""
    clock = FakeClock()
    gone = {"kind": "Status", "code": 410, "reason": "Expired", "message": "x"}
    lw = ScriptedListerWatcher(
        lists=[
            page([obj("a", 1)], 10, "c1"),
            GoneError(410, "Expired", "continue token too old"),
            page([obj("a", 1), obj("b", 1)], 10),
            page([], 11),
        ],
        watches=[FakeWatch([ev("ERROR", gone)])],
    )
    store = _Store()
    r = Reflector(lw.as_listwatch(), store, "t", clock=clock)
    _run_until(r, clock, lambda: len(lw.watch_calls) == 2)
    assert store.replaced[0] == (["a", "b"], "10")
    assert lw.list_calls[3] == {"resource_version": "10", "limit": 500, "continue_": None}
