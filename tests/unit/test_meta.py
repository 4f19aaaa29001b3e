"""pycontroller.meta: owner references, conditions and finalizers, as apimachinery does them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycontroller.cache import DeletedFinalStateUnknown
from pycontroller.clock import FakeClock
from pycontroller.meta import (
    AlreadyOwnedError,
    add_finalizer,
    contains_finalizer,
    controller_of,
    find_status_condition,
    is_controlled_by,
    is_status_condition_false,
    is_status_condition_true,
    remove_finalizer,
    remove_status_condition,
    set_controller_reference,
    set_status_condition,
)

Obj = dict[str, Any]

T0 = "2023-11-14T22:13:20Z"  # FakeClock's default epoch, 1_700_000_000
T1 = "2023-11-14T22:13:30Z"


def balancer(name: str = "lb", uid: str = "uid-lb", ns: str | None = "default") -> Obj:
    meta: Obj = {"name": name, "uid": uid}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": "exposer.hliangzhao.io/v1alpha1", "kind": "Balancer", "metadata": meta}


def configmap(name: str = "cm", ns: str | None = "default", **meta: Any) -> Obj:
    m: Obj = {"name": name, **meta}
    if ns is not None:
        m["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m}


def ref(owner: Obj, controller: bool = True) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


# --------------------------------------------------------------------------- owner references


def test_set_controller_reference_adds_a_full_controller_ref() -> None:
    owner, obj = balancer(), configmap()
    assert set_controller_reference(owner, obj) is None
    assert obj["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "exposer.hliangzhao.io/v1alpha1",
            "kind": "Balancer",
            "name": "lb",
            "uid": "uid-lb",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert is_controlled_by(obj, owner)
    assert controller_of(obj) == ref(owner)


def test_set_controller_reference_is_idempotent_and_keeps_other_refs() -> None:
    owner = balancer()
    other = {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "uid-s"}
    obj = configmap(ownerReferences=[dict(other)])
    set_controller_reference(owner, obj)
    once = copy.deepcopy(obj)
    set_controller_reference(owner, obj)
    assert obj == once
    assert obj["metadata"]["ownerReferences"] == [other, ref(owner)]


def test_set_controller_reference_replaces_the_ref_of_a_recreated_owner_in_place() -> None:
    # controller-runtime's referSameObject: group, kind and name; uid and version may differ.
    old_owner = balancer(uid="uid-old")
    obj = configmap()
    set_controller_reference(old_owner, obj)
    obj["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "Secret", "name": "s"})
    new_owner = balancer(uid="uid-new")
    new_owner["apiVersion"] = "exposer.hliangzhao.io/v1beta1"
    set_controller_reference(new_owner, obj)
    refs = obj["metadata"]["ownerReferences"]
    assert refs[0] == ref(new_owner) and refs[1]["kind"] == "Secret"
    assert is_controlled_by(obj, new_owner) and not is_controlled_by(obj, old_owner)


def test_set_controller_reference_upgrades_a_plain_owner_ref_to_controller() -> None:
    owner = balancer()
    obj = configmap(ownerReferences=[{**ref(owner), "controller": False}])
    set_controller_reference(owner, obj)
    assert obj["metadata"]["ownerReferences"] == [ref(owner)]


def test_set_controller_reference_refuses_a_second_controller() -> None:
    first, second = balancer("a", "uid-a"), balancer("b", "uid-b")
    obj = configmap()
    set_controller_reference(first, obj)
    before = copy.deepcopy(obj)
    with pytest.raises(ValueError, match="already owned by another Balancer controller a") as err:
        set_controller_reference(second, obj)
    assert isinstance(err.value, AlreadyOwnedError)
    assert err.value.owner == ref(first)
    assert obj == before


def test_set_controller_reference_namespace_rules() -> None:
    # A namespaced owner cannot own a cluster-scoped object or one in another namespace.
    with pytest.raises(ValueError, match="cluster-scoped resource"):
        set_controller_reference(balancer(), configmap(ns=None))
    with pytest.raises(ValueError, match="cross-namespace"):
        set_controller_reference(balancer(ns="a"), configmap(ns="b"))
    # A cluster-scoped owner may own anything.
    cluster_owner = balancer(ns=None)
    for obj in (configmap(ns=None), configmap(ns="b")):
        set_controller_reference(cluster_owner, obj)
        assert is_controlled_by(obj, cluster_owner)


@pytest.mark.parametrize("drop", ["apiVersion", "kind", "name", "uid"])
def test_set_controller_reference_needs_a_complete_owner(drop: str) -> None:
    owner = balancer()
    if drop in owner:
        del owner[drop]
    else:
        del owner["metadata"][drop]
    with pytest.raises(ValueError, match=drop):
        set_controller_reference(owner, configmap())


def test_controller_of_and_is_controlled_by() -> None:
    owner = balancer()
    assert controller_of(configmap()) is None
    assert controller_of({}) is None
    plain = configmap(ownerReferences=[{**ref(owner), "controller": False}])
    assert controller_of(plain) is None and not is_controlled_by(plain, owner)
    obj = configmap(ownerReferences=[ref(owner)])
    got = controller_of(obj)
    assert got == ref(owner)
    assert got is not obj["metadata"]["ownerReferences"][0]  # a copy, as GetControllerOf
    # By uid only: a same-name owner with another uid does not control it.
    assert not is_controlled_by(obj, balancer(uid="uid-other"))
    # Tombstones are unwrapped.
    assert is_controlled_by(DeletedFinalStateUnknown("default/cm", obj), owner)


# --------------------------------------------------------------------------- conditions


def cond(type: str = "Ready", status: str = "True", **kw: Any) -> Obj:
    return {"type": type, "status": status, "reason": "R", "message": "m", **kw}


def test_set_status_condition_appends_a_copy_with_a_transition_time() -> None:
    clock = FakeClock()
    conditions: list[Obj] = []
    new = cond()
    assert set_status_condition(conditions, new, clock=clock) is True
    assert conditions == [{**new, "lastTransitionTime": T0}]
    assert "lastTransitionTime" not in new  # the caller's dict is not touched
    # A given lastTransitionTime is kept on add.
    assert set_status_condition(conditions, cond("Other", lastTransitionTime=T1), clock=clock)
    assert find_status_condition(conditions, "Other")["lastTransitionTime"] == T1  # type: ignore[index]


def test_set_status_condition_same_status_keeps_transition_time() -> None:
    clock = FakeClock()
    conditions: list[Obj] = []
    set_status_condition(conditions, cond(), clock=clock)
    clock.step(10)
    assert set_status_condition(conditions, cond(), clock=clock) is False
    assert conditions[0]["lastTransitionTime"] == T0
    # reason, message, observedGeneration change without a transition.
    assert set_status_condition(
        conditions, cond(reason="R2", message="m2", observedGeneration=3), clock=clock
    )
    assert conditions == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "R2",
            "message": "m2",
            "observedGeneration": 3,
            "lastTransitionTime": T0,
        }
    ]
    assert set_status_condition(conditions, cond(reason="R2", message="m2"), clock=clock)
    assert "observedGeneration" not in conditions[0]  # 0 is omitted, as in Go


def test_set_status_condition_status_change_moves_transition_time() -> None:
    clock = FakeClock()
    conditions = [cond("A"), {**cond(), "lastTransitionTime": T0}, cond("B")]
    clock.step(10)
    assert set_status_condition(conditions, cond(status="False"), clock=clock) is True
    assert conditions[1] == {**cond(status="False"), "lastTransitionTime": T1}
    assert [c["type"] for c in conditions] == ["A", "Ready", "B"]  # order kept
    # An explicit lastTransitionTime wins on a transition...
    assert set_status_condition(
        conditions, cond(lastTransitionTime="2020-01-01T00:00:00Z"), clock=clock
    )
    assert conditions[1]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    # ... and is ignored without one.
    assert not set_status_condition(conditions, cond(lastTransitionTime=T1), clock=clock)
    assert conditions[1]["lastTransitionTime"] == "2020-01-01T00:00:00Z"


def test_set_status_condition_writes_reason_and_message_as_go_does() -> None:
    # metav1.Condition's reason and message are not omitempty: a condition set
    # without them is stored with "" (a controller-gen CRD requires both).
    conditions: list[Obj] = []
    assert set_status_condition(conditions, {"type": "Ready", "status": "True"})
    assert conditions[0]["reason"] == "" and conditions[0]["message"] == ""
    stored: list[Obj] = [{"type": "Ready", "status": "True", "lastTransitionTime": T0}]
    assert not set_status_condition(stored, {"type": "Ready", "status": "True"})
    assert stored[0]["reason"] == "" and stored[0]["message"] == ""


def test_set_status_condition_edge_cases() -> None:
    assert set_status_condition(None, cond()) is False
    with pytest.raises(ValueError):
        set_status_condition([], {"status": "True"})
    # The real clock writes RFC 3339 at second precision.
    conditions: list[Obj] = []
    set_status_condition(conditions, cond())
    assert len(conditions[0]["lastTransitionTime"]) == len(T0)


def test_find_and_remove_status_condition() -> None:
    conditions = [cond("A"), cond("B", status="False")]
    assert find_status_condition(conditions, "B") is conditions[1]
    assert find_status_condition(conditions, "C") is None
    assert find_status_condition(None, "A") is None
    assert is_status_condition_true(conditions, "A") and not is_status_condition_true(
        conditions, "B"
    )
    assert is_status_condition_false(conditions, "B") and not is_status_condition_false(
        conditions, "C"
    )
    assert remove_status_condition(conditions, "A") is True
    assert remove_status_condition(conditions, "A") is False
    assert conditions == [cond("B", status="False")]


# --------------------------------------------------------------------------- finalizers


def test_add_finalizer() -> None:
    obj: Obj = {"metadata": {"name": "x"}}
    assert add_finalizer(obj, "a/f") is True
    assert add_finalizer(obj, "a/f") is False
    assert add_finalizer(obj, "b/f") is True
    assert obj["metadata"]["finalizers"] == ["a/f", "b/f"]
    assert contains_finalizer(obj, "b/f") and not contains_finalizer(obj, "c/f")
    bare: Obj = {}
    assert add_finalizer(bare, "a/f") and bare == {"metadata": {"finalizers": ["a/f"]}}


def test_remove_finalizer() -> None:
    obj: Obj = {"metadata": {"name": "x", "finalizers": ["a/f", "b/f", "a/f"]}}
    assert remove_finalizer(obj, "c/f") is False
    assert obj["metadata"]["finalizers"] == ["a/f", "b/f", "a/f"]
    assert remove_finalizer(obj, "a/f") is True  # every occurrence, as controllerutil
    assert obj["metadata"]["finalizers"] == ["b/f"]
    assert remove_finalizer(obj, "b/f") is True
    assert obj == {"metadata": {"name": "x"}}  # emptied list omitted, as the server stores it
    assert remove_finalizer({}, "a/f") is False
