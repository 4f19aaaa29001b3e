"""The simulated Job controller (``APIServer(simulate=["jobs", "kubelet"])``)
over HTTP: pods, completions and parallelism, Indexed Jobs, the backoff
limit, ``activeDeadlineSeconds``, suspend and resume, cascading deletion,
``ttlSecondsAfterFinished``, field managers, and ``kubectl wait``."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pycontroller import ResourceClient
from pycontroller.errors import NotFoundError
from pycontroller.testing import APIServer, wait_for

NS = "default"
EXIT_CODE = "simulate.pycontroller.dev/exit-code"
RUN_SECONDS = "simulate.pycontroller.dev/run-seconds"
TRACKING = "batch.kubernetes.io/job-tracking"
INDEX = "batch.kubernetes.io/job-completion-index"
KUBECTL = shutil.which("kubectl")


class Clients:
    def __init__(self, server: APIServer) -> None:
        api = server.api_client()
        self.server = server
        self.jobs = ResourceClient(api, "batch", "v1", "jobs")
        self.pods = ResourceClient(api, "", "v1", "pods")
        self.events = ResourceClient(api, "", "v1", "events")

    def pods_of(self, name: str) -> list[dict[str, Any]]:
        return [
            p
            for p in self.pods.list(NS)["items"]
            if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == name
        ]

    def job_when(
        self, name: str, pred: Callable[[dict[str, Any]], bool], what: str, timeout: float = 10
    ) -> dict[str, Any]:
        """The Job once ``pred`` holds for it (polled until ``timeout``)."""
        seen: list[dict[str, Any]] = []

        def check() -> bool:
            seen.append(self.jobs.get(name, NS))
            return pred(seen[-1])

        wait_for(check, timeout=timeout, what=what)
        return seen[-1]

    def finished(self, name: str, ctype: str = "Complete") -> dict[str, Any]:
        """The Job once its ``ctype`` condition is True."""
        return self.job_when(
            name, lambda j: condition(j, ctype).get("status") == "True", f"{name} {ctype}"
        )

    def reasons(self, name: str) -> list[str]:
        return [
            e["reason"]
            for e in self.events.list(NS)["items"]
            if e["involvedObject"].get("name") == name and e["involvedObject"]["kind"] == "Job"
        ]


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer(simulate=["jobs", "kubelet"]) as s:
        yield s


@pytest.fixture
def k(server: APIServer) -> Clients:
    return Clients(server)


def job(
    name: str = "work",
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            **spec,
            "template": {
                "metadata": {"annotations": dict(annotations or {})},
                "spec": {
                    "restartPolicy": restart_policy,
                    "containers": [{"name": "main", "image": "busybox:1.36"}],
                },
            },
        },
    }


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    """The ``ctype`` condition, ``{}`` when there is none."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return {}


def types(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""))
        for c in (obj.get("status") or {}).get("conditions") or []
    ]


def phases(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["status"].get("phase", "") for p in pods)


# --- completions ---------------------------------------------------------------------


