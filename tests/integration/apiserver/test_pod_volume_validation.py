"""Pod volumes and volume mounts validated as kube-apiserver 1.32's
``ValidateVolumes`` / ``validateVolumeSource`` / ``validateVolumeMounts`` do,
for pods and every pod template (a Deployment's here), over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def pod(name: str, volumes: list[dict[str, Any]], mounts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "volumes": volumes,
            "containers": [{"name": "c", "image": "nginx", "volumeMounts": mounts}],
        },
    }


def causes(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]]


def test_a_volume_with_two_sources_is_refused(server: APIServer) -> None:
    volume = {"name": "data", "emptyDir": {}, "configMap": {"name": "x"}, "secret": {}}
    code, out = request(server, "POST", PODS, pod("two", [volume], []))
    assert code == 422, out
    forbidden = "Forbidden: may not specify more than 1 volume type"
    assert causes(out) == [
        ("FieldValueForbidden", "spec.volumes[0].secret", forbidden),
        ("FieldValueForbidden", "spec.volumes[0].configMap", forbidden),
    ]
    assert out["message"].startswith('Pod "two" is invalid: [spec.volumes[0].secret: Forbidden')


def test_duplicate_volume_names_and_a_sourceless_volume_defaulted(server: APIServer) -> None:
    volumes = [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]
    code, out = request(server, "POST", PODS, pod("dup", volumes, []))
    assert code == 422, out
    assert causes(out) == [
        ("FieldValueDuplicate", "spec.volumes[1].name", 'Duplicate value: "a"'),
    ]
    # SetDefaults_Volume: a volume without a source is an emptyDir, never "no type".
    code, out = request(server, "POST", PODS, pod("plain", [{"name": "b"}], []))
    assert code == 201, out
    assert out["spec"]["volumes"][0] == {"name": "b", "emptyDir": {}}  # then the token's


def test_a_mount_of_a_missing_volume_and_a_repeated_mount_path(server: APIServer) -> None:
    mounts = [
        {"name": "data", "mountPath": "/data"},
        {"name": "nope", "mountPath": "/data"},
    ]
    template_pod = pod("x", [{"name": "data", "emptyDir": {}}], mounts)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": template_pod["spec"]},
        },
    }
    code, out = request(server, "POST", DEPLOYMENTS, deployment)
    assert code == 422, out
    base = "spec.template.spec.containers[0].volumeMounts[1]"
    assert causes(out) == [
        ("FieldValueNotFound", f"{base}.name", 'Not found: "nope"'),
        ("FieldValueInvalid", f"{base}.mountPath", 'Invalid value: "/data": must be unique'),
    ]


def test_valid_volumes_and_mounts_are_accepted(server: APIServer) -> None:
    volumes = [
        {"name": "data", "emptyDir": {}},
        {"name": "conf", "configMap": {"name": "c"}},
        {"name": "token", "projected": {"sources": []}},
    ]
    mounts = [{"name": "data", "mountPath": "/data"}, {"name": "conf", "mountPath": "/etc/c"}]
    code, out = request(server, "POST", PODS, pod("ok", volumes, mounts))
    assert code == 201, out


def test_a_trailing_newline_is_not_a_valid_name_or_label(server: APIServer) -> None:
    """Go's ``$`` ends the text: kube refuses "abc\\n" (Python's ``$`` also
    matches before a final newline), and prints it quoted as Go's %q."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "abc\n"}}
    code, out = request(server, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert code == 422, out
    assert out["message"].startswith(
        'ConfigMap "abc\\n" is invalid: metadata.name: Invalid value: "abc\\n": a lowercase '
        "RFC 1123 subdomain"
    )
    labelled = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "labelled", "labels": {"k": "v\n"}},
    }
    code, out = request(server, "POST", "/api/v1/namespaces/default/configmaps", labelled)
    assert code == 422, out
    assert causes(out)[0][1] == "metadata.labels"
