"""Event-handler side of the priority queue: which events go in at ``LOW_PRIORITY``.

controller-runtime's ``handler.addToQueueCreate`` / ``addToQueueUpdate``: when
the queue is a priority queue (has ``add_with_opts``), an add from the
informer's initial list (``is_in_initial_list``) and an update whose
resourceVersion did not change (a resync, or a relist that found the object
unchanged) go in at ``LOW_PRIORITY``; every other event at the default
priority 0. Any other queue gets a plain ``add``, so a handler written with
these helpers works on both.

Deletes always go in at priority 0: they are real changes.

``handlers.enqueue_key`` adopts this by calling ``add_for_create`` in
``on_add`` and ``add_for_update`` in ``on_update`` instead of ``queue.add``;
``enqueue_key_with_priority`` below is that handler until it does.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pycontroller.cache.shared_informer import ResourceEventHandler
from pycontroller.cache.store import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
)
from pycontroller.workqueue.priority_queue import LOW_PRIORITY

__all__ = [
    "add_for_create",
    "add_for_update",
    "create_priority",
    "enqueue_key_with_priority",
    "update_priority",
]

logger = logging.getLogger(__name__)


class _Adder(Protocol):
    def add(self, item: Any) -> None: ...


def _resource_version(obj: Any) -> Any:
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            return meta.get("resourceVersion")
    return None


def create_priority(is_in_initial_list: bool) -> int:
    """``LOW_PRIORITY`` for an add from the initial list, else 0."""
    return LOW_PRIORITY if is_in_initial_list else 0


def update_priority(old: Any, new: Any) -> int:
    """``LOW_PRIORITY`` when ``old`` and ``new`` have the same resourceVersion, else 0.

    Objects without a resourceVersion count as changed.
    """
    rv = _resource_version(new)
    if rv is not None and rv == _resource_version(old):
        return LOW_PRIORITY
    return 0


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


class _EnqueueKeyWithPriority:
    """``handlers.enqueue_key`` with the priorities above."""

    def __init__(self, queue: _Adder) -> None:
        self.queue = queue

    @staticmethod
    def _key(obj: Any) -> str | None:
        try:
            return deletion_handling_meta_namespace_key_func(obj)
        except Exception as err:  # an object without metadata cannot be keyed
            logger.warning("cannot compute a queue key: %s", err)
            return None

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        key = self._key(obj)
        if key is not None:
            add_for_create(self.queue, key, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        key = self._key(new)
        if key is not None:
            add_for_update(self.queue, key, old, new)

    def on_delete(self, obj: Any) -> None:
        key = self._key(obj)
        if key is not None:
            self.queue.add(key)


def enqueue_key_with_priority(queue: _Adder) -> ResourceEventHandler:
    """``enqueue_key(queue)``, with initial-list adds and resyncs at ``LOW_PRIORITY``."""
    return _EnqueueKeyWithPriority(queue)
