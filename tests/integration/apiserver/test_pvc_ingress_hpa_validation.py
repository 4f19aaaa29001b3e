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
        # validateMetrics checks minReplicas 0 whatever the lower bound
        (
            "FieldValueForbidden",
            "spec.metrics",
            "Forbidden: must specify at least one Object or External metric to support "
            "scaling to zero replicas",
        ),
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


# --- Ingress TLS (validateIngressTLS) ----------------------------------------------

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character (e.g. '*.example.com', regex used for validation is "
    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def test_ingress_tls_hosts_and_secret_names(server: APIServer) -> None:
    tls = [
        {"hosts": ["ok.example.com", "a.*.example.com"], "secretName": "cert"},
        {"hosts": ["*.example.com", "Not_A_Host"], "secretName": "Bad_Secret"},
    ]
    assert refused(server, INGRESSES, ingress(defaultBackend=BACKEND, tls=tls)) == [
        (
            "FieldValueInvalid",
            "spec.tls[0].hosts[1]",
            f'Invalid value: "a.*.example.com": {_WILDCARD_MSG}',
        ),
        (
            "FieldValueInvalid",
            "spec.tls[1].hosts[1]",
            f'Invalid value: "Not_A_Host": {_SUBDOMAIN_MSG}',
        ),
        (
            "FieldValueInvalid",
            "spec.tls[1].secretName",
            f'Invalid value: "Bad_Secret": {_SUBDOMAIN_MSG}',
        ),
    ]
    long_wildcard = "*." + ".".join(["a" * 60] * 5)
    assert refused(
        server, INGRESSES, ingress(defaultBackend=BACKEND, tls=[{"hosts": [long_wildcard]}])
    ) == [
        (
            "FieldValueInvalid",
            "spec.tls[0].hosts[0]",
            f'Invalid value: "{long_wildcard}": must be no more than 253 characters',
        )
    ]
    good = ingress(
        defaultBackend=BACKEND,
        tls=[{"hosts": ["*.example.com", "example.com"], "secretName": "example-tls"}, {}],
    )
    code, out = request(server, "POST", INGRESSES, good)
    assert code == 201, out


# --- HPA metrics (validateMetrics) ---------------------------------------------------

_METRIC_TYPES = '"ContainerResource", "External", "Object", "Pods", "Resource"'
_ZERO = (
    "resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:"
    '(*inf.Dec)(nil)}, s:"0", Format:"DecimalSI"}'
)
_MINUS_HALF = (
    "resource.Quantity{i:resource.int64Amount{value:-500, scale:-3}, d:resource.infDecAmount{"
    'Dec:(*inf.Dec)(nil)}, s:"-500m", Format:"DecimalSI"}'
)


def test_hpa_metric_type_and_source(server: APIServer) -> None:
    m = "spec.metrics[0]"
    assert refused(server, HPAS, hpa(maxReplicas=3, metrics=[{}])) == [
        ("FieldValueRequired", f"{m}.type", "Required value: must specify a metric source type"),
        # kube reports an unknown type twice (a check, then the switch's default)
        (
            "FieldValueNotSupported",
            f"{m}.type",
            f'Unsupported value: "": supported values: {_METRIC_TYPES}',
        ),
        (
            "FieldValueNotSupported",
            f"{m}.type",
            f'Unsupported value: "": supported values: {_METRIC_TYPES}',
        ),
    ]
    assert refused(server, HPAS, hpa(maxReplicas=3, metrics=[{"type": "Pods"}])) == [
        (
            "FieldValueRequired",
            f"{m}.pods",
            "Required value: must populate information for the given metric source",
        )
    ]
    cpu = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
    pods = {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}
    both = hpa(maxReplicas=3, metrics=[{"type": "Resource", "resource": cpu, "pods": pods}])
    assert refused(server, HPAS, both) == [
        (
            "FieldValueForbidden",
            f"{m}.pods",
            "Forbidden: must populate the given metric source only",
        )
    ]


def test_hpa_metric_targets(server: APIServer) -> None:
    m = "spec.metrics"
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}},
        },
        {"type": "Resource", "resource": {"target": {"type": "Percent"}}},
        {
            "type": "Resource",
            "resource": {
                "name": "memory",
                "target": {"type": "AverageValue", "averageUtilization": 50, "averageValue": "1Gi"},
            },
        },
        {
            "type": "Pods",
            "pods": {"metric": {"name": "a/b"}, "target": {"type": "Value", "value": "0"}},
        },
        {
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "name": "svc"},
                "metric": {"name": "rps"},
                "target": {"type": "Value"},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {},
                "target": {"type": "Value", "value": "-500m", "averageValue": "1"},
            },
        },
        {
            "type": "ContainerResource",
            "containerResource": {"target": {"type": "Utilization", "averageUtilization": 60}},
        },
    ]
    assert refused(server, HPAS, hpa(maxReplicas=3, metrics=metrics)) == [
        (
            "FieldValueInvalid",
            f"{m}[0].resource.target.averageUtilization",
            "Invalid value: 0: must be greater than 0",
        ),
        (
            "FieldValueRequired",
            f"{m}[1].resource.name",
            "Required value: must specify a resource name",
        ),
        (
            "FieldValueInvalid",
            f"{m}[1].resource.target.type",
            'Invalid value: "Percent": must be either Utilization, Value, or AverageValue',
        ),
        (
            "FieldValueRequired",
            f"{m}[1].resource.target.averageUtilization",
            "Required value: must set either a target raw value or a target utilization",
        ),
        (
            "FieldValueForbidden",
            f"{m}[2].resource.target.averageValue",
            "Forbidden: may not set both a target raw value and a target utilization",
        ),
        (
            "FieldValueInvalid",
            f"{m}[3].pods.metric.name",
            "Invalid value: \"a/b\": may not contain '/'",
        ),
        (
            "FieldValueInvalid",
            f"{m}[3].pods.target.value",
            f"Invalid value: {_ZERO}: must be positive",
        ),
        (
            "FieldValueRequired",
            f"{m}[3].pods.target.averageValue",
            "Required value: must specify a positive target averageValue",
        ),
        ("FieldValueRequired", f"{m}[4].object.describedObject.kind", "Required value"),
        (
            "FieldValueRequired",
            f"{m}[4].object.target.averageValue",
            "Required value: must set either a target value or averageValue",
        ),
        (
            "FieldValueRequired",
            f"{m}[5].external.metric.name",
            "Required value: must specify a metric name",
        ),
        (
            "FieldValueInvalid",
            f"{m}[5].external.target.value",
            f"Invalid value: {_MINUS_HALF}: must be positive",
        ),
        (
            "FieldValueForbidden",
            f"{m}[5].external.target.value",
            "Forbidden: may not set both a target value for metric and a per-pod target",
        ),
        (
            "FieldValueRequired",
            f"{m}[6].containerResource.name",
            "Required value: must specify a resource name",
        ),
        (
            "FieldValueRequired",
            f"{m}[6].containerResource.container",
            "Required value: must specify a container",
        ),
    ]
    good = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 70},
            },
        },
        {
            "type": "Resource",
            "resource": {
                "name": "memory",
                "target": {"type": "AverageValue", "averageValue": "512Mi"},
            },
        },
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"},
            },
        },
        {
            "type": "Object",
            "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "svc"},
                "metric": {"name": "rps"},
                "target": {"type": "Value", "value": "100"},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "30"},
            },
        },
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 60},
            },
        },
    ]
    code, out = request(server, "POST", HPAS, hpa(maxReplicas=3, metrics=good))
    assert code == 201, out


