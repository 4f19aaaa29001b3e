"""Server-side apply cases ported from kube 1.32's
``test/integration/apiserver/apply/apply_test.go``, over HTTP, asserting what
kube-apiserver answers (codes, messages, ``managedFields``). Each test names
the upstream test it follows; cases already covered by ``test_ssa*.py`` are
not repeated here."""

# ruff: noqa: E501  (kube's fixtures verbatim)
from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.http import call

from pycontroller._time import format_rfc3339
from pycontroller.testing import APIServer, wait_for

Raw = Callable[..., tuple[int, dict[str, str], Any]]

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
DS = "/apis/apps/v1/namespaces/default/daemonsets"
STS = "/apis/apps/v1/namespaces/default/statefulsets"
CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def apply(
    raw: Raw, path: str, obj: Any, manager: str | None, *, force: bool = False
) -> tuple[int, Any]:
    query = []
    if manager is not None:
        query.append(f"fieldManager={manager}")
    if force:
        query.append("force=true")
    qs = ("?" + "&".join(query)) if query else ""
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    code, _, got = raw("PATCH", path + qs, body, APPLY)
    return code, got


def get(raw: Raw, path: str) -> Any:
    code, _, got = raw("GET", path)
    assert code == 200, got
    return got


def deployment(name: str = "deployment", **podspec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}], **podspec},
            },
        },
    }


def pod(name: str = "just-a-pod", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"containers": [{"name": "test-container-a", "image": "test-image-one"}]},
    }


def cm_body(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
        "data": data,
    }


def mf(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(obj["metadata"].get("managedFields") or [])


def without_time(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "time"} for e in entries]


# --- creation ---------------------------------------------------------------------


def test_apply_also_creates_and_a_second_manager_reapplies(raw: Raw) -> None:
    # TestApplyAlsoCreates
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "test-svc"},
        "spec": {"ports": [{"port": 8080, "protocol": "UDP"}]},
    }
    for path, body in (
        (f"{PODS}/test-pod", pod("test-pod")),
        ("/api/v1/namespaces/default/services/test-svc", svc),
    ):
        code, got = apply(raw, path, body, "apply_test")
        assert code == 201, got
        get(raw, path)
        code, got = apply(raw, path, body, "apply_test_2")
        assert code == 200, got


def test_create_on_apply_fails_with_uid(raw: Raw) -> None:
    # TestCreateOnApplyFailsWithUID
    body = pod("test-pod-uid", uid="88e00824-7f0e-11e8-94a1-c8d3ffb15800")
    code, st = apply(raw, f"{PODS}/test-pod-uid", body, "apply_test")
    assert code == 409, st
    assert st["reason"] == "Conflict"
    assert st["message"] == (
        'Operation cannot be fulfilled on pods "test-pod-uid": uid mismatch: the provided '
        "object specified uid 88e00824-7f0e-11e8-94a1-c8d3ffb15800, and no existing object "
        "was found"
    )
    assert raw("GET", f"{PODS}/test-pod-uid")[0] == 404


def test_apply_requires_field_manager(raw: Raw) -> None:
    # TestApplyRequiresFieldManager
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "test-cm"}}
    code, st = apply(raw, f"{CM}/test-cm", body, None)
    assert code == 422, st
    assert st["reason"] == "Invalid"
    assert st["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    assert apply(raw, f"{CM}/test-cm", body, "apply_test")[0] == 201


# --- no-op writes keep the resourceVersion ----------------------------------------


def test_noop_put_keeps_resource_version(raw: Raw) -> None:
    # TestNoOpUpdateSameResourceVersion
    body = pod("no-op", labels={"a": "one", "c": "two", "b": "three"})
    body["spec"]["containers"] = [
        {"name": "test-container-a", "image": "test-image-one"},
        {"name": "test-container-c", "image": "test-image-two"},
        {"name": "test-container-b", "image": "test-image-three"},
    ]
    assert apply(raw, f"{PODS}/no-op", body, "apply_test")[0] == 201
    created = get(raw, f"{PODS}/no-op")
    code, _, updated = raw("PUT", f"{PODS}/no-op", created)
    assert code == 200, updated
    assert updated["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert mf(updated) == mf(created)


def test_noop_apply_with_empty_map(raw: Raw) -> None:
    # TestNoOpApplyWithEmptyMap
    body = deployment("no-op")
    body["spec"]["replicas"] = 1
    body["spec"]["template"]["metadata"]["annotations"] = {}
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    code, created = apply(raw, f"{DEPLOY}/no-op", body, "apply_test")
    assert code == 201, created
    code, again = apply(raw, f"{DEPLOY}/no-op", body, "apply_test")
    assert code == 200, again
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_apply_empty_marker_struct_differs_from_nil(raw: Raw) -> None:
    # TestApplyEmptyMarkerStructDifferentFromNil
    body = pod("pod-with-empty-dir")
    body["spec"]["containers"][0]["volumeMounts"] = [
        {"mountPath": "/cache", "name": "cache-volume"}
    ]
    body["spec"]["volumes"] = [{"name": "cache-volume", "emptyDir": {}}]
    code, created = apply(raw, f"{PODS}/pod-with-empty-dir", body, "apply_test")
    assert code == 201, created
    vol = created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:volumes"]
    assert vol == {'k:{"name":"cache-volume"}': {".": {}, "f:emptyDir": {}, "f:name": {}}}
    body["spec"]["volumes"] = [{"name": "cache-volume"}]
    code, updated = apply(raw, f"{PODS}/pod-with-empty-dir", body, "apply_test")
    assert code == 200, updated
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    # The volume source is defaulted back to an emptyDir nobody owns.
    assert updated["spec"]["volumes"][0] == {"name": "cache-volume", "emptyDir": {}}
    vol = updated["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:volumes"]
    assert vol == {'k:{"name":"cache-volume"}': {".": {}, "f:name": {}}}


def test_noop_apply_with_null_creation_timestamp_returns_the_same_object(raw: Raw) -> None:
    # TestNoopChangeCreationTime
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "myconfig", "creationTimestamp": None, "resourceVersion": None},
        "data": {"key": "value"},
    }
    code, obj = apply(raw, f"{CM}/myconfig", body, "apply_test")
    assert code == 201, obj
    code, again = apply(raw, f"{CM}/myconfig", body, "apply_test")
    assert code == 200
    assert again == obj


STATEFULSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
    "spec": {
        "serviceName": "nginx",
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx",
                        "resources": {"limits": {"memory": "2048Mi"}},
                    }
                ]
            },
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "nginx"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
    },
}


def after_second_of(stamp: str) -> None:
    """Poll (with a deadline) until the clock has left the second of ``stamp``
    (a managedFields time), as upstream's one-second sleeps ensure."""
    wait_for(lambda: format_rfc3339(time.time()) > stamp, 3.0, interval=0.05, what="next second")


def test_no_semantic_change_apply_keeps_resource_version(raw: Raw) -> None:
    # TestNoSemanticUpdateApplySameResourceVersion: 2048Mi is stored as 2Gi; the
    # reapply changes nothing but the entry's time, which kube then keeps.
    code, created = apply(raw, f"{STS}/nginx", STATEFULSET, "apply_test")
    assert code == 201, created
    after_second_of(created["metadata"]["managedFields"][0]["time"])
    code, again = apply(raw, f"{STS}/nginx", STATEFULSET, "apply_test")
    assert code == 200, again
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert mf(again) == mf(created)


def test_no_semantic_change_put_keeps_resource_version(raw: Raw) -> None:
    # TestNoSemanticUpdatePutSameResourceVersion
    code, _, created = raw("POST", f"{STS}?fieldManager=apply_test", STATEFULSET)
    assert code == 201, created
    code, _, again = raw("PUT", f"{STS}/nginx?fieldManager=apply_test", STATEFULSET)
    assert code == 200, again
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


# --- managedFields bookkeeping ----------------------------------------------------


