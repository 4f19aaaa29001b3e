"""HorizontalPodAutoscalers through ``autoscaling/v1``, stored as ``autoscaling/v2``.

kube-apiserver stores HPAs once and serves them at both versions, converting
as ``pkg/apis/autoscaling/v1/conversion.go`` does (read for the behaviour;
this is our own code over JSON values):

- ``spec.targetCPUUtilizationPercentage`` is the ``Resource`` metric for
  ``cpu`` with a ``Utilization`` target; every other metric travels in the
  annotation ``autoscaling.alpha.kubernetes.io/metrics`` as a JSON list of
  v1 ``MetricSpec`` (the v2beta1-shaped ``targetAverageValue`` /
  ``metricName`` fields), so a v1 client that reads and writes back loses
  nothing. A v1 HPA with neither gets kube's implicit default, 80% CPU.
- ``status.currentCPUUtilizationPercentage`` is the CPU metric's current
  utilization; all of ``status.currentMetrics`` travels in
  ``autoscaling.alpha.kubernetes.io/current-metrics`` and
  ``status.conditions`` in ``autoscaling.alpha.kubernetes.io/conditions``.
- ``spec.behavior`` travels in ``autoscaling.alpha.kubernetes.io/behavior``.
  kube marshals its *internal* type there, which has no JSON tags, so the
  keys are Go's field names (``ScaleUp``, ``StabilizationWindowSeconds``);
  read back case-insensitively, as Go's ``encoding/json`` does.
- Those annotations never reach storage: they are dropped from what a v1
  write stores, and rebuilt from the v2 fields on every v1 read.

Annotation values are compact JSON with keys in the Go structs' field order,
as ``json.Marshal`` writes them.

Field management (``managedFields``, server-side apply and its conflicts)
runs in the request's version, as kube's: a write through v1 is recorded at
``autoscaling/v1`` with v1's paths, and managers of either version conflict on
the fields they share (``REST._track`` and ``fieldmanager.Views``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = [
    "BEHAVIOR_ANNOTATION",
    "CONDITIONS_ANNOTATION",
    "CURRENT_METRICS_ANNOTATION",
    "METRICS_ANNOTATION",
    "v1_to_v2",
    "v2_to_v1",
]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_ROUND_TRIP = (
    METRICS_ANNOTATION,
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
)
DEFAULT_CPU_UTILIZATION = 80


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _set(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _is_cpu_utilization(metric: Any) -> bool:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return False
    res = metric.get("resource") or {}
    target = res.get("target") or {}
    return bool(res.get("name") == "cpu" and target.get("averageUtilization") is not None)


def _cpu_metric(utilization: Any) -> dict[str, Any]:
    return {
        "type": "Resource",
        "resource": {
            "name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": utilization},
        },
    }


# --- metric specs: v2 <-> v1 (v2beta1-shaped) -----------------------------------------


def _spec_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type")}
    if isinstance(metric.get("object"), dict):
        src, target = metric["object"], metric["object"].get("target") or {}
        m = src.get("metric") or {}
        obj: dict[str, Any] = {
            "target": src.get("describedObject") or {},
            "metricName": m.get("name", ""),
            "targetValue": target.get("value") or "0",
        }
        _set(obj, "selector", m.get("selector"))
        _set(obj, "averageValue", target.get("averageValue"))
        out["object"] = obj
    if isinstance(metric.get("pods"), dict):
        src, target = metric["pods"], metric["pods"].get("target") or {}
        m = src.get("metric") or {}
        pods: dict[str, Any] = {
            "metricName": m.get("name", ""),
            "targetAverageValue": target.get("averageValue") or "0",
        }
        _set(pods, "selector", m.get("selector"))
        out["pods"] = pods
    for key in ("resource", "containerResource"):
        if isinstance(metric.get(key), dict):
            src, target = metric[key], metric[key].get("target") or {}
            res: dict[str, Any] = {"name": src.get("name", "")}
            _set(res, "targetAverageUtilization", target.get("averageUtilization"))
            _set(res, "targetAverageValue", target.get("averageValue"))
            if key == "containerResource":
                res["container"] = src.get("container", "")
            out[key] = res
    if isinstance(metric.get("external"), dict):
        src, target = metric["external"], metric["external"].get("target") or {}
        m = src.get("metric") or {}
        ext: dict[str, Any] = {"metricName": m.get("name", "")}
        _set(ext, "metricSelector", m.get("selector"))
        _set(ext, "targetValue", target.get("value"))
        _set(ext, "targetAverageValue", target.get("averageValue"))
        out["external"] = ext
    return out


def _identifier(name: Any, selector: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name or ""}
    _set(out, "selector", selector)
    return out


def _target(kind: str, **values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind}
    for k, v in values.items():
        _set(out, k, v)
    return out


def _spec_to_v2(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type")}
    if isinstance(metric.get("object"), dict):
        src = metric["object"]
        kind = "Value" if src.get("averageValue") is None else "AverageValue"
        out["object"] = {
            "describedObject": src.get("target") or {},
            "target": _target(
                kind, value=src.get("targetValue"), averageValue=src.get("averageValue")
            ),
            "metric": _identifier(src.get("metricName"), src.get("selector")),
        }
    if isinstance(metric.get("pods"), dict):
        src = metric["pods"]
        out["pods"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "target": _target("AverageValue", averageValue=src.get("targetAverageValue")),
        }
    for key in ("resource", "containerResource"):
        if isinstance(metric.get(key), dict):
            src = metric[key]
            util = src.get("targetAverageUtilization")
            res: dict[str, Any] = {
                "name": src.get("name", ""),
                "target": _target(
                    "AverageValue" if util is None else "Utilization",
                    averageUtilization=util,
                    averageValue=src.get("targetAverageValue"),
                ),
            }
            if key == "containerResource":
                res["container"] = src.get("container", "")
            out[key] = res
    if isinstance(metric.get("external"), dict):
        src = metric["external"]
        kind = "Value" if src.get("targetAverageValue") is None else "AverageValue"
        out["external"] = {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "target": _target(
                kind, value=src.get("targetValue"), averageValue=src.get("targetAverageValue")
            ),
        }
    return out


# --- metric statuses: v2 <-> v1 ------------------------------------------------------


def _status_to_v1(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type")}
    if isinstance(metric.get("object"), dict):
        src, cur = metric["object"], metric["object"].get("current") or {}
        m = src.get("metric") or {}
        obj: dict[str, Any] = {
            "target": src.get("describedObject") or {},
            "metricName": m.get("name", ""),
            "currentValue": cur.get("value") or "0",
        }
        _set(obj, "selector", m.get("selector"))
        _set(obj, "averageValue", cur.get("averageValue"))
        out["object"] = obj
    if isinstance(metric.get("pods"), dict):
        src, cur = metric["pods"], metric["pods"].get("current") or {}
        m = src.get("metric") or {}
        pods: dict[str, Any] = {
            "metricName": m.get("name", ""),
            "currentAverageValue": cur.get("averageValue") or "0",
        }
        _set(pods, "selector", m.get("selector"))
        out["pods"] = pods
    for key in ("resource", "containerResource"):
        if isinstance(metric.get(key), dict):
            src, cur = metric[key], metric[key].get("current") or {}
            res: dict[str, Any] = {"name": src.get("name", "")}
            _set(res, "currentAverageUtilization", cur.get("averageUtilization"))
            res["currentAverageValue"] = cur.get("averageValue") or "0"
            if key == "containerResource":
                res["container"] = src.get("container", "")
            out[key] = res
    if isinstance(metric.get("external"), dict):
        src, cur = metric["external"], metric["external"].get("current") or {}
        m = src.get("metric") or {}
        ext: dict[str, Any] = {"metricName": m.get("name", "")}
        _set(ext, "metricSelector", m.get("selector"))
        ext["currentValue"] = cur.get("value") or "0"
        _set(ext, "currentAverageValue", cur.get("averageValue"))
        out["external"] = ext
    return out


def _current(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _status_to_v2(metric: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type")}
    if isinstance(metric.get("object"), dict):
        src = metric["object"]
        out["object"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": _current(
                value=src.get("currentValue"), averageValue=src.get("averageValue")
            ),
            "describedObject": src.get("target") or {},
        }
    if isinstance(metric.get("pods"), dict):
        src = metric["pods"]
        out["pods"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": _current(averageValue=src.get("currentAverageValue")),
        }
    for key in ("resource", "containerResource"):
        if isinstance(metric.get(key), dict):
            src = metric[key]
            res: dict[str, Any] = {
                "name": src.get("name", ""),
                "current": _current(
                    averageValue=src.get("currentAverageValue"),
                    averageUtilization=src.get("currentAverageUtilization"),
                ),
            }
            if key == "containerResource":
                res["container"] = src.get("container", "")
            out[key] = res
    if isinstance(metric.get("external"), dict):
        src = metric["external"]
        out["external"] = {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "current": _current(
                value=src.get("currentValue"), averageValue=src.get("currentAverageValue")
            ),
        }
    return out


# --- behavior: Go field names in the annotation --------------------------------------


def _behavior_to_go(behavior: dict[str, Any]) -> dict[str, Any]:
    def rules(r: Any) -> Any:
        if not isinstance(r, dict):
            return None
        policies = r.get("policies")
        return {
            "StabilizationWindowSeconds": r.get("stabilizationWindowSeconds"),
            "SelectPolicy": r.get("selectPolicy"),
            "Policies": None
            if policies is None
            else [
                {
                    "Type": p.get("type"),
                    "Value": p.get("value"),
                    "PeriodSeconds": p.get("periodSeconds"),
                }
                for p in policies
                if isinstance(p, dict)
            ],  # fmt: skip
        }

    return {
        "ScaleUp": rules(behavior.get("scaleUp")),
        "ScaleDown": rules(behavior.get("scaleDown")),
    }


def _behavior_from_go(value: Any) -> dict[str, Any] | None:
    """Go ``json.Unmarshal`` into the internal type: keys matched without
    case, nulls dropped; None when malformed or empty (kube then ignores it)."""

    def lower(v: Any) -> Any:
        if isinstance(v, dict):
            return {k.lower(): lower(x) for k, x in v.items() if x is not None}
        if isinstance(v, list):
            return [lower(x) for x in v]
        return v

    if not isinstance(value, dict):
        return None
    names = {
        "scaleup": "scaleUp", "scaledown": "scaleDown",
        "stabilizationwindowseconds": "stabilizationWindowSeconds",
        "selectpolicy": "selectPolicy", "policies": "policies", "type": "type",
        "value": "value", "periodseconds": "periodSeconds",
    }  # fmt: skip

    def rename(v: Any) -> Any:
        if isinstance(v, dict):
            return {names[k]: rename(x) for k, x in v.items() if k in names}
        if isinstance(v, list):
            return [rename(x) for x in v]
        return v

    out = rename(lower(value))
    return out or None


# --- whole objects -------------------------------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _annotations(meta: dict[str, Any]) -> dict[str, Any]:
    ann = meta.get("annotations")
    return dict(ann) if isinstance(ann, dict) else {}


# ObjectMeta's field order (how kube serializes metadata).
_META_ORDER = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
)  # fmt: skip


def _with_annotations(meta: dict[str, Any], ann: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with ``ann`` as its annotations (sorted, as Go marshals a map),
    in ObjectMeta's field order; without the key when ``ann`` is empty."""
    fields = {k: v for k, v in meta.items() if k != "annotations"}
    if ann:
        fields["annotations"] = dict(sorted(ann.items()))
    out = {k: fields.pop(k) for k in _META_ORDER if k in fields}
    out.update(fields)
    return out


