"""The Kubernetes type definitions of the pinned version (1.32).

Read once from the ``kubernetes-validate`` package, which ships the published
OpenAPI definitions of every Kubernetes release as JSON Schema (``$defs``,
``"type": ["string", "null"]``, ``$ref: "#/$defs/<name>"``). Discovery,
OpenAPI (``openapi_builtin.py``), defaulting and the built-in kinds table
(``kinds.py``) read them from here, so every part of the server describes the
same types.

Invariant: the returned mappings are shared and must not be mutated.
"""

from __future__ import annotations

import json
import logging
import threading
from importlib import resources
from typing import Any

__all__ = ["PINNED_MINOR", "REF_PREFIX", "by_gvk", "definitions", "ref_name"]

logger = logging.getLogger(__name__)

# The Kubernetes minor whose definitions describe built-in kinds (what
# /version reports).
PINNED_MINOR = 32
REF_PREFIX = "#/$defs/"

_lock = threading.Lock()
_defs: dict[str, Any] | None = None
_by_gvk: dict[tuple[str, str, str], str] = {}


def _definitions_file() -> Any:
    base = resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    name = f"v1.{PINNED_MINOR}.0-local"
    path = base.joinpath(name)
    if not path.is_dir():
        raise FileNotFoundError(f"kubernetes-validate ships no {name} schemas")
    return path.joinpath("_definitions.json")


def definitions() -> dict[str, Any]:
    """``definition name -> JSON Schema`` (empty when the package is missing)."""
    global _defs
    with _lock:
        if _defs is None:
            try:
                doc = json.loads(_definitions_file().read_text(encoding="utf-8"))
                defs: dict[str, Any] = doc.get("$defs") or doc.get("definitions") or {}
            except (ImportError, OSError, ValueError) as err:
                logger.warning("kubernetes-validate's definitions are unavailable: %s", err)
                defs = {}
            for name, node in defs.items():
                for gvk in node.get("x-kubernetes-group-version-kind") or ():
                    key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
                    _by_gvk.setdefault(key, name)
            _defs = defs
        return _defs


def by_gvk(group: str, version: str, kind: str) -> str | None:
    """The definition name of a kind (``io.k8s.api.apps.v1.Deployment``)."""
    definitions()
    return _by_gvk.get((group, version, kind))


def ref_name(node: dict[str, Any]) -> str | None:
    """The definition a schema node refers to, if it is a ``$ref``."""
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return None
    return ref[len(REF_PREFIX) :] if ref.startswith(REF_PREFIX) else ref
