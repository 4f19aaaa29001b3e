"""Hostile Balancers over the embedded API server: wrong types, limits,
nginx-special characters, children and status meddled with.

Every admitted spec must end converged or in ``Reconciled=False`` /
``InvalidSpec`` naming the field, with one Warning event and no reconcile
error; one bad key never stalls another.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from controllers.balancer import names
from pycontroller.testing import APIServer

from .conftest import Cluster, running_controller, sample_balancer, wait_for

NS = "default"
INJECT = "v1-backend:80;server 10.9.8.7:22 weight=1000;#"


def _errors() -> float:
    value = REGISTRY.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "balancer", "result": "error"}
    )
    return value or 0.0


def _successes() -> float:
    value = REGISTRY.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "balancer", "result": "success"}
    )
    return value or 0.0


def _spec(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = sample_balancer()["spec"]
    spec.update(fields)
    return spec


def _backend(**fields: Any) -> list[dict[str, Any]]:
    return [{"name": "v1", "weight": 1, **fields}]


def _port(**fields: Any) -> list[dict[str, Any]]:
    return [{"name": "http", "protocol": "TCP", "port": 80, **fields}]


# (name, spec, the field the message must start with; None: converges)
HOSTILE: list[tuple[str, Any, str | None]] = [
    ("w-string", _spec(backends=_backend(weight="1")), "spec.backends[0].weight"),
    ("w-zero", _spec(backends=_backend(weight=0)), "spec.backends[0].weight"),
    ("w-negative", _spec(backends=_backend(weight=-1)), "spec.backends[0].weight"),
    ("w-huge", _spec(backends=_backend(weight=2**63)), "spec.backends[0].weight"),
    ("w-float", _spec(backends=_backend(weight=1.5)), "spec.backends[0].weight"),
    ("w-bool", _spec(backends=_backend(weight=True)), "spec.backends[0].weight"),
    ("w-null", _spec(backends=_backend(weight=None)), "spec.backends[0].weight"),
    ("w-max", _spec(backends=_backend(weight=2**31 - 1)), None),
    ("b-inject", _spec(backends=[{"name": INJECT, "weight": 1}]), "spec.backends[0].name"),
    ("b-newline", _spec(backends=_backend(name="v1\nserver x:1")), "spec.backends[0].name"),
    ("b-brace", _spec(backends=_backend(name="v1}")), "spec.backends[0].name"),
    ("b-dollar", _spec(backends=_backend(name="$host")), "spec.backends[0].name"),
    ("b-unicode", _spec(backends=_backend(name="вэ1")), "spec.backends[0].name"),
    ("b-space", _spec(backends=_backend(name="v 1")), "spec.backends[0].name"),
    ("b-dup", _spec(backends=_backend() + _backend()), "spec.backends[1].name"),
    ("b-null", _spec(backends=None), "spec.backends"),
    ("b-empty", _spec(backends=[]), "spec.backends"),
    ("b-item-list", _spec(backends=[["v1", 1]]), "spec.backends[0]"),
    ("b-selector-list", _spec(backends=_backend(selector=["a"])), "spec.backends[0].selector"),
    ("b-selector-int", _spec(backends=_backend(selector={"a": 5})), "spec.backends[0].selector"),
    ("b-selector-semi", _spec(backends=_backend(selector={"a": "b;c"})), "spec.backends[0].sel"),
    ("p-string", _spec(ports=_port(port="80")), "spec.ports[0].port"),
    ("p-zero", _spec(ports=_port(port=0)), "spec.ports[0].port"),
    ("p-65536", _spec(ports=_port(port=65536)), "spec.ports[0].port"),
    ("p-max", _spec(ports=_port(port=65535)), None),
    ("p-lower", _spec(ports=_port(protocol="tcp")), "spec.ports[0].protocol"),
    ("p-sctp", _spec(ports=_port(protocol="SCTP")), "spec.ports[0].protocol"),
    ("p-proto-inject", _spec(ports=_port(protocol="UDP;")), "spec.ports[0].protocol"),
    ("p-name-inject", _spec(ports=_port(name="h {")), "spec.ports[0].name"),
    ("p-name-hash", _spec(ports=_port(name="h#")), "spec.ports[0].name"),
    ("p-dup-port", _spec(ports=_port() + _port(name="b")), "spec.ports[1].port"),
    ("p-dup-name", _spec(ports=_port() + _port(port=81)), "spec.ports[1].name"),
    ("p-tcp-udp", _spec(ports=_port() + _port(name="u", protocol="UDP")), None),
    ("p-tp-zero", _spec(ports=_port(targetPort=0)), "spec.ports[0].targetPort"),
    ("p-tp-65536", _spec(ports=_port(targetPort=65536)), "spec.ports[0].targetPort"),
    ("p-tp-digits", _spec(ports=_port(targetPort="80")), "spec.ports[0].targetPort"),
    ("p-tp-null", _spec(ports=_port(targetPort=None)), "spec.ports[0].targetPort"),
    ("p-tp-named", _spec(ports=_port(targetPort="web")), None),
    ("p-object", _spec(ports={"http": 80}), "spec.ports"),
    ("s-selector-string", _spec(selector="app=x"), "spec.selector"),
    ("s-selector-key", _spec(selector={"a b": "x"}), "spec.selector"),
    ("spec-null", None, "spec"),
    ("spec-number", 5, "spec"),
    ("x" * 53, _spec(backends=[{"name": "b", "weight": 1}]), None),  # 53 + "-b-backend" = 63
    ("y" * 53, _spec(backends=[{"name": "bb", "weight": 1}]), "spec.backends[0].name"),
    ("z" * 63, _spec(), "spec.backends[0].name"),
    ("9starts-with-digit", _spec(), "metadata.name"),
]


def test_every_hostile_spec_ends_converged_or_invalid_spec(
    permissive_server: APIServer,
) -> None:
    """All at once in one namespace: each ends as promised, none raises,
    and the valid ones converge next to the invalid ones."""
    cluster = Cluster(permissive_server)
    with running_controller(permissive_server, resync_period=1.0):
        errors = _errors()
        for name, spec, _ in HOSTILE:
            obj = sample_balancer(name=name, namespace=NS)
            obj["spec"] = spec
            cluster.create_balancer(obj)

        def outcome(name: str) -> dict[str, Any] | None:
            cond = cluster.condition(name, NS, names.CONDITION_RECONCILED)
            return cond if cond and cond["status"] in ("True", "False") else None

        for name, _, field in HOSTILE:
            cond = wait_for(lambda n=name: outcome(n), what=f"{name}: a Reconciled condition")
            if field is None:
                assert cond["status"] == "True", (name, cond)
                wait_for(lambda n=name: cluster.converged(n, NS), what=f"{name} converged")
                continue
            assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec"), (name, cond)
            assert cond["message"].startswith(field), (name, cond["message"])
            warnings = wait_for(
                lambda n=name: [e for e in cluster.events_for(n, NS) if e["type"] == "Warning"],
                what=f"{name}: a Warning event",
            )
            assert [e["reason"] for e in warnings] == ["InvalidSpec"], (name, warnings)
        # a few resyncs later: still one Warning each, no reconcile error at all
        seen = _successes()
        wait_for(lambda: _successes() >= seen + 2 * len(HOSTILE), what="resyncs")
        for name, _, field in HOSTILE:
            if field is not None:
                warnings = [e for e in cluster.events_for(name, NS) if e["type"] == "Warning"]
                assert len(warnings) == 1 and warnings[0].get("count", 1) == 1, (name, warnings)
        assert _errors() == errors


@pytest.mark.parametrize("kind", ["ConfigMap", "Deployment", "Service"])
def test_a_child_whose_owner_reference_is_removed_is_reported_promptly(
    server: APIServer, cluster: Cluster, kind: str
) -> None:
    """No resync: the update that drops our reference must still reach us."""
    with running_controller(server, resync_period=0.0):
        cluster.create_balancer(sample_balancer(name="orphan", namespace=NS))
        wait_for(lambda: cluster.converged("orphan", NS), what="converged")
        client = {
            "ConfigMap": cluster.configmaps,
            "Deployment": cluster.deployments,
            "Service": cluster.services,
        }[kind]
        child = {
            "ConfigMap": names.configmap_name,
            "Deployment": names.deployment_name,
            "Service": names.frontend_service_name,
        }[kind]("orphan")
        obj = client.get(child, namespace=NS)
        obj["metadata"]["ownerReferences"] = []
        client.update(obj)
        cond = wait_for(
            lambda: (c := cluster.condition("orphan", NS, "Reconciled"))
            and c["reason"] == "ChildConflict"
            and c,
            timeout=10,
            what="ChildConflict",
        )
        assert child in cond["message"]


@pytest.mark.parametrize("service_type", ["NodePort", "LoadBalancer"])
def test_a_service_switched_to_node_ports_heals(
    server: APIServer, cluster: Cluster, service_type: str
) -> None:
    """The server gave every port a nodePort; going back to ClusterIP must drop them."""
    with running_controller(server):
        cluster.create_balancer(sample_balancer(name="np", namespace=NS))
        wait_for(lambda: cluster.converged("np", NS), what="converged")
        for name in ("np", names.backend_service_name("np", "v1")):
            svc = cluster.services.get(name, namespace=NS)
            svc["spec"]["type"] = service_type
            svc = cluster.services.update(svc)
            assert all(p.get("nodePort") for p in svc["spec"]["ports"]), svc["spec"]
            wait_for(
                lambda n=name: cluster.services.get(n, namespace=NS)["spec"]["type"] == "ClusterIP",
                what=f"{name} back to ClusterIP",
            )
        assert cluster.condition("np", NS, "Reconciled")["status"] == "True"
