"""Hostile specs against the ReverseProxy operator over the embedded API server.

Each spec is one the API server admits (with the CRD's full schema, or with a
permissive one standing for a server that enforces none of it); each must end
in ``Reconciled=False`` / ``InvalidSpec`` naming the field, with one Warning
event and no crash loop, or converge.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.reverseproxy import names
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer

from .conftest import Cluster, running, sample, wait_for

RP, TCP = names.REVERSE_PROXY, names.TCP_REVERSE_PROXY


Case = tuple[names.Kind, dict[str, Any], str]


def _all_end_invalid(server: APIServer, cases: list[Case]) -> list[str]:
    """Create one object per case (``bad-<i>``, the case's spec merged into
    the sample) with one operator; each must end InvalidSpec naming its
    field, with one Warning event, no reconcile error over resyncs, and no
    children. Returns the condition messages."""
    cluster = Cluster(server)
    with running(server, resync_period=1.0) as op:
        kinds = {kind for kind, _, _ in cases}
        errors = {kind: op.reconciles(kind, "error") for kind in kinds}
        for i, (kind, spec, _) in enumerate(cases):
            obj = sample(kind, f"bad-{i}")
            obj["spec"].update(spec)
            cluster.create(obj)
        messages = []
        for i, (kind, _, named) in enumerate(cases):
            name = f"bad-{i}"
            cond = wait_for(
                lambda k=kind, n=name: cluster.condition(k, n), what=f"{name}'s condition"
            )
            assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec"), cond
            assert named in cond["message"], (name, cond)
            messages.append(str(cond["message"]))

        def warnings(name: str) -> list[dict[str, Any]]:
            return [e for e in cluster.events_for(name) if e["type"] == "Warning"]

        for i in range(len(cases)):
            wait_for(lambda n=f"bad-{i}": warnings(n), what=f"bad-{i}'s Warning event")
        # Two resyncs of every bad object: none raises, none sends another event.
        start = {kind: op.reconciles(kind) for kind in kinds}
        for kind in kinds:
            count = sum(1 for k, _, _ in cases if k == kind)
            wait_for(
                lambda k=kind, c=count: op.reconciles(k) >= start[k] + 2 * c,
                what=f"resyncs of the bad {kind.kind}s",
            )
        for i, (kind, _, named) in enumerate(cases):
            (event,) = warnings(f"bad-{i}")
            assert event["reason"] == "InvalidSpec" and named in event["message"]
            for client in cluster.children.values():
                with pytest.raises(NotFoundError):
                    client.get(names.child_name(kind, f"bad-{i}"), namespace="default")
        for kind in kinds:
            assert op.reconciles(kind, "error") == errors[kind], "a bad spec made reconcile raise"
        return messages


# The CRD's patterns admit any hex digits, ':' and '.' in brackets; nginx
# refuses all of these at start ("invalid IPv6 address"), and Python's
# urlsplit raised on the proxyPass ones (a traceback on every retry).
BAD_IPV6: list[Case] = [
    (RP, {"proxyPass": "http://[::::]/"}, "spec.proxyPass"),
    (RP, {"proxyPass": "http://[1.2.3.4]:8080/"}, "spec.proxyPass"),
    (RP, {"resolver": ["[1.2.3.4]"]}, "spec.resolver[0]"),
    (RP, {"resolver": ["10.0.0.10", "[::::]:53"]}, "spec.resolver[1]"),
    (TCP, {"servers": [{"server": "[1.2.3.4]:5432"}]}, "spec.servers[0].server"),
    (TCP, {"resolver": ["[:]"]}, "spec.resolver[0]"),
]


def test_bad_ipv6_literals_and_long_problems_admitted_by_the_crd_are_invalid_spec(
    server: APIServer,
) -> None:
    """The bracketed hosts above, and 63 header values of 4096 characters,
    each an unknown variable: the CRD admits them, and every problem quoted
    whole made a message of 260 kB, past the condition's ``maxLength``
    (32768): the status write failed with 422 and the object never showed
    ``InvalidSpec``."""
    headers = {f"x-{i}": "$" + chr(ord("a") + i % 26) * 4095 for i in range(63)}
    long_problems: Case = (RP, {"proxySetHeader": headers}, "spec.proxySetHeader[x-0]")
    messages = _all_end_invalid(server, [*BAD_IPV6, long_problems])
    assert len(messages[-1]) <= 1024


@pytest.mark.parametrize("child_kind", ["ConfigMap", "Deployment", "Service"])
def test_a_child_whose_owner_reference_is_removed_is_reported(
    server: APIServer, child_kind: str
) -> None:
    cluster = Cluster(server)
    with running(server):
        cluster.create(sample(RP))
        wait_for(lambda: cluster.converged(RP, "whoami"), what="converged")
        client = cluster.children[child_kind]
        child = client.get(names.child_name(RP, "whoami"), namespace="default")
        child["metadata"]["ownerReferences"] = []
        client.update(child)
        cond = wait_for(
            lambda: (c := cluster.condition(RP, "whoami")) and c["reason"] == "ChildConflict" and c,
            what="ChildConflict",
        )
        assert names.child_name(RP, "whoami") in cond["message"]


def test_a_tcp_proxy_in_a_deleted_namespace_goes_away(server: APIServer) -> None:
    """The finalizer is ours: a namespace deletion must not hang on it."""
    cluster = Cluster(server)
    namespaces = cluster.configmaps.__class__(
        server.api_client(), "", "v1", "namespaces", namespaced=False
    )
    namespaces.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
    with running(server):
        obj = sample(TCP, "db", namespace="doomed")
        cluster.client(TCP).create(obj, namespace="doomed")
        wait_for(
            lambda: cluster.deployments.get(names.child_name(TCP, "db"), namespace="doomed"),
            what="children",
        )
        namespaces.delete("doomed")

        def gone() -> bool:
            try:
                namespaces.get("doomed")
            except NotFoundError:
                return True
            return False

        wait_for(gone, what="the namespace to go")


# A server without the CRD's schema admits these; the renderer iterated them
# as maps and raised AttributeError on every retry.
BAD_RESOURCES: list[Case] = [
    (RP, {"resources": {"limits": "1"}}, "spec.resources.limits"),
    (TCP, {"resources": {"limits": {"cpu": "1"}, "requests": ["cpu"]}}, "spec.resources.requests"),
    (RP, {"resources": {"limits": {"memory": None}}}, "spec.resources.limits[memory]"),
]


def test_resources_of_the_wrong_shape_are_invalid_spec(permissive_server: APIServer) -> None:
    _all_end_invalid(permissive_server, BAD_RESOURCES)


def test_null_requests_next_to_limits_converge(permissive_server: APIServer) -> None:
    """``requests: null`` (kept by a server without the schema) is no requests:
    the limits are copied in as usual, instead of an AttributeError per retry."""
    cluster = Cluster(permissive_server)
    with running(permissive_server):
        obj = sample(TCP)
        obj["spec"]["resources"] = {"limits": {"cpu": "1"}, "requests": None}
        cluster.create(obj)
        wait_for(lambda: cluster.converged(TCP, "db"), what="converged")
        deployment = cluster.deployments.get(names.child_name(TCP, "db"), namespace="default")
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["resources"]["requests"] == {"cpu": "1"}


@pytest.mark.parametrize("service_type", ["NodePort", "LoadBalancer"])
def test_a_service_switched_to_node_ports_heals(server: APIServer, service_type: str) -> None:
    """The server gave every port a nodePort; going back to ClusterIP must drop
    them (kube-apiserver's dropTypeDependentFields), not fail with 422 forever."""
    cluster = Cluster(server)
    with running(server) as op:
        cluster.create(sample(RP))
        wait_for(lambda: cluster.converged(RP, "whoami"), what="converged")
        name = names.child_name(RP, "whoami")
        svc = cluster.services.get(name, namespace="default")
        svc["spec"]["type"] = service_type
        svc = cluster.services.update(svc)
        assert all(p.get("nodePort") for p in svc["spec"]["ports"]), svc["spec"]
        errors = op.reconciles(RP, "error")
        wait_for(
            lambda: cluster.services.get(name, namespace="default")["spec"]["type"] == "ClusterIP",
            what="back to ClusterIP",
        )
        assert op.reconciles(RP, "error") == errors
        assert (cluster.condition(RP, "whoami") or {}).get("status") == "True"
