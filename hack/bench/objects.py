"""Realistic objects for the benchmarks: Pods of 4-8 KB and ConfigMaps of about 1 KB.

``pod(i)`` looks like what a kube-apiserver returns for a Deployment's pod that
a kubelet runs: ownerReferences, labels and annotations, ``managedFields`` of
three managers (kube-controller-manager, kubelet, a CI tool's apply), one to
three containers with env, ports, probes, resources and volume mounts, a
projected service-account volume plus ConfigMap/Secret/emptyDir volumes,
tolerations, and a status with five conditions and container statuses. The
size varies with ``i`` (deterministically) between about 4 and 8 KB of
compact JSON; ``pod_size_stats`` reports the spread.
"""

from __future__ import annotations

import json
import random
from typing import Any

__all__ = ["configmap", "pod", "pod_size_stats"]

NAMESPACE = "bench"
_TS = "2024-05-01T12:00:00Z"


def _uid(i: int, salt: int = 0) -> str:
    return f"{salt:08x}-0000-4000-8000-{i:012d}"


def _fields_v1(keys: list[str]) -> dict[str, Any]:
    """A FieldsV1 tree shaped like the server's (``f:`` keys, ``.`` leaves)."""
    out: dict[str, Any] = {}
    for path in keys:
        node = out
        for part in path.split("/"):
            node = node.setdefault(part, {})
    return out


def _container(rng: random.Random, app: str, n: int) -> dict[str, Any]:
    name = app if n == 0 else f"{app}-sidecar-{n}"
    env = [
        {"name": f"ENV_{k}_{rng.randrange(1000)}", "value": f"value-{rng.randrange(10**6)}"}
        for k in range(rng.randrange(1, 4))
    ]
    env.append(
        {
            "name": "POD_IP",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
        }
    )
    port = 8080 + n
    probes: dict[str, Any] = {}
    if n == 0:  # sidecars have no probes
        probes = {
            "readinessProbe": {
                "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                "periodSeconds": 10,
                "timeoutSeconds": 1,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
            "livenessProbe": {
                "tcpSocket": {"port": port},
                "initialDelaySeconds": 15,
                "periodSeconds": 20,
                "timeoutSeconds": 1,
                "successThreshold": 1,
                "failureThreshold": 3,
            },
        }
    return {
        "name": name,
        "image": f"registry.example.com/team/{name}:v1.{rng.randrange(40)}.{rng.randrange(9)}",
        "imagePullPolicy": "IfNotPresent",
        "args": ["--port", str(port), "--log-level", "info"],
        "env": env,
        "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
        "resources": {
            "limits": {"cpu": "500m", "memory": "256Mi"},
            "requests": {"cpu": "100m", "memory": "128Mi"},
        },
        **probes,
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": True},
            {"name": "cache", "mountPath": "/var/cache/app"},
            {
                "name": "kube-api-access",
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            },
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def _container_status(c: dict[str, Any], i: int) -> dict[str, Any]:
    return {
        "name": c["name"],
        "ready": True,
        "restartCount": i % 3,
        "image": c["image"],
        "imageID": f"{c['image'].split(':')[0]}@sha256:{i:064x}",
        "containerID": f"containerd://{i * 7919:064x}",
        "started": True,
        "state": {"running": {"startedAt": _TS}},
    }


def pod(i: int, rv: int, *, namespace: str = NAMESPACE) -> dict[str, Any]:
    """Pod number ``i`` at resourceVersion ``rv`` (same ``i``: same shape and size)."""
    rng = random.Random(i)
    app = f"app-{i % 97}"
    rs_hash = f"{rng.randrange(16**10):010x}"
    name = f"{app}-{rs_hash}-{i:06d}"
    containers = [_container(rng, app, n) for n in range(1 + i % 3)]
    labels = {
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/part-of": f"system-{i % 7}",
        "pod-template-hash": rs_hash,
        "tier": rng.choice(["frontend", "backend", "worker"]),
    }
    container_fields = [
        f"f:spec/f:containers/k:{{\"name\":\"{c['name']}\"}}/{f}"
        for c in containers
        for f in ("f:image", "f:env", "f:ports")
    ]
    status_fields = [
        f'f:status/f:conditions/k:{{"type":"{t}"}}/{f}'
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
        for f in ("f:lastTransitionTime", "f:status", ".")
    ]
    managed = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _TS,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields_v1(
                [
                    "f:metadata/f:generateName",
                    "f:metadata/f:labels/f:app.kubernetes.io~1name",
                    "f:metadata/f:labels/f:pod-template-hash",
                    'f:metadata/f:ownerReferences/k:{"uid":"x"}',
                    "f:spec/f:volumes",
                    "f:spec/f:tolerations",
                    *container_fields,
                ]
            ),
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": _TS,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields_v1(
                [*status_fields, "f:status/f:containerStatuses", "f:status/f:podIP"]
            ),
            "subresource": "status",
        },
    ]
    if i % 2:
        managed.append(
            {
                "manager": "argocd-controller",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": _TS,
                "fieldsType": "FieldsV1",
                "fieldsV1": _fields_v1(["f:metadata/f:annotations/f:deploy.example.com~1rev"]),
            }
        )
    conditions = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": _TS}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    ]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": _TS}
    )
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
        {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
        {
            "name": "kube-api-access",
            "projected": {
                "defaultMode": 420,
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
            },
        },
    ]
    if i % 4 == 0:
        volumes.append({"name": "tls", "secret": {"secretName": f"{app}-tls", "defaultMode": 420}})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{app}-{rs_hash}-",
            "namespace": namespace,
            "uid": _uid(i, 1),
            "resourceVersion": str(rv),
            "creationTimestamp": _TS,
            "labels": labels,
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": _TS,
                "deploy.example.com/rev": str(rng.randrange(10**9)),
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{rs_hash}",
                    "uid": _uid(i % 97, 2),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": managed,
        },
        "spec": {
            "volumes": volumes,
            "containers": containers,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": f"node-{i % 50:03d}",
            "securityContext": {"runAsNonRoot": True, "fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": f"10.0.{i % 50}.{1 + i % 200}",
            "hostIPs": [{"ip": f"10.0.{i % 50}.{1 + i % 200}"}],
            "podIP": f"10.244.{(i // 250) % 256}.{i % 250}",
            "podIPs": [{"ip": f"10.244.{(i // 250) % 256}.{i % 250}"}],
            "startTime": _TS,
            "containerStatuses": [_container_status(c, i) for c in containers],
            "qosClass": "Burstable",
        },
    }


