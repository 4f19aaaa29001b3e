"""What kube 1.32's pod strategy does to a new pod beyond its status
(``podStrategy.PrepareForCreate`` in ``pkg/registry/core/pod/strategy.go``),
before it is validated:

* ``mutatePodAffinity`` (MatchLabelKeysInPodAffinity, beta and on): each
  pod (anti-)affinity term with a ``labelSelector`` gets ``key In (value)``
  for each of its ``matchLabelKeys`` and ``key NotIn (value)`` for each of
  its ``mismatchLabelKeys`` that the pod has as a label;
* ``applySchedulingGatedCondition``: a pod with ``schedulingGates`` starts
  with the ``PodScheduled=False`` condition, reason ``SchedulingGated``;
* ``applyAppArmorVersionSkew``: each container's AppArmor profile (its own,
  or the pod's) is mirrored into the deprecated
  ``container.apparmor.security.beta.kubernetes.io/<name>`` annotation, and
  such an annotation without a field becomes the container's field (unless
  it names the pod's profile or is not a valid profile).
"""

from __future__ import annotations

import time
from typing import Any

from pycontroller._time import format_rfc3339

__all__ = ["prepare_for_create"]

_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_LOCALHOST_PREFIX = "localhost/"


def prepare_for_create(pod: dict[str, Any]) -> None:
    """Apply the strategy's create-time changes to ``pod`` in place."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    _mutate_pod_affinity(pod, spec)
    _scheduling_gated_condition(pod, spec)
    _app_armor_version_skew(pod, spec)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _terms(affinity: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for weighted in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        term = _dict(weighted).get("podAffinityTerm") if isinstance(weighted, dict) else None
        if isinstance(term, dict):
            out.append(term)
    out.extend(
        t
        for t in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        if isinstance(t, dict)
    )
    return out


def _mutate_pod_affinity(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    labels = _dict(_dict(pod.get("metadata")).get("labels"))
    affinity = _dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        for term in _terms(_dict(affinity.get(kind))):
            selector = term.get("labelSelector")
            # A nil selector matches nothing: kube leaves it nil.
            if not isinstance(selector, dict):
                continue
            for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
                keys = term.get(field)
                for key in keys if isinstance(keys, list) else []:
                    if isinstance(key, str) and key in labels:
                        exprs = selector.get("matchExpressions")
                        if not isinstance(exprs, list):
                            exprs = selector["matchExpressions"] = []
                        exprs.append({"key": key, "operator": operator, "values": [labels[key]]})


def _scheduling_gated_condition(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    if not spec.get("schedulingGates"):
        return
    status = pod.setdefault("status", {})
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    if any(_dict(c).get("type") == "PodScheduled" for c in conditions):
        return
    # podutil.UpdatePodCondition stamps lastTransitionTime.
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": format_rfc3339(time.time()),
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    )


def _annotation_for(profile: dict[str, Any]) -> str:
    kind = profile.get("type")
    if kind == "Unconfined":
        return "unconfined"
    if kind == "RuntimeDefault":
        return "runtime/default"
    local = profile.get("localhostProfile")
    if kind == "Localhost" and isinstance(local, str):
        return _LOCALHOST_PREFIX + local
    return ""


def _field_for(annotation: str) -> dict[str, Any] | None:
    if annotation == "unconfined":
        return {"type": "Unconfined"}
    if annotation == "runtime/default":
        return {"type": "RuntimeDefault"}
    if annotation.startswith(_LOCALHOST_PREFIX) and annotation != _LOCALHOST_PREFIX:
        local = annotation[len(_LOCALHOST_PREFIX) :]
        # ValidateAppArmorProfileField: no surrounding whitespace, at most 4095 bytes.
        if local == local.strip() and len(local.encode()) <= 4095:
            return {"type": "Localhost", "localhostProfile": local}
    return None


def _app_armor_version_skew(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    if _dict(spec.get("os")).get("name") == "windows":
        return
    pod_profile = _dict(spec.get("securityContext")).get("appArmorProfile")
    meta = pod.setdefault("metadata", {})
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for ctr in spec.get(key) or []:
            if not isinstance(ctr, dict) or not isinstance(ctr.get("name"), str):
                continue
            name = _APPARMOR_PREFIX + ctr["name"]
            annotations = _dict(meta.get("annotations"))
            profile = _dict(ctr.get("securityContext")).get("appArmorProfile")
            if name not in annotations:
                source = profile if isinstance(profile, dict) else pod_profile
                value = _annotation_for(source) if isinstance(source, dict) else ""
                if value:
                    if not isinstance(meta.get("annotations"), dict):
                        meta["annotations"] = {}
                    meta["annotations"][name] = value
            elif profile is None:
                field = _field_for(str(annotations[name]))
                if field is not None and field != pod_profile:
                    sc = ctr.get("securityContext")
                    if not isinstance(sc, dict):
                        sc = ctr["securityContext"] = {}
                    sc["appArmorProfile"] = field
