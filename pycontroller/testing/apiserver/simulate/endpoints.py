"""The simulated Endpoints controller (kube's ``pkg/controller/endpoint``).

For every Service with a ``selector`` (not ``ExternalName``), an Endpoints
object of the same name: the Service's labels (plus
``service.kubernetes.io/headless`` for headless Services), subsets of the
selected pods that have an IP (ready pods under ``addresses``, others under
``notReadyAddresses``; terminating and finished pods left out unless
``publishNotReadyAddresses``), each address with ``ip``, ``nodeName`` and a
``targetRef`` to the pod, ports resolved from ``targetPort`` (named ports
looked up in the pod's containers, a pod lacking one is skipped for that
port), repacked as ``endpoints.RepackSubsets`` does, and the
``endpoints.kubernetes.io/last-change-trigger-time`` annotation. It is
rewritten only when subsets or labels change. Deleting a Service deletes its
Endpoints; Endpoints of Services without a selector are left to their
writers. The 1000-address truncation is not simulated.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.labels import selector_from_set
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import InternalClient, meta
from pycontroller.testing.apiserver.simulate.podutil import find_port, is_ready

__all__ = [
    "HEADLESS_LABEL",
    "LAST_CHANGE_TRIGGER_TIME",
    "EndpointsController",
    "selected_pods",
    "should_be_in_endpoints",
]

logger = logging.getLogger(__name__)

LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_LABEL = "service.kubernetes.io/headless"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"


def trigger_time(at: float) -> str:
    return format_rfc3339(at, micro=True)


def selected_pods(
    services: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Per Service uid, the pods of its namespace its selector matches (only
    Services the endpoint controllers handle: a selector, not ExternalName)."""
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_ns.setdefault(str(meta(pod).get("namespace")), []).append(pod)
    out: dict[str, list[dict[str, Any]]] = {}
    for svc in services:
        spec = svc.get("spec") or {}
        selector = spec.get("selector")
        if not isinstance(selector, dict) or spec.get("type") == "ExternalName":
            continue
        matcher = selector_from_set(selector)
        out[str(meta(svc).get("uid"))] = [
            p
            for p in by_ns.get(str(meta(svc).get("namespace")), [])
            if matcher.matches(meta(p).get("labels") or {})
        ]
    return out


def should_be_in_endpoints(pod: dict[str, Any], include_terminating: bool) -> bool:
    """``endpointsliceutil.ShouldPodBeInEndpoints``."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not meta(pod).get("deletionTimestamp")


def is_headless(svc: dict[str, Any]) -> bool:
    return (svc.get("spec") or {}).get("clusterIP") in (None, "", "None")


def _address(pod: dict[str, Any]) -> dict[str, Any]:
    m = meta(pod)
    return {
        "ip": (pod.get("status") or {}).get("podIP"),
        "nodeName": (pod.get("spec") or {}).get("nodeName", ""),
        "targetRef": {
            "kind": "Pod",
            "namespace": m.get("namespace"),
            "name": m.get("name"),
            "uid": m.get("uid"),
        },
    }


def endpoint_port(service_port: dict[str, Any], port: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if service_port.get("name"):
        out["name"] = service_port["name"]
    out["port"] = port
    out["protocol"] = service_port.get("protocol", "TCP")
    if service_port.get("appProtocol"):
        out["appProtocol"] = service_port["appProtocol"]
    return out


def _addr_key(addr: dict[str, Any]) -> tuple[str, str]:
    return (str(addr.get("ip")), str((addr.get("targetRef") or {}).get("uid")))


def desired_subsets(svc: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subsets ``syncService`` computes, repacked (``RepackSubsets``):
    addresses grouped by the set of ports they serve."""
    spec = svc.get("spec") or {}
    tolerate = bool(spec.get("publishNotReadyAddresses"))
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    # address key -> (address, ready, ports)
    entries: dict[tuple[str, str], tuple[dict[str, Any], bool, list[dict[str, Any]]]] = {}
    for pod in pods:
        if not should_be_in_endpoints(pod, tolerate):
            continue
        addr = _address(pod)
        ready = tolerate or is_ready(pod)
        if not ports:
            if is_headless(svc):
                entries[_addr_key(addr)] = (addr, ready, [])
            continue
        served = []
        for sp in ports:
            n = find_port(pod, sp)
            if n is not None:
                served.append(endpoint_port(sp, n))
        if served:
            entries[_addr_key(addr)] = (addr, ready, served)
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for addr, ready, served in entries.values():
        key = repr(sorted(repr(sorted(p.items())) for p in served))
        group = groups.setdefault(key, ([], [], served))
        (group[0] if ready else group[1]).append(addr)
    subsets = []
    for ready_addrs, not_ready, served in groups.values():
        subset: dict[str, Any] = {}
        if ready_addrs:
            subset["addresses"] = sorted(ready_addrs, key=_addr_key)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=_addr_key)
        if served:
            subset["ports"] = sorted(served, key=lambda p: (p.get("name", ""), p["port"]))
        subsets.append(subset)
    subsets.sort(
        key=lambda s: _addr_key([*s.get("addresses", []), *s.get("notReadyAddresses", [])][0])
    )
    return subsets


