"""``python -m controllers.network``: the Network controller (flags: ``--help``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from controllers.network.controller import COMPONENT, setup
from pycontroller import Manager

CRDS = Path(__file__).resolve().parents[2] / "crds"  # installed by --embedded


def main(argv: Sequence[str] | None = None) -> int:
    crds, samples = [CRDS / "network.yaml"], [CRDS / "samples" / "network.yaml"]
    mgr = Manager.from_args(argv, name=COMPONENT, crds=crds, samples=samples)
    setup(mgr)
    return mgr.run()


if __name__ == "__main__":
    sys.exit(main())
