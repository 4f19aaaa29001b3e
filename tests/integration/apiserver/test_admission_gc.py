"""The server's own controllers delete through admission, as kube's do through
the API: the garbage collector (as ``generic-garbage-collector``) and the
namespace deleter (as ``namespace-controller``) are seen, and can be refused,
by admission policies and webhooks; a refused delete is retried."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import trustme
from support.http import request
from support.webhooks import Review, WebhookServer, deny

from pycontroller.testing import APIServer, wait_for

ARV1 = "/apis/admissionregistration.k8s.io/v1"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def _keep_protected_policy(server: APIServer) -> None:
    """A policy refusing the garbage collector's deletes of protected ConfigMaps."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "keep-protected"},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["DELETE"],
                        "resources": ["configmaps"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": "!(has(oldObject.metadata.labels) && "
                    "'protected' in oldObject.metadata.labels && request.userInfo.username == "
                    "'system:serviceaccount:kube-system:generic-garbage-collector')",
                    "message": "the collector may not delete protected ConfigMaps",
                }
            ],
        },
    }
    assert request(server, "POST", f"{ARV1}/validatingadmissionpolicies", policy)[0] == 201
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "keep-protected"},
        "spec": {"policyName": "keep-protected", "validationActions": ["Deny"]},
    }
    assert request(server, "POST", f"{ARV1}/validatingadmissionpolicybindings", binding)[0] == 201


def _configmap(name: str, owner: dict[str, Any] | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def test_a_policy_sees_and_refuses_the_garbage_collector(server: APIServer) -> None:
    _keep_protected_policy(server)
    code, owner = request(server, "POST", CONFIGMAPS, _configmap("owner"))
    assert code == 201
    assert request(server, "POST", CONFIGMAPS, _configmap("kept", owner, protected="yes"))[0] == 201
    assert request(server, "POST", CONFIGMAPS, _configmap("collected", owner))[0] == 201
    assert request(server, "DELETE", f"{CONFIGMAPS}/owner")[0] == 200
    wait_for(
        lambda: request(server, "GET", f"{CONFIGMAPS}/collected")[0] == 404,
        what="the unprotected dependent collected",
    )
    # Refused: it stays, the collector retrying (a user may still delete it).
    server.gc.sync_once()
    assert request(server, "GET", f"{CONFIGMAPS}/kept")[0] == 200
    # Once the label is gone, a retry collects it.
    code, _ = request(
        server,
        "PATCH",
        f"{CONFIGMAPS}/kept",
        {"metadata": {"labels": None}},
        "application/merge-patch+json",
    )
    assert code == 200
    wait_for(
        lambda: request(server, "GET", f"{CONFIGMAPS}/kept")[0] == 404,
        timeout=15,
        what="the dependent collected after its label went",
    )


def test_a_webhook_refusing_a_delete_keeps_the_namespace_terminating(server: APIServer) -> None:
    hooks = WebhookServer(trustme.CA())
    seen: list[str] = []

    def guard(review: Review) -> dict[str, Any]:
        seen.append(review["request"]["userInfo"]["username"])
        return deny(review, {"message": "guarded"})

    hooks.handlers["/guard"] = guard
    try:
        assert request(server, "POST", "/api/v1/namespaces", {"metadata": {"name": "t"}})[0] == 201
        cm = _configmap("guarded", guarded="yes")
        assert request(server, "POST", "/api/v1/namespaces/t/configmaps", cm)[0] == 201
        config = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "guard"},
            "webhooks": [
                {
                    "name": "guard.hooks.example.com",
                    "clientConfig": {"url": hooks.url("/guard"), "caBundle": hooks.ca_bundle},
                    "rules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["DELETE"],
                            "resources": ["configmaps"],
                        }
                    ],
                    "objectSelector": {"matchLabels": {"guarded": "yes"}},
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                }
            ],
        }
        path = f"{ARV1}/validatingwebhookconfigurations"
        assert request(server, "POST", path, config)[0] == 201
        assert request(server, "DELETE", "/api/v1/namespaces/t")[0] == 200
        wait_for(lambda: len(seen) >= 1, what="the namespace deleter's delete admitted")
        assert seen[0] == "system:serviceaccount:kube-system:namespace-controller"
        code, ns = request(server, "GET", "/api/v1/namespaces/t")
        assert code == 200 and ns["status"]["phase"] == "Terminating", json.dumps(ns)
        assert request(server, "GET", "/api/v1/namespaces/t/configmaps/guarded")[0] == 200
        # The webhook gone, the next retry empties and removes the namespace.
        assert request(server, "DELETE", f"{path}/guard")[0] == 200
        wait_for(
            lambda: request(server, "GET", "/api/v1/namespaces/t")[0] == 404,
            timeout=15,
            what="the namespace removed",
        )
    finally:
        hooks.close()
