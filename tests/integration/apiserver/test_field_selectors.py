"""Field selectors as kube-apiserver 1.32 serves them, over HTTP: the labels
each group/version/kind's field label conversion accepts (and its 400 for the
others), the values the strategies' field sets hold (bools, ints, defaults),
custom resources' ``selectableFields`` (list, watch, OpenAPI) and the CRD
validation of ``selectableFields``."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from support.http import request

from pycontroller.testing import APIServer

NS = "/api/v1/namespaces/default"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"
DEFAULT_ONLY = 'is not a known field selector: only "metadata.name", "metadata.namespace"'


def names(server: APIServer, path: str, selector: str) -> list[str]:
    code, body = request(server, "GET", f"{path}?fieldSelector={quote(selector)}")
    assert code == 200, body
    return sorted(o["metadata"]["name"] for o in body["items"])


def refused(server: APIServer, path: str, selector: str) -> str:
    """The 400 message for listing ``path`` with ``selector``."""
    code, body = request(server, "GET", f"{path}?fieldSelector={quote(selector)}")
    assert code == 400 and body["reason"] == "BadRequest", body
    return str(body["message"])


def watch(server: APIServer, path: str, query: str) -> list[tuple[str, str]]:
    """``(type, name)`` of every event of a 1 s watch on ``path``."""
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    try:
        conn.request("GET", f"{path}?watch=true&timeoutSeconds=1&{query}")
        lines = conn.getresponse().read().splitlines()
    finally:
        conn.close()
    events = [json.loads(line) for line in lines if line.strip()]
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events]


def create(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, body)
    assert code == 201, out
    return dict(out)


def patch(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "PATCH", path, body, MERGE)
    assert code == 200, out
    return dict(out)


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


# --- built-in kinds ---------------------------------------------------------------


def test_pod_labels_and_values(apiserver: APIServer) -> None:
    pods = f"{NS}/pods"
    create(apiserver, pods, pod("a", hostNetwork=True, nodeName="n1"))
    create(apiserver, pods, pod("b"))
    patch(apiserver, f"{pods}/b/status", {"status": {"podIPs": [{"ip": "10.0.0.5"}]}})
    assert names(apiserver, pods, "spec.hostNetwork=true") == ["a"]
    assert names(apiserver, pods, "spec.hostNetwork=false") == ["b"]  # absent: false
    assert names(apiserver, pods, "spec.host=n1") == ["a"]  # old v1 name of spec.nodeName
    assert names(apiserver, pods, "status.podIP=10.0.0.5") == ["b"]
    # Accepted by the conversion, absent from the field set: always "".
    assert names(apiserver, pods, "status.podIPs=") == ["a", "b"]
    assert names(apiserver, pods, "spec.restartPolicy=Always,spec.nodeName!=n1") == ["b"]
    assert refused(apiserver, pods, "metadata.uid=x") == "field label not supported: metadata.uid"


def test_pod_watch_by_host_network(apiserver: APIServer) -> None:
    pods = f"{NS}/pods"
    create(apiserver, pods, pod("a", hostNetwork=True))
    rv = create(apiserver, pods, pod("b"))["metadata"]["resourceVersion"]
    # Initial events too: an absent hostNetwork is "false".
    assert watch(apiserver, pods, "fieldSelector=spec.hostNetwork%3Dfalse") == [("ADDED", "b")]
    create(apiserver, pods, pod("c", hostNetwork=True))
    create(apiserver, pods, pod("d"))
    q = f"resourceVersion={rv}&fieldSelector=spec.hostNetwork%3D"
    assert watch(apiserver, pods, q + "false") == [("ADDED", "d")]
    assert watch(apiserver, pods, q + "true") == [("ADDED", "c")]


def test_node_unschedulable(apiserver: APIServer) -> None:
    nodes = "/api/v1/nodes"
    create(apiserver, nodes, {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}})
    rv = create(apiserver, nodes, {"metadata": {"name": "n2"}})["metadata"]["resourceVersion"]
    assert names(apiserver, nodes, "spec.unschedulable=true") == ["n1"]
    assert names(apiserver, nodes, "spec.unschedulable=false") == ["n2"]
    assert watch(apiserver, nodes, "fieldSelector=spec.unschedulable%3Dtrue") == [("ADDED", "n1")]
    patch(apiserver, f"{nodes}/n2", {"spec": {"unschedulable": True}})
    patch(apiserver, f"{nodes}/n1", {"spec": {"unschedulable": False}})
    q = f"fieldSelector=spec.unschedulable%3Dtrue&resourceVersion={rv}"
    assert watch(apiserver, nodes, q) == [("ADDED", "n2"), ("DELETED", "n1")]
    # Node's conversion takes no metadata.namespace.
    msg = refused(apiserver, nodes, "metadata.namespace=x")
    assert msg == "field label not supported: metadata.namespace"


def svc(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}], **spec}}


def test_service_fields(apiserver: APIServer) -> None:
    svcs = f"{NS}/services"
    port = [{"port": 80}]
    create(
        apiserver, svcs, {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": port}}
    )
    create(
        apiserver, svcs, {"metadata": {"name": "hl"}, "spec": {"clusterIP": "None", "ports": port}}
    )
    assert names(apiserver, svcs, "spec.type=NodePort") == ["np"]
    assert names(apiserver, svcs, "spec.type=ClusterIP") == ["hl"]
    assert names(apiserver, svcs, "spec.clusterIP=None") == ["hl"]


def test_replicas_and_successful_counts(apiserver: APIServer) -> None:
    tmpl = {"metadata": {"labels": {"a": "b"}}, "spec": pod("x")["spec"]}
    rcs = f"{NS}/replicationcontrollers"
    create(apiserver, rcs, {"metadata": {"name": "rc"}, "spec": {"replicas": 0, "template": tmpl}})
    assert names(apiserver, rcs, "status.replicas=0") == ["rc"]  # Itoa of the zero value
    patch(apiserver, f"{rcs}/rc/status", {"status": {"replicas": 2}})
    assert names(apiserver, rcs, "status.replicas=2") == ["rc"]
    # apps/v1 registers no conversion: ReplicaSet's status.replicas is refused.
    rs = "/apis/apps/v1/namespaces/default/replicasets"
    assert refused(apiserver, rs, "status.replicas=0") == f'"status.replicas" {DEFAULT_ONLY}'
    jobs = "/apis/batch/v1/namespaces/default/jobs"
    job_tmpl = {"spec": {**pod("x")["spec"], "restartPolicy": "Never"}}
    create(apiserver, jobs, {"metadata": {"name": "j"}, "spec": {"template": job_tmpl}})
    assert names(apiserver, jobs, "status.successful=0") == ["j"]
    msg = refused(apiserver, jobs, "status.succeeded=0")
    assert msg == 'field label "status.succeeded" not supported for batchv1.Job'
    cronjobs = "/apis/batch/v1/namespaces/default/cronjobs"
    assert refused(apiserver, cronjobs, "spec.suspend=true") == f'"spec.suspend" {DEFAULT_ONLY}'


def test_csr_namespace_and_secret_labels(apiserver: APIServer) -> None:
    csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    assert names(apiserver, csrs, "spec.signerName=example.com/x") == []
    msg = refused(apiserver, csrs, "metadata.namespace=x")
    assert msg == "field label not supported: metadata.namespace"
    namespaces = "/api/v1/namespaces"
    assert "default" in names(apiserver, namespaces, "status.phase=Active")
    msg = refused(apiserver, namespaces, "metadata.namespace=x")
    assert msg == "field label not supported: metadata.namespace"
    secrets = f"{NS}/secrets"
    create(apiserver, secrets, {"metadata": {"name": "s"}, "type": "example.com/t"})
    assert names(apiserver, secrets, "type=example.com/t") == ["s"]
    assert refused(apiserver, secrets, "data.x=1") == "field label not supported: data.x"


def test_default_conversion(apiserver: APIServer) -> None:
    cms = f"{NS}/configmaps"
    create(apiserver, cms, {"metadata": {"name": "c"}})
    assert refused(apiserver, cms, "data.x=1") == f'"data.x" {DEFAULT_ONLY}'
    # Terms are sorted before conversion: the first unsupported one in order.
    assert refused(apiserver, cms, "z.a=1,b.c=2") == f'"b.c" {DEFAULT_ONLY}'
    # Labels are taken literally.
    assert refused(apiserver, cms, "metadata.name =c") == f'"metadata.name " {DEFAULT_ONLY}'
    # metadata.namespace is accepted on cluster-scoped kinds, and reads "".
    pvs = "/api/v1/persistentvolumes"
    pv_spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
               "hostPath": {"path": "/tmp/pv"}}  # fmt: skip
    create(apiserver, pvs, {"metadata": {"name": "pv"}, "spec": pv_spec})
    assert names(apiserver, pvs, "metadata.namespace=") == ["pv"]
    assert names(apiserver, pvs, "metadata.namespace=default") == []
    assert refused(apiserver, pvs, "spec.storageClassName=x") == (
        f'"spec.storageClassName" {DEFAULT_ONLY}'
    )
    assert refused(apiserver, cms, "metadata.name") == (
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
    )


def test_events_in_both_groups(apiserver: APIServer) -> None:
    core = f"{NS}/events"
    new = "/apis/events.k8s.io/v1/namespaces/default/events"
    ref = {"kind": "Pod", "name": "p", "namespace": "default"}
    create(apiserver, core, {"metadata": {"name": "e1"}, "involvedObject": ref,
                             "source": {"component": "kubelet"}, "reason": "R"})  # fmt: skip
    create(apiserver, core, {"metadata": {"name": "e2"}, "involvedObject": ref,
                             "reportingComponent": "ctrl", "reportingInstance": "i",
                             "action": "A", "reason": "R",
                             "eventTime": "2026-01-01T00:00:00.000000Z"})  # fmt: skip
    # source: Source.Component, else ReportingController.
    assert names(apiserver, core, "source=kubelet") == ["e1"]
    assert names(apiserver, core, "source=ctrl") == ["e2"]
    assert names(apiserver, new, "source=ctrl") == ["e2"]
    assert names(apiserver, new, "regarding.name=p") == ["e1", "e2"]
    assert names(apiserver, new, "reportingController=ctrl") == ["e2"]
    for label in ("deprecatedSource", "involvedObject.name", "reportingComponent"):
        assert refused(apiserver, new, f"{label}=x") == f"field label not supported: {label}"
    assert refused(apiserver, core, "regarding.name=p") == (
        "field label not supported: regarding.name"
    )


# --- custom resources -------------------------------------------------------------

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
        "spec": {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "blue"]},
                "size": {"type": "integer"},
                "enabled": {"type": "boolean"},
                "ratio": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "nested": {"type": "object", "properties": {"x": {"type": "string"}}},
            },
        },
    },
}


def widget_crd(
    v1_fields: list[str], *, scope: str = "Namespaced", plural: str = "widgets"
) -> dict[str, Any]:
    def version(name: str, storage: bool, fields: list[str]) -> dict[str, Any]:
        v: dict[str, Any] = {
            "name": name,
            "served": True,
            "storage": storage,
            "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
        }
        if fields:
            v["selectableFields"] = [{"jsonPath": f} for f in fields]
        return v

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": plural, "kind": plural.capitalize()[:-1]},
            "versions": [version("v1", True, v1_fields), version("v2", False, [])],
        },
    }


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def test_custom_resource_selectable_fields(apiserver: APIServer) -> None:
    create(apiserver, CRDS, widget_crd([".spec.color", ".spec.size", ".spec.enabled",
                                        ".spec.labels.team"]))  # fmt: skip
    v1 = "/apis/example.com/v1/namespaces/default/widgets"
    create(apiserver, v1, widget("a", color="red", size=3, enabled=True, labels={"team": "x"}))
    create(apiserver, v1, widget("b", color="blue", size=10, enabled=False))
    create(apiserver, v1, widget("c"))
    assert names(apiserver, v1, "spec.color=red") == ["a"]
    assert names(apiserver, v1, "spec.color!=red") == ["b", "c"]
    assert names(apiserver, v1, "spec.size=10") == ["b"]
    assert names(apiserver, v1, "spec.enabled=true") == ["a"]
    assert names(apiserver, v1, "spec.enabled=false") == ["b"]  # absent reads ""
    assert names(apiserver, v1, "spec.color=,metadata.namespace=default") == ["c"]
    assert names(apiserver, v1, "spec.labels.team=x") == ["a"]
    assert refused(apiserver, v1, "spec.ratio=1") == "field label not supported: spec.ratio"
    # Another version without selectableFields refuses them.
    v2 = "/apis/example.com/v2/namespaces/default/widgets"
    assert refused(apiserver, v2, "spec.color=red") == "field label not supported: spec.color"
    assert names(apiserver, v2, "metadata.name=a") == ["a"]


def test_custom_resource_watch(apiserver: APIServer) -> None:
    create(apiserver, CRDS, widget_crd([".spec.color"]))
    v1 = "/apis/example.com/v1/namespaces/default/widgets"
    create(apiserver, v1, widget("a", color="red"))
    rv = create(apiserver, v1, widget("b", color="blue"))["metadata"]["resourceVersion"]
    assert watch(apiserver, v1, "fieldSelector=spec.color%3Dred") == [("ADDED", "a")]
    patch(apiserver, f"{v1}/b", {"spec": {"color": "red"}})
    patch(apiserver, f"{v1}/a", {"spec": {"color": "blue"}})
    q = f"fieldSelector=spec.color%3Dred&resourceVersion={rv}"
    assert watch(apiserver, v1, q) == [("ADDED", "b"), ("DELETED", "a")]


def test_cluster_scoped_custom_resource(apiserver: APIServer) -> None:
    create(apiserver, CRDS, widget_crd([".spec.color"], scope="Cluster", plural="gadgets"))
    path = "/apis/example.com/v1/gadgets"
    assert names(apiserver, path, "spec.color=red") == []
    msg = refused(apiserver, path, "metadata.namespace=x")
    assert msg == "field label not supported: metadata.namespace"


def test_openapi_lists_selectable_fields(apiserver: APIServer) -> None:
    create(apiserver, CRDS, widget_crd([".spec.color", ".spec.size"]))
    for version, expected in (("v1", [{"fieldPath": "spec.color"}, {"fieldPath": "spec.size"}]),
                              ("v2", [])):  # fmt: skip
        code, doc = request(apiserver, "GET", f"/openapi/v3/apis/example.com/{version}")
        assert code == 200
        schemas = doc["components"]["schemas"]
        kind = schemas[f"com.example.{version}.Widget"]
        assert kind["x-kubernetes-selectable-fields"] == expected
        assert schemas[f"com.example.{version}.WidgetList"]["x-kubernetes-selectable-fields"] == (
            expected
        )


def _refused_crd(apiserver: APIServer, fields: list[str]) -> list[tuple[str, str, str]]:
    code, body = request(apiserver, "POST", CRDS, widget_crd(fields))
    assert code == 422 and body["reason"] == "Invalid", body
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


@pytest.mark.parametrize(
    ("path", "reason", "message"),
    [
        ("spec.color", "FieldValueInvalid",
         'Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec'),
        (".spec.missing", "FieldValueInvalid",
         'Invalid value: ".spec.missing": is an invalid path: does not refer to a valid field'),
        (".spec.tags[0]", "FieldValueInvalid",
         'Invalid value: ".spec.tags[0]": is an invalid path: array notation is not allowed'),
        (".spec.", "FieldValueInvalid",
         'Invalid value: ".spec.": is an invalid path: unexpected end of JSON path'),
        (".spec.ratio", "FieldValueInvalid",
         'Invalid value: ".spec.ratio": must point to a field of type string, boolean or '
         "integer. Enum string fields and strings with formats are allowed."),
        (".spec.nested", "FieldValueInvalid",
         'Invalid value: ".spec.nested": must point to a field of type string, boolean or '
         "integer. Enum string fields and strings with formats are allowed."),
        (".metadata.name", "FieldValueInvalid",
         'Invalid value: ".metadata.name": must not point to fields in metadata'),
        ("", "FieldValueRequired", "Required value"),
    ],
)  # fmt: skip
def test_crd_refuses_bad_selectable_field(
    apiserver: APIServer, path: str, reason: str, message: str
) -> None:
    assert _refused_crd(apiserver, [path]) == [
        (reason, "spec.versions[0].selectableFields[0].jsonPath", message)
    ]


def test_crd_refuses_duplicate_and_too_many_selectable_fields(apiserver: APIServer) -> None:
    assert _refused_crd(apiserver, [".spec.color", ".spec.color"]) == [
        ("FieldValueDuplicate", "spec.versions[0].selectableFields[1].jsonPath",
         'Duplicate value: ".spec.color"'),
    ]  # fmt: skip
    many = [f".spec.labels.k{i}" for i in range(9)]
    assert _refused_crd(apiserver, many) == [
        ("FieldValueTooMany", "spec.versions[0].selectableFields",
         "Too many: 9: must have at most 8 items"),
    ]  # fmt: skip
