"""Server-side apply through ``/scale``, over HTTP, following kube's
``TestScaleAllResources`` (test/integration/apiserver/apply/scale_test.go):
the owners of a parent's replicas field are the owners of the Scale's
``.spec.replicas``, an apply through the Scale conflicts with them unless
forced, and what it takes (or shares) is recorded on the parent."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from support.http import call

from pycontroller.testing import APIServer
from pycontroller.testing.wait import wait_for

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"

_TEMPLATE = {
    "metadata": {"labels": {"app": "nginx"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]},
}


def _apps(kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "test"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": _TEMPLATE,
        },
    }


def _rc() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "test"},
        "spec": {"replicas": 1, "selector": {"app": "nginx"}, "template": _TEMPLATE},
    }


KINDS = [
    ("/apis/apps/v1/namespaces/default/deployments", _apps("Deployment")),
    ("/apis/apps/v1/namespaces/default/statefulsets", _apps("StatefulSet")),
    ("/apis/apps/v1/namespaces/default/replicasets", _apps("ReplicaSet")),
    ("/api/v1/namespaces/default/replicationcontrollers", _rc()),
]


def _scale(replicas: int) -> dict[str, Any]:
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": "test", "namespace": "default"},
        "spec": {"replicas": replicas},
    }


class Client:
    def __init__(self, apiserver: APIServer, base: str) -> None:
        self._raw = functools.partial(call, apiserver)
        self.base = base

    def send(
        self, method: str, sub: str, body: Any, ctype: str, manager: str, *, force: bool = False
    ) -> tuple[int, Any]:
        query = f"?fieldManager={manager}" + ("&force=true" if force else "")
        data = json.dumps(body).encode() if body is not None else None
        code, _, out = self._raw(method, f"{self.base}/test{sub}{query}", data, ctype)
        return code, out

    def replicas_and_owners(self) -> tuple[int, set[str]]:
        code, _, obj = self._raw("GET", f"{self.base}/test")
        assert code == 200, obj
        owners = {
            e.get("manager", "")
            for e in obj["metadata"].get("managedFields") or []
            if "f:replicas" in (e.get("fieldsV1") or {}).get("f:spec", {})
        }
        return obj["spec"]["replicas"], owners


@pytest.mark.parametrize(("base", "obj"), KINDS, ids=lambda v: v if isinstance(v, str) else "")
def test_apply_through_scale_as_kube_scale_test(
    apiserver: APIServer, base: str, obj: dict[str, Any]
) -> None:
    c = Client(apiserver, base)
    assert c.send("PATCH", "", obj, APPLY, "apply_test")[0] == 201
    assert c.replicas_and_owners() == (1, {"apply_test"})

    code, out = c.send("PATCH", "/scale", {"spec": {"replicas": 5}}, MERGE, "scale_test")
    assert code == 200, out
    assert c.replicas_and_owners() == (5, {"scale_test"})

    # The original configuration now conflicts with the scaler; forced, it wins.
    code, out = c.send("PATCH", "", obj, APPLY, "apply_test")
    assert code == 409, out
    assert c.send("PATCH", "", obj, APPLY, "apply_test", force=True)[0] == 200
    assert c.replicas_and_owners() == (1, {"apply_test"})

    # An apply through the Scale with another count conflicts with the applier.
    code, out = c.send("PATCH", "/scale", _scale(17), APPLY, "apply_scale")
    assert code == 409, out
    assert out["reason"] == "Conflict"
    assert out["message"] == (
        'Apply failed with 1 conflict: conflict with "apply_test": .spec.replicas'
    )
    assert out["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "apply_test"',
            "field": ".spec.replicas",
        }
    ]
    assert c.replicas_and_owners() == (1, {"apply_test"})

    # Forced, only the Scale's applier owns the replicas.
    code, out = c.send("PATCH", "/scale", _scale(17), APPLY, "apply_scale", force=True)
    assert code == 200, out
    assert out["kind"] == "Scale" and out["spec"] == {"replicas": 17}
    assert c.replicas_and_owners() == (17, {"apply_scale"})
    _, _, got = c._raw("GET", f"{base}/test")
    mine = [e for e in got["metadata"]["managedFields"] if e["manager"] == "apply_scale"]
    assert [(e["operation"], e["apiVersion"], e["subresource"]) for e in mine] == [
        ("Apply", obj["apiVersion"], "scale")
    ]
    assert mine[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    # The parent's applier keeps the rest of what it applied.
    applier = next(e for e in got["metadata"]["managedFields"] if e["manager"] == "apply_test")
    assert "f:selector" in applier["fieldsV1"]["f:spec"]

    # A replace of the Scale takes the replicas.
    assert c.send("PUT", "/scale", _scale(7), "application/json", "replace_test")[0] == 200
    assert c.replicas_and_owners() == (7, {"replace_test"})

    # Applying the value the field has shares it.
    assert c.send("PATCH", "/scale", _scale(7), APPLY, "co_owning_test")[0] == 200
    assert c.replicas_and_owners() == (7, {"replace_test", "co_owning_test"})

    # A conflict with an updater through the Scale names its subresource and
    # the parent's apiVersion, as kube's does.
    code, out = c.send("PATCH", "/scale", _scale(8), APPLY, "late")
    assert code == 409, out
    assert out["message"] == (
        "Apply failed with 2 conflicts: "
        'conflicts with "co_owning_test" with subresource "scale":\n- .spec.replicas\n'
        f'conflicts with "replace_test" with subresource "scale" using {obj["apiVersion"]}:\n'
        "- .spec.replicas"
    )

    # Scaling again makes the scaler the only owner.
    assert c.send("PATCH", "/scale", {"spec": {"replicas": 5}}, MERGE, "scale_test")[0] == 200
    assert c.replicas_and_owners() == (5, {"scale_test"})


def test_reapplying_through_scale_is_a_no_op(apiserver: APIServer) -> None:
    base, obj = KINDS[0]
    c = Client(apiserver, base)
    assert c.send("PATCH", "", obj, APPLY, "apply_test")[0] == 201
    code, first = c.send("PATCH", "/scale", _scale(3), APPLY, "hpa", force=True)
    assert code == 200, first
    code, again = c.send("PATCH", "/scale", _scale(3), APPLY, "hpa")
    assert code == 200, again
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_apply_through_scale_needs_a_field_manager_and_a_scale(apiserver: APIServer) -> None:
    base, obj = KINDS[0]
    c = Client(apiserver, base)
    assert c.send("PATCH", "", obj, APPLY, "apply_test")[0] == 201
    code, _, out = c._raw("PATCH", f"{base}/test/scale", json.dumps(_scale(2)).encode(), APPLY)
    assert code == 422, out
    wrong = {**_scale(2), "apiVersion": "autoscaling/v2"}
    code, out = c.send("PATCH", "/scale", wrong, APPLY, "x")
    assert code == 400, out
    assert out["message"] == "invalid object type: autoscaling/v2, Kind=Scale"
    code, out = c.send("PATCH", "/scale", _scale(-1), APPLY, "x", force=True)
    assert code == 422, out
    assert out["details"]["causes"][0]["field"] == "spec.replicas"
    # A missing parent is a 404, not a create.
    code, _, out = call(
        apiserver,
        "PATCH",
        f"{base}/nope/scale?fieldManager=x",
        json.dumps(_scale(2)).encode(),
        APPLY,
    )
    assert code == 404, out


def test_apply_through_a_custom_resource_scale(apiserver: APIServer) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "pools", "singular": "pool", "kind": "Pool"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.size",
                            "statusReplicasPath": ".status.size",
                        },
                    },
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    raw = functools.partial(call, apiserver)
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert raw("POST", crds, json.dumps(crd).encode(), "application/json")[0] == 201
    base = "/apis/example.com/v1/namespaces/default/pools"
    wait_for(lambda: raw("GET", base)[0] == 200, 5, what="pools served")
    c = Client(apiserver, base)
    pool = {"apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "test"}}
    assert c.send("PATCH", "", {**pool, "spec": {"size": 2, "x": 1}}, APPLY, "owner")[0] == 201
    code, out = c.send("PATCH", "/scale", _scale(4), APPLY, "scaler")
    assert code == 409, out
    assert out["details"]["causes"][0]["field"] == ".spec.replicas"
    assert c.send("PATCH", "/scale", _scale(4), APPLY, "scaler", force=True)[0] == 200
    _, _, got = raw("GET", f"{base}/test")
    assert got["spec"] == {"size": 4, "x": 1}
    owned = {e["manager"]: e["fieldsV1"] for e in got["metadata"]["managedFields"]}
    assert owned["scaler"] == {"f:spec": {"f:size": {}}}
    assert "f:size" not in owned["owner"]["f:spec"] and "f:x" in owned["owner"]["f:spec"]
    # Custom resources take no strategic merge patch, through /scale neither.
    code, out = c.send(
        "PATCH", "/scale", {"spec": {"replicas": 1}}, "application/strategic-merge-patch+json", "s"
    )
    assert code == 415, out
