"""Read-your-writes (pycontroller.consistency): comparison, recording, deferral, Controller."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import REGISTRY

from pycontroller.cache import Indexer
from pycontroller.clock import FakeClock
from pycontroller.consistency import (
    DEFAULT_TIMEOUT,
    ReadYourWrites,
    Write,
    compare_resource_versions,
    record_write,
)
from pycontroller.controller import Controller, Result

CM = "/v1/configmaps"


def obj(name: str, rv: str, ns: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv, **meta},
    }


class FakeInformer:
    def __init__(self, last_rv: str = "1", synced: bool = True) -> None:
        self.indexer = Indexer()
        self.last_rv = last_rv
        self.synced = synced

    def has_synced(self) -> bool:
        return self.synced

    def get_indexer(self) -> Indexer:
        return self.indexer

    def last_sync_resource_version(self) -> str:
        return self.last_rv


class FakeQueue:
    def __init__(self) -> None:
        self.after: list[tuple[Any, float]] = []
        self.rate_limited: list[Any] = []
        self.forgotten: list[Any] = []

    def add_after(self, item: Any, delay: float) -> None:
        self.after.append((item, delay))

    def add_rate_limited(self, item: Any) -> None:
        self.rate_limited.append(item)

    def forget(self, item: Any) -> None:
        self.forgotten.append(item)

    def num_requeues(self, item: Any) -> int:
        return 0

    def done(self, item: Any) -> None: ...

    def get(self, timeout: float | None = None) -> tuple[Any, bool]:
        return None, True

    def shut_down(self) -> None: ...

    def shut_down_with_drain(self) -> None: ...

    def shutting_down(self) -> bool:
        return False


def skips(controller: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "controller_runtime_stale_sync_skips_total", {"controller": controller}
        )
        or 0.0
    )


def timeouts(controller: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "controller_runtime_stale_sync_timeouts_total", {"controller": controller}
        )
        or 0.0
    )


# --------------------------------------------------------------------------- comparison


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("5", "5", 0),
        ("5", "6", -1),
        ("10", "9", 1),  # longer is greater, not lexically smaller
        ("9", "10", -1),
        ("123", "124", -1),
        ("340282366920938463463374607431768211456", "1", 1),  # no size limit
        ("", "1", None),
        ("0", "1", None),  # "0" means "any": not a version
        ("01", "1", None),  # leading zero
        ("1a", "1", None),
        ("-1", "1", None),
        ("\u0661", "1", None),  # a non-ASCII digit (ARABIC-INDIC ONE)
        ("abc", "abd", None),
    ],
)
def test_compare_resource_versions_follows_kep_5504(a: str, b: str, want: int | None) -> None:
    assert compare_resource_versions(a, b) == want
    if want is not None:
        assert compare_resource_versions(b, a) == -want


# --------------------------------------------------------------------------- recording


def test_record_write_outside_a_tracked_reconcile_is_a_no_op() -> None:
    record_write(CM, True, obj("a", "5"))  # nothing to assert but no error


def run_recording(ryw: ReadYourWrites, key: str, *writes: dict[str, Any]) -> tuple[Write, ...]:
    def sync(k: str) -> None:
        for w in writes:
            record_write(**w)

    ryw.run(key, sync)
    return ryw.pending(key)


def test_run_records_writes_with_keys_and_resource_versions() -> None:
    ryw = ReadYourWrites({CM: FakeInformer()})
    got = run_recording(
        ryw,
        "default/p",
        {"resource": CM, "namespaced": True, "result": obj("child", "7")},
        {
            "resource": "/v1/nodes",
            "namespaced": False,
            "result": {"metadata": {"name": "n", "resourceVersion": "8"}},
        },
    )
    assert got == (Write(CM, "default/child", "7"), Write("/v1/nodes", "n", "8"))


def test_delete_answers_are_recorded_as_deletes_unless_still_terminating() -> None:
    ryw = ReadYourWrites({CM: FakeInformer()})
    status = {"kind": "Status", "status": "Success", "details": {"name": "x"}}
    terminating = obj("t", "9", deletionTimestamp="2024-01-01T00:00:00Z")
    got = run_recording(
        ryw,
        "k",
        {"resource": CM, "namespaced": True, "result": obj("gone", "5"), "deleted": True},
        {
            "resource": CM,
            "namespaced": True,
            "result": status,
            "name": "x",
            "namespace": "ns",
            "deleted": True,
        },
        {"resource": CM, "namespaced": True, "result": terminating, "deleted": True},
    )
    assert got == (
        Write(CM, "default/gone", "5", deleted=True),
        Write(CM, "ns/x", "", deleted=True),
        Write(CM, "default/t", "9", deleted=False),
    )


def test_dry_run_and_incomparable_writes_are_not_waited_for() -> None:
    ryw = ReadYourWrites({CM: FakeInformer()})
    got = run_recording(
        ryw,
        "k",
        {"resource": CM, "namespaced": True, "result": obj("a", "5"), "params": {"dry_run": "All"}},
        {"resource": CM, "namespaced": True, "result": obj("b", "opaque-rv")},
    )
    assert got == ()
    assert ryw.defer("k") is None


def test_writes_are_kept_when_the_sync_raises_and_not_seen_by_other_threads_scope() -> None:
    ryw = ReadYourWrites({CM: FakeInformer()})

    def sync(key: str) -> None:
        record_write(CM, True, obj("a", "5"))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ryw.run("k", sync)
    assert ryw.pending("k") == (Write(CM, "default/a", "5"),)
    record_write(CM, True, obj("b", "6"))  # after the scope closed: not recorded
    assert ryw.pending("k") == (Write(CM, "default/a", "5"),)


# --------------------------------------------------------------------------- deferral


def tracker(informer: FakeInformer, clock: FakeClock, name: str) -> ReadYourWrites:
    ryw = ReadYourWrites({CM: informer}, clock=clock)
    ryw.bind(name)
    return ryw


def test_a_key_waits_until_its_created_object_is_in_the_store() -> None:
    clock, informer = FakeClock(), FakeInformer(last_rv="4")
    ryw = tracker(informer, clock, "ryw-create")
    run_recording(
        ryw, "default/p", {"resource": CM, "namespaced": True, "result": obj("child", "5")}
    )

    delays = [ryw.defer("default/p") for _ in range(3)]
    assert delays == [0.005, 0.01, 0.02]  # exponential, never blocking
    assert skips("ryw-create") == 3
    assert ryw.defer("other") is None  # other keys are never held

    informer.indexer.add(obj("child", "5"))
    assert ryw.defer("default/p") is None
    assert ryw.pending("default/p") == ()
    assert ryw.defer("default/p") is None  # cleared once observed


def test_a_newer_object_in_the_store_counts_as_observed_an_older_does_not() -> None:
    clock, informer = FakeClock(), FakeInformer()
    ryw = tracker(informer, clock, "ryw-update")
    informer.indexer.add(obj("p", "9"))
    run_recording(ryw, "default/p", {"resource": CM, "namespaced": True, "result": obj("p", "10")})
    assert ryw.defer("default/p") is not None
    informer.indexer.update(obj("p", "12"))  # someone wrote after us
    assert ryw.defer("default/p") is None


def test_a_delete_is_observed_once_the_object_left_the_store_or_was_recreated() -> None:
    clock, informer = FakeClock(), FakeInformer()
    ryw = tracker(informer, clock, "ryw-delete")
    informer.indexer.add(obj("c", "5"))
    run_recording(
        ryw, "k", {"resource": CM, "namespaced": True, "result": obj("c", "5"), "deleted": True}
    )
    assert ryw.defer("k") is not None
    informer.indexer.update(obj("c", "8"))  # re-created (newer resourceVersion)
    assert ryw.defer("k") is None

    run_recording(
        ryw, "k", {"resource": CM, "namespaced": True, "result": obj("c", "8"), "deleted": True}
    )
    assert ryw.defer("k") is not None
    informer.indexer.delete(obj("c", "8"))
    assert ryw.defer("k") is None


def test_a_created_object_deleted_since_is_accepted_after_two_checks_past_it() -> None:
    clock, informer = FakeClock(), FakeInformer(last_rv="4")
    ryw = tracker(informer, clock, "ryw-gone")
    run_recording(ryw, "k", {"resource": CM, "namespaced": True, "result": obj("c", "5")})
    assert ryw.defer("k") is not None  # reflector not past it
    informer.last_rv = "6"  # created and deleted by someone else: never in the store
    assert ryw.defer("k") is not None  # the store may not have applied it yet
    assert ryw.defer("k") is None  # past it at an earlier check too


def test_the_bound_lets_the_reconcile_go_ahead_and_counts_a_timeout() -> None:
    clock, informer = FakeClock(), FakeInformer()
    ryw = tracker(informer, clock, "ryw-bound")
    run_recording(ryw, "k", {"resource": CM, "namespaced": True, "result": obj("c", "5")})
    assert ryw.defer("k") is not None
    clock.step(DEFAULT_TIMEOUT - 0.001)
    assert ryw.defer("k") == pytest.approx(0.001)  # never past the bound
    clock.step(0.001)
    assert ryw.defer("k") is None
    assert timeouts("ryw-bound") == 1
    assert ryw.pending("k") == ()


def test_unsynced_informers_and_unknown_resources_never_hold_a_key() -> None:
    clock = FakeClock()
    ryw = tracker(FakeInformer(synced=False), clock, "ryw-unsynced")
    run_recording(
        ryw,
        "k",
        {"resource": CM, "namespaced": True, "result": obj("c", "5")},
        {"resource": "/v1/secrets", "namespaced": True, "result": obj("s", "6")},
    )
    assert ryw.defer("k") is None


def test_every_informer_of_the_resource_must_observe_the_write() -> None:
    clock, full, meta = FakeClock(), FakeInformer(), FakeInformer()
    ryw = ReadYourWrites({CM: [full, meta]}, clock=clock)
    run_recording(ryw, "k", {"resource": CM, "namespaced": True, "result": obj("c", "5")})
    full.indexer.add(obj("c", "5"))
    assert ryw.defer("k") is not None
    meta.indexer.add(obj("c", "5"))
    assert ryw.defer("k") is None


def test_factory_resolver_uses_full_and_metadata_informers_in_its_namespace() -> None:
    from kubernetes.client import ApiClient

    from pycontroller.cache import SharedInformerFactory

    factory = SharedInformerFactory(ApiClient(), namespace="team")
    resolve = ReadYourWrites(factory)._resolve
    assert list(resolve(CM, "team/a")) == []  # no informer of the resource
    full = factory.for_resource("", "v1", "configmaps")
    meta = factory.for_resource("", "v1", "configmaps", metadata_only=True)
    assert list(resolve(CM, "team/a")) == [full, meta]
    assert list(resolve(CM, "other/a")) == []  # outside the factory's namespace
    assert list(resolve("/v1/nodes", "n")) == []
    selected = SharedInformerFactory(ApiClient(), label_selector="app=x")
    selected.for_resource("", "v1", "configmaps")
    assert list(ReadYourWrites(selected)._resolve(CM, "team/a")) == []  # may never see it


def test_bind_refuses_a_second_controller() -> None:
    ryw = ReadYourWrites({})
    ryw.bind("a")
    ryw.bind("a")
    with pytest.raises(ValueError, match="already serves"):
        ryw.bind("b")


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        ReadYourWrites({}, timeout=-1)
    with pytest.raises(ValueError):
        ReadYourWrites({}, base_delay=0)
    with pytest.raises(ValueError):
        ReadYourWrites({}, base_delay=2, max_delay=1)


# --------------------------------------------------------------------------- Controller hook


def test_controller_defers_with_add_after_and_leaves_the_failure_backoff_alone() -> None:
    clock, informer, queue = FakeClock(), FakeInformer(), FakeQueue()
    ryw = ReadYourWrites({CM: informer}, clock=clock)
    synced: list[str] = []

    def sync(key: str) -> Result | None:
        synced.append(key)
        record_write(CM, True, obj("child", "5"))
        return None

    c = Controller("ryw-controller", queue, sync, clock=clock, read_your_writes=ryw)
    c._reconcile_handler("default/p")
    assert synced == ["default/p"] and queue.forgotten == ["default/p"]

    c._reconcile_handler("default/p")  # the child is not in the cache yet
    assert synced == ["default/p"]
    assert queue.after == [("default/p", 0.005)]
    assert queue.forgotten == ["default/p"] and queue.rate_limited == []
    assert skips("ryw-controller") == 1

    informer.indexer.add(obj("child", "5"))
    c._reconcile_handler("default/p")
    assert synced == ["default/p", "default/p"]


def test_controller_without_read_your_writes_records_nothing() -> None:
    queue = FakeQueue()
    calls: list[str] = []

    def sync(key: str) -> None:
        calls.append(key)
        record_write(CM, True, obj("child", "5"))

    c = Controller("ryw-off", queue, sync, clock=FakeClock())
    c._reconcile_handler("k")
    c._reconcile_handler("k")
    assert calls == ["k", "k"] and queue.after == []
