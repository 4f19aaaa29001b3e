"""The simulated StatefulSet controller (kube 1.32's ``pkg/controller/statefulset``:
``stateful_set.go``, ``stateful_set_control.go``, ``stateful_set_utils.go``,
``stateful_pod_control.go``, and ``pkg/controller/history``).

Per StatefulSet, each pass runs one ``UpdateStatefulSet`` as kube does:

- revisions (``getStatefulSetRevisions``): the update revision is a
  ControllerRevision ``<set>-<hash>`` whose ``data`` is the patch
  ``{"spec": {"template": {..., "$patch": "replace"}}}`` (``getPatch``), with
  the template's labels plus ``controller.kubernetes.io/hash``, the set's
  annotations, a controller reference and ``revision`` (max + 1); the hash is
  ``history.HashControllerRevision`` (FNV-32 of the patch's JSON, sorted keys
  as Go's ``json.Marshal`` writes them, and the collision count); a name taken
  by a different revision bumps ``status.collisionCount``; going back to an
  older template renumbers its revision instead of creating one; revisions
  beyond ``revisionHistoryLimit`` that no pod uses are deleted
  (``truncateHistory``);
- pods ``<set>-<ordinal>`` for ordinals ``spec.ordinals.start`` ..
  ``start + replicas - 1`` (``newVersionedStatefulSetPod``): the template of
  the current or update revision (per ``partition``), ``generateName``
  ``<set>-``, labels ``controller-revision-hash`` (the revision's name),
  ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index``,
  ``spec.hostname``/``subdomain`` (``serviceName``), a controller reference,
  and a ``persistentVolumeClaim`` volume per ``volumeClaimTemplates`` entry;
- PVCs ``<template>-<set>-<ordinal>`` created before their pod, labelled with
  the selector's ``matchLabels``, and owned as the
  ``persistentVolumeClaimRetentionPolicy`` says (``isClaimOwnerUpToDate`` /
  ``updateClaimOwnerRefForSetAndPod``: ``whenDeleted: Delete`` makes the set
  their controller, ``whenScaled: Delete`` makes a scaled-down pod their
  controller just before it is deleted), so the garbage collector deletes
  them; a pod whose claim still names a previous pod of that name is not
  created until that claim is gone (``PodClaimIsStale``);
- ``OrderedReady``: one pod created (or deleted) per pass, and only once every
  lower ordinal is Running and Ready (and available for ``minReadySeconds``);
  scale-down deletes the highest ordinal first; ``Parallel``: all at once;
  Failed and Succeeded pods are deleted and recreated;
- ``RollingUpdate``: the highest ordinal at or above ``partition`` not at the
  update revision is deleted, one at a time, each once the ones above are
  available (``maxUnavailable`` is ignored, as with 1.32's default-off
  ``MaxUnavailableStatefulSet`` gate); ``OnDelete``: pods are only replaced
  (at the update revision) once deleted by someone else;
- ``status`` as ``updateStatefulSetStatus`` writes it (when
  ``inconsistentStatus``): ``observedGeneration``, ``replicas``,
  ``readyReplicas``, ``currentReplicas``, ``updatedReplicas``,
  ``availableReplicas``, ``currentRevision``, ``updateRevision`` (the current
  revision catches up once every pod is updated and ready,
  ``completeRollingUpdate``), ``collisionCount``;
- Events ``SuccessfulCreate``/``SuccessfulDelete`` with kube's messages
  (``create Pod web-0 in StatefulSet web successful``, ``create Claim
  data-web-0 Pod web-0 in StatefulSet web success``).

Pods and revisions are claimed by controller reference only (no adoption or
release by selector). PVCs stay ``Pending`` unless the ``volumes``
simulation binds them.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from pycontroller.testing.apiserver.gofmt import go_json
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import (
    InternalClient,
    by_owner,
    controller_ref,
    earliest,
    meta,
    new_controller_revision,
)
from pycontroller.testing.apiserver.simulate.podutil import is_available, is_ready, ready_since

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "REVISION_HASH_LABEL",
    "REVISION_LABEL",
    "StatefulSetController",
    "hash_controller_revision",
]

logger = logging.getLogger(__name__)

COMPONENT = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"  # apps.StatefulSetRevisionLabel
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_HASH_LABEL = "controller.kubernetes.io/hash"  # history.ControllerRevisionHashLabel
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_POD_NAME = re.compile(r"^(.*)-([0-9]+)$")
_RETAIN, _DELETE = "Retain", "Delete"


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


# --- history (pkg/controller/history) ----------------------------------------------


def _safe_encode(s: str) -> str:
    """``rand.SafeEncodeString``."""
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in s)


def hash_controller_revision(data: Any, collision_count: int | None) -> str:
    """``history.HashControllerRevision``: FNV-32 (not 1a) of the data's JSON and
    the collision count."""
    raw = go_json(data).encode()
    if collision_count is not None:
        raw += str(collision_count).encode()
    h = 0x811C9DC5
    for b in raw:
        h = ((h * 0x01000193) & 0xFFFFFFFF) ^ b
    return _safe_encode(str(h))


def revision_name(parent: str, hash_: str) -> str:
    """``history.ControllerRevisionName``: the prefix is cut to 223 characters."""
    if len(parent) > 223:
        parent = parent[:223]
    return f"{parent}-{hash_}"


def _revision_key(cr: dict[str, Any]) -> tuple[int, str, str]:
    """``history.SortControllerRevisions``: by revision, then creation, then name."""
    m = meta(cr)
    return (_int(cr.get("revision")), str(m.get("creationTimestamp", "")), str(m.get("name", "")))


# --- stateful_set_utils.go ----------------------------------------------------------


def get_ordinal(pod: dict[str, Any]) -> int:
    m = _POD_NAME.match(str(meta(pod).get("name", "")))
    if m is None or int(m.group(2)) >= 2**31:
        return -1
    return int(m.group(2))


def _parent_name(pod: dict[str, Any]) -> str:
    m = _POD_NAME.match(str(meta(pod).get("name", "")))
    return m.group(1) if m else ""


def start_ordinal(s: dict[str, Any]) -> int:
    return _int(((s.get("spec") or {}).get("ordinals") or {}).get("start"))


def _replicas(s: dict[str, Any]) -> int:
    return _int((s.get("spec") or {}).get("replicas"), 1)


def _in_range(pod: dict[str, Any], s: dict[str, Any]) -> bool:
    """``podInOrdinalRange``."""
    o = get_ordinal(pod)
    return start_ordinal(s) <= o <= start_ordinal(s) + _replicas(s) - 1


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _is_created(pod: dict[str, Any]) -> bool:
    return _phase(pod) != ""


def _is_terminating(pod: dict[str, Any]) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def _running_and_ready(pod: dict[str, Any]) -> bool:
    return _phase(pod) == "Running" and is_ready(pod)


def _unavailable(pod: dict[str, Any] | None, min_ready: int, at: float) -> bool:
    """``isUnavailable``: missing, terminating, or not available."""
    return pod is None or _is_terminating(pod) or not is_available(pod, min_ready, at)


def _pod_revision(pod: dict[str, Any]) -> str:
    return str((meta(pod).get("labels") or {}).get(REVISION_LABEL, ""))


def _claim_templates(s: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        t for t in (s.get("spec") or {}).get("volumeClaimTemplates") or [] if isinstance(t, dict)
    ]


def claim_name(s: dict[str, Any], template: dict[str, Any], ordinal: int) -> str:
    """``getPersistentVolumeClaimName``."""
    return f"{meta(template).get('name')}-{meta(s).get('name')}-{ordinal}"


def _claims_for(s: dict[str, Any], ordinal: int) -> list[tuple[str, dict[str, Any]]]:
    """``getPersistentVolumeClaims``: (template name, claim) per template."""
    match_labels = ((s.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    out = []
    for t in _claim_templates(s):
        claim: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim"}
        cmeta = {k: copy.deepcopy(v) for k, v in meta(t).items() if v is not None}
        cmeta["name"] = claim_name(s, t, ordinal)
        cmeta["namespace"] = meta(s).get("namespace")
        cmeta["labels"] = {**(cmeta.get("labels") or {}), **match_labels}
        if not cmeta["labels"]:
            del cmeta["labels"]
        claim["metadata"] = cmeta
        claim["spec"] = copy.deepcopy(t.get("spec") or {})
        out.append((str(meta(t).get("name")), claim))
    return out


def _retention(s: dict[str, Any]) -> tuple[str, str]:
    """``getPersistentVolumeClaimRetentionPolicy``: (whenDeleted, whenScaled)."""
    p = (s.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return str(p.get("whenDeleted") or _RETAIN), str(p.get("whenScaled") or _RETAIN)


def _ref(obj: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """``metav1.NewControllerRef``."""
    return controller_ref({**obj, "apiVersion": api_version, "kind": kind})


def _matches_ref(ref: dict[str, Any], obj: dict[str, Any], api_version: str, kind: str) -> bool:
    return (
        ref.get("apiVersion") == api_version
        and ref.get("kind") == kind
        and ref.get("name") == meta(obj).get("name")
    )


def _refs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]


def _has_ref(claim: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = meta(owner).get("uid")
    return any(r.get("uid") == uid for r in _refs(claim))


def _has_stale_ref(claim: dict[str, Any], owner: dict[str, Any], av: str, kind: str) -> bool:
    """``hasStaleOwnerRef``: a reference to ``owner``'s name with another uid."""
    for r in _refs(claim):
        if _matches_ref(r, owner, av, kind):
            return r.get("uid") != meta(owner).get("uid")
    return False


