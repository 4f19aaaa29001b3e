"""Protobuf bodies (``application/vnd.kubernetes.protobuf``) for built-in kinds
(issue 10 point 4).

- Round trips: kube's JSON of each kind -> protobuf -> the same JSON, and the
  Go-type rules the conversion follows (pointer zeros kept, ``omitempty``
  zeros dropped, non-pointer structs always present).
- Over HTTP: bodies built with the generated classes (not with
  ``protobuf.encode``) are stored and read back as JSON; answers in protobuf
  decode with the generated classes; Accept negotiation; errors.
- The real ``kubectl``: its typed clients send and accept protobuf
  (``create namespace|configmap|secret generic|deployment|job``).
"""

from __future__ import annotations

import base64
import copy
import http.client
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.kubectl import KUBECTL, Kubectl

from pycontroller.testing import APIServer
from pycontroller.testing.apiserver._proto.k8s_io.api.apps.v1 import generated_pb2 as apps
from pycontroller.testing.apiserver._proto.k8s_io.api.core.v1 import generated_pb2 as core
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.runtime import (
    generated_pb2 as runtime,
)
from pycontroller.testing.apiserver.http import protobuf

PB = "application/vnd.kubernetes.protobuf"
CM = "/api/v1/namespaces/default/configmaps"
REPO = Path(__file__).resolve().parents[3]
T = "2024-05-06T07:08:09Z"

# --- generated code ------------------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools is not installed"
)
def test_generated_modules_match_hack_proto() -> None:
    # The checked-in _proto modules are what hack/gen-proto.py compiles from
    # the vendored .proto files (descriptors compared, not protoc's version).
    proc = subprocess.run(
        [sys.executable, str(REPO / "hack" / "gen-proto.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


# --- round trips ---------------------------------------------------------------

META = {"name": "x", "namespace": "default", "uid": "0b7c6f5e-1", "resourceVersion": "7",
        "creationTimestamp": T, "labels": {"app": "x"}, "annotations": {"a": "b"}}  # fmt: skip
POD_SPEC = {
    "containers": [{
        "name": "c", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 0, "name": "z"}],
        "env": [{"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "1"}},
        "readinessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
                           "periodSeconds": 10, "timeoutSeconds": 1},
        "livenessProbe": {"tcpSocket": {"port": 80}, "initialDelaySeconds": 5},
        "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": True}],
        "securityContext": {"runAsNonRoot": False, "runAsUser": 0},
    }],
    "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}},
                {"name": "e", "emptyDir": {}}],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
    "nodeSelector": {"disk": "ssd"},
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    "securityContext": {},
}  # fmt: skip
ROUND_TRIPS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": META | {"namespace": None},
     "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": META, "data": {"k": "v", "e": ""},
     "binaryData": {"b": base64.b64encode(b"\x00\xff").decode()}, "immutable": False},
    {"apiVersion": "v1", "kind": "Secret", "metadata": META | {
        "managedFields": [{"manager": "kubectl-create", "operation": "Update",
                           "apiVersion": "v1", "time": T, "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {".": {}, "f:user": {}}}}]},
     "data": {"user": "YWRtaW4="}, "type": "Opaque"},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": META | {
        "generation": 3, "ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u",
             "controller": False}]},
     "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "x"}},
              "template": {"metadata": {"creationTimestamp": None, "labels": {"app": "x"}},
                           "spec": POD_SPEC},
              "strategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
              "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
     "status": {"observedGeneration": 3, "replicas": 2, "conditions": [
         {"type": "Available", "status": "True", "lastUpdateTime": T,
          "lastTransitionTime": T, "reason": "MinimumReplicasAvailable", "message": "m"}]}},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": META,
     "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6,
              "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
              "manualSelector": False, "suspend": False,
              "template": {"metadata": {"creationTimestamp": None},
                           "spec": POD_SPEC | {"restartPolicy": "Never"}}},
     "status": {"startTime": T, "active": 1, "ready": 0}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": META | {
        "deletionTimestamp": T, "deletionGracePeriodSeconds": 0, "finalizers": ["f"]},
     "spec": POD_SPEC | {"nodeName": "node-1"},
     "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                "startTime": T, "conditions": [
                    {"type": "Ready", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": T}],
                "containerStatuses": [
                    {"name": "c", "ready": False, "restartCount": 0, "image": "nginx:1.27",
                     "imageID": "", "started": True,
                     "state": {"running": {"startedAt": T}}, "lastState": {}}]}},
    {"apiVersion": "v1", "kind": "Service", "metadata": META,
     "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
              "selector": {"app": "x"}, "sessionAffinity": "None",
              "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
                        {"name": "n", "port": 81, "protocol": "TCP", "targetPort": "named"}]},
     "status": {"loadBalancer": {}}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": META,
     "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
              "renewTime": "2024-05-06T07:08:09.123456Z", "leaseTransitions": 0}},
    {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": META,
     "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": 2},
    {"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "9"},
     "items": [{"metadata": META, "data": {"k": "v"}}]},
]  # fmt: skip


