"""The simulated EndpointSlice controller (kube's
``pkg/controller/endpointslice`` and ``k8s.io/endpointslice``).

For every Service with a ``selector`` (not ``ExternalName``), IPv4
EndpointSlices named ``<service>-<random>``, labelled
``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io`` (plus the Service's labels and, for
headless Services, ``service.kubernetes.io/headless``), owned by the Service
through a controller reference (so the garbage collector deletes them with
it). One slice per distinct set of resolved ports, at most 100 endpoints
each; an endpoint per pod with an IP (terminating pods included), with
``conditions`` ``ready``/``serving``/``terminating``, ``nodeName`` and a
``targetRef``. A Service selecting no pods gets one empty placeholder slice.
Existing slices are reused and rewritten only when their endpoints, ports or
labels change (kube's reconciler packs slices more cleverly; the set of
endpoints and ports served is the same). Dual-stack (IPv6) slices and
topology hints are not simulated.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import (
    InternalClient,
    controller_ref,
    meta,
    owner_uid,
)
from pycontroller.testing.apiserver.simulate.endpoints import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    is_headless,
    selected_pods,
    should_be_in_endpoints,
    trigger_time,
)
from pycontroller.testing.apiserver.simulate.podutil import find_port, is_ready

__all__ = ["MANAGED_BY", "MAX_ENDPOINTS_PER_SLICE", "SERVICE_NAME_LABEL", "EndpointSliceController"]

logger = logging.getLogger(__name__)

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100


def _slice_ports(svc: dict[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]]:
    """``getEndpointPorts``: every Service port the pod resolves (name always set)."""
    out = []
    for sp in (svc.get("spec") or {}).get("ports") or []:
        if not isinstance(sp, dict):
            continue
        n = find_port(pod, sp)
        if n is None:
            continue
        port: dict[str, Any] = {
            "name": sp.get("name", ""),
            "port": n,
            "protocol": sp.get("protocol", "TCP"),
        }
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        out.append(port)
    return out


def _endpoint(svc: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """``podToEndpoint``."""
    publish = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    ready = publish or is_ready(pod)
    terminating = bool(meta(pod).get("deletionTimestamp"))
    m = meta(pod)
    return {
        "addresses": [(pod.get("status") or {}).get("podIP")],
        "conditions": {"ready": ready, "serving": ready, "terminating": terminating},
        "targetRef": {
            "kind": "Pod",
            "namespace": m.get("namespace"),
            "name": m.get("name"),
            "uid": m.get("uid"),
        },
        "nodeName": (pod.get("spec") or {}).get("nodeName", ""),
    }


def _labels(svc: dict[str, Any]) -> dict[str, str]:
    """``setEndpointSliceLabels``."""
    labels = {
        k: v
        for k, v in (meta(svc).get("labels") or {}).items()
        if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)
    }
    labels[SERVICE_NAME_LABEL] = str(meta(svc).get("name"))
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    if is_headless(svc):
        labels[HEADLESS_LABEL] = ""
    return labels


def desired_slices(
    svc: dict[str, Any], pods: list[dict[str, Any]]
) -> list[tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]]:
    """(ports, endpoints) of each slice the Service needs; a placeholder
    ``(None, None)`` when it selects no pod with an IP."""
    groups: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for pod in sorted(pods, key=lambda p: str(meta(p).get("name"))):
        if not should_be_in_endpoints(pod, True):
            continue
        ports = _slice_ports(svc, pod)
        key = repr(ports)
        groups.setdefault(key, (ports, []))[1].append(_endpoint(svc, pod))
    out: list[tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]] = []
    for ports, endpoints in groups.values():
        for i in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE):
            out.append((ports or None, endpoints[i : i + MAX_ENDPOINTS_PER_SLICE]))
    return out or [(None, None)]


class EndpointSliceController:
    field_manager = "endpointslice-controller"

    def __init__(self, c: InternalClient) -> None:
        self.c = c

    def sync(self, at: float) -> float | None:
        svc_rt = self.c.type("", "v1", "services")
        pod_rt = self.c.type("", "v1", "pods")
        es_rt = self.c.type("discovery.k8s.io", "v1", "endpointslices")
        if svc_rt is None or pod_rt is None or es_rt is None:
            return None
        services = self.c.items(svc_rt)
        selected = selected_pods(services, self.c.items(pod_rt))
        slices_by_owner: dict[str, list[dict[str, Any]]] = {}
        for es in self.c.items(es_rt):
            uid = owner_uid(es)
            if uid and (meta(es).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY:
                slices_by_owner.setdefault(uid, []).append(es)
        for svc in services:
            uid = str(meta(svc).get("uid"))
            pods = selected.get(uid)
            if pods is None or meta(svc).get("deletionTimestamp"):
                continue
            existing = sorted(slices_by_owner.get(uid, []), key=lambda s: str(meta(s).get("name")))
            self._sync_service(es_rt, svc, pods, existing, at)
        return None

    def _sync_service(
        self,
        es_rt: ResourceType,
        svc: dict[str, Any],
        pods: list[dict[str, Any]],
        existing: list[dict[str, Any]],
        at: float,
    ) -> None:
        labels = _labels(svc)
        wanted = desired_slices(svc, pods)
        unused = list(existing)
        todo: list[tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]] = []
        # Unchanged slices first, so that they stay as they are.
        for ports, endpoints in wanted:
            same = next(
                (
                    s
                    for s in unused
                    if s.get("ports") == ports
                    and s.get("endpoints") == endpoints
                    and meta(s).get("labels") == labels
                ),
                None,
            )
            if same is not None:
                unused.remove(same)
            else:
                todo.append((ports, endpoints))
        for ports, endpoints in todo:
            reuse = next((s for s in unused if s.get("ports") == ports), None)
            if reuse is None and unused:
                reuse = unused[0]
            if reuse is not None:
                unused.remove(reuse)
                new = self.c.mutable(reuse)
                new["metadata"]["labels"] = dict(labels)
                new["metadata"].setdefault("annotations", {})[LAST_CHANGE_TRIGGER_TIME] = (
                    trigger_time(at)
                )
                new["endpoints"] = copy.deepcopy(endpoints)
                new["ports"] = copy.deepcopy(ports)
                self.c.update(es_rt, new)
                continue
            name = str(meta(svc).get("name"))
            slice_obj: dict[str, Any] = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "generateName": f"{name}-",
                    "namespace": meta(svc).get("namespace"),
                    "labels": dict(labels),
                    "annotations": {LAST_CHANGE_TRIGGER_TIME: trigger_time(at)},
                    "ownerReferences": [
                        {**controller_ref(svc), "apiVersion": "v1", "kind": "Service"}
                    ],
                },
                "addressType": "IPv4",
                "endpoints": copy.deepcopy(endpoints),
                "ports": copy.deepcopy(ports),
            }
            self.c.create(es_rt, slice_obj)
        for s in unused:
            self.c.delete(es_rt, s)
