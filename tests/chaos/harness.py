"""The chaos harness: seeded mutations and faults against the Balancer controller.

Five parts, each usable alone (the tests in this directory combine them):

``MutationGenerator``
    A seeded random stream of valid Balancer mutations (create, change
    weights, add/remove backends and ports, delete, delete-and-recreate
    under the same name) over a fixed pool of names, then a final pass that
    updates every surviving Balancer in place. It keeps its own model of what
    exists, so the stream depends on the seed only, never on timing or on
    what the server answered. Right after each compaction and restart it
    re-creates Balancers, while the controller is relisting (the case where
    a relist shows a new uid under an old name).
``FaultPlan`` / ``FaultInjector``
    A seeded schedule of faults placed between mutations (watch drops,
    compactions that force 410 relists, 500/503 bursts, 429 bursts with
    ``Retry-After``, API-server stops and restarts on the same port with the
    storage kept) and the object that injects them into an ``APIServer`` and
    counts them by kind. Bursts never touch the paths the harness itself
    writes Balancers through, so the faults land on the controller's traffic.
``StateChecker``
    Expected versus actual: every Balancer's children as
    ``controllers.balancer.resources.desired_children`` renders them (every
    field the controller sets), no child owned by a Balancer that the
    Balancer should not have, and every status as the reconciler computes it.
    Returns a ``DiffReport`` (missing / extra / stale / wrong status).
``ControllerProcess``
    ``python -m controllers.balancer`` as a subprocess, as users run it: start,
    SIGTERM, SIGKILL, wait for exit with a timeout; its output goes to a log
    file that the tests print on failure.
``run_convergence``
    The whole convergence scenario (server, controller, mutations and faults,
    then stop the faults and wait with a deadline), returning a ``ChaosReport``
    with the diff, the faults by kind and the time to converge.

What it does not cover: invalid specs (every generated spec is valid; the
bad-input tests cover those), corrupt watch lines and slow (rather than
failing) responses during the soak, network partitions between the
controller and a server that keeps running, clock skew, several API-server
replicas, objects edited by other actors (children changed by hand), and
Deployments that become available (the embedded server runs no pods).

Everything random is derived from the seed (``random.Random`` with string
seeds, stable across processes), so a failing seed replays the same
mutations and faults; only thread timing differs between runs.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from controllers.balancer import names, reconcile, resources
from controllers.balancer.validation import validate
from pycontroller.client import ResourceClient, TokenBucketRateLimiter, set_rate_limiter
from pycontroller.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from pycontroller.testing import APIServer

Obj = dict[str, Any]
T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "balancer.yaml"
SAMPLE = REPO / "crds" / "samples" / "balancer.yaml"

#: Namespaces the generated Balancers live in (every name exists in each, so a
#: controller that confuses namespaces is caught).
NAMESPACES = ("chaos-a", "chaos-b", "chaos-c")

#: The Balancer paths the harness writes through (create, get, update, delete
#: of the object itself, never its status). Injected failures never match
#: them, so every burst is spent on the controller's own requests.
HARNESS_PATH = (
    r"/apis/exposer\.hliangzhao\.io/v1alpha1/namespaces/[^/]+/balancers(/[^/?]+)?/?(\?|$)"
)
NOT_HARNESS = rf"^(?!{HARNESS_PATH})"

#: Where an error burst is aimed (regexes searched in path+query).
BURST_TARGETS: dict[str, str] = {
    "any": NOT_HARNESS,
    "children": r"^/(api/v1|apis/apps/v1)/namespaces/[^/]+/(services|configmaps|deployments)",
    "status": r"/balancers/[^/?]+/status",
    "list-watch": (
        r"^/(api/v1|apis/apps/v1|apis/exposer\.hliangzhao\.io/v1alpha1)"
        r"/(services|configmaps|deployments|balancers)\?"
    ),
}

CHILD_RESOURCES = {
    "Service": ("", "v1", "services"),
    "ConfigMap": ("", "v1", "configmaps"),
    "Deployment": ("apps", "v1", "deployments"),
}


# ----------------------------------------------------------------------------- config


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    return float(value) if value else default


def env_seeds(default: Sequence[int] = (1, 2)) -> list[int]:
    """Seeds from ``CHAOS_SEEDS`` ("1,2") or ``CHAOS_SEED`` ("7"), else ``default``."""
    raw = os.environ.get("CHAOS_SEEDS", "").strip() or os.environ.get("CHAOS_SEED", "").strip()
    if not raw:
        return list(default)
    return [int(s) for s in re.split(r"[,\s]+", raw) if s]


def _env_simulate(default: tuple[str, ...]) -> tuple[str, ...]:
    """``CHAOS_SIMULATE``: "deployments,kubelet" (the default), or "none"."""
    raw = os.environ.get("CHAOS_SIMULATE", "").strip()
    if not raw:
        return default
    return tuple(s for s in re.split(r"[,\s]+", raw) if s and s != "none")


@dataclass(frozen=True)
class ChaosConfig:
    """Parameters of one convergence run; the defaults are the CI minimums.

    Fault counts scale with ``mutations`` (a soak of 3,000 mutations gets ten
    times the faults) but never drop below the minimums.
    """

    seed: int = 1
    mutations: int = 300
    balancers: int = 50
    watch_drops: int = 10
    compactions: int = 3
    error_bursts: int = 4  # half 500, half 503
    throttle_bursts: int = 2  # 429 with Retry-After
    restarts: int = 2
    pace: float = 0.04  # seconds between steps (spreads the faults over the controller's work)
    #: After the last fault the controller may legitimately sit still for a
    #: while, as a client-go controller does: each reflector relists only after
    #: its backoff (0.8 s doubling to 30 s, jittered up to 2x, reset after 2
    #: minutes without failures: under this run's faults it is at its cap, so up
    #: to 60 s), and a key that kept failing waits out its exponential backoff
    #: (5 ms doubling: about as long as its failure streak lasted). Measured:
    #: nothing changes for ~25 s after the faults stop, convergence at 40-60 s.
    #: The deadline covers both with room, and stays far below the 600 s resync,
    #: so an event the controller lost still fails the run.
    converge_timeout: float = 240.0
    controller_args: tuple[str, ...] = ()
    #: Workload simulations of the embedded server (``simulate.SIMULATIONS``
    #: names): with "deployments" and "kubelet" the nginx Deployments become
    #: available, so ``Available=True`` is checked too.
    simulate: tuple[str, ...] = ("deployments", "kubelet")

    @classmethod
    def from_env(cls, seed: int) -> ChaosConfig:
        """``CHAOS_MUTATIONS``, ``CHAOS_BALANCERS``, ``CHAOS_PACE``,
        ``CHAOS_CONVERGE_TIMEOUT`` override the defaults."""
        base = cls()
        mutations = _env_int("CHAOS_MUTATIONS", base.mutations)
        scale = max(1.0, mutations / base.mutations)
        return cls(
            seed=seed,
            mutations=mutations,
            balancers=_env_int("CHAOS_BALANCERS", base.balancers),
            watch_drops=round(base.watch_drops * scale),
            compactions=round(base.compactions * scale),
            error_bursts=round(base.error_bursts * scale),
            throttle_bursts=round(base.throttle_bursts * scale),
            restarts=round(base.restarts * scale),
            pace=_env_float("CHAOS_PACE", base.pace),
            converge_timeout=_env_float("CHAOS_CONVERGE_TIMEOUT", base.converge_timeout),
            simulate=_env_simulate(base.simulate),
        )


# ----------------------------------------------------------------------------- mutations

BACKEND_NAMES = ("v1", "v2", "v3", "v4", "canary", "stable", "blue", "green", "edge")
PORT_NAMES = ("http", "https", "dns", "metrics", "grpc", "admin")
APPS = ("web", "api", "cache")
MAX_BACKENDS = 5
MAX_PORTS = 3

#: Mutation kinds, and the weight of each among the ones possible for an existing Balancer.
OP_CREATE = "create"
OP_WEIGHTS = "change-weights"
OP_ADD_BACKEND = "add-backend"
OP_REMOVE_BACKEND = "remove-backend"
OP_ADD_PORT = "add-port"
OP_REMOVE_PORT = "remove-port"
OP_DELETE = "delete"
OP_RECREATE = "delete-and-recreate"
UPDATE_WEIGHTS = {
    OP_WEIGHTS: 26,
    OP_ADD_BACKEND: 12,
    OP_REMOVE_BACKEND: 12,
    OP_ADD_PORT: 8,
    OP_REMOVE_PORT: 8,
    OP_DELETE: 8,
    OP_RECREATE: 10,
}


@dataclass(frozen=True)
class Mutation:
    """One change to one Balancer. ``spec`` is the whole spec afterwards (None: deleted)."""

    op: str
    namespace: str
    name: str
    spec: Obj | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def balancer_names(count: int) -> list[tuple[str, str]]:
    """``count`` (namespace, name) pairs: the same names repeated in each namespace,
    every fifth one long (43 characters, close to the 54 shared with a backend name)."""
    out = []
    for i in range(count):
        namespace = NAMESPACES[i % len(NAMESPACES)]
        n = i // len(NAMESPACES)
        name = f"lb-{n:02d}" if n % 5 else f"lb-{n:02d}-" + "x" * 37
        out.append((namespace, name))
    return out


class MutationGenerator:
    """A seeded stream of valid mutations over ``count`` Balancer names.

    Every name is created at least once (all of them within the first half
    of a 300-mutation stream); after that a step picks an existing Balancer
    and a weighted operation, or re-creates a deleted one. ``next(force=OP_RECREATE)``
    asks for a delete-and-recreate (the fault plan uses it right after an
    API-server restart, when the controller is relisting). Every spec it
    produces passes ``validation.validate``.
    """

    def __init__(self, seed: int, count: int = 50) -> None:
        self.rng = random.Random(f"balancer-mutations/{seed}")
        self.pool = balancer_names(count)
        self.never_created = list(self.pool)
        self.model: dict[tuple[str, str], Obj] = {}  # (namespace, name) -> spec
        self.counts: Counter[str] = Counter()

    # --- specs ---

    def _port(self, taken_names: set[str], taken_pairs: set[tuple[int, str]]) -> Obj | None:
        free = [n for n in PORT_NAMES if n not in taken_names]
        if not free:
            return None
        rng = self.rng
        protocol = rng.choice(("TCP", "TCP", "UDP", None))
        if rng.random() < 0.3:
            number = rng.choice((53, 80, 443, 8080, 9090))
        else:
            number = rng.randint(1, 65535)
        while (number, protocol or "TCP") in taken_pairs:
            number = rng.randint(1, 65535)
        port: Obj = {"name": rng.choice(free), "port": number}
        if protocol is not None:
            port["protocol"] = protocol
        target = rng.random()
        if target < 0.4:
            port["targetPort"] = rng.randint(1, 65535)
        elif target < 0.55:
            port["targetPort"] = rng.choice(("http-alt", "app", "serve"))
        return port

    def _backend(self, taken: set[str]) -> Obj | None:
        free = [n for n in BACKEND_NAMES if n not in taken]
        if not free:
            return None
        bname = self.rng.choice(free)
        backend: Obj = {"name": bname, "weight": self.rng.randint(1, 100)}
        if self.rng.random() < 0.8:
            backend["selector"] = {"version": bname}
        return backend

    def random_spec(self) -> Obj:
        rng = self.rng
        spec: Obj = {}
        if rng.random() < 0.8:
            spec["selector"] = {"app": rng.choice(APPS)}
        backends: list[Obj] = []
        for _ in range(rng.randint(1, 3)):
            b = self._backend({x["name"] for x in backends})
            if b is not None:
                backends.append(b)
        ports: list[Obj] = []
        for _ in range(rng.randint(1, 2)):
            p = self._port(
                {x["name"] for x in ports}, {(x["port"], x.get("protocol", "TCP")) for x in ports}
            )
            if p is not None:
                ports.append(p)
        spec["backends"] = backends
        spec["ports"] = ports
        return spec

    # --- operations ---

    def _possible(self, spec: Obj) -> list[str]:
        ops = [OP_WEIGHTS, OP_DELETE, OP_RECREATE]
        if len(spec["backends"]) < MAX_BACKENDS:
            ops.append(OP_ADD_BACKEND)
        if len(spec["backends"]) > 1:
            ops.append(OP_REMOVE_BACKEND)
        if len(spec["ports"]) < MAX_PORTS:
            ops.append(OP_ADD_PORT)
        if len(spec["ports"]) > 1:
            ops.append(OP_REMOVE_PORT)
        return ops

    def _apply(self, op: str, spec: Obj) -> Obj | None:
        rng = self.rng
        new = copy.deepcopy(spec)
        if op == OP_WEIGHTS:
            for backend in new["backends"]:
                if rng.random() < 0.6:
                    backend["weight"] = rng.randint(1, 100)
            backend = rng.choice(new["backends"])
            backend["weight"] = backend["weight"] % 100 + 1  # at least one changes
        elif op == OP_ADD_BACKEND:
            added = self._backend({b["name"] for b in new["backends"]})
            assert added is not None
            new["backends"].insert(rng.randint(0, len(new["backends"])), added)
        elif op == OP_REMOVE_BACKEND:
            del new["backends"][rng.randrange(len(new["backends"]))]
        elif op == OP_ADD_PORT:
            ports = new["ports"]
            added = self._port(
                {p["name"] for p in ports}, {(p["port"], p.get("protocol", "TCP")) for p in ports}
            )
            assert added is not None
            ports.append(added)
        elif op == OP_REMOVE_PORT:
            del new["ports"][rng.randrange(len(new["ports"]))]
        elif op == OP_DELETE:
            return None
        elif op == OP_RECREATE:
            # Half the time the very same spec: same name, same generation (1), new uid.
            return new if rng.random() < 0.5 else self.random_spec()
        else:  # pragma: no cover - a typo in the tables above
            raise ValueError(op)
        return new

    def next(self, force: str | None = None) -> Mutation:
        """The next mutation (also applied to the model)."""
        rng = self.rng
        existing = sorted(self.model)
        deleted = sorted(set(self.pool) - set(self.model) - set(self.never_created))
        if force == OP_RECREATE and existing:
            target = rng.choice(existing)
            op = OP_RECREATE
        elif self.never_created and (rng.random() < 0.5 or not existing):
            target = self.never_created.pop(rng.randrange(len(self.never_created)))
            op = OP_CREATE
        elif deleted and rng.random() < 0.15:
            target = rng.choice(deleted)
            op = OP_CREATE
        else:
            target = rng.choice(existing)
            ops = self._possible(self.model[target])
            op = rng.choices(ops, weights=[UPDATE_WEIGHTS[o] for o in ops])[0]
        if op == OP_CREATE:
            spec = sample_spec() if rng.random() < 0.1 else self.random_spec()
        else:
            spec = self._apply(op, self.model[target])
        if spec is None:
            del self.model[target]
        else:
            self.model[target] = spec
            problems = validate(
                {"metadata": {"name": target[1], "namespace": target[0]}, "spec": spec}
            )
            assert not problems, f"generated an invalid spec for {target}: {problems}"
        self.counts[op] += 1
        return Mutation(op, target[0], target[1], copy.deepcopy(spec))

    def take(self, n: int) -> list[Mutation]:
        return [self.next() for _ in range(n)]

    def final_pass(self) -> list[Mutation]:
        """One in-place update (weights, backends, ports) of every existing Balancer,
        in a seeded order: the final state of each is then an update applied to
        children that most likely exist, so a controller that leaves an obsolete
        backend Service or a stale field behind is caught (a stream that ends in
        deletes and re-creates would hide it)."""
        targets = sorted(self.model)
        self.rng.shuffle(targets)
        out = []
        for target in targets:
            ops = [
                o for o in self._possible(self.model[target]) if o not in (OP_DELETE, OP_RECREATE)
            ]
            op = self.rng.choices(ops, weights=[UPDATE_WEIGHTS[o] for o in ops])[0]
            spec = self._apply(op, self.model[target])
            assert spec is not None
            self.model[target] = spec
            self.counts[op] += 1
            out.append(Mutation(op, target[0], target[1], copy.deepcopy(spec)))
        return out


def sample_spec() -> Obj:
    """The spec of ``crds/samples/balancer.yaml`` (the Go project's sample)."""
    with SAMPLE.open() as f:
        spec: Obj = yaml.safe_load(f)["spec"]
    return spec


def balancer_object(namespace: str, name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": copy.deepcopy(spec),
    }


# ----------------------------------------------------------------------------- clients


def retrying(fn: Callable[[], T], *, timeout: float = 30.0, what: str = "request") -> T:
    """``fn()`` retried on 5xx, 429 and connection errors until ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        try:
            return fn()
        except ApiError as err:
            if err.status < 500 and err.status != 429:
                raise
            last: Exception = err
        except (ConnectionError, OSError) as err:
            last = err
        if time.monotonic() + delay > deadline:
            raise AssertionError(f"{what} kept failing for {timeout:g}s: {last}") from last
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


class Cluster:
    """The harness's own clients on ``server`` (no client-side rate limit)."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.api_client = server.api_client()
        set_rate_limiter(self.api_client, TokenBucketRateLimiter(0, 1))
        self.balancers = ResourceClient(self.api_client, names.GROUP, names.VERSION, names.PLURAL)
        self.children = {
            kind: ResourceClient(self.api_client, *gvp) for kind, gvp in CHILD_RESOURCES.items()
        }
        self.namespaces = ResourceClient(self.api_client, "", "v1", "namespaces", namespaced=False)
        self.leases = ResourceClient(self.api_client, "coordination.k8s.io", "v1", "leases")

    def close(self) -> None:
        self.api_client.close()

    def bump(self) -> None:
        """One write that no controller cares about (moves the resourceVersion on)."""
        configmaps = self.children["ConfigMap"]

        def write() -> None:
            try:
                obj = configmaps.get("chaos-clock", namespace="default")
            except NotFoundError:
                configmaps.create(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "chaos-clock", "namespace": "default"},
                        "data": {"tick": "0"},
                    },
                    namespace="default",
                )
                return
            obj["data"] = {"tick": str(int((obj.get("data") or {}).get("tick", "0")) + 1)}
            configmaps.update(obj)

        retrying(write, what="bump the resourceVersion")

    def ensure_namespaces(self, namespaces: Iterable[str]) -> None:
        for ns in namespaces:
            with contextlib.suppress(AlreadyExistsError):
                self.namespaces.create(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                )

    def create_balancer(self, namespace: str, name: str, spec: Obj) -> Obj:
        obj: Obj = retrying(
            lambda: self._create(namespace, name, spec), what=f"create {namespace}/{name}"
        )
        return obj

    def _create(self, namespace: str, name: str, spec: Obj) -> Obj:
        try:
            created: Obj = self.balancers.create(
                balancer_object(namespace, name, spec), namespace=namespace
            )
            return created
        except AlreadyExistsError:
            # A retried create whose first attempt succeeded: make sure the spec is ours.
            return self._update(namespace, name, spec)

    def _update(self, namespace: str, name: str, spec: Obj) -> Obj:
        for _ in range(20):
            current: Obj = self.balancers.get(name, namespace=namespace)
            current["spec"] = copy.deepcopy(spec)
            try:
                updated: Obj = self.balancers.update(current)
                return updated
            except ConflictError:
                continue
        raise AssertionError(f"update of {namespace}/{name} kept conflicting")

    def update_balancer(self, namespace: str, name: str, spec: Obj) -> Obj:
        obj: Obj = retrying(
            lambda: self._update(namespace, name, spec), what=f"update {namespace}/{name}"
        )
        return obj

    def delete_balancer(self, namespace: str, name: str) -> None:
        def delete() -> None:
            with contextlib.suppress(NotFoundError):
                self.balancers.delete(name, namespace=namespace)

        retrying(delete, what=f"delete {namespace}/{name}")

    def apply(self, mutation: Mutation) -> None:
        """Make the server hold what ``mutation`` says (retrying transient errors)."""
        ns, name = mutation.namespace, mutation.name
        if mutation.op == OP_CREATE:
            assert mutation.spec is not None
            self.create_balancer(ns, name, mutation.spec)
        elif mutation.op == OP_DELETE:
            self.delete_balancer(ns, name)
        elif mutation.op == OP_RECREATE:
            assert mutation.spec is not None
            self.delete_balancer(ns, name)
            self.create_balancer(ns, name, mutation.spec)
        else:
            assert mutation.spec is not None
            self.update_balancer(ns, name, mutation.spec)

    def snapshot(self) -> ClusterState:
        """Every Balancer and every child-kind object, cluster-wide (4 lists)."""
        balancers = retrying(lambda: self.balancers.list(), what="list balancers")["items"]
        children: dict[tuple[str, str, str], Obj] = {}
        for kind, client in self.children.items():
            for obj in retrying(lambda c=client: c.list(), what=f"list {kind}")["items"]:  # type: ignore[misc]
                meta = obj.get("metadata") or {}
                children[(kind, meta.get("namespace", ""), meta.get("name", ""))] = obj
        return ClusterState(balancers, children)


