"""kube-apiserver 1.32's ``LimitRanger`` admission plugin
(``plugin/pkg/admission/limitranger/admission.go``), run from
``admission_plugins`` with the storage lock held.

* Mutating, on a pod CREATE (kube's ``SupportsAttributes`` leaves pod
  updates alone: a pod's containers are immutable): each ``Container`` item
  of every LimitRange in the pod's namespace gives the containers and init
  containers the ``default`` limits and ``defaultRequest`` requests they do
  not state, and the pod is annotated ``kubernetes.io/limit-ranger`` with
  what was set (``LimitRanger plugin set: cpu, memory request for container
  c; cpu limit for container c``; each LimitRange that sets something
  rewrites it). A container's limit without a request already has its
  request (``SetDefaults_Pod``, which kube applies as it decodes the
  request, so the LimitRange's ``defaultRequest`` does not replace it). The
  LimitRange's own defaults (``default`` from ``max``, ``defaultRequest``
  from ``default`` then ``min``) were set when it was written.
* Validating, on a pod CREATE and a PersistentVolumeClaim CREATE or UPDATE
  (not one whose stored object is being deleted): ``min``, ``max`` and
  ``maxLimitRequestRatio`` of the ``Container`` items over each container
  and init container, of the ``Pod`` items over the pod's total (init
  containers counted as kube's ``podRequests`` / ``podLimits`` do, sidecars
  included), and ``min`` / ``max`` of the ``PersistentVolumeClaim`` items
  over the claim's requests. The first LimitRange (by name) that the object
  breaks refuses it with kube's 403, its messages joined as
  ``utilerrors.NewAggregate`` does (``[a, b]``). Values are compared as kube
  does, in milli-units (whole units past ``MaxMilliValue``), the ratio as a
  float64 shown with ``%f``.

Kube visits a LimitRange's resources in Go map order (random); here they go
in name order, so of several broken constraints the message lists them in
an order kube may also give.
"""

from __future__ import annotations

import decimal
import json
import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import quantity
from pycontroller.testing.apiserver.status import forbidden

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = [
    "ANNOTATION",
    "Amount",
    "add_amounts",
    "amounts",
    "mutate",
    "pod_totals",
    "show_amount",
    "validate",
]

_LIMIT_RANGES = ("", "limitranges")
_PODS = ("", "pods")
_CLAIMS = ("", "persistentvolumeclaims")
ANNOTATION = "kubernetes.io/limit-ranger"
_MAX_INT64 = 2**63 - 1
_MAX_MILLI_VALUE = _MAX_INT64 // 1000  # resource.MaxMilliValue


class Amount(NamedTuple):
    """A parsed quantity: its exact amount and its format (what ``String``
    writes it in)."""

    amount: Decimal
    format: str


# --- quantities ------------------------------------------------------------------


def _parse(raw: Any) -> Amount | None:
    """``raw`` as the request decoded it (a string, or a JSON number); None
    when it is not a quantity (validation refuses it)."""
    if isinstance(raw, str):
        text = raw.strip()
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        text = json.dumps(raw)
    else:
        return None
    try:
        q = quantity.parse(text)
    except quantity.QuantityError:
        return None
    return Amount(q.amount, q.format)


def show_amount(q: Amount) -> str:
    """``Quantity.String``: the canonical text of ``q``, through the server's
    own writer (``quantity.canonical``) fed a text that parses back to it and
    that it keeps only when Go would (a count of nanos, or of bytes as Ki)."""
    amount, fmt = q.amount, q.format
    if fmt == quantity.BINARY_SI and amount == amount.to_integral_value():
        # n bytes as n/1024 Ki: exact (at most ten decimals), and BinarySI.
        with decimal.localcontext(prec=len(amount.as_tuple().digits) + 12):
            text = f"{format(amount / 1024, 'f')}Ki"
    else:
        nanos = int(amount.scaleb(9).to_integral_value(decimal.ROUND_UP))
        text = f"{nanos}e-9" if fmt == quantity.DECIMAL_EXPONENT else f"{nanos}n"
    return quantity.canonical(text)


