"""Deleting a CRD as kube-apiserver does: Terminating, instances deleted, then gone.

apiextensions' ``REST.Delete`` only marks a CRD on its first delete
(``deletionTimestamp``, the ``customresourcecleanup.apiextensions.k8s.io``
finalizer, ``Terminating=True`` with reason ``InstanceDeletionPending``); its
CRD finalizer then deletes every instance (an instance with finalizers stays,
terminating, until its controller removes them), and once none is left sets
``Terminating=False`` (``InstanceDeletionCompleted``) and removes the
finalizer, which removes the CRD. While it is terminating, creating an
instance is refused with 405. A controller that keeps finalizers on its
custom resources must see its CRD wait for it, as on a cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support import crds
from support.http import request

from pycontroller.testing import APIServer
from pycontroller.testing.wait import wait_for

CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
CLEANUP = "customresourcecleanup.apiextensions.k8s.io"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        s.install_crd(crds.crd("widgets", "Widget"))
        yield s


def widget(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, **meta},
        "spec": {"size": 1},
    }


def terminating(crd: dict[str, Any]) -> dict[str, Any]:
    conds = [c for c in crd["status"]["conditions"] if c["type"] == "Terminating"]
    assert len(conds) == 1, crd["status"]["conditions"]
    return dict(conds[0])


def test_first_delete_marks_the_crd_and_the_finalizer_removes_it(server: APIServer) -> None:
    for name in ("a", "b"):
        code, out = request(server, "POST", WIDGETS, widget(name))
        assert code == 201, out
    server.gc.stop()  # hold the finalizer: see what the DELETE itself answers
    code, marked = request(server, "DELETE", CRD)
    assert code == 200, marked
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["finalizers"] == [CLEANUP]
    assert "deletionGracePeriodSeconds" not in marked["metadata"]
    cond = terminating(marked)
    assert (cond["status"], cond["reason"]) == ("True", "InstanceDeletionPending")
    assert cond["message"] == (
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
    )
    code, _ = request(server, "GET", f"{WIDGETS}/a")
    assert code == 200  # nothing deleted yet
    server.gc.start()
    wait_for(lambda: request(server, "GET", CRD)[0] == 404, what="CRD removed")
    assert request(server, "GET", WIDGETS)[0] == 404  # no longer served


def test_an_instance_finalizer_holds_the_crd_and_creates_are_refused(server: APIServer) -> None:
    code, out = request(server, "POST", WIDGETS, widget("held", finalizers=["example.com/x"]))
    assert code == 201, out
    code, out = request(server, "POST", WIDGETS, widget("free"))
    assert code == 201, out
    code, _ = request(server, "DELETE", CRD)
    assert code == 200

    def in_progress() -> bool:
        code, crd = request(server, "GET", CRD)
        return code == 200 and terminating(crd)["reason"] == "InstanceDeletionInProgress"

    wait_for(in_progress, what="Terminating=True InstanceDeletionInProgress")
    wait_for(lambda: request(server, "GET", f"{WIDGETS}/free")[0] == 404, what="free deleted")
    code, held = request(server, "GET", f"{WIDGETS}/held")
    assert code == 200
    assert held["metadata"]["deletionTimestamp"]  # terminating, waiting for its controller

    code, refused = request(server, "POST", WIDGETS, widget("late"))
    assert code == 405, refused
    assert refused["reason"] == "MethodNotAllowed"
    assert refused["message"] == (
        "create not allowed while custom resource definition is terminating"
    )
    assert refused["details"] == {"group": "example.com", "kind": "widgets"}

    # Server-side apply may not create one either (kubernetes#132467): 403.
    code, refused = request(
        server,
        "PATCH",
        f"{WIDGETS}/late?fieldManager=t",
        widget("late"),
        "application/apply-patch+yaml",
    )
    assert code == 403, refused
    assert refused["message"] == (
        'widgets.example.com "late" is forbidden: '
        "create not allowed while custom resource definition is terminating"
    )
    # Updating an existing one is still allowed (its controller must remove the finalizer).

    # Its controller finishes: the finalizer comes off, the instance goes, so does the CRD.
    code, out = request(
        server,
        "PATCH",
        f"{WIDGETS}/held",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    assert code == 200, out
    wait_for(lambda: request(server, "GET", CRD)[0] == 404, what="CRD removed")


def test_the_crd_is_recreated_after_it_is_gone(server: APIServer) -> None:
    assert request(server, "POST", WIDGETS, widget("a"))[0] == 201
    assert request(server, "DELETE", CRD)[0] == 200
    wait_for(lambda: request(server, "GET", CRD)[0] == 404, what="CRD removed")
    server.install_crd(crds.crd("widgets", "Widget"))
    code, out = request(server, "GET", WIDGETS)
    assert code == 200, out
    assert out["items"] == []  # its old instances went with it
    assert request(server, "POST", WIDGETS, widget("a"))[0] == 201


def test_a_dry_run_delete_changes_nothing(server: APIServer) -> None:
    code, out = request(server, "DELETE", f"{CRD}?dryRun=All")
    assert code == 200, out
    assert out["metadata"]["finalizers"] == [CLEANUP]
    code, crd = request(server, "GET", CRD)
    assert code == 200
    assert "deletionTimestamp" not in crd["metadata"]
    assert not [c for c in crd["status"]["conditions"] if c["type"] == "Terminating"]


def test_instances_are_deleted_without_a_policy_so_their_own_finalizer_decides(
    server: APIServer,
) -> None:
    # The CRD finalizer's DeleteCollection sends no DeleteOptions: an instance
    # carrying the orphan finalizer orphans its dependents, as it would alone.
    code, owner = request(server, "POST", WIDGETS, widget("owner", finalizers=["orphan"]))
    assert code == 201, owner
    ref = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    cm = {"metadata": {"name": "dep", "ownerReferences": [ref]}}
    assert request(server, "POST", "/api/v1/namespaces/default/configmaps", cm)[0] == 201
    assert request(server, "DELETE", CRD)[0] == 200
    wait_for(lambda: request(server, "GET", CRD)[0] == 404, what="CRD removed")
    code, dep = request(server, "GET", "/api/v1/namespaces/default/configmaps/dep")
    assert code == 200, "the dependent was deleted instead of orphaned"
    assert "ownerReferences" not in dep["metadata"]