# ----------------------------------------------------------------------------- checker


@dataclass
class ClusterState:
    balancers: list[Obj]
    children: dict[tuple[str, str, str], Obj]  # (kind, namespace, name) -> object


@dataclass
class DiffReport:
    """Expected versus actual. ``ok`` iff all four lists are empty."""

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    wrong_status: list[str] = field(default_factory=list)
    balancers: int = 0
    children: int = 0

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.stale or self.wrong_status)

    def counts(self) -> dict[str, int]:
        return {
            "missing": len(self.missing),
            "extra": len(self.extra),
            "stale": len(self.stale),
            "wrong_status": len(self.wrong_status),
        }

    def format(self, limit: int = 30) -> str:
        lines = [
            f"{self.balancers} Balancers, {self.children} expected children: "
            + ", ".join(f"{v} {k}" for k, v in self.counts().items())
        ]
        for title, items in (
            ("missing", self.missing),
            ("extra", self.extra),
            ("stale", self.stale),
            ("wrong status", self.wrong_status),
        ):
            for item in items[:limit]:
                lines.append(f"  {title}: {item}")
            if len(items) > limit:
                lines.append(f"  ... {len(items) - limit} more {title}")
        return "\n".join(lines)

    def __bool__(self) -> bool:  # so wait_for(checker) stops on a converged state
        return self.ok


