"""The simulated Job controller (kube-controller-manager 1.32's
``pkg/controller/job``), its TTL-after-finished controller, and the container
exits of Job pods (the kubelet's part).

``JobController`` — per Job, one ``syncJob`` a pass, as kube 1.32 with its
default feature gates (``JobPodReplacementPolicy``, ``JobManagedBy``,
``JobSuccessPolicy``, ``PodIndexLabel`` on):

- ``manageJob``: pods from ``spec.template`` (``GetPodFromTemplate``) named
  ``<job>-<random>`` (Indexed: ``<job>-<index>-<random>``, with the
  ``batch.kubernetes.io/job-completion-index`` annotation and label, the
  ``JOB_COMPLETION_INDEX`` env var and ``hostname`` ``<job>-<index>``), a
  controller reference and the ``batch.kubernetes.io/job-tracking``
  finalizer; up to ``parallelism`` active pods, never more than the
  completions still missing; surplus pods deleted (``activePodsForRemoval``);
  a suspended Job's active pods deleted, the ``Suspended`` condition
  (``JobSuspended``/``JobResumed``) and ``Suspended``/``Resumed`` events;
  ``startTime`` set on the first unsuspended sync and reset on resume.
- ``trackJobStatusAndRemoveFinalizers``: a finished pod (Succeeded, Failed,
  or deleted before succeeding under ``podReplacementPolicy:
  TerminatingOrFailed``) is first listed in ``uncountedTerminatedPods``, its
  finalizer is then removed and it is counted in ``succeeded``/``failed``
  (Indexed: ``completedIndexes``, as kube's ``orderedIntervals`` prints them).
- Status as kube writes it: ``active``, ``ready`` and ``terminating`` (also
  0), ``uncountedTerminatedPods`` (``{}`` once empty), ``startTime``,
  ``completionTime`` (Complete only), and the conditions: ``FailureTarget``
  then ``Failed`` (``PodFailurePolicy`` when a failed pod matches a
  ``FailJob`` rule, ``BackoffLimitExceeded`` when ``failed`` exceeds
  ``backoffLimit``, ``DeadlineExceeded`` after ``activeDeadlineSeconds``;
  active pods are deleted first and ``Failed`` waits until none is
  terminating), ``SuccessCriteriaMet`` then ``Complete`` (both
  ``CompletionsReached``, or ``SuccessPolicy`` when an Indexed Job meets a
  ``successPolicy`` rule: its other pods are deleted, not counted failed).
  ``podFailurePolicy`` as ``matchPodFailurePolicy``: rules in order on
  container exit codes (``In``/``NotIn``, non-zero, app then init
  containers) or pod conditions; ``Ignore`` does not count a failure,
  ``Count`` (and ``FailIndex``) does. Job status has no ``observedGeneration``.
  Events: ``SuccessfulCreate``/``SuccessfulDelete`` (``job-controller``),
  ``Completed``, or the failure reason as a Warning.
- Pods of a Job that is gone or finished lose the tracking finalizer
  (``syncOrphanPod``), so the garbage collector's deletions complete.
- ``ttlSecondsAfterFinished`` (the ``ttlafterfinished`` controller): a
  finished Job is deleted, ``propagationPolicy: Foreground`` with a
  resourceVersion precondition, once the TTL after its ``Complete``/
  ``Failed`` condition's ``lastTransitionTime`` has passed.

Simplified: the pod-failure backoff (10 s doubling to 6 min before a failed
pod is replaced) is not waited out; ``backoffLimitPerIndex``/
``maxFailedIndexes`` are not acted on; the simulated kubelet never gives a
deleted pod a terminal phase, so with a ``podFailurePolicy`` an evicted pod
(``DisruptionTarget``) counts only once a test sets it Failed; pods are
claimed by controller reference only (no adoption by selector); a Job with
``spec.managedBy`` other than ``kubernetes.io/job-controller`` is left alone,
as kube does.

``JobPodExits`` — the kubelet's side, only with the ``kubelet`` simulation:
a Job's pod (controlled by a ``batch/v1`` Job) Running on ``node-1``
finishes as the kubelet reports a container exit (as ``kubelet``): its
containers ``terminated`` (``Completed`` with exit code 0, else ``Error``),
not ready, conditions ``Ready``/``ContainersReady`` False with reason
``PodCompleted``/``PodFailed``, phase ``Succeeded`` or ``Failed``. Annotations
on the pod (set them on the Job's pod template) steer it:

- ``simulate.pycontroller.dev/exit-code``: the containers' exit code
  (default ``"0"``: the pod succeeds; anything else: it fails).
- ``simulate.pycontroller.dev/run-seconds``: how long the containers run
  once the pod is Running (default ``"0"``: they exit in the next pass,
  tens of milliseconds later); a large value keeps the pod running (to see
  ``active``, suspend, ``activeDeadlineSeconds``).

The kubelet never restarts a container here: under ``restartPolicy:
OnFailure`` a non-zero exit fails the pod as under ``Never`` (kube would
restart the container in place and count the restarts against
``backoffLimit``). Other pods are not touched.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from typing import Any

from pycontroller.testing.apiserver.registry.patch import STRATEGIC
from pycontroller.testing.apiserver.registry.rest import WriteOptions
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import (
    InternalClient,
    controller_ref,
    earliest,
    meta,
)
from pycontroller.testing.apiserver.simulate.kubelet import NODE_NAME
from pycontroller.testing.apiserver.simulate.podutil import (
    is_active,
    is_ready,
    now,
    parse_time,
    pod_condition,
)
from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "EXIT_CODE_ANNOTATION",
    "RUN_SECONDS_ANNOTATION",
    "TRACKING_FINALIZER",
    "JobController",
    "JobPodExits",
]

logger = logging.getLogger(__name__)

COMPONENT = "job-controller"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
EXIT_CODE_ANNOTATION = "simulate.pycontroller.dev/exit-code"
RUN_SECONDS_ANNOTATION = "simulate.pycontroller.dev/run-seconds"
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"
# kube's MaxPodCreateDeletePerSync and MaxUncountedPods.
MAX_POD_CREATE_DELETE_PER_SYNC = 500
MAX_UNCOUNTED_PODS = 500
# names.MaxGeneratedNameLength: 63 less the 5 random characters.
_MAX_GENERATED_NAME_LENGTH = 58

# JobStatus's fields in Go's order, for the status as kube serialises it.
_STATUS_ORDER = (
    "conditions",
    "startTime",
    "completionTime",
    "active",
    "succeeded",
    "failed",
    "terminating",
    "completedIndexes",
    "failedIndexes",
    "uncountedTerminatedPods",
    "ready",
)
_OMIT_ZERO = ("active", "succeeded", "failed")


def _int(v: Any, default: int = 0) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _ordered(status: dict[str, Any]) -> dict[str, Any]:
    """The status as Go serialises a ``JobStatus`` (field order, omitempty)."""
    out: dict[str, Any] = {}
    for key in _STATUS_ORDER:
        v = status.get(key)
        if v is None or (key in _OMIT_ZERO and v == 0) or v == "" or v == []:
            continue
        if key == "uncountedTerminatedPods":
            v = {k: list(v[k]) for k in ("succeeded", "failed") if v.get(k)}
        out[key] = v
    for key, v in status.items():  # anything else a client wrote
        if key not in out and key not in _STATUS_ORDER:
            out[key] = v
    return out


def _condition(ctype: str, status: str, reason: str, message: str, t: str) -> dict[str, Any]:
    """``newCondition``."""
    c: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "lastProbeTime": t,
        "lastTransitionTime": t,
    }
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def _find(conditions: list[dict[str, Any]], ctype: str) -> dict[str, Any] | None:
    """``findConditionByType``."""
    return next((c for c in conditions if c.get("type") == ctype), None)


def _ensure_condition(
    conditions: list[dict[str, Any]], ctype: str, status: str, reason: str, message: str, t: str
) -> bool:
    """``ensureJobConditionStatus``: update or append (never append a False
    condition); whether the list changed."""
    for i, c in enumerate(conditions):
        if c.get("type") == ctype:
            current = (c.get("status"), c.get("reason", ""), c.get("message", ""))
            if current == (status, reason, message):
                return False
            conditions[i] = _condition(ctype, status, reason, message, t)
            return True
    if status != "False":
        conditions.append(_condition(ctype, status, reason, message, t))
        return True
    return False


def is_finished(job: dict[str, Any]) -> dict[str, Any] | None:
    """``util.FinishedCondition``: the True ``Complete`` or ``Failed`` condition."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return dict(c)
    return None


