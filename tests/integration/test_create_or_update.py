"""create_or_update over the embedded API server: created / updated / unchanged, writes counted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pycontroller import ConflictError, ResourceClient, create_or_update
from pycontroller.meta import add_finalizer, is_controlled_by, set_controller_reference
from pycontroller.testing import APIServer

Obj = dict[str, Any]


@pytest.fixture
def cms(apiserver: APIServer) -> ResourceClient:
    return ResourceClient(apiserver.api_client(), "", "v1", "configmaps")


def key(name: str, ns: str | None = "default") -> Obj:
    """What a controller passes: only the identity of the object."""
    meta: Obj = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def set_data(data: dict[str, str], **labels: str) -> Callable[[Obj], None]:
    """A mutate that owns ``data`` as a whole and the given labels, nothing else."""

    def mutate(obj: Obj) -> None:
        obj["data"] = dict(data)
        obj.setdefault("metadata", {}).setdefault("labels", {}).update(labels)

    return mutate


def test_create_then_steady_state_makes_no_writes(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    obj = key("a")
    assert create_or_update(cms, obj, set_data({"k": "v"}, app="a")) == "created"
    assert apiserver.writes("configmaps") == 1
    # obj now holds the object as the server returned it.
    assert obj["metadata"]["uid"] and obj["metadata"]["resourceVersion"]
    assert obj["data"] == {"k": "v"} and obj["metadata"]["labels"] == {"app": "a"}

    for _ in range(3):
        again = key("a")
        assert create_or_update(cms, again, set_data({"k": "v"}, app="a")) == "unchanged"
        assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert apiserver.writes("configmaps") == 1
    assert len(apiserver.requests("GET", r"/configmaps/a$")) == 4


def test_update_writes_once_and_keeps_what_others_set(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    create_or_update(cms, key("a"), set_data({"k": "v"}, app="a"))
    # Another actor adds its own label and annotation: not drift for us.
    live = cms.get("a", "default")
    live["metadata"]["labels"]["team"] = "x"
    live["metadata"]["annotations"] = {"note": "hi"}
    cms.update(live)
    writes = apiserver.writes("configmaps")
    assert create_or_update(cms, key("a"), set_data({"k": "v"}, app="a")) == "unchanged"
    assert apiserver.writes("configmaps") == writes

    # A change of what we own is one update; foreign fields survive it.
    obj = key("a")
    assert create_or_update(cms, obj, set_data({"k": "v2"}, app="a")) == "updated"
    assert apiserver.writes("configmaps") == writes + 1
    got = cms.get("a", "default")
    assert got["data"] == {"k": "v2"}
    assert got["metadata"]["labels"] == {"app": "a", "team": "x"}
    assert got["metadata"]["annotations"] == {"note": "hi"}
    assert obj["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]


def test_drift_is_repaired(apiserver: APIServer, cms: ResourceClient) -> None:
    create_or_update(cms, key("a"), set_data({"k": "v"}))
    cms.patch("a", {"data": {"k": "tampered", "extra": "1"}}, "default")
    assert create_or_update(cms, key("a"), set_data({"k": "v"})) == "updated"
    assert cms.get("a", "default")["data"] == {"k": "v"}
    assert create_or_update(cms, key("a"), set_data({"k": "v"})) == "unchanged"


def test_namespace_defaults_like_the_client(apiserver: APIServer, cms: ResourceClient) -> None:
    obj = key("a", ns=None)
    assert create_or_update(cms, obj, set_data({"k": "v"})) == "created"
    assert obj["metadata"]["namespace"] == "default"
    assert create_or_update(cms, key("a", ns=None), set_data({"k": "v"})) == "unchanged"


def test_mutate_must_not_rename(apiserver: APIServer, cms: ResourceClient) -> None:
    def rename(obj: Obj) -> None:
        obj["metadata"]["name"] = "b"

    def move(obj: Obj) -> None:
        obj["metadata"]["namespace"] = "kube-system"

    for mutate in (rename, move):  # not found: the create path
        with pytest.raises(ValueError, match="name and/or namespace"):
            create_or_update(cms, key("a"), mutate)
    assert apiserver.writes("configmaps") == 0

    create_or_update(cms, key("a"), set_data({"k": "v"}))
    for mutate in (rename, move):  # found: the update path
        with pytest.raises(ValueError, match="name and/or namespace"):
            create_or_update(cms, key("a"), mutate)
    assert apiserver.writes("configmaps") == 1


def test_a_concurrent_change_is_a_conflict(apiserver: APIServer, cms: ResourceClient) -> None:
    create_or_update(cms, key("a"), set_data({"k": "v"}))

    def racing(obj: Obj) -> None:
        # Someone writes between our GET and our update.
        cms.patch("a", {"metadata": {"labels": {"other": "1"}}}, "default")
        obj["data"] = {"k": "v2"}

    with pytest.raises(ConflictError):
        create_or_update(cms, key("a"), racing)
    # The level-based retry converges.
    assert create_or_update(cms, key("a"), set_data({"k": "v2"})) == "updated"


def test_server_defaults_do_not_cause_writes(apiserver: APIServer) -> None:
    """A Deployment comes back with many defaulted fields; mutate sets only ours."""
    deployments = ResourceClient(apiserver.api_client(), "apps", "v1", "deployments")
    cms = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    owner = cms.create(key("owner") | {"data": {}})

    def desired(obj: Obj) -> None:
        set_controller_reference(owner, obj)
        add_finalizer(obj, "example.com/cleanup")
        obj["metadata"].setdefault("labels", {})["app"] = "web"
        spec = obj.setdefault("spec", {})
        spec["replicas"] = 2
        spec["selector"] = {"matchLabels": {"app": "web"}}
        template = spec.setdefault("template", {})
        template.setdefault("metadata", {})["labels"] = {"app": "web"}
        pod = template.setdefault("spec", {})
        containers = pod.setdefault("containers", [{}])
        containers[0].update(name="web", image="nginx:1.25")

    def new() -> Obj:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
        }

    obj = new()
    assert create_or_update(deployments, obj, desired) == "created"
    assert is_controlled_by(obj, owner)
    writes = apiserver.writes("deployments")
    for _ in range(3):
        assert create_or_update(deployments, new(), desired) == "unchanged"
    assert apiserver.writes("deployments") == writes

    def scaled(obj: Obj) -> None:
        desired(obj)
        obj["spec"]["replicas"] = 3

    assert create_or_update(deployments, new(), scaled) == "updated"
    assert apiserver.writes("deployments") == writes + 1
    assert deployments.get("web", "default")["spec"]["replicas"] == 3


def test_cluster_scoped(apiserver: APIServer) -> None:
    namespaces = ResourceClient(apiserver.api_client(), "", "v1", "namespaces", namespaced=False)

    def label(obj: Obj) -> None:
        obj["metadata"].setdefault("labels", {})["team"] = "a"

    obj: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    assert create_or_update(namespaces, obj, label) == "created"
    again: Obj = {"metadata": {"name": "team-a"}}
    assert create_or_update(namespaces, again, label) == "unchanged"
    assert apiserver.writes("namespaces") == 1