#: Maps the controller owns whole: a key someone else added there is a difference.
EXACT_MAPS = {
    "Service": {("spec", "selector")},
    "ConfigMap": {("data",)},
    "Deployment": {("spec", "selector", "matchLabels")},
}


def field_diffs(
    desired: Any,
    live: Any,
    path: tuple[str, ...] = (),
    exact: frozenset[tuple[str, ...]] = frozenset(),
) -> list[str]:
    """Paths where ``live`` does not hold ``desired``'s value.

    Maps: every key of ``desired`` must be in ``live`` with the same value
    (``live`` may have more, e.g. server defaults), except the maps in
    ``exact``, which must be equal. Lists: same length, item by item.
    """
    where = ".".join(path) or "<root>"
    if path in exact:
        # An empty map is no map: kube stores none (omitempty, and protobuf
        # keeps no empty map), as the controller's diff knows.
        same = (desired or None) == (live or None)
        return [] if same else [f"{where}: want {desired!r}, got {live!r}"]
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return [f"{where}: want a map, got {live!r}"]
        out: list[str] = []
        for k, v in desired.items():
            out += field_diffs(v, live.get(k), (*path, str(k)), exact)
        return out
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return [f"{where}: want {desired!r}, got {live!r}"]
        out = []
        for i, (d, x) in enumerate(zip(desired, live, strict=True)):
            item_path = (*path[:-1], f"{path[-1]}[{i}]") if path else (f"[{i}]",)
            out += field_diffs(d, x, item_path, exact)
        return out
    return [] if desired == live else [f"{where}: want {desired!r}, got {live!r}"]


