"""Seed 004's sample-crd Network controller on the Manager (README.md: line by line)."""

from __future__ import annotations

import logging

from pycontroller import Controller, Manager, NotFoundError, Request
from pycontroller.predicates import ResourceVersionChanged

from .types import Network

logger = logging.getLogger(__name__)

NETWORKS = ("samplecrd.k8s.io", "v1", "networks")  # group, version, plural
COMPONENT = "network-controller"  # the Events' source.component
SUCCESS_SYNCED = "Synced"
MESSAGE_RESOURCE_SYNCED = "Network synced successfully"


def setup(mgr: Manager, workers: int = 2) -> Controller:
    """Add the Network controller to ``mgr``."""
    networks = mgr.informers.lister(*NETWORKS, type=Network)
    recorder = mgr.recorder(COMPONENT)

    def reconcile(request: Request) -> None:
        try:
            network = networks.get(request.name, request.namespace)
        except NotFoundError:
            logger.info("Network %s deleted: will delete it from Neutron", request)
            return
        spec = s if isinstance(s := network.get("spec"), dict) else {}
        logger.info("Syncing %s cidr=%s gateway=%s", request, spec.get("cidr"), spec.get("gateway"))
        recorder.event(network, "Normal", SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED)

    builder = mgr.controller("networks").for_(*NETWORKS, predicates=[ResourceVersionChanged()])
    return builder.with_options(workers=workers).complete(reconcile)
