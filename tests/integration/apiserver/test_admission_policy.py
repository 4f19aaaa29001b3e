"""ValidatingAdmissionPolicy enforcement as kube-apiserver 1.32 does it
(``apiserver/pkg/admission/plugin/policy/validating``): matching, params,
variables, matchConditions, oldObject, Deny/Warn, failurePolicy, dry run,
deletes, the /scale subresource, validation of the policy objects, and
``kubectl apply`` of a violating object — all over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.http import call, request
from support.kubectl import KUBECTL, Kubectl

from pycontroller.testing import APIServer

ARV1 = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{ARV1}/validatingadmissionpolicies"
BINDINGS = f"{ARV1}/validatingadmissionpolicybindings"
NS = "default"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def rule(
    resources: list[str], operations: list[str] | None = None, group: str = "apps"
) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "apiVersions": ["v1"],
        "operations": operations or ["CREATE", "UPDATE"],
        "resources": resources,
    }


def make_policy(
    server: APIServer,
    name: str,
    validations: list[dict[str, Any]],
    rules: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    constraints = spec.pop("matchConstraints", {})
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": rules or [rule(["deployments"])], **constraints},
            "validations": validations,
            **spec,
        },
    }
    code, out = request(server, "POST", POLICIES, body)
    assert code == 201, out
    return observed(server, name, 1)


def observed(server: APIServer, name: str, generation: int) -> dict[str, Any]:
    """The policy once kube-controller-manager's status controller has observed
    ``generation`` (as tools that install policies wait: its status write
    changes the resourceVersion, so a read-modify-write before it may conflict)."""
    from pycontroller.testing import wait_for

    def get() -> dict[str, Any] | None:
        code, policy = request(server, "GET", f"{POLICIES}/{name}")
        assert code == 200, policy
        seen = (policy.get("status") or {}).get("observedGeneration")
        return dict(policy) if seen == generation else None

    return wait_for(get, what=f"{name}: observedGeneration {generation}")


def make_binding(
    server: APIServer, name: str, policy: str, actions: list[str] | None = None, **spec: Any
) -> dict[str, Any]:
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy, "validationActions": actions or ["Deny"], **spec},
    }
    code, out = request(server, "POST", BINDINGS, body)
    assert code == 201, out
    return dict(out)


def deployment(
    name: str, replicas: int = 1, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def configmap(
    name: str, data: dict[str, str], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "data": data,
    }


def denied(
    name: str,
    policy: str,
    binding: str | None,
    message: str,
    reason: str = "Invalid",
    code: int = 422,
    resource: str = "deployments",
    group: str = "apps",
) -> dict[str, Any]:
    """The Status kube answers (dispatcher.go: admission.NewForbidden re-coded)."""
    if binding is None:
        inner = f"ValidatingAdmissionPolicy '{policy}' denied request: {message}"
    else:
        inner = (
            f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: "
            f"{message}"
        )
    qualified = f"{resource}.{group}" if group else resource
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = resource
    details["causes"] = [{"message": inner}]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{qualified} "{name}" is forbidden: {inner}',
        "reason": reason,
        "details": details,
        "code": code,
    }


MAX5 = [{"expression": "object.spec.replicas <= 5"}]


# --- Deny, messages, reasons -----------------------------------------------------------


def test_deny_on_create_is_kubes_status_with_the_failed_expression(server: APIServer) -> None:
    make_policy(server, "max-replicas", MAX5)
    make_binding(server, "max-replicas-binding", "max-replicas")
    code, out = request(server, "POST", DEPLOYMENTS, deployment("big", replicas=7))
    assert (code, out) == (
        422,
        denied(
            "big",
            "max-replicas",
            "max-replicas-binding",
            "failed expression: object.spec.replicas <= 5",
        ),
    )
    assert request(server, "GET", f"{DEPLOYMENTS}/big")[0] == 404
    assert request(server, "POST", DEPLOYMENTS, deployment("small", replicas=5))[0] == 201


def test_message_expression_wins_then_message(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [
            {
                "expression": "object.spec.replicas <= 5",
                "message": "too many replicas",
                "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 5'",
            },
        ],
    )
    make_binding(server, "b", "p")
    code, out = request(server, "POST", DEPLOYMENTS, deployment("d", replicas=6))
    assert (code, out) == (422, denied("d", "p", "b", "replicas 6 > 5"))
    # A messageExpression that errors falls back to message (validator.go).
    make_policy(
        server,
        "q",
        [{"expression": "false", "message": "  plain  ", "messageExpression": "object.nope"}],
    )
    make_binding(server, "bq", "q")
    code, out = request(server, "POST", DEPLOYMENTS, deployment("e", replicas=1))
    assert (code, out) == (422, denied("e", "q", "bq", "plain"))


@pytest.mark.parametrize(
    ("reason", "code"),
    [("Forbidden", 403), ("Unauthorized", 401), ("RequestEntityTooLarge", 413), ("Invalid", 422)],
)
def test_reason_sets_the_status_reason_and_code(server: APIServer, reason: str, code: int) -> None:
    make_policy(server, "p", [{"expression": "false", "message": "no", "reason": reason}])
    make_binding(server, "b", "p")
    got = request(server, "POST", DEPLOYMENTS, deployment("d"))
    assert got == (code, denied("d", "p", "b", "no", reason=reason, code=code))


def test_warn_is_a_warning_header_and_the_write_succeeds(server: APIServer) -> None:
    make_policy(server, "p", [{"expression": "object.spec.replicas <= 5", "message": "many"}])
    make_binding(server, "b", "p", ["Warn"])
    code, headers, out = call(server, "POST", DEPLOYMENTS, deployment("d", replicas=9))
    assert code == 201, out
    assert headers["Warning"] == (
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': many\""
    )
    # Audit only: nothing visible.
    make_binding(server, "audit", "p", ["Audit"])
    code, headers, _ = call(server, "POST", DEPLOYMENTS, deployment("d2", replicas=9))
    assert code == 201
    assert headers["Warning"].count("Validation failed") == 1


def test_a_policy_without_a_binding_does_nothing(server: APIServer) -> None:
    make_policy(server, "p", [{"expression": "false"}])
    make_binding(server, "other", "not-this-policy")
    assert request(server, "POST", DEPLOYMENTS, deployment("d"))[0] == 201


def test_binding_and_policy_take_effect_at_once_and_stop_when_deleted(server: APIServer) -> None:
    make_policy(server, "p", [{"expression": "false"}])
    make_binding(server, "b", "p")
    assert request(server, "POST", DEPLOYMENTS, deployment("d"))[0] == 422
    assert request(server, "DELETE", f"{BINDINGS}/b")[0] == 200
    assert request(server, "POST", DEPLOYMENTS, deployment("d"))[0] == 201


# --- matching ----------------------------------------------------------------------------


def test_match_by_resource_and_operation(server: APIServer) -> None:
    make_policy(server, "p", [{"expression": "false"}], [rule(["configmaps"], ["UPDATE"], "")])
    make_binding(server, "b", "p")
    # Other resource, and CREATE of the matched one: admitted.
    assert request(server, "POST", DEPLOYMENTS, deployment("d"))[0] == 201
    code, cm = request(server, "POST", CONFIGMAPS, configmap("c", {"a": "1"}))
    assert code == 201
    cm["data"] = {"a": "2"}
    code, out = request(server, "PUT", f"{CONFIGMAPS}/c", cm)
    assert (code, out) == (
        422,
        denied("c", "p", "b", "failed expression: false", resource="configmaps", group=""),
    )


def test_wildcards_and_subresources(server: APIServer) -> None:
    # "*" is every resource but no subresource; "deployments/status" only the status.
    make_policy(
        server,
        "p",
        [{"expression": "false", "message": "status"}],
        [rule(["deployments/status"], ["UPDATE"])],
    )
    make_binding(server, "b", "p")
    code, dep = request(server, "POST", DEPLOYMENTS, deployment("d"))
    assert code == 201
    dep["metadata"]["labels"]["x"] = "y"
    code, dep = request(server, "PUT", f"{DEPLOYMENTS}/d", dep)
    assert code == 200, dep
    dep["status"] = {"replicas": 1}
    code, out = request(server, "PUT", f"{DEPLOYMENTS}/d/status", dep)
    assert (code, out) == (422, denied("d", "p", "b", "status"))


def test_namespace_selector(server: APIServer) -> None:
    for ns, labels in (("prod", {"env": "prod"}), ("dev", {"env": "dev"})):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}
        assert request(server, "POST", "/api/v1/namespaces", body)[0] == 201
    make_policy(
        server,
        "p",
        [{"expression": "false", "message": "not in prod"}],
        matchConstraints={"namespaceSelector": {"matchLabels": {"env": "prod"}}},
    )
    make_binding(server, "b", "p")
    assert (
        request(server, "POST", "/apis/apps/v1/namespaces/dev/deployments", deployment("d"))[0]
        == 201
    )
    code, out = request(
        server, "POST", "/apis/apps/v1/namespaces/prod/deployments", deployment("d")
    )
    assert (code, out) == (422, denied("d", "p", "b", "not in prod"))


def test_object_selector_on_the_binding(server: APIServer) -> None:
    make_policy(server, "p", [{"expression": "false", "message": "guarded"}])
    make_binding(
        server,
        "b",
        "p",
        matchResources={"objectSelector": {"matchExpressions": [
            {"key": "guard", "operator": "Exists"}]}},
    )  # fmt: skip
    assert request(server, "POST", DEPLOYMENTS, deployment("free"))[0] == 201
    code, out = request(
        server, "POST", DEPLOYMENTS, deployment("held", labels={"app": "held", "guard": "1"})
    )
    assert (code, out) == (422, denied("held", "p", "b", "guarded"))


def test_exclude_resource_rules(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "false"}],
        [rule(["*"], ["CREATE"], "*") | {"apiVersions": ["*"]}],
        matchConstraints={
            "excludeResourceRules": [
                {**rule(["configmaps"], ["*"], ""), "resourceNames": ["allowed"]},
                rule(["deployments"], ["*"]),
            ]
        },
    )
    make_binding(server, "b", "p")
    assert request(server, "POST", DEPLOYMENTS, deployment("d"))[0] == 201
    assert request(server, "POST", CONFIGMAPS, configmap("allowed", {}))[0] == 201
    code, out = request(server, "POST", CONFIGMAPS, configmap("other", {}))
    assert (code, out) == (
        422,
        denied("other", "p", "b", "failed expression: false", resource="configmaps", group=""),
    )


def test_match_conditions_all_true_to_apply(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "object.spec.replicas <= 2", "message": "prod max 2"}],
        matchConditions=[
            {"name": "is-prod", "expression": "object.metadata.?labels.tier.orValue('') == 'prod'"},
            {"name": "not-admin", "expression": "request.userInfo.username != 'nobody'"},
        ],
    )
    make_binding(server, "b", "p")
    assert request(server, "POST", DEPLOYMENTS, deployment("dev", 5))[0] == 201
    prod = deployment("prod", 5, labels={"app": "prod", "tier": "prod"})
    assert request(server, "POST", DEPLOYMENTS, prod) == (
        422,
        denied("prod", "p", "b", "prod max 2"),
    )


def test_variables_are_available_to_validations(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [
            {
                "expression": "variables.images.all(i, i.startsWith(variables.registry))",
                "messageExpression": "'images must come from ' + variables.registry",
            }
        ],
        variables=[
            {"name": "registry", "expression": "'registry.example.com/'"},
            {
                "name": "images",
                "expression": "object.spec.template.spec.containers.map(c, c.image)",
            },
        ],
    )
    make_binding(server, "b", "p")
    good = deployment("good")
    good["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example.com/app:1"
    assert request(server, "POST", DEPLOYMENTS, good)[0] == 201
    assert request(server, "POST", DEPLOYMENTS, deployment("bad")) == (
        422,
        denied("bad", "p", "b", "images must come from registry.example.com/"),
    )


# --- params ------------------------------------------------------------------------------


def test_params_from_a_configmap(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [
            {
                "expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                "messageExpression": "'at most ' + params.data.maxReplicas + ' replicas'",
            }
        ],
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
    )
    make_binding(
        server,
        "b",
        "p",
        paramRef={"name": "limits", "namespace": NS, "parameterNotFoundAction": "Deny"},
    )
    # No param yet, Deny: kube's configuration error.
    assert request(server, "POST", DEPLOYMENTS, deployment("d", 3)) == (
        422,
        denied(
            "d",
            "p",
            "b",
            "failed to configure binding: no params found for policy binding with `Deny` "
            "parameterNotFoundAction",
        ),
    )
    assert request(server, "POST", CONFIGMAPS, configmap("limits", {"maxReplicas": "3"}))[0] == 201
    assert request(server, "POST", DEPLOYMENTS, deployment("d", 3))[0] == 201
    assert request(server, "POST", DEPLOYMENTS, deployment("e", 4)) == (
        422,
        denied("e", "p", "b", "at most 3 replicas"),
    )


def test_params_by_selector_each_must_pass_and_allow_when_none(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "!(object.metadata.name in params.data)", "message": "reserved"}],
        rules=[rule(["configmaps"], ["CREATE"], "")],
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        matchConditions=[{"name": "not-params", "expression": "!has(object.metadata.labels)"}],
    )
    make_binding(
        server,
        "b",
        "p",
        paramRef={
            "selector": {"matchLabels": {"kind": "reserved"}},
            "parameterNotFoundAction": "Allow",
        },
    )
    assert request(server, "POST", CONFIGMAPS, configmap("x", {}))[0] == 201  # no params: allowed
    for i, name in enumerate(("a", "b")):
        cm = configmap(f"reserved-{i}", {name: ""}, labels={"kind": "reserved"})
        assert request(server, "POST", CONFIGMAPS, cm)[0] == 201
    assert request(server, "POST", CONFIGMAPS, configmap("c", {}))[0] == 201
    assert request(server, "POST", CONFIGMAPS, configmap("b", {})) == (
        422,
        denied("b", "p", "b", "reserved", resource="configmaps", group=""),
    )


# --- oldObject, scale, delete, dry run ------------------------------------------------


def test_old_object_on_update_replicas_may_not_decrease(server: APIServer) -> None:
    make_policy(
        server,
        "no-scale-down",
        [{"expression": "object.spec.replicas >= oldObject.spec.replicas",
          "message": "replicas may not decrease", "reason": "Forbidden"}],
        rules=[rule(["deployments", "deployments/scale"], ["UPDATE"])],
    )  # fmt: skip
    make_binding(server, "b", "no-scale-down")
    code, dep = request(server, "POST", DEPLOYMENTS, deployment("d", 3))
    assert code == 201
    dep["spec"]["replicas"] = 4
    code, dep = request(server, "PUT", f"{DEPLOYMENTS}/d", dep)
    assert code == 200, dep
    dep["spec"]["replicas"] = 2
    want = denied("d", "no-scale-down", "b", "replicas may not decrease", "Forbidden", 403)
    assert request(server, "PUT", f"{DEPLOYMENTS}/d", dep) == (403, want)
    patch = b'{"spec":{"replicas":1}}'
    assert request(server, "PATCH", f"{DEPLOYMENTS}/d", patch, "application/merge-patch+json") == (
        403,
        want,
    )
    # The /scale subresource: object and oldObject are autoscaling/v1 Scales.
    assert request(
        server, "PATCH", f"{DEPLOYMENTS}/d/scale", patch, "application/merge-patch+json"
    ) == (403, want)
    code, out = request(
        server, "PATCH", f"{DEPLOYMENTS}/d/scale", b'{"spec":{"replicas":6}}',
        "application/merge-patch+json",
    )  # fmt: skip
    assert (code, out["spec"]) == (200, {"replicas": 6})


def test_scale_request_kind_is_scale(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "false",
          "messageExpression":
              "request.kind.kind + ' ' + request.subResource + ' ' + object.kind"}],
        rules=[rule(["deployments/scale"], ["UPDATE"])],
    )  # fmt: skip
    make_binding(server, "b", "p")
    assert request(server, "POST", DEPLOYMENTS, deployment("d", 1))[0] == 201
    code, out = request(
        server, "PATCH", f"{DEPLOYMENTS}/d/scale", b'{"spec":{"replicas":2}}',
        "application/merge-patch+json",
    )  # fmt: skip
    assert (code, out) == (422, denied("d", "p", "b", "Scale scale Scale"))


def test_delete_is_admitted_with_old_object_and_null_object(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression":
              "object == null && !('protected' in oldObject.metadata.?labels.orValue({}))",
          "message": "protected"}],
        rules=[rule(["configmaps"], ["DELETE"], "")],
    )  # fmt: skip
    make_binding(server, "b", "p")
    assert request(server, "POST", CONFIGMAPS, configmap("free", {}))[0] == 201
    held = configmap("held", {}, labels={"protected": "yes"})
    assert request(server, "POST", CONFIGMAPS, held)[0] == 201
    assert request(server, "DELETE", f"{CONFIGMAPS}/free")[0] == 200
    assert request(server, "DELETE", f"{CONFIGMAPS}/held") == (
        422,
        denied("held", "p", "b", "protected", resource="configmaps", group=""),
    )
    assert request(server, "GET", f"{CONFIGMAPS}/held")[0] == 200


def test_dry_run_requests_are_evaluated_too(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "false", "messageExpression": "'dryRun=' + string(request.dryRun)"}],
        rules=[rule(["deployments"], ["CREATE", "DELETE"])],
    )
    make_binding(server, "b", "p")
    code, out = request(server, "POST", f"{DEPLOYMENTS}?dryRun=All", deployment("d"))
    assert (code, out) == (422, denied("d", "p", "b", "dryRun=true"))
    code, out = request(server, "POST", DEPLOYMENTS, deployment("d"))
    assert (code, out) == (422, denied("d", "p", "b", "dryRun=false"))


def test_request_user_info_and_namespace_object(server: APIServer) -> None:
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team", "labels": {"owner": "ann"}},
    }
    assert request(server, "POST", "/api/v1/namespaces", ns)[0] == 201
    make_policy(
        server,
        "p",
        [{"expression": "false",
          "messageExpression": "request.userInfo.username + ' in ' + request.namespace + "
                               "' owned by ' + namespaceObject.metadata.labels.owner + ' ' + "
                               "request.operation + ' ' + request.resource.resource"}],
    )  # fmt: skip
    make_binding(server, "b", "p")
    code, out = request(
        server, "POST", "/apis/apps/v1/namespaces/team/deployments", deployment("d")
    )
    assert (code, out) == (
        422,
        denied("d", "p", "b", "kubernetes-admin in team owned by ann CREATE deployments"),
    )


# --- failurePolicy ---------------------------------------------------------------------


def test_an_expression_error_denies_under_fail_and_admits_under_ignore(server: APIServer) -> None:
    make_policy(server, "p", [{"expression": "object.spec.missing == 1"}])
    make_binding(server, "b", "p")
    assert request(server, "POST", DEPLOYMENTS, deployment("d")) == (
        422,
        denied("d", "p", "b", "expression 'object.spec.missing == 1' resulted in error: "
               "no such key: missing"),
    )  # fmt: skip
    code, pol = request(server, "GET", f"{POLICIES}/p")
    pol["spec"]["failurePolicy"] = "Ignore"
    assert request(server, "PUT", f"{POLICIES}/p", pol)[0] == 200
    assert request(server, "POST", DEPLOYMENTS, deployment("d"))[0] == 201


def test_an_unsupported_construct_is_never_silently_admitted(server: APIServer) -> None:
    """A CEL construct outside the embedded evaluator's subset is an
    evaluation error: failurePolicy Fail denies (naming the construct)."""
    expr = "object.spec.replicas < quantity('1').getValue()"
    make_policy(server, "p", [{"expression": expr}])
    make_binding(server, "b", "p")
    code, out = request(server, "POST", DEPLOYMENTS, deployment("d"))
    assert code == 422
    assert out["message"].startswith(
        f"deployments.apps \"d\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' "
        f"denied request: expression '{expr}' resulted in error: "
    )
    assert "not supported by pycontroller's embedded API server" in out["message"]


def test_policy_resources_are_never_admitted(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "false"}],
        rules=[rule(["*"], ["*"], "*") | {"apiVersions": ["*"]}],
    )
    make_binding(server, "b", "p")
    # Bindings and policies can still be written (and deleted) to undo it.
    make_binding(server, "b2", "p", ["Warn"])
    assert request(server, "DELETE", f"{BINDINGS}/b")[0] == 200


# --- validation of the policy objects ---------------------------------------------------


def test_policy_and_binding_validation_messages(server: APIServer) -> None:
    body: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {"matchConstraints": {"resourceRules": [rule(["deployments"])]}},
    }
    code, out = request(server, "POST", POLICIES, body)
    assert code == 422
    assert out["message"] == (
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "p" is invalid: '
        "[spec.validations: Required value: validations or auditAnnotations must contain at "
        "least one item, spec.auditAnnotations: Required value: validations or "
        "auditAnnotations must contain at least one item]"
    )
    body["spec"]["validations"] = [{"expression": " ", "reason": "Teapot"}]
    code, out = request(server, "POST", POLICIES, body)
    assert code == 422
    assert out["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value: expression is not specified",
         "field": "spec.validations[0].expression"},
        {"reason": "FieldValueNotSupported",
         "message": 'Unsupported value: "Teapot": supported values: "Forbidden", "Invalid", '
                    '"RequestEntityTooLarge", "Unauthorized"',
         "field": "spec.validations[0].reason"},
    ]  # fmt: skip
    binding: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"},
        "spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]},
    }
    code, out = request(server, "POST", BINDINGS, binding)
    assert (code, out["message"]) == (
        422,
        'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "b" is invalid: '
        'spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"Deny", '
        '"Warn"}: must not contain both Deny and Warn (repeating the same validation failure '
        "information in the API response and headers serves no purpose)",
    )
    binding["spec"]["validationActions"] = []
    code, out = request(server, "POST", BINDINGS, binding)
    assert (code, out["message"]) == (
        422,
        'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "b" is invalid: '
        "spec.validationActions: Required value: at least one validation action is required",
    )


# --- kubectl -----------------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_of_a_violating_object_prints_kubes_error(
    server: APIServer, tmp_path: Path
) -> None:
    kubectl = Kubectl(server, tmp_path)
    policy = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: max-replicas
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
    message: "at most 5 replicas"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: max-replicas-binding
spec:
  policyName: max-replicas
  validationActions: [Deny]
"""
    kubectl("apply", "-f", kubectl.write("policy.yaml", policy))
    dep = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 9
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""
    path = kubectl.write("dep.yaml", dep)
    proc = kubectl("apply", "-f", path, check=False)
    assert proc.returncode == 1
    # kubectl prints an Invalid Status by its causes; kube's single cause has
    # no field, hence ": :" (as in the ValidatingAdmissionPolicy docs page).
    assert proc.stderr.strip() == (
        'The deployments "web" is invalid: : '
        "ValidatingAdmissionPolicy 'max-replicas' with binding "
        "'max-replicas-binding' denied request: at most 5 replicas"
    )
    assert kubectl("get", "deployments", "-n", "default", "-o", "name").stdout == ""


