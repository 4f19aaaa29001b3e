"""Pure diffing of desired vs live children (controllers.balancer.diff), and the
library helpers the reconciler uses for controller refs and conditions
(pycontroller.meta), as the Balancer relies on them."""

from __future__ import annotations

import copy
from typing import Any

from controllers.balancer import diff
from pycontroller.clock import FakeClock
from pycontroller.meta import controller_of, is_controlled_by, set_status_condition

OWNER = {
    "apiVersion": "exposer.hliangzhao.io/v1alpha1",
    "kind": "Balancer",
    "name": "b",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
LABEL = "balancer.exposer.hliangzhao.io/balancer-name"


def backend_service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "b-v1-backend",
            "namespace": "ns",
            "labels": {LABEL: "b"},
            "ownerReferences": [dict(OWNER)],
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": "test", "version": "v1"},
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 5678}],
        },
    }


def server_defaulted_service() -> dict[str, Any]:
    live = backend_service()
    live["metadata"].update(
        uid="svc-uid",
        resourceVersion="42",
        creationTimestamp="2026-01-01T00:00:00Z",
        labels={LABEL: "b", "team": "x"},
        annotations={"someone/else": "y"},
    )
    live["spec"].update(
        clusterIP="10.0.0.7",
        clusterIPs=["10.0.0.7"],
        sessionAffinity="None",
        ipFamilies=["IPv4"],
        ipFamilyPolicy="SingleStack",
        internalTrafficPolicy="Cluster",
    )
    live["status"] = {"loadBalancer": {}}
    return live


def front_service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "b", "namespace": "ns", "ownerReferences": [dict(OWNER)]},
        "spec": {
            "type": "ClusterIP",
            "selector": {LABEL: "b"},
            "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
        },
    }


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "b-proxy",
            "namespace": "ns",
            "labels": {LABEL: "b"},
            "ownerReferences": [dict(OWNER)],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {LABEL: "b"}},
            "template": {
                "metadata": {
                    "labels": {LABEL: "b"},
                    "annotations": {"balancer.exposer.hliangzhao.io/configmap-hash": "abc"},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.27-alpine",
                            "ports": [{"containerPort": 80}],
                            "volumeMounts": [{"name": "conf", "mountPath": "/etc/nginx"}],
                        }
                    ],
                    "volumes": [{"name": "conf", "configMap": {"name": "b-proxy-configmap"}}],
                },
            },
        },
    }


def server_defaulted_deployment() -> dict[str, Any]:
    live = deployment()
    live["metadata"].update(resourceVersion="7", generation=1, uid="d-uid")
    spec = live["spec"]
    spec.update(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        revisionHistoryLimit=10,
        progressDeadlineSeconds=600,
    )
    pod = spec["template"]["spec"]
    pod.update(
        restartPolicy="Always",
        dnsPolicy="ClusterFirst",
        terminationGracePeriodSeconds=30,
        schedulerName="default-scheduler",
        securityContext={},
    )
    container = pod["containers"][0]
    container.update(
        imagePullPolicy="IfNotPresent",
        terminationMessagePath="/dev/termination-log",
        terminationMessagePolicy="File",
        resources={},
    )
    container["ports"][0]["protocol"] = "TCP"
    pod["volumes"][0]["configMap"]["defaultMode"] = 420
    spec["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = "now"
    live["status"] = {"availableReplicas": 1, "replicas": 1}
    return live


def test_server_defaults_and_foreign_fields_never_need_update() -> None:
    assert not diff.needs_update(backend_service(), server_defaulted_service())
    assert not diff.needs_update(deployment(), server_defaulted_deployment())


def test_front_service_default_target_port_is_not_drift() -> None:
    live = front_service()
    live["spec"]["ports"][0]["targetPort"] = 80
    live["spec"]["clusterIP"] = "10.0.0.1"
    assert not diff.needs_update(front_service(), live)


def test_missing_protocol_matches_server_default_tcp() -> None:
    desired = front_service()
    del desired["spec"]["ports"][0]["protocol"]
    live = front_service()
    live["spec"]["ports"][0]["targetPort"] = 80
    assert not diff.needs_update(desired, live)


def test_stale_target_port_is_drift_when_spec_dropped_it() -> None:
    desired = backend_service()
    del desired["spec"]["ports"][0]["targetPort"]
    live = server_defaulted_service()  # still targetPort 5678
    assert diff.needs_update(desired, live)
    merged = diff.overlay(desired, live)
    assert merged["spec"]["ports"][0]["targetPort"] == 80


def test_owned_field_changes_need_update() -> None:
    for mutate in (
        lambda o: o["spec"]["ports"][0].update(port=81),
        lambda o: o["spec"]["selector"].update(version="v2"),
        lambda o: o["spec"]["selector"].update(extra="added"),  # selector is owned exactly
        lambda o: o["metadata"]["labels"].pop(LABEL),
        lambda o: o["spec"]["ports"].append({"name": "x", "port": 1, "protocol": "TCP"}),
        lambda o: o["spec"].update(type="NodePort"),
        lambda o: o["metadata"].update(ownerReferences=[]),
    ):
        live = server_defaulted_service()
        mutate(live)
        assert diff.needs_update(backend_service(), live)


def test_configmap_data_is_owned_exactly() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "ownerReferences": [dict(OWNER)]},
        "data": {"nginx.conf": "A"},
    }
    live = copy.deepcopy(desired)
    assert not diff.needs_update(desired, live)
    live["data"]["extra"] = "x"
    assert diff.needs_update(desired, live)
    assert diff.overlay(desired, live)["data"] == {"nginx.conf": "A"}
    live["data"] = {"nginx.conf": "B"}
    assert diff.differing_fields(desired, live) == ["data"]


