"""``POST pods/{name}/eviction`` and the pod subresources only a kubelet serves.

Eviction follows kube-apiserver 1.32's ``EvictionREST.Create``
(``pkg/registry/core/pod/storage/eviction.go``):

- the body is a ``policy/v1`` (or ``policy/v1beta1``) ``Eviction``; its name
  must be the URL's (400 ``name in URL does not match name in Eviction
  object``); ``?dryRun=All`` is pushed into its ``deleteOptions`` and both
  must agree when both are given (``propagateDryRun``);
- a pod that is Succeeded, Failed, Pending or already terminating is deleted
  without looking at budgets (``canIgnorePDB``);
- else the PodDisruptionBudgets of the pod's namespace whose selector matches
  its labels: more than one is a 500 (kube's message), none means delete;
  with one, a pod that is not Ready is deleted without spending the budget
  when the PDB's ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (the
  default ``IfHealthyBudget``) when ``currentHealthy >= desiredHealthy > 0``;
  otherwise ``checkAndDecrement``: ``observedGeneration < generation`` and
  ``disruptionsAllowed == 0`` are 429 TooManyRequests with kube's
  ``DisruptionBudget`` cause, a negative budget or more than 2000
  ``disruptedPods`` a 403; else ``disruptionsAllowed`` is decremented (the
  ``DisruptionAllowed`` condition turns False at 0) and the pod is recorded
  in ``status.disruptedPods``, written through ``poddisruptionbudgets/status``
  (a conflict re-reads the PDB and retries, as kube's ``RetryOnConflict``);
- the pod gets the ``DisruptionTarget`` condition (``EvictionByEvictionAPI``)
  and is deleted with the Eviction's ``deleteOptions`` (preconditions, dry
  run, propagation, ``gracePeriodSeconds``) through the same path as a
  DELETE (``REST.delete``): a scheduled pod is deleted gracefully and stays
  Terminating until its kubelet (the simulated one, for ``node-1``) deletes
  it. Where kube pins the pod's resourceVersion as a precondition, it does
  so here; a conflict then is kube's 429.

The answer is kube's ``Status`` ``Success`` with code 201. Everything runs
under ``storage.lock``, so the check and the budget write are atomic.

``pods/log``, ``exec``, ``attach``, ``portforward``, ``proxy`` and
``nodes/proxy``, ``services/proxy`` need a kubelet (or a pod network): they
answer 404 NotFound, as an unavailable resource, with a message saying so.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.labels import selector_from_label_selector
from pycontroller.meta import set_status_condition
from pycontroller.testing.apiserver.registry.rest import REST, WriteOptions, rkey
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import (
    StatusError,
    bad_request,
    not_found,
    unknown_error,
)

__all__ = [
    "KUBELET_ONLY",
    "KUBELET_SUBRESOURCES",
    "MAX_DISRUPTED_POD_SIZE",
    "evict",
    "kubelet_only",
    "update_disruption_allowed_condition",
]

# kube's MaxDisruptedPodSize.
MAX_DISRUPTED_POD_SIZE = 2000
# Attempts of the verify-and-decrement on a PDB conflict (kube's EvictionsRetry.Steps).
_RETRIES = 20
_ACCEPTED_VERSIONS = ("policy/v1", "policy/v1beta1")
_TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."
_MANY_PDBS = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)

# (group, plural) -> the subresources of it that only a kubelet (or a pod
# network, for proxies) can serve.
KUBELET_SUBRESOURCES: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset({"log", "exec", "attach", "portforward", "proxy"}),
    ("", "nodes"): frozenset({"proxy"}),
    ("", "services"): frozenset({"proxy"}),
}
# Their names, whatever the resource (the request body of one is never read).
KUBELET_ONLY: frozenset[str] = frozenset().union(*KUBELET_SUBRESOURCES.values())


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _too_many_requests(message: str, cause: str, retry_after: int) -> StatusError:
    """``errors.NewTooManyRequests(message, retryAfter)`` with a
    ``DisruptionBudget`` cause."""
    details: dict[str, Any] = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    headers: dict[str, str] = {}
    if retry_after:
        details = {"causes": details["causes"], "retryAfterSeconds": retry_after}
        headers["Retry-After"] = str(retry_after)
    return StatusError(429, "TooManyRequests", message, details, headers=headers)


def _still_processing(pdb_name: str) -> StatusError:
    """kube's ``createTooManyRequestsError``."""
    return _too_many_requests(
        _TOO_MANY, f"The disruption budget {pdb_name} is still being processed by the server.", 10
    )


