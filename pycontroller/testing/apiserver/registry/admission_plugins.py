"""The built-in admission plugins kube-apiserver 1.32 runs by default that
change what a controller reads back or refuse what it writes
(``plugin/pkg/admission``), before the admission webhooks, in kube's order:

* ``LimitRanger`` (``admission_limits``): a new pod's containers get the
  ``default`` limits and ``defaultRequest`` requests of the namespace's
  LimitRanges (``Container`` items) they lack, and the
  ``kubernetes.io/limit-ranger`` annotation; a new pod, or a new or updated
  PersistentVolumeClaim, that breaks a ``min`` / ``max`` /
  ``maxLimitRequestRatio`` (``Container``, ``Pod`` and
  ``PersistentVolumeClaim`` items) is kube's 403.
* ``Priority`` (``priority/admission.go``): a new pod gets ``spec.priority``
  and ``spec.preemptionPolicy`` from its ``priorityClassName``, or from the
  cluster's ``globalDefault`` PriorityClass (whose name it then takes), or 0
  and ``PreemptLowerPriority``; a missing class, or a priority / policy the
  pod states that differs from the class's, is kube's 403. An update keeps
  the priority the pod had. A second ``globalDefault`` PriorityClass is a
  403. The two system classes (``system-node-critical``,
  ``system-cluster-critical``) exist from the start, as kube-apiserver's
  post-start hook creates them (``SYSTEM_PRIORITY_CLASSES``).
* ``DefaultTolerationSeconds``: a pod that does not tolerate the
  ``node.kubernetes.io/not-ready`` and ``unreachable`` NoExecute taints gets
  a toleration of each for 300 s.
* ``DefaultStorageClass``: a new PersistentVolumeClaim without
  ``storageClassName`` (absent; ``""`` asks for none) gets the default
  StorageClass's name (annotated ``storageclass.kubernetes.io/is-default-class``;
  the newest when several are).
* ``DefaultIngressClass``: the same for a new Ingress without
  ``ingressClassName`` nor the ``kubernetes.io/ingress.class`` annotation
  (``ingressclass.kubernetes.io/is-default-class``).

``ResourceQuota`` is ``resource_quota.admit``, which ``rest.py`` calls last
among validating admission (after ValidatingAdmissionPolicy and the
validating webhooks), as kube orders it; ``resource_quota.QuotaController``
is kube-controller-manager's quota controller, which fills the quotas'
``status``.

``StorageObjectInUseProtection`` is ``storage_protection.mutate`` (the
protection finalizer on new claims and volumes); its
``ProtectionController`` is kube-controller-manager's pvc-protection and
pv-protection controllers, which release them.

``PodSecurity`` is ``pod_security.validate``, which ``validate`` runs
between LimitRanger's checks and Priority's, as kube orders them.

``ServiceAccount`` is ``service_accounts.mutate``, after LimitRanger's
defaults, as kube orders them (its ``ServiceAccountsController`` keeps a
``default`` ServiceAccount in every namespace).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver.registry import (
    admission_limits,
    pod_security,
    service_accounts,
    storage_protection,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import forbidden

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = [
    "SYSTEM_PRIORITY_CLASSES",
    "may_mutate",
    "mutate",
    "system_priority_class",
    "validate",
]

_PRIORITY_CLASSES = ("scheduling.k8s.io", "priorityclasses")
_STORAGE_CLASSES = ("storage.k8s.io", "storageclasses")
_INGRESS_CLASSES = ("networking.k8s.io", "ingressclasses")

SYSTEM_PRIORITY_CLASSES: tuple[tuple[str, int, str], ...] = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
)

_TOLERATED_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_DEFAULT_TOLERATION_SECONDS = 300


def system_priority_class(name: str, value: int, description: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
    }


_MUTATED = frozenset(
    {
        ("", "pods"),
        ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"),
        ("networking.k8s.io", "ingresses"),
    }
)


def may_mutate(rt: ResourceType, subresource: str = "") -> bool:
    """Whether ``mutate`` may change objects of ``rt`` written through ``subresource``."""
    return not subresource and (rt.group, rt.plural) in _MUTATED


def mutate(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
) -> None:
    """Run the mutating built-in plugins on ``obj`` in place (lock held)."""
    if obj is None or subresource:
        return
    rk = (rt.group, rt.plural)
    if rk in storage_protection.PROTECTED:
        storage_protection.mutate(rt, operation, obj)
    if rk == ("", "pods"):
        admission_limits.mutate(rest, rt, operation, obj)
        service_accounts.mutate(rest, rt, operation, obj)
        _priority(rest, rt, operation, obj, old)
        _default_toleration_seconds(obj)
    elif operation != "CREATE":
        return
    elif rk == ("", "persistentvolumeclaims"):
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict) and spec.get("storageClassName") is None:
            default = default_storage_class(rest)
            if default is not None:
                spec["storageClassName"] = default
    elif rk == ("networking.k8s.io", "ingresses"):
        spec = obj.setdefault("spec", {})
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if (
            isinstance(spec, dict)
            and spec.get("ingressClassName") is None
            and "kubernetes.io/ingress.class" not in annotations
        ):
            default = newest_default(
                rest, _INGRESS_CLASSES, "ingressclass.kubernetes.io/is-default-class"
            )
            if default is not None:
                spec["ingressClassName"] = default


def validate(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None = None,
    *,
    subresource: str = "",
    warnings: list[str] | None = None,
) -> None:
    """The validating plugins, in kube's order: ``LimitRanger``'s checks,
    ``PodSecurity`` (``pod_security``: its warnings go to ``warnings``), and
    the validating half of ``Priority`` (one ``globalDefault`` PriorityClass)."""
    if obj is None:
        return
    if not subresource:
        admission_limits.validate(rest, rt, operation, obj)
    pod_security.validate(rest, rt, operation, obj, old, subresource=subresource, warnings=warnings)
    if subresource or (rt.group, rt.plural) != _PRIORITY_CLASSES:
        return
    if operation not in ("CREATE", "UPDATE") or obj.get("globalDefault") is not True:
        return
    name = str((obj.get("metadata") or {}).get("name") or "")
    current = _default_priority_class(rest)
    if current is not None:
        current_name = str(current["metadata"].get("name"))
        if operation == "CREATE" or current_name != name:
            raise forbidden(
                rt,
                name,
                f"PriorityClass {current_name} is already marked as default. Only one "
                "default can exist",
            )


def _default_priority_class(rest: REST) -> dict[str, Any] | None:
    """``getDefaultPriorityClass``: of several defaults (a race), the lowest value."""
    found: dict[str, Any] | None = None
    for pc in rest.storage.items(_PRIORITY_CLASSES):
        if pc.get("globalDefault") is True and (
            found is None or int(found.get("value") or 0) > int(pc.get("value") or 0)
        ):
            found = pc
    return found


def _priority(
    rest: REST,
    rt: ResourceType,
    operation: str,
    pod: dict[str, Any],
    old: dict[str, Any] | None,
) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    if operation == "UPDATE":
        old_priority = ((old or {}).get("spec") or {}).get("priority")
        if spec.get("priority") is None and old_priority is not None:
            spec["priority"] = old_priority
        return
    if operation != "CREATE":
        return
    meta = pod.get("metadata") or {}
    name = str(meta.get("name") or meta.get("generateName") or "Unknown")
    class_name = spec.get("priorityClassName")
    if not class_name:
        default = _default_priority_class(rest)
        if default is None:
            value, policy = 0, "PreemptLowerPriority"
        else:
            spec["priorityClassName"] = default["metadata"]["name"]
            value = int(default.get("value") or 0)
            policy = str(default.get("preemptionPolicy") or "PreemptLowerPriority")
    else:
        pc = rest.storage.get(_PRIORITY_CLASSES, "", str(class_name))
        if pc is None:
            raise forbidden(rt, name, f"no PriorityClass with name {class_name} was found")
        value = int(pc.get("value") or 0)
        policy = str(pc.get("preemptionPolicy") or "PreemptLowerPriority")
    stated = spec.get("priority")
    if stated is not None and stated != value:
        raise forbidden(
            rt,
            name,
            f"the integer value of priority ({stated}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    spec["priority"] = value
    stated_policy = spec.get("preemptionPolicy")
    if stated_policy is not None and stated_policy != policy:
        raise forbidden(
            rt,
            name,
            f"the string value of PreemptionPolicy ({stated_policy}) must not be provided in "
            f"pod spec; priority admission controller computed {policy} from the given "
            "PriorityClass name",
        )
    spec["preemptionPolicy"] = policy


def _default_toleration_seconds(pod: dict[str, Any]) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    tolerations = spec.get("tolerations")
    tolerations = tolerations if isinstance(tolerations, list) else []
    missing = []
    for taint in _TOLERATED_TAINTS:
        tolerated = any(
            isinstance(t, dict)
            and (t.get("key") in (taint, None, ""))
            and (t.get("effect") in ("NoExecute", None, ""))
            for t in tolerations
        )
        if not tolerated:
            missing.append(
                {
                    "key": taint,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": _DEFAULT_TOLERATION_SECONDS,
                }
            )
    if missing:
        spec["tolerations"] = [*tolerations, *missing]


def default_storage_class(rest: REST) -> str | None:
    """The default StorageClass's name (``GetDefaultClass``), if any."""
    return newest_default(
        rest,
        _STORAGE_CLASSES,
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    )


def newest_default(rest: REST, rk: tuple[str, str], *annotations: str) -> str | None:
    """The name of the newest object with one of ``annotations`` set to
    ``"true"``; of the same age, the first by name (``getDefaultClass``)."""
    chosen: tuple[str, str] | None = None
    for obj in rest.storage.items(rk):
        meta = obj.get("metadata") or {}
        marked = meta.get("annotations") or {}
        if not any(marked.get(a) == "true" for a in annotations):
            continue
        created, name = str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")
        if chosen is None or created > chosen[0] or (created == chosen[0] and name < chosen[1]):
            chosen = (created, name)
    return None if chosen is None else chosen[1]
