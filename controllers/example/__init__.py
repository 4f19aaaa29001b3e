"""A minimal sample-controller-style example: mirror labelled ConfigMaps.

Every ConfigMap labelled ``example.pycontroller.io/mirror=true`` gets a
sibling ``<name>-mirror`` ConfigMap with the same ``data``, owned by it
through a controller ownerReference (so deleting the source garbage-collects
the mirror). Removing the label deletes the mirror. A mirror name taken by a
ConfigMap we do not own is left alone and reported with a Warning event.

Run it with ``python -m controllers.example --kubeconfig PATH``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pycontroller import Controller, Manager, NotFoundError
from pycontroller.cache import split_meta_namespace_key
from pycontroller.record import Recorder

logger = logging.getLogger(__name__)

#: Controller name: the workqueue's and the controller_runtime_* metrics' label.
NAME = "example-mirror"
#: Event source component and leader-election Lease name.
COMPONENT = "example-mirror-controller"
MIRROR_LABEL = "example.pycontroller.io/mirror"
MIRROR_SUFFIX = "-mirror"
REASON_SYNCED = "Synced"
REASON_CONFLICT = "MirrorConflict"


def is_source(cm: dict[str, Any]) -> bool:
    return (cm["metadata"].get("labels") or {}).get(MIRROR_LABEL) == "true"


def desired_mirror(src: dict[str, Any]) -> dict[str, Any]:
    """Pure: the mirror ConfigMap ``src`` should have."""
    meta = src["metadata"]
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": meta["name"], "uid": meta["uid"]}
    owner |= {"controller": True, "blockOwnerDeletion": True}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": meta["name"] + MIRROR_SUFFIX,
            "namespace": meta["namespace"],
            "ownerReferences": [owner],
        },
        "data": dict(src.get("data") or {}),
    }


def _owned_by(cm: dict[str, Any], src: dict[str, Any]) -> bool:
    refs = cm["metadata"].get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") == src["metadata"]["uid"] for r in refs)


class MirrorController:
    """The level-based ``sync`` plus its wiring on a ``Manager`` (one builder call).

    ``manager`` defaults to ``Manager(api_client, namespace=namespace)``
    (no servers, no leader election): ``run(workers, stop)`` then runs it.
    ``recorder`` receives the Synced/MirrorConflict events (None: none).
    """

    def __init__(
        self,
        api_client: Any = None,
        *,
        namespace: str | None = None,
        recorder: Recorder | None = None,
        manager: Manager | None = None,
    ) -> None:
        self.manager = manager or Manager(api_client, namespace=namespace)
        self.lister = self.manager.informers.lister("", "v1", "configmaps")
        self.client = self.manager.client("", "v1", "configmaps")
        self.recorder = recorder
        self.has_synced = self.manager.informers.for_resource("", "v1", "configmaps").has_synced
        self.controller: Controller | None = None

    def setup(self, workers: int = 2) -> Controller:
        """Add the controller to the manager: sources by key, mirrors by their owner."""
        controller = (
            self.manager.controller(NAME)
            .for_("", "v1", "configmaps", kind="ConfigMap")
            .owns("", "v1", "configmaps")
            .with_options(workers=workers)
            .complete(lambda request: self.sync(str(request)))
        )
        self.controller = controller
        return controller

    def run(self, workers: int, stop: threading.Event) -> int:
        """``setup(workers)`` then run the manager until ``stop``; its exit code."""
        self.setup(workers)
        return self.manager.run(stop)

    def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        try:
            src = self.lister.get(name, namespace)
        except NotFoundError:
            return  # deleted: the garbage collector removes its mirror
        if name.endswith(MIRROR_SUFFIX) and not is_source(src):
            return  # a mirror (or unrelated ConfigMap): its owner's key is enqueued too
        mirror_name = name + MIRROR_SUFFIX
        try:
            current = self.lister.get(mirror_name, namespace)
        except NotFoundError:
            current = None
        if current is not None and not _owned_by(current, src):
            if is_source(src) and self.recorder is not None:
                msg = f"ConfigMap {mirror_name} exists and is not owned by {name}"
                self.recorder.event(src, "Warning", REASON_CONFLICT, msg)
            return
        if not is_source(src):
            if current is not None:
                self.client.delete(mirror_name, namespace)
            return
        desired = desired_mirror(src)
        if current is None:
            self.client.create(desired)
        elif (current.get("data") or {}) != desired["data"]:
            self.client.update(dict(current, data=desired["data"]))  # shallow copy: cache intact
        else:
            return
        if self.recorder is not None:
            msg = f"Mirrored to {mirror_name}"
            self.recorder.event(src, "Normal", REASON_SYNCED, msg)
