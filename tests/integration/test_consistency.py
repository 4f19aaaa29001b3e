"""Read-your-writes over the embedded API server, whose watch lags (``delay_watch_events``).

A Widget controller creates a child ConfigMap when its lister has none and
records the child's name in the Widget's status. While the watch lags, a
second reconcile of the same key (as a resync or another event would cause)
acts on a cache older than the first one's writes: without read-your-writes it
creates the child again (409 AlreadyExists) and writes the status from a stale
Widget (409 Conflict); with it, the reconcile is deferred until the cache has
caught up and neither happens.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY
from support import crds

from pycontroller import ApiError, Controller, Manager, NotFoundError, Request, ResourceClient
from pycontroller.cache import SharedInformerFactory
from pycontroller.consistency import ReadYourWrites
from pycontroller.handlers import enqueue_key, enqueue_owner
from pycontroller.testing import APIServer, wait_for
from pycontroller.workqueue import PriorityQueue, RateLimitingQueue

WIDGETS = ("example.com", "v1", "widgets")
CONFIGMAPS = ("", "v1", "configmaps")
LAG = 1.0

WIDGET_CRD: dict[str, Any] = crds.crd("widgets", "Widget", subresources={"status": {}})


def conflicts(apiserver: APIServer) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in list(apiserver.request_log) if r.status == 409]


def requests(apiserver: APIServer, method: str, fragment: str) -> int:
    return sum(
        1
        for r in list(apiserver.request_log)
        if r.method == method and fragment in r.path and r.status < 300
    )


class WidgetReconciler:
    """Creates ``<name>-child`` when the lister has none; status.child names it."""

    def __init__(self, factory: SharedInformerFactory) -> None:
        self.widgets = factory.lister(*WIDGETS)
        self.children = factory.lister(*CONFIGMAPS)
        self.widget_client = ResourceClient(factory.api_client, *WIDGETS)
        self.cm_client = ResourceClient(factory.api_client, *CONFIGMAPS)
        self.lock = threading.Lock()
        # Per reconcile of an existing Widget: did the lister hold the child?
        self.saw: list[bool] = []

    def __call__(self, req: Request) -> None:
        try:
            widget = self.widgets.namespaced(req.namespace).get(req.name)
        except NotFoundError:
            return
        child = f"{req.name}-child"
        errors: list[ApiError] = []
        try:
            self.children.namespaced(req.namespace).get(child)
            present = True
        except NotFoundError:
            present = False
            meta = widget["metadata"]
            owner = {
                "apiVersion": widget["apiVersion"],
                "kind": widget["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
            }
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": child, "namespace": req.namespace, "ownerReferences": [owner]},
            }
            try:
                self.cm_client.create(body)
            except ApiError as err:
                errors.append(err)
        with self.lock:
            self.saw.append(present)
        if (widget.get("status") or {}).get("child") != child:
            updated = copy.deepcopy(widget)
            updated["status"] = {"child": child}
            try:
                self.widget_client.update_status(updated)
            except ApiError as err:
                errors.append(err)
        if errors:
            raise errors[0]


@pytest.fixture
def apiserver_with_widgets(apiserver: APIServer) -> APIServer:
    apiserver.install_crd(WIDGET_CRD)
    return apiserver


@pytest.fixture
def run_manager(apiserver_with_widgets: APIServer) -> Iterator[Callable[[Manager], None]]:
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def run(mgr: Manager) -> None:
        thread = threading.Thread(target=mgr.run, args=(stop,), daemon=True)
        threads.append(thread)
        thread.start()
        wait_for(
            lambda: all(i.has_synced() for i in mgr.informers.informers().values()),
            what="caches",
        )

    yield run
    stop.set()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive(), "Manager.run did not return"


def skips(controller: str) -> float:
    value = REGISTRY.get_sample_value(
        "controller_runtime_stale_sync_skips_total", {"controller": controller}
    )
    return value or 0.0


def lagging_second_reconcile(
    apiserver: APIServer, run_manager: Callable[[Manager], None], *, read_your_writes: bool
) -> tuple[Any, WidgetReconciler]:
    """Run the controller; create a Widget while the watch lags ``LAG`` seconds;
    re-queue its key right after the first reconcile's writes."""
    mgr = Manager(apiserver.api_client(), graceful_shutdown_timeout=5.0)
    name = f"widgets-ryw-{'on' if read_your_writes else 'off'}"
    reconciler = WidgetReconciler(mgr.informers)
    controller = (
        mgr.controller(name)
        .for_(*WIDGETS, kind="Widget")
        .owns(*CONFIGMAPS)
        .with_options(read_your_writes=read_your_writes)
        .complete(reconciler)
    )
    run_manager(mgr)
    apiserver.delay_watch_events(LAG)
    widgets = ResourceClient(apiserver.api_client(), *WIDGETS)
    widgets.create(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
    )
    wait_for(
        lambda: requests(apiserver, "PUT", "/widgets/w/status"),
        what="the first reconcile's writes",
    )
    assert requests(apiserver, "POST", "/configmaps") == 1
    # A resync, another event or a requeue would do the same: the key comes
    # back while the watch still lags the first reconcile's writes.
    queue = controller.queue
    assert isinstance(queue, PriorityQueue)
    queue.add("default/w")
    return controller, reconciler


