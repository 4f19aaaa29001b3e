"""Every manifest in ``crds/`` and ``deploy/<controller>/`` is valid Kubernetes, agrees
with the code, and ``kubectl apply`` accepts it (against the embedded API
server).

* Built-in kinds (and the CRD itself, an apiextensions.k8s.io/v1 object)
  validate against the official Kubernetes OpenAPI schemas shipped by
  ``kubernetes-validate`` (strict: unknown fields are errors), for
  ``K8S_VERSION``.
* Balancer objects (the samples) validate against ``crds/balancer.yaml``'s
  own ``openAPIV3Schema`` with ``jsonschema``; invalid Balancers do not.
* The CRD's names, patterns and length bounds are the ones
  ``controllers.balancer`` uses; RBAC has no wildcards; the Deployment's
  flags parse with the controller's own CLI parser.
* ``kubectl apply`` of the CRD, ``deploy/`` (files and ``-k``) and the
  samples succeeds against ``pycontroller.testing.APIServer``, which then
  serves Balancers through the CRD (short name, validation, defaults).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from support.http import until_found
from support.rbac import rbac_needed, rbac_request

from controllers.balancer import names, reconcile
from pycontroller.testing import wait_for

REPO = Path(__file__).resolve().parents[2]
CRD_FILE = REPO / "crds" / "balancer.yaml"
SAMPLES = REPO / "crds" / "samples"
DEPLOY = REPO / "deploy" / "balancer"
#: Kubernetes version whose schemas the manifests must satisfy (the newest
#: minor our oldest supported cluster could be asked to run is older; these
#: manifests use nothing newer than 1.25 except CEL validation rules, GA in 1.29).
K8S_VERSION = "1.32.0"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _manifest_files() -> list[Path]:
    return sorted(REPO.glob("crds/**/*.yaml")) + sorted(REPO.glob("deploy/*/*.yaml"))


MANIFESTS = [
    (f"{path.relative_to(REPO)}#{i}", doc)
    for path in _manifest_files()
    for i, doc in enumerate(_docs(path))
]


def _crd() -> dict[str, Any]:
    (crd,) = _docs(CRD_FILE)
    return crd


def _balancer_schema() -> dict[str, Any]:
    (version,) = _crd()["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def _balancer_errors(balancer: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(_balancer_schema())
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(balancer)
    ]


# --- schemas -------------------------------------------------------------------


def test_every_manifest_directory_is_covered() -> None:
    paths = {name.split("#")[0] for name, _ in MANIFESTS}
    assert "crds/balancer.yaml" in paths
    assert {"crds/samples/balancer.yaml", "crds/samples/http-echo.yaml"} <= paths
    assert len([p for p in paths if p.startswith("deploy/")]) >= 8


def _custom_resource_schema(doc: dict[str, Any]) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` of the CRD in ``crds/`` serving ``doc``'s kind, if any."""
    group, _, version = str(doc["apiVersion"]).rpartition("/")
    for path in sorted(REPO.glob("crds/*.yaml")):
        for crd in _docs(path):
            spec = crd.get("spec") or {}
            if crd.get("kind") != "CustomResourceDefinition" or spec.get("group") != group:
                continue
            if spec["names"]["kind"] != doc["kind"]:
                continue
            for v in spec["versions"]:
                if v["name"] == version:
                    schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
                    return schema
    return None


@pytest.mark.parametrize(("name", "doc"), MANIFESTS, ids=[m[0] for m in MANIFESTS])
def test_manifest_is_valid(name: str, doc: dict[str, Any]) -> None:
    if doc["apiVersion"] == names.API_VERSION:
        assert doc["kind"] == names.KIND
        assert _balancer_errors(doc) == []
        return
    custom = _custom_resource_schema(doc)
    if custom is not None:  # another controller's sample, checked against its own CRD
        errors = list(jsonschema.Draft7Validator(custom).iter_errors(doc))
        assert errors == [], [e.message for e in errors]
        return
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as err:
        path = ".".join(map(str, err.path))
        pytest.fail(f"{name}: {path}: {err.message}")


