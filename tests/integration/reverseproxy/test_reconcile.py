"""The ReverseProxy operator against the embedded API server (real HTTP, real informers)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.reverseproxy import names
from controllers.reverseproxy.nginx import render
from controllers.reverseproxy.reconcile import Reconciler
from controllers.reverseproxy.resources import config_sum
from pycontroller import EventRecorder, Request, Result
from pycontroller.cache import Indexer, Lister, meta_namespace_key_func
from pycontroller.errors import InvalidError, NotFoundError
from pycontroller.testing import APIServer

from .conftest import IMAGE, Cluster, Operator, running, sample, wait_for

RP, TCP = names.REVERSE_PROXY, names.TCP_REVERSE_PROXY
OWN_PLURALS = ("configmaps", "services", "deployments", RP.plural, TCP.plural)


def own_writes(server: APIServer) -> int:
    """Writes of the operator's objects (Events are the recorder's, flushed asynchronously)."""
    return sum(server.writes(plural) for plural in OWN_PLURALS)


def owner_ref(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


@pytest.mark.parametrize("kind", [RP, TCP], ids=["ReverseProxy", "TCPReverseProxy"])
def test_converges_to_the_three_children(
    kind: names.Kind, cluster: Cluster, operator: Operator
) -> None:
    created = cluster.create(sample(kind))
    name = created["metadata"]["name"]
    obj = wait_for(lambda: cluster.converged(kind, name), what="Reconciled=True")
    cond = cluster.condition(kind, name)
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("Success", "")
    assert cond["lastTransitionTime"]
    child = names.child_name(kind, name)
    text = render(obj)
    cm = cluster.configmaps.get(child, namespace="default")
    deploy = cluster.deployments.get(child, namespace="default")
    svc = cluster.services.get(child, namespace="default")
    for c in (cm, deploy, svc):
        assert c["metadata"]["ownerReferences"] == [owner_ref(created)]
        assert c["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "nginx-operator"
    assert cm["data"] == {"nginx.conf": text}
    template = deploy["spec"]["template"]
    assert template["metadata"]["labels"]["nginx-operator/configsum"] == config_sum(text)
    assert template["spec"]["containers"][0]["image"] == IMAGE  # the controller's default
    assert svc["spec"]["ports"][0]["port"] == obj["spec"]["servicePort"]
    # the webhook's defaults were applied in memory only: the stored spec is the user's
    assert "image" not in obj["spec"]
    assert obj["spec"]["replicas"] == 1  # a CRD default
    assert (names.FINALIZER in (obj["metadata"].get("finalizers") or [])) is kind.finalizer
    reasons = [e["reason"] for e in cluster.events_for(name)]
    wait_for(lambda: len([e for e in cluster.events_for(name) if e["reason"] == "Created"]) == 3)
    assert "ReconcileFailed" not in reasons


def test_steady_state_makes_no_writes(server: APIServer, cluster: Cluster) -> None:
    with running(server, resync_period=1.0) as op:
        cluster.create(sample(RP))
        cluster.create(sample(TCP))
        wait_for(lambda: cluster.converged(RP, "whoami") and cluster.converged(TCP, "db"))
        # our own writes' watch events have been reconciled once the next resyncs ran
        start = op.reconciles(RP) + op.reconciles(TCP)
        wait_for(lambda: op.reconciles(RP) + op.reconciles(TCP) >= start + 4, what="resyncs")
        before = own_writes(server)
        # a foreign label on a child and a status-only change also reconcile, and write nothing
        cm = cluster.configmaps.get("ngx-proxy-whoami", namespace="default")
        cm["metadata"]["labels"]["someone-else"] = "x"
        cluster.configmaps.update(cm)
        mid = op.reconciles(RP) + op.reconciles(TCP)
        wait_for(lambda: op.reconciles(RP) + op.reconciles(TCP) >= mid + 10, what="10 reconciles")
        after = own_writes(server)
    assert after - before == 1, [  # the test's own label write
        (r.method, r.path) for r in server.request_log if r.method in ("POST", "PUT", "PATCH")
    ][-10:]
    kept = cluster.configmaps.get("ngx-proxy-whoami", namespace="default")["metadata"]["labels"]
    assert kept["someone-else"] == "x"


def _restored(cluster: Cluster, kind: str, name: str, check: Any) -> None:
    wait_for(lambda: check(cluster.children[kind].get(name, namespace="default")), what=kind)


def test_every_child_self_heals_after_drift_and_deletion(
    cluster: Cluster, operator: Operator
) -> None:
    cluster.create(sample(RP))
    obj = wait_for(lambda: cluster.converged(RP, "whoami"))
    name, text = "ngx-proxy-whoami", render(obj)

    cm = cluster.configmaps.get(name, namespace="default")
    cm["data"] = {"nginx.conf": "events {}\n", "extra": "x"}
    cluster.configmaps.update(cm)
    _restored(cluster, "ConfigMap", name, lambda c: c["data"] == {"nginx.conf": text})

    svc = cluster.services.get(name, namespace="default")
    cluster_ip = svc["spec"].get("clusterIP")
    svc["spec"]["ports"][0]["port"] = 9999
    svc["spec"]["selector"] = {"app": "hijacked"}
    cluster.services.update(svc)
    _restored(
        cluster,
        "Service",
        name,
        lambda s: s["spec"]["ports"][0]["port"] == 80
        and s["spec"]["selector"]["app.kubernetes.io/instance"] == name
        and "app" not in s["spec"]["selector"],
    )
    assert cluster.services.get(name, namespace="default")["spec"].get("clusterIP") == cluster_ip

    deploy = cluster.deployments.get(name, namespace="default")
    deploy["spec"]["replicas"] = 7
    deploy["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"
    deploy["spec"]["template"]["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"
    }
    deploy["metadata"]["labels"]["team"] = "ops"
    cluster.deployments.update(deploy)

    def healed(d: dict[str, Any]) -> bool:
        return bool(
            d["spec"]["replicas"] == 1
            and d["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE
        )

    _restored(cluster, "Deployment", name, healed)
    deploy = cluster.deployments.get(name, namespace="default")
    # what kubectl rollout restart and other actors set is kept
    assert deploy["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"
    }
    assert deploy["metadata"]["labels"]["team"] == "ops"

    for kind, client in cluster.children.items():
        uid = client.get(name, namespace="default")["metadata"]["uid"]
        client.delete(name, namespace="default")
        _restored(cluster, kind, name, lambda c, uid=uid: c["metadata"]["uid"] != uid)
    reasons = {e["reason"] for e in cluster.events_for("whoami")}
    assert {"Created", "Updated"} <= reasons


def test_a_spec_change_rolls_the_config(cluster: Cluster, operator: Operator) -> None:
    cluster.create(sample(RP))
    wait_for(lambda: cluster.converged(RP, "whoami"))
    name = "ngx-proxy-whoami"
    before = cluster.deployments.get(name, namespace="default")["spec"]["template"]
    cluster.modify(RP, "whoami", lambda o: o["spec"]["proxySetHeader"].update({"x-new": "1"}))
    obj = wait_for(lambda: cluster.converged(RP, "whoami"))
    assert obj["metadata"]["generation"] == 2
    text = render(obj)
    assert "proxy_set_header x-new 1;" in text
    wait_for(
        lambda: cluster.configmaps.get(name, namespace="default")["data"]["nginx.conf"] == text
    )
    after = cluster.deployments.get(name, namespace="default")["spec"]["template"]
    key = names.LABEL_CONFIGSUM
    assert before["metadata"]["labels"][key] != after["metadata"]["labels"][key]
    assert after["metadata"]["labels"][key] == config_sum(text)


def test_tcp_finalizer_deletes_only_its_own_children(cluster: Cluster, operator: Operator) -> None:
    # A foreign ConfigMap holds the name the second proxy's ConfigMap would take.
    cluster.configmaps.create(
        {"metadata": {"name": "ngx-tcpproxy-other", "namespace": "default"}, "data": {"k": "v"}},
        namespace="default",
    )
    cluster.create(sample(TCP))
    cluster.create(sample(TCP, "other"))
    wait_for(lambda: cluster.converged(TCP, "db"))
    cond = wait_for(lambda: (c := cluster.condition(TCP, "other")) and c["status"] == "False" and c)
    assert cond["reason"] == "ChildConflict"
    assert "ConfigMap ngx-tcpproxy-other exists and is not controlled by" in cond["message"]
    assert cluster.configmaps.get("ngx-tcpproxy-other", namespace="default")["data"] == {"k": "v"}
    wait_for(lambda: any(e["reason"] == "ChildConflict" for e in cluster.events_for("other")))

    for name in ("db", "other"):
        cluster.client(TCP).delete(name, namespace="default")
        wait_for(lambda name=name: _gone(cluster, TCP, name), what=f"{name} deleted")
    for client in cluster.children.values():
        with pytest.raises(NotFoundError):
            client.get("ngx-tcpproxy-db", namespace="default")
    # never ours, never deleted
    assert cluster.configmaps.get("ngx-tcpproxy-other", namespace="default")["data"] == {"k": "v"}


def test_removing_the_finalizer_from_a_stale_cache_is_no_error(server: APIServer) -> None:
    # The cache still shows a deleted object as terminating with our finalizer
    # (its DELETED event not seen yet): the reconcile removes the finalizer
    # again. On kube that PUT carries the uid of an object that no longer
    # exists: a 409 (UID precondition), not a 404. The operator looks again
    # with fresh state (a requeue) instead of failing the reconcile.
    cluster = Cluster(server)
    obj = sample(TCP)
    obj["metadata"]["finalizers"] = [names.FINALIZER]
    cluster.create(obj)
    client = cluster.client(TCP)
    client.delete("db", namespace="default")
    stale = client.get("db", namespace="default")
    assert stale["metadata"]["deletionTimestamp"]
    gone = copy.deepcopy(stale)
    gone["metadata"]["finalizers"] = []
    client.update(gone)  # the first removal: the object is gone now
    assert _gone(cluster, TCP, "db")

    cached = Indexer(meta_namespace_key_func)
    cached.add(stale)
    empty = Lister(Indexer(meta_namespace_key_func))
    reconciler = Reconciler(
        TCP,
        lister=Lister(cached),
        client=client,
        children={kind: (empty, c) for kind, c in cluster.children.items()},
        recorder=EventRecorder(server.api_client(), "test"),
    )
    assert reconciler.reconcile(Request("default", "db")) == Result(requeue=True)


def _gone(cluster: Cluster, kind: names.Kind, name: str) -> bool:
    try:
        cluster.get(kind, name)
    except NotFoundError:
        return True
    return False


def test_reverseproxy_children_go_with_it_by_garbage_collection(
    cluster: Cluster, operator: Operator
) -> None:
    cluster.create(sample(RP))
    obj = wait_for(lambda: cluster.converged(RP, "whoami"))
    assert not obj["metadata"].get("finalizers")  # as the original: GC does it
    cluster.client(RP).delete("whoami", namespace="default")

    def children_gone() -> bool:
        for client in cluster.children.values():
            try:
                client.get("ngx-proxy-whoami", namespace="default")
                return False
            except NotFoundError:
                pass
        return True

    wait_for(children_gone, what="GC of the children")


def test_status_write_survives_conflicts(server: APIServer, cluster: Cluster) -> None:
    server.fail_next(409, times=3, method="PUT", path_regex=r"/reverseproxies/whoami/status")
    with running(server):
        cluster.create(sample(RP))
        wait_for(lambda: cluster.converged(RP, "whoami"), what="status despite 409s")
    statuses = [r for r in server.request_log if r.path.split("?")[0].endswith("whoami/status")]
    assert [r.status for r in statuses][:4] == [409, 409, 409, 200]


# --- invalid specs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        (RP, "proxySetHeader", {"x-a; return 200 x": "v"}),
        (RP, "proxyPass", "http://x; return 200"),
        (RP, "rewrite", [{"regex": "^/", "replacement": "/b last; return 418"}]),
        (TCP, "servers", [{"server": "127.0.0.1:5432; server 10.9.9.9:1"}]),
        (TCP, "protocol", "udp"),
    ],
)
def test_the_crd_refuses_injections_at_admission(
    kind: names.Kind, field: str, value: Any, cluster: Cluster
) -> None:
    obj = sample(kind, "bad")
    obj["spec"][field] = value
    with pytest.raises(InvalidError):
        cluster.create(obj)


def test_the_crd_refuses_names_too_long_for_the_children(cluster: Cluster) -> None:
    with pytest.raises(InvalidError, match="53"):
        cluster.create(sample(RP, "n" * 54))


INVALID = [
    (RP, "proxySetHeader", {"x-a": "v\nreturn 200"}, "spec.proxySetHeader[x-a]"),
    (RP, "rewrite", [{"regex": "^/", "replacement": "/b last; return 418"}], "spec.rewrite[0]"),
    (RP, "proxyReadTimeout", 15, "spec.proxyReadTimeout"),
    (TCP, "servers", [{"server": "127.0.0.1:5432; server 10.9.9.9:1"}], "spec.servers[0]"),
    (TCP, "servers", "db:5432", "spec.servers"),
]


@pytest.mark.parametrize(("kind", "field", "value", "named"), INVALID)
def test_invalid_specs_are_a_condition_and_one_event(
    kind: names.Kind,
    field: str,
    value: Any,
    named: str,
    permissive_server: APIServer,
) -> None:
    """An API server that enforces nothing: the operator refuses the spec itself."""
    cluster = Cluster(permissive_server)
    with running(permissive_server, resync_period=1.0) as op:
        errors = op.reconciles(kind, "error")  # process-wide counter: this test's delta
        obj = sample(kind, "bad")
        obj["spec"][field] = value
        cluster.create(obj)
        cond = wait_for(lambda: cluster.condition(kind, "bad"), what="a condition")
        assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
        assert named in cond["message"]
        warnings = lambda: [  # noqa: E731
            e for e in cluster.events_for("bad") if e["type"] == "Warning"
        ]
        wait_for(lambda: warnings(), what="a Warning event")
        start = op.reconciles(kind)
        wait_for(lambda: op.reconciles(kind) >= start + 3, what="resyncs of the bad spec")
        (event,) = warnings()
        assert event["reason"] == "InvalidSpec" and named in event["message"]
        assert event.get("count", 1) == 1
        assert op.reconciles(kind, "error") == errors  # never a crash loop
        child = names.child_name(kind, "bad")
        for client in cluster.children.values():
            with pytest.raises(NotFoundError):
                client.get(child, namespace="default")
        # fixing the spec converges
        good = sample(kind, "bad")["spec"]
        cluster.modify(kind, "bad", lambda o: o.update(spec=good))
        wait_for(lambda: cluster.converged(kind, "bad"), what="convergence after the fix")