def test_apply_managed_fields_groups_updates_of_one_manager(raw: Raw) -> None:
    # TestApplyManagedFields
    assert apply(raw, f"{CM}/test-cm", cm_body(key="value"), "apply_test")[0] == 201
    for patch in ({"data": {"new-key": "value"}}, {"data": {"key": "new value"}}):
        code, _, _ = raw("PATCH", f"{CM}/test-cm?fieldManager=updater", patch, MERGE)
        assert code == 200
    got = get(raw, f"{CM}/test-cm")
    assert got["data"] == {"key": "new value", "new-key": "value"}
    assert without_time(mf(got)) == [
        {
            "manager": "apply_test",
            "operation": "Apply",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:test-label": {}}}},
        },
        {
            "manager": "updater",
            "operation": "Update",
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}, "f:new-key": {}}},
        },
    ]


def test_apply_removes_empty_managed_fields(raw: Raw) -> None:
    # TestApplyRemovesEmptyManagedFields
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "test-cm", "namespace": "default"},
    }
    assert apply(raw, f"{CM}/test-cm", body, "apply_test")[0] == 201
    assert apply(raw, f"{CM}/test-cm", body, "apply_test")[0] == 200
    assert "managedFields" not in get(raw, f"{CM}/test-cm")["metadata"]


def test_apply_groups_many_separate_updates(raw: Raw) -> None:
    # TestApplyGroupsManySeparateUpdates
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/webhook"
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "webhook", "labels": {"applier": "true"}},
    }
    assert apply(raw, path, body, "apply_test")[0] == 201
    for i in range(20):
        patch = {"metadata": {"labels": {f"updater{i}": "new"}}}
        code, _, got = raw("PATCH", f"{path}?fieldManager=updater{i}", patch, MERGE)
        assert code == 200
    entries = mf(got)
    assert len(entries) == 11
    assert entries[0]["manager"] == "apply_test"
    assert entries[1]["manager"] == "ancient-changes"


def test_apply_converts_managed_fields_version(raw: Raw) -> None:
    # TestApplyConvertsManagedFieldsVersion
    body = deployment()
    del body["spec"]["replicas"]
    body["metadata"]["managedFields"] = [
        {
            "manager": "sidecar_controller",
            "operation": "Apply",
            "apiVersion": "extensions/v1beta1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:sidecar_version": {}}},
                "f:spec": {
                    "f:template": {
                        "f: spec": {
                            "f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}}}
                        }
                    }
                },
            },
        }
    ]
    code, _, got = raw("POST", DEPLOY, body)
    assert code == 201, got
    side = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "deployment", "labels": {"sidecar_version": "release"}},
        "spec": {
            "template": {"spec": {"containers": [{"name": "sidecar", "image": "sidecar:latest"}]}}
        },
    }
    code, got = apply(raw, f"{DEPLOY}/deployment", side, "sidecar_controller")
    assert code == 200, got
    got = get(raw, f"{DEPLOY}/deployment")
    entries = mf(got)
    assert len(entries) == 2, entries
    (actual,) = [
        e
        for e in entries
        if e.get("manager") == "sidecar_controller" and e["apiVersion"] == "apps/v1"
    ]
    assert {k: v for k, v in actual.items() if k != "time"} == {
        "manager": "sidecar_controller",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:sidecar_version": {}}},
            "f:spec": {
                "f:template": {
                    "f:spec": {
                        "f:containers": {
                            'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}
                        }
                    }
                }
            },
        },
    }


@pytest.mark.parametrize(
    ("method", "body", "ctype"),
    [
        ("PATCH", {"metadata": {"managedFields": [{}]}}, SMP),  # ...WithStrategicMergePatch
        (
            "PATCH",
            [{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}],
            JSONPATCH,
        ),  # ...WithJSONPatch
        (
            "PUT",
            {**cm_body(key="value"), "metadata": {**cm_body()["metadata"], "managedFields": [{}]}},
            "application/json",
        ),  # ...WithUpdate
    ],
    ids=["smp", "jsonpatch", "put"],
)
def test_clear_managed_fields(raw: Raw, method: str, body: Any, ctype: str) -> None:
    # TestClearManagedFieldsWithStrategicMergePatch / JSONPatch / Update
    assert apply(raw, f"{CM}/test-cm", cm_body(key="value"), "apply_test")[0] == 201
    code, _, got = raw(method, f"{CM}/test-cm", body, ctype)
    assert code == 200, got
    got = get(raw, f"{CM}/test-cm")
    assert "managedFields" not in got["metadata"]
    assert got["metadata"]["labels"] == {"test-label": "test"}


def test_clear_managed_fields_with_update_empty_list(raw: Raw) -> None:
    # TestClearManagedFieldsWithUpdateEmptyList
    assert apply(raw, f"{CM}/test-cm", cm_body(key="value"), "apply_test")[0] == 201
    body = cm_body(key="value")
    body["metadata"]["managedFields"] = []
    code, _, got = raw("PUT", f"{CM}/test-cm", body)
    assert code == 200, got
    patch = {"metadata": {"labels": {"test-label": "v1"}}}
    code, _, got = raw("PATCH", f"{CM}/test-cm", patch, MERGE)
    assert code == 200, got
    got = get(raw, f"{CM}/test-cm")
    assert "managedFields" not in got["metadata"]
    assert got["metadata"]["labels"] == {"test-label": "v1"}


BAD_ENTRY = {
    "manager": "apply_test",
    "operation": "Apply",
    "apiVersion": "v1",
    "time": "2019-07-08T09:31:18Z",
    "fieldsType": "",
    "fieldsV1": {},
}


def test_errors_dont_fail(raw: Raw) -> None:
    # TestErrorsDontFail / TestErrorsDontFailUpdate / TestErrorsDontFailPatch
    body = cm_body(key="value")
    body["metadata"]["managedFields"] = [BAD_ENTRY]
    code, _, got = raw("POST", f"{CM}?fieldManager=apply_test", body)
    assert code == 201, got
    code, _, got = raw("PUT", f"{CM}/test-cm?fieldManager=apply_test", body)
    assert code == 200, got
    patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [BAD_ENTRY]}]
    code, _, got = raw("PATCH", f"{CM}/test-cm?fieldManager=apply_test", patch, JSONPATCH)
    assert code == 200, got


def test_apply_does_not_change_managed_fields_via_subresources(raw: Raw) -> None:
    # TestApplyDoesNotChangeManagedFieldsViaSubresources
    code, live = apply(raw, f"{PODS}/just-a-pod", pod(), "apply_test")
    assert code == 201, live
    update = {
        "metadata": {
            "managedFields": [
                {
                    "manager": "testing",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"testing"}': {".": {}, "f:image": {}, "f:name": {}}
                            }
                        }
                    },
                }
            ]
        },
        "status": {"conditions": [{"type": "MyStatus", "status": "true"}]},
    }
    code, _, new = raw(
        "PATCH", f"{PODS}/just-a-pod/status?fieldManager=update_managedfields_test", update, MERGE
    )
    assert code == 200, new
    assert len(mf(live)) == 1
    assert len(mf(new)) == 2, mf(new)
    assert mf(new)[0] == mf(live)[0]
    assert mf(new)[1]["manager"] == "update_managedfields_test"


# --- removal and ownership --------------------------------------------------------


def test_apply_remove_container_port(raw: Raw) -> None:
    # TestApplyRemoveContainerPort
    body = deployment()
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"containerPort": 80, "protocol": "TCP"}
    ]
    assert apply(raw, f"{DEPLOY}/deployment", body, "apply_test")[0] == 201
    code, got = apply(raw, f"{DEPLOY}/deployment", deployment(), "apply_test")
    assert code == 200, got
    got = get(raw, f"{DEPLOY}/deployment")
    assert "ports" not in got["spec"]["template"]["spec"]["containers"][0]


