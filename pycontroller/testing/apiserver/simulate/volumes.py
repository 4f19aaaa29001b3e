"""Simulated volume binding (``simulate=["volumes"]``): kube-controller-manager
1.32's ``persistentvolume-binder`` (``pkg/controller/volume/persistentvolume``,
``pv_controller.go``), an external dynamic provisioner for every StorageClass
whose provisioner is not ``kubernetes.io/no-provisioner`` (as kind's
``rancher.io/local-path``), and the scheduler's VolumeBinding step.

- A default StorageClass ``standard`` as kind has (``rancher.io/local-path``,
  ``WaitForFirstConsumer``, ``Delete``), created when the simulation starts on
  a server that has no StorageClass; a claim without a class gets the default
  one (``assignDefaultStorageClass``, when no volume matches it).
- ``syncVolume``: a PersistentVolume without a ``claimRef`` is
  ``Available``; one bound to its claim is ``Bound``; one whose claim is gone
  (or is another object of that name) is ``Released`` under ``Retain``, and
  deleted under ``Delete`` when it was dynamically provisioned
  (``pv.kubernetes.io/provisioned-by``), as the provisioner does.
- ``syncUnboundClaim``: a Pending claim naming a volume (``spec.volumeName``)
  is bound to it; else to the smallest ``Available`` volume that matches
  (``storageClassName``, access modes, size, ``volumeMode``, selector, or
  pre-bound to the claim by ``claimRef``); else, with a class that can
  provision, the claim gets the ``volume.kubernetes.io/storage-provisioner``
  annotations and an ``ExternalProvisioning`` event, and the provisioner makes
  ``pvc-<claim uid>`` (size and modes of the claim, the class's reclaim
  policy, a ``hostPath`` under ``/var/local-path-provisioner`` and node
  affinity to the selected node), which the next pass binds. Under
  ``WaitForFirstConsumer`` this waits for the scheduler's
  ``volume.kubernetes.io/selected-node`` (event ``WaitForFirstConsumer``
  until then). A claim with no class and no volume gets ``FailedBinding``.
- Binding as ``bind``: the volume's ``claimRef`` (and
  ``pv.kubernetes.io/bound-by-controller``), its phase ``Bound``; the claim's
  ``volumeName``, ``pv.kubernetes.io/bind-completed`` (and
  ``bound-by-controller`` when the controller chose the volume), then its
  status: ``Bound``, the volume's access modes and capacity.
- The scheduler (``scheduler_ready``, called by the simulated kubelet's
  scheduler): a pod is bound to the node only once every claim it mounts is
  Bound; an unbound ``WaitForFirstConsumer`` claim is given the
  ``selected-node`` annotation first; a missing claim keeps the pod
  Unschedulable with kube's message.

Not simulated: volume expansion, volume attach and mount, the
``Recycle`` policy (as ``Delete``), generic ephemeral volumes (their claims
are not made, and pods mounting them are not held back), and binding of
claims whose class has ``kubernetes.io/no-provisioner`` other than to
existing volumes.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from pycontroller.labels import selector_from_label_selector
from pycontroller.testing.apiserver.registry.admission_limits import amounts
from pycontroller.testing.apiserver.registry.admission_plugins import default_storage_class
from pycontroller.testing.apiserver.registry.resource_quota import (
    BETA_CLASS_ANNOTATION,
    storage_class_of,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import InternalClient, meta

__all__ = ["DEFAULT_CLASS", "VolumeBinder"]

logger = logging.getLogger(__name__)

COMPONENT = "persistentvolume-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"

#: kind's default StorageClass.
DEFAULT_CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {IS_DEFAULT_CLASS: "true"}},
    "provisioner": "rancher.io/local-path",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer",
}


def _size(obj_resources: Any) -> Decimal:
    q = amounts(obj_resources).get("storage")
    return q.amount if q is not None else Decimal(0)


def _phase(obj: dict[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _claim_ref(claim: dict[str, Any]) -> dict[str, Any]:
    """A volume's ``claimRef`` to ``claim`` (``GetReference``)."""
    m = meta(claim)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "name": m.get("name"),
        "namespace": m.get("namespace"),
        "resourceVersion": m.get("resourceVersion"),
        "uid": m.get("uid"),
    }


def _claims_of(pod: dict[str, Any]) -> list[str]:
    """The claims a pod mounts (``persistentVolumeClaim`` volumes)."""
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        source = (v or {}).get("persistentVolumeClaim") if isinstance(v, dict) else None
        if isinstance(source, dict) and source.get("claimName"):
            out.append(str(source["claimName"]))
    return out