def _scaled(amount: Decimal, scale: int) -> int:
    """``Quantity.ScaledValue``: rounded away from zero, held in an int64."""
    value = amount.scaleb(scale)
    rounded = math.ceil(abs(value))
    return max(-_MAX_INT64, min(_MAX_INT64, -rounded if value < 0 else rounded))


def _value(q: Amount | None) -> int:
    return 0 if q is None else _scaled(q.amount, 0)


def _milli(q: Amount | None) -> int:
    return 0 if q is None else _scaled(q.amount, 3)


def _enforced_values(
    req: Amount | None, lim: Amount | None, enforced: Amount
) -> tuple[int, int, int]:
    """``requestLimitEnforcedValues``: milli-values when none overflows."""
    values = (_value(req), _value(lim), _value(enforced))
    if all(v <= _MAX_MILLI_VALUE for v in values):
        return _milli(req), _milli(lim), _milli(enforced)
    return values


def amounts(raw: Any) -> dict[str, Amount]:
    """A ``ResourceList``: the entries that are quantities."""
    out: dict[str, Amount] = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            q = _parse(v)
            if q is not None:
                out[str(k)] = q
    return out


def add_amounts(total: dict[str, Amount], more: dict[str, Amount]) -> None:
    """``addResourceList`` (``Quantity.Add``: the format of the first
    non-zero operand)."""
    for name, q in more.items():
        have = total.get(name)
        if have is None:
            total[name] = q
        else:
            total[name] = Amount(have.amount + q.amount, have.format if have.amount else q.format)


def _max(total: dict[str, Amount], more: dict[str, Amount]) -> None:
    """``maxResourceList``."""
    for name, q in more.items():
        have = total.get(name)
        if have is None or q.amount > have.amount:
            total[name] = q


# --- the LimitRanges -------------------------------------------------------------


def _limit_items(rest: REST, namespace: str) -> list[list[dict[str, Any]]]:
    """The ``spec.limits`` of each LimitRange in ``namespace``, by name."""
    ranges = []
    for lr in rest.storage.items(_LIMIT_RANGES, namespace):
        limits = (lr.get("spec") or {}).get("limits")
        ranges.append(
            [i for i in limits if isinstance(i, dict)] if isinstance(limits, list) else []
        )
    return ranges


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or meta.get("generateName") or "Unknown")


