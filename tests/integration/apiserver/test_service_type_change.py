"""A Service's type changed by an update that sends back what the client
read: kube's ``dropTypeDependentFields`` (the Service strategy's
PrepareForUpdate) drops what the new type has no use for, when the update
left it unchanged, instead of refusing it (e.g. a controller healing a child
Service someone switched to NodePort)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pycontroller import ResourceClient
from pycontroller.errors import ApiError
from pycontroller.testing import APIServer

NS = "default"


@pytest.fixture(scope="module")
def services() -> Iterator[ResourceClient]:
    with APIServer() as server:
        yield ResourceClient(server.api_client(), "", "v1", "services")


def _service(name: str, stype: str, **spec: Any) -> dict[str, Any]:
    ports = [{"name": "a", "port": 80}, {"name": "b", "port": 81}]
    return {"metadata": {"name": name}, "spec": {"type": stype, "ports": ports, **spec}}


def _to(live: dict[str, Any], stype: str) -> dict[str, Any]:
    back = {**live, "spec": {**live["spec"], "type": stype}}
    return back


def test_node_port_to_cluster_ip_drops_the_allocated_node_ports(
    services: ResourceClient,
) -> None:
    live = services.create(_service("np", "NodePort"), namespace=NS)
    assert all(p["nodePort"] for p in live["spec"]["ports"])
    assert live["spec"]["externalTrafficPolicy"] == "Cluster"

    back = services.update(_to(live, "ClusterIP"))
    assert back["spec"]["type"] == "ClusterIP"
    assert [p.get("nodePort") for p in back["spec"]["ports"]] == [None, None]
    assert "externalTrafficPolicy" not in back["spec"]
    assert back["spec"]["clusterIP"] == live["spec"]["clusterIP"]


def test_a_net_new_node_port_on_cluster_ip_is_still_refused(services: ResourceClient) -> None:
    live = services.create(_service("np2", "NodePort"), namespace=NS)
    taken = {p["nodePort"] for p in live["spec"]["ports"]}
    back = _to(live, "ClusterIP")
    new_port = next(p for p in range(30000, 32768) if p not in taken)
    back["spec"]["ports"][0]["nodePort"] = new_port
    with pytest.raises(ApiError) as err:
        services.update(back)
    assert err.value.status == 422
    assert "spec.ports[0].nodePort" in str(err.value)


def test_load_balancer_to_cluster_ip_drops_its_fields(services: ResourceClient) -> None:
    live = services.create(
        _service("lb", "LoadBalancer", externalTrafficPolicy="Local"), namespace=NS
    )
    assert live["spec"]["healthCheckNodePort"]
    assert live["spec"]["allocateLoadBalancerNodePorts"] is True

    back = services.update(_to(live, "ClusterIP"))
    spec = back["spec"]
    for field in ("healthCheckNodePort", "allocateLoadBalancerNodePorts", "externalTrafficPolicy"):
        assert field not in spec, field
    assert [p.get("nodePort") for p in spec["ports"]] == [None, None]


def test_cluster_ip_to_external_name_drops_the_cluster_ip(services: ResourceClient) -> None:
    live = services.create(_service("ip", "ClusterIP"), namespace=NS)
    back = _to(live, "ExternalName")
    back["spec"]["externalName"] = "example.com"
    out = services.update(back)
    spec = out["spec"]
    assert spec["type"] == "ExternalName"
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        assert field not in spec, field
