"""A list's options as kube-apiserver 1.32 checks them, over HTTP: the
handler's ``ValidateListOptions`` (422 ``ListOptions.meta.k8s.io``), etcd3
``GetList``'s ``resolveGetListRev`` (a continue token with a resourceVersion)
and ``handleCompactedErrorForPaging`` (an expired token's 410 carries a token
that continues at the current state)."""

from __future__ import annotations

import base64
import functools
import json
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    r: Raw = functools.partial(call, apiserver)
    for i in range(5):
        assert r("POST", CM, {"metadata": {"name": f"cm{i}"}})[0] == 201
    return r


def _invalid(*causes: tuple[str, str, str]) -> dict[str, Any]:
    parts = [f"{field}: {message}" for _, message, field in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'ListOptions.meta.k8s.io "" is invalid: {summary}',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": r, "message": m, "field": f} for r, m, f in causes],
        },
        "code": 422,
    }


FORBIDDEN = "FieldValueForbidden"
NO_RV = "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
WITH_CONTINUE = "Forbidden: resourceVersionMatch is forbidden when continue is provided"


def test_resource_version_match_without_resource_version(raw: Raw) -> None:
    for match in ("Exact", "NotOlderThan"):
        code, _, st = raw("GET", f"{CM}?resourceVersionMatch={match}")
        assert (code, st) == (422, _invalid((FORBIDDEN, NO_RV, "resourceVersionMatch")))


def test_resource_version_match_unsupported_and_exact_zero(raw: Raw) -> None:
    code, _, st = raw("GET", f"{CM}?resourceVersion=1&resourceVersionMatch=Newest")
    unsupported = 'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'
    assert (code, st) == (
        422,
        _invalid(("FieldValueNotSupported", unsupported, "resourceVersionMatch")),
    )
    code, _, st = raw("GET", f"{CM}?resourceVersion=0&resourceVersionMatch=Exact")
    exact = 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
    assert (code, st) == (422, _invalid((FORBIDDEN, exact, "resourceVersionMatch")))
    # Every error at once, in ValidateListOptions' order.
    code, _, st = raw(
        "GET", f"{CM}?resourceVersionMatch=Newest&continue=abc&sendInitialEvents=true"
    )
    assert (code, st) == (
        422,
        _invalid(
            (FORBIDDEN, NO_RV, "resourceVersionMatch"),
            (FORBIDDEN, WITH_CONTINUE, "resourceVersionMatch"),
            ("FieldValueNotSupported", unsupported, "resourceVersionMatch"),
            (FORBIDDEN, "Forbidden: sendInitialEvents is forbidden for list", "sendInitialEvents"),
        ),
    )


def test_continue_with_resource_version_match_or_version(raw: Raw) -> None:
    code, _, page = raw("GET", f"{CM}?limit=2")
    token = quote(page["metadata"]["continue"])
    rv = page["metadata"]["resourceVersion"]
    code, _, st = raw(
        "GET", f"{CM}?limit=2&continue={token}&resourceVersion=0&resourceVersionMatch=NotOlderThan"
    )
    assert (code, st) == (422, _invalid((FORBIDDEN, WITH_CONTINUE, "resourceVersionMatch")))
    code, _, st = raw("GET", f"{CM}?limit=2&continue={token}&resourceVersion={rv}")
    assert (code, st["reason"], st["message"]) == (
        400,
        "BadRequest",
        "specifying resource version is not allowed when using continue",
    )
    # "0" is no resourceVersion here.
    code, _, page2 = raw("GET", f"{CM}?limit=2&continue={token}&resourceVersion=0")
    assert code == 200 and [i["metadata"]["name"] for i in page2["items"]] == ["cm2", "cm3"]