class VolumeBinder:
    """The persistentvolume-binder controller and a dynamic provisioner (see the module)."""

    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient, provisioner: InternalClient) -> None:
        self.c = c
        self.provisioner = provisioner
        self._announced: set[tuple[str, str]] = set()  # (claim uid, event reason)
        self._default_class_checked = False

    # --- types -----------------------------------------------------------------------

    def _types(self) -> tuple[ResourceType, ResourceType, ResourceType | None] | None:
        pv_rt = self.c.type("", "v1", "persistentvolumes")
        pvc_rt = self.c.type("", "v1", "persistentvolumeclaims")
        if pv_rt is None or pvc_rt is None:
            return None
        return pv_rt, pvc_rt, self.c.type("storage.k8s.io", "v1", "storageclasses")

    def _event_once(self, claim: dict[str, Any], etype: str, reason: str, message: str) -> None:
        key = (str(meta(claim).get("uid")), reason)
        if key not in self._announced:
            self._announced.add(key)
            self.c.event(claim, etype, reason, message, COMPONENT)

    # --- sync ------------------------------------------------------------------------

    def sync(self, at: float) -> float | None:
        types = self._types()
        if types is None:
            return None
        pv_rt, pvc_rt, sc_rt = types
        if sc_rt is not None and not self._default_class_checked:
            self._default_class_checked = True
            if not self.c.items(sc_rt):
                self.provisioner.create(sc_rt, {**DEFAULT_CLASS})
        claims = {
            (str(meta(c).get("namespace")), str(meta(c).get("name"))): c
            for c in self.c.items(pvc_rt)
        }
        for pv in self.c.items(pv_rt):
            self._sync_volume(pv_rt, pv, claims)
        volumes = {str(meta(v).get("name")): v for v in self.c.items(pv_rt)}
        for claim in claims.values():
            if meta(claim).get("deletionTimestamp"):
                continue
            if _phase(claim) in ("", "Pending"):
                self._sync_unbound_claim(pv_rt, pvc_rt, sc_rt, claim, volumes)
        return None

    def _sync_volume(
        self,
        pv_rt: ResourceType,
        pv: dict[str, Any],
        claims: dict[tuple[str, str], dict[str, Any]],
    ) -> None:
        """``syncVolume``: Available, Bound, or Released (deleted under Delete)."""
        if meta(pv).get("deletionTimestamp"):
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if not isinstance(ref, dict) or not ref.get("name"):
            self._set_phase(pv_rt, pv, "Available")
            return
        claim = claims.get((str(ref.get("namespace") or ""), str(ref.get("name"))))
        if claim is not None and (not ref.get("uid") or meta(claim).get("uid") == ref.get("uid")):
            if (claim.get("spec") or {}).get("volumeName") == meta(pv).get("name"):
                self._set_phase(pv_rt, pv, "Bound")
            return  # pre-bound or binding: the claim's sync finishes it
        if claim is not None or ref.get("uid"):
            # The claim is gone (or is another object of that name): released.
            # Released first (the pv-protection controller keeps a Bound
            # volume), then reclaimed: deleted by its provisioner under Delete.
            pv = self._set_phase(pv_rt, pv, "Released")
            policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
            provisioned = (meta(pv).get("annotations") or {}).get(ANN_PROVISIONED_BY)
            if policy in ("Delete", "Recycle") and provisioned:
                self.provisioner.delete(pv_rt, pv)

    def _set_phase(self, pv_rt: ResourceType, pv: dict[str, Any], phase: str) -> dict[str, Any]:
        """The volume with ``status.phase`` ``phase`` (written if it was not)."""
        if _phase(pv) == phase:
            return pv
        new = self.c.mutable(pv)
        new.setdefault("status", {})["phase"] = phase
        return self.c.update(pv_rt, new, status=True) or pv

    def _matches(self, claim: dict[str, Any], pv: dict[str, Any]) -> bool:
        """``findMatchingVolume``'s tests for one volume."""
        spec = pv.get("spec") or {}
        cspec = claim.get("spec") or {}
        if meta(pv).get("deletionTimestamp") or storage_class_of(pv) != storage_class_of(claim):
            return False
        ref = spec.get("claimRef")
        if isinstance(ref, dict) and ref.get("name"):
            if (ref.get("namespace"), ref.get("name")) != (
                meta(claim).get("namespace"),
                meta(claim).get("name"),
            ) or (ref.get("uid") and ref.get("uid") != meta(claim).get("uid")):
                return False  # bound or pre-bound to another claim
        elif _phase(pv) not in ("", "Available", "Pending"):
            return False
        if (spec.get("volumeMode") or "Filesystem") != (cspec.get("volumeMode") or "Filesystem"):
            return False
        if not set(cspec.get("accessModes") or []) <= set(spec.get("accessModes") or []):
            return False
        wanted = _size((cspec.get("resources") or {}).get("requests"))
        if _size(spec.get("capacity")) < wanted:
            return False
        selector = cspec.get("selector")
        if isinstance(selector, dict) and selector:
            try:
                if not selector_from_label_selector(selector).matches(meta(pv).get("labels") or {}):
                    return False
            except ValueError:
                return False
        return True

    def _sync_unbound_claim(
        self,
        pv_rt: ResourceType,
        pvc_rt: ResourceType,
        sc_rt: ResourceType | None,
        claim: dict[str, Any],
        volumes: dict[str, dict[str, Any]],
    ) -> None:
        cspec = claim.get("spec") or {}
        name = cspec.get("volumeName")
        if name:
            pv = volumes.get(str(name))
            if pv is not None and self._matches(claim, pv):
                self._bind(pv_rt, pvc_rt, pv, claim, by_controller=False)
            return
        candidates = [pv for pv in volumes.values() if self._matches(claim, pv)]
        if candidates:
            # Pre-bound volumes first, then the smallest.
            def rank(pv: dict[str, Any]) -> tuple[bool, Decimal]:
                ref = (pv.get("spec") or {}).get("claimRef")
                return (not isinstance(ref, dict), _size((pv.get("spec") or {}).get("capacity")))

            self._bind(pv_rt, pvc_rt, min(candidates, key=rank), claim, by_controller=True)
            return
        if (
            cspec.get("storageClassName") is None
            and BETA_CLASS_ANNOTATION not in (meta(claim).get("annotations") or {})
            and self._assign_default_class(pvc_rt, claim)
        ):
            return  # the next pass goes on with the class
        class_name = storage_class_of(claim)
        if not class_name:
            self._event_once(
                claim,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
            return
        sc = self.c.get(sc_rt, "", class_name) if sc_rt is not None else None
        if sc is None:
            self._event_once(
                claim,
                "Warning",
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{class_name}" not found',
            )
            return
        provisioner = str(sc.get("provisioner") or "")
        if provisioner == NO_PROVISIONER:
            return
        annotations = meta(claim).get("annotations") or {}
        if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not annotations.get(
            ANN_SELECTED_NODE
        ):
            self._event_once(
                claim,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            )
            return
        if annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
            new = self.c.mutable(claim)
            ann = meta(new).setdefault("annotations", {})
            ann[ANN_STORAGE_PROVISIONER] = provisioner
            ann[ANN_BETA_STORAGE_PROVISIONER] = provisioner
            if self.c.update(pvc_rt, new) is None:
                return
            self._event_once(
                claim,
                "Normal",
                "ExternalProvisioning",
                f"Waiting for a volume to be created either by the external provisioner "
                f"'{provisioner}' or manually by the system administrator. If volume creation "
                "is delayed, please verify that the provisioner is running and correctly "
                "registered.",
            )
            return
        self._provision(pv_rt, sc, claim, annotations.get(ANN_SELECTED_NODE))

    def _assign_default_class(self, pvc_rt: ResourceType, claim: dict[str, Any]) -> bool:
        """``assignDefaultStorageClass`` (retroactive default StorageClass,
        GA in 1.28): a claim with no class gets the default one; whether it
        was updated."""
        default = default_storage_class(self.c.rest)
        if default is None:
            return False
        new = self.c.mutable(claim)
        new.setdefault("spec", {})["storageClassName"] = default
        return self.c.update(pvc_rt, new) is not None

    def _provision(
        self, pv_rt: ResourceType, sc: dict[str, Any], claim: dict[str, Any], node: Any
    ) -> None:
        """The external provisioner: ``pvc-<uid>``, pre-bound to the claim."""
        m = meta(claim)
        name = f"pvc-{m.get('uid')}"
        if self.c.get(pv_rt, "", name) is not None:
            return
        cspec = claim.get("spec") or {}
        provisioner = str(sc.get("provisioner"))
        spec: dict[str, Any] = {
            "accessModes": list(cspec.get("accessModes") or []),
            "capacity": {
                "storage": ((cspec.get("resources") or {}).get("requests") or {}).get(
                    "storage", "0"
                )
            },
            "claimRef": _claim_ref(claim),
            "hostPath": {
                "path": f"/var/local-path-provisioner/{name}_{m.get('namespace')}_{m.get('name')}",
                "type": "DirectoryOrCreate",
            },
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": str(meta(sc).get("name")),
            "volumeMode": cspec.get("volumeMode") or "Filesystem",
        }
        if node:
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [str(node)],
                                }
                            ]
                        }
                    ]
                }
            }
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {ANN_PROVISIONED_BY: provisioner}},
            "spec": spec,
        }
        if self.provisioner.create(pv_rt, pv) is not None:
            self.provisioner.event(
                claim,
                "Normal",
                "ProvisioningSucceeded",
                f"Successfully provisioned volume {name}",
                provisioner,
            )

    def _bind(
        self,
        pv_rt: ResourceType,
        pvc_rt: ResourceType,
        pv: dict[str, Any],
        claim: dict[str, Any],
        *,
        by_controller: bool,
    ) -> None:
        """``bind``: the volume to the claim, its phase, the claim to the
        volume, its status; each step once (a later pass resumes)."""
        m = meta(claim)
        ref = (pv.get("spec") or {}).get("claimRef")
        if not isinstance(ref, dict) or ref.get("uid") != m.get("uid"):
            new = self.c.mutable(pv)
            new.setdefault("spec", {})["claimRef"] = _claim_ref(claim)
            if not isinstance(ref, dict) or not ref.get("name"):
                meta(new).setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
            out = self.c.update(pv_rt, new)
            if out is None:
                return
            pv = out
        self._set_phase(pv_rt, pv, "Bound")
        current = self.c.get(pvc_rt, str(m.get("namespace")), str(m.get("name")))
        if current is None or meta(current).get("uid") != m.get("uid"):
            return
        new = self.c.mutable(current)
        changed = False
        if (new.get("spec") or {}).get("volumeName") != meta(pv).get("name"):
            new.setdefault("spec", {})["volumeName"] = meta(pv).get("name")
            changed = True
        ann = meta(new).setdefault("annotations", {})
        wanted = {ANN_BIND_COMPLETED: "yes"}
        if by_controller:
            wanted[ANN_BOUND_BY_CONTROLLER] = "yes"
        for k, v in wanted.items():
            if ann.get(k) != v:
                ann[k] = v
                changed = True
        if changed:
            out = self.c.update(pvc_rt, new)
            if out is None:
                return
            new = self.c.mutable(out)
        pv_spec = pv.get("spec") or {}
        new["status"] = {
            **(new.get("status") or {}),
            "phase": "Bound",
            "accessModes": list(pv_spec.get("accessModes") or []),
            "capacity": dict(pv_spec.get("capacity") or {}),
        }
        self.c.update(pvc_rt, new, status=True)

    # --- the scheduler's VolumeBinding -------------------------------------------------

    def scheduler_ready(self, pod: dict[str, Any], node_name: str) -> str | None:
        """Whether ``pod`` may be bound to ``node_name`` now: None if every
        claim it mounts is Bound; else ``""`` while a ``WaitForFirstConsumer``
        claim is provisioned for it (given the ``selected-node`` annotation
        here first: the scheduler's PreBind), or the reason it is
        Unschedulable (a missing claim, an unbound immediate one)."""
        types = self._types()
        if types is None:
            return None
        _, pvc_rt, sc_rt = types
        ns = str(meta(pod).get("namespace") or "")
        verdict: str | None = None
        for name in _claims_of(pod):
            claim = self.c.get(pvc_rt, ns, name)
            if claim is None:
                return f'persistentvolumeclaim "{name}" not found'
            if _phase(claim) == "Bound":
                continue
            sc = self.c.get(sc_rt, "", storage_class_of(claim)) if sc_rt is not None else None
            if sc is None or sc.get("volumeBindingMode") != "WaitForFirstConsumer":
                return "pod has unbound immediate PersistentVolumeClaims"
            verdict = ""
            if not (meta(claim).get("annotations") or {}).get(ANN_SELECTED_NODE):
                new = self.c.mutable(claim)
                meta(new).setdefault("annotations", {})[ANN_SELECTED_NODE] = node_name
                self.c.update(pvc_rt, new)
        return verdict