def _controller_ref(obj: Obj) -> Obj | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def _owned_by_a_balancer(obj: Obj) -> Obj | None:
    ref = _controller_ref(obj)
    if (
        ref
        and ref.get("kind") == names.KIND
        and str(ref.get("apiVersion", "")).startswith(names.GROUP + "/")
    ):
        return ref
    return None


def child_diffs(desired: Obj, live: Obj) -> list[str]:
    """What of ``desired`` (one of ``desired_children``) ``live`` does not hold.

    Compared: metadata.labels and annotations (as a subset), the single
    ownerReference, and every other top-level field the controller sets
    (spec, data), with the fully owned maps compared exactly.
    """
    kind = desired["kind"]
    exact = frozenset(EXACT_MAPS.get(kind, set()))
    out: list[str] = []
    dmeta, lmeta = desired.get("metadata") or {}, live.get("metadata") or {}
    for key in ("labels", "annotations"):
        if key in dmeta:
            out += field_diffs(dmeta[key], lmeta.get(key), ("metadata", key), exact)
    want_refs = dmeta.get("ownerReferences") or []
    got_refs = lmeta.get("ownerReferences") or []
    if len(got_refs) != len(want_refs) or field_diffs(want_refs, got_refs, ("ownerReferences",)):
        out.append(f"metadata.ownerReferences: want {want_refs!r}, got {got_refs!r}")
    for key, value in desired.items():
        if key in ("apiVersion", "kind", "metadata", "status"):
            continue
        out += field_diffs(value, live.get(key), (key,), exact)
    return out


