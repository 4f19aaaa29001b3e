"""Every drawn Balancer, through the embedded API server and one reconcile.

Run twice: against the CRD's full schema (with its CEL rules) and against a
permissive one (the same CRD whose schema is ``type: object,
x-kubernetes-preserve-unknown-fields: true``, as on a cluster that enforces
nothing). For every drawn spec exactly one of these holds:

* the server refuses it: 422, naming the field (and the controller's own
  ``validate`` refuses it too, so the same spec on a permissive server ends
  in InvalidSpec rather than in children);
* the reconcile ends in ``Reconciled=False``/``InvalidSpec``, its message
  naming the field, with one Warning event, no child written, and a second
  reconcile changes nothing and sends no event (not an error: no retry);
* the reconcile converges: ``Reconciled=True``, and the ConfigMap holds an
  nginx.conf whose every line is in the strict grammar (``nginx_grammar``)
  and which ``nginx -t`` accepts (skipped when nginx with the stream module
  is not installed).

The Reconciler is called directly, on listers of real informers over HTTP
(no controller, queue or workers per example). Each example gets a
namespace of its own.
"""

from __future__ import annotations

import copy
import itertools
import re
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nginx_util
import pytest
import yaml
from balancer_strategies import EXPLICIT, balancers, reproducible
from hypothesis import example, given
from nginx_grammar import violations

from controllers.balancer import names, nginx, validation
from controllers.balancer.reconcile import Reconciler
from pycontroller.cache import SharedInformerFactory
from pycontroller.client import ResourceClient
from pycontroller.errors import InvalidError, NotFoundError
from pycontroller.testing import APIServer, wait_for

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "crds" / "balancer.yaml"

BALANCERS = (names.GROUP, names.VERSION, names.PLURAL)
SERVICES = ("", "v1", "services")
CONFIGMAPS = ("", "v1", "configmaps")
DEPLOYMENTS = ("apps", "v1", "deployments")

#: A 422's message names the offending field.
NAMED_FIELD = re.compile(r"metadata\.name|spec\b")
NGINX_MISSING = nginx_util.unavailable_reason()


