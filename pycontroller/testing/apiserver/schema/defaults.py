"""Per-type defaulting of built-in objects, driven by their definitions.

kube registers defaulting functions per Go type (``SetDefaults_JobSpec``,
``SetDefaults_Container`` ...) and runs them wherever that type occurs. This
module does the same: ``apply(rt, obj)`` walks ``obj`` along its kind's
definition (``definitions.py``) and, at each struct whose definition has an
entry in ``_DEFAULTS`` (field values set when absent) or ``_HOOKS``
(computed defaults), applies it. So a Job's, CronJob's, StatefulSet's or
PodTemplate's pod spec is defaulted like a Pod's, with no per-kind code.
A hook on a kind's own definition (``Pod``, ``Job``) runs on that kind only,
as ``SetDefaults_Pod`` and ``SetDefaults_Job`` do (not on templates). Go
defaults a field when it is nil or zero; so do the hooks, while ``_DEFAULTS``
fills fields that are missing or null. The JSON shape of the result (what
encoding/json writes for unset and zero fields) is ``goshape.py``'s.

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
    _CORE + "ObjectFieldSelector": {"apiVersion": "v1"},
    _CORE + "HTTPGetAction": {"path": "/", "scheme": "HTTP"},
    # GRPCAction.Service: +default="" (zz_generated.defaults.go).
    _CORE + "GRPCAction": {"service": ""},
    _CORE + "ServiceAccountTokenProjection": {"expirationSeconds": 3600},
    _CORE + "ISCSIVolumeSource": {"iscsiInterface": "default"},
    _CORE + "ISCSIPersistentVolumeSource": {"iscsiInterface": "default"},
    _CORE + "RBDVolumeSource": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    _CORE + "RBDPersistentVolumeSource": {
        "pool": "rbd",
        "user": "admin",
        "keyring": "/etc/ceph/keyring",
    },
    _CORE + "AzureDiskVolumeSource": {
        "cachingMode": "ReadWrite",
        "fsType": "ext4",
        "readOnly": False,
        "kind": "Shared",
    },
    _CORE + "ScaleIOVolumeSource": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
    _CORE + "ScaleIOPersistentVolumeSource": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
    # apps/v1
    _APPS + "ReplicaSetSpec": {"replicas": 1},
    _APPS + "StatefulSetSpec": {
        "replicas": 1,
        "podManagementPolicy": "OrderedReady",
        "revisionHistoryLimit": 10,
    },
    _APPS + "DaemonSetSpec": {"revisionHistoryLimit": 10},
    # batch/v1
    _BATCH + "CronJobSpec": {
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    },
    # networking, storage, scheduling, admission
    # batch/v1 SetDefaults_Job (on a Job's podFailurePolicy only, but the type
    # occurs nowhere else)
    _BATCH + "PodFailurePolicyOnPodConditionsPattern": {"status": "True"},
    "io.k8s.api.networking.v1.NetworkPolicyPort": {"protocol": "TCP"},
    # SetDefaults_IngressClass: parameters given without a scope are Cluster's.
    "io.k8s.api.networking.v1.IngressClassParametersReference": {"scope": "Cluster"},
    "io.k8s.api.discovery.v1.EndpointPort": {"name": "", "protocol": "TCP"},
    # SetDefaults_CSIDriver (storage/v1; SELinuxMountReadWriteOncePod is on in 1.32)
    "io.k8s.api.storage.v1.CSIDriverSpec": {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"],
    },
    "io.k8s.api.storage.v1.StorageClass": {
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    },
    "io.k8s.api.scheduling.v1.PriorityClass": {"preemptionPolicy": "PreemptLowerPriority"},
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec": {"minReplicas": 1},
    # admissionregistration/v1 SetDefaults_Rule: scope "*".
    "io.k8s.api.admissionregistration.v1.RuleWithOperations": {"scope": "*"},
    "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations": {"scope": "*"},
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
    """``SetDefaults_PodSpec``: every pod spec, templates' too."""
    _set_if_empty(spec, "dnsPolicy", "ClusterFirst")
    _set_if_empty(spec, "restartPolicy", "Always")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    _set_if_empty(spec, "schedulerName", "default-scheduler")
    # Not a default but the v1 conversion every write goes through
    # (Convert_v1_PodSpec_To_core_PodSpec and back): serviceAccount is the
    # deprecated alias of serviceAccountName, taken when that is empty and
    # always written back equal to it.
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:
        spec["serviceAccountName"] = account
        spec["serviceAccount"] = account
    else:
        spec.pop("serviceAccount", None)


def _set_if_empty(obj: dict[str, Any], key: str, value: Any) -> None:
    """Go's ``if obj.Field == "" { obj.Field = value }`` (unset, null or zero)."""
    if not obj.get(key):
        obj[key] = value


