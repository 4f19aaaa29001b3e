"""LIST and WATCH answers ported from kube-apiserver 1.32's integration tests
(test/integration/apiserver/apiserver_test.go, watchcache_test.go) and
checked against the 1.32 code they exercise with the watch cache on (the
default): the handler's ``ValidateListOptions``, ``Cacher.GetList``
(``shouldDelegateList``, ``computeListLimit``) and etcd3's ``GetList``
(``resolveGetListRev``)."""

from __future__ import annotations

import base64
import functools
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from support.http import call

from pycontroller.testing import APIServer

Raw = Callable[..., tuple[int, dict[str, str], Any]]

CM = "/api/v1/namespaces/default/configmaps"


def _names(lst: dict[str, Any]) -> list[str]:
    return [i["metadata"]["name"] for i in lst["items"]]


# --- TestListOptions ---------------------------------------------------------

INVALID_TOKEN = "invalidContinueToken"
INVALID_RV = "invalid"
INVALID_MATCH = "InvalidMatch"


class Matrix:
    """TestListOptions' fixture: test-0..test-14 created, the first five
    deleted, their history compacted; a valid token from a ``limit=6`` list."""

    def __init__(self, server: APIServer) -> None:
        self.raw: Raw = functools.partial(call, server)
        compacted = ""
        for i in range(15):
            code, _, obj = self.raw("POST", CM, {"metadata": {"name": f"test-{i}"}})
            assert code == 201
            if i == 0:
                compacted = obj["metadata"]["resourceVersion"]
            if i < 5:
                assert self.raw("DELETE", f"{CM}/test-{i}")[0] == 200
        server.compact()
        self.compacted_rv = compacted
        code, _, page = self.raw("GET", f"{CM}?limit=6")
        assert code == 200 and len(page["items"]) == 6
        self.valid_token: str = page["metadata"]["continue"]


@pytest.fixture(scope="module")
def matrix() -> Iterator[Matrix]:
    server = APIServer().start()
    try:
        yield Matrix(server)
    finally:
        server.stop()


def _expected(limit: int, cont: str, rv: str, match: str) -> tuple[int, str]:
    """kube-apiserver 1.32's answer (watch cache on) to one TestListOptions
    case: (status, a substring of the error message) or (200, "count[+continue]")."""
    # ValidateListOptions (handler, 422).
    if match and not rv:
        return 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"
    if cont and match:
        return 422, "resourceVersionMatch is forbidden when continue is provided"
    if match == INVALID_MATCH:
        return 422, "supported values"
    if match == "Exact" and rv == "0":
        return 422, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
    # Cacher.GetList's shouldDelegateList: continuations, Exact and the
    # legacy exact match (a limit at a resourceVersion other than "0") go to
    # etcd; everything else is served by the watch cache.
    legacy_exact = limit > 0 and not match and rv not in ("", "0")
    if cont or match == "Exact" or legacy_exact:
        if cont == "invalid":
            return 400, "invalid continue token: continue key is not valid"
        if cont and rv not in ("", "0"):
            # (upstream master expects "Invalid value" for rv=invalid here: its
            # ValidateListOptions parses the resourceVersion first since 1.33)
            return 400, "specifying resource version is not allowed when using continue"
        if rv == INVALID_RV:
            return 400, 'invalid resource version: resourceVersion: Invalid value: "invalid"'
        if rv == "compacted":
            return 410, "The resourceVersion for the provided list is too old"
        if cont:
            return 200, "4"
        return 200, f"{limit}+continue" if limit else "10"
    if rv == INVALID_RV:
        # The versioner's InvalidError is no API status: a 500 without reason.
        return 500, 'resourceVersion: Invalid value: "invalid": strconv.ParseUint'
    # computeListLimit: the cache honours a limit, except at resourceVersion "0".
    if limit and rv != "0":
        return 200, f"{limit}+continue"
    return 200, "10"


_CASES = list(
    itertools.product(
        [0, 6],
        ["", "valid", "invalid"],
        ["", "0", "compacted", INVALID_RV],
        ["", "NotOlderThan", "Exact", INVALID_MATCH],
    )
)


