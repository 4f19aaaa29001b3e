"""Golden cases for the ReverseProxy renderers.

Each directory under ``golden/`` is one case: ``input.yaml`` (the object as
the API server would return it), ``nginx.conf`` (the expected rendered text)
and ``children.yaml`` (the expected ``desired_children`` output, one YAML
document per child, in write order).

``whoami/nginx.conf`` and ``db/nginx.conf`` are the exact texts of the
prior-art page (the original's template as Go renders it) and are never
regenerated. Run with ``UPDATE_GOLDEN=1`` to rewrite the other expected files
after an intended change, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "input.yaml").is_file())
#: Expected files copied from the prior-art page, never regenerated.
FROM_SPEC = {("whoami", "nginx.conf"), ("db", "nginx.conf")}
#: The image the golden children are rendered with when ``spec.image`` is empty.
IMAGE = "nginx:1.25"


class Golden:
    """Access to the golden cases (test modules cannot import this conftest
    under ``--import-mode=importlib``)."""

    image = IMAGE

    @staticmethod
    def load(case: str) -> dict[str, Any]:
        """The input object of a case (a fresh dict each call)."""
        data: dict[str, Any] = yaml.safe_load((GOLDEN / case / "input.yaml").read_text())
        return data

    @staticmethod
    def path(case: str, filename: str) -> Path:
        return GOLDEN / case / filename

    @staticmethod
    def may_update(case: str, filename: str) -> bool:
        """True iff ``UPDATE_GOLDEN`` is set and the file is not from the spec."""
        return bool(os.environ.get("UPDATE_GOLDEN")) and (case, filename) not in FROM_SPEC


@pytest.fixture
def golden() -> type[Golden]:
    return Golden


@pytest.fixture(params=CASES)
def case(request: pytest.FixtureRequest) -> str:
    return str(request.param)