def _pod(pod: dict[str, Any]) -> None:
    """``SetDefaults_Pod``: on Pods only, not on pod templates. Requests
    default to limits, ``enableServiceLinks`` to true, and with
    ``hostNetwork`` every container port's ``hostPort`` to its
    ``containerPort``. (``PodLevelResources`` is off in 1.32.)"""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    containers = [
        c
        for key in ("containers", "initContainers")
        for c in (spec.get(key) or [])
        if isinstance(c, dict)
    ]
    for c in containers:
        resources = c.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if isinstance(resources, dict) and isinstance(limits, dict):
            requests = resources.get("requests")
            if not isinstance(requests, dict):
                requests = resources["requests"] = {}
            for k, v in limits.items():
                requests.setdefault(k, v)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork") is True:
        for c in containers:
            for port in c.get("ports") or []:
                if isinstance(port, dict) and not port.get("hostPort"):
                    port["hostPort"] = port.get("containerPort", 0)


def _container(c: dict[str, Any]) -> None:
    """``SetDefaults_Container`` (and ``SetDefaults_EphemeralContainer``)."""
    if not c.get("imagePullPolicy"):
        c["imagePullPolicy"] = (
            "Always" if _image_tag(str(c.get("image") or "")) == "latest" else "IfNotPresent"
        )
    _set_if_empty(c, "terminationMessagePath", "/dev/termination-log")
    _set_if_empty(c, "terminationMessagePolicy", "File")


def _image_tag(image: str) -> str:
    """The tag ``parsers.ParseImageName`` finds: ``latest`` when the image has
    neither tag nor digest, "" when it has only a digest."""
    name, at, _digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if at else "latest"


def _probe(probe: dict[str, Any]) -> None:
    """``SetDefaults_Probe``: each threshold that is zero."""
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        _set_if_empty(probe, key, value)


# The fields of Volume that are not one of its sources (VolumeSource is inlined).
_VOLUME_NOT_SOURCES = frozenset({"name"})


def _volume(volume: dict[str, Any]) -> None:
    """``SetDefaults_Volume``: a volume with no source is an ``emptyDir``.
    (The ``ImageVolume`` gate, which would default ``image.pullPolicy``, is
    off in 1.32.)"""
    if not any(v is not None for k, v in volume.items() if k not in _VOLUME_NOT_SOURCES):
        volume["emptyDir"] = {}


def _node_status(status: dict[str, Any]) -> None:
    """``SetDefaults_NodeStatus``: allocatable defaults to capacity."""
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = copy.deepcopy(status["capacity"])


def _limit_range_item(item: dict[str, Any]) -> None:
    """``SetDefaults_LimitRangeItem``: for a ``Container`` item, ``default``
    from ``max``, then ``defaultRequest`` from ``default``, then from ``min``."""
    if item.get("type") != "Container":
        return
    default = item.get("default")
    if not isinstance(default, dict):
        default = item["default"] = {}
    request = item.get("defaultRequest")
    if not isinstance(request, dict):
        request = item["defaultRequest"] = {}
    for source, target in (("max", default), ("default", request), ("min", request)):
        values = item.get(source)
        for k, v in values.items() if isinstance(values, dict) else ():
            target.setdefault(k, v)


def _claim(claim: dict[str, Any]) -> None:
    """``SetDefaults_PersistentVolumeClaim`` (a claim, or a StatefulSet's claim
    template) and ``SetDefaults_PersistentVolume``: an empty ``status.phase``
    is ``Pending``."""
    status = claim.get("status")
    if status is None:
        status = claim["status"] = {}
    if isinstance(status, dict):
        _set_if_empty(status, "phase", "Pending")


def _job(job: dict[str, Any]) -> None:
    """``SetDefaults_Job`` (batch/v1, 1.32): on Jobs only, not on a CronJob's
    job template."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = (
            "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
        )
    # Its labels defaulting to its template's is in strategy_defaults (after
    # what generateSelectorIfNeeded adds to that template).


def _statefulset_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_StatefulSet``'s update strategy (``MaxUnavailableStatefulSet``
    is off in 1.32) and PVC retention policy (``StatefulSetAutoDeletePVC`` is on)."""
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if strategy.get("rollingUpdate") is None:
            strategy["rollingUpdate"] = {}
    rolling = strategy.get("rollingUpdate")
    if (
        strategy["type"] == "RollingUpdate"
        and isinstance(rolling, dict)
        and rolling.get("partition") is None
    ):
        rolling["partition"] = 0
    policy = spec.get("persistentVolumeClaimRetentionPolicy")
    if not isinstance(policy, dict):
        policy = spec["persistentVolumeClaimRetentionPolicy"] = {}
    _set_if_empty(policy, "whenDeleted", "Retain")
    _set_if_empty(policy, "whenScaled", "Retain")