def expected_status(balancer: Obj, desired: list[Obj], deployment: Obj | None) -> Obj:
    """The status the reconciler writes for a converged ``balancer`` (without
    ``lastTransitionTime``), given its live nginx ``deployment``.

    Written from ``reconcile.py``'s contract: one backend Service per spec
    backend (``activeBackendsNum``), none left over, ``observedGeneration``,
    ``Reconciled=True/Synced`` and ``Available`` from the Deployment's
    ``availableReplicas``.
    """
    name = balancer["metadata"]["name"]
    generation = balancer["metadata"].get("generation")
    deployment_name = names.deployment_name(name)
    if deployment is None:
        available = (
            "False",
            names.REASON_DEPLOYMENT_MISSING,
            reconcile.MSG_MISSING % deployment_name,
        )
    else:
        replicas = int((deployment.get("status") or {}).get("availableReplicas") or 0)
        if replicas >= 1:
            available = (
                "True",
                names.REASON_MINIMUM_REPLICAS_AVAILABLE,
                reconcile.MSG_AVAILABLE % (deployment_name, replicas),
            )
        else:
            available = (
                "False",
                names.REASON_DEPLOYMENT_UNAVAILABLE,
                reconcile.MSG_UNAVAILABLE % deployment_name,
            )
    reconciled = ("True", names.REASON_SYNCED, reconcile.MSG_SYNCED % len(desired))
    conditions = []
    for type_, (status, reason, message) in (
        (names.CONDITION_RECONCILED, reconciled),
        (names.CONDITION_AVAILABLE, available),
    ):
        cond: Obj = {"type": type_, "status": status, "reason": reason, "message": message}
        if generation is not None:
            cond["observedGeneration"] = generation
        conditions.append(cond)
    out: Obj = {
        "activeBackendsNum": len(balancer["spec"]["backends"]),
        "obsoleteBackendsNum": 0,
        "conditions": conditions,
    }
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def status_diffs(want: Obj, got: Obj | None) -> list[str]:
    got = got or {}
    out = []
    for key in ("activeBackendsNum", "obsoleteBackendsNum", "observedGeneration"):
        if want.get(key) != got.get(key):
            out.append(f"{key}: want {want.get(key)!r}, got {got.get(key)!r}")
    got_conds = {c.get("type"): c for c in got.get("conditions") or [] if isinstance(c, dict)}
    want_types = [c["type"] for c in want["conditions"]]
    if sorted(got_conds) != sorted(want_types):
        out.append(f"condition types: want {want_types}, got {sorted(map(str, got_conds))}")
    for cond in want["conditions"]:
        live = got_conds.get(cond["type"])
        if live is None:
            continue
        for key, value in cond.items():
            if live.get(key) != value:
                out.append(f"{cond['type']}.{key}: want {value!r}, got {live.get(key)!r}")
        if not live.get("lastTransitionTime"):
            out.append(f"{cond['type']}.lastTransitionTime: missing")
    return out


class StateChecker:
    """Compares a ``ClusterState`` with what the pure functions say it should be.

    * missing: a desired child that does not exist;
    * stale: a desired child that exists but differs in a field the
      controller owns (or is controlled by another uid, e.g. the previous
      incarnation of a re-created Balancer);
    * extra: an object controlled by a Balancer that is not one of that
      Balancer's desired children (an obsolete backend Service, or an orphan
      whose Balancer is gone);
    * wrong status: a status that differs from ``expected_status``.

    ``expected`` (optional) is the harness's model, {(namespace, name): spec};
    a Balancer whose spec on the server differs from it is reported too (as
    missing/extra/stale Balancer), so that a harness bug cannot hide.
    """

    def __init__(self, *, nginx_image: str = names.DEFAULT_NGINX_IMAGE) -> None:
        self.nginx_image = nginx_image

    def check(
        self,
        state: ClusterState,
        expected: dict[tuple[str, str], Obj] | None = None,
        namespaces: Iterable[str] | None = None,
    ) -> DiffReport:
        scope = set(namespaces) if namespaces is not None else None
        report = DiffReport()
        balancers = [
            b
            for b in state.balancers
            if not b["metadata"].get("deletionTimestamp")
            and (scope is None or b["metadata"]["namespace"] in scope)
        ]
        report.balancers = len(balancers)
        if expected is not None:
            if scope is not None:
                expected = {k: v for k, v in expected.items() if k[0] in scope}
            self._check_model(balancers, expected, report)
        wanted: dict[tuple[str, str, str], str] = {}  # child key -> owner uid
        by_uid = {b["metadata"]["uid"]: b for b in balancers}
        for b in balancers:
            meta = b["metadata"]
            ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
            try:
                desired = resources.desired_children(b, nginx_image=self.nginx_image)
            except resources.InvalidBalancer as err:
                report.wrong_status.append(f"Balancer {ns}/{name}: spec invalid: {err}")
                continue
            report.children += len(desired)
            deployment = None
            for child in desired:
                kind, cname = child["kind"], child["metadata"]["name"]
                key = (kind, ns, cname)
                wanted[key] = uid
                live = state.children.get(key)
                label = f"{kind} {ns}/{cname} (Balancer {name})"
                if live is None:
                    report.missing.append(label)
                    continue
                ref = _controller_ref(live)
                if ref is None or ref.get("uid") != uid:
                    report.stale.append(
                        f"{label}: controlled by {ref and ref.get('uid')!r}, not the Balancer's uid"
                        f" {uid!r}"
                    )
                    continue
                diffs = child_diffs(child, live)
                if diffs:
                    report.stale.append(f"{label}: " + "; ".join(diffs[:6]))
                if kind == "Deployment":
                    deployment = live
            sdiffs = status_diffs(expected_status(b, desired, deployment), b.get("status"))
            if sdiffs:
                report.wrong_status.append(f"Balancer {ns}/{name}: " + "; ".join(sdiffs[:8]))
        for key, obj in sorted(state.children.items()):
            kind, ns, cname = key
            if scope is not None and ns not in scope:
                continue
            ref = _owned_by_a_balancer(obj)
            if ref is None or key in wanted:
                continue  # not a Balancer's, or desired (checked above: stale if not ours)
            owner = by_uid.get(str(ref.get("uid")))
            why = (
                f"obsolete child of Balancer {ns}/{owner['metadata']['name']}"
                if owner
                else f"orphan of gone Balancer {ref.get('name')} (uid {ref.get('uid')})"
            )
            report.extra.append(f"{kind} {ns}/{cname}: {why}")
        return report

    @staticmethod
    def _check_model(
        balancers: list[Obj], expected: dict[tuple[str, str], Obj], report: DiffReport
    ) -> None:
        live = {(b["metadata"]["namespace"], b["metadata"]["name"]): b for b in balancers}
        for key in sorted(set(expected) - set(live)):
            report.missing.append(f"Balancer {key[0]}/{key[1]} (the harness created it)")
        for key in sorted(set(live) - set(expected)):
            report.extra.append(f"Balancer {key[0]}/{key[1]} (the harness deleted it)")
        for key in sorted(set(live) & set(expected)):
            diffs = field_diffs(expected[key], live[key].get("spec"), ("spec",))
            if diffs:
                report.stale.append(f"Balancer {key[0]}/{key[1]}: " + "; ".join(diffs[:4]))


