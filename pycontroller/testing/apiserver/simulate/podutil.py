"""Pod helpers the simulated controllers share (kube's ``pkg/api/v1/pod`` and
``pkg/controller`` utilities): readiness, availability, activity, port lookup,
timestamps, and apimachinery's int-or-percent scaling."""

from __future__ import annotations

import datetime
import math
import time
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.testing.apiserver.simulate.client import meta

__all__ = [
    "find_port",
    "is_active",
    "is_available",
    "is_ready",
    "node_matches",
    "now",
    "parse_time",
    "pod_condition",
    "ready_since",
    "scaled_value",
]


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as it is, ``"N%"`` of
    ``total`` rounded up or down; anything else raises ``ValueError`` with
    apimachinery's message."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = int(value[:-1])
        except ValueError:
            raise ValueError(f"invalid value for IntOrString: invalid value {value!r}") from None
        x = percent * total / 100
        return math.ceil(x) if round_up else math.floor(x)
    raise ValueError(
        f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}"
    )


def now() -> str:
    """``metav1.Now()`` as serialised (second precision)."""
    return format_rfc3339(time.time())


def parse_time(value: Any) -> float | None:
    """Unix seconds of an RFC 3339 timestamp, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.UTC)
    return dt.timestamp()


def pod_condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def is_ready(pod: dict[str, Any]) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    c = pod_condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def ready_since(pod: dict[str, Any]) -> float | None:
    """When the pod became Ready (its Ready condition's lastTransitionTime)."""
    c = pod_condition(pod, "Ready")
    if c is None or c.get("status") != "True":
        return None
    return parse_time(c.get("lastTransitionTime"))


def is_available(pod: dict[str, Any], min_ready_seconds: int, at: float) -> bool:
    """``podutil.IsPodAvailable``: Ready for at least ``min_ready_seconds``."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds <= at


def is_active(pod: dict[str, Any]) -> bool:
    """``controller.IsPodActive``: not terminal and not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get("deletionTimestamp")


def find_port(pod: dict[str, Any], service_port: dict[str, Any]) -> int | None:
    """``podutil.FindPort``: the container port a Service port's ``targetPort``
    names (by name and protocol), or the number itself; None when a named port
    is not found."""
    target = service_port.get("targetPort", service_port.get("port"))
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str):
        if target.isdigit():
            return int(target)
        protocol = service_port.get("protocol", "TCP")
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in (c or {}).get("ports") or []:
                if (
                    isinstance(p, dict)
                    and p.get("name") == target
                    and p.get("protocol", "TCP") == protocol
                ):
                    port = p.get("containerPort")
                    return port if isinstance(port, int) else None
    return None


def _requirement_matches(req: dict[str, Any], value: str | None) -> bool:
    """One ``NodeSelectorRequirement`` against a node's label (or field) value."""
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            n, bound = int(value), int(values[0])
        except ValueError:
            return False
        return n > bound if op == "Gt" else n < bound
    return False


def node_matches(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``: the pod spec's
    ``nodeSelector`` and ``requiredDuringSchedulingIgnoredDuringExecution``
    node affinity (terms ORed; ``matchExpressions`` on labels and
    ``matchFields`` on ``metadata.name`` ANDed within a term)."""
    labels = meta(node).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or None
    if required is None:
        return True
    fields = {"metadata.name": meta(node).get("name")}
    for term in required.get("nodeSelectorTerms") or []:
        exprs = (term or {}).get("matchExpressions") or []
        field_reqs = (term or {}).get("matchFields") or []
        if not exprs and not field_reqs:
            continue  # an empty term matches nothing
        if all(_requirement_matches(r, labels.get(r.get("key"))) for r in exprs) and all(
            _requirement_matches(r, fields.get(r.get("key"))) for r in field_reqs
        ):
            return True
    return False
