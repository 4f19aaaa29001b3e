"""What kube 1.32's pod strategy does to a new pod beyond its status
(``podStrategy.PrepareForCreate`` in ``pkg/registry/core/pod/strategy.go``),
before it is validated:

* ``mutatePodAffinity`` (MatchLabelKeysInPodAffinity, beta and on): each
  pod (anti-)affinity term with a ``labelSelector`` gets ``key In (value)``
  for each of its ``matchLabelKeys`` and ``key NotIn (value)`` for each of
  its ``mismatchLabelKeys`` that the pod has as a label;
* ``applySchedulingGatedCondition``: a pod with ``schedulingGates`` starts
  with the ``PodScheduled=False`` condition, reason ``SchedulingGated``;
* ``applyAppArmorVersionSkew``: each container's AppArmor profile (its own,
  or the pod's) is mirrored into the deprecated
  ``container.apparmor.security.beta.kubernetes.io/<name>`` annotation, and
  such an annotation without a field becomes the container's field (unless
  it names the pod's profile or is not a valid profile).

Before those, and on every update too, the pod strategy and every strategy
with a pod template (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
CronJob's job template, ReplicationController, PodTemplate) drop, after
decoding's defaults, the fields of features whose gate is off by default in
1.32, unless the old object (on update) already used them
(``dropDisabledFields`` via ``DropDisabledPodFields`` /
``DropDisabledTemplateFields`` in ``pkg/api/pod/util.go``):

=============================  =============================================
gate (off in 1.32)             dropped
=============================  =============================================
UserNamespacesSupport          ``hostUsers``
SupplementalGroupsPolicy       ``securityContext.supplementalGroupsPolicy``;
                               container statuses' ``user``
SELinuxChangePolicy            ``securityContext.seLinuxChangePolicy``
PodLevelResources              ``spec.resources``
ProcMountType                  containers' ``procMount`` (forced to
                               ``Default``, not removed)
DynamicResourceAllocation      ``resourceClaims``, containers'
                               ``resources.claims``;
                               ``status.resourceClaimStatuses``
ClusterTrustBundleProjection   projected volumes' ``clusterTrustBundle``
ImageVolume                    ``image`` volumes and their mounts
InPlacePodVerticalScaling      containers' ``resizePolicy``; container
                               statuses' ``resources``, ``status.resize``;
                               with InPlacePodVerticalScalingAllocatedStatus,
                               container statuses' ``allocatedResources``
ResourceHealthStatus           container statuses' ``allocatedResourcesStatus``
=============================  =============================================

The other gates these functions consult are on in 1.32 (SidecarContainers,
RecursiveReadOnlyMounts, PodLifecycleSleepAction, MatchLabelKeysInPodAffinity,
MatchLabelKeysInPodTopologySpread, NodeInclusionPolicyInPodTopologySpread;
AppArmor and PodHostIPs are GA), so they drop nothing.
"""

from __future__ import annotations

import time
from typing import Any

from pycontroller._time import format_rfc3339

__all__ = [
    "TEMPLATE_PATHS",
    "drop_disabled_fields",
    "drop_disabled_kind_fields",
    "prepare_for_create",
]

_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_LOCALHOST_PREFIX = "localhost/"


