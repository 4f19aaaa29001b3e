"""The pod Table as kube 1.32's ``printPod`` fills it (what ``kubectl get
pods`` shows), over HTTP: STATUS from the pod's reason, its scheduling gate,
its init and app containers' states; READY counting sidecars; RESTARTS with
the time of the last one; the wide columns; and the ``Completed`` condition
of a finished pod's row. Cases follow kube's ``TestPrintPod*``."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from support.http import call, request

from pycontroller.testing import APIServer

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
PODS = "/api/v1/namespaces/default/pods"
_n = 0


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def _ago(seconds: int) -> str:
    t = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def row(
    server: APIServer,
    status: dict[str, Any],
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Create a pod, write ``status`` through /status, answer its Table row
    as a dict of column name to cell (and the row's conditions)."""
    global _n
    _n += 1
    name = f"p{_n}"
    body = {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]},
    }
    body["spec"].update(spec or {})
    code, pod = request(server, "POST", PODS, body)
    assert code == 201, pod
    pod["status"] = {**pod["status"], **status}
    code, out = request(server, "PUT", f"{PODS}/{name}/status", pod)
    assert code == 200, out
    code, _, table = call(server, "GET", f"{PODS}/{name}", headers={"Accept": TABLE})
    assert code == 200, table
    names = [c["name"] for c in table["columnDefinitions"]]
    (r,) = table["rows"]
    cells = dict(zip(names, r["cells"], strict=True))
    cells["conditions"] = r.get("conditions")
    return cells


def running(name: str, restarts: int = 0, ready: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "image": "x",
        "imageID": "",
        "state": {"running": {"startedAt": _ago(60)}},
    }


def test_columns_are_kubes(server: APIServer) -> None:
    _, _, table = call(server, "GET", PODS, headers={"Accept": TABLE})
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]


def test_a_waiting_container_names_the_status(server: APIServer) -> None:
    waiting = {
        **running("b", 3),
        "ready": False,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    }
    got = row(server, {"phase": "Running", "containerStatuses": [running("a", 3), waiting]})
    assert (got["Ready"], got["Status"], got["Restarts"]) == ("1/2", "CrashLoopBackOff", "6")


def test_terminated_containers(server: APIServer) -> None:
    done = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    got = row(
        server,
        {
            "phase": "Succeeded",
            "containerStatuses": [
                {**running("a"), "ready": False, "state": done},
                {**running("b"), "ready": False, "state": done},
            ],
        },
    )
    assert (got["Ready"], got["Status"]) == ("0/2", "Completed")
    assert got["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "",
            "message": "The pod has completed successfully.",
        }
    ]
    signal = {**running("b"), "ready": False, "state": {"terminated": {"exitCode": 0, "signal": 9}}}
    got = row(server, {"phase": "Running", "containerStatuses": [running("a"), signal]})
    assert got["Status"] == "Signal:9"
    code = {**running("a"), "ready": False, "state": {"terminated": {"exitCode": 2}}}
    got = row(server, {"phase": "Failed", "containerStatuses": [code, running("b")]})
    assert got["Status"] == "ExitCode:2"
    assert got["conditions"][0]["message"] == "The pod has failed."


def test_a_completed_container_beside_a_running_one(server: APIServer) -> None:
    done = {
        **running("a"),
        "ready": False,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
    }
    ready = {"type": "Ready", "status": "True"}
    got = row(
        server,
        {"phase": "Running", "conditions": [ready], "containerStatuses": [done, running("b")]},
    )
    assert got["Status"] == "Running"
    got = row(server, {"phase": "Running", "containerStatuses": [done, running("b")]})
    assert got["Status"] == "NotReady"


