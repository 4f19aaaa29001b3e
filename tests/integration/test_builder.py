"""Builder over the embedded API server: For, Owns, Watches, predicates, options."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pycontroller import Builder, Controller, Manager, Request, ResourceClient
from pycontroller.predicates import Funcs, GenerationChanged, LabelsChanged
from pycontroller.testing import APIServer, wait_for
from pycontroller.workqueue import ItemExponentialFailureRateLimiter, PriorityQueue

CONFIGMAPS = ("", "v1", "configmaps")
SECRETS = ("", "v1", "secrets")
DEPLOYMENTS = ("apps", "v1", "deployments")


def cm(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", **meta},
        "data": {},
    }


def owned_by(owner: dict[str, Any], *, controller: bool = True) -> list[dict[str, Any]]:
    meta = owner["metadata"]
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"]}
    return [{**ref, "uid": meta["uid"], "controller": controller}]


class Recorded:
    """A reconcile function that records its requests (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    def __call__(self, request: Request) -> None:
        assert isinstance(request, Request)
        with self._lock:
            self.requests.append(request)

    def count(self, request: Request) -> int:
        with self._lock:
            return self.requests.count(request)

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()


@pytest.fixture
def mgr(apiserver: APIServer) -> Manager:
    return Manager(apiserver.api_client(), graceful_shutdown_timeout=5.0)


@pytest.fixture
def start(mgr: Manager) -> Iterator[Callable[[], None]]:
    """Call to run ``mgr`` on a thread (after building controllers); stopped at teardown."""
    stop = threading.Event()
    thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)

    def synced() -> bool:
        return all(i.has_synced() for i in mgr.informers.informers().values())

    def run() -> None:
        thread.start()
        wait_for(synced, what="caches")

    yield run
    stop.set()
    if thread.is_alive():
        thread.join(10)
        assert not thread.is_alive(), "Manager.run did not return"


def test_for_owns_and_watches_map_events_to_requests(
    apiserver: APIServer, mgr: Manager, start: Callable[[], None]
) -> None:
    api = apiserver.api_client()
    cms = ResourceClient(api, *CONFIGMAPS)
    secrets = ResourceClient(api, *SECRETS)
    deployments = ResourceClient(api, *DEPLOYMENTS)
    rec = Recorded()

    def secret_to_request(secret: dict[str, Any]) -> list[Request]:
        target = (secret["metadata"].get("annotations") or {}).get("for")
        return [Request(secret["metadata"]["namespace"], target)] if target else []

    ctrl = (
        mgr.controller("builder-it-map")
        .for_(*CONFIGMAPS)
        .owns(*DEPLOYMENTS)
        .watches(*SECRETS, map_fn=secret_to_request)
        .complete(rec)
    )
    assert isinstance(ctrl, Controller)
    owner = cms.create(cm("owner"))
    start()
    wait_for(lambda: rec.count(Request("default", "owner")), what="for_: the object's own key")

    # owns: a child's controller owner is enqueued; a non-controller ref is not.
    rec.clear()
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "child", "namespace": "default", "ownerReferences": owned_by(owner)},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    deployments.create(deployment)
    wait_for(lambda: rec.count(Request("default", "owner")), what="owns: the owner's key")
    rec.clear()
    other = dict(deployment, metadata={"name": "other", "namespace": "default"})
    other["metadata"]["ownerReferences"] = owned_by(owner, controller=False)
    deployments.create(other)
    deployments.delete("child", "default")
    wait_for(lambda: rec.count(Request("default", "owner")), what="owns: delete of a child")
    assert Request("default", "other") not in rec.requests

    # watches: map_fn decides.
    rec.clear()
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque"}
    secrets.create({**secret, "metadata": {"name": "s", "annotations": {"for": "target"}}})
    wait_for(lambda: rec.count(Request("default", "target")), what="watches: mapped request")


def test_owns_under_a_cluster_scoped_owner_enqueues_the_owner_by_name_alone(
    apiserver: APIServer, mgr: Manager, start: Callable[[], None]
) -> None:
    """A namespaced child of a cluster-scoped ``for_`` object maps to ``Request("", owner)``,
    the key the owner's own events use (controller-runtime's EnqueueRequestForOwner sets
    the namespace only for a namespaced owner); ``"team/team"`` would name nothing."""
    api = apiserver.api_client()
    namespaces = ResourceClient(api, "", "v1", "namespaces", namespaced=False)
    owner = namespaces.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    )
    rec = Recorded()
    mgr.controller("builder-it-cluster-owner").for_("", "v1", "namespaces", namespaced=False).owns(
        *CONFIGMAPS
    ).complete(rec)
    start()
    wait_for(lambda: rec.count(Request("", "team")), what="for_: the namespace's own key")
    rec.clear()
    child = cm("child", ownerReferences=owned_by(owner))
    child["metadata"]["namespace"] = "team"
    ResourceClient(api, *CONFIGMAPS).create(child)
    wait_for(lambda: rec.count(Request("", "team")), what="owns: the cluster-scoped owner's key")
    assert Request("team", "team") not in rec.requests


