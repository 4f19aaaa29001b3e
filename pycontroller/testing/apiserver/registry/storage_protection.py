"""Storage object in-use protection, as a cluster runs it.

* The ``StorageObjectInUseProtection`` admission plugin (kube-apiserver 1.32,
  on by default; ``plugin/pkg/admission/storage/storageobjectinuseprotection``):
  a new PersistentVolumeClaim gets the ``kubernetes.io/pvc-protection``
  finalizer, a new PersistentVolume ``kubernetes.io/pv-protection`` (``mutate``,
  called from ``admission_plugins``).
* kube-controller-manager's ``pvc-protection`` and ``pv-protection``
  controllers (``pkg/controller/volume/pvcprotection``, ``pvprotection``),
  in-process as the garbage collector is (``ProtectionController``): a
  deleted claim loses its finalizer, and goes, once no scheduled pod of its
  namespace uses it (a ``persistentVolumeClaim`` volume naming it, or a
  generic ephemeral volume ``<pod>-<volume>`` of a pod not yet finished); a
  deleted volume once it is no longer ``Bound``.

So a claim deleted while a pod mounts it stays ``Terminating`` until that
pod is gone, as on a cluster (envtest, with no controller-manager, keeps it
forever).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.resource_types import ResourceType

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = ["PROTECTED", "PVC_FINALIZER", "PV_FINALIZER", "ProtectionController", "mutate"]

PVC_FINALIZER = "kubernetes.io/pvc-protection"
PV_FINALIZER = "kubernetes.io/pv-protection"
_CLAIMS = ("", "persistentvolumeclaims")
_VOLUMES = ("", "persistentvolumes")
_PODS = ("", "pods")
#: The storage keys the admission plugin protects, with their finalizer.
PROTECTED = {_CLAIMS: PVC_FINALIZER, _VOLUMES: PV_FINALIZER}


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def mutate(rt: ResourceType, operation: str, obj: dict[str, Any]) -> None:
    """``admitPVC`` / ``admitPV``: the protection finalizer on a new claim or volume."""
    finalizer = PROTECTED.get((rt.group, rt.plural))
    if finalizer is None or operation != "CREATE":
        return
    meta = obj.setdefault("metadata", {})
    finalizers = meta.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = meta["finalizers"] = []
    if finalizer not in finalizers:
        finalizers.append(finalizer)


def _uses(pod: dict[str, Any], claim: str) -> bool:
    """``podUsesPVC``: only a scheduled pod holds a claim."""
    spec = pod.get("spec") or {}
    if not spec.get("nodeName"):
        return False
    finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    pod_name = str(_meta(pod).get("name") or "")
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        source = volume.get("persistentVolumeClaim")
        if isinstance(source, dict) and source.get("claimName") == claim:
            return True
        ephemeral = volume.get("ephemeral") is not None
        if ephemeral and not finished and f"{pod_name}-{volume.get('name')}" == claim:
            return True
    return False


def _terminating(obj: dict[str, Any] | None, finalizer: str) -> bool:
    meta = _meta(obj or {})
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or ())


class ProtectionController(BackgroundLoop):
    """The pvc-protection and pv-protection controllers (see the module)."""

    thread_name = "apiserver-storage-protection"

    def __init__(self, rest: REST, *, debounce: float = 0.01) -> None:
        super().__init__(debounce)
        self.rest = rest
        # Namespaces with a terminating protected claim: only their pods matter.
        self._waiting: set[str] = set()
        rest.storage.add_listener(self._on_event)

    def _on_event(self, ev: Event) -> None:
        if ev.rkey == _CLAIMS and ev.type != "DELETED":
            if _terminating(ev.obj, PVC_FINALIZER):
                self._waiting.add(ev.namespace)
                self._wake.set()
        elif ev.rkey == _VOLUMES and ev.type != "DELETED":
            if _terminating(ev.obj, PV_FINALIZER):
                self._wake.set()
        elif ev.rkey == _PODS and ev.namespace in self._waiting:
            self._wake.set()

    def run_pass(self, stop: threading.Event) -> None:
        self.sync_once()

    def sync_once(self) -> int:
        """Release every terminating claim and volume no longer in use; returns how many."""
        rest = self.rest
        released = 0
        with rest.storage.lock:
            claims_rt, volumes_rt = rest.type_for(_CLAIMS), rest.type_for(_VOLUMES)
            waiting: set[str] = set()
            if claims_rt is not None:
                for claim in rest.storage.items(_CLAIMS):
                    if not _terminating(claim, PVC_FINALIZER):
                        continue
                    ns = str(_meta(claim).get("namespace") or "")
                    name = str(_meta(claim).get("name") or "")
                    if any(_uses(pod, name) for pod in rest.storage.items(_PODS, ns)):
                        waiting.add(ns)
                        continue
                    rest.remove_finalizer_locked(claims_rt, claim, PVC_FINALIZER)
                    released += 1
            if volumes_rt is not None:
                for volume in rest.storage.items(_VOLUMES):
                    bound = (volume.get("status") or {}).get("phase") == "Bound"
                    if _terminating(volume, PV_FINALIZER) and not bound:
                        rest.remove_finalizer_locked(volumes_rt, volume, PV_FINALIZER)
                        released += 1
            self._waiting = waiting
        return released
