"""The ``/scale`` subresource: ``autoscaling/v1`` ``Scale`` views of an object.

Served for apps/v1 deployments, replicasets and statefulsets and core/v1
replicationcontrollers (kube's ``ScaleREST`` in ``pkg/registry/apps/*/storage``)
and for custom resources whose CRD version declares ``subresources.scale``
(apiextensions-apiserver's
``ScaleREST``: ``specReplicasPath``, ``statusReplicasPath`` and the optional
``labelSelectorPath``). Pure functions: ``rest.py`` does the locking, the
optimistic-concurrency check and the write of the scaled object.

Paths are kube's restricted JSON paths (``.spec.replicas``): dot-separated
field names, no array indices.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType

__all__ = [
    "SCALE_GVK",
    "ScalePaths",
    "apply_replicas",
    "format_label_selector",
    "scale_paths",
    "to_scale",
    "validate_scale",
]

SCALE_GVK = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
SCALE_API_VERSION = "autoscaling/v1"


@dataclass(frozen=True)
class ScalePaths:
    spec_replicas: tuple[str, ...]
    status_replicas: tuple[str, ...]
    label_selector: tuple[str, ...] | None  # None: no selector in the Scale
    # Deployments keep a LabelSelector object at spec.selector and the Scale
    # shows it formatted (metav1.FormatLabelSelector); custom resources keep a
    # string at labelSelectorPath, copied as is.
    selector_is_object: bool = False
    # A ReplicationController's selector is a plain label map
    # (labels.SelectorFromSet(rc.Spec.Selector).String()).
    selector_is_map: bool = False


_DEPLOYMENT = ScalePaths(("spec", "replicas"), ("status", "replicas"), ("spec", "selector"), True)


def _path(p: Any) -> tuple[str, ...] | None:
    if not isinstance(p, str) or not p.startswith("."):
        return None
    parts = tuple(p[1:].split("."))
    return parts if all(parts) else None


_REPLICATION_CONTROLLER = ScalePaths(
    ("spec", "replicas"), ("status", "replicas"), ("spec", "selector"), selector_is_map=True
)


def scale_paths(rt: ResourceType) -> ScalePaths | None:
    """Where ``rt``'s replica counts live, or None when it has no scale subresource.

    Built-in kinds with ``/scale`` (deployments, replicasets, statefulsets,
    replicationcontrollers: ``kinds.py``) keep them at ``.spec.replicas`` and
    ``.status.replicas``; custom resources say where in their CRD."""
    if (rt.group, rt.kind) == ("apps", "Deployment"):
        return _DEPLOYMENT
    if rt.extra.get("builtin_scale"):
        return _REPLICATION_CONTROLLER if rt.group == "" else _DEPLOYMENT
    spec = rt.extra.get("scale")
    if not isinstance(spec, dict):
        return None
    spec_path = _path(spec.get("specReplicasPath"))
    status_path = _path(spec.get("statusReplicasPath"))
    if spec_path is None or status_path is None:
        return None
    return ScalePaths(spec_path, status_path, _path(spec.get("labelSelectorPath")))


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def format_label_selector(sel: Any) -> str:
    """``LabelSelectorAsSelector(sel).String()`` as the deployment Scale shows it:
    requirements sorted by key (``a=b,c in (d,e),!f``); "" when empty."""
    if not isinstance(sel, dict):
        return ""
    parts: list[tuple[str, str]] = []
    for k, v in (sel.get("matchLabels") or {}).items():
        parts.append((str(k), f"{k}={v}"))
    for expr in sel.get("matchExpressions") or []:
        if not isinstance(expr, dict):
            continue
        key, op = str(expr.get("key", "")), expr.get("operator", "")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        if op == "In":
            parts.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            parts.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            parts.append((key, key))
        elif op == "DoesNotExist":
            parts.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def to_scale(rt: ResourceType, obj: dict[str, Any], paths: ScalePaths) -> dict[str, Any]:
    """The ``Scale`` of ``obj`` (a stored object of ``rt``)."""
    meta = obj.get("metadata") or {}
    smeta: dict[str, Any] = {
        k: meta[k]
        for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        if k in meta
    }
    status: dict[str, Any] = {"replicas": _int(_get(obj, paths.status_replicas))}
    if paths.label_selector is not None:
        sel = _get(obj, paths.label_selector)
        if paths.selector_is_map:
            if isinstance(sel, dict) and sel:
                status["selector"] = format_label_selector({"matchLabels": sel})
        elif paths.selector_is_object:
            status["selector"] = format_label_selector(sel)
        elif isinstance(sel, str) and sel:
            status["selector"] = sel
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": smeta,
        "spec": {"replicas": _int(_get(obj, paths.spec_replicas))},
        "status": status,
    }


def apply_replicas(obj: dict[str, Any], paths: ScalePaths, replicas: int) -> dict[str, Any]:
    """A deep copy of ``obj`` with ``replicas`` at the spec replicas path."""
    new = copy.deepcopy(obj)
    node = new
    for key in paths.spec_replicas[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[paths.spec_replicas[-1]] = replicas
    return new


_INT64 = range(-(2**63), 2**63)


def _go_type_and_value(v: Any) -> tuple[str, str]:
    """Go's ``%T`` and ``%v`` of a decoded-JSON value."""
    if v is None:
        return "<nil>", "<nil>"
    if isinstance(v, bool):
        return "bool", "true" if v else "false"
    if isinstance(v, int) and v in _INT64:
        return "int64", str(v)
    if isinstance(v, int | float):
        from pycontroller.testing.apiserver.schema.structural import _go_float

        return "float64", _go_float(float(v)) if math.isfinite(float(v)) else str(v)
    if isinstance(v, str):
        return "string", v
    if isinstance(v, dict):
        return "map[string]interface {}", _go_v(v)
    if isinstance(v, list):
        return "[]interface {}", _go_v(v)
    return type(v).__name__, str(v)


