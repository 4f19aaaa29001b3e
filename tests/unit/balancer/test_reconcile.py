"""Reconciler.sync against in-memory fakes of listers, clients and the recorder.

The fakes keep one store per kind that both the lister and the client see,
so a sync observes its own earlier writes (as an up-to-date cache would);
the integration tests cover the real informers and API server.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from controllers.balancer import diff, names, nginx, resources
from controllers.balancer.reconcile import CONFLICT_RECHECK, CONTROLLER_UID_INDEX, Reconciler
from pycontroller.clock import FakeClock
from pycontroller.controller import Result
from pycontroller.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    InvalidError,
    NotFoundError,
)

Obj = dict[str, Any]
_counter = itertools.count(1)


class FakeKind:
    """A store of one kind, exposed as both a Lister and a ResourceClient."""

    def __init__(self, kind: str, log: list[tuple[str, str, str]]) -> None:
        self.kind = kind
        self.objects: dict[tuple[str, str], Obj] = {}
        self.log = log
        self.fail: dict[str, ApiError] = {}

    # lister side
    def namespaced(self, namespace: str) -> FakeKind._NS:
        return FakeKind._NS(self, namespace)

    class _NS:
        def __init__(self, kind: FakeKind, namespace: str) -> None:
            self.kind, self.namespace = kind, namespace

        def get(self, name: str) -> Obj:
            try:
                return self.kind.objects[(self.namespace, name)]
            except KeyError:
                raise NotFoundError(message=name) from None

        def list(self, label_selector: Any = None) -> list[Obj]:
            want = dict(label_selector or {})
            return [
                o
                for (ns, _), o in self.kind.objects.items()
                if ns == self.namespace
                and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in want.items())
            ]

    # client side
    def _maybe_fail(self, verb: str) -> None:
        err = self.fail.pop(verb, None)
        if err is not None:
            raise err

    def get(self, name: str, namespace: str | None = None) -> Obj:
        return copy.deepcopy(self.namespaced(namespace or "").get(name))

    def create(self, obj: Obj, namespace: str | None = None) -> Obj:
        self._maybe_fail("create")
        ns = namespace or obj["metadata"]["namespace"]
        key = (ns, obj["metadata"]["name"])
        if key in self.objects:
            raise AlreadyExistsError(409, "AlreadyExists", key[1])
        stored = copy.deepcopy(obj)
        stored["metadata"].update(
            namespace=ns, uid=f"uid-{next(_counter)}", resourceVersion=str(next(_counter))
        )
        if self.kind == "Service":
            stored["spec"]["clusterIP"] = "10.0.0.1"
            for p in stored["spec"]["ports"]:
                p.setdefault("targetPort", p["port"])
        self.objects[key] = stored
        self.log.append(("create", self.kind, key[1]))
        return copy.deepcopy(stored)

    def _replace(self, obj: Obj, verb: str) -> Obj:
        self._maybe_fail(verb)
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        live = self.objects.get(key)
        if live is None:
            raise NotFoundError(message=key[1])
        if live["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise ConflictError(409, "Conflict", key[1])
        stored = copy.deepcopy(obj)
        if verb == "update_status":
            stored = copy.deepcopy(live)
            stored["status"] = copy.deepcopy(obj["status"])
        stored["metadata"]["resourceVersion"] = str(next(_counter))
        self.objects[key] = stored
        self.log.append((verb, self.kind, key[1]))
        return copy.deepcopy(stored)

    def update(self, obj: Obj) -> Obj:
        return self._replace(obj, "update")

    def update_status(self, obj: Obj) -> Obj:
        return self._replace(obj, "update_status")

    def delete(self, name: str, namespace: str | None = None, **kwargs: Any) -> Obj:
        self._maybe_fail("delete")
        obj = self.objects.pop((namespace or "", name), None)
        if obj is None:
            raise NotFoundError(message=name)
        self.log.append(("delete", self.kind, name))
        return obj


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


class World:
    def __init__(self) -> None:
        self.log: list[tuple[str, str, str]] = []
        self.balancers = FakeKind("Balancer", self.log)
        self.services = FakeKind("Service", self.log)
        self.configmaps = FakeKind("ConfigMap", self.log)
        self.deployments = FakeKind("Deployment", self.log)
        self.recorder = FakeRecorder()
        self.clock = FakeClock()
        self.reconciler = Reconciler(
            balancers=self.balancers,
            services=self.services,
            configmaps=self.configmaps,
            deployments=self.deployments,
            balancer_client=self.balancers,
            service_client=self.services,
            configmap_client=self.configmaps,
            deployment_client=self.deployments,
            recorder=self.recorder,
            clock=self.clock,
        )

    def add_balancer(self, name: str = "b", namespace: str = "ns", **spec: Any) -> Obj:
        obj: Obj = {
            "apiVersion": names.API_VERSION,
            "kind": names.KIND,
            "metadata": {"name": name, "namespace": namespace, "generation": 1},
            "spec": {
                "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 5678}],
                "selector": {"app": "test"},
                "backends": [
                    {"name": "v1", "weight": 40, "selector": {"version": "v1"}},
                    {"name": "v2", "weight": 20, "selector": {"version": "v2"}},
                ],
                **spec,
            },
        }
        return self.balancers.create(obj, namespace=namespace)

    def balancer(self, name: str = "b", namespace: str = "ns") -> Obj:
        return self.balancers.objects[(namespace, name)]

    def condition(self, type_: str, name: str = "b", namespace: str = "ns") -> Obj:
        for c in self.balancer(name, namespace)["status"]["conditions"]:
            if c["type"] == type_:
                return dict(c)
        raise AssertionError(f"no condition {type_}")

    def writes(self) -> list[tuple[str, str, str]]:
        return [entry for entry in self.log if entry[1] != "Balancer" or entry[0] != "create"]


@pytest.fixture
def world() -> World:
    return World()


def test_first_sync_creates_children_in_dependency_order(world: World) -> None:
    world.add_balancer()
    assert world.reconciler.sync("ns/b") is None
    assert world.writes() == [
        ("create", "Service", "b-v1-backend"),
        ("create", "Service", "b-v2-backend"),
        ("create", "ConfigMap", "b-proxy-configmap"),
        ("create", "Deployment", "b-proxy"),
        ("create", "Service", "b"),
        ("update_status", "Balancer", "b"),
    ]
    status = world.balancer()["status"]
    assert status["activeBackendsNum"] == 2
    assert status["obsoleteBackendsNum"] == 0
    assert status["observedGeneration"] == 1
    assert world.condition("Reconciled")["status"] == "True"
    assert world.condition("Available")["status"] == "False"
    assert [e[1] for e in world.recorder.events] == ["Created"] * 5


def test_second_sync_writes_nothing(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    before = list(world.log)
    world.clock.step(60)
    assert world.reconciler.sync("ns/b") is None
    assert world.log == before


def test_missing_balancer_is_a_no_op(world: World) -> None:
    assert world.reconciler.sync("ns/gone") is None
    assert world.log == []


def test_backend_swap_updates_config_and_deletes_obsolete(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    b = world.balancer()
    b["spec"]["backends"] = [{"name": "v1", "weight": 1}, {"name": "v9", "weight": 1}]
    b["metadata"]["generation"] = 2
    del world.log[:]
    world.reconciler.sync("ns/b")
    assert world.log == [
        ("update", "Service", "b-v1-backend"),  # selector lost version=v1
        ("create", "Service", "b-v9-backend"),
        ("update", "ConfigMap", "b-proxy-configmap"),
        ("update", "Deployment", "b-proxy"),
        ("delete", "Service", "b-v2-backend"),
        ("update_status", "Balancer", "b"),
    ]
    b = world.balancer()
    assert world.configmaps.objects[("ns", "b-proxy-configmap")]["data"]["nginx.conf"] == (
        nginx.render(b)
    )
    assert b["status"]["observedGeneration"] == 2
    assert (b["status"]["activeBackendsNum"], b["status"]["obsoleteBackendsNum"]) == (2, 0)


def test_other_namespace_and_foreign_services_are_never_deleted(world: World) -> None:
    world.add_balancer(namespace="ns")
    world.add_balancer(namespace="other")
    world.reconciler.sync("ns/b")
    world.reconciler.sync("other/b")
    # a labelled Service in ns that is not ours (no controller ref)
    world.services.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "b-old-backend", "labels": {names.LABEL_BALANCER_NAME: "b"}},
            "spec": {"ports": [{"port": 1}]},
        },
        namespace="ns",
    )
    world.balancer(namespace="ns")["spec"]["backends"] = [{"name": "v1", "weight": 1}]
    world.reconciler.sync("ns/b")
    assert ("ns", "b-old-backend") in world.services.objects
    assert ("ns", "b-v2-backend") not in world.services.objects
    assert ("other", "b-v2-backend") in world.services.objects


def test_server_defaults_do_not_cause_updates(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    dep = world.deployments.objects[("ns", "b-proxy")]
    dep["spec"]["strategy"] = {"type": "RollingUpdate"}
    dep["spec"]["revisionHistoryLimit"] = 10
    pod = dep["spec"]["template"]["spec"]
    pod["dnsPolicy"] = "ClusterFirst"
    pod["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    pod["containers"][0]["terminationMessagePath"] = "/dev/termination-log"
    svc = world.services.objects[("ns", "b")]
    svc["spec"]["sessionAffinity"] = "None"
    before = list(world.log)
    world.reconciler.sync("ns/b")
    assert world.log == before


def test_invalid_spec_writes_no_children_and_warns_once(world: World) -> None:
    world.add_balancer(name="n" * 30, backends=[{"name": "x" * 30, "weight": 1}])
    assert world.reconciler.sync(f"ns/{'n' * 30}") is None
    assert [e for e in world.log if e[1] != "Balancer"] == []
    cond = world.condition("Reconciled", name="n" * 30)
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert cond["message"]
    assert [(e[0], e[1]) for e in world.recorder.events] == [("Warning", "InvalidSpec")]
    before = list(world.log)
    world.reconciler.sync(f"ns/{'n' * 30}")
    assert world.log == before
    assert len(world.recorder.events) == 1


def test_foreign_child_blocks_and_is_untouched(world: World) -> None:
    world.configmaps.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b-proxy-configmap"}},
        namespace="ns",
    )
    world.add_balancer()
    foreign = copy.deepcopy(world.configmaps.objects[("ns", "b-proxy-configmap")])
    result = world.reconciler.sync("ns/b")
    assert result == Result(requeue_after=CONFLICT_RECHECK)
    assert world.configmaps.objects[("ns", "b-proxy-configmap")] == foreign
    assert not world.services.objects and not world.deployments.objects
    cond = world.condition("Reconciled")
    assert (cond["status"], cond["reason"]) == ("False", "ChildConflict")
    assert [(e[0], e[1]) for e in world.recorder.events] == [("Warning", "ChildConflict")]


def test_api_error_sets_condition_and_raises_then_recovers(world: World) -> None:
    world.add_balancer()
    world.configmaps.fail["create"] = ApiError(500, "InternalError", "boom")
    with pytest.raises(ApiError):
        world.reconciler.sync("ns/b")
    cond = world.condition("Reconciled")
    assert (cond["status"], cond["reason"]) == ("False", names.REASON_RECONCILE_FAILED)
    failed_at = cond["lastTransitionTime"]
    assert ("Warning", "CreateFailed") in [(e[0], e[1]) for e in world.recorder.events]
    world.clock.step(5)
    assert world.reconciler.sync("ns/b") is None
    cond = world.condition("Reconciled")
    assert cond["status"] == "True"
    assert cond["lastTransitionTime"] != failed_at


def test_condition_transition_time_kept_while_status_unchanged(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    first = world.condition("Reconciled")["lastTransitionTime"]
    world.balancer()["spec"]["backends"].append({"name": "v3", "weight": 1})
    world.balancer()["metadata"]["generation"] = 2
    world.clock.step(120)
    world.reconciler.sync("ns/b")
    cond = world.condition("Reconciled")
    assert cond["lastTransitionTime"] == first
    assert cond["observedGeneration"] == 2


def test_available_follows_deployment_status(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    world.deployments.objects[("ns", "b-proxy")]["status"] = {"availableReplicas": 1}
    world.reconciler.sync("ns/b")
    assert world.condition("Available")["status"] == "True"


def test_status_conflict_is_retried_against_a_fresh_read(world: World) -> None:
    world.add_balancer()
    world.balancers.fail["update_status"] = ConflictError(409, "Conflict", "stale")
    assert world.reconciler.sync("ns/b") is None
    assert world.balancer()["status"]["activeBackendsNum"] == 2


def test_stale_cache_create_conflict_reads_live_object(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    # the cache has not seen our ConfigMap yet: the lister misses, create says AlreadyExists
    cm = world.configmaps.objects.pop(("ns", "b-proxy-configmap"))
    original_get = world.configmaps.get

    def get(name: str, namespace: str | None = None) -> Obj:
        return copy.deepcopy(cm)

    world.configmaps.get = get  # type: ignore[method-assign]
    world.configmaps.fail["create"] = AlreadyExistsError(409, "AlreadyExists", "exists")
    assert world.reconciler.sync("ns/b") is None
    world.configmaps.get = original_get  # type: ignore[method-assign]
    assert resources.config_hash(cm["data"]["nginx.conf"])


def test_invalid_spec_status_failure_is_retried_and_warns_once(world: World) -> None:
    # The Warning goes out with the condition: a failed status write is
    # retried (raised) without an event, the retry writes and warns once.
    world.add_balancer(backends={"v1": 40})
    world.balancers.fail["update_status"] = ApiError(500, "InternalError", "boom")
    with pytest.raises(ApiError):
        world.reconciler.sync("ns/b")
    assert world.recorder.events == []
    assert world.reconciler.sync("ns/b") is None
    assert world.recorder.events == [
        ("Warning", "InvalidSpec", "spec.backends: must be a list, got object")
    ]
    assert world.reconciler.sync("ns/b") is None
    assert len(world.recorder.events) == 1


def test_invalid_spec_status_422_is_not_retried(world: World) -> None:
    # No retry fixes a status the server refuses: logged, warned, done.
    world.add_balancer(ports="80")
    world.balancers.fail["update_status"] = InvalidError(422, "Invalid", "status.x: bad")
    assert world.reconciler.sync("ns/b") is None
    assert [e[1] for e in world.recorder.events] == ["InvalidSpec"]


@pytest.mark.parametrize(
    "spec",
    [
        {"backends": {"name": "v1"}},
        {"backends": "v1"},
        {"backends": [1, None, "v1"]},
        {"ports": {"http": 80}},
    ],
)
def test_wrongly_typed_spec_is_invalid_not_a_crash(world: World, spec: Obj) -> None:
    world.add_balancer(**spec)
    assert world.reconciler.sync("ns/b") is None
    cond = world.condition("Reconciled")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert cond["message"].startswith("spec.")
    assert [w for w in world.writes() if w[0] != "update_status"] == []


def test_junk_stored_status_is_replaced(world: World) -> None:
    world.add_balancer(backends="v1")
    world.balancer()["status"] = {"conditions": ["junk", 3], "activeBackendsNum": "x"}
    assert world.reconciler.sync("ns/b") is None
    status = world.balancer()["status"]
    assert {c["type"] for c in status["conditions"]} == {"Reconciled", "Available"}
    assert status["activeBackendsNum"] == 0


def test_resync_of_an_unchanged_state_renders_and_diffs_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    world.reconciler.sync("ns/b")  # renders the state the status write made, diffs once
    calls: list[str] = []
    render, differ = resources.desired_children, diff.differing_fields
    monkeypatch.setattr(
        resources, "desired_children", lambda *a, **k: calls.append("render") or render(*a, **k)
    )
    monkeypatch.setattr(
        diff, "differing_fields", lambda *a, **k: calls.append("diff") or differ(*a, **k)
    )
    before = list(world.log)
    for _ in range(3):
        assert world.reconciler.sync("ns/b") is None
    assert calls == []
    assert world.log == before


def test_child_drift_is_seen_on_the_resync_after_it(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    world.reconciler.sync("ns/b")
    svc = world.services.get("b-v1-backend", "ns")
    svc["spec"]["selector"] = {"app": "other"}
    world.services.update(svc)  # a new resourceVersion, as any real change has
    cm = world.configmaps.get("b-proxy-configmap", "ns")
    cm["data"]["extra"] = "x"
    world.configmaps.update(cm)
    del world.log[:]
    world.reconciler.sync("ns/b")
    assert world.log == [
        ("update", "Service", "b-v1-backend"),
        ("update", "ConfigMap", "b-proxy-configmap"),
    ]
    assert world.services.objects[("ns", "b-v1-backend")]["spec"]["selector"] == {
        "app": "test",
        "version": "v1",
    }
    assert "extra" not in world.configmaps.objects[("ns", "b-proxy-configmap")]["data"]
    del world.log[:]
    world.reconciler.sync("ns/b")
    assert world.log == []


def test_child_taken_over_after_a_steady_sync_is_a_conflict(world: World) -> None:
    world.add_balancer()
    world.reconciler.sync("ns/b")
    world.reconciler.sync("ns/b")
    dep = world.deployments.get("b-proxy", "ns")
    dep["metadata"]["ownerReferences"] = []
    world.deployments.update(dep)
    del world.log[:]
    assert world.reconciler.sync("ns/b") == Result(requeue_after=CONFLICT_RECHECK)
    assert [e for e in world.log if e[1] != "Balancer"] == []
    assert world.condition("Reconciled")["reason"] == "ChildConflict"


def test_services_cache_gets_a_controller_uid_index() -> None:
    from pycontroller.cache import Indexer, Lister

    services: Lister[Obj] = Lister(Indexer())
    owned = {
        "metadata": {
            "name": "s",
            "namespace": "ns",
            "ownerReferences": [{"uid": "u1", "controller": True, "kind": "Balancer"}],
        }
    }
    services.indexer.add(owned)
    services.indexer.add({"metadata": {"name": "t", "namespace": "ns"}})
    world = World()
    Reconciler(
        balancers=world.balancers,
        services=services,
        configmaps=world.configmaps,
        deployments=world.deployments,
        balancer_client=world.balancers,
        service_client=world.services,
        configmap_client=world.configmaps,
        deployment_client=world.deployments,
        recorder=world.recorder,
    )
    assert services.indexer.by_index(CONTROLLER_UID_INDEX, "u1") == [owned]
