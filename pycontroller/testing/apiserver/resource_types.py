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

# The built-in stores whose update strategy answers ``AllowCreateOnUpdate()``
# true (kubernetes 1.32 ``pkg/registry/<group>/<resource>/strategy.go``): a PUT
# to a missing name creates the object (201). Every other built-in store and
# every custom resource (``customResourceStrategy``) answers false: 404.
CREATE_ON_UPDATE: frozenset[tuple[str, str]] = frozenset({
    ("", "endpoints"),  # endpointsStrategy
    ("", "events"),  # eventStrategy (events.k8s.io Events share its store)
    ("", "limitranges"),  # limitrangeStrategy
    ("", "services"),  # svcStrategy
    ("coordination.k8s.io", "leases"),  # leaseStrategy
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
})  # fmt: skip

# The built-in stores whose update strategy answers
# ``AllowUnconditionalUpdate()`` false (same files): a PUT without
# ``metadata.resourceVersion`` is 422 ("must be specified for an update")
# instead of overwriting the stored object. Custom resources too.
CONDITIONAL_UPDATE_ONLY: frozenset[tuple[str, str]] = frozenset({
    ("coordination.k8s.io", "leases"),  # leaseStrategy
    ("storage.k8s.io", "csidrivers"),  # csiDriverStrategy
    ("storage.k8s.io", "csinodes"),  # csiNodeStrategy
    ("storage.k8s.io", "csistoragecapacities"),  # csiStorageCapacityStrategy
    ("storage.k8s.io", "volumeattachments"),  # volumeAttachmentStrategy
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),  # apiextensions strategy
    ("apiregistration.k8s.io", "apiservices"),  # kube-aggregator apiServerStrategy
})  # fmt: skip


# Resources whose REST storage is not a registry Store (bindings, component
# statuses, the review kinds): nothing is stored, so discovery gives them no
# ``storageVersionHash`` and the quota controller ignores them.
NOT_STORED: frozenset[tuple[str, str]] = frozenset({
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
})  # fmt: skip

# The built-in stores with a status whose ``PrepareForCreate`` keeps a new
# object's status; every other one resets it (custom resources too). A
# kubelet registers its Node with its capacity and conditions.
STATUS_ON_CREATE: frozenset[tuple[str, str]] = frozenset({
    ("", "nodes"),  # nodeStrategy: "Nodes allow *all* fields, including status"
})  # fmt: skip


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

    @property
    def storage_group_resource(self) -> tuple[str, str]:
        """``(group, plural)`` of the store serving this type: the one whose
        storage it shares (``extra["stored_as"]``), else its own."""
        stored = self.extra.get("stored_as")
        return (stored[0], stored[2]) if stored else (self.group, self.plural)

    @property
    def allow_create_on_update(self) -> bool:
        """The store's ``UpdateStrategy.AllowCreateOnUpdate()`` (see
        ``CREATE_ON_UPDATE``)."""
        return not self.is_crd and self.storage_group_resource in CREATE_ON_UPDATE

    @property
    def resets_status_on_create(self) -> bool:
        """The strategy's ``PrepareForCreate`` drops a new object's status
        (see ``STATUS_ON_CREATE``)."""
        return self.has_status and (
            self.is_crd or self.storage_group_resource not in STATUS_ON_CREATE
        )

    @property
    def allow_unconditional_update(self) -> bool:
        """The store's ``UpdateStrategy.AllowUnconditionalUpdate()`` (see
        ``CONDITIONAL_UPDATE_ONLY``; false for every custom resource)."""
        return not self.is_crd and self.storage_group_resource not in CONDITIONAL_UPDATE_ONLY
