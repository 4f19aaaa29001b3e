"""Deleting a batch/v1 Job without a propagation policy orphans its pods, as
kube-apiserver does ("for back compatibility": the Job strategy's
``DefaultGarbageCollectionPolicy``), and the answer warns about it; kubectl
(which sends Background) and an explicit policy are unaffected."""

from __future__ import annotations

import json
from typing import Any

from support.http import call, request

from pycontroller.testing import APIServer, wait_for

JOBS = "/apis/batch/v1/namespaces/default/jobs"
PODS = "/api/v1/namespaces/default/pods"
WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set '
    "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to "
    'suppress this warning"'
)


def job_with_pod(server: APIServer, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
            }
        },
    }
    code, job = request(server, "POST", JOBS, body)
    assert code == 201, job
    ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": name,
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    pod = {
        "metadata": {"name": f"{name}-pod", "ownerReferences": [ref]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    code, out = request(server, "POST", PODS, pod)
    assert code == 201, out
    return job


def gone(server: APIServer, path: str) -> bool:
    return request(server, "GET", path)[0] == 404


def test_a_delete_without_policy_orphans_the_pods_and_warns(apiserver: APIServer) -> None:
    job_with_pod(apiserver, "plain")
    code, headers, _ = call(apiserver, "DELETE", f"{JOBS}/plain")
    assert code == 200
    assert headers.get("Warning") == WARNING
    wait_for(lambda: gone(apiserver, f"{JOBS}/plain"), 10, what="the job gone")
    code, pod = request(apiserver, "GET", f"{PODS}/plain-pod")
    assert code == 200, "the pod is orphaned, not deleted"
    assert "ownerReferences" not in pod["metadata"]


def test_an_explicit_policy_is_obeyed_without_warning(apiserver: APIServer) -> None:
    job_with_pod(apiserver, "bg")
    body = json.dumps({"propagationPolicy": "Background"}).encode()
    code, headers, _ = call(apiserver, "DELETE", f"{JOBS}/bg", body, "application/json")
    assert code == 200 and "Warning" not in headers
    wait_for(lambda: gone(apiserver, f"{PODS}/bg-pod"), 10, what="the pod collected")
    job_with_pod(apiserver, "orphan")
    code, headers, _ = call(apiserver, "DELETE", f"{JOBS}/orphan?propagationPolicy=Orphan")
    assert code == 200 and "Warning" not in headers
    wait_for(lambda: gone(apiserver, f"{JOBS}/orphan"), 10, what="the job gone")
    assert request(apiserver, "GET", f"{PODS}/orphan-pod")[0] == 200


def test_delete_collection_without_policy_warns_too(apiserver: APIServer) -> None:
    job_with_pod(apiserver, "coll")
    code, headers, _ = call(apiserver, "DELETE", JOBS)
    assert code == 200 and headers.get("Warning") == WARNING
    wait_for(lambda: gone(apiserver, f"{JOBS}/coll"), 10, what="the job gone")
    assert request(apiserver, "GET", f"{PODS}/coll-pod")[0] == 200