def test_hpa_behavior(server: APIServer) -> None:
    up = "spec.behavior.scaleUp"
    behavior = {
        "scaleUp": {
            "stabilizationWindowSeconds": 3601,
            "selectPolicy": "Most",
            "policies": [
                {"type": "Nodes", "value": 0, "periodSeconds": 0},
                {"type": "Pods", "value": 4, "periodSeconds": 1801},
            ],
        },
        "scaleDown": {"stabilizationWindowSeconds": -1, "policies": []},
    }
    assert refused(server, HPAS, hpa(maxReplicas=3, behavior=behavior)) == [
        (
            "FieldValueInvalid",
            f"{up}.stabilizationWindowSeconds",
            "Invalid value: 3601: must be less than or equal to 3600",
        ),
        (
            "FieldValueNotSupported",
            f"{up}.selectPolicy",
            'Unsupported value: "Most": supported values: "Disabled", "Max", "Min"',
        ),
        (
            "FieldValueNotSupported",
            f"{up}.policies[0].type",
            'Unsupported value: "Nodes": supported values: "Percent", "Pods"',
        ),
        (
            "FieldValueInvalid",
            f"{up}.policies[0].value",
            "Invalid value: 0: must be greater than zero",
        ),
        (
            "FieldValueInvalid",
            f"{up}.policies[0].periodSeconds",
            "Invalid value: 0: must be greater than zero",
        ),
        (
            "FieldValueInvalid",
            f"{up}.policies[1].periodSeconds",
            "Invalid value: 1801: must be less than or equal to 1800",
        ),
        (
            "FieldValueInvalid",
            "spec.behavior.scaleDown.stabilizationWindowSeconds",
            "Invalid value: -1: must be greater than or equal to zero",
        ),
        (
            "FieldValueRequired",
            "spec.behavior.scaleDown.policies",
            "Required value: must specify at least one Policy",
        ),
    ]
    good = {
        "scaleUp": {"selectPolicy": "Disabled"},
        "scaleDown": {
            "stabilizationWindowSeconds": 3600,
            "selectPolicy": "Min",
            "policies": [{"type": "Percent", "value": 10, "periodSeconds": 1800}],
        },
    }
    code, out = request(server, "POST", HPAS, hpa(maxReplicas=3, behavior=good))
    assert code == 201, out
    # Rules left out are the v2 defaults', which are valid.
    code, out = request(server, "POST", HPAS, hpa(maxReplicas=3, behavior={"scaleDown": {}}))
    assert code == 201, out
    assert out["spec"]["behavior"]["scaleDown"]["policies"] == [
        {"type": "Percent", "value": 100, "periodSeconds": 15}
    ]


