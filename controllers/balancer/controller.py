"""Wiring of the Balancer controller on a ``pycontroller.Manager`` (one builder call).

``setup(mgr, ...)`` adds the controller to a Manager:

- ``for_`` Balancers (``exposer.hliangzhao.io/v1alpha1``): adds and deletes
  enqueue the key; an update enqueues only when something the reconciler
  reads changed (``BALANCER_UPDATE_PREDICATES``): generation (spec), labels,
  annotations, deletionTimestamp, a periodic resync (same resourceVersion),
  or a new uid (deleted and re-created). A status-only update, such as our
  own status write, is dropped, so a status write never triggers another
  reconcile.
- ``owns`` Services, ConfigMaps, Deployments: every event of an object whose
  controller ownerReference is a Balancer enqueues that Balancer, so edits
  and deletions of children self-heal and a Deployment's status change
  updates the ``Available`` condition; a child's periodic resync does not
  (the Balancer's own resync covers it).

All informers come from the Manager's one ``SharedInformerFactory``
(namespace-scoped when it has a namespace). ``BalancerController`` is the
same wiring on a Manager of its own, for tests and embedding:
``BalancerController(api_client).run(workers, stop)``.
"""

from __future__ import annotations

import argparse
import logging
import threading
from pathlib import Path
from typing import Any

from controllers.balancer import names
from controllers.balancer.reconcile import CONTROLLER_NAME, Reconciler
from controllers.balancer.types import Balancer
from pycontroller import Controller, Manager
from pycontroller.handlers import (
    UpdatePredicate,
    annotations_changed,
    deletion_timestamp_changed,
    generation_changed,
    labels_changed,
    resource_version_changed,
)
from pycontroller.predicates import Funcs, ResourceVersionChanged
from pycontroller.record import Recorder

logger = logging.getLogger(__name__)

#: Component name on the Events this controller records.
COMPONENT = "balancer-controller"
#: Name of the work queue (the ``name`` label of the workqueue_* metrics): the controller's.
QUEUE_NAME = CONTROLLER_NAME

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


def positive_int(value: str) -> int:
    """An argparse type: an integer >= 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {number}")
    return number


def find_repo_file(relative: str) -> str:
    """``relative`` (e.g. ``crds/balancer.yaml``) near the package, else under the cwd.

    Returned as given when found nowhere (only ``--embedded`` needs it).
    """
    here = Path(__file__).resolve()
    for base in (*here.parents, Path.cwd()):
        if (base / relative).is_file():
            return str(base / relative)
    return relative


def setup(
    mgr: Manager,
    *,
    nginx_image: str = names.DEFAULT_NGINX_IMAGE,
    workers: int = 2,
    recorder: Recorder | None = None,
    max_retries: int | None = None,
) -> Controller:
    """Add the Balancer controller to ``mgr``; Events go to ``recorder`` (default: the mgr's)."""
    informers = mgr.informers
    reconciler = Reconciler(
        balancers=informers.lister(*BALANCERS, type=Balancer),
        services=informers.lister(*SERVICES),
        configmaps=informers.lister(*CONFIGMAPS),
        deployments=informers.lister(*DEPLOYMENTS),
        balancer_client=mgr.client(*BALANCERS),
        service_client=mgr.client(*SERVICES),
        configmap_client=mgr.client(*CONFIGMAPS),
        deployment_client=mgr.client(*DEPLOYMENTS),
        recorder=recorder if recorder is not None else mgr.recorder(COMPONENT),
        nginx_image=nginx_image,
    )
    builder = mgr.controller(CONTROLLER_NAME).for_(
        *BALANCERS, predicates=[Funcs(update=balancer_update_relevant)], kind=names.KIND
    )
    for child in (SERVICES, CONFIGMAPS, DEPLOYMENTS):
        # A child's periodic resync (same resourceVersion) says nothing new: the
        # Balancer's own resync already reconciles it once per period
        # (sample-controller's handleObject drops these the same way).
        builder.owns(*child, predicates=[ResourceVersionChanged()])
    return builder.with_options(workers=workers, max_retries=max_retries).complete(
        lambda request: reconciler.sync(str(request))
    )


class BalancerController:
    """The Balancer controller on a Manager of its own (no servers, no leader election).

    ``run(workers, stop)`` starts the informers, waits for their caches, runs
    the workers and returns once ``stop`` is set and in-flight reconciles
    finished (within ``graceful_shutdown_timeout``); it returns the Manager's
    exit code. A ``recorder`` passed in is the caller's to shut down.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        namespace: str | None = None,
        resync_period: float = 0.0,
        nginx_image: str = names.DEFAULT_NGINX_IMAGE,
        recorder: Recorder | None = None,
        max_retries: int | None = None,
        graceful_shutdown_timeout: float = 25.0,
    ) -> None:
        self.namespace = namespace or None
        self.manager = Manager(
            api_client,
            namespace=self.namespace,
            resync_period=resync_period,
            graceful_shutdown_timeout=graceful_shutdown_timeout,
            name=COMPONENT,
        )
        self.factory = self.manager.informers
        self.informers = {
            plural: self.factory.for_resource(group, version, plural)
            for group, version, plural in (BALANCERS, SERVICES, CONFIGMAPS, DEPLOYMENTS)
        }
        self._options: dict[str, Any] = {
            "nginx_image": nginx_image,
            "recorder": recorder,
            "max_retries": max_retries,
        }
        self.controller: Controller | None = None

    def has_synced(self) -> bool:
        """True once every informer has delivered its initial list."""
        return all(inf.has_synced() for inf in self.informers.values())

    def run(self, workers: int, stop: threading.Event) -> int:
        """Run until ``stop`` is set (see the class docstring); the exit code."""
        self.controller = setup(self.manager, workers=workers, **self._options)
        return self.manager.run(stop)
