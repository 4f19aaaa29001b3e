"""The registry of served resource types (built-in and CRD-defined).

Thread-safe. ``generation`` increases on every change so that derived data
(discovery documents, OpenAPI) can be cached and invalidated cheaply.
Lookups are by ``(group, version, plural)``; ``by_kind`` serves clients that
only know the kind (owner references, apply).
"""

from __future__ import annotations

import threading

from pycontroller.testing.apiserver.resource_types import ResourceType

__all__ = ["Registry"]


class Registry:
    """Maps ``(group, version, plural)`` to ``ResourceType``; invariant: at most
    one entry per key, and ``_by_kind`` mirrors ``_types`` exactly."""

    def __init__(self, types: list[ResourceType] | None = None) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str, str], ResourceType] = {}
        self._generation = 0
        for rt in types or ():
            self.add(rt)

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def add(self, rt: ResourceType) -> None:
        """Add or replace the type served at ``(rt.group, rt.version, rt.plural)``."""
        with self._lock:
            old = self._types.get((rt.group, rt.version, rt.plural))
            if old is not None:
                self._by_kind.pop((old.group, old.version, old.kind), None)
            self._types[(rt.group, rt.version, rt.plural)] = rt
            self._by_kind[(rt.group, rt.version, rt.kind)] = rt
            self._generation += 1

    def remove(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            rt = self._types.pop((group, version, plural), None)
            if rt is not None:
                self._by_kind.pop((rt.group, rt.version, rt.kind), None)
                self._generation += 1
            return rt

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._types.get((group, version, plural))

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        with self._lock:
            return self._by_kind.get((group, version, kind))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())

    def for_crd(self, crd_name: str) -> list[ResourceType]:
        with self._lock:
            return [rt for rt in self._types.values() if rt.crd_name == crd_name]

    def versions_of(self, group: str, plural: str) -> list[ResourceType]:
        """Every served version of ``group``/``plural`` (they share storage)."""
        with self._lock:
            return [rt for (g, _v, p), rt in self._types.items() if g == group and p == plural]
