"""Per-kind rules of kube-apiserver 1.32 for workloads, Services, ConfigMaps
and Secrets (``schema/validation_apps.py``), over HTTP: each refused object
with kube's exact causes, and valid neighbours accepted."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"

Causes = list[tuple[str, str, str]]


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def causes(out: dict[str, Any]) -> Causes:
    return [(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]]


def refused(server: APIServer, path: str, obj: dict[str, Any]) -> Causes:
    code, out = request(server, "POST", path, obj)
    assert code == 422, out
    return causes(out)


def accepted(server: APIServer, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    code, out = request(server, "POST", path, obj)
    assert code == 201, out
    assert isinstance(out, dict)
    return out


def template(restart: str | None = None, **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}], **spec}
    if restart is not None:
        pod["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": "x"}}, "spec": pod}


def workload(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": "x"}}, "template": template()}
    body.update(spec)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


def job(name: str, restart: str | None = "Never", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template(restart), **spec},
    }


def cronjob(name: str, schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"spec": {"template": template("OnFailure")}},
            **spec,
        },
    }


NEG = "Invalid value: -1: must be greater than or equal to 0"
ZERO_INT = 'intstr.IntOrString{Type:0, IntVal:0, StrVal:""}'


# --- restartPolicy ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"])
def test_apps_templates_must_restart_always(server: APIServer, kind: str) -> None:
    obj = workload(kind, "never", template=template("Never"))
    got = refused(server, f"{APPS}/{kind.lower()}s", obj)
    assert (
        "FieldValueNotSupported",
        "spec.template.spec.restartPolicy",
        'Unsupported value: "Never": supported values: "Always"',
    ) in got


def test_a_deployment_template_may_not_set_active_deadline(server: APIServer) -> None:
    obj = workload("Deployment", "deadline", template=template(activeDeadlineSeconds=5))
    assert refused(server, f"{APPS}/deployments", obj) == [
        (
            "FieldValueForbidden",
            "spec.template.spec.activeDeadlineSeconds",
            "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
        )
    ]


def test_a_replication_controller_template_must_restart_always(server: APIServer) -> None:
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc"},
        "spec": {"selector": {"app": "x"}, "template": template("OnFailure")},
    }
    assert refused(server, f"{NS}/replicationcontrollers", rc) == [
        (
            "FieldValueNotSupported",
            "spec.template.spec.restartPolicy",
            'Unsupported value: "OnFailure": supported values: "Always"',
        )
    ]
    rc["spec"]["template"] = template()
    accepted(server, f"{NS}/replicationcontrollers", rc)


def test_a_job_must_restart_on_failure_or_never(server: APIServer) -> None:
    # Unset, restartPolicy defaults to Always, which a Job may not use.
    assert refused(server, f"{BATCH}/jobs", job("unset", None)) == [
        (
            "FieldValueRequired",
            "spec.template.spec.restartPolicy",
            'Required value: valid values: "OnFailure", "Never"',
        )
    ]
    assert refused(server, f"{BATCH}/jobs", job("always", "Always"))[0][0] == "FieldValueRequired"
    got = refused(server, f"{BATCH}/jobs", job("pfp", "OnFailure", podFailurePolicy={"rules": []}))
    assert (
        "FieldValueInvalid",
        "spec.template.spec.restartPolicy",
        'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
    ) in got
    accepted(server, f"{BATCH}/jobs", job("never", "Never"))
    accepted(server, f"{BATCH}/jobs", job("onfailure", "OnFailure"))


# --- Deployment -------------------------------------------------------------------


def test_deployment_counts_must_not_be_negative(server: APIServer) -> None:
    obj = workload("Deployment", "neg", replicas=-1, minReadySeconds=-1, revisionHistoryLimit=-1)
    assert refused(server, f"{APPS}/deployments", obj) == [
        ("FieldValueInvalid", "spec.replicas", NEG),
        ("FieldValueInvalid", "spec.minReadySeconds", NEG),
        ("FieldValueInvalid", "spec.revisionHistoryLimit", NEG),
    ]


def test_progress_deadline_must_exceed_min_ready_seconds(server: APIServer) -> None:
    obj = workload("Deployment", "slow", minReadySeconds=30, progressDeadlineSeconds=30)
    assert refused(server, f"{APPS}/deployments", obj) == [
        (
            "FieldValueInvalid",
            "spec.progressDeadlineSeconds",
            "Invalid value: 30: must be greater than minReadySeconds",
        )
    ]
    obj["spec"]["progressDeadlineSeconds"] = 31
    accepted(server, f"{APPS}/deployments", obj)


def rolling(surge: Any, unavailable: Any) -> dict[str, Any]:
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }


def test_rolling_update_values(server: APIServer) -> None:
    path = f"{APPS}/deployments"
    obj = workload("Deployment", "zero", strategy=rolling(0, 0))
    assert refused(server, path, obj) == [
        (
            "FieldValueInvalid",
            "spec.strategy.rollingUpdate.maxUnavailable",
            f"Invalid value: {ZERO_INT}: may not be 0 when `maxSurge` is 0",
        )
    ]
    obj = workload("Deployment", "pct", strategy=rolling("0%", "150%"))
    assert refused(server, path, obj) == [
        (
            "FieldValueInvalid",
            "spec.strategy.rollingUpdate.maxUnavailable",
            'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: '
            "must not be greater than 100%",
        )
    ]
    obj = workload("Deployment", "bad", strategy=rolling("x", -1))
    assert refused(server, path, obj) == [
        ("FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable", NEG),
        (
            "FieldValueInvalid",
            "spec.strategy.rollingUpdate.maxSurge",
            'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"x"}: a valid percent '
            "string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
            "regex used for validation is '[0-9]+%')",
        ),
    ]
    obj = workload("Deployment", "weird", strategy={"type": "Blue"})
    assert refused(server, path, obj) == [
        (
            "FieldValueNotSupported",
            "spec.strategy",
            'Unsupported value: apps.DeploymentStrategy{Type:"Blue", '
            "RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "
            '"Recreate", "RollingUpdate"',
        )
    ]
    accepted(server, path, workload("Deployment", "ok1", strategy=rolling(0, 1)))
    accepted(server, path, workload("Deployment", "ok2", strategy=rolling("100%", "0%")))
    accepted(server, path, workload("Deployment", "ok3", strategy={"type": "Recreate"}))


def test_replicaset_replicas(server: APIServer) -> None:
    obj = workload("ReplicaSet", "rs", replicas=-1)
    assert refused(server, f"{APPS}/replicasets", obj) == [
        ("FieldValueInvalid", "spec.replicas", NEG)
    ]
    accepted(server, f"{APPS}/replicasets", workload("ReplicaSet", "rs0", replicas=0))


# --- StatefulSet / DaemonSet -------------------------------------------------------


def test_statefulset_policies(server: APIServer) -> None:
    path = f"{APPS}/statefulsets"
    obj = workload(
        "StatefulSet",
        "sts",
        replicas=-1,
        podManagementPolicy="Random",
        updateStrategy={"type": "Sideways"},
        persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep"},
    )
    assert refused(server, path, obj) == [
        (
            "FieldValueInvalid",
            "spec.podManagementPolicy",
            "Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
        ),
        (
            "FieldValueInvalid",
            "spec.updateStrategy",
            'Invalid value: apps.StatefulSetUpdateStrategy{Type:"Sideways", '
            "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: "
            "must be 'RollingUpdate' or 'OnDelete'",
        ),
        (
            "FieldValueNotSupported",
            "spec.persistentVolumeClaimRetentionPolicy.whenDeleted",
            'Unsupported value: "Keep": supported values: "Retain", "Delete"',
        ),
        ("FieldValueInvalid", "spec.replicas", NEG),
    ]


def test_statefulset_spec_fields_other_than_the_mutable_ones_are_forbidden(
    server: APIServer,
) -> None:
    path = f"{APPS}/statefulsets"
    created = accepted(
        server,
        path,
        workload("StatefulSet", "web", serviceName="web", podManagementPolicy="Parallel"),
    )
    changed = copy.deepcopy(created)
    changed["spec"]["replicas"] = 3
    changed["spec"]["minReadySeconds"] = 5
    code, out = request(server, "PUT", f"{path}/web", changed)
    assert code == 200, out
    changed = copy.deepcopy(out)
    changed["spec"]["serviceName"] = "other"
    code, out = request(server, "PUT", f"{path}/web", changed)
    assert code == 422, out
    assert causes(out) == [
        (
            "FieldValueForbidden",
            "spec",
            "Forbidden: updates to statefulset spec for fields other than 'replicas', "
            "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
            "and 'minReadySeconds' are forbidden",
        )
    ]


def test_daemonset_update_strategy(server: APIServer) -> None:
    path = f"{APPS}/daemonsets"
    both = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    assert refused(server, path, workload("DaemonSet", "both", updateStrategy=both)) == [
        (
            "FieldValueInvalid",
            "spec.updateStrategy.rollingUpdate.maxSurge",
            'Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: '
            "may not be set when maxUnavailable is non-zero",
        )
    ]
    none = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}
    assert refused(server, path, workload("DaemonSet", "none", updateStrategy=none)) == [
        (
            "FieldValueRequired",
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
            "Required value: cannot be 0 when maxSurge is 0",
        )
    ]
    odd = workload("DaemonSet", "odd", updateStrategy={"type": "Never"})
    assert refused(server, path, odd) == [
        (
            "FieldValueNotSupported",
            "spec.updateStrategy",
            'Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Never", '
            "RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "
            '"RollingUpdate", "OnDelete"',
        )
    ]
    accepted(server, path, workload("DaemonSet", "ds"))
    surge = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"}}
    accepted(server, path, workload("DaemonSet", "surge", updateStrategy=surge))
    accepted(server, path, workload("DaemonSet", "ondelete", updateStrategy={"type": "OnDelete"}))


# --- Job / CronJob ------------------------------------------------------------------


def test_job_counts_and_completion_mode(server: APIServer) -> None:
    obj = job(
        "counts",
        parallelism=-1,
        completions=-1,
        activeDeadlineSeconds=-1,
        backoffLimit=-1,
        ttlSecondsAfterFinished=-1,
        completionMode="Sometimes",
    )
    assert refused(server, f"{BATCH}/jobs", obj) == [
        ("FieldValueInvalid", "spec.parallelism", NEG),
        ("FieldValueInvalid", "spec.completions", NEG),
        ("FieldValueInvalid", "spec.activeDeadlineSeconds", NEG),
        ("FieldValueInvalid", "spec.backoffLimit", NEG),
        ("FieldValueInvalid", "spec.ttlSecondsAfterFinished", NEG),
        (
            "FieldValueNotSupported",
            "spec.completionMode",
            'Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"',
        ),
    ]
    indexed = job("indexed", completionMode="Indexed", parallelism=2)
    assert refused(server, f"{BATCH}/jobs", indexed) == [
        (
            "FieldValueRequired",
            "spec.completions",
            "Required value: when completion mode is Indexed",
        )
    ]
    indexed["spec"]["completions"] = 2
    accepted(server, f"{BATCH}/jobs", indexed)


@pytest.mark.parametrize(
    ("schedule", "detail"),
    [
        ("not a cron", "expected exactly 5 fields, found 3: [not a cron]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        (
            "x * * * *",
            'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax',
        ),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
    ],
)
def test_a_cronjob_schedule_must_parse(server: APIServer, schedule: str, detail: str) -> None:
    got = refused(server, f"{BATCH}/cronjobs", cronjob("bad", schedule))
    assert got == [("FieldValueInvalid", "spec.schedule", f'Invalid value: "{schedule}": {detail}')]


@pytest.mark.parametrize(
    "schedule",
    ["*/5 * * * *", "0 0 * * MON-FRI", "@hourly", "0 3 1,15 jan,jul *", "@every 1h30m"],
)
def test_valid_schedules_are_accepted(server: APIServer, schedule: str) -> None:
    name = "ok-" + str(abs(hash(schedule)) % 100000)
    accepted(server, f"{BATCH}/cronjobs", cronjob(name, schedule))


def test_cronjob_fields(server: APIServer) -> None:
    obj = cronjob(
        "fields",
        "TZ=UTC 0 * * * *",
        startingDeadlineSeconds=-1,
        concurrencyPolicy="Sometimes",
        successfulJobsHistoryLimit=-1,
        failedJobsHistoryLimit=-1,
    )
    obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert refused(server, f"{BATCH}/cronjobs", obj) == [
        (
            "FieldValueInvalid",
            "spec.schedule",
            'Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, '
            "use timeZone field instead",
        ),
        ("FieldValueInvalid", "spec.startingDeadlineSeconds", NEG),
        (
            "FieldValueNotSupported",
            "spec.concurrencyPolicy",
            'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
        ),
        (
            "FieldValueRequired",
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            'Required value: valid values: "OnFailure", "Never"',
        ),
        ("FieldValueInvalid", "spec.successfulJobsHistoryLimit", NEG),
        ("FieldValueInvalid", "spec.failedJobsHistoryLimit", NEG),
    ]


def test_cronjob_time_zone(server: APIServer) -> None:
    path = f"{BATCH}/cronjobs"
    assert refused(server, path, cronjob("tz1", timeZone="Mars/Olympus")) == [
        (
            "FieldValueInvalid",
            "spec.timeZone",
            'Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus',
        )
    ]
    assert refused(server, path, cronjob("tz2", timeZone="Local")) == [
        (
            "FieldValueInvalid",
            "spec.timeZone",
            'Invalid value: "Local": timeZone must be an explicit time zone as defined in '
            "https://www.iana.org/time-zones",
        )
    ]
    accepted(server, path, cronjob("tz3", timeZone="Europe/Paris"))
    accepted(server, path, cronjob("tz4", timeZone="UTC"))


# --- Service ------------------------------------------------------------------------


def service(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"ports": [{"port": 80}], "selector": {"app": "x"}, **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


def test_service_type_and_affinity(server: APIServer) -> None:
    obj = service("odd", type="Internal", sessionAffinity="Sticky")
    assert refused(server, f"{NS}/services", obj) == [
        (
            "FieldValueNotSupported",
            "spec.sessionAffinity",
            'Unsupported value: "Sticky": supported values: "ClientIP", "None"',
        ),
        (
            "FieldValueNotSupported",
            "spec.type",
            'Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", '
            '"LoadBalancer", "NodePort"',
        ),
    ]


def test_a_headless_node_port_service_is_refused(server: APIServer) -> None:
    obj = service("headless-np", type="NodePort", clusterIP="None")
    assert refused(server, f"{NS}/services", obj) == [
        (
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            "Invalid value: \"None\": may not be set to 'None' for NodePort services",
        )
    ]
    accepted(server, f"{NS}/services", service("headless", clusterIP="None"))


def test_external_name_services(server: APIServer) -> None:
    path = f"{NS}/services"
    obj = service("ext", type="ExternalName")
    del obj["spec"]["ports"]
    assert refused(server, path, obj) == [
        ("FieldValueRequired", "spec.externalName", "Required value")
    ]
    obj["spec"]["externalName"] = "Not_A_Host"
    got = refused(server, path, obj)
    assert got[0][:2] == ("FieldValueInvalid", "spec.externalName")
    assert got[0][2].startswith('Invalid value: "Not_A_Host": a lowercase RFC 1123 subdomain')
    obj["spec"]["externalName"] = "db.example.com."
    accepted(server, path, obj)


def test_service_selector_labels(server: APIServer) -> None:
    obj = service("sel", selector={"app": "a b"})
    got = refused(server, f"{NS}/services", obj)
    assert got[0][:2] == ("FieldValueInvalid", "spec.selector")
    assert got[0][2].startswith('Invalid value: "a b": a valid label must be an empty string')


# --- ConfigMap / Secret ---------------------------------------------------------------

KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def configmap(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def secret(name: str, stype: str | None = None, **fields: Any) -> dict[str, Any]:
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}
    if stype is not None:
        obj["type"] = stype
    return obj


def test_configmap_keys(server: APIServer) -> None:
    path = f"{NS}/configmaps"
    assert refused(server, path, configmap("bad", data={"a/b": "x"})) == [
        ("FieldValueInvalid", "data[a/b]", f'Invalid value: "a/b": {KEY_MSG}')
    ]
    assert refused(server, path, configmap("dots", binaryData={"..x": "eA=="})) == [
        ("FieldValueInvalid", "binaryData[..x]", "Invalid value: \"..x\": must not start with '..'")
    ]
    both = configmap("both", data={"k": "x"}, binaryData={"k": "eA=="})
    assert refused(server, path, both) == [
        (
            "FieldValueInvalid",
            "data[k]",
            'Invalid value: "k": duplicate of key present in binaryData',
        )
    ]
    accepted(server, path, configmap("good", data={"app.conf": "x", "KEY_1": "y"}))


def test_an_immutable_configmap_keeps_its_data(server: APIServer) -> None:
    path = f"{NS}/configmaps"
    created = accepted(server, path, configmap("frozen", data={"k": "v"}, immutable=True))
    changed = copy.deepcopy(created)
    changed["data"] = {"k": "w"}
    changed["immutable"] = False
    code, out = request(server, "PUT", f"{path}/frozen", changed)
    assert code == 422, out
    assert causes(out) == [
        (
            "FieldValueForbidden",
            "immutable",
            "Forbidden: field is immutable when `immutable` is set",
        ),
        ("FieldValueForbidden", "data", "Forbidden: field is immutable when `immutable` is set"),
    ]
    # Metadata may still change.
    changed = copy.deepcopy(created)
    changed["metadata"]["labels"] = {"a": "b"}
    code, out = request(server, "PUT", f"{path}/frozen", changed)
    assert code == 200, out


def test_secret_types(server: APIServer) -> None:
    path = f"{NS}/secrets"
    assert refused(server, path, secret("tls", "kubernetes.io/tls", data={})) == [
        ("FieldValueRequired", "data[tls.crt]", "Required value"),
        ("FieldValueRequired", "data[tls.key]", "Required value"),
    ]
    assert refused(server, path, secret("docker", "kubernetes.io/dockerconfigjson")) == [
        ("FieldValueRequired", "data[.dockerconfigjson]", "Required value")
    ]
    assert refused(server, path, secret("basic", "kubernetes.io/basic-auth")) == [
        ("FieldValueRequired", "data[%s][username]", "Required value"),
        ("FieldValueRequired", "data[%s][password]", "Required value"),
    ]
    assert refused(server, path, secret("ssh", "kubernetes.io/ssh-auth")) == [
        ("FieldValueRequired", "data[%s][ssh-privatekey]", "Required value")
    ]
    assert refused(server, path, secret("sa", "kubernetes.io/service-account-token")) == [
        (
            "FieldValueRequired",
            "metadata.annotations[kubernetes.io/service-account.name]",
            "Required value",
        )
    ]
    assert refused(server, path, secret("key", data={"a b": "eA=="})) == [
        ("FieldValueInvalid", "data[a b]", f'Invalid value: "a b": {KEY_MSG}')
    ]
    accepted(
        server,
        path,
        secret("tls-ok", "kubernetes.io/tls", stringData={"tls.crt": "c", "tls.key": "k"}),
    )
    accepted(
        server, path, secret("basic-ok", "kubernetes.io/basic-auth", stringData={"username": "u"})
    )
    accepted(server, path, secret("opaque", stringData={"x": "y"}))


def test_secret_type_and_immutable_data_on_update(server: APIServer) -> None:
    path = f"{NS}/secrets"
    created = accepted(server, path, secret("typed", stringData={"tls.crt": "c", "tls.key": "k"}))
    changed = copy.deepcopy(created)
    changed["type"] = "kubernetes.io/tls"
    code, out = request(server, "PUT", f"{path}/typed", changed)
    assert code == 422, out
    assert causes(out) == [
        ("FieldValueInvalid", "type", 'Invalid value: "kubernetes.io/tls": field is immutable')
    ]
    frozen = accepted(server, path, secret("frozen", stringData={"x": "y"}, immutable=True))
    frozen["data"] = {"x": "eg=="}
    code, out = request(server, "PUT", f"{path}/frozen", frozen)
    assert code == 422, out
    assert causes(out) == [
        ("FieldValueForbidden", "data", "Forbidden: field is immutable when `immutable` is set")
    ]
