"""Finalizers, deletionTimestamp and owner-reference garbage collection
(Background, Foreground, Orphan) in the embedded API server."""

from __future__ import annotations

import time
from typing import Any

from support.http import request

from pycontroller.testing import APIServer, wait_for

CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def exists(server: APIServer, path: str) -> bool:
    return request(server, "GET", path)[0] == 200


def owner_ref(obj: dict[str, Any], block: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


def make_owner(server: APIServer, name: str = "owner") -> dict[str, Any]:
    code, owner = request(server, "POST", CM, {"metadata": {"name": name}})
    assert code == 201
    return owner


def make_child(
    server: APIServer, name: str, owner: dict[str, Any], block: bool = False, **extra: Any
) -> dict[str, Any]:
    meta = {"name": name, "ownerReferences": [owner_ref(owner, block)], **extra}
    code, child = request(server, "POST", CM, {"metadata": meta})
    assert code == 201, child
    return child


def test_finalizers_block_deletion_until_removed(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, {"metadata": {"name": "f", "finalizers": ["example.com/x"]}})
    code, obj = request(apiserver, "DELETE", f"{CM}/f")
    assert code == 200
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    assert exists(apiserver, f"{CM}/f")
    # Adding a finalizer to a terminating object is forbidden.
    code, st = request(
        apiserver,
        "PATCH",
        f"{CM}/f",
        {"metadata": {"finalizers": ["example.com/x", "example.com/y"]}},
        "application/merge-patch+json",
    )
    assert code == 422
    # Deleting again is a no-op returning the object.
    code, again = request(apiserver, "DELETE", f"{CM}/f")
    assert code == 200
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    code, gone = request(
        apiserver,
        "PATCH",
        f"{CM}/f",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    assert code == 200
    assert not exists(apiserver, f"{CM}/f")


def test_background_propagation_collects_dependents(apiserver: APIServer) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "c1", owner)
    make_child(apiserver, "c2", owner)
    code, _ = request(apiserver, "DELETE", f"{CM}/owner")
    assert code == 200
    assert not exists(apiserver, f"{CM}/owner")  # owner gone at once
    wait_for(lambda: not exists(apiserver, f"{CM}/c1") and not exists(apiserver, f"{CM}/c2"))


def test_dependent_with_unknown_owner_is_collected(apiserver: APIServer) -> None:
    fake = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"},
    }
    make_child(apiserver, "orphaned", fake)
    wait_for(lambda: not exists(apiserver, f"{CM}/orphaned"))


def test_dangling_reference_removed_when_another_owner_lives(apiserver: APIServer) -> None:
    o1 = make_owner(apiserver, "o1")
    o2 = make_owner(apiserver, "o2")
    ref2 = owner_ref(o2)
    ref2["controller"] = False
    request(
        apiserver,
        "POST",
        CM,
        {"metadata": {"name": "shared", "ownerReferences": [owner_ref(o1), ref2]}},
    )
    request(apiserver, "DELETE", f"{CM}/o1")

    def refs() -> list[str]:
        _, obj = request(apiserver, "GET", f"{CM}/shared")
        return [r["name"] for r in obj["metadata"].get("ownerReferences", [])]

    wait_for(lambda: refs() == ["o2"])


def test_foreground_propagation(apiserver: APIServer) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "blocker", owner, block=True, finalizers=["example.com/hold"])
    make_child(apiserver, "free", owner)
    code, obj = request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Foreground")
    assert code == 200
    assert "foregroundDeletion" in obj["metadata"]["finalizers"]
    assert obj["metadata"]["deletionTimestamp"]
    wait_for(lambda: not exists(apiserver, f"{CM}/free"))
    # The blocking dependent is terminating but held by its finalizer: owner waits.
    _, blocker = request(apiserver, "GET", f"{CM}/blocker")
    assert blocker["metadata"]["deletionTimestamp"]
    time.sleep(0.2)
    assert exists(apiserver, f"{CM}/owner")
    request(
        apiserver,
        "PATCH",
        f"{CM}/blocker",
        {"metadata": {"finalizers": []}},
        "application/merge-patch+json",
    )
    wait_for(lambda: not exists(apiserver, f"{CM}/owner"))


def test_foreground_via_delete_options_body(apiserver: APIServer) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "c", owner, block=True)
    code, _ = request(
        apiserver,
        "DELETE",
        f"{CM}/owner",
        {"kind": "DeleteOptions", "propagationPolicy": "Foreground"},
    )
    assert code == 200
    wait_for(lambda: not exists(apiserver, f"{CM}/owner") and not exists(apiserver, f"{CM}/c"))


