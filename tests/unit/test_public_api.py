"""Pins the public surface: the names the library promises (docs/architecture.md).

Nothing slips out of ``__all__`` unnoticed.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

TOP_LEVEL = [
    "AlreadyExistsError",
    "ApiError",
    "Builder",
    "ConflictError",
    "Controller",
    "EventRecorder",
    "GoneError",
    "InvalidError",
    "LeaderElector",
    "LeaseLock",
    "Manager",
    "NotFoundError",
    "Request",
    "ResourceClient",
    "Result",
    "TerminalError",
    "TooManyRequestsError",
    "create_or_apply",
    "create_or_update",
    "load_config",
    "serve_metrics_and_health",
    "setup_signal_handler",
    "tune_gc",
]

CONTRACT: dict[str, list[str]] = {
    "pycontroller.workqueue": [
        "Queue",
        "DelayingQueue",
        "RateLimitingQueue",
        "ItemExponentialFailureRateLimiter",
        "ItemFastSlowRateLimiter",
        "BucketRateLimiter",
        "MaxOfRateLimiter",
        "default_controller_rate_limiter",
    ],
    "pycontroller.cache": [
        "meta_namespace_key_func",
        "deletion_handling_meta_namespace_key_func",
        "split_meta_namespace_key",
        "DeletedFinalStateUnknown",
        "NAMESPACE_INDEX",
        "meta_namespace_index_func",
        "Indexer",
        "DeltaType",
        "Delta",
        "DeltaFIFO",
        "ClosedError",
        "ListWatch",
        "Reflector",
        "ResourceEventHandlerFuncs",
        "FilteringResourceEventHandler",
        "SharedIndexInformer",
        "wait_for_cache_sync",
        "Lister",
        "SharedInformerFactory",
        "compact_metadata",
        "strip_managed_fields",
    ],
    "pycontroller.testing": ["APIServer"],
    "pycontroller.predicates": [
        "Predicate",
        "GenerationChanged",
        "LabelsChanged",
        "AnnotationsChanged",
        "ResourceVersionChanged",
        "and_",
        "or_",
        "not_",
    ],
    "pycontroller.meta": [
        "set_controller_reference",
        "is_controlled_by",
        "controller_of",
        "set_status_condition",
        "find_status_condition",
        "add_finalizer",
        "remove_finalizer",
        "join_problems",
        "shorten",
    ],
    "controllers.balancer.nginx": ["render"],
    "controllers.balancer.resources": ["desired_children"],
}


def test_top_level_all_is_pinned_and_sorted() -> None:
    import pycontroller

    assert pycontroller.__all__ == sorted(pycontroller.__all__)
    assert pycontroller.__all__ == TOP_LEVEL
    for name in TOP_LEVEL:
        assert getattr(pycontroller, name) is not None


@pytest.mark.parametrize("module_name", sorted(CONTRACT))
def test_contract_names_importable(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [n for n in CONTRACT[module_name] if not hasattr(module, n)]
    assert missing == []
    exported = getattr(module, "__all__", None)
    if exported is not None:
        assert list(exported) == sorted(exported)
        assert set(CONTRACT[module_name]) <= set(exported) or not module_name.startswith(
            "pycontroller."
        )


def _params(obj: object) -> list[str]:
    return list(inspect.signature(obj).parameters)  # type: ignore[arg-type]


def test_signatures_match_design() -> None:
    from pycontroller import Controller, LeaderElector, LeaseLock, ResourceClient, Result
    from pycontroller.cache import (
        DeltaFIFO,
        Indexer,
        Reflector,
        SharedIndexInformer,
        SharedInformerFactory,
    )
    from pycontroller.testing import APIServer
    from pycontroller.workqueue import (
        BucketRateLimiter,
        ItemExponentialFailureRateLimiter,
        ItemFastSlowRateLimiter,
        Queue,
        RateLimitingQueue,
    )

    assert _params(Queue)[:1] == ["name"]
    assert _params(RateLimitingQueue)[:2] == ["rate_limiter", "name"]
    assert _params(ItemExponentialFailureRateLimiter)[:2] == ["base_delay", "max_delay"]
    assert _params(ItemFastSlowRateLimiter)[:3] == ["fast_delay", "slow_delay", "max_fast_attempts"]
    assert _params(BucketRateLimiter)[:2] == ["qps", "burst"]
    assert _params(Indexer)[:2] == ["key_func", "indexers"]
    assert _params(DeltaFIFO)[:3] == ["key_func", "known_objects", "emit_delta_type_replaced"]
    assert _params(Reflector)[:5] == [
        "lister_watcher",
        "store",
        "name",
        "resync_period",
        "page_size",
    ]
    assert _params(SharedIndexInformer)[:5] == [
        "lister_watcher",
        "resync_period",
        "indexers",
        "transform",
        "name",
    ]
    assert _params(SharedInformerFactory)[:4] == [
        "api_client",
        "resync_period",
        "namespace",
        "label_selector",
    ]
    assert _params(ResourceClient)[:5] == ["api_client", "group", "version", "plural", "namespaced"]
    assert _params(Controller)[:5] == ["name", "queue", "sync", "has_synced", "max_retries"]
    assert _params(Result)[:2] == ["requeue", "requeue_after"]
    assert _params(LeaseLock)[:4] == ["api_client", "namespace", "name", "identity"]
    assert _params(LeaderElector)[:4] == [
        "lock",
        "lease_duration",
        "renew_deadline",
        "retry_period",
    ]
    assert _params(APIServer)[:5] == ["host", "port", "crds", "history_size", "bookmark_interval"]


def test_second_round_signatures_match_design() -> None:
    from pycontroller import Request, create_or_update, meta, predicates

    assert Request._fields == ("namespace", "name")
    assert _params(create_or_update) == ["client", "obj", "mutate"]
    from pycontroller import create_or_apply, tune_gc

    assert _params(create_or_apply) == ["client", "obj", "field_manager", "force", "current"]
    assert _params(tune_gc) == ["full_interval"]
    assert _params(meta.set_controller_reference) == ["owner", "obj"]
    assert _params(meta.is_controlled_by) == ["obj", "owner"]
    assert _params(meta.controller_of) == ["obj"]
    assert _params(meta.set_status_condition)[:2] == ["conditions", "condition"]
    assert _params(meta.find_status_condition) == ["conditions", "type"]
    assert _params(meta.add_finalizer) == ["obj", "name"]
    assert _params(meta.remove_finalizer) == ["obj", "name"]
    for name in ("create", "delete", "generic"):
        assert _params(getattr(predicates.Predicate, name)) == ["self", "obj"]
    assert _params(predicates.Predicate.update) == ["self", "old", "new"]


def test_manager_and_builder_signatures_match_design() -> None:
    from pycontroller import Builder, Manager

    params = inspect.signature(Manager).parameters
    assert list(params)[:10] == [
        "api_client",
        "namespace",
        "metrics_bind_address",
        "health_probe_bind_address",
        "leader_election",
        "leader_election_id",
        "leader_election_namespace",
        "graceful_shutdown_timeout",
        "resync_period",
        "name",
    ]
    assert all(p.kind is p.KEYWORD_ONLY for p in list(params.values())[1:])
    defaults = {n: p.default for n, p in params.items()}
    assert defaults["api_client"] is None
    assert defaults["metrics_bind_address"] == defaults["health_probe_bind_address"] == "0"
    assert (defaults["graceful_shutdown_timeout"], defaults["resync_period"]) == (25.0, 600.0)
    assert _params(Manager.from_args)[:4] == ["argv", "name", "parser", "crds"]
    assert _params(Manager.client) == ["self", "group", "version", "plural", "namespaced"]
    for method in ("recorder", "add", "controller", "run"):
        assert callable(getattr(Manager, method))
    assert _params(Manager.run) == ["self", "stop"]
    assert _params(Builder.for_)[:6] == [
        "self",
        "group",
        "version",
        "plural",
        "namespaced",
        "predicates",
    ]
    assert _params(Builder.owns)[:6] == _params(Builder.for_)[:6]
    assert _params(Builder.watches)[:7] == [
        "self",
        "group",
        "version",
        "plural",
        "map_fn",
        "namespaced",
        "predicates",
    ]
    assert _params(Builder.with_event_filter) == ["self", "predicates"]
    assert _params(Builder.with_options)[:3] == ["self", "workers", "rate_limiter"]
    assert _params(Builder.complete) == ["self", "reconcile"]
