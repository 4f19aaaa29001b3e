"""Issue 11's size bar: each ``__main__.py`` at most 40 lines, the wiring at most 60."""

from __future__ import annotations

from pathlib import Path

import pytest

CONTROLLERS = Path(__file__).resolve().parents[3] / "controllers"


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


@pytest.mark.parametrize("package", ["balancer", "example", "network", "reverseproxy"])
def test_main_is_only_wiring(package: str) -> None:
    main = CONTROLLERS / package / "__main__.py"
    assert lines(main) <= 40, f"{main} has {lines(main)} lines"


def test_balancer_wiring_fits_in_60_lines() -> None:
    wiring = CONTROLLERS / "balancer" / "controller.py"
    assert lines(wiring) <= 60, f"{wiring} has {lines(wiring)} lines"
