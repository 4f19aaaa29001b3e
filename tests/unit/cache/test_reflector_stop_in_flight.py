"""``stop`` interrupts a LIST or a watch open in flight: the reflector (and
the informer running it) return at once, and what the abandoned request
returns later never reaches the store or a handler (an open watch is closed)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from support.fakes import FakeWatch, ev, obj, page

from pycontroller.cache import (
    Indexer,
    ListWatch,
    Reflector,
    ResourceEventHandlerFuncs,
    SharedIndexInformer,
)
from pycontroller.testing.wait import wait_for

# Generous for a loaded machine, far below any request timeout.
STOP_BOUND = 1.0


class BlockingLW:
    """``list``/``watch`` block until ``release`` (when told to), then answer."""

    def __init__(self, *, block_list: bool, block_watch: bool, watch_list: bool = False) -> None:
        self.supports_watch_list = watch_list
        self.block_list = block_list
        self.block_watch = block_watch
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.returned = threading.Event()
        self.watches: list[FakeWatch] = []
        self.lock = threading.Lock()

    def _block(self) -> None:
        self.entered.set()
        assert self.gate.wait(30)

    def list(self, **opts: Any) -> dict[str, Any]:
        if self.block_list:
            self._block()
        self.returned.set()
        return page([obj("a", 2), obj("b", 3)], 3)

    def watch(self, **opts: Any) -> FakeWatch:
        if self.block_watch:
            self._block()
        events = [ev("ADDED", obj("c", 4))]
        if opts.get("send_initial_events"):
            meta = {"resourceVersion": "4", "annotations": {"k8s.io/initial-events-end": "true"}}
            events.append({"type": "BOOKMARK", "object": {"metadata": meta}})
        w = FakeWatch(events)
        with self.lock:
            self.watches.append(w)
        self.returned.set()
        return w

    def listwatch(self) -> ListWatch:
        return ListWatch(self.list, self.watch, supports_watch_list=bool(self.supports_watch_list))


CASES = {
    "list": {"block_list": True, "block_watch": False},
    "watch-open": {"block_list": False, "block_watch": True},
    "streamed-list-open": {"block_list": False, "block_watch": True, "watch_list": True},
}


def stop_and_time(stop: threading.Event, thread: threading.Thread) -> float:
    t0 = time.monotonic()
    stop.set()
    thread.join(10)
    took = time.monotonic() - t0
    assert not thread.is_alive()
    return took


@pytest.mark.parametrize("case", list(CASES))
def test_reflector_stop_interrupts_a_request_in_flight(case: str) -> None:
    lw = BlockingLW(**CASES[case])
    store = Indexer()
    r = Reflector(lw.listwatch(), store, "t")
    stop = threading.Event()
    thread = threading.Thread(target=r.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert lw.entered.wait(5)
        before = sorted(store.list_keys())
        assert stop_and_time(stop, thread) < STOP_BOUND
    finally:
        lw.gate.set()
    # The abandoned request completes now: nothing of it is applied; a watch is closed.
    assert lw.returned.wait(5)
    if lw.block_watch:
        wait_for(lambda: bool(lw.watches) and lw.watches[-1].closed.is_set(), timeout=5)
    time.sleep(0.1)  # give a (wrong) late apply the chance to show
    assert sorted(store.list_keys()) == before


@pytest.mark.parametrize("case", list(CASES))
def test_informer_stop_interrupts_a_request_in_flight(case: str) -> None:
    lw = BlockingLW(**CASES[case])
    inf = SharedIndexInformer(lw.listwatch(), name="t")
    events: list[Any] = []
    inf.add_event_handler(
        ResourceEventHandlerFuncs(
            lambda o: events.append(("add", o["metadata"]["name"])),
            lambda a, b: events.append(("update", b["metadata"]["name"])),
            lambda o: events.append(("delete", o)),
        )
    )
    stop = threading.Event()
    thread = inf.start(stop)
    try:
        assert lw.entered.wait(5)
        if case == "watch-open":  # the LIST went through before the watch blocked
            wait_for(inf.has_synced, timeout=5)
            wait_for(lambda: len(events) == 2, timeout=5)
        seen = list(events)
        cached = sorted(inf.get_store().list_keys())
        assert stop_and_time(stop, thread) < STOP_BOUND
        assert inf.is_stopped()
    finally:
        lw.gate.set()
    assert lw.returned.wait(5)
    if lw.block_watch:
        wait_for(lambda: bool(lw.watches) and lw.watches[-1].closed.is_set(), timeout=5)
    time.sleep(0.1)  # give a (wrong) late delivery the chance to show
    assert events == seen
    assert sorted(inf.get_store().list_keys()) == cached
