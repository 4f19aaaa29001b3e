"""PATCH bodies: JSON merge patch, JSON patch, strategic merge patch, apply.

- ``application/merge-patch+json``: RFC 7386 (``null`` deletes, objects merge
  recursively, everything else replaces).
- ``application/json-patch+json``: RFC 6902 via the ``jsonpatch`` package.
- ``application/strategic-merge-patch+json`` (built-in kinds only; custom
  resources answer 415 as kube does): like a merge patch, but lists whose
  field has a merge key in ``MERGE_KEYS`` merge element-wise by that key;
  ``$patch: delete`` removes a keyed element, ``$patch: replace`` on a map
  or as a list element replaces instead of merging, and
  ``$setElementOrder``/``$retainKeys`` directives are accepted and ignored.
- ``application/apply-patch+yaml``: server-side apply approximated as a merge
  patch of the applied configuration (no field ownership).

All functions return a new object; inputs are not mutated.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from pycontroller import _json
from pycontroller.testing.apiserver.status import StatusError, bad_request

__all__ = [
    "APPLY",
    "JSON_PATCH",
    "MERGE_KEYS",
    "MERGE_PATCH",
    "STRATEGIC",
    "apply_patch",
    "decode_patch",
    "json_merge_patch",
    "json_patch",
    "strategic_merge_patch",
]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

# field name -> merge key of its list elements (k8s.io/api patchMergeKey tags).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "tolerations": "key",
    "readinessGates": "conditionType",
    "resourceClaims": "name",
}
# Lists of scalars merged as sets (patchStrategy: merge on primitive lists).
SET_LISTS = frozenset({"finalizers"})


def decode_patch(body: bytes, content_type: str) -> Any:
    try:
        if content_type == APPLY:
            return yaml.safe_load(body.decode("utf-8"))
        return _json.loads(body)
    except Exception as err:
        raise bad_request(f"error decoding patch: {err}") from err


def json_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = json_merge_patch(out.get(k), v)
    return out


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    import jsonpatch

    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    try:
        result = jsonpatch.JsonPatch(ops).apply(target, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as err:
        raise StatusError(
            422,
            "Invalid",
            f"the server rejected our request due to an error " f"in our request: {err}",
        ) from err
    except (TypeError, KeyError, ValueError, IndexError) as err:
        raise bad_request(f"invalid json patch: {err}") from err
    if not isinstance(result, dict):
        raise bad_request("json patch result is not an object")
    return result


def _port_key(items: list[Any]) -> str:
    for it in items:
        if isinstance(it, dict):
            if "containerPort" in it:
                return "containerPort"
            if "port" in it:
                return "port"
    return "port"


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":
        return _port_key(items)
    return MERGE_KEYS.get(field)


def _smp_list(field: str, orig: Any, patch: list[Any]) -> list[Any]:
    orig_list = orig if isinstance(orig, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    if field in SET_LISTS:
        out = list(orig_list)
        for p in patch:
            if p not in out:
                out.append(p)
        return out
    key = _merge_key(field, orig_list + patch)
    if key is None or not all(isinstance(p, dict) for p in patch):
        return copy.deepcopy(patch)
    out = [copy.deepcopy(o) for o in orig_list]
    for p in patch:
        directive = p.get("$patch")
        kv = p.get(key)
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == kv), None)
        if directive == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_strip_directives(p))
        else:
            out[idx] = _smp_map(out[idx], p)
    return out


def _strip_directives(v: Any) -> Any:
    if isinstance(v, dict):
        return {
            k: _strip_directives(x)
            for k, x in v.items()
            if not k.startswith("$") and not k.startswith("$setElementOrder/")
        }
    if isinstance(v, list):
        return [_strip_directives(x) for x in v]
    return copy.deepcopy(v)


def _smp_map(orig: Any, patch: dict[str, Any]) -> Any:
    if patch.get("$patch") == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(orig) if isinstance(orig, dict) else {}
    for k, v in patch.items():
        if k.startswith("$"):
            continue  # $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = _smp_map(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            out[k] = _smp_list(k, out.get(k), v)
        else:
            out[k] = v
    for k, v in patch.items():
        if k.startswith("$deleteFromPrimitiveList/") and isinstance(v, list):
            field = k.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [x for x in out[field] if x not in v]
    return out


def strategic_merge_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    result = _smp_map(target, patch)
    return result if isinstance(result, dict) else {}


def apply_patch(target: dict[str, Any] | None, applied: Any) -> dict[str, Any]:
    if not isinstance(applied, dict):
        raise bad_request("apply patch must be an object")
    if target is None:
        return copy.deepcopy(applied)
    merged = json_merge_patch(target, applied)
    return merged if isinstance(merged, dict) else {}
