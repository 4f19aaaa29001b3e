"""Builder: wire a controller onto a Manager (controller-runtime's ``builder.ControllerManagedBy``).

::

    mgr.controller("balancer")
        .for_("exposer.hliangzhao.io", "v1alpha1", "balancers",
              predicates=[or_(GenerationChanged(), LabelsChanged())])
        .owns("", "v1", "services")
        .watches("", "v1", "configmaps", map_fn=lambda cm: [Request(ns, "x")])
        .with_event_filter(not_(deleted_by_me))
        .with_options(workers=2)
        .complete(reconcile)

- ``for_``: the reconciled resource; every event enqueues the object's own key.
- ``owns``: a child resource; an event enqueues the key of the child's
  *controller* owner (the ownerReference with ``controller: true``) when that
  owner is of the ``for_`` resource's API group and kind (an update that
  moved the child to another owner enqueues both).
- ``watches``: any resource; ``map_fn(obj)`` returns the requests to
  enqueue (for an update, those of the old and of the new object).
- Predicates (``pycontroller.predicates``): per watch, plus
  ``with_event_filter`` ones for every watch; an event passes iff all pass;
  an update whose uid changed always passes.
- ``complete(reconcile)`` makes the queue, a ``PriorityQueue`` as
  controller-runtime 0.23 does by default (named after the controller: the
  ``name`` label of the workqueue metrics; ``with_options(rate_limiter=)`` is
  its rate limiter, else its default per-item exponential backoff), registers the event handlers on
  the Manager's shared informers, adds the controller to the Manager (it
  runs while leading) and returns the ``pycontroller.Controller``.
  ``reconcile(Request)`` returns a ``Result``, ``None``, or raises to be
  retried with backoff.
- Read-your-writes (KEP-5647) is on: the writes a reconcile makes through a
  ``ResourceClient`` are recorded per key, and the key's next reconcile waits
  (requeued with backoff, at most 10 s) until the Manager's informers of the
  written resources have observed them, so a child created a moment ago is
  never created twice and a status is never written from a stale copy
  (``pycontroller.consistency``). ``with_options(read_your_writes=False)``
  turns it off.

The kind of the ``for_`` resource (needed to recognise owner references) is
``for_(..., kind=...)`` when given, else read from the objects in its cache,
else looked up once in the API's discovery document (controller-runtime
knows it from its scheme). Only if discovery fails are owner references
matched on the API group alone, which at worst enqueues a key whose
reconcile finds nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urllib3.exceptions import HTTPError

from pycontroller._objmeta import unwrap as _unwrap
from pycontroller.cache.shared_informer import ResourceEventHandler, SharedIndexInformer
from pycontroller.client import ResourceClient
from pycontroller.consistency import ReadYourWrites
from pycontroller.controller import Controller, Result
from pycontroller.errors import ApiError
from pycontroller.handlers import _controller_owner_key, enqueue_key
from pycontroller.handlers import _EnqueueOwner as _EnqueueControllerOwner
from pycontroller.predicates import Predicate, filter_handler
from pycontroller.request import Request
from pycontroller.workqueue import PriorityQueue
from pycontroller.workqueue.priority_handlers import add_for_create, add_for_update
from pycontroller.workqueue.rate_limiters import RateLimiter

if TYPE_CHECKING:
    from pycontroller.manager import Manager

logger = logging.getLogger(__name__)

__all__ = ["Builder", "MapFunc", "Reconcile"]

Reconcile = Callable[[Request], "Result | None"]
MapFunc = Callable[[dict[str, Any]], Iterable[Request]]


@dataclass
class _Watch:
    group: str
    version: str
    plural: str
    namespaced: bool
    predicates: tuple[Predicate, ...]
    map_fn: MapFunc | None = None
    owned: bool = False
    kind: str | None = None


# What a discovery request may raise: the API's errors, transport errors, a reply that
# does not decode.
_DISCOVERY_ERRORS: tuple[type[Exception], ...] = (ApiError, OSError, ValueError, HTTPError)


def discover_kind(api_client: Any, group: str, version: str, plural: str) -> str | None:
    """The kind served as ``plural`` in ``group/version``, from the API's discovery document.

    controller-runtime knows the For type's kind from its scheme (and the
    RESTMapper's discovery); this is the same lookup for a dict-based
    controller. None when discovery does not list the resource.
    """
    client = ResourceClient(api_client, group, version, plural)
    doc = client._call("GET", client._prefix)  # /api/v1 or /apis/<group>/<version>
    for resource in doc.get("resources") or ():
        if isinstance(resource, dict) and resource.get("name") == plural and resource.get("kind"):
            return str(resource["kind"])
    return None


class _OwnerKind:
    """The ``for_`` resource's kind: given, else learned from its cache or from discovery
    (then fixed).

    ``discover`` (optional) asks the API server once, when an owner reference
    must be matched and the cache has nothing to learn from; if it fails the
    reference is matched on its group alone, and discovery is tried again at
    the next one.
    """

    def __init__(
        self,
        informer: SharedIndexInformer | None,
        kind: str | None,
        discover: Callable[[], str | None] | None = None,
    ) -> None:
        self._informer = informer
        self._kind = kind
        self._discover = discover

    def get(self) -> str | None:
        if self._kind is None and self._informer is not None:
            for obj in self._informer.get_store().list()[:1]:
                kind = obj.get("kind") if isinstance(obj, dict) else None
                if kind:
                    self._kind = str(kind)
        if self._kind is None and self._discover is not None:
            # Without it a controller reference to *any* kind of the group would
            # enqueue a request (controller-runtime's EnqueueRequestForOwner
            # matches group and kind).
            try:
                self._kind = self._discover()
            except _DISCOVERY_ERRORS as err:
                logger.warning("Could not discover the kind of the For resource: %s", err)
        return self._kind


class _EnqueueOwner(_EnqueueControllerOwner):
    """Maps a child's events to its controller owner's key (group + kind of the ``for_``)."""

    def __init__(
        self, queue: PriorityQueue, group: str, kind: _OwnerKind, namespaced: bool = True
    ) -> None:
        super().__init__(queue, lambda obj: _controller_owner_key(obj, group, kind.get, namespaced))


class _EnqueueMapped:
    """Enqueues the requests ``map_fn`` returns for an event's object(s)."""

    def __init__(self, queue: PriorityQueue, map_fn: MapFunc) -> None:
        self.queue = queue
        self.map_fn = map_fn

    def _keys(self, *objs: Any) -> list[str]:
        keys: dict[str, None] = {}
        for obj in objs:
            for request in self.map_fn(_unwrap(obj)) or ():
                keys[str(Request(*request))] = None
        return list(keys)

    def _add(self, *objs: Any) -> None:
        for key in self._keys(*objs):
            self.queue.add(key)

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        for key in self._keys(obj):
            add_for_create(self.queue, key, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        for key in self._keys(old, new):
            add_for_update(self.queue, key, old, new)

    def on_delete(self, obj: Any) -> None:
        self._add(obj)


class _ControllerRunnable:
    """A Controller as a Manager runnable: ``run(stop)`` runs ``workers`` workers."""

    def __init__(self, controller: Controller, workers: int, needs_leader: bool = True) -> None:
        self.controller = controller
        self.workers = workers
        self._needs_leader = needs_leader

    def run(self, stop: threading.Event) -> bool:
        name = self.controller.name
        logger.info("controller=%s action=start workers=%d", name, self.workers)
        finished = self.controller.run(self.workers, stop) is not False
        logger.info("controller=%s action=stopped in_flight_finished=%s", name, finished)
        return finished

    def need_leader_election(self) -> bool:
        return self._needs_leader

    def __repr__(self) -> str:
        return f"Controller({self.controller.name!r})"


class Builder:
    """Builds one controller on ``manager``; see the module docstring. ``complete`` once."""

    def __init__(self, manager: Manager, name: str) -> None:
        if not name:
            raise ValueError("controller name must not be empty")
        self._manager = manager
        self._name = name
        self._for: _Watch | None = None
        self._watches: list[_Watch] = []
        self._global_predicates: list[Predicate] = []
        self._workers = 1
        self._rate_limiter: RateLimiter | None = None
        self._max_retries: int | None = None
        self._read_your_writes = True
        self._need_leader_election = True
        self._completed = False

    def for_(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        namespaced: bool = True,
        predicates: Iterable[Predicate] = (),
        kind: str | None = None,
    ) -> Builder:
        """The resource this controller reconciles (once per builder)."""
        if self._for is not None:
            raise ValueError("for_ may only be called once")
        self._for = _Watch(group, version, plural, namespaced, tuple(predicates), kind=kind)
        return self

    def owns(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        namespaced: bool = True,
        predicates: Iterable[Predicate] = (),
    ) -> Builder:
        """A child resource: its events enqueue its controller owner (a ``for_`` object)."""
        self._watches.append(
            _Watch(group, version, plural, namespaced, tuple(predicates), owned=True)
        )
        return self

    def watches(
        self,
        group: str,
        version: str,
        plural: str,
        map_fn: MapFunc,
        *,
        namespaced: bool = True,
        predicates: Iterable[Predicate] = (),
    ) -> Builder:
        """Any resource: its events enqueue ``map_fn(obj)``'s requests."""
        self._watches.append(
            _Watch(group, version, plural, namespaced, tuple(predicates), map_fn=map_fn)
        )
        return self

    def with_event_filter(self, *predicates: Predicate) -> Builder:
        """Predicates every watched event must pass, on top of each watch's own."""
        self._global_predicates.extend(predicates)
        return self

    def with_options(
        self,
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        *,
        max_retries: int | None = None,
        read_your_writes: bool = True,
        need_leader_election: bool = True,
    ) -> Builder:
        """Concurrent reconciles (``workers``), the queue's rate limiter, error retry
        cap, read-your-writes (on by default; see ``pycontroller.consistency``), and
        whether the controller runs only on the leader (controller-runtime's
        ``NeedLeaderElection``; False: on every replica, even with leader election)."""
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self._workers = workers
        self._rate_limiter = rate_limiter
        self._max_retries = max_retries
        self._read_your_writes = read_your_writes
        self._need_leader_election = need_leader_election
        return self

    def complete(self, reconcile: Reconcile) -> Controller:
        """Register the handlers, add the controller to the Manager, return it."""
        if self._completed:
            raise RuntimeError("complete may only be called once")
        if self._for is None and not self._watches:
            raise ValueError("must call for_ or watches before complete")
        if self._for is None and any(w.owned for w in self._watches):
            raise ValueError("owns needs for_ (the owner's resource)")
        self._manager._claim_controller_name(self._name)
        self._completed = True
        mgr = self._manager
        queue = PriorityQueue(self._name, self._rate_limiter)
        informers: dict[str, SharedIndexInformer] = {}

        def informer(w: _Watch) -> SharedIndexInformer:
            inf = mgr.informers.for_resource(w.group, w.version, w.plural, w.namespaced)
            informers[f"{w.group}/{w.version}/{w.plural}"] = inf
            return inf

        def register(w: _Watch, handler: ResourceEventHandler) -> None:
            predicates = (*self._global_predicates, *w.predicates)
            if predicates:
                handler = filter_handler(handler, *predicates)
            informer(w).add_event_handler(handler)

        owner_kind: _OwnerKind | None = None
        if self._for is not None:
            f = self._for
            owner_kind = _OwnerKind(
                informer(f),
                f.kind,
                lambda: discover_kind(mgr.api_client, f.group, f.version, f.plural),
            )
            register(self._for, enqueue_key(queue))
        for w in self._watches:
            if w.owned:
                assert self._for is not None and owner_kind is not None
                register(w, _EnqueueOwner(queue, self._for.group, owner_kind, self._for.namespaced))
            else:
                assert w.map_fn is not None
                register(w, _EnqueueMapped(queue, w.map_fn))

        def sync(key: str) -> Result | None:
            return reconcile(Request.from_key(key))

        controller = Controller(
            self._name,
            queue,
            sync,
            has_synced=[inf.has_synced for inf in informers.values()],
            max_retries=self._max_retries,
            graceful_shutdown_timeout=mgr.graceful_shutdown_timeout,
            read_your_writes=ReadYourWrites(mgr.informers) if self._read_your_writes else None,
        )
        mgr.add(_ControllerRunnable(controller, self._workers, self._need_leader_election))
        logger.debug("Controller %s built: watches %s", self._name, sorted(informers))
        return controller
