"""The built-in resources the embedded server serves, as one data table.

Every kind kube-apiserver 1.32 serves without controllers. What the type
definitions carry (the kind's fields, descriptions, list types, which kinds
exist in a group/version) comes from ``definitions.py``; this table adds only
what they do not carry, as kube-apiserver's discovery shows it:

- the resource name (plural), scope, short names and categories;
- subresources (``status``, ``scale``, ``finalize``, ``token``, ``eviction``) and verbs
  (the review kinds are create-only virtual resources);
- the name rule the kind's strategy validates ``metadata.name`` with
  (DNS-1123 subdomain for most; label for namespaces; DNS-1035 for services;
  path segment for RBAC, persistent volumes, HPAs and API services);
- printer columns for ``kubectl get`` (``table.py`` renders them): each a
  ``(name, template, type, priority)`` where the template interpolates
  ``{<jsonpath>|<default>}`` fields, or names a computed cell (``@age``,
  ``@containers`` ...).

A table entry whose kind is missing from the definitions is a bug (a test
checks every entry), not something served without a schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pycontroller.testing.apiserver.resource_types import ALL_VERBS, ResourceType

__all__ = [
    "BUILTIN_KINDS",
    "RETURN_DELETED_OBJECT",
    "Column",
    "KindSpec",
    "builtin_types",
    "returns_deleted_object",
]

Column = tuple[str, str, str, int]  # name, template, type, priority
CREATE_ONLY: tuple[str, ...] = ("create",)

_AGE: Column = ("Age", "@age", "string", 0)
_CREATED: Column = ("Created At", "@created", "date", 0)
_CONTAINERS: list[Column] = [
    ("Containers", "@containers", "string", 1),
    ("Images", "@images", "string", 1),
]
_SELECTOR: Column = ("Selector", "@selector", "string", 1)


@dataclass(frozen=True)
class KindSpec:
    """One row of the table (see the module docstring)."""

    group_version: str
    plural: str
    kind: str
    namespaced: bool = True
    short: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    name_rule: str = "subdomain"
    columns: tuple[Column, ...] | None = None  # None: the kind's own (table.py) or Age
    stored_as: tuple[str, str, str] | None = None

    @property
    def group(self) -> str:
        return self.group_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.group_version.rpartition("/")[2]


def _k(gv: str, plural: str, kind: str, **kw: Any) -> KindSpec:
    cols = kw.pop("columns", None)
    return KindSpec(gv, plural, kind, columns=tuple(cols) if cols is not None else None, **kw)


_ALL = ("all",)
_EXT = ("api-extensions",)
_S = ("status",)
_SS = ("status", "scale")

BUILTIN_KINDS: tuple[KindSpec, ...] = (
    # --- core/v1 ---------------------------------------------------------------
    _k("v1", "namespaces", "Namespace", namespaced=False, short=("ns",),
       subresources=("status", "finalize"), name_rule="label"),
    _k("v1", "pods", "Pod", short=("po",), categories=_ALL, subresources=("status", "eviction")),
    _k("v1", "services", "Service", short=("svc",), categories=_ALL, subresources=_S,
       name_rule="dns1035"),
    _k("v1", "configmaps", "ConfigMap", short=("cm",)),
    _k("v1", "secrets", "Secret"),
    _k("v1", "serviceaccounts", "ServiceAccount", short=("sa",), subresources=("token",)),
    _k("v1", "events", "Event", short=("ev",)),
    _k("v1", "nodes", "Node", namespaced=False, short=("no",), subresources=_S, columns=[
        ("Status", "@node_status", "string", 0), ("Roles", "@node_roles", "string", 0), _AGE,
        ("Version", "{.status.nodeInfo.kubeletVersion|}", "string", 0),
        ("Internal-IP", "@node_internal_ip", "string", 1),
        ("External-IP", "@node_external_ip", "string", 1),
        ("OS-Image", "{.status.nodeInfo.osImage|<unknown>}", "string", 1),
        ("Kernel-Version", "{.status.nodeInfo.kernelVersion|<unknown>}", "string", 1),
        ("Container-Runtime", "{.status.nodeInfo.containerRuntimeVersion|<unknown>}", "string",
         1),
    ]),
    _k("v1", "replicationcontrollers", "ReplicationController", short=("rc",),
       categories=_ALL, subresources=_SS, columns=[
        ("Desired", "{.spec.replicas|0}", "integer", 0),
        ("Current", "{.status.replicas|0}", "integer", 0),
        ("Ready", "{.status.readyReplicas|0}", "integer", 0), _AGE, *_CONTAINERS, _SELECTOR,
    ]),
    _k("v1", "endpoints", "Endpoints", short=("ep",), columns=[
        ("Endpoints", "@endpoints", "string", 0), _AGE,
    ]),
    _k("v1", "persistentvolumes", "PersistentVolume", namespaced=False, short=("pv",),
       subresources=_S, name_rule="path", columns=[
        ("Capacity", "{.spec.capacity.storage|}", "string", 0),
        ("Access Modes", "@access_modes", "string", 0),
        ("Reclaim Policy", "{.spec.persistentVolumeReclaimPolicy|}", "string", 0),
        ("Status", "{.status.phase|}", "string", 0),
        ("Claim", "@pv_claim", "string", 0),
        ("StorageClass", "{.spec.storageClassName|}", "string", 0),
        ("VolumeAttributesClass", "{.spec.volumeAttributesClassName|<unset>}", "string", 0),
        ("Reason", "{.status.reason|}", "string", 0), _AGE,
        ("VolumeMode", "{.spec.volumeMode|}", "string", 1),
    ]),
    _k("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short=("pvc",),
       subresources=_S, columns=[
        ("Status", "@pvc_status", "string", 0),
        ("Volume", "{.spec.volumeName|}", "string", 0),
        ("Capacity", "{.status.capacity.storage|}", "string", 0),
        ("Access Modes", "@pvc_access_modes", "string", 0),
        ("StorageClass", "{.spec.storageClassName|}", "string", 0),
        ("VolumeAttributesClass", "{.spec.volumeAttributesClassName|<unset>}", "string", 0),
        _AGE, ("VolumeMode", "{.spec.volumeMode|}", "string", 1),
    ]),
    _k("v1", "limitranges", "LimitRange", short=("limits",), columns=[_CREATED]),
    _k("v1", "resourcequotas", "ResourceQuota", short=("quota",), subresources=_S, columns=[
        _AGE, ("Request", "@quota_request", "string", 0),
        ("Limit", "@quota_limit", "string", 0),
    ]),
    _k("v1", "podtemplates", "PodTemplate", columns=[
        ("Containers", "@template_containers", "string", 0),
        ("Images", "@template_images", "string", 0),
        ("Pod Labels", "@template_labels", "string", 0),
    ]),
    # --- apps/v1 ---------------------------------------------------------------
    _k("apps/v1", "deployments", "Deployment", short=("deploy",), categories=_ALL,
       subresources=_SS),
    _k("apps/v1", "replicasets", "ReplicaSet", short=("rs",), categories=_ALL,
       subresources=_SS, columns=[
        ("Desired", "{.spec.replicas|0}", "integer", 0),
        ("Current", "{.status.replicas|0}", "integer", 0),
        ("Ready", "{.status.readyReplicas|0}", "integer", 0), _AGE, *_CONTAINERS, _SELECTOR,
    ]),
    _k("apps/v1", "statefulsets", "StatefulSet", short=("sts",), categories=_ALL,
       subresources=_SS, columns=[
        ("Ready", "{.status.readyReplicas|0}/{.spec.replicas|0}", "string", 0), _AGE,
        *_CONTAINERS,
    ]),
    _k("apps/v1", "daemonsets", "DaemonSet", short=("ds",), categories=_ALL, subresources=_S,
       columns=[
        ("Desired", "{.status.desiredNumberScheduled|0}", "integer", 0),
        ("Current", "{.status.currentNumberScheduled|0}", "integer", 0),
        ("Ready", "{.status.numberReady|0}", "integer", 0),
        ("Up-to-date", "{.status.updatedNumberScheduled|0}", "integer", 0),
        ("Available", "{.status.numberAvailable|0}", "integer", 0),
        ("Node Selector", "@node_selector", "string", 0), _AGE, *_CONTAINERS, _SELECTOR,
    ]),
    _k("apps/v1", "controllerrevisions", "ControllerRevision", columns=[
        ("Controller", "@controller_ref", "string", 0),
        ("Revision", "{.revision|0}", "integer", 0), _AGE,
    ]),
    # --- batch/v1 --------------------------------------------------------------
    _k("batch/v1", "jobs", "Job", categories=_ALL, subresources=_S, columns=[
        ("Status", "@job_status", "string", 0),
        ("Completions", "@job_completions", "string", 0),
        ("Duration", "@job_duration", "string", 0), _AGE, *_CONTAINERS, _SELECTOR,
    ]),
    _k("batch/v1", "cronjobs", "CronJob", short=("cj",), categories=_ALL, subresources=_S,
       columns=[
        ("Schedule", "{.spec.schedule|}", "string", 0),
        ("Timezone", "{.spec.timeZone|<none>}", "string", 0),
        ("Suspend", "{.spec.suspend|False}", "boolean", 0),
        ("Active", "@cronjob_active", "integer", 0),
        ("Last Schedule", "@cronjob_last_schedule", "string", 0), _AGE,
        ("Containers", "@cronjob_containers", "string", 1),
        ("Images", "@cronjob_images", "string", 1),
        ("Selector", "@cronjob_selector", "string", 1),
    ]),
    # --- networking.k8s.io/v1 --------------------------------------------------
    _k("networking.k8s.io/v1", "ingresses", "Ingress", short=("ing",), subresources=_S,
       columns=[
        ("Class", "{.spec.ingressClassName|<none>}", "string", 0),
        ("Hosts", "@ingress_hosts", "string", 0),
        ("Address", "@ingress_address", "string", 0),
        ("Ports", "@ingress_ports", "string", 0), _AGE,
    ]),
    _k("networking.k8s.io/v1", "ingressclasses", "IngressClass", namespaced=False, columns=[
        ("Controller", "{.spec.controller|}", "string", 0),
        ("Parameters", "@ingressclass_parameters", "string", 0), _AGE,
    ]),
    _k("networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", short=("netpol",),
       columns=[("Pod-Selector", "@pod_selector", "string", 0), _AGE]),
    # --- policy/v1 -------------------------------------------------------------
    _k("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",),
       subresources=_S, columns=[
        ("Min Available", "{.spec.minAvailable|N/A}", "string", 0),
        ("Max Unavailable", "{.spec.maxUnavailable|N/A}", "string", 0),
        ("Allowed Disruptions", "{.status.disruptionsAllowed|0}", "integer", 0), _AGE,
    ]),
    # --- discovery.k8s.io/v1 ---------------------------------------------------
    _k("discovery.k8s.io/v1", "endpointslices", "EndpointSlice", columns=[
        ("AddressType", "{.addressType|}", "string", 0),
        ("Ports", "@slice_ports", "string", 0),
        ("Endpoints", "@slice_endpoints", "string", 0), _AGE,
    ]),
    # --- autoscaling/v2 --------------------------------------------------------
    _k("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
       short=("hpa",), categories=_ALL, subresources=_S, name_rule="path", columns=[
        ("Reference", "{.spec.scaleTargetRef.kind|}/{.spec.scaleTargetRef.name|}", "string",
         0),
        ("Targets", "@hpa_targets", "string", 0),
        ("MinPods", "{.spec.minReplicas|1}", "string", 0),
        ("MaxPods", "{.spec.maxReplicas|0}", "integer", 0),
        ("Replicas", "{.status.currentReplicas|0}", "integer", 0), _AGE,
    ]),
    # Served at v1 too, stored as v2 (registry/hpa.py converts).
    _k("autoscaling/v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
       short=("hpa",), categories=_ALL, subresources=_S, name_rule="path",
       stored_as=("autoscaling", "v2", "horizontalpodautoscalers"), columns=[
        ("Reference", "{.spec.scaleTargetRef.kind|}/{.spec.scaleTargetRef.name|}", "string",
         0),
        ("Targets", "@hpa_targets", "string", 0),
        ("MinPods", "{.spec.minReplicas|1}", "string", 0),
        ("MaxPods", "{.spec.maxReplicas|0}", "integer", 0),
        ("Replicas", "{.status.currentReplicas|0}", "integer", 0), _AGE,
    ]),
    # --- storage.k8s.io/v1 -----------------------------------------------------
    _k("storage.k8s.io/v1", "storageclasses", "StorageClass", namespaced=False, short=("sc",),
       columns=[
        ("Provisioner", "{.provisioner|}", "string", 0),
        ("ReclaimPolicy", "{.reclaimPolicy|Delete}", "string", 0),
        ("VolumeBindingMode", "{.volumeBindingMode|Immediate}", "string", 0),
        ("AllowVolumeExpansion", "{.allowVolumeExpansion|false}", "string", 0), _AGE,
    ]),
    _k("storage.k8s.io/v1", "csidrivers", "CSIDriver", namespaced=False),
    _k("storage.k8s.io/v1", "csinodes", "CSINode", namespaced=False),
    _k("storage.k8s.io/v1", "csistoragecapacities", "CSIStorageCapacity"),
    _k("storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", namespaced=False,
       subresources=_S),
    # --- scheduling, node, coordination, certificates ---------------------------
    _k("scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", namespaced=False,
       short=("pc",), columns=[
        ("Value", "{.value|0}", "integer", 0),
        ("Global-Default", "{.globalDefault|false}", "boolean", 0), _AGE,
        ("PreemptionPolicy", "{.preemptionPolicy|}", "string", 0),
    ]),
    _k("node.k8s.io/v1", "runtimeclasses", "RuntimeClass", namespaced=False, columns=[
        ("Handler", "{.handler|}", "string", 0), _AGE,
    ]),
    _k("coordination.k8s.io/v1", "leases", "Lease"),
    _k("certificates.k8s.io/v1", "certificatesigningrequests", "CertificateSigningRequest",
       namespaced=False, short=("csr",), subresources=("status", "approval")),
    # --- admission and flow control (stored, never enforced) ---------------------
    _k("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations",
       "MutatingWebhookConfiguration", namespaced=False, categories=_EXT),
    _k("admissionregistration.k8s.io/v1", "validatingwebhookconfigurations",
       "ValidatingWebhookConfiguration", namespaced=False, categories=_EXT),
    _k("admissionregistration.k8s.io/v1", "validatingadmissionpolicies",
       "ValidatingAdmissionPolicy", namespaced=False, categories=_EXT, subresources=_S),
    _k("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings",
       "ValidatingAdmissionPolicyBinding", namespaced=False, categories=_EXT),
    _k("flowcontrol.apiserver.k8s.io/v1", "flowschemas", "FlowSchema", namespaced=False,
       subresources=_S),
    _k("flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations",
       "PriorityLevelConfiguration", namespaced=False, subresources=_S),
    # --- events.k8s.io, apiextensions, apiregistration --------------------------
    _k("events.k8s.io/v1", "events", "Event", short=("ev",), stored_as=("", "v1", "events")),
    _k("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition",
       namespaced=False, short=("crd", "crds"), categories=_EXT, subresources=_S),
    _k("apiregistration.k8s.io/v1", "apiservices", "APIService", namespaced=False,
       categories=_EXT, subresources=_S, name_rule="path", columns=[
        ("Service", "@apiservice_service", "string", 0),
        ("Available", "@apiservice_available", "string", 0), _AGE,
    ]),
    # --- rbac.authorization.k8s.io/v1 -----------------------------------------
    _k("rbac.authorization.k8s.io/v1", "roles", "Role", name_rule="path"),
    _k("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", namespaced=False,
       name_rule="path"),
    _k("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", name_rule="path"),
    _k("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding",
       namespaced=False, name_rule="path"),
    # --- create-only reviews (reviews.py) --------------------------------------
    _k("authorization.k8s.io/v1", "localsubjectaccessreviews", "LocalSubjectAccessReview",
       verbs=CREATE_ONLY),
    _k("authorization.k8s.io/v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
       namespaced=False, verbs=CREATE_ONLY),
    _k("authorization.k8s.io/v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
       namespaced=False, verbs=CREATE_ONLY),
    _k("authorization.k8s.io/v1", "subjectaccessreviews", "SubjectAccessReview",
       namespaced=False, verbs=CREATE_ONLY),
    _k("authentication.k8s.io/v1", "selfsubjectreviews", "SelfSubjectReview",
       namespaced=False, verbs=CREATE_ONLY),
    _k("authentication.k8s.io/v1", "tokenreviews", "TokenReview", namespaced=False,
       verbs=CREATE_ONLY),
)  # fmt: skip


# The built-in stores that set ``ReturnDeletedObject: true`` (kubernetes 1.32,
# ``pkg/registry/<group>/<resource>/storage/storage.go``), as (group, plural):
# ``Store.finalizeDelete`` answers a DELETE that removed the object at once
# with the object for these, with a ``Status`` naming it for every other store
# (apiextensions-apiserver's custom resource store included: its ``etcd.go``
# does not set the flag). An object not removed at once is answered as marked,
# whatever the store.
RETURN_DELETED_OBJECT: frozenset[tuple[str, str]] = frozenset({
    ("", "namespaces"),  # core/namespace/storage (and its REST's own Delete)
    ("", "pods"),  # core/pod/storage
    ("", "services"),  # core/service/storage
    ("", "serviceaccounts"),  # core/serviceaccount/storage
    ("", "persistentvolumes"),  # core/persistentvolume/storage
    ("", "persistentvolumeclaims"),  # core/persistentvolumeclaim/storage
    ("", "resourcequotas"),  # core/resourcequota/storage
    ("", "podtemplates"),  # core/podtemplate/storage
    ("storage.k8s.io", "storageclasses"),  # storage/storageclass/storage
    ("storage.k8s.io", "volumeattachments"),  # storage/volumeattachment/storage
    ("storage.k8s.io", "csidrivers"),  # storage/csidriver/storage
    ("storage.k8s.io", "csinodes"),  # storage/csinode/storage
    # Not the store's flag: the CRD REST's own Delete (apiextensions-apiserver
    # registry/customresourcedefinition/etcd.go) answers the CRD it marks with
    # its cleanup finalizer, and a later DELETE the still-finalized CRD; ours
    # is removed at once but answered as kube answers that first DELETE.
    ("apiextensions.k8s.io", "customresourcedefinitions"),
})  # fmt: skip


def returns_deleted_object(rt: ResourceType) -> bool:
    """Whether a DELETE that removes an object of ``rt`` at once answers the
    object (else a ``Status``): see ``RETURN_DELETED_OBJECT``. The group is
    the request's (``qualifiedResourceFromContext``): events.k8s.io Events and
    autoscaling/v1 HPAs answer a Status as their stores do."""
    return not rt.is_crd and (rt.group, rt.plural) in RETURN_DELETED_OBJECT


def _resource_type(spec: KindSpec) -> ResourceType:
    extra: dict[str, Any] = {}
    if spec.stored_as:
        # (group, version, plural) of the type whose storage this one shares
        # (events.k8s.io/v1 events are core/v1 events, autoscaling/v1 HPAs are
        # stored as v2; see registry/conversion.py).
        extra["stored_as"] = spec.stored_as
    if spec.columns is not None:
        extra["columns"] = spec.columns
    extra["subresources"] = tuple(s for s in spec.subresources if s not in ("status", "scale"))
    if "scale" in spec.subresources:
        extra["builtin_scale"] = True
    if spec.verbs == CREATE_ONLY:
        extra["virtual"] = True
    return ResourceType(
        group=spec.group,
        version=spec.version,
        kind=spec.kind,
        plural=spec.plural,
        namespaced=spec.namespaced,
        singular=spec.kind.lower(),
        short_names=spec.short,
        categories=spec.categories,
        has_status="status" in spec.subresources,
        verbs=spec.verbs,
        name_rule=spec.name_rule,
        extra=extra,
    )


def builtin_types() -> list[ResourceType]:
    """A fresh ``ResourceType`` per row of ``BUILTIN_KINDS``."""
    return [_resource_type(s) for s in BUILTIN_KINDS]
