"""The simulated Deployment controller (kube's ``pkg/controller/deployment``:
``deployment_controller.go``, ``sync.go``, ``rolling.go``, ``recreate.go``,
``progress.go`` and ``util/deployment_util.go``).

Per Deployment, each pass runs one ``syncDeployment`` step as kube does:

- the new ReplicaSet is the owned one whose template equals the Deployment's
  (ignoring ``pod-template-hash``); when none does, one is created, named
  ``<deployment>-<hash>`` with the ``pod-template-hash`` label on itself, its
  selector and its template, a controller reference, the Deployment's
  annotations and ``deployment.kubernetes.io/revision`` (max old revision + 1),
  ``desired-replicas`` and ``max-replicas``; a rollback to an older template
  reuses its ReplicaSet, bumps its revision and records
  ``revision-history``; the Deployment gets the revision annotation through
  its status (no generation bump);
- ``RollingUpdate``: scale the new ReplicaSet up within ``maxSurge``, old ones
  down within ``maxUnavailable`` (unhealthy replicas first), one step per
  pass; ``Recreate``: old ReplicaSets to zero, wait for their pods to go
  (terminating ones included: with the kubelet simulation they go once it
  deletes them), then the new one to full size; a change of ``replicas`` alone (the scale
  subresource) scales proportionally, as ``dc.scale`` does; a paused
  Deployment is only scaled;
- ``status`` exactly as ``calculateStatus``/``syncRolloutStatus`` write it:
  ``observedGeneration``, ``replicas``, ``updatedReplicas``,
  ``readyReplicas``, ``availableReplicas``, ``unavailableReplicas`` (zeros
  omitted), conditions ``Available`` (``MinimumReplicasAvailable`` /
  ``MinimumReplicasUnavailable``) and ``Progressing`` (``NewReplicaSetCreated``,
  ``FoundNewReplicaSet``, ``ReplicaSetUpdated``, ``NewReplicaSetAvailable``,
  ``ProgressDeadlineExceeded``, ``DeploymentPaused``, ``DeploymentResumed``)
  with kube's messages, ``lastUpdateTime`` and ``lastTransitionTime``;
- old ReplicaSets beyond ``revisionHistoryLimit`` are deleted once the
  rollout is complete;
- every scaling records a ``ScalingReplicaSet`` Event (``Scaled up replica
  set web-5d4f7b8c9 from 0 to 3``), so ``kubectl describe`` shows them.

The pod-template hash is kube's format (FNV-32a, ``SafeEncodeString``) but
over the template's JSON rather than Go's ``spew`` dump, so its value differs
from a cluster's; like Go's, it does not tell a zero ``creationTimestamp``
written as ``null`` from one left out. ReplicaSets are claimed by controller
reference only (no adoption or release by selector); the deprecated
``rollbackTo`` is ignored.
"""

from __future__ import annotations

import copy
import json
import logging
import math
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import (
    InternalClient,
    by_owner,
    controller_ref,
    meta,
    owner_uid,
)
from pycontroller.testing.apiserver.simulate.podutil import now, parse_time, scaled_value

__all__ = [
    "DeploymentController",
    "compute_hash",
    "equal_ignore_hash",
    "resolve_fenceposts",
]

logger = logging.getLogger(__name__)

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_SKIP_ANNOTATIONS = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
MAX_REV_HISTORY_CHARS = 2000
MAX_INT32 = 2**31 - 1

# Condition types, reasons and messages (deployment_util.go).
AVAILABLE = "Available"
PROGRESSING = "Progressing"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"

_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _replicas(obj: dict[str, Any] | None) -> int:
    if obj is None:
        return 0
    return _int((obj.get("spec") or {}).get("replicas"), 1)


def _status_int(obj: dict[str, Any] | None, key: str) -> int:
    if obj is None:
        return 0
    return _int((obj.get("status") or {}).get(key))


# --- hashing and templates ---------------------------------------------------------