def test_completions_with_parallelism(k: Clients) -> None:
    created = k.jobs.create(
        job(completions=3, parallelism=2, annotations={RUN_SECONDS: "0.5"}), namespace=NS
    )
    uid = created["metadata"]["uid"]

    wait_for(lambda: phases(k.pods_of("work")) == ["Running"] * 2, timeout=5, what="2 running")
    pods = k.pods_of("work")  # the third waits for a completion: at most 2 at once
    assert phases(pods) == ["Running"] * 2
    for p in pods:
        m = p["metadata"]
        assert re.fullmatch(r"work-[a-z0-9]{5}", m["name"]), m["name"]
        assert m["finalizers"] == [TRACKING]
        assert m["ownerReferences"] == [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "work",
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert m["labels"] == {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "work",
            "controller-uid": uid,
            "job-name": "work",
        }
        assert m["annotations"] == {RUN_SECONDS: "0.5"}
    running = k.job_when("work", lambda j: j["status"].get("ready") == 2, "2 ready counted")
    assert running["status"]["active"] == 2 and running["status"]["terminating"] == 0
    assert running["status"]["uncountedTerminatedPods"] == {}
    assert "completionTime" not in running["status"] and not condition(running, "Complete")

    done = k.finished("work")
    st = done["status"]
    assert types(done) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert condition(done, "Complete")["message"] == "Reached expected number of succeeded pods"
    assert st["succeeded"] == 3 and "failed" not in st and "active" not in st
    assert st["ready"] == 0 and st["terminating"] == 0 and st["uncountedTerminatedPods"] == {}
    assert st["startTime"] <= st["completionTime"]
    assert "observedGeneration" not in st
    pods = k.pods_of("work")
    assert phases(pods) == ["Succeeded"] * 3
    assert all("finalizers" not in p["metadata"] for p in pods)
    state = pods[0]["status"]["containerStatuses"][0]
    assert state["ready"] is False
    assert state["state"]["terminated"]["exitCode"] == 0
    assert state["state"]["terminated"]["reason"] == "Completed"
    ready = next(c for c in pods[0]["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")
    assert k.reasons("work").count("SuccessfulCreate") == 3
    assert k.reasons("work")[-1] == "Completed"
    assert k.server.writes("pods") == 0 and k.server.writes("jobs") == 1
    assert k.server.simulator.run_until_idle() == 0  # a finished Job is left alone


def test_indexed_completion(k: Clients) -> None:
    k.jobs.create(job("ix", completions=3, parallelism=3, completionMode="Indexed"), namespace=NS)
    done = k.finished("ix")
    assert done["status"]["completedIndexes"] == "0-2"
    assert done["status"]["succeeded"] == 3
    pods = sorted(k.pods_of("ix"), key=lambda p: p["metadata"]["annotations"][INDEX])
    for i, p in enumerate(pods):
        m = p["metadata"]
        assert re.fullmatch(rf"ix-{i}-[a-z0-9]{{5}}", m["name"]), m["name"]
        assert m["annotations"][INDEX] == str(i) and m["labels"][INDEX] == str(i)
        assert p["spec"]["hostname"] == f"ix-{i}"
        assert p["spec"]["containers"][0]["env"] == [
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "apiVersion": "v1",
                        "fieldPath": f"metadata.annotations['{INDEX}']",
                    }
                },
            }
        ]


def test_completions_unset_completes_on_first_success(k: Clients) -> None:
    k.jobs.create(job("queue", parallelism=2), namespace=NS)
    done = k.finished("queue")
    assert done["spec"].get("completions") is None
    assert done["status"]["succeeded"] == 2


# --- failures --------------------------------------------------------------------------


@pytest.mark.parametrize("restart_policy", ["Never", "OnFailure"])
def test_backoff_limit_failure(k: Clients, restart_policy: str) -> None:
    """A non-zero exit fails the pod, also under OnFailure (documented: the
    simulated kubelet never restarts containers in place)."""
    k.jobs.create(
        job("bad", {EXIT_CODE: "3"}, restart_policy, backoffLimit=1),
        namespace=NS,
    )
    failed = k.finished("bad", "Failed")
    assert types(failed) == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]
    assert condition(failed, "Failed")["message"] == "Job has reached the specified backoff limit"
    st = failed["status"]
    assert st["failed"] == 2 and "succeeded" not in st and "completionTime" not in st
    pods = k.pods_of("bad")
    assert phases(pods) == ["Failed", "Failed"]
    terminated = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert all("finalizers" not in p["metadata"] for p in pods)
    assert k.reasons("bad")[-1] == "BackoffLimitExceeded"


def test_active_deadline_deletes_active_pods(k: Clients) -> None:
    k.jobs.create(
        job("slow", activeDeadlineSeconds=1, annotations={RUN_SECONDS: "60"}), namespace=NS
    )
    failed = k.finished("slow", "Failed")
    assert types(failed) == [
        ("FailureTarget", "True", "DeadlineExceeded"),
        ("Failed", "True", "DeadlineExceeded"),
    ]
    assert failed["status"]["failed"] == 1 and failed["status"]["terminating"] == 0
    wait_for(lambda: k.pods_of("slow") == [], timeout=5, what="the running pod deleted")


# --- podFailurePolicy and successPolicy ---------------------------------------------------


def test_pod_failure_policy_fail_job_rule(k: Clients) -> None:
    """A FailJob rule on the exit code fails the Job on the first such failure,
    whatever is left of ``backoffLimit`` (kube's ``PodFailurePolicy`` reason
    and message)."""
    policy = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
    k.jobs.create(job("pfp", {EXIT_CODE: "42"}, podFailurePolicy=policy), namespace=NS)
    failed = k.finished("pfp", "Failed")
    assert types(failed) == [
        ("FailureTarget", "True", "PodFailurePolicy"),
        ("Failed", "True", "PodFailurePolicy"),
    ]
    (pod,) = k.pods_of("pfp")
    message = (
        f"Container main for pod {NS}/{pod['metadata']['name']} failed with exit code 42 "
        "matching FailJob rule at index 0"
    )
    assert condition(failed, "Failed")["message"] == message
    assert failed["status"]["failed"] == 1
    assert "finalizers" not in pod["metadata"]
    assert k.reasons("pfp")[-1] == "PodFailurePolicy"