@pytest.mark.parametrize("obj", ROUND_TRIPS, ids=[o["kind"] for o in ROUND_TRIPS])
def test_round_trip(obj: dict[str, Any]) -> None:
    obj = json.loads(json.dumps(obj))
    if obj["metadata"].get("namespace", "") is None:
        del obj["metadata"]["namespace"]
    body = protobuf.encode(obj)
    assert body.startswith(b"k8s\x00")
    assert protobuf.decode(body) == obj


def test_decode_follows_the_go_types() -> None:
    # What a Go client writes: every non-pointer field (zero or not), pointer
    # fields only when set.
    spec = apps.DeploymentSpec(replicas=0, minReadySeconds=0, paused=False)
    spec.template.metadata.name = ""
    spec.template.spec.containers.add(name="c", image="i").ports.add(containerPort=0)
    spec.strategy.SetInParent()
    out = protobuf.to_json(spec)
    assert out == {
        "replicas": 0,  # *int32: an explicit zero
        # minReadySeconds, paused: omitempty non-pointers, zero dropped
        "template": {"metadata": {"creationTimestamp": None},  # zero metav1.Time: null
                     "spec": {"containers": [{"name": "c", "image": "i",
                                              "ports": [{"containerPort": 0}],
                                              "resources": {}}]}},
        "strategy": {},  # a non-pointer struct is always there
    }  # fmt: skip
    vol = core.Volume(name="v")
    # VolumeSource is inlined in Volume's JSON, LocalObjectReference in ConfigMapVolumeSource's.
    vol.volumeSource.configMap.localObjectReference.name = "cm"
    assert protobuf.to_json(vol) == {"name": "v", "configMap": {"name": "cm"}}


def test_special_types() -> None:
    port = core.ServicePort(port=80)
    port.targetPort.type, port.targetPort.strVal = 1, "http"
    assert protobuf.to_json(port)["targetPort"] == "http"
    back: Any = protobuf.from_json({"port": 80, "targetPort": 8080}, core.ServicePort)
    assert (back.targetPort.type, back.targetPort.intVal) == (0, 8080)
    rr: Any = protobuf.from_json({"limits": {"cpu": 2, "memory": "1Gi"}}, core.ResourceRequirements)
    assert rr.limits["cpu"].string == "2" and rr.limits["memory"].string == "1Gi"
    secret: Any = protobuf.from_json({"data": {"k": "AP8="}}, core.Secret)
    assert secret.data["k"] == b"\x00\xff"
    with pytest.raises(protobuf.ProtobufError, match="spec.replicas: expected an integer"):
        protobuf.from_json({"spec": {"replicas": "abc"}}, apps.Deployment)


@pytest.mark.parametrize(
    "ns,text",
    [(0, "0s"), (3600 * 10**9, "1h0m0s"), (90 * 10**9, "1m30s"), (1_500_000_000, "1.5s"),
     (1_500_000, "1.5ms"), (2_000, "2µs"), (7, "7ns"), (-(10**9), "-1s")],
)  # fmt: skip
def test_duration_is_gos(ns: int, text: str) -> None:
    assert protobuf._format_duration(ns) == text
    assert protobuf._parse_duration(text) == ns


@pytest.mark.parametrize(
    "accept,expected",
    [
        (f"{PB},application/json", True),
        (f"{PB}", True),
        (f"application/json, {PB}", False),
        (f"application/json;q=0.5, {PB}", True),
        ("*/*", False),
        ("", False),
        (f"{PB};as=Table;v=v1;g=meta.k8s.io,application/json", False),
    ],
)
def test_accept_negotiation(accept: str, expected: bool) -> None:
    assert protobuf.prefers_protobuf(accept) is expected


# --- over HTTP -----------------------------------------------------------------


def send(
    server: APIServer,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    ctype: str = PB,
    accept: str = "application/json",
) -> tuple[int, str, bytes]:
    """One request: ``(status, response Content-Type, raw body)``."""
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": ctype, "Accept": accept})
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


