"""Specs the API server admits because it enforces none of the CRD's schema.

An older cluster, a CRD installed without its schema or CEL rules, or a
hand-edited object can hand the controller anything: a name too long for a
label value, ``spec.backends`` as an object, no spec at all, a thousand
backends. Whatever it gets, the controller must end in ``Reconciled=False``
with reason ``InvalidSpec`` and a message naming the field, send exactly one
Warning event, write no child and not retry (an invalid spec is final until
the spec changes) — never a traceback loop (issue 9, findings 3 and 5).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controllers.balancer import names, validation
from controllers.balancer.compat import BalancerController
from pycontroller.testing import APIServer

from .conftest import Cluster, running_controller, sample_balancer, wait_for

NS = "default"


@pytest.fixture
def loose(permissive_server: APIServer) -> Cluster:
    return Cluster(permissive_server)


@pytest.fixture
def loose_controller(permissive_server: APIServer) -> Iterator[BalancerController]:
    with running_controller(permissive_server) as bc:
        yield bc


def _balancer(name: str, spec: Any = None, *, with_spec: bool = True) -> dict[str, Any]:
    obj = sample_balancer(name=name, namespace=NS)
    if not with_spec:
        del obj["spec"]
    elif spec is not None:
        obj["spec"] = spec
    return obj


def _backends(n: int) -> list[dict[str, Any]]:
    return [{"name": f"b{i}", "weight": 1} for i in range(n)]


def _ports(n: int) -> list[dict[str, Any]]:
    return [{"name": f"p{i}", "port": 1000 + i} for i in range(n)]


def _spec(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = sample_balancer()["spec"]
    spec.update(fields)
    return spec


# (id, Balancer, the field the condition's message starts with, words it contains)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("name-64", _balancer("a" * 64), "metadata.name", "longer than 63"),
    ("name-253", _balancer("b" * 253), "metadata.name", "longer than 63"),
    ("name-dotted", _balancer("bal.ancer"), "metadata.name", "DNS-1035"),
    (
        "backends-object",
        _balancer("backends-object", _spec(backends={"name": "v1", "weight": 1})),
        "spec.backends",
        "must be a list, got object",
    ),
    ("ports-string", _balancer("ports-string", _spec(ports="80")), "spec.ports", "got string"),
    ("spec-missing", _balancer("spec-missing", with_spec=False), "spec", "required"),
    ("spec-list", _balancer("spec-list", [1, 2]), "spec", "got array"),
    (
        "backend-item-string",
        _balancer("backend-item", _spec(backends=["v1"])),
        "spec.backends[0]",
        "got string",
    ),
    (
        "weight-string",
        _balancer("weight-string", _spec(backends=[{"name": "v1", "weight": "40"}])),
        "spec.backends[0].weight",
        "integer",
    ),
    (
        "selector-list",
        _balancer("selector-list", _spec(selector=["app"])),
        "spec.selector",
        "got array",
    ),
    (
        "too-many-backends",
        _balancer("many-backends", _spec(backends=_backends(validation.MAX_BACKENDS + 1))),
        "spec.backends",
        f"at most {validation.MAX_BACKENDS}",
    ),
    (
        "too-many-ports",
        _balancer("many-ports", _spec(ports=_ports(validation.MAX_PORTS + 1))),
        "spec.ports",
        f"at most {validation.MAX_PORTS}",
    ),
]


def _invalid_spec_condition(cluster: Cluster, name: str) -> dict[str, Any] | None:
    cond = cluster.condition(name, NS, names.CONDITION_RECONCILED)
    if cond and cond["status"] == "False" and cond["reason"] == names.REASON_INVALID_SPEC:
        return cond
    return None


def _warnings(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in cluster.events_for(name, NS)
        if e["type"] == "Warning" and e["reason"] == names.REASON_INVALID_SPEC
    ]


@pytest.mark.parametrize(
    ("obj", "field", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_admitted_invalid_spec_ends_in_invalid_spec_not_a_crash_loop(
    loose: Cluster,
    loose_controller: BalancerController,
    obj: dict[str, Any],
    field: str,
    words: str,
) -> None:
    name = obj["metadata"]["name"]
    loose.create_balancer(obj)

    cond = wait_for(lambda: _invalid_spec_condition(loose, name), what="Reconciled=InvalidSpec")
    assert cond["message"].startswith(f"{field}: "), cond["message"]
    assert words in cond["message"]
    assert len(cond["message"]) <= validation.MAX_MESSAGE_LENGTH

    [warning] = wait_for(lambda: _warnings(loose, name), what="the Warning event")
    assert warning["message"] == cond["message"]
    assert warning.get("count", 1) == 1
    # The sync succeeded (an invalid spec is final, not an error): never retried.
    assert loose_controller.controller is not None
    assert loose_controller.controller.queue.num_requeues(f"{NS}/{name}") == 0
    # Nothing was written but the status (and the Event).
    assert not loose.services.list(namespace=NS)["items"]
    assert not loose.configmaps.list(namespace=NS)["items"]
    assert not loose.deployments.list(namespace=NS)["items"]
    status = loose.balancer(name, NS)["status"]
    assert (status["activeBackendsNum"], status["obsoleteBackendsNum"]) == (0, 0)


def test_invalid_spec_fixed_converges(loose: Cluster, loose_controller: BalancerController) -> None:
    name = "fixme"
    loose.create_balancer(_balancer(name, _spec(backends={"v1": 1})))
    wait_for(lambda: _invalid_spec_condition(loose, name), what="InvalidSpec")

    good = sample_balancer()["spec"]
    loose.modify_balancer(name, NS, lambda o: o.update(spec=good))
    b = wait_for(lambda: loose.converged(name, NS), what="converged after the fix")
    assert b["status"]["activeBackendsNum"] == 3
    assert len(_warnings(loose, name)) == 1


def test_junk_status_is_replaced(loose: Cluster, loose_controller: BalancerController) -> None:
    # With no schema, a client may have stored any status; it is ours to overwrite.
    obj = _balancer("junk-status", _spec(backends="v1"))
    obj["status"] = {"conditions": "none", "activeBackendsNum": "many"}
    created = loose.create_balancer(obj)
    if created.get("status"):  # the status subresource may drop it on create
        loose.balancers.update_status({**created, "status": obj["status"]})
    cond = wait_for(lambda: _invalid_spec_condition(loose, "junk-status"), what="InvalidSpec")
    assert cond["message"].startswith("spec.backends: ")


def test_invalid_spec_message_is_bounded(
    loose: Cluster, loose_controller: BalancerController
) -> None:
    # 64 backends, every one wrong in three ways: hundreds of problems, one
    # bounded message that still starts with the first field.
    backends = [{"name": f"B{i};", "weight": -i, "selector": {"k": "v v"}} for i in range(64)]
    name = "many-problems"
    loose.create_balancer(_balancer(name, _spec(backends=backends)))
    cond = wait_for(lambda: _invalid_spec_condition(loose, name), what="InvalidSpec")
    assert cond["message"].startswith("spec.backends[0].name: ")
    assert len(cond["message"]) <= validation.MAX_MESSAGE_LENGTH
    assert "more problem" in cond["message"]
