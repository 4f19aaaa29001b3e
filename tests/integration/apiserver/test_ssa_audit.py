"""Server-side apply answers checked against kube-apiserver's field manager
(``k8s.io/apimachinery/pkg/util/managedfields/internal``), over HTTP: the
layers a request passes before the structured merge (``versionCheckManager``,
``skipNonAppliedManager``, the default manager of ``prefixFromUserAgent``)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def apply(raw: Raw, path: str, obj: Any, manager: str, *, force: bool = False) -> tuple[int, Any]:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    code, _, got = raw("PATCH", path + query, body, APPLY)
    return code, got


def configmap(**data: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    if data:
        obj["data"] = data
    return obj


def managers(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (e.get("manager", ""), e["operation"]) for e in obj["metadata"].get("managedFields") or []
    ]


def test_apply_must_name_the_endpoints_group_version_and_kind(raw: Raw) -> None:
    """kube's versionCheckManager.Apply: the applied object's GroupVersionKind
    must be the endpoint's, else 400 ``invalid object type: <gvk>`` (before the
    structured merge's own "Incorrect version" check, which it makes
    unreachable)."""
    assert apply(raw, f"{CM}/c", configmap(a="1"), "alice")[0] == 201
    cases = [
        ({"apiVersion": "v1", "metadata": {"name": "c"}}, "invalid object type: /v1, Kind="),
        (
            {"kind": "ConfigMap", "metadata": {"name": "c"}},
            "invalid object type: /, Kind=ConfigMap",
        ),
        ({**configmap(), "apiVersion": "v2"}, "invalid object type: /v2, Kind=ConfigMap"),
        ({}, "invalid object type: /, Kind="),
        (b"", "invalid object type: /, Kind="),
    ]
    for body, message in cases:
        code, st = apply(raw, f"{CM}/c", body, "alice")
        assert (code, st["reason"], st["message"]) == (400, "BadRequest", message), body
    code, _, got = raw("GET", f"{CM}/c")
    assert got["data"] == {"a": "1"}
    assert managers(got) == [("alice", "Apply")]


def test_updates_of_an_unmanaged_object_are_not_tracked(raw: Raw) -> None:
    """kube's skipNonAppliedManager.Update: once managedFields are reset, an
    update (the resetting one included) records nothing."""
    assert apply(raw, f"{CM}/c", configmap(a="1"), "alice")[0] == 201
    reset = {"metadata": {"managedFields": [{}]}, "data": {"b": "2"}}
    code, _, got = raw("PATCH", f"{CM}/c?fieldManager=admin", reset, MERGE)
    assert code == 200 and got["data"] == {"a": "1", "b": "2"}
    assert "managedFields" not in got["metadata"]
    code, _, got = raw("PATCH", f"{CM}/c?fieldManager=editor", {"data": {"c": "3"}}, MERGE)
    assert code == 200 and got["data"] == {"a": "1", "b": "2", "c": "3"}
    assert "managedFields" not in got["metadata"]
    got["data"]["d"] = "4"
    code, _, got = raw("PUT", f"{CM}/c?fieldManager=putter", got)
    assert code == 200 and "managedFields" not in got["metadata"]


def test_first_apply_to_an_unmanaged_object_conflicts_with_before_first_apply(
    raw: Raw,
) -> None:
    """kube's skipNonAppliedManager.Apply: an apply to an object without
    managedFields first records an Update by ``before-first-apply`` of what
    the object holds (fieldmanager_test.go's TestUpdateBeforeFirstApply)."""
    assert apply(raw, f"{CM}/c", configmap(a="1", b="2"), "alice")[0] == 201
    reset = {"metadata": {"managedFields": [{}]}}
    assert raw("PATCH", f"{CM}/c?fieldManager=admin", reset, MERGE)[0] == 200
    code, st = apply(raw, f"{CM}/c", configmap(a="9"), "bob")
    assert code == 409
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a'
    )
    assert st["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "before-first-apply" using v1',
            "field": ".data.a",
        }
    ]
    # Applying the values it holds shares them; force takes them.
    code, got = apply(raw, f"{CM}/c", configmap(a="1"), "bob")
    assert code == 200
    assert managers(got) == [("bob", "Apply"), ("before-first-apply", "Update")]
    before = got["metadata"]["managedFields"][1]
    assert before["apiVersion"] == "v1" and before["time"].endswith("Z")
    assert before["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}
    code, got = apply(raw, f"{CM}/c", configmap(a="9"), "bob", force=True)
    assert code == 200 and got["data"] == {"a": "9", "b": "2"}
    assert got["metadata"]["managedFields"][1]["fieldsV1"] == {"f:data": {".": {}, "f:b": {}}}


def test_default_manager_drops_unprintable_characters_of_the_user_agent(raw: Raw) -> None:
    """apiserver's handlers.prefixFromUserAgent: the User-Agent up to its first
    ``/``, unprintable characters left out."""
    code, _, got = raw(
        "POST", CM, configmap(a="1"), headers={"User-Agent": "my\tctl/1.0 (linux/amd64)"}
    )
    assert code == 201
    assert managers(got) == [("myctl", "Update")]


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def test_kubectl_apply_takes_over_fields_of_its_last_applied_annotation(raw: Raw) -> None:
    """kube's lastAppliedManager.Apply: an apply by the ``kubectl`` manager
    whose conflicts are all fields the client-side apply annotation sets to
    their live values is forced; other conflicts stay (and only they are
    reported). lastAppliedUpdater.Apply then rewrites the annotation."""
    client_side = configmap(a="1", b="2")
    client_side["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(configmap(a="1"))}
    code, _, _ = raw("POST", f"{CM}?fieldManager=kubectl-client-side-apply", client_side)
    assert code == 201
    # b is not in the annotation: a conflict that stays.
    code, st = apply(raw, f"{CM}/c", configmap(a="5", b="6"), "kubectl")
    assert code == 409
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
        "using v1: .data.b"
    )
    # Another manager gets no such pass.
    code, st = apply(raw, f"{CM}/c", configmap(a="5"), "someone")
    assert code == 409
    code, got = apply(raw, f"{CM}/c", configmap(a="5"), "kubectl")
    assert code == 200 and got["data"] == {"a": "5", "b": "2"}
    by_manager = {e["manager"]: e for e in got["metadata"]["managedFields"]}
    assert by_manager["kubectl"]["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert "f:a" not in by_manager["kubectl-client-side-apply"]["fieldsV1"]["f:data"]
    assert got["metadata"]["annotations"][LAST_APPLIED] == (
        '{"apiVersion":"v1","data":{"a":"5"},"kind":"ConfigMap","metadata":{"name":"c"}}\n'
    )


def test_other_appliers_leave_the_last_applied_annotation_alone(raw: Raw) -> None:
    client_side = configmap(a="1")
    client_side["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(configmap(a="1"))}
    assert raw("POST", f"{CM}?fieldManager=kubectl-client-side-apply", client_side)[0] == 201
    code, got = apply(raw, f"{CM}/c", configmap(a="1", z="<&>"), "someone")
    assert code == 200
    assert got["metadata"]["annotations"][LAST_APPLIED] == json.dumps(configmap(a="1"))
    code, got = apply(raw, f"{CM}/c", configmap(a="1", z="<&>"), "kubectl")
    assert code == 200
    assert got["metadata"]["annotations"][LAST_APPLIED] == (
        '{"apiVersion":"v1","data":{"a":"1","z":"\\u003c\\u0026\\u003e"},'
        '"kind":"ConfigMap","metadata":{"name":"c"}}\n'
    )


DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
SVC = "/api/v1/namespaces/default/services"


def deployment(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers},
            },
            **spec,
        },
    }