def envelope(api_version: str, kind: str, msg: Any) -> bytes:
    """A protobuf body as client-go writes it, from the generated classes."""
    unknown = runtime.Unknown(raw=msg.SerializeToString(), contentEncoding="", contentType="")
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    return b"k8s\x00" + unknown.SerializeToString()


def open_envelope(body: bytes) -> Any:
    assert body[:4] == b"k8s\x00"
    unknown = runtime.Unknown()
    unknown.ParseFromString(body[4:])
    return unknown


def configmap_pb(name: str) -> bytes:
    cm = core.ConfigMap()
    cm.metadata.name, cm.metadata.namespace = name, ""
    cm.metadata.creationTimestamp.SetInParent()  # a zero Time, as Go writes it
    cm.data["greeting"] = "hello"
    cm.binaryData["raw"] = b"\x00\x01\xfe"
    return envelope("v1", "ConfigMap", cm)


def test_protobuf_configmap_is_stored_and_read_as_json(apiserver: APIServer) -> None:
    code, ctype, body = send(apiserver, "POST", CM, configmap_pb("pb"))
    assert code == 201 and ctype == "application/json", body
    created = json.loads(body)
    assert created["data"] == {"greeting": "hello"}
    code, _, body = send(apiserver, "GET", f"{CM}/pb", ctype="application/json")
    got = json.loads(body)
    assert code == 200 and got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"
    assert got["data"] == {"greeting": "hello"}
    assert got["binaryData"] == {"raw": base64.b64encode(b"\x00\x01\xfe").decode()}
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert "generateName" not in got["metadata"]  # Go's empty strings are not fields


def test_protobuf_answers_decode_with_the_generated_classes(apiserver: APIServer) -> None:
    code, ctype, body = send(apiserver, "POST", CM, configmap_pb("pb"), accept=f"{PB}, */*")
    assert code == 201 and ctype == PB
    unknown = open_envelope(body)
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == ("v1", "ConfigMap")
    cm = core.ConfigMap()
    cm.ParseFromString(unknown.raw)
    assert cm.metadata.name == "pb" and cm.metadata.namespace == "default"
    assert cm.metadata.uid and int(cm.metadata.resourceVersion) > 0
    assert cm.metadata.creationTimestamp.seconds > 0
    assert dict(cm.data) == {"greeting": "hello"} and cm.binaryData["raw"] == b"\x00\x01\xfe"

    code, ctype, body = send(apiserver, "GET", f"{CM}/pb", accept=f"{PB},application/json")
    assert code == 200 and ctype == PB
    again = core.ConfigMap()
    again.ParseFromString(open_envelope(body).raw)
    assert again == cm

    code, ctype, body = send(apiserver, "GET", CM, accept=f"{PB},application/json")
    unknown = open_envelope(body)
    assert code == 200 and ctype == PB and unknown.typeMeta.kind == "ConfigMapList"
    listed = core.ConfigMapList()
    listed.ParseFromString(unknown.raw)
    assert [i.metadata.name for i in listed.items] == ["pb"] and listed.metadata.resourceVersion

    # JSON first (or only) in Accept: JSON.
    code, ctype, body = send(apiserver, "GET", f"{CM}/pb", accept=f"application/json, {PB}")
    assert ctype == "application/json" and json.loads(body)["metadata"]["name"] == "pb"