def test_read_your_writes_no_duplicate_create_no_conflict_while_the_watch_lags(
    apiserver_with_widgets: APIServer, run_manager: Callable[[Manager], None]
) -> None:
    apiserver = apiserver_with_widgets
    started = time.monotonic()
    controller, reconciler = lagging_second_reconcile(apiserver, run_manager, read_your_writes=True)
    # Deferred (not blocking a worker) until the lagging events arrive.
    wait_for(lambda: skips(controller.name) > 0, what="a deferral")
    wait_for(lambda: reconciler.saw[-1], timeout=LAG * 5, what="a reconcile on a fresh cache")
    time.sleep(0.3)  # any stray write would show by now
    assert conflicts(apiserver) == []
    assert requests(apiserver, "POST", "/configmaps") == 1
    assert requests(apiserver, "PUT", "/widgets/w/status") == 1
    # The first reconcile, then only reconciles on a cache holding its writes.
    assert reconciler.saw[0] is False and all(reconciler.saw[1:]), reconciler.saw
    assert time.monotonic() - started < LAG * 5  # well within the 10 s bound
    assert controller.read_your_writes is not None
    assert controller.read_your_writes.pending("default/w") == ()


def test_without_read_your_writes_the_same_controller_duplicates_and_conflicts(
    apiserver_with_widgets: APIServer, run_manager: Callable[[Manager], None]
) -> None:
    apiserver = apiserver_with_widgets
    controller, reconciler = lagging_second_reconcile(
        apiserver, run_manager, read_your_writes=False
    )
    wait_for(lambda: len(conflicts(apiserver)) >= 2, what="the stale reconcile's 409s")
    found = conflicts(apiserver)
    assert any(m == "POST" and "/configmaps" in p for m, p in found), found  # AlreadyExists
    assert any(m == "PUT" and p.endswith("/widgets/w/status") for m, p in found), found
    assert skips(controller.name) == 0
    # It converges once the watch catches up.
    wait_for(lambda: reconciler.saw[-1], timeout=LAG * 5, what="convergence")


def test_a_hand_wired_controller_opts_in_with_a_factory(
    apiserver_with_widgets: APIServer,
) -> None:
    apiserver = apiserver_with_widgets
    factory = SharedInformerFactory(apiserver.api_client())
    queue = RateLimitingQueue(name="")
    factory.for_resource(*WIDGETS).add_event_handler(enqueue_key(queue))
    factory.for_resource(*CONFIGMAPS).add_event_handler(
        enqueue_owner(queue, "Widget", "example.com")
    )
    reconciler = WidgetReconciler(factory)

    def sync(key: str) -> None:
        reconciler(Request.from_key(key))

    controller = Controller(
        "widgets-hand-wired",
        queue,
        sync,
        has_synced=[i.has_synced for i in factory.informers().values()],
        read_your_writes=ReadYourWrites(factory),
    )
    stop = threading.Event()
    factory.start(stop)
    thread = threading.Thread(target=controller.run, args=(1, stop), daemon=True)
    thread.start()
    try:
        factory.wait_for_cache_sync(stop, timeout=10)
        apiserver.delay_watch_events(LAG)
        ResourceClient(apiserver.api_client(), *WIDGETS).create(
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
        )
        wait_for(lambda: requests(apiserver, "PUT", "/widgets/w/status"), what="first writes")
        queue.add("default/w")
        wait_for(lambda: skips("widgets-hand-wired") > 0, what="a deferral")
        wait_for(lambda: reconciler.saw[-1], timeout=LAG * 5, what="a fresh reconcile")
        assert conflicts(apiserver) == []
        assert requests(apiserver, "POST", "/configmaps") == 1
    finally:
        stop.set()
        thread.join(10)
        factory.shutdown()


def test_delay_watch_events_holds_events_back_in_order(apiserver: APIServer) -> None:
    cms = ResourceClient(apiserver.api_client(), *CONFIGMAPS)
    rv = cms.list("default")["metadata"]["resourceVersion"]
    stream = cms.watch("default", resource_version=rv, timeout_seconds=10, allow_bookmarks=False)
    try:
        apiserver.delay_watch_events(0.5)
        committed = time.monotonic()
        for name in ("a", "b"):
            cms.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
        first = next(stream)
        arrived = time.monotonic() - committed
        second = next(stream)
        assert [first["object"]["metadata"]["name"], second["object"]["metadata"]["name"]] == [
            "a",
            "b",
        ]
        assert arrived >= 0.45
        apiserver.delay_watch_events(0)
        started = time.monotonic()
        cms.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        assert next(stream)["object"]["metadata"]["name"] == "c"
        assert time.monotonic() - started < 0.4
    finally:
        stream.close()
    with pytest.raises(ValueError):
        apiserver.delay_watch_events(-1)
