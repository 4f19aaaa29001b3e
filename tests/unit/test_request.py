"""pycontroller.Request: reconcile.Request as a NamedTuple whose str is the queue key."""

from __future__ import annotations

import pytest

from pycontroller import Request
from pycontroller.cache import DeletedFinalStateUnknown


def test_request_is_a_namespace_name_tuple() -> None:
    req = Request("default", "lb")
    assert req == ("default", "lb") and req.namespace == "default" and req.name == "lb"
    assert Request(namespace="ns", name="x") == Request("ns", "x")
    assert len({Request("ns", "x"), Request("ns", "x")}) == 1


def test_str_is_the_queue_key_and_from_key_inverts_it() -> None:
    assert str(Request("default", "lb")) == "default/lb"
    assert str(Request("", "node-1")) == "node-1"
    for key in ("default/lb", "node-1"):
        assert str(Request.from_key(key)) == key
    assert Request.from_key("node-1") == Request("", "node-1")
    for bad in ("a/b/c", "ns/", ""):
        with pytest.raises(ValueError):
            Request.from_key(bad)


def test_from_object() -> None:
    obj = {"metadata": {"namespace": "ns", "name": "x"}}
    assert Request.from_object(obj) == Request("ns", "x")
    assert Request.from_object({"metadata": {"name": "n"}}) == Request("", "n")
    assert Request.from_object(DeletedFinalStateUnknown("ns/x", obj)) == Request("ns", "x")
    with pytest.raises(ValueError):
        Request.from_object({"metadata": {}})
