"""Wiring of the Balancer controller: informers, event handlers, queue, Controller.

Watches (all through one ``SharedInformerFactory``, namespace-scoped when a
namespace is given, else cluster-wide):

- Balancers (``exposer.hliangzhao.io/v1alpha1``): adds and deletes enqueue
  the key; an update enqueues only when something the reconciler reads
  changed (``BALANCER_UPDATE_PREDICATES``): generation (spec), labels,
  annotations, deletionTimestamp, or a periodic resync (same
  resourceVersion). A status-only update, such as our own status write, is
  dropped, so a status write never triggers another reconcile.
- Services, ConfigMaps, Deployments: every event of an object whose
  controller ownerReference is a Balancer enqueues that Balancer
  (``enqueue_owner``), so edits and deletions of children self-heal and a
  Deployment's status change updates the ``Available`` condition.

``BalancerController.run(workers, stop)`` starts the informers, waits for
their caches, runs the workers and returns after draining when ``stop`` is
set. With leader election, call ``start_informers`` at once (the cache warms
up while waiting for the lease; ``/readyz`` reflects it) and ``run_workers``
once leading.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from controllers.balancer import names
from controllers.balancer.reconcile import CONTROLLER_NAME, Reconciler
from pycontroller.cache import SharedInformerFactory
from pycontroller.client import ResourceClient
from pycontroller.controller import Controller
from pycontroller.handlers import (
    UpdatePredicate,
    annotations_changed,
    deletion_timestamp_changed,
    enqueue_key,
    enqueue_owner,
    generation_changed,
    labels_changed,
    predicate_handler,
    resource_version_changed,
)
from pycontroller.record import EventRecorder
from pycontroller.workqueue import RateLimitingQueue

logger = logging.getLogger(__name__)

#: Component name on the Events this controller records.
COMPONENT = "balancer-controller"
#: Name of the work queue (the ``name`` label of the workqueue_* metrics).
QUEUE_NAME = "balancer"

# (group, version, plural) of every watched resource.
BALANCERS = (names.GROUP, names.VERSION, names.PLURAL)
SERVICES = ("", "v1", "services")
CONFIGMAPS = ("", "v1", "configmaps")
DEPLOYMENTS = ("apps", "v1", "deployments")


def is_resync(old: Any, new: Any) -> bool:
    """A periodic resync (or unchanged relist): old and new share a resourceVersion."""
    return not resource_version_changed(old, new)


#: Balancer updates that reach the queue: any of these holds. A status-only
#: update (our own status write included) matches none, since the API server
#: bumps ``generation`` only for spec changes.
BALANCER_UPDATE_PREDICATES: tuple[UpdatePredicate, ...] = (
    is_resync,
    generation_changed,
    labels_changed,
    annotations_changed,
    deletion_timestamp_changed,
)


def balancer_update_relevant(old: Any, new: Any) -> bool:
    """True iff a Balancer update may change what the reconciler does.

    Periodic resyncs pass, so the level-based reconcile runs every resync
    period; status-only updates do not.
    """
    return any(p(old, new) for p in BALANCER_UPDATE_PREDICATES)


class BalancerController:
    """The Balancer controller, ready to run against one API server.

    ``queue`` is owned by the Controller once running (it is shut down on
    stop); pass a fresh one, or let the constructor make
    ``RateLimitingQueue(name="balancer")``.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str | None = None,
        resync_period: float = 0.0,
        nginx_image: str = names.DEFAULT_NGINX_IMAGE,
        queue: RateLimitingQueue | None = None,
        recorder: Any = None,
        max_retries: int | None = None,
    ) -> None:
        self.namespace = namespace or None
        self.factory = SharedInformerFactory(
            api_client, resync_period=resync_period, namespace=self.namespace
        )
        self.queue = queue if queue is not None else RateLimitingQueue(name=QUEUE_NAME)
        self._owns_recorder = recorder is None
        self.recorder = recorder if recorder is not None else EventRecorder(api_client, COMPONENT)

        self.informers = {
            plural: self.factory.for_resource(group, version, plural)
            for group, version, plural in (BALANCERS, SERVICES, CONFIGMAPS, DEPLOYMENTS)
        }
        self.informers[names.PLURAL].add_event_handler(
            predicate_handler(enqueue_key(self.queue), *BALANCER_UPDATE_PREDICATES)
        )
        owner_handler = enqueue_owner(self.queue, names.KIND, names.GROUP)
        for _, _, plural in (SERVICES, CONFIGMAPS, DEPLOYMENTS):
            self.informers[plural].add_event_handler(owner_handler)

        self.reconciler = Reconciler(
            balancers=self.factory.lister(*BALANCERS),
            services=self.factory.lister(*SERVICES),
            configmaps=self.factory.lister(*CONFIGMAPS),
            deployments=self.factory.lister(*DEPLOYMENTS),
            balancer_client=ResourceClient(api_client, *BALANCERS),
            service_client=ResourceClient(api_client, *SERVICES),
            configmap_client=ResourceClient(api_client, *CONFIGMAPS),
            deployment_client=ResourceClient(api_client, *DEPLOYMENTS),
            recorder=self.recorder,
            nginx_image=nginx_image,
        )
        self.controller = Controller(
            CONTROLLER_NAME,
            self.queue,
            self.reconciler.sync,
            has_synced=[inf.has_synced for inf in self.informers.values()],
            max_retries=max_retries,
        )

    # -- lifecycle ---------------------------------------------------------

    def has_synced(self) -> bool:
        """True once every informer has delivered its initial list."""
        return all(inf.has_synced() for inf in self.informers.values())

    def start_informers(self, stop: threading.Event) -> None:
        """Start every informer (non-blocking); they stop when ``stop`` is set."""
        self.factory.start(stop)

    def run_workers(self, workers: int, stop: threading.Event) -> None:
        """Run ``workers`` reconcile threads until ``stop``; drain, then return."""
        logger.info(
            "controller=%s action=start workers=%d namespace=%s",
            CONTROLLER_NAME,
            workers,
            self.namespace or "<all>",
        )
        self.controller.run(workers, stop)
        logger.info("controller=%s action=stopped", CONTROLLER_NAME)

    def shutdown(self, event_flush_timeout: float = 2.0) -> None:
        """Stop the informers and flush pending Events (at most ``event_flush_timeout`` s).

        Call after the workers returned. A recorder passed in by the caller is
        the caller's to shut down.
        """
        self.factory.shutdown()
        if self._owns_recorder:
            self.recorder.shutdown(event_flush_timeout)

    def run(self, workers: int, stop: threading.Event) -> None:
        """Start informers, run workers until ``stop``, then shut everything down."""
        self.start_informers(stop)
        try:
            self.run_workers(workers, stop)
        finally:
            self.shutdown()