@pytest.mark.parametrize(
    ("limit", "cont", "rv", "match"),
    _CASES,
    ids=[
        f"limit={lim} continue={c or 'empty'} rv={r or 'empty'} rvMatch={m}"
        for lim, c, r, m in _CASES
    ],
)
def test_list_options(matrix: Matrix, limit: int, cont: str, rv: str, match: str) -> None:
    # apiserver_test.go TestListOptions / testListOptionsCase (watchCacheEnabled=true).
    params: dict[str, str] = {}
    if limit:
        params["limit"] = str(limit)
    if cont:
        params["continue"] = matrix.valid_token if cont == "valid" else INVALID_TOKEN
    if rv:
        params["resourceVersion"] = matrix.compacted_rv if rv == "compacted" else rv
    if match:
        params["resourceVersionMatch"] = match
    code, _, body = matrix.raw("GET", f"{CM}?{urlencode(params)}")
    want_code, want = _expected(limit, cont, rv, match)
    if want_code != 200:
        assert (code, body["kind"]) == (want_code, "Status"), body
        assert want in body["message"], body
        return
    assert code == 200, body
    count, _, more = want.partition("+")
    assert len(body["items"]) == int(count), _names(body)
    assert bool(body["metadata"].get("continue")) == bool(more), body["metadata"]


# --- TestListResourceVersion0, TestAPIListChunking ---------------------------


@pytest.fixture
def raw(apiserver: APIServer) -> Raw:
    r: Raw = functools.partial(call, apiserver)
    return r


def _pager(raw: Raw, path: str, page_size: int, rv: str = "") -> tuple[list[str], str, int]:
    """client-go's pager.ListPager: (names, the first page's resourceVersion, calls)."""
    names: list[str] = []
    first_rv = ""
    token = ""
    calls = 0
    while True:
        q = {"limit": str(page_size)}
        if token:
            q["continue"] = token
        elif rv:
            q["resourceVersion"] = rv
        code, _, page = raw("GET", f"{path}?{urlencode(q)}")
        assert code == 200, page
        calls += 1
        first_rv = first_rv or page["metadata"]["resourceVersion"]
        names += _names(page)
        token = page["metadata"].get("continue", "")
        if not token:
            return names, first_rv, calls


def test_list_resource_version_0_ignores_the_limit(raw: Raw) -> None:
    # apiserver_test.go TestListResourceVersion0 (watchCacheOn), and
    # store_tests.go "test List with limit at resource version 0", which the
    # watch cache skips: computeListLimit ignores a limit at resourceVersion "0".
    for i in range(10):
        assert raw("POST", CM, {"metadata": {"name": f"test-{i}"}})[0] == 201
    names, _, calls = _pager(raw, CM, 3, rv="0")
    assert (len(names), calls) == (10, 1)
    code, _, lst = raw("GET", f"{CM}?resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=3")
    assert code == 200 and len(lst["items"]) == 10
    assert "continue" not in lst["metadata"] and "remainingItemCount" not in lst["metadata"]


def test_without_the_watch_cache_a_list_at_0_is_paged(apiserver: APIServer, raw: Raw) -> None:
    # apiserver_test.go TestListResourceVersion0 (watchCacheOff): etcd honours
    # the limit at "0".
    apiserver.watch_cache = False
    for i in range(10):
        assert raw("POST", CM, {"metadata": {"name": f"test-{i}"}})[0] == 201
    names, _, calls = _pager(raw, CM, 3, rv="0")
    assert (len(names), calls) == (10, 4)


def test_api_list_chunking(raw: Raw) -> None:
    # apiserver_test.go TestAPIListChunking: a page size of 1 over 4 objects; one
    # created after the second page is not seen and the list keeps the first
    # page's resourceVersion.
    for i in range(4):
        assert raw("POST", CM, {"metadata": {"name": f"test-{i}"}})[0] == 201
    code, _, page = raw("GET", f"{CM}?limit=1")
    first_rv = page["metadata"]["resourceVersion"]
    assert page["metadata"]["remainingItemCount"] == 3
    names = _names(page)
    calls = 1
    while token := page["metadata"].get("continue"):
        code, _, page = raw("GET", f"{CM}?limit=1&continue={quote(token)}")
        assert code == 200 and page["metadata"]["resourceVersion"] == first_rv
        calls += 1
        if calls == 2:
            assert raw("POST", CM, {"metadata": {"name": "test-5"}})[0] == 201
        names += _names(page)
    assert (names, calls) == (["test-0", "test-1", "test-2", "test-3"], 4)


