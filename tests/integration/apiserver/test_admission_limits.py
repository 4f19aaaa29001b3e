"""kube-apiserver 1.32's LimitRanger admission plugin over HTTP: default
container resources from a namespace's LimitRanges, the
``kubernetes.io/limit-ranger`` annotation, and the min / max / ratio checks
for containers, pods and PersistentVolumeClaims (kube's 403s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request
from support.objects import claim, container, pod

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"
CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
LIMIT_RANGES = "/api/v1/namespaces/default/limitranges"
ANNOTATION = "kubernetes.io/limit-ranger"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def limit_range(name: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name},
        "spec": {"limits": list(items)},
    }


def make(server: APIServer, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, obj)
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def assert_forbidden(out: Any, kind: str, name: str, why: str) -> None:
    assert out == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind} "{name}" is forbidden: {why}',
        "reason": "Forbidden",
        "details": {"name": name, "kind": kind},
        "code": 403,
    }


def test_container_defaults_and_the_annotation(server: APIServer) -> None:
    make(
        server,
        LIMIT_RANGES,
        limit_range(
            "defaults",
            {
                "type": "Container",
                "default": {"cpu": "500m", "memory": "256Mi"},
                "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
            },
        ),
    )
    out = make(
        server,
        PODS,
        pod(
            "p",
            container("bare"),
            container("limited", limits={"cpu": "200m"}),
            container("requested", requests={"memory": "64Mi"}),
            initContainers=[container("init")],
        ),
    )
    bare, limited, requested = out["spec"]["containers"]
    assert bare["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "100m", "memory": "128Mi"},
    }
    # A limit without a request is its request (SetDefaults_Pod, before admission).
    assert limited["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "128Mi"},
    }
    assert requested["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "100m", "memory": "64Mi"},
    }
    assert out["spec"]["initContainers"][0]["resources"] == bare["resources"]
    assert out["metadata"]["annotations"] == {
        ANNOTATION: "LimitRanger plugin set: cpu, memory request for container bare; "
        "cpu, memory limit for container bare; memory request for container limited; "
        "memory limit for container limited; cpu request for container requested; "
        "cpu, memory limit for container requested; cpu, memory request for init "
        "container init; cpu, memory limit for init container init"
    }
    code, got = request(server, "GET", f"{PODS}/p")
    assert code == 200
    assert got["spec"]["containers"] == out["spec"]["containers"]
    # A pod that states everything is not annotated.
    full = make(
        server,
        PODS,
        pod("full", container(limits={"cpu": "1", "memory": "1Gi"})),
    )
    assert "annotations" not in full["metadata"]


def test_the_limit_range_defaults_come_from_max_and_min(server: APIServer) -> None:
    lr = make(
        server,
        LIMIT_RANGES,
        limit_range("bounds", {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}}),
    )
    assert lr["spec"]["limits"][0]["default"] == {"cpu": "2"}
    assert lr["spec"]["limits"][0]["defaultRequest"] == {"cpu": "2", "memory": "1Mi"}
    out = make(server, PODS, pod("p"))
    assert out["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2"},
        "requests": {"cpu": "2", "memory": "1Mi"},
    }
    assert out["metadata"]["annotations"][ANNOTATION] == (
        "LimitRanger plugin set: cpu, memory request for container c; cpu limit for container c"
    )


def test_container_max_min_and_ratio_are_enforced(server: APIServer) -> None:
    make(
        server,
        LIMIT_RANGES,
        limit_range(
            "bounds",
            {
                "type": "Container",
                "max": {"cpu": "1"},
                "min": {"cpu": "100m"},
                "default": {"cpu": "500m"},
                "defaultRequest": {"cpu": "200m"},
                "maxLimitRequestRatio": {"cpu": "3"},
            },
        ),
    )
    code, out = request(server, "POST", PODS, pod("p", container(limits={"cpu": "2"})))
    assert code == 403
    assert_forbidden(out, "pods", "p", "maximum cpu usage per Container is 1, but limit is 2")
    code, out = request(
        server, "POST", PODS, pod("p", container(requests={"cpu": "50m"}, limits={"cpu": "1"}))
    )
    assert code == 403
    assert_forbidden(
        out,
        "pods",
        "p",
        "[minimum cpu usage per Container is 100m, but request is 50m, "
        "cpu max limit to request ratio per Container is 3, but provided ratio is 20.000000]",
    )
    code, out = request(
        server,
        "POST",
        PODS,
        pod("p", container(requests={"cpu": "300m"}, limits={"cpu": "1"})),
    )
    assert code == 403
    assert_forbidden(
        out,
        "pods",
        "p",
        "cpu max limit to request ratio per Container is 3, but provided ratio is 3.333333",
    )
    # An init container is checked as well; a generated name is the one shown.
    bad = pod("", initContainers=[container("i", limits={"cpu": "2"})])
    bad["metadata"] = {"generateName": "gen-"}
    code, out = request(server, "POST", PODS, bad)
    assert code == 403
    name = out["details"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5
    assert_forbidden(out, "pods", name, "maximum cpu usage per Container is 1, but limit is 2")
    code, _ = request(server, "GET", f"{PODS}/{name}")
    assert code == 404
    out = make(server, PODS, pod("ok", container(requests={"cpu": "400m"}, limits={"cpu": "1"})))
    assert out["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1"},
        "requests": {"cpu": "400m"},
    }


def test_a_container_max_is_its_default_limit(server: APIServer) -> None:
    make(server, LIMIT_RANGES, limit_range("mem", {"type": "Container", "max": {"memory": "1Gi"}}))
    out = make(server, PODS, pod("bare", container(requests={"memory": "100Mi"})))
    assert out["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "1Gi"},
        "requests": {"memory": "100Mi"},
    }
    assert out["metadata"]["annotations"][ANNOTATION] == (
        "LimitRanger plugin set: memory limit for container c"
    )
    code, out = request(server, "POST", PODS, pod("big", container(limits={"memory": "1536Mi"})))
    assert code == 403
    assert_forbidden(
        out, "pods", "big", "maximum memory usage per Container is 1Gi, but limit is 1536Mi"
    )


def test_pod_limits_sum_the_containers(server: APIServer) -> None:
    make(
        server,
        LIMIT_RANGES,
        limit_range("pod", {"type": "Pod", "max": {"cpu": "1", "memory": "1Gi"}}),
    )
    code, out = request(
        server,
        "POST",
        PODS,
        pod(
            "p",
            container("a", limits={"cpu": "600m", "memory": "512Mi"}),
            container("b", limits={"cpu": "600m", "memory": "512Mi"}),
        ),
    )
    assert code == 403
    assert_forbidden(out, "pods", "p", "maximum cpu usage per Pod is 1, but limit is 1200m")
    code, out = request(
        server,
        "POST",
        PODS,
        pod("p", container("a", limits={"cpu": "1"}), container("b", requests={"cpu": "1m"})),
    )
    assert code == 403
    assert_forbidden(
        out,
        "pods",
        "p",
        "[maximum cpu usage per Pod is 1, but request is 1001m, "
        "maximum memory usage per Pod is 1Gi.  No limit is specified]",
    )
    # An init container counts as its most (here 2Gi > the containers' 512Mi).
    code, out = request(
        server,
        "POST",
        PODS,
        pod(
            "p",
            container("a", limits={"cpu": "500m", "memory": "512Mi"}),
            initContainers=[container("i", limits={"cpu": "100m", "memory": "2Gi"})],
        ),
    )
    assert code == 403
    assert_forbidden(out, "pods", "p", "maximum memory usage per Pod is 1Gi, but limit is 2Gi")
    # A sidecar (restartPolicy Always) adds to the containers.
    sidecar = container("s", limits={"cpu": "600m", "memory": "100Mi"})
    sidecar["restartPolicy"] = "Always"
    code, out = request(
        server,
        "POST",
        PODS,
        pod(
            "p",
            container("a", limits={"cpu": "500m", "memory": "512Mi"}),
            initContainers=[sidecar],
        ),
    )
    assert code == 403
    assert_forbidden(out, "pods", "p", "maximum cpu usage per Pod is 1, but limit is 1100m")
    make(
        server,
        PODS,
        pod(
            "ok",
            container("a", limits={"cpu": "500m", "memory": "512Mi"}),
            container("b", limits={"cpu": "500m", "memory": "512Mi"}),
        ),
    )


def test_a_pod_update_is_not_checked(server: APIServer) -> None:
    out = make(server, PODS, pod("p"))
    make(server, LIMIT_RANGES, limit_range("min", {"type": "Container", "min": {"cpu": "1"}}))
    out["metadata"]["labels"] = {"a": "b"}
    code, out = request(server, "PUT", f"{PODS}/p", out)
    assert code == 200, out
    assert out["spec"]["containers"][0]["resources"] == {}
    assert "annotations" not in out["metadata"]
    # A new pod gets the min as its request, and is refused a lower one.
    assert make(server, PODS, pod("q"))["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}
    }
    code, out = request(server, "POST", PODS, pod("r", container(limits={"cpu": "500m"})))
    assert code == 403
    assert_forbidden(out, "pods", "r", "minimum cpu usage per Container is 1, but request is 500m")


def test_the_first_broken_limit_range_refuses(server: APIServer) -> None:
    make(server, LIMIT_RANGES, limit_range("a", {"type": "Container", "max": {"cpu": "2"}}))
    make(server, LIMIT_RANGES, limit_range("b", {"type": "Container", "max": {"cpu": "1"}}))
    # "a" defaults the limit to 2 (first, by name), and "b" refuses it.
    code, out = request(server, "POST", PODS, pod("p"))
    assert code == 403
    assert_forbidden(out, "pods", "p", "maximum cpu usage per Container is 1, but limit is 2")
    code, out = request(server, "POST", PODS, pod("p", container(limits={"cpu": "3"})))
    assert code == 403
    assert_forbidden(out, "pods", "p", "maximum cpu usage per Container is 2, but limit is 3")
    # Another namespace's LimitRanges do not apply.
    code, _ = request(
        server,
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    )
    assert code == 201
    out = make(server, "/api/v1/namespaces/other/pods", pod("p"))
    assert out["spec"]["containers"][0]["resources"] == {}


def test_claim_storage_min_and_max(server: APIServer) -> None:
    make(
        server,
        LIMIT_RANGES,
        limit_range(
            "storage",
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}},
        ),
    )
    code, out = request(server, "POST", CLAIMS, claim("small", "500Mi"))
    assert code == 403
    assert_forbidden(
        out,
        "persistentvolumeclaims",
        "small",
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi",
    )
    code, out = request(server, "POST", CLAIMS, claim("big", "10Gi"))
    assert code == 403
    assert_forbidden(
        out,
        "persistentvolumeclaims",
        "big",
        "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi",
    )
    out = make(server, CLAIMS, claim("ok", "2Gi"))
    assert out["spec"]["resources"] == {"requests": {"storage": "2Gi"}}
    # An update is checked too: a bound claim's resize past the max.
    out["status"] = {"phase": "Bound"}
    code, out = request(server, "PUT", f"{CLAIMS}/ok/status", out)
    assert code == 200, out
    out["spec"]["resources"]["requests"]["storage"] = "6Gi"
    code, got = request(server, "PUT", f"{CLAIMS}/ok", out)
    assert code == 403
    assert_forbidden(
        got,
        "persistentvolumeclaims",
        "ok",
        "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 6Gi",
    )
    out["spec"]["resources"]["requests"]["storage"] = "3Gi"
    code, got = request(server, "PUT", f"{CLAIMS}/ok", out)
    assert code == 200, got
    assert got["spec"]["resources"] == {"requests": {"storage": "3Gi"}}


def test_what_limit_ranger_sets_is_owned_by_no_manager(server: APIServer) -> None:
    """kube's field manager runs before admission: the writer owns the limit
    it sent and the request decoding made of it, not what LimitRanger added."""
    make(server, LIMIT_RANGES, limit_range("d", {"type": "Container", "default": {"cpu": "1"}}))
    code, out = request(
        server,
        "POST",
        f"{PODS}?fieldManager=me",
        pod("p", container(limits={"memory": "1Gi"})),
    )
    assert code == 201, out
    assert out["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "1", "memory": "1Gi"},
    }
    assert out["metadata"]["annotations"] == {
        ANNOTATION: "LimitRanger plugin set: cpu request for container c; "
        "cpu limit for container c"
    }
    (entry,) = out["metadata"]["managedFields"]
    assert "f:metadata" not in entry["fieldsV1"]
    owned = entry["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"c"}']["f:resources"]
    assert owned == {
        ".": {},
        "f:limits": {".": {}, "f:memory": {}},
        "f:requests": {".": {}, "f:memory": {}},
    }
