"""Which Balancer updates reach the work queue (controllers.balancer.predicates)."""

from __future__ import annotations

import copy
from typing import Any

from controllers.balancer.predicates import balancer_update_relevant


def balancer(rv: str = "1", generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "b",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": rv,
            "generation": generation,
            "labels": {"a": "b"},
            "annotations": {"x": "y"},
        },
        "spec": {"backends": []},
        "status": {"activeBackendsNum": 1},
    }


def test_status_only_update_is_dropped() -> None:
    old = balancer("1")
    new = balancer("2")
    new["status"] = {"activeBackendsNum": 2}
    assert not balancer_update_relevant(old, new)


def test_periodic_resync_passes() -> None:
    obj = balancer("5")
    assert balancer_update_relevant(obj, copy.deepcopy(obj))


def test_spec_label_annotation_and_deletion_changes_pass() -> None:
    old = balancer("1")
    for mutate in (
        lambda m: m.update(generation=2),
        lambda m: m["labels"].update(c="d"),
        lambda m: m["annotations"].update(z="w"),
        lambda m: m.update(deletionTimestamp="2026-01-01T00:00:00Z"),
    ):
        new = balancer("2")
        mutate(new["metadata"])
        assert balancer_update_relevant(old, new)
