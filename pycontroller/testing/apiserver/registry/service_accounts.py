"""Service accounts as a cluster has them.

* kube-controller-manager's ``serviceaccount`` controller
  (``pkg/controller/serviceaccount``): every active namespace has a
  ``default`` ServiceAccount, created with the namespace and again if
  deleted (``ServiceAccountsController``, in-process as the garbage
  collector is; the initial namespaces get theirs at bootstrap).
* The ``ServiceAccount`` admission plugin (kube-apiserver 1.32, on by
  default; ``plugin/pkg/admission/serviceaccount``), on a pod create
  (``mutate``): ``spec.serviceAccountName`` defaults to ``default``; a pod
  naming a ServiceAccount that does not exist is kube's 403 (``error looking
  up service account ns/name: serviceaccount "name" not found``); unless the
  pod or its ServiceAccount turns ``automountServiceAccountToken`` off, the
  pod gets a ``kube-api-access-<random>`` projected volume (a bound token,
  the ``kube-root-ca.crt`` ConfigMap's ``ca.crt`` and the namespace),
  mounted read-only at ``/var/run/secrets/kubernetes.io/serviceaccount`` in
  every container and init container that has nothing mounted there; a pod
  without ``imagePullSecrets`` gets its ServiceAccount's.

kube's plugin looks the ``default`` ServiceAccount up again for about a
second when its cache misses, because the controller creates it right after
the namespace; here the controller's work is done at that moment instead, so
a pod created right after its namespace never races it.

Not here: the ``kube-root-ca.crt`` ConfigMap that kube-controller-manager's
root-CA publisher writes in every namespace (this server speaks plain HTTP:
it has no CA to publish), and token Secrets (kube 1.24+ creates none).
"""

from __future__ import annotations

import random
import threading
from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import forbidden

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = [
    "DEFAULT_NAME",
    "TOKEN_MOUNT_PATH",
    "ServiceAccountsController",
    "ensure_default",
    "mutate",
]

DEFAULT_NAME = "default"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_VOLUME_PREFIX = "kube-api-access-"
_ACCOUNTS = ("", "serviceaccounts")
_NAMESPACES = ("", "namespaces")
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# names.SimpleNameGenerator's alphabet (utilrand.String): no vowels, no 0/1/3.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MANAGER = "kube-controller-manager"


def _meta(obj: dict[str, Any] | None) -> dict[str, Any]:
    m = (obj or {}).get("metadata")
    return m if isinstance(m, dict) else {}


def _active(namespace: dict[str, Any] | None) -> bool:
    return namespace is not None and not _meta(namespace).get("deletionTimestamp")


def ensure_default(rest: REST, namespace: str) -> dict[str, Any] | None:
    """The namespace's ``default`` ServiceAccount, created (as the controller
    would) when the namespace is active and has none (lock held)."""
    current = rest.storage.get(_ACCOUNTS, namespace, DEFAULT_NAME)
    if current is not None:
        return current
    rt = rest.type_for(_ACCOUNTS)
    if rt is None or not _active(rest.storage.get(_NAMESPACES, "", namespace)):
        return None
    from pycontroller.testing.apiserver.registry.rest import WriteOptions

    body = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_NAME, "namespace": namespace},
    }
    opts = WriteOptions(field_manager=_MANAGER, user_agent=_MANAGER)
    created: dict[str, Any] = rest.create(rt, namespace, body, opts)
    return rest.storage.get(_ACCOUNTS, namespace, DEFAULT_NAME) or created


def _token_volume(name: str) -> dict[str, Any]:
    """``TokenVolumeSource``: what the plugin projects (defaultMode 0644)."""
    return {
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {
                                    "apiVersion": "v1",
                                    "fieldPath": "metadata.namespace",
                                },
                            }
                        ]
                    }
                },
            ],
            "defaultMode": 420,
        },
    }


