"""pycontroller.testing.wait_for: the shared polling helper."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller.testing import wait_for


def test_returns_the_first_truthy_value() -> None:
    calls: Iterator[Any] = iter([0, None, [], {"ok": 1}])
    assert wait_for(lambda: next(calls), timeout=5, interval=0) == {"ok": 1}


def test_timeout_names_what_and_last_value() -> None:
    t0 = time.monotonic()
    with pytest.raises(AssertionError) as err:
        wait_for(lambda: [], timeout=0.1, interval=0.01, what="the pods to go")
    assert time.monotonic() - t0 < 2
    assert "the pods to go" in str(err.value)
    assert "last value: []" in str(err.value)


def test_called_at_least_once_and_again_at_the_deadline() -> None:
    n = [0]

    def cond() -> bool:
        n[0] += 1
        return False

    with pytest.raises(AssertionError):
        wait_for(cond, timeout=0)
    assert n[0] == 1
    n[0] = 0
    with pytest.raises(AssertionError):
        wait_for(cond, timeout=0.05, interval=1.0)
    assert n[0] == 2  # first try, then one more when the (short) sleep ends


def test_exceptions_from_cond_propagate() -> None:
    def boom() -> bool:
        raise KeyError("x")

    with pytest.raises(KeyError):
        wait_for(boom, timeout=1)


def test_importing_it_does_not_load_the_server() -> None:
    code = (
        "import sys; from pycontroller.testing import wait_for; "
        "assert 'pycontroller.testing.apiserver' not in sys.modules, 'server imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
