"""``python -m controllers.example``: flags, logging, signals, probes, leader election, run."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys

from pycontroller import (
    EventRecorder,
    LeaderElector,
    LeaseLock,
    load_config,
    serve_metrics_and_health,
    setup_signal_handler,
)
from pycontroller.workqueue import PrometheusMetricsProvider, set_global_metrics_provider

from . import MirrorController

logger = logging.getLogger("controllers.example")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m controllers.example", description=__doc__)
    p.add_argument("--kubeconfig", help="path to a kubeconfig (default: $KUBECONFIG, in-cluster)")
    p.add_argument("--master", help="API server URL, overrides the kubeconfig's")
    p.add_argument("--namespace", help="watch only this namespace (default: all)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--metrics-bind-address", default=":8080", help='"0" disables the server')
    p.add_argument("--leader-elect", action="store_true")
    p.add_argument("--leader-election-namespace", default="default")
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    stop = setup_signal_handler()
    set_global_metrics_provider(PrometheusMetricsProvider())  # before queues are made
    api = load_config(args.kubeconfig, args.master)
    recorder = EventRecorder(api, "example-mirror-controller")
    ctrl = MirrorController(api, namespace=args.namespace, recorder=recorder)
    lost = False

    def stopped() -> None:
        nonlocal lost
        lost = not stop.is_set()

    elector = None
    if args.leader_elect:
        identity = f"{socket.gethostname()}_{os.getpid()}"
        lock = LeaseLock(
            api,
            args.leader_election_namespace,
            "example-mirror-controller",
            identity,
            event_recorder=recorder,
        )
        elector = LeaderElector(
            lock,
            on_started_leading=lambda leading: ctrl.run(args.workers, leading),
            on_stopped_leading=stopped,
        )
    server = None
    if args.metrics_bind_address != "0":
        # A standby replica never starts informers: gate readiness on them
        # only without leader election, or standbys would never be ready.
        server = serve_metrics_and_health(
            args.metrics_bind_address,
            {"informers": ctrl.has_synced} if elector is None else None,
            health_checks={"leader-election": elector.health_check()} if elector else None,
        )
    try:
        if elector is None:
            ctrl.run(args.workers, stop)
        else:
            elector.run(stop)
    finally:
        recorder.shutdown(timeout=5)
        if server is not None:
            server.shutdown()
    if lost:
        logger.error("Leader election lost")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