def v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored autoscaling/v2 HPA as autoscaling/v1 serves it (a new object)."""
    obj = copy.deepcopy(obj)
    spec = _dict(obj.get("spec"))
    # v1's status is a struct, not a pointer: always there, with both counts.
    status = _dict(obj.get("status"))
    meta = _dict(obj.get("metadata"))
    ann = {k: v for k, v in _annotations(meta).items() if k not in _ROUND_TRIP}
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    v1_spec: dict[str, Any] = {"scaleTargetRef": spec.get("scaleTargetRef") or {}}
    _set(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    for m in metrics:
        if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu":
            util = ((m["resource"].get("target")) or {}).get("averageUtilization")
            _set(v1_spec, "targetCPUUtilizationPercentage", util)
            break
    others = [_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        ann[METRICS_ANNOTATION] = _dumps(others)
    if isinstance(spec.get("behavior"), dict):
        ann[BEHAVIOR_ANNOTATION] = _dumps(_behavior_to_go(spec["behavior"]))
    out: dict[str, Any] = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1"}
    for k, v in obj.items():
        if k in ("kind", "apiVersion"):
            continue
        if k == "metadata":
            out[k] = meta
        elif k == "spec":
            out[k] = v1_spec
        elif k != "status":
            out[k] = v
    v1_status: dict[str, Any] = {}
    for key in ("observedGeneration", "lastScaleTime"):
        _set(v1_status, key, status.get(key))
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    for m in current:
        res = m.get("resource") or {}
        if m.get("type") == "Resource" and res.get("name") == "cpu":
            util = (res.get("current") or {}).get("averageUtilization")
            _set(v1_status, "currentCPUUtilizationPercentage", util)
    if current:
        ann[CURRENT_METRICS_ANNOTATION] = _dumps([_status_to_v1(m) for m in current])
    conditions = status.get("conditions")
    if conditions:
        ann[CONDITIONS_ANNOTATION] = _dumps(conditions)
    out["status"] = v1_status
    out["metadata"] = _with_annotations(meta, ann)
    return out


def _loads_list(text: Any) -> list[dict[str, Any]]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HPA body in its stored autoscaling/v2 form (a new object)."""
    obj = copy.deepcopy(obj)
    spec = _dict(obj.get("spec"))
    status = obj.get("status") if isinstance(obj.get("status"), dict) else None
    meta = _dict(obj.get("metadata"))
    ann = _annotations(meta)
    v2_spec: dict[str, Any] = {}
    for k, v in spec.items():
        if k != "targetCPUUtilizationPercentage":
            v2_spec[k] = v
    metrics = [_spec_to_v2(m) for m in _loads_list(ann.get(METRICS_ANNOTATION))]
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(_cpu_metric(spec["targetCPUUtilizationPercentage"]))
    if not metrics:  # v1's implicit default, made explicit
        metrics = [_cpu_metric(DEFAULT_CPU_UTILIZATION)]
    v2_spec["metrics"] = metrics
    if BEHAVIOR_ANNOTATION in ann:
        try:
            behavior = _behavior_from_go(json.loads(str(ann[BEHAVIOR_ANNOTATION])))
        except ValueError:
            behavior = None
        if behavior:
            v2_spec["behavior"] = behavior
    out: dict[str, Any] = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2"}
    for k, v in obj.items():
        if k in ("kind", "apiVersion"):
            continue
        out[k] = v2_spec if k == "spec" else v
    if "spec" not in out:
        out["spec"] = v2_spec
    if status is not None:
        v2_status = {k: v for k, v in status.items() if k != "currentCPUUtilizationPercentage"}
        if CURRENT_METRICS_ANNOTATION in ann:
            current = [_status_to_v2(m) for m in _loads_list(ann[CURRENT_METRICS_ANNOTATION])]
        elif status.get("currentCPUUtilizationPercentage") is not None:
            current = [{
                "type": "Resource",
                "resource": {"name": "cpu", "current": {
                    "averageUtilization": status["currentCPUUtilizationPercentage"]}},
            }]  # fmt: skip
        else:
            current = []
        if current:
            v2_status["currentMetrics"] = current
        conditions = _loads_list(ann.get(CONDITIONS_ANNOTATION))
        if conditions:
            v2_status["conditions"] = conditions
        out["status"] = v2_status
    if "metadata" in out:
        out["metadata"] = _with_annotations(
            meta, {k: v for k, v in ann.items() if k not in _ROUND_TRIP}
        )
    return out
