"""Builder-made handlers for owned and watched objects queue by priority.

A child's initial-list add (or resync) must not lift its owner's key to the
priority of a real change: after a restart, a real change still goes first.
"""

from __future__ import annotations

from typing import Any

from pycontroller.builder import _EnqueueMapped, _EnqueueOwner, _OwnerKind
from pycontroller.request import Request
from pycontroller.workqueue import PriorityQueue


def child(name: str, owner: str, rv: str = "1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": rv,
            "ownerReferences": [
                {"apiVersion": "example.com/v1", "kind": "Thing", "name": owner, "controller": True}
            ],
        }
    }


def drain(queue: PriorityQueue) -> list[str]:
    out = []
    while len(queue):
        item, _ = queue.get(timeout=1)
        out.append(item)
        queue.done(item)
    return out


def test_owned_initial_list_and_resync_go_below_a_real_change() -> None:
    queue = PriorityQueue()
    handler = _EnqueueOwner(queue, "example.com", _OwnerKind(None, "Thing"))  # type: ignore[arg-type]
    handler.on_add(child("a", "owner-a"), True)  # initial list: low
    handler.on_update(child("b", "owner-b"), child("b", "owner-b"))  # resync: low
    handler.on_update(child("c", "owner-c", "1"), child("c", "owner-c", "2"))  # real change
    assert drain(queue) == ["ns/owner-c", "ns/owner-a", "ns/owner-b"]
    queue.shut_down()


def test_watched_initial_list_goes_below_a_real_change() -> None:
    queue = PriorityQueue()

    def map_fn(obj: dict[str, Any]) -> list[Request]:
        return [Request("ns", "target-" + obj["metadata"]["name"])]

    handler = _EnqueueMapped(queue, map_fn)
    handler.on_add(child("a", "x"), True)
    handler.on_add(child("b", "x"), False)  # a real create
    assert drain(queue) == ["ns/target-b", "ns/target-a"]
    queue.shut_down()
