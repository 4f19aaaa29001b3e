"""Handler helpers: key enqueueing, owner mapping, update predicates."""

from __future__ import annotations

from typing import Any

from pycontroller.cache import DeletedFinalStateUnknown, FilteringResourceEventHandler
from pycontroller.handlers import (
    annotations_changed,
    controller_owner_key,
    enqueue_key,
    enqueue_owner,
    generation_changed,
    labels_changed,
    predicate_handler,
    resource_version_changed,
)
from pycontroller.workqueue import Queue


class FakeQueue:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        self.items.append(item)


def child(
    name: str,
    owner: str | None = "lb",
    kind: str = "Balancer",
    api_version: str = "exposer.hliangzhao.io/v1alpha1",
    controller: bool = True,
    ns: str = "ns",
    **meta: Any,
) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name, "namespace": ns, **meta}
    if owner is not None:
        m["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "controller": False},
            {"apiVersion": api_version, "kind": kind, "name": owner, "controller": controller},
        ]
    return {"metadata": m}


def test_enqueue_key_for_every_event_type_including_tombstones() -> None:
    q = FakeQueue()
    h = enqueue_key(q)
    h.on_add(child("a"), True)
    h.on_update(child("a"), child("b"))
    h.on_delete(child("c"))
    h.on_delete(DeletedFinalStateUnknown("ns/d", None))
    assert q.items == ["ns/a", "ns/b", "ns/c", "ns/d"]


def test_enqueue_key_with_a_real_queue_collapses_duplicates() -> None:
    q = Queue()
    h = enqueue_key(q)
    h.on_add(child("a"), False)
    h.on_update(child("a"), child("a"))
    assert len(q) == 1
    item, shutdown = q.get(timeout=1)
    assert (item, shutdown) == ("ns/a", False)


def test_controller_owner_key_matches_kind_and_group_only() -> None:
    assert controller_owner_key(child("x"), "Balancer", "exposer.hliangzhao.io") == "ns/lb"
    assert controller_owner_key(child("x"), "Balancer", "apps") is None
    assert controller_owner_key(child("x"), "Deployment", "exposer.hliangzhao.io") is None
    assert (
        controller_owner_key(child("x", controller=False), "Balancer", "exposer.hliangzhao.io")
        is None
    )
    assert controller_owner_key(child("x", owner=None), "Balancer", "exposer.hliangzhao.io") is None
    core = child("x", kind="Service", api_version="v1")
    assert controller_owner_key(core, "Service", "") == "ns/lb"
    cluster = child("x", ns="")
    assert controller_owner_key(cluster, "Balancer", "exposer.hliangzhao.io") == "lb"


def test_enqueue_owner_unwraps_tombstones_and_enqueues_both_owners_on_change() -> None:
    q = FakeQueue()
    h = enqueue_owner(q, "Balancer", "exposer.hliangzhao.io")
    h.on_add(child("a"), False)
    h.on_add(child("b", owner=None), False)
    h.on_update(child("a", owner="lb"), child("a", owner="lb"))
    h.on_update(child("a", owner="old"), child("a", owner="new"))
    h.on_delete(DeletedFinalStateUnknown("ns/a", child("a", owner="gone")))
    h.on_delete(DeletedFinalStateUnknown("ns/a", None))
    assert q.items == ["ns/lb", "ns/lb", "ns/new", "ns/old", "ns/gone"]


def test_a_cluster_scoped_owner_is_keyed_by_its_name_alone() -> None:
    # controller-runtime's EnqueueRequestForOwner sets the namespace only for an
    # owner whose scope is not Root: a namespaced child of a cluster-scoped owner.
    assert (
        controller_owner_key(child("x"), "Balancer", "exposer.hliangzhao.io", namespaced=False)
        == "lb"
    )
    q = FakeQueue()
    enqueue_owner(q, "Balancer", "exposer.hliangzhao.io", namespaced=False).on_add(
        child("a"), False
    )
    assert q.items == ["lb"]


def test_predicates() -> None:
    a = {"metadata": {"generation": 1, "resourceVersion": "1", "labels": {"x": "1"}}}
    b = {"metadata": {"generation": 1, "resourceVersion": "2", "labels": {"x": "1"}}}
    c = {"metadata": {"generation": 2, "resourceVersion": "3", "labels": {"x": "2"}}}
    assert not generation_changed(a, b) and generation_changed(b, c)
    assert generation_changed({"metadata": {}}, {"metadata": {}})  # unknown: assume changed
    assert resource_version_changed(a, b) and not resource_version_changed(a, a)
    assert not labels_changed(a, b) and labels_changed(b, c)
    assert not labels_changed({"metadata": {}}, {"metadata": {"labels": {}}})
    assert annotations_changed({"metadata": {}}, {"metadata": {"annotations": {"k": "v"}}})


