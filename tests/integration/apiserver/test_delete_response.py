"""What a DELETE answers, per kind, as kube-apiserver 1.32.

``Store.finalizeDelete`` (``apiserver/pkg/registry/generic/registry/store.go``)
answers an object deleted at once with the object itself only for stores that
set ``ReturnDeletedObject: true`` (pods, services, namespaces, persistent
volumes and claims, ... see ``schema/kinds.py``); every other store (and every
custom resource) answers a ``Status`` whose ``details.kind`` is the resource
plural ("Yes we set Kind field to resource"). An object that is not removed at
once (finalizers, a pod's grace period, a namespace) is answered as marked for
deletion, whatever its kind; then ``DeleteResource`` (``handlers/delete.go``)
answers 202 instead of 200 if the request set ``orphanDependents: false``.
DELETE on a collection answers the List of the objects it listed.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s
from support import crds
from support.http import call

from pycontroller.testing import APIServer
from pycontroller.testing.apiserver.schema import kinds

NS = "/api/v1/namespaces/default"
CMS = f"{NS}/configmaps"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _cm(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


def _create(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, _, created = call(server, "POST", path, body)
    assert code == 201, created
    assert isinstance(created, dict)
    return created


def _status(name: str, uid: str, resource: str, group: str = "") -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details.update(kind=resource, uid=uid)
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


def _assert_status(body: Any, expected: dict[str, Any]) -> None:
    assert body == expected
    # The field order of Go's encoding of metav1.Status / StatusDetails.
    assert list(body) == list(expected)
    assert list(body["details"]) == list(expected["details"])


# --- kinds that answer a Status -----------------------------------------------------

STATUS_KINDS = [
    pytest.param(CMS, _cm("x"), "configmaps", "", id="configmaps"),
    pytest.param(
        f"{NS}/secrets",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}},
        "secrets", "", id="secrets",
    ),
    pytest.param(
        "/apis/apps/v1/namespaces/default/deployments",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
         "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
             "metadata": {"labels": {"a": "b"}},
             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
        "deployments", "apps", id="deployments",
    ),
    pytest.param(
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "x"}},
        "leases", "coordination.k8s.io", id="leases",
    ),
    pytest.param(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "x"}},
        "clusterroles", "rbac.authorization.k8s.io", id="clusterroles",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "resource", "group"), STATUS_KINDS)
def test_a_delete_at_once_answers_a_status(
    apiserver: APIServer, path: str, body: dict[str, Any], resource: str, group: str
) -> None:
    created = _create(apiserver, path, body)
    code, headers, deleted = call(apiserver, "DELETE", f"{path}/x")
    assert code == 200, deleted
    assert headers["Content-Type"] == "application/json"
    _assert_status(deleted, _status("x", created["metadata"]["uid"], resource, group))
    assert call(apiserver, "GET", f"{path}/x")[0] == 404


def test_the_status_names_the_requested_group_not_the_stored_one(apiserver: APIServer) -> None:
    # events.k8s.io/v1 Events share core/v1's store; qualifiedResourceFromContext
    # takes the group and resource from the request.
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    created = _create(apiserver, path, {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "x/y",
        "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
    })  # fmt: skip
    code, _, deleted = call(apiserver, "DELETE", f"{path}/e")
    assert code == 200, deleted
    _assert_status(deleted, _status("e", created["metadata"]["uid"], "events", "events.k8s.io"))


@pytest.mark.apiserver(crds=[crds.crd("gadgets", "Gadget")])
def test_a_custom_resource_delete_answers_a_status(apiserver: APIServer) -> None:
    # apiextensions-apiserver's customresource store does not set ReturnDeletedObject.
    path = "/apis/example.com/v1/namespaces/default/gadgets"
    created = _create(
        apiserver,
        path,
        {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}},
    )
    code, _, deleted = call(apiserver, "DELETE", f"{path}/g")
    assert code == 200, deleted
    _assert_status(deleted, _status("g", created["metadata"]["uid"], "gadgets", "example.com"))


def test_a_dry_run_delete_at_once_answers_a_status_and_keeps_the_object(
    apiserver: APIServer,
) -> None:
    created = _create(apiserver, CMS, _cm("dry"))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/dry?dryRun=All")
    assert code == 200, deleted
    _assert_status(deleted, _status("dry", created["metadata"]["uid"], "configmaps"))
    assert call(apiserver, "GET", f"{CMS}/dry")[0] == 200


def test_a_status_is_not_converted_to_a_table(apiserver: APIServer) -> None:
    # doTransformObject passes a *metav1.Status through whatever the target.
    created = _create(apiserver, CMS, _cm("t"))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/t", headers={"Accept": TABLE})
    assert code == 200, deleted
    _assert_status(deleted, _status("t", created["metadata"]["uid"], "configmaps"))


# --- kinds that answer the deleted object -----------------------------------------

OBJECT_KINDS = [
    pytest.param(
        f"{NS}/pods",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
         "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        "Pod", id="pods",
    ),
    pytest.param(
        f"{NS}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}},
        "ServiceAccount", id="serviceaccounts",
    ),
    pytest.param(
        f"{NS}/services",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"},
         "spec": {"ports": [{"port": 80}]}},
        "Service", id="services",
    ),
    pytest.param(
        f"{NS}/resourcequotas",
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "x"}},
        "ResourceQuota", id="resourcequotas",
    ),
    pytest.param(
        f"{NS}/podtemplates",
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "x"},
         "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "PodTemplate", id="podtemplates",
    ),
    pytest.param(
        "/apis/storage.k8s.io/v1/storageclasses",
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "x"},
         "provisioner": "example.com/p"},
        "StorageClass", id="storageclasses",
    ),
    pytest.param(
        "/apis/storage.k8s.io/v1/csidrivers",
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "x"},
         "spec": {}},
        "CSIDriver", id="csidrivers",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "kind"), OBJECT_KINDS)
def test_a_store_with_return_deleted_object_answers_the_object(
    apiserver: APIServer, path: str, body: dict[str, Any], kind: str
) -> None:
    created = _create(apiserver, path, body)
    code, _, deleted = call(apiserver, "DELETE", f"{path}/x")
    assert code == 200, deleted
    assert deleted["kind"] == kind
    assert deleted["metadata"]["uid"] == created["metadata"]["uid"]
    assert call(apiserver, "GET", f"{path}/x")[0] == 404


# --- deletions that are not immediate ---------------------------------------------


def test_an_object_kept_by_a_finalizer_is_answered_marked_as_deleting(
    apiserver: APIServer,
) -> None:
    _create(apiserver, CMS, _cm("f", finalizers=["example.com/keep"]))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/f")
    assert code == 200, deleted
    assert deleted["kind"] == "ConfigMap"
    assert deleted["metadata"]["deletionTimestamp"]
    assert deleted["metadata"]["finalizers"] == ["example.com/keep"]
    # A dry run answers the would-be marked object the same way.
    _create(apiserver, CMS, _cm("g", finalizers=["example.com/keep"]))
    code, _, dry = call(apiserver, "DELETE", f"{CMS}/g?dryRun=All")
    assert code == 200, dry
    assert dry["kind"] == "ConfigMap"
    assert dry["metadata"]["deletionTimestamp"]


def test_foreground_propagation_answers_the_marked_object(apiserver: APIServer) -> None:
    _create(apiserver, CMS, _cm("fg"))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/fg", {"propagationPolicy": "Foreground"})
    assert code == 200, deleted
    assert deleted["kind"] == "ConfigMap"
    assert deleted["metadata"]["finalizers"] == ["foregroundDeletion"]


def test_orphan_dependents_false_answers_202_when_not_deleted_at_once(
    apiserver: APIServer,
) -> None:
    _create(apiserver, CMS, _cm("kept", finalizers=["example.com/keep"]))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/kept", {"orphanDependents": False})
    assert code == 202, deleted
    assert deleted["kind"] == "ConfigMap"
    assert deleted["metadata"]["deletionTimestamp"]
    # From the query too.
    _create(apiserver, CMS, _cm("kept2", finalizers=["example.com/keep"]))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/kept2?orphanDependents=false")
    assert code == 202, deleted


def test_orphan_dependents_false_answers_200_when_deleted_at_once(apiserver: APIServer) -> None:
    created = _create(apiserver, CMS, _cm("gone"))
    code, _, deleted = call(apiserver, "DELETE", f"{CMS}/gone", {"orphanDependents": False})
    assert code == 200, deleted
    _assert_status(deleted, _status("gone", created["metadata"]["uid"], "configmaps"))


def test_only_orphan_dependents_false_answers_202(apiserver: APIServer) -> None:
    for name, options in [
        ("a", {"propagationPolicy": "Background"}),
        ("b", {"orphanDependents": True}),
        ("c", {}),
    ]:
        _create(apiserver, CMS, _cm(name, finalizers=["example.com/keep"]))
        code, _, deleted = call(apiserver, "DELETE", f"{CMS}/{name}", options)
        assert code == 200, (name, deleted)
        assert deleted["metadata"]["deletionTimestamp"]


def test_a_namespace_delete_answers_the_terminating_namespace(apiserver: APIServer) -> None:
    # The namespace REST's own Delete answers the namespace it marked; it is
    # never deleted at once, so orphanDependents=false answers 202.
    _create(apiserver, "/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    code, _, deleted = call(
        apiserver, "DELETE", "/api/v1/namespaces/doomed", {"orphanDependents": False}
    )
    assert code == 202, deleted
    assert deleted["kind"] == "Namespace"
    assert deleted["status"]["phase"] == "Terminating"


def test_a_pod_in_its_grace_period_is_answered_with_202_for_orphan_dependents_false(
    apiserver: APIServer,
) -> None:
    _create(apiserver, f"{NS}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    })  # fmt: skip
    code, _, deleted = call(apiserver, "DELETE", f"{NS}/pods/p", {"orphanDependents": False})
    assert code == 202, deleted
    assert deleted["kind"] == "Pod"
    assert deleted["metadata"]["deletionGracePeriodSeconds"] == 30


# --- DELETE on a collection -------------------------------------------------------


def test_a_collection_delete_answers_the_list_of_what_it_listed(apiserver: APIServer) -> None:
    a = _create(apiserver, CMS, _cm("a", labels={"app": "x"}))
    b = _create(apiserver, CMS, _cm("b", labels={"app": "x"}, finalizers=["example.com/keep"]))
    _create(apiserver, CMS, _cm("c"))
    code, _, listed = call(apiserver, "DELETE", f"{CMS}?labelSelector=app%3Dx")
    assert code == 200, listed
    assert listed["kind"] == "ConfigMapList"
    assert listed["apiVersion"] == "v1"
    # The items as listed, before their deletion (DeleteCollection returns the List).
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]
    assert listed["items"][0]["metadata"] == a["metadata"]
    assert listed["items"][1]["metadata"] == b["metadata"]
    assert "deletionTimestamp" not in listed["items"][1]["metadata"]
    assert call(apiserver, "GET", f"{CMS}/a")[0] == 404
    code, _, kept = call(apiserver, "GET", f"{CMS}/b")
    assert code == 200 and kept["metadata"]["deletionTimestamp"]
    code, _, empty = call(apiserver, "DELETE", f"{CMS}?labelSelector=app%3Dnone")
    assert code == 200
    assert empty["kind"] == "ConfigMapList" and empty["items"] == []


def test_a_collection_delete_with_a_limit_deletes_one_page(apiserver: APIServer) -> None:
    # Store.DeleteCollection's hasLimit: only the first page is deleted, and
    # its List (with the continue token) is the answer; the token deletes the next.
    for name in ("a", "b", "c"):
        _create(apiserver, CMS, _cm(name))
    code, _, page = call(apiserver, "DELETE", f"{CMS}?limit=2")
    assert code == 200, page
    assert [i["metadata"]["name"] for i in page["items"]] == ["a", "b"]
    assert page["metadata"]["continue"]
    assert page["metadata"]["remainingItemCount"] == 1
    assert call(apiserver, "GET", f"{CMS}/a")[0] == 404
    assert call(apiserver, "GET", f"{CMS}/c")[0] == 200
    token = page["metadata"]["continue"]
    code, _, rest = call(apiserver, "DELETE", f"{CMS}?limit=2&continue={token}")
    assert code == 200, rest
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
    assert "continue" not in rest["metadata"]
    assert call(apiserver, "GET", f"{CMS}/c")[0] == 404


# --- the kubernetes client's typed API --------------------------------------------


def test_the_kubernetes_client_deserializes_each_answer(apiserver: APIServer) -> None:
    core = k8s.CoreV1Api(apiserver.api_client())
    cm = core.create_namespaced_config_map(
        "default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="typed"), data={"k": "v"})
    )
    answer = core.delete_namespaced_config_map("typed", "default")
    # kubernetes 37's generated API types this answer as a bare ``object``
    # (older ones as V1Status): either way it is the Status, not the ConfigMap.
    status = answer if isinstance(answer, k8s.V1Status) else k8s.V1Status.from_dict(answer)
    assert isinstance(answer, k8s.V1Status) or answer["kind"] == "Status"
    assert status.status == "Success"
    assert status.details.name == "typed"
    assert status.details.kind == "configmaps"
    assert status.details.uid == cm.metadata.uid
    pod = core.create_namespaced_pod("default", k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name="typed"),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx")]),
    ))  # fmt: skip
    deleted = core.delete_namespaced_pod("typed", "default")
    assert isinstance(deleted, k8s.V1Pod)
    assert deleted.metadata.uid == pod.metadata.uid
    apps = k8s.AppsV1Api(apiserver.api_client())
    apps.create_namespaced_deployment("default", k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="typed"),
        spec=k8s.V1DeploymentSpec(
            selector=k8s.V1LabelSelector(match_labels={"a": "b"}),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels={"a": "b"}),
                spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx")]),
            ),
        ),
    ))  # fmt: skip
    answer = apps.delete_namespaced_deployment("typed", "default")
    status = answer if isinstance(answer, k8s.V1Status) else k8s.V1Status.from_dict(answer)
    assert (status.kind, status.status) == ("Status", "Success")
    assert (status.details.group, status.details.kind) == ("apps", "deployments")


def test_every_store_in_the_table_is_a_served_built_in_kind() -> None:
    served = {(t.group, t.plural) for t in kinds.builtin_types() if "delete" in t.verbs}
    assert not kinds.RETURN_DELETED_OBJECT - served