def prepare_for_create(pod: dict[str, Any]) -> None:
    """Apply the strategy's create-time changes to ``pod`` in place."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    _mutate_pod_affinity(pod, spec)
    _scheduling_gated_condition(pod, spec)
    _app_armor_version_skew(pod, spec)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _terms(affinity: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for weighted in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        term = _dict(weighted).get("podAffinityTerm") if isinstance(weighted, dict) else None
        if isinstance(term, dict):
            out.append(term)
    out.extend(
        t
        for t in affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        if isinstance(t, dict)
    )
    return out


def _mutate_pod_affinity(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    labels = _dict(_dict(pod.get("metadata")).get("labels"))
    affinity = _dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        for term in _terms(_dict(affinity.get(kind))):
            selector = term.get("labelSelector")
            # A nil selector matches nothing: kube leaves it nil.
            if not isinstance(selector, dict):
                continue
            for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
                keys = term.get(field)
                for key in keys if isinstance(keys, list) else []:
                    if isinstance(key, str) and key in labels:
                        exprs = selector.get("matchExpressions")
                        if not isinstance(exprs, list):
                            exprs = selector["matchExpressions"] = []
                        exprs.append({"key": key, "operator": operator, "values": [labels[key]]})


def _scheduling_gated_condition(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    if not spec.get("schedulingGates"):
        return
    status = pod.setdefault("status", {})
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    if any(_dict(c).get("type") == "PodScheduled" for c in conditions):
        return
    # podutil.UpdatePodCondition stamps lastTransitionTime.
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": format_rfc3339(time.time()),
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    )


def _annotation_for(profile: dict[str, Any]) -> str:
    kind = profile.get("type")
    if kind == "Unconfined":
        return "unconfined"
    if kind == "RuntimeDefault":
        return "runtime/default"
    local = profile.get("localhostProfile")
    if kind == "Localhost" and isinstance(local, str):
        return _LOCALHOST_PREFIX + local
    return ""


def _field_for(annotation: str) -> dict[str, Any] | None:
    if annotation == "unconfined":
        return {"type": "Unconfined"}
    if annotation == "runtime/default":
        return {"type": "RuntimeDefault"}
    if annotation.startswith(_LOCALHOST_PREFIX) and annotation != _LOCALHOST_PREFIX:
        local = annotation[len(_LOCALHOST_PREFIX) :]
        # ValidateAppArmorProfileField: no surrounding whitespace, at most 4095 bytes.
        if local == local.strip() and len(local.encode()) <= 4095:
            return {"type": "Localhost", "localhostProfile": local}
    return None


def _app_armor_version_skew(pod: dict[str, Any], spec: dict[str, Any]) -> None:
    if _dict(spec.get("os")).get("name") == "windows":
        return
    pod_profile = _dict(spec.get("securityContext")).get("appArmorProfile")
    meta = pod.setdefault("metadata", {})
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for ctr in spec.get(key) or []:
            if not isinstance(ctr, dict) or not isinstance(ctr.get("name"), str):
                continue
            name = _APPARMOR_PREFIX + ctr["name"]
            annotations = _dict(meta.get("annotations"))
            profile = _dict(ctr.get("securityContext")).get("appArmorProfile")
            if name not in annotations:
                source = profile if isinstance(profile, dict) else pod_profile
                value = _annotation_for(source) if isinstance(source, dict) else ""
                if value:
                    if not isinstance(meta.get("annotations"), dict):
                        meta["annotations"] = {}
                    meta["annotations"][name] = value
            elif profile is None:
                field = _field_for(str(annotations[name]))
                if field is not None and field != pod_profile:
                    sc = ctr.get("securityContext")
                    if not isinstance(sc, dict):
                        sc = ctr["securityContext"] = {}
                    sc["appArmorProfile"] = field


# --- dropDisabledFields ---------------------------------------------------------

# Where each kind with a pod template keeps it (the strategies calling
# DropDisabledTemplateFields); a Pod's own spec is DropDisabledPodFields'.
TEMPLATE_PATHS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("spec", "template"),
    ("apps", "ReplicaSet"): ("spec", "template"),
    ("apps", "StatefulSet"): ("spec", "template"),
    ("apps", "DaemonSet"): ("spec", "template"),
    ("batch", "Job"): ("spec", "template"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template"),
    ("", "ReplicationController"): ("spec", "template"),
    ("", "PodTemplate"): ("template",),
}

_CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")
_STATUS_KINDS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def _at(obj: Any, path: tuple[str, ...]) -> dict[str, Any] | None:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else None


def drop_disabled_kind_fields(
    group_kind: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None
) -> None:
    """The strategy's drop for ``obj`` (``old`` is the stored object on
    update): ``DropDisabledPodFields`` for a Pod, ``DropDisabledTemplateFields``
    for a kind with a pod template, nothing for any other kind."""
    if group_kind == ("", "Pod"):
        _drop_disabled_pod_fields(obj, old)
        return
    path = TEMPLATE_PATHS.get(group_kind)
    template = _at(obj, path) if path else None
    if path is None or template is None:
        return
    spec = template.get("spec")
    if not isinstance(spec, dict):
        return
    old_template = _at(old, path)
    drop_disabled_fields(
        spec,
        _dict(_dict(template.get("metadata")).get("annotations")),
        _at(old_template, ("spec",)),
        _dict(_dict(_dict(old_template).get("metadata")).get("annotations")),
    )


def _drop_disabled_pod_fields(pod: dict[str, Any], old: dict[str, Any] | None) -> None:
    """``DropDisabledPodFields``: the spec's fields, then the status's."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    old_spec = _at(old, ("spec",))
    drop_disabled_fields(
        spec,
        _dict(_dict(pod.get("metadata")).get("annotations")),
        old_spec,
        _dict(_dict(_dict(old).get("metadata")).get("annotations")),
    )
    status = pod.get("status")
    if isinstance(status, dict):
        _drop_disabled_pod_status_fields(status, old_spec)


def _containers(
    spec: dict[str, Any] | None, kinds: tuple[str, ...] = _CONTAINER_KINDS
) -> list[Any]:
    """``VisitContainers``: the containers of ``kinds`` that are objects."""
    if spec is None:
        return []
    return [c for k in kinds for c in spec.get(k) or [] if isinstance(c, dict)]


def _security_context(spec: dict[str, Any] | None) -> dict[str, Any]:
    return _dict(_dict(spec).get("securityContext"))


