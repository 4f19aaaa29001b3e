"""Every kind kube-apiserver serves without controllers, over HTTP (issue 10
points 2, 3 and 5): discovery from the kinds table, CRUD of each kind, the
defaults and validation kube's strategies apply, scale subresources, Table
columns, and the namespace lifecycle."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.http import call, request

from pycontroller.testing import APIServer, wait_for
from pycontroller.testing.apiserver.schema import definitions
from pycontroller.testing.apiserver.schema.kinds import BUILTIN_KINDS

POD_SPEC = {"containers": [{"name": "c", "image": "busybox:1.36"}]}
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "a"}}

# A minimal valid object of every non-virtual kind of the table.
SAMPLES: dict[str, dict[str, Any]] = {
    "Namespace": {},
    "Pod": {"spec": POD_SPEC},
    "Service": {"spec": {"ports": [{"port": 80}]}},
    "ConfigMap": {"data": {"a": "b"}},
    "Secret": {"stringData": {"a": "b"}},
    "ServiceAccount": {},
    "Event": {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}},
    "Node": {},
    "ReplicationController": {"spec": {"selector": {"app": "a"}, "template": TEMPLATE}},
    "Endpoints": {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
    "PersistentVolume": {
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp/pv"}}
    },
    "PersistentVolumeClaim": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    "LimitRange": {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}},
    "ResourceQuota": {"spec": {"hard": {"pods": "10"}}},
    "PodTemplate": {"template": TEMPLATE},
    "Deployment": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "ReplicaSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "StatefulSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE, "serviceName": "s"}},
    "DaemonSet": {"spec": {"selector": SELECTOR, "template": TEMPLATE}},
    "ControllerRevision": {"revision": 1, "data": {}},
    "Job": {"spec": {"template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}},
    "CronJob": {
        "spec": {"schedule": "*/1 * * * *",
                 "jobTemplate": {"spec": {"template": {"spec": {**POD_SPEC,
                                                               "restartPolicy": "Never"}}}}}
    },
    "Ingress": {"spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}},
    "IngressClass": {"spec": {"controller": "example.com/ingress"}},
    "NetworkPolicy": {"spec": {"podSelector": {}}},
    "PodDisruptionBudget": {"spec": {"minAvailable": 1, "selector": SELECTOR}},
    "EndpointSlice": {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]},
    "HorizontalPodAutoscaler": {
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                 "maxReplicas": 3}
    },
    "StorageClass": {"provisioner": "example.com/p"},
    "CSIDriver": {"spec": {}},
    "CSINode": {"spec": {"drivers": []}},
    "CSIStorageCapacity": {"storageClassName": "sc"},
    "VolumeAttachment": {
        "spec": {"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}
    },
    "PriorityClass": {"value": 1000},
    "RuntimeClass": {"handler": "runc"},
    "Lease": {"spec": {"holderIdentity": "me"}},
    "CertificateSigningRequest": {
        "spec": {"request": "", "signerName": "example.com/s", "usages": ["client auth"]}
    },
    "MutatingWebhookConfiguration": {"webhooks": []},
    "ValidatingWebhookConfiguration": {"webhooks": []},
    "ValidatingAdmissionPolicy": {"spec": {
        "matchConstraints": {"resourceRules": [{
            "apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["widgets"]}]},
        "validations": [{"expression": "true"}]}},
    "ValidatingAdmissionPolicyBinding": {
        "spec": {"policyName": "p", "validationActions": ["Deny"]}},
    "FlowSchema": {"spec": {"priorityLevelConfiguration": {"name": "global-default"}}},
    "PriorityLevelConfiguration": {"spec": {"type": "Exempt", "exempt": {}}},
    "CustomResourceDefinition": {},  # exercised in test_crd.py
    "APIService": {"spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1,
                            "versionPriority": 1}},
    "Role": {"rules": []},
    "ClusterRole": {"rules": []},
    "RoleBinding": {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                "name": "r"}},
    "ClusterRoleBinding": {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                       "kind": "ClusterRole", "name": "r"}},
}  # fmt: skip
NAMES = {"APIService": "v1.example.com", "CSIDriver": "csi.example.com"}


def _path(spec: Any, ns: str = "default") -> str:
    base = f"/apis/{spec.group_version}" if spec.group else f"/api/{spec.group_version}"
    return f"{base}/namespaces/{ns}/{spec.plural}" if spec.namespaced else f"{base}/{spec.plural}"


def test_every_kind_of_the_table_has_a_pinned_definition() -> None:
    for spec in BUILTIN_KINDS:
        assert definitions.by_gvk(spec.group, spec.version, spec.kind), spec.kind


def test_discovery_lists_scope_short_names_categories_and_subresources(
    apiserver: APIServer,
) -> None:
    _, doc = request(apiserver, "GET", "/apis/apps/v1")
    by_name = {r["name"]: r for r in doc["resources"]}
    rs = by_name["replicasets"]
    assert rs["shortNames"] == ["rs"] and rs["categories"] == ["all"] and rs["namespaced"]
    assert by_name["replicasets/scale"]["kind"] == "Scale"
    assert by_name["statefulsets/scale"]["group"] == "autoscaling"
    assert "daemonsets/scale" not in by_name and "daemonsets/status" in by_name
    _, core = request(apiserver, "GET", "/api/v1")
    names = {r["name"]: r for r in core["resources"]}
    assert not names["nodes"]["namespaced"] and names["persistentvolumes"]["shortNames"] == ["pv"]
    assert names["replicationcontrollers/scale"]["verbs"] == ["get", "patch", "update"]
    assert names["namespaces/finalize"]["verbs"] == ["update"]
    assert names["serviceaccounts/token"]["kind"] == "TokenRequest"
    _, authz = request(apiserver, "GET", "/apis/authorization.k8s.io/v1")
    ssar = next(r for r in authz["resources"] if r["name"] == "selfsubjectaccessreviews")
    assert ssar["verbs"] == ["create"] and not ssar["namespaced"]
    _, groups = request(apiserver, "GET", "/apis")
    served = {g["name"] for g in groups["groups"]}
    assert {"batch", "policy", "networking.k8s.io", "discovery.k8s.io", "autoscaling",
            "storage.k8s.io", "apiregistration.k8s.io", "authorization.k8s.io",
            "authentication.k8s.io", "scheduling.k8s.io"} <= served  # fmt: skip


@pytest.mark.parametrize(
    "spec", [s for s in BUILTIN_KINDS if s.verbs != ("create",)], ids=lambda s: s.plural
)
def test_every_kind_is_served(apiserver: APIServer, spec: Any) -> None:
    if spec.kind == "CustomResourceDefinition" or spec.stored_as:
        pytest.skip("covered by test_crd.py / the events tests")
    name = NAMES.get(spec.kind, f"x-{spec.kind.lower()}")
    body = {"apiVersion": spec.group_version, "kind": spec.kind, "metadata": {"name": name},
            **copy.deepcopy(SAMPLES[spec.kind])}  # fmt: skip
    code, created = request(apiserver, "POST", _path(spec), body)
    assert code == 201, created
    assert created["kind"] == spec.kind and created["metadata"]["uid"]
    code, got = request(apiserver, "GET", f"{_path(spec)}/{name}")
    assert code == 200 and got["metadata"]["name"] == name
    code, listed = request(apiserver, "GET", _path(spec))
    assert code == 200 and listed["kind"] == f"{spec.kind}List"
    assert name in [i["metadata"]["name"] for i in listed["items"]]
    code, _ = request(apiserver, "DELETE", f"{_path(spec)}/{name}")
    assert code == 200


def test_workload_defaults_follow_the_definitions(apiserver: APIServer) -> None:
    code, job = request(apiserver, "POST", "/apis/batch/v1/namespaces/default/jobs", {
        "metadata": {"name": "j"}, "spec": copy.deepcopy(SAMPLES["Job"]["spec"])})  # fmt: skip
    assert code == 201, job
    uid, spec = job["metadata"]["uid"], job["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["batch.kubernetes.io/job-name"] == "j" and labels["controller-uid"] == uid
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    container = spec["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert job["metadata"]["generation"] == 1
    _, cj = request(apiserver, "POST", "/apis/batch/v1/namespaces/default/cronjobs", {
        "metadata": {"name": "cj"}, "spec": copy.deepcopy(SAMPLES["CronJob"]["spec"])})  # fmt: skip
    assert cj["spec"]["concurrencyPolicy"] == "Allow"
    assert cj["spec"]["successfulJobsHistoryLimit"] == 3
    tmpl = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert tmpl["schedulerName"] == "default-scheduler"
    sts_body = {"metadata": {"name": "s"}, **copy.deepcopy(SAMPLES["StatefulSet"])}
    _, sts = request(apiserver, "POST", "/apis/apps/v1/namespaces/default/statefulsets", sts_body)
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                             "rollingUpdate": {"partition": 0}}  # fmt: skip
    _, pvc = request(apiserver, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", {
        "metadata": {"name": "c"}, **SAMPLES["PersistentVolumeClaim"]})  # fmt: skip
    assert pvc["spec"]["volumeMode"] == "Filesystem" and pvc["status"]["phase"] == "Pending"
    _, np = request(
        apiserver,
        "POST",
        "/apis/networking.k8s.io/v1/namespaces/default/" "networkpolicies",
        {"metadata": {"name": "n"}, **SAMPLES["NetworkPolicy"]},
    )
    assert np["spec"]["policyTypes"] == ["Ingress"]


def test_scale_subresource_of_replicasets_statefulsets_and_rcs(apiserver: APIServer) -> None:
    for path, kind in (
        ("/apis/apps/v1/namespaces/default/replicasets", "ReplicaSet"),
        ("/apis/apps/v1/namespaces/default/statefulsets", "StatefulSet"),
        ("/api/v1/namespaces/default/replicationcontrollers", "ReplicationController"),
    ):
        code, _ = request(apiserver, "POST", path, {"metadata": {"name": "w"}, **SAMPLES[kind]})
        assert code == 201
        code, scale = request(apiserver, "GET", f"{path}/w/scale")
        assert code == 200 and scale["spec"]["replicas"] == 1
        assert scale["status"]["selector"] == "app=a"
        scale["spec"]["replicas"] = 4
        code, scale = request(apiserver, "PUT", f"{path}/w/scale", scale)
        assert code == 200 and scale["spec"]["replicas"] == 4
        _, obj = request(apiserver, "GET", f"{path}/w")
        assert obj["spec"]["replicas"] == 4


def _invalid(apiserver: APIServer, path: str, body: Any, method: str = "POST") -> Any:
    code, status = request(apiserver, method, path, body)
    assert code == 422, status
    assert status["reason"] == "Invalid"
    return status


def test_pod_and_port_validation(apiserver: APIServer) -> None:
    pods = "/api/v1/namespaces/default/pods"
    st = _invalid(apiserver, pods, {"metadata": {"name": "p"}, "spec": {}})
    assert st["message"] == 'Pod "p" is invalid: spec.containers: Required value'
    bad_port = {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 70000}]}]}
    st = _invalid(apiserver, pods, {"metadata": {"name": "p"}, "spec": bad_port})
    assert st["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.containers[0].ports[0].containerPort",
        "message": "Invalid value: 70000: must be between 1 and 65535, inclusive"}]  # fmt: skip
    deploy = {"metadata": {"name": "d"}, "spec": {"selector": SELECTOR, "template": {
        "metadata": {"labels": {"app": "a"}}, "spec": {"containers": []}}}}  # fmt: skip
    st = _invalid(apiserver, "/apis/apps/v1/namespaces/default/deployments", deploy)
    assert "spec.template.spec.containers: Required value" in st["message"]
    svcs = "/api/v1/namespaces/default/services"
    st = _invalid(apiserver, svcs, {"metadata": {"name": "s"}, "spec": {"ports": [
        {"port": 0, "targetPort": 70000}]}})  # fmt: skip
    fields = {c["field"]: c["message"] for c in st["details"]["causes"]}
    assert (
        fields["spec.ports[0].port"] == "Invalid value: 0: must be between 1 and 65535, inclusive"
    )
    assert fields["spec.ports[0].targetPort"].startswith("Invalid value: 70000: must be between")
    st = _invalid(apiserver, svcs, {"metadata": {"name": "s"}, "spec": {"ports": [
        {"port": 80, "nodePort": 30080}]}})  # fmt: skip
    assert st["details"]["causes"][0] == {
        "reason": "FieldValueForbidden", "field": "spec.ports[0].nodePort",
        "message": "Forbidden: may not be used when `type` is 'ClusterIP'"}  # fmt: skip
    st = _invalid(apiserver, svcs, {"metadata": {"name": "s"}, "spec": {"type": "NodePort",
        "ports": [{"port": 80, "nodePort": 70000}]}})  # fmt: skip
    assert st["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
    st = _invalid(apiserver, svcs, {"metadata": {"name": "s"}, "spec": {"ports": [
        {"port": 80}, {"port": 81}]}})  # fmt: skip
    assert "spec.ports[0].name: Required value" in st["message"]


def test_name_syntax_per_kind(apiserver: APIServer) -> None:
    st = _invalid(apiserver, "/api/v1/namespaces/default/services", {
        "metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}})  # fmt: skip
    assert "a DNS-1035 label must consist of" in st["message"]
    st = _invalid(apiserver, "/api/v1/namespaces", {"metadata": {"name": "a.b"}})
    assert "a lowercase RFC 1123 label must consist of" in st["message"]
    code, _ = request(apiserver, "POST", "/api/v1/namespaces/default/configmaps",
                      {"metadata": {"name": "a.b"}})  # fmt: skip
    assert code == 201  # a DNS-1123 subdomain
    code, _ = request(apiserver, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                      {"metadata": {"name": "system:controller:x"}})  # fmt: skip
    assert code == 201  # RBAC names are path segments
    st = _invalid(apiserver, "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                  {"metadata": {"name": "a/b"}})  # fmt: skip
    assert "may not contain '/'" in st["message"]
    cj = {"metadata": {"name": "c" * 53}, **copy.deepcopy(SAMPLES["CronJob"])}
    st = _invalid(apiserver, "/apis/batch/v1/namespaces/default/cronjobs", cj)
    assert st["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "metadata.name",
        "message": f'Invalid value: "{"c" * 53}": must be no more than 52 characters'}]  # fmt: skip


def test_selectors_and_immutable_fields(apiserver: APIServer) -> None:
    rs = {"metadata": {"name": "r"}, "spec": {"selector": {"matchLabels": {"app": "b"}},
                                              "template": TEMPLATE}}  # fmt: skip
    st = _invalid(apiserver, "/apis/apps/v1/namespaces/default/replicasets", rs)
    assert st["details"]["causes"][0]["field"] == "spec.template.metadata.labels"
    assert "`selector` does not match template `labels`" in st["message"]
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    _, job = request(apiserver, "POST", jobs, {"metadata": {"name": "j"}, **SAMPLES["Job"]})
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    st = _invalid(apiserver, f"{jobs}/j", job, "PUT")
    assert st["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.template",
        "message": "Invalid value: core.PodTemplateSpec{...}: field is immutable"}]  # fmt: skip
    sts = "/apis/apps/v1/namespaces/default/statefulsets"
    _, obj = request(apiserver, "POST", sts, {"metadata": {"name": "s"}, **SAMPLES["StatefulSet"]})
    obj["spec"]["selector"] = {"matchLabels": {"app": "a", "x": "y"}}
    obj["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    st = _invalid(apiserver, f"{sts}/s", obj, "PUT")
    assert st["details"]["causes"][0]["field"] == "spec.selector"
    assert st["details"]["causes"][0]["message"].endswith("field is immutable")


def test_suspended_job_never_started_may_change_scheduling_only(apiserver: APIServer) -> None:
    """kube's validatePodTemplateUpdate: while a Job is suspended and has no
    startTime, its template's node affinity, node selector, tolerations,
    scheduling gates, labels and annotations may change (Kueue relies on
    it); the containers may not, and nothing may once the Job started."""
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    body = copy.deepcopy(SAMPLES["Job"])
    body["spec"]["suspend"] = True
    code, job = request(apiserver, "POST", jobs, {"metadata": {"name": "s"}, **body})
    assert code == 201, job
    tpl = job["spec"]["template"]
    tpl["spec"]["nodeSelector"] = {"pool": "gpu"}
    tpl["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    tpl["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    tpl["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}  # fmt: skip
    tpl["metadata"].setdefault("labels", {})["queue"] = "q1"
    tpl["metadata"]["annotations"] = {"note": "x"}
    code, job = request(apiserver, "PUT", f"{jobs}/s", job)
    assert code == 200, job
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "gpu"}
    # Pod affinity is not a scheduling directive kube lets through.
    tpl = job["spec"]["template"]
    tpl["spec"]["affinity"]["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}]}  # fmt: skip
    st = _invalid(apiserver, f"{jobs}/s", job, "PUT")
    assert st["details"]["causes"][0]["field"] == "spec.template"
    _, job = request(apiserver, "GET", f"{jobs}/s")
    job["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    st = _invalid(apiserver, f"{jobs}/s", job, "PUT")
    assert st["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.template",
        "message": "Invalid value: core.PodTemplateSpec{...}: field is immutable"}]  # fmt: skip
    # Once started (status.startTime set), the template is frozen even if
    # suspended again.
    _, job = request(apiserver, "GET", f"{jobs}/s")
    job["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    code, job = request(apiserver, "PUT", f"{jobs}/s/status", job)
    assert code == 200, job
    job["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "cpu"}
    st = _invalid(apiserver, f"{jobs}/s", job, "PUT")
    assert st["details"]["causes"][0]["field"] == "spec.template"
    # completionMode is immutable whatever the state.
    _, job = request(apiserver, "GET", f"{jobs}/s")
    job["spec"]["completionMode"] = "Indexed"
    job["spec"]["completions"] = job["spec"].get("completions") or 1
    st = _invalid(apiserver, f"{jobs}/s", job, "PUT")
    assert {"reason": "FieldValueInvalid", "field": "spec.completionMode",
            "message": 'Invalid value: "Indexed": field is immutable'
            } in st["details"]["causes"]  # fmt: skip


def test_table_columns_of_new_kinds(apiserver: APIServer) -> None:
    path = "/apis/apps/v1/namespaces/default/replicasets"
    request(apiserver, "POST", path, {"metadata": {"name": "r"}, **SAMPLES["ReplicaSet"]})
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    code, _, table = call(apiserver, "GET", path, headers={"Accept": accept})
    assert code == 200
    cols = [c["name"] for c in table["columnDefinitions"]]
    assert cols[:5] == ["Name", "Desired", "Current", "Ready", "Age"]
    assert table["rows"][0]["cells"][:4] == ["r", 1, 0, 0]
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    request(apiserver, "POST", jobs, {"metadata": {"name": "j"}, **SAMPLES["Job"]})
    _, _, table = call(apiserver, "GET", jobs, headers={"Accept": accept})
    assert [c["name"] for c in table["columnDefinitions"]][:4] == [
        "Name", "Status", "Completions", "Duration"]  # fmt: skip
    assert table["rows"][0]["cells"][1:3] == ["Running", "0/1"]


# --- namespace lifecycle ---------------------------------------------------------------


def test_namespace_lifecycle_respects_content_finalizers(apiserver: APIServer) -> None:
    code, ns = request(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    assert code == 201 and ns["spec"] == {"finalizers": ["kubernetes"]}
    cms = "/api/v1/namespaces/doomed/configmaps"
    request(apiserver, "POST", cms, {"metadata": {"name": "kept", "finalizers": ["example.com/x"]}})
    request(apiserver, "POST", cms, {"metadata": {"name": "gone"}})
    code, deleted = request(apiserver, "DELETE", "/api/v1/namespaces/doomed")
    assert code == 200 and deleted["status"]["phase"] == "Terminating"
    assert deleted["metadata"]["deletionTimestamp"]
    assert deleted["spec"]["finalizers"] == ["kubernetes"]

    def remaining() -> Any:
        _, obj = request(apiserver, "GET", "/api/v1/namespaces/doomed")
        conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        return conds if "NamespaceContentRemaining" in conds else None

    conds = wait_for(remaining, timeout=5)
    assert conds["NamespaceContentRemaining"]["status"] == "True"
    assert conds["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: configmaps has 1 resource instances"
    )
    assert conds["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/x in 1 resource "
        "instances"
    )
    code, _ = request(apiserver, "GET", f"{cms}/gone")
    assert code == 404
    code, kept = request(apiserver, "GET", f"{cms}/kept")
    assert code == 200 and kept["metadata"]["deletionTimestamp"]
    code, st = request(apiserver, "POST", cms, {"metadata": {"name": "late"}})
    assert code == 403 and st["reason"] == "Forbidden"
    assert st["message"] == (
        'configmaps "late" is forbidden: unable to create new content in namespace doomed '
        "because it is being terminated"
    )
    assert st["details"]["causes"] == [{
        "reason": "NamespaceTerminating", "message": "namespace doomed is being terminated",
        "field": "metadata.namespace"}]  # fmt: skip
    kept["metadata"]["finalizers"] = []
    code, _ = request(apiserver, "PUT", f"{cms}/kept", kept)
    assert code == 200
    wait_for(lambda: request(apiserver, "GET", "/api/v1/namespaces/doomed")[0] == 404, timeout=5)


def test_creating_in_a_missing_namespace_is_404(apiserver: APIServer) -> None:
    code, st = request(apiserver, "POST", "/api/v1/namespaces/nope/configmaps",
                       {"metadata": {"name": "x"}})  # fmt: skip
    assert code == 404 and st["reason"] == "NotFound"
    assert st["message"] == 'namespaces "nope" not found'


def test_finalize_subresource_replaces_spec_finalizers(apiserver: APIServer) -> None:
    request(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "fin"}})
    _, ns = request(apiserver, "GET", "/api/v1/namespaces/fin")
    ns["spec"]["finalizers"] = []
    # A plain update keeps spec.finalizers (namespaceStrategy.PrepareForUpdate).
    _, upd = request(apiserver, "PUT", "/api/v1/namespaces/fin", ns)
    assert upd["spec"]["finalizers"] == ["kubernetes"]
    upd["spec"]["finalizers"] = []
    code, fin = request(apiserver, "PUT", "/api/v1/namespaces/fin/finalize", upd)
    assert code == 200 and not fin["spec"].get("finalizers")
    request(apiserver, "DELETE", "/api/v1/namespaces/fin")
    wait_for(lambda: request(apiserver, "GET", "/api/v1/namespaces/fin")[0] == 404, timeout=5)


def test_objects_carry_the_zero_status_go_writes(apiserver: APIServer) -> None:
    """kube-apiserver answers built-in objects as Go marshals them: a
    non-pointer status is always present, with its non-omitempty fields at
    zero (a controller reading ``status["replicas"]`` of a new ReplicaSet
    finds 0 on a cluster, and must here too)."""
    _, dep = request(apiserver, "POST", "/apis/apps/v1/namespaces/default/deployments",
                     {"metadata": {"name": "d"}, **SAMPLES["Deployment"]})  # fmt: skip
    assert dep["status"] == {}
    _, rs = request(apiserver, "POST", "/apis/apps/v1/namespaces/default/replicasets",
                    {"metadata": {"name": "r"}, **SAMPLES["ReplicaSet"]})  # fmt: skip
    assert rs["status"] == {"replicas": 0}
    _, pdb = request(apiserver, "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                     {"metadata": {"name": "p"}, "spec": {"minAvailable": 1}})  # fmt: skip
    assert pdb["status"] == {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                             "expectedPods": 0}  # fmt: skip
    _, cm = request(apiserver, "POST", "/api/v1/namespaces/default/configmaps",
                    {"metadata": {"name": "c"}})  # fmt: skip
    assert "status" not in cm  # ConfigMaps have none
    # A status write that leaves out a non-omitempty field reads back with its zero.
    rs["status"] = {"availableReplicas": 0, "observedGeneration": 1}
    code, rs = request(apiserver, "PUT", "/apis/apps/v1/namespaces/default/replicasets/r/status",
                       rs)  # fmt: skip
    assert code == 200, rs
    assert rs["status"]["replicas"] == 0 and rs["status"]["observedGeneration"] == 1


# A pod spec with the types kube defaults wherever they occur (SetDefaults_*):
# an ephemeral volume's claim spec, downwardAPI and projected volumes, an env
# fieldRef, a probe, a container port.
RICH_POD_SPEC = {
    "containers": [
        {
            "name": "c",
            "image": "busybox:1.36",
            "ports": [{"containerPort": 8080}],
            "readinessProbe": {"httpGet": {"path": "/", "port": 8080}},
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        }
    ],
    "volumes": [
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
        {"name": "info", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "all", "projected": {"sources": []}},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "body", "spec_of"),
    [
        (
            "/api/v1/namespaces/default/pods",
            {"metadata": {"name": "rich"}, "spec": RICH_POD_SPEC},
            lambda o: o["spec"],
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            {
                "metadata": {"name": "rich"},
                "spec": {
                    "selector": SELECTOR,
                    "template": {"metadata": {"labels": {"app": "a"}}, "spec": RICH_POD_SPEC},
                },
            },
            lambda o: o["spec"]["template"]["spec"],
        ),
    ],
    ids=["pod", "deployment"],
)
def test_pods_and_deployments_get_every_pod_type_default(
    apiserver: APIServer, path: str, body: dict[str, Any], spec_of: Any
) -> None:
    """Pods and Deployments are defaulted by the same per-type functions as
    every other kind that holds a pod spec (kube's SetDefaults_PodSpec,
    _Container, _Probe, _PersistentVolumeClaimSpec, _DownwardAPIVolumeSource,
    _ProjectedVolumeSource, _ObjectFieldSelector, _ContainerPort)."""
    code, obj = request(apiserver, "POST", path, copy.deepcopy(body))
    assert code == 201, obj
    spec = spec_of(obj)
    c = spec["containers"][0]
    assert c["ports"][0]["protocol"] == "TCP"
    assert c["readinessProbe"]["periodSeconds"] == 10
    assert c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    # A pod also gets the ServiceAccount admission's token volume, last.
    scratch, info, projected = spec["volumes"][:3]
    assert scratch["ephemeral"]["volumeClaimTemplate"]["spec"]["volumeMode"] == "Filesystem"
    assert info["downwardAPI"]["defaultMode"] == 420
    assert projected["projected"]["defaultMode"] == 420
    assert spec["restartPolicy"] == "Always" and spec["dnsPolicy"] == "ClusterFirst"
