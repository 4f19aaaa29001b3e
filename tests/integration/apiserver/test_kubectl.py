"""The real ``kubectl`` against the embedded API server.

Exercises what kubectl needs from the server: aggregated discovery, the
OpenAPI v3 documents its field-validation check reads (default
``--validate=strict``, no ``--validate=false``), Tables with CRD printer
columns, client-side apply (merge patches for custom objects, strategic merge
patches for built-ins), ``patch``, ``get --watch`` and ``delete``.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.kubectl import KUBECTL, Kubectl

from pycontroller.testing import APIServer

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

REPO = Path(__file__).resolve().parents[3]

CRD_YAML = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Ready
      type: string
      jsonPath: .status.conditions[?(@.type=="Ready")].status
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              color: {type: string, default: blue, enum: [blue, red]}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"""

WIDGET_YAML = """\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: default
spec:
  size: {size}
"""

BUILTINS_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: demo
data:
  key: "{value}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cfg-reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: cfg-reader
  namespace: demo
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cfg-reader
subjects:
- kind: ServiceAccount
  name: bot
  namespace: demo
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: bot
  namespace: demo
"""


@pytest.fixture
def kubectl(apiserver: APIServer, tmp_path: Path) -> Kubectl:
    return Kubectl(apiserver, tmp_path)


def table(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


class LineReader:
    """Collects a process's stdout lines on a thread so waits have deadlines."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, args=(proc,), daemon=True)
        self._thread.start()

    def _run(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    def wait_for(self, pred: Any, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred(self.lines):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"watch output never matched: {self.lines}")
                self._cond.wait(left)


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def test_kubectl_custom_resource_lifecycle(kubectl: Kubectl) -> None:
    crd = kubectl.write("crd.yaml", CRD_YAML)
    out = kubectl("apply", "-f", crd).stdout
    assert "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created" in out
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=20s")
    assert "widgets" in kubectl("api-resources", "--api-group=example.com").stdout

    w1 = kubectl.write("w1.yaml", WIDGET_YAML.format(size=2))
    assert "widget.example.com/w1 created" in kubectl("apply", "-f", w1).stdout

    rows = table(kubectl("get", "widgets").stdout)
    assert rows[0] == ["NAME", "SIZE", "COLOR", "READY", "AGE"]
    assert rows[1][:3] == ["w1", "2", "blue"]  # default applied
    assert rows[1][3].endswith("s") or rows[1][3].endswith("m")  # Ready empty -> age next

    rows = table(kubectl("get", "crd").stdout)
    assert rows[0] == ["NAME", "CREATED", "AT"] and rows[1][0] == "widgets.example.com"
    explain = kubectl("explain", "widgets.spec").stdout
    assert "size\t<integer> -required-" in explain and "color\t<string>" in explain

    yaml_out = kubectl("get", "wd", "w1", "-o", "yaml").stdout
    assert "color: blue" in yaml_out and "size: 2" in yaml_out
    assert "kubectl.kubernetes.io/last-applied-configuration" in yaml_out

    # Changed file -> client-side apply computes a merge patch.
    kubectl.write("w1.yaml", WIDGET_YAML.format(size=4))
    assert "widget.example.com/w1 configured" in kubectl("apply", "-f", w1).stdout
    size = kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.size}").stdout
    assert size == "4"

    # Watches (jsonpath and server-side Table output) see a change made by kubectl patch.
    proc = kubectl.popen(
        "get", "widget", "w1", "--watch", "-o", "jsonpath={.spec.size}{'\\n'}",
        "--request-timeout=30s",
    )  # fmt: skip
    table_proc = kubectl.popen("get", "widgets", "--watch", "--request-timeout=30s")
    try:
        reader = LineReader(proc)
        table_reader = LineReader(table_proc)
        reader.wait_for(lambda lines: "4" in lines)
        table_reader.wait_for(lambda lines: any(ln.split()[:2] == ["w1", "4"] for ln in lines))
        out = kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":9}}').stdout
        assert "patched" in out
        reader.wait_for(lambda lines: "9" in lines)
        table_reader.wait_for(lambda lines: any(ln.split()[:2] == ["w1", "9"] for ln in lines))
        assert table_reader.lines[0].split() == ["NAME", "SIZE", "COLOR", "READY", "AGE"]
    finally:
        stop(proc)
        stop(table_proc)

    # Server-side validation through kubectl's default --validate=strict.
    bad = kubectl.write("bad.yaml", WIDGET_YAML.format(size=0).replace("w1", "bad"))
    proc_bad = kubectl("apply", "-f", bad, check=False)
    assert proc_bad.returncode != 0
    assert (
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
        in (proc_bad.stderr)
    )
    unknown = kubectl.write(
        "unknown.yaml", WIDGET_YAML.format(size=1).replace("w1", "unk") + "  bogus: true\n"
    )
    proc_unknown = kubectl("apply", "-f", unknown, check=False)
    assert proc_unknown.returncode != 0
    assert 'unknown field "spec.bogus"' in proc_unknown.stderr

    assert 'widget.example.com "w1" deleted' in kubectl("delete", "-f", w1).stdout
    proc_none = kubectl("get", "widgets")
    assert "No resources found" in proc_none.stdout + proc_none.stderr

    kubectl("delete", "-f", crd)
    gone = kubectl("get", "widgets", check=False)
    assert gone.returncode != 0


