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
