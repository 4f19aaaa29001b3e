"""ResourceQuota, as on a cluster: kube-controller-manager's quota controller
(``pkg/controller/resourcequota``) and kube-apiserver 1.32's
``ResourceQuota`` admission plugin (``plugin/pkg/admission/resourcequota``,
``k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go``), over
kube's evaluators (``pkg/quota/v1/evaluator/core``, ``quota/v1/generic``).

* Usage (``_usage``), as kube's evaluators measure it:

  - pods (``pods.go``): ``count/pods`` for every pod; for a pod that is not
    terminal (``QuotaV1Pod``: phase neither Succeeded nor Failed, and not past
    its deletion grace period) also ``pods``, ``cpu`` / ``requests.cpu``,
    ``limits.cpu``, the same for ``memory`` and ``ephemeral-storage``,
    ``hugepages-*`` / ``requests.hugepages-*`` and ``requests.<extended>``,
    from the pod's requests and limits as ``PodRequests`` / ``PodLimits``
    total them (init containers and sidecars, ``spec.overhead``);
  - services (``services.go``): ``services``, ``count/services``,
    ``services.loadbalancers`` and ``services.nodeports`` (a NodePort or
    LoadBalancer Service's ports; with ``allocateLoadBalancerNodePorts: false``
    only those that name a nodePort);
  - persistentvolumeclaims (``persistent_volume_claims.go``):
    ``persistentvolumeclaims``, ``count/persistentvolumeclaims``,
    ``requests.storage`` (rounded up to a whole byte) and their
    ``<class>.storageclass.storage.k8s.io/`` forms for the claim's class;
  - any other kind (the generic object-count evaluator):
    ``count/<resource>.<group>`` (``count/<resource>`` in the core group), and
    the legacy names ``configmaps``, ``secrets``, ``replicationcontrollers``,
    ``resourcequotas``. Events, bindings and the review kinds are ignored
    (``install.DefaultIgnoredResources``).

* Scopes: ``spec.scopes`` and ``spec.scopeSelector`` are honoured as kube
  does: for pods ``Terminating`` / ``NotTerminating``
  (``activeDeadlineSeconds``), ``BestEffort`` / ``NotBestEffort`` (the QoS
  class), ``PriorityClass`` (``In`` / ``NotIn`` / ``Exists`` /
  ``DoesNotExist``) and ``CrossNamespacePodAffinity``; other kinds match no
  scope (``MatchesNoScopeFunc``), so a scoped quota counts none of them.

* The controller (``QuotaController``, a ``BackgroundLoop``) keeps each
  quota's ``status.hard`` equal to ``spec.hard`` and ``status.used`` to the
  namespace's usage of each of those resources it can measure (a resource no
  evaluator measures keeps the ``used`` it had, as ``syncResourceQuota``
  does), written through ``resourcequotas/status`` as field manager
  ``kube-controller-manager`` only when either changed. Its storage listener
  is O(1): it wakes the loop for a quota's namespace when the quota changes,
  or when an object of a kind one of that namespace's quotas counts is
  written there; a pass recalculates only those namespaces. Kube's
  controller also resyncs every five minutes: here a pod that stops counting
  because its deletion grace period ran out is recounted when it expires.

* Admission (``admit``), called last among the validating admission steps,
  for a namespaced object's CREATE, and the UPDATEs kube's evaluators handle
  (a Service's or a PersistentVolumeClaim's: charged by the growth only);
  never for a subresource. Each quota (by name) whose ``status.hard`` names a
  resource of the object's kind: pods missing the requests / limits a quota
  on cpu or memory needs are ``failed quota: <q>: must specify ...``; a
  resource of ``status.hard`` missing from ``status.used`` is ``status
  unknown for quota: <q>, resources: ...`` (kube checks ``status``, not
  ``spec``: a quota the controller has not yet filled limits nothing);
  ``used + requested > hard`` is ``exceeded quota: <q>, requested: ...,
  used: ..., limited: ...`` (resources sorted, quantities as Go prints them).
  An admitted request raises the quotas' ``status.used`` at once (field
  manager ``kube-apiserver``, as kube's loopback client), so that two quick
  creates cannot both pass before the controller recounts; a dry run does
  not.

Not done: the admission plugin's ``AdmissionConfiguration``
(``limitedResources``: no resource needs a covering quota); a pod's
``resize`` (InPlacePodVerticalScaling is off in 1.32); ``spec.scopes:
[PriorityClass]`` without an operator is taken as ``Exists``.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import logging
import threading
import time
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver.registry.admission_limits import (
    Amount,
    add_amounts,
    amounts,
    pod_totals,
    show_amount,
)
from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.resource_types import NOT_STORED, ResourceType
from pycontroller.testing.apiserver.schema import quantity
from pycontroller.testing.apiserver.status import StatusError, forbidden

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = ["APISERVER_MANAGER", "CONTROLLER_NAME", "QuotaController", "admit"]

logger = logging.getLogger(__name__)

RKey = tuple[str, str]
QUOTAS: RKey = ("", "resourcequotas")
_PODS: RKey = ("", "pods")
_SERVICES: RKey = ("", "services")
_CLAIMS: RKey = ("", "persistentvolumeclaims")

CONTROLLER_NAME = "kube-controller-manager"
APISERVER_MANAGER = "kube-apiserver"

_IGNORED: frozenset[RKey] = NOT_STORED | {("", "events"), ("events.k8s.io", "events")}
_LEGACY_ALIASES: dict[RKey, str] = {
    ("", "configmaps"): "configmaps",
    ("", "resourcequotas"): "resourcequotas",
    ("", "replicationcontrollers"): "replicationcontrollers",
    ("", "secrets"): "secrets",
}
_POD_RESOURCES = frozenset(
    {
        "count/pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
    }
)
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
_VALIDATION_SET = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_SERVICE_RESOURCES = frozenset(
    {"count/services", "services", "services.nodeports", "services.loadbalancers"}
)
_CLAIM_RESOURCES = ("persistentvolumeclaims", "requests.storage")
_STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
_ONE = Amount(Decimal(1), quantity.DECIMAL_SI)
_ZERO = Amount(Decimal(0), quantity.DECIMAL_SI)

Usage = dict[str, Amount]


# --- evaluators ----------------------------------------------------------------------


def _count_name(rk: RKey) -> str:
    """``generic.ObjectCountQuotaResourceNameFor``."""
    return f"count/{rk[1]}" if not rk[0] else f"count/{rk[1]}.{rk[0]}"


def _count_rkey(name: str) -> RKey | None:
    """The (group, resource) a ``count/...`` name counts."""
    if not name.startswith("count/"):
        return None
    resource, _, group = name[len("count/") :].partition(".")
    return (group, resource) if resource else None


def _is_native(name: str) -> bool:
    """``helper.IsNativeResource``."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """``helper.IsExtendedResourceName`` (a container's resource)."""
    return not _is_native(name) and not name.startswith("requests.")


def _matching(rk: RKey, names: Iterable[str]) -> set[str]:
    """``Evaluator.MatchingResources`` of the evaluator of ``rk``."""
    out: set[str] = set()
    for name in names:
        if rk == _PODS:
            if (
                name in _POD_RESOURCES
                or name.startswith(_POD_PREFIXES)
                or (not _is_native(name) and name.startswith("requests."))
            ):
                out.add(name)
        elif rk == _SERVICES:
            if name in _SERVICE_RESOURCES:
                out.add(name)
        elif rk == _CLAIMS:
            if (
                name == _count_name(_CLAIMS)
                or name in _CLAIM_RESOURCES
                or any(name.endswith(_STORAGE_CLASS_SUFFIX + r) for r in _CLAIM_RESOURCES)
            ):
                out.add(name)
        elif name == _count_name(rk) or name == _LEGACY_ALIASES.get(rk):
            out.add(name)
    return out


def _evaluated_kinds(rest: REST, name: str) -> set[RKey]:
    """The kinds whose evaluator measures the quota resource ``name`` (served,
    namespaced or not, and not ignored: kube's controller makes an
    object-count evaluator for every resource it discovers)."""
    out: set[RKey] = set()
    for rk in (_PODS, _SERVICES, _CLAIMS, *_LEGACY_ALIASES):
        if _matching(rk, (name,)):
            out.add(rk)
    counted = _count_rkey(name)
    if (
        counted is not None
        and counted not in out
        and counted not in _IGNORED
        and rest.registry.versions_of(*counted)
    ):
        out.add(counted)
    return out


def _handles(rk: RKey, operation: str) -> bool:
    """``Evaluator.Handles``."""
    if rk in (_SERVICES, _CLAIMS):
        return operation in ("CREATE", "UPDATE")
    return operation == "CREATE"


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _pod_counted_until(pod: dict[str, Any]) -> float | None:
    """When a pod stops counting for its compute resources (``QuotaV1Pod``):
    0 if it already has (terminal), None if it never will by itself."""
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        return 0.0
    meta = pod.get("metadata") or {}
    deleted = _parse_time(meta.get("deletionTimestamp"))
    grace = meta.get("deletionGracePeriodSeconds")
    if deleted is None or not isinstance(grace, int):
        return None
    return deleted + grace


def _resources(container: dict[str, Any]) -> tuple[Usage, Usage]:
    resources = container.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    return amounts(resources.get("requests")), amounts(resources.get("limits"))


def _compute_usage(requests: Usage, limits: Usage) -> Usage:
    """``podComputeUsageHelper``."""
    out: Usage = {"pods": _ONE}
    for resource in ("cpu", "memory", "ephemeral-storage"):
        if resource in requests:
            out[resource] = requests[resource]
            out[f"requests.{resource}"] = requests[resource]
        if resource in limits:
            out[f"limits.{resource}"] = limits[resource]
    for resource, request in requests.items():
        if resource.startswith("hugepages-"):
            out[resource] = request
            out[f"requests.{resource}"] = request
        if _is_extended(resource):
            out[f"requests.{resource}"] = request
    return out


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        if isinstance(items, list):
            out += [c for c in items if isinstance(c, dict)]
    return out


def _pod_usage(pod: dict[str, Any], now: float) -> Usage:
    """``PodUsageFunc``."""
    out: Usage = {"count/pods": _ONE}
    until = _pod_counted_until(pod)
    if until is not None and now > until:
        return out
    spec = pod.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    requests, limits = pod_totals(spec)
    overhead = amounts(spec.get("overhead"))
    add_amounts(requests, overhead)
    for name, q in overhead.items():  # PodLimits: only to the limits the pod has
        if name in limits:
            add_amounts(limits, {name: q})
    add_amounts(out, _compute_usage(requests, limits))
    return out


def _service_usage(svc: dict[str, Any]) -> Usage:
    spec = svc.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    out: Usage = {
        "count/services": _ONE,
        "services": _ONE,
        "services.loadbalancers": _ZERO,
        "services.nodeports": _ZERO,
    }
    kind = spec.get("type")
    if kind == "NodePort":
        out["services.nodeports"] = Amount(Decimal(len(ports)), quantity.DECIMAL_SI)
    elif kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            with_ports = sum(1 for p in ports if p.get("nodePort"))
            out["services.nodeports"] = Amount(Decimal(with_ports), quantity.DECIMAL_SI)
        else:
            out["services.nodeports"] = Amount(Decimal(len(ports)), quantity.DECIMAL_SI)
        out["services.loadbalancers"] = _ONE
    return out


def storage_class_of(obj: dict[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass`` / ``GetPersistentVolumeClass``: the
    beta ``volume.beta.kubernetes.io/storage-class`` annotation, else
    ``spec.storageClassName``, else ``""``."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if isinstance(annotations, dict) and BETA_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_CLASS_ANNOTATION] or "")
    spec = obj.get("spec")
    return str((spec if isinstance(spec, dict) else {}).get("storageClassName") or "")


def _claim_usage(claim: dict[str, Any]) -> Usage:
    out: Usage = {"persistentvolumeclaims": _ONE, "count/persistentvolumeclaims": _ONE}
    spec = claim.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    storage_class = storage_class_of(claim)
    if storage_class:
        out[f"{storage_class}{_STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = _ONE
    resources = spec.get("resources")
    requests = amounts(resources.get("requests") if isinstance(resources, dict) else None)
    storage = requests.get("storage")
    if storage is not None:
        whole = Amount(storage.amount.to_integral_value(decimal.ROUND_CEILING), storage.format)
        out["requests.storage"] = whole
        if storage_class:
            out[f"{storage_class}{_STORAGE_CLASS_SUFFIX}requests.storage"] = whole
    return out


def _usage(rk: RKey, obj: dict[str, Any], now: float) -> Usage:
    """``Evaluator.Usage``."""
    if rk == _PODS:
        return _pod_usage(obj, now)
    if rk == _SERVICES:
        return _service_usage(obj)
    if rk == _CLAIMS:
        return _claim_usage(obj)
    out = {_count_name(rk): _ONE}
    alias = _LEGACY_ALIASES.get(rk)
    if alias:
        out[alias] = _ONE
    return out


# --- scopes ----------------------------------------------------------------------------


def _selectors(q: dict[str, Any]) -> list[dict[str, Any]]:
    """``getScopeSelectorsFromQuota``."""
    spec = q.get("spec") or {}
    scopes = spec.get("scopes") or []
    out = [{"scopeName": s, "operator": "Exists"} for s in scopes if isinstance(s, str)]
    selector = spec.get("scopeSelector")
    if isinstance(selector, dict):
        out += [e for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]
    return out


def _best_effort(pod: dict[str, Any]) -> bool:
    """``qos.GetPodQOS(pod) == BestEffort``."""
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "BestEffort")
    spec = pod.get("spec")
    for container in _containers(spec if isinstance(spec, dict) else {}):
        for values in _resources(container):
            if any(name in ("cpu", "memory") and q.amount > 0 for name, q in values.items()):
                return False
    return True


def _cross_namespace_affinity(spec: dict[str, Any]) -> bool:
    affinity = spec.get("affinity")
    if not isinstance(affinity, dict):
        return False
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind)
        if not isinstance(terms, dict):
            continue
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        preferred = [
            t.get("podAffinityTerm")
            for t in terms.get("preferredDuringSchedulingIgnoredDuringExecution") or []
            if isinstance(t, dict)
        ]
        for term in [*required, *preferred]:
            if isinstance(term, dict) and (
                term.get("namespaces") or term.get("namespaceSelector") is not None
            ):
                return True
    return False


def _scope_matches(rk: RKey, selector: dict[str, Any], obj: dict[str, Any]) -> bool:
    """``podMatchesScopeFunc``; every other kind matches no scope."""
    if rk != _PODS:
        return False
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    scope = str(selector.get("scopeName") or "")
    if scope in ("Terminating", "NotTerminating"):
        deadline = spec.get("activeDeadlineSeconds")
        terminating = isinstance(deadline, int) and deadline >= 0
        return terminating == (scope == "Terminating")
    if scope in ("BestEffort", "NotBestEffort"):
        return _best_effort(obj) == (scope == "BestEffort")
    if scope == "PriorityClass":
        name = str(spec.get("priorityClassName") or "")
        operator = selector.get("operator") or "Exists"
        values = selector.get("values") or []
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return bool(name) and name in list(values)
        if operator == "NotIn":
            return not name or name not in list(values)
        return False
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(spec)
    return False


def _matches_scopes(rk: RKey, q: dict[str, Any], obj: dict[str, Any]) -> bool:
    return all(_scope_matches(rk, s, obj) for s in _selectors(q))


# --- resource lists ---------------------------------------------------------------------


def _list(raw: Any) -> Usage:
    return amounts(raw)


def _equal(a: Usage, b: Usage) -> bool:
    """``quota.Equals``: the same names, each of the same value."""
    return a.keys() == b.keys() and all(a[k].amount == b[k].amount for k in a)


def _pretty(items: Usage) -> str:
    """``prettyPrint``."""
    return ",".join(f"{k}={show_amount(items[k])}" for k in sorted(items))


def _as_json(items: Usage) -> dict[str, str]:
    return {k: show_amount(items[k]) for k in sorted(items)}


# --- the controller -----------------------------------------------------------------------


def calculate_status(rest: REST, q: dict[str, Any], now: float) -> dict[str, Any]:
    """``syncResourceQuota``'s new status of quota ``q`` (lock held)."""
    spec = q.get("spec") or {}
    status = q.get("status") or {}
    hard_raw: dict[str, Any] = spec["hard"] if isinstance(spec.get("hard"), dict) else {}
    ns = str((q.get("metadata") or {}).get("namespace") or "")
    used = _list(status.get("used"))
    names = list(hard_raw)
    by_kind: dict[RKey, set[str]] = {}
    for name in names:
        for rk in _evaluated_kinds(rest, name):
            by_kind.setdefault(rk, set()).add(name)
    for rk, matched in sorted(by_kind.items()):
        stats: Usage = {name: _ZERO for name in matched}
        scoped = bool(_selectors(q))
        for obj in rest.storage.items(rk, ns):
            if scoped and not _matches_scopes(rk, q, obj):
                continue
            add_amounts(stats, _usage(rk, obj, now))
        for name in matched:
            used[name] = stats[name]
    used = {k: v for k, v in used.items() if k in hard_raw}
    return {"hard": dict(hard_raw), "used": _as_json(used)}


class QuotaController(BackgroundLoop):
    """kube-controller-manager's ``resourcequota`` controller."""

    thread_name = "apiserver-resourcequota"

    def __init__(self, rest: REST, *, debounce: float = 0.01) -> None:
        super().__init__(debounce)
        self.rest = rest
        # namespace -> quota name -> the kinds it counts; namespace -> their union
        self._quotas: dict[str, dict[str, frozenset[RKey]]] = {}
        self._counted: dict[str, frozenset[RKey]] = {}
        self._dirty: set[str] = set()
        self._resync = True
        self._expiries: dict[str, float] = {}  # namespace -> when a pod stops counting
        with rest.storage.lock:
            for q in rest.storage.items(QUOTAS):
                self._index(q, deleted=False)
            rest.storage.add_listener(self._on_event)

    def _index(self, q: dict[str, Any], *, deleted: bool) -> None:
        meta = q.get("metadata") or {}
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        quotas = self._quotas.setdefault(ns, {})
        if deleted:
            quotas.pop(name, None)
        else:
            hard = (q.get("spec") or {}).get("hard")
            kinds: set[RKey] = set()
            for resource in hard if isinstance(hard, dict) else ():
                kinds |= _evaluated_kinds(self.rest, str(resource))
                counted = _count_rkey(str(resource))
                if counted is not None:  # a kind served later
                    kinds.add(counted)
            quotas[name] = frozenset(kinds)
        if quotas:
            self._counted[ns] = frozenset().union(*quotas.values())
        else:
            self._quotas.pop(ns, None)
            self._counted.pop(ns, None)

    def _on_event(self, ev: Event) -> None:
        if ev.rkey == QUOTAS:
            self._index(ev.obj, deleted=ev.type == "DELETED")
        elif ev.rkey not in self._counted.get(ev.namespace, ()):
            return
        self._dirty.add(ev.namespace)
        self._wake.set()

    def start(self) -> None:
        self._resync = True
        super().start()

    def next_timeout(self) -> float | None:
        with self.rest.storage.lock:
            if not self._expiries:
                return None
            return max(0.0, min(self._expiries.values()) - time.time())

    def run_pass(self, stop: threading.Event) -> None:
        self.sync_once()

    def sync_once(self) -> int:
        """Recalculate the quotas of every namespace marked; returns how many
        statuses were written."""
        now = time.time()
        with self.rest.storage.lock:
            dirty = self._dirty
            self._dirty = set()
            if self._resync:
                dirty |= set(self._quotas)
                self._resync = False
            for ns, when in list(self._expiries.items()):
                if when <= now:
                    dirty.add(ns)
                    del self._expiries[ns]
        written = 0
        for ns in sorted(dirty):
            written += self._sync_namespace(ns, now)
        return written

    def _sync_namespace(self, ns: str, now: float) -> int:
        rt = self.rest.type_for(QUOTAS)
        if rt is None:
            return 0
        updates: list[dict[str, Any]] = []
        with self.rest.storage.lock:
            for q in self.rest.storage.items(QUOTAS, ns):
                new_status = calculate_status(self.rest, q, now)
                status = q.get("status") or {}
                if (
                    isinstance(status.get("hard"), dict)
                    and isinstance(status.get("used"), dict)
                    and _equal(_list(status["hard"]), _list(new_status["hard"]))
                    and _equal(_list(status["used"]), _list(new_status["used"]))
                ):
                    continue
                new = copy.deepcopy(q)
                new["status"] = new_status
                updates.append(new)
            self._note_expiry(ns, now)
        from pycontroller.testing.apiserver.registry.rest import WriteOptions

        written = 0
        for new in updates:
            name = str(new["metadata"].get("name"))
            opts = WriteOptions(field_manager=CONTROLLER_NAME, user_agent=CONTROLLER_NAME)
            try:
                self.rest.update(rt, ns, name, new, opts, subresource="status")
            except StatusError as err:  # changed or gone meanwhile: its event retries
                logger.debug("status of ResourceQuota %s/%s: %s", ns, name, err)
                continue
            written += 1
        return written

    def _note_expiry(self, ns: str, now: float) -> None:
        """When the next pod of ``ns`` stops counting (lock held)."""
        if _PODS not in self._counted.get(ns, ()):
            self._expiries.pop(ns, None)
            return
        soonest: float | None = None
        for pod in self.rest.storage.items(_PODS, ns):
            until = _pod_counted_until(pod)
            if until is not None and until >= now and (soonest is None or until < soonest):
                soonest = until
        if soonest is None:
            self._expiries.pop(ns, None)
        else:
            self._expiries[ns] = soonest + 0.001


# --- admission ------------------------------------------------------------------------------


def _constraints(required: set[str], pod: dict[str, Any]) -> str | None:
    """``podEvaluator.Constraints``."""
    needed = required & _VALIDATION_SET
    missing: dict[str, set[str]] = {}
    spec = pod.get("spec")
    for container in _containers(spec if isinstance(spec, dict) else {}):
        have = set(_compute_usage(*_resources(container)))
        for resource in needed - have:
            missing.setdefault(resource, set()).add(str(container.get("name") or ""))
    if not missing:
        return None
    parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
    return "must specify " + "; ".join(parts)


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or "")


def admit(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
    dry_run: bool = False,
) -> None:
    """The ``ResourceQuota`` admission plugin (lock held): refuse ``obj`` with
    kube's 403 when a quota of its namespace does not allow it, else raise
    the quotas' ``status.used`` (not on a dry run)."""
    if obj is None or subresource or not rt.namespaced:
        return
    rk = (rt.group, rt.plural)
    if rk in _IGNORED or not _handles(rk, operation):
        return
    ns = str((obj.get("metadata") or {}).get("namespace") or "")
    quotas = rest.storage.items(QUOTAS, ns) if ns else []
    if not quotas:
        return
    now = time.time()
    interesting: list[tuple[dict[str, Any], set[str]]] = []
    for q in quotas:
        status = q.get("status") or {}
        hard = _list(status.get("hard"))
        restricted = _matching(rk, hard)
        if not restricted or not _matches_scopes(rk, q, obj):
            continue
        if rk == _PODS:
            err = _constraints(restricted, obj)
            if err:
                raise forbidden(rt, _name(obj), f"failed quota: {_name(q)}: {err}")
        used: dict[str, Any] = status["used"] if isinstance(status.get("used"), dict) else {}
        if any(r not in used for r in restricted):
            raise forbidden(
                rt,
                _name(obj),
                f"status unknown for quota: {_name(q)}, resources: {','.join(sorted(restricted))}",
            )
        interesting.append((q, restricted))
    usage = _usage(rk, obj, now)
    negative = sorted(k for k, v in usage.items() if v.amount < 0)
    if negative:
        raise forbidden(
            rt, _name(obj), f"quota usage is negative for resource(s): {','.join(negative)}"
        )
    if not interesting:
        return
    deltas: list[Usage] = [usage for _ in interesting]
    if operation == "UPDATE" and old is not None:
        previous = _usage(rk, old, now)
        # SubtractWithNonNegativeResult
        delta = {
            k: Amount(max(v.amount - previous[k].amount, Decimal(0)), v.format)
            if k in previous
            else v
            for k, v in usage.items()
        }
        deltas = [delta if _matches_scopes(rk, q, old) else usage for q, _ in interesting]
    updates: list[tuple[dict[str, Any], Usage]] = []
    for (q, _), delta in zip(interesting, deltas, strict=True):
        delta = {k: v for k, v in delta.items() if v.amount != 0}  # RemoveZeros
        if not delta:
            continue
        status = q.get("status") or {}
        hard = _list(status.get("hard"))
        used = _list(status.get("used"))
        requested = {k: v for k, v in delta.items() if k in hard}
        new_used = dict(used)
        add_amounts(new_used, requested)
        exceeded = sorted(k for k in requested if new_used[k].amount > hard[k].amount)
        if exceeded:
            raise forbidden(
                rt,
                _name(obj),
                f"exceeded quota: {_name(q)}, "
                f"requested: {_pretty({k: requested[k] for k in exceeded})}, "
                f"used: {_pretty({k: used[k] for k in exceeded if k in used})}, "
                f"limited: {_pretty({k: hard[k] for k in exceeded})}",
            )
        if not _equal(new_used, used):
            updates.append((q, new_used))
    if dry_run or not updates:
        return
    quota_rt = rest.type_for(QUOTAS)
    if quota_rt is None:
        return
    from pycontroller.testing.apiserver.registry.rest import WriteOptions

    opts = WriteOptions(field_manager=APISERVER_MANAGER, user_agent=APISERVER_MANAGER)
    for q, new_used in updates:
        new = copy.deepcopy(q)
        new["status"]["used"] = _as_json(new_used)
        rest.update(quota_rt, ns, _name(q), new, opts, subresource="status")
