"""Admission webhooks as kube-apiserver 1.32 calls them
(``apiserver/pkg/admission/plugin/webhook``): AdmissionReview over HTTPS with
the caBundle, mutating JSONPatches, denials, failurePolicy, timeouts, dry
run, selectors, reinvocation, /scale, service references, the configuration
objects' validation, and webhooks that call back into the server while a
write waits for them — all over HTTP, with a real HTTPS webhook server."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trustme
from support.http import call, request
from support.webhooks import Review, WebhookServer, allow, deny, patch_response

from pycontroller.testing import APIServer

ARV1 = "/apis/admissionregistration.k8s.io/v1"
VALIDATING = f"{ARV1}/validatingwebhookconfigurations"
MUTATING = f"{ARV1}/mutatingwebhookconfigurations"
NS = "default"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def hooks(ca: trustme.CA) -> Iterator[WebhookServer]:
    s = WebhookServer(ca)
    yield s
    s.close()


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def webhook(
    hooks: WebhookServer,
    path: str,
    name: str | None = None,
    resources: tuple[str, ...] = ("configmaps",),
    operations: tuple[str, ...] = ("CREATE", "UPDATE"),
    group: str = "",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "name": name or f"{path.strip('/')}.hooks.example.com",
        "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
        "rules": [
            {
                "apiGroups": [group],
                "apiVersions": ["v1"],
                "operations": list(operations),
                "resources": list(resources),
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }


def install(server: APIServer, kind: str, name: str, *webhooks: dict[str, Any]) -> None:
    path = VALIDATING if kind == "ValidatingWebhookConfiguration" else MUTATING
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }
    code, out = request(server, "POST", path, body)
    assert code == 201, out


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


# --- validating ---------------------------------------------------------------------------


def test_a_validating_webhook_denies_with_its_status_and_nothing_is_stored(
    server: APIServer, hooks: WebhookServer
) -> None:
    def check(review: Review) -> dict[str, Any]:
        if review["request"]["object"]["data"].get("mode") == "bad":
            return deny(review, {"code": 403, "reason": "Forbidden", "message": "mode bad"})
        return allow(review)

    hooks.handlers["/validate"] = check
    install(server, "ValidatingWebhookConfiguration", "v", webhook(hooks, "/validate"))
    code, out = request(server, "POST", CONFIGMAPS, configmap("a", mode="bad"))
    assert code == 403, out
    assert out["reason"] == "Forbidden"
    assert out["message"] == (
        'admission webhook "validate.hooks.example.com" denied the request: mode bad'
    )
    assert request(server, "GET", f"{CONFIGMAPS}/a")[0] == 404
    code, out = request(server, "POST", CONFIGMAPS, configmap("a", mode="good"))
    assert code == 201, out


def test_a_denial_without_a_status_is_a_400_without_explanation(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/no"] = lambda r: deny(r)
    install(server, "ValidatingWebhookConfiguration", "v", webhook(hooks, "/no"))
    code, out = request(server, "POST", CONFIGMAPS, configmap("a"))
    assert code == 400, out
    assert out["message"] == (
        'admission webhook "no.hooks.example.com" denied the request without explanation'
    )


def test_the_admission_review_carries_what_kube_sends(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/seen"] = lambda r: allow(r, warnings=["careful: seen"])
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(hooks, "/seen", operations=("CREATE", "UPDATE", "DELETE")),
    )
    status, headers, out = call(server, "POST", CONFIGMAPS, configmap("a", k="1"))
    assert status == 201, out
    assert '299 - "careful: seen"' in headers.get("Warning", "")
    review = hooks.reviews["/seen"][-1]
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    req = review["request"]
    assert req["uid"]
    assert req["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert req["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert req["operation"] == "CREATE"
    assert (req["name"], req["namespace"]) == ("a", NS)
    assert req["object"]["data"] == {"k": "1"}
    # Validating admission runs after BeforeCreate: the object has its uid
    # (mutating webhooks see it before, without one).
    assert req["object"]["metadata"]["uid"]
    assert req["oldObject"] is None
    assert req["dryRun"] is False
    assert req["options"]["kind"] == "CreateOptions"
    assert hooks.queries[-1] == "timeout=10s"
    code, _ = request(server, "DELETE", f"{CONFIGMAPS}/a")
    assert code == 200
    req = hooks.reviews["/seen"][-1]["request"]
    assert req["operation"] == "DELETE"
    assert req["object"] is None
    assert req["oldObject"]["data"] == {"k": "1"}


def test_validating_webhook_denies_a_delete_and_the_object_stays(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/keep"] = lambda r: deny(r, {"message": "keep it"})
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(hooks, "/keep", operations=("DELETE",)),
    )
    assert request(server, "POST", CONFIGMAPS, configmap("a"))[0] == 201
    code, out = request(server, "DELETE", f"{CONFIGMAPS}/a")
    assert code == 400, out
    assert out["message"].endswith("denied the request: keep it")
    assert request(server, "GET", f"{CONFIGMAPS}/a")[0] == 200


def test_selectors_decide_which_requests_a_webhook_sees(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/sel"] = lambda r: deny(r, {"message": "selected"})
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(
            hooks,
            "/sel",
            objectSelector={"matchLabels": {"guarded": "yes"}},
            namespaceSelector={"matchExpressions": [{"key": "team", "operator": "Exists"}]},
        ),
    )
    # The namespace has no team label: not selected.
    assert request(server, "POST", CONFIGMAPS, configmap("a", {"guarded": "yes"}))[0] == 201
    code, _ = request(
        server, "POST", "/api/v1/namespaces", {"metadata": {"name": "t", "labels": {"team": "x"}}}
    )
    assert code == 201
    other = "/api/v1/namespaces/t/configmaps"
    assert request(server, "POST", other, configmap("b", {"guarded": "no"}))[0] == 201
    code, out = request(server, "POST", other, configmap("c", {"guarded": "yes"}))
    assert code == 400 and out["message"].endswith("selected"), out
    # The old object's labels select an update too (one removing the label).
    code, out = request(
        server,
        "PATCH",
        f"{other}/b",
        {"metadata": {"labels": {"guarded": "yes"}}},
        "application/merge-patch+json",
    )
    assert code == 400, out
    assert len(hooks.reviews["/sel"]) == 2


def test_match_conditions_skip_a_webhook(server: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/mc"] = lambda r: deny(r, {"message": "matched"})
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(
            hooks,
            "/mc",
            matchConditions=[{"name": "only-x", "expression": "object.metadata.name == 'x'"}],
        ),
    )
    assert request(server, "POST", CONFIGMAPS, configmap("a"))[0] == 201
    code, _ = request(server, "POST", CONFIGMAPS, configmap("x"))
    assert code == 400
    assert len(hooks.reviews["/mc"]) == 1


# --- mutating -----------------------------------------------------------------------------


def test_a_mutating_webhook_patches_the_object_before_validation(
    server: APIServer, hooks: WebhookServer
) -> None:
    def label(review: Review) -> dict[str, Any]:
        meta = review["request"]["object"]["metadata"]
        if "labels" not in meta:
            return patch_response(review, [{"op": "add", "path": "/metadata/labels", "value": {}}])
        return patch_response(
            review, [{"op": "add", "path": "/metadata/labels/stamped", "value": "yes"}]
        )

    hooks.handlers["/mutate"] = label
    hooks.handlers["/validate"] = lambda r: (
        allow(r)
        if r["request"]["object"]["metadata"].get("labels", {}).get("stamped") == "yes"
        else deny(r, {"message": "not stamped"})
    )
    install(server, "MutatingWebhookConfiguration", "m", webhook(hooks, "/mutate"))
    install(server, "ValidatingWebhookConfiguration", "v", webhook(hooks, "/validate"))
    code, out = request(server, "POST", CONFIGMAPS, configmap("a", {"app": "x"}))
    assert code == 201, out
    assert out["metadata"]["labels"] == {"app": "x", "stamped": "yes"}
    assert "uid" not in hooks.reviews["/mutate"][-1]["request"]["object"]["metadata"]
    # The field manager ran before admission: the webhook's label is nobody's.
    (entry,) = out["metadata"]["managedFields"]
    labels = entry["fieldsV1"]["f:metadata"]["f:labels"]
    assert "f:app" in labels and "f:stamped" not in labels
    _, stored = request(server, "GET", f"{CONFIGMAPS}/a")
    assert stored["metadata"]["labels"] == {"app": "x", "stamped": "yes"}
    # An update: the webhook sees the patched object and the old one.
    code, out = request(
        server,
        "PATCH",
        f"{CONFIGMAPS}/a",
        {"metadata": {"labels": {"stamped": None}}, "data": {"k": "v"}},
        "application/merge-patch+json",
    )
    assert code == 200, out
    assert out["metadata"]["labels"]["stamped"] == "yes"
    req = hooks.reviews["/mutate"][-1]["request"]
    assert req["operation"] == "UPDATE"
    assert "stamped" not in req["object"]["metadata"]["labels"]
    assert req["oldObject"]["metadata"]["labels"]["stamped"] == "yes"


def test_the_mutating_webhook_sees_a_defaulted_object_and_its_patch_is_defaulted_again(
    server: APIServer, hooks: WebhookServer
) -> None:
    def add_container(review: Review) -> dict[str, Any]:
        return patch_response(
            review,
            [
                {
                    "op": "add",
                    "path": "/spec/template/spec/containers/-",
                    "value": {"name": "sidecar", "image": "busybox"},
                }
            ],
        )

    hooks.handlers["/inject"] = add_container
    install(
        server,
        "MutatingWebhookConfiguration",
        "m",
        webhook(hooks, "/inject", resources=("deployments",), group="apps"),
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }
    code, out = request(server, "POST", DEPLOYMENTS, deployment)
    assert code == 201, out
    sent = hooks.reviews["/inject"][-1]["request"]["object"]
    assert sent["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted before the call
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main", "sidecar"]
    assert containers[1]["imagePullPolicy"] == "Always"  # the injected one defaulted too
    assert containers[1]["terminationMessagePath"] == "/dev/termination-log"


def test_if_needed_webhooks_are_reinvoked_after_a_later_change(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/first"] = lambda r: allow(r)
    hooks.handlers["/second"] = lambda r: patch_response(
        r, [{"op": "add", "path": "/data/second", "value": "1"}]
    )
    install(
        server,
        "MutatingWebhookConfiguration",
        "m",
        webhook(hooks, "/first", reinvocationPolicy="IfNeeded"),
        webhook(hooks, "/second"),
    )
    code, out = request(server, "POST", CONFIGMAPS, configmap("a", k="v"))
    assert code == 201, out
    assert out["data"] == {"k": "v", "second": "1"}
    assert len(hooks.reviews["/second"]) == 1
    assert len(hooks.reviews["/first"]) == 2
    assert hooks.reviews["/first"][1]["request"]["object"]["data"]["second"] == "1"


def test_a_patch_for_a_delete_is_an_internal_error(server: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/del"] = lambda r: patch_response(
        r, [{"op": "add", "path": "/data", "value": {}}]
    )
    install(
        server,
        "MutatingWebhookConfiguration",
        "m",
        webhook(hooks, "/del", operations=("DELETE",)),
    )
    assert request(server, "POST", CONFIGMAPS, configmap("a"))[0] == 201
    code, out = request(server, "DELETE", f"{CONFIGMAPS}/a")
    assert code == 500, out
    assert out["message"] == (
        'Internal error occurred: admission webhook "del.hooks.example.com" attempted to '
        "modify the object, which is not supported for this operation"
    )


def test_the_scale_subresource_is_admitted_as_a_scale(
    server: APIServer, hooks: WebhookServer
) -> None:
    def cap(review: Review) -> dict[str, Any]:
        obj = review["request"]["object"]
        assert obj["kind"] == "Scale"
        if obj["spec"]["replicas"] > 5:
            return patch_response(review, [{"op": "replace", "path": "/spec/replicas", "value": 5}])
        return allow(review)

    hooks.handlers["/cap"] = cap
    install(
        server,
        "MutatingWebhookConfiguration",
        "m",
        webhook(hooks, "/cap", resources=("deployments/scale",), group="apps"),
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }
    assert request(server, "POST", DEPLOYMENTS, deployment)[0] == 201
    assert "/cap" not in hooks.reviews  # the main resource is not deployments/scale
    code, out = request(
        server,
        "PATCH",
        f"{DEPLOYMENTS}/d/scale",
        {"spec": {"replicas": 9}},
        "application/merge-patch+json",
    )
    assert code == 200, out
    assert out["spec"]["replicas"] == 5
    assert request(server, "GET", f"{DEPLOYMENTS}/d")[1]["spec"]["replicas"] == 5
    assert hooks.reviews["/cap"][-1]["request"]["subResource"] == "scale"


# --- failures -----------------------------------------------------------------------------


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_an_unreachable_webhook_fails_as_its_failure_policy_says(
    server: APIServer, hooks: WebhookServer, policy: str
) -> None:
    port = _closed_port()
    hook = webhook(hooks, "/x", failurePolicy=policy)
    hook["clientConfig"]["url"] = f"https://127.0.0.1:{port}/x"
    install(server, "ValidatingWebhookConfiguration", "v", hook)
    code, out = request(server, "POST", CONFIGMAPS, configmap("a"))
    if policy == "Ignore":
        assert code == 201, out
        return
    assert code == 500, out
    assert out["reason"] == "InternalError"
    assert out["message"] == (
        'Internal error occurred: failed calling webhook "x.hooks.example.com": failed to call '
        f'webhook: Post "https://127.0.0.1:{port}/x?timeout=10s": dial tcp 127.0.0.1:{port}: '
        "connect: connection refused"
    )
    assert request(server, "GET", f"{CONFIGMAPS}/a")[0] == 404


def test_a_server_certificate_the_ca_bundle_does_not_sign_fails_the_call(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/ok"] = lambda r: allow(r)
    hook = webhook(hooks, "/ok")
    hook["clientConfig"]["caBundle"] = base64.b64encode(trustme.CA().cert_pem.bytes()).decode()
    install(server, "ValidatingWebhookConfiguration", "v", hook)
    code, out = request(server, "POST", CONFIGMAPS, configmap("a"))
    assert code == 500, out
    assert "tls: failed to verify certificate: x509:" in out["message"]
    assert "/ok" not in hooks.reviews


def test_a_webhook_slower_than_its_timeout_fails_the_call(
    server: APIServer, hooks: WebhookServer
) -> None:
    release = threading.Event()

    def slow(review: Review) -> dict[str, Any]:
        release.wait(5)
        return allow(review)

    hooks.handlers["/slow"] = slow
    install(
        server, "ValidatingWebhookConfiguration", "v", webhook(hooks, "/slow", timeoutSeconds=1)
    )
    started = time.monotonic()
    code, out = request(server, "POST", CONFIGMAPS, configmap("a"))
    release.set()
    assert code == 500, out
    assert out["message"].endswith('?timeout=1s": context deadline exceeded')
    assert time.monotonic() - started < 4


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (
            lambda r: {"uid": "not-it", "allowed": True},
            'expected response.uid="{uid}", got "not-it"',
        ),
        (
            lambda r: patch_response(r, [{"op": "add", "path": "/data/x", "value": "1"}]),
            "validating webhook may not return response.patch",
        ),
    ],
    ids=["uid-mismatch", "validating-patch"],
)
def test_a_malformed_answer_fails_the_call(
    server: APIServer,
    hooks: WebhookServer,
    answer: Callable[[Review], dict[str, Any]],
    why: str,
) -> None:
    hooks.handlers["/bad"] = answer
    install(server, "ValidatingWebhookConfiguration", "v", webhook(hooks, "/bad"))
    code, out = request(server, "POST", CONFIGMAPS, configmap("a"))
    assert code == 500, out
    uid = hooks.reviews["/bad"][-1]["request"]["uid"]
    assert out["message"] == (
        'Internal error occurred: failed calling webhook "bad.hooks.example.com": received '
        f"invalid webhook response: {why.format(uid=uid)}"
    )


def test_a_dry_run_reaches_webhooks_that_declare_no_side_effects(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/fx"] = lambda r: deny(r, {"message": "seen in dry run"})
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(hooks, "/fx", sideEffects="NoneOnDryRun"),
    )
    code, out = request(server, "POST", f"{CONFIGMAPS}?dryRun=All", configmap("a"))
    assert code == 400 and out["message"].endswith("seen in dry run"), out
    assert hooks.reviews["/fx"][-1]["request"]["dryRun"] is True
    # sideEffects Some/Unknown (v1beta1's) cannot be stored through v1: the
    # dispatcher's "does not support dry run" needs no test object here.
    code, cfg = request(server, "GET", f"{VALIDATING}/v")
    cfg["webhooks"][0]["sideEffects"] = "Some"
    code, out = request(server, "PUT", f"{VALIDATING}/v", cfg)
    assert code == 422, out
    assert out["details"]["causes"][0]["field"] == "webhooks[0].sideEffects"


# --- locking: webhooks that call back, writes that race them ------------------------------


def test_a_webhook_can_read_from_the_server_while_a_write_waits_for_it(
    server: APIServer, hooks: WebhookServer
) -> None:
    assert request(server, "POST", CONFIGMAPS, configmap("allowed-names", names="a b"))[0] == 201

    def lookup(review: Review) -> dict[str, Any]:
        code, cm = request(server, "GET", f"{CONFIGMAPS}/allowed-names")
        assert code == 200
        name = review["request"]["name"]
        return (
            allow(review)
            if name in cm["data"]["names"].split()
            else deny(review, {"message": f"{name} is not allowed"})
        )

    hooks.handlers["/lookup"] = lookup
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(hooks, "/lookup", objectSelector={"matchLabels": {"checked": "yes"}}),
    )
    started = time.monotonic()
    assert request(server, "POST", CONFIGMAPS, configmap("a", {"checked": "yes"}))[0] == 201
    code, out = request(server, "POST", CONFIGMAPS, configmap("z", {"checked": "yes"}))
    assert code == 400 and out["message"].endswith("z is not allowed"), out
    assert time.monotonic() - started < 5  # no wait on the storage lock (timeout is 10 s)


def test_a_write_that_lands_while_webhooks_run_makes_the_request_run_again(
    server: APIServer, hooks: WebhookServer
) -> None:
    """kube's GuaranteedUpdate: the admitted object is stale once another write
    got in; the update is run again on the new object (and admitted again)."""
    assert request(server, "POST", CONFIGMAPS, configmap("a", k="0"))[0] == 201
    raced = threading.Event()
    other = iter("xyz")

    def racing(review: Review) -> dict[str, Any]:
        if review["request"]["operation"] == "UPDATE" and not raced.is_set():
            raced.set()
            code, _ = request(
                server,
                "PATCH",
                f"{CONFIGMAPS}/a",
                {"data": {"other": next(other)}},
                "application/merge-patch+json",
            )
            assert code == 200
        return allow(review)

    hooks.handlers["/race"] = racing
    install(
        server,
        "ValidatingWebhookConfiguration",
        "v",
        webhook(hooks, "/race", objectSelector={"matchLabels": {"race": "yes"}}),
    )
    code, out = request(
        server,
        "PATCH",
        f"{CONFIGMAPS}/a",
        {"metadata": {"labels": {"race": "yes"}}, "data": {"k": "1"}},
        "application/merge-patch+json",
    )
    assert code == 200, out
    assert out["data"] == {"k": "1", "other": "x"}
    updates = [r for r in hooks.reviews["/race"] if r["request"]["operation"] == "UPDATE"]
    assert len(updates) == 2
    assert updates[1]["request"]["oldObject"]["data"] == {"k": "0", "other": "x"}
    # A PUT carrying the resourceVersion it read conflicts instead.
    raced.clear()
    _, current = request(server, "GET", f"{CONFIGMAPS}/a")
    current["data"]["k"] = "2"
    code, out = request(server, "PUT", f"{CONFIGMAPS}/a", current)
    assert raced.is_set()
    assert code == 409, out
    assert out["reason"] == "Conflict"


# --- service references and configuration validation --------------------------------------


def test_a_service_reference_resolves_through_an_external_name_service(
    server: APIServer, hooks: WebhookServer
) -> None:
    hooks.handlers["/svc"] = lambda r: deny(r, {"message": "via service"})
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hook"},
        "spec": {"type": "ExternalName", "externalName": "127.0.0.1"},
    }
    assert request(server, "POST", f"/api/v1/namespaces/{NS}/services", svc)[0] == 201
    hook = webhook(hooks, "/svc")
    hook["clientConfig"] = {
        "service": {"namespace": NS, "name": "hook", "path": "/svc", "port": hooks.port},
        "caBundle": hooks.ca_bundle,
    }
    install(server, "ValidatingWebhookConfiguration", "v", hook)
    code, out = request(server, "POST", CONFIGMAPS, configmap("a"))
    assert code == 400 and out["message"].endswith("via service"), out
    # The certificate is checked for hook.default.svc: it has it.
    # A ClusterIP Service cannot be reached here: a call error, named.
    svc2 = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "plain"}}
    svc2["spec"] = {"ports": [{"port": 443}]}
    assert request(server, "POST", f"/api/v1/namespaces/{NS}/services", svc2)[0] == 201
    cfg = request(server, "GET", f"{VALIDATING}/v")[1]
    cfg["webhooks"][0]["clientConfig"]["service"]["name"] = "plain"
    assert request(server, "PUT", f"{VALIDATING}/v", cfg)[0] == 200
    code, out = request(server, "POST", CONFIGMAPS, configmap("b"))
    assert code == 500, out
    assert "no Service network" in out["message"]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            {"clientConfig": {"url": "http://127.0.0.1:1/x"}},
            "webhooks[0].clientConfig.url",
            "'https' is the only allowed URL scheme",
        ),
        (
            {"clientConfig": {}},
            "webhooks[0].clientConfig",
            "exactly one of url or service is required",
        ),
        ({"sideEffects": None}, "webhooks[0].sideEffects", "Required value"),
        ({"admissionReviewVersions": ["v2"]}, "webhooks[0].admissionReviewVersions", "v1"),
        ({"timeoutSeconds": 31}, "webhooks[0].timeoutSeconds", "between 1 and 30"),
        ({"name": "short.name"}, "webhooks[0].name", "at least three segments"),
    ],
)
def test_configurations_are_validated_as_kube_does(
    server: APIServer, hooks: WebhookServer, change: dict[str, Any], field: str, message: str
) -> None:
    hook = {**webhook(hooks, "/x"), **change}
    hook = {k: v for k, v in hook.items() if v is not None}
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "v"},
        "webhooks": [hook],
    }
    code, out = request(server, "POST", VALIDATING, body)
    assert code == 422, out
    causes = out["details"]["causes"]
    assert any(c["field"] == field and message in c["message"] for c in causes), causes


def test_configurations_are_never_sent_to_webhooks(server: APIServer, hooks: WebhookServer) -> None:
    hooks.handlers["/all"] = lambda r: deny(r, {"message": "everything"})
    everything = webhook(hooks, "/all", resources=("*",), operations=("*",))
    everything["rules"][0]["apiGroups"] = ["*"]
    install(server, "ValidatingWebhookConfiguration", "v", everything)
    code, out = request(server, "DELETE", f"{VALIDATING}/v")
    assert code == 200, out
    assert "/all" not in hooks.reviews


def test_the_kubernetes_client_sees_the_denial(server: APIServer, hooks: WebhookServer) -> None:
    from kubernetes import client as k8s

    hooks.handlers["/no"] = lambda r: deny(r, {"code": 403, "message": "nope"})
    install(server, "ValidatingWebhookConfiguration", "v", webhook(hooks, "/no"))
    api = k8s.CoreV1Api(server.api_client())
    with pytest.raises(k8s.ApiException) as err:
        api.create_namespaced_config_map(NS, configmap("a"))
    assert err.value.status == 403
    body = json.loads(err.value.body)
    assert body["message"] == 'admission webhook "no.hooks.example.com" denied the request: nope'
