"""pycontroller.predicates: controller-runtime's predicates, composites and the handler filter."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pycontroller.cache import DeletedFinalStateUnknown
from pycontroller.predicates import (
    AnnotationsChanged,
    Funcs,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    ResourceVersionChanged,
    and_,
    filter_handler,
    new_predicate_funcs,
    not_,
    or_,
)

Obj = dict[str, Any]


def obj(
    uid: str = "u1",
    rv: str = "1",
    gen: int | None = 1,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    meta: Obj = {"namespace": "ns", "name": "x", "uid": uid, "resourceVersion": rv}
    if gen is not None:
        meta["generation"] = gen
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta}


# (predicate, old, new that differ only in the field the predicate watches)
FIELD_CASES: list[tuple[Predicate, Obj, Obj]] = [
    (GenerationChanged(), obj(rv="1", gen=1), obj(rv="2", gen=2)),
    (LabelsChanged(), obj(rv="1", labels={"a": "1"}), obj(rv="2", labels={"a": "2"})),
    (AnnotationsChanged(), obj(rv="1"), obj(rv="2", annotations={"a": "1"})),
    (ResourceVersionChanged(), obj(rv="1"), obj(rv="2")),
]
IDS = [type(c[0]).__name__ for c in FIELD_CASES]


@pytest.mark.parametrize(("pred", "old", "new"), FIELD_CASES, ids=IDS)
def test_field_predicates_filter_only_updates(pred: Predicate, old: Obj, new: Obj) -> None:
    assert isinstance(pred, Predicate)
    assert pred.create(new) and pred.delete(new) and pred.generic(new)
    assert pred.update(old, new) is True
    assert pred.update(new, new) is False  # a resync: same object
    assert pred.update(old, None) is False and pred.update(None, new) is False


def test_field_predicates_ignore_other_fields() -> None:
    # A status-only write: new resourceVersion, same generation, labels, annotations.
    old = obj(rv="1", labels={"a": "1"}, annotations={"b": "2"})
    new = obj(rv="2", labels={"a": "1"}, annotations={"b": "2"})
    new["status"] = {"ready": True}
    assert not GenerationChanged().update(old, new)
    assert not LabelsChanged().update(old, new)
    assert not AnnotationsChanged().update(old, new)
    assert ResourceVersionChanged().update(old, new)
    # Missing and empty maps are the same (Go's maps.Equal on nil and empty).
    assert not LabelsChanged().update(obj(rv="1"), obj(rv="2", labels={}))
    assert not AnnotationsChanged().update(obj(rv="1", annotations={}), obj(rv="2"))


def test_generation_changed_passes_objects_without_a_generation() -> None:
    # Documented difference from Go: a missing generation is not read as 0.
    assert GenerationChanged().update(obj(rv="1", gen=None), obj(rv="2", gen=None))


def test_tombstone_fields_are_read_through() -> None:
    old = DeletedFinalStateUnknown("ns/x", obj(rv="1", gen=1))
    assert GenerationChanged().update(old, obj(rv="2", gen=2))


def test_composites() -> None:
    old, spec = obj(rv="1", gen=1), obj(rv="2", gen=2)
    relabel = obj(rv="2", gen=1, labels={"a": "1"})
    gen, labels = GenerationChanged(), LabelsChanged()
    assert or_(gen, labels).update(old, spec) and or_(gen, labels).update(old, relabel)
    assert not or_(gen, labels).update(old, old)
    assert and_(ResourceVersionChanged(), gen).update(old, spec)
    assert not and_(ResourceVersionChanged(), gen).update(old, relabel)
    assert not_(gen).update(old, relabel) and not not_(gen).update(old, spec)
    # Create/delete/generic compose too.
    never = Funcs(create=lambda o: False, delete=lambda o: False, generic=lambda o: False)
    assert not and_(gen, never).create(spec) and or_(gen, never).create(spec)
    assert not not_(gen).delete(spec) and not_(never).delete(spec) and not_(never).generic(spec)
    # Empty composites, as Go: And() passes everything, Or() nothing.
    assert and_().create(spec) and and_().update(old, spec)
    assert not or_().create(spec) and not or_().update(old, spec)


def test_composites_short_circuit() -> None:
    calls: list[str] = []

    def record(name: str, result: bool) -> Funcs:
        return Funcs(create=lambda o: calls.append(name) or result)

    assert not and_(record("a", False), record("b", True)).create(obj())
    assert or_(record("c", True), record("d", False)).create(obj())
    assert calls == ["a", "c"]


RECREATED = (obj(uid="u1", rv="1", gen=1), obj(uid="u2", rv="1", gen=1))


@pytest.mark.parametrize(
    "pred",
    [
        GenerationChanged(),
        LabelsChanged(),
        AnnotationsChanged(),
        ResourceVersionChanged(),
        and_(GenerationChanged(), LabelsChanged()),
        or_(GenerationChanged(), LabelsChanged()),
        or_(),
        not_(ResourceVersionChanged()),
        not_(not_(GenerationChanged())),
        not_(Funcs()),
        Funcs(update=lambda old, new: False),
        new_predicate_funcs(lambda o: False),
    ],
    ids=lambda p: re.sub(r" object at 0x[0-9a-f]+", "", repr(p)),  # the same ids in every process
)
def test_an_update_whose_uid_changed_always_passes(pred: Predicate) -> None:
    old, new = RECREATED
    assert pred.update(old, new) is True


def test_funcs_and_new_predicate_funcs() -> None:
    everything = Funcs()
    assert everything.create(obj()) and everything.update(obj(), obj())
    assert everything.delete(obj()) and everything.generic(obj())
    labelled = new_predicate_funcs(lambda o: "a" in (o["metadata"].get("labels") or {}))
    yes, no = obj(labels={"a": "1"}), obj()
    assert labelled.create(yes) and not labelled.create(no)
    assert labelled.update(no, yes) and not labelled.update(yes, no)  # judges the new object
    assert labelled.delete(yes) and not labelled.generic(no)


def test_reprs_and_equality() -> None:
    assert repr(and_(GenerationChanged(), not_(LabelsChanged()))) == (
        "and_(GenerationChanged(), not_(LabelsChanged()))"
    )
    assert GenerationChanged() == GenerationChanged() != LabelsChanged()
    assert len({ResourceVersionChanged(), ResourceVersionChanged()}) == 1


# --------------------------------------------------------------------------- filter_handler


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.events.append(("add", obj, is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.events.append(("update", old, new))

    def on_delete(self, obj: Any) -> None:
        self.events.append(("delete", obj))


def test_filter_handler_forwards_only_what_every_predicate_passes() -> None:
    rec = Recorder()
    h = filter_handler(rec, ResourceVersionChanged(), GenerationChanged())
    a, status_write, spec_write = obj(rv="1", gen=1), obj(rv="2", gen=1), obj(rv="3", gen=2)
    h.on_add(a, True)
    h.on_update(a, a)  # resync
    h.on_update(a, status_write)  # generation unchanged
    h.on_update(status_write, spec_write)
    h.on_delete(spec_write)
    assert rec.events == [
        ("add", a, True),
        ("update", status_write, spec_write),
        ("delete", spec_write),
    ]


def test_filter_handler_without_predicates_forwards_everything() -> None:
    rec = Recorder()
    h = filter_handler(rec)
    h.on_add(obj(), False)
    h.on_update(obj(), obj())
    h.on_delete(obj())
    assert [e[0] for e in rec.events] == ["add", "update", "delete"]


def test_filter_handler_unwraps_tombstones_for_predicates_only() -> None:
    seen: list[Any] = []
    rec = Recorder()
    keep_x = Funcs(delete=lambda o: seen.append(o) or o["metadata"]["name"] == "x")
    h = filter_handler(rec, keep_x)
    tomb = DeletedFinalStateUnknown("ns/x", obj())
    h.on_delete(tomb)
    assert seen == [tomb.obj]  # the predicate saw the object
    assert rec.events == [("delete", tomb)]  # the handler got the tombstone
    other = obj()
    other["metadata"]["name"] = "y"
    h.on_delete(DeletedFinalStateUnknown("ns/y", other))
    assert len(rec.events) == 1


def test_filter_handler_forwards_a_recreated_object_whatever_the_predicates() -> None:
    rec = Recorder()
    refuse_updates = Funcs(update=lambda old, new: False)

    class Stubborn:  # a user's predicate that ignores the uid rule
        def create(self, obj: Any) -> bool:
            return False

        def update(self, old: Any, new: Any) -> bool:
            return False

        def delete(self, obj: Any) -> bool:
            return False

        def generic(self, obj: Any) -> bool:
            return False

    h = filter_handler(rec, refuse_updates, Stubborn(), not_(ResourceVersionChanged()))
    old, new = RECREATED
    h.on_update(old, new)
    h.on_update(old, old)
    assert rec.events == [("update", old, new)]
