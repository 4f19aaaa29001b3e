"""Service accounts as a cluster has them, over HTTP: a ``default``
ServiceAccount in every namespace (kube-controller-manager's serviceaccount
controller, which also re-creates it), and the ``ServiceAccount`` admission
plugin on pod create: the default account name, kube's 403 for a missing
account, the projected ``kube-api-access-*`` token volume mounted in every
container (unless automount is off or the path is taken), and the account's
image pull secrets."""

from __future__ import annotations

import re
from typing import Any

from support.http import request
from support.objects import container, pod

from pycontroller.testing import APIServer, wait_for

NS = "/api/v1/namespaces"
PODS = "/api/v1/namespaces/default/pods"
ACCOUNTS = "/api/v1/namespaces/default/serviceaccounts"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def created(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, body)
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def test_every_namespace_has_a_default_account(apiserver: APIServer) -> None:
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert request(apiserver, "GET", f"{NS}/{ns}/serviceaccounts/default")[0] == 200
    created(apiserver, NS, {"metadata": {"name": "team"}})
    # A pod right after its namespace never races the controller.
    out = created(apiserver, f"{NS}/team/pods", pod("first"))
    assert out["spec"]["serviceAccountName"] == "default"
    code, account = request(apiserver, "GET", f"{NS}/team/serviceaccounts/default")
    assert code == 200, account
    assert account["metadata"]["namespace"] == "team" and "secrets" not in account
    # Deleted, it comes back.
    assert request(apiserver, "DELETE", f"{NS}/team/serviceaccounts/default")[0] == 200
    wait_for(
        lambda: request(apiserver, "GET", f"{NS}/team/serviceaccounts/default")[0] == 200,
        10,
        what="the default account re-created",
    )


def test_a_pod_gets_the_token_volume_in_every_container(apiserver: APIServer) -> None:
    body = pod("p", container("a"), container("b"), initContainers=[container("init")])
    out = created(apiserver, PODS, body)
    spec = out["spec"]
    assert spec["serviceAccountName"] == "default" and spec["serviceAccount"] == "default"
    (volume,) = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {
                "configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
        "defaultMode": 420,
    }
    expected = [{"name": volume["name"], "readOnly": True, "mountPath": MOUNT}]
    for c in [*spec["initContainers"], *spec["containers"]]:
        assert c["volumeMounts"] == expected, c["name"]


def test_automount_off_and_a_taken_path_are_respected(apiserver: APIServer) -> None:
    out = created(apiserver, PODS, pod("off", automountServiceAccountToken=False))
    assert "volumes" not in out["spec"]
    created(
        apiserver,
        ACCOUNTS,
        {"metadata": {"name": "quiet"}, "automountServiceAccountToken": False},
    )
    out = created(apiserver, PODS, pod("quiet", serviceAccountName="quiet"))
    assert "volumes" not in out["spec"]
    # The pod's own setting wins over the account's.
    out = created(
        apiserver, PODS, pod("loud", serviceAccountName="quiet", automountServiceAccountToken=True)
    )
    assert out["spec"]["volumes"][0]["name"].startswith("kube-api-access-")
    own = container("own")
    own["volumeMounts"] = [{"name": "mine", "mountPath": MOUNT}]
    body = pod("taken", own, container("other"), volumes=[{"name": "mine", "emptyDir": {}}])
    out = created(apiserver, PODS, body)
    names = [v["name"] for v in out["spec"]["volumes"]]
    assert names[0] == "mine" and names[1].startswith("kube-api-access-")
    mounts = {c["name"]: c["volumeMounts"] for c in out["spec"]["containers"]}
    assert mounts["own"] == [{"name": "mine", "mountPath": MOUNT}]
    assert mounts["other"][0]["name"] == names[1]


def test_a_missing_account_is_refused(apiserver: APIServer) -> None:
    code, out = request(apiserver, "POST", PODS, pod("lost", serviceAccountName="ghost"))
    assert code == 403, out
    assert out["message"] == (
        'pods "lost" is forbidden: error looking up service account default/ghost: '
        'serviceaccount "ghost" not found'
    )
    assert out["reason"] == "Forbidden"


def test_the_accounts_image_pull_secrets_are_copied(apiserver: APIServer) -> None:
    created(
        apiserver,
        ACCOUNTS,
        {"metadata": {"name": "puller"}, "imagePullSecrets": [{"name": "registry"}]},
    )
    out = created(apiserver, PODS, pod("pulls", serviceAccountName="puller"))
    assert out["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    own = pod("own-pulls", serviceAccountName="puller", imagePullSecrets=[{"name": "mine"}])
    out = created(apiserver, PODS, own)
    assert out["spec"]["imagePullSecrets"] == [{"name": "mine"}]
