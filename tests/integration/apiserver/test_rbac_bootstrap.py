"""The default RBAC policy a cluster starts with (kube-apiserver's
bootstrap-roles hook) and ClusterRole aggregation (kube-controller-manager's
clusterrole-aggregation controller), over HTTP."""

from __future__ import annotations

import time
from typing import Any

import pytest
from support.http import call

from pycontroller import ResourceClient
from pycontroller.errors import ApiError
from pycontroller.testing import APIServer

RBAC = "rbac.authorization.k8s.io"
SA = "system:serviceaccount:team:ctrl"


def _roles(server: APIServer) -> ResourceClient:
    return ResourceClient(server.api_client(), RBAC, "v1", "clusterroles", False)


def _eventually(check: Any, deadline: float = 5.0) -> Any:
    end = time.monotonic() + deadline
    while True:
        got = check()
        if got or time.monotonic() > end:
            return got
        time.sleep(0.02)


def _bind(server: APIServer, kind: str, role: str, namespace: str = "") -> None:
    binding = {
        "metadata": {"name": f"ctrl-{role}"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "ctrl", "namespace": "team"}],
    }
    if kind == "RoleBinding":
        ResourceClient(server.api_client(), RBAC, "v1", "rolebindings").create(
            binding, namespace=namespace
        )
    else:
        ResourceClient(server.api_client(), RBAC, "v1", "clusterrolebindings", False).create(
            binding
        )


def test_default_cluster_roles_and_bindings_exist(apiserver: APIServer) -> None:
    names = {r["metadata"]["name"] for r in _roles(apiserver).list()["items"]}
    assert {"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
            "system:public-info-viewer", "system:aggregate-to-edit"} <= names  # fmt: skip
    admin = _roles(apiserver).get("cluster-admin")
    assert admin["rules"] == [
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ]
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    assert admin["metadata"]["annotations"] == {
        "rbac.authorization.kubernetes.io/autoupdate": "true"
    }
    crb = ResourceClient(apiserver.api_client(), RBAC, "v1", "clusterrolebindings", False)
    binding = crb.get("cluster-admin")
    assert binding["subjects"] == [{"apiGroup": RBAC, "kind": "Group", "name": "system:masters"}]
    assert binding["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"}


def test_view_edit_admin_are_aggregated_as_on_a_cluster(apiserver: APIServer) -> None:
    roles = _roles(apiserver)
    view, edit, admin = (roles.get(n) for n in ("view", "edit", "admin"))
    assert view["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {f"{RBAC}/aggregate-to-view": "true"}}]
    }
    assert view["rules"] == roles.get("system:aggregate-to-view")["rules"]
    # edit aggregates view (labelled aggregate-to-edit) and aggregate-to-edit;
    # admin aggregates edit in turn.
    for rule in view["rules"]:
        assert rule in edit["rules"] and rule in admin["rules"]
    assert {"verbs": ["create", "delete", "deletecollection", "patch", "update"],
            "apiGroups": ["apps"],
            "resources": ["daemonsets", "deployments", "deployments/rollback",
                          "deployments/scale", "replicasets", "replicasets/scale",
                          "statefulsets", "statefulsets/scale"]} in edit["rules"]  # fmt: skip
    assert not any("roles" in r.get("resources", []) for r in edit["rules"])
    assert any("rolebindings" in r.get("resources", []) for r in admin["rules"])
    managers = {e["manager"] for e in view["metadata"]["managedFields"]}
    assert "clusterrole-aggregation-controller" in managers


def test_a_labelled_cluster_role_extends_edit_and_leaves_it_when_removed(
    apiserver: APIServer,
) -> None:
    roles = _roles(apiserver)
    widget_rule = {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
                   "apiGroups": ["example.com"], "resources": ["widgets"]}  # fmt: skip
    roles.create({"metadata": {"name": "widgets-edit",
                               "labels": {f"{RBAC}/aggregate-to-edit": "true"}},
                  "rules": [widget_rule]})  # fmt: skip
    assert _eventually(lambda: widget_rule in roles.get("edit")["rules"])
    assert _eventually(lambda: widget_rule in roles.get("admin")["rules"])
    assert widget_rule not in roles.get("view")["rules"]
    roles.delete("widgets-edit")
    assert _eventually(lambda: widget_rule not in roles.get("admin")["rules"])
    assert widget_rule not in roles.get("edit")["rules"]


@pytest.mark.apiserver(authorizer="RBAC")
def test_binding_edit_in_a_namespace_grants_what_edit_grants(apiserver: APIServer) -> None:
    ResourceClient(apiserver.api_client(), "", "v1", "namespaces", False).create(
        {"metadata": {"name": "team"}}
    )
    _bind(apiserver, "RoleBinding", "edit", namespace="team")
    user = apiserver.api_client(user=SA)
    cms = ResourceClient(user, "", "v1", "configmaps")
    cms.create({"metadata": {"name": "c"}, "data": {"k": "v"}}, namespace="team")
    assert cms.get("c", namespace="team")["data"] == {"k": "v"}
    with pytest.raises(ApiError) as err:  # a RoleBinding grants only its namespace
        cms.list(namespace="default")
    assert err.value.status == 403
    with pytest.raises(ApiError) as err:  # edit may not grant roles
        ResourceClient(user, RBAC, "v1", "roles").create(
            {"metadata": {"name": "r"}, "rules": []}, namespace="team"
        )
    assert err.value.status == 403
    token = apiserver.token_for(SA)
    # Discovery comes from the bootstrap bindings of system:authenticated.
    assert call(apiserver, "GET", "/apis", headers={"Authorization": f"Bearer {token}"})[0] == 200


@pytest.mark.apiserver(authorizer="RBAC")
def test_view_cannot_write_or_read_secrets(apiserver: APIServer) -> None:
    _bind(apiserver, "ClusterRoleBinding", "view")
    user = apiserver.api_client(user=SA)
    assert ResourceClient(user, "apps", "v1", "deployments").list(namespace="default")
    for plural in ("secrets",):
        with pytest.raises(ApiError) as err:
            ResourceClient(user, "", "v1", plural).list(namespace="default")
        assert err.value.status == 403
    with pytest.raises(ApiError) as err:
        ResourceClient(user, "", "v1", "configmaps").create(
            {"metadata": {"name": "c"}}, namespace="default"
        )
    assert err.value.status == 403


@pytest.mark.apiserver(authorizer="RBAC")
def test_deleting_the_discovery_binding_closes_discovery(apiserver: APIServer) -> None:
    """The discovery rules are the stored bootstrap objects, not hard-coded."""
    token = apiserver.token_for(SA)
    headers = {"Authorization": f"Bearer {token}"}
    assert call(apiserver, "GET", "/version", headers=headers)[0] == 200
    crb = ResourceClient(apiserver.api_client(), RBAC, "v1", "clusterrolebindings", False)
    crb.delete("system:discovery")
    assert call(apiserver, "GET", "/apis", headers=headers)[0] == 403
    # system:public-info-viewer still grants /version.
    assert call(apiserver, "GET", "/version", headers=headers)[0] == 200
