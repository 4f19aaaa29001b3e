"""The simulated ReplicaSet controller (kube's ``pkg/controller/replicaset``).

Per ReplicaSet, each pass: create pods from the template (``generateName``
``<rs>-``, the template's labels, annotations and finalizers, a controller
reference so the garbage collector deletes them with the ReplicaSet) or delete
surplus ones (unscheduled, pending and not-ready pods first, newest first),
recording ``SuccessfulCreate``/``SuccessfulDelete`` Events, then write
``status`` (``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``,
``availableReplicas``, ``observedGeneration``) computed
from the pods seen at the start of the pass, as kube's controller does from
its informer cache: the status catches up on the next pass.

Pods are claimed by controller reference only (no adoption of orphans
matching the selector, no release of pods whose labels stop matching).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from pycontroller.labels import selector_from_set
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import (
    InternalClient,
    by_owner,
    controller_ref,
    earliest,
    meta,
)
from pycontroller.testing.apiserver.simulate.podutil import (
    is_active,
    is_available,
    is_ready,
    parse_time,
    ready_since,
)

__all__ = ["BURST_REPLICAS", "ReplicaSetController"]

logger = logging.getLogger(__name__)

COMPONENT = "replicaset-controller"

# kube's BurstReplicas: the most pods one sync creates or deletes.
BURST_REPLICAS = 500

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _deletion_rank(pod: dict[str, Any]) -> tuple[Any, ...]:
    """``controller.ActivePods`` order: the pods to delete first sort first."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    restarts = sum(
        _int((cs or {}).get("restartCount")) for cs in status.get("containerStatuses") or []
    )
    created = parse_time(meta(pod).get("creationTimestamp")) or 0.0
    since = ready_since(pod) or 0.0
    return (
        bool(spec.get("nodeName")),
        _PHASE_RANK.get(str(status.get("phase")), 1),
        is_ready(pod),
        -since,
        -restarts,
        -created,
    )


def pod_from_template(rs: dict[str, Any]) -> dict[str, Any]:
    """``controller.GetPodFromTemplate``."""
    template = (rs.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    name = str(meta(rs).get("name", ""))
    pmeta: dict[str, Any] = {"generateName": f"{name}-", "namespace": meta(rs).get("namespace")}
    for key in ("labels", "annotations", "finalizers"):
        if tmeta.get(key):
            pmeta[key] = copy.deepcopy(tmeta[key])
    pmeta["ownerReferences"] = [controller_ref(rs)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pmeta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class ReplicaSetController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    def sync(self, at: float) -> float | None:
        """One pass over every ReplicaSet; returns when a pod next becomes
        available (``minReadySeconds``), if one will."""
        rs_rt = self.c.type("apps", "v1", "replicasets")
        pod_rt = self.c.type("", "v1", "pods")
        if rs_rt is None or pod_rt is None:
            return None
        pods_by_owner = by_owner(self.c.items(pod_rt))
        wake: float | None = None
        for rs in self.c.items(rs_rt):
            owned = pods_by_owner.get(str(meta(rs).get("uid")), [])
            deadline = self._sync_one(rs_rt, pod_rt, rs, owned, at)
            wake = earliest(wake, deadline)
        return wake

    def _sync_one(
        self,
        rs_rt: ResourceType,
        pod_rt: ResourceType,
        rs: dict[str, Any],
        owned: list[dict[str, Any]],
        at: float,
    ) -> float | None:
        spec = rs.get("spec") or {}
        active = [p for p in owned if is_active(p)]
        if not meta(rs).get("deletionTimestamp"):
            diff = len(active) - _int(spec.get("replicas"), 1)
            if diff < 0:
                for _ in range(min(-diff, BURST_REPLICAS)):
                    pod = self.c.create(pod_rt, pod_from_template(rs))
                    if pod is None:
                        break
                    self.c.event(
                        rs,
                        "Normal",
                        "SuccessfulCreate",
                        f"Created pod: {meta(pod).get('name')}",
                        COMPONENT,
                    )
            elif diff > 0:
                for pod in sorted(active, key=_deletion_rank)[: min(diff, BURST_REPLICAS)]:
                    if self.c.delete(pod_rt, pod):
                        self.c.event(
                            rs,
                            "Normal",
                            "SuccessfulDelete",
                            f"Deleted pod: {meta(pod).get('name')}",
                            COMPONENT,
                        )
        return self._update_status(rs_rt, rs, active, at)

    def _update_status(
        self, rs_rt: ResourceType, rs: dict[str, Any], active: list[dict[str, Any]], at: float
    ) -> float | None:
        spec = rs.get("spec") or {}
        min_ready = _int(spec.get("minReadySeconds"))
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        matcher = selector_from_set(template_labels)
        ready = [p for p in active if is_ready(p)]
        available = [p for p in ready if is_available(p, min_ready, at)]
        wake: float | None = None
        for p in ready:
            since = ready_since(p)
            if since is not None and since + min_ready > at:
                t = since + min_ready
                wake = t if wake is None else min(wake, t)
        old_status = rs.get("status") or {}
        status: dict[str, Any] = {"replicas": len(active)}
        labeled = sum(1 for p in active if matcher.matches(meta(p).get("labels") or {}))
        # Go's omitempty: zero counts are not written.
        for key, n in (
            ("fullyLabeledReplicas", labeled),
            ("readyReplicas", len(ready)),
            ("availableReplicas", len(available)),
        ):
            if n:
                status[key] = n
        generation = _int(meta(rs).get("generation"))
        if generation:
            status["observedGeneration"] = generation
        if old_status.get("conditions"):
            status["conditions"] = copy.deepcopy(old_status["conditions"])
        if status != old_status:
            new = self.c.mutable(rs)
            new["status"] = status
            self.c.update(rs_rt, new, status=True)
        return wake
