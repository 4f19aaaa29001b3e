"""The garbage-collector policy (pycontroller/_gc.py): freeze survivors, reclaim cycles later."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller import _gc
from pycontroller._gc import MIDDLE_THRESHOLD, GCTuner, tune_gc


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def tuner() -> Iterator[tuple[GCTuner, Clock]]:
    clock = Clock()
    t = GCTuner(60.0, clock=clock)
    t.install()
    try:
        yield t, clock
    finally:
        t.uninstall()
        gc.collect()


def test_survivors_of_a_full_collection_are_frozen(tuner: tuple[GCTuner, Clock]) -> None:
    t, _ = tuner
    kept = [{"a": [i]} for i in range(1000)]
    before = t.freezes
    gc.collect()
    assert t.freezes == before + 1
    assert gc.get_freeze_count() >= len(kept)


def test_frozen_objects_without_cycles_are_freed_at_once(tuner: tuple[GCTuner, Clock]) -> None:
    node = Node()
    ref = weakref.ref(node)
    gc.collect()
    assert gc.get_freeze_count() > 0
    del node
    assert ref() is None  # reference counting, no collection needed


def test_a_cycle_among_frozen_objects_is_reclaimed_by_the_complete_pass(
    tuner: tuple[GCTuner, Clock],
) -> None:
    t, clock = tuner
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    gc.collect()  # a and b survive: frozen
    del a, b
    gc.collect()
    assert ref() is not None, "a frozen cycle waits for the complete pass"
    clock.now += 59.0
    gc.collect()
    assert ref() is not None
    clock.now += 1.0
    gc.collect()  # interval elapsed: this one unfreezes
    assert t.complete_passes == 0
    gc.collect()  # the complete pass
    assert ref() is None
    assert t.complete_passes == 1
    assert gc.get_freeze_count() > 0, "frozen again after the complete pass"


def test_survivors_of_a_middle_generation_collection_are_frozen(
    tuner: tuple[GCTuner, Clock],
) -> None:
    t, _ = tuner
    kept = [[i] for i in range(100)]
    before = t.freezes
    gc.collect(1)
    assert t.freezes == before + 1 and gc.get_freeze_count() >= len(kept)
    gc.collect(0)  # the youngest generation's survivors are left to the collector
    assert t.freezes == before + 1


def test_a_doubled_peak_rss_brings_the_complete_pass_forward(
    tuner: tuple[GCTuner, Clock], monkeypatch: pytest.MonkeyPatch
) -> None:
    t, clock = tuner
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    gc.collect()
    del a, b
    baseline = t._baseline
    monkeypatch.setattr(t, "_peak_rss", lambda: int(baseline * _gc.GROWTH) + _gc.GROWTH_SLACK + 1)
    gc.collect(1)  # the peak RSS is read at most every RSS_CHECK_INTERVAL seconds
    assert gc.get_freeze_count() > 0
    clock.now += 1.0  # > RSS_CHECK_INTERVAL
    gc.collect(1)  # far from full_interval, but the process doubled: unfreeze
    assert t.complete_passes == 0 and gc.get_freeze_count() == 0
    gc.collect(1)  # a middle collection does not end the complete pass early ...
    assert gc.get_freeze_count() == 0
    gc.collect()  # ... the full one does
    assert ref() is None and t.complete_passes == 1
    assert t._baseline == int(baseline * _gc.GROWTH) + _gc.GROWTH_SLACK + 1


def test_young_cycles_are_collected_as_usual(tuner: tuple[GCTuner, Clock]) -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del a, b
    gc.collect()
    assert ref() is None


def test_uninstall_hands_everything_back() -> None:
    t = GCTuner(60.0)
    t.install()
    gc.collect()
    assert gc.get_freeze_count() > 0
    t.uninstall()
    assert gc.get_freeze_count() == 0
    assert t._on_gc not in gc.callbacks


def test_tune_gc_installs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_gc, "_installed", None)
    first = tune_gc(120.0)
    try:
        assert tune_gc() is first
        assert first.full_interval == 120.0
        assert gc.callbacks.count(first._on_gc) == 1
    finally:
        first.uninstall()


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="full_interval"):
        GCTuner(0)


def test_survivors_of_two_young_collections_are_frozen(tuner: tuple[GCTuner, Clock]) -> None:
    # The middle generation is collected after every young collection (not every
    # tenth), so an object that survives two young collections is frozen.
    assert gc.get_threshold()[1] == MIDDLE_THRESHOLD
    gc.collect()
    marker: list[Any] = []
    keep: list[list[Any]] = [
        [] for _ in range(gc.get_threshold()[0] * 3)
    ]  # three young collections' worth
    assert not any(o is marker for o in gc.get_objects())
    assert len(keep) > 0


def test_uninstall_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    t = GCTuner(60.0)
    t.install()
    try:
        assert gc.get_threshold() == (before[0], MIDDLE_THRESHOLD, before[2])
    finally:
        t.uninstall()
    assert gc.get_threshold() == before
