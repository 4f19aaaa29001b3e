"""Manager: everything one controller process has once (controller-runtime's ``manager.Manager``).

A Manager owns the API client (with its client-side QPS/burst budget), the
shared informer factory, the Prometheus registry (workqueue metrics are
registered for every queue made after the Manager), the metrics and health
servers, the Event recorders (with a request budget of their own), leader
election on a Lease, signal handling and the graceful-shutdown deadline.
Controllers are added with the builder (``mgr.controller(name)``), other
work with ``mgr.add(runnable)``; ``mgr.run()`` runs it all::

    mgr = Manager.from_args(name="my-controller")
    mgr.controller("configmaps").for_("", "v1", "configmaps").complete(reconcile)
    sys.exit(mgr.run())

``run(stop)`` in order (controller-runtime's ``controllerManager.Start``):

1. serve ``/metrics``, ``/healthz`` and ``/readyz`` (readiness: every
   informer has synced; liveness: the leader is renewing its Lease);
2. start the informers: caches warm up *before* leadership, so a new
   leader starts with a synced cache and standbys are ready too;
3. runnables that do not need leadership (``need_leader_election()`` returns
   False) start at once; the others (controllers) start when this process
   leads (at once without leader election);
4. wait for ``stop`` (first SIGINT/SIGTERM when ``run`` installed the
   handler; a second exits at once), leadership lost, or a runnable raising;
5. stop: runnables get ``stop`` set and have until ``graceful_shutdown_timeout``
   seconds after it to return. A Controller hands out no new keys and lets
   in-flight reconciles finish; the backlog is *not* drained (the next leader
   rebuilds it from its informers). Whatever is still running at the deadline
   is abandoned (worker threads are daemons: they die with the process).
   The Lease is renewed all the while, so no standby leads while in-flight
   reconciles finish. Leadership lost is different: another leader may
   already act, so in-flight work is abandoned at once (controller-runtime
   sets the graceful-shutdown timeout to 0);
6. stop renewing and release the Lease (only once the leading work returned
   or was abandoned; the release gets at most ``RELEASE_GRACE`` seconds past
   the deadline), stop the informers, flush Events for what is left of the
   deadline, stop the servers.

A renewal that does not finish within ``renew_deadline`` (one stalled
request) makes the leader step down then, as client-go's context does.

Exit codes (``run``'s return value): 0 clean; 1 when in-flight work was
abandoned at the deadline, leadership was lost, or a runnable raised.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import prometheus_client

from pycontroller._gc import tuned_gc
from pycontroller._metrics import register
from pycontroller.cache import SharedInformerFactory
from pycontroller.client import (
    DEFAULT_BURST,
    DEFAULT_QPS,
    RateLimiter,
    ResourceClient,
    TokenBucketRateLimiter,
    set_rate_limiter,
)
from pycontroller.config import ConfigError, load_config
from pycontroller.leaderelection import LeaderElector, LeaseLock
from pycontroller.record import EventRecorder
from pycontroller.server import MetricsHealthServer, parse_bind_address, serve_metrics_and_health
from pycontroller.workqueue import PrometheusMetricsProvider, set_global_metrics_provider

if TYPE_CHECKING:
    from pycontroller.builder import Builder

logger = logging.getLogger(__name__)

__all__ = ["EXIT_ABANDONED", "EXIT_OK", "RELEASE_GRACE", "Manager", "Runnable"]

EXIT_OK = 0
#: In-flight work abandoned at the deadline, leadership lost, or a runnable raised.
EXIT_ABANDONED = 1
#: Seconds past the deadline the Lease release and the last cleanup may take.
RELEASE_GRACE = 2.0
#: Where the kubelet mounts the pod's namespace (controller-runtime reads it for the Lease).
SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
# How often the main thread re-checks ``stop`` (signal handlers run between waits).
_POLL = 0.2


class Runnable(Protocol):
    """Anything the Manager runs: ``run(stop)`` blocks until ``stop`` is set, then returns.

    It may also define ``need_leader_election() -> bool`` (default True: run
    only while leading). Returning False from ``run`` means work was abandoned.
    """

    def run(self, stop: threading.Event) -> Any: ...


def _needs_leader_election(runnable: Runnable) -> bool:
    need = getattr(runnable, "need_leader_election", None)
    return bool(need()) if callable(need) else True


def _pod_namespace() -> str | None:
    try:
        return Path(SERVICE_ACCOUNT_NAMESPACE_FILE).read_text().strip() or None
    except OSError:
        return None


def _disabled(address: str) -> bool:
    return address.strip() in ("", "0")


class _Group:
    """Runnables on daemon threads; ``wait`` bounds how long stopping may take."""

    def __init__(self, name: str, on_error: Callable[[], None]) -> None:
        self.name = name
        self._on_error = on_error
        self._threads: list[threading.Thread] = []
        self._failed = False

    def start(self, runnables: Iterable[Runnable], stop: threading.Event) -> None:
        for i, runnable in enumerate(runnables):
            t = threading.Thread(
                target=self._run, args=(runnable, stop), name=f"{self.name}-{i}", daemon=True
            )
            self._threads.append(t)
            t.start()

    def _run(self, runnable: Runnable, stop: threading.Event) -> None:
        try:
            result = runnable.run(stop)
        except Exception:  # a runnable's crash stops the manager (controller-runtime's errChan)
            logger.exception("Runnable %r failed; stopping the manager", runnable)
            self._failed = True
            self._on_error()
            return
        if result is False:
            self._failed = True

    def wait(self, deadline: Callable[[], float | None]) -> bool:
        """Block until every runnable returned or the deadline passed. True iff all ended well.

        ``deadline()`` is None until stopping starts (wait without limit).
        """
        for t in self._threads:
            while t.is_alive():
                limit = deadline()
                if limit is None:
                    t.join(_POLL)
                    continue
                left = limit - time.monotonic()
                if left <= 0:
                    break
                t.join(min(left, _POLL))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            logger.error("Abandoning runnables still running at the deadline: %s", alive)
        return not alive and not self._failed


class Manager:
    """One per process; see the module docstring. Not reusable: ``run`` once.

    ``api_client`` None loads the configuration (``load_config()``).
    ``kube_api_qps``/``kube_api_burst`` (None: leave the client's bucket as
    it is, 20/30 by default) size the token bucket shared by every client on
    ``api_client``; Events and the Lease get buckets of their own of the same
    size. ``name`` is the default leader-election ID and the component of
    the leader-election Events. ``embedded`` (an ``APIServer``) is stopped
    when ``run`` returns. ``tune_gc`` (default True): while ``run`` runs, the
    process uses ``pycontroller.tune_gc``'s collector policy.
    """

    def __init__(
        self,
        api_client: Any = None,
        *,
        namespace: str | None = None,
        metrics_bind_address: str = "0",
        health_probe_bind_address: str = "0",
        leader_election: bool = False,
        leader_election_id: str | None = None,
        leader_election_namespace: str | None = None,
        graceful_shutdown_timeout: float = 25.0,
        resync_period: float = 600.0,
        name: str = "",
        kube_api_qps: float | None = None,
        kube_api_burst: int | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        registry: prometheus_client.CollectorRegistry | None = None,
        embedded: Any = None,
        args: argparse.Namespace | None = None,
        tune_gc: bool = True,
    ) -> None:
        if graceful_shutdown_timeout < 0:
            raise ValueError("graceful_shutdown_timeout must be >= 0")
        if leader_election and not (leader_election_id or name):
            raise ValueError("leader election needs a leader_election_id")
        parse_bind_address("0" if _disabled(metrics_bind_address) else metrics_bind_address)
        parse_bind_address(
            "0" if _disabled(health_probe_bind_address) else health_probe_bind_address
        )
        self.name = name
        self.args = args if args is not None else argparse.Namespace()
        self.namespace = namespace or None
        self.metrics_bind_address = metrics_bind_address
        self.health_probe_bind_address = health_probe_bind_address
        self.leader_election = leader_election
        self.leader_election_id = leader_election_id or name
        self.leader_election_namespace = (
            leader_election_namespace or self.namespace or _pod_namespace() or "default"
        )
        self.graceful_shutdown_timeout = float(graceful_shutdown_timeout)
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.registry = registry if registry is not None else prometheus_client.REGISTRY
        self.tune_gc = tune_gc
        self._embedded = embedded
        self._owns_client = api_client is None
        if api_client is None:
            api_client = load_config()
        self.api_client = api_client
        qps = DEFAULT_QPS if kube_api_qps is None else kube_api_qps
        burst = DEFAULT_BURST if kube_api_burst is None else kube_api_burst
        if kube_api_qps is not None or kube_api_burst is not None:
            set_rate_limiter(api_client, TokenBucketRateLimiter(qps, burst))
        self._qps, self._burst = qps, burst
        # One budget for every recorder of this process (one broadcaster, as controller-runtime).
        self._events_limiter: RateLimiter = TokenBucketRateLimiter(qps, burst)
        # Workqueue metrics for every queue made from now on (before any builder makes one).
        set_global_metrics_provider(PrometheusMetricsProvider(self.registry))
        self.informers = SharedInformerFactory(
            api_client, resync_period=resync_period, namespace=self.namespace
        )
        self._lock = threading.Lock()
        self._runnables: list[Runnable] = []
        self._recorders: dict[str, EventRecorder] = {}
        self._controller_names: set[str] = set()
        self._readiness: dict[str, Callable[[], bool]] = {"informers-synced": self._synced}
        self._health: dict[str, Callable[[], bool]] = {}
        self._started = False
        self._deadline: float | None = None
        self._leading_ok = True
        self._embedded_dir: str | None = None
        self.elector: LeaderElector | None = None
        #: The metrics/health servers while ``run`` runs (metrics first); for tests and logs.
        self.servers: list[MetricsHealthServer] = []

    # -- construction from flags ---------------------------------------------------------

    @staticmethod
    def parse_args(
        argv: Sequence[str] | None = None,
        *,
        name: str,
        parser: argparse.ArgumentParser | None = None,
    ) -> argparse.Namespace:
        """Add controller-runtime's flags to ``parser`` (a new one if None) and parse ``argv``.

        A flag the caller already defined is left alone; a default the
        caller set with ``parser.set_defaults(...)`` (e.g.
        ``metrics_bind_address=":8080"``) wins over the Manager's.
        """
        p = parser if parser is not None else argparse.ArgumentParser(prog=name)
        add = _FlagAdder(p)
        add("--kubeconfig", default=None, help="path to a kubeconfig ($KUBECONFIG, in-cluster)")
        add("--master", default=None, help="API server URL, overrides the kubeconfig's")
        add("--namespace", default="", help="watch only this namespace (default: all)")
        add("--metrics-bind-address", default="0", help="host:port for /metrics ('0' disables)")
        add(
            "--health-probe-bind-address",
            default="0",
            help="host:port for /healthz and /readyz ('0' disables)",
        )
        add("--leader-elect", action="store_true", help="run controllers only while leading")
        add("--leader-election-id", default=name, help="name of the Lease")
        add(
            "--leader-election-namespace",
            default="",
            help="namespace of the Lease (default: --namespace, the pod's, else 'default')",
        )
        add(
            "--graceful-shutdown-timeout",
            type=float,
            default=25.0,
            help="seconds in-flight reconciles get after SIGTERM (keep below the pod's "
            "terminationGracePeriodSeconds)",
        )
        add("--kube-api-qps", type=float, default=DEFAULT_QPS, help="client-side QPS to the API")
        add("--kube-api-burst", type=int, default=DEFAULT_BURST, help="client-side burst")
        add("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
        add("--log-format", choices=("text", "json"), default="text", help="log line format")
        add("--embedded", action="store_true", help="run against an in-process API server")
        args = p.parse_args(argv)
        if args.graceful_shutdown_timeout < 0:
            p.error("--graceful-shutdown-timeout must be >= 0")
        if args.kube_api_qps > 0 and args.kube_api_burst < 1:
            p.error("--kube-api-burst must be >= 1")
        return args

    @classmethod
    def from_args(
        cls,
        argv: Sequence[str] | None = None,
        *,
        name: str,
        parser: argparse.ArgumentParser | None = None,
        crds: Iterable[str | os.PathLike[str]] = (),
        samples: Iterable[str | os.PathLike[str]] = (),
    ) -> Manager:
        """Parse flags (``parse_args``), configure logging, build the Manager.

        ``--embedded`` starts ``pycontroller.testing.APIServer`` in process
        with ``crds`` installed, prints its URL and kubeconfig path (and a
        ``kubectl apply`` hint per file of ``samples``) and runs against it.
        A configuration that cannot be loaded is logged and exits with
        status 2, like a bad flag. ``mgr.args`` is the parsed namespace.
        """
        from pycontroller import log

        args = cls.parse_args(argv, name=name, parser=parser)
        log.configure(args.log_level, args.log_format)
        embedded = None
        kubeconfig = args.kubeconfig
        if args.embedded:
            embedded, kubeconfig = _start_embedded(crds, samples)
            workdir: str | None = os.path.dirname(kubeconfig)
        else:
            workdir = None
        try:
            api_client = load_config(
                kubeconfig, args.master, qps=args.kube_api_qps, burst=args.kube_api_burst
            )
        except ConfigError as err:
            logger.error("no usable API server configuration: %s", err)
            if embedded is not None:
                embedded.stop()
            raise SystemExit(2) from err
        mgr = cls(
            api_client,
            namespace=args.namespace or None,
            metrics_bind_address=args.metrics_bind_address,
            health_probe_bind_address=args.health_probe_bind_address,
            leader_election=args.leader_elect,
            leader_election_id=args.leader_election_id or name,
            leader_election_namespace=args.leader_election_namespace or None,
            graceful_shutdown_timeout=args.graceful_shutdown_timeout,
            resync_period=getattr(args, "resync_period", 600.0),
            name=name,
            kube_api_qps=args.kube_api_qps,
            kube_api_burst=args.kube_api_burst,
            embedded=embedded,
            args=args,
        )
        mgr._embedded_dir = workdir
        return mgr

    # -- what controllers use -------------------------------------------------------------

    def client(
        self, group: str, version: str, plural: str, namespaced: bool = True
    ) -> ResourceClient:
        """A ``ResourceClient`` on the Manager's ``api_client`` (its shared QPS budget)."""
        return ResourceClient(self.api_client, group, version, plural, namespaced)

    def recorder(self, component: str) -> EventRecorder:
        """The EventRecorder for ``component`` (one per component; flushed when ``run`` ends).

        Every recorder of the Manager writes through one token bucket of its
        own, never the controllers' shared one.
        """
        with self._lock:
            rec = self._recorders.get(component)
            if rec is None:
                rec = EventRecorder(self.api_client, component, rate_limiter=self._events_limiter)
                self._recorders[component] = rec
            return rec

    def add(self, runnable: Runnable) -> None:
        """Run ``runnable.run(stop)`` from ``run`` (while leading unless it opts out)."""
        if not callable(getattr(runnable, "run", None)):
            raise TypeError(f"{runnable!r} has no run(stop) method")
        with self._lock:
            if self._started:
                raise RuntimeError("Manager.add after run")
            self._runnables.append(runnable)

    def controller(self, name: str) -> Builder:
        """A ``Builder`` for a controller named ``name`` (queue and metrics label)."""
        from pycontroller.builder import Builder

        return Builder(self, name)

    def _claim_controller_name(self, name: str) -> None:
        with self._lock:
            if name in self._controller_names:
                raise ValueError(f"controller with name {name!r} already exists")
            self._controller_names.add(name)

    def add_readyz_check(self, name: str, check: Callable[[], bool]) -> None:
        """Add a readiness check (``/readyz``) before ``run``."""
        self._readiness[name] = check

    def add_healthz_check(self, name: str, check: Callable[[], bool]) -> None:
        """Add a liveness check (``/healthz``) before ``run``."""
        self._health[name] = check

    def _synced(self) -> bool:
        return all(inf.has_synced() for inf in self.informers.informers().values())

    # -- running ---------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> int:
        """Run until ``stop`` (signals when None), then shut down within the deadline.

        Returns the exit code (see the module docstring). Call once. While it
        runs, the garbage-collector policy of ``pycontroller._gc`` is installed
        (unless ``tune_gc=False``): it keeps CPython's full collections from
        walking the whole informer cache again and again.
        """
        with tuned_gc() if self.tune_gc else contextlib.nullcontext():
            return self._run(stop)

    def _run(self, stop: threading.Event | None) -> int:
        if stop is None:
            from pycontroller.signals import setup_signal_handler

            stop = setup_signal_handler()
        with self._lock:
            if self._started:
                raise RuntimeError("Manager.run may only be called once")
            self._started = True
            runnables = list(self._runnables)
        internal = threading.Event()  # set once stopping starts, for whatever reason
        lost = threading.Event()
        # The elector has a stop of its own, set only once the leading work has
        # returned (or was abandoned): the Lease is renewed while in-flight
        # reconciles finish, so no standby takes over meanwhile
        # (controller-runtime cancels leader election after the runnables stop).
        elector_stop = threading.Event()
        servers: list[MetricsHealthServer] = []
        others = _Group("runnable", internal.set)
        leaders = _Group("leader-runnable", internal.set)
        leading_thread: threading.Thread | None = None
        code = EXIT_OK
        try:
            self._deadline = None
            leader_runnables = [r for r in runnables if _needs_leader_election(r)]
            elector = None
            if self.leader_election:
                # Before serving: /healthz has the leader-election check from the start.
                elector = self._leader_elector(
                    leader_runnables, leaders, internal, elector_stop, lost
                )
            servers = self.servers = self._serve()
            self.informers.start(internal)
            others.start([r for r in runnables if not _needs_leader_election(r)], internal)
            if elector is not None:
                leading_thread = threading.Thread(
                    target=elector.run, args=(elector_stop,), name="leader-election", daemon=True
                )
                leading_thread.start()
            else:
                leaders.start(leader_runnables, internal)
            while not internal.is_set() and not stop.wait(_POLL):
                pass
            # Leadership lost: no graceful shutdown, another leader may already
            # act (controller-runtime sets gracefulShutdownTimeout to 0).
            grace = 0.0 if lost.is_set() else self.graceful_shutdown_timeout
            self._deadline = time.monotonic() + grace
            internal.set()
            logger.info("Stopping: in-flight work has %.1fs to finish", grace)
            ok = others.wait(self._get_deadline)
            ok = leaders.wait(self._get_deadline) and ok
            if leading_thread is not None:
                # The leading work has returned or was abandoned: now the elector
                # stops renewing and releases the Lease.
                elector_stop.set()
                leading_thread.join(max(0.0, self._deadline + RELEASE_GRACE - time.monotonic()))
                ok = ok and not leading_thread.is_alive() and self._leading_ok
            if lost.is_set():
                logger.error("Leader election lost")
            if not ok or lost.is_set():
                code = EXIT_ABANDONED
        finally:
            internal.set()
            elector_stop.set()
            self._cleanup(servers)
        logger.info("Manager %s stopped exit_code=%d", self.name, code)
        return code

    def _get_deadline(self) -> float | None:
        return self._deadline

    def _serve(self) -> list[MetricsHealthServer]:
        servers: list[MetricsHealthServer] = []
        wanted = [
            (kind, address)
            for kind, address in (
                ("metrics", self.metrics_bind_address),
                ("health probes", self.health_probe_bind_address),
            )
            if not _disabled(address)
        ]
        by_address: dict[str, MetricsHealthServer] = {}
        for kind, address in wanted:
            server = by_address.get(address) if not address.endswith(":0") else None
            if server is None:
                # Every server answers all paths: a metrics-only program still has probes.
                server = serve_metrics_and_health(
                    address, self._readiness, health_checks=self._health, registry=self.registry
                )
                by_address[address] = server
                servers.append(server)
            logger.info("serving %s on %s", kind, server.address)
        return servers

    def _leader_elector(
        self,
        runnables: list[Runnable],
        group: _Group,
        stopping: threading.Event,
        elector_stop: threading.Event,
        lost: threading.Event,
    ) -> LeaderElector:
        """The elector whose leading work is ``runnables`` in ``group``; its
        ``/healthz`` check is added. ``run`` starts it with ``elector_stop``."""
        identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        namespace, lease = self.leader_election_namespace, self.leader_election_id
        # The Lease has a request budget of its own: renewals never queue behind reconciles.
        client = ResourceClient(
            self.api_client,
            "coordination.k8s.io",
            "v1",
            "leases",
            rate_limiter=TokenBucketRateLimiter(self._qps, self._burst),
            request_timeout=max(self.renew_deadline / 2, 1.0),
        )
        lock = LeaseLock(
            self.api_client,
            namespace,
            lease,
            identity,
            client=client,
            event_recorder=self.recorder(self.name or lease),
        )
        self._leading_ok = True
        # client-go's leader-election metric (controller-runtime registers it):
        # 1 while leading, 0 once leading stopped; no sample before a first lead.
        master_status = register(
            prometheus_client.Gauge,
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=self.registry,
        ).labels(lease)

        led = threading.Event()

        def started_leading(stop_leading: threading.Event) -> None:
            led.set()
            master_status.set(1)
            logger.info("became leader lease=%s/%s identity=%s", namespace, lease, identity)
            leader_stop = threading.Event()  # the manager stopping, or leadership lost
            group.start(runnables, leader_stop)
            while not stop_leading.wait(_POLL) and not stopping.is_set():
                pass
            leader_stop.set()
            # Lost (not stopping): abandon at once, another leader may already act.
            deadline = self._get_deadline if stopping.is_set() else time.monotonic
            if not group.wait(deadline):
                self._leading_ok = False

        def stopped_leading() -> None:
            if led.is_set():
                master_status.set(0)
            if not elector_stop.is_set():
                logger.error("lost leadership lease=%s/%s identity=%s", namespace, lease, identity)
                lost.set()
                stopping.set()

        self.elector = LeaderElector(
            lock,
            self.lease_duration,
            self.renew_deadline,
            self.retry_period,
            on_started_leading=started_leading,
            on_stopped_leading=stopped_leading,
            release_on_cancel=True,
            name=lease,
        )
        self.add_healthz_check("leader-election", self.elector.health_check())
        logger.info("waiting for leadership lease=%s/%s identity=%s", namespace, lease, identity)
        return self.elector

    def _cleanup(self, servers: list[MetricsHealthServer]) -> None:
        deadline = (self._deadline or time.monotonic()) + RELEASE_GRACE
        self.informers.shutdown(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
        for rec in list(self._recorders.values()):
            rec.shutdown(max(0.1, deadline - time.monotonic()))
        for server in servers:
            server.shutdown()
        if self._embedded is not None:
            self._embedded.stop()
        if self._embedded_dir is not None:
            shutil.rmtree(self._embedded_dir, ignore_errors=True)
        if self._owns_client or self._embedded is not None:
            close = getattr(self.api_client, "close", None)
            if callable(close):
                close()


class _FlagAdder:
    """``parser.add_argument`` that skips flags already defined and keeps set_defaults."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser

    def __call__(self, flag: str, **kwargs: Any) -> None:
        if flag in self.parser._option_string_actions:
            return
        dest = flag.lstrip("-").replace("-", "_")
        preset = self.parser._defaults.get(dest)
        if preset is not None:
            kwargs["default"] = preset
        self.parser.add_argument(flag, **kwargs)


def _start_embedded(
    crds: Iterable[str | os.PathLike[str]], samples: Iterable[str | os.PathLike[str]]
) -> tuple[Any, str]:
    """Start an in-process APIServer with ``crds`` and every simulated
    workload (Deployments roll out, pods run, Services get endpoints: see
    ``pycontroller.testing.apiserver.simulate``); print how to reach it."""
    from pycontroller.testing import APIServer
    from pycontroller.testing.apiserver.simulate import DEFAULT_SIMULATIONS

    server = APIServer(crds=[str(c) for c in crds], simulate=DEFAULT_SIMULATIONS)
    server.start()
    workdir = tempfile.mkdtemp(prefix="pycontroller-embedded-")
    kubeconfig = server.write_kubeconfig(os.path.join(workdir, "kubeconfig"))
    print(f"embedded API server at {server.url}", flush=True)
    print(f"kubeconfig: {kubeconfig}", flush=True)
    for sample in samples:
        print(f"try: kubectl --kubeconfig {kubeconfig} apply -f {sample}", flush=True)
    return server, kubeconfig
