"""Small builders of built-in objects that several apiserver tests post."""

from __future__ import annotations

from typing import Any


def container(name: str = "c", **resources: dict[str, Any]) -> dict[str, Any]:
    """A container; ``resources`` are its ``requests`` / ``limits`` maps."""
    out: dict[str, Any] = {"name": name, "image": "nginx"}
    if resources:
        out["resources"] = resources
    return out


def pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": list(containers) or [container()], **spec},
    }


def claim(name: str, storage: str, storage_class: str = "") -> dict[str, Any]:
    """A ReadWriteOnce PersistentVolumeClaim asking for ``storage``."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": storage}},
        },
    }