def test_predicate_handler_filters_updates_by_any_predicate() -> None:
    q = FakeQueue()
    h = predicate_handler(enqueue_key(q), generation_changed, labels_changed)
    base = {"metadata": {"name": "a", "namespace": "ns", "generation": 1, "labels": {}}}
    status_only = {"metadata": {**base["metadata"], "resourceVersion": "9"}}
    relabel = {"metadata": {**base["metadata"], "labels": {"k": "v"}}}
    h.on_add(base, False)
    h.on_update(base, status_only)  # neither predicate: dropped
    h.on_update(base, relabel)
    h.on_delete(base)
    assert q.items == ["ns/a", "ns/a", "ns/a"]
    q2 = FakeQueue()
    predicate_handler(enqueue_key(q2)).on_update(base, status_only)  # no predicates: all pass
    assert q2.items == ["ns/a"]


def test_predicates_compose_with_filtering_handler() -> None:
    q = FakeQueue()
    owned = FilteringResourceEventHandler(
        lambda o: controller_owner_key(o, "Balancer", "exposer.hliangzhao.io") is not None,
        predicate_handler(
            enqueue_owner(q, "Balancer", "exposer.hliangzhao.io"), generation_changed
        ),
    )
    owned.on_add(child("a", owner=None), False)
    owned.on_update(child("a", generation=1), child("a", generation=1))
    owned.on_update(child("a", generation=1), child("a", generation=2))
    assert q.items == ["ns/lb"]


def test_deletion_timestamp_changed() -> None:
    from pycontroller.cache import DeletedFinalStateUnknown
    from pycontroller.handlers import deletion_timestamp_changed

    live = {"metadata": {"name": "a", "resourceVersion": "1"}}
    dying = {"metadata": {"name": "a", "resourceVersion": "2", "deletionTimestamp": "t"}}
    assert deletion_timestamp_changed(live, dying)
    assert not deletion_timestamp_changed(dying, dying)
    assert not deletion_timestamp_changed(live, live)
    assert deletion_timestamp_changed(DeletedFinalStateUnknown("a", live), dying)


def recreated(name: str, uid: str, owner: str = "lb", **meta: Any) -> dict[str, Any]:
    """A child (or owner) as listed: same name, generation 1, its own uid."""
    return child(name, owner=owner, uid=uid, generation=1, resourceVersion=uid, **meta)


def test_uid_changed() -> None:
    from pycontroller.handlers import uid_changed

    assert uid_changed(recreated("a", "u1"), recreated("a", "u2"))
    assert not uid_changed(recreated("a", "u1"), recreated("a", "u1"))
    assert not uid_changed(child("a"), recreated("a", "u2"))  # unknown uid: not re-created
    assert uid_changed(DeletedFinalStateUnknown("ns/a", recreated("a", "u1")), recreated("a", "u2"))


def test_predicate_handler_always_forwards_a_recreated_object() -> None:
    q = FakeQueue()
    h = predicate_handler(enqueue_key(q), generation_changed, labels_changed)
    old, new = recreated("a", "u1"), recreated("a", "u2")  # same generation, same labels
    assert not generation_changed(old, new) and not labels_changed(old, new)
    h.on_update(old, new)
    assert q.items == ["ns/a"]
    h.on_update(new, recreated("a", "u2"))  # same object: still filtered
    assert q.items == ["ns/a"]


def test_recreated_object_passes_predicates_inside_a_filtering_handler() -> None:
    q = FakeQueue()
    owned = FilteringResourceEventHandler(
        lambda o: controller_owner_key(o, "Balancer", "exposer.hliangzhao.io") is not None,
        predicate_handler(
            enqueue_owner(q, "Balancer", "exposer.hliangzhao.io"), generation_changed
        ),
    )
    owned.on_update(recreated("a", "u1", owner="old"), recreated("a", "u2", owner="new"))
    assert q.items == ["ns/new", "ns/old"]


