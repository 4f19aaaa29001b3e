"""How the simulated controllers read and write: straight through ``REST``.

``InternalClient`` is what a simulated kube component (the Deployment
controller, the kubelet...) uses instead of a clientset. Writes go through the
same verbs an HTTP request reaches (validation, defaulting, ``managedFields``
under the component's field manager, resourceVersions, watch events, the
garbage collector's listeners) but not through the HTTP layer, so they never
appear in ``APIServer.request_log`` / ``writes()``: a test counting its
controller's writes counts only those.

Every method is called with ``storage.lock`` held by the simulator's pass, so
reads see the state the previous write left. A write the server refuses (a
terminating namespace, a validation error) is logged and reported as None:
the component retries on its next pass, as kube's controllers requeue.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterable
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.testing.apiserver.registry.rest import REST, WriteOptions, rkey
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "InternalClient",
    "by_owner",
    "controller_ref",
    "earliest",
    "meta",
    "new_controller_revision",
    "owner_uid",
]

logger = logging.getLogger(__name__)


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj["metadata"]`` (an empty dict when missing; never inserted)."""
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def owner_uid(obj: dict[str, Any]) -> str | None:
    """The uid of ``obj``'s controller owner reference, if any."""
    for ref in meta(obj).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            uid = ref.get("uid")
            return str(uid) if uid else None
    return None


def by_owner(objs: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``objs`` grouped by the uid of their controller owner (the owned ones only)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in objs:
        uid = owner_uid(obj)
        if uid:
            out.setdefault(uid, []).append(obj)
    return out


def earliest(a: float | None, b: float | None) -> float | None:
    """The sooner of two wake-up times (None: no wake-up)."""
    return b if a is None or (b is not None and b < a) else a


def new_controller_revision(
    parent: dict[str, Any],
    owner_ref: dict[str, Any],
    name: str,
    labels: dict[str, Any],
    data: Any,
    revision: int,
) -> dict[str, Any]:
    """``history.NewControllerRevision``: a ControllerRevision of ``parent``
    (its namespace and annotations), controlled through ``owner_ref``."""
    cmeta: dict[str, Any] = {
        "name": name,
        "namespace": meta(parent).get("namespace"),
        "labels": labels,
        "ownerReferences": [owner_ref],
    }
    if meta(parent).get("annotations"):
        cmeta["annotations"] = dict(meta(parent)["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": cmeta,
        "data": data,
        "revision": revision,
    }


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    """``metav1.NewControllerRef(owner, gvk)``."""
    m = meta(owner)
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": m.get("name", ""),
        "uid": m.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


class InternalClient:
    """Reads from storage and writes through ``REST`` as ``field_manager``.

    Objects returned by the read methods are the stored ones: never mutate
    them; ``copy.deepcopy`` first (``mutable``)."""

    def __init__(self, rest: REST, field_manager: str) -> None:
        self.rest = rest
        self.field_manager = field_manager
        self.writes = 0  # successful writes, for sync_once()'s answer

    # --- reads ---------------------------------------------------------------------

    def type(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self.rest.registry.get(group, version, plural)

    def items(self, rt: ResourceType, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.rest.storage.items(rkey(rt), namespace)

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        return self.rest.storage.get(rkey(rt), namespace if rt.namespaced else "", name)

    @staticmethod
    def mutable(obj: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy(obj)

    # --- writes --------------------------------------------------------------------

    def _opts(self) -> WriteOptions:
        return WriteOptions(field_manager=self.field_manager, user_agent=self.field_manager)

    def create(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any] | None:
        ns = meta(obj).get("namespace") if rt.namespaced else None
        try:
            out = self.rest.create(rt, ns, obj, self._opts())
        except StatusError as err:
            logger.info("%s: create %s failed: %s", self.field_manager, rt.plural, err)
            return None
        self.writes += 1
        return out

    def update(
        self, rt: ResourceType, obj: dict[str, Any], *, status: bool = False
    ) -> dict[str, Any] | None:
        """PUT ``obj`` (or its ``/status``); ``obj`` carries the resourceVersion
        it was read at, so a concurrent change is a conflict, as in kube."""
        m = meta(obj)
        ns = m.get("namespace") if rt.namespaced else None
        try:
            out = self.rest.update(
                rt,
                ns,
                str(m.get("name", "")),
                obj,
                self._opts(),
                subresource="status" if status else "",
            )
        except StatusError as err:
            logger.info(
                "%s: update %s %s failed: %s", self.field_manager, rt.plural, m.get("name"), err
            )
            return None
        if out.get("metadata", {}).get("resourceVersion") != m.get("resourceVersion"):
            self.writes += 1
        return out

    def event(
        self, obj: dict[str, Any], etype: str, reason: str, message: str, component: str
    ) -> None:
        """Record a core/v1 Event about ``obj`` as client-go's legacy
        ``EventRecorder`` of a kube controller writes it (name
        ``<object>.<hex nanoseconds>``, ``source.component``, count 1)."""
        rt = self.type("", "v1", "events")
        m = meta(obj)
        if rt is None or not m.get("namespace"):
            return
        t = format_rfc3339(time.time())
        self.create(
            rt,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{m.get('name')}.{time.time_ns():x}",
                    "namespace": m.get("namespace"),
                },
                "involvedObject": {
                    "kind": obj.get("kind"),
                    "namespace": m.get("namespace"),
                    "name": m.get("name"),
                    "uid": m.get("uid"),
                    "apiVersion": obj.get("apiVersion"),
                    "resourceVersion": m.get("resourceVersion"),
                },
                "reason": reason,
                "message": message,
                "source": {"component": component},
                "firstTimestamp": t,
                "lastTimestamp": t,
                "count": 1,
                "type": etype,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": "",
            },
        )

    def bind(
        self, rt: ResourceType, pod: dict[str, Any], node_name: str, at: str
    ) -> dict[str, Any] | None:
        """``POST pods/{name}/binding``: kube's BindingREST sets
        ``spec.nodeName`` and the ``PodScheduled`` condition in one write,
        outside the pod-update validation (which forbids changing the spec).
        None if the pod is gone, changed or bound meanwhile."""
        m = meta(pod)
        current = self.get(rt, str(m.get("namespace", "")), str(m.get("name", "")))
        if (
            current is None
            or meta(current).get("resourceVersion") != m.get("resourceVersion")
            or meta(current).get("deletionTimestamp")
            or (current.get("spec") or {}).get("nodeName")
        ):
            return None
        new = copy.deepcopy(current)
        new.setdefault("spec", {})["nodeName"] = node_name
        status = new.setdefault("status", {})
        others = [
            c
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") != "PodScheduled"
        ]
        status["conditions"] = [
            *others,
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": at,
            },
        ]
        out = self.rest.replace_locked(rt, current, new)
        self.writes += 1
        return self.rest.out(rt, out)

    def delete(
        self, rt: ResourceType, obj: dict[str, Any], *, grace_period_seconds: int | None = None
    ) -> bool:
        """DELETE ``obj`` (uid precondition, Background propagation) with
        ``gracePeriodSeconds`` ``grace_period_seconds`` (None: not given, so
        a pod gets its own grace period, as from kube's controllers)."""
        m = meta(obj)
        try:
            self.rest.delete(
                rt,
                m.get("namespace"),
                str(m.get("name", "")),
                propagation="Background",
                preconditions={"uid": m.get("uid")},
                grace_period_seconds=grace_period_seconds,
            )
        except StatusError as err:
            logger.info(
                "%s: delete %s %s failed: %s", self.field_manager, rt.plural, m.get("name"), err
            )
            return False
        self.writes += 1
        return True
