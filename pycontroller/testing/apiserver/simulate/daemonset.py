"""The simulated DaemonSet controller (kube 1.32's ``pkg/controller/daemon``:
``daemon_controller.go``, ``update.go`` and ``util/daemonset_util.go``).

Per DaemonSet, each pass runs one ``syncDaemonSet`` over the Nodes that exist
(the kubelet simulation registers ``node-1``; a test may create more):

- history (``constructHistory``): the current ControllerRevision is the owned
  one whose ``data`` is the patch ``{"spec": {"template": {..., "$patch":
  "replace"}}}`` (``Match``); when none is, one is created (``snapshot``),
  named ``<ds>-<hash>`` (``controller.ComputeHash`` of the template and
  ``status.collisionCount``, as for Deployments, ``deployment.py``) with the
  template's labels plus ``controller-revision-hash``, the DaemonSet's
  annotations, a controller reference and ``revision`` (max old + 1); an
  older one that matches again is renumbered; old revisions beyond
  ``revisionHistoryLimit`` that no pod uses are deleted (``cleanupHistory``);
- which nodes should run a daemon pod (``NodeShouldRunDaemonPod``): those
  matching the template's ``nodeName``, ``nodeSelector`` and required node
  affinity, and whose ``NoSchedule``/``NoExecute`` taints the pod tolerates
  (tolerating only the ``NoExecute`` ones keeps a pod already there);
- pods (``manage``/``syncNodes``): one per such node without one, from the
  template (``generateName`` ``<ds>-``) with ``controller-revision-hash`` (and
  ``pod-template-generation`` when the DaemonSet carries the
  ``deprecated.daemonset.template.generation`` annotation), the tolerations
  ``AddOrUpdateDaemonPodTolerations`` adds (``node.kubernetes.io/not-ready``
  and ``unreachable`` ``NoExecute``; ``disk-pressure``, ``memory-pressure``,
  ``pid-pressure``, ``unschedulable`` ``NoSchedule``; ``network-unavailable``
  for ``hostNetwork``), the node affinity ``matchFields`` ``metadata.name In
  [node]`` that ``ReplaceDaemonSetPodNodeNameNodeAffinity`` sets (the
  scheduler binds it), and a controller reference; surplus pods on a node
  (all but the oldest), Failed and Succeeded pods, pods on nodes that should
  not run one, and unscheduled pods for nodes that are gone are deleted;
- ``RollingUpdate`` (``rollingUpdate`` with ``maxSurge`` 0): old pods are
  deleted, unavailable ones first, as long as at most ``maxUnavailable``
  (int or percent of the desired number, rounded up; 1 when both are 0)
  nodes are without an available updated pod; ``manage`` then recreates them
  at the new revision. ``OnDelete``: only deleted pods are replaced;
- ``status`` as ``updateDaemonSetStatus`` writes it: ``desiredNumberScheduled``,
  ``currentNumberScheduled``, ``numberMisscheduled``, ``numberReady``,
  ``numberAvailable`` (``minReadySeconds``), ``numberUnavailable``,
  ``updatedNumberScheduled``, ``observedGeneration``;
- Events ``SuccessfulCreate``/``SuccessfulDelete`` (``Created pod: x``).

Simplified: ``maxSurge`` > 0 (surge rollouts) is not simulated: such a
DaemonSet is rolled as with ``maxUnavailable: 1``; the failed-pod backoff is
not either. Pods and revisions are claimed by controller reference only.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import (
    InternalClient,
    by_owner,
    controller_ref,
    earliest,
    meta,
    new_controller_revision,
)
from pycontroller.testing.apiserver.simulate.deployment import compute_hash
from pycontroller.testing.apiserver.simulate.podutil import (
    is_available,
    is_ready,
    node_matches,
    parse_time,
    ready_since,
    scaled_value,
)

__all__ = ["HASH_LABEL", "DaemonSetController", "daemon_tolerations", "node_affinity_for"]

logger = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"
HASH_LABEL = "controller-revision-hash"  # apps.DefaultDaemonSetUniqueLabelKey
GENERATION_LABEL = "pod-template-generation"  # apps.DaemonSetTemplateGenerationKey
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _exists(key: str, effect: str) -> dict[str, Any]:
    return {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect}


def _add_toleration(spec: dict[str, Any], toleration: dict[str, Any]) -> None:
    """``v1helper.AddOrUpdateTolerationInPodSpec``: replace a toleration with
    the same key, operator, value and effect, or append."""

    def same(t: dict[str, Any]) -> bool:
        return all(
            t.get(k, "") == toleration.get(k, "") for k in ("key", "effect", "operator", "value")
        )

    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    if toleration in tolerations:
        return
    if any(same(t) for t in tolerations):
        spec["tolerations"] = [dict(toleration) if same(t) else t for t in tolerations]
    else:
        spec["tolerations"] = [*tolerations, dict(toleration)]


def daemon_tolerations(spec: dict[str, Any]) -> None:
    """``util.AddOrUpdateDaemonPodTolerations`` on ``spec`` (mutable) in place."""
    for key, effect in (
        ("not-ready", "NoExecute"),
        ("unreachable", "NoExecute"),
        ("disk-pressure", "NoSchedule"),
        ("memory-pressure", "NoSchedule"),
        ("pid-pressure", "NoSchedule"),
        ("unschedulable", "NoSchedule"),
    ):
        _add_toleration(spec, _exists(key, effect))
    if spec.get("hostNetwork"):
        _add_toleration(spec, _exists("network-unavailable", "NoSchedule"))


def node_affinity_for(affinity: dict[str, Any] | None, node_name: str) -> dict[str, Any]:
    """``util.ReplaceDaemonSetPodNodeNameNodeAffinity``."""
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }
    out = copy.deepcopy(affinity) if affinity else {}
    node_affinity = out.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = selector
    return out


def _tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """``Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def should_run(node: dict[str, Any], ds: dict[str, Any]) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (shouldRun, shouldContinueRunning)."""
    template = (ds.get("spec") or {}).get("template") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    name = meta(node).get("name")
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    daemon_tolerations(spec)
    if not node_matches(spec, node):
        return False, False
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    untolerated = [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if isinstance(t, dict)
        and t.get("effect") in ("NoSchedule", "NoExecute")
        and not any(_tolerates(tol, t) for tol in tolerations)
    ]
    if untolerated:
        return False, not any(t.get("effect") == "NoExecute" for t in untolerated)
    return True, True


def target_node(pod: dict[str, Any]) -> str | None:
    """``util.GetTargetNodeName``: ``spec.nodeName``, else the node the
    ``metadata.name`` affinity names."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for req in (term or {}).get("matchFields") or []:
            values = req.get("values") or []
            if (
                req.get("key") == "metadata.name"
                and req.get("operator") == "In"
                and len(values) == 1
            ):
                return str(values[0])
    return None