# --- store_tests.go RunTestList: paging with a selector ----------------------

SECRETS = "/api/v1/secrets"


def _secret(raw: Raw, ns: str, name: str) -> None:
    """A Secret ``name`` in ``ns``, the namespace created first if need be."""
    if raw("GET", f"/api/v1/namespaces/{ns}")[0] == 404:
        assert raw("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
    assert raw("POST", f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": name}})[0] == 201


@pytest.fixture
def multi_level(raw: Raw) -> Raw:
    """seedMultiLevelData's keys, as Secrets: first/bar, second/bar,
    second/foo, third/barfoo, third/foo."""
    for ns, name in [
        ("first", "bar"),
        ("second", "bar"),
        ("second", "foo"),
        ("third", "barfoo"),
        ("third", "foo"),
    ]:
        _secret(raw, ns, name)
    return raw


def _keys(lst: dict[str, Any]) -> list[str]:
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in lst["items"]]


@pytest.mark.parametrize("not_older_than", [False, True])
@pytest.mark.parametrize(
    ("name", "limit", "want", "more"),
    [
        # "test List with filter returning only one item, ensure only a single page returned"
        ("barfoo", 1, ["third/barfoo"], True),
        # "test List with filter returning only one item, covers the entire list"
        ("barfoo", 2, ["third/barfoo"], False),
        # "test List with filter returning two items, more pages possible"
        ("bar", 2, ["first/bar", "second/bar"], True),
        # "filter returns two items split across multiple pages"
        ("foo", 2, ["second/foo", "third/foo"], False),
        # "filter returns two items, page size equal to total list size"
        ("foo", 5, ["second/foo", "third/foo"], False),
    ],
)
def test_paged_list_with_a_field_selector(
    multi_level: Raw, name: str, limit: int, want: list[str], more: bool, not_older_than: bool
) -> None:
    # store_tests.go RunTestList (run on the cacher and etcd alike): a page is
    # filled in key order and carries a continue token whenever keys follow its
    # last item, whether they match the selector or not; no remainingItemCount
    # with a selector.
    q = {"fieldSelector": f"metadata.name={name}", "limit": str(limit)}
    if not_older_than:
        rv = multi_level("GET", SECRETS)[2]["metadata"]["resourceVersion"]
        q |= {"resourceVersion": rv, "resourceVersionMatch": "NotOlderThan"}
    code, _, lst = multi_level("GET", f"{SECRETS}?{urlencode(q)}")
    assert code == 200 and _keys(lst) == want
    assert bool(lst["metadata"].get("continue")) == more
    assert "remainingItemCount" not in lst["metadata"]
    if more:
        # The rest of the keys: what matches there, then no token.
        token = lst["metadata"]["continue"]
        code, _, rest = multi_level(
            "GET", f"{SECRETS}?fieldSelector=metadata.name%3D{name}&limit={limit}&continue={token}"
        )
        assert code == 200 and "continue" not in rest["metadata"]
        assert _keys(rest) == {"barfoo": [], "bar": []}[name]


def test_name_in_field_selector(raw: Raw) -> None:
    # apiserver_test.go TestNameInFieldSelector.
    for i in range(3):
        for name in ("foo", "bar"):
            _secret(raw, f"ns{i}", name)
    for ns, selector, count in [
        ("", "metadata.name=foo", 3),
        ("", "metadata.name=foo,metadata.name=bar", 0),
        ("", "metadata.name=foo,metadata.namespace=ns1", 1),
        ("ns1", "metadata.name=foo,metadata.namespace=ns1", 1),
        ("ns1", "metadata.name=foo,metadata.namespace=ns2", 0),
        ("ns1", "metadata.name=foo,metadata.namespace=", 0),
    ]:
        path = f"/api/v1/namespaces/{ns}/secrets" if ns else SECRETS
        code, _, lst = raw("GET", f"{path}?{urlencode({'fieldSelector': selector})}")
        assert (code, len(lst["items"])) == (200, count), (ns, selector)


# --- watches -----------------------------------------------------------------


def test_watch_of_one_name_with_another_in_the_field_selector(raw: Raw) -> None:
    # get.go ListResource (watches of one object are routed there): a
    # fieldSelector must require the name of the path, else 400.
    assert raw("POST", CM, {"metadata": {"name": "c1"}})[0] == 201
    path = "/api/v1/watch/namespaces/default/configmaps/c1"
    for selector in ("metadata.name=c2", "metadata.name!=c1", "metadata.namespace=default"):
        code, _, st = raw("GET", f"{path}?{urlencode({'fieldSelector': selector})}")
        assert (code, st["reason"], st["message"]) == (
            400,
            "BadRequest",
            "fieldSelector metadata.name doesn't match requested name",
        ), selector


def test_watch_with_an_unparsable_resource_version(raw: Raw) -> None:
    # Cacher.Watch returns the versioner's InvalidError as is (no API status):
    # 500 without reason, before the stream starts.
    code, _, st = raw("GET", f"{CM}?watch=true&resourceVersion=invalid")
    assert (code, st.get("reason"), st["message"]) == (
        500,
        None,
        'resourceVersion: Invalid value: "invalid": strconv.ParseUint: parsing "invalid": '
        "invalid syntax",
    )


# --- continue tokens and key order (storage/continue.go, etcd3 and cacher) ----


def _token(fields: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


def _fields(token: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return decoded


def test_continue_token_start_key_is_relative_to_the_list_prefix(raw: Raw) -> None:
    # continue.go EncodeContinue: the start key is the last key plus NUL with
    # the list's key prefix trimmed ("<name>\0" in a namespace, "<ns>/<name>\0"
    # across namespaces); store_tests.go "test List with pregenerated continue
    # token": a start key without NUL is where the next page starts, inclusive.
    for name in ("bar", "foo", "qux"):
        assert raw("POST", CM, {"metadata": {"name": name}})[0] == 201
    _, _, page = raw("GET", f"{CM}?limit=1")
    rv = int(page["metadata"]["resourceVersion"])
    assert _fields(page["metadata"]["continue"]) == {
        "v": "meta.k8s.io/v1",
        "rv": rv,
        "start": "bar\x00",
    }
    _, _, page = raw("GET", "/api/v1/configmaps?limit=1")
    assert _fields(page["metadata"]["continue"])["start"] == "default/bar\x00"
    token = _token({"v": "meta.k8s.io/v1", "rv": rv, "start": "foo"})
    code, _, page = raw("GET", f"{CM}?limit=1&continue={token}")
    assert code == 200 and _names(page) == ["foo"]
    token = _token({"v": "meta.k8s.io/v1", "rv": rv, "start": "default/foo"})
    code, _, page = raw("GET", f"/api/v1/configmaps?limit=5&continue={token}")
    assert code == 200 and _names(page) == ["foo", "qux"]


def test_lists_are_in_etcd_key_order(raw: Raw) -> None:
    # Cacher.GetList (filterPrefixAndOrder, sortableStoreElements) and etcd
    # list by the full key ".../<ns>/<name>": namespace "app-1" sorts before
    # "app" ("-" < "/"), and a page of the one continues into the other.
    for ns in ("app", "app-1"):
        for name in ("a", "b"):
            _secret(raw, ns, name)
    want = ["app-1/a", "app-1/b", "app/a", "app/b"]
    assert _keys(raw("GET", SECRETS)[2]) == want
    _, _, page = raw("GET", f"{SECRETS}?limit=3")
    assert _keys(page) == want[:3]
    _, _, rest = raw("GET", f"{SECRETS}?limit=3&continue={page['metadata']['continue']}")
    assert _keys(rest) == want[3:]


def test_paged_list_of_one_name_in_a_namespace(raw: Raw) -> None:
    # store.go ListPredicate: a selector requiring a name, with the namespace
    # known, lists that one key (non-recursive GetList): no continue token
    # whatever follows it (store_tests.go "test List with pod name matching").
    for name in ("bar", "foo", "qux"):
        assert raw("POST", CM, {"metadata": {"name": name}})[0] == 201
    for extra in ("", ",metadata.namespace=default"):
        q = {"fieldSelector": f"metadata.name=foo{extra}", "limit": "1"}
        code, _, lst = raw("GET", f"{CM}?{urlencode(q)}")
        assert code == 200 and _names(lst) == ["foo"]
        assert lst["metadata"].keys() == {"resourceVersion"}
    code, _, lst = raw("GET", "/api/v1/namespaces?fieldSelector=metadata.name%3Ddefault&limit=1")
    assert code == 200 and _names(lst) == ["default"]
    assert lst["metadata"].keys() == {"resourceVersion"}
