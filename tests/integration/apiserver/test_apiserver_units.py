"""Pure pieces of the embedded API server: patches, names, selectors, storage
history and the registry (no HTTP)."""

from __future__ import annotations

import pytest

from pycontroller.testing.apiserver.registry.kinds_registry import Registry
from pycontroller.testing.apiserver.registry.names import generate_name, validate_name
from pycontroller.testing.apiserver.registry.patch import (
    apply_patch,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)
from pycontroller.testing.apiserver.registry.selectors import (
    Selector,
    parse_field_selector,
    parse_label,
)
from pycontroller.testing.apiserver.registry.storage import Storage
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import StatusError


def test_json_merge_patch_rfc7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "l": [3], "n": {"x": None}}
    assert json_merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "l": [3], "n": {}}
    assert target["c"] == {"d": "e", "f": "g"}  # input untouched


def test_json_patch_errors() -> None:
    assert json_patch({"a": 1}, [{"op": "add", "path": "/b", "value": 2}]) == {"a": 1, "b": 2}
    with pytest.raises(StatusError) as ei:
        json_patch({"a": 1}, [{"op": "remove", "path": "/zz"}])
    assert ei.value.code == 422
    with pytest.raises(StatusError) as ei:
        json_patch({"a": 1}, {"op": "add"})
    assert ei.value.code == 400