def test_enqueue_owner_enqueues_both_owners_of_a_recreated_child() -> None:
    q = FakeQueue()
    h = predicate_handler(enqueue_owner(q, "Balancer", "exposer.hliangzhao.io"), generation_changed)
    h.on_update(recreated("a", "u1", owner="lb1"), recreated("a", "u2", owner="lb2"))
    h.on_update(recreated("a", "u2", owner="lb2"), recreated("a", "u3", owner="lb2"))
    # Re-created without a Balancer owner: the old owner still hears of it.
    h.on_update(recreated("a", "u3", owner="lb2"), recreated("a", "u4", owner=None))
    assert q.items == ["ns/lb2", "ns/lb1", "ns/lb2", "ns/lb2"]


# --------------------------------------------------------------------------- priorities


class FakePriorityQueue:
    """Records ``(item, priority)`` for every add; ``add`` is priority 0."""

    def __init__(self) -> None:
        self.items: list[tuple[Any, int]] = []

    def add(self, item: Any) -> None:
        self.items.append((item, 0))

    def add_with_opts(
        self, item: Any, *, after: float = 0.0, rate_limited: bool = False, priority: int = 0
    ) -> None:
        assert (after, rate_limited) == (0.0, False)
        self.items.append((item, priority))


def test_enqueue_key_priorities_on_a_priority_queue() -> None:
    from pycontroller.workqueue import LOW_PRIORITY

    q = FakePriorityQueue()
    h = enqueue_key(q)
    h.on_add(recreated("listed", "u1"), True)  # initial list: low
    h.on_add(recreated("created", "u2"), False)  # a watched create: a change
    h.on_update(recreated("a", "u3"), recreated("a", "u3"))  # resync: low
    h.on_update(recreated("a", "u3"), child("a", uid="u3", resourceVersion="9"))
    h.on_delete(child("gone"))
    h.on_delete(DeletedFinalStateUnknown("ns/tomb", None))  # tombstones: a change
    h.on_add({"no": "metadata"}, False)  # cannot be keyed: dropped
    assert q.items == [
        ("ns/listed", LOW_PRIORITY),
        ("ns/created", 0),
        ("ns/a", LOW_PRIORITY),
        ("ns/a", 0),
        ("ns/gone", 0),
        ("ns/tomb", 0),
    ]


def test_enqueue_owner_priorities_on_a_priority_queue() -> None:
    from pycontroller.workqueue import LOW_PRIORITY

    q = FakePriorityQueue()
    h = enqueue_owner(q, "Balancer", "exposer.hliangzhao.io")
    h.on_add(recreated("a", "u1", owner="lb"), True)
    h.on_add(recreated("b", "u2", owner="lb"), False)
    h.on_add(recreated("c", "u3", owner=None), True)  # no owner: nothing
    h.on_update(recreated("a", "u1", owner="lb"), recreated("a", "u1", owner="lb"))  # resync
    # Owner changed: both owners, at priority 0.
    moved = child("a", owner="new", uid="u1", resourceVersion="7")
    h.on_update(recreated("a", "u1", owner="old"), moved)
    h.on_delete(DeletedFinalStateUnknown("ns/a", recreated("a", "u1", owner="gone")))
    assert q.items == [
        ("ns/lb", LOW_PRIORITY),
        ("ns/lb", 0),
        ("ns/lb", LOW_PRIORITY),
        ("ns/new", 0),
        ("ns/old", 0),
        ("ns/gone", 0),
    ]


def test_recreated_objects_are_changes_on_a_priority_queue() -> None:
    """A uid-changing update passes every predicate and goes in at priority 0 (both owners)."""
    q = FakePriorityQueue()
    keys = predicate_handler(enqueue_key(q), generation_changed)
    owners = predicate_handler(
        enqueue_owner(q, "Balancer", "exposer.hliangzhao.io"), generation_changed
    )
    # Same name, generation and (as a worst case) resourceVersion: only the uid differs.
    old, new = recreated("a", "u1", owner="lb1"), recreated("a", "u2", owner="lb2")
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
    keys.on_update(old, new)
    owners.on_update(old, new)
    assert q.items == [("ns/a", 0), ("ns/lb2", 0), ("ns/lb1", 0)]


def test_enqueue_key_on_a_real_priority_queue_hands_out_changes_first() -> None:
    from pycontroller.workqueue import PriorityQueue

    q = PriorityQueue()
    h = enqueue_key(q)
    for i in range(3):
        h.on_add(recreated(f"listed-{i}", f"u{i}"), True)
    h.on_update(recreated("listed-2", "u2"), child("listed-2", uid="u2", resourceVersion="x"))
    assert [q.get()[0] for _ in range(3)] == ["ns/listed-2", "ns/listed-0", "ns/listed-1"]
    q.shut_down()