class EndpointsController:
    field_manager = "kube-controller-manager"

    def __init__(self, c: InternalClient) -> None:
        self.c = c
        self._lock = threading.Lock()
        self._deleted: set[tuple[str, str]] = set()  # Services deleted since the last pass

    def service_deleted(self, namespace: str, name: str) -> None:
        """Called by the storage listener (quick, no writes)."""
        with self._lock:
            self._deleted.add((namespace, name))

    def sync(self, at: float) -> float | None:
        svc_rt = self.c.type("", "v1", "services")
        pod_rt = self.c.type("", "v1", "pods")
        ep_rt = self.c.type("", "v1", "endpoints")
        if svc_rt is None or pod_rt is None or ep_rt is None:
            return None
        with self._lock:
            deleted, self._deleted = self._deleted, set()
        for ns, name in sorted(deleted):
            ep = self.c.get(ep_rt, ns, name)
            if (
                ep is not None
                and self.c.get(svc_rt, ns, name) is None
                and LEADER_ANNOTATION not in (meta(ep).get("annotations") or {})
            ):
                self.c.delete(ep_rt, ep)
        services = self.c.items(svc_rt)
        selected = selected_pods(services, self.c.items(pod_rt))
        for svc in services:
            pods = selected.get(str(meta(svc).get("uid")))
            if pods is not None and not meta(svc).get("deletionTimestamp"):
                self._sync_service(ep_rt, svc, pods, at)
        return None

    def _sync_service(
        self, ep_rt: ResourceType, svc: dict[str, Any], pods: list[dict[str, Any]], at: float
    ) -> None:
        m = meta(svc)
        ns, name = str(m.get("namespace")), str(m.get("name"))
        subsets = desired_subsets(svc, pods)
        labels = dict(m.get("labels") or {})
        if is_headless(svc):
            labels[HEADLESS_LABEL] = ""
        current = self.c.get(ep_rt, ns, name)
        if current is not None:
            cur_labels = meta(current).get("labels") or {}
            if (current.get("subsets") or []) == subsets and cur_labels == labels:
                return
            new = self.c.mutable(current)
        else:
            new = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": ns},
            }
        nmeta = new["metadata"]
        if labels:
            nmeta["labels"] = labels
        else:
            nmeta.pop("labels", None)
        nmeta.setdefault("annotations", {})[LAST_CHANGE_TRIGGER_TIME] = trigger_time(at)
        if subsets:
            new["subsets"] = subsets
        else:
            new.pop("subsets", None)
        if current is None:
            self.c.create(ep_rt, new)
        else:
            self.c.update(ep_rt, new)
