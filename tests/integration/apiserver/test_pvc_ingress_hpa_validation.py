"""PersistentVolumeClaim, Ingress and HorizontalPodAutoscaler specs validated
as kube-apiserver 1.32 does (``ValidatePersistentVolumeClaimSpec``,
``ValidateIngressSpec``, ``validateHorizontalPodAutoscalerSpec``), over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
INGRESSES = "/apis/networking.k8s.io/v1/namespaces/default/ingresses"
HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


_n = 0


def _name() -> str:
    global _n
    _n += 1
    return f"o{_n}"


def causes(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]]


def refused(server: APIServer, path: str, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    code, out = request(server, "POST", path, body)
    assert code == 422, out
    return causes(out)


def pvc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": _name()},
        "spec": spec,
    }


def test_pvc_access_modes_and_storage(server: APIServer) -> None:
    assert refused(server, PVCS, pvc()) == [
        (
            "FieldValueRequired",
            "spec.accessModes",
            "Required value: at least 1 access mode is required",
        ),
        ("FieldValueRequired", "spec.resources[storage]", "Required value"),
    ]
    storage = {"requests": {"storage": "0"}}
    assert refused(server, PVCS, pvc(accessModes=["ReadWriteSometimes"], resources=storage)) == [
        (
            "FieldValueNotSupported",
            "spec.accessModes",
            'Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
            '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        ),
        (
            "FieldValueInvalid",
            "spec.resources[storage]",
            'Invalid value: "0": must be greater than zero',
        ),
    ]
    body = pvc(
        accessModes=["ReadWriteOncePod", "ReadOnlyMany"], resources={"requests": {"storage": "1Gi"}}
    )
    assert refused(server, PVCS, body) == [
        (
            "FieldValueForbidden",
            "spec.accessModes",
            "Forbidden: may not use ReadWriteOncePod with other access modes",
        ),
    ]
    ok = pvc(accessModes=["ReadWriteOnce"], resources={"requests": {"storage": "1Gi"}})
    assert request(server, "POST", PVCS, ok)[0] == 201


def ingress(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": _name()},
        "spec": spec,
    }


def _rule(path: dict[str, Any], host: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"http": {"paths": [path]}}
    if host is not None:
        rule["host"] = host
    return rule


BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


def test_an_ingress_needs_a_rule_or_a_default_backend(server: APIServer) -> None:
    assert refused(server, INGRESSES, ingress()) == [
        (
            "FieldValueInvalid",
            "spec",
            "Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` "
            "must be specified",
        )
    ]


def test_ingress_paths_and_backends(server: APIServer) -> None:
    base = "spec.rules[0].http.paths[0]"
    no_type = ingress(rules=[_rule({"path": "/", "backend": BACKEND})])
    assert refused(server, INGRESSES, no_type) == [
        ("FieldValueRequired", f"{base}.pathType", "Required value: pathType must be specified")
    ]
    relative = ingress(rules=[_rule({"path": "app//x", "pathType": "Prefix", "backend": BACKEND})])
    assert refused(server, INGRESSES, relative) == [
        ("FieldValueInvalid", f"{base}.path", 'Invalid value: "app//x": must be an absolute path'),
        ("FieldValueInvalid", f"{base}.path", "Invalid value: \"app//x\": must not contain '//'"),
    ]
    no_port = ingress(
        rules=[_rule({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web"}}})]
    )
    assert refused(server, INGRESSES, no_port) == [
        ("FieldValueRequired", f"{base}.backend", "Required value: port name or number is required")
    ]
    both = {"service": {"name": "web", "port": {"number": 80, "name": "http"}}}
    assert refused(
        server,
        INGRESSES,
        ingress(rules=[_rule({"path": "/", "pathType": "Exact", "backend": both})]),
    ) == [
        (
            "FieldValueInvalid",
            f"{base}.backend",
            'Invalid value: "": cannot set both port name & port number',
        )
    ]
    ip_host = ingress(
        rules=[_rule({"path": "/", "pathType": "Prefix", "backend": BACKEND}, "10.0.0.1")]
    )
    assert refused(server, INGRESSES, ip_host) == [
        (
            "FieldValueInvalid",
            "spec.rules[0].host",
            'Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
        )
    ]
    weird_type = ingress(rules=[_rule({"path": "/", "pathType": "Regex", "backend": BACKEND})])
    assert refused(server, INGRESSES, weird_type) == [
        (
            "FieldValueNotSupported",
            f"{base}.pathType",
            'Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", '
            '"Prefix"',
        )
    ]
    good = ingress(
        ingressClassName="nginx",
        rules=[
            _rule({"path": "/", "pathType": "Prefix", "backend": BACKEND}, "*.example.com"),
            _rule({"pathType": "ImplementationSpecific", "backend": BACKEND}, "example.com"),
        ],
    )
    code, out = request(server, "POST", INGRESSES, good)
    assert code == 201, out


def hpa(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": _name()},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            **spec,
        },
    }


def test_hpa_replica_bounds_and_target(server: APIServer) -> None:
    assert refused(server, HPAS, hpa(minReplicas=5, maxReplicas=2)) == [
        (
            "FieldValueInvalid",
            "spec.maxReplicas",
            "Invalid value: 2: must be greater than or equal to `minReplicas`",
        )
    ]
    assert refused(server, HPAS, hpa(minReplicas=0, maxReplicas=0)) == [
        (
            "FieldValueInvalid",
            "spec.minReplicas",
            "Invalid value: 0: must be greater than or equal to 1",
        ),
        ("FieldValueInvalid", "spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
    ]
    body = hpa(maxReplicas=3)
    body["spec"]["scaleTargetRef"] = {"apiVersion": "apps/v1", "name": "a/b"}
    assert refused(server, HPAS, body) == [
        ("FieldValueRequired", "spec.scaleTargetRef.kind", "Required value"),
        (
            "FieldValueInvalid",
            "spec.scaleTargetRef.name",
            "Invalid value: \"a/b\": may not contain '/'",
        ),
    ]
    code, out = request(server, "POST", HPAS, hpa(minReplicas=2, maxReplicas=5))
    assert code == 201, out
