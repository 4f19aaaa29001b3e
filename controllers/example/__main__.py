"""``python -m controllers.example``: the mirror controller on a Manager (flags: ``--help``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pycontroller import Manager

from . import COMPONENT, MirrorController


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controllers.example", description=__doc__)
    parser.add_argument("--workers", type=int, default=2, help="concurrent reconciles")
    parser.set_defaults(metrics_bind_address=":8080", leader_election_namespace="default")
    mgr = Manager.from_args(argv, name=COMPONENT, parser=parser)
    ctrl = MirrorController(manager=mgr, recorder=mgr.recorder(COMPONENT))
    ctrl.setup(mgr.args.workers)
    return mgr.run()


if __name__ == "__main__":
    sys.exit(main())
