"""Details where the embedded API server matches kube-apiserver exactly:
the DELETED event of an update that empties the finalizers, the qualified
kind in Invalid messages, CRD defaulting."""

from __future__ import annotations

import copy
import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from support import crds
from support.http import request

from pycontroller.testing import APIServer, wait_for

CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
SVC = "/api/v1/namespaces/default/services"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"


def events_since(server: APIServer, path: str, rv: str) -> list[dict[str, Any]]:
    """Every watch event on ``path`` after ``rv`` (the stream ends after 1 s)."""
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    try:
        conn.request("GET", f"{path}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
        resp = conn.getresponse()
        return [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    finally:
        conn.close()


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    }


# --- DELETED after the last finalizer goes -----------------------------------------


def test_update_removing_last_finalizer_deletes_with_stored_state(apiserver: APIServer) -> None:
    code, created = request(
        apiserver, "POST", CM, {"metadata": {"name": "f", "finalizers": ["example.com/x"]}}
    )
    assert code == 201
    start = created["metadata"]["resourceVersion"]
    code, marked = request(apiserver, "DELETE", f"{CM}/f")
    assert code == 200 and marked["metadata"]["deletionTimestamp"]
    code, resp = request(apiserver, "PATCH", f"{CM}/f", {"metadata": {"finalizers": None}}, MERGE)
    # The writer gets the object it produced (no finalizers) ...
    assert code == 200
    assert "finalizers" not in resp["metadata"]
    assert resp["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    assert request(apiserver, "GET", f"{CM}/f")[0] == 404
    # ... while watchers get DELETED with the last stored state, as kube's
    # deleteWithoutFinalizers (the emptied object is never stored).
    evs = events_since(apiserver, CM, start)
    assert [e["type"] for e in evs] == ["MODIFIED", "DELETED"]
    deleted = evs[1]["object"]
    assert deleted["metadata"]["finalizers"] == ["example.com/x"]
    assert deleted["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    assert int(deleted["metadata"]["resourceVersion"]) > int(marked["metadata"]["resourceVersion"])
    assert deleted["kind"] == "ConfigMap" and deleted["apiVersion"] == "v1"


def test_put_removing_last_finalizer_behaves_the_same(apiserver: APIServer) -> None:
    _, created = request(
        apiserver,
        "POST",
        CM,
        {"metadata": {"name": "p", "finalizers": ["a/b"]}, "data": {"k": "v"}},
    )
    _, marked = request(apiserver, "DELETE", f"{CM}/p")
    body = copy.deepcopy(marked)
    body["metadata"]["finalizers"] = []
    body["data"] = {"k": "changed"}
    code, resp = request(apiserver, "PUT", f"{CM}/p", body)
    assert code == 200 and resp["data"] == {"k": "changed"}
    evs = events_since(apiserver, CM, created["metadata"]["resourceVersion"])
    assert evs[-1]["type"] == "DELETED"
    assert evs[-1]["object"]["data"] == {"k": "v"}  # the stored state, not the PUT body
    assert evs[-1]["object"]["metadata"]["finalizers"] == ["a/b"]


def test_foreground_owner_deleted_event_carries_its_finalizer(apiserver: APIServer) -> None:
    _, owner = request(apiserver, "POST", CM, {"metadata": {"name": "owner"}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    request(apiserver, "POST", CM, {"metadata": {"name": "child", "ownerReferences": [ref]}})
    start = owner["metadata"]["resourceVersion"]
    code, _ = request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Foreground")
    assert code == 200
    wait_for(lambda: request(apiserver, "GET", f"{CM}/owner")[0] == 404, 5, what="owner deleted")
    evs = [
        e for e in events_since(apiserver, CM, start) if e["object"]["metadata"]["name"] == "owner"
    ]
    assert evs[-1]["type"] == "DELETED"
    assert evs[-1]["object"]["metadata"]["finalizers"] == ["foregroundDeletion"]


# --- Invalid messages ----------------------------------------------------------------


def test_invalid_message_uses_the_qualified_kind(apiserver: APIServer) -> None:
    bad = deployment("web")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    code, st = request(apiserver, "POST", DEPLOY, bad)
    assert code == 422
    assert st["message"] == (
        'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"other"}: `selector` does not match template `labels`'
    )
    assert st["details"]["group"] == "apps" and st["details"]["kind"] == "Deployment"
    assert st["details"]["name"] == "web"

    _, svc = request(
        apiserver, "POST", SVC, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    svc["spec"]["clusterIP"] = "10.99.99.99"
    code, st = request(apiserver, "PUT", f"{SVC}/s", svc)
    assert code == 422
    assert st["message"].startswith('Service "s" is invalid: spec.clusterIPs[0]: ')
    assert "group" not in st["details"] and st["details"]["kind"] == "Service"

    code, st = request(apiserver, "POST", CM, {"metadata": {"name": "Bad_Name"}})
    assert code == 422
    assert st["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: ')


def test_invalid_message_aggregates_several_errors(apiserver: APIServer) -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap"}
    code, st = request(apiserver, "POST", CM, {"metadata": {"name": "x", "ownerReferences": [ref]}})
    assert code == 422
    assert st["message"].startswith(
        'ConfigMap "x" is invalid: [metadata.ownerReferences[0].name: Required value, '
    )
    assert st["message"].endswith("]")


# --- CRD defaulting --------------------------------------------------------------------


def _gadget_crd() -> dict[str, Any]:
    return crds.crd("gadgets", "Gadget")


def test_crd_create_and_update_apply_crd_defaults(apiserver: APIServer) -> None:
    code, crd = request(apiserver, "POST", CRDS, _gadget_crd())
    assert code == 201, crd
    names = crd["spec"]["names"]
    assert names["singular"] == "gadget" and names["listKind"] == "GadgetList"
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    gen = crd["metadata"]["generation"]
    # An update that omits the defaulted fields gets them back: no spec change.
    body = _gadget_crd()
    body["metadata"]["resourceVersion"] = crd["metadata"]["resourceVersion"]
    body["spec"]["names"]["shortNames"] = ["gd"]
    code, updated = request(apiserver, "PUT", f"{CRDS}/gadgets.example.com", body)
    assert code == 200, updated
    assert updated["spec"]["names"]["listKind"] == "GadgetList"
    assert updated["spec"]["conversion"] == {"strategy": "None"}
    assert updated["metadata"]["generation"] == gen + 1  # only shortNames changed


# --- /scale ------------------------------------------------------------------------------


def test_deployment_scale_subresource(apiserver: APIServer) -> None:
    d = deployment("web")
    d["spec"]["selector"]["matchExpressions"] = [
        {"key": "tier", "operator": "In", "values": ["b", "a"]}
    ]
    d["spec"]["template"]["metadata"]["labels"]["tier"] = "a"
    code, created = request(apiserver, "POST", DEPLOY, d)
    assert code == 201, created
    code, sc = request(apiserver, "GET", f"{DEPLOY}/web/scale")
    assert code == 200
    assert sc["kind"] == "Scale" and sc["apiVersion"] == "autoscaling/v1"
    assert sc["metadata"]["name"] == "web" and sc["metadata"]["namespace"] == "default"
    assert sc["metadata"]["uid"] == created["metadata"]["uid"]
    assert sc["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert sc["spec"] == {"replicas": 1}
    assert sc["status"] == {"replicas": 0, "selector": "app=web,tier in (a,b)"}

    sc["spec"]["replicas"] = 3
    code, put = request(apiserver, "PUT", f"{DEPLOY}/web/scale", sc)
    assert code == 200 and put["spec"]["replicas"] == 3
    _, got = request(apiserver, "GET", f"{DEPLOY}/web")
    assert got["spec"]["replicas"] == 3 and got["metadata"]["generation"] == 2
    assert put["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]
    # A stale resourceVersion in the Scale conflicts, like on the deployment.
    code, st = request(apiserver, "PUT", f"{DEPLOY}/web/scale", sc)
    assert code == 409 and st["reason"] == "Conflict"
    assert st["message"].startswith('Operation cannot be fulfilled on deployments.apps "web"')

    code, patched = request(
        apiserver, "PATCH", f"{DEPLOY}/web/scale", {"spec": {"replicas": 0}}, MERGE
    )
    assert code == 200 and patched["spec"]["replicas"] == 0
    code, st = request(apiserver, "PATCH", f"{DEPLOY}/web/scale", {"spec": {"replicas": -1}}, MERGE)
    assert code == 422
    assert st["message"] == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    code, st = request(apiserver, "GET", f"{DEPLOY}/nope/scale")
    assert code == 404 and st["message"] == 'deployments/scale.apps "nope" not found'
    assert st["details"] == {"name": "nope", "group": "apps", "kind": "deployments/scale"}
    assert request(apiserver, "PATCH", f"{DEPLOY}/nope/scale", {}, MERGE)[0] == 404
    assert request(apiserver, "DELETE", f"{DEPLOY}/web/scale")[0] == 405
    # Other kinds have no /scale.
    request(apiserver, "POST", CM, {"metadata": {"name": "c"}})
    assert request(apiserver, "GET", f"{CM}/c/scale")[0] == 404


def test_scale_is_advertised_in_discovery(apiserver: APIServer) -> None:
    _, doc = request(apiserver, "GET", "/apis/apps/v1")
    sub = next(r for r in doc["resources"] if r["name"] == "deployments/scale")
    assert sub["group"] == "autoscaling" and sub["version"] == "v1" and sub["kind"] == "Scale"
    assert sorted(sub["verbs"]) == ["get", "patch", "update"]
    _, core = request(apiserver, "GET", "/api/v1")
    # In core only replicationcontrollers have /scale (as in kube).
    scaled = {r["name"] for r in core["resources"] if r["name"].endswith("/scale")}
    assert scaled == {"replicationcontrollers/scale"}


def _pool_crd() -> dict[str, Any]:
    crd = _gadget_crd()
    crd["metadata"]["name"] = "pools.example.com"
    crd["spec"]["names"] = {"plural": "pools", "kind": "Pool"}
    crd["spec"]["versions"][0]["subresources"] = {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    return crd


def test_custom_resource_scale_subresource(apiserver: APIServer) -> None:
    assert request(apiserver, "POST", CRDS, _pool_crd())[0] == 201
    pools = "/apis/example.com/v1/namespaces/default/pools"
    wait_for(lambda: request(apiserver, "GET", pools)[0] == 200, 5, what="pools served")
    _, doc = request(apiserver, "GET", "/apis/example.com/v1")
    assert "pools/scale" in {r["name"] for r in doc["resources"]}
    body = {"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"}}
    assert request(apiserver, "POST", pools, body)[0] == 201
    code, sc = request(apiserver, "GET", f"{pools}/p/scale")
    assert code == 200
    assert sc["spec"] == {"replicas": 0} and sc["status"] == {"replicas": 0}
    _, p = request(apiserver, "GET", f"{pools}/p")
    p["status"] = {"replicas": 2, "selector": "app=p"}
    assert request(apiserver, "PUT", f"{pools}/p/status", p)[0] == 200
    code, sc = request(apiserver, "PATCH", f"{pools}/p/scale", {"spec": {"replicas": 4}}, MERGE)
    assert code == 200, sc
    assert sc["spec"] == {"replicas": 4} and sc["status"] == {"replicas": 2, "selector": "app=p"}
    _, p = request(apiserver, "GET", f"{pools}/p")
    assert p["spec"]["replicas"] == 4 and p["metadata"]["generation"] == 2


# --- Events: one storage, two APIs -------------------------------------------------------

CORE_EV = "/api/v1/namespaces/default/events"
NEW_EV = "/apis/events.k8s.io/v1/namespaces/default/events"


def test_core_event_is_served_by_events_k8s_io(apiserver: APIServer) -> None:
    ref = {"kind": "Pod", "namespace": "default", "name": "web-1", "apiVersion": "v1"}
    core = {
        "metadata": {"name": "web-1.abc"},
        "involvedObject": ref,
        "reason": "Started",
        "message": "Started container",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2024-01-01T00:00:00Z",
        "lastTimestamp": "2024-01-01T00:01:00Z",
        "count": 3,
        "type": "Normal",
        "reportingComponent": "kubelet",
        "reportingInstance": "node-1",
    }
    code, created = request(apiserver, "POST", CORE_EV, core)
    assert code == 201, created
    code, ev = request(apiserver, "GET", f"{NEW_EV}/web-1.abc")
    assert code == 200, ev
    assert ev["apiVersion"] == "events.k8s.io/v1" and ev["kind"] == "Event"
    assert ev["regarding"] == ref
    assert ev["note"] == "Started container"
    assert ev["reportingController"] == "kubelet" and ev["reportingInstance"] == "node-1"
    assert ev["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    assert ev["deprecatedCount"] == 3
    assert ev["deprecatedFirstTimestamp"] == "2024-01-01T00:00:00Z"
    assert ev["deprecatedLastTimestamp"] == "2024-01-01T00:01:00Z"
    assert ev["reason"] == "Started" and ev["type"] == "Normal"
    for core_only in ("involvedObject", "message", "source", "count", "firstTimestamp"):
        assert core_only not in ev
    assert ev["metadata"]["uid"] == created["metadata"]["uid"]
    assert ev["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    code, lst = request(apiserver, "GET", NEW_EV)
    assert [e["note"] for e in lst["items"]] == ["Started container"]
    assert lst["metadata"]["resourceVersion"] == str(apiserver.resource_version)


def test_events_k8s_io_event_is_served_by_core(apiserver: APIServer) -> None:
    new = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "x.1"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Deployment", "name": "x", "namespace": "default"},
        "note": "Scaled up",
        "reason": "ScalingReplicaSet",
        "type": "Normal",
        "action": "Scale",
        "reportingController": "deployment-controller",
        "reportingInstance": "kcm-1",
        "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:05.000000Z"},
    }
    code, created = request(apiserver, "POST", NEW_EV, new)
    assert code == 201, created
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"] == "Scaled up"
    code, ev = request(apiserver, "GET", f"{CORE_EV}/x.1")
    assert code == 200
    assert ev["apiVersion"] == "v1"
    assert ev["involvedObject"]["name"] == "x" and ev["message"] == "Scaled up"
    assert ev["reportingComponent"] == "deployment-controller"
    assert ev["series"]["count"] == 2 and ev["action"] == "Scale"
    assert ev["eventTime"] == new["eventTime"]
    assert "regarding" not in ev and "note" not in ev

    # Writes through either API change the one object.
    code, patched = request(apiserver, "PATCH", f"{NEW_EV}/x.1", {"note": "again"}, MERGE)
    assert code == 200 and patched["note"] == "again" and "message" not in patched
    _, ev = request(apiserver, "GET", f"{CORE_EV}/x.1")
    assert ev["message"] == "again"
    ev["count"] = 7
    code, put = request(apiserver, "PUT", f"{CORE_EV}/x.1", ev)
    assert code == 200
    assert request(apiserver, "GET", f"{NEW_EV}/x.1")[1]["deprecatedCount"] == 7
    # Field selectors use each API's own names.
    code, lst = request(apiserver, "GET", f"{NEW_EV}?fieldSelector=regarding.name%3Dx")
    assert code == 200 and [e["metadata"]["name"] for e in lst["items"]] == ["x.1"]
    code, lst = request(apiserver, "GET", f"{NEW_EV}?fieldSelector=reportingController%3Dother")
    assert code == 200 and lst["items"] == []
    code, lst = request(apiserver, "GET", f"{CORE_EV}?fieldSelector=involvedObject.name%3Dx")
    assert code == 200 and len(lst["items"]) == 1
    # A watch on either API sees writes made through the other, in its own form.
    rv = put["metadata"]["resourceVersion"]
    assert request(apiserver, "DELETE", f"{CORE_EV}/x.1")[0] == 200
    evs = events_since(apiserver, NEW_EV, rv)
    assert [e["type"] for e in evs] == ["DELETED"]
    assert evs[0]["object"]["apiVersion"] == "events.k8s.io/v1"
    assert evs[0]["object"]["note"] == "again"
    assert request(apiserver, "GET", f"{NEW_EV}/x.1")[0] == 404


def test_events_k8s_io_watch_from_zero_converts_initial_state(apiserver: APIServer) -> None:
    request(apiserver, "POST", CORE_EV, {"metadata": {"name": "e"}, "message": "hi"})
    evs = events_since(apiserver, NEW_EV, "0")
    assert [(e["type"], e["object"]["note"]) for e in evs] == [("ADDED", "hi")]
    assert evs[0]["object"]["apiVersion"] == "events.k8s.io/v1"


# --- TypeMeta on list items ------------------------------------------------------------------


def test_builtin_list_items_have_no_type_meta(apiserver: APIServer) -> None:
    code, created = request(apiserver, "POST", CM, {"metadata": {"name": "a"}})
    assert code == 201 and created["kind"] == "ConfigMap" and created["apiVersion"] == "v1"
    _, lst = request(apiserver, "GET", CM)
    assert lst["kind"] == "ConfigMapList" and lst["apiVersion"] == "v1"
    assert lst["items"] and all("kind" not in i and "apiVersion" not in i for i in lst["items"])
    _, lst = request(apiserver, "GET", "/apis/apps/v1/deployments")
    assert lst["kind"] == "DeploymentList"
    request(apiserver, "POST", DEPLOY, deployment("d"))
    _, lst = request(apiserver, "GET", DEPLOY)
    assert "kind" not in lst["items"][0] and "apiVersion" not in lst["items"][0]
    # GET and watch events keep them.
    _, got = request(apiserver, "GET", f"{CM}/a")
    assert got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"
    evs = events_since(apiserver, CM, "0")
    assert evs and all(e["object"]["kind"] == "ConfigMap" for e in evs)
    # A delete-collection answer is a list too.
    _, deleted = request(apiserver, "DELETE", CM)
    assert deleted["items"] and "kind" not in deleted["items"][0]


def test_custom_resource_list_items_keep_type_meta(apiserver: APIServer) -> None:
    assert request(apiserver, "POST", CRDS, _gadget_crd())[0] == 201
    gadgets = "/apis/example.com/v1/namespaces/default/gadgets"
    wait_for(lambda: request(apiserver, "GET", gadgets)[0] == 200, 5, what="gadgets served")
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    assert request(apiserver, "POST", gadgets, body)[0] == 201
    _, lst = request(apiserver, "GET", gadgets)
    assert lst["kind"] == "GadgetList"
    assert lst["items"][0]["kind"] == "Gadget"
    assert lst["items"][0]["apiVersion"] == "example.com/v1"
    # The CRD list itself is a built-in list.
    _, listed = request(apiserver, "GET", CRDS)
    assert listed["items"] and "kind" not in listed["items"][0]


def test_kubernetes_client_lists_builtins(apiserver: APIServer) -> None:
    from kubernetes import client

    request(apiserver, "POST", CM, {"metadata": {"name": "k"}})
    with apiserver.api_client() as api:
        lst = client.CoreV1Api(api).list_namespaced_config_map("default")
    assert [i.metadata.name for i in lst.items] == ["k"]
    assert lst.items[0].kind is None  # as against kube-apiserver


def test_events_k8s_io_apply_is_field_managed_in_its_version(apiserver: APIServer) -> None:
    # An apply through events.k8s.io/v1 owns that version's paths (.note), and a
    # core/v1 applier changing the same field (.message) conflicts on them.
    new = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "a.1"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "note": "first", "reason": "Started", "type": "Normal", "action": "Start",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
    }  # fmt: skip
    apply = "application/apply-patch+yaml"
    code, ev = request(apiserver, "PATCH", f"{NEW_EV}/a.1?fieldManager=rec", new, apply)
    assert code == 201, ev
    [entry] = ev["metadata"]["managedFields"]
    assert (entry["operation"], entry["apiVersion"]) == ("Apply", "events.k8s.io/v1")
    assert "f:note" in entry["fieldsV1"] and "f:message" not in entry["fieldsV1"]
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "a.1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "message": "second"}  # fmt: skip
    code, st = request(apiserver, "PATCH", f"{CORE_EV}/a.1?fieldManager=other", core, apply)
    assert code == 409, st
    assert st["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "rec"', "field": ".note"}
    ]