def configmap(i: int, rv: int, *, namespace: str = NAMESPACE) -> dict[str, Any]:
    """ConfigMap number ``i`` (about 1 KB), as hack/bench/bench_informer.py's."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:06d}",
            "namespace": namespace,
            "uid": _uid(i, 3),
            "resourceVersion": str(rv),
            "creationTimestamp": _TS,
            "labels": {"app": "bench", "shard": str(i % 16)},
            "annotations": {"note": "x" * 64},
            "managedFields": [
                {
                    "manager": "kubectl-create",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": _TS,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:key": {}, "f:config.yaml": {}}},
                }
            ],
        },
        "data": {"key": f"value-{i}", "config.yaml": "a: 1\nb: [1, 2, 3]\nc: {d: e}\n" * 16},
    }


def pod_size_stats(n: int = 200) -> tuple[float, int, int]:
    """(mean, min, max) compact-JSON size in bytes of the first ``n`` pods."""
    sizes = [len(json.dumps(pod(i, 1), separators=(",", ":"))) for i in range(n)]
    return sum(sizes) / n, min(sizes), max(sizes)


if __name__ == "__main__":
    mean, lo, hi = pod_size_stats()
    cm = len(json.dumps(configmap(1, 1), separators=(",", ":")))
    print(f"pod JSON: mean {mean:.0f} B, min {lo} B, max {hi} B; configmap {cm} B")