def _go_v(v: Any) -> str:
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_v(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_v(x) for x in v) + "]"
    return _go_type_and_value(v)[1]


def _nested(obj: Any, path: tuple[str, ...], want: str) -> tuple[Any, str | None]:
    """``unstructured.NestedInt64`` / ``NestedString`` (``want``): the value
    (None when missing) or the accessor error."""
    where = "." + ".".join(path)
    val: Any = obj
    for key in path:
        if val is None:
            return None, None
        if not isinstance(val, dict):
            typ, text = _go_type_and_value(val)
            return (
                None,
                f"{where} accessor error: {text} is of the type {typ}, "
                "expected map[string]interface{}",
            )
        if key not in val:
            return None, None
        val = val[key]
    typ, text = _go_type_and_value(val)
    if typ != want:
        return None, f"{where} accessor error: {text} is of the type {typ}, expected {want}"
    return val, None


def _replicas_causes(obj: Any, path: tuple[str, ...]) -> list[dict[str, Any]]:
    field = "." + ".".join(path)
    val, err = _nested(obj, path, "int64")
    if err is not None:
        detail, shown = err, 0
    elif val is None:
        return []
    elif val < 0:
        detail, shown = "should be a non-negative integer", val
    elif val > 2**31 - 1:
        detail, shown = f"should be less than or equal to {2**31 - 1}", val
    else:
        return []
    return [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {shown}: {detail}",
            "field": field,
        }
    ]


def validate_scale(obj: dict[str, Any], paths: ScalePaths, *, spec: bool) -> list[dict[str, Any]]:
    """apiextensions validator.go ``ValidateScaleSpec`` (``spec``) and
    ``ValidateScaleStatus``: the replicas at the scale paths are int64 in
    [0, MaxInt32], the label selector a string; the field is the path as the
    CRD writes it (leading dot), the value 0 (or "") with an accessor error."""
    causes: list[dict[str, Any]] = []
    if spec:
        causes += _replicas_causes(obj, paths.spec_replicas)
    causes += _replicas_causes(obj, paths.status_replicas)
    if paths.label_selector is not None:
        _, err = _nested(obj, paths.label_selector, "string")
        if err is not None:
            field = "." + ".".join(paths.label_selector)
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f'Invalid value: "": {err}',
                    "field": field,
                }
            )
    return causes