def _daemonset_spec(spec: dict[str, Any]) -> None:
    """``SetDefaults_DaemonSet``'s update strategy."""
    strategy = spec.get("updateStrategy")
    if not isinstance(strategy, dict):
        strategy = spec["updateStrategy"] = {}
    _set_if_empty(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if not isinstance(rolling, dict):
            rolling = strategy["rollingUpdate"] = {}
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0


_RBAC = "rbac.authorization.k8s.io"


def _role_ref(ref: dict[str, Any]) -> None:
    """``SetDefaults_ClusterRoleBinding``/``SetDefaults_RoleBinding``."""
    _set_if_empty(ref, "apiGroup", _RBAC)


def _subject(subject: dict[str, Any]) -> None:
    """``SetDefaults_Subject``: the API group of a User or Group subject."""
    if not subject.get("apiGroup"):
        kind = subject.get("kind")
        if kind == "ServiceAccount":
            subject["apiGroup"] = ""
        elif kind in ("User", "Group"):
            subject["apiGroup"] = _RBAC


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
    # A kind's own definition is never nested in another kind: its hook runs
    # on that kind only (SetDefaults_Pod, SetDefaults_Job).
    _CORE + "Pod": _pod,
    _CORE + "PodSpec": _pod_spec,
    _CORE + "Container": _container,
    _CORE + "EphemeralContainer": _container,
    _CORE + "Probe": _probe,
    _CORE + "Volume": _volume,
    _CORE + "NodeStatus": _node_status,
    _CORE + "LimitRangeItem": _limit_range_item,
    _CORE + "PersistentVolumeClaim": _claim,
    _CORE + "PersistentVolume": _claim,
    _CORE + "ReplicationControllerSpec": _rc_spec,
    _APPS + "DeploymentSpec": _deployment_spec,
    _APPS + "StatefulSetSpec": _statefulset_spec,
    _APPS + "DaemonSetSpec": _daemonset_spec,
    _BATCH + "Job": _job,
    "io.k8s.api.rbac.v1.RoleRef": _role_ref,
    "io.k8s.api.rbac.v1.Subject": _subject,
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
        if value.get(key) is None:
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
    (``generateSelectorIfNeeded``); a CertificateSigningRequest's requester."""
    key = (rt.group, rt.kind)
    meta = obj.get("metadata") or {}
    if key == ("batch", "Job"):
        _job_labels(obj, meta, old)
    elif key == ("certificates.k8s.io", "CertificateSigningRequest") and old is None:
        _csr_requester(obj)
    elif key == ("", "ReplicationController"):
        # SetDefaults_ReplicationController: labels from the pod template.
        labels = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
            "labels"
        )
        if isinstance(labels, dict) and labels and not meta.get("labels"):
            meta["labels"] = dict(labels)


def _csr_requester(csr: dict[str, Any]) -> None:
    """``csrStrategy.PrepareForCreate``: the spec's user fields are the
    requesting user's (those in the body are dropped; a write made in-process
    has no user) and the status starts empty (no pre-approved requests)."""
    from pycontroller.testing.apiserver.registry.admission_policy import REQUEST_USER

    spec = csr.get("spec")
    if not isinstance(spec, dict):
        spec = csr["spec"] = {}
    for key in ("username", "uid", "groups", "extra"):
        spec.pop(key, None)
    user = REQUEST_USER.get()
    if user is not None:
        spec.update((k, v) for k, v in user.to_api().items() if v)  # omitempty
    csr["status"] = {}


def _job_labels(job: dict[str, Any], meta: dict[str, Any], old: dict[str, Any] | None) -> None:
    """On create, ``generateSelectorIfNeeded`` adds the controller-uid and
    job-name labels to the pod template (and the selector). A Job without
    labels takes its template's (``SetDefaults_Job``, which also runs when
    kube decodes the stored object to answer the write: so a Job created
    without any gets the generated ones)."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        spec = job["spec"] = {}
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    tmeta = template.get("metadata")
    if not isinstance(tmeta, dict):
        tmeta = template["metadata"] = {}
    labels = tmeta.get("labels")
    if old is None and spec.get("manualSelector") is not True:
        uid, name = str(meta.get("uid", "")), str(meta.get("name", ""))
        if not isinstance(labels, dict):
            labels = tmeta["labels"] = {}
        for k in _JOB_UID_LABELS:
            labels.setdefault(k, uid)
        for k in _JOB_NAME_LABELS:
            labels.setdefault(k, name)
        if not spec.get("selector"):
            spec["selector"] = {"matchLabels": {_JOB_UID_LABELS[0]: uid}}
    # (an empty map is nil once stored: protobuf keeps no empty map)
    jmeta = job.get("metadata")
    if isinstance(labels, dict) and labels and isinstance(jmeta, dict) and not jmeta.get("labels"):
        jmeta["labels"] = dict(labels)