def test_apply_of_a_configuration_smd_cannot_type_is_a_500(raw: Raw) -> None:
    """kube's structuredMergeManager.Apply types the configuration with SMD
    (no duplicates allowed; built-in structs refuse undeclared fields): what it
    refuses is ``failed to create typed patch object (...)``, a 500 without a
    reason, and nothing is written."""
    nginx = {"name": "nginx", "image": "nginx"}
    cases = [
        (
            deployment([nginx], replica=2),
            ".spec.replica: field not declared in schema",
        ),
        (
            deployment([{**nginx, "ports": [{"containerPort": 80}, {"containerPort": 80}]}]),
            '.spec.template.spec.containers[name="nginx"].ports: '
            'duplicate entries for key [containerPort=80,protocol="TCP"]',
        ),
        (
            deployment([nginx, {"name": "nginx", "image": "busybox"}]),
            '.spec.template.spec.containers: duplicate entries for key [name="nginx"]',
        ),
        (
            deployment([nginx, None]),  # type: ignore[list-item]
            ".spec.template.spec.containers: element 1: "
            "associative list with keys may not have a null element",
        ),
        (
            {
                **deployment([nginx]),
                "metadata": {"name": "web", "namespace": "default", "finalizers": ["a/b", "a/b"]},
            },
            '.metadata.finalizers: duplicate entries for key [="a/b"]',
        ),
    ]
    for body, error in cases:
        code, st = apply(raw, f"{DEPLOY}/web", body, "alice")
        assert code == 500, (body, st)
        assert st == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "failed to create typed patch object "
            f"(default/web; apps/v1, Kind=Deployment): {error}",
            "code": 500,
        }
    assert raw("GET", f"{DEPLOY}/web")[0] == 404
    # Several errors are listed one a line; an existing object is left as is.
    assert apply(raw, f"{DEPLOY}/web", deployment([nginx]), "alice")[0] == 201
    body = deployment([nginx], replica=2)
    body["metadata"] = {"name": "web", "labelz": {"a": "b"}}  # the patch's own name and namespace
    code, st = apply(raw, f"{DEPLOY}/web", body, "alice")
    assert code == 500
    assert st["message"] == (
        "failed to create typed patch object (/web; apps/v1, Kind=Deployment): errors:\n"
        "  .metadata.labelz: field not declared in schema\n"
        "  .spec.replica: field not declared in schema"
    )