def _created(pod: dict[str, Any]) -> tuple[float, str]:
    return (parse_time(meta(pod).get("creationTimestamp")) or 0.0, str(meta(pod).get("name")))


def _by_age_and_phase(pod: dict[str, Any]) -> tuple[Any, ...]:
    """``podByCreationTimestampAndPhase``: scheduled (bound) pods first, then oldest."""
    return (not (pod.get("spec") or {}).get("nodeName"), *_created(pod))


def _patch(ds: dict[str, Any]) -> dict[str, Any]:
    """``getPatch``."""
    template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def _template_generation(ds: dict[str, Any]) -> str | None:
    """``util.GetTemplateGeneration``."""
    value = (meta(ds).get("annotations") or {}).get(GENERATION_ANNOTATION)
    return str(value) if value else None


def _is_updated(pod: dict[str, Any], hash_: str, generation: str | None) -> bool:
    """``util.IsPodUpdated``."""
    labels = meta(pod).get("labels") or {}
    return (bool(hash_) and labels.get(HASH_LABEL) == hash_) or (
        generation is not None and labels.get(GENERATION_LABEL) == generation
    )


class DaemonSetController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    def sync(self, at: float) -> float | None:
        ds_rt = self.c.type("apps", "v1", "daemonsets")
        pod_rt = self.c.type("", "v1", "pods")
        cr_rt = self.c.type("apps", "v1", "controllerrevisions")
        node_rt = self.c.type("", "v1", "nodes")
        if ds_rt is None or pod_rt is None or cr_rt is None or node_rt is None:
            return None
        nodes = self.c.items(node_rt)
        pods = by_owner(self.c.items(pod_rt))
        revisions = by_owner(self.c.items(cr_rt))
        wake: float | None = None
        for ds in self.c.items(ds_rt):
            uid = str(meta(ds).get("uid"))
            sync = _DaemonSetSync(self.c, ds_rt, pod_rt, cr_rt, ds, nodes, at)
            t = sync.run(pods.get(uid, []), revisions.get(uid, []))
            wake = earliest(wake, t)
        return wake


