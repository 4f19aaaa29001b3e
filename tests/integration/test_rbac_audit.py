"""Each controller converges its sample as its deploy/ ServiceAccount, with the
embedded server's RBAC authorizer enforcing exactly the Roles and bindings in
deploy/<controller>/ (leader-election Lease, Events, status, informers'
list/watch, children's writes).

The request-log tests (tests/e2e/test_manifests.py, tests/integration/network/
test_deploy.py) map requests to RBAC checks by hand; here the real authorizer
decides. The embedded server has no OwnerReferencesPermissionEnforcement
admission plugin, so that check is made with SelfSubjectAccessReviews as the
ServiceAccount: every ownerReference with ``blockOwnerDeletion: true`` the
controller wrote needs ``update`` on ``<owner plural>/finalizers``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.http import until_found

from pycontroller import Manager
from pycontroller.testing import APIServer, wait_for

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
SAMPLES = REPO / "crds" / "samples"

#: kind -> (path prefix, plural, namespaced) for what deploy/ holds.
_KINDS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _deploy_docs(controller: str) -> list[dict[str, Any]]:
    return [doc for path in sorted((DEPLOY / controller).glob("*.yaml")) for doc in _docs(path)]


def _admin(server: APIServer) -> Callable[..., Any]:
    """The test's own requests, as the cluster admin (no token)."""

    def call(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        req = urllib.request.Request(
            f"{server.url}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    return call


def _until(probe: Callable[[], Any], what: str, timeout: float = 20.0) -> None:
    until_found(probe, what, timeout)


def _apply_rbac(server: APIServer, controller: str) -> tuple[str, dict[str, Any]]:
    """Create deploy/<controller>'s Namespace, ServiceAccount and RBAC objects;
    return the ServiceAccount's user name and the Deployment."""
    call = _admin(server)
    deployment: dict[str, Any] | None = None
    for doc in _deploy_docs(controller):
        if doc["kind"] == "Deployment":
            deployment = doc
        if doc["kind"] not in _KINDS:
            continue
        prefix, plural, namespaced = _KINDS[doc["kind"]]
        ns = f"/namespaces/{doc['metadata']['namespace']}" if namespaced else ""
        try:
            call("POST", f"{prefix}{ns}/{plural}", doc)
        except urllib.error.HTTPError as err:
            if err.code != 409:  # the initial namespaces may exist already
                raise
    assert deployment is not None
    pod = deployment["spec"]["template"]["spec"]
    sa_ns = deployment["metadata"]["namespace"]
    return f"system:serviceaccount:{sa_ns}:{pod['serviceAccountName']}", deployment


def _manager(
    server: APIServer, user: str, deployment: dict[str, Any], name: str, parser: Any
) -> Manager:
    """A Manager as the Deployment runs it (its flags), authenticated as ``user``."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = Manager.parse_args(container["args"], name=name, parser=parser)
    return Manager(
        server.api_client(user=user),
        name=name,
        leader_election=bool(args.leader_elect),
        leader_election_id=args.leader_election_id,
        leader_election_namespace=args.leader_election_namespace,
        lease_duration=2.0,
        renew_deadline=1.5,
        retry_period=0.2,
        graceful_shutdown_timeout=5,
    )


@contextlib.contextmanager
def _running(mgr: Manager) -> Iterator[None]:
    """Run ``mgr`` until the block ends (before its server stops)."""
    stop = threading.Event()
    thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(15)
    assert not thread.is_alive()


def _forbidden(server: APIServer) -> list[str]:
    # Only the ServiceAccount's requests can be refused: the test's are the admin's.
    return [f"{r.method} {r.path}" for r in server.request_log if r.status == 403]


def _may(server: APIServer, user: str, attrs: dict[str, str]) -> bool:
    req = urllib.request.Request(
        f"{server.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        method="POST",
        data=json.dumps(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attrs},
            }
        ).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {server.token_for(user)}",
        },
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return bool(json.loads(resp.read())["status"]["allowed"])


def _check_block_owner_deletion(
    server: APIServer, user: str, children: list[str], plurals: dict[str, str]
) -> int:
    """SSAR for every blockOwnerDeletion ownerReference on ``children`` (list paths)."""
    call = _admin(server)
    checked = 0
    for path in children:
        for obj in call("GET", path)["items"]:
            for ref in obj["metadata"].get("ownerReferences") or []:
                if not ref.get("blockOwnerDeletion"):
                    continue
                group = ref["apiVersion"].rpartition("/")[0]
                attrs = {
                    "verb": "update",
                    "group": group,
                    "resource": plurals[ref["kind"]],
                    "subresource": "finalizers",
                    "namespace": obj["metadata"]["namespace"],
                    "name": ref["name"],
                }
                assert _may(server, user, attrs), (obj["metadata"]["name"], attrs)
                checked += 1
    return checked


def _lease_held(server: APIServer, namespace: str, name: str) -> bool:
    lease = _admin(server)(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
    )
    return bool(lease["spec"].get("holderIdentity"))


def _renewed(server: APIServer) -> bool:
    return any(r.method == "PUT" and "/leases/" in r.path for r in server.request_log)


def _events(server: APIServer, namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = _admin(server)("GET", f"/api/v1/namespaces/{namespace}/events")[
        "items"
    ]
    return items


def test_balancer_converges_with_its_deploy_rbac() -> None:
    from controllers.balancer import names
    from controllers.balancer.__main__ import parser
    from controllers.balancer.controller import COMPONENT, setup

    ns, name = "default", "balancer-sample"
    with APIServer(crds=[str(REPO / "crds" / "balancer.yaml")], authorizer="RBAC") as server:
        user, deployment = _apply_rbac(server, "balancer")
        mgr = _manager(server, user, deployment, COMPONENT, parser())
        setup(mgr)
        with _running(mgr):
            call = _admin(server)
            (sample,) = _docs(SAMPLES / "balancer.yaml")
            sample["metadata"] = {"name": name, "namespace": ns}
            path = f"/apis/{names.API_VERSION}/namespaces/{ns}/balancers"
            call("POST", path, sample)

            def synced() -> bool:
                b = call("GET", f"{path}/{name}")
                st = b.get("status") or {}
                return bool(st.get("observedGeneration") == b["metadata"]["generation"])

            _until(synced, "the Balancer to converge as its ServiceAccount")
            _until(lambda: _events(server, ns), "an Event about the Balancer")
            lease_ns = deployment["metadata"]["namespace"]
            _until(lambda: _renewed(server), "a Lease renewal")
            assert _lease_held(server, lease_ns, parser().get_default("leader_election_id"))
            children = [
                f"/api/v1/namespaces/{ns}/services",
                f"/api/v1/namespaces/{ns}/configmaps",
                f"/apis/apps/v1/namespaces/{ns}/deployments",
            ]
            _check_block_owner_deletion(server, user, children, {names.KIND: "balancers"})
        assert _forbidden(server) == []


def test_reverseproxy_converges_with_its_deploy_rbac() -> None:
    from controllers.reverseproxy import names as rp
    from controllers.reverseproxy.__main__ import parser
    from controllers.reverseproxy.controller import setup

    ns = "default"
    crds = [str(REPO / "crds" / f"{k.singular}.yaml") for k in rp.KINDS]
    with APIServer(crds=crds, authorizer="RBAC") as server:
        user, deployment = _apply_rbac(server, "reverseproxy")
        mgr = _manager(server, user, deployment, rp.COMPONENT, parser())
        setup(mgr)
        with _running(mgr):
            call = _admin(server)
            base = f"/apis/{rp.API_VERSION}/namespaces/{ns}"
            names_by_kind = {}
            for kind in rp.KINDS:
                (sample,) = _docs(SAMPLES / f"{kind.singular}.yaml")
                names_by_kind[kind.plural] = sample["metadata"]["name"]
                call("POST", f"{base}/{kind.plural}", sample)

            def synced(plural: str, name: str) -> bool:
                obj = call("GET", f"{base}/{plural}/{name}")
                return any(
                    c["type"] == "Reconciled"
                    and c["status"] == "True"
                    and c.get("observedGeneration") == obj["metadata"]["generation"]
                    for c in (obj.get("status") or {}).get("conditions") or []
                )

            for plural, name in names_by_kind.items():
                _until(functools.partial(synced, plural, name), f"the {plural} sample to converge")
            _until(lambda: _events(server, ns), "an Event about the samples")
            lease_ns = deployment["metadata"]["namespace"]
            _until(lambda: _renewed(server), "a Lease renewal")
            assert _lease_held(server, lease_ns, rp.LEADER_ELECTION_ID)
            children = [
                f"/api/v1/namespaces/{ns}/services",
                f"/api/v1/namespaces/{ns}/configmaps",
                f"/apis/apps/v1/namespaces/{ns}/deployments",
            ]
            plurals = {k.kind: k.plural for k in rp.KINDS}
            assert _check_block_owner_deletion(server, user, children, plurals) > 0
            # The TCP finalizer's cleanup: delete children, then remove the finalizer (update).
            tcp = next(k for k in rp.KINDS if k.plural == "tcpreverseproxies")
            call("DELETE", f"{base}/{tcp.plural}/{names_by_kind[tcp.plural]}")

            def gone() -> bool:
                try:
                    call("GET", f"{base}/{tcp.plural}/{names_by_kind[tcp.plural]}")
                except urllib.error.HTTPError as err:
                    return err.code == 404
                return False

            wait_for(gone, 20, interval=0.05, what="the TCPReverseProxy to be finalized")
        assert _forbidden(server) == []


def test_network_converges_with_its_deploy_rbac() -> None:
    from controllers.network.controller import COMPONENT, setup

    ns = "default"
    with APIServer(crds=[str(REPO / "crds" / "network.yaml")], authorizer="RBAC") as server:
        user, deployment = _apply_rbac(server, "network")
        mgr = _manager(server, user, deployment, COMPONENT, None)
        setup(mgr)
        with _running(mgr):
            (sample,) = _docs(SAMPLES / "network.yaml")
            sample["metadata"]["namespace"] = ns
            _admin(server)("POST", f"/apis/samplecrd.k8s.io/v1/namespaces/{ns}/networks", sample)
            _until(
                lambda: any(e["reason"] == "Synced" for e in _events(server, ns)),
                "the Network's Synced Event",
            )
        assert _forbidden(server) == []


@pytest.mark.parametrize("controller", ["balancer", "reverseproxy", "network"])
def test_deployment_shutdown_probes_and_image(controller: str) -> None:
    """--graceful-shutdown-timeout < terminationGracePeriodSeconds, probes on the
    health port the flags bind, and the image runs this controller's module."""
    docs = _deploy_docs(controller)
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    parser = None
    if controller != "network":
        parser = importlib.import_module(f"controllers.{controller}.__main__").parser()
    args = Manager.parse_args(container["args"], name=controller, parser=parser)
    assert 0 < args.graceful_shutdown_timeout < pod["terminationGracePeriodSeconds"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert args.health_probe_bind_address == f":{ports['health']}"
    assert args.metrics_bind_address == f":{ports['metrics']}"
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert get["port"] in ("health", ports["health"])
    # The Dockerfile's ENTRYPOINT runs the balancer; any other controller overrides it.
    entrypoint = next(
        json.loads(line.split(None, 1)[1])
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if line.startswith("ENTRYPOINT")
    )
    command = container.get("command", entrypoint)
    assert command[-1] == f"controllers.{controller}", command
    # One image holds every controller: the one hack/kind-e2e.sh builds and loads
    # (README: "The image comes from the Dockerfile"); the kustomization pins that name.
    built = re.search(r"IMAGE=\$\{IMAGE:-([^}]+)\}", (REPO / "hack" / "kind-e2e.sh").read_text())
    assert built is not None
    assert container["image"] == built.group(1)
    kustomization = yaml.safe_load((DEPLOY / controller / "Kustomization").read_text())
    assert [i["name"] for i in kustomization.get("images", [])] == [built.group(1).split(":")[0]]