def _projections(spec: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [
        source
        for volume in _dict(spec).get("volumes") or []
        for source in _dict(_dict(volume).get("projected")).get("sources") or []
        if isinstance(source, dict)
    ]


def _proc_mount_in_use(spec: dict[str, Any] | None) -> bool:
    """``procMountInUse``: some container's procMount is not ``Default``."""
    return any(
        _dict(c.get("securityContext")).get("procMount") not in (None, "Default")
        for c in _containers(spec)
    )


def _pod_level_resources_in_use(spec: dict[str, Any] | None) -> bool:
    """``podLevelResourcesInUse``: non-empty pod-level requests or limits."""
    resources = _dict(_dict(spec).get("resources"))
    return bool(resources.get("requests") or resources.get("limits"))


def _resize_policy_in_use(spec: dict[str, Any] | None) -> bool:
    """``inPlacePodVerticalScalingInUse`` (1.32: regular containers only)."""
    return any(c.get("resizePolicy") for c in _containers(spec, ("containers",)))


def _image_volumes_in_use(spec: dict[str, Any] | None) -> bool:
    """``imageVolumesInUse``."""
    return any(_dict(v).get("image") is not None for v in _dict(spec).get("volumes") or [])


def drop_disabled_fields(
    spec: dict[str, Any],
    annotations: dict[str, Any],
    old_spec: dict[str, Any] | None,
    old_annotations: dict[str, Any],
) -> None:
    """``dropDisabledFields`` with kube 1.32's default gates, on a pod spec
    (a Pod's or a template's) in place. ``old_spec`` is the stored object's
    on update (None on create): a field it already uses is kept. The
    annotations are the function's signature; in 1.32 nothing is dropped
    from them (the AppArmor gate is GA)."""
    del annotations, old_annotations
    # UserNamespacesSupport: v1's spec.hostUsers (the internal type's
    # securityContext.hostUsers), kept when the old spec set it.
    if _dict(old_spec).get("hostUsers") is None:
        spec.pop("hostUsers", None)
    # SupplementalGroupsPolicy, SELinuxChangePolicy (dropSELinuxChangePolicy).
    sc = _dict(spec.get("securityContext"))
    old_sc = _security_context(old_spec)
    for field in ("supplementalGroupsPolicy", "seLinuxChangePolicy"):
        if old_sc.get(field) is None:
            sc.pop(field, None)
    # PodLevelResources (dropDisabledPodLevelResources).
    if not _pod_level_resources_in_use(old_spec):
        spec.pop("resources", None)
    # ProcMountType (dropDisabledProcMountField): a set procMount is forced to
    # Default, not removed.
    if not _proc_mount_in_use(old_spec):
        for c in _containers(spec):
            csc = c.get("securityContext")
            if isinstance(csc, dict) and csc.get("procMount") is not None:
                csc["procMount"] = "Default"
    # DynamicResourceAllocation (dropDisabledDynamicResourceAllocationFields).
    if not _dict(old_spec).get("resourceClaims"):
        spec.pop("resourceClaims", None)
        for c in _containers(spec):
            if isinstance(c.get("resources"), dict):
                c["resources"].pop("claims", None)
    # ClusterTrustBundleProjection (dropDisabledClusterTrustBundleProjection).
    if not any(s.get("clusterTrustBundle") is not None for s in _projections(old_spec)):
        for source in _projections(spec):
            source.pop("clusterTrustBundle", None)
    # InPlacePodVerticalScaling: every container's resizePolicy.
    if not _resize_policy_in_use(old_spec):
        for c in _containers(spec):
            c.pop("resizePolicy", None)
    # ImageVolume (dropImageVolumes): image volumes and the mounts naming them.
    if not _image_volumes_in_use(old_spec):
        _drop_image_volumes(spec)


def _drop_image_volumes(spec: dict[str, Any]) -> None:
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        return
    names = {_dict(v).get("name") for v in volumes if _dict(v).get("image") is not None}
    if not names:
        return
    kept = [v for v in volumes if _dict(v).get("image") is None]
    _set_list(spec, "volumes", kept)
    for c in _containers(spec):
        mounts = c.get("volumeMounts")
        if isinstance(mounts, list):
            _set_list(c, "volumeMounts", [m for m in mounts if _dict(m).get("name") not in names])


def _set_list(obj: dict[str, Any], key: str, items: list[Any]) -> None:
    """Go's filtered slice: nil (omitted) once empty."""
    if items:
        obj[key] = items
    else:
        obj.pop(key, None)


def _drop_disabled_pod_status_fields(
    status: dict[str, Any], old_spec: dict[str, Any] | None
) -> None:
    """``dropDisabledPodStatusFields`` with kube 1.32's default gates."""
    statuses = [s for k in _STATUS_KINDS for s in status.get(k) or [] if isinstance(s, dict)]
    # InPlacePodVerticalScaling: resources and resize unless the old spec
    # resized; InPlacePodVerticalScalingAllocatedStatus (also off):
    # allocatedResources always; ResourceHealthStatus: allocatedResourcesStatus.
    resize_in_use = _resize_policy_in_use(old_spec)
    if not resize_in_use:
        status.pop("resize", None)
    for s in statuses:
        if not resize_in_use:
            s.pop("resources", None)
        s.pop("allocatedResources", None)
        s.pop("allocatedResourcesStatus", None)
        # SupplementalGroupsPolicy: the container user.
        if _security_context(old_spec).get("supplementalGroupsPolicy") is None:
            s.pop("user", None)
    # DynamicResourceAllocation.
    if not _dict(old_spec).get("resourceClaims"):
        status.pop("resourceClaimStatuses", None)
