"""HorizontalPodAutoscalers at autoscaling/v1 and v2 over one storage, converted
as kube's ``pkg/apis/autoscaling/v1/conversion.go`` does."""

from __future__ import annotations

import json
import threading
from typing import Any

from kubernetes import client as k8s
from support.http import call

from pycontroller import ResourceClient
from pycontroller.errors import ConflictError
from pycontroller.testing import APIServer
from pycontroller.testing.apiserver.registry.hpa import (
    BEHAVIOR_ANNOTATION,
    CONDITIONS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    METRICS_ANNOTATION,
)

REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _clients(server: APIServer) -> tuple[ResourceClient, ResourceClient]:
    api = server.api_client()
    return (
        ResourceClient(api, "autoscaling", "v1", "horizontalpodautoscalers"),
        ResourceClient(api, "autoscaling", "v2", "horizontalpodautoscalers"),
    )


def test_v1_cpu_target_is_the_v2_cpu_metric(apiserver: APIServer) -> None:
    v1, v2 = _clients(apiserver)
    created = v1.create(
        {"metadata": {"name": "h"},
         "spec": {"scaleTargetRef": REF, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50}},
        namespace="default",
    )  # fmt: skip
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"] == {
        "scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 50,
    }  # fmt: skip
    # v1's status is a struct: both counts are always there.
    assert created["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert "annotations" not in created["metadata"]
    stored = v2.get("h", namespace="default")
    assert stored["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]  # fmt: skip
    # Without a target, v1's implicit 80% CPU is made explicit.
    v1.create({"metadata": {"name": "d"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 3}},
              namespace="default")  # fmt: skip
    metric = v2.get("d", namespace="default")["spec"]["metrics"][0]
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    assert v1.get("d", namespace="default")["spec"]["targetCPUUtilizationPercentage"] == 80


def _v2_hpa() -> dict[str, Any]:
    return {
        "metadata": {"name": "rich", "annotations": {"team": "a"}},
        "spec": {
            "scaleTargetRef": REF, "minReplicas": 2, "maxReplicas": 9,
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                          "target": {"type": "AverageValue",
                                                     "averageValue": "10"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 60}}},
                {"type": "External", "external": {
                    "metric": {"name": "queue", "selector": {"matchLabels": {"q": "jobs"}}},
                    "target": {"type": "Value", "value": "30"}}},
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
        },
    }  # fmt: skip