def test_deploy_holds_only_manifests_and_the_kustomization() -> None:
    # `kubectl apply -f deploy/` reads *.yaml/*.yml/*.json: only Kubernetes
    # objects may have those extensions (the kustomization is "Kustomization").
    files = sorted(p.name for p in DEPLOY.iterdir())
    assert [f for f in files if not f.endswith(".yaml")] == ["Kustomization"]


def test_deploy_has_one_directory_per_controller_and_a_kustomization_of_all() -> None:
    root = REPO / "deploy"
    dirs = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert "balancer" in dirs
    assert [p.name for p in root.iterdir() if p.is_file()] == ["Kustomization"]
    kustomization = yaml.safe_load((root / "Kustomization").read_text())
    assert sorted(kustomization["resources"]) == dirs
    for d in dirs:
        assert (root / d / "Kustomization").is_file(), f"deploy/{d}/ has no Kustomization"


def test_kustomization_lists_every_deploy_manifest_in_apply_order() -> None:
    kustomization = yaml.safe_load((DEPLOY / "Kustomization").read_text())
    assert kustomization["kind"] == "Kustomization"
    listed = kustomization["resources"]
    assert listed == sorted(p.name for p in DEPLOY.glob("*.yaml"))
    # plain `kubectl apply -f deploy/` goes in file-name order: Namespace first
    assert _docs(DEPLOY / listed[0])[0]["kind"] == "Namespace"


# --- the CRD agrees with the code -----------------------------------------------


def test_crd_names() -> None:
    crd = _crd()
    assert crd["metadata"]["name"] == names.CRD_NAME
    spec = crd["spec"]
    assert spec["group"] == names.GROUP
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": names.KIND,
        "listKind": names.LIST_KIND,
        "plural": names.PLURAL,
        "singular": names.SINGULAR,
        "shortNames": [names.SHORT_NAME],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (names.VERSION, True, True)
    # status only: the Go CRD's scale subresource pointed at nothing (prior-art B9)
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Active": ".status.activeBackendsNum",
        "Obsolete": ".status.obsoleteBackendsNum",
        "Reconciled": '.status.conditions[?(@.type=="Reconciled")].status',
        "Age": ".metadata.creationTimestamp",
    }


def test_crd_bounds_match_the_controller() -> None:
    spec = _balancer_schema()["properties"]["spec"]
    backend = spec["properties"]["backends"]["items"]["properties"]
    port = spec["properties"]["ports"]["items"]["properties"]
    dns1035 = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
    assert backend["name"]["pattern"] == dns1035
    assert backend["name"]["maxLength"] == names.MAX_BACKEND_NAME_LENGTH
    assert port["name"]["pattern"] == dns1035
    assert port["name"]["maxLength"] == names.DNS_LABEL_MAX_LENGTH
    assert port["protocol"] == {
        "description": "TCP or UDP.",
        "type": "string",
        "enum": ["TCP", "UDP"],
        "default": "TCP",
    }
    assert (port["port"]["minimum"], port["port"]["maximum"]) == (1, 65535)
    assert port["targetPort"]["x-kubernetes-int-or-string"] is True
    for field in ("backends", "ports"):
        assert spec["properties"][field]["x-kubernetes-list-type"] == "map"
        assert spec["properties"][field]["x-kubernetes-list-map-keys"] == ["name"]
        assert "name" in spec["properties"][field]["items"]["required"]
    rules = " ".join(r["rule"] for r in _balancer_schema()["x-kubernetes-validations"])
    assert f"<= {names.MAX_NAME_AND_BACKEND_LENGTH}" in rules
    assert dns1035 in rules


def test_status_schema() -> None:
    status = _balancer_schema()["properties"]["status"]["properties"]
    assert {"activeBackendsNum", "obsoleteBackendsNum", "observedGeneration", "conditions"} <= set(
        status
    )
    conditions = status["conditions"]
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    reason = re.compile(conditions["items"]["properties"]["reason"]["pattern"])
    # The reasons the reconciler writes into conditions: exactly names.CONDITION_REASONS.
    emitted = {v for k, v in vars(reconcile).items() if k.startswith("REASON_")}
    assert emitted == set(names.CONDITION_REASONS)
    for constant in sorted(emitted):
        assert reason.fullmatch(constant), constant