# --- custom resources, apply -----------------------------------------------------------


def widget_crd() -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema},
                {"name": "v2", "served": True, "storage": False, "schema": schema},
            ],
        },
    }


@pytest.mark.parametrize("match_policy", ["Equivalent", "Exact"])
def test_custom_resources_and_match_policy(server: APIServer, match_policy: str) -> None:
    code, out = request(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                        widget_crd())  # fmt: skip
    assert code == 201, out
    make_policy(
        server,
        "p",
        [{"expression": "object.spec.size < 10",
          "messageExpression": "request.resource.version + ' via ' + "
                               "request.requestResource.version + ' ' + object.apiVersion"}],
        rules=[rule(["widgets"], ["CREATE"], "example.com")],
        matchConstraints={"matchPolicy": match_policy},
    )  # fmt: skip
    make_binding(server, "b", "p")
    widget = {"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"size": 20}}  # fmt: skip
    code, out = request(server, "POST", f"/apis/example.com/v2/namespaces/{NS}/widgets", widget)
    if match_policy == "Exact":
        assert code == 201, out
        return
    assert (code, out) == (
        422,
        denied("w", "p", "b", "v1 via v2 example.com/v1", resource="widgets", group="example.com"),
    )


def test_server_side_apply_is_admitted_as_create_then_update(server: APIServer) -> None:
    make_policy(
        server,
        "p",
        [{"expression": "object.data.mode != 'unsafe'",
          "messageExpression": "request.operation + ' unsafe'"}],
        rules=[rule(["configmaps"], ["CREATE", "UPDATE"], "")],
    )  # fmt: skip
    make_binding(server, "b", "p")
    url = f"{CONFIGMAPS}/c?fieldManager=test"
    ctype = "application/apply-patch+yaml"
    cm = configmap("c", {"mode": "unsafe"})
    assert request(server, "PATCH", url, cm, ctype) == (
        422,
        denied("c", "p", "b", "CREATE unsafe", resource="configmaps", group=""),
    )
    assert request(server, "PATCH", url, configmap("c", {"mode": "safe"}), ctype)[0] == 201
    assert request(server, "PATCH", url, cm, ctype) == (
        422,
        denied("c", "p", "b", "UPDATE unsafe", resource="configmaps", group=""),
    )


def test_the_status_controller_observes_each_generation(server: APIServer) -> None:
    # kube-controller-manager's validatingadmissionpolicy-status controller:
    # status.observedGeneration follows metadata.generation, applied by its
    # own field manager; typeChecking carries no warnings here (no type checker).
    policy = make_policy(server, "p", [{"expression": "object.spec.replicas <= 5"}])
    assert policy["metadata"]["generation"] == 1
    assert policy["status"] == {"observedGeneration": 1, "typeChecking": {}}
    managers = {e.get("manager"): e for e in policy["metadata"]["managedFields"]}
    status_entry = managers["validatingadmissionpolicy-status"]
    assert (status_entry["operation"], status_entry["subresource"]) == ("Apply", "status")

    policy["spec"]["validations"] = [{"expression": "object.spec.replicas <= 3"}]
    code, updated = request(server, "PUT", f"{POLICIES}/p", policy)
    assert code == 200, updated
    assert updated["metadata"]["generation"] == 2
    observed(server, "p", 2)