def _automount(account: dict[str, Any], spec: dict[str, Any]) -> bool:
    """``shouldAutomount``: the pod's setting, else the ServiceAccount's, else on."""
    if isinstance(spec.get("automountServiceAccountToken"), bool):
        return bool(spec["automountServiceAccountToken"])
    if isinstance(account.get("automountServiceAccountToken"), bool):
        return bool(account["automountServiceAccountToken"])
    return True


def _mount_token(spec: dict[str, Any]) -> None:
    """``mountServiceAccountToken``."""
    volumes = spec.get("volumes")
    if not isinstance(volumes, list):
        volumes = []
    existing = next(
        (
            v["name"]
            for v in volumes
            if isinstance(v, dict) and str(v.get("name", "")).startswith(_VOLUME_PREFIX)
        ),
        None,
    )
    name = existing or _VOLUME_PREFIX + "".join(random.choices(_ALPHABET, k=5))
    needed = False
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            if not isinstance(mounts, list):
                mounts = container["volumeMounts"] = []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH})
            needed = True
    if existing is None and needed:
        spec["volumes"] = [*volumes, _token_volume(name)]


def mutate(rest: REST, rt: ResourceType, operation: str, pod: dict[str, Any]) -> None:
    """The plugin's ``Admit`` on a pod (lock held); see the module docstring."""
    if operation != "CREATE" or (rt.group, rt.plural) != ("", "pods"):
        return
    if _MIRROR_ANNOTATION in (_meta(pod).get("annotations") or {}):
        return
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("serviceAccountName"):
        # The v1 decoding takes the deprecated alias first
        # (Convert_v1_PodSpec_To_core_PodSpec), then the plugin defaults.
        spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_NAME
    name = str(spec["serviceAccountName"])
    namespace = str(_meta(pod).get("namespace") or "")
    if name == DEFAULT_NAME:
        account = ensure_default(rest, namespace)
    else:
        account = rest.storage.get(_ACCOUNTS, namespace, name)
    if account is None:
        raise forbidden(
            rt,
            str(_meta(pod).get("name") or ""),
            f"error looking up service account {namespace}/{name}: "
            f'serviceaccount "{name}" not found',
        )
    if _automount(account, spec):
        _mount_token(spec)
    if not spec.get("imagePullSecrets"):
        pulls = [
            {"name": s.get("name", "")}
            for s in account.get("imagePullSecrets") or []
            if isinstance(s, dict)
        ]
        if pulls:
            spec["imagePullSecrets"] = pulls


class ServiceAccountsController(BackgroundLoop):
    """kube-controller-manager's serviceaccount controller (see the module)."""

    thread_name = "apiserver-serviceaccounts"

    def __init__(self, rest: REST, *, debounce: float = 0.01) -> None:
        super().__init__(debounce)
        self.rest = rest
        self._pending: set[str] = set()
        rest.storage.add_listener(self._on_event)

    def _on_event(self, ev: Event) -> None:
        if ev.rkey == _NAMESPACES and ev.type == "ADDED":
            self._pending.add(ev.name)
        elif ev.rkey == _ACCOUNTS and ev.type == "DELETED" and ev.name == DEFAULT_NAME:
            self._pending.add(ev.namespace)
        else:
            return
        self._wake.set()

    def start(self) -> None:
        with self.rest.storage.lock:
            self._pending.update(
                str(_meta(ns).get("name")) for ns in self.rest.storage.items(_NAMESPACES)
            )
        super().start()

    def run_pass(self, stop: threading.Event) -> None:
        self.sync_once()

    def sync_once(self) -> int:
        """Create the missing ``default`` ServiceAccounts; returns how many."""
        created = 0
        with self.rest.storage.lock:
            pending, self._pending = self._pending, set()
            for namespace in sorted(pending):
                had = self.rest.storage.get(_ACCOUNTS, namespace, DEFAULT_NAME) is not None
                if not had and ensure_default(self.rest, namespace) is not None:
                    created += 1
        return created