def test_deployment_hash_annotation_and_image_changes_need_update() -> None:
    live = server_defaulted_deployment()
    desired = deployment()
    desired["spec"]["template"]["metadata"]["annotations"][
        "balancer.exposer.hliangzhao.io/configmap-hash"
    ] = "def"
    assert diff.needs_update(desired, live)
    merged = diff.overlay(desired, live)
    annotations = merged["spec"]["template"]["metadata"]["annotations"]
    assert annotations["balancer.exposer.hliangzhao.io/configmap-hash"] == "def"
    # foreign template annotation and server defaults survive the overlay
    assert annotations["kubectl.kubernetes.io/restartedAt"] == "now"
    assert merged["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert merged["metadata"]["resourceVersion"] == "7"
    assert not diff.needs_update(desired, merged)

    live = server_defaulted_deployment()
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"
    assert diff.needs_update(deployment(), live)
    live["spec"]["replicas"] = 3
    assert diff.differing_fields(deployment(), live) == ["spec"]


def test_overlay_keeps_live_identity_and_foreign_owner_refs() -> None:
    live = server_defaulted_service()
    other = {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "other"}
    live["metadata"]["ownerReferences"] = [other]
    live["spec"]["selector"] = {"app": "wrong"}
    merged = diff.overlay(backend_service(), live)
    assert merged["metadata"]["resourceVersion"] == "42"
    assert merged["spec"]["clusterIP"] == "10.0.0.7"
    assert merged["metadata"]["labels"] == {LABEL: "b", "team": "x"}
    assert merged["metadata"]["ownerReferences"] == [other, OWNER]
    assert merged["spec"]["selector"] == {"app": "test", "version": "v1"}
    assert not diff.needs_update(backend_service(), merged)
    # inputs untouched
    assert live["spec"]["selector"] == {"app": "wrong"}


def test_controller_ref() -> None:
    svc = backend_service()
    assert is_controlled_by(svc, {"metadata": {"uid": "uid-1"}})
    assert not is_controlled_by(svc, {"metadata": {"uid": "uid-2"}})
    svc["metadata"]["ownerReferences"][0]["controller"] = False
    assert controller_of(svc) is None
    assert not is_controlled_by(svc, {"metadata": {"uid": "uid-1"}})


def test_set_condition_keeps_transition_time_unless_status_flips() -> None:
    clock = FakeClock(start=0.0, epoch=0.0)
    t1, t3, t4 = "1970-01-01T00:00:01Z", "1970-01-01T00:00:03Z", "1970-01-01T00:00:04Z"
    conditions: list[dict[str, Any]] = []
    clock.set(1.0)
    set_status_condition(
        conditions, {"type": "Reconciled", "status": "True", "reason": "Synced"}, clock=clock
    )
    assert conditions == [
        {
            "type": "Reconciled",
            "status": "True",
            "reason": "Synced",
            "message": "",  # metav1.Condition's message is not omitempty
            "lastTransitionTime": t1,
        }
    ]
    clock.set(2.0)
    set_status_condition(
        conditions, {"type": "Reconciled", "status": "True", "reason": "Other"}, clock=clock
    )
    assert conditions[0]["lastTransitionTime"] == t1
    assert conditions[0]["reason"] == "Other"
    clock.set(3.0)
    set_status_condition(
        conditions, {"type": "Reconciled", "status": "False", "reason": "X"}, clock=clock
    )
    assert conditions[0]["lastTransitionTime"] == t3
    clock.set(4.0)
    set_status_condition(
        conditions, {"type": "Available", "status": "False", "reason": "Y"}, clock=clock
    )
    assert [c["type"] for c in conditions] == ["Reconciled", "Available"]
    assert conditions[0]["lastTransitionTime"] == t3  # untouched by another type
    assert conditions[1]["lastTransitionTime"] == t4
