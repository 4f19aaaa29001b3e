"""Fields of features whose gate is off by default in kube 1.32 are dropped
from Pods and pod templates on create and update (``dropDisabledFields``,
from the strategies' PrepareForCreate/PrepareForUpdate), unless the stored
object already used them; over HTTP."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"
RESIZE = [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def gated_spec() -> dict[str, Any]:
    """A pod spec setting a field of each gate that is off in 1.32."""
    return {
        "hostUsers": False,  # UserNamespacesSupport
        "securityContext": {
            "supplementalGroupsPolicy": "Strict",  # SupplementalGroupsPolicy
            "seLinuxChangePolicy": "Recursive",  # SELinuxChangePolicy
        },
        "resources": {"limits": {"cpu": "1"}},  # PodLevelResources
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],  # DRA
        "volumes": [
            {"name": "img", "image": {"reference": "busybox:1"}},  # ImageVolume
            {
                "name": "proj",
                "projected": {
                    "sources": [
                        {"clusterTrustBundle": {"name": "b", "path": "ca.pem"}},
                        {"configMap": {"name": "cm"}},
                    ]
                },
            },
        ],
        "containers": [
            {
                "name": "c",
                "image": "nginx:1",
                "resizePolicy": RESIZE,  # InPlacePodVerticalScaling
                "securityContext": {"procMount": "Unmasked"},  # ProcMountType
                "resources": {"claims": [{"name": "gpu"}]},  # DRA
                "volumeMounts": [
                    {"name": "img", "mountPath": "/img"},
                    {"name": "proj", "mountPath": "/proj"},
                ],
            }
        ],
    }


def assert_dropped(spec: dict[str, Any]) -> None:
    assert "hostUsers" not in spec
    assert spec["securityContext"] == {}
    assert "resources" not in spec
    assert "resourceClaims" not in spec
    names = [v["name"] for v in spec["volumes"]]
    assert [n for n in names if not n.startswith("kube-api-access-")] == ["proj"]
    assert spec["volumes"][0]["projected"]["sources"] == [{}, {"configMap": {"name": "cm"}}]
    (c,) = spec["containers"]
    assert "resizePolicy" not in c
    assert c["securityContext"] == {"procMount": "Default"}  # forced, not removed
    assert "claims" not in c.get("resources", {})
    mounts = [m for m in c["volumeMounts"] if not m["name"].startswith("kube-api-access-")]
    assert mounts == [{"name": "proj", "mountPath": "/proj"}]


def pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def template(spec: dict[str, Any], restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": restart, **spec}}


def deployment(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template(spec)},
    }


def cronjob(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": template(spec, "Never")}},
        },
    }


def created(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, body)
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def replaced(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "PUT", f"{path}/{body['metadata']['name']}", body)
    assert code == 200, out
    assert isinstance(out, dict)
    return out


def store(
    server: APIServer, rkey: tuple[str, str], name: str, change: Callable[[Any], None]
) -> dict[str, Any]:
    """Rewrite the stored object as a server with the gates on would have
    stored it (no client can create it here): the object as now stored."""
    storage = server.storage
    with storage.lock:
        old = storage.get(rkey, "default", name)
        assert old is not None
        new = copy.deepcopy(old)
        change(new)
        return copy.deepcopy(storage.commit("MODIFIED", rkey, new, old))


def relabel(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {})["touched"] = "yes"
    return obj


# --- Pods --------------------------------------------------------------------------


def test_a_pod_is_created_without_the_gated_fields(server: APIServer) -> None:
    out = created(server, f"{NS}/pods", pod("p-create", gated_spec()))
    assert_dropped(out["spec"])
    code, got = request(server, "GET", f"{NS}/pods/p-create")
    assert code == 200
    assert got["spec"] == out["spec"]


def test_a_pod_update_drops_fields_the_stored_pod_did_not_use(server: APIServer) -> None:
    plain = {"containers": [{"name": "c", "image": "nginx:1"}]}
    out = created(server, f"{NS}/pods", pod("p-drop", plain))
    out["spec"]["hostUsers"] = False
    out["spec"]["securityContext"]["seLinuxChangePolicy"] = "Recursive"
    out["spec"]["containers"][0]["resizePolicy"] = RESIZE
    # Dropped before validation: no forbidden spec change is left. (A new
    # procMount is not dropped but forced to Default: a forbidden change.)
    got = replaced(server, f"{NS}/pods", relabel(out))
    assert got["metadata"]["labels"] == {"touched": "yes"}
    assert "hostUsers" not in got["spec"]
    assert got["spec"]["securityContext"] == {}
    assert "resizePolicy" not in got["spec"]["containers"][0]


def test_a_pod_update_keeps_fields_the_stored_pod_used(server: APIServer) -> None:
    plain = {"containers": [{"name": "c", "image": "nginx:1"}]}
    created(server, f"{NS}/pods", pod("p-keep", plain))

    def gated(obj: dict[str, Any]) -> None:
        spec = obj["spec"]
        spec["hostUsers"] = False
        spec["securityContext"] = {"seLinuxChangePolicy": "Recursive"}
        spec["containers"][0]["resizePolicy"] = RESIZE
        spec["containers"][0]["securityContext"] = {"procMount": "Unmasked"}

    stored = store(server, ("", "pods"), "p-keep", gated)
    # A field of another gate the stored pod did not use is still dropped.
    stored["spec"]["securityContext"]["supplementalGroupsPolicy"] = "Strict"
    got = replaced(server, f"{NS}/pods", relabel(stored))
    assert got["metadata"]["labels"] == {"touched": "yes"}
    assert got["spec"]["hostUsers"] is False
    assert got["spec"]["securityContext"] == {"seLinuxChangePolicy": "Recursive"}
    assert got["spec"]["containers"][0]["resizePolicy"] == RESIZE
    assert got["spec"]["containers"][0]["securityContext"] == {"procMount": "Unmasked"}


def test_a_pod_status_write_drops_the_gated_status_fields(server: APIServer) -> None:
    out = created(
        server, f"{NS}/pods", pod("p-status", {"containers": [{"name": "c", "image": "nginx:1"}]})
    )
    out["status"]["resize"] = "Proposed"
    out["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "gpu"}]
    out["status"]["containerStatuses"] = [
        {
            "name": "c",
            "image": "nginx:1",
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}},
            "allocatedResources": {"cpu": "1"},
            "resources": {"requests": {"cpu": "1"}},
            "allocatedResourcesStatus": [{"name": "cpu", "resources": []}],
            "user": {"linux": {"uid": 0, "gid": 0}},
        }
    ]
    code, got = request(server, "PUT", f"{NS}/pods/p-status/status", out)
    assert code == 200, got
    status = got["status"]
    assert "resize" not in status
    assert "resourceClaimStatuses" not in status
    (cs,) = status["containerStatuses"]
    for field in ("allocatedResources", "resources", "allocatedResourcesStatus", "user"):
        assert field not in cs, field
    assert cs["state"] == {"waiting": {"reason": "ContainerCreating"}}


# --- pod templates -------------------------------------------------------------------


def test_a_deployment_template_is_created_without_the_gated_fields(server: APIServer) -> None:
    out = created(server, f"{APPS}/deployments", deployment("d-create", gated_spec()))
    assert_dropped(out["spec"]["template"]["spec"])


def test_a_deployment_update_drops_fields_the_stored_template_did_not_use(
    server: APIServer,
) -> None:
    plain = {"containers": [{"name": "c", "image": "nginx:1"}]}
    out = created(server, f"{APPS}/deployments", deployment("d-drop", plain))
    out["spec"]["template"]["spec"] = gated_spec()
    got = replaced(server, f"{APPS}/deployments", out)
    assert_dropped(got["spec"]["template"]["spec"])


def test_a_deployment_update_keeps_fields_the_stored_template_used(server: APIServer) -> None:
    plain = {"containers": [{"name": "c", "image": "nginx:1"}]}
    created(server, f"{APPS}/deployments", deployment("d-keep", plain))

    def gated(obj: dict[str, Any]) -> None:
        spec = obj["spec"]["template"]["spec"]
        spec["hostUsers"] = False
        spec["securityContext"] = {"supplementalGroupsPolicy": "Strict"}
        spec["resources"] = {"limits": {"cpu": "1"}}
        spec["containers"][0]["resizePolicy"] = RESIZE

    stored = store(server, ("apps", "deployments"), "d-keep", gated)
    # A later update, from a client that has read the stored object back;
    # fields of other gates, which the stored template did not use, dropped.
    spec = stored["spec"]["template"]["spec"]
    spec["containers"][0]["image"] = "nginx:2"
    spec["securityContext"]["seLinuxChangePolicy"] = "Recursive"
    spec["volumes"] = [{"name": "img", "image": {"reference": "busybox:1"}}]
    got = replaced(server, f"{APPS}/deployments", stored)
    spec = got["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "nginx:2"
    assert "volumes" not in spec
    assert spec["hostUsers"] is False
    assert spec["securityContext"] == {"supplementalGroupsPolicy": "Strict"}
    assert spec["resources"] == {"limits": {"cpu": "1"}}
    assert spec["containers"][0]["resizePolicy"] == RESIZE


def test_a_cronjob_job_template_is_created_without_the_gated_fields(server: APIServer) -> None:
    out = created(server, f"{BATCH}/cronjobs", cronjob("cj-create", gated_spec()))
    assert_dropped(out["spec"]["jobTemplate"]["spec"]["template"]["spec"])


def test_a_cronjob_update_drops_and_keeps_by_what_the_stored_template_used(
    server: APIServer,
) -> None:
    plain = {"containers": [{"name": "c", "image": "nginx:1"}]}
    out = created(server, f"{BATCH}/cronjobs", cronjob("cj-update", plain))
    spec = out["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    spec["hostUsers"] = False
    got = replaced(server, f"{BATCH}/cronjobs", out)
    assert "hostUsers" not in got["spec"]["jobTemplate"]["spec"]["template"]["spec"]

    def gated(obj: dict[str, Any]) -> None:
        obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["hostUsers"] = False

    stored = store(server, ("batch", "cronjobs"), "cj-update", gated)
    stored["spec"]["schedule"] = "*/10 * * * *"
    got = replaced(server, f"{BATCH}/cronjobs", stored)
    assert got["spec"]["schedule"] == "*/10 * * * *"
    tspec = got["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert tspec["hostUsers"] is False


@pytest.mark.parametrize(
    ("path", "body", "at"),
    [
        (
            f"{APPS}/replicasets",
            {"spec": {"selector": {"matchLabels": {"app": "x"}}}},
            ("spec", "template"),
        ),
        (
            f"{APPS}/statefulsets",
            {"spec": {"selector": {"matchLabels": {"app": "x"}}, "serviceName": "s"}},
            ("spec", "template"),
        ),
        (
            f"{APPS}/daemonsets",
            {"spec": {"selector": {"matchLabels": {"app": "x"}}}},
            ("spec", "template"),
        ),
        (f"{BATCH}/jobs", {"spec": {}}, ("spec", "template")),
        (
            f"{NS}/replicationcontrollers",
            {"spec": {"selector": {"app": "x"}}},
            ("spec", "template"),
        ),
        (f"{NS}/podtemplates", {}, ("template",)),
    ],
)
def test_every_pod_template_drops_the_gated_fields(
    server: APIServer, path: str, body: dict[str, Any], at: tuple[str, ...]
) -> None:
    kind = {
        "replicasets": ("apps/v1", "ReplicaSet"),
        "statefulsets": ("apps/v1", "StatefulSet"),
        "daemonsets": ("apps/v1", "DaemonSet"),
        "jobs": ("batch/v1", "Job"),
        "replicationcontrollers": ("v1", "ReplicationController"),
        "podtemplates": ("v1", "PodTemplate"),
    }[path.rsplit("/", 1)[1]]
    obj: dict[str, Any] = {
        "apiVersion": kind[0],
        "kind": kind[1],
        "metadata": {"name": "t"},
        **copy.deepcopy(body),
    }
    holder = obj
    for key in at[:-1]:
        holder = holder[key]
    holder[at[-1]] = template(gated_spec(), "Never" if kind[1] == "Job" else "Always")
    out = created(server, path, obj)
    for key in at:
        out = out[key]
    assert_dropped(out["spec"])
