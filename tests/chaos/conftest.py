"""Fixtures of the chaos suite: an API server with the Balancer CRD on a fixed
free port, the harness's clients, and controller subprocesses whose logs are
printed when a test fails (and always killed at teardown)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chaos.harness import CRD, NAMESPACES, Cluster, ControllerProcess, free_port
from pycontroller.testing import APIServer


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.chaos)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    setattr(item, f"chaos_rep_{report.when}", report)
    return report


def _failed(request: pytest.FixtureRequest) -> bool:
    return any(
        getattr(getattr(request.node, f"chaos_rep_{when}", None), "failed", False)
        for when in ("setup", "call")
    )


@pytest.fixture
def chaos_server() -> Iterator[APIServer]:
    """An APIServer with the Balancer CRD on a fixed free port (so a restart keeps it)."""
    server = APIServer(port=free_port(), crds=[str(CRD)])
    server.start()
    try:
        yield server
    finally:
        server.clear_faults()
        server.stop()


@pytest.fixture
def cluster(chaos_server: APIServer) -> Iterator[Cluster]:
    c = Cluster(chaos_server)
    c.ensure_namespaces(NAMESPACES)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def kubeconfig(chaos_server: APIServer, tmp_path: Path) -> str:
    return chaos_server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def controllers(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[..., ControllerProcess]]:
    """A factory of controller subprocesses (not started): ``controllers(kubeconfig,
    "name", "--flag", ...)``. Every one still running at teardown is stopped; when the
    test failed, the tail of each one's log is printed."""
    made: list[ControllerProcess] = []

    def register(proc: ControllerProcess) -> ControllerProcess:
        made.append(proc)
        return proc

    def make(kubeconfig: str, name: str = "controller", *args: str) -> ControllerProcess:
        return register(
            ControllerProcess(kubeconfig, tmp_path / f"{name}.log", args=args, name=name)
        )

    make.register = register  # type: ignore[attr-defined]
    try:
        yield make
    finally:
        for proc in made:
            if proc.running:
                proc.stop(timeout=10)
        if _failed(request) or os.environ.get("CHAOS_PRINT_LOGS"):
            for proc in made:
                print(f"\n===== {proc.name} log ({proc.log_path}), last lines =====")
                print(proc.tail(150))


_SUMMARIES = pytest.StashKey[list[str]]()


@pytest.fixture
def chaos_summary(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """``chaos_summary(text)``: print ``text`` now (seen with ``-s``) and again in
    the terminal summary at the end of the run (seen without ``-s`` too)."""
    lines = request.config.stash.setdefault(_SUMMARIES, [])

    def add(text: str) -> None:
        print(f"\n{text}")
        lines.append(text)

    return add


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_SUMMARIES, [])
    if lines:
        terminalreporter.section("chaos figures")
        for text in lines:
            terminalreporter.write_line(text)


@pytest.fixture
def report_dir(tmp_path: Path) -> Path:
    """Where JSON reports go: ``$CHAOS_REPORT_DIR`` or the test's tmp dir."""
    path = Path(os.environ.get("CHAOS_REPORT_DIR") or tmp_path)
    path.mkdir(parents=True, exist_ok=True)
    return path
