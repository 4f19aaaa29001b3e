"""Per-type defaulting of built-in objects, driven by their definitions.

kube registers defaulting functions per Go type (``SetDefaults_JobSpec``,
``SetDefaults_Container`` ...) and runs them wherever that type occurs. This
module does the same: ``apply(rt, obj)`` walks ``obj`` along its kind's
definition (``definitions.py``) and, at each struct whose definition has an
entry in ``_DEFAULTS`` (field values set when absent) or ``_HOOKS``
(computed defaults), applies it. So a Job's, CronJob's, StatefulSet's or
PodTemplate's pod spec is defaulted like a Pod's, with no per-kind code.

Only subtrees that can contain a defaulted type are walked (precomputed per
definition). The per-kind strategy defaults that need the object's identity
(a Job's generated selector and labels) are in ``strategy_defaults``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import definitions

__all__ = ["apply", "strategy_defaults"]

_CORE = "io.k8s.api.core.v1."
_APPS = "io.k8s.api.apps.v1."
_BATCH = "io.k8s.api.batch.v1."

_DEFAULTS: dict[str, dict[str, Any]] = {
    # core/v1 (pkg/apis/core/v1/defaults.go)
    _CORE + "ContainerPort": {"protocol": "TCP"},
    _CORE + "ServicePort": {"protocol": "TCP"},
    _CORE + "EndpointPort": {"protocol": "TCP"},
    _CORE + "PersistentVolumeClaimSpec": {"volumeMode": "Filesystem"},
    _CORE + "PersistentVolumeSpec": {
        "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem",
    },
    _CORE + "ConfigMapVolumeSource": {"defaultMode": 420},
    _CORE + "SecretVolumeSource": {"defaultMode": 420},
    _CORE + "DownwardAPIVolumeSource": {"defaultMode": 420},
    _CORE + "ProjectedVolumeSource": {"defaultMode": 420},
    _CORE + "HostPathVolumeSource": {"type": ""},
    _CORE + "Probe": {
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    },
    _CORE + "ObjectFieldSelector": {"apiVersion": "v1"},
    # apps/v1
    _APPS + "ReplicaSetSpec": {"replicas": 1},
    _APPS + "StatefulSetSpec": {
        "replicas": 1,
        "podManagementPolicy": "OrderedReady",
        "revisionHistoryLimit": 10,
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    },
    _APPS + "DaemonSetSpec": {
        "revisionHistoryLimit": 10,
        "updateStrategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
        },
    },
    # batch/v1
    _BATCH + "CronJobSpec": {
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    },
    # networking, storage, scheduling, admission
    "io.k8s.api.networking.v1.NetworkPolicyPort": {"protocol": "TCP"},
    "io.k8s.api.discovery.v1.EndpointPort": {"protocol": "TCP"},
    "io.k8s.api.storage.v1.StorageClass": {
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    },
    "io.k8s.api.scheduling.v1.PriorityClass": {"preemptionPolicy": "PreemptLowerPriority"},
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": {"minReplicas": 1},
    "io.k8s.api.admissionregistration.v1.ValidatingWebhook": {
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "timeoutSeconds": 10,
        "namespaceSelector": {},
        "objectSelector": {},
    },
    "io.k8s.api.admissionregistration.v1.MutatingWebhook": {
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "timeoutSeconds": 10,
        "namespaceSelector": {},
        "objectSelector": {},
        "reinvocationPolicy": "Never",
    },
}


def _pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")


def _container(c: dict[str, Any]) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    if "imagePullPolicy" not in c:
        tag = str(c.get("image", "")).rsplit("/", 1)[-1]
        latest = "@" not in tag and (":" not in tag or tag.endswith(":latest"))
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    c.setdefault("resources", {})


def _job_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_Job`` (batch/v1, 1.32)."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault(
        "podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    )
    spec.setdefault("manualSelector", None)
    if spec.get("manualSelector") is None:
        spec.pop("manualSelector")


def _statefulset_spec(spec: dict[str, Any]) -> None:
    """``SetObjectDefaults_StatefulSet`` runs ``SetDefaults_PersistentVolumeClaim``
    on each of ``volumeClaimTemplates``: an empty ``status.phase`` is ``Pending``."""
    claims = spec.get("volumeClaimTemplates")
    for claim in claims if isinstance(claims, list) else ():
        if not isinstance(claim, dict):
            continue
        status = claim.get("status")
        if status is None:
            status = claim["status"] = {}
        if isinstance(status, dict) and not status.get("phase"):
            status["phase"] = "Pending"


def _network_policy_spec(spec: dict[str, Any]) -> None:
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def _hpa_spec(spec: dict[str, Any]) -> None:
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _hpa_rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _hpa_rules(behavior.get("scaleDown"), _SCALE_DOWN)
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]


# autoscaling/v2 ``SetDefaults_HorizontalPodAutoscalerBehavior``: a behavior
# given in part is completed from these rules, field by field.
_SCALE_UP = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _hpa_rules(given: Any, default: dict[str, Any]) -> dict[str, Any]:
    """``copyHPAScalingRules``: each field given wins; the others are the default's."""
    rules = dict(given) if isinstance(given, dict) else {}
    out: dict[str, Any] = {}
    for key in ("stabilizationWindowSeconds", "selectPolicy", "policies"):
        value = rules.pop(key, None)
        if value is None:
            value = copy.deepcopy(default.get(key))
        if value is not None:
            out[key] = value
    out.update(rules)
    return out


