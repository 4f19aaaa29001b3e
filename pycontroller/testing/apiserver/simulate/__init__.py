"""Simulated workloads: what a cluster's controllers and kubelet would do.

``APIServer(simulate=[...])`` (``--simulate NAME`` on ``python -m
pycontroller.testing.apiserver``; the first three under a Manager's
``--embedded``, ``DEFAULT_SIMULATIONS``)
runs, inside the server, stand-ins for the kube components a controller's
objects depend on, so that a Deployment becomes available, a Service gets
endpoints, and ``kubectl rollout status`` finishes. Off by default: a plain
``APIServer()`` stores objects and nothing acts on them, as kube-apiserver
alone (or envtest) does.

================ ==============================================================
name             simulates
================ ==============================================================
``deployments``  kube-controller-manager's Deployment and ReplicaSet
                 controllers (``deployment.py``, ``replicaset.py``):
                 ReplicaSets ``<deployment>-<pod-template-hash>`` with revision
                 annotations, pods with controller references, RollingUpdate and
                 Recreate rollouts, rollbacks, scaling (also through the scale
                 subresource), revision history cleanup, and Deployment/ReplicaSet
                 ``status`` with ``observedGeneration`` and the ``Available`` /
                 ``Progressing`` conditions, reasons and messages kube writes.
``kubelet``      the scheduler and the kubelet of one Node, ``node-1``
                 (``kubelet.py``): pods are bound to it and run: ``Running``,
                 a pod IP, ready container statuses and the conditions
                 ``PodReadyToStartContainers``, ``Initialized``, ``Ready``,
                 ``ContainersReady``, ``PodScheduled``; a deleted pod
                 (Terminating for its grace period, as the server deletes
                 pods gracefully) is deleted with ``gracePeriodSeconds: 0`` in
                 the next pass, without waiting out the grace period.
``endpoints``    the Endpoints and EndpointSlice controllers (``endpoints.py``,
                 ``endpointslice.py``): for Services with a selector, from the
                 selected pods' IPs and the Service's (resolved) ports.
``disruption``   kube-controller-manager's disruption controller
                 (``disruption.py``): PodDisruptionBudget ``status``
                 (``expectedPods``, ``currentHealthy``, ``desiredHealthy``,
                 ``disruptionsAllowed``, ``disruptedPods`` expiry,
                 ``observedGeneration``, the ``DisruptionAllowed`` condition),
                 which the ``pods/eviction`` subresource checks. Opt-in: not
                 under ``--embedded``.
``jobs``         kube-controller-manager's Job and TTL-after-finished
                 controllers (``job.py``): pods ``<job>-<random>`` (Indexed:
                 ``<job>-<index>-<random>``, index label, annotation and env)
                 with a controller reference and the
                 ``batch.kubernetes.io/job-tracking`` finalizer, removed once
                 counted; ``parallelism``, ``completions`` (NonIndexed and
                 Indexed, ``completedIndexes``), ``backoffLimit``,
                 ``activeDeadlineSeconds``, ``suspend``,
                 ``ttlSecondsAfterFinished``; ``status`` ``active``,
                 ``ready``, ``terminating``, ``succeeded``, ``failed``,
                 ``startTime``, ``completionTime``,
                 ``uncountedTerminatedPods`` and the conditions of 1.32's
                 default gates: ``SuccessCriteriaMet`` then ``Complete``
                 (``CompletionsReached``), ``FailureTarget`` then ``Failed``
                 (``BackoffLimitExceeded``, ``DeadlineExceeded``),
                 ``Suspended``. With ``kubelet`` too, a Job's Running pod's
                 containers exit (as the kubelet writes it): 0 by default, so
                 it succeeds; the pod template annotations
                 ``simulate.pycontroller.dev/exit-code`` and
                 ``simulate.pycontroller.dev/run-seconds`` make it fail or run
                 longer. Opt-in: not under ``--embedded`` (Jobs there stay as
                 stored, as before).
``statefulsets`` kube-controller-manager's StatefulSet controller
                 (``statefulset.py``): pods ``<set>-<ordinal>`` (from
                 ``spec.ordinals.start``) with ``controller-revision-hash``,
                 ``statefulset.kubernetes.io/pod-name`` and
                 ``apps.kubernetes.io/pod-index`` labels, ``hostname`` /
                 ``subdomain``; ``OrderedReady`` (one at a time, each once the
                 previous is Running and Ready; scale-down from the highest
                 ordinal) and ``Parallel``; PVCs ``<template>-<set>-<ordinal>``
                 from ``volumeClaimTemplates`` (``Pending`` unless ``volumes``
                 runs) owned as
                 ``persistentVolumeClaimRetentionPolicy`` says;
                 ControllerRevisions ``<set>-<hash>``; RollingUpdate (reverse
                 ordinal order, ``partition``) and OnDelete; ``status``
                 (``currentRevision``/``updateRevision``, ``readyReplicas``,
                 ``availableReplicas`` with ``minReadySeconds``...). Opt-in.
``daemonsets``   kube-controller-manager's DaemonSet controller
                 (``daemonset.py``): a pod per Node that the template's
                 ``nodeSelector``, node affinity and tolerations admit, with the
                 ``metadata.name`` node affinity and the tolerations kube adds;
                 ControllerRevisions; RollingUpdate within ``maxUnavailable``
                 (``maxSurge`` is not simulated) and OnDelete; ``status``
                 (``desiredNumberScheduled``, ``numberReady``,
                 ``updatedNumberScheduled``...). Only ``node-1`` runs pods
                 (``kubelet``); pods for Nodes a test adds stay Pending. Opt-in.
``volumes``      kube-controller-manager's persistentvolume-binder, a dynamic
                 provisioner and the scheduler's volume binding
                 (``volumes.py``): kind's default StorageClass ``standard``
                 (``rancher.io/local-path``, ``WaitForFirstConsumer``);
                 claims bound to matching PersistentVolumes or to ones
                 provisioned for them (``pvc-<uid>``), with kube's annotations,
                 phases and events; ``WaitForFirstConsumer`` claims once the
                 scheduler picks a node for a pod that mounts them (with
                 ``kubelet``, pods are bound only once their claims are);
                 ``Retain`` volumes Released, provisioned ``Delete`` ones
                 deleted with their claim. Opt-in.
================ ==============================================================

The components act as API clients of the server would (they are written
after kube's source and behave like it as far as a client can see) but run
in-process: their writes go through the same verbs, storage, watches,
resourceVersions, ``managedFields`` (as ``kube-controller-manager``,
``kube-scheduler``, ``kubelet``) and garbage collector as a request's, and are
never in ``request_log``/``writes()``, so a test counts only its own
controller's writes. ``stop()`` pauses them with the server; ``start()``
resumes and catches up.

Not simulated, because only a real kubelet and container runtime can do them
(the server does not fake them; their subresources answer 404 NotFound with
a message saying there is no kubelet, ``registry/eviction.py``): ``kubectl
exec``/``attach``/``cp`` (``pods/exec``, ``pods/attach``), ``kubectl logs``
(``pods/log``), ``kubectl port-forward`` (``pods/portforward``), ``kubectl
top`` and the metrics API (``metrics.k8s.io``, the kubelet's ``/stats`` and
``/metrics``), ``pods/proxy`` and ``nodes/proxy``, probes (liveness,
readiness and startup probes never run: containers are ready at once and
never restart), container exits (but those of Job pods under ``jobs``,
steered by annotations), restarts (a Job pod's failing container fails the
pod, even under ``restartPolicy: OnFailure``) and ``OOMKilled``, image
pulls, volumes, resource limits, and network traffic to pod or Service IPs
(the addresses are bookkeeping only). Also not simulated: other workload
controllers (CronJob, ReplicationController), the Job controller's
pod-failure backoff (failed pods are replaced at once) and
``backoffLimitPerIndex``/``maxFailedIndexes`` (``podFailurePolicy`` and
``successPolicy`` are acted on), the StatefulSet ``maxUnavailable`` (alpha,
off by default in 1.32) and DaemonSet ``maxSurge`` rollouts, volume binding
(without ``volumes``: PVCs stay ``Pending``), the time a graceful pod
termination takes (the simulated kubelet ends it at once, and does not write
terminated container statuses first), node heartbeats and Leases, taints,
pod affinity, preferred node affinity and resource-aware scheduling (the
scheduler honours ``nodeSelector`` and required node affinity only),
kube-proxy, and adoption of orphaned ReplicaSets, Jobs' or other pods (or
ControllerRevisions) by selector.
"""

from __future__ import annotations

from pycontroller.testing.apiserver.simulate.simulator import (
    DEFAULT_SIMULATIONS,
    SIMULATIONS,
    Simulator,
)

__all__ = ["DEFAULT_SIMULATIONS", "SIMULATIONS", "Simulator"]
