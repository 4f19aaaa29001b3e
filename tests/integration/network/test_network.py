"""The Network controller (seed 004) over the embedded API server: every sync records
an Event, a deletion is handled, resyncs are dropped as the original's handler drops them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.network.controller import (
    COMPONENT,
    MESSAGE_RESOURCE_SYNCED,
    NETWORKS,
    SUCCESS_SYNCED,
    setup,
)
from pycontroller import Manager, ResourceClient
from pycontroller.testing import APIServer, wait_for

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "crds" / "network.yaml"
LOGGER = "controllers.network.controller"


class Running:
    def __init__(self, server: APIServer, mgr: Manager) -> None:
        api = server.api_client()
        self.server = server
        self.mgr = mgr
        self.networks = ResourceClient(api, *NETWORKS)
        self.events = ResourceClient(api, "", "v1", "events")

    def synced_events(self, name: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events.list("default")["items"]
            if e["involvedObject"].get("name") == name and e["reason"] == SUCCESS_SYNCED
        ]

    def synced_count(self, name: str) -> int:
        return sum(int(e.get("count") or 1) for e in self.synced_events(name))


def network(
    name: str, cidr: str = "192.168.0.0/16", gateway: str = "192.168.0.1"
) -> dict[str, Any]:
    return {
        "apiVersion": "samplecrd.k8s.io/v1",
        "kind": "Network",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"cidr": cidr, "gateway": gateway},
    }


@pytest.fixture
def crd() -> Path:
    return CRD


@pytest.fixture
def running(
    apiserver_factory: Any, caplog: pytest.LogCaptureFixture, crd: Path
) -> Iterator[Running]:
    caplog.set_level(logging.INFO, logger=LOGGER)
    server = apiserver_factory(crds=[str(crd)])
    # A short resync: the ResourceVersionChanged predicate must drop every one.
    mgr = Manager(
        server.api_client(), name=COMPONENT, resync_period=0.2, graceful_shutdown_timeout=5
    )
    setup(mgr)
    stop = threading.Event()
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(mgr.run(stop)), daemon=True)
    thread.start()
    try:
        yield Running(server, mgr)
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive()
    assert codes == [0]


def test_create_records_a_synced_event(running: Running, caplog: pytest.LogCaptureFixture) -> None:
    created = running.networks.create(network("n1", "10.0.0.0/8", "10.0.0.1"), "default")
    (event,) = wait_for(lambda: running.synced_events("n1"), what="a Synced event")
    assert event["type"] == "Normal"
    assert event["message"] == MESSAGE_RESOURCE_SYNCED
    assert event["source"]["component"] == COMPONENT
    involved = event["involvedObject"]
    assert (involved["kind"], involved["namespace"]) == ("Network", "default")
    assert involved["uid"] == created["metadata"]["uid"]
    assert involved["apiVersion"] == "samplecrd.k8s.io/v1"
    wait_for(
        lambda: "Syncing default/n1 cidr=10.0.0.0/8 gateway=10.0.0.1" in caplog.text,
        what="the sync log line",
    )
    # Resyncs every 0.2 s carry the same resourceVersion: no further syncs.
    threading.Event().wait(1.0)
    assert running.synced_count("n1") == 1


def test_update_syncs_again(running: Running) -> None:
    running.networks.create(network("n2"), "default")
    wait_for(lambda: running.synced_count("n2") == 1, what="first sync")
    running.networks.patch("n2", {"spec": {"gateway": "192.168.0.254"}}, "default")
    # One Event per sync; the recorder aggregates identical ones into a count.
    wait_for(lambda: running.synced_count("n2") == 2, what="second sync")


def test_delete_is_handled(running: Running, caplog: pytest.LogCaptureFixture) -> None:
    running.networks.create(network("n3"), "default")
    wait_for(lambda: running.synced_count("n3") == 1, what="sync")
    running.networks.delete("n3", "default")
    wait_for(
        lambda: "default/n3 deleted: will delete it from Neutron" in caplog.text,
        what="the deletion to be handled",
    )
    assert running.synced_count("n3") == 1  # a deleted Network gets no Synced event


def test_many_networks_each_get_an_event(running: Running) -> None:
    for i in range(10):
        running.networks.create(network(f"m{i}", f"10.{i}.0.0/16", f"10.{i}.0.1"), "default")
    wait_for(
        lambda: all(running.synced_count(f"m{i}") == 1 for i in range(10)),
        what="every Network synced once",
    )


@pytest.fixture
def schemaless_crd(tmp_path: Path) -> Path:
    """The Network CRD without its schema: what an API server that enforces
    none lets through."""
    doc = yaml.safe_load(CRD.read_text())
    for version in doc["spec"]["versions"]:
        version["schema"] = {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        }
    path = tmp_path / "network.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("spec", ["x", None, ["cidr"]], ids=["string", "null", "list"])
def test_a_spec_of_the_wrong_type_is_synced_not_a_crash_loop(
    apiserver_factory: Any, schemaless_crd: Path, spec: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    server = apiserver_factory(crds=[str(schemaless_crd)])
    mgr = Manager(server.api_client(), name=COMPONENT, graceful_shutdown_timeout=5)
    setup(mgr)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: mgr.run(stop), daemon=True)
    thread.start()
    try:
        running = Running(server, mgr)
        running.networks.create({**network("odd"), "spec": spec}, "default")
        running.networks.create(network("fine"), "default")
        wait_for(lambda: running.synced_count("fine") == 1, what="the valid Network synced")
        wait_for(lambda: running.synced_count("odd") == 1, what="the odd one synced too")
        assert "Syncing default/odd cidr=None gateway=None" in caplog.text
        assert "Traceback" not in caplog.text
    finally:
        stop.set()
        thread.join(15)


def test_smallest_complete_example_fits_in_60_lines() -> None:
    package = REPO / "controllers" / "network"
    lines = sum(
        len((package / f).read_text().splitlines()) for f in ("controller.py", "__main__.py")
    )
    assert lines <= 60
