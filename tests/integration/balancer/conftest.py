"""Fixtures: an embedded API server with the Balancer CRD and the controller in threads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from controllers.balancer import names
from controllers.balancer.compat import BalancerController
from pycontroller.client import ResourceClient
from pycontroller.errors import ConflictError, NotFoundError
from pycontroller.testing import APIServer
from pycontroller.testing import wait_for as shared_wait_for

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "crds" / "balancer.yaml"
SAMPLE = REPO / "crds" / "samples" / "balancer.yaml"

T = TypeVar("T")


def wait_for(
    probe: Callable[[], T | None], *, timeout: float = 15.0, interval: float = 0.05, what: str = ""
) -> T:
    """``pycontroller.testing.wait_for`` where a 404 from ``probe`` means "not yet"."""

    def attempt() -> T | None:
        try:
            return probe()
        except NotFoundError:
            return None

    return shared_wait_for(attempt, timeout, interval=interval, what=what or repr(probe))


def permissive_crd() -> dict[str, Any]:
    """The Balancer CRD with its schema (and CEL rules) replaced by "anything
    goes": an API server that enforces none of the CRD's validation, as an
    older cluster or a hand-installed CRD may."""
    with CRD.open() as f:
        crd: dict[str, Any] = yaml.safe_load(f)
    for version in crd["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    return crd


def sample_balancer(name: str = "balancer-sample", namespace: str = "default") -> dict[str, Any]:
    with SAMPLE.open() as f:
        obj: dict[str, Any] = yaml.safe_load(f)
    obj["metadata"] = {"name": name, "namespace": namespace}
    return obj


class Cluster:
    """Typed clients for the embedded server (plain-dict REST)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.api_client = server.api_client()
        self.balancers = ResourceClient(self.api_client, names.GROUP, names.VERSION, names.PLURAL)
        self.services = ResourceClient(self.api_client, "", "v1", "services")
        self.configmaps = ResourceClient(self.api_client, "", "v1", "configmaps")
        self.deployments = ResourceClient(self.api_client, "apps", "v1", "deployments")
        self.events = ResourceClient(self.api_client, "", "v1", "events")
        self.namespaces = ResourceClient(self.api_client, "", "v1", "namespaces", namespaced=False)

    def ensure_namespace(self, name: str) -> None:
        try:
            self.namespaces.get(name)
        except NotFoundError:
            self.namespaces.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )

    def create_balancer(self, obj: dict[str, Any]) -> dict[str, Any]:
        ns = obj["metadata"].get("namespace", "default")
        self.ensure_namespace(ns)
        created: dict[str, Any] = self.balancers.create(obj, namespace=ns)
        return created

    def balancer(self, name: str, namespace: str = "default") -> dict[str, Any]:
        got: dict[str, Any] = self.balancers.get(name, namespace=namespace)
        return got

    def condition(self, name: str, namespace: str, type_: str) -> dict[str, Any] | None:
        status = self.balancer(name, namespace).get("status") or {}
        for cond in status.get("conditions") or []:
            if cond.get("type") == type_:
                return dict(cond)
        return None

    def events_for(self, name: str, namespace: str) -> list[dict[str, Any]]:
        items = self.events.list(namespace=namespace).get("items") or []
        return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]

    def modify_balancer(
        self, name: str, namespace: str, mutate: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """Read-modify-write the Balancer's spec, retrying on conflict."""
        for _ in range(20):
            obj = self.balancer(name, namespace)
            mutate(obj)
            try:
                updated: dict[str, Any] = self.balancers.update(obj)
                return updated
            except ConflictError:
                continue
        raise AssertionError("could not update the Balancer")

    def converged(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """The Balancer if its status says Reconciled=True for its generation, else None."""
        obj = self.balancer(name, namespace)
        status = obj.get("status") or {}
        if status.get("observedGeneration") != obj["metadata"].get("generation"):
            return None
        for cond in status.get("conditions") or []:
            if cond.get("type") == "Reconciled" and cond.get("status") == "True":
                return obj
        return None


@pytest.fixture
def server(apiserver_factory: Callable[..., APIServer]) -> APIServer:
    """A started API server with the Balancer CRD (stopped by the shared plugin)."""
    return apiserver_factory(crds=[str(CRD)])


@pytest.fixture
def permissive_server(apiserver_factory: Callable[..., APIServer]) -> APIServer:
    """A started API server whose Balancer CRD validates nothing (``permissive_crd``)."""
    return apiserver_factory(crds=[permissive_crd()])


@pytest.fixture
def cluster(server: APIServer) -> Cluster:
    return Cluster(server)


@contextmanager
def running_controller(
    server: APIServer, *, namespace: str | None = None, resync_period: float = 0.0, workers: int = 2
) -> Iterator[BalancerController]:
    """Run a BalancerController in a thread; stop and join it on exit."""
    bc = BalancerController(server.api_client(), namespace=namespace, resync_period=resync_period)
    stop = threading.Event()
    thread = threading.Thread(target=bc.run, args=(workers, stop), name="balancer", daemon=True)
    thread.start()
    try:
        wait_for(bc.has_synced, timeout=10, what="informer caches")
        yield bc
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive(), "controller did not stop within 10 s"


@pytest.fixture
def controller(server: APIServer) -> Iterator[BalancerController]:
    with running_controller(server) as bc:
        yield bc
