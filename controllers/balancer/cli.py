"""Small helpers of ``python -m controllers.balancer``'s command line."""

from __future__ import annotations

import argparse
from pathlib import Path


def positive_int(value: str) -> int:
    """An argparse type: an integer >= 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {number}")
    return number


def find_repo_file(relative: str) -> str:
    """``relative`` (e.g. ``crds/balancer.yaml``) near the package, else under the cwd.

    Returned as given when found nowhere (only ``--embedded`` needs it).
    """
    here = Path(__file__).resolve()
    for base in (*here.parents, Path.cwd()):
        if (base / relative).is_file():
            return str(base / relative)
    return relative
