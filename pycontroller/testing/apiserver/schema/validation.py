"""Field validation of built-in kinds with kube's messages (the rules
controllers most often trip on), from ``pkg/apis/core/validation`` and
``pkg/apis/{apps,batch}/validation`` of Kubernetes 1.32:

- pods and every pod template: ``volumes`` (name required, a DNS-1123
  label, unique; exactly one volume source); ``containers`` required; each
  container's ``name`` (required, DNS-1123 label, unique) and ``image``
  (required); its ``volumeMounts`` (a volume of the pod, a ``mountPath``,
  unique);
  container ports (``containerPort`` required and 1-65535, ``hostPort``
  1-65535, port names IANA_SVC_NAME and unique, protocol TCP/UDP/SCTP);
- services: ``ports`` required (unless headless or ExternalName), port
  names required when several and DNS-1123 labels, ``port`` and
  ``nodePort`` 1-65535, ``nodePort`` forbidden on ClusterIP services,
  ``targetPort`` a valid number or name;
- apps/v1 ReplicaSets, StatefulSets and DaemonSets (Deployments in
  ``builtin.py``): selector required, matching the template's labels,
  immutable;
- Jobs: ``spec.selector``, ``spec.template``, ``completionMode``,
  ``podFailurePolicy``, ``backoffLimitPerIndex``, ``managedBy`` and
  ``successPolicy`` immutable; a Job suspended and never started may change
  its template's scheduling directives (node affinity, node selector,
  tolerations, scheduling gates) and labels and annotations, as kube's
  ``validatePodTemplateUpdate``; CronJob names at most 52 characters.

``causes(rt, obj, old)`` returns StatusCause dicts (reason, message, field).
An immutable struct's value is printed as ``core.PodTemplateSpec{...}``, not
Go's full ``%#v`` dump.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pycontroller.testing.apiserver.registry.names import validate_name
from pycontroller.testing.apiserver.resource_types import ResourceType

__all__ = ["as_int", "causes", "get_path", "port_name_errors"]

_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_SVC_NAME_RE = re.compile(r"^[-a-z0-9]+$")
_LETTER_RE = re.compile(r"[a-z]")


def _c(field: str, message: str, reason: str = "FieldValueInvalid") -> dict[str, Any]:
    return {"reason": reason, "message": message, "field": field}


def _required(field: str) -> dict[str, Any]:
    return _c(field, "Required value", "FieldValueRequired")


def _invalid(field: str, value: Any, msg: str) -> dict[str, Any]:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return _c(field, f"Invalid value: {shown}: {msg}")


def as_int(v: Any) -> int | None:
    """``v`` if it is a JSON integer (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def port_name_errors(name: str) -> list[str]:
    """``validation.IsValidPortName`` (IANA_SVC_NAME)."""
    errs = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not _SVC_NAME_RE.match(name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if not _LETTER_RE.search(name):
        errs.append("must contain at least one letter (a-z)")
    if name.startswith("-") or name.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _port_num(field: str, value: Any) -> list[dict[str, Any]]:
    n = as_int(value)
    if n is not None and not 1 <= n <= 65535:
        return [_invalid(field, n, _PORT_RANGE)]
    return []


def _protocol(field: str, value: Any) -> list[dict[str, Any]]:
    if not value:
        return [_required(field)]
    if value not in _PROTOCOLS:
        supported = ", ".join(f'"{p}"' for p in _PROTOCOLS)
        return [
            _c(
                field,
                f'Unsupported value: "{value}": supported values: {supported}',
                "FieldValueNotSupported",
            )
        ]
    return []


# validateVolumeSource's checks, in its order, with the field it names for
# an extra source ("downwarAPI" is kube's own spelling there).
_VOLUME_SOURCES = (
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
)


def _volumes(path: str, volumes: Any, names: set[str]) -> list[dict[str, Any]]:
    """``ValidateVolumes``: each volume's name (required, DNS-1123 label,
    unique) and exactly one source (``validateVolumeSource``); fills ``names``."""
    out: list[dict[str, Any]] = []
    for i, v in enumerate(volumes if isinstance(volumes, list) else []):
        if not isinstance(v, dict):
            continue
        vp = f"{path}[{i}]"
        name = v.get("name")
        if not name:
            out.append(_required(f"{vp}.name"))
        else:
            for msg in validate_name("label", str(name)):
                out.append(_invalid(f"{vp}.name", name, msg))
        count = 0
        for key, shown in _VOLUME_SOURCES:
            if v.get(key) is None:
                continue
            if count:
                out.append(
                    _c(
                        f"{vp}.{shown}",
                        "Forbidden: may not specify more than 1 volume type",
                        "FieldValueForbidden",
                    )
                )
            else:
                count = 1
        if not count:
            out.append(_c(vp, "Required value: must specify a volume type", "FieldValueRequired"))
        if name and name in names:
            out.append(_c(f"{vp}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
        elif name:
            names.add(str(name))
    return out


def _volume_mounts(path: str, mounts: Any, volumes: set[str]) -> list[dict[str, Any]]:
    """``validateVolumeMounts``: a mount names a volume of the pod, has a
    mountPath, and no two mounts of a container share one."""
    out: list[dict[str, Any]] = []
    paths: set[str] = set()
    for i, m in enumerate(mounts if isinstance(mounts, list) else []):
        if not isinstance(m, dict):
            continue
        mp = f"{path}[{i}]"
        name = str(m.get("name") or "")
        if not name:
            out.append(_required(f"{mp}.name"))
        if name not in volumes:
            out.append(_c(f"{mp}.name", f'Not found: "{name}"', "FieldValueNotFound"))
        mount_path = str(m.get("mountPath") or "")
        if not mount_path:
            out.append(_required(f"{mp}.mountPath"))
        if mount_path in paths:
            out.append(_invalid(f"{mp}.mountPath", mount_path, "must be unique"))
        paths.add(mount_path)
    return out


def _containers(
    path: str, containers: Any, names: set[str], volumes: set[str] | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, c in enumerate(containers if isinstance(containers, list) else []):
        if not isinstance(c, dict):
            continue
        cp = f"{path}[{i}]"
        name = c.get("name")
        if not name:
            out.append(_required(f"{cp}.name"))
        else:
            for msg in validate_name("label", str(name)):
                out.append(_invalid(f"{cp}.name", name, msg))
            if name in names:
                out.append(_c(f"{cp}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
            names.add(str(name))
        if not c.get("image"):
            out.append(_required(f"{cp}.image"))
        port_names: set[str] = set()
        for j, p in enumerate(c.get("ports") or []):
            if not isinstance(p, dict):
                continue
            pp = f"{cp}.ports[{j}]"
            pname = p.get("name")
            if pname:
                errs = port_name_errors(str(pname))
                for msg in errs:
                    out.append(_invalid(f"{pp}.name", pname, msg))
                if not errs and pname in port_names:
                    out.append(
                        _c(f"{pp}.name", f'Duplicate value: "{pname}"', "FieldValueDuplicate")
                    )
                port_names.add(str(pname))
            if not p.get("containerPort"):
                out.append(_required(f"{pp}.containerPort"))
            else:
                out.extend(_port_num(f"{pp}.containerPort", p.get("containerPort")))
            if p.get("hostPort"):
                out.extend(_port_num(f"{pp}.hostPort", p.get("hostPort")))
            out.extend(_protocol(f"{pp}.protocol", p.get("protocol")))
        if volumes is not None:
            out.extend(_volume_mounts(f"{cp}.volumeMounts", c.get("volumeMounts"), volumes))
    return out


def pod_spec_causes(path: str, spec: Any) -> list[dict[str, Any]]:
    """``ValidatePodSpec``'s container rules for the pod spec at ``path``."""
    if not isinstance(spec, dict):
        spec = {}
    out: list[dict[str, Any]] = []
    volumes: set[str] = set()
    out.extend(_volumes(f"{path}.volumes", spec.get("volumes"), volumes))
    names: set[str] = set()
    out.extend(_containers(f"{path}.initContainers", spec.get("initContainers"), names, volumes))
    if not spec.get("containers"):
        out.append(_required(f"{path}.containers"))
    out.extend(_containers(f"{path}.containers", spec.get("containers"), names, volumes))
    return out


def get_path(obj: Any, *path: str) -> Any:
    """The value at ``path`` in nested dicts (None where one is missing)."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


# Where each kind keeps its pod spec (kube validates templates the same way).
_POD_SPECS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec",),
    ("", "PodTemplate"): ("template", "spec"),
    ("", "ReplicationController"): ("spec", "template", "spec"),
    ("apps", "Deployment"): ("spec", "template", "spec"),
    ("apps", "ReplicaSet"): ("spec", "template", "spec"),
    ("apps", "StatefulSet"): ("spec", "template", "spec"),
    ("apps", "DaemonSet"): ("spec", "template", "spec"),
    ("batch", "Job"): ("spec", "template", "spec"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _service_causes(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    out: list[dict[str, Any]] = []
    stype = spec.get("type") or "ClusterIP"
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and stype != "ExternalName":
        out.append(_required("spec.ports"))
    names: set[str] = set()
    for i, p in enumerate(ports):
        pp = f"spec.ports[{i}]"
        name = p.get("name")
        if len(ports) > 1 and not name:
            out.append(_required(f"{pp}.name"))
        elif name:
            for msg in validate_name("label", str(name)):
                out.append(_invalid(f"{pp}.name", name, msg))
            if name in names:
                out.append(_c(f"{pp}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate"))
            names.add(str(name))
        port = as_int(p.get("port")) or 0
        if not 1 <= port <= 65535:
            out.append(_invalid(f"{pp}.port", port, _PORT_RANGE))
        out.extend(_protocol(f"{pp}.protocol", p.get("protocol")))
        target = p.get("targetPort")
        if isinstance(target, str):
            for msg in port_name_errors(target):
                out.append(_invalid(f"{pp}.targetPort", target, msg))
        else:
            n = as_int(target)
            if n is not None and not 1 <= n <= 65535:
                out.append(_invalid(f"{pp}.targetPort", n, _PORT_RANGE))
        node_port = as_int(p.get("nodePort"))
        if node_port:
            if stype == "ClusterIP":
                out.append(
                    _c(
                        f"{pp}.nodePort",
                        "Forbidden: may not be used when `type` is 'ClusterIP'",
                        "FieldValueForbidden",
                    )
                )
            out.extend(_port_num(f"{pp}.nodePort", node_port))
    return out


def _go_map(m: dict[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(m.items()))
    return "map[string]string{" + inner + "}"


def _selector_causes(obj: dict[str, Any], old: dict[str, Any] | None) -> list[dict[str, Any]]:
    """apps/v1: a selector is required, must select the template, and is immutable."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        return [_required("spec.selector")]
    out: list[dict[str, Any]] = []
    labels = get_path(spec, "template", "metadata", "labels") or {}
    match = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in match.items()):
        out.append(
            _c(
                "spec.template.metadata.labels",
                f"Invalid value: {_go_map(labels)}: `selector` does not match template `labels`",
            )
        )
    if old is not None:
        old_sel = get_path(old, "spec", "selector")
        if old_sel is not None and old_sel != selector:
            out.append(_c("spec.selector", f"Invalid value: {_selector_go(selector)}: field is "
                          "immutable"))  # fmt: skip
    return out


def _selector_go(sel: dict[str, Any]) -> str:
    """``%#v`` of a matchLabels-only ``metav1.LabelSelector`` (expressions elided)."""
    match = sel.get("matchLabels") or {}
    exprs = "[]v1.LabelSelectorRequirement(nil)" if not sel.get("matchExpressions") else "[...]"
    return f"v1.LabelSelector{{MatchLabels:{_go_map(match)}, MatchExpressions:{exprs}}}"


# Job spec fields immutable after creation, besides selector and template
# (``ValidateJobSpecUpdate``), with how kube prints the new value.
_JOB_IMMUTABLE: tuple[tuple[str, str], ...] = (
    ("completionMode", ""),
    ("podFailurePolicy", "batch.PodFailurePolicy{...}"),
    ("backoffLimitPerIndex", ""),
    ("managedBy", ""),
    ("successPolicy", "batch.SuccessPolicy{...}"),
)


def _go_value(value: Any, struct: str) -> str:
    if value is None:
        return "null"
    if struct:
        return struct
    return json.dumps(value) if isinstance(value, str) else str(value)


def _job_template_for_compare(
    template: Any, old_template: Any, mutable_scheduling: bool
) -> tuple[Any, Any]:
    """``validatePodTemplateUpdate``: a Job suspended and never started may
    change its pod template's node affinity, node selector, tolerations,
    scheduling gates, labels and annotations; the rest stays immutable. Returns
    the two templates to compare, with the mutable parts equalised."""
    if (
        not mutable_scheduling
        or not isinstance(template, dict)
        or not isinstance(old_template, dict)
    ):
        return template, old_template
    new, old = copy.deepcopy(template), copy.deepcopy(old_template)
    new_meta, old_meta = new.setdefault("metadata", {}), old.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        new_meta.pop(key, None)
        old_meta.pop(key, None)
    new_spec, old_spec = new.setdefault("spec", {}), old.setdefault("spec", {})
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        new_spec.pop(key, None)
        old_spec.pop(key, None)
    # Only nodeAffinity is free: pod (anti-)affinity must stay as it was.
    for spec in (new_spec, old_spec):
        affinity = spec.get("affinity")
        if isinstance(affinity, dict):
            rest = {k: v for k, v in affinity.items() if k != "nodeAffinity"}
            if rest:
                spec["affinity"] = rest
            else:
                spec.pop("affinity")
    return new, old


def _job_update_causes(obj: dict[str, Any], old: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
    if spec.get("selector") != old_spec.get("selector"):
        out.append(
            _c("spec.selector", f"Invalid value: {_selector_go(spec.get('selector') or {})}: "
               "field is immutable")
        )  # fmt: skip
    # The strategy's AllowMutableSchedulingDirectives: suspended and never started.
    mutable_scheduling = old_spec.get("suspend") is True and not (old.get("status") or {}).get(
        "startTime"
    )
    template, old_template = _job_template_for_compare(
        spec.get("template"), old_spec.get("template"), mutable_scheduling
    )
    if template != old_template:
        out.append(
            _c("spec.template", "Invalid value: core.PodTemplateSpec{...}: field is immutable")
        )
    for name, struct in _JOB_IMMUTABLE:
        if spec.get(name) != old_spec.get(name):
            value = _go_value(spec.get(name), struct)
            out.append(_c(f"spec.{name}", f"Invalid value: {value}: field is immutable"))
    return out


def causes(
    rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The validation errors of built-in ``obj`` (``old``: the stored object
    on update)."""
    # Imported here: they build on this module's helpers.
    from pycontroller.testing.apiserver.schema import validation_apps, validation_pod

    if rt.is_crd:
        return []
    key = (rt.group, rt.kind)
    out: list[dict[str, Any]] = []
    if key == ("batch", "CronJob"):
        name = get_path(obj, "metadata", "name")
        if isinstance(name, str) and len(name) > 52:
            out.append(_invalid("metadata.name", name, "must be no more than 52 characters"))
    if key in (("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("apps", "DaemonSet")):
        out.extend(_selector_causes(obj, old))
    pod_path = _POD_SPECS.get(key)
    if pod_path is not None:
        spec_path = ".".join(pod_path)
        pod_spec = get_path(obj, *pod_path)
        out.extend(pod_spec_causes(spec_path, pod_spec))
        out.extend(validation_pod.pod_spec_causes(spec_path, pod_spec))
    if key == ("", "Service"):
        out.extend(_service_causes(obj))
    if key == ("batch", "Job") and old is not None:
        out.extend(_job_update_causes(obj, old))
    out.extend(validation_apps.causes(rt, obj, old))
    return out