def test_a_delete_body_wins_over_the_query_entirely(apiserver: APIServer) -> None:
    # kube's DeleteResource decodes DeleteOptions from the body when there is
    # one and from the query only when the body is empty: never a mix.
    owner = make_owner(apiserver)
    make_child(apiserver, "kid", owner)
    code, obj = request(
        apiserver,
        "DELETE",
        f"{CM}/owner?propagationPolicy=Foreground&dryRun=All",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"},
    )
    assert code == 200 and obj["metadata"]["finalizers"] == ["orphan"]
    wait_for(lambda: not exists(apiserver, f"{CM}/owner"))  # not a dry run
    _, kid = request(apiserver, "GET", f"{CM}/kid")
    assert "ownerReferences" not in kid["metadata"]  # orphaned, not deleted in foreground


def test_delete_collection_options_from_the_query_without_a_body(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, {"metadata": {"name": "x", "labels": {"k": "v"}}})
    code, listed = request(apiserver, "DELETE", f"{CM}?labelSelector=k%3Dv&dryRun=All")
    assert code == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["x"]
    assert exists(apiserver, f"{CM}/x")  # dry run: still there
    code, _ = request(apiserver, "DELETE", f"{CM}?labelSelector=k%3Dv&dryRun=All", {})
    assert code == 200
    # A body (even empty options): the query's dryRun is ignored.
    assert not exists(apiserver, f"{CM}/x")


def test_orphan_propagation(apiserver: APIServer) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "kid", owner)
    code, obj = request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Orphan")
    assert code == 200 and "orphan" in obj["metadata"]["finalizers"]
    wait_for(lambda: not exists(apiserver, f"{CM}/owner"))
    _, kid = request(apiserver, "GET", f"{CM}/kid")
    assert "ownerReferences" not in kid["metadata"]
    time.sleep(0.2)
    assert exists(apiserver, f"{CM}/kid")


def test_gc_chain_across_kinds(apiserver: APIServer) -> None:
    code, dep = request(
        apiserver,
        "POST",
        DEPLOY,
        {
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        },
    )
    assert code == 201
    child = make_child(apiserver, "mid", dep)
    make_child(apiserver, "leaf", child)
    request(apiserver, "DELETE", f"{DEPLOY}/web")
    wait_for(lambda: not exists(apiserver, f"{CM}/mid") and not exists(apiserver, f"{CM}/leaf"))