def test_apply_unset_exclusively_owned_fields(raw: Raw) -> None:
    # TestApplyUnsetExclusivelyOwnedFields
    path = f"{DEPLOY}/deployment-exclusive-unset"
    assert (
        apply(
            raw,
            path,
            deployment("deployment-exclusive-unset", hostname="test-hostname"),
            "apply_test",
        )[0]
        == 201
    )
    body = deployment("deployment-exclusive-unset")
    del body["spec"]["replicas"]
    code, got = apply(raw, path, body, "apply_test")
    assert code == 200, got
    assert got["spec"]["replicas"] == 1
    assert "hostname" not in got["spec"]["template"]["spec"]


def test_apply_unset_shared_fields(raw: Raw) -> None:
    # TestApplyUnsetSharedFields
    path = f"{DEPLOY}/deployment-shared-unset"
    full = deployment("deployment-shared-unset", hostname="test-hostname")
    for manager in ("shared_owner_1", "shared_owner_2"):
        assert apply(raw, path, full, manager)[0] in (200, 201)
    body = deployment("deployment-shared-unset")
    del body["spec"]["replicas"]
    code, got = apply(raw, path, body, "shared_owner_1")
    assert code == 200, got
    assert got["spec"]["replicas"] == 3
    assert got["spec"]["template"]["spec"]["hostname"] == "test-hostname"


def test_apply_can_transfer_field_ownership_to_controller(raw: Raw) -> None:
    # TestApplyCanTransferFieldOwnershipToController
    path = f"{DEPLOY}/d"
    code, applied = apply(raw, path, deployment("d"), "test_applier")
    assert code == 201, applied
    applied["spec"]["replicas"] = 4
    code, _, got = raw("PUT", f"{path}?fieldManager=test_updater", applied)
    assert code == 200, got
    body = deployment("d")
    del body["spec"]["replicas"]
    code, got = apply(raw, path, body, "test_applier")
    assert code == 200, got
    assert got["spec"]["replicas"] == 4


def test_apply_can_remove_map_items_contributed_to_by_controllers(raw: Raw) -> None:
    # TestApplyCanRemoveMapItemsContributedToByControllers
    path = f"{DEPLOY}/d"
    body = deployment("d")
    del body["spec"]["replicas"]
    code, applied = apply(raw, path, body, "test_applier")
    assert code == 201, applied
    applied["spec"]["template"]["spec"]["containers"][0]["workingDir"] = "/home/replacement"
    code, _, got = raw("PUT", f"{path}?fieldManager=test_updater", applied)
    assert code == 200, got
    body = deployment("d", hostname="test-hostname")
    body["spec"]["template"]["spec"]["containers"][0]["name"] = "other-container"
    code, got = apply(raw, path, body, "test_applier")
    assert code == 200, got
    assert [c["name"] for c in got["spec"]["template"]["spec"]["containers"]] == ["other-container"]


def test_default_missing_keys(raw: Raw) -> None:
    # TestDefaultMissingKeys
    path = f"{DEPLOY}/d"
    body = deployment("d")
    del body["spec"]["replicas"]
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "foo", "containerPort": 80}
    ]
    assert apply(raw, path, body, "test_applier")[0] == 201
    other = copy.deepcopy(body)
    other["spec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "bar", "containerPort": 80, "protocol": "TCP"}
    ]
    code, st = apply(raw, path, other, "test_applier_conflict")
    assert code == 409, st
    assert [c["field"] for c in st["details"]["causes"]] == [
        '.spec.template.spec.containers[name="nginx"].ports'
        '[containerPort=80,protocol="TCP"].name'
    ]


def test_upgrade_client_side_to_server_side_apply(raw: Raw) -> None:
    # TestUpgradeClientSideToServerSideApply
    last = {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "my-deployment", "labels": {"app": "my-app"}},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"labels": {"app": "my-app"}},
                "spec": {"containers": [{"name": "my-c", "image": "my-image"}]},
            },
        },
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "my-deployment",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(last) + "\n"
            },
            "labels": {"app": "my-app"},
        },
        "spec": {
            "replicas": 100000,
            "selector": {"matchLabels": {"app": "my-app"}},
            "template": {
                "metadata": {"labels": {"app": "my-app"}},
                "spec": {"containers": [{"name": "my-c", "image": "my-image"}]},
            },
        },
    }
    code, _, got = raw("POST", DEPLOY, body)
    assert code == 201, got
    new: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "my-deployment", "labels": {"app": "my-new-label"}},
        "spec": {
            "replicas": 3,
            "template": {
                "metadata": {"labels": {"app": "my-app"}},
                "spec": {"containers": [{"name": "my-c", "image": "my-image"}]},
            },
        },
    }
    code, st = apply(raw, f"{DEPLOY}/my-deployment", new, "kubectl")
    assert code == 409, st
    del new["spec"]["replicas"]
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "my-image-new"
    code, got = apply(raw, f"{DEPLOY}/my-deployment", new, "kubectl")
    assert code == 200, got
    got = get(raw, f"{DEPLOY}/my-deployment")
    assert got["spec"]["replicas"] == 100000
    assert got["spec"]["template"]["spec"]["containers"][0]["image"] == "my-image-new"


# --- renaming managers and dropping subresources with a PUT -----------------------


def test_renaming_applied_field_managers(raw: Raw) -> None:
    # TestRenamingAppliedFieldManagers
    assert apply(raw, f"{PODS}/just-a-pod", pod(labels={"a": "one"}), "multi_manager_one")[0] == 201
    labels = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"b": "two"}}}
    assert apply(raw, f"{PODS}/just-a-pod", labels, "multi_manager_two")[0] == 200
    got = get(raw, f"{PODS}/just-a-pod")
    assert got["metadata"]["labels"] == {"a": "one", "b": "two"}
    for e in got["metadata"]["managedFields"]:
        e["manager"] = "multi_manager"
    code, _, obj = raw("PUT", f"{PODS}/just-a-pod", got)
    assert code == 200, obj
    (entry,) = mf(obj)
    assert entry["manager"] == "multi_manager" and entry["operation"] == "Apply"
    assert entry["fieldsV1"] == {"f:metadata": {"f:labels": {"f:b": {}}}}


def test_renaming_updated_field_managers(raw: Raw) -> None:
    # TestRenamingUpdatedFieldManagers
    assert apply(raw, f"{PODS}/just-a-pod", pod(), "first")[0] == 201
    for manager, patch in (
        ("multi_manager_one", {"metadata": {"labels": {"a": "one"}}}),
        ("multi_manager_two", {"metadata": {"labels": {"b": "two"}}}),
    ):
        code, _, _ = raw("PATCH", f"{PODS}/just-a-pod?fieldManager={manager}", patch, MERGE)
        assert code == 200
    got = get(raw, f"{PODS}/just-a-pod")
    assert got["metadata"]["labels"] == {"a": "one", "b": "two"}
    for e in got["metadata"]["managedFields"]:
        e["manager"] = "multi_manager"
    code, _, obj = raw("PUT", f"{PODS}/just-a-pod", got)
    assert code == 200, obj
    entries = mf(obj)
    assert len(entries) == 2, entries
    assert entries[1]["manager"] == "multi_manager" and entries[1]["operation"] == "Update"
    assert entries[1]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:b": {}}}}


def put_without_subresources(raw: Raw, got: dict[str, Any], entries: list[Any]) -> list[Any]:
    """PUT the pod back with its managedFields entries' subresources dropped
    (the upstream tests' way to merge a subresource entry into the main one)."""
    for e in entries:
        e.pop("subresource", None)
    got["metadata"]["managedFields"] = entries
    code, _, obj = raw("PUT", f"{PODS}/just-a-pod", got)
    assert code == 200, obj
    return mf(obj)