def _rc_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("replicas", 1)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if not spec.get("selector") and isinstance(labels, dict) and labels:
        spec["selector"] = dict(labels)


def _deployment_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_Deployment`` (apps/v1, 1.32)."""
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    if isinstance(strategy, dict):
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


_HOOKS: dict[str, Callable[[dict[str, Any]], None]] = {
    _CORE + "PodSpec": _pod_spec,
    _CORE + "Container": _container,
    _CORE + "EphemeralContainer": _container,
    _CORE + "ReplicationControllerSpec": _rc_spec,
    _APPS + "DeploymentSpec": _deployment_spec,
    _BATCH + "JobSpec": _job_spec,
    _APPS + "StatefulSetSpec": _statefulset_spec,
    "io.k8s.api.networking.v1.NetworkPolicySpec": _network_policy_spec,
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": _hpa_spec,
}

_lock = threading.Lock()
_relevant: dict[str, bool] = {}


def _children(node: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, shape, definition) of each property typed by a definition;
    shape is ``one``, ``list`` or ``map``."""
    out: list[tuple[str, str, str]] = []
    for name, prop in (node.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        ref = definitions.ref_name(prop)
        if ref is not None:
            out.append((name, "one", ref))
            continue
        items = prop.get("items")
        if isinstance(items, dict) and definitions.ref_name(items):
            out.append((name, "list", str(definitions.ref_name(items))))
            continue
        addl = prop.get("additionalProperties")
        if isinstance(addl, dict) and definitions.ref_name(addl):
            out.append((name, "map", str(definitions.ref_name(addl))))
    return out


def _is_relevant(name: str, defs: dict[str, Any], visiting: set[str]) -> bool:
    """Whether a value of definition ``name`` can contain a defaulted type."""
    hit = _relevant.get(name)
    if hit is not None:
        return hit
    if name in _DEFAULTS or name in _HOOKS:
        _relevant[name] = True
        return True
    if name in visiting or name not in defs:
        return False
    visiting.add(name)
    found = any(_is_relevant(ref, defs, visiting) for _, _, ref in _children(defs[name]))
    visiting.discard(name)
    if found or not visiting:
        _relevant[name] = found
    return found


def _walk(value: Any, name: str, defs: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        return
    for key, default in (_DEFAULTS.get(name) or {}).items():
        if key not in value:
            value[key] = copy.deepcopy(default)
    hook = _HOOKS.get(name)
    if hook is not None:
        hook(value)
    node = defs.get(name)
    if node is None:
        return
    for field, shape, ref in _children(node):
        child = value.get(field)
        if child is None or not _is_relevant(ref, defs, set()):
            continue
        if shape == "one":
            _walk(child, ref, defs)
        elif shape == "list" and isinstance(child, list):
            for item in child:
                _walk(item, ref, defs)
        elif shape == "map" and isinstance(child, dict):
            for item in child.values():
                _walk(item, ref, defs)


def apply(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Default ``obj`` (a built-in ``rt`` object) in place."""
    name = definitions.by_gvk(rt.group, rt.version, rt.kind)
    if name is None:
        return
    defs = definitions.definitions()
    with _lock:
        relevant = _is_relevant(name, defs, set())
    if relevant:
        _walk(obj, name, defs)


_JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
_JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")


def strategy_defaults(rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """What a kind's registry strategy fills in on create (``old`` None) beyond
    type defaults: a Job's generated selector and pod template labels
    (``generateSelectorIfNeeded``), a PV's and PVC's ``Pending`` phase."""
    key = (rt.group, rt.kind)
    meta = obj.get("metadata") or {}
    if key == ("batch", "Job") and old is None:
        spec = obj.setdefault("spec", {})
        if spec.get("manualSelector") is True:
            return
        uid, name = str(meta.get("uid", "")), str(meta.get("name", ""))
        template = spec.setdefault("template", {})
        tmeta = template.setdefault("metadata", {})
        labels = tmeta.get("labels")
        if not isinstance(labels, dict):
            labels = tmeta["labels"] = {}
        for k in _JOB_UID_LABELS:
            labels.setdefault(k, uid)
        for k in _JOB_NAME_LABELS:
            labels.setdefault(k, name)
        if not spec.get("selector"):
            spec["selector"] = {"matchLabels": {_JOB_UID_LABELS[0]: uid}}
    elif key == ("", "ReplicationController"):
        # SetDefaults_ReplicationController: labels from the pod template.
        labels = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
            "labels"
        )
        if isinstance(labels, dict) and labels and not meta.get("labels"):
            meta["labels"] = dict(labels)
    elif key in (("", "PersistentVolume"), ("", "PersistentVolumeClaim")) and old is None:
        status = obj.get("status")
        if not isinstance(status, dict):
            status = obj["status"] = {}
        status.setdefault("phase", "Pending")