def test_predicates_filter_updates_but_never_a_recreated_object(
    apiserver: APIServer, mgr: Manager, start: Callable[[], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    cms = ResourceClient(apiserver.api_client(), *CONFIGMAPS)
    rec = Recorded()
    informer = mgr.informers.for_resource(*CONFIGMAPS)
    handlers: list[Any] = []
    add = informer.add_event_handler

    def spy(handler: Any, resync_period: float | None = None) -> Any:
        handlers.append(handler)
        return add(handler, resync_period)

    monkeypatch.setattr(informer, "add_event_handler", spy)
    mgr.controller("builder-it-preds").for_(*CONFIGMAPS, predicates=[LabelsChanged()]).complete(rec)
    start()
    cms.create(cm("p"))
    req = Request("default", "p")
    wait_for(lambda: rec.count(req), what="the create")
    cms.patch("p", {"data": {"k": "v"}}, "default")  # filtered: labels unchanged
    cms.patch("p", {"metadata": {"labels": {"x": "1"}}}, "default")
    wait_for(lambda: rec.count(req) >= 2, what="the label change")
    assert rec.count(req) == 2, "the data-only update must have been filtered"

    # A delete and re-create that the watch missed reaches handlers as an
    # update with a new uid (on relist): the builder's handler must pass it
    # whatever the predicates say. Labels are unchanged here.
    (handler,) = handlers
    old = informer.get_store().get_by_key("default/p")
    new = {**old, "metadata": {**old["metadata"], "uid": "a-new-uid"}}
    before = rec.count(req)
    handler.on_update(old, new)
    wait_for(lambda: rec.count(req) > before, what="the uid-changing update to pass")


def test_with_event_filter_applies_to_every_watch(
    apiserver: APIServer, mgr: Manager, start: Callable[[], None]
) -> None:
    cms = ResourceClient(apiserver.api_client(), *CONFIGMAPS)
    rec = Recorded()
    only_wanted = Funcs(create=lambda obj: obj["metadata"]["name"].startswith("wanted"))
    mgr.controller("builder-it-filter").for_(*CONFIGMAPS).with_event_filter(only_wanted).complete(
        rec
    )
    start()
    cms.create(cm("unwanted"))
    cms.create(cm("wanted-1"))
    wait_for(lambda: rec.count(Request("default", "wanted-1")), what="the wanted create")
    assert rec.count(Request("default", "unwanted")) == 0


def test_with_options_workers_and_rate_limiter_drive_retries(
    apiserver: APIServer, mgr: Manager, start: Callable[[], None]
) -> None:
    cms = ResourceClient(apiserver.api_client(), *CONFIGMAPS)
    calls: list[Request] = []
    lock = threading.Lock()

    def flaky(request: Request) -> None:
        with lock:
            calls.append(request)
            n = len(calls)
        if n < 3:
            raise RuntimeError("try again")

    limiter = ItemExponentialFailureRateLimiter(0.01, 0.05)
    mgr.controller("builder-it-opts").for_(*CONFIGMAPS).with_options(
        workers=3, rate_limiter=limiter
    ).complete(flaky)
    start()
    cms.create(cm("f"))
    wait_for(lambda: len(calls) >= 3, what="retries with the given rate limiter")


def test_builder_misuse_is_reported(apiserver: APIServer) -> None:
    mgr = Manager(apiserver.api_client())
    with pytest.raises(ValueError, match="for_ or watches"):
        mgr.controller("nothing").complete(lambda r: None)
    with pytest.raises(ValueError, match="for_"):
        mgr.controller("owns-only").owns(*DEPLOYMENTS).complete(lambda r: None)
    with pytest.raises(ValueError, match="workers"):
        mgr.controller("w").with_options(workers=0)
    mgr.controller("dup").for_(*CONFIGMAPS).complete(lambda r: None)
    with pytest.raises(ValueError, match="already exists"):
        mgr.controller("dup").for_(*SECRETS).complete(lambda r: None)
    assert isinstance(mgr.controller("x"), Builder)
    with pytest.raises(ValueError, match="once"):
        mgr.controller("twice").for_(*CONFIGMAPS).for_(*SECRETS)
    GenerationChanged()  # predicates compose with the builder (imported for the contract)


def test_the_queue_is_a_priority_queue_with_the_given_rate_limiter(apiserver: APIServer) -> None:
    """controller-runtime 0.23's default queue; with_options(rate_limiter=) is its limiter."""
    mgr = Manager(apiserver.api_client())
    limiter = ItemExponentialFailureRateLimiter(0.01, 0.05)
    ctrl = (
        mgr.controller("builder-it-queue")
        .for_(*CONFIGMAPS)
        .with_options(rate_limiter=limiter)
        .complete(lambda r: None)
    )
    assert isinstance(ctrl.queue, PriorityQueue)
    assert ctrl.queue.rate_limiter is limiter
    assert ctrl.queue.name == "builder-it-queue"
    default = mgr.controller("builder-it-default").for_(*SECRETS).complete(lambda r: None)
    assert isinstance(default.queue, PriorityQueue)
    assert isinstance(default.queue.rate_limiter, ItemExponentialFailureRateLimiter)
    for c in (ctrl, default):
        c.queue.shut_down()