def test_dropping_subresource_field(raw: Raw) -> None:
    # TestDroppingSubresourceField
    assert apply(raw, f"{PODS}/just-a-pod", pod(), "first")[0] == 201
    a = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "one"}}}
    b = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"b": "two"}}}
    assert apply(raw, f"{PODS}/just-a-pod", a, "label_manager")[0] == 200
    code, got = apply(raw, f"{PODS}/just-a-pod/status", b, "label_manager")
    assert code == 200, got
    got = get(raw, f"{PODS}/just-a-pod")
    assert got["metadata"]["labels"] == {"a": "one", "b": "two"}
    entries = mf(got)
    assert [(e["manager"], e["operation"], e.get("subresource", "")) for e in entries] == [
        ("first", "Apply", ""),
        ("label_manager", "Apply", ""),
        ("label_manager", "Apply", "status"),
    ]
    entries = put_without_subresources(raw, got, entries)
    assert len(entries) == 2, entries
    assert entries[1]["manager"] == "label_manager" and entries[1]["operation"] == "Apply"
    assert entries[1]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:b": {}}}}


def test_dropping_subresource_from_spec_field(raw: Raw) -> None:
    # TestDroppingSubresourceFromSpecField
    assert apply(raw, f"{PODS}/just-a-pod", pod(), "first")[0] == 201
    code, _, _ = raw(
        "PATCH",
        f"{PODS}/just-a-pod?fieldManager=manager",
        {"metadata": {"labels": {"a": "two"}}},
        MERGE,
    )
    assert code == 200
    code, _, _ = raw(
        "PATCH",
        f"{PODS}/just-a-pod/status?fieldManager=manager",
        {"status": {"phase": "Running"}},
        MERGE,
    )
    assert code == 200
    got = get(raw, f"{PODS}/just-a-pod")
    assert got["metadata"]["labels"] == {"a": "two"}
    assert got["status"]["phase"] == "Running"
    entries = mf(got)
    assert [(e["manager"], e["operation"], e.get("subresource", "")) for e in entries] == [
        ("first", "Apply", ""),
        ("manager", "Update", ""),
        ("manager", "Update", "status"),
    ]
    entries = put_without_subresources(raw, got, entries)
    assert len(entries) == 2, entries
    assert entries[1]["manager"] == "manager" and entries[1]["operation"] == "Update"
    assert entries[1]["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_subresource_field(raw: Raw) -> None:
    # TestSubresourceField
    assert apply(raw, f"{DEPLOY}/deployment", deployment(), "manager")[0] == 201
    code, _, _ = raw(
        "PATCH",
        f"{DEPLOY}/deployment/scale?fieldManager=manager",
        {"spec": {"replicas": 32}},
        MERGE,
    )
    assert code == 200
    entries = mf(get(raw, f"{DEPLOY}/deployment"))
    assert [(e["manager"], e["operation"], e.get("subresource", "")) for e in entries] == [
        ("manager", "Apply", ""),
        ("manager", "Update", "scale"),
    ]
    assert entries[1]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}


# --- formerly atomic fields and duplicates in associative lists -------------------


def test_apply_formerly_atomic_fields(raw: Raw) -> None:
    # TestApplyFormerlyAtomicFields
    old = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "finalizers": ["kubernetes.io/pv-protection"],
            "labels": {"type": "local"},
            "name": "pv-storage",
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "16Mi"},
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "name": "pvc-storage",
                "namespace": "default",
                "resourceVersion": "15499",
                "uid": "2018e302-7b12-406c-9fa2-e52535d29e48",
            },
            "hostPath": {"path": "/tmp/mydata", "type": ""},
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound"},
    }
    entries = [
        {
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:type": {}}},
                "f:spec": {
                    "f:accessModes": {},
                    "f:capacity": {"f:storage": {}},
                    "f:hostPath": {"f:path": {}},
                    "f:storageClassName": {},
                },
            },
            "manager": "apply_test",
            "operation": "Apply",
            "time": "2022-06-08T23:46:32Z",
        },
        {
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:phase": {}}},
            "manager": "kube-controller-manager",
            "operation": "Update",
            "subresource": "status",
            "time": "2022-06-08T23:46:32Z",
        },
        {
            "apiVersion": "v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:claimRef": {}}},
            "manager": "kube-controller-manager",
            "operation": "Update",
            "time": "2022-06-08T23:46:37Z",
        },
    ]
    code, _, original = raw("POST", "/api/v1/persistentvolumes?fieldManager=apply_test", old)
    assert code == 201, original
    code, _, got = raw(
        "PATCH",
        "/api/v1/persistentvolumes/pv-storage?fieldManager=apply_test",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-storage", "managedFields": entries},
        },
        SMP,
    )
    assert code == 200, got
    pv = {
        "kind": "PersistentVolume",
        "apiVersion": "v1",
        "metadata": {"labels": {"type": "local"}, "name": "pv-storage"},
        "spec": {
            "storageClassName": "",
            "capacity": {"storage": "16Mi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/tmp/mydata"},
            "claimRef": {"name": "pvc-storage", "namespace": "default"},
        },
    }
    code, new = apply(raw, "/api/v1/persistentvolumes/pv-storage", pv, "apply_test")
    assert code == 200, new
    assert new["spec"]["claimRef"] == original["spec"]["claimRef"]
    expected = copy.deepcopy(entries)
    expected[0]["fieldsV1"]["f:spec"]["f:claimRef"] = {"f:name": {}, "f:namespace": {}}
    assert without_time(mf(new)) == without_time(expected)


DAEMONSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "example-daemonset", "labels": {"app": "example"}},
    "spec": {
        "selector": {"matchLabels": {"app": "example"}},
        "template": {
            "metadata": {"labels": {"app": "example"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx",
                        "ports": [
                            {"name": "port0", "containerPort": 1},
                            {"name": "port1", "containerPort": 80},
                            {"name": "port2", "containerPort": 80},
                        ],
                        "env": [
                            {"name": "ENV0", "value": "/env0value"},
                            {"name": "PATH", "value": "/bin"},
                            {"name": "PATH", "value": "$PATH:/usr/bin"},
                        ],
                    }
                ]
            },
        },
    },
}

_P80 = 'k:{"containerPort":80,"protocol":"TCP"}'


def _ds_create_fields(annotation: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        ".": {},
        "f:env": {
            ".": {},
            'k:{"name":"ENV0"}': {".": {}, "f:name": {}, "f:value": {}},
            'k:{"name":"PATH"}': {},
        },
        "f:image": {},
        "f:imagePullPolicy": {},
        "f:name": {},
        "f:ports": {
            ".": {},
            'k:{"containerPort":1,"protocol":"TCP"}': {
                ".": {},
                "f:containerPort": {},
                "f:name": {},
                "f:protocol": {},
            },
            _P80: {},
        },
        "f:resources": {},
        "f:terminationMessagePath": {},
        "f:terminationMessagePolicy": {},
    }
    return {
        "f:metadata": {"f:annotations": annotation, "f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:revisionHistoryLimit": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {'k:{"name":"nginx"}': container},
                    "f:dnsPolicy": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
            "f:updateStrategy": {
                "f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                "f:type": {},
            },
        },
    }


def _ds_apply_fields(env: str, port: int) -> dict[str, Any]:
    return {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:selector": {},
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:env": {
                                f'k:{{"name":"{env}"}}': {".": {}, "f:name": {}, "f:value": {}}
                            },
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                f'k:{{"containerPort":{port},"protocol":"TCP"}}': {
                                    ".": {},
                                    "f:containerPort": {},
                                    "f:name": {},
                                }
                            },
                        }
                    }
                }
            },
        },
    }


def _fields(obj: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(e["manager"], e["operation"], e["fieldsV1"]) for e in mf(obj)]


