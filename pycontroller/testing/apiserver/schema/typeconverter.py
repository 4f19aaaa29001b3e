"""The schema server-side apply types each kind by (kube's ``TypeConverter``).

- Custom resources: the CRD version's ``openAPIV3Schema``, with ``metadata``
  typed as ``ObjectMeta`` (as kube does: a CRD's schema may not describe
  metadata beyond name and generateName), so ``finalizers`` merge as a set and
  ``ownerReferences`` by ``uid``.
- Built-in kinds: their definitions of the pinned Kubernetes version
  (``definitions.py``, the same ones the rest of the server reads). Their list
  types, map keys and patch merge keys are kube's own: a Deployment's
  containers merge by ``name``, their ports by ``containerPort`` and
  ``protocol``. Without the definitions, built-in objects are typed by
  deduction alone (lists atomic), and a warning is logged once.

Schemas are built once per kind (and per CRD schema object) and shared.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import definitions
from pycontroller.testing.apiserver.schema.openapi_builtin import OBJECT_META, common_schemas
from pycontroller.testing.apiserver.schema.structured_merge import Schema

__all__ = ["schema_for"]

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_builtin: dict[tuple[str, str, str], Schema] | None = None
_crd_cache: dict[int, tuple[Any, Schema]] = {}


def _load_builtin() -> dict[tuple[str, str, str], Schema]:
    defs = definitions.definitions()
    if not defs:
        logger.warning("no built-in definitions: server-side apply merges built-in lists as atomic")
        return {}
    out: dict[tuple[str, str, str], Schema] = {}
    for node in defs.values():
        for gvk in node.get("x-kubernetes-group-version-kind") or ():
            key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
            out[key] = Schema(
                node, defs, patch_strategy_lists=True, key_defaults={"protocol": "TCP"}
            )
    return out


def schema_for(rt: ResourceType) -> Schema:
    """How objects of ``rt`` are typed for field management."""
    global _builtin
    if rt.schema is not None:
        with _lock:
            hit = _crd_cache.get(id(rt.schema))
            if hit is not None and hit[0] is rt.schema:
                return hit[1]
            root = dict(rt.schema)
            props = dict(root.get("properties") or {})
            props["metadata"] = common_schemas()[OBJECT_META]
            root["properties"] = props
            schema = Schema(root)
            if len(_crd_cache) > 256:
                _crd_cache.clear()
            _crd_cache[id(rt.schema)] = (rt.schema, schema)
            return schema
    with _lock:
        if _builtin is None:
            _builtin = _load_builtin()
        found = _builtin.get((rt.group, rt.version, rt.kind))
    if found is not None:
        return found
    # A built-in kind the package does not describe: metadata typed, rest deduced.
    return Schema({"type": "object", "properties": {"metadata": common_schemas()[OBJECT_META]}})
