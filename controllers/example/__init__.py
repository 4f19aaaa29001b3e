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

from pycontroller import Controller, NotFoundError, ResourceClient
from pycontroller.cache import SharedInformerFactory, split_meta_namespace_key
from pycontroller.handlers import enqueue_key, enqueue_owner
from pycontroller.record import Recorder
from pycontroller.workqueue import RateLimitingQueue

logger = logging.getLogger(__name__)

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
    """Wiring (informer -> queue -> Controller) plus the level-based ``sync``."""

    def __init__(
        self, api_client: Any, *, namespace: str | None = None, recorder: Recorder | None = None
    ) -> None:
        self.factory = SharedInformerFactory(api_client, namespace=namespace)
        informer = self.factory.for_resource("", "v1", "configmaps")
        self.lister = self.factory.lister("", "v1", "configmaps")
        self.client = ResourceClient(api_client, "", "v1", "configmaps")
        self.recorder = recorder
        self.queue = RateLimitingQueue(name="example-mirror")
        informer.add_event_handler(enqueue_key(self.queue))  # sources
        informer.add_event_handler(enqueue_owner(self.queue, "ConfigMap", ""))  # mirrors
        self.controller = Controller(
            "example-mirror", self.queue, self.sync, has_synced=[informer.has_synced]
        )
        self.has_synced = informer.has_synced

    def run(self, workers: int, stop: threading.Event) -> None:
        self.factory.start(stop)
        self.controller.run(workers, stop)

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
