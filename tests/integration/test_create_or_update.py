"""create_or_update over the embedded API server: created / updated / unchanged, writes counted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pycontroller import ConflictError, ResourceClient, create_or_apply, create_or_update
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
        if labels:
            # Not an empty map when there are none: kube stores none
            # (ObjectMeta.Labels is omitempty), so it would differ every time.
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


# --------------------------------------------------------------------------- create_or_apply


def desired_cm(name: str, data: dict[str, str], **labels: str) -> Obj:
    obj = key(name)
    obj["data"] = dict(data)
    if labels:
        obj["metadata"]["labels"] = dict(labels)
    return obj


def test_create_or_apply_creates_then_makes_no_request_at_steady_state(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    assert create_or_apply(cms, desired_cm("s", {"k": "v"}, app="s"), field_manager="ctl") == (
        "created"
    )
    live = cms.get("s", "default")
    assert live["data"] == {"k": "v"} and live["metadata"]["labels"] == {"app": "s"}
    managers = {(e["manager"], e["operation"]) for e in live["metadata"]["managedFields"]}
    assert ("ctl", "Apply") in managers
    before = len(apiserver.request_log)
    for _ in range(3):
        got = create_or_apply(
            cms, desired_cm("s", {"k": "v"}, app="s"), field_manager="ctl", current=live
        )
        assert got == "unchanged"
    assert len(apiserver.request_log) == before, "an object in place costs no request"
    # Without ``current``: one GET, no write.
    writes = apiserver.writes("configmaps")
    assert create_or_apply(cms, desired_cm("s", {"k": "v"}, app="s"), field_manager="ctl") == (
        "unchanged"
    )
    assert apiserver.writes("configmaps") == writes


def test_create_or_apply_updates_drift_and_removes_what_it_no_longer_applies(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    create_or_apply(cms, desired_cm("d", {"a": "1", "b": "2"}), field_manager="ctl")
    # Someone else edits one of our fields and adds one of theirs.
    cms.patch("d", {"data": {"a": "x", "theirs": "t"}}, "default")
    live = cms.get("d", "default")
    assert create_or_apply(
        cms, desired_cm("d", {"a": "1", "b": "2"}), field_manager="ctl", current=live
    ) == ("updated")
    assert cms.get("d", "default")["data"] == {"a": "1", "b": "2", "theirs": "t"}
    # Dropping "b" from what we apply removes it: same values everywhere else, yet not in place.
    live = cms.get("d", "default")
    assert create_or_apply(cms, desired_cm("d", {"a": "1"}), field_manager="ctl", current=live) == (
        "updated"
    )
    assert cms.get("d", "default")["data"] == {"a": "1", "theirs": "t"}


def test_create_or_apply_conflicts_without_force_and_takes_over_with_it(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    create_or_apply(cms, desired_cm("c", {"k": "theirs"}), field_manager="other")
    with pytest.raises(ConflictError) as info:
        create_or_apply(cms, desired_cm("c", {"k": "ours"}), field_manager="ctl", force=False)
    assert any("other" in c.get("message", "") for c in info.value.causes)
    assert cms.get("c", "default")["data"] == {"k": "theirs"}
    assert create_or_apply(cms, desired_cm("c", {"k": "ours"}), field_manager="ctl") == "updated"
    live = cms.get("c", "default")
    assert live["data"] == {"k": "ours"}
    owners = {e["manager"] for e in live["metadata"]["managedFields"] if "fieldsV1" in e}
    assert "ctl" in owners


def test_create_or_apply_takes_ownership_of_a_field_that_already_has_its_value(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    """Same value, but set by another manager: applied once, so the field is ours too."""
    create_or_apply(cms, desired_cm("o", {"k": "v"}), field_manager="other")
    live = cms.get("o", "default")
    # The managed fields change (shared ownership), so the object is written.
    got = create_or_apply(cms, desired_cm("o", {"k": "v"}), field_manager="ctl", current=live)
    assert got == "updated"
    live = cms.get("o", "default")
    ours = [e for e in live["metadata"]["managedFields"] if e["manager"] == "ctl"]
    assert ours and ours[0]["operation"] == "Apply"
    before = len(apiserver.request_log)
    assert create_or_apply(cms, desired_cm("o", {"k": "v"}), field_manager="ctl", current=live) == (
        "unchanged"
    )
    assert len(apiserver.request_log) == before


def test_an_empty_map_left_by_mutate_is_no_change(
    apiserver: APIServer, cms: ResourceClient
) -> None:
    # kube stores no empty labels map (omitempty) or empty data: a mutate that
    # leaves them must not count as a change (equality.Semantic.DeepEqual
    # treats nil and empty maps as equal), or every reconcile would write.
    def mutate(obj: Obj) -> None:
        obj.setdefault("metadata", {}).setdefault("labels", {})
        obj.setdefault("data", {})
        obj["binaryData"] = None

    assert create_or_update(cms, key("e"), mutate) == "created"
    created = apiserver.writes("configmaps")
    for _ in range(3):
        assert create_or_update(cms, key("e"), mutate) == "unchanged"
    assert apiserver.writes("configmaps") == created

    def clear(obj: Obj) -> None:  # emptying a map that has entries is a change
        obj["data"] = {}

    assert create_or_update(cms, key("a"), set_data({"k": "v"})) == "created"
    assert create_or_update(cms, key("a"), clear) == "updated"
    assert "data" not in cms.get("a", namespace="default")


def test_removing_an_empty_object_the_server_kept_is_a_change(apiserver: APIServer) -> None:
    # A NetworkPolicy peer ``{podSelector: {}}`` admits every Pod of the namespace;
    # ``{namespaceSelector: {}}`` every Pod of every namespace. Both selectors are
    # empty objects, but swapping one for the other is a real change (in Go a nil
    # pointer is not a pointer to an empty struct), in either direction.
    policies = ResourceClient(apiserver.api_client(), "networking.k8s.io", "v1", "networkpolicies")
    ident: Obj = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "np", "namespace": "default"},
    }

    def peer(selector: str) -> Callable[[Obj], None]:
        def mutate(obj: Obj) -> None:
            spec = obj.setdefault("spec", {})  # only the fields it owns: kube defaults policyTypes
            spec["podSelector"] = {}
            spec["ingress"] = [{"from": [{selector: {}}]}]

        return mutate

    assert create_or_update(policies, dict(ident), peer("podSelector")) == "created"
    assert create_or_update(policies, dict(ident), peer("podSelector")) == "unchanged"
    assert create_or_update(policies, dict(ident), peer("namespaceSelector")) == "updated"
    live = policies.get("np", namespace="default")
    assert live["spec"]["ingress"] == [{"from": [{"namespaceSelector": {}}]}]
    assert create_or_update(policies, dict(ident), peer("namespaceSelector")) == "unchanged"
    assert create_or_update(policies, dict(ident), peer("podSelector")) == "updated"
    assert policies.get("np", namespace="default")["spec"]["ingress"] == [
        {"from": [{"podSelector": {}}]}
    ]