def test_create_owns_no_go_zero_structs(raw: Raw) -> None:
    # TestDuplicatesInAssociativeLists, its create without the duplicates: the
    # create's live object is the Go zero value, so spec, template and the
    # template's metadata and spec get no "." (nor creationTimestamp).
    ds = copy.deepcopy(DAEMONSET)
    c = ds["spec"]["template"]["spec"]["containers"][0]
    c["ports"], c["env"] = c["ports"][:2], c["env"][:2]
    code, _, got = raw("POST", f"{DS}?fieldManager=create", ds)
    assert code == 201, got
    expected = _ds_create_fields({".": {}, "f:deprecated.daemonset.template.generation": {}})
    cc = expected["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']
    cc["f:env"]['k:{"name":"PATH"}'] = {".": {}, "f:name": {}, "f:value": {}}
    cc["f:ports"][_P80] = {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}
    assert _fields(got) == [("create", "Update", expected)]


@pytest.mark.xfail(
    strict=True,
    reason="duplicate keys make the whole list atomic here; SMD tracks the "
    "duplicated items alone (structured_merge.py's docstring)",
)
def test_duplicates_in_associative_lists(raw: Raw) -> None:
    # TestDuplicatesInAssociativeLists
    gen = {".": {}, "f:deprecated.daemonset.template.generation": {}}
    code, _, ds = raw("POST", f"{DS}?fieldManager=create", DAEMONSET)
    assert code == 201, ds
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert len(c["env"]) == 3 and len(c["ports"]) == 3
    assert _fields(ds) == [("create", "Update", _ds_create_fields(gen))]

    # Applying unrelated fields is strictly additive.
    applied = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "example-daemonset", "labels": {"app": "example"}},
        "spec": {
            "selector": {"matchLabels": {"app": "example"}},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx",
                            "ports": [{"name": "port3", "containerPort": 443}],
                            "env": [{"name": "HOME", "value": "/usr/home"}],
                        }
                    ]
                }
            },
        },
    }
    code, ds = apply(raw, f"{DS}/example-daemonset", applied, "apply")
    assert code == 200, ds
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert len(c["env"]) == 4 and len(c["ports"]) == 4
    assert _fields(ds) == [
        ("apply", "Apply", _ds_apply_fields("HOME", 443)),
        ("create", "Update", _ds_create_fields(gen)),
    ]

    # An update renames ports and changes a duplicated env var.
    upd = copy.deepcopy(DAEMONSET)
    uc = upd["spec"]["template"]["spec"]["containers"][0]
    uc["ports"] = [
        {"name": "port0", "containerPort": 1},
        {"name": "port3", "containerPort": 443},
        {"name": "port4", "containerPort": 80},
        {"name": "port5", "containerPort": 80},
    ]
    uc["env"] = [
        {"name": "ENV0", "value": "/env0value"},
        {"name": "PATH", "value": "/bin"},
        {"name": "PATH", "value": "$PATH:/usr/bin:/usr/local/bin"},
        {"name": "HOME", "value": "/usr/home"},
    ]
    code, _, ds = raw("PUT", f"{DS}/example-daemonset?fieldManager=update", upd)
    assert code == 200, ds
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert len(c["env"]) == 4 and len(c["ports"]) == 4
    create = _ds_create_fields({})
    cc = create["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"nginx"}']
    del cc["f:env"]['k:{"name":"PATH"}']
    del cc["f:ports"][_P80]
    update_fields = {
        "f:metadata": {"f:annotations": {"f:deprecated.daemonset.template.generation": {}}},
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            "f:env": {'k:{"name":"PATH"}': {}},
                            "f:ports": {_P80: {}},
                        }
                    }
                }
            }
        },
    }
    assert _fields(ds) == [
        ("apply", "Apply", _ds_apply_fields("HOME", 443)),
        ("create", "Update", create),
        ("update", "Update", update_fields),
    ]

    # A forced apply replaces the duplicated items with one each.
    applied2 = copy.deepcopy(applied)
    ac = applied2["spec"]["template"]["spec"]["containers"][0]
    ac["ports"] = [{"name": "port80", "containerPort": 80}]
    ac["env"] = [{"name": "PATH", "value": "/bin:/usr/bin:/usr/local/bin"}]
    code, ds = apply(raw, f"{DS}/example-daemonset", applied2, "apply", force=True)
    assert code == 200, ds
    c = ds["spec"]["template"]["spec"]["containers"][0]
    assert len(c["env"]) == 2 and len(c["ports"]) == 2
    assert _fields(ds) == [
        ("apply", "Apply", _ds_apply_fields("PATH", 80)),
        ("create", "Update", create),
        (
            "update",
            "Update",
            {"f:metadata": {"f:annotations": {"f:deprecated.daemonset.template.generation": {}}}},
        ),
    ]


# --- status_test.go and reset_fields_test.go ------------------------------------------
#
# Per built-in resource with a /status that we serve: (group/version, plural, kind,
# namespaced, create stub, reset-fields spec data, status data, reset-fields status
# data), from kube's test/integration/etcd/data.go and the two tests' tables. None for
# a status means the tests' default conditions.

