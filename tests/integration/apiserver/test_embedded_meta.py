"""The ``ObjectMeta`` built-in kinds embed by value, over HTTP.

kube-apiserver marshals Go structs: ``ObjectMeta.CreationTimestamp`` is a
``metav1.Time`` struct, which encoding/json never omits (a zero one is
``null``), and a template's ``ObjectMeta`` is a struct field, always written.
So a cluster answers ``spec.template.metadata.creationTimestamp: null`` for
every Deployment, Job, StatefulSet ..., the same under a CronJob's job
template and its pod template, under a StatefulSet's volume claim templates
and an ephemeral volume's claim template, and ``metadata:
{creationTimestamp: null}`` for a template sent without metadata. A client
resending what it read, with the ``null`` or without it, changes nothing.
"""

from __future__ import annotations

import copy
import http.client
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.http import request

from pycontroller.testing import APIServer, wait_for
from pycontroller.testing.apiserver._proto.k8s_io.api.apps.v1 import generated_pb2 as apps
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.runtime import (
    generated_pb2 as runtime,
)
from pycontroller.testing.apiserver.http import protobuf

PB = "application/vnd.kubernetes.protobuf"
KUBECTL = shutil.which("kubectl")
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"
CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
CONTAINERS = [{"name": "c", "image": "nginx:1.27"}]
NULL = {"creationTimestamp": None}


def deployment(name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": CONTAINERS}},
        },
    }


def statefulset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": CONTAINERS}},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def cronjob() -> dict[str, Any]:
    # No metadata at all in either template.
    pod_spec = {"containers": CONTAINERS, "restartPolicy": "Never"}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": pod_spec}}},
        },
    }


def without_null(obj: Any) -> Any:
    """``obj`` with every ``creationTimestamp: null`` left out, as a client
    that builds its objects from scratch (or drops nulls) sends them."""
    if isinstance(obj, dict):
        return {
            k: without_null(v)
            for k, v in obj.items()
            if not (k == "creationTimestamp" and v is None)
        }
    if isinstance(obj, list):
        return [without_null(v) for v in obj]
    return obj


