"""The Balancer controller on a ``pycontroller.Manager``: one builder call.

``for_`` Balancers (``predicates.py``: our own status writes never trigger a
reconcile); ``owns`` their children, whose every change but a periodic resync
enqueues the Balancer (sample-controller's ``handleObject``).
"""

from __future__ import annotations

from controllers.balancer import names
from controllers.balancer.predicates import balancer_update_relevant
from controllers.balancer.reconcile import CONTROLLER_NAME, Reconciler
from controllers.balancer.types import Balancer
from pycontroller import Controller, Manager
from pycontroller.predicates import Funcs, ResourceVersionChanged
from pycontroller.record import Recorder

COMPONENT = "balancer-controller"  # the component of our Events
BALANCERS = (names.GROUP, names.VERSION, names.PLURAL)
SERVICES, CONFIGMAPS = ("", "v1", "services"), ("", "v1", "configmaps")
DEPLOYMENTS = ("apps", "v1", "deployments")


def setup(
    mgr: Manager,
    *,
    nginx_image: str = names.DEFAULT_NGINX_IMAGE,
    workers: int = 2,
    recorder: Recorder | None = None,
    max_retries: int | None = None,
) -> Controller:
    """Add the Balancer controller to ``mgr``; Events go to ``recorder`` (default: the mgr's)."""
    lister, client = mgr.informers.lister, mgr.client
    reconciler = Reconciler(
        balancers=lister(*BALANCERS, type=Balancer),
        services=lister(*SERVICES),
        configmaps=lister(*CONFIGMAPS),
        deployments=lister(*DEPLOYMENTS),
        balancer_client=client(*BALANCERS),
        service_client=client(*SERVICES),
        configmap_client=client(*CONFIGMAPS),
        deployment_client=client(*DEPLOYMENTS),
        recorder=recorder if recorder is not None else mgr.recorder(COMPONENT),
        nginx_image=nginx_image,
    )
    relevant = [Funcs(update=balancer_update_relevant)]
    builder = mgr.controller(CONTROLLER_NAME).for_(*BALANCERS, predicates=relevant, kind=names.KIND)
    for child in (SERVICES, CONFIGMAPS, DEPLOYMENTS):
        builder.owns(*child, predicates=[ResourceVersionChanged()])
    return builder.with_options(workers=workers, max_retries=max_retries).complete(
        lambda request: reconciler.sync(str(request))
    )
