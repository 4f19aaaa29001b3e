"""Event-handler helpers: turn informer events into workqueue keys.

The usual wiring (sample-controller / controller-runtime)::

    balancers.add_event_handler(enqueue_key(queue))
    deployments.add_event_handler(
        predicate_handler(enqueue_owner(queue, "Balancer", "exposer.hliangzhao.io"),
                          generation_changed, labels_changed))

- ``enqueue_key(queue)``: every add/update/delete enqueues the object's
  ``"namespace/name"`` key (tombstones included).
- ``enqueue_owner(queue, owner_kind, owner_group)``: a child's event enqueues
  the key of its *controller* owner (the ownerReference with
  ``controller: true``) when that owner has the given kind and API group
  (``""`` for the core group). On an update whose controller owner changed,
  both owners are enqueued; so is an update whose ``metadata.uid`` changed
  (the child was re-created: its old owner lost a child, its new one gained
  one).
- Priorities (controller-runtime's handlers): on a queue with
  ``add_with_opts`` (``pycontroller.workqueue.PriorityQueue``) both helpers
  add the keys of the informer's initial list (``on_add`` with
  ``is_in_initial_list``) and of updates that changed nothing (same
  resourceVersion: resyncs, unchanged relists) at ``LOW_PRIORITY``, and every
  real change (a watched add, an update with a new resourceVersion or a new
  uid, a delete) at priority 0, so that a change is reconciled before the
  backlog of a restart or a resync. On any other queue they call ``add``. See
  ``pycontroller.workqueue.priority_handlers``.
- Update predicates ``(old, new) -> bool`` decide whether an update matters:
  ``generation_changed`` (spec changes; status writes don't bump it),
  ``resource_version_changed`` (anything but a resync), ``labels_changed``,
  ``annotations_changed``. ``predicate_handler(handler, *preds)`` forwards an
  update only if *any* predicate holds; adds and deletes always pass, and so
  does an update whose ``metadata.uid`` changed (``uid_changed``: the object
  was deleted and re-created while the watch was down, and a relist reports
  it as an update; it is really a delete plus an add, which no predicate may
  filter). To
  filter which *objects* are seen at all, wrap with
  ``pycontroller.cache.FilteringResourceEventHandler`` (which turns updates
  crossing the filter into adds/deletes); the two compose either way round.

Keys, not objects, go on queues: the worker reads the current state from a
lister, so handlers never mutate or hold on to cached objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from ._objmeta import object_meta as _meta
from .cache.shared_informer import ResourceEventHandler
from .cache.store import deletion_handling_meta_namespace_key_func
from .workqueue.priority_handlers import add_for_create, add_for_update

__all__ = [
    "UpdatePredicate",
    "annotations_changed",
    "controller_owner_key",
    "deletion_timestamp_changed",
    "enqueue_key",
    "enqueue_owner",
    "generation_changed",
    "labels_changed",
    "predicate_handler",
    "resource_version_changed",
    "uid_changed",
]

logger = logging.getLogger(__name__)

UpdatePredicate = Callable[[Any, Any], bool]


class _Adder(Protocol):
    def add(self, item: Any) -> None: ...


# --------------------------------------------------------------------------- enqueue_key


class _EnqueueKey:
    """Adds ``deletion_handling_meta_namespace_key_func(obj)`` for every event.

    Initial-list adds and resyncs at ``LOW_PRIORITY`` on a priority queue.
    """

    def __init__(self, queue: _Adder) -> None:
        self.queue = queue

    @staticmethod
    def _key(obj: Any) -> str | None:
        try:
            return deletion_handling_meta_namespace_key_func(obj)
        except Exception as err:  # an object without metadata cannot be keyed
            logger.warning("cannot compute a queue key: %s", err)
            return None

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if (key := self._key(obj)) is not None:
            add_for_create(self.queue, key, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        if (key := self._key(new)) is not None:
            add_for_update(self.queue, key, old, new)

    def on_delete(self, obj: Any) -> None:
        if (key := self._key(obj)) is not None:
            self.queue.add(key)


def enqueue_key(queue: _Adder) -> ResourceEventHandler:
    """A handler that enqueues each event's ``"ns/name"`` key (tombstones unwrapped).

    On a priority queue, initial-list adds and resyncs go in at ``LOW_PRIORITY``.
    """
    return _EnqueueKey(queue)


# --------------------------------------------------------------------------- enqueue_owner


def _api_group(api_version: str) -> str:
    return api_version.rpartition("/")[0]  # "" for a core "v1"


def controller_owner_key(
    obj: Any, owner_kind: str, owner_group: str, *, namespaced: bool = True
) -> str | None:
    """Key ``"ns/ownerName"`` of the controller owner of ``obj``, if of that kind and group.

    Owner references are namespace-local, so a namespaced owner's namespace
    is the child's (a cluster-scoped child gives just ``"ownerName"``); a
    cluster-scoped owner kind (``namespaced=False``) is keyed by its name
    alone. Accepts a ``DeletedFinalStateUnknown``. Returns None when there is
    no matching controller reference.
    """
    return _controller_owner_key(obj, owner_group, lambda: owner_kind, namespaced)


def _controller_owner_key(
    obj: Any,
    owner_group: str,
    owner_kind: Callable[[], str | None],
    owner_namespaced: bool = True,
) -> str | None:
    """``controller_owner_key`` with the kind asked for only once the group matched.

    ``owner_kind()`` None matches any kind (the Builder's ``for_`` kind before
    its cache has an object to learn it from). A cluster-scoped owner
    (``owner_namespaced=False``) is keyed by its name alone, whatever the
    child's namespace (controller-runtime's ``EnqueueRequestForOwner`` sets
    the namespace only for an owner whose scope is not Root).
    """
    meta = _meta(obj)
    for ref in meta.get("ownerReferences") or ():
        if not isinstance(ref, dict) or not ref.get("controller"):
            continue
        if _api_group(str(ref.get("apiVersion") or "")) != owner_group:
            return None
        kind = owner_kind()
        if kind is not None and ref.get("kind") != kind:
            return None
        name = ref.get("name")
        if not name:
            return None
        namespace = (meta.get("namespace") or "") if owner_namespaced else ""
        return f"{namespace}/{name}" if namespace else str(name)
    return None


class _EnqueueOwner:
    """Enqueues ``owner_key(child)`` for a child's events (nothing where it is None)."""

    def __init__(self, queue: _Adder, owner_key: Callable[[Any], str | None]) -> None:
        self.queue = queue
        self._key = owner_key

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if (key := self._key(obj)) is not None:
            add_for_create(self.queue, key, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        # Both owners: the controller owner changed, or the child was re-created
        # (uid changed) under another owner. The queue collapses equal keys.
        # Both at the update's priority (low only for a resync).
        new_key = self._key(new)
        old_key = self._key(old)
        if new_key is not None:
            add_for_update(self.queue, new_key, old, new)
        if old_key is not None and old_key != new_key:
            add_for_update(self.queue, old_key, old, new)

    def on_delete(self, obj: Any) -> None:
        if (key := self._key(obj)) is not None:
            self.queue.add(key)


def enqueue_owner(
    queue: _Adder, owner_kind: str, owner_group: str, *, namespaced: bool = True
) -> ResourceEventHandler:
    """A handler that maps a child's events to its controller owner's key.

    ``owner_group`` is the API group of the owner's ``apiVersion`` (``""``
    for core, e.g. ``"apps"`` for Deployments); the version is ignored.
    ``namespaced=False`` for a cluster-scoped owner kind, keyed by its name
    alone (controller-runtime's ``EnqueueRequestForOwner`` asks the REST
    mapper). On a priority queue, initial-list adds and resyncs go in at
    ``LOW_PRIORITY``.
    """
    return _EnqueueOwner(
        queue,
        lambda obj: controller_owner_key(obj, owner_kind, owner_group, namespaced=namespaced),
    )


# --------------------------------------------------------------------------- predicates


def uid_changed(old: Any, new: Any) -> bool:
    """``metadata.uid`` differs: the object was deleted and re-created under the same name.

    Such an "update" (a relist after the watch missed the delete and the
    create) is really a delete plus an add, so no update predicate may drop
    it. Objects without a uid (tests, tombstones without metadata) never
    count as re-created.
    """
    old_uid = _meta(old).get("uid")
    new_uid = _meta(new).get("uid")
    return old_uid is not None and new_uid is not None and old_uid != new_uid


def generation_changed(old: Any, new: Any) -> bool:
    """``metadata.generation`` differs (spec changed); objects without one count as changed."""
    old_gen = _meta(old).get("generation")
    new_gen = _meta(new).get("generation")
    if old_gen is None or new_gen is None:
        return True
    return bool(old_gen != new_gen)


def resource_version_changed(old: Any, new: Any) -> bool:
    """``metadata.resourceVersion`` differs: false only for resyncs and unchanged relists."""
    return bool(_meta(old).get("resourceVersion") != _meta(new).get("resourceVersion"))


def deletion_timestamp_changed(old: Any, new: Any) -> bool:
    """``metadata.deletionTimestamp`` appeared or changed (deletion started)."""
    return bool(_meta(old).get("deletionTimestamp") != _meta(new).get("deletionTimestamp"))


def labels_changed(old: Any, new: Any) -> bool:
    """``metadata.labels`` differ (missing and empty are the same)."""
    return bool((_meta(old).get("labels") or {}) != (_meta(new).get("labels") or {}))


def annotations_changed(old: Any, new: Any) -> bool:
    """``metadata.annotations`` differ (missing and empty are the same)."""
    return bool((_meta(old).get("annotations") or {}) != (_meta(new).get("annotations") or {}))


class _PredicateHandler:
    def __init__(self, handler: ResourceEventHandler, predicates: tuple[UpdatePredicate, ...]):
        self.handler = handler
        self.predicates = predicates

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        if (
            not self.predicates
            or uid_changed(old, new)  # re-created: a delete plus an add, never filtered
            or any(p(old, new) for p in self.predicates)
        ):
            self.handler.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        self.handler.on_delete(obj)


def predicate_handler(
    handler: ResourceEventHandler, *update_predicates: UpdatePredicate
) -> ResourceEventHandler:
    """Forward updates to ``handler`` only when any predicate holds (no predicates: all).

    Adds and deletes are always forwarded, and so is an update whose
    ``metadata.uid`` changed (a re-created object), whatever the predicates say.
    """
    return _PredicateHandler(handler, tuple(update_predicates))
