"""Built-in objects come back shaped as Go marshals them, with 1.32's defaults.

kube-apiserver decodes a built-in object into its Go struct (k8s.io/api
v0.32.0), runs the defaulting functions (``pkg/apis/*/v1/defaults.go`` and
``zz_generated.defaults.go``), stores it as protobuf and answers with
encoding/json. So a non-pointer struct is always written (``{}`` when
empty, a zero ``metav1.Time`` as ``null``), a scalar without ``omitempty`` is
written at its zero, an ``omitempty`` zero is dropped, a slice or map
without ``omitempty`` is ``null`` when empty. Each test asserts a cluster's
exact output for one case, over HTTP; custom resources are unstructured in
kube and are not shaped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support import crds
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def create(server: APIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, body)
    assert code == 201, out
    return dict(out)


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], **spec},
    }


def test_pod_status_write_gets_go_zero_values_and_the_writer_owns_them(server: APIServer) -> None:
    created = create(server, PODS, pod())
    created["status"] = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {"name": "c", "image": "x", "imageID": "", "ready": True, "state": {"running": {}}}
        ],
    }
    code, out = request(server, "PUT", f"{PODS}/p/status", created)
    assert code == 200, out
    # PodCondition.LastProbeTime/LastTransitionTime are metav1.Time (a struct:
    # a zero one is null); ContainerStatus.LastState is a ContainerState struct,
    # RestartCount an int32 without omitempty; ContainerStateRunning.StartedAt
    # a metav1.Time (staging/src/k8s.io/api/core/v1/types.go).
    assert out["status"] == {
        "conditions": [
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": None}
        ],
        "containerStatuses": [
            {
                "name": "c",
                "image": "x",
                "imageID": "",
                "ready": True,
                "state": {"running": {"startedAt": None}},
                "lastState": {},
                "restartCount": 0,
            }
        ],
        # immutable, set at creation: podStatusStrategy backfills it when a
        # status write drops it
        "qosClass": "BestEffort",
    }
    # Decoding precedes the field manager: the status writer owns the nulls.
    entry = out["metadata"]["managedFields"][-1]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"]["f:status"]["f:conditions"]['k:{"type":"Ready"}'] == {
        ".": {},
        "f:lastProbeTime": {},
        "f:lastTransitionTime": {},
        "f:status": {},
        "f:type": {},
    }
    # Sending back what was read is no change.
    code, again = request(server, "PUT", f"{PODS}/p/status", out)
    assert code == 200
    assert again["metadata"]["resourceVersion"] == out["metadata"]["resourceVersion"]


def test_pod_defaults_of_set_defaults_pod(server: APIServer) -> None:
    body = pod(hostNetwork=True)
    body["spec"]["containers"] = [
        {
            "name": "c",
            "image": "nginx@sha256:" + "a" * 64,
            "ports": [{"containerPort": 8080}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
            "readinessProbe": {"httpGet": {"port": 8080}},
            "livenessProbe": {"grpc": {"port": 9000}},
        }
    ]
    out = create(server, PODS, body)
    c = out["spec"]["containers"][0]
    # SetDefaults_Pod: requests from limits, hostNetwork ports, enableServiceLinks.
    assert c["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "1", "memory": "1Gi"},
    }
    assert c["ports"] == [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]
    assert out["spec"]["enableServiceLinks"] is True
    # SetDefaults_HTTPGetAction; GRPCAction.Service +default=""; SetDefaults_Probe.
    assert c["readinessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert c["livenessProbe"]["grpc"] == {"port": 9000, "service": ""}
    # SetDefaults_Container: a digest without a tag is not "latest".
    assert c["imagePullPolicy"] == "IfNotPresent"
    # podStrategy.PrepareForCreate: qos.GetPodQOS after defaulting.
    assert out["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}


def test_pod_volumes_defaults_and_omitempty_zeros(server: APIServer) -> None:
    body = pod(hostNetwork=False)
    body["spec"]["volumes"] = [
        {"name": "scratch"},
        {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
    ]
    out = create(server, PODS, body)
    # SetDefaults_Volume: no source is an emptyDir; SetDefaults_ProjectedVolumeSource
    # and SetDefaults_ServiceAccountTokenProjection (an hour).
    # (then the ServiceAccount admission's kube-api-access-* volume)
    assert out["spec"]["volumes"][:2] == [
        {"name": "scratch", "emptyDir": {}},
        {
            "name": "token",
            "projected": {
                "sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}],
                "defaultMode": 420,
            },
        },
    ]
    # PodSpec.HostNetwork is a bool with omitempty: false is not written.
    assert "hostNetwork" not in out["spec"]
    # Burstable: no limits on every container for cpu and memory (none at all: BestEffort).
    assert out["status"]["qosClass"] == "BestEffort"


def test_pod_templates_get_pod_spec_defaults_but_not_set_defaults_pod(server: APIServer) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}}}
                    ]
                },
            },
        },
    }
    out = create(server, "/apis/apps/v1/namespaces/default/deployments", body)
    spec = out["spec"]["template"]["spec"]
    # SetDefaults_Pod is registered for v1.Pod only (zz_generated.defaults.go):
    # no enableServiceLinks, no requests from limits in a template.
    assert "enableServiceLinks" not in spec
    assert spec["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert out["spec"]["template"]["metadata"] == {
        "labels": {"app": "web"},
        "creationTimestamp": None,
    }
    assert out["status"] == {}


def test_endpointslice_non_omitempty_slices_are_null(server: APIServer) -> None:
    out = create(
        server,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        {"metadata": {"name": "s"}, "addressType": "IPv4", "endpoints": []},
    )
    # EndpointSlice.Endpoints/Ports have no omitempty: empty is null (protobuf
    # storage keeps no empty slice).
    assert out["endpoints"] is None and out["ports"] is None
    out = create(
        server,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        {"metadata": {"name": "t"}, "addressType": "IPv4", "endpoints": [], "ports": [{}]},
    )
    # discovery/v1 SetDefaults_EndpointPort: name "" and protocol TCP.
    assert out["ports"] == [{"name": "", "protocol": "TCP"}]


def test_configmap_empty_maps_are_left_out(server: APIServer) -> None:
    out = create(
        server,
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": "c", "labels": {}, "annotations": {}}, "data": {}},
    )
    # ConfigMap.Data and ObjectMeta.Labels/Annotations are omitempty maps.
    assert "data" not in out
    assert "labels" not in out["metadata"] and "annotations" not in out["metadata"]


def test_kind_defaults_secret_namespace_claims_volumes(server: APIServer) -> None:
    # SetDefaults_Secret
    secret = create(server, "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    assert secret["type"] == "Opaque" and "data" not in secret
    # SetDefaults_Namespace, SetDefaults_NamespaceStatus
    ns = create(server, "/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert ns["status"] == {"phase": "Active"}
    # SetDefaults_PersistentVolumeClaim, SetDefaults_PersistentVolumeClaimSpec
    pvc = create(
        server,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert pvc["status"] == {"phase": "Pending"}
    # SetDefaults_PersistentVolume
    pv = create(
        server,
        "/api/v1/persistentvolumes",
        {
            "metadata": {"name": "pv"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/d"},
            },
        },
    )
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["spec"]["hostPath"] == {"path": "/d", "type": ""}
    assert pv["status"] == {"phase": "Pending"}


def test_replication_controller_selector_and_labels_from_template(server: APIServer) -> None:
    out = create(
        server,
        "/api/v1/namespaces/default/replicationcontrollers",
        {
            "metadata": {"name": "rc"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": "rc"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
                }
            },
        },
    )
    # SetDefaults_ReplicationController; Replicas +default=1; ReplicationControllerStatus.Replicas
    # has no omitempty.
    assert out["metadata"]["labels"] == {"app": "rc"}
    assert out["spec"]["selector"] == {"app": "rc"}
    assert out["spec"]["replicas"] == 1
    assert out["status"] == {"replicas": 0}


def test_limit_range_item_defaults(server: APIServer) -> None:
    out = create(
        server,
        "/api/v1/namespaces/default/limitranges",
        {
            "metadata": {"name": "lr"},
            "spec": {
                "limits": [
                    {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
                    {"type": "Pod", "max": {"cpu": "4"}},
                ]
            },
        },
    )
    # SetDefaults_LimitRangeItem: Container items only; default from max,
    # defaultRequest from default, then from min.
    assert out["spec"]["limits"] == [
        {
            "type": "Container",
            "max": {"cpu": "2"},
            "min": {"memory": "64Mi"},
            "default": {"cpu": "2"},
            "defaultRequest": {"cpu": "2", "memory": "64Mi"},
        },
        {"type": "Pod", "max": {"cpu": "4"}},
    ]


def test_service_defaults(server: APIServer) -> None:
    svcs = "/api/v1/namespaces/default/services"
    out = create(
        server,
        svcs,
        {
            "metadata": {"name": "sticky"},
            "spec": {
                "sessionAffinity": "ClientIP",
                "externalIPs": ["192.0.2.1"],
                "ports": [{"port": 80, "targetPort": 0}],
            },
        },
    )
    # SetDefaults_Service: ClientIP affinity times out after 3h; a ClusterIP
    # Service with external IPs is externally accessible; targetPort 0 is port.
    assert out["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    assert out["spec"]["externalTrafficPolicy"] == "Cluster"
    assert out["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    # ServiceStatus.LoadBalancer is a struct.
    assert out["status"] == {"loadBalancer": {}}

    lb = create(
        server,
        svcs,
        {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}},
    )
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
    code, out = request(server, "PUT", f"{svcs}/lb/status", lb)
    assert code == 200, out
    # SetDefaults_Service on the status write: an ingress IP without ipMode is a VIP.
    assert out["status"] == {"loadBalancer": {"ingress": [{"ip": "203.0.113.7", "ipMode": "VIP"}]}}


def test_job_defaults_and_cronjob_template_without_them(server: APIServer) -> None:
    template = {
        "metadata": {"labels": {"app": "batch"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }
    job = create(
        server,
        "/apis/batch/v1/namespaces/default/jobs",
        {"metadata": {"name": "j"}, "spec": {"template": template}},
    )
    uid = job["metadata"]["uid"]
    # SetDefaults_Job gives the Job its template's label map, to which
    # generateSelectorIfNeeded then adds the controller-uid and job-name labels.
    assert job["metadata"]["labels"] == {
        "app": "batch",
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid,
        "job-name": "j",
    }
    # Created with no template labels: the Job gets the generated ones when kube
    # decodes (and defaults) the stored object to answer.
    bare = create(
        server,
        "/apis/batch/v1/namespaces/default/jobs",
        {"metadata": {"name": "k"}, "spec": {"template": {"spec": template["spec"]}}},
    )
    assert bare["metadata"]["labels"] == bare["spec"]["template"]["metadata"]["labels"]
    assert bare["metadata"]["labels"]["job-name"] == "k"
    assert {k: job["spec"][k] for k in ("completions", "parallelism", "backoffLimit")} == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
    }
    cron = create(
        server,
        "/apis/batch/v1/namespaces/default/cronjobs",
        {
            "metadata": {"name": "cj"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}},
        },
    )
    # SetDefaults_Job takes a *Job: a CronJob's job template is not defaulted
    # by it, only its pod template by SetDefaults_PodSpec and the others.
    job_spec = cron["spec"]["jobTemplate"]["spec"]
    assert set(job_spec) == {"template"}
    assert cron["spec"]["jobTemplate"]["metadata"] == {"creationTimestamp": None}
    assert cron["status"] == {}


def test_statefulset_and_daemonset_partial_update_strategies(server: APIServer) -> None:
    template = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }
    sts = create(
        server,
        "/apis/apps/v1/namespaces/default/statefulsets",
        {
            "metadata": {"name": "db"},
            "spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "a"}},
                "template": template,
                "updateStrategy": {},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"},
            },
        },
    )
    # SetDefaults_StatefulSet: a type-less strategy is RollingUpdate with partition 0;
    # each retention rule left out is Retain.
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Delete",
        "whenScaled": "Retain",
    }
    # StatefulSetStatus.Replicas and AvailableReplicas have no omitempty.
    assert sts["status"] == {"replicas": 0, "availableReplicas": 0}
    ds = create(
        server,
        "/apis/apps/v1/namespaces/default/daemonsets",
        {
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "a"}},
                "template": template,
                "updateStrategy": {"type": "RollingUpdate"},
            },
        },
    )
    # SetDefaults_DaemonSet: a RollingUpdate strategy gets maxUnavailable 1, maxSurge 0.
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert ds["status"] == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }


def test_rbac_binding_api_groups(server: APIServer) -> None:
    out = create(
        server,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        {
            "metadata": {"name": "rb"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "default"},
            ],
        },
    )
    # rbac/v1 SetDefaults_RoleBinding and SetDefaults_Subject; Subject.APIGroup
    # is omitempty, so a ServiceAccount's "" is not written.
    assert out["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "view",
    }
    assert out["subjects"] == [
        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "default", "namespace": "default"},
    ]


def test_custom_resources_are_not_shaped(server: APIServer) -> None:
    crd = crds.crd("widgets", "Widget")
    server.install_crd(crd)
    out = create(
        server,
        "/apis/example.com/v1/namespaces/default/widgets",
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"empty": "", "none": [], "flag": False},
        },
    )
    # Unstructured in kube: kept as sent.
    assert out["spec"] == {"empty": "", "none": [], "flag": False}
