"""What the embedded API server knows about one resource (group/version/plural).

A ``ResourceType`` describes a served resource, built-in or from a CRD. The
registry (``registry.py``) maps request paths to these; discovery, OpenAPI,
validation, Table conversion and storage all read from them. Instances are
immutable: a CRD update replaces its ``ResourceType``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False
    verbs: tuple[str, ...] = ALL_VERBS
    # openAPIV3Schema for CRD-backed resources (validation, pruning, defaults);
    # None for built-ins, which are not schema-validated.
    schema: dict[str, Any] | None = None
    # CRD additionalPrinterColumns (as in the CRD spec), used for as=Table.
    printer_columns: tuple[dict[str, Any], ...] = ()
    # Name of the CRD that defines this resource; None for built-ins.
    crd_name: str | None = None
    # Name validation rule for metadata.name: "subdomain" (DNS-1123 subdomain),
    # "label" (DNS-1123 label) or "path" (path segment name, e.g. for CRD objects).
    name_rule: str = "subdomain"
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def is_crd(self) -> bool:
        return self.crd_name is not None