def test_expired_continue_token_carries_one_that_restarts(raw: Raw, apiserver: APIServer) -> None:
    code, _, page = raw("GET", f"{CM}?limit=2")
    token = page["metadata"]["continue"]
    raw("POST", CM, {"metadata": {"name": "cm9"}})
    apiserver.compact()
    code, _, st = raw("GET", f"{CM}?limit=2&continue={quote(token)}")
    assert (code, st["reason"]) == (410, "Expired")
    assert st["message"].endswith(
        "or use the continue token in this response to retrieve the remainder of the results. "
        "Continuing with the provided token results in an inconsistent list - objects that "
        "were created, modified, or deleted between the time the first chunk was returned and "
        "now may show up in the list."
    )
    fresh = st["metadata"]["continue"]

    def fields(t: str) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(t + "=" * (-len(t) % 4)))
        return decoded

    assert fields(fresh) == {**fields(token), "rv": -1}
    # It continues where the old one did, at the current state.
    code, _, page2 = raw("GET", f"{CM}?limit=2&continue={quote(fresh)}")
    assert code == 200 and [i["metadata"]["name"] for i in page2["items"]] == ["cm2", "cm3"]
    current = raw("GET", CM)[2]["metadata"]["resourceVersion"]
    assert page2["metadata"]["resourceVersion"] == current
    code, _, page3 = raw("GET", f"{CM}?limit=2&continue={quote(page2['metadata']['continue'])}")
    assert [i["metadata"]["name"] for i in page3["items"]] == ["cm4", "cm9"]


def test_a_paged_list_at_a_resource_version_is_an_exact_read(
    raw: Raw, apiserver: APIServer
) -> None:
    # resourceVersion=N with a limit and no resourceVersionMatch: the cacher
    # delegates it to etcd, whose resolveGetListRev reads exactly at N (the
    # legacy exact match), 410 once N is compacted; without a limit it is
    # "not older than" N (the current state here).
    _, _, a = raw("POST", CM, {"metadata": {"name": "exact-a"}})
    rv = a["metadata"]["resourceVersion"]
    raw("POST", CM, {"metadata": {"name": "exact-b"}})

    def names(lst: dict[str, Any]) -> list[str]:
        return [
            i["metadata"]["name"] for i in lst["items"] if i["metadata"]["name"][:6] == "exact-"
        ]

    code, _, lst = raw("GET", f"{CM}?resourceVersion={rv}&limit=100")
    assert code == 200 and names(lst) == ["exact-a"]
    assert lst["metadata"]["resourceVersion"] == rv
    code, _, lst = raw("GET", f"{CM}?resourceVersion={rv}")
    assert names(lst) == ["exact-a", "exact-b"]
    apiserver.compact()
    code, _, st = raw("GET", f"{CM}?resourceVersion={rv}&limit=100")
    assert code == 410 and st["reason"] == "Expired"


def test_a_list_not_older_than_a_future_resource_version(raw: Raw, apiserver: APIServer) -> None:
    # The cacher waits up to 3 s for a resourceVersion it has not reached
    # (waitUntilFreshAndBlock), then answers "Too large resource version"
    # (504, retry after 1 s); a paged one is etcd's, answered at once.
    current = apiserver.storage.resource_version
    ahead = current + 1000
    started = time.monotonic()
    code, _, st = raw("GET", f"{CM}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan")
    assert time.monotonic() - started >= 2.9
    assert (code, st["reason"]) == (504, "Timeout")
    assert st["message"].startswith(f"Timeout: Too large resource version: {ahead}, current: ")
    assert st["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    code, _, st = raw(
        "GET", f"{CM}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan&limit=5"
    )
    assert code == 504 and "retryAfterSeconds" not in st["details"]

    code, _, st = raw("GET", f"{CM}/fresh-missing?resourceVersion={ahead}")
    assert code == 504 and st["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"

    # Reached while waiting: answered.
    wanted = apiserver.storage.resource_version + 1
    writer = threading.Timer(0.5, lambda: raw("POST", CM, {"metadata": {"name": "fresh"}}))
    writer.start()
    try:
        code, _, lst = raw("GET", f"{CM}?resourceVersion={wanted}")
    finally:
        writer.join()
    assert code == 200 and int(lst["metadata"]["resourceVersion"]) >= wanted