def test_apply_of_service_ports_with_one_port_and_protocol_twice_is_refused(raw: Raw) -> None:
    """A Service's ports are keyed by port and protocol (protocol defaulting to
    TCP): two ports 80 are duplicate keys to SMD, whatever their names."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "alt", "port": 80, "targetPort": 8081, "protocol": "TCP"},
            ]
        },
    }
    code, st = apply(raw, f"{SVC}/s", svc, "alice")
    assert code == 500
    assert st["message"] == (
        "failed to create typed patch object (default/s; /v1, Kind=Service): "
        '.spec.ports: duplicate entries for key [port=80,protocol="TCP"]'
    )
    svc["spec"]["ports"][1]["protocol"] = "UDP"
    assert apply(raw, f"{SVC}/s", svc, "alice")[0] == 201


def test_scale_writes_when_nobody_owns_the_replicas(raw: Raw) -> None:
    """kube's ScaleHandler.ToSubresource gives the Scale only the entries that
    own the parent's replicas field. With none (a Deployment applied without
    replicas: nobody owns the default), the Scale is unmanaged: an update
    through /scale records nothing (skipNonAppliedManager.Update) and an
    apply first gives the Scale's replicas to ``before-first-apply``
    (skipNonAppliedManager.Apply), so changing them conflicts."""
    nginx = {"name": "nginx", "image": "nginx"}
    code, created = apply(raw, f"{DEPLOY}/web", deployment([nginx]), "alice")
    assert code == 201 and created["spec"]["replicas"] == 1
    code, _, _ = raw(
        "PATCH", f"{DEPLOY}/web/scale?fieldManager=scaler", {"spec": {"replicas": 4}}, MERGE
    )
    assert code == 200
    code, _, got = raw("GET", f"{DEPLOY}/web")
    assert got["spec"]["replicas"] == 4
    assert managers(got) == [("alice", "Apply")]
    scale = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3},
    }
    code, st = apply(raw, f"{DEPLOY}/web/scale", scale, "hpa")
    assert code == 409
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" with subresource '
        '"scale" using autoscaling/v1: .spec.replicas'
    )
    code, got = apply(raw, f"{DEPLOY}/web/scale", scale, "hpa", force=True)
    assert code == 200 and got["spec"]["replicas"] == 3
    code, _, got = raw("GET", f"{DEPLOY}/web")
    assert sorted(managers(got)) == [("alice", "Apply"), ("hpa", "Apply")]


WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer"},
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "labels": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                    },
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def test_apply_of_a_custom_resource_with_an_undeclared_field_is_a_500(
    apiserver: APIServer, raw: Raw
) -> None:
    """A CRD's schema is converted for apply without preserving unknown fields
    (kube's CRD handler: ``NewTypeConverter(models, crd.Spec.PreserveUnknownFields)``),
    so an undeclared field is refused where it is not pruned as on a write."""
    apiserver.install_crd(WIDGET_CRD)
    widget: dict[str, Any] = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": 1, "colour": "red"},
    }
    code, st = apply(raw, f"{WIDGETS}/w", widget, "alice")
    assert (code, st["message"]) == (
        500,
        "failed to create typed patch object (default/w; example.com/v1, Kind=Widget): "
        ".spec.colour: field not declared in schema",
    )
    # Under preserve-unknown-fields and in maps anything goes; apiVersion, kind
    # and metadata are every kind's.
    widget["spec"] = {"size": 1, "extra": {"any": {"thing": 1}}, "labels": {"a": "b"}}
    code, got = apply(raw, f"{WIDGETS}/w", widget, "alice")
    assert code == 201, got
    assert got["spec"]["extra"] == {"any": {"thing": 1}}


def test_apply_that_creates_checks_the_kind_first(raw: Raw) -> None:
    """versionCheckManager runs before anything else looks at the patch, on a
    create too: no kind, or another kind, is ``invalid object type`` (the
    create path used to fill the kind in, or answer "the kind in the data")."""
    for patch, named in (
        ({"apiVersion": "v1", "metadata": {"name": "nk"}}, "/v1, Kind="),
        ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "nk"}}, "/v1, Kind=Secret"),
    ):
        code, body = apply(raw, f"{CM}/nk", patch, "t")
        assert code == 400, body
        assert body["message"] == f"invalid object type: {named}"