def crd(schema: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(CRD.read_text())
    if schema == "permissive":
        for version in doc["spec"]["versions"]:
            version["schema"] = {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            }
    return doc


@dataclass
class Recorded:
    namespace: str
    name: str
    type: str
    reason: str
    message: str


@dataclass
class ListRecorder:
    """The reconciler's ``Recorder`` protocol, keeping every event in a list."""

    events: list[Recorded] = field(default_factory=list)

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        self.events.append(Recorded(meta["namespace"], meta["name"], type, reason, message))

    def in_namespace(self, namespace: str) -> list[Recorded]:
        return [e for e in self.events if e.namespace == namespace]


@dataclass
class Env:
    schema: str
    server: APIServer
    factory: SharedInformerFactory
    reconciler: Reconciler
    recorder: ListRecorder
    clients: dict[str, ResourceClient]
    namespaces: ResourceClient
    counter: Iterator[int]
    outcomes: dict[str, int] = field(default_factory=dict)

    def cached(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self.factory.lister(*BALANCERS).namespaced(namespace).get(name)
        except NotFoundError:
            return None
        return obj

    def wait_cached(self, namespace: str, name: str, resource_version: str) -> None:
        """Until the Balancer informer has seen ``resource_version`` (or later)."""

        def seen() -> bool:
            obj = self.cached(namespace, name)
            return obj is not None and int(obj["metadata"]["resourceVersion"]) >= int(
                resource_version
            )

        wait_for(seen, 10.0, what=f"the informer to see {namespace}/{name}@{resource_version}")

    def children(self, namespace: str) -> list[dict[str, Any]]:
        return [
            obj
            for plural in ("services", "configmaps", "deployments")
            for obj in self.clients[plural].list(namespace=namespace)["items"]
        ]


@pytest.fixture(scope="module", params=["full", "permissive"])
def env(request: pytest.FixtureRequest) -> Iterator[Env]:
    schema = str(request.param)
    server = APIServer(crds=[crd(schema)]).start()
    api = server.api_client()
    factory = SharedInformerFactory(api)
    for resource in (BALANCERS, SERVICES, CONFIGMAPS, DEPLOYMENTS):
        factory.for_resource(*resource)
    stop = threading.Event()
    factory.start(stop)
    clients = {
        plural: ResourceClient(api, group, version, plural)
        for group, version, plural in (BALANCERS, SERVICES, CONFIGMAPS, DEPLOYMENTS)
    }
    recorder = ListRecorder()
    reconciler = Reconciler(
        balancers=factory.lister(*BALANCERS),
        services=factory.lister(*SERVICES),
        configmaps=factory.lister(*CONFIGMAPS),
        deployments=factory.lister(*DEPLOYMENTS),
        balancer_client=clients[names.PLURAL],
        service_client=clients["services"],
        configmap_client=clients["configmaps"],
        deployment_client=clients["deployments"],
        recorder=recorder,
    )
    e = Env(
        schema=schema,
        server=server,
        factory=factory,
        reconciler=reconciler,
        recorder=recorder,
        clients=clients,
        namespaces=ResourceClient(api, "", "v1", "namespaces", namespaced=False),
        counter=itertools.count(),
    )
    try:
        assert all(factory.wait_for_cache_sync(stop, timeout=10).values())
        yield e
    finally:
        print(f"\n{schema} schema outcomes: {e.outcomes}")
        stop.set()
        factory.shutdown()
        server.stop()


def nginx_t(text: str, balancer: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """``nginx -t`` on ``text`` as is, with the backend Service names resolvable."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        conf = workdir / "nginx.conf"
        conf.write_text(text)
        hosts = workdir / "hosts"
        hosts.write_text(nginx_util.hosts_text(nginx_util.backend_hosts(balancer)))
        argv = nginx_util.with_private_hosts(
            hosts, nginx_util.nginx_command(conf, workdir, test=True)
        )
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def _condition(balancer: dict[str, Any]) -> dict[str, Any]:
    status = balancer.get("status") or {}
    [cond] = [c for c in status.get("conditions") or [] if c["type"] == "Reconciled"]
    return dict(cond)


def _count(e: Env, outcome: str) -> None:
    e.outcomes[outcome] = e.outcomes.get(outcome, 0) + 1


def _with_examples(test: Any) -> Any:
    for obj in reversed(EXPLICIT):
        test = example(obj=obj)(test)
    return test


@reproducible(25)
@given(obj=balancers())
@_with_examples
def test_every_spec_is_refused_or_invalid_or_a_valid_config(env: Env, obj: dict[str, Any]) -> None:
    namespace = f"p{next(env.counter)}"
    env.namespaces.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    obj = copy.deepcopy(obj)
    obj["metadata"]["namespace"] = namespace
    name = obj["metadata"]["name"]

    try:
        created = env.clients[names.PLURAL].create(obj, namespace=namespace)
    except InvalidError as err:
        assert err.status == 422
        assert NAMED_FIELD.search(err.message), err.message
        # The controller is at least as strict as the API server: on a
        # server that enforces nothing this spec would end in InvalidSpec.
        assert validation.validate(obj), f"validate() accepts what the server refused: {err}"
        _count(env, "refused")
        return

    env.wait_cached(namespace, name, created["metadata"]["resourceVersion"])
    assert env.reconciler.sync(f"{namespace}/{name}") is None
    live = env.clients[names.PLURAL].get(name, namespace=namespace)
    problems = validation.validate(live)
    cond = _condition(live)
    events = env.recorder.in_namespace(namespace)

    if problems:
        _count(env, "invalid")
        assert (cond["status"], cond["reason"]) == ("False", names.REASON_INVALID_SPEC)
        assert cond["message"] == validation.message(problems)
        assert re.match(r"(metadata\.name|spec\S*): ", cond["message"]), cond["message"]
        assert [(e.type, e.reason, e.message) for e in events] == [
            ("Warning", names.REASON_INVALID_SPEC, cond["message"])
        ]
        assert env.children(namespace) == []
        # Final, not an error: another reconcile (a resync, say) writes nothing
        # and sends no second event.
        env.wait_cached(namespace, name, live["metadata"]["resourceVersion"])
        assert env.reconciler.sync(f"{namespace}/{name}") is None
        again = env.clients[names.PLURAL].get(name, namespace=namespace)
        assert again["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
        assert len(env.recorder.in_namespace(namespace)) == 1
        return

    _count(env, "converged")
    assert (cond["status"], cond["reason"]) == ("True", names.REASON_SYNCED)
    assert not [e for e in events if e.type == "Warning"]
    configmap = env.clients["configmaps"].get(names.configmap_name(name), namespace=namespace)
    text = configmap["data"][names.NGINX_CONF_KEY]
    assert text == nginx.render(live)
    assert violations(text) == []
    backends = live["spec"]["backends"]
    assert len(env.children(namespace)) == len(backends) + 3
    if NGINX_MISSING is None:
        result = nginx_t(text, live)
        assert result.returncode == 0, result.stderr
        assert "test is successful" in result.stderr


@pytest.mark.skipif(NGINX_MISSING is not None, reason=str(NGINX_MISSING))
def test_nginx_check_is_real() -> None:
    # The nginx -t above can fail: a config naming an unresolvable backend does.
    balancer = yaml.safe_load((REPO / "crds" / "samples" / "balancer.yaml").read_text())
    text = nginx.render(balancer)
    assert nginx_t(text, balancer).returncode == 0
    broken = text.replace("weight=40;", "weight=40 bogus;", 1)
    result = nginx_t(broken, balancer)
    assert result.returncode != 0
    assert "bogus" in result.stderr