def test_pod_failure_policy_rules_in_order_and_not_in(k: Clients) -> None:
    """Rules are tried in order; NotIn matches codes outside its values; a
    code no rule matches counts against ``backoffLimit`` as without a policy."""
    policy = {
        "rules": [
            {"action": "Count", "onExitCodes": {"operator": "In", "values": [3]}},
            {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
        ]
    }
    k.jobs.create(job("first", {EXIT_CODE: "3"}, podFailurePolicy=policy, backoffLimit=1), NS)
    failed = k.finished("first", "Failed")
    assert condition(failed, "Failed")["reason"] == "BackoffLimitExceeded"
    assert failed["status"]["failed"] == 2

    k.jobs.create(job("second", {EXIT_CODE: "7"}, podFailurePolicy=policy, backoffLimit=1), NS)
    failed = k.finished("second", "Failed")
    assert condition(failed, "Failed")["reason"] == "PodFailurePolicy"
    assert condition(failed, "Failed")["message"].endswith("matching FailJob rule at index 1")
    assert failed["status"]["failed"] == 1


def test_pod_failure_policy_ignore_rule_does_not_count(k: Clients) -> None:
    """Failures an Ignore rule matches are replaced without counting against
    ``backoffLimit`` (0 here: one counted failure would fail the Job)."""
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}}]}
    k.jobs.create(job("ignored", {EXIT_CODE: "137"}, podFailurePolicy=policy, backoffLimit=0), NS)
    wait_for(
        lambda: phases(k.pods_of("ignored")).count("Failed") >= 3,
        timeout=10,
        what="three ignored failures, each replaced",
    )
    current = k.jobs.get("ignored", NS)
    assert "failed" not in current["status"]
    assert not condition(current, "Failed") and not condition(current, "FailureTarget")
    k.jobs.patch("ignored", {"spec": {"suspend": True}}, NS)  # stop the churn


def test_success_policy_completes_an_indexed_job_early(k: Clients) -> None:
    """An Indexed Job whose succeededIndexes rule is met is complete with
    reason ``SuccessPolicy``: the other indexes' pods are deleted, not failed."""
    k.jobs.create(
        job(
            "leader",
            {RUN_SECONDS: "60"},
            completions=3,
            parallelism=3,
            completionMode="Indexed",
            successPolicy={"rules": [{"succeededIndexes": "0"}]},
        ),
        NS,
    )
    wait_for(lambda: phases(k.pods_of("leader")) == ["Running"] * 3, timeout=5, what="running")
    leader = next(p for p in k.pods_of("leader") if p["metadata"]["annotations"][INDEX] == "0")
    k.pods.patch(leader["metadata"]["name"], {"metadata": {"annotations": {RUN_SECONDS: "0"}}}, NS)
    done = k.finished("leader")
    assert types(done) == [
        ("SuccessCriteriaMet", "True", "SuccessPolicy"),
        ("Complete", "True", "SuccessPolicy"),
    ]
    assert condition(done, "Complete")["message"] == "Matched rules at index 0"
    st = done["status"]
    assert st["completedIndexes"] == "0" and st["succeeded"] == 1
    assert "failed" not in st and st["terminating"] == 0
    wait_for(
        lambda: [p["metadata"]["annotations"][INDEX] for p in k.pods_of("leader")] == ["0"],
        timeout=5,
        what="the other indexes' pods deleted",
    )


def test_success_policy_succeeded_count(k: Clients) -> None:
    """``succeededCount`` alone: that many succeeded indexes, any of them."""
    k.jobs.create(
        job(
            "quorum",
            completions=5,
            parallelism=2,
            completionMode="Indexed",
            successPolicy={"rules": [{"succeededCount": 2}]},
        ),
        NS,
    )
    done = k.finished("quorum")
    assert condition(done, "Complete")["reason"] == "SuccessPolicy"
    assert done["status"]["succeeded"] >= 2 and done["status"]["succeeded"] < 5


# --- suspend ---------------------------------------------------------------------------


