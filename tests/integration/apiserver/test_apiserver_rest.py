"""Conformance of the embedded API server's REST verbs over raw HTTP and the
``kubernetes`` client: resourceVersions, optimistic concurrency, generation,
names, namespaces, status subresource, paging, selectors, patches, deletes,
fault injection, request log and restart."""

from __future__ import annotations

import functools
import http.client
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from support.http import call

from pycontroller.testing import APIServer, RequestRecord, wait_for

Raw = Callable[..., tuple[int, dict[str, str], Any]]
"""``support.http.call`` bound to one server: (status, headers, decoded body)."""


CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def deployment(
    name: str, replicas: int = 1, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    sel = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": sel},
            "template": {
                "metadata": {"labels": sel},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
            },
        },
    }


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def test_create_get_stamps_metadata_and_rvs_increase(raw: Raw) -> None:
    code, _, a = raw("POST", CM, cm("a", x="1"))
    assert code == 201
    meta = a["metadata"]
    assert meta["uid"] and meta["namespace"] == "default"
    assert meta["creationTimestamp"].endswith("Z") and "T" in meta["creationTimestamp"]
    assert "generation" not in meta  # ConfigMaps have none (kube's strategy sets none)
    code, _, b = raw("POST", CM, cm("b"))
    assert int(b["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    code, _, got = raw("GET", f"{CM}/a")
    assert code == 200 and got == a
    code, _, lst = raw("GET", CM)
    assert lst["kind"] == "ConfigMapList"
    assert lst["metadata"]["resourceVersion"] == b["metadata"]["resourceVersion"]
    assert [i["metadata"]["name"] for i in lst["items"]] == ["a", "b"]


def test_errors_are_status_objects(raw: Raw) -> None:
    raw("POST", CM, cm("a"))
    code, _, st = raw("POST", CM, cm("a"))
    assert code == 409
    assert st["kind"] == "Status" and st["status"] == "Failure" and st["reason"] == "AlreadyExists"
    assert st["details"] == {"name": "a", "kind": "configmaps"} and st["code"] == 409
    code, _, st = raw("GET", f"{CM}/missing")
    assert (code, st["reason"], st["message"]) == (
        404,
        "NotFound",
        'configmaps "missing" not found',
    )
    code, _, st = raw("GET", "/apis/apps/v1/namespaces/default/deployments/missing")
    assert st["message"] == 'deployments.apps "missing" not found'
    assert st["details"]["group"] == "apps"
    code, _, st = raw("GET", "/api/v1/namespaces/default/nosuchthings")
    assert code == 404 and st["kind"] == "Status"
    code, _, st = raw("POST", f"{CM}/a", cm("a"))
    assert code == 405 and st["reason"] == "MethodNotAllowed"


def test_update_optimistic_concurrency(raw: Raw) -> None:
    _, _, a = raw("POST", CM, cm("a", x="1"))
    stale = json.loads(json.dumps(a))
    a["data"]["x"] = "2"
    code, _, a2 = raw("PUT", f"{CM}/a", a)
    assert code == 200 and a2["data"] == {"x": "2"}
    assert int(a2["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
    stale["data"]["x"] = "3"
    code, _, st = raw("PUT", f"{CM}/a", stale)
    assert code == 409 and st["reason"] == "Conflict"
    assert st["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    code, _, st = raw("PUT", f"{DEPLOY}/x", deployment("x"))
    assert code == 404
    # No resourceVersion: unconditional update.
    del stale["metadata"]["resourceVersion"]
    code, _, a3 = raw("PUT", f"{CM}/a", stale)
    assert code == 200 and a3["data"] == {"x": "3"}
    # Name mismatch with URL.
    code, _, st = raw("PUT", f"{CM}/a", cm("b"))
    assert code == 400 and st["reason"] == "BadRequest"


def test_conflict_message_names_group(raw: Raw) -> None:
    _, _, d = raw("POST", DEPLOY, deployment("web"))
    d["spec"]["replicas"] = 2
    raw("PUT", f"{DEPLOY}/web", d)
    code, _, st = raw("PUT", f"{DEPLOY}/web", d)
    assert code == 409
    assert st["message"].startswith('Operation cannot be fulfilled on deployments.apps "web"')


def test_noop_update_keeps_resource_version(raw: Raw, apiserver: APIServer) -> None:
    _, _, a = raw("POST", CM, cm("a", x="1"))
    rv = apiserver.resource_version
    code, _, same = raw("PUT", f"{CM}/a", a)
    assert code == 200
    assert same["metadata"]["resourceVersion"] == a["metadata"]["resourceVersion"]
    assert apiserver.resource_version == rv


def test_generation_rules_and_status_subresource(raw: Raw) -> None:
    _, _, d = raw("POST", DEPLOY, {**deployment("web"), "status": {"replicas": 9}})
    assert d["metadata"]["generation"] == 1
    assert d.get("status", {}).get("replicas") is None  # status dropped on create
    # Defaults applied like kube.
    assert d["spec"]["strategy"]["type"] == "RollingUpdate"
    assert d["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    # Metadata-only change: generation unchanged.
    d["metadata"]["labels"] = {"team": "a"}
    _, _, d = raw("PUT", f"{DEPLOY}/web", d)
    assert d["metadata"]["generation"] == 1
    # Spec change: +1; status in a main-resource write is ignored.
    d["spec"]["replicas"] = 3
    d["status"] = {"replicas": 5}
    _, _, d = raw("PUT", f"{DEPLOY}/web", d)
    assert d["metadata"]["generation"] == 2
    assert "replicas" not in (d.get("status") or {})
    # Status write: only status changes, generation unchanged.
    d["status"] = {"replicas": 3, "observedGeneration": 2}
    d["spec"]["replicas"] = 100
    d["metadata"]["labels"] = {"team": "b"}
    code, _, d2 = raw("PUT", f"{DEPLOY}/web/status", d)
    assert code == 200
    assert d2["status"] == {"replicas": 3, "observedGeneration": 2}
    assert d2["spec"]["replicas"] == 3 and d2["metadata"]["labels"] == {"team": "a"}
    assert d2["metadata"]["generation"] == 2
    code, _, got = raw("GET", f"{DEPLOY}/web/status")
    assert code == 200 and got["status"]["replicas"] == 3
    # Status patch.
    code, _, d3 = raw(
        "PATCH",
        f"{DEPLOY}/web/status",
        {"status": {"readyReplicas": 3}},
        "application/merge-patch+json",
    )
    assert code == 200 and d3["status"]["readyReplicas"] == 3
    # Kinds without a status subresource have no /status.
    raw("POST", CM, cm("a"))
    code, _, _ = raw("PUT", f"{CM}/a/status", cm("a"))
    assert code == 404


def test_names_and_generate_name(raw: Raw) -> None:
    code, _, st = raw("POST", CM, cm("Bad_Name"))
    assert code == 422 and st["reason"] == "Invalid"
    assert st["details"]["causes"][0]["field"] == "metadata.name"
    assert st["details"]["kind"] == "ConfigMap"
    code, _, st = raw(
        "POST",
        "/api/v1/namespaces/default/services",
        {"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}},
    )
    assert code == 422  # DNS-1035 label for services
    code, _, st = raw("POST", "/api/v1/namespaces", {"metadata": {"name": "a.b"}})
    assert code == 422  # DNS-1123 label for namespaces
    code, _, st = raw("POST", CM, {"metadata": {}})
    assert code == 422 and st["details"]["causes"][0]["field"] == "metadata.name"
    code, _, g = raw("POST", CM, {"metadata": {"generateName": "web-"}})
    assert code == 201
    name = g["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5


def test_namespaces(raw: Raw) -> None:
    code, _, lst = raw("GET", "/api/v1/namespaces")
    names = {i["metadata"]["name"] for i in lst["items"]}
    assert {"default", "kube-system", "kube-public"} <= names
    code, _, st = raw("POST", "/api/v1/namespaces/nope/configmaps", cm("a"))
    assert code == 404 and st["details"] == {"name": "nope", "kind": "namespaces"}
    body = cm("a")
    body["metadata"]["namespace"] = "kube-system"
    code, _, st = raw("POST", CM, body)
    assert code == 400 and st["reason"] == "BadRequest"
    code, _, ns = raw("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert code == 201 and ns["status"]["phase"] == "Active"
    raw("POST", "/api/v1/namespaces/team/configmaps", cm("a"))
    raw("POST", CM, cm("a"))
    code, _, all_cms = raw("GET", "/api/v1/configmaps")
    assert sorted(
        (i["metadata"]["namespace"], i["metadata"]["name"]) for i in all_cms["items"]
    ) == [("default", "a"), ("team", "a")]
    code, _, st = raw("DELETE", "/api/v1/namespaces/default")
    assert code == 403


def test_namespace_deletion_removes_contents(raw: Raw) -> None:
    raw("POST", "/api/v1/namespaces", {"metadata": {"name": "gone"}})
    raw("POST", "/api/v1/namespaces/gone/configmaps", cm("a"))
    # A finalizer holds the namespace in Terminating for as long as the test needs
    # (without it the namespace may be gone before the next request: then a
    # create answers 404, not 403, as on a cluster).
    held = cm("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    raw("POST", "/api/v1/namespaces/gone/configmaps", held)
    code, _, ns = raw("DELETE", "/api/v1/namespaces/gone")
    assert code == 200 and ns["status"]["phase"] == "Terminating"
    assert ns["metadata"]["deletionTimestamp"]
    code, _, st = raw("POST", "/api/v1/namespaces/gone/configmaps", cm("b"))
    assert code == 403 and st["reason"] == "Forbidden"
    assert "because it is being terminated" in st["message"]
    wait_for(
        lambda: raw("GET", "/api/v1/namespaces/gone/configmaps/a")[0] == 404,
        5,
        what="content without finalizers deleted",
    )
    code, _, held_now = raw("GET", "/api/v1/namespaces/gone/configmaps/held")
    assert code == 200 and held_now["metadata"]["deletionTimestamp"]
    assert raw("GET", "/api/v1/namespaces/gone")[2]["status"]["phase"] == "Terminating"
    raw(
        "PATCH",
        "/api/v1/namespaces/gone/configmaps/held",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    wait_for(lambda: raw("GET", "/api/v1/namespaces/gone")[0] == 404, 5, what="namespace gone")
    assert raw("GET", "/api/v1/namespaces/gone/configmaps/held")[0] == 404


def test_paging_is_consistent_across_writes(raw: Raw, apiserver: APIServer) -> None:
    for i in range(7):
        raw("POST", CM, cm(f"cm{i}"))
    code, _, p1 = raw("GET", f"{CM}?limit=3")
    assert [i["metadata"]["name"] for i in p1["items"]] == ["cm0", "cm1", "cm2"]
    token = p1["metadata"]["continue"]
    assert p1["metadata"]["remainingItemCount"] == 4
    # Writes between pages do not show up in later pages.
    raw("DELETE", f"{CM}/cm3")
    raw("POST", CM, cm("cm35"))
    code, _, p2 = raw("GET", f"{CM}?limit=3&continue={quote(token)}")
    assert [i["metadata"]["name"] for i in p2["items"]] == ["cm3", "cm4", "cm5"]
    assert p2["metadata"]["resourceVersion"] == p1["metadata"]["resourceVersion"]
    code, _, p3 = raw("GET", f"{CM}?limit=3&continue={quote(p2['metadata']['continue'])}")
    assert [i["metadata"]["name"] for i in p3["items"]] == ["cm6"]
    assert "continue" not in p3["metadata"]
    # After compaction the token is expired.
    apiserver.compact()
    code, _, st = raw("GET", f"{CM}?limit=3&continue={quote(token)}")
    assert code == 410 and st["reason"] == "Expired"


def test_list_resource_version_match(raw: Raw, apiserver: APIServer) -> None:
    _, _, a = raw("POST", CM, cm("a"))
    rv = a["metadata"]["resourceVersion"]
    raw("POST", CM, cm("b"))
    code, _, lst = raw("GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert code == 200 and [i["metadata"]["name"] for i in lst["items"]] == ["a"]
    assert lst["metadata"]["resourceVersion"] == rv
    code, _, lst = raw("GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan")
    assert len(lst["items"]) == 2
    code, _, st = raw("GET", f"{CM}?resourceVersionMatch=Exact")
    assert code == 422 and st["reason"] == "Invalid"  # ValidateListOptions, as kube
    apiserver.compact()
    code, _, st = raw("GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert code == 410 and st["reason"] == "Expired"


def test_selectors(raw: Raw) -> None:
    for name, labels in [
        ("a", {"app": "web", "tier": "fe"}),
        ("b", {"app": "web", "tier": "be"}),
        ("c", {"app": "db"}),
        ("d", {}),
    ]:
        body = cm(name)
        body["metadata"]["labels"] = labels
        raw("POST", CM, body)

    def names(query: str) -> list[str]:
        code, _, lst = raw("GET", f"{CM}?{query}")
        assert code == 200, lst
        return [i["metadata"]["name"] for i in lst["items"]]

    assert names("labelSelector=" + quote("app=web")) == ["a", "b"]
    assert names("labelSelector=" + quote("app=web,tier!=fe")) == ["b"]
    assert names("labelSelector=" + quote("app in (web,db),!tier")) == ["c"]
    assert names("labelSelector=" + quote("app notin (web)")) == ["c", "d"]
    assert names("labelSelector=tier") == ["a", "b"]
    assert names("fieldSelector=" + quote("metadata.name=b")) == ["b"]
    assert names("fieldSelector=" + quote("metadata.name!=b")) == ["a", "c", "d"]
    assert names("fieldSelector=" + quote("metadata.namespace==default")) == ["a", "b", "c", "d"]
    code, _, st = raw("GET", f"{CM}?fieldSelector=" + quote("data.x=1"))
    assert code == 400 and st["reason"] == "BadRequest"


def test_patch_types(raw: Raw) -> None:
    raw("POST", CM, cm("a", x="1", y="2"))
    code, _, a = raw(
        "PATCH", f"{CM}/a", {"data": {"x": None, "z": "3"}}, "application/merge-patch+json"
    )
    assert code == 200 and a["data"] == {"y": "2", "z": "3"}
    code, _, a = raw(
        "PATCH",
        f"{CM}/a",
        [
            {"op": "replace", "path": "/data/y", "value": "9"},
            {"op": "add", "path": "/data/w", "value": "0"},
        ],
        "application/json-patch+json",
    )
    assert code == 200 and a["data"] == {"y": "9", "z": "3", "w": "0"}
    code, _, st = raw(
        "PATCH",
        f"{CM}/a",
        [{"op": "test", "path": "/data/y", "value": "nope"}],
        "application/json-patch+json",
    )
    # applyJSPatch's NewGenericServerResponse drops the library's text.
    assert (code, st["reason"], st["details"]) == (422, "Invalid", {})
    assert st["message"] == "the server rejected our request due to an error in our request"
    # Stale resourceVersion in a patch conflicts.
    code, _, st = raw(
        "PATCH",
        f"{CM}/a",
        {"metadata": {"resourceVersion": "1"}, "data": {"q": "1"}},
        "application/merge-patch+json",
    )
    assert code == 409
    code, _, st = raw("PATCH", f"{CM}/missing", {"data": {}}, "application/merge-patch+json")
    assert code == 404
    code, _, st = raw("PATCH", f"{CM}/a", {"data": {}}, "text/plain")
    assert code == 415


def test_strategic_merge_patch(raw: Raw) -> None:
    d = deployment("web")
    d["spec"]["template"]["spec"]["containers"] = [
        {
            "name": "a",
            "image": "nginx:1",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "X", "value": "1"}],
        },
        {"name": "b", "image": "redis:7"},
    ]
    raw("POST", DEPLOY, d)
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "a", "image": "nginx:2", "env": [{"name": "Y", "value": "2"}]},
                        {"name": "b", "$patch": "delete"},
                        {"name": "c", "image": "busybox"},
                    ]
                }
            }
        }
    }
    code, _, out = raw("PATCH", f"{DEPLOY}/web", patch, "application/strategic-merge-patch+json")
    assert code == 200, out
    cs = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in cs] == ["a", "c"]
    assert cs[0]["image"] == "nginx:2"
    assert cs[0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert [e["name"] for e in cs[0]["env"]] == ["Y", "X"]  # kube: new patch items go first
    assert out["metadata"]["generation"] == 2
    # Service ports merge by port.
    svc = "/api/v1/namespaces/default/services"
    code, _, s = raw(
        "POST", svc, {"metadata": {"name": "s"}, "spec": {"ports": [{"name": "http", "port": 80}]}}
    )
    assert code == 201
    assert s["spec"]["ports"] == [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}]
    assert s["spec"]["clusterIP"] and s["spec"]["type"] == "ClusterIP"
    code, _, s2 = raw(
        "PATCH",
        f"{svc}/s",
        {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "name": "https"}]}},
        "application/strategic-merge-patch+json",
    )
    assert code == 200
    assert [(p["port"], p["targetPort"]) for p in s2["spec"]["ports"]] == [(80, 8080), (443, 443)]
    assert s2["spec"]["clusterIP"] == s["spec"]["clusterIP"]


def test_apply_patch(raw: Raw) -> None:
    applied = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  k: v\n"
    code, _, st = raw("PATCH", f"{CM}/ap", applied, "application/apply-patch+yaml")
    # ValidatePatchOptions: an apply needs a field manager (422, PatchOptions).
    assert code == 422 and st["details"]["causes"][0]["field"] == "fieldManager"
    code, _, a = raw("PATCH", f"{CM}/ap?fieldManager=test", applied, "application/apply-patch+yaml")
    assert code == 201 and a["data"] == {"k": "v"}
    applied2 = applied.replace(b"k: v", b"k: w")
    code, _, a = raw(
        "PATCH", f"{CM}/ap?fieldManager=test", applied2, "application/apply-patch+yaml"
    )
    assert code == 200 and a["data"] == {"k": "w"}


def test_delete_answers_a_status_and_checks_preconditions(raw: Raw) -> None:
    _, _, a = raw("POST", CM, cm("a"))
    code, _, st = raw("DELETE", f"{CM}/a", {"preconditions": {"uid": "other"}})
    assert code == 409 and st["reason"] == "Conflict"
    code, _, st = raw("DELETE", f"{CM}/a", {"preconditions": {"resourceVersion": "1"}})
    assert code == 409
    code, _, gone = raw(
        "DELETE",
        f"{CM}/a",
        {"preconditions": {"uid": a["metadata"]["uid"]}, "gracePeriodSeconds": 30},
    )
    # The configmaps store does not set ReturnDeletedObject: finalizeDelete
    # answers a Status naming what it deleted (test_delete_response.py).
    assert code == 200 and gone["kind"] == "Status" and gone["status"] == "Success"
    assert gone["details"] == {"name": "a", "kind": "configmaps", "uid": a["metadata"]["uid"]}
    assert raw("GET", f"{CM}/a")[0] == 404
    assert raw("DELETE", f"{CM}/a")[0] == 404


def test_delete_collection(raw: Raw) -> None:
    for n in ("a", "b", "c"):
        body = cm(n)
        body["metadata"]["labels"] = {"del": "yes" if n != "c" else "no"}
        raw("POST", CM, body)
    code, _, out = raw("DELETE", f"{CM}?labelSelector=del%3Dyes")
    assert code == 200
    _, _, lst = raw("GET", CM)
    assert [i["metadata"]["name"] for i in lst["items"]] == ["c"]


def test_fail_next_and_latency(raw: Raw, apiserver: APIServer) -> None:
    apiserver.fail_next(status=500, times=2, method="GET", path_regex=r"/configmaps")
    assert raw("POST", CM, cm("a"))[0] == 201  # method does not match
    code, _, st = raw("GET", f"{CM}/a")
    assert code == 500 and st["kind"] == "Status" and st["reason"] == "InternalError"
    assert raw("GET", f"{CM}/a")[0] == 500
    assert raw("GET", f"{CM}/a")[0] == 200
    apiserver.fail_next(status=429)
    code, headers, st = raw("GET", f"{CM}/a")
    assert code == 429 and headers["Retry-After"] == "1" and st["reason"] == "TooManyRequests"
    apiserver.fail_next(status=409, path_regex=r"labelSelector=x")
    assert raw("GET", f"{CM}/a")[0] == 200
    assert raw("GET", f"{CM}?labelSelector=x")[0] == 409
    apiserver.set_latency(0.3, path_regex=r"/configmaps/a$")
    t0 = time.monotonic()
    raw("GET", f"{CM}/a")
    assert time.monotonic() - t0 >= 0.3
    apiserver.set_latency(0, path_regex=r"/configmaps/a$")
    t0 = time.monotonic()
    raw("GET", f"{CM}/a")
    assert time.monotonic() - t0 < 0.3


def test_request_log_and_writes(raw: Raw, apiserver: APIServer) -> None:
    raw("POST", DEPLOY, deployment("web"))
    raw("GET", f"{DEPLOY}/web?x=1")
    raw(
        "PATCH", f"{DEPLOY}/web/status", {"status": {"replicas": 1}}, "application/merge-patch+json"
    )
    raw("POST", CM, cm("a"))
    raw("DELETE", f"{CM}/missing")
    log = list(apiserver.request_log)
    assert RequestRecord("GET", "/apis/apps/v1/namespaces/default/deployments/web?x=1", 200) in log
    assert RequestRecord("DELETE", "/api/v1/namespaces/default/configmaps/missing", 404) in log
    assert apiserver.writes() == 4
    assert apiserver.writes("deployments") == 2
    assert apiserver.writes("configmaps") == 2
    assert apiserver.writes("pods") == 0


def test_kubernetes_client_roundtrip(apiserver: APIServer) -> None:
    api = client.CoreV1Api(apiserver.api_client())
    api.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="k"), data={"a": "b"})
    )
    got = api.read_namespaced_config_map("k", "default")
    assert got.data == {"a": "b"}
    with pytest.raises(ApiException) as ei:
        api.read_namespaced_config_map("nope", "default")
    assert ei.value.status == 404
    apps = client.AppsV1Api(apiserver.api_client())
    apps.create_namespaced_deployment("default", deployment("web"))
    apps.patch_namespaced_deployment_scale  # noqa: B018 - scale is not served; only attribute access
    lst = apps.list_deployment_for_all_namespaces()
    assert [d.metadata.name for d in lst.items] == ["web"]