def _containers(spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    containers = spec.get(key)
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


# --- mutating --------------------------------------------------------------------


def mutate(rest: REST, rt: ResourceType, operation: str, obj: dict[str, Any]) -> None:
    """``PodMutateLimitFunc`` for each LimitRange of the pod's namespace."""
    if (rt.group, rt.plural) != _PODS or operation != "CREATE":
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    ranges = _limit_items(rest, namespace)
    if not ranges:
        return
    _requests_from_limits(spec)
    for items in ranges:
        limits: dict[str, Any] = {}
        requests: dict[str, Any] = {}
        for item in items:  # defaultContainerResourceRequirements: the last item wins
            if item.get("type") == "Container":
                for source, target in (("defaultRequest", requests), ("default", limits)):
                    values = item.get(source)
                    if isinstance(values, dict):
                        target.update(values)
        annotations: list[str] = []
        for key, prefix in (("containers", "container"), ("initContainers", "init container")):
            for container in _containers(spec, key):
                _merge_container(container, limits, requests, prefix, annotations)
        if annotations:
            meta = obj.setdefault("metadata", {})
            if not isinstance(meta.get("annotations"), dict):
                meta["annotations"] = {}
            meta["annotations"][ANNOTATION] = "LimitRanger plugin set: " + "; ".join(annotations)


def _requests_from_limits(spec: dict[str, Any]) -> None:
    """``SetDefaults_Pod``'s requests from limits, which kube applies while
    decoding the request, before admission (the server defaults after it)."""
    for key in ("containers", "initContainers"):
        for container in _containers(spec, key):
            resources = container.get("resources")
            if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
                continue
            if not isinstance(resources.get("requests"), dict):
                resources["requests"] = {}
            for k, v in resources["limits"].items():
                resources["requests"].setdefault(k, v)


def _merge_container(
    container: dict[str, Any],
    limits: dict[str, Any],
    requests: dict[str, Any],
    prefix: str,
    annotations: list[str],
) -> None:
    """``mergeContainerResources``."""
    name = str(container.get("name") or "")
    for what, defaults in (("request", requests), ("limit", limits)):
        if not defaults:
            continue
        resources = container.get("resources")
        if not isinstance(resources, dict):
            resources = container["resources"] = {}
        field = what + "s"
        current = resources.get(field)
        current = current if isinstance(current, dict) else {}
        added = sorted(k for k in defaults if k not in current)
        if added:
            resources[field] = {**current, **{k: defaults[k] for k in added}}
            annotations.append(f"{', '.join(added)} {what} for {prefix} {name}")


# --- validating ------------------------------------------------------------------


def validate(rest: REST, rt: ResourceType, operation: str, obj: dict[str, Any]) -> None:
    """``PodValidateLimitFunc`` / ``PersistentVolumeClaimValidateLimitFunc``
    for each LimitRange of the object's namespace: the first broken one is
    the 403."""
    rk = (rt.group, rt.plural)
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    if rk == _PODS and operation == "CREATE":
        check = _pod_errors
    elif rk == _CLAIMS and operation in ("CREATE", "UPDATE"):
        if operation == "UPDATE":
            old = rest.storage.get(rk, namespace, str(meta.get("name") or ""))
            if old is not None and (old.get("metadata") or {}).get("deletionTimestamp"):
                return
        check = _claim_errors
    else:
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for items in _limit_items(rest, namespace):
        errs = check(items, spec)
        if errs:
            raise forbidden(rt, _name(obj), _aggregate(errs))


def _aggregate(errs: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: duplicates once, several in brackets."""
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _resources(container: dict[str, Any]) -> tuple[dict[str, Amount], dict[str, Amount]]:
    resources = container.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    return amounts(resources.get("requests")), amounts(resources.get("limits"))


def _pod_errors(items: list[dict[str, Any]], spec: dict[str, Any]) -> list[str]:
    errs: list[str] = []
    containers = _containers(spec, "containers") + _containers(spec, "initContainers")
    for item in items:
        kind = item.get("type")
        if kind == "Container":
            for container in containers:
                requests, limits = _resources(container)
                errs += _constraints(item, "Container", requests, limits)
        elif kind == "Pod":
            requests, limits = pod_totals(spec)
            errs += _constraints(item, "Pod", requests, limits)
    return errs


def _constraints(
    item: dict[str, Any], kind: str, requests: dict[str, Amount], limits: dict[str, Amount]
) -> list[str]:
    errs: list[str] = []
    for check, field in (
        (_min_constraint, "min"),
        (_max_constraint, "max"),
        (_ratio_constraint, "maxLimitRequestRatio"),
    ):
        for name, enforced in sorted(amounts(item.get(field)).items()):
            err = check(kind, name, enforced, requests, limits)
            if err:
                errs.append(err)
    return errs


def pod_totals(spec: dict[str, Any]) -> tuple[dict[str, Amount], dict[str, Amount]]:
    """``podRequests`` / ``podLimits``: the containers' sum, sidecars (init
    containers with ``restartPolicy: Always``) added, and at least what any
    init container needs along with the sidecars started before it."""
    totals: list[dict[str, Amount]] = []
    for index in (0, 1):
        total: dict[str, Amount] = {}
        for container in _containers(spec, "containers"):
            add_amounts(total, _resources(container)[index])
        sidecars: dict[str, Amount] = {}
        init: dict[str, Amount] = {}
        for container in _containers(spec, "initContainers"):
            own = _resources(container)[index]
            if container.get("restartPolicy") == "Always":
                add_amounts(total, own)
                add_amounts(sidecars, own)
                needed = dict(sidecars)
            else:
                needed = {}
                add_amounts(needed, own)
                add_amounts(needed, sidecars)
            _max(init, needed)
        _max(total, init)
        totals.append(total)
    return totals[0], totals[1]


def _min_constraint(
    kind: str, name: str, enforced: Amount, requests: dict[str, Amount], limits: dict[str, Amount]
) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    req_value, lim_value, enforced_value = _enforced_values(req, lim, enforced)
    shown = show_amount(enforced)
    if req is None:
        return f"minimum {name} usage per {kind} is {shown}.  No request is specified"
    if req_value < enforced_value:
        return f"minimum {name} usage per {kind} is {shown}, but request is {show_amount(req)}"
    if lim is not None and lim_value < enforced_value:
        return f"minimum {name} usage per {kind} is {shown}, but limit is {show_amount(lim)}"
    return None


def _max_constraint(
    kind: str, name: str, enforced: Amount, requests: dict[str, Amount], limits: dict[str, Amount]
) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    req_value, lim_value, enforced_value = _enforced_values(req, lim, enforced)
    shown = show_amount(enforced)
    if lim is None:
        return f"maximum {name} usage per {kind} is {shown}.  No limit is specified"
    if lim_value > enforced_value:
        return f"maximum {name} usage per {kind} is {shown}, but limit is {show_amount(lim)}"
    if req is not None and req_value > enforced_value:
        return f"maximum {name} usage per {kind} is {shown}, but request is {show_amount(req)}"
    return None


def _max_request_constraint(
    kind: str, name: str, enforced: Amount, requests: dict[str, Amount]
) -> str | None:
    """``maxRequestConstraint``: a kind (a claim) whose limits are not input."""
    req = requests.get(name)
    req_value, _, enforced_value = _enforced_values(req, None, enforced)
    shown = show_amount(enforced)
    if req is None:
        return f"maximum {name} usage per {kind} is {shown}.  No request is specified"
    if req_value > enforced_value:
        return f"maximum {name} usage per {kind} is {shown}, but request is {show_amount(req)}"
    return None


def _ratio_constraint(
    kind: str, name: str, enforced: Amount, requests: dict[str, Amount], limits: dict[str, Amount]
) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    req_value, lim_value, _ = _enforced_values(req, lim, enforced)
    shown = show_amount(enforced)
    if req is None or req_value == 0:
        return (
            f"{name} max limit to request ratio per {kind} is {shown}, but no request is "
            "specified or request is 0"
        )
    if lim is None or lim_value == 0:
        return (
            f"{name} max limit to request ratio per {kind} is {shown}, but no limit is "
            "specified or limit is 0"
        )
    observed = float(lim_value) / float(req_value)
    displayed = observed
    allowed = float(_value(enforced))
    if _value(enforced) <= _MAX_MILLI_VALUE:
        observed *= 1000
        allowed = float(_milli(enforced))
    if observed > allowed:
        return (
            f"{name} max limit to request ratio per {kind} is {shown}, but provided ratio is "
            f"{displayed:f}"
        )
    return None


def _claim_errors(items: list[dict[str, Any]], spec: dict[str, Any]) -> list[str]:
    resources = spec.get("resources")
    requests = amounts(resources.get("requests") if isinstance(resources, dict) else None)
    errs: list[str] = []
    for item in items:
        if item.get("type") != "PersistentVolumeClaim":
            continue
        kind = "PersistentVolumeClaim"
        for name, enforced in sorted(amounts(item.get("min")).items()):
            err = _min_constraint(kind, name, enforced, requests, {})
            if err:
                errs.append(err)
        for name, enforced in sorted(amounts(item.get("max")).items()):
            err = _max_request_constraint(kind, name, enforced, requests)
            if err:
                errs.append(err)
    return errs