def _has_unexpected_controller(
    claim: dict[str, Any], s: dict[str, Any], pod: dict[str, Any]
) -> bool:
    if _retention(s) == (_RETAIN, _RETAIN):
        return False
    for r in _refs(claim):
        if _matches_ref(r, s, "apps/v1", "StatefulSet"):
            if r.get("uid") != meta(s).get("uid"):
                return True
            continue
        if _matches_ref(r, pod, "v1", "Pod"):
            if r.get("uid") != meta(pod).get("uid"):
                return True
            continue
        if r.get("controller"):
            return True
    return False


def claim_owner_up_to_date(claim: dict[str, Any], s: dict[str, Any], pod: dict[str, Any]) -> bool:
    """``isClaimOwnerUpToDate``."""
    if _has_stale_ref(claim, s, "apps/v1", "StatefulSet") or _has_stale_ref(
        claim, pod, "v1", "Pod"
    ):
        return True
    if _has_unexpected_controller(claim, s, pod):
        return not (_has_ref(claim, s) or _has_ref(claim, pod))
    uids = {meta(s).get("uid"), meta(pod).get("uid")}
    if any(r.get("uid") in uids and not r.get("controller") for r in _refs(claim)):
        return False
    when_deleted, when_scaled = _retention(s)
    set_ref, pod_ref = _has_ref(claim, s), _has_ref(claim, pod)
    scaled_down = not _in_range(pod, s)
    if when_scaled == _DELETE and when_deleted == _DELETE:
        return scaled_down != set_ref and scaled_down == pod_ref
    if when_scaled == _DELETE:
        return not set_ref and scaled_down == pod_ref
    if when_deleted == _DELETE:
        return set_ref and not pod_ref
    return not set_ref and not pod_ref