def test_v2_only_fields_travel_in_annotations_and_survive_a_v1_round_trip(
    apiserver: APIServer,
) -> None:
    v1, v2 = _clients(apiserver)
    v2.create(_v2_hpa(), namespace="default")
    status = v2.get("rich", namespace="default")
    status["status"] = {
        "currentReplicas": 3, "desiredReplicas": 4,
        "currentMetrics": [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": 72, "averageValue": "150m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                        "lastTransitionTime": "2026-01-01T00:00:00Z", "message": "ok"}],
    }  # fmt: skip
    v2.update_status(status, namespace="default")

    got = v1.get("rich", namespace="default")
    assert got["spec"] == {"scaleTargetRef": REF, "minReplicas": 2, "maxReplicas": 9,
                           "targetCPUUtilizationPercentage": 60}  # fmt: skip
    assert got["status"] == {"currentReplicas": 3, "desiredReplicas": 4,
                             "currentCPUUtilizationPercentage": 72}  # fmt: skip
    ann = got["metadata"]["annotations"]
    assert list(ann) == sorted(ann)  # a Go map, marshalled sorted
    assert ann["team"] == "a"
    assert ann[METRICS_ANNOTATION] == (
        '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},'
        '{"type":"External","external":{"metricName":"queue","metricSelector":'
        '{"matchLabels":{"q":"jobs"}},"targetValue":"30"}}]'
    )
    assert json.loads(ann[CURRENT_METRICS_ANNOTATION]) == [{"type": "Resource", "resource": {
        "name": "cpu", "currentAverageUtilization": 72, "currentAverageValue": "150m"}}
    ]  # fmt: skip
    assert json.loads(ann[CONDITIONS_ANNOTATION])[0]["reason"] == "ReadyForNewScale"
    # kube marshals the internal behavior type, without JSON tags.
    assert json.loads(ann[BEHAVIOR_ANNOTATION])["ScaleDown"]["StabilizationWindowSeconds"] == 60

    # A v1 client changes what it knows and writes everything back: nothing is lost.
    got["spec"]["maxReplicas"] = 12
    got["spec"]["targetCPUUtilizationPercentage"] = 65
    v1.update(got, namespace="default")
    stored = v2.get("rich", namespace="default")
    assert stored["spec"]["maxReplicas"] == 12
    assert [m["type"] for m in stored["spec"]["metrics"]] == ["Pods", "External", "Resource"]
    assert stored["spec"]["metrics"][0]["pods"]["target"] == {
        "type": "AverageValue", "averageValue": "10"}  # fmt: skip
    assert stored["spec"]["metrics"][1]["external"]["metric"]["selector"] == {
        "matchLabels": {"q": "jobs"}}  # fmt: skip
    assert stored["spec"]["metrics"][2]["resource"]["target"]["averageUtilization"] == 65
    assert stored["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 60
    # The round-trip annotations never reach storage.
    assert stored["metadata"]["annotations"] == {"team": "a"}
    assert stored["status"]["conditions"][0]["reason"] == "ReadyForNewScale"


def test_list_and_watch_at_v1_serve_v1_objects(apiserver: APIServer) -> None:
    v1, v2 = _clients(apiserver)
    seen: list[dict[str, Any]] = []
    started = threading.Event()

    def watch() -> None:
        w = v1.watch(namespace="default", timeout_seconds=5)
        started.set()
        for ev in w:
            seen.append(ev)
            if len(seen) == 2:
                break

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    started.wait(5)
    v2.create(_v2_hpa(), namespace="default")
    obj = v2.get("rich", namespace="default")
    obj["spec"]["maxReplicas"] = 10
    v2.update(obj, namespace="default")
    t.join(10)
    assert [e["type"] for e in seen] == ["ADDED", "MODIFIED"]
    assert all(e["object"]["apiVersion"] == "autoscaling/v1" for e in seen)
    assert seen[1]["object"]["spec"]["maxReplicas"] == 10
    assert seen[1]["object"]["spec"]["targetCPUUtilizationPercentage"] == 60
    items = v1.list(namespace="default")
    assert items["apiVersion"] == "autoscaling/v1"
    assert items["items"][0]["spec"]["targetCPUUtilizationPercentage"] == 60


def test_discovery_prefers_v2_and_serves_v1(apiserver: APIServer) -> None:
    code, _, group = call(apiserver, "GET", "/apis/autoscaling")
    assert code == 200
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    code, _, res = call(apiserver, "GET", "/apis/autoscaling/v1")
    names = {r["name"] for r in res["resources"]}
    assert {"horizontalpodautoscalers", "horizontalpodautoscalers/status"} <= names


def test_the_kubernetes_clients_v1_api_works(apiserver: APIServer) -> None:
    api = k8s.AutoscalingV1Api(apiserver.api_client())
    body = k8s.V1HorizontalPodAutoscaler(
        metadata=k8s.V1ObjectMeta(name="typed"),
        spec=k8s.V1HorizontalPodAutoscalerSpec(
            scale_target_ref=k8s.V1CrossVersionObjectReference(
                api_version="apps/v1", kind="Deployment", name="web"),
            max_replicas=4, target_cpu_utilization_percentage=70),
    )  # fmt: skip
    api.create_namespaced_horizontal_pod_autoscaler("default", body)
    got = api.read_namespaced_horizontal_pod_autoscaler("typed", "default")
    assert got.spec.target_cpu_utilization_percentage == 70
    assert got.spec.min_replicas == 1
    assert got.status.desired_replicas == 0
    listed = api.list_namespaced_horizontal_pod_autoscaler("default")
    assert [h.metadata.name for h in listed.items] == ["typed"]


def test_v2_behavior_given_in_part_is_completed_as_kube_defaults_it(
    apiserver: APIServer,
) -> None:
    _, v2 = _clients(apiserver)
    created = v2.create(_v2_hpa(), namespace="default")
    assert created["spec"]["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }  # fmt: skip
    body = _v2_hpa()
    body["metadata"]["name"] = "plain"
    del body["spec"]["behavior"]
    assert "behavior" not in v2.create(body, namespace="default")["spec"]


# --- server-side apply and managedFields through the converted version --------


def _v1_hpa(max_replicas: int, cpu: int | None = 50) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": REF, "maxReplicas": max_replicas}
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu
    return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"}, "spec": spec}  # fmt: skip


def _entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def test_apply_through_v1_is_field_managed_in_v1(apiserver: APIServer) -> None:
    # kube's field manager works on the object in the request's version: the
    # applier's entry is an Apply at autoscaling/v1, with v1's paths.
    v1, v2 = _clients(apiserver)
    applied = v1.apply(_v1_hpa(5), field_manager="ops", namespace="default")
    entry = _entries(applied)["ops"]
    assert (entry["operation"], entry["apiVersion"]) == ("Apply", "autoscaling/v1")
    assert set(entry["fieldsV1"]["f:spec"]) == {
        "f:scaleTargetRef", "f:maxReplicas", "f:targetCPUUtilizationPercentage",
    }  # fmt: skip
    # The same entries whichever version serves the object.
    assert (
        v2.get("h", namespace="default")["metadata"]["managedFields"]
        == (applied["metadata"]["managedFields"])
    )


def test_a_second_v1_applier_conflicts_and_force_takes_the_field(apiserver: APIServer) -> None:
    v1, _ = _clients(apiserver)
    v1.apply(_v1_hpa(5), field_manager="ops", namespace="default")
    try:
        v1.apply(_v1_hpa(7), field_manager="team", namespace="default")
    except ConflictError as err:
        assert err.body["details"]["causes"] == [
            {"reason": "FieldManagerConflict", "message": 'conflict with "ops"',
             "field": ".spec.maxReplicas"}
        ]  # fmt: skip
    else:
        raise AssertionError("a second applier changed a field another owns")
    forced = v1.apply(_v1_hpa(7), field_manager="team", force=True, namespace="default")
    assert forced["spec"]["maxReplicas"] == 7
    entries = _entries(forced)
    assert "f:maxReplicas" in entries["team"]["fieldsV1"]["f:spec"]
    assert "f:maxReplicas" not in entries["ops"]["fieldsV1"]["f:spec"]


def test_managers_of_different_versions_conflict_on_the_same_field(
    apiserver: APIServer,
) -> None:
    # What a v2 apply changes is compared with the v1 applier's fields on the
    # objects converted to v1 (kube converts to each manager's version).
    v1, v2 = _clients(apiserver)
    v1.apply(_v1_hpa(5), field_manager="ops", namespace="default")
    live = v2.get("h", namespace="default")
    config = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
              "metadata": {"name": "h"},
              "spec": {"scaleTargetRef": REF, "maxReplicas": 9,
                       "metrics": live["spec"]["metrics"]}}  # fmt: skip
    try:
        v2.apply(config, field_manager="v2-tool", namespace="default")
    except ConflictError as err:
        assert [c["field"] for c in err.body["details"]["causes"]] == [".spec.maxReplicas"]
    else:
        raise AssertionError("a v2 applier changed a field a v1 applier owns")
    config["spec"]["maxReplicas"] = 5  # the value it has: shared, no conflict
    shared = v2.apply(config, field_manager="v2-tool", namespace="default")
    entries = _entries(shared)
    assert entries["v2-tool"]["apiVersion"] == "autoscaling/v2"
    assert "f:maxReplicas" in entries["ops"]["fieldsV1"]["f:spec"]


def test_an_update_through_v1_is_recorded_at_v1(apiserver: APIServer) -> None:
    v1, _ = _clients(apiserver)
    created = v1.create(_v1_hpa(5), namespace="default")
    entry = created["metadata"]["managedFields"][0]
    assert (entry["operation"], entry["apiVersion"]) == ("Update", "autoscaling/v1")
    assert "f:targetCPUUtilizationPercentage" in entry["fieldsV1"]["f:spec"]
    created["spec"]["maxReplicas"] = 6
    code, _, updated = call(apiserver, "PUT",
                            "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/h"
                            "?fieldManager=editor", created)  # fmt: skip
    assert code == 200, updated
    entries = _entries(updated)
    assert entries["editor"]["apiVersion"] == "autoscaling/v1"
    assert entries["editor"]["fieldsV1"] == {"f:spec": {"f:maxReplicas": {}}}
