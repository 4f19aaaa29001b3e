"""Fixtures: an embedded API server with both CRDs, and the operator on a Manager in a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from prometheus_client import REGISTRY, CollectorRegistry

from controllers.reverseproxy import names
from controllers.reverseproxy.controller import setup
from pycontroller import Manager
from pycontroller.client import ResourceClient
from pycontroller.errors import ConflictError, NotFoundError
from pycontroller.testing import APIServer
from pycontroller.testing import wait_for as shared_wait_for

REPO = Path(__file__).resolve().parents[3]
CRDS = [REPO / "crds" / f"{k.singular}.yaml" for k in names.KINDS]
IMAGE = "nginx:1.25"

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], *, timeout: float = 15.0, what: str = "") -> T:
    """``pycontroller.testing.wait_for`` where a 404 from ``probe`` means "not yet"."""

    def attempt() -> T | None:
        try:
            return probe()
        except NotFoundError:
            return None

    return shared_wait_for(attempt, timeout, interval=0.05, what=what or repr(probe))


def permissive(path: Path) -> dict[str, Any]:
    """A CRD whose schema and CEL rules accept anything (an API server that enforces nothing)."""
    crd: dict[str, Any] = yaml.safe_load(path.read_text())
    for version in crd["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    return crd


def sample(kind: names.Kind, name: str | None = None, namespace: str = "default") -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(
        (REPO / "crds" / "samples" / f"{kind.singular}.yaml").read_text()
    )
    obj["metadata"] = {"name": name or obj["metadata"]["name"], "namespace": namespace}
    return obj


class Cluster:
    """Plain-dict clients for the embedded server."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        api = server.api_client()
        self.kinds = {
            k.kind: ResourceClient(api, names.GROUP, names.VERSION, k.plural) for k in names.KINDS
        }
        self.configmaps = ResourceClient(api, "", "v1", "configmaps")
        self.services = ResourceClient(api, "", "v1", "services")
        self.deployments = ResourceClient(api, "apps", "v1", "deployments")
        self.events = ResourceClient(api, "", "v1", "events")
        self.children = {
            "ConfigMap": self.configmaps,
            "Deployment": self.deployments,
            "Service": self.services,
        }

    def client(self, kind: names.Kind) -> ResourceClient:
        return self.kinds[kind.kind]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = names.kind_of(obj)
        created: dict[str, Any] = self.client(kind).create(obj, namespace="default")
        return created

    def get(self, kind: names.Kind, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self.client(kind).get(name, namespace="default")
        return got

    def condition(self, kind: names.Kind, name: str) -> dict[str, Any] | None:
        for cond in (self.get(kind, name).get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Reconciled":
                return dict(cond)
        return None

    def converged(self, kind: names.Kind, name: str) -> dict[str, Any] | None:
        """The object if Reconciled=True for its current generation, else None."""
        obj = self.get(kind, name)
        cond = self.condition(kind, name) or {}
        ok = cond.get("status") == "True" and cond.get("observedGeneration") == obj["metadata"].get(
            "generation"
        )
        return obj if ok else None

    def modify(self, kind: names.Kind, name: str, mutate: Callable[[dict[str, Any]], None]) -> None:
        for _ in range(20):
            obj = self.get(kind, name)
            mutate(obj)
            try:
                self.client(kind).update(obj)
                return
            except ConflictError:
                continue
        raise AssertionError("could not update")

    def events_for(self, name: str) -> list[dict[str, Any]]:
        items = self.events.list(namespace="default").get("items") or []
        return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


class Operator:
    """The operator running on its own Manager; ``reconciles(kind)`` reads its metrics."""

    def __init__(self, server: APIServer, resync_period: float) -> None:
        self.registry = CollectorRegistry()
        self.manager = Manager(
            server.api_client(),
            resync_period=resync_period,
            registry=self.registry,
            name=names.COMPONENT,
        )
        self.controllers = setup(self.manager, nginx_image=IMAGE, workers=2)

    def reconciles(self, kind: names.Kind, result: str = "success") -> float:
        # controller_runtime_* live in the default registry (process-wide: compare deltas)
        value = REGISTRY.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": kind.controller, "result": result}
        )
        return value or 0.0


@contextmanager
def running(server: APIServer, *, resync_period: float = 0.0) -> Iterator[Operator]:
    op = Operator(server, resync_period)
    stop = threading.Event()
    thread = threading.Thread(target=op.manager.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(op.manager._synced, timeout=10, what="informer caches")
        yield op
    finally:
        stop.set()
        thread.join(timeout=15)
        assert not thread.is_alive(), "the operator did not stop within 15 s"


@pytest.fixture
def server(apiserver_factory: Callable[..., APIServer]) -> APIServer:
    return apiserver_factory(crds=[str(p) for p in CRDS])


@pytest.fixture
def permissive_server(apiserver_factory: Callable[..., APIServer]) -> APIServer:
    return apiserver_factory(crds=[permissive(p) for p in CRDS])


@pytest.fixture
def cluster(server: APIServer) -> Cluster:
    return Cluster(server)


@pytest.fixture
def operator(server: APIServer) -> Iterator[Operator]:
    with running(server) as op:
        yield op