def _conflict_timeout(pdb_name: str) -> StatusError:
    """``errors.NewTimeoutError`` when the PDB kept conflicting."""
    return StatusError(
        504,
        "Timeout",
        f'Timeout: couldn\'t update PodDisruptionBudget "{pdb_name}" due to conflicts',
        {"retryAfterSeconds": 10},
        headers={"Retry-After": "10"},
    )


def _pdb_forbidden(name: str, why: str) -> StatusError:
    """``errors.NewForbidden(policy.Resource("poddisruptionbudget"), name, err)``."""
    return StatusError(
        403,
        "Forbidden",
        f'poddisruptionbudget.policy "{name}" is forbidden: {why}',
        {"name": name, "group": "policy", "kind": "poddisruptionbudget"},
    )


def is_pod_ready(pod: dict[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def set_condition(conditions: list[dict[str, Any]], new: dict[str, Any], at: str) -> None:
    """``meta.SetStatusCondition`` (``pycontroller.meta.set_status_condition``)
    with the transition time ``at``, the keys in Go's field order."""
    cond: dict[str, Any] = {"type": new["type"], "status": new["status"]}
    if new.get("observedGeneration"):
        cond["observedGeneration"] = new["observedGeneration"]
    cond.update(lastTransitionTime=at, reason=new["reason"], message=new.get("message", ""))
    set_status_condition(conditions, cond)


def update_disruption_allowed_condition(status: dict[str, Any], at: str) -> None:
    """``pdbhelper.UpdateDisruptionAllowedCondition`` on a PDB's ``status``."""
    allowed = _int(status.get("disruptionsAllowed")) > 0
    conditions = status.setdefault("conditions", [])
    set_condition(
        conditions,
        {
            "type": "DisruptionAllowed",
            "status": "True" if allowed else "False",
            "reason": "SufficientPods" if allowed else "InsufficientPods",
            "message": "",
            "observedGeneration": _int(status.get("observedGeneration")),
        },
        at,
    )


def _matching_pdbs(rest: REST, pdb_rt: ResourceType, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """``getPodDisruptionBudgets``: an invalid selector matches nothing."""
    labels = _meta(pod).get("labels") or {}
    out = []
    for pdb in rest.storage.items(rkey(pdb_rt), _meta(pod).get("namespace")):
        try:
            selector = selector_from_label_selector((pdb.get("spec") or {}).get("selector"))
        except ValueError:
            continue
        if selector.matches(labels):
            out.append(pdb)
    return out


def _can_ignore_pdb(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(_meta(pod).get("deletionTimestamp"))


def _should_enforce_resource_version(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


class _DeleteOptions:
    def __init__(self, raw: dict[str, Any], dry_run: bool) -> None:
        pre = raw.get("preconditions")
        self.preconditions: dict[str, Any] = dict(pre) if isinstance(pre, dict) else {}
        self.propagation = raw.get("propagationPolicy")
        orphan = raw.get("orphanDependents")
        if self.propagation is None and isinstance(orphan, bool):
            self.propagation = "Orphan" if orphan else "Background"
        if self.propagation not in (None, "Background", "Foreground", "Orphan"):
            raise bad_request(
                f'propagationPolicy: Unsupported value: "{self.propagation}": supported '
                'values: "Orphan", "Background", "Foreground"'
            )
        self.dry_run = dry_run
        grace = raw.get("gracePeriodSeconds")
        if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
            raise bad_request(
                "json: cannot unmarshal "
                f"{'string' if isinstance(grace, str) else type(grace).__name__} into Go "
                "struct field DeleteOptions.deleteOptions.gracePeriodSeconds of type int64"
            )
        self.grace_period_seconds: int | None = grace

    def rv_unset(self) -> bool:
        return not self.preconditions.get("resourceVersion")

    def with_rv(self, rv: str) -> _DeleteOptions:
        out = copy.copy(self)
        out.preconditions = {**self.preconditions, "resourceVersion": rv}
        return out


def _propagate_dry_run(raw: dict[str, Any], query_dry_run: list[str]) -> bool:
    """``propagateDryRun``: the query's and the body's dryRun must agree when
    both are given; kube answers a mismatch with a plain (500) error."""
    body = raw.get("dryRun")
    body_dry = [str(d) for d in body] if isinstance(body, list) else []
    if body_dry and query_dry_run and body_dry != query_dry_run:
        raise unknown_error(
            500,
            f"Non-matching dry-run options in request and content: [{' '.join(query_dry_run)}] "
            f"and [{' '.join(body_dry)}]",
        )
    # dryrun.IsDryRun: any value is a dry run.
    return bool(body_dry or query_dry_run)


def _add_condition_and_delete(
    rest: REST, pod_rt: ResourceType, ns: str, name: str, opts: _DeleteOptions, user_agent: str
) -> None:
    """``addConditionAndDeletePod``: the ``DisruptionTarget`` condition, then
    the delete (its resourceVersion precondition moved past our own write)."""
    if not opts.dry_run:
        latest = rest.storage.get(rkey(pod_rt), ns, name)
        if latest is None:
            raise not_found(pod_rt, name)
        lmeta = _meta(latest)
        uid = opts.preconditions.get("uid")
        if uid and uid != lmeta.get("uid"):
            raise _pod_conflict(
                name,
                f"the UID in the precondition ({uid}) does not match the UID in record "
                f"({lmeta.get('uid')}). The object might have been deleted and then recreated",
            )
        rv = opts.preconditions.get("resourceVersion")
        if rv and str(rv) != lmeta.get("resourceVersion"):
            raise _pod_conflict(
                name,
                f"the ResourceVersion in the precondition ({rv}) does not match the "
                f"ResourceVersion in record ({lmeta.get('resourceVersion')}). The object "
                "might have been modified",
            )
        new = copy.deepcopy(latest)
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        existing = next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)
        wanted = {"reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
        if existing is None:
            conditions.append(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": format_rfc3339(time.time()),
                    **wanted,
                }
            )
        else:
            # podutil.UpdatePodCondition: the transition time moves with the status only.
            if existing.get("status") != "True":
                existing["lastTransitionTime"] = format_rfc3339(time.time())
            existing.update(status="True", **wanted)
        status["conditions"] = conditions
        updated = rest.update(
            pod_rt, ns, name, new, WriteOptions(user_agent=user_agent), subresource="status"
        )
        if rv:
            opts = opts.with_rv(str(_meta(updated).get("resourceVersion")))
    rest.delete(
        pod_rt,
        ns,
        name,
        propagation=opts.propagation,
        preconditions=opts.preconditions,
        dry_run=opts.dry_run,
        grace_period_seconds=opts.grace_period_seconds,
    )


def _pod_conflict(name: str, why: str) -> StatusError:
    # errors.NewConflict(schema.GroupResource{Resource: "Pod"}, ...), as kube spells it.
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on Pod "{name}": {why}',
        {"name": name, "kind": "Pod"},
    )


def _check_and_decrement(
    rest: REST, pdb_rt: ResourceType, pdb: dict[str, Any], pod_name: str, dry_run: bool
) -> None:
    """``checkAndDecrement``: raise kube's refusal, or spend one disruption
    (written unless dry run); a write conflict raises 409 for the retry."""
    name = str(_meta(pdb).get("name", ""))
    status = pdb.get("status") or {}
    if _int(status.get("observedGeneration")) < _int(_meta(pdb).get("generation")):
        raise _still_processing(name)
    allowed = _int(status.get("disruptionsAllowed"))
    if allowed < 0:
        raise _pdb_forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise _pdb_forbidden(
            name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        )
    if allowed == 0:
        raise _too_many_requests(
            _TOO_MANY,
            f"The disruption budget {name} needs {_int(status.get('desiredHealthy'))} healthy "
            f"pods and has {_int(status.get('currentHealthy'))} currently",
            0,
        )
    if dry_run:
        return
    new = copy.deepcopy(pdb)
    nstatus = new.setdefault("status", {})
    nstatus["disruptionsAllowed"] = allowed - 1
    now = format_rfc3339(time.time())
    if allowed - 1 == 0:
        update_disruption_allowed_condition(nstatus, now)
    disrupted = nstatus.get("disruptedPods")
    if not isinstance(disrupted, dict):
        disrupted = {}
    disrupted[pod_name] = now
    # Go's map keys are written sorted.
    ordered = dict(sorted(disrupted.items()))
    rebuilt: dict[str, Any] = {}
    for key in ("observedGeneration",):
        if key in nstatus:
            rebuilt[key] = nstatus[key]
    rebuilt["disruptedPods"] = ordered
    for key, value in nstatus.items():
        if key not in rebuilt:
            rebuilt[key] = value
    new["status"] = rebuilt
    rest.update(
        pdb_rt,
        _meta(pdb).get("namespace"),
        name,
        new,
        WriteOptions(field_manager="kube-apiserver", user_agent="kube-apiserver"),
        subresource="status",
    )


def evict(
    rest: REST,
    pod_rt: ResourceType,
    namespace: str,
    name: str,
    body: Any,
    *,
    query_dry_run: bool = False,
    user_agent: str = "",
) -> tuple[int, dict[str, Any]]:
    """Serve ``POST pods/{name}/eviction``: ``(201, Status Success)`` or raise."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    version = body.get("apiVersion")
    if version and version not in _ACCEPTED_VERSIONS:
        raise bad_request(
            f"the API version in the data ({version}) does not match the expected API "
            "version (policy/v1)"
        )
    kind = body.get("kind")
    if kind and kind != "Eviction":
        raise bad_request(
            f"the kind in the data ({kind}) does not match the expected kind (Eviction)"
        )
    emeta = _meta(body)
    body_ns = emeta.get("namespace")
    if body_ns and body_ns != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the "
            "request"
        )
    if emeta.get("name") != name:
        raise bad_request("name in URL does not match name in Eviction object")
    raw = body.get("deleteOptions")
    raw = raw if isinstance(raw, dict) else {}
    dry_run = _propagate_dry_run(raw, ["All"] if query_dry_run else [])
    original = _DeleteOptions(raw, dry_run)
    pdb_rt = rest.registry.get("policy", "v1", "poddisruptionbudgets")
    with rest.storage.lock:
        pod = rest.storage.get(rkey(pod_rt), namespace, name)
        if pod is None:
            raise not_found(pod_rt, name)
        if _can_ignore_pdb(pod):
            opts = original
            if _should_enforce_resource_version(pod) and original.rv_unset():
                opts = original.with_rv(str(_meta(pod).get("resourceVersion")))
            _add_condition_and_delete(rest, pod_rt, namespace, name, opts, user_agent)
            return 201, _success()
        pdbs = _matching_pdbs(rest, pdb_rt, pod) if pdb_rt is not None else []
        if len(pdbs) > 1:
            raise unknown_error(500, _MANY_PDBS)
        pin_rv = False
        pdb_name = ""
        if pdbs:
            assert pdb_rt is not None
            pdb = pdbs[0]
            pdb_name = str(_meta(pdb).get("name", ""))
            policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
            status = pdb.get("status") or {}
            current, desired = (
                _int(status.get("currentHealthy")),
                _int(status.get("desiredHealthy")),
            )
            if not is_pod_ready(pod) and (
                policy == "AlwaysAllow" or (current >= desired and desired > 0)
            ):
                # An unhealthy pod: deleting it does not spend the budget.
                pin_rv = True
            else:
                for attempt in range(_RETRIES):
                    try:
                        _check_and_decrement(rest, pdb_rt, pdb, name, dry_run)
                        break
                    except StatusError as err:
                        if err.code != 409 or attempt == _RETRIES - 1:
                            if err.code == 409:
                                raise _conflict_timeout(pdb_name) from None
                            raise
                    fresh = rest.storage.get(rkey(pdb_rt), namespace, pdb_name)
                    if fresh is None:
                        raise not_found(pdb_rt, pdb_name)
                    pdb = fresh
        opts = original.with_rv(str(_meta(pod).get("resourceVersion"))) if pin_rv else original
        try:
            _add_condition_and_delete(rest, pod_rt, namespace, name, opts, user_agent)
        except StatusError as err:
            if err.code == 409 and pin_rv and original.rv_unset():
                raise _still_processing(pdb_name) from None
            raise
        return 201, _success()


def _success() -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }


def _split_scheme_name_port(name: str) -> str:
    """The object name of a proxy path's ``[scheme:]name[:port]``."""
    parts = name.split(":")
    if len(parts) == 2:
        return parts[0]
    if len(parts) == 3:
        return parts[1]
    return name


def kubelet_only(
    rest: REST, rt: ResourceType, namespace: str | None, name: str, subresource: str
) -> StatusError:
    """The answer to a subresource only a kubelet serves: 404 NotFound for
    an object that does not exist (as kube), else 404 NotFound saying that
    this server has no kubelet."""
    obj_name = _split_scheme_name_port(name) if subresource == "proxy" else name
    ns = (namespace or "") if rt.namespaced else ""
    if rest.storage.get(rkey(rt), ns, obj_name) is None:
        return not_found(rt, obj_name)
    what = f"{rt.plural}/{subresource}"
    return StatusError(
        404,
        "NotFound",
        f"{what} is not served: the embedded API server (pycontroller.testing) has no "
        "kubelet (no containers, no pod network) to serve it",
        {"name": obj_name, "kind": what},
    )
