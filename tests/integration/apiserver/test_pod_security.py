"""kube-apiserver 1.32's PodSecurity admission plugin over HTTP: the
``pod-security.kubernetes.io/*`` namespace labels, the enforce level's 403 for
pods, the warn level's ``Warning`` header for pods and workloads, invalid
labels' 422, and the warnings of a namespace made stricter."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import call
from support.objects import container, pod

from pycontroller.testing import APIServer

NAMESPACES = "/api/v1/namespaces"
MERGE = "application/merge-patch+json"
PREFIX = "pod-security.kubernetes.io/"

RESTRICTED_DEFAULT_POD = (
    'allowPrivilegeEscalation != false (container "c" must set '
    "securityContext.allowPrivilegeEscalation=false), "
    'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
    '"RuntimeDefault" or "Localhost")'
)


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def namespace(server: APIServer, name: str, **labels: str) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {PREFIX + k: v for k, v in labels.items()}},
    }
    code, _, out = call(server, "POST", NAMESPACES, obj)
    assert code == 201, out


def pods(ns: str) -> str:
    return f"{NAMESPACES}/{ns}/pods"


def restricted_container(name: str = "c") -> dict[str, Any]:
    return {
        **container(name),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def restricted_pod(name: str) -> dict[str, Any]:
    return pod(
        name,
        restricted_container(),
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    )


def warning(text: str) -> str:
    return '299 - "' + text.replace('"', '\\"') + '"'


def assert_forbidden(out: Any, name: str, why: str) -> None:
    assert out == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "{name}" is forbidden: {why}',
        "reason": "Forbidden",
        "details": {"name": name, "kind": "pods"},
        "code": 403,
    }


def test_restricted_namespace_refuses_a_default_pod(server: APIServer) -> None:
    namespace(server, "r", enforce="restricted")
    code, headers, out = call(server, "POST", pods("r"), pod("p"))
    assert code == 403
    assert_forbidden(
        out, "p", f'violates PodSecurity "restricted:latest": {RESTRICTED_DEFAULT_POD}'
    )
    assert "Warning" not in headers
    assert call(server, "GET", f"{pods('r')}/p")[0] == 404


def test_restricted_details_name_every_container_and_honour_pod_settings(
    server: APIServer,
) -> None:
    namespace(server, "r", enforce="restricted")
    p = pod(
        "p",
        container("a"),
        restricted_container("b"),
        initContainers=[container("i")],
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    )
    code, _, out = call(server, "POST", pods("r"), p)
    assert code == 403
    assert_forbidden(
        out,
        "p",
        'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(containers "i", "a" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (containers "i", "a" must set '
        'securityContext.capabilities.drop=["ALL"])',
    )
    p = restricted_pod("q")
    p["spec"]["containers"][0]["securityContext"].update(
        {"runAsUser": 0, "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}}
    )
    p["spec"]["volumes"] = [{"name": "h", "hostPath": {"path": "/tmp"}}]
    code, _, out = call(server, "POST", pods("r"), p)
    assert code == 403
    # hostPath is reported once, as a restricted volume type (kube's overlapping
    # baseline checks are not run at the restricted level).
    assert_forbidden(
        out,
        "q",
        'violates PodSecurity "restricted:latest": unrestricted capabilities (container "c" '
        'must not include "NET_ADMIN" in securityContext.capabilities.add), '
        'restricted volume types (volumes ["h"] have restricted types), '
        'runAsUser=0 (container "c" must not set runAsUser=0)',
    )


def test_compliant_restricted_pod_is_accepted(server: APIServer) -> None:
    namespace(server, "r", enforce="restricted", warn="restricted", audit="restricted")
    code, headers, out = call(server, "POST", pods("r"), restricted_pod("p"))
    assert code == 201, out
    assert "Warning" not in headers
    # Localhost seccomp, NET_BIND_SERVICE, a non-zero user and the allowed
    # volume types pass too; one container without the settings does not.
    p = restricted_pod("q")
    p["spec"]["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"},
    }
    p["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = ["NET_BIND_SERVICE"]
    p["spec"]["volumes"] = [
        {"name": "e", "emptyDir": {}},
        {"name": "s", "secret": {"secretName": "s"}},
        {"name": "m", "configMap": {"name": "m"}},
    ]
    code, headers, out = call(server, "POST", pods("r"), p)
    assert code == 201, out
    assert "Warning" not in headers
    p = restricted_pod("x")
    p["spec"]["initContainers"] = [container("init")]
    code, _, out = call(server, "POST", pods("r"), p)
    assert code == 403
    assert_forbidden(
        out,
        "x",
        'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "init" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "init" must set '
        'securityContext.capabilities.drop=["ALL"])',
    )


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        (
            {"containers": [{**container(), "securityContext": {"privileged": True}}]},
            'privileged (container "c" must not set securityContext.privileged=true)',
        ),
        (
            {
                "containers": [container()],
                "volumes": [{"name": "data", "hostPath": {"path": "/var/data"}}],
            },
            'hostPath volumes (volume "data")',
        ),
        ({"containers": [container()], "hostNetwork": True}, "host namespaces (hostNetwork)"),
        (
            {
                "containers": [
                    {**container("a"), "ports": [{"containerPort": 80, "hostPort": 8080}]},
                    {**container("b"), "ports": [{"containerPort": 81, "hostPort": 9090}]},
                ],
                "hostPID": True,
                "hostIPC": True,
            },
            "host namespaces (hostIPC, hostPID), "
            'hostPort (containers "a", "b" use hostPorts 8080, 9090)',
        ),
    ],
)
def test_baseline_refuses(server: APIServer, spec: dict[str, Any], why: str) -> None:
    namespace(server, "b", enforce="baseline")
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    code, _, out = call(server, "POST", pods("b"), p)
    assert code == 403
    assert_forbidden(out, "p", f'violates PodSecurity "baseline:latest": {why}')
    # A default pod passes baseline.
    assert call(server, "POST", pods("b"), pod("ok"))[0] == 201


def test_warn_only_namespace_accepts_with_a_warning(server: APIServer) -> None:
    namespace(server, "w", warn="restricted")
    code, headers, out = call(server, "POST", pods("w"), pod("p"))
    assert code == 201, out
    assert headers["Warning"] == warning(
        f'would violate PodSecurity "restricted:latest": {RESTRICTED_DEFAULT_POD}'
    )
    # enforce=baseline with warn=restricted: allowed by enforce, warned by warn.
    namespace(server, "bw", enforce="baseline", warn="restricted")
    code, headers, out = call(server, "POST", pods("bw"), pod("p"))
    assert code == 201, out
    assert headers["Warning"] == warning(
        f'would violate PodSecurity "restricted:latest": {RESTRICTED_DEFAULT_POD}'
    )


def deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container()]},
            },
        },
    }


def cronjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {**container(), "securityContext": {"privileged": True}}
                            ],
                        }
                    }
                }
            },
        },
    }


def test_workloads_are_accepted_and_warned_at_the_warn_level(server: APIServer) -> None:
    # enforce applies to pods only; a workload is evaluated against the warn
    # level (ValidatePodController), so enforce alone warns of nothing.
    namespace(server, "e", enforce="restricted")
    code, headers, out = call(
        server, "POST", "/apis/apps/v1/namespaces/e/deployments", deployment("d")
    )
    assert code == 201, out
    assert "Warning" not in headers

    namespace(server, "ew", enforce="restricted", warn="restricted")
    code, headers, out = call(
        server, "POST", "/apis/apps/v1/namespaces/ew/deployments", deployment("d")
    )
    assert code == 201, out
    assert headers["Warning"] == warning(
        f'would violate PodSecurity "restricted:latest": {RESTRICTED_DEFAULT_POD}'
    )
    code, headers, out = call(
        server, "POST", "/apis/batch/v1/namespaces/ew/cronjobs", cronjob("cj")
    )
    assert code == 201, out
    assert headers["Warning"].startswith(
        warning(
            'would violate PodSecurity "restricted:latest": privileged (container "c" must not '
            "set securityContext.privileged=true), allowPrivilegeEscalation != false"
        )[:-1]
    )


def test_version_labels(server: APIServer) -> None:
    namespace(server, "v", enforce="restricted", **{"enforce-version": "v1.32"})
    code, _, out = call(server, "POST", pods("v"), pod("p"))
    assert code == 403
    assert_forbidden(out, "p", f'violates PodSecurity "restricted:v1.32": {RESTRICTED_DEFAULT_POD}')
    assert call(server, "POST", pods("v"), restricted_pod("q"))[0] == 201
    # runAsUser=0 is a restricted violation from policy version 1.23 on.
    root = restricted_pod("root")
    root["spec"]["securityContext"]["runAsUser"] = 0
    code, _, out = call(server, "POST", pods("v"), root)
    assert code == 403
    assert_forbidden(
        out,
        "root",
        'violates PodSecurity "restricted:v1.32": runAsUser=0 (pod must not set runAsUser=0)',
    )
    namespace(server, "old", enforce="restricted", **{"enforce-version": "v1.22"})
    code, _, out = call(server, "POST", pods("old"), root)
    assert code == 201, out


def test_invalid_labels_are_refused(server: APIServer) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "bad",
            "labels": {PREFIX + "enforce": "strict", PREFIX + "warn-version": "1.32"},
        },
    }
    code, _, out = call(server, "POST", NAMESPACES, obj)
    assert code == 422
    enforce_cause = {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "strict": must be one of privileged, baseline, restricted',
        "field": "metadata.labels[pod-security.kubernetes.io/enforce]",
    }
    version_cause = {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "1.32": must be "latest" or "v1.x"',
        "field": "metadata.labels[pod-security.kubernetes.io/warn-version]",
    }
    assert out["message"] == (
        f'Namespace "bad" is invalid: [{enforce_cause["field"]}: {enforce_cause["message"]}, '
        f"{version_cause['field']}: {version_cause['message']}]"
    )
    assert out["details"] == {
        "name": "bad",
        "kind": "Namespace",
        "causes": [enforce_cause, version_cause],
    }
    assert call(server, "GET", f"{NAMESPACES}/bad")[0] == 404
    code, _, out = call(
        server,
        "PATCH",
        f"{NAMESPACES}/default",
        {"metadata": {"labels": {PREFIX + "enforce": "strict"}}},
        MERGE,
    )
    assert code == 422
    assert out["message"] == (
        'Namespace "default" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted'
    )


def test_unlabelled_namespace_is_unaffected(server: APIServer) -> None:
    p = pod("p", hostNetwork=True)
    p["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    code, headers, out = call(server, "POST", pods("default"), p)
    assert code == 201, out
    assert "Warning" not in headers
    # Only the namespace's labels matter: the same pod in a baseline namespace.
    namespace(server, "b", enforce="baseline")
    code, _, out = call(server, "POST", pods("b"), p)
    assert code == 403
    assert_forbidden(
        out,
        "p",
        'violates PodSecurity "baseline:latest": host namespaces (hostNetwork), '
        'privileged (container "c" must not set securityContext.privileged=true)',
    )


def test_stricter_enforce_label_warns_of_existing_pods(server: APIServer) -> None:
    namespace(server, "n")
    for name in ("b", "a"):
        assert call(server, "POST", pods("n"), pod(name))[0] == 201
    assert call(server, "POST", pods("n"), pod("h", hostNetwork=True))[0] == 201
    assert call(server, "POST", pods("n"), restricted_pod("ok"))[0] == 201
    code, headers, out = call(
        server,
        "PATCH",
        f"{NAMESPACES}/n",
        {"metadata": {"labels": {PREFIX + "enforce": "restricted"}}},
        MERGE,
    )
    assert code == 200, out
    reasons = (
        "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, "
        "seccompProfile"
    )
    assert headers["Warning"] == ", ".join(
        warning(w)
        for w in (
            'existing pods in namespace "n" violate the new PodSecurity enforce level '
            '"restricted:latest"',
            f"a (and 1 other pod): {reasons}",
            f"h: host namespaces, {reasons}",
        )
    )
    # The existing pods stay; relaxing the level warns of nothing.
    code, headers, _ = call(
        server,
        "PATCH",
        f"{NAMESPACES}/n",
        {"metadata": {"labels": {PREFIX + "enforce": "baseline"}}},
        MERGE,
    )
    assert code == 200
    assert "Warning" not in headers


def test_pod_updates_are_evaluated_only_when_significant(server: APIServer) -> None:
    namespace(server, "n")
    assert call(server, "POST", pods("n"), pod("p"))[0] == 201
    code, _, _ = call(
        server,
        "PATCH",
        f"{NAMESPACES}/n",
        {"metadata": {"labels": {PREFIX + "enforce": "restricted"}}},
        MERGE,
    )
    assert code == 200
    code, _, out = call(
        server, "PATCH", f"{pods('n')}/p", {"metadata": {"labels": {"x": "y"}}}, MERGE
    )
    assert code == 200, out
    code, _, out = call(
        server,
        "PATCH",
        f"{pods('n')}/p",
        {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}},
        "application/strategic-merge-patch+json",
    )
    assert code == 403
    assert_forbidden(
        out, "p", f'violates PodSecurity "restricted:latest": {RESTRICTED_DEFAULT_POD}'
    )
