"""Table conversion and printer-column JSONPath."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from pycontroller.testing.apiserver.http.table import (
    JSONPathError,
    human_duration,
    jsonpath_find,
    to_table,
)
from pycontroller.testing.apiserver.resource_types import ResourceType

READY_PATH = '.status.conditions[?(@.type=="Reconciled")].status'
COLUMNS = (
    {"name": "Ready", "type": "string", "jsonPath": READY_PATH},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
    {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
    {"name": "Ports", "type": "string", "jsonPath": ".spec.ports", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)  # fmt: skip

WIDGET = ResourceType(
    group="example.com",
    version="v1",
    kind="Widget",
    plural="widgets",
    schema={"type": "object"},
    printer_columns=COLUMNS,
    crd_name="widgets.example.com",
)


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "namespace": "default",
            "resourceVersion": "7",
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": spec,
        "status": {
            "conditions": [
                {"type": "Other", "status": "False"},
                {"type": "Reconciled", "status": "True"},
            ]
        },
    }


NOW = datetime.datetime(2024, 1, 1, 0, 5, 0, tzinfo=datetime.UTC)


def test_crd_columns_and_cells() -> None:
    obj = widget("a", size=3, ratio=0.5, on=True, ports=[{"port": 80, "name": "http"}])
    table = to_table(WIDGET, obj, now=NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Ready", "Size", "Ratio", "On", "Ports", "Age"]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["columnDefinitions"][5]["priority"] == 1
    assert table["columnDefinitions"][6]["type"] == "date"
    (row,) = table["rows"]
    assert row["cells"] == [
        "a",
        "True",
        3,
        0.5,
        True,
        '[{"name":"http","port":80}]',
        "5m",
    ]
    assert row["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }
    assert table["metadata"] == {"resourceVersion": "7"}


def test_missing_values_are_null() -> None:
    obj = widget("b")
    obj["status"] = {}
    cells = to_table(WIDGET, obj)["rows"][0]["cells"]
    assert cells[1:6] == [None, None, None, None, None]


def test_type_conversions() -> None:
    cells = to_table(WIDGET, widget("c", size=2.0, ratio=1, on="yes"))["rows"][0]["cells"]
    assert cells[2] == 2 and isinstance(cells[2], int)
    assert cells[3] == 1
    assert cells[4] is None  # not a boolean


def test_list_with_metadata_and_include_object() -> None:
    lst = {
        "apiVersion": "example.com/v1",
        "kind": "WidgetList",
        "metadata": {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3},
        "items": [widget("a"), widget("b")],
    }
    table = to_table(WIDGET, lst, include_object="Object")
    assert table["metadata"] == {
        "resourceVersion": "42",
        "continue": "tok",
        "remainingItemCount": 3,
    }
    assert [r["cells"][0] for r in table["rows"]] == ["a", "b"]
    assert table["rows"][0]["object"]["kind"] == "Widget"
    assert to_table(WIDGET, lst, include_object="None")["rows"][0]["object"] is None
    empty = to_table(WIDGET, {**lst, "items": []})
    assert empty["rows"] == [] and len(empty["columnDefinitions"]) == 7


def test_crd_without_columns_gets_age() -> None:
    rt = ResourceType(group="example.com", version="v1", kind="Widget", plural="widgets",
                      schema={"type": "object"}, crd_name="widgets.example.com")  # fmt: skip
    table = to_table(rt, widget("a"), now=NOW)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"),
        ("Age", "date"),
    ]
    assert table["rows"][0]["cells"] == ["a", "5m"]
    bad = widget("b")
    bad["metadata"]["creationTimestamp"] = "yesterday"
    assert to_table(rt, bad, now=NOW)["rows"][0]["cells"] == ["b", "<invalid>"]


def test_crd_table_created_at() -> None:
    rt = ResourceType(group="apiextensions.k8s.io", version="v1",
                      kind="CustomResourceDefinition", plural="customresourcedefinitions",
                      namespaced=False)  # fmt: skip
    crd = {"metadata": {"name": "x.example.com", "creationTimestamp": "2024-01-01T00:00:00Z"}}
    table = to_table(rt, crd, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["x.example.com", "2024-01-01T00:00:00Z"]


def test_builtin_deployment_columns() -> None:
    rt = ResourceType(group="apps", version="v1", kind="Deployment", plural="deployments")
    dep = {
        "metadata": {"name": "web", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1"}]}},
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    table = to_table(rt, dep, now=NOW)
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert table["rows"][0]["cells"] == ["web", "2/3", 3, 2, "5m", "nginx", "nginx:1", "app=web"]


def test_builtin_default_columns() -> None:
    rt = ResourceType(group="coordination.k8s.io", version="v1", kind="Lease", plural="leases")
    obj = {"metadata": {"name": "e", "creationTimestamp": "2024-01-01T00:04:30Z"}, "spec": {}}
    table = to_table(rt, obj, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert table["rows"][0]["cells"] == ["e", "", "30s"]
    rt = ResourceType(group="", version="v1", kind="Secret", plural="secrets")
    obj = {"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "eA=="}}
    assert to_table(rt, obj, now=NOW)["rows"][0]["cells"] == ["s", "Opaque", 1, "<unknown>"]
    cm = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps")
    obj = {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    assert to_table(cm, obj, now=NOW)["rows"][0]["cells"] == ["c", 2, "<unknown>"]


def test_builtin_service_columns() -> None:
    rt = ResourceType(group="", version="v1", kind="Service", plural="services")
    svc = {
        "metadata": {"name": "s", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.10",
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
        },
    }
    cells = to_table(rt, svc, now=NOW)["rows"][0]["cells"]
    assert cells[:6] == ["s", "ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP", "5m"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.a", [1]),
        ("{.spec.a}", [1]),
        (".spec.list[0].n", ["x"]),
        (".spec.list[-1].n", ["y"]),
        (".spec.list[*].n", ["x", "y"]),
        (".spec.list[0:1].n", ["x"]),
        ('.spec.list[?(@.n=="y")].v', [2]),
        (".spec.list[?(@.v>1)].n", ["y"]),
        (".spec.list[?(@.v)].n", ["x", "y"]),
        (".spec.list[?(@.n!='x')].n", ["y"]),
        (".metadata.annotations.a\\.b/c", ["dotted"]),
        (".metadata.annotations['a.b/c']", ["dotted"]),
        (".spec.missing", []),
        (".spec.list[5]", []),
    ],
)
def test_jsonpath(path: str, expected: list[Any]) -> None:
    obj = {
        "metadata": {"annotations": {"a.b/c": "dotted"}},
        "spec": {"a": 1, "list": [{"n": "x", "v": 1}, {"n": "y", "v": 2}]},
    }
    assert jsonpath_find(obj, path) == expected


def test_jsonpath_errors() -> None:
    with pytest.raises(JSONPathError):
        jsonpath_find({}, ".spec[unclosed")
    with pytest.raises(JSONPathError):
        jsonpath_find({"spec": [1]}, ".spec[?bad]")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (10 * 3600, "10h"),
        (3 * 86400 + 3600, "3d1h"),
        (30 * 86400, "30d"),
        (3 * 365 * 86400 + 86400, "3y1d"),
        (10 * 365 * 86400, "10y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_core_event_columns() -> None:
    rt = ResourceType(group="", version="v1", kind="Event", plural="events")
    ev = {
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Deployment", "name": "web", "fieldPath": "spec"},
        "reason": "Synced",
        "message": "done \n",
        "type": "Normal",
        "count": 3,
        "firstTimestamp": "2024-01-01T00:00:00Z",
        "lastTimestamp": "2024-01-01T00:04:00Z",
        "source": {"component": "balancer-controller"},
    }
    table = to_table(rt, ev, now=NOW)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Last Seen", "Type", "Reason", "Object", "Message",
    ]  # fmt: skip
    assert table["rows"][0]["cells"] == [
        "60s", "Normal", "Synced", "deployment/web", "spec", "balancer-controller", "done",
        "5m", 3, "web.1",
    ]  # fmt: skip


def test_events_k8s_io_event_columns() -> None:
    rt = ResourceType(group="events.k8s.io", version="v1", kind="Event", plural="events")
    ev = {
        "metadata": {"name": "e2"},
        "regarding": {"kind": "Pod", "name": "p"},
        "note": "hello",
        "reason": "Started",
        "type": "Warning",
        "eventTime": "2024-01-01T00:04:50.000000Z",
        "reportingController": "ctl",
        "reportingInstance": "ctl-1",
    }
    cells = to_table(rt, ev, now=NOW)["rows"][0]["cells"]
    assert cells == [
        "10s",
        "Warning",
        "Started",
        "pod/p",
        "",
        "ctl, ctl-1",
        "hello",
        "10s",
        1,
        "e2",
    ]
