"""Server-side apply and ``managedFields`` on the embedded API server, over
HTTP, following the cases of the Kubernetes "Server-Side Apply" docs: a
second manager's conflict, ``force`` transferring ownership, shared ownership
of equal values, removal of a field its only applier drops (and not when
another manager owns it), list merge by key (CRD ``map``/``set``/``atomic``
lists and a Deployment's containers and ports), ``Update`` entries for every
other write, and the real ``kubectl apply --server-side``."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
CM = "/api/v1/namespaces/default/configmaps"
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"

GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer"},
                                    "color": {"type": "string"},
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name", "protocol"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"type": "string"},
                                                "protocol": {
                                                    "type": "string",
                                                    "default": "TCP",
                                                },
                                                "port": {"type": "integer"},
                                            },
                                        },
                                    },
                                    "tags": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"},
                                    },
                                    "args": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    return functools.partial(call, apiserver)


def apply(
    raw: Raw, path: str, obj: dict[str, Any], manager: str, *, force: bool = False
) -> tuple[int, Any]:
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    code, _, body = raw("PATCH", path + query, json.dumps(obj).encode(), APPLY)
    return code, body


def deployment(
    replicas: int | None = None,
    containers: list[dict[str, Any]] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": containers or [{"name": "nginx", "image": "nginx:1.27"}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", **meta},
        "spec": spec,
    }


def gadget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": spec,
    }


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """managedFields by manager name (one entry per name in these tests)."""
    return {e.get("manager", ""): e for e in obj["metadata"].get("managedFields") or []}


def fields(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    fv1: dict[str, Any] = entries(obj)[manager]["fieldsV1"]
    return fv1


# --- managedFields -----------------------------------------------------------------


def test_apply_records_an_apply_entry_served_on_get(raw: Raw) -> None:
    containers = [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]
    code, created = apply(raw, f"{DEPLOY}/web", deployment(2, containers), "alice")
    assert code == 201
    code, _, got = raw("GET", f"{DEPLOY}/web")
    assert code == 200
    assert got["metadata"]["managedFields"] == created["metadata"]["managedFields"]
    (entry,) = got["metadata"]["managedFields"]
    assert entry["manager"] == "alice"
    assert entry["operation"] == "Apply"
    assert entry["apiVersion"] == "apps/v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["time"].endswith("Z")
    assert "subresource" not in entry
    # kube's encoding: a container by its name key, a port by containerPort and
    # the defaulted protocol; a list item owned as a whole carries ".".
    assert entry["fieldsV1"] == {
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                }
                            },
                        }
                    }
                },
            },
        }
    }
    # Lists and watches carry them too.
    code, _, lst = raw("GET", DEPLOY)
    assert lst["items"][0]["metadata"]["managedFields"] == got["metadata"]["managedFields"]


def test_apply_patch_may_not_set_managed_fields_or_another_version(raw: Raw) -> None:
    obj = deployment(1)
    obj["metadata"]["managedFields"] = [{"manager": "x"}]
    code, st = apply(raw, f"{DEPLOY}/web", obj, "alice")
    assert code == 400 and st["message"] == "metadata.managedFields must be nil"
    bad = deployment(1)
    bad["apiVersion"] = "apps/v1beta1"
    code, st = apply(raw, f"{DEPLOY}/web", bad, "alice")
    assert code == 400
    # versionCheckManager, the field manager's outermost layer: what the patch
    # names must be exactly the endpoint's group, version and kind.
    assert st["message"] == "invalid object type: apps/v1beta1, Kind=Deployment"


# --- conflicts and ownership --------------------------------------------------------


def test_second_manager_changing_an_owned_field_conflicts(raw: Raw) -> None:
    assert apply(raw, f"{DEPLOY}/web", deployment(2), "alice")[0] == 201
    code, st = apply(raw, f"{DEPLOY}/web", deployment(3), "bob")
    assert code == 409
    assert st["kind"] == "Status" and st["reason"] == "Conflict" and st["code"] == 409
    assert st["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert st["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "alice"',
            "field": ".spec.replicas",
        }
    ]
    code, _, got = raw("GET", f"{DEPLOY}/web")
    assert got["spec"]["replicas"] == 2
    assert set(entries(got)) == {"alice"}


def test_conflicts_with_several_fields_are_listed_per_manager(raw: Raw) -> None:
    assert apply(raw, f"{DEPLOY}/web", deployment(2), "alice")[0] == 201
    other = deployment(3, [{"name": "nginx", "image": "nginx:1.28"}])
    code, st = apply(raw, f"{DEPLOY}/web", other, "bob")
    assert code == 409
    assert st["message"] == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="nginx"].image'
    )
    assert [c["field"] for c in st["details"]["causes"]] == [
        ".spec.replicas",
        '.spec.template.spec.containers[name="nginx"].image',
    ]


def test_force_transfers_ownership(raw: Raw) -> None:
    assert apply(raw, f"{DEPLOY}/web", deployment(2), "alice")[0] == 201
    code, got = apply(raw, f"{DEPLOY}/web", deployment(3), "bob", force=True)
    assert code == 200 and got["spec"]["replicas"] == 3
    assert "f:replicas" in fields(got, "bob")["f:spec"]
    assert "f:replicas" not in fields(got, "alice")["f:spec"]
    # The fields both applied with equal values stay shared.
    assert "f:selector" in fields(got, "alice")["f:spec"]
    # Now alice is the one who conflicts.
    code, st = apply(raw, f"{DEPLOY}/web", deployment(2), "alice")
    assert code == 409
    assert st["message"] == 'Apply failed with 1 conflict: conflict with "bob": .spec.replicas'


def test_equal_values_share_ownership_without_conflict(raw: Raw) -> None:
    assert apply(raw, f"{DEPLOY}/web", deployment(2), "alice")[0] == 201
    code, got = apply(raw, f"{DEPLOY}/web", deployment(2), "bob")
    assert code == 200
    assert "f:replicas" in fields(got, "alice")["f:spec"]
    assert "f:replicas" in fields(got, "bob")["f:spec"]
    # A shared field can change only if every co-owner agrees (or by force).
    code, st = apply(raw, f"{DEPLOY}/web", deployment(4), "alice")
    assert code == 409 and 'conflict with "bob": .spec.replicas' in st["message"]


def test_reapplying_the_same_configuration_is_a_no_op(raw: Raw) -> None:
    code, first = apply(raw, f"{DEPLOY}/web", deployment(2), "alice")
    code, again = apply(raw, f"{DEPLOY}/web", deployment(2), "alice")
    assert code == 200
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"]


def test_update_takes_ownership_and_later_apply_conflicts_with_it(raw: Raw) -> None:
    assert apply(raw, f"{DEPLOY}/web", deployment(2), "alice")[0] == 201
    code, _, got = raw(
        "PATCH", f"{DEPLOY}/web?fieldManager=scaler", {"spec": {"replicas": 5}}, MERGE
    )
    assert code == 200
    scaler = entries(got)["scaler"]
    assert scaler["operation"] == "Update" and scaler["apiVersion"] == "apps/v1"
    assert scaler["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in fields(got, "alice")["f:spec"]
    code, st = apply(raw, f"{DEPLOY}/web", deployment(2), "alice")
    assert code == 409
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "scaler" using apps/v1: .spec.replicas'
    )


# --- removal of dropped fields ------------------------------------------------------


def test_a_field_its_only_applier_drops_is_removed(raw: Raw) -> None:
    code, _ = apply(
        raw, f"{DEPLOY}/web", deployment(2, **{"labels": {"a": "1", "b": "2"}}), "alice"
    )
    assert code == 201
    code, got = apply(raw, f"{DEPLOY}/web", deployment(None, **{"labels": {"a": "1"}}), "alice")
    assert code == 200
    assert got["metadata"]["labels"] == {"a": "1"}
    assert "f:replicas" not in fields(got, "alice")["f:spec"]
    # replicas was dropped from the object (the Deployment default then applies).
    assert got["spec"]["replicas"] == 1


def test_a_dropped_field_another_applier_owns_stays(raw: Raw) -> None:
    assert apply(raw, f"{CM}/c", configmap(a="1", b="2"), "alice")[0] == 201
    assert apply(raw, f"{CM}/c", configmap(b="2"), "bob")[0] == 200
    code, got = apply(raw, f"{CM}/c", configmap(a="1"), "alice")
    assert code == 200
    assert got["data"] == {"a": "1", "b": "2"}  # b is still bob's
    code, got = apply(raw, f"{CM}/c", configmap(), "bob")
    assert got["data"] == {"a": "1"}  # now nobody else wants b


def test_a_dropped_field_an_updater_changed_stays(raw: Raw) -> None:
    assert apply(raw, f"{CM}/c", configmap(a="1", b="2"), "alice")[0] == 201
    code, _, _ = raw("PATCH", f"{CM}/c?fieldManager=editor", {"data": {"b": "3"}}, MERGE)
    assert code == 200
    code, got = apply(raw, f"{CM}/c", configmap(a="1"), "alice")
    assert code == 200
    assert got["data"] == {"a": "1", "b": "3"}
    assert fields(got, "editor") == {"f:data": {"f:b": {}}}


def configmap(**data: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    if data:
        obj["data"] = data
    return obj


# --- lists merge by key -------------------------------------------------------------


def test_deployment_containers_merge_by_name_and_ports_by_port_and_protocol(raw: Raw) -> None:
    base = [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]
    assert apply(raw, f"{DEPLOY}/web", deployment(1, base), "alice")[0] == 201
    sidecar = [
        {"name": "nginx", "ports": [{"containerPort": 9090, "protocol": "TCP"}]},
        {"name": "log", "image": "busybox"},
    ]
    code, got = apply(raw, f"{DEPLOY}/web", deployment(None, sidecar), "bob")
    assert code == 200
    containers = got["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["nginx", "log"]
    assert containers[0]["image"] == "nginx:1.27"
    assert [p["containerPort"] for p in containers[0]["ports"]] == [80, 9090]
    bob = fields(got, "bob")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert set(bob) == {'k:{"name":"log"}', 'k:{"name":"nginx"}'}
    assert 'k:{"containerPort":9090,"protocol":"TCP"}' in bob['k:{"name":"nginx"}']["f:ports"]
    # bob drops his sidecar: it goes, alice's container stays whole.
    code, got = apply(raw, f"{DEPLOY}/web", deployment(None, sidecar[:1]), "bob")
    containers = got["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["nginx"]
    assert [p["containerPort"] for p in containers[0]["ports"]] == [80, 9090]


def test_custom_resource_lists_follow_their_list_type(apiserver: APIServer, raw: Raw) -> None:
    apiserver.install_crd(GADGET_CRD)
    a = gadget(
        size=1,
        ports=[{"name": "http", "port": 80}],
        tags=["a", "b"],
        args=["--x"],
    )
    assert apply(raw, f"{GADGETS}/g", a, "alice")[0] == 201
    b = gadget(ports=[{"name": "metrics", "port": 9090}], tags=["c"], args=["--y"])
    code, got = apply(raw, f"{GADGETS}/g", b, "bob")
    assert code == 409  # args is atomic: replacing it conflicts with alice
    assert st_fields(got) == [".spec.args"]
    code, got = apply(raw, f"{GADGETS}/g", b, "bob", force=True)
    assert code == 200
    spec = got["spec"]
    assert [p["name"] for p in spec["ports"]] == ["http", "metrics"]  # map: merged by key
    assert spec["tags"] == ["a", "b", "c"]  # set: union
    assert spec["args"] == ["--y"]  # atomic: replaced whole
    alice = fields(got, "alice")["f:spec"]
    assert 'k:{"name":"http","protocol":"TCP"}' in alice["f:ports"]
    assert set(alice["f:tags"]) == {'v:"a"', 'v:"b"'}
    assert "f:args" not in alice
    assert fields(got, "bob")["f:spec"]["f:args"] == {}
    # alice drops the http port and tag "a": only her items go.
    code, got = apply(raw, f"{GADGETS}/g", gadget(size=1, tags=["b"]), "alice")
    assert code == 200
    assert [p["name"] for p in got["spec"]["ports"]] == ["metrics"]
    assert got["spec"]["tags"] == ["b", "c"]
    # A changed item value of another manager's key conflicts on that field only.
    code, st = apply(raw, f"{GADGETS}/g", gadget(ports=[{"name": "metrics", "port": 1}]), "carol")
    assert code == 409
    assert st_fields(st) == ['.spec.ports[name="metrics",protocol="TCP"].port']


def st_fields(status: dict[str, Any]) -> list[str]:
    return [c["field"] for c in status["details"]["causes"]]


def test_status_writes_are_owned_through_the_status_subresource(
    apiserver: APIServer, raw: Raw
) -> None:
    apiserver.install_crd(GADGET_CRD)
    assert apply(raw, f"{GADGETS}/g", gadget(size=1), "alice")[0] == 201
    body = {**gadget(), "status": {"phase": "Ready"}}
    code, got = apply(raw, f"{GADGETS}/g/status", body, "ctrl")
    assert code == 200 and got["status"] == {"phase": "Ready"}
    ctrl = entries(got)["ctrl"]
    assert ctrl["subresource"] == "status" and ctrl["operation"] == "Apply"
    assert ctrl["fieldsV1"] == {"f:status": {"f:phase": {}}}
    # The main resource never owns status: an apply there ignores it.
    code, got = apply(raw, f"{GADGETS}/g", {**gadget(size=1), "status": {"phase": "X"}}, "alice")
    assert code == 200 and got["status"] == {"phase": "Ready"}
    assert "f:status" not in fields(got, "alice")
    # An Update through /status names the subresource too.
    got["status"] = {"phase": "Done"}
    code, _, got = raw("PUT", f"{GADGETS}/g/status?fieldManager=ctrl", got)
    assert code == 200
    updates = [e for e in got["metadata"]["managedFields"] if e["operation"] == "Update"]
    assert updates == [
        {
            "manager": "ctrl",
            "operation": "Update",
            "apiVersion": "example.com/v1",
            "time": updates[0]["time"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:status": {"f:phase": {}}},
            "subresource": "status",
        }
    ]


# --- Update entries -----------------------------------------------------------------


def test_non_apply_writes_record_update_entries(raw: Raw) -> None:
    code, _, got = raw("POST", f"{CM}?fieldManager=maker", configmap(a="1"))
    assert code == 201
    (entry,) = got["metadata"]["managedFields"]
    assert entry["manager"] == "maker" and entry["operation"] == "Update"
    assert entry["apiVersion"] == "v1"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    got["data"]["b"] = "2"
    code, _, got = raw("PUT", f"{CM}/c?fieldManager=putter", got)
    assert fields(got, "putter") == {"f:data": {"f:b": {}}}
    code, _, got = raw(
        "PATCH",
        f"{CM}/c?fieldManager=jsonpatcher",
        [{"op": "add", "path": "/data/c", "value": "3"}],
        "application/json-patch+json",
    )
    assert fields(got, "jsonpatcher") == {"f:data": {"f:c": {}}}
    code, _, got = raw(
        "PATCH",
        f"{CM}/c",
        {"data": {"a": "9"}},
        "application/strategic-merge-patch+json",
        headers={"User-Agent": "my-controller/1.2 (linux/amd64)"},
    )
    # Without fieldManager the manager is the User-Agent's product name.
    assert fields(got, "my-controller") == {"f:data": {"f:a": {}}}
    assert fields(got, "maker") == {"f:data": {}}  # a moved away; it keeps the map
    # A write that changes nothing records nothing.
    before = got["metadata"]["managedFields"]
    code, _, same = raw("PATCH", f"{CM}/c?fieldManager=idle", {"data": {"a": "9"}}, MERGE)
    assert same["metadata"]["managedFields"] == before
    assert same["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]


def test_scale_writes_record_the_scale_subresource(raw: Raw) -> None:
    assert apply(raw, f"{DEPLOY}/web", deployment(2), "alice")[0] == 201
    code, _, _ = raw(
        "PATCH", f"{DEPLOY}/web/scale?fieldManager=hpa", {"spec": {"replicas": 4}}, MERGE
    )
    assert code == 200
    code, _, got = raw("GET", f"{DEPLOY}/web")
    hpa = entries(got)["hpa"]
    assert hpa["subresource"] == "scale" and hpa["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in fields(got, "alice")["f:spec"]


def test_managed_fields_can_be_reset_by_an_update(raw: Raw) -> None:
    assert apply(raw, f"{CM}/c", configmap(a="1"), "alice")[0] == 201
    code, _, got = raw(
        "PATCH", f"{CM}/c?fieldManager=admin", {"metadata": {"managedFields": [{}]}}, MERGE
    )
    assert code == 200 and "managedFields" not in got["metadata"]
    # skipNonAppliedManager: the next apply first gives what the object holds
    # to "before-first-apply", so changing data.a conflicts with it...
    code, st = apply(raw, f"{CM}/c", configmap(a="2"), "bob")
    assert code == 409, st
    assert st["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a'
    )
    # ...and force takes it.
    code, got = apply(raw, f"{CM}/c", configmap(a="2"), "bob", force=True)
    assert code == 200 and got["data"] == {"a": "2"}


# --- kubectl ------------------------------------------------------------------------

KUBECTL = shutil.which("kubectl")

DEPLOYMENT_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
"""


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_server_side_conflicts_and_force(
    apiserver: APIServer, raw: Raw, tmp_path: Path
) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "c")]

    def kubectl(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*base, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
        )

    first = kubectl("apply", "--server-side", "-f", "-", stdin=DEPLOYMENT_YAML.format(replicas=2))
    assert first.returncode == 0, first.stderr
    assert "serverside-applied" in first.stdout
    code, _, got = raw("GET", f"{DEPLOY}/web")
    assert entries(got)["kubectl"]["operation"] == "Apply"

    # Another manager takes replicas; kubectl's next apply conflicts with it.
    assert apply(raw, f"{DEPLOY}/web", deployment(5), "autoscaler", force=True)[0] == 200
    again = kubectl("apply", "--server-side", "-f", "-", stdin=DEPLOYMENT_YAML.format(replicas=3))
    assert again.returncode != 0
    assert 'conflict with "autoscaler": .spec.replicas' in again.stderr

    forced = kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        stdin=DEPLOYMENT_YAML.format(replicas=3),
    )
    assert forced.returncode == 0, forced.stderr
    code, _, got = raw("GET", f"{DEPLOY}/web")
    assert got["spec"]["replicas"] == 3
    assert "f:replicas" in fields(got, "kubectl")["f:spec"]
    assert "f:replicas" not in fields(got, "autoscaler")["f:spec"]
