"""Run the embedded API server standalone.

    python -m pycontroller.testing.apiserver --port 8001 \\
        --kubeconfig ./dev.kubeconfig --crd crds/

Prints the ``kubectl`` command to use it, then serves until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from pycontroller.testing.apiserver.server import APIServer
from pycontroller.testing.apiserver.simulate import SIMULATIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pycontroller.testing.apiserver",
        description="An embedded Kubernetes API server (list/watch, CRDs) for development.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (loopback)")
    parser.add_argument("--port", type=int, default=8001, help="port (0 = any free port)")
    parser.add_argument(
        "--kubeconfig", default="./dev.kubeconfig", help="where to write a kubeconfig"
    )
    parser.add_argument(
        "--crd", action="append", default=[], help="CRD YAML file or directory (repeatable)"
    )
    parser.add_argument("--history-size", type=int, default=10000)
    parser.add_argument("--bookmark-interval", type=float, default=60.0)
    parser.add_argument(
        "--simulate",
        action="append",
        default=[],
        choices=SIMULATIONS,
        metavar="NAME",
        help=f"run a simulated kube component: {', '.join(SIMULATIONS)} (repeatable)",
    )
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    server = APIServer(
        host=args.host,
        port=args.port,
        crds=args.crd,
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        simulate=args.simulate,
    )
    server.start()
    path = server.write_kubeconfig(args.kubeconfig)
    print(f"embedded API server listening on {server.url}", flush=True)
    print(f"kubectl --kubeconfig {path} get all", flush=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            sys.exit(1)
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stop.wait(1.0):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