_CONDITION = '{{"type":"Accepted","status":"{}","lastTransitionTime":"2020-01-01T00:00:00Z","reason":"RuleApplied","message":"Rule was applied"}}'
_STATUS_CASES: list[tuple[str, str, str, bool, str, str, str | None, str | None]] = [
    ("v1", "services", "Service", True,
     '{"metadata": {"name": "service1"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 10000, "targetPort": 11000}], "selector": {"test": "data"}}}',
     '{"spec": {"type": "ClusterIP"}}',
     '{"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}',
     '{"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.2", "ipMode": "VIP"}]}}}'),
    ("v1", "pods", "Pod", True,
     '{"metadata": {"name": "pod1"}, "spec": {"containers": [{"image": "busybox", "name": "container7", "resources": {"limits": {"cpu": "1M"}, "requests": {"cpu": "1M"}}}]}}',
     '{"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z", "ownerReferences":[]}, "spec": {"containers": [{"image": "etcd", "name": "container7"}]}}',
     None, None),
    ("v1", "resourcequotas", "ResourceQuota", True,
     '{"metadata": {"name": "rq1name"}, "spec": {"hard": {"cpu": "5M"}}}',
     '{"spec": {"hard": {"cpu": "25M"}}}',
     '{"status": {"used": {"cpu": "5M"}}}', '{"status": {"used": {"cpu": "25M"}}}'),
    ("v1", "namespaces", "Namespace", False,
     '{"metadata": {"name": "namespace1"}, "spec": {"finalizers": ["kubernetes"]}}',
     '{"spec": {"finalizers": ["kubernetes2"]}}', None, None),
    ("v1", "nodes", "Node", False,
     '{"metadata": {"name": "node1"}, "spec": {"unschedulable": true}}',
     '{"spec": {"unschedulable": false}}', None, None),
    ("v1", "persistentvolumes", "PersistentVolume", False,
     '{"metadata": {"name": "pv1name"}, "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "3M"}, "hostPath": {"path": "/tmp/test/"}}}',
     '{"spec": {"capacity": {"storage": "23M"}}}',
     '{"status": {"message": "hello"}}', '{"status": {"message": "hello2"}}'),
    ("v1", "persistentvolumeclaims", "PersistentVolumeClaim", True,
     '{"metadata": {"name": "pvc1"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"limits": {"storage": "1M"}, "requests": {"storage": "2M"}}, "selector": {"matchLabels": {"pvc": "stuff"}}}}',
     '{"spec": {"resources": {"limits": {"storage": "21M"}}}}', None, None),
    ("v1", "replicationcontrollers", "ReplicationController", True,
     '{"metadata": {"name": "rc1"}, "spec": {"selector": {"new": "stuff"}, "template": {"metadata": {"labels": {"new": "stuff"}}, "spec": {"containers": [{"image": "busybox", "name": "container8"}]}}}}',
     '{"spec": {"selector": {"new": "stuff2"}}}', None, None),
    ("apps/v1", "daemonsets", "DaemonSet", True,
     '{"metadata": {"name": "ds6"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"image": "busybox", "name": "container6"}]}}}}',
     '{"spec": {"template": {"spec": {"containers": [{"image": "etcd", "name": "container6"}]}}}}',
     None, None),
    ("apps/v1", "deployments", "Deployment", True,
     '{"metadata": {"name": "deployment4"}, "spec": {"selector": {"matchLabels": {"f": "z"}}, "template": {"metadata": {"labels": {"f": "z"}}, "spec": {"containers": [{"image": "busybox", "name": "container6"}]}}}}',
     '{"metadata": {"labels": {"a":"c"}}, "spec": {"template": {"spec": {"containers": [{"image": "etcd", "name": "container6"}]}}}}',
     None, None),
    ("apps/v1", "statefulsets", "StatefulSet", True,
     '{"metadata": {"name": "ss3"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "containers": [{"image": "busybox", "name": "container6", "terminationMessagePolicy": "File"}]}}}}',
     '{"spec": {"selector": {"matchLabels": {"a2": "b2"}}}}', None, None),
    ("apps/v1", "replicasets", "ReplicaSet", True,
     '{"metadata": {"name": "rs3"}, "spec": {"selector": {"matchLabels": {"g": "h"}}, "template": {"metadata": {"labels": {"g": "h"}}, "spec": {"containers": [{"image": "busybox", "name": "container4"}]}}}}',
     '{"spec": {"template": {"spec": {"containers": [{"image": "etcd", "name": "container4"}]}}}}',
     None, None),
    ("autoscaling/v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
     '{"metadata": {"name": "hpa2"}, "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "something", "name": "cross", "apiVersion": "apps/v1"}}}',
     '{"spec": {"maxReplicas": 23}}',
     '{"status": {"currentReplicas": 5}}', '{"status": {"currentReplicas": 25}}'),
    ("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
     '{"metadata": {"name": "hpa4"}, "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "something", "name": "cross", "apiVersion": "apps/v1"}}}',
     '{"spec": {"maxReplicas": 23}}',
     '{"status": {"currentReplicas": 5}}', '{"status": {"currentReplicas": 25}}'),
    ("batch/v1", "jobs", "Job", True,
     '{"metadata": {"name": "job1"}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"controller-uid": "uid1"}}, "template": {"metadata": {"labels": {"controller-uid": "uid1"}}, "spec": {"containers": [{"image": "busybox", "name": "container1"}], "dnsPolicy": "ClusterFirst", "restartPolicy": "Never"}}}}',
     '{"spec": {"template": {"spec": {"containers": [{"image": "etcd", "name": "container1"}]}}}}',
     None, None),
    ("batch/v1", "cronjobs", "CronJob", True,
     '{"metadata": {"name": "cjv1"}, "spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"controller-uid": "uid0"}}, "spec": {"containers": [{"image": "busybox", "name": "container0"}], "dnsPolicy": "ClusterFirst", "restartPolicy": "Never"}}}}, "schedule": "* * * * *"}}',
     '{"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"image": "etcd", "name": "container0"}]}}}}}}',
     '{"status": {"lastScheduleTime": null}}',
     '{"status": {"lastScheduleTime":  "2020-01-01T00:00:00Z"}}'),
    ("networking.k8s.io/v1", "ingresses", "Ingress", True,
     '{"metadata": {"name": "ingress3"}, "spec": {"defaultBackend": {"service":{"name":"service", "port":{"number": 5000}}}}}',
     '{"spec": {"defaultBackend": {"service": {"name": "service2"}}}}',
     '{"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.1"}]}}}',
     '{"status": {"loadBalancer": {"ingress": [{"ip": "127.0.0.2"}]}}}'),
    ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
     '{"metadata": {"name": "pdbv1"}, "spec": {"selector": {"matchLabels": {"anokkey": "anokvalue"}}}}',
     '{"spec": {"selector": {"matchLabels": {"anokkey2": "anokvalue"}}}}',
     '{"status": {"currentHealthy": 5}}', '{"status": {"currentHealthy": 25}}'),
    ("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", False,
     '{"metadata": {"name": "va3"}, "spec": {"attacher": "gce", "nodeName": "localhost", "source": {"persistentVolumeName": "pv3"}}}',
     '{"metadata": {"name": "va3"}, "spec": {"nodeName": "localhost2"}}',
     '{"status": {"attached": true}}', '{"status": {"attached": false}}'),
    ("flowcontrol.apiserver.k8s.io/v1", "flowschemas", "FlowSchema", False,
     '{"metadata": {"name": "fs-3"}, "spec": {"priorityLevelConfiguration": {"name": "name1"}}}',
     '{"metadata": {"labels":{"a":"c"}}, "spec": {"priorityLevelConfiguration": {"name": "name2"}}}',
     None, None),
    ("flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", False,
     '{"metadata": {"name": "conf5"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares":3, "limitResponse": {"type": "Reject"}}}}',
     '{"metadata": {"labels":{"a":"c"}}, "spec": {"limited": {"nominalConcurrencyShares": 23}}}',
     None, None),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False,
     '{"metadata":{"name":"vap1"},"spec":{"paramKind":{"apiVersion":"test.example.com/v1","kind":"Example"},"matchConstraints":{"resourceRules": [{"resourceNames": ["fakeName"], "apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE", "UPDATE"], "resources":["deployments"]}]},"validations":[{"expression":"object.spec.replicas <= params.maxReplicas","message":"Too many replicas"}]}}',
     '{"metadata": {"labels": {"a":"c"}}, "spec": {"paramKind": {"apiVersion": "apps/v1", "kind": "Deployment"}}}',
     '{"status": {"conditions":[' + _CONDITION.format("False") + "]}}",
     '{"status": {"conditions":[' + _CONDITION.format("True") + "]}}"),
    ("apiregistration.k8s.io/v1", "apiservices", "APIService", False,
     '{"metadata": {"name": "as1.foo.com"}, "spec": {"group": "foo.com", "version": "as1", "groupPriorityMinimum":100, "versionPriority":10}}',
     '{"metadata": {"labels": {"a":"c"}}, "spec": {"group": "foo2.com"}}', None, None),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", False,
     '{"metadata": {"name": "openshiftwebconsoleconfigs.webconsole.operator.openshift.io"},"spec": {"scope": "Cluster","group": "webconsole.operator.openshift.io","versions": [{"name":"v1alpha1","storage":true,"served":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}],"names": {"kind": "OpenShiftWebConsoleConfig","plural": "openshiftwebconsoleconfigs","singular": "openshiftwebconsoleconfig"}}}',
     '{"metadata": {"labels":{"a":"c"}}, "spec": {"group": "webconsole22.operator.openshift.io"}}',
     None, None),
]  # fmt: skip
_STATUS_DEFAULT = '{"status": {"conditions": [{"type": "MyStatus", "status":"true"}]}}'
_RESET_STATUS_DEFAULT = '{"status": {"conditions": [{"type": "MyStatus", "status":"False"}]}}'
# reset_fields_test.go's noConflicts: nothing of theirs a second applier can conflict on.
_NO_CONFLICTS = {"namespaces"}


def _status_case_id(case: tuple[Any, ...]) -> str:
    return f"{case[0]}/{case[1]}"


def _collection(gv: str, plural: str, namespaced: bool) -> str:
    root = "/api/v1" if gv == "v1" else f"/apis/{gv}"
    return f"{root}/namespaces/default/{plural}" if namespaced else f"{root}/{plural}"


def _without_controllers(apiserver: APIServer, plural: str) -> None:
    # kube's integration server runs no kube-controller-manager: no quota
    # controller writes (and owns) a ResourceQuota's status under the test.
    if plural == "resourcequotas":
        apiserver.quota_controller.stop()


def _unmarshal_into(obj: dict[str, Any], data: str) -> dict[str, Any]:
    # Go's json.Unmarshal into a map: each top-level key is replaced whole.
    return {**copy.deepcopy(obj), **json.loads(data)}


