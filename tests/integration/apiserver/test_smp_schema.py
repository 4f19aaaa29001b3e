"""Strategic merge patch over HTTP, driven by the kinds' OpenAPI patch meta
(``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``) and
kube's directives (``$retainKeys``, ``$setElementOrder``, ``$patch``,
``$deleteFromPrimitiveList``), as apimachinery's ``strategicpatch`` does."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

SMP = "application/strategic-merge-patch+json"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
SA = "/api/v1/namespaces/default/serviceaccounts"
NODES = "/api/v1/nodes"


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def _deployment(raw: Raw, **pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c1", "image": "nginx"}, {"name": "c2", "image": "busybox"}]}
    spec.update(pod_spec)
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": spec},
        },
    }
    code, _, out = raw("POST", DEPLOY, body)
    assert code == 201, out
    created: dict[str, Any] = out
    return created


def _patch_pod_spec(raw: Raw, pod_spec: dict[str, Any]) -> tuple[int, Any]:
    code, _, out = raw("PATCH", f"{DEPLOY}/d", {"spec": {"template": {"spec": pod_spec}}}, SMP)
    return code, out


def test_smp_tolerations_are_atomic(raw: Raw) -> None:
    # PodSpec.tolerations has no patch strategy: the patch's list replaces.
    _deployment(raw, tolerations=[{"key": "k1", "operator": "Exists"}])
    code, out = _patch_pod_spec(raw, {"tolerations": [{"key": "k2", "operator": "Exists"}]})
    assert code == 200, out
    assert out["spec"]["template"]["spec"]["tolerations"] == [{"key": "k2", "operator": "Exists"}]


def test_smp_service_account_secrets_merge_by_name(raw: Raw) -> None:
    # ServiceAccount.secrets: merge by name; imagePullSecrets: atomic.
    body = {
        "metadata": {"name": "sa"},
        "secrets": [{"name": "s1"}],
        "imagePullSecrets": [{"name": "p1"}],
    }
    code, _, _ = raw("POST", SA, body)
    assert code == 201
    patch = {"secrets": [{"name": "s2"}], "imagePullSecrets": [{"name": "p2"}]}
    code, _, out = raw("PATCH", f"{SA}/sa", patch, SMP)
    assert code == 200, out
    # New patch items go before server-only ones (kube's mergeSortedSlice).
    assert out["secrets"] == [{"name": "s2"}, {"name": "s1"}]
    assert out["imagePullSecrets"] == [{"name": "p2"}]


def test_smp_node_addresses_merge_by_type(raw: Raw) -> None:
    node = {
        "metadata": {"name": "n1"},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.1"},
                {"type": "Hostname", "address": "n1"},
            ]
        },
    }
    code, _, out = raw("POST", NODES, {"metadata": {"name": "n1"}})
    assert code == 201, out
    merge = "application/merge-patch+json"
    code, _, out = raw("PATCH", f"{NODES}/n1/status", node, merge)
    assert code == 200 and len(out["status"]["addresses"]) == 2, out
    patch = {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}
    code, _, out = raw("PATCH", f"{NODES}/n1/status", patch, SMP)
    assert code == 200, out
    assert out["status"]["addresses"] == [
        {"type": "InternalIP", "address": "10.0.0.2"},
        {"type": "Hostname", "address": "n1"},
    ]


def test_smp_retain_keys_on_deployment_strategy(raw: Raw) -> None:
    d = _deployment(raw)
    assert d["spec"]["strategy"]["rollingUpdate"]  # defaulted
    # What kubectl apply sends when the strategy type changes.
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    code, _, out = raw("PATCH", f"{DEPLOY}/d", patch, SMP)
    assert code == 200, out
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_retain_keys_on_volume_source(raw: Raw) -> None:
    _deployment(raw, volumes=[{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}])
    patch = {
        "$setElementOrder/volumes": [{"name": "v"}, {"name": "w"}],
        "volumes": [
            {"$retainKeys": ["configMap", "name"], "name": "v", "configMap": {"name": "x"}}
        ],
    }
    code, out = _patch_pod_spec(raw, patch)
    assert code == 200, out
    volumes = out["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["name"] == "v" and "emptyDir" not in volumes[0]
    assert volumes[0]["configMap"]["name"] == "x"
    assert volumes[1] == {"name": "w", "emptyDir": {}}


def test_smp_set_element_order_on_containers(raw: Raw) -> None:
    _deployment(raw)
    patch = {
        "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}],
        "containers": [{"name": "c1", "image": "nginx:2"}],
    }
    code, out = _patch_pod_spec(raw, patch)
    assert code == 200, out
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("c2", "busybox"), ("c1", "nginx:2")]
    # Order only, no list in the patch.
    code, out = _patch_pod_spec(
        raw, {"$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}]}
    )
    assert code == 200, out
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["c1", "c2"]
    # Deleting with $patch: delete while ordering what remains.
    patch = {
        "$setElementOrder/containers": [{"name": "c2"}],
        "containers": [{"name": "c1", "$patch": "delete"}],
    }
    code, out = _patch_pod_spec(raw, patch)
    assert code == 200, out
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["c2"]


def test_smp_primitive_lists_and_replace_directive(raw: Raw) -> None:
    d = _deployment(raw)
    meta = {"finalizers": ["a.io/x", "b.io/y"]}
    code, _, out = raw("PATCH", f"{DEPLOY}/d", {"metadata": meta}, SMP)
    assert code == 200, out
    patch = {
        "metadata": {
            "$setElementOrder/finalizers": ["c.io/z", "b.io/y"],
            "$deleteFromPrimitiveList/finalizers": ["a.io/x"],
            "finalizers": ["c.io/z"],
        }
    }
    code, _, out = raw("PATCH", f"{DEPLOY}/d", patch, SMP)
    assert code == 200, out
    assert out["metadata"]["finalizers"] == ["c.io/z", "b.io/y"]
    # $patch: replace on a map replaces it (selector of the template labels).
    labels = {"$patch": "replace", "a": "b", "new": "1"}
    code, out = _patch_pod_spec(raw, {})
    assert code == 200
    code, _, out = raw(
        "PATCH", f"{DEPLOY}/d", {"spec": {"template": {"metadata": {"labels": labels}}}}, SMP
    )
    assert code == 200, out
    assert out["spec"]["template"]["metadata"]["labels"] == {"a": "b", "new": "1"}
    assert d["metadata"]["name"] == out["metadata"]["name"]


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        (
            {"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}},
            400,
            "invalid patch format of retainKeys",
        ),
        (
            {
                "spec": {
                    "strategy": {
                        "$retainKeys": ["type"],
                        "type": "Recreate",
                        "rollingUpdate": {"maxSurge": 1},
                    }
                }
            },
            400,
            "invalid patch format of retainKeys",
        ),
        (
            {"metadata": {"$deleteFromPrimitiveListfinalizers": ["x"]}},
            400,
            "invalid patch format of primitive list",
        ),
        (
            {"spec": {"template": {"spec": {"$setElementOrdercontainers": []}}}},
            400,
            "invalid patch format of setElementOrder list",
        ),
        ({"spec": {"$patch": "bogus"}}, 500, "unknown patch type: bogus in map: map[$patch:bogus]"),
        (
            {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}},
            500,
            "map: map[image:x] does not contain declared merge key: name",
        ),
        (
            {"spec": {"template": {"spec": {"containers": [{"name": "c1", "$patch": "merge"}]}}}},
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {
                "spec": {
                    "template": {
                        "spec": {
                            "$setElementOrder/containers": [{"name": "c1"}],
                            "containers": [{"name": "c2", "image": "x"}],
                        }
                    }
                }
            },
            500,
            "The order in patch list:\n[map[image:x name:c2]]\n doesn't match "
            "$setElementOrder list:\n[map[name:c1]]\n",
        ),
    ],
)
def test_smp_invalid_directives(raw: Raw, patch: dict[str, Any], code: int, message: str) -> None:
    _deployment(raw)
    got, _, st = raw("PATCH", f"{DEPLOY}/d", patch, SMP)
    assert (got, st["kind"], st["message"]) == (code, "Status", message)
    assert st.get("reason", "") == ("BadRequest" if code == 400 else "")