def test_strategic_merge_lists_by_key_and_directives() -> None:
    target = {
        "spec": {
            "containers": [
                {"name": "a", "image": "1", "volumeMounts": [{"mountPath": "/x", "name": "v"}]},
                {"name": "b", "image": "1"},
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "args": ["x", "y"],
        },
        "metadata": {"finalizers": ["f1"], "labels": {"k": "v", "drop": "me"}},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    patch = {
        "spec": {
            "containers": [{"name": "a", "volumeMounts": [{"mountPath": "/y", "name": "w"}]}],
            "volumes": [{"name": "v", "$patch": "delete"}],
            "args": ["z"],
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        },
        "metadata": {"finalizers": ["f2"], "labels": {"drop": None}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced"}]},
    }
    out = strategic_merge_patch(target, patch)
    # Without $setElementOrder, kube's normalizeElementOrder puts the patch's new
    # items before the server-only ones (mergeSortedSlice: neither is ordered
    # against the other in the live list, so the patch item goes first).
    assert [m["mountPath"] for m in out["spec"]["containers"][0]["volumeMounts"]] == ["/y", "/x"]
    assert out["spec"]["containers"][1] == {"name": "b", "image": "1"}
    assert out["spec"]["volumes"] == []
    assert out["spec"]["args"] == ["z"]  # no merge key: replaced
    assert "$setElementOrder/containers" not in out["spec"]
    assert out["metadata"]["finalizers"] == ["f2", "f1"]  # the same for primitives
    assert out["metadata"]["labels"] == {"k": "v"}
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Synced"},
    ]


def test_strategic_merge_replace_directives() -> None:
    target = {"spec": {"selector": {"a": "1", "b": "2"}, "ports": [{"port": 1}, {"port": 2}]}}
    out = strategic_merge_patch(
        target,
        {
            "spec": {
                "selector": {"$patch": "replace", "c": "3"},
                "ports": [{"port": 9}, {"$patch": "replace"}],
            }
        },
    )
    assert out["spec"]["selector"] == {"c": "3"}
    assert out["spec"]["ports"] == [{"port": 9}]
    out = strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
    )
    assert out["metadata"]["finalizers"] == ["b"]


def test_apply_patch_merges_or_creates() -> None:
    assert apply_patch(None, {"a": 1}) == {"a": 1}
    assert apply_patch({"a": 1, "b": 2}, {"b": 3}) == {"a": 1, "b": 3}


def test_names() -> None:
    assert validate_name("subdomain", "a.b-c") == []
    assert validate_name("subdomain", "A") != []
    assert validate_name("label", "a.b") != []
    assert validate_name("dns1035", "1a") != []
    assert validate_name("dns1035", "a1") == []
    assert validate_name("path", "Any_Thing") == []
    assert validate_name("path", "a/b") != []
    assert validate_name("subdomain", "a" * 254) != []
    g = generate_name("x" * 70)
    assert len(g) == 63 and validate_name("subdomain", g) == []


def test_field_selectors() -> None:
    obj = {"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}}
    assert parse_field_selector("metadata.name=a", "ConfigMap").matches(obj)
    assert parse_field_selector("metadata.name==a,metadata.namespace!=x", "X").matches(obj)
    assert not parse_field_selector("metadata.name!=a", "ConfigMap").matches(obj)
    assert parse_field_selector("status.phase=Running", "Pod").matches(obj)
    with pytest.raises(StatusError) as ei:
        parse_field_selector("status.phase=Running", "ConfigMap")
    assert ei.value.code == 400 and "is not a known field selector" in ei.value.message
    with pytest.raises(StatusError):
        parse_field_selector("metadata.name", "ConfigMap")


def test_label_selectors_full_syntax() -> None:
    sel = Selector(
        parse_label("a=1,b!=2,c in (x,y),d notin (z),e,!f"), parse_field_selector("", "X")
    )

    def m(labels: dict[str, str]) -> bool:
        return sel.matches({"metadata": {"labels": labels}})

    assert m({"a": "1", "c": "x", "e": ""})
    assert not m({"a": "1", "c": "x", "e": "", "f": "1"})
    assert not m({"a": "1", "b": "2", "c": "x", "e": ""})
    assert not m({"a": "1", "c": "q", "e": ""})
    with pytest.raises(StatusError) as ei:
        parse_label("a in (")
    assert ei.value.code == 400


def _commit(st: Storage, etype: str, name: str, data: str) -> dict[str, object]:
    obj = {"metadata": {"name": name, "namespace": "ns", "uid": name}, "data": data}
    with st.lock:
        old = st.get(("", "configmaps"), "ns", name)
        return st.commit(etype, ("", "configmaps"), obj, old)


def test_storage_snapshot_and_compaction() -> None:
    st = Storage(history_size=100)
    rk = ("", "configmaps")
    _commit(st, "ADDED", "a", "1")  # rv 1
    _commit(st, "ADDED", "b", "1")  # rv 2
    _commit(st, "MODIFIED", "a", "2")  # rv 3
    _commit(st, "DELETED", "b", "1")  # rv 4
    at = {
        rv: [(o["metadata"]["name"], o["data"]) for o in st.snapshot(rk, None, rv)]
        for rv in range(5)
    }
    assert at[0] == []
    assert at[1] == [("a", "1")]
    assert at[2] == [("a", "1"), ("b", "1")]
    assert at[3] == [("a", "2"), ("b", "1")]
    assert at[4] == [("a", "2")]
    assert st.by_uid("a") is not None and st.by_uid("b") is None
    st.compact()
    with pytest.raises(StatusError) as ei:
        st.snapshot(rk, None, 3)
    assert ei.value.code == 410 and ei.value.message == "too old resource version: 3 (4)"
    assert len(st.snapshot(rk, None, 4)) == 1


def test_storage_history_bound() -> None:
    st = Storage(history_size=2)
    for i in range(5):
        _commit(st, "ADDED", f"o{i}", "x")
    assert st.oldest_resource_version == 3
    with pytest.raises(StatusError):
        st.snapshot(("", "configmaps"), None, 2)
    assert len(st.snapshot(("", "configmaps"), None, 3)) == 3


def test_registry() -> None:
    reg = Registry()
    gen = reg.generation
    rt = ResourceType(group="g", version="v1", kind="Thing", plural="things")
    reg.add(rt)
    assert reg.generation > gen
    assert reg.get("g", "v1", "things") is rt
    assert reg.by_kind("g", "v1", "Thing") is rt
    assert reg.all() == [rt]
    assert reg.remove("g", "v1", "things") is rt
    assert reg.get("g", "v1", "things") is None and reg.by_kind("g", "v1", "Thing") is None
