"""The real ``kubectl`` against simulated workloads: ``rollout status``,
``rollout history``, ``rollout undo``, ``scale``, ``get rs``, ``expose`` and
Endpoints; ``logs`` (a kubelet's job) is not faked."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pycontroller.testing import APIServer, wait_for

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

Run = Callable[..., subprocess.CompletedProcess[str]]

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
"""


@pytest.fixture
def kubectl(tmp_path: Path) -> Iterator[tuple[APIServer, Run]]:
    with APIServer(simulate=("deployments", "kubelet", "endpoints")) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        (tmp_path / "web.yaml").write_text(DEPLOYMENT)

        def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
            assert KUBECTL is not None
            done = subprocess.run(
                [KUBECTL, "--kubeconfig", kubeconfig, *args],
                capture_output=True,
                text=True,
                timeout=60,
                cwd=tmp_path,
            )
            if ok:
                assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
            return done

        yield server, run


def test_rollout_status_history_undo_and_scale(kubectl: tuple[APIServer, Run]) -> None:
    server, run = kubectl
    run("apply", "-f", "web.yaml")
    out = run("rollout", "status", "deployment/web", "--timeout=30s").stdout
    assert 'deployment "web" successfully rolled out' in out
    run("set", "image", "deployment/web", "nginx=nginx:1.28")
    run("annotate", "deployment/web", "kubernetes.io/change-cause=bump nginx")
    out = run("rollout", "status", "deployment/web", "--timeout=30s").stdout
    assert out.strip().endswith('deployment "web" successfully rolled out')
    history = run("rollout", "history", "deployment/web").stdout
    rows = [line.split(None, 1) for line in history.splitlines()[2:] if line.strip()]
    assert rows == [["1", "<none>"], ["2", "bump nginx"]]
    rev2 = run("rollout", "history", "deployment/web", "--revision=2").stdout
    assert "nginx:1.28" in rev2 and "pod-template-hash=" in rev2
    rs = run("get", "rs", "-o", "jsonpath={range .items[*]}{.spec.replicas} {end}").stdout
    assert sorted(rs.split()) == ["0", "3"]
    pods = run(
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.status.phase}/{.spec.nodeName}/"
        "{.spec.containers[0].image} {end}",
    ).stdout.split()
    assert pods == ["Running/node-1/nginx:1.28"] * 3
    run("rollout", "undo", "deployment/web")
    run("rollout", "status", "deployment/web", "--timeout=30s")
    history = run("rollout", "history", "deployment/web").stdout
    assert [line.split(None, 1)[0] for line in history.splitlines()[2:] if line.strip()] == [
        "2",
        "3",
    ]
    run("scale", "deployment/web", "--replicas=1")
    run("rollout", "status", "deployment/web", "--timeout=30s")
    ready = run("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}").stdout
    assert ready == "1"
    run("expose", "deployment/web", "--port=8080", "--target-port=80")

    def endpoint_ips() -> list[str]:
        done = run(
            "get",
            "endpoints",
            "web",
            "-o",
            "jsonpath={.subsets[*].addresses[*].ip}:{.subsets[*].ports[*].port}",
            ok=False,
        )
        return done.stdout.split(":") if done.returncode == 0 and done.stdout[:1] != ":" else []

    ips, port = wait_for(endpoint_ips, what="Endpoints of the exposed Deployment")
    assert ips.startswith("10.244.") and port == "80"
    # Only a real kubelet can serve logs: not faked.
    assert run("logs", "deployment/web", ok=False).returncode != 0
    assert server.writes("replicasets") == 0