def _has_finalizer(pod: dict[str, Any]) -> bool:
    return TRACKING_FINALIZER in (meta(pod).get("finalizers") or [])


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _completion_index(pod: dict[str, Any]) -> int:
    """``getCompletionIndex``: the annotation's index (``strconv.Atoi``),
    -1 when missing, invalid or negative."""
    v = (meta(pod).get("annotations") or {}).get(COMPLETION_INDEX)
    if isinstance(v, str) and re.fullmatch(r"[+-]?[0-9]+", v):
        return max(int(v), -1)
    return -1


def parse_indexes(s: str, completions: int) -> set[int]:
    """``parseIndexesFromString``: indexes below ``completions``."""
    out: set[int] = set()
    for part in (s or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            lo, hi = int(first), int(last or first)
        except ValueError:
            continue
        out.update(range(lo, min(hi, completions - 1) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """``orderedIntervals.String``: ``0-2,4,6,7`` (two in a row are listed)."""
    parts: list[str] = []
    ordered = sorted(indexes)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        first, last = ordered[i], ordered[j]
        if last == first:
            parts.append(str(first))
        else:
            parts.append(f"{first}{',' if last == first + 1 else '-'}{last}")
        i = j + 1
    return ",".join(parts)


def _exit_code_match(pod: dict[str, Any], req: dict[str, Any]) -> dict[str, Any] | None:
    """``matchOnExitCodes``: the first terminated container (app containers,
    then init containers) of ``req``'s container (any, when unnamed) whose
    non-zero exit code the operator matches."""
    values = req.get("values") or []
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in (pod.get("status") or {}).get(key) or []:
            terminated = ((cs or {}).get("state") or {}).get("terminated")
            if not isinstance(terminated, dict):
                continue  # still terminating: no exit code to match
            name = req.get("containerName")
            code = _int(terminated.get("exitCode"))
            if (name is None or name == cs.get("name")) and code != 0:
                op = req.get("operator")
                if (op == "In" and code in values) or (op == "NotIn" and code not in values):
                    return dict(cs)
    return None


def match_pod_failure_policy(
    policy: Any, pod: dict[str, Any]
) -> tuple[str | None, bool, str | None]:
    """``matchPodFailurePolicy``: for a failed pod, the Job's failure message
    (a ``FailJob`` rule matched), whether the failure counts against
    ``backoffLimit`` (not when an ``Ignore`` rule matched) and the action of
    the first rule that matched (rules with an unknown action are skipped;
    ``FailIndex`` counts, as without ``backoffLimitPerIndex``)."""
    if not isinstance(policy, dict):
        return None, True, None
    m = meta(pod)
    for index, rule in enumerate(policy.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        action = rule.get("action")
        if isinstance(rule.get("onExitCodes"), dict):
            cs = _exit_code_match(pod, rule["onExitCodes"])
            if cs is None:
                continue
            code = _int(cs["state"]["terminated"].get("exitCode"))
            msg = (
                f"Container {cs.get('name')} for pod {m.get('namespace')}/{m.get('name')} "
                f"failed with exit code {code} matching {action} rule at index {index}"
            )
        elif rule.get("onPodConditions") is not None:
            patterns = rule.get("onPodConditions") or []
            cond = next(
                (
                    c
                    for c in (pod.get("status") or {}).get("conditions") or []
                    for pat in patterns
                    if c.get("type") == pat.get("type") and c.get("status") == pat.get("status")
                ),
                None,
            )
            if cond is None:
                continue
            msg = (
                f"Pod {m.get('namespace')}/{m.get('name')} has condition {cond.get('type')} "
                f"matching {action} rule at index {index}"
            )
        else:
            continue
        if action == "Ignore":
            return None, False, action
        if action in ("Count", "FailIndex"):
            return None, True, action
        if action == "FailJob":
            return msg, True, action
    return None, True, None


def match_success_policy(policy: Any, completions: int, succeeded: set[int]) -> str | None:
    """``matchSuccessPolicy`` (Indexed Jobs): the condition message of the
    first rule the succeeded indexes meet: all of its ``succeededIndexes``
    (or ``succeededCount`` of them), or ``succeededCount`` indexes at all."""
    if not isinstance(policy, dict) or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        if not isinstance(rule, dict):
            continue
        count = rule.get("succeededCount")
        count = count if isinstance(count, int) and not isinstance(count, bool) else None
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(str(rule["succeededIndexes"]), completions)
            if not required:
                continue  # an unparsable rule
            contains = len(required & succeeded)
            if contains == len(required) or (count is not None and contains >= count):
                return f"Matched rules at index {index}"
        elif count is not None and len(succeeded) >= count:
            return f"Matched rules at index {index}"
    return None


def _removal_rank(pod: dict[str, Any]) -> tuple[Any, ...]:
    """``controller.ActivePods`` order (the pods to delete first sort first)."""
    rank = {"Pending": 0, "Unknown": 1, "Running": 2}
    created = parse_time(meta(pod).get("creationTimestamp")) or 0.0
    return (
        bool((pod.get("spec") or {}).get("nodeName")),
        rank.get(_phase(pod), 1),
        is_ready(pod),
        -created,
    )


def _generate_name(job_name: str, index: int | None) -> str:
    """``getPodsPrefix`` / ``podGenerateNameWithIndex``."""
    if index is None:
        return f"{job_name}-"
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > _MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: _MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def pod_from_job(job: dict[str, Any], index: int | None) -> dict[str, Any]:
    """``GetPodFromTemplate`` with the job controller's additions
    (``appendJobCompletionFinalizerIfNotFound``, and for an index
    ``addCompletionIndexEnvVariables``, ``addCompletionIndexAnnotation``,
    ``addCompletionIndexLabel`` and the hostname)."""
    template = (job.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    name = str(meta(job).get("name", ""))
    pmeta: dict[str, Any] = {
        "generateName": _generate_name(name, index),
        "namespace": meta(job).get("namespace"),
    }
    labels = copy.deepcopy(tmeta.get("labels") or {})
    annotations = copy.deepcopy(tmeta.get("annotations") or {})
    finalizers = list(tmeta.get("finalizers") or [])
    if TRACKING_FINALIZER not in finalizers:
        finalizers.append(TRACKING_FINALIZER)
    spec = copy.deepcopy(template.get("spec") or {})
    if index is not None:
        annotations[COMPLETION_INDEX] = str(index)
        labels[COMPLETION_INDEX] = str(index)
        spec["hostname"] = f"{name}-{index}"
        for key in ("initContainers", "containers"):
            for c in spec.get(key) or []:
                env = c.setdefault("env", [])
                if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in env):
                    env.append(
                        {
                            "name": "JOB_COMPLETION_INDEX",
                            "valueFrom": {
                                "fieldRef": {
                                    "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"
                                }
                            },
                        }
                    )
    if labels:
        pmeta["labels"] = labels
    if annotations:
        pmeta["annotations"] = annotations
    pmeta["finalizers"] = finalizers
    pmeta["ownerReferences"] = [controller_ref(job)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pmeta, "spec": spec}


def _controlled_by_job(pod: dict[str, Any]) -> dict[str, Any] | None:
    for ref in meta(pod).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            if ref.get("kind") == "Job" and ref.get("apiVersion") == "batch/v1":
                return ref
            return None
    return None


class _Ctx:
    """``syncJobCtx``: what one sync of one Job works out."""

    def __init__(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        self.job = job
        self.status: dict[str, Any] = copy.deepcopy(job.get("status") or {})
        self.pods = pods
        self.active_pods = [p for p in pods if is_active(p)]
        self.ready = sum(1 for p in self.active_pods if is_ready(p))
        # CountTerminatingPods: being deleted, not terminal.
        self.terminating = sum(
            1
            for p in pods
            if meta(p).get("deletionTimestamp") and _phase(p) not in ("Succeeded", "Failed")
        )
        unc = self.status.get("uncountedTerminatedPods") or {}
        self.uncounted = {
            "succeeded": [str(u) for u in unc.get("succeeded") or []],
            "failed": [str(u) for u in unc.get("failed") or []],
        }
        self.status["uncountedTerminatedPods"] = self.uncounted
        self.succeeded = 0
        self.failed = 0
        self.finished: dict[str, Any] | None = None
        self.prev_succeeded_indexes: set[int] = set()
        self.succeeded_indexes: set[int] = set()


class JobController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    # --- helpers -------------------------------------------------------------------

    def _spec(self, job: dict[str, Any]) -> dict[str, Any]:
        spec = job.get("spec")
        return spec if isinstance(spec, dict) else {}

    def _indexed(self, job: dict[str, Any]) -> bool:
        return self._spec(job).get("completionMode") == "Indexed"

    def _completions(self, job: dict[str, Any]) -> int | None:
        v = self._spec(job).get("completions")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def _only_replace_failed(self, job: dict[str, Any]) -> bool:
        """``onlyReplaceFailedPods``."""
        spec = self._spec(job)
        return spec.get("podReplacementPolicy") == "Failed" or bool(spec.get("podFailurePolicy"))

    def _is_pod_failed(self, job: dict[str, Any], pod: dict[str, Any]) -> bool:
        """``isPodFailed``: Failed, or (unless only failed pods are replaced)
        deleted before succeeding."""
        if _phase(pod) == "Failed":
            return True
        if self._only_replace_failed(job):
            return False
        return bool(meta(pod).get("deletionTimestamp")) and _phase(pod) != "Succeeded"

    def _valid_index(self, job: dict[str, Any], pod: dict[str, Any]) -> bool:
        ix = _completion_index(pod)
        return ix >= 0 and ix < (self._completions(job) or 0)

    def _remove_finalizer(self, pod_rt: ResourceType, pod: dict[str, Any]) -> bool:
        """``removeTrackingFinalizerPatch``: a strategic merge patch with
        ``$deleteFromPrimitiveList/finalizers``; a pod gone counts as done."""
        m = meta(pod)
        current = self.c.get(pod_rt, str(m.get("namespace", "")), str(m.get("name", "")))
        if current is None or meta(current).get("uid") != m.get("uid"):
            return True
        if not _has_finalizer(current):
            return True
        body = json.dumps(
            {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
        ).encode()
        opts = WriteOptions(field_manager=self.c.field_manager, user_agent=self.c.field_manager)
        try:
            self.c.rest.patch(pod_rt, m.get("namespace"), str(m.get("name")), STRATEGIC, body, opts)
        except StatusError as err:
            if err.code == 404:
                return True
            logger.info("job-controller: removing finalizer of %s failed: %s", m.get("name"), err)
            return False
        self.c.writes += 1
        return True

    def _update_status(self, job_rt: ResourceType, ctx: _Ctx) -> dict[str, Any] | None:
        """``updateJobStatus`` (``UpdateStatus`` at the resourceVersion read)."""
        new = self.c.mutable(ctx.job)
        new["status"] = _ordered(ctx.status)
        out = self.c.update(job_rt, new, status=True)
        if out is not None:
            ctx.job = out
        return out

    # --- sync ------------------------------------------------------------------------

    def sync(self, at: float) -> float | None:
        """One ``syncJob`` per Job, the orphan pods' finalizers, the TTLs;
        returns when a deadline or TTL next falls due, if one will."""
        job_rt = self.c.type("batch", "v1", "jobs")
        pod_rt = self.c.type("", "v1", "pods")
        if job_rt is None or pod_rt is None:
            return None
        pods_by_owner: dict[str, list[dict[str, Any]]] = {}
        for pod in self.c.items(pod_rt):
            ref = _controlled_by_job(pod)
            if ref is not None:
                pods_by_owner.setdefault(str(ref.get("uid")), []).append(pod)
        wake: float | None = None
        jobs: dict[str, dict[str, Any] | None] = {}
        for job in self.c.items(job_rt):
            uid = str(meta(job).get("uid"))
            if self._spec(job).get("managedBy") not in (None, JOB_CONTROLLER_NAME):
                jobs[uid] = None  # managedByExternalController: not ours
                continue
            t, job = self._sync_job(job_rt, pod_rt, job, pods_by_owner.get(uid, []), at)
            jobs[uid] = job
            t2 = self._ttl_after_finished(job_rt, job, at)
            wake = earliest(earliest(wake, t), t2)
        # syncOrphanPod: pods of a Job gone or finished lose the finalizer.
        for uid, pods in pods_by_owner.items():
            if uid in jobs and (jobs[uid] is None or not is_finished(jobs[uid] or {})):
                continue
            for pod in pods:
                if _has_finalizer(pod):
                    self._remove_finalizer(pod_rt, pod)
        return wake

    def _sync_job(
        self,
        job_rt: ResourceType,
        pod_rt: ResourceType,
        job: dict[str, Any],
        pods: list[dict[str, Any]],
        at: float,
    ) -> tuple[float | None, dict[str, Any]]:
        """``syncJob``; returns the next deadline and the Job as last written."""
        if is_finished(job):
            return None, job
        spec = self._spec(job)
        if spec.get("completionMode") not in (None, "NonIndexed", "Indexed"):
            return None, job
        t = now()
        ctx = _Ctx(job, pods)
        status = ctx.status
        suspended = spec.get("suspend") is True
        active = len(ctx.active_pods)
        unc_s, unc_f = set(ctx.uncounted["succeeded"]), set(ctx.uncounted["failed"])
        indexed = self._indexed(job)

        def valid(p: dict[str, Any], uncounted: set[str]) -> bool:
            """``getValidPodsWithFilter``'s validity."""
            uid = str(meta(p).get("uid"))
            if not _has_finalizer(p) or uid in uncounted:
                return False
            return not indexed or self._valid_index(job, p)

        new_succeeded = [p for p in pods if valid(p, unc_s) and _phase(p) == "Succeeded"]
        new_failed = [p for p in pods if valid(p, unc_f) and self._is_pod_failed(job, p)]
        policy = spec.get("podFailurePolicy")
        # nonIgnoredFailedPodsCount: failures an Ignore rule matched do not count.
        counted_failed = [p for p in new_failed if match_pod_failure_policy(policy, p)[1]]
        ctx.succeeded = _int(status.get("succeeded")) + len(new_succeeded) + len(unc_s)
        ctx.failed = _int(status.get("failed")) + len(counted_failed) + len(unc_f)
        if not status.get("startTime") and not suspended:
            status["startTime"] = t
        wake: float | None = None
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        scm = _find(conditions, "SuccessCriteriaMet")
        if scm is not None and scm.get("status") == "True":
            ctx.finished = dict(scm)
        if ctx.finished is None:
            target = _find(conditions, "FailureTarget")
            if target is not None and target.get("status") == "True":
                ctx.finished = _condition(
                    "Failed", "True", target.get("reason", ""), target.get("message", ""), t
                )
            elif (message := self._fail_job_message(job, pods)) is not None:
                # The interim FailureTarget records the message before the
                # finalizers (which let the pods go) are removed.
                ctx.finished = _condition("FailureTarget", "True", "PodFailurePolicy", message, t)
        if ctx.finished is None:
            deadline = self._deadline(job, status, suspended)
            if ctx.failed > _int(spec.get("backoffLimit"), 6) or self._past_backoff_on_failure(
                job, pods
            ):
                ctx.finished = _condition(
                    "FailureTarget",
                    "True",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    t,
                )
            elif deadline is not None and at >= deadline:
                ctx.finished = _condition(
                    "FailureTarget",
                    "True",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                    t,
                )
            elif deadline is not None:
                wake = deadline
        if indexed:
            completions = self._completions(job) or 0
            ctx.prev_succeeded_indexes = parse_indexes(
                str(status.get("completedIndexes") or ""), completions
            )
            ctx.succeeded_indexes = set(ctx.prev_succeeded_indexes)
            for p in pods:
                if _phase(p) == "Succeeded" and _has_finalizer(p) and self._valid_index(job, p):
                    ctx.succeeded_indexes.add(_completion_index(p))
            ctx.succeeded = len(ctx.succeeded_indexes)
            if ctx.finished is None:
                message = match_success_policy(
                    spec.get("successPolicy"), completions, ctx.succeeded_indexes
                )
                if message is not None:
                    ctx.finished = _condition(
                        "SuccessCriteriaMet", "True", "SuccessPolicy", message, t
                    )
        suspend_changed = False
        if ctx.finished is not None:
            # deleteActivePods: the finalizers stay, to count them failed.
            deleted_ready, deleted = self._delete_pods(pod_rt, job, ctx.active_pods, False)
            if deleted != active:
                ctx.finished = None
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
        else:
            manage_called = False
            if not meta(job).get("deletionTimestamp"):
                active = self._manage_job(pod_rt, job, ctx, suspended)
                manage_called = True
            wanted = self._completions(job)
            if wanted is None:
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= wanted and active == 0
            if complete:
                ctx.finished = _condition(
                    "SuccessCriteriaMet",
                    "True",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    t,
                )
            elif manage_called:
                if suspended:
                    if _ensure_condition(
                        conditions, "Suspended", "True", "JobSuspended", "Job suspended", t
                    ):
                        suspend_changed = True
                        self.c.event(job, "Normal", "Suspended", "Job suspended", COMPONENT)
                elif _ensure_condition(
                    conditions, "Suspended", "False", "JobResumed", "Job resumed", t
                ):
                    suspend_changed = True
                    self.c.event(job, "Normal", "Resumed", "Job resumed", COMPONENT)
                    status["startTime"] = t
                    deadline = self._deadline(job, status, suspended)
                    wake = deadline if deadline is not None else wake
        old = job.get("status") or {}
        needs_flush = (
            suspend_changed
            or active != _int(old.get("active"))
            or ctx.ready != old.get("ready")
            or ctx.terminating != old.get("terminating")
            or status.get("startTime") != old.get("startTime")
        )
        status["active"] = active
        status["ready"] = ctx.ready
        status["terminating"] = ctx.terminating
        self._track_status(job_rt, pod_rt, ctx, needs_flush)
        return wake, ctx.job

    def _deadline(
        self, job: dict[str, Any], status: dict[str, Any], suspended: bool
    ) -> float | None:
        """When ``activeDeadlineSeconds`` runs out (``pastActiveDeadline``)."""
        ads = self._spec(job).get("activeDeadlineSeconds")
        start = parse_time(status.get("startTime"))
        if not isinstance(ads, int) or isinstance(ads, bool) or start is None or suspended:
            return None
        return start + ads

    def _fail_job_message(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
        """``getFailJobMessage``: the message of the first failed pod a
        ``FailJob`` rule of the Job's ``podFailurePolicy`` matches."""
        policy = self._spec(job).get("podFailurePolicy")
        if policy is None:
            return None
        for p in pods:
            if self._is_pod_failed(job, p):
                message = match_pod_failure_policy(policy, p)[0]
                if message is not None:
                    return message
        return None

    def _past_backoff_on_failure(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
        """``pastBackoffLimitOnFailure``: container restarts of running or
        pending pods under ``restartPolicy: OnFailure``."""
        template_spec = (self._spec(job).get("template") or {}).get("spec") or {}
        if template_spec.get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for p in pods:
            if _phase(p) in ("Running", "Pending"):
                st = p.get("status") or {}
                for cs in (st.get("initContainerStatuses") or []) + (
                    st.get("containerStatuses") or []
                ):
                    restarts += _int((cs or {}).get("restartCount"))
        limit = _int(self._spec(job).get("backoffLimit"), 6)
        return restarts > 0 if limit == 0 else restarts >= limit

    def _delete_pods(
        self,
        pod_rt: ResourceType,
        job: dict[str, Any],
        pods: list[dict[str, Any]],
        remove_finalizer: bool,
    ) -> tuple[int, int]:
        """``deleteJobPods`` (finalizer removed first) or ``deleteActivePods``
        (finalizers kept); returns the ready pods and all pods deleted."""
        deleted_ready = deleted = 0
        for pod in pods:
            if remove_finalizer and not self._remove_finalizer(pod_rt, pod):
                continue
            if not self.c.delete(pod_rt, pod):
                if self.c.get(pod_rt, str(meta(pod).get("namespace")), str(meta(pod).get("name"))):
                    continue
            else:
                self.c.event(
                    job,
                    "Normal",
                    "SuccessfulDelete",
                    f"Deleted pod: {meta(pod).get('name')}",
                    COMPONENT,
                )
            deleted += 1
            deleted_ready += is_ready(pod)
        return deleted_ready, deleted

    def _manage_job(
        self, pod_rt: ResourceType, job: dict[str, Any], ctx: _Ctx, suspended: bool
    ) -> int:
        """``manageJob``: the number of active pods afterwards."""
        active = len(ctx.active_pods)
        spec = self._spec(job)
        if suspended:
            ready, removed = self._delete_pods(
                pod_rt, job, sorted(ctx.active_pods, key=_removal_rank), True
            )
            ctx.terminating += removed
            ctx.ready -= ready
            return active - removed
        parallelism = _int(spec.get("parallelism"), 1)
        completions = self._completions(job)
        if completions is None:
            want = active if ctx.succeeded > 0 else parallelism
        else:
            want = max(0, min(completions - ctx.succeeded, parallelism))
        to_delete = self._pods_for_removal(job, ctx, max(0, active - want))
        if to_delete:
            ready, removed = self._delete_pods(
                pod_rt, job, to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC], True
            )
            ctx.terminating += removed
            ctx.ready -= ready
            return active - removed
        terminating = ctx.terminating if self._only_replace_failed(job) else 0
        diff = min(want - terminating - active, MAX_POD_CREATE_DELETE_PER_SYNC)
        if diff <= 0:
            return active
        indexes: list[int | None] = [None] * diff
        if self._indexed(job):
            indexes = list(self._first_pending_indexes(job, ctx, diff))
        for index in indexes:
            pod = self.c.create(pod_rt, pod_from_job(job, index))
            if pod is None:
                break
            active += 1
            self.c.event(
                job,
                "Normal",
                "SuccessfulCreate",
                f"Created pod: {meta(pod).get('name')}",
                COMPONENT,
            )
        return active

    def _pods_for_removal(
        self, job: dict[str, Any], ctx: _Ctx, at_least: int
    ) -> list[dict[str, Any]]:
        """``activePodsForRemoval``: for an Indexed Job, pods with a
        duplicated or invalid index first, then by ``ActivePods`` order."""
        rm: list[dict[str, Any]] = []
        left = list(ctx.active_pods)
        if self._indexed(job):
            left = []
            by_index: dict[int, list[dict[str, Any]]] = {}
            for p in ctx.active_pods:
                if self._valid_index(job, p):
                    by_index.setdefault(_completion_index(p), []).append(p)
                else:
                    rm.append(p)
            for group in by_index.values():
                group.sort(key=_removal_rank)
                rm.extend(group[:-1])
                left.append(group[-1])
        if len(rm) < at_least:
            left.sort(key=_removal_rank)
            rm.extend(left[: at_least - len(rm)])
        return rm

    def _first_pending_indexes(self, job: dict[str, Any], ctx: _Ctx, count: int) -> list[int]:
        """``firstPendingIndexes``: the lowest indexes neither succeeded nor
        held by an active pod (nor a terminating one, when only failed pods
        are replaced)."""
        taken = set(ctx.succeeded_indexes)
        for p in ctx.active_pods:
            taken.add(_completion_index(p))
        if self._only_replace_failed(job):
            for p in ctx.pods:
                if meta(p).get("deletionTimestamp") and _phase(p) not in ("Succeeded", "Failed"):
                    taken.add(_completion_index(p))
        out: list[int] = []
        for ix in range(self._completions(job) or 0):
            if len(out) >= count:
                break
            if ix not in taken:
                out.append(ix)
        return out

    # --- trackJobStatusAndRemoveFinalizers ----------------------------------------------

    def _clean_uncounted(self, ctx: _Ctx, with_finalizer: set[str]) -> bool:
        """``cleanUncountedPodsWithoutFinalizers``."""
        updated = False
        for key in ("succeeded", "failed"):
            uids = ctx.uncounted[key]
            kept = [u for u in uids if u in with_finalizer]
            if len(kept) != len(uids):
                updated = True
                ctx.status[key] = _int(ctx.status.get(key)) + len(uids) - len(kept)
                ctx.uncounted[key] = kept
                ctx.status["uncountedTerminatedPods"] = ctx.uncounted
        return updated

    def _track_status(
        self, job_rt: ResourceType, pod_rt: ResourceType, ctx: _Ctx, needs_flush: bool
    ) -> None:
        job = ctx.job
        status = ctx.status
        indexed = self._indexed(job)
        pods = ctx.pods
        if indexed:
            pods = sorted(pods, key=_completion_index)
        with_finalizer = {str(meta(p).get("uid")) for p in pods if _has_finalizer(p)}
        if self._clean_uncounted(ctx, with_finalizer):
            needs_flush = True
        to_remove: list[dict[str, Any]] = []
        new_indexes: list[int] = []
        finished = ctx.finished
        for pod in pods:
            if not _has_finalizer(pod):
                continue
            uid = str(meta(pod).get("uid"))
            failed = self._is_pod_failed(job, pod)
            # canRemoveFinalizer
            if not (
                meta(job).get("deletionTimestamp")
                or finished is not None
                or _phase(pod) == "Succeeded"
                or failed
            ):
                continue
            to_remove.append(pod)
            if _phase(pod) == "Succeeded" and uid not in ctx.uncounted["failed"]:
                if indexed:
                    ix = _completion_index(pod)
                    if self._valid_index(job, pod) and ix not in ctx.prev_succeeded_indexes:
                        new_indexes.append(ix)
                        needs_flush = True
                elif uid not in ctx.uncounted["succeeded"]:
                    ctx.uncounted["succeeded"].append(uid)
                    needs_flush = True
            elif (
                # When the Job is failing, every pod not succeeded is failed.
                (failed or (finished is not None and finished["type"] != "SuccessCriteriaMet"))
                and uid not in ctx.uncounted["failed"]
                and (not indexed or self._valid_index(job, pod))
                and match_pod_failure_policy(self._spec(job).get("podFailurePolicy"), pod)[1]
            ):
                ctx.uncounted["failed"].append(uid)
                needs_flush = True
            if len(new_indexes) + sum(map(len, ctx.uncounted.values())) >= MAX_UNCOUNTED_PODS:
                break
        if indexed:
            ctx.succeeded_indexes |= set(new_indexes)
            s = format_indexes(ctx.succeeded_indexes)
            if s != (status.get("completedIndexes") or ""):
                needs_flush = True
            status["succeeded"] = len(ctx.succeeded_indexes)
            status["completedIndexes"] = s
        conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
        t = now()
        if finished is not None and finished["type"] == "FailureTarget":
            conditions.append(finished)
            needs_flush = True
            finished = _condition(
                "Failed", "True", finished.get("reason", ""), finished.get("message", ""), t
            )
        if finished is not None and finished["type"] == "SuccessCriteriaMet":
            scm = _find(conditions, "SuccessCriteriaMet")
            if scm is None or scm.get("status") != "True":
                conditions.append(finished)
                needs_flush = True
            finished = _condition(
                "Complete", "True", finished.get("reason", ""), finished.get("message", ""), t
            )
        # flushUncountedAndRemoveFinalizers
        if needs_flush:
            if self._update_status(job_rt, ctx) is None:
                return
            needs_flush = False
        for pod in to_remove:
            if self._remove_finalizer(pod_rt, pod):
                with_finalizer.discard(str(meta(pod).get("uid")))
        if self._clean_uncounted(ctx, with_finalizer):
            needs_flush = True
        # enactJobFinished
        job_finished = False
        if finished is not None and not any(ctx.uncounted.values()) and ctx.terminating == 0:
            _ensure_condition(
                conditions,
                finished["type"],
                "True",
                finished.get("reason", ""),
                finished.get("message", ""),
                t,
            )
            if finished["type"] == "Complete":
                status["completionTime"] = (_find(conditions, "Complete") or {}).get(
                    "lastTransitionTime"
                )
            job_finished = needs_flush = True
        if needs_flush and self._update_status(job_rt, ctx) is not None and job_finished:
            assert finished is not None
            if finished["type"] == "Complete":
                completions = self._completions(ctx.job)
                if completions is not None and _int(status.get("succeeded")) > completions:
                    self.c.event(
                        ctx.job,
                        "Warning",
                        "TooManySucceededPods",
                        "Too many succeeded pods running after completion count reached",
                        COMPONENT,
                    )
                self.c.event(ctx.job, "Normal", "Completed", "Job completed", COMPONENT)
            else:
                self.c.event(
                    ctx.job,
                    "Warning",
                    str(finished.get("reason", "")),
                    str(finished.get("message", "")),
                    COMPONENT,
                )

    # --- ttlafterfinished --------------------------------------------------------------

    def _ttl_after_finished(
        self, job_rt: ResourceType, job: dict[str, Any], at: float
    ) -> float | None:
        """The TTL-after-finished controller's ``processJob``: delete a
        finished Job ``ttlSecondsAfterFinished`` after it finished
        (Foreground, resourceVersion precondition); or when to look again."""
        ttl = self._spec(job).get("ttlSecondsAfterFinished")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or meta(job).get("deletionTimestamp"):
            return None
        cond = is_finished(job)
        finished_at = parse_time((cond or {}).get("lastTransitionTime"))
        if finished_at is None:
            return None
        expire = finished_at + ttl
        if at < expire:
            return expire
        m = meta(job)
        try:
            self.c.rest.delete(
                job_rt,
                m.get("namespace"),
                str(m.get("name", "")),
                propagation="Foreground",
                preconditions={"resourceVersion": m.get("resourceVersion")},
            )
        except StatusError as err:
            logger.info("ttl-after-finished: delete job %s failed: %s", m.get("name"), err)
            return None
        self.c.writes += 1
        return None


class JobPodExits:
    """The kubelet's container exits of Job pods on ``node-1`` (see the
    module docstring); writes as ``kubelet``."""

    field_manager = "kubelet"

    def __init__(self, c: InternalClient) -> None:
        self.c = c
        self._running_since: dict[str, float] = {}

    def sync(self, at: float) -> float | None:
        pod_rt = self.c.type("", "v1", "pods")
        if pod_rt is None:
            return None
        wake: float | None = None
        seen: set[str] = set()
        for pod in self.c.items(pod_rt):
            m = meta(pod)
            if (
                _controlled_by_job(pod) is None
                or (pod.get("spec") or {}).get("nodeName") != NODE_NAME
                or _phase(pod) != "Running"
                or m.get("deletionTimestamp")
            ):
                continue
            uid = str(m.get("uid"))
            seen.add(uid)
            since = self._running_since.setdefault(uid, at)
            annotations = m.get("annotations") or {}
            try:
                run = float(annotations.get(RUN_SECONDS_ANNOTATION) or 0)
            except ValueError:
                run = 0.0
            if at < since + run:
                wake = since + run if wake is None else min(wake, since + run)
                continue
            try:
                code = int(annotations.get(EXIT_CODE_ANNOTATION) or 0)
            except ValueError:
                code = 1
            self._exit(pod_rt, pod, code)
        for uid in list(self._running_since):
            if uid not in seen:
                del self._running_since[uid]
        return wake

    def _exit(self, pod_rt: ResourceType, pod: dict[str, Any], code: int) -> None:
        """The status the kubelet writes once every container has exited
        (``generateAPIPodStatus``: ``getPhase``, ``GeneratePodReadyCondition``...)."""
        t = now()
        phase = "Succeeded" if code == 0 else "Failed"
        reason = "PodCompleted" if code == 0 else "PodFailed"
        new = self.c.mutable(pod)
        status = new.setdefault("status", {})
        status["phase"] = phase

        def cond(ctype: str, value: str, why: str = "") -> dict[str, Any]:
            old = pod_condition(pod, ctype)
            same = old is not None and old.get("status") == value
            c: dict[str, Any] = {
                "type": ctype,
                "status": value,
                "lastProbeTime": None,
                "lastTransitionTime": (old or {}).get("lastTransitionTime") if same else t,
            }
            if why:
                c["reason"] = why
            return c

        wanted = {
            "PodReadyToStartContainers": cond("PodReadyToStartContainers", "False"),
            "Initialized": cond("Initialized", "True", "PodCompleted" if code == 0 else ""),
            "Ready": cond("Ready", "False", reason),
            "ContainersReady": cond("ContainersReady", "False", reason),
        }
        status["conditions"] = [
            wanted.get(str(c.get("type")), c) for c in status.get("conditions") or []
        ]
        for cs in status.get("containerStatuses") or []:
            state = cs.get("state") or {}
            started = (state.get("running") or {}).get("startedAt") or t
            cs["ready"] = False
            cs["started"] = False
            cs["state"] = {
                "terminated": {
                    "exitCode": code,
                    "reason": "Completed" if code == 0 else "Error",
                    "startedAt": started,
                    "finishedAt": t,
                    "containerID": cs.get("containerID", ""),
                }
            }
        self.c.update(pod_rt, new, status=True)
