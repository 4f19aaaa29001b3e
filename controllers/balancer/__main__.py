"""``python -m controllers.balancer``: run the Balancer controller.

This module only wires: flags, logging, signals, the API client (or an
embedded API server), metrics and health servers, leader election, run.
The first SIGINT/SIGTERM stops gracefully (workers drain, the lease is
released, exit code 0); a second one exits at once.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from controllers.balancer import logging_setup, names
from controllers.balancer.controller import COMPONENT, BalancerController

logger = logging.getLogger("controllers.balancer")

#: The Go project's leader-election ID, so a Go and a Python controller never both lead.
LEADER_ELECTION_ID = "24a4cdb8.hliangzhao.io"
CRD_RELATIVE_PATH = Path("crds") / "balancer.yaml"
SAMPLE_RELATIVE_PATH = Path("crds") / "samples" / "balancer.yaml"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m controllers.balancer",
        description="Reconcile Balancer resources (exposer.hliangzhao.io/v1alpha1) into nginx.",
    )
    p.add_argument("--kubeconfig", help="path to a kubeconfig (default: $KUBECONFIG, in-cluster)")
    p.add_argument("--master", help="API server URL, overrides the kubeconfig's")
    p.add_argument("--namespace", default="", help="watch only this namespace (default: all)")
    p.add_argument("--workers", type=int, default=2, help="concurrent reconciles (default 2)")
    p.add_argument(
        "--resync-period", type=float, default=600.0, help="informer resync seconds (0: never)"
    )
    p.add_argument(
        "--metrics-bind-address", default=":8080", help="host:port for /metrics ('0' disables)"
    )
    p.add_argument(
        "--health-probe-bind-address",
        default=":8081",
        help="host:port for /healthz and /readyz ('0' disables)",
    )
    p.add_argument("--leader-elect", action="store_true", help="run only while holding a Lease")
    p.add_argument(
        "--leader-election-namespace",
        default="",
        help="namespace of the Lease (default: --namespace, else 'default')",
    )
    p.add_argument("--leader-election-id", default=LEADER_ELECTION_ID, help=argparse.SUPPRESS)
    p.add_argument("--nginx-image", default=names.DEFAULT_NGINX_IMAGE, help="nginx image")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    p.add_argument("--log-format", choices=logging_setup.FORMATS, default="text")
    p.add_argument(
        "--embedded",
        action="store_true",
        help="start an in-process API server with the Balancer CRD and run against it",
    )
    args = p.parse_args(argv)
    if args.workers < 1:
        p.error("--workers must be >= 1")
    return args


def find_repo_file(relative: Path) -> Path:
    """Find ``relative`` (e.g. crds/balancer.yaml) next to the package, else under the cwd."""
    here = Path(__file__).resolve()
    for base in (*here.parents, Path.cwd()):
        candidate = base / relative
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"cannot find {relative} near {here} or in {Path.cwd()}")


def _serve(kind: str, address: str, ready: Callable[[], bool]) -> Any:
    """Start one metrics/health HTTP server; log the port actually bound.

    ``"0"`` or ``""`` disables the server (controller-runtime's convention);
    a port of 0 in ``host:0`` asks the OS for a free port, which is logged as
    ``serving <kind> on HOST:PORT`` so a caller can find it.
    """
    from pycontroller.server import parse_bind_address, serve_metrics_and_health

    if address.strip() in ("", "0"):
        logger.info("%s server disabled", kind)
        return None
    host, _ = parse_bind_address(address)
    server = serve_metrics_and_health(address, readiness_checks={"informers-synced": ready})
    logger.info("serving %s on %s:%s", kind, host, server.port)
    return server


def _start_embedded(workdir: Path) -> Any:
    from pycontroller.testing import APIServer

    crd = find_repo_file(CRD_RELATIVE_PATH)
    server = APIServer(crds=[str(crd)])
    server.start()
    kubeconfig = server.write_kubeconfig(str(workdir / "kubeconfig"))
    try:
        sample: Path | str = find_repo_file(SAMPLE_RELATIVE_PATH)
    except FileNotFoundError:
        sample = "crds/samples/balancer.yaml"
    print(f"embedded API server at {server.url}", flush=True)
    print(f"kubeconfig: {kubeconfig}", flush=True)
    print(f"try: kubectl --kubeconfig {kubeconfig} apply -f {sample}", flush=True)
    return server, kubeconfig


def _run_leader_elected(
    api_client: Any, args: argparse.Namespace, bc: BalancerController, stop: threading.Event
) -> int:
    """Campaign for the Lease; run the workers while leading. 1 if leadership was lost."""
    from pycontroller.leaderelection import LeaderElector, LeaseLock

    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    namespace = args.leader_election_namespace or args.namespace or "default"
    lease = args.leader_election_id
    # Events "<identity> became leader" / "stopped leading" about the Lease, as client-go.
    lock = LeaseLock(api_client, namespace, lease, identity, event_recorder=bc.recorder)
    lost = threading.Event()

    def started_leading(stop_leading: threading.Event) -> None:
        logger.info("became leader lease=%s/%s identity=%s", namespace, lease, identity)
        bc.run_workers(args.workers, stop_leading)

    def stopped_leading() -> None:
        if not stop.is_set():
            logger.error("lost leadership lease=%s/%s identity=%s", namespace, lease, identity)
            lost.set()
            stop.set()

    elector = LeaderElector(
        lock,
        on_started_leading=started_leading,
        on_stopped_leading=stopped_leading,
        release_on_cancel=True,
        name=lease,
    )
    logger.info("waiting for leadership lease=%s/%s identity=%s", namespace, lease, identity)
    elector.run(stop)
    return 1 if lost.is_set() else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging_setup.configure(args.log_level, args.log_format)

    from pycontroller.config import ConfigError, load_config
    from pycontroller.signals import setup_signal_handler
    from pycontroller.workqueue import PrometheusMetricsProvider, set_global_metrics_provider

    stop = setup_signal_handler()
    set_global_metrics_provider(PrometheusMetricsProvider())

    embedded: Any = None
    workdir: tempfile.TemporaryDirectory[str] | None = None
    kubeconfig = args.kubeconfig
    if args.embedded:
        workdir = tempfile.TemporaryDirectory(prefix="balancer-embedded-")
        embedded, kubeconfig = _start_embedded(Path(workdir.name))
    try:
        api_client = load_config(kubeconfig=kubeconfig, master=args.master)
    except ConfigError as err:
        logger.error("no usable API server configuration: %s", err)
        if embedded is not None:
            embedded.stop()
        return 2

    bc = BalancerController(
        api_client,
        namespace=args.namespace or None,
        resync_period=args.resync_period,
        nginx_image=args.nginx_image,
    )
    servers = [
        _serve("metrics", args.metrics_bind_address, bc.has_synced),
        _serve("health probes", args.health_probe_bind_address, bc.has_synced),
    ]
    result: dict[str, int] = {}

    def run() -> None:
        code = 1
        try:
            bc.start_informers(stop)
            if args.leader_elect:
                code = _run_leader_elected(api_client, args, bc, stop)
            else:
                bc.run_workers(args.workers, stop)
                code = 0
        finally:
            result["code"] = code
            stop.set()

    # The main thread only waits, so signal handlers run promptly.
    runner = threading.Thread(target=run, name="balancer-main", daemon=True)
    try:
        runner.start()
        while runner.is_alive() and not stop.wait(0.5):
            pass
        while runner.is_alive():  # draining; a second signal exits at once
            runner.join(0.5)
    finally:
        logger.info("shutting down")
        bc.shutdown()
        for server in servers:
            if server is not None:
                server.shutdown()
        if embedded is not None:
            embedded.stop()
        if workdir is not None:
            workdir.cleanup()
        close = getattr(api_client, "close", None)
        if callable(close):
            close()
    code = result.get("code", 1)
    logger.info("stopped component=%s exit_code=%d", COMPONENT, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
