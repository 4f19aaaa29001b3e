"""``BalancerController``: the Balancer controller on a Manager of its own (tests, embedding)."""

from __future__ import annotations

import threading
from typing import Any

from controllers.balancer import names
from controllers.balancer.controller import (
    BALANCERS,
    COMPONENT,
    CONFIGMAPS,
    DEPLOYMENTS,
    SERVICES,
    setup,
)
from pycontroller import Controller, Manager
from pycontroller.record import Recorder


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