def test_builtin_kinds_served(raw: Raw) -> None:
    paths = [
        "/api/v1/namespaces/default/pods",
        "/api/v1/namespaces/default/services",
        "/api/v1/namespaces/default/secrets",
        "/api/v1/namespaces/default/serviceaccounts",
        "/api/v1/namespaces/default/events",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/api/v1/pods",
        "/apis/apps/v1/deployments",
    ]
    for p in paths:
        code, _, body = raw("GET", p)
        assert code == 200, (p, body)
        assert body["kind"].endswith("List")
    code, _, pod = raw(
        "POST",
        "/api/v1/namespaces/default/pods",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    )
    assert code == 201 and pod["status"]["phase"] == "Pending"
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    code, _, cr = raw(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {"metadata": {"name": "r"}, "rules": []},
    )
    assert code == 201 and "namespace" not in cr["metadata"]


def test_stop_start_preserves_state(apiserver: APIServer) -> None:
    raw: Raw = functools.partial(call, apiserver)
    raw("POST", CM, cm("keep"))
    port = apiserver.port
    rv = apiserver.resource_version
    apiserver.stop()
    with pytest.raises(OSError):
        raw("GET", CM)
    apiserver.start()
    assert apiserver.port == port
    code, _, got = raw("GET", f"{CM}/keep")
    assert code == 200
    _, _, b = raw("POST", CM, cm("after"))
    assert int(b["metadata"]["resourceVersion"]) == rv + 1