INVALID_BALANCERS = [
    ("protocol-lowercase", ["spec", "ports", 0, "protocol"], "tcp"),
    ("protocol-sctp", ["spec", "ports", 0, "protocol"], "SCTP"),
    ("port-zero", ["spec", "ports", 0, "port"], 0),
    ("port-too-big", ["spec", "ports", 0, "port"], 65536),
    ("port-name-upper", ["spec", "ports", 0, "name"], "HTTP"),
    ("weight-zero", ["spec", "backends", 0, "weight"], 0),
    ("backend-name-injection", ["spec", "backends", 0, "name"], "v1-backend:80;server x:22;#"),
    ("backend-name-too-long", ["spec", "backends", 0, "name"], "b" * 54),
    ("no-backends", ["spec", "backends"], []),
    ("no-ports", ["spec", "ports"], []),
]


@pytest.mark.parametrize(
    ("path", "value"), [c[1:] for c in INVALID_BALANCERS], ids=[c[0] for c in INVALID_BALANCERS]
)
def test_schema_rejects_invalid_balancers(path: list[Any], value: Any) -> None:
    (balancer,) = _docs(SAMPLES / "balancer.yaml")
    node: Any = balancer
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert _balancer_errors(balancer)


def test_schema_requires_port_and_backend_names() -> None:
    (sample,) = _docs(SAMPLES / "balancer.yaml")
    for field in ("ports", "backends"):
        balancer = copy.deepcopy(sample)
        del balancer["spec"][field][0]["name"]
        assert any("'name' is a required property" in e for e in _balancer_errors(balancer))


# --- the CRD's CEL rules (x-kubernetes-validations) -----------------------------------


def _cel(rule: str, value: Any) -> bool:
    """Evaluate a CEL rule with ``self`` bound to ``value`` (cel-python)."""
    celpy = pytest.importorskip("celpy")
    env = celpy.Environment()
    program = env.program(env.compile(rule))
    return bool(program.evaluate({"self": celpy.json_to_cel(value)}))


def _rules(schema: dict[str, Any]) -> list[str]:
    return [r["rule"] for r in schema.get("x-kubernetes-validations", [])]


def _root_ok(balancer: dict[str, Any]) -> bool:
    return all(_cel(rule, balancer) for rule in _rules(_balancer_schema()))


def _ports_ok(ports: list[dict[str, Any]]) -> bool:
    schema = _balancer_schema()["properties"]["spec"]["properties"]["ports"]
    return all(_cel(rule, ports) for rule in _rules(schema))


def test_cel_rules_accept_the_samples_and_golden_cases() -> None:
    balancers = [_docs(SAMPLES / "balancer.yaml")[0]]
    golden = REPO / "tests" / "unit" / "balancer" / "golden"
    balancers += [_docs(p)[0] for p in sorted(golden.glob("*/balancer.yaml"))]
    for balancer in balancers:
        assert _root_ok(balancer), balancer["metadata"]["name"]
        assert _ports_ok(balancer["spec"]["ports"]), balancer["metadata"]["name"]


@pytest.mark.parametrize(
    ("name", "backend", "ok"),
    [
        ("n" * 14, "b" * 40, True),  # 63-character Service name
        ("n" * 15, "b" * 40, False),  # 64
        ("balancer-sample", "v1", True),
        ("1balancer", "v1", False),  # not DNS-1035: the front Service could not exist
        ("bal.ancer", "v1", False),
        ("n" * 64, "v", False),
    ],
)
def test_cel_rules_bound_the_names(name: str, backend: str, ok: bool) -> None:
    (balancer,) = _docs(SAMPLES / "balancer.yaml")
    balancer["metadata"]["name"] = name
    balancer["spec"]["backends"][0]["name"] = backend
    assert _root_ok(balancer) is ok


@pytest.mark.parametrize(
    ("ports", "ok"),
    [
        ([{"name": "a", "port": 53, "protocol": "UDP"}, {"name": "b", "port": 53}], True),
        ([{"name": "a", "port": 80}, {"name": "b", "port": 80, "protocol": "TCP"}], False),
        (
            [
                {"name": "a", "port": 53, "protocol": "UDP"},
                {"name": "b", "port": 53, "protocol": "UDP"},
            ],
            False,
        ),
        ([{"name": "a", "port": 80}, {"name": "b", "port": 81}], True),
    ],
)
def test_cel_rule_unique_port_and_protocol(ports: list[dict[str, Any]], ok: bool) -> None:
    assert _ports_ok(ports) is ok


