"""pycontroller.meta against controller-runtime's controllerutil owner-reference helpers.

``SetOwnerReference``, ``RemoveOwnerReference``, ``RemoveControllerReference``,
``HasOwnerReference`` and ``HasControllerReference``: references are matched
by API group, kind and name (never uid or version), as ``referSameObject``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pycontroller import meta
from pycontroller.meta import (
    has_controller_reference,
    has_owner_reference,
    remove_controller_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)

Obj = dict[str, Any]


def balancer(name: str = "lb", uid: str = "uid-lb", ns: str | None = "default") -> Obj:
    m: Obj = {"name": name, "uid": uid}
    if ns is not None:
        m["namespace"] = ns
    return {"apiVersion": "exposer.hliangzhao.io/v1alpha1", "kind": "Balancer", "metadata": m}


def configmap(ns: str | None = "default", **m: Any) -> Obj:
    md: Obj = {"name": "cm", **m}
    if ns is not None:
        md["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}


def plain(owner: Obj) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }


def test_the_helpers_are_public() -> None:
    for name in (
        "set_owner_reference",
        "remove_owner_reference",
        "remove_controller_reference",
        "has_owner_reference",
        "has_controller_reference",
    ):
        assert name in meta.__all__


def test_set_owner_reference_adds_a_plain_reference_next_to_a_controller() -> None:
    controller, other = balancer("a", "uid-a"), balancer("b", "uid-b")
    obj = configmap()
    set_controller_reference(controller, obj)
    # Unlike set_controller_reference: a second owner is fine, it just is no controller.
    set_owner_reference(other, obj)
    refs = obj["metadata"]["ownerReferences"]
    assert refs[1] == plain(other)
    assert refs[0]["controller"] is True
    set_owner_reference(other, obj)  # idempotent
    assert len(obj["metadata"]["ownerReferences"]) == 2


def test_set_owner_reference_replaces_the_same_objects_reference() -> None:
    # upsertOwnerRef: a re-created owner (new uid, other version) replaces its old
    # reference in place, and a controller reference to it becomes a plain one.
    owner = balancer()
    obj = configmap()
    set_controller_reference(owner, obj)
    recreated = balancer(uid="uid-new")
    recreated["apiVersion"] = "exposer.hliangzhao.io/v1"
    set_owner_reference(recreated, obj)
    assert obj["metadata"]["ownerReferences"] == [plain(recreated)]


def test_set_owner_reference_namespace_rules_and_complete_owner() -> None:
    with pytest.raises(ValueError, match="cluster-scoped resource"):
        set_owner_reference(balancer(), configmap(ns=None))
    with pytest.raises(ValueError, match="cross-namespace"):
        set_owner_reference(balancer(ns="a"), configmap(ns="b"))
    no_uid = balancer()
    del no_uid["metadata"]["uid"]
    with pytest.raises(ValueError, match="uid"):
        set_owner_reference(no_uid, configmap())
    cluster_owner = balancer(ns=None)
    obj = configmap(ns="b")
    set_owner_reference(cluster_owner, obj)
    assert obj["metadata"]["ownerReferences"] == [plain(cluster_owner)]


def test_remove_owner_reference() -> None:
    a, b = balancer("a", "uid-a"), balancer("b", "uid-b")
    obj = configmap()
    with pytest.raises(ValueError, match="does not have any owner references"):
        remove_owner_reference(a, obj)
    set_controller_reference(a, obj)
    with pytest.raises(ValueError, match="does not have an owner reference for"):
        remove_owner_reference(b, obj)
    set_owner_reference(b, obj)
    # Matched by group, kind and name: another version and uid still match.
    b_again = balancer("b", "uid-other")
    b_again["apiVersion"] = "exposer.hliangzhao.io/v1"
    remove_owner_reference(b_again, obj)
    assert [r["name"] for r in obj["metadata"]["ownerReferences"]] == ["a"]
    remove_owner_reference(a, obj)  # the controller's too
    assert "ownerReferences" not in obj["metadata"]  # omitempty


def test_remove_controller_reference() -> None:
    a, b = balancer("a", "uid-a"), balancer("b", "uid-b")
    obj = configmap()
    set_owner_reference(a, obj)
    with pytest.raises(ValueError, match="controller equals true"):
        remove_controller_reference(a, obj)
    set_controller_reference(b, obj)
    before = copy.deepcopy(obj)
    with pytest.raises(ValueError, match="is not the controller reference"):
        remove_controller_reference(a, obj)
    with pytest.raises(ValueError, match="does not have a controller reference for"):
        remove_controller_reference(balancer("c", "uid-c"), obj)
    assert obj == before
    remove_controller_reference(b, obj)
    assert obj["metadata"]["ownerReferences"] == [plain(a)]
    assert not has_controller_reference(obj)


def test_has_owner_reference_and_has_controller_reference() -> None:
    a = balancer("a", "uid-a")
    obj = configmap()
    assert not has_owner_reference(obj["metadata"].get("ownerReferences"), a)
    assert not has_controller_reference(obj)
    set_owner_reference(a, obj)
    refs = obj["metadata"]["ownerReferences"]
    assert has_owner_reference(refs, a)
    assert has_owner_reference(refs, balancer("a", "uid-recreated"))  # not by uid
    assert not has_owner_reference(refs, balancer("b", "uid-b"))
    other_group = {**a, "apiVersion": "other.io/v1alpha1"}
    assert not has_owner_reference(refs, other_group)
    assert not has_controller_reference(obj)
    set_controller_reference(a, obj)
    assert has_controller_reference(obj)