class _DaemonSetSync:
    """One ``syncDaemonSet`` of one DaemonSet."""

    def __init__(
        self,
        c: InternalClient,
        ds_rt: ResourceType,
        pod_rt: ResourceType,
        cr_rt: ResourceType,
        ds: dict[str, Any],
        nodes: list[dict[str, Any]],
        at: float,
    ) -> None:
        self.c = c
        self.ds_rt, self.pod_rt, self.cr_rt = ds_rt, pod_rt, cr_rt
        self.ds = ds
        self.nodes = sorted(nodes, key=lambda n: str(meta(n).get("name")))
        self.at = at
        self.ns = str(meta(ds).get("namespace"))
        self.min_ready = _int((ds.get("spec") or {}).get("minReadySeconds"))
        self.generation = _template_generation(ds)

    def run(self, pods: list[dict[str, Any]], revisions: list[dict[str, Any]]) -> float | None:
        if meta(self.ds).get("deletionTimestamp"):
            return None
        got = self.construct_history(revisions)
        if got is None:
            return None
        cur, old = got
        hash_ = str((meta(cur).get("labels") or {}).get(HASH_LABEL, ""))
        if self.manage(pods, hash_):
            return self.update_status(pods, hash_)  # kube's expectations: wait for the writes
        strategy = (self.ds.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            self.rolling_update(pods, hash_)
        self.cleanup_history(pods, old)
        return self.update_status(pods, hash_)

    def nodes_to_pods(
        self, pods: list[dict[str, Any]], *, include_deleted_terminal: bool = False
    ) -> dict[str, list[dict[str, Any]]]:
        """``getNodesToDaemonPods``."""
        out: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            phase = (pod.get("status") or {}).get("phase")
            if (
                not include_deleted_terminal
                and phase in ("Succeeded", "Failed")
                and meta(pod).get("deletionTimestamp")
            ):
                continue
            name = target_node(pod)
            if name is not None:
                out.setdefault(name, []).append(pod)
        return out

    # --- history (update.go) ------------------------------------------------------------

    def construct_history(
        self, revisions: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """``constructHistory``: (current, old revisions)."""
        data = _patch(self.ds)
        current = [r for r in revisions if r.get("data") == data]
        old = [r for r in revisions if r.get("data") != data]
        next_revision = max((_int(r.get("revision")) for r in old), default=0) + 1
        if not current:
            cur = self.snapshot(data, next_revision)
            return None if cur is None else (cur, old)
        # dedupCurHistories: keep the highest revision, delete the others.
        current.sort(key=lambda r: _int(r.get("revision")))
        cur = current[-1]
        for dup in current[:-1]:
            self.c.delete(self.cr_rt, dup)
        if _int(cur.get("revision")) < next_revision:
            new = self.c.mutable(cur)
            new["revision"] = next_revision
            cur = self.c.update(self.cr_rt, new) or cur
        return cur, old

    def snapshot(self, data: dict[str, Any], revision: int) -> dict[str, Any] | None:
        """``snapshot``: create the revision; a name taken by another revision
        bumps ``status.collisionCount`` (the next pass retries)."""
        ds = self.ds
        template = (ds.get("spec") or {}).get("template") or {}
        collisions = (ds.get("status") or {}).get("collisionCount")
        h = compute_hash(template, collisions if isinstance(collisions, int) else None)
        name = f"{meta(ds).get('name')}-{h}"
        existing = self.c.get(self.cr_rt, self.ns, name)
        if existing is not None:
            if existing.get("data") == data:
                return existing
            new = self.c.mutable(ds)
            new.setdefault("status", {})["collisionCount"] = _int(collisions) + 1
            self.c.update(self.ds_rt, new, status=True)
            return None
        labels = dict(((template.get("metadata") or {}).get("labels")) or {})
        labels[HASH_LABEL] = h
        cr = new_controller_revision(ds, controller_ref(ds), name, labels, data, revision)
        return self.c.create(self.cr_rt, cr)

    def cleanup_history(self, pods: list[dict[str, Any]], old: list[dict[str, Any]]) -> None:
        """``cleanupHistory``."""
        limit = _int((self.ds.get("spec") or {}).get("revisionHistoryLimit"), 10)
        to_kill = len(old) - limit
        if to_kill <= 0:
            return
        live = {
            (meta(p).get("labels") or {}).get(HASH_LABEL)
            for ps in self.nodes_to_pods(pods, include_deleted_terminal=True).values()
            for p in ps
        }
        for r in sorted(old, key=lambda r: _int(r.get("revision"))):
            if to_kill <= 0:
                break
            if (meta(r).get("labels") or {}).get(HASH_LABEL) in live:
                continue
            self.c.delete(self.cr_rt, r)
            to_kill -= 1

    # --- pods (daemon_controller.go) -------------------------------------------------------

    def manage(self, pods: list[dict[str, Any]], hash_: str) -> bool:
        """``manage``: create and delete daemon pods; True if it wrote any."""
        by_node = self.nodes_to_pods(pods)
        needing: list[str] = []
        to_delete: list[dict[str, Any]] = []
        for node in self.nodes:
            name = str(meta(node).get("name"))
            run, keep = should_run(node, self.ds)
            on_node = by_node.get(name)
            if run and not on_node:
                needing.append(name)
            elif keep and on_node:
                running = []
                for pod in on_node:
                    if meta(pod).get("deletionTimestamp"):
                        continue
                    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
                        to_delete.append(pod)
                    else:
                        running.append(pod)
                to_delete += sorted(running, key=_by_age_and_phase)[1:]
            elif not keep and on_node:
                to_delete += [p for p in on_node if not meta(p).get("deletionTimestamp")]
        # getUnscheduledPodsWithoutNode
        names = {str(meta(n).get("name")) for n in self.nodes}
        for node_name, on_node in by_node.items():
            if node_name not in names:
                to_delete += [
                    p
                    for p in on_node
                    if not (p.get("spec") or {}).get("nodeName")
                    and not meta(p).get("deletionTimestamp")
                ]
        return self.sync_nodes(to_delete, needing, hash_)

    def sync_nodes(self, to_delete: list[dict[str, Any]], needing: list[str], hash_: str) -> bool:
        """``syncNodes``: create a pod per node in ``needing``, delete ``to_delete``."""
        ds = self.ds
        template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
        daemon_tolerations(template.setdefault("spec", {}))  # util.CreatePodTemplate
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        if self.generation is not None:
            labels[GENERATION_LABEL] = self.generation
        if hash_:
            labels[HASH_LABEL] = hash_
        wrote = False
        for node_name in needing:
            spec = copy.deepcopy(template["spec"])
            spec["affinity"] = node_affinity_for(spec.get("affinity"), node_name)
            pmeta: dict[str, Any] = {
                "generateName": f"{meta(ds).get('name')}-",
                "namespace": self.ns,
                "labels": dict(labels),
                "ownerReferences": [controller_ref(ds)],
            }
            for key in ("annotations", "finalizers"):
                if tmeta.get(key):
                    pmeta[key] = copy.deepcopy(tmeta[key])
            pod = self.c.create(
                self.pod_rt, {"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": spec}
            )
            if pod is not None:
                wrote = True
                msg = f"Created pod: {meta(pod).get('name')}"
                self.c.event(ds, "Normal", "SuccessfulCreate", msg, COMPONENT)
        for pod in to_delete:
            if self.c.delete(self.pod_rt, pod):
                wrote = True
                msg = f"Deleted pod: {meta(pod).get('name')}"
                self.c.event(ds, "Normal", "SuccessfulDelete", msg, COMPONENT)
        return wrote

    def desired(self) -> list[str]:
        return [str(meta(n).get("name")) for n in self.nodes if should_run(n, self.ds)[0]]

    def max_unavailable(self, desired: int) -> int:
        """``updatedDesiredNodeCounts``: maxUnavailable (1 when it and maxSurge are 0)."""
        ru = ((self.ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
        try:
            n = scaled_value(ru.get("maxUnavailable", 1), desired, True)
        except ValueError:
            n = 1
        return n if n > 0 else 1

    def rolling_update(self, pods: list[dict[str, Any]], hash_: str) -> None:
        """``rollingUpdate`` without surge."""
        by_node = self.nodes_to_pods(pods)
        desired = self.desired()
        for name in desired:
            by_node.setdefault(name, [])
        max_unavailable = self.max_unavailable(len(desired))
        unavailable = 0
        replace: list[dict[str, Any]] = []
        candidates: list[dict[str, Any]] = []
        for node_name in sorted(by_node):
            found = self.updated_pods_on_node(by_node[node_name], hash_)
            if found is None:
                unavailable += 1
                continue
            new_pod, old_pod = found
            if (new_pod is None) == (old_pod is None):
                unavailable += 1
            elif new_pod is not None:
                if not is_available(new_pod, self.min_ready, self.at):
                    unavailable += 1
            elif old_pod is not None:
                if not is_available(old_pod, self.min_ready, self.at):
                    replace.append(old_pod)
                elif unavailable < max_unavailable:
                    candidates.append(old_pod)
        remaining = min(max(0, max_unavailable - unavailable), len(candidates))
        self.sync_nodes([*replace, *candidates[:remaining]], [], hash_)

    def updated_pods_on_node(
        self, pods: list[dict[str, Any]], hash_: str
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None] | None:
        """``findUpdatedPodsOnNode``: (new pod, old pod), None when either is doubled."""
        new_pod: dict[str, Any] | None = None
        old_pod: dict[str, Any] | None = None
        for pod in pods:
            if meta(pod).get("deletionTimestamp"):
                continue
            if _is_updated(pod, hash_, self.generation):
                if new_pod is not None:
                    return None
                new_pod = pod
            else:
                if old_pod is not None:
                    return None
                old_pod = pod
        return new_pod, old_pod

    # --- status -------------------------------------------------------------------------

    def update_status(self, pods: list[dict[str, Any]], hash_: str) -> float | None:
        """``updateDaemonSetStatus`` + ``storeDaemonSetStatus``; returns when a
        ready pod becomes available, if one will."""
        ds = self.ds
        by_node = self.nodes_to_pods(pods)
        desired = current = misscheduled = ready = updated = available = 0
        wake: float | None = None
        for node in self.nodes:
            run, _ = should_run(node, ds)
            on_node = by_node.get(str(meta(node).get("name"))) or []
            if not run:
                misscheduled += bool(on_node)
                continue
            desired += 1
            if not on_node:
                continue
            current += 1
            pod = sorted(on_node, key=_by_age_and_phase)[0]
            if is_ready(pod):
                ready += 1
                if is_available(pod, self.min_ready, self.at):
                    available += 1
                else:
                    since = ready_since(pod)
                    if since is not None:
                        t = since + self.min_ready
                        wake = t if wake is None else min(wake, t)
            updated += _is_updated(pod, hash_, self.generation)
        status = dict(ds.get("status") or {})
        counts = {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
        }
        generation = _int(meta(ds).get("generation"))
        if (
            all(_int(status.get(k)) == v for k, v in counts.items())
            and _int(status.get("observedGeneration")) == generation
        ):
            return wake
        status.update(counts)
        status["observedGeneration"] = generation
        # Go's omitempty: these four are written only when not zero.
        for key in (
            "observedGeneration",
            "updatedNumberScheduled",
            "numberAvailable",
            "numberUnavailable",
        ):
            if not status[key]:
                del status[key]
        new = self.c.mutable(ds)
        new["status"] = status
        self.c.update(self.ds_rt, new, status=True)
        return wake
