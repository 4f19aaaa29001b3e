"""Event-handler side of the priority queue: which events go in at ``LOW_PRIORITY``.

controller-runtime's ``handler.addToQueueCreate`` / ``addToQueueUpdate``: when
the queue is a priority queue (has ``add_with_opts``), an add from the
informer's initial list (``is_in_initial_list``) and an update whose
resourceVersion did not change (a resync, or a relist that found the object
unchanged) go in at ``LOW_PRIORITY``; every other event at the default
priority 0. Any other queue gets a plain ``add``, so a handler written with
these helpers works on both.

Deletes always go in at priority 0: they are real changes. So does an update
whose ``metadata.uid`` changed (a re-created object), whatever its
resourceVersion says.

``pycontroller.handlers.enqueue_key`` and ``enqueue_owner`` call
``add_for_create`` in ``on_add`` and ``add_for_update`` in ``on_update``.
"""

from __future__ import annotations

from typing import Any, Protocol

from pycontroller._objmeta import object_meta as _meta
from pycontroller.workqueue.priority_queue import LOW_PRIORITY

__all__ = [
    "add_for_create",
    "add_for_update",
    "create_priority",
    "update_priority",
]


class _Adder(Protocol):
    def add(self, item: Any) -> None: ...


def create_priority(is_in_initial_list: bool) -> int:
    """``LOW_PRIORITY`` for an add from the initial list, else 0."""
    return LOW_PRIORITY if is_in_initial_list else 0


def update_priority(old: Any, new: Any) -> int:
    """``LOW_PRIORITY`` when ``old`` and ``new`` have the same resourceVersion, else 0.

    Objects without a resourceVersion count as changed, and so does an object
    whose ``metadata.uid`` changed (re-created under the same name).
    """
    old_meta, new_meta = _meta(old), _meta(new)
    rv = new_meta.get("resourceVersion")
    if rv is None or rv != old_meta.get("resourceVersion"):
        return 0
    old_uid, new_uid = old_meta.get("uid"), new_meta.get("uid")
    if old_uid is not None and new_uid is not None and old_uid != new_uid:
        return 0
    return LOW_PRIORITY


def add_for_create(queue: _Adder, item: Any, is_in_initial_list: bool) -> None:
    """Add ``item`` for an add event: at low priority if from the initial list."""
    add_with_opts = getattr(queue, "add_with_opts", None)
    if add_with_opts is None:
        queue.add(item)
    else:
        add_with_opts(item, priority=create_priority(is_in_initial_list))


def add_for_update(queue: _Adder, item: Any, old: Any, new: Any) -> None:
    """Add ``item`` for an update event: at low priority if nothing changed (a resync)."""
    add_with_opts = getattr(queue, "add_with_opts", None)
    if add_with_opts is None:
        queue.add(item)
    else:
        add_with_opts(item, priority=update_priority(old, new))