@pytest.mark.parametrize("case", _STATUS_CASES, ids=_status_case_id)
def test_apply_status(apiserver: APIServer, raw: Raw, case: tuple[Any, ...]) -> None:
    # TestApplyStatus
    gv, plural, kind, namespaced, stub, _, status, _ = case
    _without_controllers(apiserver, plural)
    base = _collection(gv, plural, namespaced)
    obj = {"apiVersion": gv, "kind": kind, **json.loads(stub)}
    name = obj["metadata"]["name"]
    code, _, got = raw("POST", f"{base}?fieldManager=create_test", obj)
    assert code == 201, got
    body = {"apiVersion": gv, "kind": kind, "metadata": {"name": name}}
    body.update(json.loads(status or _STATUS_DEFAULT))
    code, got = apply(raw, f"{base}/{name}/status", body, "apply_status_test", force=True)
    assert code == 200, got
    managers = {e["manager"]: e for e in mf(got)}
    assert managers["apply_status_test"]["subresource"] == "status"
    assert "create_test" in managers
    assert raw("DELETE", f"{base}/{name}")[0] in (200, 202)


@pytest.mark.parametrize("case", _STATUS_CASES, ids=_status_case_id)
def test_apply_reset_fields(apiserver: APIServer, raw: Raw, case: tuple[Any, ...]) -> None:
    # TestApplyResetFields: a spec apply owns no status and a status apply no
    # spec, so applying obj2's status does not conflict with obj1's spec
    # applier; then obj2 to the main resource and obj1 to /status conflict.
    gv, plural, kind, namespaced, stub, spec2, status1, status2 = case
    _without_controllers(apiserver, plural)
    base = _collection(gv, plural, namespaced)
    obj1 = _unmarshal_into(json.loads(stub), status1 or _STATUS_DEFAULT)
    obj1.update(apiVersion=gv, kind=kind)
    name = obj1["metadata"]["name"]
    code, got = apply(raw, f"{base}/{name}", obj1, "fieldmanager1")
    assert code == 201, got
    obj2 = _unmarshal_into(_unmarshal_into(obj1, spec2), status2 or _RESET_STATUS_DEFAULT)
    assert obj1 != obj2
    code, got = apply(raw, f"{base}/{name}/status", obj2, "fieldmanager2")
    assert code == 200, got
    if plural not in _NO_CONFLICTS:
        code, got = apply(raw, f"{base}/{name}", obj2, "fieldmanager2")
        assert code == 409, got
        code, got = apply(raw, f"{base}/{name}/status", obj1, "fieldmanager1")
        assert code == 409, got
    assert raw("DELETE", f"{base}/{name}")[0] in (200, 202)


def test_status_writes_through_a_converted_version_own_only_status(raw: Raw) -> None:
    # TestApplyResetFields and TestApplyStatus for autoscaling/v1 HPAs (stored as
    # autoscaling/v2): a write through v1's /status is a status write too.
    base = _collection("autoscaling/v1", "horizontalpodautoscalers", True)
    hpa = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "hpa"},
        "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "D", "name": "x"}},
    }
    # The status subresource never creates (StatusREST.Update: no create on update).
    code, st = apply(raw, f"{base}/hpa/status", hpa, "m")
    assert code == 404 and st["reason"] == "NotFound", st
    assert raw("GET", f"{base}/hpa")[0] == 404
    assert apply(raw, f"{base}/hpa", hpa, "m")[0] == 201
    patch = {"spec": {"maxReplicas": 9}, "status": {"currentReplicas": 4}}
    code, _, got = raw("PATCH", f"{base}/hpa/status?fieldManager=p", patch, MERGE)
    assert code == 200, got
    assert got["spec"]["maxReplicas"] == 3 and got["status"]["currentReplicas"] == 4
    entry = next(e for e in mf(got) if e["manager"] == "p")
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:currentReplicas": {}}}


# --- apply_crd_test.go ------------------------------------------------------------------

NOXUS = "/apis/mygroup.example.com/v1beta1/noxus"
_NOXU_PORT = {
    "type": "object",
    "required": ["containerPort", "protocol"],
    "properties": {
        "containerPort": {"type": "integer", "format": "int32"},
        "hostIP": {"type": "string"},
        "hostPort": {"type": "integer", "format": "int32"},
        "name": {"type": "string"},
        "protocol": {"type": "string"},
    },
}
_NOXU_SPEC = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "cronSpec": {
            "type": "string",
            "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$",
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
            "x-kubernetes-list-type": "map",
            "items": _NOXU_PORT,
        },
    },
}


def _noxu_crd(apiserver: APIServer, schema: dict[str, Any]) -> None:
    apiserver.install_crd(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "noxus.mygroup.example.com"},
            "spec": {
                "group": "mygroup.example.com",
                "scope": "Cluster",
                "names": {"plural": "noxus", "kind": "WishIHadChosenNoxu", "listKind": "NoxuItemList"},
                "versions": [
                    {"name": "v1beta1", "served": True, "storage": True,
                     "schema": {"openAPIV3Schema": schema}},
                ],
            },
        }
    )  # fmt: skip


def _noxu_yaml(name: str, spec: str, finalizers: bool = False) -> bytes:
    meta = "\n  finalizers:\n  - test-finalizer" if finalizers else ""
    return (
        f"apiVersion: mygroup.example.com/v1beta1\nkind: WishIHadChosenNoxu\n"
        f"metadata:\n  name: {name}{meta}\nspec:\n{spec}"
    ).encode()


def _causes(st: dict[str, Any]) -> list[str]:
    return [c["field"] for c in st["details"]["causes"]]