# --- deploy/ agrees with the controller --------------------------------------------


def _deploy_objects() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in DEPLOY.glob("*.yaml"):
        for doc in _docs(path):
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def test_rbac_has_no_wildcards_and_binds_the_service_account() -> None:
    objects = _deploy_objects()
    for obj in objects.values():
        for rule in obj.get("rules", []):
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key], (obj["metadata"]["name"], rule)
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        binding = next(o for (k, _), o in objects.items() if k == kind)
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": "balancer-controller",
                "namespace": "balancer-system",
            }
        ]


# --- RBAC = what the controller actually does ------------------------------------

#: Granted but never requested: it authorizes setting blockOwnerDeletion on
#: the children's ownerReferences (OwnerReferencesPermissionEnforcement).
_GRANTED_FOR_ADMISSION = {(names.GROUP, "balancers/finalizers", "update")}


def test_rbac_request_mapping() -> None:
    assert rbac_request("GET", "/api/v1/services?watch=1&resourceVersion=5") == (
        "",
        "services",
        "watch",
    )
    assert rbac_request("GET", "/api/v1/services?limit=500") == ("", "services", "list")
    assert rbac_request("GET", "/apis/apps/v1/namespaces/d/deployments/x") == (
        "apps",
        "deployments",
        "get",
    )
    assert rbac_request("PUT", f"/apis/{names.GROUP}/v1/namespaces/d/balancers/b/status") == (
        names.GROUP,
        "balancers/status",
        "update",
    )
    assert rbac_request("PATCH", "/api/v1/namespaces/d/events/e") == ("", "events", "patch")
    assert rbac_request("GET", "/api/v1/namespaces/d") == ("", "namespaces", "get")
    assert rbac_request("GET", "/version") is None
    assert rbac_request("GET", "/apis") is None


