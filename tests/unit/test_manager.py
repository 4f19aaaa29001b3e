"""Manager without a server: flags, defaults, the client's QPS budget, validation."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes.client import ApiClient, Configuration

from pycontroller import Manager
from pycontroller.client import TokenBucketRateLimiter, rate_limiter_for
from pycontroller.record import EventRecorder


def offline_client() -> ApiClient:
    cfg = Configuration()
    cfg.host = "http://127.0.0.1:9"  # nothing is sent: construction does no I/O
    return ApiClient(configuration=cfg)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return str(path)


@pytest.fixture(autouse=True)
def _keep_root_logging() -> Iterator[None]:
    """from_args configures the root logger (as a program's main would): undo it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_controller_runtime_flag_names_and_defaults() -> None:
    args = Manager.parse_args([], name="demo")
    assert vars(args) == {
        "kubeconfig": None,
        "master": None,
        "namespace": "",
        "metrics_bind_address": "0",
        "health_probe_bind_address": "0",
        "leader_elect": False,
        "leader_election_id": "demo",
        "leader_election_namespace": "",
        "graceful_shutdown_timeout": 25.0,
        "kube_api_qps": 20.0,
        "kube_api_burst": 30,
        "log_level": "INFO",
        "log_format": "text",
        "embedded": False,
    }


def test_caller_flags_and_defaults_win() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--namespace", default="mine")  # the caller's own definition stays
    parser.set_defaults(metrics_bind_address=":8080", leader_election_id="fixed-id")
    args = Manager.parse_args(["--workers", "3"], name="demo", parser=parser)
    assert (args.workers, args.namespace) == (3, "mine")
    assert args.metrics_bind_address == ":8080"
    assert args.leader_election_id == "fixed-id"
    args = Manager.parse_args(["--metrics-bind-address", ":9090"], name="d", parser=parser)
    assert args.metrics_bind_address == ":9090"


@pytest.mark.parametrize(
    "argv",
    [
        ["--graceful-shutdown-timeout", "-1"],
        ["--kube-api-burst", "0"],
        ["--log-format", "xml"],
        ["--kube-api-qps", "fast"],
    ],
)
def test_bad_flags_exit_with_status_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        Manager.parse_args(argv, name="demo")
    assert info.value.code == 2


def test_from_args_builds_the_manager_and_applies_the_qps_budget(kubeconfig: str) -> None:
    argv = [
        *("--kubeconfig", kubeconfig, "--namespace", "team-a", "--leader-elect"),
        *("--graceful-shutdown-timeout", "7.5", "--kube-api-qps", "7", "--kube-api-burst", "9"),
        *("--log-format", "json"),
    ]
    mgr = Manager.from_args(argv, name="demo")
    assert mgr.args.kube_api_qps == 7.0
    assert mgr.namespace == "team-a" and mgr.informers.namespace == "team-a"
    assert mgr.leader_election and mgr.leader_election_id == "demo"
    assert mgr.leader_election_namespace == "team-a"  # falls back to --namespace
    assert mgr.graceful_shutdown_timeout == 7.5
    limiter = rate_limiter_for(mgr.api_client)
    assert isinstance(limiter, TokenBucketRateLimiter)
    assert (limiter.qps, limiter.burst) == (7.0, 9)


def test_from_args_without_a_usable_configuration_exits_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        Manager.from_args(["--kubeconfig", str(tmp_path / "missing")], name="demo")
    assert info.value.code == 2


def test_recorders_are_shared_per_component_and_spend_their_own_budget() -> None:
    api = offline_client()
    mgr = Manager(api, kube_api_qps=3, kube_api_burst=4)
    rec = mgr.recorder("comp")
    try:
        assert isinstance(rec, EventRecorder)
        assert mgr.recorder("comp") is rec
        sink_limiter = rec._sink._rate_limiter  # type: ignore[attr-defined]
        assert sink_limiter is not rate_limiter_for(api), "Events share the reconcile bucket"
        assert (sink_limiter.qps, sink_limiter.burst) == (3.0, 4)
    finally:
        rec.shutdown(0)


def test_constructor_validation() -> None:
    api = offline_client()
    with pytest.raises(ValueError, match="graceful_shutdown_timeout"):
        Manager(api, graceful_shutdown_timeout=-1)
    with pytest.raises(ValueError, match="leader_election_id"):
        Manager(api, leader_election=True)
    with pytest.raises(ValueError):
        Manager(api, metrics_bind_address="not-an-address")
    mgr = Manager(api)
    with pytest.raises(TypeError):
        mgr.add(object())  # type: ignore[arg-type]
    assert mgr.leader_election_namespace == "default"
    assert rate_limiter_for(api) is rate_limiter_for(api)