def test_protobuf_deployment_keeps_explicit_zero_and_defaults(apiserver: APIServer) -> None:
    d = apps.Deployment()
    d.metadata.name = "zero"
    d.spec.replicas = 0
    d.spec.selector.matchLabels["app"] = "zero"
    d.spec.template.metadata.labels["app"] = "zero"
    d.spec.template.spec.containers.add(name="c", image="nginx")
    path = "/apis/apps/v1/namespaces/default/deployments"
    code, _, body = send(apiserver, "POST", path, envelope("apps/v1", "Deployment", d))
    assert code == 201, body
    got = json.loads(body)
    assert got["spec"]["replicas"] == 0
    assert got["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted as for JSON
    assert got["metadata"]["generation"] == 1


def test_protobuf_errors(apiserver: APIServer) -> None:
    code, _, body = send(apiserver, "POST", CM, b"not protobuf")
    assert code == 400 and "protobuf" in json.loads(body)["message"]
    code, _, body = send(apiserver, "POST", CM, b"k8s\x00\xff\xff")
    assert code == 400 and json.loads(body)["reason"] == "BadRequest"
    # No message for this kind (custom resources are JSON-only in kube too).
    body_pb = envelope("example.com/v1", "Widget", core.ConfigMap())
    code, _, body = send(apiserver, "POST", CM, body_pb)
    assert code == 415 and json.loads(body)["reason"] == "UnsupportedMediaType"
    # Validation runs on decoded protobuf as on JSON.
    bad = core.ConfigMap()
    bad.metadata.name = "Not_A_Name"
    code, _, body = send(apiserver, "POST", CM, envelope("v1", "ConfigMap", bad))
    assert code == 422, body


def test_tables_and_custom_resources_stay_json(apiserver: APIServer) -> None:
    send(apiserver, "POST", CM, configmap_pb("pb"))
    accept = f"application/json;as=Table;v=v1;g=meta.k8s.io,{PB}"
    code, ctype, body = send(apiserver, "GET", CM, accept=accept)
    assert code == 200 and ctype.startswith("application/json")
    assert json.loads(body)["kind"] == "Table"


# --- kubectl -------------------------------------------------------------------

KUBECTL_CREATES = [
    (["create", "namespace", "team"], "/api/v1/namespaces/team"),
    (["create", "configmap", "settings", "--from-literal=mode=fast"],
     "/api/v1/namespaces/default/configmaps/settings"),
    (["create", "secret", "generic", "creds", "--from-literal=user=admin"],
     "/api/v1/namespaces/default/secrets/creds"),
    (["create", "deployment", "web", "--image=nginx:1.27", "--replicas=0"],
     "/apis/apps/v1/namespaces/default/deployments/web"),
    (["create", "job", "once", "--image=busybox"],
     "/apis/batch/v1/namespaces/default/jobs/once"),
]  # fmt: skip


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_creates_in_protobuf(apiserver: APIServer, tmp_path: Path) -> None:
    assert KUBECTL is not None
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    got: dict[str, Any] = {}
    for args, path in KUBECTL_CREATES:
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(kubeconfig), *args, "-v=8"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "created" in proc.stdout
        # The typed client sent protobuf and was answered in protobuf.
        post = proc.stderr[proc.stderr.index("POST ") :]
        assert re.search(rf"Content-Type: {re.escape(PB)}\n", post)
        response = post[post.index("Response Status: 201") :]
        assert re.search(rf"Content-Type: {re.escape(PB)}\n", response)
        code, _, body = send(apiserver, "GET", path, ctype="application/json")
        assert code == 200
        got[args[1]] = json.loads(body)
    assert got["namespace"]["status"]["phase"] == "Active"
    assert got["configmap"]["data"] == {"mode": "fast"}
    assert got["secret"]["data"] == {"user": base64.b64encode(b"admin").decode()}
    assert got["secret"]["type"] == "Opaque"
    deploy = got["deployment"]
    assert deploy["spec"]["replicas"] == 0  # the *int32 zero survives protobuf
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    job = got["job"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]
    for obj in got.values():
        fields = obj["metadata"]["managedFields"]
        assert [(m["manager"], m["operation"]) for m in fields] == [("kubectl-create", "Update")]

    # The same objects as kubectl's JSON path would store them.
    as_json = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "create", "deployment", "web2",
         "--image=nginx:1.27", "--replicas=0", "--dry-run=client", "-o", "json"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    code, _, body = send(
        apiserver,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        as_json.encode(),
        ctype="application/json",
    )
    assert code == 201
    via_json = json.loads(body)
    for d in (via_json, deploy):
        for k in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields"):
            d["metadata"].pop(k)
        d["metadata"]["labels"] = {}
        d["spec"]["selector"] = d["spec"]["template"]["metadata"]["labels"] = {}
        d["spec"]["template"]["spec"]["containers"][0]["name"] = ""
    assert via_json == copy.deepcopy(deploy)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_reads_in_protobuf(apiserver: APIServer, tmp_path: Path) -> None:
    # describe, auth can-i: typed clients reading and posting in protobuf.
    kubectl = Kubectl(apiserver, tmp_path)
    kubectl("create", "deployment", "web", "--image=nginx:1.27")
    out = kubectl("describe", "deployment", "web", "-v=8")
    assert "nginx:1.27" in out.stdout and "RollingUpdate" in out.stdout
    assert f"Content-Type: {PB}" in out.stderr
    assert kubectl("auth", "can-i", "create", "deployments").stdout.strip() == "yes"
