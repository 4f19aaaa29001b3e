"""``python -m controllers.balancer`` as a subprocess, against an embedded API server."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer, wait_for

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "balancer.yaml"
SAMPLE = REPO / "crds" / "samples" / "balancer.yaml"


class Proc:
    """A child process whose stdout and stderr lines are collected by threads."""

    def __init__(self, args: list[str]) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env["PYTHONUNBUFFERED"] = "1"
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "controllers.balancer", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._lock = threading.Lock()
        for stream in (self.popen.stdout, self.popen.stderr):
            threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def wait_for_line(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while time.monotonic() < deadline:
            with self._lock:
                for line in self.lines:
                    m = regex.search(line)
                    if m:
                        return m
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r}; output:\n{self.output()}")

    def terminate_and_wait(self, timeout: float = 10.0) -> int:
        self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(
                f"no exit within {timeout}s of SIGTERM; output:\n{self.output()}"
            ) from None

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def apply_sample(kubeconfig: str, balancers: ResourceClient) -> None:
    """``kubectl apply -f crds/samples/balancer.yaml`` (the client's create without kubectl)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        with SAMPLE.open() as f:
            balancers.create(yaml.safe_load(f), namespace="default")
        return
    done = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "apply", "-f", str(SAMPLE)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def wait_until(probe: Any, timeout: float = 20.0, what: str = "") -> Any:
    """Poll ``probe`` until truthy; a 404 from it means "not yet"."""

    def attempt() -> Any:
        try:
            return probe()
        except NotFoundError:
            return None

    return wait_for(attempt, timeout, interval=0.1, what=what or repr(probe))


def converged(balancers: ResourceClient, name: str, namespace: str = "default") -> bool:
    obj = balancers.get(name, namespace=namespace)
    status = obj.get("status") or {}
    return status.get("observedGeneration") == obj["metadata"].get("generation") and any(
        c.get("type") == "Reconciled" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


@pytest.fixture
def server(apiserver_factory: Callable[..., APIServer]) -> APIServer:
    """A started API server with the Balancer CRD (stopped by the shared plugin)."""
    return apiserver_factory(crds=[str(CRD)])


def test_cli_converges_serves_metrics_and_stops_on_sigterm(
    server: APIServer, tmp_path: Path
) -> None:
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    proc = Proc(
        [
            "--kubeconfig",
            kubeconfig,
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--resync-period",
            "30",
        ]
    )
    try:
        metrics_port = int(proc.wait_for_line(r"serving metrics on 127\.0\.0\.1:(\d+)").group(1))
        health_port = int(
            proc.wait_for_line(r"serving health probes on 127\.0\.0\.1:(\d+)").group(1)
        )
        wait_until(
            lambda: http_get(f"http://127.0.0.1:{health_port}/readyz")[0] == 200,
            what="/readyz 200",
        )
        assert http_get(f"http://127.0.0.1:{health_port}/healthz")[0] == 200

        api = load_config(kubeconfig=kubeconfig)
        balancers = ResourceClient(api, "exposer.hliangzhao.io", "v1alpha1", "balancers")
        services = ResourceClient(api, "", "v1", "services")
        apply_sample(kubeconfig, balancers)
        wait_until(lambda: converged(balancers, "balancer-sample"), what="convergence")
        status = balancers.get("balancer-sample", namespace="default")["status"]
        assert (status["activeBackendsNum"], status["obsoleteBackendsNum"]) == (3, 0)
        for b in ("v1", "v2", "v3"):
            services.get(f"balancer-sample-{b}-backend", namespace="default")

        code, body = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert code == 200
        # The Builder's queue is a PriorityQueue: its depth is by priority
        # (workqueue_depth{name="balancer",priority="0"}), no plain {name=...} series.
        assert re.search(r'workqueue_depth\{name="balancer",priority="-?\d+"\} \d', body), body
        assert "controller_runtime_reconcile_total" in body
        assert re.search(
            r'controller_runtime_reconcile_total\{controller="balancer",result="success"\} [1-9]',
            body,
        ), body
        # log lines carry controller, key and action
        proc.wait_for_line(r"controller=balancer key=default/balancer-sample action=create")

        started = time.monotonic()
        assert proc.terminate_and_wait(10.0) == 0, proc.output()
        assert time.monotonic() - started < 10.0
    finally:
        proc.kill()


def test_cli_json_logs(server: APIServer, tmp_path: Path) -> None:
    import json

    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    proc = Proc(
        [
            "--kubeconfig",
            kubeconfig,
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--log-format",
            "json",
        ]
    )
    try:
        line = proc.wait_for_line(r'"action": "start"').string
        record = json.loads(line)
        assert record["controller"] == "balancer"
        assert record["level"] == "info"
        assert proc.terminate_and_wait(10.0) == 0, proc.output()
    finally:
        proc.kill()


def test_embedded_smoke(tmp_path: Path) -> None:
    proc = Proc(
        [
            "--embedded",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ]
    )
    try:
        kubeconfig = proc.wait_for_line(r"kubeconfig: (\S+)").group(1)
        assert Path(kubeconfig).is_file()
        hint = proc.wait_for_line(r"kubectl --kubeconfig \S+ apply -f (\S+balancer\.yaml)")
        assert Path(hint.group(1)).is_file()
        api = load_config(kubeconfig=kubeconfig)
        balancers = ResourceClient(api, "exposer.hliangzhao.io", "v1alpha1", "balancers")
        apply_sample(kubeconfig, balancers)
        wait_until(lambda: converged(balancers, "balancer-sample"), what="convergence")
        assert proc.terminate_and_wait(10.0) == 0, proc.output()
    finally:
        proc.kill()


def test_cli_leader_election_acquires_and_releases_the_lease(
    server: APIServer, tmp_path: Path
) -> None:
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    api = load_config(kubeconfig=kubeconfig)
    leases = ResourceClient(api, "coordination.k8s.io", "v1", "leases")
    balancers = ResourceClient(api, "exposer.hliangzhao.io", "v1alpha1", "balancers")
    proc = Proc(
        [
            "--kubeconfig",
            kubeconfig,
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--leader-elect",
            "--leader-election-namespace",
            "kube-system",
        ]
    )
    try:
        proc.wait_for_line(r"became leader")
        lease = leases.get("24a4cdb8.hliangzhao.io", namespace="kube-system")
        holder = lease["spec"]["holderIdentity"]
        assert holder
        with SAMPLE.open() as f:
            balancers.create(yaml.safe_load(f), namespace="default")
        wait_until(lambda: converged(balancers, "balancer-sample"), what="convergence")
        assert proc.terminate_and_wait(10.0) == 0, proc.output()
        released = leases.get("24a4cdb8.hliangzhao.io", namespace="kube-system")
        assert not released["spec"].get("holderIdentity")
    finally:
        proc.kill()


def test_cli_not_ready_without_api_server_and_still_stops(tmp_path: Path) -> None:
    # Nothing listens on the port of a server we started and stopped.
    srv = APIServer()
    srv.start()
    url = srv.url
    srv.stop()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "gone", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "gone", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    proc = Proc(
        [
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ]
    )
    try:
        port = int(proc.wait_for_line(r"serving health probes on 127\.0\.0\.1:(\d+)").group(1))
        assert http_get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        time.sleep(0.5)
        assert http_get(f"http://127.0.0.1:{port}/readyz")[0] == 500
        assert proc.terminate_and_wait(10.0) == 0, proc.output()
    finally:
        proc.kill()


# --- shutdown (issue 9, finding 4) ----------------------------------------------------

CHILD_PLURALS = ("services", "configmaps", "deployments", "balancers")


def child_writes(server: APIServer) -> int:
    """Writes of the controller's own objects (Events excluded: the recorder flushes on exit)."""
    return sum(server.writes(plural) for plural in CHILD_PLURALS)


def create_balancers(server: APIServer, count: int) -> None:
    balancers = ResourceClient(
        server.api_client(), "exposer.hliangzhao.io", "v1alpha1", "balancers"
    )
    with SAMPLE.open() as f:
        sample = yaml.safe_load(f)
    for i in range(count):
        sample["metadata"] = {"name": f"b{i:02d}", "namespace": "default"}
        balancers.create(sample, namespace="default")


def test_sigterm_during_a_large_initial_sync_stops_without_draining_the_backlog(
    server: APIServer, tmp_path: Path
) -> None:
    """SIGTERM 1.5 s into the initial sync of 60 Balancers: only in-flight syncs finish.

    Before the Manager the controller drained the whole queue: exit 0 after
    31 s with 621 writes after the signal.
    """
    create_balancers(server, 60)
    created = child_writes(server)  # the 60 Balancer creates count as writes
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    proc = Proc(
        [
            *("--kubeconfig", kubeconfig, "--metrics-bind-address", "0"),
            *("--health-probe-bind-address", "0", "--workers", "2"),
        ]
    )
    try:
        wait_for(lambda: child_writes(server) > created, 20, what="the initial sync to start")
        time.sleep(1.5)  # the scenario: SIGTERM 1.5 s into the sync
        before = child_writes(server)
        started = time.monotonic()
        assert proc.terminate_and_wait(25.0) == 0, proc.output()
        seconds = time.monotonic() - started
        after = child_writes(server) - before
    finally:
        proc.kill()
    assert seconds < 10.0, f"exit took {seconds:.1f}s after SIGTERM"
    # Two workers, each finishing one Balancer (at most 7 writes: 3 backend
    # Services, front Service, ConfigMap, Deployment, status).
    assert after <= 2 * 7, f"{after} writes after SIGTERM: the backlog was drained"
    balancers = ResourceClient(
        server.api_client(), "exposer.hliangzhao.io", "v1alpha1", "balancers"
    ).list("default")["items"]
    synced = sum(1 for b in balancers if b.get("status"))
    assert synced < 30, f"{synced} of 60 Balancers synced: the backlog was worked off"


def test_a_hung_sync_does_not_hold_exit_past_the_deadline(
    server: APIServer, tmp_path: Path
) -> None:
    create_balancers(server, 2)
    # Every ConfigMap create hangs (the server sleeps before answering).
    server.set_latency(30.0, path_regex=r"^/api/v1/namespaces/default/configmaps")
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    proc = Proc(
        [
            *("--kubeconfig", kubeconfig, "--metrics-bind-address", "0"),
            *("--health-probe-bind-address", "0", "--graceful-shutdown-timeout", "2"),
        ]
    )
    try:
        wait_for(lambda: server.writes("services") > 0, 20, what="a sync to be in flight")
        started = time.monotonic()
        code = proc.terminate_and_wait(15.0)
        seconds = time.monotonic() - started
    finally:
        proc.kill()
        server.clear_faults()
    assert code != 0, f"abandoned work must show in the exit code:\n{proc.output()}"
    assert seconds < 2.0 + 4.0, f"exit took {seconds:.1f}s with a 2 s deadline"
    # The controller logs each abandoned key, or the Manager the runnable it gave up on,
    # whichever reaches the shared deadline first.
    assert "abandoning" in proc.output().lower()