def update_claim_owner_refs(claim: dict[str, Any], s: dict[str, Any], pod: dict[str, Any]) -> None:
    """``updateClaimOwnerRefForSetAndPod`` on ``claim`` (mutable) in place."""
    unexpected = _has_unexpected_controller(claim, s, pod)
    refs = [
        r
        for r in _refs(claim)
        if not (_matches_ref(r, s, "apps/v1", "StatefulSet") or _matches_ref(r, pod, "v1", "Pod"))
    ]
    if not unexpected:
        when_deleted, when_scaled = _retention(s)
        scaled_down = not _in_range(pod, s)
        if when_scaled == _DELETE and scaled_down:
            refs.append(_ref(pod, "v1", "Pod"))
        elif when_deleted == _DELETE and (when_scaled == _RETAIN or not scaled_down):
            refs.append(_ref(s, "apps/v1", "StatefulSet"))
    if refs:
        meta(claim)["ownerReferences"] = refs
    else:
        meta(claim).pop("ownerReferences", None)


def _patch(s: dict[str, Any]) -> dict[str, Any]:
    """``getPatch``: the patch that restores the set's template."""
    template = copy.deepcopy((s.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def _apply_revision(s: dict[str, Any], cr: dict[str, Any]) -> dict[str, Any]:
    """``ApplyRevision``: the set with the revision's template."""
    out = copy.deepcopy(s)
    template = copy.deepcopy(((cr.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    out.setdefault("spec", {})["template"] = template
    return out


def new_pod(s: dict[str, Any], ordinal: int, revision: str) -> dict[str, Any]:
    """``newStatefulSetPod`` + ``setPodRevision``: ``controller.GetPodFromTemplate``,
    ``initIdentity``, ``updateStorage``."""
    spec = s.get("spec") or {}
    template = spec.get("template") or {}
    tmeta = template.get("metadata") or {}
    name = str(meta(s).get("name", ""))
    pod_name = f"{name}-{ordinal}"
    pmeta: dict[str, Any] = {
        "name": pod_name,
        "generateName": f"{name}-",
        "namespace": meta(s).get("namespace"),
    }
    labels = dict(tmeta.get("labels") or {})
    labels[POD_NAME_LABEL] = pod_name
    labels[POD_INDEX_LABEL] = str(ordinal)  # PodIndexLabel: on by default in 1.32
    labels[REVISION_LABEL] = revision
    pmeta["labels"] = labels
    for key in ("annotations", "finalizers"):
        if tmeta.get(key):
            pmeta[key] = copy.deepcopy(tmeta[key])
    pmeta["ownerReferences"] = [_ref(s, "apps/v1", "StatefulSet")]
    pspec = copy.deepcopy(template.get("spec") or {})
    pspec["hostname"] = pod_name
    if spec.get("serviceName"):
        pspec["subdomain"] = spec["serviceName"]
    claims = _claims_for(s, ordinal)
    volumes = [
        {"name": tname, "persistentVolumeClaim": {"claimName": meta(claim)["name"]}}
        for tname, claim in claims
    ]
    names = {tname for tname, _ in claims}
    volumes += [v for v in pspec.get("volumes") or [] if (v or {}).get("name") not in names]
    if volumes:
        pspec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": pspec}


# --- the controller -------------------------------------------------------------------


class StatefulSetController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    def sync(self, at: float) -> float | None:
        """One pass over every StatefulSet; returns when a pod next becomes
        available (``minReadySeconds``), if one will."""
        sts_rt = self.c.type("apps", "v1", "statefulsets")
        pod_rt = self.c.type("", "v1", "pods")
        cr_rt = self.c.type("apps", "v1", "controllerrevisions")
        pvc_rt = self.c.type("", "v1", "persistentvolumeclaims")
        if sts_rt is None or pod_rt is None or cr_rt is None or pvc_rt is None:
            return None
        pods = by_owner(self.c.items(pod_rt))
        revisions = by_owner(self.c.items(cr_rt))
        wake: float | None = None
        for s in self.c.items(sts_rt):
            uid = str(meta(s).get("uid"))
            name = str(meta(s).get("name"))
            owned = [p for p in pods.get(uid, []) if _parent_name(p) == name]
            sync = _SetSync(self.c, sts_rt, pod_rt, cr_rt, pvc_rt, s, at)
            t = sync.run(owned, sorted(revisions.get(uid, []), key=_revision_key))
            wake = earliest(wake, t)
        return wake


class _SetSync:
    """One ``UpdateStatefulSet`` of one StatefulSet."""

    def __init__(
        self,
        c: InternalClient,
        sts_rt: ResourceType,
        pod_rt: ResourceType,
        cr_rt: ResourceType,
        pvc_rt: ResourceType,
        s: dict[str, Any],
        at: float,
    ) -> None:
        self.c = c
        self.sts_rt, self.pod_rt, self.cr_rt, self.pvc_rt = sts_rt, pod_rt, cr_rt, pvc_rt
        self.s = s
        self.at = at
        self.name = str(meta(s).get("name"))
        self.ns = str(meta(s).get("namespace"))
        self.min_ready = _int((s.get("spec") or {}).get("minReadySeconds"))

    def event(self, reason: str, message: str) -> None:
        self.c.event(self.s, "Normal", reason, message, COMPONENT)

    def run(self, pods: list[dict[str, Any]], revisions: list[dict[str, Any]]) -> float | None:
        got = self.revisions(revisions)
        if got is None:
            return None
        current, update, collisions = got
        status = self.update_set(current, update, collisions, pods)
        self.update_status(status)
        self.truncate_history(pods, revisions, current, update)
        if self.min_ready > 0 and status["availableReplicas"] != _replicas(self.s):
            since = [ready_since(p) for p in pods if is_ready(p) and not _is_terminating(p)]
            later = [
                t + self.min_ready for t in since if t is not None and t + self.min_ready > self.at
            ]
            return min(later) if later else None
        return None

    # --- revisions --------------------------------------------------------------------

    def revisions(
        self, revisions: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, Any], int] | None:
        """``getStatefulSetRevisions``: (current, update, collisionCount)."""
        s = self.s
        status = s.get("status") or {}
        collisions = _int(status.get("collisionCount"))
        data = _patch(s)
        next_revision = _int(revisions[-1].get("revision")) + 1 if revisions else 1
        equal = [r for r in revisions if r.get("data") == data]
        update: dict[str, Any] | None
        if equal and revisions[-1].get("data") == data:
            update = revisions[-1]
        elif equal:
            new = self.c.mutable(equal[-1])
            new["revision"] = next_revision
            update = self.c.update(self.cr_rt, new)
        else:
            update, collisions = self.create_revision(data, next_revision, collisions)
        if update is None:
            return None
        current = next(
            (r for r in revisions if meta(r).get("name") == status.get("currentRevision")), update
        )
        return current, update, collisions

    def create_revision(
        self, data: dict[str, Any], revision: int, collisions: int
    ) -> tuple[dict[str, Any] | None, int]:
        """``newRevision`` + ``realHistory.CreateControllerRevision``."""
        s = self.s
        template_labels = ((s["spec"].get("template") or {}).get("metadata") or {}).get("labels")
        while True:
            h = hash_controller_revision(data, collisions)
            name = revision_name(self.name, h)
            existing = self.c.get(self.cr_rt, self.ns, name)
            if existing is not None:
                if existing.get("data") == data:
                    return existing, collisions
                collisions += 1
                continue
            labels = {**(template_labels or {}), REVISION_HASH_LABEL: h}
            ref = _ref(s, "apps/v1", "StatefulSet")
            cr = new_controller_revision(s, ref, name, labels, data, revision)
            return self.c.create(self.cr_rt, cr), collisions

    def truncate_history(
        self,
        pods: list[dict[str, Any]],
        revisions: list[dict[str, Any]],
        current: dict[str, Any],
        update: dict[str, Any],
    ) -> None:
        """``truncateHistory``: the oldest revisions no pod uses, beyond the limit."""
        live = {meta(current).get("name"), meta(update).get("name")}
        live |= {_pod_revision(p) for p in pods}
        history = [r for r in revisions if meta(r).get("name") not in live]
        limit = _int((self.s.get("spec") or {}).get("revisionHistoryLimit"), 10)
        if limit < 0 or len(history) <= limit:
            return
        for r in history[: len(history) - limit]:
            self.c.delete(self.cr_rt, r)

    # --- pods ---------------------------------------------------------------------------

    def status_of(
        self,
        status: dict[str, Any],
        current: dict[str, Any],
        update: dict[str, Any],
        pods: list[dict[str, Any] | None],
    ) -> None:
        """``updateStatus``/``computeReplicaStatus`` (kept pods only)."""
        counts = dict.fromkeys(
            (
                "replicas",
                "readyReplicas",
                "availableReplicas",
                "currentReplicas",
                "updatedReplicas",
            ),
            0,
        )
        for pod in pods:
            if pod is None or not _is_created(pod):
                continue
            counts["replicas"] += 1
            if _running_and_ready(pod):
                counts["readyReplicas"] += 1
                if is_available(pod, self.min_ready, self.at):
                    counts["availableReplicas"] += 1
            if not _is_terminating(pod):
                rev = _pod_revision(pod)
                counts["currentReplicas"] += rev == meta(current).get("name")
                counts["updatedReplicas"] += rev == meta(update).get("name")
        status.update(counts)

    def update_set(
        self,
        current: dict[str, Any],
        update: dict[str, Any],
        collisions: int,
        pods: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """``updateStatefulSet``; returns the status to write."""
        s = self.s
        spec = s.get("spec") or {}
        current_set = _apply_revision(s, current)
        update_set = _apply_revision(s, update)
        status: dict[str, Any] = {
            "observedGeneration": _int(meta(s).get("generation")),
            "currentRevision": meta(current).get("name"),
            "updateRevision": meta(update).get("name"),
            "collisionCount": collisions,
        }
        self.status_of(status, current, update, list(pods))
        start, count = start_ordinal(s), _replicas(s)
        slots: list[dict[str, Any] | None] = [None] * count
        condemned: list[dict[str, Any]] = []
        for pod in pods:
            o = get_ordinal(pod)
            if start <= o < start + count:
                slots[o - start] = pod
            elif o >= 0:
                condemned.append(pod)
        created = [p is not None for p in slots]
        replicas = [
            p or self.versioned_pod(current_set, update_set, current, update, start + i)
            for i, p in enumerate(slots)
        ]
        condemned.sort(key=get_ordinal, reverse=True)
        first_unhealthy = next(
            (
                p
                for p in [*replicas, *reversed(condemned)]
                if _unavailable(p, self.min_ready, self.at)
            ),
            None,
        )
        if meta(s).get("deletionTimestamp"):
            return status
        monotonic = spec.get("podManagementPolicy") != "Parallel"

        def done() -> dict[str, Any]:
            self.status_of(status, current, update, [*replicas, *condemned])
            return status

        for i, pod in enumerate(replicas):
            if self.process_replica(update_set, monotonic, pod, created[i]):
                return done()
        for gone in condemned:
            if not self.claims_match(update_set, gone):
                self.fix_claims(update_set, gone)
        for gone in condemned:
            if self.process_condemned(monotonic, gone, first_unhealthy) and monotonic:
                return done()
        done()
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return status
        update_min = _int((strategy.get("rollingUpdate") or {}).get("partition"))
        for target in range(len(replicas) - 1, update_min - 1, -1):
            pod = replicas[target]
            if _pod_revision(pod) != meta(update).get("name") and not _is_terminating(pod):
                if self.delete_pod(pod):
                    status["currentReplicas"] -= 1
                return status
            if _unavailable(pod, self.min_ready, self.at):
                return status
        return status

    def versioned_pod(
        self,
        current_set: dict[str, Any],
        update_set: dict[str, Any],
        current: dict[str, Any],
        update: dict[str, Any],
        ordinal: int,
    ) -> dict[str, Any]:
        """``newVersionedStatefulSetPod`` (with Go's ``&&``/``||`` precedence)."""
        strategy = (current_set.get("spec") or {}).get("updateStrategy") or {}
        rolling = strategy.get("rollingUpdate")
        start = start_ordinal(current_set)
        current_replicas = _int((current_set.get("status") or {}).get("currentReplicas"))
        if (
            strategy.get("type", "RollingUpdate") == "RollingUpdate"
            and rolling is None
            and ordinal < start + current_replicas
        ) or (rolling is not None and ordinal < start + _int(rolling.get("partition"))):
            return new_pod(current_set, ordinal, str(meta(current).get("name")))
        return new_pod(update_set, ordinal, str(meta(update).get("name")))

    def process_replica(
        self, update_set: dict[str, Any], monotonic: bool, pod: dict[str, Any], exists: bool
    ) -> bool:
        """``processReplica``: True when this pass must stop here."""
        if _phase(pod) in ("Failed", "Succeeded"):
            if not _is_terminating(pod):
                self.delete_pod(pod)
            return True
        if not exists:
            if self.claim_is_stale(pod):
                return True
            self.create_pod(pod)
            # Parallel: kube goes on with the local (not yet created) pod: nothing more.
            return monotonic
        if _phase(pod) == "Pending":  # createMissingPersistentVolumeClaims
            if not self.create_claims(pod):
                return True
            self.fix_claims(self.s, pod)
        if monotonic and (
            _is_terminating(pod)
            or not _running_and_ready(pod)
            or not is_available(pod, self.min_ready, self.at)
        ):
            return True
        if not self.identity_matches(pod) or not self.claims_match(update_set, pod):
            self.update_pod(update_set, pod)
        return False

    def process_condemned(
        self, monotonic: bool, pod: dict[str, Any], first_unhealthy: dict[str, Any] | None
    ) -> bool:
        """``processCondemned``: True when this pass must stop here."""
        if _is_terminating(pod):
            return monotonic
        if (
            monotonic
            and pod is not first_unhealthy
            and not (_running_and_ready(pod) and is_available(pod, self.min_ready, self.at))
        ):
            return True
        self.delete_pod(pod)
        return True

    # --- stateful_pod_control.go ----------------------------------------------------------

    def identity_matches(self, pod: dict[str, Any]) -> bool:
        """``identityMatches``."""
        labels = meta(pod).get("labels") or {}
        return (
            get_ordinal(pod) >= 0
            and _parent_name(pod) == self.name
            and meta(pod).get("namespace") == self.ns
            and labels.get(POD_NAME_LABEL) == meta(pod).get("name")
        )

    def update_pod(self, update_set: dict[str, Any], pod: dict[str, Any]) -> None:
        """``UpdateStatefulPod``: the identity labels and the claims' owners (the
        volumes of an existing pod cannot change, ``storageMatches`` is left out)."""
        if not self.claims_match(update_set, pod):
            self.fix_claims(update_set, pod)
        if not self.identity_matches(pod):
            new = self.c.mutable(pod)
            labels = meta(new).setdefault("labels", {})
            labels[POD_NAME_LABEL] = meta(pod).get("name")
            labels[POD_INDEX_LABEL] = str(get_ordinal(pod))
            if self.c.update(self.pod_rt, new) is not None:
                self.event(
                    "SuccessfulUpdate",
                    f"update Pod {meta(pod).get('name')} in StatefulSet {self.name} successful",
                )

    def create_pod(self, pod: dict[str, Any]) -> None:
        """``CreateStatefulPod``: claims first, then the pod, then the claims' owners."""
        if not self.create_claims(pod):
            return
        if self.c.create(self.pod_rt, pod) is None:
            return
        self.fix_claims(self.s, pod)
        self.event(
            "SuccessfulCreate",
            f"create Pod {meta(pod).get('name')} in StatefulSet {self.name} successful",
        )

    def delete_pod(self, pod: dict[str, Any]) -> bool:
        """``DeleteStatefulPod``."""
        if not self.c.delete(self.pod_rt, pod):
            return False
        self.event(
            "SuccessfulDelete",
            f"delete Pod {meta(pod).get('name')} in StatefulSet {self.name} successful",
        )
        return True

    def create_claims(self, pod: dict[str, Any]) -> bool:
        """``createPersistentVolumeClaims``: False when one is missing or being deleted."""
        ok = True
        for _, claim in _claims_for(self.s, get_ordinal(pod)):
            existing = self.c.get(self.pvc_rt, self.ns, meta(claim)["name"])
            if existing is None:
                if self.c.create(self.pvc_rt, claim) is None:
                    ok = False
                    continue
                self.event(
                    "SuccessfulCreate",
                    f"create Claim {meta(claim)['name']} Pod {meta(pod).get('name')} "
                    f"in StatefulSet {self.name} success",
                )
            elif meta(existing).get("deletionTimestamp"):
                ok = False
        return ok

    def _claims(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for t in _claim_templates(self.s):
            claim = self.c.get(self.pvc_rt, self.ns, claim_name(self.s, t, get_ordinal(pod)))
            if claim is not None:
                out.append(claim)
        return out

    def claims_match(self, s: dict[str, Any], pod: dict[str, Any]) -> bool:
        """``ClaimsMatchRetentionPolicy``."""
        return all(claim_owner_up_to_date(c, s, pod) for c in self._claims(pod))

    def fix_claims(self, s: dict[str, Any], pod: dict[str, Any]) -> None:
        """``UpdatePodClaimForRetentionPolicy``."""
        for claim in self._claims(pod):
            if claim_owner_up_to_date(claim, s, pod):
                continue
            new = self.c.mutable(claim)
            update_claim_owner_refs(new, s, pod)
            self.c.update(self.pvc_rt, new)

    def claim_is_stale(self, pod: dict[str, Any]) -> bool:
        """``PodClaimIsStale``: a claim still owned by a previous pod of this name."""
        if _retention(self.s)[1] == _RETAIN:
            return False
        return any(_has_stale_ref(c, pod, "v1", "Pod") for c in self._claims(pod))

    # --- status -----------------------------------------------------------------------------

    def update_status(self, status: dict[str, Any]) -> None:
        """``updateStatefulSetStatus``: ``completeRollingUpdate``, then a write
        when ``inconsistentStatus``."""
        s = self.s
        n = _replicas(s)
        strategy = ((s.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate")
        if (
            strategy == "RollingUpdate"
            and status["updatedReplicas"] == n
            and status["readyReplicas"] == n
            and status["replicas"] == n
        ):
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = s.get("status") or {}
        keys = (
            "replicas",
            "currentReplicas",
            "readyReplicas",
            "updatedReplicas",
            "availableReplicas",
        )
        if (
            status["observedGeneration"] <= _int(old.get("observedGeneration"))
            and all(status[k] == _int(old.get(k)) for k in keys)
            and all(status[k] == (old.get(k) or "") for k in ("currentRevision", "updateRevision"))
        ):
            return
        # Go's omitempty: zero counts, empty strings are not written.
        out: dict[str, Any] = {
            k: v
            for k, v in status.items()
            if v or k in ("replicas", "availableReplicas", "collisionCount")
        }
        new = self.c.mutable(s)
        new["status"] = out
        self.c.update(self.sts_rt, new, status=True)
