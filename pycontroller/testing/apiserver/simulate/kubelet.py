"""The simulated scheduler and kubelet of one Node (``node-1``).

- The Node ``node-1`` is registered (and re-registered if deleted) Ready, with
  kube's well-known labels, an InternalIP and Hostname address, capacity,
  allocatable and ``nodeInfo``. Its conditions are written once: there are
  no heartbeats and no Lease in ``kube-node-lease``.
- Scheduler: a pod with no ``spec.nodeName`` whose ``schedulerName`` is
  ``default-scheduler`` is bound to ``node-1`` when its ``nodeSelector`` and
  required node affinity (``matchExpressions`` on labels, ``matchFields`` on
  ``metadata.name``, as on DaemonSet pods) match the node; otherwise it gets
  ``PodScheduled=False`` (``Unschedulable``) and stays Pending. With the
  ``volumes`` simulation, a pod is bound only once the claims it mounts are
  Bound (``simulate/volumes.py``). Pod affinity, taints and resources are
  not considered.
- Kubelet: a pod bound to ``node-1`` (not terminating, not Succeeded or
  Failed) gets the status a kubelet writes once its containers run: phase
  ``Running``, ``hostIP(s)``, ``podIP(s)`` (from 10.244.0.0/16; the node's IP
  for ``hostNetwork`` pods), ``startTime``, conditions
  ``PodReadyToStartContainers``, ``Initialized``, ``Ready``,
  ``ContainersReady``, ``PodScheduled`` and a running, ready
  ``containerStatuses`` entry per container (init containers completed). Pods
  are Ready at once: probes are not run. ``spec.readinessGates`` are honoured,
  so a test keeps a pod unready by leaving its gate condition unset or False,
  and a pod's terminal phase written by a test (Failed, Succeeded) is kept.
  Containers never exit or restart.
- Graceful deletion: a pod of ``node-1`` being deleted (``deletionTimestamp``
  set, ``deletionGracePeriodSeconds`` > 0) is deleted with
  ``gracePeriodSeconds: 0`` and its uid as precondition, as the kubelet's
  status manager does once the containers have stopped, in the next pass
  (tens of milliseconds): the containers stop at once, whatever the grace
  period, so tests do not wait it out. The pod's status is not rewritten
  first (no terminated container states, no terminal phase). Pods bound to
  another node stay Terminating, as with a node that is gone.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.simulate.client import InternalClient, meta
from pycontroller.testing.apiserver.simulate.podutil import node_matches, now, pod_condition

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.simulate.volumes import VolumeBinder

__all__ = ["NODE_IP", "NODE_NAME", "Kubelet", "node_object"]

logger = logging.getLogger(__name__)

NODE_NAME = "node-1"
NODE_IP = "172.18.0.2"
KUBELET_VERSION = "v1.32.0"
SCHEDULER = "default-scheduler"

_NODE_LABELS = {
    "beta.kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/hostname": NODE_NAME,
    "kubernetes.io/os": "linux",
}
_KUBELET_CONDITIONS = (
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodScheduled",
)


def node_object() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "labels": dict(_NODE_LABELS),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": "10.244.0.0/16", "podCIDRs": ["10.244.0.0/16"]},
    }


def node_status(t: str) -> dict[str, Any]:
    resources = {
        "cpu": "4",
        "ephemeral-storage": "100Gi",
        "hugepages-2Mi": "0",
        "memory": "8Gi",
        "pods": "110",
    }

    def cond(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": ctype,
            "status": status,
            "lastHeartbeatTime": t,
            "lastTransitionTime": t,
            "reason": reason,
            "message": message,
        }

    return {
        "capacity": dict(resources),
        "allocatable": dict(resources),
        "conditions": [
            cond(
                "MemoryPressure",
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            cond(
                "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
            ),
            cond(
                "PIDPressure",
                "False",
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
            cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": NODE_IP},
            {"type": "Hostname", "address": NODE_NAME},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": hashlib.md5(NODE_NAME.encode()).hexdigest(),
            "systemUUID": "00000000-0000-0000-0000-000000000001",
            "bootID": "00000000-0000-0000-0000-000000000002",
            "kernelVersion": "6.1.0",
            "osImage": "pycontroller simulated node",
            "containerRuntimeVersion": "containerd://1.7.24",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def _image_name(image: str) -> str:
    """The image as the container runtime reports it (``nginx`` ->
    ``docker.io/library/nginx:latest``)."""
    name = image.split("@", 1)[0]
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    if ":" not in name.rsplit("/", 1)[-1] and "@" not in image:
        name += ":latest"
    return name


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _container_status(
    pod: dict[str, Any], c: dict[str, Any], old: dict[str, Any] | None, t: str, *, init: bool
) -> dict[str, Any]:
    name = str(c.get("name", ""))
    image = str(c.get("image", ""))
    image_name = _image_name(image)
    repo = image_name.rsplit(":", 1)[0] if "@" not in image else image.split("@", 1)[0]
    uid = str(meta(pod).get("uid", ""))
    same = old is not None and old.get("image") == image_name
    state: dict[str, Any]
    started_at = t
    if same and old is not None:
        prev = (old.get("state") or {}).get("running") or (old.get("state") or {}).get("terminated")
        if isinstance(prev, dict) and prev.get("startedAt"):
            started_at = prev["startedAt"]
    container_id = f"containerd://{_digest(uid, name, image)}"
    if init:
        state = {
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": started_at,
                "finishedAt": started_at,
                "containerID": container_id,
            }
        }
    else:
        state = {"running": {"startedAt": started_at}}
    return {
        "containerID": container_id,
        "image": image_name,
        "imageID": f"{repo}@sha256:{_digest(image_name)}",
        "lastState": {},
        "name": name,
        "ready": True,
        "restartCount": 0,
        "started": not init,
        "state": state,
    }


def _readiness_gates(pod: dict[str, Any]) -> tuple[bool, str]:
    """Whether every ``spec.readinessGates`` condition is True, and kube's
    message for the first that is not."""
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        ctype = (gate or {}).get("conditionType")
        cond = pod_condition(pod, str(ctype))
        if cond is None:
            return False, f'corresponding condition of pod readiness gate "{ctype}" does not exist.'
        if cond.get("status") != "True":
            return (
                False,
                f'the status of pod readiness gate "{ctype}" is not "True", '
                f'but {cond.get("status")}',
            )
    return True, ""


class Kubelet:
    field_manager = "kubelet"

    def __init__(
        self,
        kubelet: InternalClient,
        scheduler: InternalClient,
        *,
        volumes: VolumeBinder | None = None,
    ) -> None:
        self.c = kubelet
        self.scheduler = scheduler
        # With the volumes simulation: the scheduler's VolumeBinding step.
        self.volumes = volumes
        self._next_ip = 1

    def sync(self, at: float) -> float | None:
        node_rt = self.c.type("", "v1", "nodes")
        pod_rt = self.c.type("", "v1", "pods")
        if pod_rt is None:
            return None
        node = self._ensure_node(node_rt) if node_rt is not None else node_object()
        pods = self.c.items(pod_rt)
        used = {str((p.get("status") or {}).get("podIP")) for p in pods}
        for pod in pods:
            spec = pod.get("spec") or {}
            if meta(pod).get("deletionTimestamp"):
                if spec.get("nodeName") == NODE_NAME:
                    self._finish_deletion(pod_rt, pod)
                continue
            node_name = spec.get("nodeName")
            if not node_name:
                if spec.get("schedulerName", SCHEDULER) == SCHEDULER:
                    bound = self._schedule(pod_rt, pod, node)
                    if bound is not None:
                        self._run(pod_rt, bound, used)
            elif node_name == NODE_NAME:
                self._run(pod_rt, pod, used)
        return None

    def _ensure_node(self, node_rt: ResourceType) -> dict[str, Any]:
        node = self.c.get(node_rt, "", NODE_NAME)
        if node is None:
            node = self.c.create(node_rt, node_object())
            if node is None:
                return node_object()
        if not (node.get("status") or {}).get("conditions"):
            new = self.c.mutable(node)
            new["status"] = node_status(now())
            node = self.c.update(node_rt, new, status=True) or node
        return node

    # --- scheduler ---------------------------------------------------------------

    def _schedule(
        self, pod_rt: ResourceType, pod: dict[str, Any], node: dict[str, Any]
    ) -> dict[str, Any] | None:
        if not node_matches(pod.get("spec") or {}, node):
            self._unschedulable(pod_rt, pod, "1 node(s) didn't match Pod's node affinity/selector")
            return None
        if self.volumes is not None:
            why = self.volumes.scheduler_ready(pod, NODE_NAME)
            if why:
                self._unschedulable(pod_rt, pod, why)
            if why is not None:
                return None
        return self.scheduler.bind(pod_rt, pod, NODE_NAME, now())

    def _unschedulable(self, pod_rt: ResourceType, pod: dict[str, Any], why: str) -> None:
        """``PodScheduled=False`` (``Unschedulable``) with the scheduler's
        message for one node, once per reason."""
        message = (
            f"0/1 nodes are available: {why}. preemption: 0/1 nodes are available: "
            "1 Preemption is not helpful for scheduling."
        )
        cond = pod_condition(pod, "PodScheduled")
        if (
            cond is not None
            and cond.get("reason") == "Unschedulable"
            and (cond.get("message") == message)
        ):
            return
        new = self.scheduler.mutable(pod)
        status = new.setdefault("status", {})
        others = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"] = [
            *others,
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": now(),
                "reason": "Unschedulable",
                "message": message,
            },
        ]
        self.scheduler.update(pod_rt, new, status=True)

    # --- kubelet -------------------------------------------------------------------

    def _finish_deletion(self, pod_rt: ResourceType, pod: dict[str, Any]) -> None:
        """A pod of this node in its grace period: the kubelet stops its
        containers (at once: there are none) and its status manager deletes it
        with ``gracePeriodSeconds: 0`` and a uid precondition. A pod whose
        grace period is already 0 waits for its finalizers: nothing to do."""
        if not meta(pod).get("deletionGracePeriodSeconds"):
            return
        self.c.delete(pod_rt, pod, grace_period_seconds=0)

    def _alloc_ip(self, used: set[str]) -> str:
        while True:
            n = self._next_ip
            self._next_ip = self._next_ip % 65533 + 1
            ip = f"10.244.{n >> 8}.{n & 0xFF}"
            if (n & 0xFF) not in (0, 255) and ip not in used:
                used.add(ip)
                return ip

    def _run(self, pod_rt: ResourceType, pod: dict[str, Any], used: set[str]) -> None:
        old = pod.get("status") or {}
        if old.get("phase") in ("Succeeded", "Failed"):
            return
        spec = pod.get("spec") or {}
        t = now()
        if spec.get("hostNetwork"):
            pod_ip = NODE_IP
        else:
            pod_ip = str(old.get("podIP") or "") or self._alloc_ip(used)
        start = old.get("startTime") or t
        old_cs = {
            str(cs.get("name")): cs
            for cs in old.get("containerStatuses") or []
            if isinstance(cs, dict)
        }
        old_ics = {
            str(cs.get("name")): cs
            for cs in old.get("initContainerStatuses") or []
            if isinstance(cs, dict)
        }
        gates_ok, gates_msg = _readiness_gates(pod)

        def cond(ctype: str, ok: bool, reason: str = "", message: str = "") -> dict[str, Any]:
            current = pod_condition(pod, ctype)
            status = "True" if ok else "False"
            since = t
            if current is not None and current.get("status") == status:
                since = current.get("lastTransitionTime") or t
            out: dict[str, Any] = {
                "type": ctype,
                "status": status,
                "lastProbeTime": None,
                "lastTransitionTime": since,
            }
            if reason:
                out["reason"] = reason
                out["message"] = message
            return out

        conditions = [
            cond("PodReadyToStartContainers", True),
            cond("Initialized", True),
            cond("Ready", gates_ok, "" if gates_ok else "ReadinessGatesNotReady", gates_msg),
            cond("ContainersReady", True),
            cond("PodScheduled", True),
        ]
        conditions += [
            c
            for c in old.get("conditions") or []
            if isinstance(c, dict) and c.get("type") not in _KUBELET_CONDITIONS
        ]
        status: dict[str, Any] = {"phase": "Running", "conditions": conditions}
        status["hostIP"] = NODE_IP
        status["hostIPs"] = [{"ip": NODE_IP}]
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
        status["startTime"] = start
        init = [c for c in spec.get("initContainers") or [] if isinstance(c, dict)]
        if init:
            status["initContainerStatuses"] = [
                _container_status(pod, c, old_ics.get(str(c.get("name"))), t, init=True)
                for c in init
            ]
        status["containerStatuses"] = [
            _container_status(pod, c, old_cs.get(str(c.get("name"))), t, init=False)
            for c in spec.get("containers") or []
            if isinstance(c, dict)
        ]
        for key in ("qosClass", "ephemeralContainerStatuses", "resourceClaimStatuses"):
            if key in old:
                status[key] = old[key]
        if status == old:
            return
        new = self.c.mutable(pod)
        new["status"] = status
        self.c.update(pod_rt, new, status=True)