def compute_hash(template: dict[str, Any], collision_count: int | None) -> str:
    """``controller.ComputeHash``: FNV-32a of the template (and the collision
    count), written with ``rand.SafeEncodeString``."""
    data = json.dumps(_go_hashed(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += str(collision_count).encode()
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in str(h))


def _go_hashed(value: Any) -> Any:
    """``value`` as Go hashes it, a struct: a zero ``creationTimestamp``
    (``null`` in the server's JSON, ``schema/goshape.py``) is the same
    as none, and so is an ``ObjectMeta`` that holds nothing else."""
    if isinstance(value, list):
        return [_go_hashed(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k == "creationTimestamp" and v is None:
            continue
        hashed = _go_hashed(v)
        if k == "metadata" and hashed == {}:
            continue
        out[k] = hashed
    return out


def _normalized(template: dict[str, Any]) -> dict[str, Any]:
    t = copy.deepcopy(template or {})
    tmeta = t.setdefault("metadata", {})
    labels = dict(tmeta.get("labels") or {})
    labels.pop(HASH_LABEL, None)
    if labels:
        tmeta["labels"] = labels
    else:
        tmeta.pop("labels", None)
    # apiequality.Semantic: empty and nil maps/lists are equal.
    for k in [k for k, v in tmeta.items() if v in ({}, [], None)]:
        del tmeta[k]
    if not tmeta:
        del t["metadata"]
    return t


def equal_ignore_hash(t1: dict[str, Any], t2: dict[str, Any]) -> bool:
    """``deploymentutil.EqualIgnoreHash``."""
    return _normalized(t1) == _normalized(t2)


# --- strategy arithmetic -------------------------------------------------------------


def _scaled(value: Any, total: int, round_up: bool) -> int:
    """``scaled_value``, 0 for what it refuses (a bare digit string: its number)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    try:
        return scaled_value(value, total, round_up)
    except ValueError:
        return 0


def _is_rolling(d: dict[str, Any]) -> bool:
    strategy = (d.get("spec") or {}).get("strategy") or {}
    return str(strategy.get("type", "RollingUpdate")) == "RollingUpdate"


def resolve_fenceposts(d: dict[str, Any]) -> tuple[int, int]:
    """``deploymentutil.ResolveFenceposts``: (maxSurge, maxUnavailable)."""
    ru = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = _replicas(d)
    surge = _scaled(ru.get("maxSurge", 0), desired, True)
    unavailable = _scaled(ru.get("maxUnavailable", 0), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: dict[str, Any]) -> int:
    return resolve_fenceposts(d)[0] if _is_rolling(d) else 0


def max_unavailable(d: dict[str, Any]) -> int:
    if not _is_rolling(d) or _replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], _replicas(d))


def _revision(rs: dict[str, Any]) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _created(rs: dict[str, Any]) -> tuple[float, str]:
    return (parse_time(meta(rs).get("creationTimestamp")) or 0.0, str(meta(rs).get("name")))


def _round(x: float) -> int:
    """Go's ``math.Round`` (half away from zero)."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def _new_condition(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    t = now()
    return {
        "type": ctype,
        "status": status,
        "lastUpdateTime": t,
        "lastTransitionTime": t,
        "reason": reason,
        "message": message,
    }


def _set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    """``deploymentutil.SetDeploymentCondition``."""
    current = _condition(status, cond["type"])
    if (
        current is not None
        and current.get("status") == cond["status"]
        and current.get("reason") == cond["reason"]
    ):
        return
    if current is not None and current.get("status") == cond["status"]:
        cond["lastTransitionTime"] = current.get("lastTransitionTime")
    others = [c for c in status.get("conditions") or [] if c.get("type") != cond["type"]]
    status["conditions"] = [*others, cond]


def _remove_condition(status: dict[str, Any], ctype: str) -> None:
    conds = [c for c in status.get("conditions") or [] if c.get("type") != ctype]
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)


def _progress_deadline(d: dict[str, Any]) -> int | None:
    v = (d.get("spec") or {}).get("progressDeadlineSeconds")
    if not isinstance(v, int) or isinstance(v, bool) or v == MAX_INT32:
        return None
    return v


class DeploymentController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    # --- the pass ---------------------------------------------------------------------

    def sync(self, at: float) -> float | None:
        d_rt = self.c.type("apps", "v1", "deployments")
        rs_rt = self.c.type("apps", "v1", "replicasets")
        pod_rt = self.c.type("", "v1", "pods")
        if d_rt is None or rs_rt is None or pod_rt is None:
            return None
        sets_by_owner = by_owner(self.c.items(rs_rt))
        # Recreate's ``oldPodsRunning``: pods not Succeeded/Failed, terminating
        # ones included (a Recreate waits until they are gone).
        pods_by_owner: dict[str, int] = {}
        for pod in self.c.items(pod_rt):
            uid = owner_uid(pod)
            if uid and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                pods_by_owner[uid] = pods_by_owner.get(uid, 0) + 1
        wake: float | None = None
        for d in self.c.items(d_rt):
            owned = sorted(sets_by_owner.get(str(meta(d).get("uid")), []), key=_created)
            sync = _DeploymentSync(self.c, d_rt, rs_rt, d, owned, pods_by_owner, at)
            deadline = sync.run()
            if deadline is not None and (wake is None or deadline < wake):
                wake = deadline
        return wake


class _DeploymentSync:
    """One ``syncDeployment`` of one Deployment. ``d`` is a private mutable
    copy (the controller's ``d.DeepCopy()``); ReplicaSets are the stored ones,
    replaced in ``rs_list`` by what each write returns."""

    def __init__(
        self,
        c: InternalClient,
        d_rt: ResourceType,
        rs_rt: ResourceType,
        d: dict[str, Any],
        rs_list: list[dict[str, Any]],
        pods_by_owner: dict[str, int],
        at: float,
    ) -> None:
        self.c = c
        self.d_rt = d_rt
        self.rs_rt = rs_rt
        self.d = copy.deepcopy(d)
        self.d.setdefault("status", {})
        self.rs_list = list(rs_list)
        self.pods_by_owner = pods_by_owner
        self.at = at

    # --- entry ---------------------------------------------------------------------

    def run(self) -> float | None:
        d = self.d
        if meta(d).get("deletionTimestamp"):
            new_rs, old = self.get_all(create=False)
            self.sync_deployment_status(new_rs, old)
            return None
        self.check_paused_conditions()
        if (d.get("spec") or {}).get("paused"):
            self.sync_scale()
            return None
        if self.is_scaling_event():
            self.sync_scale()
            return None
        if _is_rolling(d):
            return self.rollout_rolling()
        return self.rollout_recreate()

    # --- ReplicaSets ---------------------------------------------------------------

    def _replace(self, rs: dict[str, Any], updated: dict[str, Any] | None) -> dict[str, Any]:
        if updated is None:
            return rs
        uid = meta(rs).get("uid")
        self.rs_list = [updated if meta(r).get("uid") == uid else r for r in self.rs_list]
        return updated

    def find_new(self) -> dict[str, Any] | None:
        """``FindNewReplicaSet``: the oldest owned RS with the current template."""
        template = (self.d.get("spec") or {}).get("template") or {}
        for rs in self.rs_list:
            if equal_ignore_hash((rs.get("spec") or {}).get("template") or {}, template):
                return rs
        return None

    def get_all(self, *, create: bool) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``getAllReplicaSetsAndSyncRevision``."""
        existing = self.find_new()
        old = [r for r in self.rs_list if r is not existing]
        new_rs = self.get_new(existing, old, create=create)
        if new_rs is not None:
            uid = meta(new_rs).get("uid")
            old = [r for r in self.rs_list if meta(r).get("uid") != uid]
        return new_rs, old

    def _sync_annotations(self, rs: dict[str, Any], new_revision: str, *, exists: bool) -> bool:
        """``SetNewReplicaSetAnnotations`` on ``rs`` (mutable) in place."""
        d = self.d
        annotations: dict[str, Any] = meta(rs).setdefault("annotations", {})
        changed = False
        for k, v in (meta(d).get("annotations") or {}).items():
            if k in _SKIP_ANNOTATIONS or annotations.get(k) == v:
                continue
            annotations[k] = v
            changed = True
        old_revision = annotations.get(REVISION)
        try:
            old_rev_int = int(old_revision) if old_revision is not None else 0
        except ValueError:
            return False
        if old_rev_int < int(new_revision):
            annotations[REVISION] = new_revision
            changed = True
            if old_revision is not None:
                history = annotations.get(REVISION_HISTORY, "")
                olds = history.split(",") if history else []
                total = len(history) + len(old_revision) + 1
                start = 0
                while total > MAX_REV_HISTORY_CHARS and start < len(olds):
                    total -= len(olds[start]) + 1
                    start += 1
                if total <= MAX_REV_HISTORY_CHARS:
                    annotations[REVISION_HISTORY] = ",".join([*olds[start:], old_revision])
        if not exists and self._set_replicas_annotations(rs):
            changed = True
        return changed

    def _set_replicas_annotations(self, rs: dict[str, Any]) -> bool:
        """``SetReplicasAnnotations``: desired-replicas and max-replicas."""
        desired = str(_replicas(self.d))
        maximum = str(_replicas(self.d) + max_surge(self.d))
        annotations: dict[str, Any] = meta(rs).setdefault("annotations", {})
        if annotations.get(DESIRED_REPLICAS) == desired and annotations.get(MAX_REPLICAS) == (
            maximum
        ):
            return False
        annotations[DESIRED_REPLICAS] = desired
        annotations[MAX_REPLICAS] = maximum
        return True

    def _set_deployment_revision(self, revision: str) -> bool:
        annotations = meta(self.d).setdefault("annotations", {})
        if annotations.get(REVISION) == revision:
            return False
        annotations[REVISION] = revision
        return True

    def get_new(
        self, existing: dict[str, Any] | None, old: list[dict[str, Any]], *, create: bool
    ) -> dict[str, Any] | None:
        """``getNewReplicaSet``."""
        d = self.d
        new_revision = str(max((_revision(r) for r in old), default=0) + 1)
        deadline = _progress_deadline(d)
        if existing is not None:
            rs = copy.deepcopy(existing)
            annotations_updated = self._sync_annotations(rs, new_revision, exists=True)
            min_ready = _int((d.get("spec") or {}).get("minReadySeconds"))
            if annotations_updated or _int(rs["spec"].get("minReadySeconds")) != min_ready:
                if min_ready:
                    rs["spec"]["minReadySeconds"] = min_ready
                else:
                    rs["spec"].pop("minReadySeconds", None)
                return self._replace(existing, self.c.update(self.rs_rt, rs))
            needs_update = self._set_deployment_revision(
                (meta(rs).get("annotations") or {}).get(REVISION, "")
            )
            if deadline is not None and _condition(d["status"], PROGRESSING) is None:
                _set_condition(
                    d["status"],
                    _new_condition(
                        PROGRESSING,
                        "True",
                        FOUND_NEW_RS_REASON,
                        f'Found new replica set "{meta(rs).get("name")}"',
                    ),
                )
                needs_update = True
            if needs_update:
                self.update_status()
            return existing
        if not create:
            return None
        template = copy.deepcopy((d.get("spec") or {}).get("template") or {})
        collision = (d.get("status") or {}).get("collisionCount")
        h = compute_hash(template, collision if isinstance(collision, int) else None)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), HASH_LABEL: h}
        selector = copy.deepcopy((d.get("spec") or {}).get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: h}
        name = f"{meta(d).get('name')}-{h}"
        rs_spec: dict[str, Any] = {"replicas": 0}
        min_ready = _int((d.get("spec") or {}).get("minReadySeconds"))
        if min_ready:
            rs_spec["minReadySeconds"] = min_ready
        rs_spec["selector"] = selector
        rs_spec["template"] = template
        new_rs: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": meta(d).get("namespace"),
                "labels": dict(tmeta["labels"]),
                "ownerReferences": [controller_ref(d)],
            },
            "spec": rs_spec,
        }
        rs_spec["replicas"] = self.new_rs_new_replicas([*old, new_rs], new_rs)
        self._sync_annotations(new_rs, new_revision, exists=False)
        created = self.c.create(self.rs_rt, new_rs)
        if created is None:
            clash = self.c.get(self.rs_rt, str(meta(d).get("namespace")), name)
            if (
                clash is not None
                and owner_uid(clash) == meta(d).get("uid")
                and equal_ignore_hash(
                    (clash.get("spec") or {}).get("template") or {},
                    (d.get("spec") or {}).get("template") or {},
                )
            ):
                return clash
            if clash is not None:
                # A hash collision: bump collisionCount so the next pass
                # computes another name.
                d["status"]["collisionCount"] = _int(collision) + 1
                self.update_status()
            return None
        self.rs_list.append(created)
        if rs_spec["replicas"] > 0:
            self.c.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {name} from 0 to {rs_spec['replicas']}",
                "deployment-controller",
            )
        needs_update = self._set_deployment_revision(new_revision)
        if deadline is not None:
            _set_condition(
                d["status"],
                _new_condition(
                    PROGRESSING, "True", NEW_RS_REASON, f'Created new replica set "{name}"'
                ),
            )
            needs_update = True
        if needs_update:
            self.update_status()
        return created

    def update_status(self) -> None:
        """``UpdateStatus`` of the Deployment (annotations ride along)."""
        out = self.c.update(self.d_rt, self.d, status=True)
        if out is not None:
            self.d = copy.deepcopy(out)
            self.d.setdefault("status", {})

    # --- scaling -------------------------------------------------------------------

    def scale_rs(self, rs: dict[str, Any], replicas: int) -> tuple[bool, dict[str, Any]]:
        """``scaleReplicaSet``: size and the replicas annotations."""
        size_changed = _replicas(rs) != replicas
        new = copy.deepcopy(rs)
        annotations_changed = self._set_replicas_annotations(new)
        if not size_changed and not annotations_changed:
            return False, rs
        new.setdefault("spec", {})["replicas"] = replicas
        updated = self.c.update(self.rs_rt, new)
        if updated is None:
            return False, rs
        if size_changed:
            direction = "up" if replicas > _replicas(rs) else "down"
            self.c.event(
                self.d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {direction} replica set {meta(rs).get('name')} "
                f"from {_replicas(rs)} to {replicas}",
                "deployment-controller",
            )
        return size_changed, self._replace(rs, updated)

    def new_rs_new_replicas(self, all_rs: list[dict[str, Any]], new_rs: dict[str, Any]) -> int:
        """``NewRSNewReplicas``."""
        d = self.d
        if not _is_rolling(d):
            return _replicas(d)
        current = sum(_replicas(r) for r in all_rs)
        max_total = _replicas(d) + max_surge(d)
        if current >= max_total:
            return _replicas(new_rs)
        scale_up = min(max_total - current, _replicas(d) - _replicas(new_rs))
        return _replicas(new_rs) + scale_up

    def is_scaling_event(self) -> bool:
        new_rs, old = self.get_all(create=False)
        for rs in [r for r in [*old, new_rs] if r is not None and _replicas(r) > 0]:
            desired = (meta(rs).get("annotations") or {}).get(DESIRED_REPLICAS)
            if desired is None:
                continue
            try:
                if int(desired) != _replicas(self.d):
                    return True
            except ValueError:
                continue
        return False

    def sync_scale(self) -> None:
        """``dc.sync``: scale, clean up when paused, sync status."""
        new_rs, old = self.get_all(create=False)
        self.scale(new_rs, old)
        if (self.d.get("spec") or {}).get("paused"):
            self.cleanup(old)
        new_rs, old = self.get_all(create=False)
        self.sync_deployment_status(new_rs, old)

    def scale(self, new_rs: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
        """``dc.scale``."""
        d = self.d
        active = [r for r in [new_rs, *old] if r is not None and _replicas(r) > 0]
        if new_rs is not None or old:
            target: dict[str, Any] | None = None
            if len(active) == 1:
                target = active[0]
            elif not active:
                target = new_rs if new_rs is not None else max(old, key=_created)
            if target is not None:
                if _replicas(target) != _replicas(d):
                    self.scale_rs(target, _replicas(d))
                return
        if new_rs is not None and self._saturated(new_rs):
            for rs in [r for r in old if _replicas(r) > 0]:
                self.scale_rs(rs, 0)
            return
        if not _is_rolling(d):
            return
        all_active = [r for r in [*old, new_rs] if r is not None and _replicas(r) > 0]
        allowed = _replicas(d) + max_surge(d) if _replicas(d) > 0 else 0
        to_add = allowed - sum(_replicas(r) for r in all_active)
        if to_add > 0:  # ReplicaSetsBySizeNewer
            all_active.sort(key=lambda r: (-_replicas(r), -_created(r)[0]))
        elif to_add < 0:  # ReplicaSetsBySizeOlder
            all_active.sort(key=lambda r: (-_replicas(r), _created(r)[0]))
        added = 0
        sizes: list[int] = []
        for rs in all_active:
            if to_add != 0:
                proportion = self._proportion(rs, to_add, added)
                sizes.append(_replicas(rs) + proportion)
                added += proportion
            else:
                sizes.append(_replicas(rs))
        for i, rs in enumerate(all_active):
            size = sizes[i]
            if i == 0 and to_add != 0:
                size = max(0, size + to_add - added)
            self.scale_rs(rs, size)

    def _saturated(self, rs: dict[str, Any]) -> bool:
        desired = (meta(rs).get("annotations") or {}).get(DESIRED_REPLICAS)
        n = _replicas(self.d)
        return (
            desired == str(n) and _replicas(rs) == n and _status_int(rs, "availableReplicas") == n
        )

    def _proportion(self, rs: dict[str, Any], to_add: int, added: int) -> int:
        """``GetReplicaSetProportion``."""
        if _replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        d = self.d
        if _replicas(d) == 0:
            fraction = -_replicas(rs)
        else:
            deployment_replicas = _replicas(d) + max_surge(d)
            try:
                annotated = int((meta(rs).get("annotations") or {})[MAX_REPLICAS])
            except (KeyError, ValueError):
                annotated = _status_int(d, "replicas")
            if annotated <= 0:
                fraction = 0
            else:
                fraction = _round(_replicas(rs) * deployment_replicas / annotated) - _replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    # --- strategies ----------------------------------------------------------------

    def rollout_rolling(self) -> float | None:
        new_rs, old = self.get_all(create=True)
        if new_rs is None:
            return None
        all_rs = [*old, new_rs]
        if self.reconcile_new(all_rs, new_rs):
            return self.sync_rollout_status(*self.get_all(create=False))
        new_rs, old = self.get_all(create=False)
        if new_rs is not None and self.reconcile_old(old, new_rs):
            return self.sync_rollout_status(*self.get_all(create=False))
        if self.complete(self.d.get("status") or {}):
            self.cleanup(old)
        return self.sync_rollout_status(*self.get_all(create=False))

    def reconcile_new(self, all_rs: list[dict[str, Any]], new_rs: dict[str, Any]) -> bool:
        d = self.d
        if _replicas(new_rs) == _replicas(d):
            return False
        if _replicas(new_rs) > _replicas(d):
            return self.scale_rs(new_rs, _replicas(d))[0]
        return self.scale_rs(new_rs, self.new_rs_new_replicas(all_rs, new_rs))[0]

    def reconcile_old(self, old: list[dict[str, Any]], new_rs: dict[str, Any]) -> bool:
        d = self.d
        if sum(_replicas(r) for r in old) == 0:
            return False
        all_count = sum(_replicas(r) for r in [*old, new_rs])
        min_available = _replicas(d) - max_unavailable(d)
        new_unavailable = _replicas(new_rs) - _status_int(new_rs, "availableReplicas")
        max_scaled_down = all_count - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        # cleanupUnhealthyReplicas
        cleaned = 0
        for rs in sorted([r for r in old if _replicas(r) > 0], key=_created):
            if cleaned >= max_scaled_down:
                break
            unhealthy = _replicas(rs) - _status_int(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            n = min(max_scaled_down - cleaned, unhealthy)
            if self.scale_rs(rs, _replicas(rs) - n)[0]:
                cleaned += n
        # scaleDownOldReplicaSetsForRollingUpdate
        uids = {meta(r).get("uid") for r in old}
        old = [r for r in self.rs_list if meta(r).get("uid") in uids]
        new_rs = next(
            (r for r in self.rs_list if meta(r).get("uid") == meta(new_rs).get("uid")), new_rs
        )
        available = sum(_status_int(r, "availableReplicas") for r in [*old, new_rs])
        scaled = 0
        if available > min_available:
            total = available - min_available
            for rs in sorted([r for r in old if _replicas(r) > 0], key=_created):
                if scaled >= total:
                    break
                n = min(_replicas(rs), total - scaled)
                if self.scale_rs(rs, _replicas(rs) - n)[0]:
                    scaled += n
        return cleaned + scaled > 0

    def rollout_recreate(self) -> float | None:
        new_rs, old = self.get_all(create=False)
        scaled = False
        for rs in [r for r in old if _replicas(r) > 0]:
            scaled = self.scale_rs(rs, 0)[0] or scaled
        if scaled:
            return self.sync_rollout_status(*self.get_all(create=False))
        if any(
            self.pods_by_owner.get(str(meta(r).get("uid")), 0) or _status_int(r, "replicas")
            for r in old
        ):
            return self.sync_rollout_status(new_rs, old)
        if new_rs is None:
            new_rs, old = self.get_all(create=True)
            if new_rs is None:
                return None
        if _replicas(new_rs) != _replicas(self.d):
            self.scale_rs(new_rs, _replicas(self.d))
            return self.sync_rollout_status(*self.get_all(create=False))
        if self.complete(self.d.get("status") or {}):
            self.cleanup(old)
        return self.sync_rollout_status(*self.get_all(create=False))

    def cleanup(self, old: list[dict[str, Any]]) -> None:
        """``cleanupDeployment``: delete the oldest revisions beyond the limit."""
        limit = (self.d.get("spec") or {}).get("revisionHistoryLimit")
        if not isinstance(limit, int) or isinstance(limit, bool):
            return
        alive = [r for r in old if not meta(r).get("deletionTimestamp")]
        diff = len(alive) - limit
        if diff <= 0:
            return
        alive.sort(key=lambda r: (_revision(r), _created(r)))
        for rs in alive[:diff]:
            if (
                _status_int(rs, "replicas") != 0
                or _replicas(rs) != 0
                or _int(meta(rs).get("generation")) > _status_int(rs, "observedGeneration")
            ):
                continue
            self.c.delete(self.rs_rt, rs)

    # --- status ----------------------------------------------------------------------

    def calculate_status(
        self, new_rs: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> dict[str, Any]:
        d = self.d
        all_rs = [r for r in [*old, new_rs] if r is not None]
        available = sum(_status_int(r, "availableReplicas") for r in all_rs)
        total = sum(_replicas(r) for r in all_rs)
        unavailable = max(0, total - available)
        status: dict[str, Any] = {}
        # Go's omitempty: zeros are not written.
        for key, value in (
            ("observedGeneration", _int(meta(d).get("generation"))),
            ("replicas", sum(_status_int(r, "replicas") for r in all_rs)),
            ("updatedReplicas", _status_int(new_rs, "replicas")),
            ("readyReplicas", sum(_status_int(r, "readyReplicas") for r in all_rs)),
            ("availableReplicas", available),
            ("unavailableReplicas", unavailable),
        ):
            if value:
                status[key] = value
        old_status = d.get("status") or {}
        if old_status.get("conditions"):
            status["conditions"] = copy.deepcopy(old_status["conditions"])
        if "collisionCount" in old_status:
            status["collisionCount"] = old_status["collisionCount"]
        if available >= _replicas(d) - max_unavailable(d):
            cond = _new_condition(
                AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability."
            )
        else:
            cond = _new_condition(
                AVAILABLE,
                "False",
                MIN_UNAVAILABLE,
                "Deployment does not have minimum availability.",
            )
        _set_condition(status, cond)
        return status

    def complete(self, status: dict[str, Any]) -> bool:
        """``DeploymentComplete``."""
        n = _replicas(self.d)
        return (
            _int(status.get("updatedReplicas")) == n
            and _int(status.get("replicas")) == n
            and _int(status.get("availableReplicas")) == n
            and _int(status.get("observedGeneration")) >= _int(meta(self.d).get("generation"))
        )

    def sync_deployment_status(
        self, new_rs: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> None:
        status = self.calculate_status(new_rs, old)
        if status != self.d.get("status"):
            self.d["status"] = status
            self.update_status()

    def check_paused_conditions(self) -> None:
        d = self.d
        if _progress_deadline(d) is None:
            return
        cond = _condition(d["status"], PROGRESSING)
        if cond is not None and cond.get("reason") == TIMED_OUT_REASON:
            return
        paused_cond = cond is not None and cond.get("reason") == PAUSED_REASON
        paused = bool((d.get("spec") or {}).get("paused"))
        if paused and not paused_cond:
            new = _new_condition(PROGRESSING, "Unknown", PAUSED_REASON, "Deployment is paused")
        elif not paused and paused_cond:
            new = _new_condition(PROGRESSING, "Unknown", RESUMED_REASON, "Deployment is resumed")
        else:
            return
        _set_condition(d["status"], new)
        self.update_status()

    def sync_rollout_status(
        self, new_rs: dict[str, Any] | None, old: list[dict[str, Any]]
    ) -> float | None:
        """``syncRolloutStatus``; returns when the progress deadline expires if
        the rollout is still under way (``requeueStuckDeployment``)."""
        d = self.d
        old_status = d.get("status") or {}
        status = self.calculate_status(new_rs, old)
        deadline = _progress_deadline(d)
        if deadline is None:
            _remove_condition(status, PROGRESSING)
        current = _condition(old_status, PROGRESSING)
        is_complete = (
            _int(status.get("replicas")) == _int(status.get("updatedReplicas"))
            and current is not None
            and current.get("reason") == NEW_RS_AVAILABLE_REASON
        )
        rs_name = meta(new_rs).get("name") if new_rs is not None else None
        subject = f'ReplicaSet "{rs_name}"' if rs_name else f'Deployment "{meta(d).get("name")}"'
        if deadline is not None and not is_complete:
            if self.complete(status):
                _set_condition(
                    status,
                    _new_condition(
                        PROGRESSING,
                        "True",
                        NEW_RS_AVAILABLE_REASON,
                        f"{subject} has successfully progressed.",
                    ),
                )
            elif self._progressing(old_status, status):
                cond = _new_condition(
                    PROGRESSING, "True", RS_UPDATED_REASON, f"{subject} is progressing."
                )
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    _remove_condition(status, PROGRESSING)
                _set_condition(status, cond)
            elif self._timed_out(status, deadline):
                _set_condition(
                    status,
                    _new_condition(
                        PROGRESSING,
                        "False",
                        TIMED_OUT_REASON,
                        f"{subject} has timed out progressing.",
                    ),
                )
        if status != old_status:
            d["status"] = status
            self.update_status()
        return self._requeue_at(deadline)

    @staticmethod
    def _progressing(old: dict[str, Any], new: dict[str, Any]) -> bool:
        """``DeploymentProgressing``."""
        old_old = _int(old.get("replicas")) - _int(old.get("updatedReplicas"))
        new_old = _int(new.get("replicas")) - _int(new.get("updatedReplicas"))
        return (
            _int(new.get("updatedReplicas")) > _int(old.get("updatedReplicas"))
            or new_old < old_old
            or _int(new.get("readyReplicas")) > _int(old.get("readyReplicas"))
            or _int(new.get("availableReplicas")) > _int(old.get("availableReplicas"))
        )

    def _timed_out(self, status: dict[str, Any], deadline: int) -> bool:
        """``DeploymentTimedOut``."""
        cond = _condition(status, PROGRESSING)
        if cond is None or cond.get("reason") == NEW_RS_AVAILABLE_REASON:
            return False
        if cond.get("reason") == TIMED_OUT_REASON:
            return True
        since = parse_time(cond.get("lastUpdateTime"))
        return since is not None and since + deadline < self.at

    def _requeue_at(self, deadline: int | None) -> float | None:
        """``requeueStuckDeployment``: when to look again at a rollout in progress."""
        if deadline is None:
            return None
        status = self.d.get("status") or {}
        cond = _condition(status, PROGRESSING)
        if cond is None or cond.get("reason") in (NEW_RS_AVAILABLE_REASON, TIMED_OUT_REASON):
            return None
        if self.complete(status):
            return None
        since = parse_time(cond.get("lastUpdateTime"))
        return None if since is None else since + deadline + 1
