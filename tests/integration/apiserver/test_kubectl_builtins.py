"""The real ``kubectl`` against the built-in kinds (issue 10 points 2, 3, 5):
``api-resources``, ``explain`` from the pinned OpenAPI, imperative ``create``
of the new kinds, ``get`` with their printer columns, ``auth can-i`` and
``auth whoami``, and ``delete ns --wait=false`` leaving a Terminating
namespace while content with a finalizer remains.

kubectl's typed clients (``create job``, ``auth can-i``, ``auth whoami``)
send protobuf bodies (issue 10 point 4, test_protobuf.py); those commands are
run in their JSON form too (``create ... --dry-run=client -o json | kubectl
create -f -``, the reviews posted with ``kubectl create -f``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.kubectl import KUBECTL, Kubectl

from pycontroller.testing import APIServer, wait_for

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.fixture
def kubectl(apiserver: APIServer, tmp_path: Path) -> Kubectl:
    return Kubectl(apiserver, tmp_path)


# The imperative creates of the issue, as kubectl generates them.
CREATES = [
    ("job", ["create", "job", "hello", "--image=busybox"]),
    ("cronjob", ["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *"]),
    ("ingress", ["create", "ingress", "web", "--rule=example.com/=svc:80"]),
    ("pdb", ["create", "pdb", "web", "--selector=app=web", "--min-available=1"]),
    ("serviceaccount", ["create", "serviceaccount", "ctrl"]),
    ("secret", ["create", "secret", "generic", "creds", "--from-literal=user=admin"]),
    ("quota", ["create", "quota", "small", "--hard=pods=10,cpu=2"]),
    ("priorityclass", ["create", "priorityclass", "high", "--value=1000"]),
    ("role", ["create", "role", "reader", "--verb=get,list", "--resource=pods"]),
    ("rolebinding", ["create", "rolebinding", "reader", "--role=reader",
                     "--serviceaccount=default:ctrl"]),
    ("deployment", ["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"]),
]  # fmt: skip


def test_api_resources_lists_every_new_kind(kubectl: Kubectl) -> None:
    out = kubectl.run("api-resources", "-o", "wide").stdout
    for name, short in (
        ("replicasets", "rs"), ("statefulsets", "sts"), ("daemonsets", "ds"),
        ("cronjobs", "cj"), ("poddisruptionbudgets", "pdb"), ("horizontalpodautoscalers", "hpa"),
        ("storageclasses", "sc"), ("persistentvolumeclaims", "pvc"), ("ingresses", "ing"),
        ("networkpolicies", "netpol"), ("resourcequotas", "quota"), ("nodes", "no"),
    ):  # fmt: skip
        line = next((ln for ln in out.splitlines() if ln.startswith(name + " ")), "")
        assert f" {short} " in line, (name, line)
    assert "selfsubjectaccessreviews" in out and "tokenreviews" in out
    assert "endpointslices" in out and "apiservices" in out


def test_explain_reads_the_pinned_definitions(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "deployment.spec.template.spec.containers").stdout
    assert "KIND:       Deployment" in out and "FIELD: containers <[]Container>" in out
    assert "image\t<string>" in out and "name\t<string> -required-" in out
    out = kubectl.run("explain", "cronjob.spec").stdout
    assert "schedule\t<string> -required-" in out and "jobTemplate\t<JobTemplateSpec>" in out
    out = kubectl.run("explain", "pdb").stdout
    assert "GROUP:      policy" in out
    out = kubectl.run("explain", "svc.spec.ports.targetPort").stdout
    assert "<IntOrString>" in out


@pytest.mark.parametrize("kind,args", CREATES, ids=[c[0] for c in CREATES])
def test_imperative_create_as_json(kubectl: Kubectl, kind: str, args: list[str]) -> None:
    manifest = kubectl.run(*args, "--dry-run=client", "-o", "json").stdout
    out = kubectl.run("create", "-f", "-", "-o", "json", stdin=manifest).stdout
    obj = json.loads(out)
    assert obj["metadata"]["uid"] and obj["metadata"]["name"] == args[2 if kind != "secret"
                                                                      else 3]  # fmt: skip
    if kind == "job":
        assert obj["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]
    if kind == "secret":
        assert obj["data"] == {"user": "YWRtaW4="}


@pytest.mark.parametrize("kind,args", CREATES, ids=[c[0] for c in CREATES])
def test_imperative_create(kubectl: Kubectl, kind: str, args: list[str]) -> None:
    proc = kubectl.run(*args, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "created" in proc.stdout


def test_get_with_printer_columns(kubectl: Kubectl) -> None:
    for args in (CREATES[0][1], CREATES[1][1]):
        manifest = kubectl.run(*args, "--dry-run=client", "-o", "json").stdout
        kubectl.run("create", "-f", "-", stdin=manifest)
    rs = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "n", "image": "nginx"}]}}},
    }  # fmt: skip
    kubectl.run("create", "-f", "-", stdin=json.dumps(rs))
    out = kubectl.run("get", "rs").stdout.splitlines()
    assert out[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert out[1].split()[:4] == ["web-1", "2", "0", "0"]
    out = kubectl.run("get", "jobs").stdout.splitlines()
    assert out[0].split()[:4] == ["NAME", "STATUS", "COMPLETIONS", "DURATION"]
    assert out[1].split()[:3] == ["hello", "Running", "0/1"]
    out = kubectl.run("get", "cj").stdout.splitlines()
    assert out[0].split()[:3] == ["NAME", "SCHEDULE", "TIMEZONE"]
    assert "*/5 * * * *" in out[1]
    out = kubectl.run("get", "all").stdout
    assert "replicaset.apps/web-1" in out and "cronjob.batch/tick" in out


def test_auth_can_i_and_whoami(kubectl: Kubectl) -> None:
    # The JSON form of what `auth can-i` and `auth whoami` send.
    ssar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "resource": "pods",
                                            "namespace": "default"}}}  # fmt: skip
    # --validate=false: kubectl validates kinds without a PATCH operation
    # (create-only reviews) client-side, from /openapi/v2 in protobuf only.
    create = ("create", "--validate=false", "-o", "json", "-f", "-")
    out = json.loads(kubectl.run(*create, stdin=json.dumps(ssar)).stdout)
    assert out["status"]["allowed"] is True
    ssr = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    out = json.loads(kubectl.run(*create, stdin=json.dumps(ssr)).stdout)
    assert out["status"]["userInfo"]["username"] == "kubernetes-admin"
    proc = kubectl.run("auth", "can-i", "list", "pods", check=False)
    assert proc.stdout.strip() == "yes", proc.stderr
    proc = kubectl.run("auth", "whoami", check=False)
    assert proc.returncode == 0 and "kubernetes-admin" in proc.stdout


def test_delete_namespace_shows_terminating_while_content_remains(
    kubectl: Kubectl, apiserver: APIServer
) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}
    kubectl.run("create", "-f", "-", stdin=json.dumps(ns))
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "kept", "namespace": "doomed",
                       "finalizers": ["example.com/hold"]}}  # fmt: skip
    kubectl.run("create", "-f", "-", stdin=json.dumps(cm))
    kubectl.run("delete", "ns", "doomed", "--wait=false")
    out = kubectl.run("get", "ns", "doomed").stdout.splitlines()
    assert out[1].split()[:2] == ["doomed", "Terminating"]
    time.sleep(0.3)  # the namespace deleter has run; the held object keeps it
    out = kubectl.run("get", "ns", "doomed", "-o", "json").stdout
    status = json.loads(out)["status"]
    assert status["phase"] == "Terminating"
    remaining = next(c for c in status["conditions"] if c["type"] == "NamespaceContentRemaining")
    assert remaining["status"] == "True"
    proc = kubectl.run("create", "configmap", "late", "-n", "doomed", "--dry-run=client",
                       "-o", "json")  # fmt: skip
    proc = kubectl.run("create", "-f", "-", stdin=proc.stdout, check=False)
    assert proc.returncode != 0
    assert "because it is being terminated" in proc.stderr
    kubectl.run("patch", "configmap", "kept", "-n", "doomed", "--type=merge",
                "-p", '{"metadata":{"finalizers":null}}')  # fmt: skip
    wait_for(lambda: kubectl.run("get", "ns", "doomed", check=False).returncode != 0, timeout=10)
    proc = kubectl.run("get", "ns", "doomed", check=False)
    assert 'namespaces "doomed" not found' in proc.stderr