def _granted() -> set[tuple[str, str, str]]:
    objects = _deploy_objects()
    return {
        (group, resource, verb)
        for key in (("ClusterRole", "balancer-controller"), ("Role", "balancer-leader-election"))
        for rule in objects[key]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _driver(server: Any) -> Callable[..., dict[str, Any]]:
    """The test's own requests, tagged ``pretty=true`` (the controller never sends it)."""

    def call(method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        req = urllib.request.Request(
            f"{server.url}{path}?pretty=true",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            out: dict[str, Any] = json.loads(resp.read())
            return out

    return call


def _until(probe: Callable[[], Any], what: str, timeout: float = 10.0) -> None:
    until_found(probe, what, timeout)


def test_rbac_grants_exactly_the_verbs_the_controller_uses() -> None:
    """Run the controller (leader-elected, as deployed) through create, a
    backend removed, a child edited and one deleted (self-heal), a stale
    cache on every write path (injected 409s), then map every request it made
    to the (apiGroup, resource, verb) RBAC checks and compare with deploy/."""
    testing = pytest.importorskip("pycontroller.testing")
    main = pytest.importorskip("controllers.balancer.__main__")
    from controllers.balancer.controller import COMPONENT, setup
    from pycontroller import Manager

    ns, name = "default", "balancer-sample"
    svc = f"/api/v1/namespaces/{ns}/services"
    balancer_path = f"/apis/{names.API_VERSION}/namespaces/{ns}/balancers/{name}"
    with testing.APIServer(crds=[str(CRD_FILE)]) as server:
        call = _driver(server)
        mgr = Manager(
            server.api_client(),
            leader_election=True,
            leader_election_id=main.LEADER_ELECTION_ID,
            leader_election_namespace=ns,
            name=COMPONENT,
        )
        setup(mgr)
        stop = threading.Event()
        thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
        thread.start()
        try:
            (sample,) = _docs(SAMPLES / "balancer.yaml")
            sample["metadata"] = {"name": name, "namespace": ns}
            call("POST", f"/apis/{names.API_VERSION}/namespaces/{ns}/balancers", sample)

            def synced(active: int) -> bool:
                b = call("GET", balancer_path)
                st = b.get("status") or {}
                return bool(
                    st.get("observedGeneration") == b["metadata"]["generation"]
                    and st.get("activeBackendsNum") == active
                    and st.get("obsoleteBackendsNum") == 0
                )

            _until(lambda: synced(3), "the sample to converge")
            # Every later write first meets a stale-cache Conflict: the
            # controller must re-read (get) and retry.
            for path in (
                f"{svc}/{name}-v1-backend",
                f"/configmaps/{name}-proxy-configmap",
                f"/deployments/{name}-proxy",
                f"/balancers/{name}/status",
            ):
                server.fail_next(409, method="PUT", path_regex=f"{path}$")
            # A child edited by hand is restored (update)...
            v1 = call("GET", f"{svc}/{name}-v1-backend")
            v1["spec"]["selector"] = {"edited": "by-hand"}
            call("PUT", f"{svc}/{name}-v1-backend", v1)
            _until(
                lambda: "edited" not in call("GET", f"{svc}/{name}-v1-backend")["spec"]["selector"],
                "the edited Service to be restored",
            )
            # ...a removed backend updates nginx.conf and the Deployment, deletes its Service...
            b = call("GET", balancer_path)
            b["spec"]["backends"] = b["spec"]["backends"][:2]
            call("PUT", balancer_path, b)
            _until(lambda: synced(2), "the backend removal to converge")
            # ...and a deleted child comes back; the repeated "Created" event is a PATCH.
            old_uid = call("GET", f"{svc}/{name}-v2-backend")["metadata"]["uid"]
            call("DELETE", f"{svc}/{name}-v2-backend")
            _until(
                lambda: call("GET", f"{svc}/{name}-v2-backend")["metadata"]["uid"] != old_uid,
                "the deleted Service to be recreated",
            )
            _until(
                lambda: any(
                    r.method == "PATCH" and "/events/" in r.path for r in server.request_log
                ),
                "the repeated event to be aggregated",
            )
        finally:
            stop.set()
            thread.join(15)
        assert not thread.is_alive()
        log = list(server.request_log)

    used = {
        rbac for r in log if "pretty=true" not in r.path for rbac in rbac_needed(r.method, r.path)
    }
    assert sum(r.status == 409 for r in log) >= 4, "the injected conflicts were not all hit"
    granted = _granted()
    assert sorted(used - granted) == [], "requests the RBAC in deploy/ would forbid"
    assert sorted(granted - _GRANTED_FOR_ADMISSION - used) == [], "granted but never used"


def _deployment_args() -> tuple[dict[str, Any], Any]:
    """The Deployment's pod spec and its container args as the controller parses them."""
    main = pytest.importorskip("controllers.balancer.__main__")
    from pycontroller import Manager

    deployment = _deploy_objects()[("Deployment", "balancer-controller")]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, Manager.parse_args(container["args"], name="balancer", parser=main.parser())


def test_graceful_shutdown_fits_in_the_termination_grace_period() -> None:
    """The kubelet SIGKILLs at terminationGracePeriodSeconds: in-flight work,
    the Lease release and the Event flush must fit before it (issue 9, finding 4)."""
    from pycontroller.manager import RELEASE_GRACE

    pod, args = _deployment_args()
    assert pod["terminationGracePeriodSeconds"] == 30
    (container,) = pod["containers"]
    assert "--graceful-shutdown-timeout=25" in container["args"], "set explicitly, not by default"
    assert args.graceful_shutdown_timeout == 25.0
    assert args.graceful_shutdown_timeout + RELEASE_GRACE < pod["terminationGracePeriodSeconds"]
    assert (args.kube_api_qps, args.kube_api_burst) == (20.0, 30)


def test_deployment_flags_parse_and_probes_match() -> None:
    pod, args = _deployment_args()
    (container,) = pod["containers"]
    deployment = _deploy_objects()[("Deployment", "balancer-controller")]
    assert args.leader_elect is True
    assert args.leader_election_namespace == "balancer-system"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert args.health_probe_bind_address == f":{ports['health']}"
    assert args.metrics_bind_address == f":{ports['metrics']}"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["requests"]
    assert pod["serviceAccountName"] == "balancer-controller"
    metrics = _deploy_objects()[("Service", "balancer-controller-metrics")]
    assert metrics["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


# --- kubectl apply against the embedded API server ------------------------------------

KUBECTL = shutil.which("kubectl")


@pytest.fixture
def kubectl(tmp_path: Path) -> Any:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (hack/install-deps.sh installs it)")
    testing = pytest.importorskip("pycontroller.testing")
    with testing.APIServer() as server:
        kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))

        def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
            done = subprocess.run(
                [str(KUBECTL), "--kubeconfig", kubeconfig, *args],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if check:
                assert done.returncode == 0, f"kubectl {' '.join(args)}:\n{done.stderr}"
            return done

        yield run


def test_kubectl_applies_everything(kubectl: Any) -> None:
    applied = kubectl("apply", "-f", str(REPO / "crds"), "-f", str(DEPLOY)).stdout
    crds = list((REPO / "crds").glob("*.yaml"))  # one CRD per file
    assert len(applied.splitlines()) == len(crds) + len(list(DEPLOY.glob("*.yaml")))
    kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=30s")
    kubectl("apply", "-k", str(DEPLOY))  # the kustomization too (idempotent re-apply)
    kubectl("apply", "-k", str(REPO / "deploy"))  # and the one of every controller
    kubectl("apply", "-f", str(SAMPLES))

    blc = json.loads(kubectl("get", names.SHORT_NAME, "balancer-sample", "-o", "json").stdout)
    assert blc["kind"] == names.KIND
    assert [b["weight"] for b in blc["spec"]["backends"]] == [40, 20, 40]
    role = json.loads(kubectl("get", "clusterrole", "balancer-controller", "-o", "json").stdout)
    assert role["rules"]
    pods = json.loads(kubectl("get", "pods", "-l", "app=test", "-o", "json").stdout)
    assert sorted(p["metadata"]["name"] for p in pods["items"]) == ["echo-v1", "echo-v2", "echo-v3"]
    deployment = kubectl("-n", "balancer-system", "get", "deployment", "balancer-controller")
    assert "balancer-controller" in deployment.stdout


def test_kubectl_enforces_the_crd_schema(kubectl: Any, tmp_path: Path) -> None:
    kubectl("apply", "-f", str(CRD_FILE))
    kubectl("wait", "--for=condition=Established", f"crd/{names.CRD_NAME}", "--timeout=30s")
    (balancer,) = _docs(SAMPLES / "balancer.yaml")
    del balancer["spec"]["ports"][0]["protocol"]
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump(balancer))
    kubectl("apply", "-f", str(ok))
    stored = json.loads(kubectl("get", "balancer", "balancer-sample", "-o", "json").stdout)
    assert stored["spec"]["ports"][0]["protocol"] == "TCP"  # the CRD default

    balancer["metadata"]["name"] = "bad"
    balancer["spec"]["ports"][0]["protocol"] = "tcp"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(balancer))
    done = kubectl("apply", "-f", str(bad), check=False)
    assert done.returncode != 0
    assert "protocol" in done.stderr


# --- the ReverseProxy operator's RBAC = what it does ---------------------------------

RP_DEPLOY = REPO / "deploy" / "reverseproxy"


def _rp_granted() -> set[tuple[str, str, str]]:
    objects = {
        (doc["kind"], doc["metadata"]["name"]): doc
        for path in RP_DEPLOY.glob("*.yaml")
        for doc in _docs(path)
    }
    for obj in objects.values():
        for rule in obj.get("rules", []):
            for key in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[key], (obj["metadata"]["name"], rule)
    return {
        (group, resource, verb)
        for key in (("ClusterRole", "nginx-operator"), ("Role", "nginx-operator-leader-election"))
        for rule in objects[key]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_reverseproxy_rbac_grants_exactly_the_verbs_it_uses() -> None:
    """Run the ReverseProxy operator (leader-elected, as deployed) through both
    samples, hand edits of every child (self-heal), a deleted child, stale-cache
    conflicts on status writes, a spec change and the TCP finalizer's cleanup,
    then compare every request it made with deploy/reverseproxy/."""
    testing = pytest.importorskip("pycontroller.testing")
    from controllers.reverseproxy import names as rp
    from controllers.reverseproxy.controller import setup
    from pycontroller import Manager

    ns = "default"
    base = f"/apis/{rp.API_VERSION}/namespaces/{ns}"
    crds = [str(REPO / "crds" / f"{k.singular}.yaml") for k in rp.KINDS]
    children = {
        "ConfigMap": f"/api/v1/namespaces/{ns}/configmaps",
        "Service": f"/api/v1/namespaces/{ns}/services",
        "Deployment": f"/apis/apps/v1/namespaces/{ns}/deployments",
    }
    with testing.APIServer(crds=crds) as server:
        call = _driver(server)
        mgr = Manager(
            server.api_client(),
            leader_election=True,
            leader_election_id=rp.LEADER_ELECTION_ID,
            leader_election_namespace=ns,
            name=rp.COMPONENT,
            lease_duration=2.0,
            renew_deadline=1.5,
            retry_period=0.2,
        )
        setup(mgr)
        stop = threading.Event()
        thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
        thread.start()
        try:
            for kind in rp.KINDS:
                (sample,) = _docs(SAMPLES / f"{kind.singular}.yaml")
                server.fail_next(409, method="PUT", path_regex=f"/{kind.plural}/.*/status$")
                call("POST", f"{base}/{kind.plural}", sample)

            def synced(kind: Any, name: str) -> bool:
                obj = call("GET", f"{base}/{kind.plural}/{name}")
                return any(
                    c["type"] == "Reconciled"
                    and c["status"] == "True"
                    and c.get("observedGeneration") == obj["metadata"]["generation"]
                    for c in (obj.get("status") or {}).get("conditions") or []
                )

            _until(lambda: synced(rp.REVERSE_PROXY, "whoami"), "the ReverseProxy to converge")
            _until(lambda: synced(rp.TCP_REVERSE_PROXY, "db"), "the TCPReverseProxy to converge")
            # every child edited by hand is restored (get + update)...
            child = "ngx-proxy-whoami"
            for kind, path in children.items():
                obj = call("GET", f"{path}/{child}")
                obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "someone"
                call("PUT", f"{path}/{child}", obj)
                _until(
                    lambda path=path: call("GET", f"{path}/{child}")["metadata"]["labels"][
                        "app.kubernetes.io/managed-by"
                    ]
                    == "nginx-operator",
                    f"the edited {kind} to be restored",
                )
            # ...a deleted one comes back, and its repeated "Created" event is a PATCH
            old_uid = call("GET", f"{children['Service']}/{child}")["metadata"]["uid"]
            call("DELETE", f"{children['Service']}/{child}")
            _until(
                lambda: call("GET", f"{children['Service']}/{child}")["metadata"]["uid"] != old_uid,
                "the deleted Service to be recreated",
            )
            _until(
                lambda: any(
                    r.method == "PATCH" and "/events/" in r.path for r in server.request_log
                ),
                "the repeated event to be aggregated",
            )
            # the TCP finalizer deletes the children, then lets the object go
            call("DELETE", f"{base}/tcpreverseproxies/db")

            def gone() -> bool:
                try:
                    call("GET", f"{base}/tcpreverseproxies/db")
                except urllib.error.HTTPError as err:
                    return err.code == 404
                return False

            wait_for(gone, 10, interval=0.05, what="the TCPReverseProxy to be finalized")
            _until(
                lambda: any(r.method == "PUT" and "/leases/" in r.path for r in server.request_log),
                "a Lease renewal",
            )
        finally:
            stop.set()
            thread.join(15)
        assert not thread.is_alive()
        log = list(server.request_log)

    used = {
        rbac for r in log if "pretty=true" not in r.path for rbac in rbac_needed(r.method, r.path)
    }
    assert sum(r.status == 409 for r in log) >= 2, "the injected conflicts were not all hit"
    granted = _rp_granted()
    for_admission = {
        (rp.GROUP, f"{k.plural}/finalizers", "update") for k in rp.KINDS
    }  # blockOwnerDeletion on the children's ownerReferences
    assert sorted(used - granted) == [], "requests the RBAC in deploy/reverseproxy would forbid"
    assert sorted(granted - for_admission - used) == [], "granted but never used"
