"""``python -m controllers.balancer``: run the Balancer controller (flags: ``--help``).

Only wiring: the Manager (``pycontroller.manager``) owns flags, logging, signals, probes,
leader election and the graceful-shutdown deadline; ``controller.setup`` adds the controller.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controllers.balancer import cli, names
from controllers.balancer.controller import COMPONENT, setup
from pycontroller import Manager

#: The Go project's leader-election ID, so a Go and a Python controller never both lead.
LEADER_ELECTION_ID = "24a4cdb8.hliangzhao.io"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m controllers.balancer", description=__doc__)
    p.add_argument("--workers", type=cli.positive_int, default=2, help="concurrent reconciles")
    p.add_argument("--resync-period", type=float, default=600.0, help="resync seconds (0: never)")
    p.add_argument("--nginx-image", default=names.DEFAULT_NGINX_IMAGE, help="nginx image")
    p.set_defaults(metrics_bind_address=":8080", health_probe_bind_address=":8081")
    p.set_defaults(leader_election_id=LEADER_ELECTION_ID)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    files = {"crds": ["crds/balancer.yaml"], "samples": ["crds/samples/balancer.yaml"]}
    paths = {kind: [cli.find_repo_file(f) for f in rel] for kind, rel in files.items()}
    mgr = Manager.from_args(argv, name=COMPONENT, parser=parser(), **paths)
    setup(mgr, nginx_image=mgr.args.nginx_image, workers=mgr.args.workers)
    return mgr.run()


if __name__ == "__main__":
    sys.exit(main())
