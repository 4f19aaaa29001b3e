"""Golden cases for the Balancer renderers.

Each directory under ``golden/`` is one case: ``balancer.yaml`` (the input,
as the API server would return it), ``nginx.conf`` (the expected rendered
text) and ``children.yaml`` (the expected ``desired_children`` output, one
YAML document per child, in order).

``golden/sample/nginx.conf`` is copied from the prior-art document's exact
output of the Go ``NewConfig`` for the Go sample and is never regenerated.
Run with ``UPDATE_GOLDEN=1`` to rewrite the other expected files after an
intended change, then review the diff.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "balancer.yaml").is_file())
#: Expected files taken from the Go implementation's output, never regenerated.
FROM_GO = {("sample", "nginx.conf")}


def load_case(case: str) -> dict[str, Any]:
    """The input Balancer of a golden case (a fresh dict each call)."""
    data: dict[str, Any] = yaml.safe_load((GOLDEN / case / "balancer.yaml").read_text())
    return data


def golden_path(case: str, filename: str) -> Path:
    """Path of an expected file; with ``UPDATE_GOLDEN=1`` the caller may
    rewrite it unless it is in ``FROM_GO``."""
    return GOLDEN / case / filename


def may_update(case: str, filename: str) -> bool:
    """True iff ``UPDATE_GOLDEN`` is set and the file is not Go-sourced."""
    return bool(os.environ.get("UPDATE_GOLDEN")) and (case, filename) not in FROM_GO


class Golden:
    """Access to the golden cases for test functions (test modules cannot
    import this conftest under ``--import-mode=importlib``)."""

    load = staticmethod(load_case)
    path = staticmethod(golden_path)
    may_update = staticmethod(may_update)


@pytest.fixture
def golden() -> type[Golden]:
    return Golden


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sample() -> dict[str, Any]:
    return load_case("sample")


@pytest.fixture
def sample_copy(sample: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(sample)