def test_kubectl_builtins(kubectl: Kubectl) -> None:
    path = kubectl.write("builtins.yaml", BUILTINS_YAML.format(value="1", replicas=2))
    out = kubectl("apply", "-f", path).stdout
    for line in (
        "namespace/demo created",
        "configmap/cfg created",
        "deployment.apps/web created",
        "clusterrole.rbac.authorization.k8s.io/cfg-reader created",
        "rolebinding.rbac.authorization.k8s.io/cfg-reader created",
        "serviceaccount/bot created",
    ):
        assert line in out

    # Re-apply with changes: strategic merge patches for built-ins.
    kubectl.write("builtins.yaml", BUILTINS_YAML.format(value="2", replicas=3))
    out = kubectl("apply", "-f", path).stdout
    assert "configmap/cfg configured" in out
    assert "deployment.apps/web configured" in out
    assert "namespace/demo unchanged" in out

    got = kubectl("get", "-n", "demo", "configmap", "cfg", "-o", "jsonpath={.data.key}").stdout
    assert got == "2"
    rows = table(kubectl("get", "-n", "demo", "deployments").stdout)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows[1][0] == "web" and rows[1][1].endswith("/3")
    ports = kubectl(
        "get", "-n", "demo", "deploy", "web", "-o",
        "jsonpath={.spec.template.spec.containers[0].ports[0].containerPort}",
    ).stdout  # fmt: skip
    assert ports == "80"
    rows = table(kubectl("get", "clusterrole", "cfg-reader").stdout)
    assert rows[0] == ["NAME", "CREATED", "AT"] and rows[1][0] == "cfg-reader"
    rows = table(kubectl("get", "-n", "demo", "rolebinding").stdout)
    assert rows[1][:2] == ["cfg-reader", "ClusterRole/cfg-reader"]

    for what in ("rolebinding/cfg-reader", "serviceaccount/bot", "configmap/cfg",
                 "deployment/web"):  # fmt: skip
        assert "deleted" in kubectl("delete", "-n", "demo", what).stdout
    kubectl("delete", "clusterrole", "cfg-reader")
    kubectl("delete", "namespace", "demo", "--wait=true", "--timeout=30s")
    proc = kubectl("get", "-n", "demo", "configmaps")
    assert "No resources found" in proc.stdout + proc.stderr


def test_kubectl_balancer_crd_and_sample(kubectl: Kubectl) -> None:
    crd = REPO / "crds" / "balancer.yaml"
    sample = REPO / "crds" / "samples" / "balancer.yaml"
    if not crd.exists() or not sample.exists():
        pytest.skip("crds/balancer.yaml not present")
    kubectl("apply", "-f", str(crd))
    kubectl(
        "wait", "--for=condition=Established", "crd/balancers.exposer.hliangzhao.io",
        "--timeout=20s",
    )  # fmt: skip
    out = kubectl("apply", "-n", "default", "-f", str(sample)).stdout
    assert "balancer.exposer.hliangzhao.io/balancer-sample created" in out
    rows = table(kubectl("get", "-n", "default", "balancers").stdout)
    assert rows[0] == ["NAME", "ACTIVE", "OBSOLETE", "RECONCILED", "AGE"]
    assert rows[1][0] == "balancer-sample"
    assert "balancer-sample" in kubectl("get", "-n", "default", "blc", "-o", "name").stdout
    kubectl("delete", "-n", "default", "-f", str(sample))


SCALED_CRD_YAML = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pools.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: pools, kind: Pool}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
---
apiVersion: example.com/v1
kind: Pool
metadata:
  name: p1
  namespace: default
spec:
  replicas: 1
"""

DEPLOYMENT_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""


def test_kubectl_scale(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", kubectl.write("deploy.yaml", DEPLOYMENT_YAML))
    assert (
        "deployment.apps/web scaled" in kubectl("scale", "deployment", "web", "--replicas=3").stdout
    )
    got = kubectl("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}").stdout
    assert got == "3"
    # --current-replicas is a precondition read from the Scale.
    kubectl("scale", "deploy/web", "--current-replicas=3", "--replicas=5")
    proc = kubectl("scale", "deploy/web", "--current-replicas=3", "--replicas=6", check=False)
    assert proc.returncode != 0 and "Expected replicas to be 3, was 5" in proc.stderr
    raw = kubectl("get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale").stdout
    assert '"selector":"app=web"' in raw and '"replicas":5' in raw

    path = kubectl.write("pool.yaml", SCALED_CRD_YAML)
    kubectl("apply", "-f", path, check=False)  # the Pool may race the CRD's serving
    kubectl("wait", "--for=condition=Established", "crd/pools.example.com", "--timeout=20s")
    kubectl("apply", "-f", path)
    assert "pool.example.com/p1 scaled" in kubectl("scale", "pool", "p1", "--replicas=4").stdout
    assert kubectl("get", "pool", "p1", "-o", "jsonpath={.spec.replicas}").stdout == "4"
    # The CRD's schema still applies to writes through /scale.
    proc = kubectl("scale", "pool", "p1", "--replicas=11", check=False)
    assert proc.returncode != 0 and "spec.replicas" in proc.stderr