def test_suspend_and_resume(k: Clients) -> None:
    k.jobs.create(
        job("later", parallelism=2, completions=2, suspend=True, annotations={RUN_SECONDS: "60"}),
        namespace=NS,
    )
    suspended = k.job_when("later", lambda j: bool(condition(j, "Suspended")), "Suspended")
    assert types(suspended) == [("Suspended", "True", "JobSuspended")]
    assert "startTime" not in suspended["status"] and k.pods_of("later") == []

    k.jobs.patch("later", {"spec": {"suspend": False}}, NS)
    wait_for(lambda: phases(k.pods_of("later")) == ["Running"] * 2, timeout=5, what="resumed")
    resumed = k.job_when("later", lambda j: j["status"].get("ready") == 2, "2 ready counted")
    assert types(resumed) == [("Suspended", "False", "JobResumed")]
    assert resumed["status"]["startTime"]

    k.jobs.patch("later", {"spec": {"suspend": True}}, NS)
    wait_for(lambda: k.pods_of("later") == [], timeout=5, what="active pods deleted")
    again = k.job_when("later", lambda j: j["status"].get("terminating") == 0, "none terminating")
    assert types(again) == [("Suspended", "True", "JobSuspended")]
    # Pods deleted for a suspension lose their finalizer first: not failures.
    assert "failed" not in again["status"] and "active" not in again["status"]
    assert again["status"]["ready"] == 0
    assert k.reasons("later").count("Suspended") == 2
    assert k.reasons("later").count("Resumed") == 1
    assert k.server.simulator.run_until_idle() == 0


# --- deletion ---------------------------------------------------------------------------


def test_deleting_the_job_deletes_its_pods(k: Clients) -> None:
    k.jobs.create(job("gone", parallelism=2, annotations={RUN_SECONDS: "60"}), namespace=NS)
    wait_for(lambda: phases(k.pods_of("gone")) == ["Running"] * 2, timeout=5, what="running")
    k.jobs.delete("gone", NS, propagation_policy="Background")  # as kubectl delete does
    wait_for(lambda: k.pods_of("gone") == [], timeout=5, what="pods collected")
    with pytest.raises(NotFoundError):
        k.jobs.get("gone", NS)


def test_ttl_seconds_after_finished_deletes_the_job(k: Clients) -> None:
    k.jobs.create(job("brief", ttlSecondsAfterFinished=0), namespace=NS)

    def deleted() -> bool:
        try:
            k.jobs.get("brief", NS)
        except NotFoundError:
            return True
        return False

    wait_for(deleted, timeout=10, what="Job deleted after its TTL")
    wait_for(lambda: k.pods_of("brief") == [], timeout=5, what="its pods deleted too")


# --- who writes -------------------------------------------------------------------------


def test_field_managers_are_kubes(k: Clients) -> None:
    k.jobs.create(job("mf"), namespace=NS)
    done = k.finished("mf")
    managers = {(e["manager"], e.get("subresource", "")) for e in done["metadata"]["managedFields"]}
    assert ("kube-controller-manager", "status") in managers
    pod = k.pods_of("mf")[0]
    managers = {(e["manager"], e.get("subresource", "")) for e in pod["metadata"]["managedFields"]}
    assert ("kube-controller-manager", "") in managers
    assert ("kubelet", "status") in managers


def test_other_pods_are_not_finished() -> None:
    with APIServer(simulate=["jobs", "kubelet"]) as s:
        pods = ResourceClient(s.api_client(), "", "v1", "pods")
        pods.create(
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            namespace=NS,
        )
        wait_for(lambda: pods.get("p", NS)["status"].get("phase") == "Running", timeout=5)
        assert s.simulator.run_until_idle() == 0
        assert pods.get("p", NS)["status"]["phase"] == "Running"


def test_without_the_kubelet_job_pods_stay_pending() -> None:
    with APIServer(simulate=["jobs"]) as s:
        k = Clients(s)
        k.jobs.create(job(), namespace=NS)
        wait_for(
            lambda: k.jobs.get("work", NS)["status"].get("active") == 1,
            timeout=5,
            what="one active pod",
        )
        assert s.simulator.run_until_idle() == 0
        assert phases(k.pods_of("work")) == ["Pending"]


# --- kubectl ---------------------------------------------------------------------------


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_wait_for_complete(server: APIServer, tmp_path: Path) -> None:
    assert KUBECTL is not None
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")

    def kubectl(*args: str) -> str:
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", kubeconfig, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    kubectl("create", "job", "x", "--image=busybox:1.36", "--", "true")
    out = kubectl("wait", "--for=condition=complete", "job/x", "--timeout=30s")
    assert out.strip() == "job.batch/x condition met"
    status = kubectl("get", "job", "x", "-o", "jsonpath={.status.succeeded}")
    assert status == "1"
    row = kubectl("get", "job", "x", "--no-headers").split()
    assert row[:3] == ["x", "Complete", "1/1"]
