"""Pure helpers of the embedded API server: Scale views and Event conversion."""

from __future__ import annotations

from pycontroller.testing.apiserver.registry.events import (
    core_to_events,
    events_to_core,
)
from pycontroller.testing.apiserver.registry.scale import (
    apply_replicas,
    format_label_selector,
    scale_paths,
    to_scale,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.builtin import BUILTIN_TYPES

DEPLOY = next(rt for rt in BUILTIN_TYPES if rt.kind == "Deployment")


def _cr(scale: object) -> ResourceType:
    return ResourceType(
        group="example.com", version="v1", kind="Pool", plural="pools",
        crd_name="pools.example.com", extra={"scale": scale},
    )  # fmt: skip


def test_format_label_selector_sorts_by_key() -> None:
    sel = {
        "matchLabels": {"z": "1", "a": "2"},
        "matchExpressions": [
            {"key": "m", "operator": "NotIn", "values": ["y", "x"]},
            {"key": "b", "operator": "Exists"},
            {"key": "n", "operator": "DoesNotExist"},
        ],
    }
    assert format_label_selector(sel) == "a=2,b,m notin (x,y),!n,z=1"
    assert format_label_selector({}) == ""
    assert format_label_selector(None) == ""


def test_scale_paths() -> None:
    assert scale_paths(DEPLOY) is not None
    assert scale_paths(next(rt for rt in BUILTIN_TYPES if rt.kind == "ConfigMap")) is None
    assert scale_paths(_cr(None)) is None
    assert scale_paths(_cr({"specReplicasPath": "spec.r", "statusReplicasPath": ".s.r"})) is None
    paths = scale_paths(_cr({"specReplicasPath": ".spec.r", "statusReplicasPath": ".status.r"}))
    assert paths is not None and paths.label_selector is None


def test_to_scale_and_apply_replicas_for_a_custom_resource() -> None:
    rt = _cr(
        {
            "specReplicasPath": ".spec.size.count",
            "statusReplicasPath": ".status.count",
            "labelSelectorPath": ".status.sel",
        }
    )
    paths = scale_paths(rt)
    assert paths is not None
    obj = {"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "b"}}, "spec": {}}
    sc = to_scale(rt, obj, paths)
    assert sc["metadata"] == {"name": "p", "namespace": "ns"}
    assert sc["spec"] == {"replicas": 0} and sc["status"] == {"replicas": 0}
    new = apply_replicas(obj, paths, 3)
    assert new["spec"] == {"size": {"count": 3}} and obj["spec"] == {}
    new["status"] = {"count": 2, "sel": "a=b"}
    assert to_scale(rt, new, paths)["status"] == {"replicas": 2, "selector": "a=b"}


def test_event_conversion_round_trips() -> None:
    core = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "message": "m",
        "reportingComponent": "c",
        "source": {"component": "c"},
        "firstTimestamp": "t1",
        "lastTimestamp": "t2",
        "count": 2,
        "reason": "R",
        "series": {"count": 2},
    }
    new = core_to_events(core)
    assert new == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": "e"},
        "regarding": {"kind": "Pod", "name": "p"},
        "note": "m",
        "reportingController": "c",
        "deprecatedSource": {"component": "c"},
        "deprecatedFirstTimestamp": "t1",
        "deprecatedLastTimestamp": "t2",
        "deprecatedCount": 2,
        "reason": "R",
        "series": {"count": 2},
    }
    assert events_to_core(new) == core