def test_init_containers(server: APIServer) -> None:
    init = {"initContainers": [{"name": "i1", "image": "x"}, {"name": "i2", "image": "x"}]}
    done = {"name": "i1", "ready": False, "restartCount": 0, "image": "x", "imageID": "",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}  # fmt: skip
    waiting = {"name": "i2", "ready": False, "restartCount": 0, "image": "x", "imageID": "",
               "state": {"waiting": {"reason": "PodInitializing"}}}  # fmt: skip
    got = row(server, {"phase": "Pending", "initContainerStatuses": [done, waiting]}, init)
    assert got["Status"] == "Init:1/2"
    pulling = {**waiting, "state": {"waiting": {"reason": "ImagePullBackOff"}}}
    got = row(server, {"phase": "Pending", "initContainerStatuses": [done, pulling]}, init)
    assert got["Status"] == "Init:ImagePullBackOff"
    failed = {**waiting, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    got = row(server, {"phase": "Pending", "initContainerStatuses": [done, failed]}, init)
    assert got["Status"] == "Init:Error"


def test_a_started_sidecar_counts_as_ready(server: APIServer) -> None:
    sidecar = {"initContainers": [{"name": "s", "image": "x", "restartPolicy": "Always"}]}
    status = {"name": "s", "ready": True, "started": True, "restartCount": 2, "image": "x",
              "imageID": "", "state": {"running": {"startedAt": _ago(60)}}}  # fmt: skip
    got = row(
        server,
        {
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [status],
            "containerStatuses": [running("a"), running("b", 1)],
        },
        sidecar,
    )
    assert (got["Ready"], got["Status"], got["Restarts"]) == ("3/3", "Running", "3")


def test_restarts_show_when_the_last_one_was(server: APIServer) -> None:
    restarted = {
        **running("a", 4),
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": _ago(300)}},
    }
    got = row(server, {"phase": "Running", "containerStatuses": [restarted, running("b")]})
    assert got["Restarts"] in ("4 (5m ago)", "4 (5m1s ago)", "4 (5m2s ago)")


def test_gated_terminating_and_wide_columns(server: APIServer) -> None:
    got = row(server, {"phase": "Pending"}, {"schedulingGates": [{"name": "wait"}]})
    assert got["Status"] == "SchedulingGated"
    got = row(
        server,
        {
            "phase": "Running",
            "podIPs": [{"ip": "10.0.0.7"}],
            "podIP": "10.0.0.7",
            "nominatedNodeName": "node-2",
            "conditions": [{"type": "example.com/ready", "status": "True"}],
        },
        {"readinessGates": [{"conditionType": "example.com/ready"}, {"conditionType": "other"}]},
    )
    assert (got["IP"], got["Node"], got["Nominated Node"], got["Readiness Gates"]) == (
        "10.0.0.7",
        "<none>",
        "node-2",
        "1/2",
    )


def test_a_pod_being_deleted_is_terminating_unless_finished(server: APIServer) -> None:
    merge = "application/merge-patch+json"
    for phase, shown in (("Running", "Terminating"), ("Succeeded", "Succeeded")):
        row(server, {"phase": phase}, {"nodeName": "node-1"})
        path = f"{PODS}/p{_n}"
        keep = {"metadata": {"finalizers": ["example.com/keep"]}}
        assert request(server, "PATCH", path, keep, merge)[0] == 200
        code, out = request(server, "DELETE", path)
        assert code == 200, out
        _, _, table = call(server, "GET", path, headers={"Accept": TABLE})
        assert table["rows"][0]["cells"][2] == shown
        assert request(server, "PATCH", path, {"metadata": {"finalizers": None}}, merge)[0] == 200


def test_service_external_ip_as_get_service_external_ip(server: APIServer) -> None:
    """Not a pod, but the same printers file: ``getServiceExternalIP``."""
    services = "/api/v1/namespaces/default/services"

    def external(name: str, spec: dict[str, Any], ingress: list[dict[str, str]]) -> str:
        body = {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}], **spec}}
        code, svc = request(server, "POST", services, body)
        assert code == 201, svc
        if ingress:
            svc["status"] = {"loadBalancer": {"ingress": ingress}}
            assert request(server, "PUT", f"{services}/{name}/status", svc)[0] == 200
        _, _, table = call(server, "GET", f"{services}/{name}", headers={"Accept": TABLE})
        names = [c["name"] for c in table["columnDefinitions"]]
        return str(table["rows"][0]["cells"][names.index("External-IP")])

    lb = {"ip": "203.0.113.9"}
    assert external("c1", {"externalIPs": ["192.0.2.1"]}, [lb]) == "192.0.2.1"
    assert external("c2", {}, [lb]) == "<none>"
    assert external("l1", {"type": "LoadBalancer"}, []) == "<pending>"
    both = {"type": "LoadBalancer", "externalIPs": ["192.0.2.1"]}
    assert external("l2", both, [lb, {"hostname": "a.example.com"}]) == (
        "203.0.113.9,a.example.com,192.0.2.1"
    )