# --- PVC updates (ValidatePersistentVolumeClaimUpdate) ---------------------------

_IMMUTABLE = (
    "Forbidden: spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims\n  core.PersistentVolumeClaimSpec{\n"
)


def _claim(server: APIServer, storage: str = "10Gi") -> dict[str, Any]:
    body = pvc(accessModes=["ReadWriteOnce"], resources={"requests": {"storage": storage}})
    code, out = request(server, "POST", PVCS, body)
    assert code == 201, out
    return out


def _put(server: APIServer, claim: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return request(server, "PUT", f"{PVCS}/{claim['metadata']['name']}", claim)


def _bound(server: APIServer, claim: dict[str, Any], capacity: str) -> dict[str, Any]:
    claim["status"] = {"phase": "Bound", "capacity": {"storage": capacity}}
    code, out = request(server, "PUT", f"{PVCS}/{claim['metadata']['name']}/status", claim)
    assert code == 200, out
    return out


def _refused_update(server: APIServer, claim: dict[str, Any]) -> list[tuple[str, str, str]]:
    code, out = _put(server, claim)
    assert code == 422, out
    return causes(out)


def test_pvc_spec_is_immutable_but_volume_name_once(server: APIServer) -> None:
    claim = _claim(server)
    claim["spec"]["volumeName"] = "pv-1"  # set once: allowed
    code, claim = _put(server, claim)
    assert code == 200, claim
    assert claim["spec"]["volumeName"] == "pv-1"
    claim["spec"]["volumeName"] = "pv-2"
    [(reason, field, message)] = _refused_update(server, claim)
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert message.startswith(_IMMUTABLE), message
    assert '- \tVolumeName: "pv-1",\n+ \tVolumeName: "pv-2",\n' in message

    claim = _claim(server)
    claim["spec"]["accessModes"] = ["ReadWriteMany"]
    claim["spec"]["volumeMode"] = "Block"
    got = _refused_update(server, claim)
    assert [c[:2] for c in got] == [
        ("FieldValueForbidden", "spec"),
        ("FieldValueInvalid", "volumeMode"),
    ]
    assert got[0][2].startswith(_IMMUTABLE)
    assert got[1][2] == 'Invalid value: "Block": field is immutable'

    # An unbound claim's storage request is part of the immutable spec.
    claim = _claim(server)
    claim["spec"]["resources"]["requests"]["storage"] = "20Gi"
    [(reason, field, message)] = _refused_update(server, claim)
    assert (reason, field) == ("FieldValueForbidden", "spec")
    assert message.startswith(_IMMUTABLE)


def test_pvc_bound_storage_request(server: APIServer) -> None:
    claim = _bound(server, _claim(server, "10Gi"), "10Gi")
    claim["spec"]["resources"]["requests"]["storage"] = "5Gi"
    assert _refused_update(server, claim) == [
        (
            "FieldValueForbidden",
            "spec.resources.requests.storage",
            "Forbidden: field can not be less than status.capacity",
        )
    ]
    # RecoverVolumeExpansionFailure (beta, on in 1.32): a request may come back
    # down as long as it stays above the recorded capacity.
    claim = _bound(server, _claim(server, "20Gi"), "10Gi")
    claim["spec"]["resources"]["requests"]["storage"] = "15Gi"
    code, out = _put(server, claim)
    assert code == 200, out
    assert out["spec"]["resources"]["requests"]["storage"] == "15Gi"
