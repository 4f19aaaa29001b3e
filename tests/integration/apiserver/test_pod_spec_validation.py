"""Pod specs validated as kube-apiserver 1.32's ``ValidatePodSpec`` does
(restart and DNS policies, container policies, resources, env, probes and
lifecycle hooks, host network ports, node selector, tolerations, names), for
Pods and pod templates, over HTTP: the refused objects with kube's exact
causes, and valid ones accepted."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
C0 = "spec.containers[0]"


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        # VALID_SPEC's account (a pod naming a missing one is refused first).
        body = {"metadata": {"name": "builder"}}
        request(s, "POST", "/api/v1/namespaces/default/serviceaccounts", body)
        yield s


def pod(name: str, container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    c = {"name": "c", "image": "nginx:1.27", **(container or {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [c], **spec},
    }


def deployment(name: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def causes(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]]


def refused(server: APIServer, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    path = PODS if obj["kind"] == "Pod" else DEPLOYMENTS
    code, out = request(server, "POST", path, obj)
    assert code == 422, out
    return causes(out)


def test_restart_policy_must_be_supported(server: APIServer) -> None:
    assert refused(server, pod("rp", restartPolicy="Sometimes")) == [
        (
            "FieldValueNotSupported",
            "spec.restartPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        )
    ]


def test_dns_policy_and_dns_config(server: APIServer) -> None:
    assert refused(server, pod("dns1", dnsPolicy="Google")) == [
        (
            "FieldValueNotSupported",
            "spec.dnsPolicy",
            'Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", '
            '"ClusterFirst", "Default", "None"',
        )
    ]
    assert refused(server, pod("dns2", dnsPolicy="None")) == [
        (
            "FieldValueRequired",
            "spec.dnsConfig",
            "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
        )
    ]
    assert refused(server, pod("dns3", dnsPolicy="None", dnsConfig={"searches": ["a.b"]})) == [
        (
            "FieldValueRequired",
            "spec.dnsConfig.nameservers",
            "Required value: must provide at least one DNS nameserver when `dnsPolicy` is None",
        )
    ]
    bad = {"nameservers": ["10.0.0.300"], "searches": ["Bad_Domain."]}
    assert refused(server, pod("dns4", dnsConfig=bad)) == [
        (
            "FieldValueInvalid",
            "spec.dnsConfig.nameservers[0]",
            'Invalid value: "10.0.0.300": must be a valid IP address, '
            "(e.g. 10.9.8.7 or 2001:db8::ffff)",
        ),
        (
            "FieldValueInvalid",
            "spec.dnsConfig.searches[0]",
            'Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ]


def test_container_policies(server: APIServer) -> None:
    container = {"imagePullPolicy": "Sometimes", "terminationMessagePolicy": "Bad"}
    assert refused(server, pod("policies", container)) == [
        (
            "FieldValueNotSupported",
            f"{C0}.terminationMessagePolicy",
            'Unsupported value: "Bad": supported values: "File", "FallbackToLogsOnError"',
        ),
        (
            "FieldValueNotSupported",
            f"{C0}.imagePullPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
        ),
    ]


def test_requests_above_limits_in_a_template(server: APIServer) -> None:
    resources = {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": 1, "memory": "1Gi"}}
    spec = {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}
    assert refused(server, deployment("greedy", spec)) == [
        (
            "FieldValueInvalid",
            "spec.template.spec.containers[0].resources.requests",
            'Invalid value: "2": must be less than or equal to cpu limit of 1',
        )
    ]


def test_negative_and_unknown_resources(server: APIServer) -> None:
    # On a Pod the limit is defaulted into requests too, so both are negative.
    limits = {"resources": {"limits": {"memory": "-1Mi"}}}
    field = f"{C0}.resources"
    negative = 'Invalid value: "-1Mi": must be greater than or equal to 0'
    assert refused(server, pod("negative", limits)) == [
        ("FieldValueInvalid", f"{field}.limits[memory]", negative),
        ("FieldValueInvalid", f"{field}.requests[memory]", negative),
    ]
    assert refused(server, pod("gpu", {"resources": {"requests": {"gpu": "1"}}})) == [
        (
            "FieldValueInvalid",
            f"{field}.requests[gpu]",
            'Invalid value: "gpu": must be a standard resource type or fully qualified',
        ),
        (
            "FieldValueInvalid",
            f"{field}.requests[gpu]",
            'Invalid value: "gpu": must be a standard resource for containers',
        ),
    ]
    extended = {"resources": {"requests": {"example.com/gpu": "1"}}}
    assert refused(server, pod("extended", extended)) == [
        (
            "FieldValueRequired",
            f"{field}.limits",
            "Required value: Limit must be set for non overcommitable resources",
        )
    ]
    unequal = {
        "resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}
    }
    assert refused(server, pod("unequal", unequal)) == [
        (
            "FieldValueInvalid",
            f"{field}.requests",
            'Invalid value: "1": must be equal to example.com/gpu limit of 2',
        )
    ]


def test_env_var_names_and_sources(server: APIServer) -> None:
    env = [
        {"name": "A=B", "value": "x"},
        {"name": "EMPTY", "valueFrom": {}},
        {"name": "BOTH", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {
            "name": "TWO",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.name"},
                "secretKeyRef": {"name": "s", "key": "k"},
            },
        },
        {"name": "LABELS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
        {"name": "KEY", "valueFrom": {"configMapKeyRef": {"name": "cm"}}},
    ]
    e = f"{C0}.env"
    assert refused(server, pod("env", {"env": env})) == [
        (
            "FieldValueInvalid",
            f"{e}[0].name",
            'Invalid value: "A=B": a valid environment variable name must consist only of '
            "printable ASCII characters other than '='",
        ),
        (
            "FieldValueInvalid",
            f"{e}[1].valueFrom",
            'Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
            "`configMapKeyRef` or `secretKeyRef`",
        ),
        (
            "FieldValueInvalid",
            f"{e}[2].valueFrom",
            'Invalid value: "": may not be specified when `value` is not empty',
        ),
        (
            "FieldValueInvalid",
            f"{e}[3].valueFrom",
            'Invalid value: "": may not have more than one field specified at a time',
        ),
        (
            "FieldValueNotSupported",
            f"{e}[4].valueFrom.fieldRef.fieldPath",
            'Unsupported value: "metadata.labels": supported values: "metadata.name", '
            '"metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
            '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"',
        ),
        ("FieldValueRequired", f"{e}[5].valueFrom.configMapKeyRef.key", "Required value"),
    ]


def test_probes_and_lifecycle_handlers(server: APIServer) -> None:
    container = {
        "livenessProbe": {"periodSeconds": 5},
        "readinessProbe": {
            "exec": {"command": ["true"]},
            "tcpSocket": {"port": 80},
            "initialDelaySeconds": -1,
        },
        "startupProbe": {"httpGet": {"port": 8080}, "successThreshold": 2},
        "lifecycle": {"preStop": {"sleep": {"seconds": 60}}},
    }
    assert refused(server, pod("probes", container)) == [
        (
            "FieldValueInvalid",
            f"{C0}.lifecycle.preStop.sleep",
            "Invalid value: 60: must be greater than 0 and less than "
            "terminationGracePeriodSeconds (30)",
        ),
        (
            "FieldValueRequired",
            f"{C0}.livenessProbe",
            "Required value: must specify a handler type",
        ),
        (
            "FieldValueForbidden",
            f"{C0}.readinessProbe.tcpSocket",
            "Forbidden: may not specify more than 1 handler type",
        ),
        (
            "FieldValueInvalid",
            f"{C0}.readinessProbe.initialDelaySeconds",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        ("FieldValueInvalid", f"{C0}.startupProbe.successThreshold", "Invalid value: 2: must be 1"),
    ]


def test_init_containers_without_restart_always_have_no_probes(server: APIServer) -> None:
    probe = {"exec": {"command": ["true"]}}
    init = {"name": "init", "image": "busybox", "readinessProbe": probe}
    sidecar = {"name": "side", "image": "busybox", "restartPolicy": "OnFailure"}
    assert refused(server, pod("init", initContainers=[init, sidecar])) == [
        (
            "FieldValueForbidden",
            "spec.initContainers[0].readinessProbe",
            "Forbidden: may not be set for init containers without restartPolicy=Always",
        ),
        (
            "FieldValueNotSupported",
            "spec.initContainers[1].restartPolicy",
            'Unsupported value: "OnFailure": supported values: "Always"',
        ),
    ]
    assert refused(server, pod("regular", {"restartPolicy": "Always"})) == [
        (
            "FieldValueForbidden",
            f"{C0}.restartPolicy",
            "Forbidden: may not be set for non-init containers",
        )
    ]


def test_active_deadline_and_host_network_ports(server: APIServer) -> None:
    assert refused(server, pod("deadline", activeDeadlineSeconds=0)) == [
        (
            "FieldValueInvalid",
            "spec.activeDeadlineSeconds",
            "Invalid value: 0: must be between 1 and 2147483647, inclusive",
        )
    ]
    ports = {"ports": [{"containerPort": 80, "hostPort": 81}]}
    assert refused(server, pod("hostnet", ports, hostNetwork=True)) == [
        (
            "FieldValueInvalid",
            f"{C0}.ports[0].hostPort",
            "Invalid value: 81: must match `containerPort` when `hostNetwork` is true",
        )
    ]
    two = {"name": "d", "image": "nginx", "ports": [{"containerPort": 90, "hostPort": 81}]}
    one = {"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 81}]}
    spec = {"containers": [one, two]}
    assert refused(server, deployment("ports", spec)) == [
        (
            "FieldValueDuplicate",
            "spec.template.spec.containers[1].ports[0].hostPort",
            'Duplicate value: "TCP//81"',
        )
    ]


def test_node_selector_tolerations_and_names(server: APIServer) -> None:
    tolerations = [
        {"key": "k", "operator": "Exists", "value": "v"},
        {
            "key": "k",
            "operator": "Equal",
            "value": "v",
            "effect": "NoSchedule",
            "tolerationSeconds": 5,
        },
        {"operator": "Equal", "value": "v"},
        {"key": "k", "operator": "Maybe", "effect": "Never"},
    ]
    obj = pod(
        "sched",
        nodeSelector={"bad key": "ok"},
        tolerations=tolerations,
    )
    qualified = (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    subdomain = (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')"
    )
    t = "spec.tolerations"
    assert refused(server, obj) == [
        ("FieldValueInvalid", "spec.nodeSelector", f'Invalid value: "bad key": {qualified}'),
        (
            "FieldValueInvalid",
            f"{t}[0].operator",
            'Invalid value: core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", '
            "TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'",
        ),
        (
            "FieldValueInvalid",
            f"{t}[1].effect",
            "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` "
            "is set",
        ),
        (
            "FieldValueInvalid",
            f"{t}[2].operator",
            'Invalid value: "Equal": operator must be Exists when `key` is empty, which means '
            '"match all values and all keys"',
        ),
        (
            "FieldValueNotSupported",
            f"{t}[3].operator",
            'Unsupported value: "Maybe": supported values: "Equal", "Exists"',
        ),
        (
            "FieldValueNotSupported",
            f"{t}[3].effect",
            'Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", '
            '"NoExecute"',
        ),
    ]
    # A Pod naming an account that does not exist is refused by the
    # ServiceAccount admission plugin before validation; a template is not
    # admitted that way, so its bad name is validation's.
    code, out = request(server, "POST", PODS, pod("sa", serviceAccountName="Bad_Name"))
    assert code == 403 and "error looking up service account" in out["message"], out
    spec = {"containers": [{"name": "c", "image": "nginx"}], "serviceAccountName": "Bad_Name"}
    assert refused(server, deployment("sa", spec)) == [
        (
            "FieldValueInvalid",
            "spec.template.spec.serviceAccountName",
            f'Invalid value: "Bad_Name": {subdomain}',
        )
    ]


def test_a_pod_image_has_no_surrounding_whitespace(server: APIServer) -> None:
    assert refused(server, pod("spaced", {"image": " nginx"})) == [
        (
            "FieldValueInvalid",
            f"{C0}.image",
            'Invalid value: " nginx": must not have leading or trailing whitespace',
        )
    ]


VALID_CONTAINER: dict[str, Any] = {
    "name": "app",
    "image": "nginx:1.27",
    "imagePullPolicy": "Always",
    "terminationMessagePolicy": "FallbackToLogsOnError",
    "ports": [{"containerPort": 8080, "name": "http"}],
    "env": [
        {"name": "PLAIN", "value": "x"},
        {"name": "my.relaxed-NAME:1", "value": "y"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {
            "name": "MEM",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
        },
        {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k.1"}}},
        {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "KEY", "optional": True}}},
    ],
    "envFrom": [{"prefix": "P_", "configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}}],
    "resources": {
        "requests": {"cpu": "250m", "memory": "64Mi", "example.com/dongle": 1},
        "limits": {"cpu": "1", "memory": "128Mi", "example.com/dongle": "1"},
    },
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
    "readinessProbe": {"tcpSocket": {"port": 8080}, "successThreshold": 2},
    "startupProbe": {"grpc": {"port": 9000}, "failureThreshold": 30},
    "lifecycle": {"preStop": {"sleep": {"seconds": 5}}, "postStart": {"exec": {"command": ["x"]}}},
}

VALID_SPEC: dict[str, Any] = {
    "containers": [VALID_CONTAINER],
    "initContainers": [
        {"name": "setup", "image": "busybox", "command": ["true"]},
        {
            "name": "sidecar",
            "image": "envoy",
            "restartPolicy": "Always",
            "readinessProbe": {"exec": {"command": ["true"]}},
        },
    ],
    "restartPolicy": "OnFailure",
    "dnsPolicy": "None",
    "dnsConfig": {
        "nameservers": ["10.0.0.10", "2001:db8::1"],
        "searches": ["svc.cluster.local."],
        "options": [{"name": "ndots", "value": "2"}],
    },
    "nodeSelector": {"kubernetes.io/os": "linux", "tier": ""},
    "tolerations": [
        {"operator": "Exists"},
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "tolerationSeconds": 30},
    ],
    "serviceAccountName": "builder",
    "activeDeadlineSeconds": 600,
    "hostname": "web-0",
    "subdomain": "web",
    "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local"]}],
    "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "supplementalGroups": [3000]},
    "readinessGates": [{"conditionType": "example.com/ready"}],
}


def test_a_valid_pod_and_template_are_accepted(server: APIServer) -> None:
    obj = pod("valid") | {"spec": copy.deepcopy(VALID_SPEC)}
    code, out = request(server, "POST", PODS, obj)
    assert code == 201, out
    spec = copy.deepcopy(VALID_SPEC)
    spec["restartPolicy"] = "Always"
    del spec["activeDeadlineSeconds"]  # apps validation forbids it in a Deployment
    code, out = request(server, "POST", DEPLOYMENTS, deployment("valid", spec))
    assert code == 201, out
    # hostNetwork: a template may leave hostPort unset, a Pod has it defaulted.
    host = {"ports": [{"containerPort": 80}]}
    code, out = request(server, "POST", PODS, pod("hostnet-ok", host, hostNetwork=True))
    assert code == 201, out
    assert out["spec"]["containers"][0]["ports"][0]["hostPort"] == 80
    code, out = request(
        server,
        "POST",
        DEPLOYMENTS,
        deployment("hostnet-ok", pod("x", host, hostNetwork=True)["spec"]),
    )
    assert code == 201, out