def test_custom_finalizer_generation_bump_only_on_delete(apiserver: APIServer) -> None:
    _, obj = request(apiserver, "POST", CM, {"metadata": {"name": "g", "finalizers": ["x/y"]}})
    assert "generation" not in obj["metadata"]  # ConfigMaps have no generation
    _, obj = request(apiserver, "DELETE", f"{CM}/g")
    assert "generation" not in obj["metadata"] and obj["metadata"]["deletionTimestamp"]
    # Store's markAsDeleting: an object that has a generation gets +1 when its
    # deletionTimestamp is first set (here a Deployment held by a finalizer).
    deploy = {
        "metadata": {"name": "g", "finalizers": ["x/y"]},
        "spec": {
            "selector": {"matchLabels": {"app": "g"}},
            "template": {
                "metadata": {"labels": {"app": "g"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    path = "/apis/apps/v1/namespaces/default/deployments"
    _, obj = request(apiserver, "POST", path, deploy)
    assert obj["metadata"]["generation"] == 1
    _, obj = request(apiserver, "DELETE", f"{path}/g")
    assert obj["metadata"]["generation"] == 2


def test_namespace_waits_for_finalized_contents(apiserver: APIServer) -> None:
    request(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "held"}})
    path = "/api/v1/namespaces/held/configmaps"
    request(apiserver, "POST", path, {"metadata": {"name": "h", "finalizers": ["x/y"]}})
    request(apiserver, "POST", path, {"metadata": {"name": "free"}})
    assert request(apiserver, "DELETE", "/api/v1/namespaces/held")[0] == 200
    wait_for(lambda: not exists(apiserver, f"{path}/free"))
    _, held = request(apiserver, "GET", f"{path}/h")
    assert held["metadata"]["deletionTimestamp"]
    time.sleep(0.2)
    _, ns = request(apiserver, "GET", "/api/v1/namespaces/held")
    assert ns["status"]["phase"] == "Terminating"
    request(
        apiserver,
        "PATCH",
        f"{path}/h",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    wait_for(lambda: not exists(apiserver, "/api/v1/namespaces/held"))


# --- owner-reference changes, scopes and restarts (the event-driven index) ------------

CLUSTERROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"


def test_reference_added_later_to_a_missing_owner_is_collected(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, {"metadata": {"name": "late"}})
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g", "uid": "no-such"}}
    code, _ = request(
        apiserver,
        "PATCH",
        f"{CM}/late",
        {"metadata": {"ownerReferences": [owner_ref(ghost)]}},
        "application/merge-patch+json",
    )
    assert code == 200
    wait_for(lambda: not exists(apiserver, f"{CM}/late"))


def test_reference_removed_before_the_owner_goes_keeps_the_dependent(
    apiserver: APIServer,
) -> None:
    owner = make_owner(apiserver)
    kid = make_child(apiserver, "released", owner)
    kept = make_child(apiserver, "kept", owner)
    assert apiserver.gc.dependents_of(owner["metadata"]["uid"]) == sorted(
        [kid["metadata"]["uid"], kept["metadata"]["uid"]]
    )
    request(
        apiserver,
        "PATCH",
        f"{CM}/released",
        {"metadata": {"ownerReferences": None}},
        "application/merge-patch+json",
    )
    assert apiserver.gc.dependents_of(owner["metadata"]["uid"]) == [kept["metadata"]["uid"]]
    request(apiserver, "DELETE", f"{CM}/owner")
    wait_for(lambda: not exists(apiserver, f"{CM}/kept"))
    time.sleep(0.2)
    assert exists(apiserver, f"{CM}/released")
    assert apiserver.gc.dependents_of(owner["metadata"]["uid"]) == []


def test_foreground_owner_goes_once_its_blocker_stops_blocking(apiserver: APIServer) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "blocker", owner, block=True, finalizers=["example.com/hold"])
    request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Foreground")
    wait_for(lambda: request(apiserver, "GET", f"{CM}/blocker")[1]["metadata"].get(
        "deletionTimestamp"
    ))  # fmt: skip
    time.sleep(0.2)
    assert exists(apiserver, f"{CM}/owner")
    # The dependent stays (its finalizer holds it) but no longer blocks.
    request(
        apiserver,
        "PATCH",
        f"{CM}/blocker",
        {"metadata": {"ownerReferences": [owner_ref(owner, block=False)]}},
        "application/merge-patch+json",
    )
    wait_for(lambda: not exists(apiserver, f"{CM}/owner"))
    assert exists(apiserver, f"{CM}/blocker")


def test_cluster_scoped_owner_of_namespaced_dependents(apiserver: APIServer) -> None:
    code, role = request(
        apiserver, "POST", CLUSTERROLES, {"metadata": {"name": "owner-role"}, "rules": []}
    )
    assert code == 201, role
    make_child(apiserver, "of-role", role)
    time.sleep(0.2)
    assert exists(apiserver, f"{CM}/of-role")
    request(apiserver, "DELETE", f"{CLUSTERROLES}/owner-role")
    wait_for(lambda: not exists(apiserver, f"{CM}/of-role"))


def test_owner_in_another_namespace_going_collects_the_dependent(apiserver: APIServer) -> None:
    request(apiserver, "POST", "/api/v1/namespaces", {"metadata": {"name": "elsewhere"}})
    other = "/api/v1/namespaces/elsewhere/configmaps"
    code, owner = request(apiserver, "POST", other, {"metadata": {"name": "far"}})
    assert code == 201
    make_child(apiserver, "near", owner)
    request(apiserver, "DELETE", f"{other}/far")
    wait_for(lambda: not exists(apiserver, f"{CM}/near"))


def test_owner_deleted_while_the_server_is_stopped_is_collected_after_restart(
    apiserver: APIServer,
) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "c1", owner)
    orphan_owner = make_owner(apiserver, "orphaner")
    make_child(apiserver, "c2", orphan_owner)
    apiserver.stop()
    cms = apiserver.registry.get("", "v1", "configmaps")
    assert cms is not None
    apiserver.rest.delete(cms, "default", "owner")
    apiserver.rest.delete(cms, "default", "orphaner", propagation="Orphan")
    time.sleep(0.2)  # nothing collects while stopped
    assert apiserver.storage.get(("", "configmaps"), "default", "c1") is not None
    assert apiserver.storage.get(("", "configmaps"), "default", "orphaner") is not None
    apiserver.start()
    wait_for(lambda: not exists(apiserver, f"{CM}/c1") and not exists(apiserver, f"{CM}/orphaner"))
    _, c2 = request(apiserver, "GET", f"{CM}/c2")
    assert "ownerReferences" not in c2["metadata"]


def test_collector_built_over_existing_objects_indexes_them() -> None:
    from pycontroller.testing.apiserver.registry.gc import GarbageCollector
    from pycontroller.testing.apiserver.registry.kinds_registry import Registry
    from pycontroller.testing.apiserver.registry.rest import REST, WriteOptions
    from pycontroller.testing.apiserver.registry.storage import Storage
    from pycontroller.testing.apiserver.schema.builtin import Defaulter, builtin_types

    rest = REST(Storage(), Registry(builtin_types()), Defaulter())
    cms, nss = rest.registry.get("", "v1", "configmaps"), rest.registry.get("", "v1", "namespaces")
    assert cms is not None and nss is not None
    rest.create(nss, None, {"metadata": {"name": "default"}}, WriteOptions())
    owner = rest.create(cms, "default", {"metadata": {"name": "o"}}, WriteOptions())
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g", "uid": "gone"}}
    for name, o in (("kept", owner), ("dangling", ghost)):
        body = {"metadata": {"name": name, "ownerReferences": [owner_ref(o)]}}
        rest.create(cms, "default", body, WriteOptions())
    gc = GarbageCollector(rest)
    assert gc.sync_once() == 1
    assert rest.storage.get(("", "configmaps"), "default", "dangling") is None
    rest.delete(cms, "default", "o")
    assert gc.sync_once() == 1
    assert rest.storage.get(("", "configmaps"), "default", "kept") is None
    assert gc.sync_once() == 0


def test_a_dry_run_delete_answers_what_a_delete_would_do(apiserver: APIServer) -> None:
    # Store.Delete runs updateForGracefulDeletionAndFinalizers under dry run too:
    # an object that finalizers keep is answered marked as deleting, unstored.
    request(apiserver, "POST", CM, {"metadata": {"name": "f", "finalizers": ["example.com/x"]}})
    code, obj = request(apiserver, "DELETE", f"{CM}/f?dryRun=All")
    assert code == 200
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    _, live = request(apiserver, "GET", f"{CM}/f")
    assert "deletionTimestamp" not in live["metadata"]
    assert live["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_a_background_delete_releases_an_owner_waiting_in_the_foreground(
    apiserver: APIServer,
) -> None:
    # deletionFinalizersForGarbageCollection: a later delete's explicit policy
    # replaces the propagation finalizer; Background removes it, so an owner
    # held only by foregroundDeletion goes at once, its dependents after it.
    owner = make_owner(apiserver)
    make_child(apiserver, "blocker", owner, block=True, finalizers=["example.com/hold"])
    make_child(apiserver, "free", owner)
    request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Foreground")
    wait_for(lambda: not exists(apiserver, f"{CM}/free"))
    assert exists(apiserver, f"{CM}/owner")  # waiting for its blocker
    code, _ = request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Background")
    assert code == 200
    assert not exists(apiserver, f"{CM}/owner")
    # The blocker is still held by its own finalizer, terminating.
    _, blocker = request(apiserver, "GET", f"{CM}/blocker")
    assert blocker["metadata"]["deletionTimestamp"]


def test_a_delete_without_a_policy_keeps_the_propagation_finalizer(apiserver: APIServer) -> None:
    owner = make_owner(apiserver)
    make_child(apiserver, "blocker", owner, block=True, finalizers=["example.com/hold"])
    _, marked = request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Foreground")
    code, again = request(apiserver, "DELETE", f"{CM}/owner")
    assert code == 200
    assert again["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]


def test_a_foreground_delete_turns_a_pending_orphan_into_foreground(apiserver: APIServer) -> None:
    apiserver.gc.stop()  # keep the orphan finalizer in place
    owner = make_owner(apiserver)
    make_child(apiserver, "kid", owner)
    request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Orphan")
    code, obj = request(apiserver, "DELETE", f"{CM}/owner?propagationPolicy=Foreground")
    assert code == 200
    assert obj["metadata"]["finalizers"] == ["foregroundDeletion"]
    apiserver.gc.start()
    wait_for(lambda: not exists(apiserver, f"{CM}/owner") and not exists(apiserver, f"{CM}/kid"))