def test_write_kubeconfig(apiserver: APIServer, tmp_path: Any) -> None:
    from kubernetes import config

    path = apiserver.write_kubeconfig(tmp_path / "kc")
    api_client = config.new_client_from_config(config_file=path)
    v1 = client.CoreV1Api(api_client)
    assert "default" in [n.metadata.name for n in v1.list_namespace().items]


def test_keep_alive_requests_are_fast(apiserver: APIServer) -> None:
    """Regression: responses on a keep-alive connection must not wait for
    delayed ACKs (Nagle); 300 creates take well under a second."""
    u = urlsplit(apiserver.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    t0 = time.monotonic()
    for i in range(300):
        conn.request(
            "POST", CM, body=json.dumps(cm(f"k{i}")), headers={"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 201
    conn.close()
    assert time.monotonic() - t0 < 5.0


def test_builtin_validation_rules(raw: Raw) -> None:
    bad = deployment("web")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    code, _, st = raw("POST", DEPLOY, bad)
    assert code == 422
    assert st["details"]["causes"][0]["field"] == "spec.template.metadata.labels"
    no_sel = deployment("web")
    del no_sel["spec"]["selector"]
    code, _, st = raw("POST", DEPLOY, no_sel)
    assert code == 422 and st["details"]["causes"][0]["field"] == "spec.selector"
    _, _, d = raw("POST", DEPLOY, deployment("web"))
    d["spec"]["selector"] = {"matchLabels": {"app": "web", "x": "y"}}
    d["spec"]["template"]["metadata"]["labels"] = {"app": "web", "x": "y"}
    code, _, st = raw("PUT", f"{DEPLOY}/web", d)
    assert code == 422 and st["details"]["causes"][0]["field"] == "spec.selector"
    svc = "/api/v1/namespaces/default/services"
    _, _, s = raw("POST", svc, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    s["spec"]["clusterIP"] = "10.99.99.99"
    code, _, st = raw("PUT", f"{svc}/s", s)
    assert code == 422 and st["details"]["causes"][0]["field"] == "spec.clusterIPs[0]"
    # Omitting allocated values on update keeps them (kube patches them in).
    s["spec"].pop("clusterIP")
    s["spec"].pop("clusterIPs")
    code, _, s2 = raw("PUT", f"{svc}/s", s)
    assert code == 200 and s2["spec"]["clusterIP"] != "10.99.99.99" and s2["spec"]["clusterIP"]


def test_pooled_client_reconnects_after_restart(apiserver: APIServer) -> None:
    api = client.CoreV1Api(apiserver.api_client())
    api.create_namespaced_config_map("default", {"metadata": {"name": "p"}})
    apiserver.stop()
    apiserver.start()
    assert [c.metadata.name for c in api.list_namespaced_config_map("default").items] == ["p"]


def test_undecodable_bodies(raw: Raw) -> None:
    # A truncated protobuf envelope is a 400 (protobuf bodies: test_protobuf.py);
    # CBOR is not served (415).
    code, _, st = raw(
        "POST", CM, b"k8s\x00\n\x0f\n\x02v1", ctype="application/vnd.kubernetes.protobuf"
    )
    assert code == 400 and st["reason"] == "BadRequest"
    assert "protobuf" in st["message"]
    code, _, st = raw("POST", CM, b"\xa0", ctype="application/cbor")
    assert code == 415 and st["reason"] == "UnsupportedMediaType"
    # YAML bodies are accepted.
    code, _, obj = raw("POST", CM, b"metadata:\n  name: y\n", ctype="application/yaml")
    assert code == 201 and obj["metadata"]["name"] == "y"


def test_a_repeated_query_parameter_takes_its_first_value(raw: Raw) -> None:
    # Go's url.Values.Get and apimachinery's Convert_Slice_string_To_string:
    # the first of repeated values wins.
    cm = "/api/v1/namespaces/default/configmaps"
    raw("POST", cm, {"metadata": {"name": "a", "labels": {"k": "a"}}})
    raw("POST", cm, {"metadata": {"name": "b", "labels": {"k": "b"}}})
    code, _, listed = raw("GET", f"{cm}?labelSelector=k%3Da&labelSelector=k%3Db")
    assert code == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["a"]
