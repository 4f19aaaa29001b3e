"""The simulated disruption controller (kube's ``pkg/controller/disruption``).

Per PodDisruptionBudget, each pass (``trySync``):

- the pods of its namespace its selector matches (a nil selector matches
  none, ``{}`` all);
- ``expectedPods`` and ``desiredHealthy`` (``getExpectedPodCount``): an
  integer ``minAvailable`` is ``desiredHealthy`` and the pods are
  ``expectedPods``; for a percentage ``minAvailable`` or any
  ``maxUnavailable``, ``expectedPods`` is the sum of the scales of the pods'
  controllers, found through their controller references as kube's finders
  do: a ReplicaSet owned by a Deployment counts the Deployment's
  ``spec.replicas`` (once, whatever its ReplicaSets), a ReplicaSet on its own
  its ``spec.replicas``, a StatefulSet and a ReplicationController theirs;
  percentages round up. Pods without a controller are left out (kube's
  ``UnmanagedPods`` case, without its Event); a pod whose controller is none
  of those, or not found, fails the sync as in kube (``failSafe``):
  ``disruptionsAllowed`` 0 and ``DisruptionAllowed=False`` with reason
  ``SyncFailed`` and kube's message ``found no controllers for pod "<name>"``
  (kube also asks the scale subresource of any other kind; not simulated);
- ``disruptedPods``: the entries the eviction subresource added whose pod
  still exists, is not being deleted and was evicted less than 2 minutes ago
  (kube's ``DeletionTimeout``); the pass wakes up when the next one expires;
- ``currentHealthy``: Ready pods that are neither being deleted nor in
  ``disruptedPods``; ``disruptionsAllowed`` = ``currentHealthy -
  desiredHealthy`` (0 when negative or when ``expectedPods`` is 0);
  ``observedGeneration``; the ``DisruptionAllowed`` condition
  (``SufficientPods``/``InsufficientPods``), as ``updatePdbStatus`` writes them
  (only when something differs).

Not simulated: the controller's Events (``NoPods``, ``UnmanagedPods``,
``NotDeleted``, ``CalculateExpectedPodCountFailed``) and the removal of a
stale ``DisruptionTarget`` pod condition (the eviction subresource deletes a
pod at once here).
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.labels import selector_from_label_selector
from pycontroller.meta import controller_of
from pycontroller.testing.apiserver.registry.eviction import (
    set_condition,
    update_disruption_allowed_condition,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import InternalClient, earliest, meta
from pycontroller.testing.apiserver.simulate.podutil import is_ready, parse_time, scaled_value

__all__ = ["DELETION_TIMEOUT", "DisruptionController"]

logger = logging.getLogger(__name__)

# kube's DeletionTimeout: how long an eviction's disruptedPods entry holds.
DELETION_TIMEOUT = 120.0

_APPS = ("apps", "extensions")


class _SyncFailed(Exception):
    pass


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _group(ref: dict[str, Any]) -> str:
    api_version = str(ref.get("apiVersion") or "")
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _scaled_up(value: Any, total: int) -> int:
    """``GetScaledValueFromIntOrPercent(value, total, roundUp=true)``; what it
    refuses fails the sync, as in kube."""
    try:
        return scaled_value(value, total, True)
    except ValueError as err:
        raise _SyncFailed(str(err)) from None


class DisruptionController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    def sync(self, at: float) -> float | None:
        pdb_rt = self.c.type("policy", "v1", "poddisruptionbudgets")
        pod_rt = self.c.type("", "v1", "pods")
        if pdb_rt is None or pod_rt is None:
            return None
        wake: float | None = None
        for pdb in self.c.items(pdb_rt):
            t = self._sync_one(pdb_rt, pod_rt, pdb, at)
            wake = earliest(wake, t)
        return wake

    def _pods(self, pod_rt: ResourceType, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        selector = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
        return [
            p
            for p in self.c.items(pod_rt, str(meta(pdb).get("namespace", "")))
            if selector.matches(meta(p).get("labels") or {})
        ]

    def _sync_one(
        self, pdb_rt: ResourceType, pod_rt: ResourceType, pdb: dict[str, Any], at: float
    ) -> float | None:
        try:
            pods = self._pods(pod_rt, pdb)
            expected, desired = self._expected_pod_count(pdb, pods)
        except (_SyncFailed, ValueError) as err:
            self._fail_safe(pdb_rt, pdb, str(err))
            return None
        disrupted, recheck = self._disrupted_pods(pods, pdb, at)
        healthy = 0
        for pod in pods:
            if meta(pod).get("deletionTimestamp"):
                continue
            if meta(pod).get("name") in disrupted:
                continue
            if is_ready(pod):
                healthy += 1
        self._update_status(pdb_rt, pdb, healthy, desired, expected, disrupted)
        return recheck

    def _expected_pod_count(
        self, pdb: dict[str, Any], pods: list[dict[str, Any]]
    ) -> tuple[int, int]:
        spec = pdb.get("spec") or {}
        max_unavailable = spec.get("maxUnavailable")
        min_available = spec.get("minAvailable")
        if max_unavailable is not None:
            expected = self._expected_scale(pods)
            desired = max(0, expected - _scaled_up(max_unavailable, expected))
            return expected, desired
        if min_available is not None:
            if isinstance(min_available, int) and not isinstance(min_available, bool):
                return len(pods), min_available
            expected = self._expected_scale(pods)
            return expected, _scaled_up(min_available, expected)
        return 0, 0

    def _expected_scale(self, pods: list[dict[str, Any]]) -> int:
        """``getExpectedScale``: the sum of the scales of the pods' controllers."""
        scales: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                continue  # an unmanaged pod
            if str(ref.get("uid")) in scales:
                continue
            found = self._find_controller(ref, str(meta(pod).get("namespace", "")))
            if found is None:
                raise _SyncFailed(f'found no controllers for pod "{meta(pod).get("name")}"')
            scales[found[0]] = found[1]
        return sum(scales.values())

    def _get(self, group: str, plural: str, ns: str, ref: dict[str, Any]) -> dict[str, Any] | None:
        rt = self.c.type(group, "v1", plural)
        if rt is None:
            return None
        obj = self.c.get(rt, ns, str(ref.get("name", "")))
        if obj is None or meta(obj).get("uid") != ref.get("uid"):
            return None
        return obj

    def _find_controller(self, ref: dict[str, Any], ns: str) -> tuple[str, int] | None:
        """kube's finders: (uid, scale) of the controller ``ref`` names."""
        kind, group = ref.get("kind"), _group(ref)
        if kind == "ReplicaSet" and group in _APPS:
            rs = self._get("apps", "replicasets", ns, ref)
            if rs is None:
                return None
            owner = controller_of(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                if _group(owner) not in _APPS:
                    return None
                d = self._get("apps", "deployments", ns, owner)
                if d is None:
                    return None
                return str(meta(d).get("uid")), _int((d.get("spec") or {}).get("replicas"), 1)
            return str(meta(rs).get("uid")), _int((rs.get("spec") or {}).get("replicas"), 1)
        if kind == "StatefulSet" and group == "apps":
            sts = self._get("apps", "statefulsets", ns, ref)
            if sts is None:
                return None
            return str(meta(sts).get("uid")), _int((sts.get("spec") or {}).get("replicas"), 1)
        if kind == "ReplicationController" and group == "":
            rc = self._get("", "replicationcontrollers", ns, ref)
            if rc is None:
                return None
            return str(meta(rc).get("uid")), _int((rc.get("spec") or {}).get("replicas"), 1)
        return None

    @staticmethod
    def _disrupted_pods(
        pods: list[dict[str, Any]], pdb: dict[str, Any], at: float
    ) -> tuple[dict[str, str], float | None]:
        """``buildDisruptedPodMap``: the entries still pending, and when the
        first of them expires."""
        current = (pdb.get("status") or {}).get("disruptedPods") or {}
        result: dict[str, str] = {}
        recheck: float | None = None
        if not isinstance(current, dict):
            return result, recheck
        for pod in pods:
            name = meta(pod).get("name")
            if meta(pod).get("deletionTimestamp") or name not in current:
                continue
            since = parse_time(current[name])
            if since is None:
                continue
            expires = since + DELETION_TIMEOUT
            if expires < at:
                continue  # kube records a NotDeleted Event here
            result[str(name)] = current[name]
            if recheck is None or expires < recheck:
                recheck = expires
        return dict(sorted(result.items())), recheck

    def _update_status(
        self,
        pdb_rt: ResourceType,
        pdb: dict[str, Any],
        healthy: int,
        desired: int,
        expected: int,
        disrupted: dict[str, str],
    ) -> None:
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        old = pdb.get("status") or {}
        generation = _int(meta(pdb).get("generation"))
        if (
            _int(old.get("currentHealthy")) == healthy
            and _int(old.get("desiredHealthy")) == desired
            and _int(old.get("expectedPods")) == expected
            and _int(old.get("disruptionsAllowed")) == allowed
            and (old.get("disruptedPods") or {}) == disrupted
            and _int(old.get("observedGeneration")) == generation
            and self._conditions_up_to_date(pdb)
        ):
            return
        status: dict[str, Any] = {}
        if generation:
            status["observedGeneration"] = generation
        if disrupted:
            status["disruptedPods"] = disrupted
        status.update(
            disruptionsAllowed=allowed,
            currentHealthy=healthy,
            desiredHealthy=desired,
            expectedPods=expected,
            conditions=copy.deepcopy(old.get("conditions") or []),
        )
        update_disruption_allowed_condition(status, format_rfc3339(self._now()))
        new = self.c.mutable(pdb)
        new["status"] = status
        self.c.update(pdb_rt, new, status=True)

    @staticmethod
    def _conditions_up_to_date(pdb: dict[str, Any]) -> bool:
        """``pdbhelper.ConditionsAreUpToDate``."""
        status = pdb.get("status") or {}
        cond = next(
            (
                c
                for c in status.get("conditions") or []
                if isinstance(c, dict) and c.get("type") == "DisruptionAllowed"
            ),
            None,
        )
        if cond is None:
            return False
        if _int(status.get("observedGeneration")) != _int(meta(pdb).get("generation")):
            return False
        if _int(status.get("disruptionsAllowed")) > 0:
            return cond.get("status") == "True" and cond.get("reason") == "SufficientPods"
        return cond.get("status") == "False" and cond.get("reason") == "InsufficientPods"

    def _fail_safe(self, pdb_rt: ResourceType, pdb: dict[str, Any], message: str) -> None:
        """``failSafe``: no disruptions allowed, ``DisruptionAllowed=False``
        (``SyncFailed``); ``observedGeneration`` is left as it was."""
        old = pdb.get("status") or {}
        status = copy.deepcopy(old)
        status["disruptionsAllowed"] = 0
        conditions = status.setdefault("conditions", [])
        set_condition(
            conditions,
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "SyncFailed",
                "message": message,
                "observedGeneration": _int(old.get("observedGeneration")),
            },
            format_rfc3339(self._now()),
        )
        if status == old:
            return
        new = self.c.mutable(pdb)
        new["status"] = status
        self.c.update(pdb_rt, new, status=True)

    @staticmethod
    def _now() -> float:
        return time.time()
