"""``python -m controllers.reverseproxy``: run the ReverseProxy operator (flags: ``--help``).

Only wiring: the Manager owns flags, logging, signals, probes, leader election
and the graceful-shutdown deadline; ``controller.setup`` adds both controllers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from controllers.reverseproxy import names
from controllers.reverseproxy.controller import setup
from pycontroller import Manager

REPO = Path(__file__).resolve().parents[2]
CRDS = [str(REPO / "crds" / f"{k.singular}.yaml") for k in names.KINDS]
SAMPLES = [str(REPO / "crds" / "samples" / f"{k.singular}.yaml") for k in names.KINDS]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m controllers.reverseproxy", description=__doc__)
    p.add_argument("--workers", type=int, default=2, help="concurrent reconciles per kind")
    p.add_argument("--nginx-image", default=names.default_nginx_image(), help="default image")
    p.set_defaults(metrics_bind_address=":8080", health_probe_bind_address=":8081")
    p.set_defaults(leader_election_id=names.LEADER_ELECTION_ID)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    mgr = Manager.from_args(argv, name=names.COMPONENT, parser=parser(), crds=CRDS, samples=SAMPLES)
    setup(mgr, nginx_image=mgr.args.nginx_image, workers=max(1, mgr.args.workers))
    return mgr.run()


if __name__ == "__main__":
    sys.exit(main())