# ----------------------------------------------------------------------------- faults

FAULT_WATCH_DROP = "watch-drop"
FAULT_COMPACTION = "compaction"
FAULT_500 = "burst-500"
FAULT_503 = "burst-503"
FAULT_429 = "burst-429"
FAULT_RESTART = "restart"
FAULT_KINDS = (FAULT_WATCH_DROP, FAULT_COMPACTION, FAULT_500, FAULT_503, FAULT_429, FAULT_RESTART)


@dataclass(frozen=True)
class Fault:
    """One fault. Bursts: ``times`` failures aimed at ``target`` (a ``BURST_TARGETS``
    key); 429: ``retry_after`` seconds; restart: ``down`` seconds, and whether
    the history is compacted while the server is down (forcing a relist)."""

    kind: str
    times: int = 0
    target: str = ""
    retry_after: int = 0
    down: float = 0.0
    compact: bool = False


@dataclass
class FaultPlan:
    """Faults to inject before given mutation indexes, from the seed."""

    at: dict[int, list[Fault]]

    @classmethod
    def build(cls, config: ChaosConfig) -> FaultPlan:
        rng = random.Random(f"faults/{config.seed}")
        n = config.mutations
        lo, hi = max(1, n // 10), max(2, n * 9 // 10)
        at: dict[int, list[Fault]] = {}

        def place(fault: Fault, index: int | None = None) -> None:
            i = rng.randrange(lo, hi) if index is None else index
            at.setdefault(i, []).append(fault)

        for k in range(config.restarts):
            center = lo + (hi - lo) * (k + 1) // (config.restarts + 1)
            jitter = max(1, (hi - lo) // (4 * (config.restarts + 1)))
            place(
                Fault(FAULT_RESTART, down=round(rng.uniform(0.5, 2.0), 2), compact=k % 2 == 0),
                min(hi - 1, max(lo, center + rng.randint(-jitter, jitter))),
            )
        for _ in range(config.watch_drops):
            place(Fault(FAULT_WATCH_DROP))
        for _ in range(config.compactions):
            place(Fault(FAULT_COMPACTION))
        for k in range(config.error_bursts):
            kind = FAULT_500 if k % 2 == 0 else FAULT_503
            place(Fault(kind, times=rng.randint(4, 12), target=rng.choice(sorted(BURST_TARGETS))))
        for _ in range(config.throttle_bursts):
            place(
                Fault(
                    FAULT_429,
                    times=rng.randint(3, 8),
                    target=rng.choice(sorted(BURST_TARGETS)),
                    retry_after=rng.randint(1, 2),
                )
            )
        return cls(at)

    def counts(self) -> Counter[str]:
        return Counter(f.kind for faults in self.at.values() for f in faults)

    def force_recreate_after(self) -> set[int]:
        """Mutation indexes that should be delete-and-recreate: the three after
        each restart or compaction (the controller is relisting then)."""
        out: set[int] = set()
        for i, faults in self.at.items():
            if any(f.kind in (FAULT_RESTART, FAULT_COMPACTION) for f in faults):
                out.update(range(i, i + 3))
        return out


#: Watch requests (path+query); a compaction delays them briefly so that a
#: watch resumed from before the compaction is answered 410 Gone.
WATCH_REQUESTS = r"[?&]watch=(true|1)(&|$)"


class FaultInjector:
    """Injects ``Fault``s into ``server`` and counts them by kind.

    ``bump`` makes one write of the harness's own (moving the global
    resourceVersion past every informer's last one); a compaction runs
    ``bump`` before compacting, so every watch resumed afterwards is too old.
    """

    def __init__(self, server: APIServer, bump: Callable[[], None]) -> None:
        self.server = server
        self.bump = bump
        self.counts: Counter[str] = Counter()
        self.last_fault_at: float | None = None  # time.monotonic()
        self.downtime = 0.0
        self.timeline: list[tuple[float, str]] = []  # (time.monotonic(), kind)

    def inject(self, fault: Fault) -> None:
        server = self.server
        if fault.kind == FAULT_WATCH_DROP:
            server.drop_watches()
        elif fault.kind == FAULT_COMPACTION:
            # kube compacts without closing watches; resumes then get 410. Drop
            # the watches too, so that the 410s (and the relists) happen now.
            self.compact(drop=True)
        elif fault.kind in (FAULT_500, FAULT_503, FAULT_429):
            status = int(fault.kind.rsplit("-", 1)[1])
            server.fail_next(
                status,
                times=fault.times,
                path_regex=BURST_TARGETS[fault.target],
                retry_after=fault.retry_after if status == 429 else None,
            )
        elif fault.kind == FAULT_RESTART:
            self.restart(fault.down, compact=fault.compact)
        else:  # pragma: no cover
            raise ValueError(fault.kind)
        self.counts[fault.kind] += 1
        self.last_fault_at = time.monotonic()
        self.timeline.append((self.last_fault_at, fault.kind))

    def compact(self, *, drop: bool) -> None:
        """Compact so that resumed watches get 410: watches arriving meanwhile
        wait (a latency rule) until the history is gone."""
        self.server.set_latency(1.0, WATCH_REQUESTS)
        try:
            if drop:
                self.server.drop_watches()
            self.bump()
            self.server.compact()
        finally:
            self.server.set_latency(0, WATCH_REQUESTS)

    def restart(self, down: float, *, compact: bool = False) -> None:
        """Stop the server, keep it down ``down`` seconds, start it on the same port
        (storage kept); with ``compact``, the history is compacted as it comes back."""
        port = self.server.port
        started = time.monotonic()
        self.server.stop()
        time.sleep(down)  # the outage itself, not a wait for a condition
        deadline = time.monotonic() + 30
        if compact:
            self.server.set_latency(1.0, WATCH_REQUESTS)
        try:
            while True:
                try:
                    self.server.start()
                    break
                except OSError:  # the port still in use: retry (bounded)
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            if compact:
                self.bump()
                self.server.compact()
        finally:
            self.server.set_latency(0, WATCH_REQUESTS)
        assert self.server.port == port, f"restarted on port {self.server.port}, not {port}"
        self.downtime += time.monotonic() - started

    def drain(self, timeout: float) -> int:
        """Wait (bounded) until the controller has been answered every injected
        failure; return how many are left."""
        deadline = time.monotonic() + timeout
        while self.server.faults.pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.server.faults.pending()

    def stop_all(self) -> int:
        """Clear every pending fault; return how many injected failures were never used."""
        unused = self.server.faults.pending()
        self.server.clear_faults()
        if not self.server.running:
            self.server.start()
        return unused


# ----------------------------------------------------------------------------- processes


def free_port() -> int:
    """A loopback TCP port nobody listens on (for a server that must restart on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ControllerProcess:
    """``python -m controllers.balancer`` in a subprocess, its output in ``log_path``.

    Only ever signals the process it started (by its Popen object). ``stop``
    (SIGTERM, then SIGKILL past a timeout) is safe to call more than once.
    """

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str],
        log_path: str | os.PathLike[str],
        *,
        args: Sequence[str] = (),
        name: str = "controller",
    ) -> None:
        self.kubeconfig = str(kubeconfig)
        self.log_path = Path(log_path)
        self.args = list(args)
        self.name = name
        self.proc: subprocess.Popen[bytes] | None = None
        self.signalled_at: float | None = None
        self.exited_at: float | None = None

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "controllers.balancer",
            "--kubeconfig",
            self.kubeconfig,
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--resync-period",
            "600",
            *self.args,
        ]

    def start(self) -> ControllerProcess:
        assert self.proc is None, "already started"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"$ {' '.join(self.command())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.command(),
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def _signal(self, sig: signal.Signals) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(sig)
            self.signalled_at = time.monotonic()

    def terminate(self) -> None:
        """SIGTERM (graceful stop)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL (``kill -9``)."""
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if still running after ``timeout`` seconds."""
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if self.exited_at is None:
            self.exited_at = time.monotonic()
        return rc

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL; the exit code."""
        if self.proc is None:
            return None
        if self.running:
            self.terminate()
            rc = self.wait(timeout)
            if rc is not None:
                return rc
            self.kill()
        return self.wait(10)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 120) -> str:
        text = self.log().splitlines()
        return "\n".join(text[-lines:])


def wait_for_informers(server: APIServer, watches: int = 4, timeout: float = 60.0) -> None:
    """Wait until ``watches`` watch streams are open (the controller's four informers
    have listed and are watching)."""
    deadline = time.monotonic() + timeout
    while server.watch_count() < watches:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"only {server.watch_count()} of {watches} watches open after {timeout:g}s"
            )
        time.sleep(0.05)


def wait_converged(
    cluster: Cluster,
    checker: StateChecker,
    *,
    timeout: float,
    expected: dict[tuple[str, str], Obj] | None = None,
    namespaces: Iterable[str] | None = None,
    interval: float = 0.25,
    stable_for: float = 1.0,
) -> tuple[bool, float, DiffReport]:
    """Poll the checker until the state converged and stayed so ``stable_for``
    seconds (a status that is about to change, e.g. a Deployment becoming
    available, is not taken for convergence), or until ``timeout`` passed:
    (converged, seconds until it first held, last report). Never raises on
    divergence."""
    scope = list(namespaces) if namespaces is not None else None
    start = time.monotonic()
    ok_since: float | None = None
    while True:
        report = checker.check(cluster.snapshot(), expected, scope)
        now = time.monotonic()
        if not report.ok:
            ok_since = None
        elif ok_since is None:
            ok_since = now
        if ok_since is not None and now - ok_since >= stable_for:
            return True, ok_since - start, report
        if now - start > timeout + stable_for:
            return False, now - start, report
        time.sleep(interval)


def controller_writes(records: Iterable[Any]) -> int:
    """Writes a Balancer controller makes (children, Balancer status, Events)."""
    pattern = re.compile(
        r"/(services|configmaps|deployments|events)(/|\?|$)|/balancers/[^/?]+/status"
    )
    return sum(
        1
        for r in records
        if r.method in ("POST", "PUT", "PATCH", "DELETE") and pattern.search(r.path)
    )


# ----------------------------------------------------------------------------- the scenario


@dataclass
class ChaosReport:
    seed: int
    mutations: int
    balancers: int
    mutations_by_kind: dict[str, int]
    faults_by_kind: dict[str, int]
    injected_answers: dict[str, int]
    relists: int
    expired_watches: int
    watch_requests: int
    unused_failures: int
    downtime_s: float
    mutation_phase_s: float
    converged: bool
    converge_after_last_fault_s: float
    converge_after_faults_stopped_s: float
    total_s: float
    requests: int
    controller_writes: int
    diff: dict[str, int]
    diff_text: str
    controller_exit_code: int | None = None
    log_path: str = ""
    available_balancers: int = 0  # Available=True at the end (needs the simulations)
    config: dict[str, Any] = field(default_factory=dict)
    fault_timeline: list[tuple[float, str]] = field(default_factory=list)  # s after start

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    def summary(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults_by_kind.items()))
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(self.injected_answers.items()))
        return (
            f"chaos seed={self.seed}: {self.mutations} mutations over {self.balancers} Balancers "
            f"({', '.join(f'{k} {v}' for k, v in sorted(self.mutations_by_kind.items()))}) "
            f"in {self.mutation_phase_s:.1f}s\n"
            f"  simulated: {', '.join(self.config.get('simulate') or ()) or 'nothing'}; "
            f"faults: {faults}; answers {answers}; {self.expired_watches} watches expired "
            f"(410), {self.relists} relists, "
            f"{self.watch_requests} watch requests; {self.downtime_s:.1f}s down\n"
            f"  converged={self.converged}: {self.converge_after_last_fault_s:.1f}s after the "
            f"last fault ({self.converge_after_faults_stopped_s:.1f}s after faults stopped); "
            f"{self.requests} requests, {self.controller_writes} controller writes; "
            f"total {self.total_s:.1f}s\n  {self.available_balancers} Balancers Available=True; "
            f"diff: {self.diff_text}"
        )


#: The reflector's log line for a watch answered 410 (counted for the report only).
EXPIRED_WATCH = re.compile(r"watch at rv \S+ expired")


def _request_stats(records: Sequence[Any], informers: int = 4) -> tuple[dict[str, int], int, int]:
    """(answers by fault status, relists, watch requests) of the controller's
    ``informers``. A list is a cluster-wide LIST or a streaming list (a watch
    with ``sendInitialEvents=true``); every list after each informer's first one
    is a relist. The harness lists without a query string: never counted."""
    answers: Counter[str] = Counter()
    lists = watches = 0
    list_re = re.compile(r"/(services|configmaps|deployments|balancers)\?")
    for r in records:
        if r.status in (410, 429, 500, 503):
            answers[str(r.status)] += 1
        if r.method != "GET" or not list_re.search(r.path) or "/namespaces/" in r.path:
            continue
        streaming = "sendInitialEvents=true" in r.path
        if streaming or not re.search(r"[?&]watch=(true|1)(&|$)", r.path):
            lists += 1
        else:
            watches += 1
    return dict(answers), max(0, lists - informers), watches


def run_convergence(
    config: ChaosConfig,
    workdir: Path,
    *,
    on_controller: Callable[[ControllerProcess], None] | None = None,
) -> ChaosReport:
    """The convergence scenario. Never asserts on the outcome: returns the report.

    ``on_controller`` is called with the started process (the test registers
    it so that its log is printed on failure).
    """
    t0 = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {"simulate": config.simulate} if config.simulate else {}
    server = APIServer(port=free_port(), crds=[str(CRD)], **extra)
    server.start()
    cluster = Cluster(server)
    controller: ControllerProcess | None = None
    try:
        cluster.ensure_namespaces(NAMESPACES)
        kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
        controller = ControllerProcess(
            kubeconfig, workdir / f"controller-seed{config.seed}.log", args=config.controller_args
        )
        controller.start()
        if on_controller is not None:
            on_controller(controller)
        wait_for_informers(server, 4)

        generator = MutationGenerator(config.seed, config.balancers)
        plan = FaultPlan.build(config)
        forced = plan.force_recreate_after()
        injector = FaultInjector(server, cluster.bump)
        t_mut = time.monotonic()
        for i in range(config.mutations):
            for fault in plan.at.get(i, []):
                injector.inject(fault)
            mutation = generator.next(force=OP_RECREATE if i in forced else None)
            cluster.apply(mutation)
            time.sleep(config.pace)  # pacing only: spreads the faults over the work
        for mutation in generator.final_pass():
            cluster.apply(mutation)
            time.sleep(config.pace)
        mutation_phase = time.monotonic() - t_mut
        # Let the controller run into the failures still queued (bounded), then stop faults.
        injector.drain(timeout=10)
        last_fault = injector.last_fault_at or time.monotonic()
        unused = injector.stop_all()
        stopped_at = time.monotonic()
        converged, took, report = wait_converged(
            cluster,
            StateChecker(),
            timeout=config.converge_timeout,
            expected=generator.model,
        )
        done = stopped_at + took  # when the state first matched (and then stayed so)
        available = sum(
            1
            for b in cluster.snapshot().balancers
            for c in (b.get("status") or {}).get("conditions") or []
            if c.get("type") == names.CONDITION_AVAILABLE and c.get("status") == "True"
        )
        records = list(server.request_log)
        # Every request the server answered, in order (for a post-mortem of a failed seed).
        with (workdir / f"requests-seed{config.seed}.log").open("w") as f:
            f.writelines(f"{r.method} {r.status} {r.path}\n" for r in records)
        answers, relists, watches = _request_stats(records)
        rc = None
        if controller.running:
            rc = controller.stop(timeout=30)
        return ChaosReport(
            seed=config.seed,
            mutations=sum(generator.counts.values()),
            balancers=len(generator.pool),
            mutations_by_kind=dict(generator.counts),
            faults_by_kind=dict(injector.counts),
            injected_answers=answers,
            relists=relists,
            expired_watches=len(EXPIRED_WATCH.findall(controller.log())),
            watch_requests=watches,
            unused_failures=unused,
            downtime_s=round(injector.downtime, 2),
            mutation_phase_s=round(mutation_phase, 2),
            converged=converged,
            converge_after_last_fault_s=round(done - last_fault, 2),
            converge_after_faults_stopped_s=round(done - stopped_at, 2),
            total_s=round(done - t0, 2),
            requests=len(records),
            controller_writes=controller_writes(records),
            diff=report.counts(),
            diff_text=report.format(),
            controller_exit_code=rc,
            log_path=str(controller.log_path),
            available_balancers=available,
            config=dataclasses.asdict(config),
            fault_timeline=[(round(t - t0, 2), kind) for t, kind in injector.timeline],
        )
    finally:
        if controller is not None and controller.running:
            controller.stop(timeout=10)
        cluster.close()
        server.stop()
