"""The Balancer controller against the embedded API server (real HTTP, real informers)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client import REGISTRY

from controllers.balancer import names, nginx, resources
from controllers.balancer.compat import BalancerController
from pycontroller.errors import InvalidError, NotFoundError
from pycontroller.testing import APIServer

from .conftest import Cluster, running_controller, sample_balancer, wait_for

BACKENDS = ("v1", "v2", "v3")
LABEL = names.LABEL_BALANCER_NAME


def owner_ref(balancer: dict[str, Any]) -> dict[str, Any]:
    meta = balancer["metadata"]
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def backend_service_names(name: str, backends: tuple[str, ...] | list[str]) -> set[str]:
    return {names.backend_service_name(name, b) for b in backends}


def labelled_services(cluster: Cluster, name: str, namespace: str) -> set[str]:
    items = cluster.services.list(namespace=namespace, labelSelector=f"{LABEL}={name}")["items"]
    return {s["metadata"]["name"] for s in items}


def test_sample_converges_to_exactly_the_specified_children(
    cluster: Cluster, controller: BalancerController
) -> None:
    created = cluster.create_balancer(sample_balancer())
    b = wait_for(lambda: cluster.converged("balancer-sample"), what="Reconciled=True")
    ref = owner_ref(created)

    status = b["status"]
    assert status["activeBackendsNum"] == 3
    assert status["obsoleteBackendsNum"] == 0
    assert status["observedGeneration"] == b["metadata"]["generation"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Reconciled"]["status"] == "True"
    assert conditions["Reconciled"]["reason"] == "Synced"
    assert conditions["Reconciled"]["lastTransitionTime"]
    # the embedded server runs no deployment controller: nginx never becomes available
    assert conditions["Available"]["status"] == "False"

    # backend Services: N-<b>-backend, labelled, selector merged, targetPort kept
    for backend, weight in zip(BACKENDS, (40, 20, 40), strict=True):
        svc = cluster.services.get(f"balancer-sample-{backend}-backend", namespace="default")
        assert svc["metadata"]["labels"] == {LABEL: "balancer-sample"}
        assert svc["metadata"]["ownerReferences"] == [ref]
        assert svc["spec"]["type"] == "ClusterIP"
        assert svc["spec"]["selector"] == {"app": "test", "version": backend}
        assert [
            (p["name"], p["protocol"], p["port"], p["targetPort"]) for p in svc["spec"]["ports"]
        ] == [("http", "TCP", 80, 5678)]
        assert f"server balancer-sample-{backend}-backend:80 weight={weight};" in nginx.render(b)
    assert labelled_services(cluster, "balancer-sample", "default") == backend_service_names(
        "balancer-sample", BACKENDS
    )

    # ConfigMap holds exactly the rendered nginx.conf
    cm = cluster.configmaps.get("balancer-sample-proxy-configmap", namespace="default")
    assert cm["data"] == {"nginx.conf": nginx.render(b)}
    assert cm["metadata"]["ownerReferences"] == [ref]

    # Deployment N-proxy, template annotated with the config hash
    dep = cluster.deployments.get("balancer-sample-proxy", namespace="default")
    assert dep["metadata"]["ownerReferences"] == [ref]
    assert dep["spec"]["selector"]["matchLabels"] == {LABEL: "balancer-sample"}
    template = dep["spec"]["template"]
    assert template["metadata"]["labels"][LABEL] == "balancer-sample"
    assert template["metadata"]["annotations"][names.ANNOTATION_CONFIGMAP_HASH] == (
        resources.config_hash(nginx.render(b))
    )
    [container] = template["spec"]["containers"]
    assert container["image"] == names.DEFAULT_NGINX_IMAGE

    # front Service N: unlabelled, selects the nginx pods
    front = cluster.services.get("balancer-sample", namespace="default")
    assert not front["metadata"].get("labels")
    assert front["metadata"]["ownerReferences"] == [ref]
    assert front["spec"]["selector"] == {LABEL: "balancer-sample"}
    assert [(p["name"], p["port"]) for p in front["spec"]["ports"]] == [("http", 80)]

    # every child matches what the pure functions produce for the live Balancer
    for child in resources.desired_children(b):
        client = {
            "Service": cluster.services,
            "ConfigMap": cluster.configmaps,
            "Deployment": cluster.deployments,
        }[child["kind"]]
        live = client.get(child["metadata"]["name"], namespace="default")
        from controllers.balancer.diff import needs_update

        assert not needs_update(child, live), child["metadata"]["name"]

    normal = [e for e in cluster.events_for("balancer-sample", "default") if e["type"] == "Normal"]
    assert {e["reason"] for e in normal} >= {"Created"}


def test_children_are_created_in_dependency_order(server: APIServer, cluster: Cluster) -> None:
    with running_controller(server):
        cluster.create_balancer(sample_balancer())
        wait_for(lambda: cluster.converged("balancer-sample"), what="Reconciled=True")
    creates = [
        r.path.split("?")[0].rsplit("/", 1)[-1]
        for r in server.request_log
        if r.method == "POST"
        and r.status < 300
        and any(f"/{kind}" in r.path for kind in ("services", "configmaps", "deployments"))
    ]
    assert creates == ["services", "services", "services", "configmaps", "deployments", "services"]


def test_backend_removed_and_added(cluster: Cluster, controller: BalancerController) -> None:
    cluster.create_balancer(sample_balancer())
    wait_for(lambda: cluster.converged("balancer-sample"), what="first convergence")
    cm_name, dep_name = "balancer-sample-proxy-configmap", "balancer-sample-proxy"
    conf_before = cluster.configmaps.get(cm_name, namespace="default")["data"]["nginx.conf"]
    hash_before = cluster.deployments.get(dep_name, namespace="default")["spec"]["template"][
        "metadata"
    ]["annotations"][names.ANNOTATION_CONFIGMAP_HASH]

    def swap(obj: dict[str, Any]) -> None:
        obj["spec"]["backends"] = [b for b in obj["spec"]["backends"] if b["name"] != "v3"] + [
            {"name": "v4", "weight": 5, "selector": {"version": "v4"}}
        ]

    cluster.modify_balancer("balancer-sample", "default", swap)
    b = wait_for(lambda: cluster.converged("balancer-sample"), what="second convergence")
    assert b["status"]["activeBackendsNum"] == 3
    assert b["status"]["obsoleteBackendsNum"] == 0
    assert labelled_services(cluster, "balancer-sample", "default") == backend_service_names(
        "balancer-sample", ["v1", "v2", "v4"]
    )
    with pytest.raises(NotFoundError):
        cluster.services.get("balancer-sample-v3-backend", namespace="default")

    conf = cluster.configmaps.get(cm_name, namespace="default")["data"]["nginx.conf"]
    assert conf != conf_before
    assert conf == nginx.render(b)
    assert "balancer-sample-v4-backend:80 weight=5;" in conf
    assert "v3-backend" not in conf
    hash_after = cluster.deployments.get(dep_name, namespace="default")["spec"]["template"][
        "metadata"
    ]["annotations"][names.ANNOTATION_CONFIGMAP_HASH]
    assert hash_after != hash_before
    assert hash_after == resources.config_hash(conf)
    reasons = {e["reason"] for e in cluster.events_for("balancer-sample", "default")}
    assert {"Created", "Updated", "Deleted"} <= reasons


def _reconciles() -> float:
    value = REGISTRY.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "balancer", "result": "success"}
    )
    return value or 0.0


def test_steady_state_writes_nothing(server: APIServer, cluster: Cluster) -> None:
    with running_controller(server, resync_period=1.0):
        cluster.create_balancer(sample_balancer())
        wait_for(lambda: cluster.converged("balancer-sample"), what="convergence")
        # let the watch events of our own writes settle
        time.sleep(1.0)
        before = server.writes()
        reconciles_before = _reconciles()
        time.sleep(5.0)
        after = server.writes()
        reconciles = _reconciles() - reconciles_before
    # The resync really ran: ~one reconcile per second in the window, none wrote.
    assert reconciles >= 3, reconciles
    assert after - before == 0, [
        (r.method, r.path) for r in server.request_log if r.method in ("POST", "PUT", "PATCH")
    ][-10:]


def test_self_heal(cluster: Cluster, controller: BalancerController) -> None:
    cluster.create_balancer(sample_balancer())
    b = wait_for(lambda: cluster.converged("balancer-sample"), what="convergence")
    ns = "default"

    # a deleted backend Service comes back
    old = cluster.services.get("balancer-sample-v2-backend", namespace=ns)
    cluster.services.delete("balancer-sample-v2-backend", namespace=ns)
    wait_for(
        lambda: cluster.services.get("balancer-sample-v2-backend", namespace=ns)["metadata"]["uid"]
        != old["metadata"]["uid"],
        what="backend Service recreated",
    )

    # an edited ConfigMap is restored
    cm = cluster.configmaps.get("balancer-sample-proxy-configmap", namespace=ns)
    cm["data"] = {"nginx.conf": "events {}\n", "extra": "x"}
    cluster.configmaps.update(cm)
    wait_for(
        lambda: cluster.configmaps.get("balancer-sample-proxy-configmap", namespace=ns)["data"]
        == {"nginx.conf": nginx.render(b)},
        what="ConfigMap restored",
    )

    # an edited backend selector is restored, a foreign label kept
    svc = cluster.services.get("balancer-sample-v1-backend", namespace=ns)
    svc["spec"]["selector"] = {"app": "hijacked"}
    svc["metadata"]["labels"]["team"] = "keep-me"
    cluster.services.update(svc)
    healed = wait_for(
        lambda: (s := cluster.services.get("balancer-sample-v1-backend", namespace=ns))["spec"][
            "selector"
        ]
        == {"app": "test", "version": "v1"}
        and s,
        what="selector restored",
    )
    assert healed["metadata"]["labels"]["team"] == "keep-me"

    # a deleted Deployment comes back
    old_dep = cluster.deployments.get("balancer-sample-proxy", namespace=ns)
    cluster.deployments.delete("balancer-sample-proxy", namespace=ns)
    wait_for(
        lambda: cluster.deployments.get("balancer-sample-proxy", namespace=ns)["metadata"]["uid"]
        != old_dep["metadata"]["uid"],
        what="Deployment recreated",
    )


def test_same_name_in_two_namespaces_are_independent(
    cluster: Cluster, controller: BalancerController
) -> None:
    a = cluster.create_balancer(sample_balancer(namespace="team-a"))
    b = cluster.create_balancer(sample_balancer(namespace="team-b"))
    wait_for(lambda: cluster.converged("balancer-sample", "team-a"), what="team-a")
    wait_for(lambda: cluster.converged("balancer-sample", "team-b"), what="team-b")
    b_services = {
        s["metadata"]["name"]: s["metadata"]["uid"]
        for s in cluster.services.list(namespace="team-b")["items"]
    }

    cluster.modify_balancer(
        "balancer-sample",
        "team-a",
        lambda o: o["spec"].update(backends=[{"name": "v1", "weight": 1}]),
    )
    wait_for(lambda: cluster.converged("balancer-sample", "team-a"), what="team-a again")
    assert labelled_services(cluster, "balancer-sample", "team-a") == backend_service_names(
        "balancer-sample", ["v1"]
    )
    # team-b untouched: same objects (uids), still three backends, its own owner
    after = {
        s["metadata"]["name"]: s["metadata"]["uid"]
        for s in cluster.services.list(namespace="team-b")["items"]
    }
    assert after == b_services
    status_b = cluster.balancer("balancer-sample", "team-b")["status"]
    assert (status_b["activeBackendsNum"], status_b["obsoleteBackendsNum"]) == (3, 0)
    for svc in cluster.services.list(namespace="team-b")["items"]:
        assert svc["metadata"]["ownerReferences"][0]["uid"] == b["metadata"]["uid"]
    assert a["metadata"]["uid"] != b["metadata"]["uid"]


def test_deleted_balancer_children_are_garbage_collected(
    cluster: Cluster, controller: BalancerController
) -> None:
    cluster.create_balancer(sample_balancer())
    wait_for(lambda: cluster.converged("balancer-sample"), what="convergence")
    cluster.balancers.delete("balancer-sample", namespace="default")

    def gone() -> bool:
        svcs = [
            s
            for s in cluster.services.list(namespace="default")["items"]
            if s["metadata"]["name"].startswith("balancer-sample")
        ]
        cms = [
            c
            for c in cluster.configmaps.list(namespace="default")["items"]
            if c["metadata"]["name"].startswith("balancer-sample")
        ]
        deps = cluster.deployments.list(namespace="default")["items"]
        return not svcs and not cms and not deps

    wait_for(gone, what="children garbage-collected")


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s["backends"][0].update(weight=0), "spec.backends[0].weight"),
        (lambda s: s["ports"][0].update(port=70000), "spec.ports[0].port"),
        (lambda s: s["ports"][0].update(protocol="SCTP"), "spec.ports[0].protocol"),
    ],
    ids=["weight-0", "port-70000", "protocol-SCTP"],
)
def test_schema_violations_are_rejected_with_422(cluster: Cluster, mutate: Any, field: str) -> None:
    obj = sample_balancer(name="bad")
    mutate(obj["spec"])
    with pytest.raises(InvalidError) as info:
        cluster.create_balancer(obj)
    err = info.value
    assert err.status == 422
    assert field in err.message
    fields = [c.get("field") for c in err.causes]
    if field.endswith("protocol"):
        # A NotSupported (enum) error blocks the CRD's CEL rules: kube says so
        # in one more cause with no field (apiextensions strategy.go hasBlockingErr).
        assert fields == [field, "<nil>"]
        assert "some validation rules were not checked" in err.causes[-1]["message"]
    else:
        assert fields == [field]
    with pytest.raises(NotFoundError):
        cluster.balancer("bad")


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s["ports"][0].update(targetPort=70000), "spec.ports[0].targetPort"),
        (lambda s: s["ports"][0].update(targetPort="not a port!"), "spec.ports[0].targetPort"),
        (lambda s: s["backends"][1].update(selector={"version": "v2 beta"}), "selector"),
    ],
    ids=["targetPort-70000", "targetPort-bad-name", "selector-value"],
)
def test_invalid_spec_sets_condition_and_warns_without_children(
    cluster: Cluster, controller: BalancerController, mutate: Any, field: str
) -> None:
    # Specs the schema (and its CEL rules) accept but no Service could
    # implement: the controller refuses them before writing anything. (A
    # "<name>-<backend>-backend" longer than 63 characters is rejected by the
    # CRD's CEL rule already; the reconciler's own check for it is covered by
    # the unit tests.)
    name = "bad-spec"
    obj = sample_balancer(name=name)
    mutate(obj["spec"])
    cluster.create_balancer(obj)

    cond = wait_for(
        lambda: (c := cluster.condition(name, "default", "Reconciled"))
        and c["status"] == "False"
        and c,
        what="Reconciled=False",
    )
    assert cond["reason"] == "InvalidSpec"
    assert field in cond["message"]
    warnings = wait_for(
        lambda: [
            e
            for e in cluster.events_for(name, "default")
            if e["type"] == "Warning" and e["reason"] == "InvalidSpec"
        ],
        what="Warning event",
    )
    assert warnings[0]["message"]
    # no child at all, and no retry storm
    time.sleep(1.0)
    assert not [
        s
        for s in cluster.services.list(namespace="default")["items"]
        if name in s["metadata"]["name"]
    ]
    assert not cluster.configmaps.list(namespace="default")["items"]
    assert not cluster.deployments.list(namespace="default")["items"]
    writes = cluster.server.writes()
    time.sleep(1.5)
    assert cluster.server.writes() == writes

    # fixing the spec converges
    good = sample_balancer()["spec"]
    cluster.modify_balancer(name, "default", lambda o: o.update(spec=good))
    b = wait_for(lambda: cluster.converged(name), what="converged after the fix")
    assert b["status"]["activeBackendsNum"] == 3


def _child_versions(cluster: Cluster) -> dict[tuple[str, str], str]:
    """(kind, name) -> resourceVersion of every Service, ConfigMap and Deployment in default."""
    return {
        (kind, o["metadata"]["name"]): o["metadata"]["resourceVersion"]
        for kind, client in (
            ("svc", cluster.services),
            ("cm", cluster.configmaps),
            ("deploy", cluster.deployments),
        )
        for o in client.list(namespace="default")["items"]
    }


def test_spec_turning_invalid_leaves_running_children_alone(
    cluster: Cluster, controller: BalancerController
) -> None:
    cluster.create_balancer(sample_balancer())
    wait_for(lambda: cluster.converged("balancer-sample"), what="convergence")
    before = _child_versions(cluster)
    cluster.modify_balancer(
        "balancer-sample",
        "default",
        lambda o: o["spec"]["ports"][0].update(targetPort=99999),
    )
    wait_for(
        lambda: (c := cluster.condition("balancer-sample", "default", "Reconciled"))
        and c["reason"] == "InvalidSpec",
        what="InvalidSpec",
    )
    time.sleep(0.5)
    after = _child_versions(cluster)
    assert after == before
    status = cluster.balancer("balancer-sample")["status"]
    assert (status["activeBackendsNum"], status["obsoleteBackendsNum"]) == (3, 0)


def test_foreign_child_is_left_alone(cluster: Cluster, controller: BalancerController) -> None:
    cluster.ensure_namespace("default")
    foreign = cluster.configmaps.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "balancer-sample-proxy-configmap", "namespace": "default"},
            "data": {"mine": "yes"},
        },
        namespace="default",
    )
    cluster.create_balancer(sample_balancer())
    cond = wait_for(
        lambda: (c := cluster.condition("balancer-sample", "default", "Reconciled"))
        and c["status"] == "False"
        and c,
        what="Reconciled=False",
    )
    assert cond["reason"] == "ChildConflict"
    assert "balancer-sample-proxy-configmap" in cond["message"]
    wait_for(
        lambda: [
            e
            for e in cluster.events_for("balancer-sample", "default")
            if e["type"] == "Warning" and e["reason"] == "ChildConflict"
        ],
        what="Warning event",
    )
    time.sleep(0.5)
    live = cluster.configmaps.get("balancer-sample-proxy-configmap", namespace="default")
    assert live["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]
    assert live["data"] == {"mine": "yes"}
    assert not cluster.deployments.list(namespace="default")["items"]


def test_api_failures_on_one_balancer_do_not_stall_another(
    server: APIServer, cluster: Cluster
) -> None:
    cluster.ensure_namespace("broken")
    cluster.ensure_namespace("healthy")
    # every write into namespace "broken" fails for a while
    server.fail_next(
        status=500, times=10_000, method="POST", path_regex=r"/namespaces/broken/services"
    )
    with running_controller(server):
        cluster.create_balancer(sample_balancer(namespace="broken"))
        cluster.create_balancer(sample_balancer(namespace="healthy"))
        wait_for(lambda: cluster.converged("balancer-sample", "healthy"), timeout=10)
        cond = wait_for(
            lambda: cluster.condition("balancer-sample", "broken", "Reconciled"),
            what="broken reports a condition",
        )
        assert cond["status"] == "False"
        assert cond["reason"] == names.REASON_RECONCILE_FAILED
        # the healthy one keeps reconciling while the broken one is retried with backoff
        cluster.modify_balancer(
            "balancer-sample",
            "healthy",
            lambda o: o["spec"].update(backends=[{"name": "solo", "weight": 1}]),
        )
        wait_for(lambda: cluster.converged("balancer-sample", "healthy"), timeout=10)
        assert labelled_services(cluster, "balancer-sample", "healthy") == {
            "balancer-sample-solo-backend"
        }


def test_api_failure_is_retried_until_success(server: APIServer, cluster: Cluster) -> None:
    cluster.create_balancer(sample_balancer(namespace="flaky"))
    # the controller's first three creates fail with 500
    server.fail_next(status=500, times=3, method="POST", path_regex=r"/namespaces/flaky/")
    with running_controller(server):
        b = wait_for(lambda: cluster.converged("balancer-sample", "flaky"), timeout=15)
    assert b["status"]["activeBackendsNum"] == 3
    failed = [r for r in server.request_log if r.status == 500]
    assert len(failed) == 3


def test_namespace_scoped_controller_ignores_other_namespaces(
    server: APIServer, cluster: Cluster
) -> None:
    with running_controller(server, namespace="watched"):
        cluster.create_balancer(sample_balancer(namespace="ignored"))
        cluster.create_balancer(sample_balancer(namespace="watched"))
        wait_for(lambda: cluster.converged("balancer-sample", "watched"), what="watched")
        time.sleep(1.0)
    assert not cluster.services.list(namespace="ignored")["items"]
    assert not (cluster.balancer("balancer-sample", "ignored").get("status") or {})
    # its informers listed and watched only the one namespace
    collections = {r.path.split("?")[0] for r in server.request_log if r.method == "GET"}
    for plural in ("services", "configmaps", "deployments", "balancers"):
        assert not any(p.endswith(f"/{plural}") and "/namespaces/" not in p for p in collections)
    assert any(p.endswith("/namespaces/watched/balancers") for p in collections)


def test_available_condition_follows_deployment_status(
    cluster: Cluster, controller: BalancerController
) -> None:
    cluster.create_balancer(sample_balancer())
    wait_for(lambda: cluster.converged("balancer-sample"), what="convergence")
    cond = cluster.condition("balancer-sample", "default", "Available")
    assert cond is not None
    assert cond["status"] == "False"

    dep = cluster.deployments.get("balancer-sample-proxy", namespace="default")
    dep["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    cluster.deployments.update_status(dep)
    available = wait_for(
        lambda: (c := cluster.condition("balancer-sample", "default", "Available"))
        and c["status"] == "True"
        and c,
        what="Available=True",
    )
    assert available["lastTransitionTime"]
    reconciled = cluster.condition("balancer-sample", "default", "Reconciled")
    assert reconciled is not None
    assert reconciled["status"] == "True"


def test_recreated_balancer_converges_after_old_children_are_collected(
    cluster: Cluster, controller: BalancerController
) -> None:
    old = cluster.create_balancer(sample_balancer())
    wait_for(lambda: cluster.converged("balancer-sample"), what="first convergence")
    cluster.balancers.delete("balancer-sample", namespace="default")
    new = cluster.create_balancer(sample_balancer())
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    # the old children (owned by the old uid) are foreign until the garbage
    # collector removes them; their deletion events map to the same key
    wait_for(lambda: cluster.converged("balancer-sample"), timeout=15, what="reconvergence")
    for svc in cluster.services.list(namespace="default")["items"]:
        if svc["metadata"]["name"].startswith("balancer-sample"):
            assert svc["metadata"]["ownerReferences"][0]["uid"] == new["metadata"]["uid"]