def test_apply_crd_no_schema(apiserver: APIServer, raw: Raw) -> None:
    # TestApplyCRDNoSchema (a v1 CRD's nearest: the whole object kept unknown)
    _noxu_crd(apiserver, {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    body = _noxu_yaml("mytest", "  replicas: 1")
    code, got = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 201 and got["spec"]["replicas"] == 1, got
    patch = {"spec": {"replicas": 5}}
    code, _, got = raw("PATCH", f"{NOXUS}/mytest?fieldManager=merge", patch, MERGE)
    assert code == 200 and got["spec"]["replicas"] == 5, got
    code, st = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 409, st
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "merge" using '
        "mygroup.example.com/v1beta1: .spec.replicas"
    )
    code, got = apply(raw, f"{NOXUS}/mytest", body, "apply_test", force=True)
    assert code == 200 and got["spec"]["replicas"] == 1, got


def test_apply_crd_structural_schema(apiserver: APIServer, raw: Raw) -> None:
    # TestApplyCRDStructuralSchema
    _noxu_crd(apiserver, {"type": "object", "properties": {"spec": _NOXU_SPEC}})
    spec = (
        '  cronSpec: "* * * * */5"\n  replicas: 1\n  ports:\n  - name: x\n'
        "    containerPort: 80\n    protocol: TCP"
    )
    body = _noxu_yaml("mytest", spec, finalizers=True)
    code, got = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 201, got
    assert got["metadata"]["finalizers"] == ["test-finalizer"]
    assert got["spec"]["replicas"] == 1 and len(got["spec"]["ports"]) == 1
    # finalizers are a set: another finalizer stays on reapplying.
    patch = {"metadata": {"finalizers": ["test-finalizer", "another-one"]}}
    code, _, got = raw("PATCH", f"{NOXUS}/mytest?fieldManager=merge", patch, MERGE)
    assert code == 200, got
    code, got = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 200 and got["metadata"]["finalizers"] == ["test-finalizer", "another-one"]
    code, _, got = raw(
        "PATCH", f"{NOXUS}/mytest?fieldManager=merge", {"spec": {"replicas": 5}}, MERGE
    )
    assert code == 200 and got["spec"]["replicas"] == 5
    code, st = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 409 and _causes(st) == [".spec.replicas"], st
    code, got = apply(raw, f"{NOXUS}/mytest", body, "apply_test", force=True)
    assert code == 200 and got["spec"]["replicas"] == 1
    # A new applier changing an item of the map list conflicts on that item's field...
    port = '  ports:\n  - name: "y"\n    containerPort: {}\n    protocol: TCP'
    code, st = apply(raw, f"{NOXUS}/mytest", _noxu_yaml("mytest", port.format(80)), "apply_test_2")
    assert code == 409, st
    assert _causes(st) == ['.spec.ports[containerPort=80,protocol="TCP"].name']
    # ... and adding an item of its own is fine.
    code, got = apply(
        raw, f"{NOXUS}/mytest", _noxu_yaml("mytest", port.format(8080)), "apply_test_2"
    )
    assert code == 200 and len(got["spec"]["ports"]) == 2, got
    assert mf(got)[1]["fieldsV1"] == {
        "f:spec": {"f:ports": {'k:{"containerPort":8080,"protocol":"TCP"}': {
            ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}}}
    }  # fmt: skip
    # UpdateOnCreate: a custom resource's PUT never creates.
    missing = json.loads(json.dumps(got))
    missing["metadata"] = {"name": "should-not-exist", "finalizers": ["test-finalizer"]}
    code, _, st = raw("PUT", f"{NOXUS}/should-not-exist?fieldManager=apply_test", missing)
    assert code == 404 and st["reason"] == "NotFound", st


def test_default_missing_key_crd(apiserver: APIServer, raw: Raw) -> None:
    # TestDefaultMissingKeyCRD: a key left out but defaulted by the schema keys the item.
    port_schema = copy.deepcopy(_NOXU_PORT)
    port_schema["required"] = ["containerPort"]
    port_schema["properties"]["protocol"]["default"] = "TCP"
    spec = copy.deepcopy(_NOXU_SPEC)
    spec["properties"]["ports"]["items"] = port_schema
    _noxu_crd(apiserver, {"type": "object", "properties": {"spec": spec}})
    body = _noxu_yaml("mytest", "  replicas: 1\n  ports:\n  - name: x\n    containerPort: 80")
    code, got = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 201 and got["spec"]["ports"] == [
        {"name": "x", "containerPort": 80, "protocol": "TCP"}
    ], got
    body = _noxu_yaml("mytest", '  ports:\n  - name: "y"\n    containerPort: 80\n    protocol: TCP')
    code, st = apply(raw, f"{NOXUS}/mytest", body, "apply_test_2")
    assert code == 409, st
    assert _causes(st) == ['.spec.ports[containerPort=80,protocol="TCP"].name']


def test_noop_apply_with_defaults_same_resource_version_crd(apiserver: APIServer, raw: Raw) -> None:
    # TestNoOpApplyWithDefaultsSameResourceVersionCRD
    ref = {
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "name": {"type": "string"},
            "namespace": {"type": "string", "default": "default-namespace"},
        },
    }
    spec = {"type": "object", "properties": {"infrastructureRef": ref}}
    _noxu_crd(apiserver, {"type": "object", "properties": {"spec": spec}})
    body = {
        "apiVersion": "mygroup.example.com/v1beta1",
        "kind": "WishIHadChosenNoxu",
        "metadata": {"name": "mytest"},
        "spec": {"infrastructureRef": {"name": "infrastructure-machine-1\n"}},
    }
    code, created = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 201, created
    assert created["spec"]["infrastructureRef"]["namespace"] == "default-namespace"
    after_second_of(mf(created)[0]["time"])
    code, updated = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 200, updated
    assert updated["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert mf(updated) == mf(created)


def test_apply_crd_item_without_its_key_is_a_500(apiserver: APIServer, raw: Raw) -> None:
    # TestDefaultMissingKeyCRD, its converse: a CRD's map keys are required or
    # defaulted, so an applied item without a key nor a default is one SMD
    # cannot type (structuredMergeManager.Apply's ObjectToTyped): a 500
    # before any validation.
    _noxu_crd(apiserver, {"type": "object", "properties": {"spec": _NOXU_SPEC}})
    body = _noxu_yaml("mytest", "  ports:\n  - name: x\n    containerPort: 80")
    code, st = apply(raw, f"{NOXUS}/mytest", body, "apply_test")
    assert code == 500 and "reason" not in st, st
    assert st["message"] == (
        "failed to create typed patch object (/mytest; mygroup.example.com/v1beta1, "
        "Kind=WishIHadChosenNoxu): .spec.ports: element 0: associative list with keys "
        'has an element that omits key field "protocol" (and doesn\'t have default value)'
    )


# --- scale_test.go (TestScaleAllResources: test_ssa_scale.py) -------------------------


def test_scale_update_only_status(raw: Raw) -> None:
    # TestScaleUpdateOnlyStatus: a Scale's status is not written, nor owned.
    body = deployment("test")
    body["spec"]["replicas"] = 1
    assert apply(raw, f"{DEPLOY}/test", body, "apply_test")[0] == 201
    before = get(raw, f"{DEPLOY}/test")
    patch = {"status": {"replicas": 42}}
    code, _, got = raw("PATCH", f"{DEPLOY}/test/scale?fieldManager=scale_test", patch, MERGE)
    assert code == 200, got
    after = get(raw, f"{DEPLOY}/test")
    assert after["spec"]["replicas"] == 1
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert [e["manager"] for e in mf(after)] == ["apply_test"]


def test_status_apply_owns_all_but_the_reset_fields(apiserver: APIServer, raw: Raw) -> None:
    # TestApplyResetFields, the reset fields themselves: a status apply owns its
    # whole configuration but its strategy's GetResetFields (most kinds, custom
    # resources too: spec alone), even the metadata the strategy then drops.
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "labels": {"a": "x"}},
        "spec": {"ports": [{"port": 80}]},
    }
    base = "/api/v1/namespaces/default/services/s"
    assert apply(raw, base, svc, "main")[0] == 201
    status = {**svc, "metadata": {"name": "s", "labels": {"a": "y"}}}
    code, st = apply(raw, f"{base}/status", status, "st")
    assert code == 409, st
    assert st["message"] == 'Apply failed with 1 conflict: conflict with "main": .metadata.labels.a'
    code, got = apply(raw, f"{base}/status", status, "st", force=True)
    assert code == 200, got
    assert got["metadata"]["labels"] == {"a": "x"}  # serviceStatusStrategy keeps them
    assert {e["manager"]: e["fieldsV1"] for e in mf(got)} == {
        "main": {
            "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}}}
        },
        "st": {"f:metadata": {"f:labels": {"f:a": {}}}},
    }
    # deploymentStatusStrategy resets spec and metadata.labels: no conflict there.
    dep = deployment("d")
    assert apply(raw, f"{DEPLOY}/d", dep, "main")[0] == 201
    dstatus = {**dep, "metadata": {"name": "d", "labels": {"app": "other"}}}
    code, got = apply(raw, f"{DEPLOY}/d/status", dstatus, "st")
    assert code == 200, got
    assert [e["manager"] for e in mf(got)] == ["main"]
    # A custom resource's status strategy resets spec alone.
    apiserver.install_crd(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [
                    {"name": "v1", "served": True, "storage": True,
                     "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                ],
            },
        }
    )  # fmt: skip
    things = "/apis/example.com/v1/namespaces/default/things/t"
    thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    assert apply(raw, things, {**thing, "spec": {"a": 1}}, "main")[0] == 201
    config = {**thing, "metadata": {"name": "t", "labels": {"l": "v"}}}
    config.update(spec={"a": 2}, status={"s": 1}, other={"z": 1})
    code, got = apply(raw, f"{things}/status", config, "st")
    assert code == 200, got
    assert got["spec"] == {"a": 1} and got["status"] == {"s": 1}
    assert "labels" not in got["metadata"] and "other" not in got
    assert mf(got)[1]["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:l": {}}},
        "f:other": {".": {}, "f:z": {}},
        "f:status": {".": {}, "f:s": {}},
    }
