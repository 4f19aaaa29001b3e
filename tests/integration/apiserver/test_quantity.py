"""Quantities in built-in objects come back as kube-apiserver writes them.

kube-apiserver decodes a built-in object into its Go struct, so every
``resource.Quantity`` is parsed and written back by ``MarshalJSON``: a client
reads ``1Gi`` for the ``1024Mi`` it sent, ``500m`` for ``0.5``, the string
``"2"`` for the number ``2``. A controller that diffs what it wrote against
what it reads without knowing this rewrites the object forever on a cluster;
the embedded server answers the same, so its tests see it. Custom resources
are unstructured in kube: their quantities are left as sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support import crds
from support.http import request

from pycontroller.testing import APIServer
from pycontroller.testing.apiserver.schema import quantity

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def pod(resources: dict[str, Any], name: str = "p") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "nginx:1.27", "resources": resources}],
            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1024Ki"}}],
        },
    }


def test_pod_quantities_are_canonical_on_create_and_read(server: APIServer) -> None:
    resources = {
        "requests": {"cpu": 0.5, "memory": "1024Mi"},
        "limits": {"cpu": "1000m", "memory": "1.5Gi", "ephemeral-storage": 2000},
    }
    code, created = request(server, "POST", PODS, pod(resources))
    assert code == 201, created
    want = {
        # requests default to the limits they lack (SetDefaults_Pod)
        "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2k"},
        "limits": {"cpu": "1", "memory": "1536Mi", "ephemeral-storage": "2k"},
    }
    assert created["spec"]["containers"][0]["resources"] == want
    assert created["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "1Mi"
    code, read = request(server, "GET", f"{PODS}/p")
    assert code == 200
    assert read["spec"]["containers"][0]["resources"] == want


def test_canonical_text_is_kept_as_sent(server: APIServer) -> None:
    resources = {"requests": {"cpu": "100m", "memory": "3Gi"}, "limits": {"cpu": "1.500"}}
    code, created = request(server, "POST", PODS, pod(resources))
    assert code == 201, created
    assert created["spec"]["containers"][0]["resources"] == resources


def test_reapplying_the_text_that_was_rewritten_is_a_no_op(server: APIServer) -> None:
    path = f"{PODS}/p?fieldManager=ctl"
    body = pod({"requests": {"memory": "1024Mi"}})
    code, first = request(server, "PATCH", path, body, "application/apply-patch+yaml")
    assert code == 201, first
    assert first["spec"]["containers"][0]["resources"]["requests"]["memory"] == "1Gi"
    code, second = request(server, "PATCH", path, body, "application/apply-patch+yaml")
    assert code == 200, second
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_quota_and_pvc_quantities_are_canonical(server: APIServer) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"requests.memory": "2048Mi", "pods": 10, "requests.cpu": "2000m"}},
    }
    code, out = request(server, "POST", "/api/v1/namespaces/default/resourcequotas", quota)
    assert code == 201, out
    assert out["spec"]["hard"] == {"requests.memory": "2Gi", "pods": "10", "requests.cpu": "2"}
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "0.5Gi"}}},
    }
    code, out = request(server, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", pvc)
    assert code == 201, out
    assert out["spec"]["resources"]["requests"]["storage"] == "512Mi"


@pytest.mark.parametrize(
    ("value", "message"),
    [("1KK", quantity.SUFFIX), ("1.2.3", quantity.FORMAT_WRONG), ("lots", quantity.FORMAT_WRONG)],
)
def test_a_bad_quantity_is_a_400_with_gos_message(
    server: APIServer, value: str, message: str
) -> None:
    code, out = request(server, "POST", PODS, pod({"limits": {"memory": value}}))
    assert code == 400, out
    assert out["reason"] == "BadRequest"
    assert out["message"].endswith(message), out["message"]


def test_custom_resource_quantities_are_left_as_sent(server: APIServer) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"memory": {"x-kubernetes-int-or-string": True}},
            }
        },
    }
    server.install_crd(crds.crd("widgets", "Widget", schema=schema))
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"memory": "1024Mi"},
    }
    code, out = request(server, "POST", "/apis/example.com/v1/namespaces/default/widgets", body)
    assert code == 201, out
    assert out["spec"] == {"memory": "1024Mi"}


def test_another_spelling_of_an_owned_quantity_is_an_apply_conflict(server: APIServer) -> None:
    # Server-side apply compares the applied text with the stored canonical
    # one, so a second manager applying "1024Mi" where another applied "1Gi"
    # conflicts on a cluster too (as users of SSA tools meet it: "1000m" vs
    # "1", pulumi-kubernetes#2760): a controller should apply canonical text.
    apply = "application/apply-patch+yaml"
    path = f"{PODS}/p"

    def body(memory: str) -> dict[str, Any]:
        out = pod({"limits": {"memory": memory}})
        del out["spec"]["volumes"]
        return out

    code, _ = request(server, "PATCH", f"{path}?fieldManager=a", body("1Gi"), apply)
    assert code == 201
    code, st = request(server, "PATCH", f"{path}?fieldManager=b", body("1024Mi"), apply)
    assert code == 409, st
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "a": '
        '.spec.containers[name="c"].resources.limits.memory'
    )
    # The canonical text is the same value: shared ownership, no conflict.
    code, out = request(server, "PATCH", f"{path}?fieldManager=b", body("1Gi"), apply)
    assert code == 200, out
