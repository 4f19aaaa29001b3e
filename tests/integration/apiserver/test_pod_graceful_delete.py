"""Graceful deletion of Pods as kube-apiserver 1.32 does it, over HTTP.

kube's pod strategy (``CheckGracefulDelete``) gives a deleted Pod a grace
period: ``DeleteOptions.gracePeriodSeconds``, else its
``spec.terminationGracePeriodSeconds`` (defaulted to 30), but 0 when it is not
scheduled (``spec.nodeName`` empty) or already Succeeded/Failed; a negative
one is 1. ``rest.BeforeDelete`` and the generic store then:

- grace > 0: set ``deletionTimestamp`` (now + grace, seconds) and
  ``deletionGracePeriodSeconds``, answer 200 with the Pod, which stays
  (Terminating) until its kubelet deletes it with grace 0;
- grace 0 (unscheduled, terminal, or ``--force --grace-period=0``): the same
  update (a MODIFIED event with ``deletionGracePeriodSeconds: 0``), then the
  removal (DELETED), unless finalizers hold it;
- a later DELETE may shorten the grace period (the timestamp moves back by
  the difference), never lengthen it: a longer or absent one changes nothing.

Without the kubelet simulation (as on envtest) a scheduled Pod stays
Terminating; with it, the simulated kubelet deletes it with grace 0 at once.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.http import request
from support.kubectl import KUBECTL, Kubectl

from pycontroller.testing import APIServer, wait_for

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"


def pod(name: str, node: str | None = "node-1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def create(server: APIServer, body: dict[str, Any], ns: str = NS) -> dict[str, Any]:
    code, obj = request(server, "POST", f"/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, obj
    return dict(obj)


def get(server: APIServer, name: str, ns: str = NS) -> dict[str, Any] | None:
    code, obj = request(server, "GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    return dict(obj) if code == 200 else None


def delete(server: APIServer, name: str, body: Any = None, query: str = "") -> tuple[int, Any]:
    return request(server, "DELETE", f"{PODS}/{name}{query}", body)


def events(server: APIServer, since: int, path: str = PODS) -> list[tuple[str, dict[str, Any]]]:
    url = f"{server.url}{path}?watch=1&resourceVersion={since}&timeoutSeconds=1"
    with urllib.request.urlopen(url, timeout=10) as resp:
        lines = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    return [(e["type"], e["object"]) for e in lines]


def ts(value: str) -> float:
    return time.mktime(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


# --- the apiserver alone (envtest-like) ---------------------------------------------------


def test_a_scheduled_pod_is_marked_terminating_with_the_default_30s(server: APIServer) -> None:
    created = create(server, pod("p"))
    rv = server.resource_version
    before = time.time()
    code, out = delete(server, "p")
    assert code == 200, out
    assert out["kind"] == "Pod" and out["metadata"]["name"] == "p"
    meta = out["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    assert int(before) + 30 <= ts(meta["deletionTimestamp"]) <= time.time() + 30
    assert int(meta["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    # It stays, Terminating: nothing deletes it without a kubelet.
    time.sleep(0.1)
    stored = get(server, "p")
    assert stored is not None and stored["metadata"] == meta
    assert [t for t, _ in events(server, rv)] == ["MODIFIED"]


def test_the_grace_period_comes_from_the_options_else_the_spec(server: APIServer) -> None:
    create(server, pod("spec", terminationGracePeriodSeconds=7))
    assert delete(server, "spec")[1]["metadata"]["deletionGracePeriodSeconds"] == 7
    create(server, pod("body", terminationGracePeriodSeconds=7))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 12}
    assert delete(server, "body", body)[1]["metadata"]["deletionGracePeriodSeconds"] == 12
    create(server, pod("query"))
    out = delete(server, "query", query="?gracePeriodSeconds=3")[1]
    assert out["metadata"]["deletionGracePeriodSeconds"] == 3
    # A negative grace period is 1 second.
    create(server, pod("negative"))
    out = delete(server, "negative", {"gracePeriodSeconds": -5})[1]
    assert out["metadata"]["deletionGracePeriodSeconds"] == 1


def test_an_unscheduled_pod_goes_at_once_after_a_modified_event(server: APIServer) -> None:
    create(server, pod("p", node=None))
    rv = server.resource_version
    code, out = delete(server, "p")
    assert code == 200
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    assert "deletionTimestamp" in out["metadata"]
    assert get(server, "p") is None
    evs = events(server, rv)
    assert [t for t, _ in evs] == ["MODIFIED", "DELETED"]
    modified, deleted = evs[0][1], evs[1][1]
    assert modified["metadata"]["deletionGracePeriodSeconds"] == 0
    # The DELETED event carries the last stored state, at a new resourceVersion.
    assert {k: v for k, v in deleted["metadata"].items() if k != "resourceVersion"} == {
        k: v for k, v in modified["metadata"].items() if k != "resourceVersion"
    }
    assert int(deleted["metadata"]["resourceVersion"]) > int(
        modified["metadata"]["resourceVersion"]
    )
    assert out["metadata"] == deleted["metadata"]


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_terminated_pod_goes_at_once(server: APIServer, phase: str) -> None:
    obj = create(server, pod("p"))
    obj["status"] = {"phase": phase}
    assert request(server, "PUT", f"{PODS}/p/status", obj)[0] == 200
    code, out = delete(server, "p")
    assert code == 200 and out["metadata"]["deletionGracePeriodSeconds"] == 0
    assert get(server, "p") is None


def test_force_deletion_with_grace_period_zero(server: APIServer) -> None:
    # kubectl delete --force --grace-period=0
    create(server, pod("p"))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
    assert delete(server, "p", body)[0] == 200
    assert get(server, "p") is None
    # Also of a pod already terminating: its grace period is shortened to 0.
    create(server, pod("q"))
    assert delete(server, "q")[1]["metadata"]["deletionGracePeriodSeconds"] == 30
    code, out = delete(server, "q", query="?gracePeriodSeconds=0")
    assert code == 200 and out["metadata"]["deletionGracePeriodSeconds"] == 0
    assert get(server, "q") is None


def test_a_second_delete_may_shorten_the_grace_period_never_lengthen_it(
    server: APIServer,
) -> None:
    create(server, pod("p"))
    first = delete(server, "p")[1]["metadata"]
    dt = ts(first["deletionTimestamp"])
    # Longer, equal or no grace period: nothing changes (no write).
    for body in ({"gracePeriodSeconds": 60}, {"gracePeriodSeconds": 30}, None):
        code, out = delete(server, "p", body)
        assert code == 200 and out["metadata"] == first
    # Shorter: the deletion moves earlier by the difference.
    code, out = delete(server, "p", {"gracePeriodSeconds": 10})
    meta = out["metadata"]
    assert code == 200 and meta["deletionGracePeriodSeconds"] == 10
    assert ts(meta["deletionTimestamp"]) == dt - 20
    assert int(meta["resourceVersion"]) > int(first["resourceVersion"])
    assert get(server, "p") is not None


def test_writes_to_a_terminating_pod_keep_it(server: APIServer) -> None:
    """A status write (the kubelet's) or removing the last finalizer of a pod
    in its grace period does not delete it: only a grace-0 deletion does."""
    body = pod("p")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    create(server, body)
    obj = delete(server, "p")[1]
    obj["status"] = {"phase": "Running"}
    code, obj = request(server, "PUT", f"{PODS}/p/status", obj)
    assert code == 200, obj
    obj["metadata"]["finalizers"] = []
    code, obj = request(server, "PUT", f"{PODS}/p", obj)
    assert code == 200, obj
    stored = get(server, "p")
    assert stored is not None and "finalizers" not in stored["metadata"]
    assert stored["metadata"]["deletionGracePeriodSeconds"] == 30
    # The kubelet's final delete removes it.
    assert delete(server, "p", {"gracePeriodSeconds": 0})[0] == 200
    assert get(server, "p") is None


def test_finalizers_hold_a_pod_deleted_with_grace_zero(server: APIServer) -> None:
    body = pod("p")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    create(server, body)
    code, out = delete(server, "p", {"gracePeriodSeconds": 0})
    assert code == 200 and out["metadata"]["deletionGracePeriodSeconds"] == 0
    stored = get(server, "p")
    assert stored is not None
    stored["metadata"]["finalizers"] = []
    assert request(server, "PUT", f"{PODS}/p", stored)[0] == 200
    assert get(server, "p") is None


def test_dry_run_answers_the_terminating_pod_and_changes_nothing(server: APIServer) -> None:
    created = create(server, pod("p"))
    code, out = delete(server, "p", query="?dryRun=All")
    assert code == 200
    assert out["metadata"]["deletionGracePeriodSeconds"] == 30
    assert get(server, "p") == created


def test_delete_collection_gives_each_pod_its_grace_period(server: APIServer) -> None:
    create(server, pod("scheduled"))
    create(server, pod("pending", node=None))
    code, out = request(server, "DELETE", PODS)
    assert code == 200
    # Store.DeleteCollection answers the pods as it listed them, before their deletion.
    assert sorted(i["metadata"]["name"] for i in out["items"]) == ["pending", "scheduled"]
    assert not any("deletionTimestamp" in i["metadata"] for i in out["items"])
    assert get(server, "pending") is None
    stored = get(server, "scheduled")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 30


def test_eviction_passes_its_grace_period_to_the_delete(server: APIServer) -> None:
    def evict(name: str, **options: Any) -> int:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": NS},
        }
        if options:
            body["deleteOptions"] = options
        return request(server, "POST", f"{PODS}/{name}/eviction", body)[0]

    create(server, pod("default"))
    assert evict("default") == 201
    stored = get(server, "default")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 30
    create(server, pod("short"))
    assert evict("short", gracePeriodSeconds=5) == 201
    stored = get(server, "short")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 5
    create(server, pod("now"))
    assert evict("now", gracePeriodSeconds=0) == 201
    assert get(server, "now") is None


def test_garbage_collection_gives_dependent_pods_their_grace_period(server: APIServer) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}
    _, owner = request(server, "POST", f"/api/v1/namespaces/{NS}/configmaps", cm)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}  # fmt: skip
    for name, node in (("scheduled", "node-1"), ("pending", None)):
        body = pod(name, node=node)
        body["metadata"]["ownerReferences"] = [ref]
        create(server, body)
    assert request(server, "DELETE", f"/api/v1/namespaces/{NS}/configmaps/owner")[0] == 200
    wait_for(lambda: get(server, "pending") is None, what="the unscheduled dependent gone")
    stored = wait_for(
        lambda: (p := get(server, "scheduled")) and p["metadata"].get("deletionTimestamp") and p,
        what="the scheduled dependent terminating",
    )
    assert stored["metadata"]["deletionGracePeriodSeconds"] == 30


def test_a_namespace_waits_for_its_terminating_pods(server: APIServer) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    assert request(server, "POST", "/api/v1/namespaces", ns)[0] == 201
    create(server, pod("scheduled"), ns="team")
    create(server, pod("pending", node=None), ns="team")
    assert request(server, "DELETE", "/api/v1/namespaces/team")[0] == 200

    def remaining() -> dict[str, Any] | None:
        code, obj = request(server, "GET", "/api/v1/namespaces/team")
        conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        c = conds.get("NamespaceContentRemaining")
        return obj if c and c["status"] == "True" else None

    obj = wait_for(remaining, what="the namespace reporting its remaining pod")
    assert obj["status"]["phase"] == "Terminating"
    assert get(server, "pending", ns="team") is None
    stored = get(server, "scheduled", ns="team")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 30
    # Once the pod is gone (what its kubelet would do), the namespace goes.
    path = "/api/v1/namespaces/team/pods/scheduled"
    assert request(server, "DELETE", path, {"gracePeriodSeconds": 0})[0] == 200
    wait_for(
        lambda: request(server, "GET", "/api/v1/namespaces/team")[0] == 404,
        what="the namespace gone",
    )


# --- with the simulated kubelet --------------------------------------------------------


def test_the_simulated_kubelet_finishes_the_graceful_deletion() -> None:
    with APIServer(simulate=["kubelet"]) as server:
        create(server, pod("p", node=None))
        wait_for(
            lambda: (p := get(server, "p")) and p["status"].get("phase") == "Running",
            what="the pod running on node-1",
        )
        rv = server.resource_version
        code, out = delete(server, "p")
        assert code == 200 and out["metadata"]["deletionGracePeriodSeconds"] == 30
        started = time.monotonic()
        wait_for(lambda: get(server, "p") is None, what="the kubelet deleting the pod")
        assert time.monotonic() - started < 5  # not the 30 s grace period
        evs = events(server, rv)
        assert [t for t, _ in evs] == ["MODIFIED", "MODIFIED", "DELETED"]
        # The kubelet's delete: grace 0, the timestamp moved back by 30 s.
        final = evs[1][1]["metadata"]
        assert final["deletionGracePeriodSeconds"] == 0
        assert ts(final["deletionTimestamp"]) == ts(out["metadata"]["deletionTimestamp"]) - 30


def test_the_simulated_kubelet_leaves_pods_of_other_nodes() -> None:
    with APIServer(simulate=["kubelet"]) as server:
        create(server, pod("elsewhere", node="node-2"))
        assert delete(server, "elsewhere")[0] == 200
        time.sleep(0.2)
        stored = get(server, "elsewhere")
        assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 30


def test_the_replicaset_controller_replaces_a_terminating_pod_at_once() -> None:
    """``controller.FilterActivePods``: a terminating pod is not active, so
    the ReplicaSet creates its replacement without waiting for it to go, and
    ``status.replicas`` does not count it."""
    with APIServer(simulate=["deployments"]) as server:
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "nodeName": "node-1",
                        "containers": [{"name": "c", "image": "nginx"}],
                    },
                },
            },
        }
        assert request(server, "POST", f"/apis/apps/v1/namespaces/{NS}/replicasets", rs)[0] == 201

        def listed(n: int) -> list[dict[str, Any]]:
            items: list[dict[str, Any]] = request(server, "GET", PODS)[1]["items"]
            return items if len(items) == n else []

        pods = wait_for(lambda: listed(2), what="two pods")
        # Their template binds them to node-1 (no kubelet here: a deleted one
        # stays Terminating).
        victim = pods[0]["metadata"]["name"]
        assert delete(server, victim)[1]["metadata"]["deletionGracePeriodSeconds"] == 30

        items = wait_for(lambda: listed(3), what="a replacement for the terminating pod")
        assert sum(1 for p in items if p["metadata"].get("deletionTimestamp")) == 1

        def status() -> dict[str, Any] | None:
            obj = request(server, "GET", f"/apis/apps/v1/namespaces/{NS}/replicasets/web")[1]
            return obj["status"] if obj["status"].get("replicas") == 2 else None

        assert wait_for(status, what="the ReplicaSet status")["replicas"] == 2
        time.sleep(0.2)
        assert len(request(server, "GET", PODS)[1]["items"]) == 3


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_delete_pod_waits_for_the_kubelet(tmp_path: Path) -> None:
    with APIServer(simulate=["kubelet"]) as server:
        kubectl = Kubectl(server, tmp_path)
        create(server, pod("p", node=None))
        wait_for(lambda: (p := get(server, "p")) and p["status"].get("phase") == "Running")
        done = kubectl("delete", "pod", "p", "--timeout=20s")
        assert 'pod "p" deleted' in done.stdout
        assert get(server, "p") is None


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_force_delete_without_a_kubelet(tmp_path: Path) -> None:
    with APIServer() as server:
        kubectl = Kubectl(server, tmp_path)
        create(server, pod("p"))
        done = kubectl("delete", "pod", "p", "--force", "--grace-period=0", "--timeout=20s")
        assert 'pod "p" force deleted' in done.stdout
        assert get(server, "p") is None


def test_shortening_the_grace_period_applies_the_new_propagation_policy(
    server: APIServer,
) -> None:
    # Only a delete that shortens the grace period updates the object, and
    # then its policy replaces the pending propagation finalizer
    # (deletionFinalizersForGarbageCollection); one that does not changes nothing.
    server.gc.stop()  # the collector would drop foregroundDeletion (no dependents) at once
    create(server, pod("p"))
    code, marked = delete(server, "p", query="?propagationPolicy=Foreground")
    assert code == 200, marked
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    code, same = delete(server, "p", query="?propagationPolicy=Background")
    assert code == 200
    assert same["metadata"]["finalizers"] == ["foregroundDeletion"]
    code, shorter = delete(server, "p", query="?propagationPolicy=Background&gracePeriodSeconds=5")
    assert code == 200, shorter
    assert "finalizers" not in shorter["metadata"]
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
