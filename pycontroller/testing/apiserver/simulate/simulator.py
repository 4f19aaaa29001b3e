"""``Simulator``: runs the enabled simulated components in one background thread.

Like ``gc.py``: a storage listener wakes the thread on commits that matter to
an enabled component; after a short debounce it makes one pass, holding
``storage.lock`` so that every component sees one consistent state and its
writes are serialised with the clients'. A pass runs each component's
``sync(at)`` once (one step of a rollout, as one ``syncDeployment`` of kube's
controller); their own writes wake the thread again, so a rollout advances
pass by pass until nothing changes. Components may also ask to be woken at a
time (``minReadySeconds``, progress deadlines); a slow periodic pass catches
anything else.

Invariant: a pass never writes when the stored state already is what the
components want, so an idle server stays idle.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Protocol

from pycontroller.testing.apiserver.registry.kinds_registry import Registry
from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.rest import REST
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import InternalClient, earliest
from pycontroller.testing.apiserver.simulate.daemonset import DaemonSetController
from pycontroller.testing.apiserver.simulate.deployment import DeploymentController
from pycontroller.testing.apiserver.simulate.disruption import DisruptionController
from pycontroller.testing.apiserver.simulate.endpoints import EndpointsController
from pycontroller.testing.apiserver.simulate.endpointslice import EndpointSliceController
from pycontroller.testing.apiserver.simulate.job import JobController, JobPodExits
from pycontroller.testing.apiserver.simulate.kubelet import Kubelet
from pycontroller.testing.apiserver.simulate.replicaset import ReplicaSetController
from pycontroller.testing.apiserver.simulate.statefulset import StatefulSetController
from pycontroller.testing.apiserver.simulate.volumes import VolumeBinder

__all__ = ["DEFAULT_SIMULATIONS", "SIMULATIONS", "Simulator", "ensure_types"]

logger = logging.getLogger(__name__)

# What a Manager's ``--embedded`` runs.
DEFAULT_SIMULATIONS: tuple[str, ...] = ("deployments", "kubelet", "endpoints")
# Every simulation there is: the defaults and the opt-in ones.
SIMULATIONS: tuple[str, ...] = (
    *DEFAULT_SIMULATIONS,
    "disruption",
    "jobs",
    "statefulsets",
    "daemonsets",
    "volumes",
)

# Storage keys (group, plural) whose changes each simulation reacts to.
_WATCHED: dict[str, frozenset[tuple[str, str]]] = {
    "deployments": frozenset({("apps", "deployments"), ("apps", "replicasets"), ("", "pods")}),
    "kubelet": frozenset({("", "pods"), ("", "nodes")}),
    "endpoints": frozenset(
        {("", "services"), ("", "pods"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")}
    ),
    "disruption": frozenset(
        {
            ("policy", "poddisruptionbudgets"),
            ("", "pods"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("", "replicationcontrollers"),
        }
    ),
    "jobs": frozenset({("batch", "jobs"), ("", "pods")}),
    "statefulsets": frozenset(
        {
            ("apps", "statefulsets"),
            ("", "pods"),
            ("apps", "controllerrevisions"),
            ("", "persistentvolumeclaims"),
        }
    ),
    "daemonsets": frozenset(
        {("apps", "daemonsets"), ("", "pods"), ("apps", "controllerrevisions"), ("", "nodes")}
    ),
    "volumes": frozenset(
        {
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("storage.k8s.io", "storageclasses"),
            ("", "pods"),
        }
    ),
}


def _rt(
    group: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    status: bool = False,
    categories: tuple[str, ...] = (),
) -> ResourceType:
    return ResourceType(
        group=group,
        version="v1",
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=short,
        categories=categories,
        has_status=status,
    )


# The kinds a simulation writes. Served by ``builtin.py`` once it lists them;
# until then (or if it does not) ``ensure_types`` registers these minimal
# definitions so the simulation has somewhere to write.
_NEEDED: dict[str, tuple[ResourceType, ...]] = {
    "deployments": (
        _rt("apps", "ReplicaSet", "replicasets", short=("rs",), status=True, categories=("all",)),
    ),
    "kubelet": (_rt("", "Node", "nodes", namespaced=False, short=("no",), status=True),),
    "endpoints": (
        _rt("", "Endpoints", "endpoints", short=("ep",)),
        _rt("discovery.k8s.io", "EndpointSlice", "endpointslices"),
    ),
}


def ensure_types(registry: Registry, names: Iterable[str]) -> None:
    """Serve the kinds the named simulations write, when not served yet."""
    for name in names:
        for rt in _NEEDED.get(name, ()):
            if registry.get(rt.group, rt.version, rt.plural) is None:
                registry.add(rt)


class _Component(Protocol):
    def sync(self, at: float) -> float | None: ...


class Simulator(BackgroundLoop):
    """The simulated controllers and kubelet of one ``APIServer``.

    ``names``: a subset of ``SIMULATIONS``; empty means nothing runs and no
    listener is installed. Raises ``ValueError`` for an unknown name.
    """

    def __init__(
        self,
        rest: REST,
        names: Iterable[str] = (),
        *,
        period: float = 2.0,
        debounce: float = 0.01,
    ) -> None:
        wanted = tuple(dict.fromkeys(names))
        unknown = [n for n in wanted if n not in SIMULATIONS]
        if unknown:
            raise ValueError(
                f"unknown simulation(s) {', '.join(map(repr, unknown))}: "
                f"choose from {', '.join(SIMULATIONS)}"
            )
        super().__init__(debounce)
        self.names = wanted
        self.rest = rest
        self.period = period
        self._clients: list[InternalClient] = []
        self._components: list[_Component] = []
        self._endpoints: EndpointsController | None = None
        self._watched: frozenset[tuple[str, str]] = frozenset().union(
            *(_WATCHED[n] for n in wanted)
        )
        self._next_at: float | None = None
        if not wanted:
            return
        ensure_types(rest.registry, wanted)
        # Order within a pass follows the data: Deployments make ReplicaSets,
        # ReplicaSets, Jobs, StatefulSets and DaemonSets make pods (and
        # ControllerRevisions, PVCs), the kubelet runs them, endpoints
        # list them. A Job pod's containers exit (JobPodExits) in the pass
        # after the one that ran them.
        if "deployments" in wanted:
            self._components.append(DeploymentController(self._client("kube-controller-manager")))
            self._components.append(ReplicaSetController(self._client("kube-controller-manager")))
        if "jobs" in wanted:
            self._components.append(JobController(self._client("kube-controller-manager")))
            if "kubelet" in wanted:  # the kubelet's container exits of Job pods
                self._components.append(JobPodExits(self._client("kubelet")))
        if "statefulsets" in wanted:
            self._components.append(StatefulSetController(self._client("kube-controller-manager")))
        if "daemonsets" in wanted:
            self._components.append(DaemonSetController(self._client("kube-controller-manager")))
        volumes: VolumeBinder | None = None
        if "volumes" in wanted:
            # Before the kubelet's scheduler, which asks it whether a pod's
            # claims are bound.
            volumes = VolumeBinder(
                self._client("kube-controller-manager"), self._client("local-path-provisioner")
            )
            self._components.append(volumes)
        if "kubelet" in wanted:
            self._components.append(
                Kubelet(self._client("kubelet"), self._client("kube-scheduler"), volumes=volumes)
            )
        if "endpoints" in wanted:
            self._endpoints = EndpointsController(self._client("kube-controller-manager"))
            self._components.append(self._endpoints)
            self._components.append(
                EndpointSliceController(self._client("kube-controller-manager"))
            )
        if "disruption" in wanted:
            self._components.append(DisruptionController(self._client("kube-controller-manager")))
        rest.storage.add_listener(self._on_event)

    def _client(self, field_manager: str) -> InternalClient:
        c = InternalClient(self.rest, field_manager)
        self._clients.append(c)
        return c

    @property
    def enabled(self) -> bool:
        return bool(self._components)

    # --- lifecycle -------------------------------------------------------------------

    def _on_event(self, ev: Event) -> None:
        if ev.rkey not in self._watched:
            return
        if self._endpoints is not None and ev.type == "DELETED" and ev.rkey == ("", "services"):
            self._endpoints.service_deleted(ev.namespace, ev.name)
        self._wake.set()

    thread_name = "apiserver-simulator"

    def start(self) -> None:
        """Run in a daemon thread (idempotent; a no-op with nothing enabled)."""
        if self._components:
            super().start()

    def next_timeout(self) -> float:
        if self._next_at is None:
            return self.period
        return max(0.0, min(self.period, self._next_at - time.time()))

    def run_pass(self, stop: threading.Event) -> None:
        self.sync_once()

    def sync_once(self) -> int:
        """One pass of every enabled component; returns the writes it made."""
        before = sum(c.writes for c in self._clients)
        at = time.time()
        wake: float | None = None
        with self.rest.storage.lock:
            for component in self._components:
                t = component.sync(at)
                wake = earliest(wake, t)
        self._next_at = wake
        return sum(c.writes for c in self._clients) - before

    def run_until_idle(self, max_passes: int = 100) -> int:
        """Passes until one writes nothing (for tests driving the simulation
        without the thread); returns the total writes."""
        total = 0
        for _ in range(max_passes):
            n = self.sync_once()
            total += n
            if n == 0:
                break
        return total