def as_read_from_a_cluster(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the nulls a cluster writes in its templates (a client may
    hold the object in this form whatever the server it came from)."""
    out = copy.deepcopy(obj)
    spec = out["spec"]
    if "jobTemplate" in spec:
        templates = [spec["jobTemplate"], spec["jobTemplate"]["spec"]["template"]]
    else:
        templates = [spec["template"], *spec.get("volumeClaimTemplates", [])]
    for t in templates:
        t.setdefault("metadata", {})["creationTimestamp"] = None
    return out


def create(server: APIServer, path: str, body: dict[str, Any], query: str = "") -> dict[str, Any]:
    code, obj = request(server, "POST", path + query, body)
    assert code == 201, obj
    assert isinstance(obj, dict)
    return obj


# --- where Go writes the null ------------------------------------------------------


def test_deployment_template_metadata_has_a_null_creation_timestamp(
    apiserver: APIServer,
) -> None:
    created = create(apiserver, DEPLOYMENTS, deployment())
    tmeta = created["spec"]["template"]["metadata"]
    assert tmeta == {"labels": {"app": "web"}, "creationTimestamp": None}
    _, got = request(apiserver, "GET", f"{DEPLOYMENTS}/web")
    assert got["spec"]["template"]["metadata"] == tmeta
    _, listed = request(apiserver, "GET", DEPLOYMENTS)
    assert listed["items"][0]["spec"]["template"]["metadata"] == tmeta
    # The object's own metadata carries the time the server stamped.
    assert isinstance(got["metadata"]["creationTimestamp"], str)

    # A template sent without metadata comes back with it.
    bare = deployment("bare")
    del bare["spec"]["selector"]
    bare["spec"]["selector"] = {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}
    del bare["spec"]["template"]["metadata"]
    made = create(apiserver, DEPLOYMENTS, bare)
    assert made["spec"]["template"]["metadata"] == NULL
    # So does one sent with "metadata": null (a no-op in Go's decoder).
    nulled = copy.deepcopy(bare)
    nulled["metadata"]["name"] = "nulled"
    nulled["spec"]["template"]["metadata"] = None
    assert create(apiserver, DEPLOYMENTS, nulled)["spec"]["template"]["metadata"] == NULL
    # A time sent in a template is kept.
    timed = deployment("timed")
    timed["spec"]["template"]["metadata"]["creationTimestamp"] = "2024-05-06T07:08:09Z"
    tmeta = create(apiserver, DEPLOYMENTS, timed)["spec"]["template"]["metadata"]
    assert tmeta["creationTimestamp"] == "2024-05-06T07:08:09Z"


def test_cronjob_job_template_and_its_pod_template(apiserver: APIServer) -> None:
    created = create(apiserver, CRONJOBS, cronjob())
    job_template = created["spec"]["jobTemplate"]
    assert job_template["metadata"] == NULL
    assert job_template["spec"]["template"]["metadata"] == NULL
    _, got = request(apiserver, "GET", f"{CRONJOBS}/tick")
    assert got["spec"]["jobTemplate"] == job_template

    job_spec = copy.deepcopy(cronjob()["spec"]["jobTemplate"]["spec"])
    job = create(apiserver, JOBS, {"metadata": {"name": "once"}, "spec": job_spec})
    tmeta = job["spec"]["template"]["metadata"]
    assert tmeta["creationTimestamp"] is None
    assert tmeta["labels"]["batch.kubernetes.io/job-name"] == "once"


def test_statefulset_claim_templates_as_kube_defaults_and_marshals_them(
    apiserver: APIServer,
) -> None:
    created = create(apiserver, STATEFULSETS, statefulset())
    assert created["spec"]["template"]["metadata"] == {"labels": {"app": "db"}, **NULL}
    [claim] = created["spec"]["volumeClaimTemplates"]
    assert claim["metadata"] == {"name": "data", **NULL}
    # SetObjectDefaults_StatefulSet runs SetDefaults_PersistentVolumeClaim on
    # each claim template: status.phase Pending, and the spec's volumeMode.
    assert claim["status"] == {"phase": "Pending"}
    assert claim["spec"]["volumeMode"] == "Filesystem"
    _, got = request(apiserver, "GET", f"{STATEFULSETS}/db")
    assert got["spec"]["volumeClaimTemplates"] == [claim]


def test_ephemeral_volume_claim_template_of_a_pod(apiserver: APIServer) -> None:
    claim_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": CONTAINERS,
            "volumes": [
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": claim_spec}}},
                {"name": "cache", "emptyDir": {}},
            ],
        },
    }
    created = create(apiserver, PODS, pod)
    scratch, cache = created["spec"]["volumes"][:2]  # then the token volume
    assert scratch["ephemeral"]["volumeClaimTemplate"]["metadata"] == NULL
    # Pointers Go leaves out stay out.
    assert cache == {"name": "cache", "emptyDir": {}}


# --- resending is no change --------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [(DEPLOYMENTS, deployment()), (STATEFULSETS, statefulset()), (CRONJOBS, cronjob())],
    ids=["deployment", "statefulset", "cronjob"],
)
def test_resending_with_or_without_the_null_is_no_change(
    apiserver: APIServer, path: str, body: dict[str, Any]
) -> None:
    created = create(apiserver, path, body)
    name, rv = created["metadata"]["name"], created["metadata"]["resourceVersion"]
    for sent in (created, without_null(created), as_read_from_a_cluster(created)):
        code, updated = request(apiserver, "PUT", f"{path}/{name}", sent)
        assert code == 200, updated
        # No new resourceVersion (the stored bytes did not change), no new generation.
        assert updated["metadata"]["resourceVersion"] == rv
        assert updated["metadata"]["generation"] == 1
        assert updated == created
    # An unconditional PUT of a body built from scratch, too.
    code, updated = request(apiserver, "PUT", f"{path}/{name}", body)
    assert code == 200 and updated["metadata"]["resourceVersion"] == rv, updated
    # And a merge patch that only drops the null: it comes back.
    patch = {"spec": {"template": {"metadata": {"creationTimestamp": None}}}}
    if body["kind"] == "CronJob":
        patch = {"spec": {"jobTemplate": {"metadata": {"creationTimestamp": None}}}}
    code, patched = request(
        apiserver, "PATCH", f"{path}/{name}", patch, "application/merge-patch+json"
    )
    assert code == 200 and patched == created, patched


def test_job_template_stays_immutable_and_resendable(apiserver: APIServer) -> None:
    created = create(apiserver, JOBS, {"metadata": {"name": "j"}, "spec": {"template": {
        "spec": {"containers": CONTAINERS, "restartPolicy": "Never"}}}})  # fmt: skip
    assert created["spec"]["template"]["metadata"]["creationTimestamp"] is None
    code, same = request(apiserver, "PUT", f"{JOBS}/j", without_null(created))
    assert code == 200, same
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    code, err = request(apiserver, "PUT", f"{JOBS}/j", changed)
    assert code == 422 and err["details"]["causes"][0]["field"] == "spec.template", err


# --- managedFields -----------------------------------------------------------------


def test_create_does_not_own_the_template_creation_timestamp(
    apiserver: APIServer,
) -> None:
    created = create(apiserver, DEPLOYMENTS, deployment(), "?fieldManager=kubectl-create")
    [entry] = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl-create", "Update")
    fields = entry["fieldsV1"]
    # The create's live object is the Go zero value, whose template metadata
    # has the null too: unchanged, so not owned (upstream's
    # TestDuplicatesInAssociativeLists records no f:creationTimestamp).
    assert fields["f:spec"]["f:template"]["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert "f:metadata" not in fields  # the object's own is the server's: owned by nobody
    # Resending without the null takes nothing from anyone and changes nothing.
    code, same = request(
        apiserver, "PUT", f"{DEPLOYMENTS}/web?fieldManager=other", without_null(created)
    )
    assert code == 200 and same["metadata"]["managedFields"] == [entry], same


def test_server_side_apply_twice_is_no_change(apiserver: APIServer) -> None:
    config = deployment()
    path = f"{DEPLOYMENTS}/web?fieldManager=ci&force=true"
    code, first = request(apiserver, "PATCH", path, config, "application/apply-patch+yaml")
    assert code == 201, first
    assert first["spec"]["template"]["metadata"]["creationTimestamp"] is None
    [entry] = first["metadata"]["managedFields"]
    # The applier owns what it applied, not the null it never sent.
    assert "f:creationTimestamp" not in entry["fieldsV1"]["f:spec"]["f:template"]["f:metadata"]
    code, second = request(apiserver, "PATCH", path, config, "application/apply-patch+yaml")
    assert code == 200 and second == first, second


# --- protobuf ------------------------------------------------------------------------


def _send(
    server: APIServer, method: str, path: str, body: bytes | None = None, accept: str = PB
) -> tuple[int, bytes]:
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": PB, "Accept": accept})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_protobuf_answers_decode_to_the_json_answers(apiserver: APIServer) -> None:
    # A null Time is no field on the wire; decoded, the Go struct is back,
    # and with it the null: protobuf and JSON clients read the same object.
    for path, body in ((DEPLOYMENTS, deployment()), (STATEFULSETS, statefulset()),
                       (CRONJOBS, cronjob())):  # fmt: skip
        created = create(apiserver, path, body)
        url = f"{path}/{created['metadata']['name']}"
        code, raw = _send(apiserver, "GET", url)
        assert code == 200 and raw.startswith(b"k8s\x00")
        _, as_json = request(apiserver, "GET", url)
        assert protobuf.decode(raw) == as_json


def _envelope(d: Any) -> bytes:
    unknown = runtime.Unknown(raw=d.SerializeToString(), contentEncoding="", contentType="")
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = "apps/v1", "Deployment"
    return b"k8s\x00" + unknown.SerializeToString()


def test_protobuf_client_reads_and_resends_a_json_created_deployment(
    apiserver: APIServer,
) -> None:
    # kubectl (protobuf) editing what a JSON client created: the template's
    # metadata decodes as the Go struct, zero time and all, which is what the
    # server stored, so sending it back is no change.
    created = create(apiserver, DEPLOYMENTS, deployment())
    code, raw = _send(apiserver, "GET", f"{DEPLOYMENTS}/web")
    assert code == 200
    answer = runtime.Unknown()
    answer.ParseFromString(raw[4:])
    got = apps.Deployment()
    got.ParseFromString(answer.raw)
    assert got.spec.template.HasField("metadata")
    assert got.spec.template.metadata.creationTimestamp.seconds == 0
    assert got.metadata.creationTimestamp.seconds > 0
    code, raw = _send(apiserver, "PUT", f"{DEPLOYMENTS}/web", _envelope(got),
                      accept="application/json")  # fmt: skip
    updated = json.loads(raw)
    assert code == 200, updated
    assert updated == created

    # A template sent in protobuf without metadata reads back with it.
    d = apps.Deployment()
    d.metadata.name = "pb"
    d.spec.selector.matchExpressions.add(key="x", operator="DoesNotExist")
    d.spec.template.spec.containers.add(name="c", image="nginx:1.27")
    code, raw = _send(apiserver, "POST", DEPLOYMENTS, _envelope(d), accept="application/json")
    assert code == 201, raw
    assert json.loads(raw)["spec"]["template"]["metadata"] == NULL


# --- the Deployment controller -------------------------------------------------------


def test_resent_template_starts_no_rollout() -> None:
    with APIServer(simulate=["deployments", "kubelet"]) as server:
        create(server, DEPLOYMENTS, deployment())

        def rolled_out() -> dict[str, Any] | None:
            _, d = request(server, "GET", f"{DEPLOYMENTS}/web")
            st = d.get("status") or {}
            done = st.get("observedGeneration") == 1 and st.get("updatedReplicas") == 2
            return d if done and st.get("availableReplicas") == 2 else None

        d = wait_for(rolled_out, what="rollout")
        _, rs_list = request(server, "GET", "/apis/apps/v1/namespaces/default/replicasets")
        [rs] = rs_list["items"]
        h = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["spec"]["template"]["metadata"]["creationTimestamp"] is None
        # From scratch, keeping the controller's annotation (a Deployment's
        # annotations bump its generation, as in kube).
        scratch = deployment()
        scratch["metadata"]["annotations"] = d["metadata"]["annotations"]
        for sent in (d, without_null(d), scratch):
            sent = copy.deepcopy(sent)  # unconditional: the controllers write status meanwhile
            sent["metadata"].pop("resourceVersion", None)
            code, updated = request(server, "PUT", f"{DEPLOYMENTS}/web", sent)
            assert code == 200, updated
            assert updated["metadata"]["generation"] == 1
        _, rs_list = request(server, "GET", "/apis/apps/v1/namespaces/default/replicasets")
        assert [r["metadata"]["labels"]["pod-template-hash"] for r in rs_list["items"]] == [h]
        _, d = request(server, "GET", f"{DEPLOYMENTS}/web")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"


# --- kubectl ---------------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_create_and_get(apiserver: APIServer, tmp_path: Path) -> None:
    assert KUBECTL is not None
    kubeconfig = str(apiserver.write_kubeconfig(tmp_path / "kubeconfig"))

    def kubectl(*args: str) -> str:
        assert KUBECTL is not None
        proc = subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, *args],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    manifest = tmp_path / "web.json"
    manifest.write_text(json.dumps(deployment()))
    assert "created" in kubectl("apply", "-f", str(manifest))
    assert "unchanged" in kubectl("apply", "-f", str(manifest))
    web = json.loads(kubectl("get", "deployment", "web", "-o", "json"))
    assert web["spec"]["template"]["metadata"]["creationTimestamp"] is None

    manifest = tmp_path / "sts.json"
    manifest.write_text(json.dumps(statefulset()))
    assert "created" in kubectl("apply", "-f", str(manifest))
    # volumeClaimTemplates is a list without a merge key: client-side apply
    # sends the manifest's list again (as against a cluster, where the
    # defaulted claim differs from the manifest's too) and the server
    # defaults it back to what it stored: no new generation.
    kubectl("apply", "-f", str(manifest))
    sts = json.loads(kubectl("get", "statefulset", "db", "-o", "json"))
    assert sts["metadata"]["generation"] == 1
    assert sts["spec"]["template"]["metadata"]["creationTimestamp"] is None
    [claim] = sts["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["creationTimestamp"] is None and claim["status"] == {
        "phase": "Pending"
    }
    assert "serverside-applied" in kubectl("apply", "--server-side", "--force-conflicts",
                                           "-f", str(manifest))  # fmt: skip
    again = json.loads(kubectl("get", "statefulset", "db", "-o", "json"))
    assert again["metadata"]["generation"] == 1

    kubectl("create", "deployment", "x", "--image=nginx:1.27")
    yaml_out = kubectl("get", "deployment", "x", "-o", "yaml")
    template = yaml_out[yaml_out.index("  template:") :]
    assert "      creationTimestamp: null" in template
    # kubectl edit's round trip: what it read, sent back unchanged.
    d = json.loads(kubectl("get", "deployment", "x", "-o", "json"))
    (tmp_path / "d.json").write_text(json.dumps(without_null(d)))
    kubectl("replace", "-f", str(tmp_path / "d.json"))
    after = json.loads(kubectl("get", "deployment", "x", "-o", "json"))
    assert after["metadata"]["resourceVersion"] == d["metadata"]["resourceVersion"]
