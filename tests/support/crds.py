"""CustomResourceDefinition manifests for tests: one builder instead of a
literal per test file."""

from __future__ import annotations

from typing import Any

PRESERVE_UNKNOWN: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd(
    plural: str,
    kind: str,
    group: str = "example.com",
    *,
    version: str = "v1",
    scope: str = "Namespaced",
    schema: dict[str, Any] | None = None,
    subresources: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``apiextensions.k8s.io/v1`` CRD serving one version, ``schema`` as
    its ``openAPIV3Schema`` (default: any object, unknown fields kept)."""
    served: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": PRESERVE_UNKNOWN if schema is None else schema},
    }
    if subresources is not None:
        served["subresources"] = subresources
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "kind": kind},
            "versions": [served],
        },
    }
