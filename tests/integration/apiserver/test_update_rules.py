"""Create and update rules of kube-apiserver 1.32's generic store, over HTTP:
a create carrying ``metadata.resourceVersion`` (etcd3 ``store.Create``), the
generation of custom resources (``customResourceStrategy.PrepareForUpdate``),
the system metadata an update may not change (``rest.BeforeUpdate``,
``ValidateObjectMetaUpdate``, the handlers' ``checkName``, the UID
precondition) and the per-kind ``AllowUnconditionalUpdate`` /
``AllowCreateOnUpdate`` of the update strategies."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

CM = "/api/v1/namespaces/default/configmaps"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
MERGE = "application/merge-patch+json"
ZERO_UID = "00000000-0000-0000-0000-000000000000"


def _crd(plural: str, kind: str, *, status: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [version],
        },
    }


CRDS = [_crd("gadgets", "Gadget", status=False), _crd("widgets", "Widget", status=True)]


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


# --- create with a resourceVersion ---------------------------------------------------


def test_create_with_resource_version_is_a_500(raw: Raw) -> None:
    code, _, src = raw("POST", CM, {"metadata": {"name": "src"}, "data": {"a": "b"}})
    assert code == 201
    rv = src["metadata"]["resourceVersion"]
    copy_ = {"metadata": {"name": "copy", "resourceVersion": rv}, "data": {"a": "b"}}
    code, _, st = raw("POST", CM, copy_)
    assert (code, st) == (
        500,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "resourceVersion should not be set on objects to be created",
            "code": 500,
        },
    )
    assert raw("GET", f"{CM}/copy")[0] == 404
    # The storage refuses it before looking for the key: an existing name too.
    code, _, st = raw("POST", CM, {"metadata": {"name": "src", "resourceVersion": rv}})
    assert code == 500 and "reason" not in st
    # "0" and what does not parse are dropped.
    code, _, zero = raw("POST", CM, {"metadata": {"name": "zero", "resourceVersion": "0"}})
    assert code == 201 and zero["metadata"]["resourceVersion"] != "0"
    code, _, junk = raw("POST", CM, {"metadata": {"name": "junk", "resourceVersion": "x"}})
    assert code == 201 and junk["metadata"]["resourceVersion"] != "x"


def test_dry_run_create_with_resource_version_answers_it_as_given(raw: Raw) -> None:
    # DryRunnableStorage.Create copies the object out without store.Create's check.
    body = {"metadata": {"name": "dry", "resourceVersion": "12345"}}
    code, _, obj = raw("POST", f"{CM}?dryRun=All", body)
    assert code == 201 and obj["metadata"]["resourceVersion"] == "12345"
    assert raw("GET", f"{CM}/dry")[0] == 404


# --- custom resource generation ------------------------------------------------------


@pytest.mark.apiserver(crds=CRDS)
def test_custom_resource_without_status_subresource_bumps_generation_on_status(
    raw: Raw,
) -> None:
    gadgets = "/apis/example.com/v1/namespaces/default/gadgets"
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    code, _, g = raw("POST", gadgets, {**body, "spec": {"a": 1}})
    assert code == 201 and g["metadata"]["generation"] == 1
    code, _, g = raw("PATCH", f"{gadgets}/g", {"status": {"observedGeneration": 1}}, MERGE)
    assert code == 200 and g["metadata"]["generation"] == 2
    code, _, g = raw("PATCH", f"{gadgets}/g", {"other": "x"}, MERGE)
    assert code == 200 and g["metadata"]["generation"] == 3
    code, _, g = raw("PATCH", f"{gadgets}/g", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert code == 200 and g["metadata"]["generation"] == 3


@pytest.mark.apiserver(crds=CRDS)
def test_custom_resource_with_status_subresource_bumps_generation_on_spec_only(
    raw: Raw,
) -> None:
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    code, _, w = raw("POST", widgets, {**body, "spec": {"a": 1}})
    assert code == 201
    code, _, w = raw("PATCH", f"{widgets}/w", {"status": {"x": 1}}, MERGE)
    assert code == 200 and w["metadata"]["generation"] == 1 and "status" not in w
    code, _, w = raw("PATCH", f"{widgets}/w", {"other": "x"}, MERGE)
    assert code == 200 and w["metadata"]["generation"] == 2


# --- system metadata on update -------------------------------------------------------


def test_put_with_another_uid_fails_its_precondition(raw: Raw) -> None:
    code, _, cm = raw("POST", CM, {"metadata": {"name": "cm"}})
    uid = cm["metadata"]["uid"]
    code, _, st = raw("PUT", f"{CM}/cm", {"metadata": {"name": "cm", "uid": ZERO_UID}})
    assert code == 409 and st["reason"] == "Conflict"
    assert st["message"] == (
        'Operation cannot be fulfilled on configmaps "cm": StorageError: invalid object, '
        "Code: 4, Key: /registry/configmaps/default/cm, ResourceVersion: 0, "
        f"AdditionalErrorMsg: Precondition failed: UID in precondition: {ZERO_UID}, "
        f"UID in object meta: {uid}"
    )
    assert st["details"] == {"name": "cm", "kind": "configmaps"}
    # The same UID is no change.
    code, _, _ = raw("PUT", f"{CM}/cm", {"metadata": {"name": "cm", "uid": uid}})
    assert code == 200
    # A Service's key: its store's prefix ("services/specs"); one missing: no UID.
    svc = "/api/v1/namespaces/default/services"
    body = {"metadata": {"name": "s", "uid": ZERO_UID}, "spec": {"ports": [{"port": 80}]}}
    code, _, st = raw("PUT", f"{svc}/s", body)
    assert code == 409
    assert st["message"].endswith(
        "Key: /registry/services/specs/default/s, ResourceVersion: 0, AdditionalErrorMsg: "
        f"Precondition failed: UID in precondition: {ZERO_UID}, UID in object meta: "
    )


def test_patch_changing_uid_is_invalid(raw: Raw) -> None:
    raw("POST", CM, {"metadata": {"name": "cm"}})
    code, _, st = raw("PATCH", f"{CM}/cm", {"metadata": {"uid": ZERO_UID}}, MERGE)
    cause = {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "{ZERO_UID}": field is immutable',
        "field": "metadata.uid",
    }
    assert (code, st["reason"]) == (422, "Invalid")
    assert st["message"] == (
        f'ConfigMap "cm" is invalid: metadata.uid: Invalid value: "{ZERO_UID}": '
        "field is immutable"
    )
    # validateCommonFields and ValidateConfigMapUpdate both report it.
    assert st["details"] == {"name": "cm", "kind": "ConfigMap", "causes": [cause, cause]}


def test_update_cannot_set_generation(raw: Raw) -> None:
    code, _, cm = raw("POST", CM, {"metadata": {"name": "cm"}})
    assert "generation" not in cm["metadata"]
    code, _, cm = raw("PATCH", f"{CM}/cm", {"metadata": {"generation": 42}}, MERGE)
    assert code == 200 and "generation" not in cm["metadata"]
    body = {"metadata": {"name": "cm", "generation": 7}, "data": {"a": "b"}}
    code, _, cm = raw("PUT", f"{CM}/cm", body)
    assert code == 200 and "generation" not in cm["metadata"]
    # A kind whose strategy owns it: kept at the stored value.
    deploy = "/apis/apps/v1/namespaces/default/deployments"
    labels = {"app": "d"}
    spec = {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    }
    raw("POST", deploy, {"metadata": {"name": "d"}, "spec": spec})
    code, _, d = raw("PATCH", f"{deploy}/d", {"metadata": {"generation": 42}}, MERGE)
    assert code == 200 and d["metadata"]["generation"] == 1


def test_patch_changing_namespace_or_name_is_a_bad_request(raw: Raw) -> None:
    raw("POST", CM, {"metadata": {"name": "cm"}})
    code, _, st = raw("PATCH", f"{CM}/cm", {"metadata": {"namespace": "kube-system"}}, MERGE)
    assert (code, st["reason"], st["message"]) == (
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    )
    code, _, st = raw("PATCH", f"{CM}/cm", {"metadata": {"name": "other"}}, MERGE)
    assert (code, st["message"]) == (
        400,
        "the name of the object (other) does not match the name on the URL (cm)",
    )
    code, _, st = raw("PATCH", f"{CM}/cm", {"metadata": {"name": None}}, MERGE)
    assert (code, st["message"]) == (
        400,
        "the name of the object (cm based on URL) was undeterminable: name must be provided",
    )


def test_put_without_name_is_a_bad_request(raw: Raw) -> None:
    raw("POST", CM, {"metadata": {"name": "cm"}})
    code, _, st = raw("PUT", f"{CM}/cm", {"metadata": {}, "data": {"z": "1"}})
    assert (code, st["reason"], st["message"]) == (
        400,
        "BadRequest",
        "the name of the object (cm based on URL) was undeterminable: name must be provided",
    )
    # The namespace is checked first.
    body = {"metadata": {"namespace": "kube-system"}}
    code, _, st = raw("PUT", f"{CM}/cm", body)
    assert code == 400 and "namespace" in st["message"]


# --- per-kind update strategy --------------------------------------------------------


def test_lease_update_needs_a_resource_version(raw: Raw) -> None:
    code, _, lease = raw("POST", LEASES, {"metadata": {"name": "l"}, "spec": {}})
    assert code == 201
    body = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "b"}}
    code, _, st = raw("PUT", f"{LEASES}/l", body)
    msg = "Invalid value: 0x0: must be specified for an update"
    assert (code, st["reason"]) == (422, "Invalid")
    assert (
        st["message"]
        == f'leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: {msg}'
    )
    assert st["details"] == {
        "name": "l",
        "group": "coordination.k8s.io",
        "kind": "leases",
        "causes": [
            {"reason": "FieldValueInvalid", "message": msg, "field": "metadata.resourceVersion"}
        ],
    }
    body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
    code, _, lease = raw("PUT", f"{LEASES}/l", body)
    assert code == 200 and lease["spec"]["holderIdentity"] == "b"
    # A ConfigMap takes an unconditional update, "0" being no resourceVersion.
    raw("POST", CM, {"metadata": {"name": "cm"}})
    code, _, _ = raw("PUT", f"{CM}/cm", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert code == 200
    body = {"metadata": {"name": "cm", "resourceVersion": "0"}, "data": {"a": "2"}}
    code, _, cm = raw("PUT", f"{CM}/cm", body)
    assert code == 200 and cm["data"] == {"a": "2"}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (LEASES, {"spec": {"holderIdentity": "b"}}),
        ("/api/v1/namespaces/default/services", {"spec": {"ports": [{"port": 80}]}}),
        ("/api/v1/namespaces/default/endpoints", {}),
        ("/api/v1/namespaces/default/limitranges", {"spec": {"limits": []}}),
        (
            "/api/v1/namespaces/default/events",
            {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}},
        ),
        ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", {"rules": []}),
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", {"rules": []}),
    ],
)
def test_put_creates_where_the_strategy_allows_it(raw: Raw, path: str, body: Any) -> None:
    new = {"metadata": {"name": "new", "resourceVersion": "999"}, **body}
    code, _, obj = raw("PUT", f"{path}/new", new)
    assert code == 201, obj
    assert obj["metadata"]["uid"] and obj["metadata"]["resourceVersion"] != "999"
    code, _, got = raw("GET", f"{path}/new")
    assert code == 200 and got["metadata"]["uid"] == obj["metadata"]["uid"]


def test_put_to_a_missing_name_is_not_found_elsewhere(raw: Raw) -> None:
    code, _, st = raw("PUT", f"{CM}/missing", {"metadata": {"name": "missing"}})
    assert (code, st["reason"], st["message"]) == (
        404,
        "NotFound",
        'configmaps "missing" not found',
    )


def test_pods_status_keeps_metadata_written_with_it(raw: Raw) -> None:
    # podStatusStrategy.PrepareForUpdate resets only spec, deletionTimestamp and
    # ownerReferences: a kubelet's labels and annotations written through
    # pods/status are kept (a Deployment's status write resets labels instead).
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    code, _, created = raw("POST", "/api/v1/namespaces/default/pods", pod)
    assert code == 201, created
    qos = created["status"]["qosClass"]
    patch = {
        "metadata": {"labels": {"a": "2"}, "annotations": {"k": "v"}},
        "spec": {"activeDeadlineSeconds": 5},
        "status": {"phase": "Running", "qosClass": None},
    }
    code, _, out = raw(
        "PATCH", "/api/v1/namespaces/default/pods/p/status", patch, "application/merge-patch+json"
    )
    assert code == 200, out
    assert out["metadata"]["labels"] == {"a": "2"}
    assert out["metadata"]["annotations"] == {"k": "v"}
    assert "activeDeadlineSeconds" not in out["spec"]  # spec reset
    assert out["status"]["phase"] == "Running"
    assert out["status"]["qosClass"] == qos  # immutable: backfilled


def test_delete_precondition_conflicts_name_the_kind(raw: Raw) -> None:
    # rest.BeforeDelete: NewConflict with the object's group and kind.
    code, _, cm = raw("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}})
    assert code == 201
    uid, rv = cm["metadata"]["uid"], cm["metadata"]["resourceVersion"]
    other = "6c1c9a52-0000-4000-8000-000000000000"
    code, _, st = raw(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/cm",
        {"preconditions": {"uid": other}},
    )
    assert code == 409 and st["reason"] == "Conflict"
    assert st["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "cm": the UID in the precondition ({other})'
        f" does not match the UID in record ({uid}). The object might have been deleted and"
        " then recreated"
    )
    assert st["details"] == {"name": "cm", "kind": "ConfigMap"}
    code, _, st = raw(
        "DELETE",
        "/api/v1/namespaces/default/configmaps/cm",
        {"preconditions": {"resourceVersion": "1"}},
    )
    assert code == 409
    assert st["message"] == (
        'Operation cannot be fulfilled on ConfigMap "cm": the ResourceVersion in the'
        f" precondition (1) does not match the ResourceVersion in record ({rv}). The object"
        " might have been modified"
    )


def test_recreate_with_rolling_update_parameters_is_forbidden(raw: Raw) -> None:
    # ValidateDeploymentStrategy. The classic trap: a merge patch switching a
    # defaulted RollingUpdate Deployment to Recreate without nulling
    # rollingUpdate (kubectl apply sends $retainKeys for it).
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    labels = {"app": "recreate"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "recreate"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    code, _, created = raw("POST", deployments, body)
    assert code == 201 and created["spec"]["strategy"]["type"] == "RollingUpdate"
    code, _, st = raw(
        "PATCH", f"{deployments}/recreate", {"spec": {"strategy": {"type": "Recreate"}}}, MERGE
    )
    assert code == 422 and st["reason"] == "Invalid"
    assert st["message"] == (
        'Deployment.apps "recreate" is invalid: spec.strategy.rollingUpdate: Forbidden: may not'
        " be specified when strategy `type` is 'Recreate'"
    )
    assert st["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified when strategy `type` is 'Recreate'",
            "field": "spec.strategy.rollingUpdate",
        }
    ]
    patch = {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}}
    code, _, out = raw("PATCH", f"{deployments}/recreate", patch, MERGE)
    assert code == 200 and out["spec"]["strategy"] == {"type": "Recreate"}


def test_a_node_keeps_its_status_on_create_other_kinds_do_not(raw: Raw) -> None:
    # nodeStrategy.PrepareForCreate: "Nodes allow *all* fields, including
    # status, to be set on create" (a kubelet registers its Node with its
    # capacity and conditions); serviceStrategy.PrepareForCreate resets it.
    status = {"capacity": {"cpu": "1", "pods": "40"}}
    code, _, node = raw("POST", "/api/v1/nodes", {"metadata": {"name": "n1"}, "status": status})
    assert code == 201
    assert node["status"]["capacity"] == {"cpu": "1", "pods": "40"}
    assert node["status"]["allocatable"] == {"cpu": "1", "pods": "40"}  # defaulted from it
    svc = {
        "metadata": {"name": "s1"},
        "spec": {"ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}},
    }
    code, _, created = raw("POST", "/api/v1/namespaces/default/services", svc)
    assert code == 201
    assert created["status"] == {"loadBalancer": {}}
