"""Property-based tests of Balancer specs (hypothesis).

Helper modules here (``balancer_strategies``, ``nginx_grammar``) and
``tests/e2e/nginx_util`` are put on ``sys.path`` for the test modules.

Every test pins its own ``settings``: derandomized (the same examples on
every run and machine), no example database (nothing read from or written
to ``.hypothesis/``), no per-example deadline (the embedded server and
``nginx -t`` are slow on a busy CI host), a bounded ``max_examples``.
``HYPOTHESIS_MAX_EXAMPLES`` (an integer) scales them for longer local runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "e2e"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@pytest.fixture
def golden_sample_text() -> str:
    """The Go project's exact nginx.conf for its sample (a golden file)."""
    return (HERE.parent / "unit" / "balancer" / "golden" / "sample" / "nginx.conf").read_text()
