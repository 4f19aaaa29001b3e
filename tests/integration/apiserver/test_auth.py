"""Authentication and authorization over HTTP (issue 10 point 3): the
allow-all default, the RBAC authorizer over stored Roles and bindings, the
create-only reviews, TokenRequest, TokenReview and impersonation."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from support.http import call

from pycontroller import ResourceClient
from pycontroller.errors import ApiError
from pycontroller.testing import APIServer

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
TOKENREVIEW = "/apis/authentication.k8s.io/v1/tokenreviews"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
SA = "system:serviceaccount:default:ctrl"


def _post(server: APIServer, path: str, body: Any, token: str | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, Any]:  # fmt: skip
    hdrs = dict(headers or {})
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    code, _, out = call(server, "POST", path, body, headers=hdrs)
    return code, out


def _ssar(verb: str, resource: str, namespace: str = "default", group: str = "") -> Any:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group,
                                        "namespace": namespace}},
    }  # fmt: skip


def test_allow_all_by_default(apiserver: APIServer) -> None:
    code, out = _post(apiserver, SSAR, _ssar("delete", "nodes", ""))
    assert code == 201 and out["status"] == {"allowed": True}
    assert out["kind"] == "SelfSubjectAccessReview"
    # Any user may do anything without an authorizer.
    api = apiserver.api_client(user=SA)
    pods = ResourceClient(api, "", "v1", "pods")
    assert pods.list(namespace="default")["items"] == []


def test_self_subject_review_names_the_user(apiserver: APIServer) -> None:
    code, out = _post(apiserver, SSR, {"apiVersion": "authentication.k8s.io/v1",
                                       "kind": "SelfSubjectReview"})  # fmt: skip
    assert code == 201
    assert out["status"]["userInfo"] == {
        "username": "kubernetes-admin",
        "groups": ["system:masters", "system:authenticated"],
    }
    token = apiserver.token_for(SA)
    _, out = _post(apiserver, SSR, {"kind": "SelfSubjectReview"}, token)
    assert out["status"]["userInfo"] == {
        "username": SA,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:default",
                   "system:authenticated"],
    }  # fmt: skip


@pytest.mark.apiserver(authorizer="RBAC")
def test_rbac_denies_until_a_role_is_bound(apiserver: APIServer) -> None:
    token = apiserver.token_for(SA)
    code, _, status = call(apiserver, "GET", "/api/v1/namespaces/default/pods",
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert code == 403 and status["reason"] == "Forbidden"
    assert status["message"] == (
        f'pods is forbidden: User "{SA}" cannot list resource "pods" in API group "" in the '
        'namespace "default"'
    )
    assert status["details"] == {"kind": "pods"}
    code, _, status = call(apiserver, "GET", "/apis/apps/v1/namespaces/default/deployments/web",
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert status["message"] == (
        f'deployments.apps "web" is forbidden: User "{SA}" cannot get resource "deployments" in '
        'API group "apps" in the namespace "default"'
    )
    code, _, status = call(apiserver, "GET", "/api/v1/nodes",
                           headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    assert status["message"].endswith('cannot list resource "nodes" in API group "" at the '
                                      "cluster scope")  # fmt: skip
    # Discovery and self reviews stay open to every authenticated user.
    assert call(apiserver, "GET", "/apis", headers={"Authorization": f"Bearer {token}"})[0] == 200
    code, out = _post(apiserver, SSAR, _ssar("list", "pods"), token)
    assert code == 201 and out["status"] == {"allowed": False}

    admin = apiserver.api_client()
    ResourceClient(admin, "rbac.authorization.k8s.io", "v1", "roles").create(
        {"metadata": {"name": "pod-reader"},
         "rules": [{"apiGroups": [""], "resources": ["pods", "pods/status"],
                    "verbs": ["get", "list", "watch"]}]},
        namespace="default",
    )  # fmt: skip
    ResourceClient(admin, "rbac.authorization.k8s.io", "v1", "rolebindings").create(
        {"metadata": {"name": "ctrl-reads-pods"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": "pod-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "ctrl", "namespace": "default"}]},
        namespace="default",
    )  # fmt: skip
    pods = ResourceClient(apiserver.api_client(user=SA), "", "v1", "pods")
    assert pods.list(namespace="default")["items"] == []
    with pytest.raises(ApiError) as err:
        pods.create({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "i"}]}}, namespace="default")  # fmt: skip
    assert err.value.status == 403
    with pytest.raises(ApiError):
        pods.list(namespace="kube-system")  # a Role grants only its namespace
    code, out = _post(apiserver, SSAR, _ssar("watch", "pods"), token)
    assert out["status"]["allowed"] is True
    assert out["status"]["reason"] == (
        f'RBAC: allowed by RoleBinding "ctrl-reads-pods/default" of Role "pod-reader" to User '
        f'"{SA}"'
    )


@pytest.mark.apiserver(authorizer="RBAC")
def test_cluster_roles_groups_subresources_and_resource_names(apiserver: APIServer) -> None:
    admin = apiserver.api_client()
    ResourceClient(admin, "rbac.authorization.k8s.io", "v1", "clusterroles", False).create(
        {"metadata": {"name": "cm-status"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                    "resourceNames": ["only"]},
                   {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update"]},
                   {"nonResourceURLs": ["/metrics*"], "verbs": ["get"]}]}
    )  # fmt: skip
    ResourceClient(admin, "rbac.authorization.k8s.io", "v1", "clusterrolebindings", False).create(
        {"metadata": {"name": "team"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "cm-status"},
         "subjects": [{"kind": "Group", "name": "team"}]}
    )  # fmt: skip
    review = {"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1"}

    def allowed(attrs: dict[str, Any], user: str = "alice", groups: tuple[str, ...] = ("team",)
                ) -> bool:  # fmt: skip
        key = "nonResourceAttributes" if "path" in attrs else "resourceAttributes"
        body = {**review, "spec": {"user": user, "groups": list(groups), key: attrs}}
        code, out = _post(apiserver, SAR, body)
        assert code == 201, out
        return bool(out["status"]["allowed"])

    assert allowed({"verb": "get", "resource": "configmaps", "name": "only", "namespace": "x"})
    assert not allowed({"verb": "get", "resource": "configmaps", "name": "other"})
    assert not allowed({"verb": "get", "resource": "configmaps", "name": "only"}, groups=())
    assert allowed({"verb": "update", "group": "apps", "resource": "deployments",
                    "subresource": "scale"})  # fmt: skip
    assert not allowed({"verb": "update", "group": "apps", "resource": "deployments"})
    assert allowed({"verb": "get", "path": "/metrics/x"})
    assert not allowed({"verb": "get", "path": "/debug"})
    code, out = _post(apiserver, SAR, {**review, "spec": {"resourceAttributes": {"verb": "get"}}})
    assert code == 422
    assert out["message"] == (
        'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": '
        "at least one of user or group must be specified"
    )


@pytest.mark.apiserver(authorizer="RBAC")
def test_impersonation_and_rules_review(apiserver: APIServer) -> None:
    headers = {"Impersonate-User": "bob"}
    code, _, status = call(apiserver, "GET", "/api/v1/namespaces/default/secrets",
                           headers=headers)  # fmt: skip
    assert code == 403 and 'User "bob" cannot list resource "secrets"' in status["message"]
    code, out = _post(apiserver, SSR, {"kind": "SelfSubjectReview"}, headers=headers)
    assert out["status"]["userInfo"]["username"] == "bob"
    code, out = _post(
        apiserver,
        SSRR,
        {"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}},
        headers=headers,
    )
    assert code == 201 and out["status"]["incomplete"] is False
    assert {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
            "resources": ["selfsubjectreviews"]} in out["status"]["resourceRules"]  # fmt: skip
    # Someone without "impersonate" may not switch users.
    token = apiserver.token_for("mallory")
    code, _, status = call(apiserver, "GET", "/api", headers={
        "Authorization": f"Bearer {token}", "Impersonate-User": "bob"})  # fmt: skip
    assert code == 403
    assert status["message"] == (
        'users "bob" is forbidden: User "mallory" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    )


def test_token_request_and_token_review(apiserver: APIServer) -> None:
    api = apiserver.api_client()
    ResourceClient(api, "", "v1", "serviceaccounts").create(
        {"metadata": {"name": "ctrl"}}, namespace="default"
    )
    code, req = _post(apiserver, "/api/v1/namespaces/default/serviceaccounts/ctrl/token",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                       "spec": {"expirationSeconds": 600}})  # fmt: skip
    assert code == 201 and req["kind"] == "TokenRequest"
    token = req["status"]["token"]
    assert req["status"]["expirationTimestamp"]
    code, out = _post(apiserver, TOKENREVIEW, {"kind": "TokenReview", "spec": {"token": token}})
    assert code == 201 and out["status"]["authenticated"] is True
    assert out["status"]["user"]["username"] == SA
    _, out = _post(apiserver, TOKENREVIEW, {"kind": "TokenReview", "spec": {"token": "nope"}})
    assert out["status"] == {"user": {}}
    code, _, _ = call(apiserver, "POST", "/api/v1/namespaces/default/serviceaccounts/none/token",
                      {"kind": "TokenRequest"})  # fmt: skip
    assert code == 404
    # Reviews are create-only.
    assert call(apiserver, "GET", SSAR)[0] == 405


def test_kubernetes_client_uses_reviews(apiserver: APIServer) -> None:
    api = client.AuthorizationV1Api(apiserver.api_client())
    body = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(verb="list", resource="pods")
        )
    )
    assert api.create_self_subject_access_review(body).status.allowed is True
