"""Generic REST machinery checked against kube-apiserver 1.32's source, over
real HTTP: list reads served by etcd at an exact revision, and query
parameters as the parameter codec reads them (Go booleans and int64s)."""

from __future__ import annotations

import base64
import http.client
import json
import re
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.http import call

from pycontroller.testing import APIServer, wait_for

CM = "/api/v1/namespaces/default/configmaps"

FUTURE_REVISION = "etcdserver: mvcc: required revision is a future revision"


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def _stream(server: APIServer, path: str) -> tuple[int, str, list[dict[str, Any]]]:
    """GET ``path`` and read the whole answer: (status, Transfer-Encoding,
    the JSON documents of the body, one a line)."""
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=15)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        raw = resp.read().decode()
        docs = [json.loads(line) for line in raw.splitlines() if line.strip()]
        return resp.status, resp.getheader("Transfer-Encoding") or "", docs
    finally:
        conn.close()


# --- exact list reads (storage/etcd3/store.go GetList) ---------------------------------


@pytest.mark.parametrize("query", ["resourceVersionMatch=Exact&", "limit=1&"])
def test_an_exact_list_at_a_future_resource_version_is_etcds_future_revision_error(
    apiserver: APIServer, query: str
) -> None:
    # Exact and the legacy exact read (limit, no match) go to etcd at that
    # revision (cacher shouldDelegateList); etcd refuses a revision it has not
    # reached (ErrFutureRev), which interpretListError passes on unconverted:
    # ErrorToAPIStatus's 500 without a reason. It never answers the current
    # state labelled with the future resourceVersion.
    assert call(apiserver, "POST", CM, _cm("a"))[0] == 201
    ahead = apiserver.storage.resource_version + 1000
    code, _, st = call(apiserver, "GET", f"{CM}?{query}resourceVersion={ahead}")
    assert code == 500, st
    assert st["kind"] == "Status" and st["status"] == "Failure"
    assert "reason" not in st
    assert st["message"] == FUTURE_REVISION
    # The current revision itself is served.
    now = apiserver.storage.resource_version
    code, _, lst = call(apiserver, "GET", f"{CM}?{query}resourceVersion={now}")
    assert code == 200 and lst["metadata"]["resourceVersion"] == str(now)


@pytest.mark.parametrize("query", ["resourceVersionMatch=Exact&", "limit=1&"])
def test_an_exact_list_at_a_compacted_resource_version_is_the_lists_410(
    apiserver: APIServer, query: str
) -> None:
    # etcd's ErrCompacted on a list that is not a continuation:
    # errors.NewResourceExpired(expired) (storage/etcd3/errors.go).
    code, _, a = call(apiserver, "POST", CM, _cm("a"))
    assert code == 201
    assert call(apiserver, "POST", CM, _cm("b"))[0] == 201
    apiserver.compact()
    rv = a["metadata"]["resourceVersion"]
    code, _, st = call(apiserver, "GET", f"{CM}?{query}resourceVersion={rv}")
    assert code == 410, st
    assert st["reason"] == "Expired"
    assert st["message"] == "The resourceVersion for the provided list is too old."


# --- query parameters as the parameter codec reads them ---------------------------------


@pytest.mark.parametrize("value", ["yes", "True", ""])
def test_watch_parameter_is_a_go_boolean(apiserver: APIServer, value: str) -> None:
    # runtime.Convert_Slice_string_To_bool: only "0" and "false" (any case)
    # are false; any other value, the empty string included, is true.
    assert call(apiserver, "POST", CM, _cm("w"))[0] == 201
    code, encoding, docs = _stream(apiserver, f"{CM}?watch={value}&timeoutSeconds=1")
    assert code == 200 and encoding == "chunked"
    assert [(d["type"], d["object"]["metadata"]["name"]) for d in docs] == [("ADDED", "w")]


@pytest.mark.parametrize("value", ["0", "false", "FALSE"])
def test_watch_parameter_false_values_list(apiserver: APIServer, value: str) -> None:
    assert call(apiserver, "POST", CM, _cm("w"))[0] == 201
    code, _, lst = call(apiserver, "GET", f"{CM}?watch={value}")
    assert code == 200 and lst["kind"] == "ConfigMapList"


def test_allow_watch_bookmarks_is_a_go_boolean(apiserver: APIServer) -> None:
    # A streaming list's end-of-list bookmark needs allowWatchBookmarks true;
    # "yes" is true to the parameter codec.
    assert call(apiserver, "POST", CM, _cm("w"))[0] == 201
    code, _, docs = _stream(
        apiserver,
        f"{CM}?watch=1&sendInitialEvents=yes&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=yes&timeoutSeconds=1",
    )
    assert code == 200
    types = [d["type"] for d in docs]
    assert types[0] == "ADDED" and "BOOKMARK" in types
    bookmark = next(d for d in docs if d["type"] == "BOOKMARK")
    annotations = bookmark["object"]["metadata"].get("annotations") or {}
    assert annotations.get("k8s.io/initial-events-end") == "true"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("limit=1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
        (
            "limit=99999999999999999999",
            'strconv.ParseInt: parsing "99999999999999999999": value out of range',
        ),
        ("timeoutSeconds=abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("watch=1&timeoutSeconds=1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
        ("watch=1&limit=x", 'strconv.ParseInt: parsing "x": invalid syntax'),
        # The numbers convert (url.Values to v1.ListOptions) before the
        # selectors parse (v1 to internal ListOptions).
        ("labelSelector=a%20b&limit=x", 'strconv.ParseInt: parsing "x": invalid syntax'),
    ],
)
def test_integer_query_parameters_are_parsed_as_int64(
    apiserver: APIServer, query: str, message: str
) -> None:
    # handlers/get.go ListResource: a DecodeParameters error is
    # errors.NewBadRequest(err.Error()), strconv's message as is.
    code, _, st = call(apiserver, "GET", f"{CM}?{query}")
    assert code == 400, st
    assert st["reason"] == "BadRequest"
    assert st["message"] == message


def test_signed_integer_query_parameters_are_accepted(apiserver: APIServer) -> None:
    assert call(apiserver, "POST", CM, _cm("a"))[0] == 201
    assert call(apiserver, "POST", CM, _cm("b"))[0] == 201
    code, _, lst = call(apiserver, "GET", f"{CM}?limit=%2B1")
    assert code == 200 and len(lst["items"]) == 1
    code, _, lst = call(apiserver, "GET", f"{CM}?limit=-1&timeoutSeconds=-3")
    assert code == 200 and len(lst["items"]) == 2


@pytest.mark.parametrize(
    ("rv", "why"),
    [
        ("abc", "invalid syntax"),
        ("-5", "invalid syntax"),
        ("99999999999999999999", "value out of range"),
    ],
)
def test_an_exact_list_at_an_unparsable_resource_version_is_etcds_400(
    apiserver: APIServer, rv: str, why: str
) -> None:
    # resourceVersionMatch=Exact goes to etcd (cacher shouldDelegateList),
    # whose resolveGetListRev answers a resourceVersion the versioner cannot
    # parse with errors.NewBadRequest("invalid resource version: ...").
    code, _, st = call(apiserver, "GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert code == 400, st
    assert st["reason"] == "BadRequest"
    assert st["message"] == (
        f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
        f'strconv.ParseUint: parsing "{rv}": {why}'
    )


# --- JSON patch operations under fieldValidation (handlers/patch.go applyJSPatch) -------

JSON_PATCH = "application/json-patch+json"
# One unknown field in the first operation, "path" twice in the second.
OPS = (
    b'[{"op":"add","path":"/data/a","value":"1","foo":"x"},'
    b'{"op":"add","path":"/data/b","path":"/data/c","value":"2"}]'
)
OPS_ERRORS = ['json patch unknown field "[0].foo"', 'json patch duplicate field "[1].path"']


def _seed(server: APIServer) -> None:
    assert call(server, "POST", CM, {**_cm("p"), "data": {"k": "v"}})[0] == 201


def _warnings(headers: dict[str, str]) -> list[str]:
    """The texts of a response's ``Warning: 299 - "..."`` values, in order."""
    text = headers.get("Warning", "")
    return [re.sub(r"\\(.)", r"\1", m) for m in re.findall(r'299 - "((?:[^"\\]|\\.)*)"', text)]


@pytest.mark.parametrize("query", ["", "?fieldValidation=Warn"])
def test_json_patch_operation_fields_are_warned_about(apiserver: APIServer, query: str) -> None:
    # kjson.UnmarshalStrict into []jsonPatchOp: unknown and repeated fields of
    # the operations, "json patch " and the path; Warn (the default) writes
    # them as warnings and applies the patch.
    _seed(apiserver)
    code, headers, out = call(apiserver, "PATCH", f"{CM}/p{query}", OPS, JSON_PATCH)
    assert code == 200, out
    assert out["data"] == {"k": "v", "a": "1", "c": "2"}
    assert _warnings(headers) == OPS_ERRORS


def test_json_patch_operation_fields_are_refused_under_strict(apiserver: APIServer) -> None:
    # Strict: errors.NewInvalid(schema.GroupKind{}, "", field.Invalid("patch",
    # patchedJS, strict decoding error)) -- 422, and nothing is written.
    _seed(apiserver)
    code, _, st = call(apiserver, "PATCH", f"{CM}/p?fieldValidation=Strict", OPS, JSON_PATCH)
    assert code == 422, st
    assert st["reason"] == "Invalid"
    suffix = ": strict decoding error: " + ", ".join(OPS_ERRORS)
    assert st["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert st["message"].endswith(suffix)
    [cause] = st["details"]["causes"]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith('Invalid value: "{') and cause["message"].endswith(suffix)
    assert call(apiserver, "GET", f"{CM}/p")[2]["data"] == {"k": "v"}


def test_json_patch_operation_fields_are_ignored_under_ignore(apiserver: APIServer) -> None:
    _seed(apiserver)
    code, headers, out = call(apiserver, "PATCH", f"{CM}/p?fieldValidation=Ignore", OPS, JSON_PATCH)
    assert code == 200 and "Warning" not in headers
    assert out["data"] == {"k": "v", "a": "1", "c": "2"}


def test_json_patch_strict_errors_precede_the_objects_unknown_fields(
    apiserver: APIServer,
) -> None:
    # The operations' strict errors, then the patched object's (DecodeInto's).
    _seed(apiserver)
    ops = b'[{"op":"add","path":"/bogus","value":1,"foo":"x"}]'
    code, headers, _ = call(apiserver, "PATCH", f"{CM}/p", ops, JSON_PATCH)
    assert code == 200
    assert _warnings(headers) == ['json patch unknown field "[0].foo"', 'unknown field "bogus"']
    code, _, st = call(apiserver, "PATCH", f"{CM}/p?fieldValidation=Strict", ops, JSON_PATCH)
    assert code == 422 and st["message"].endswith(
        ': strict decoding error: json patch unknown field "[0].foo", unknown field "bogus"'
    )


def test_json_patch_apply_failure_wins_over_strict_errors(apiserver: APIServer) -> None:
    # applyJSPatch returns the patch library's failure (422, generic message)
    # before the strict errors are looked at.
    _seed(apiserver)
    ops = b'[{"op":"test","path":"/data/k","value":"other","foo":1}]'
    code, _, st = call(apiserver, "PATCH", f"{CM}/p?fieldValidation=Strict", ops, JSON_PATCH)
    assert code == 422
    assert st["message"] == "the server rejected our request due to an error in our request"


@pytest.mark.parametrize(
    ("query", "body", "message"),
    [
        (
            "",
            b'{"op":"add"}',
            "error decoding patch: json: cannot unmarshal object into Go value of type "
            "[]handlers.jsonPatchOp",
        ),
        (
            "?fieldValidation=Strict",
            b"[1]",
            "error decoding patch: json: cannot unmarshal number into Go value of type "
            "handlers.jsonPatchOp",
        ),
        (
            "?fieldValidation=Ignore",
            b'{"op":"add"}',
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
    ],
)
def test_json_patch_that_is_not_a_list_of_operations(
    apiserver: APIServer, query: str, body: bytes, message: str
) -> None:
    # Strict/Warn: kjson.UnmarshalStrict's error as "error decoding patch: ..."
    # (400); Ignore: jsonpatch.DecodePatch's error as is (400).
    _seed(apiserver)
    code, _, st = call(apiserver, "PATCH", f"{CM}/p{query}", body, JSON_PATCH)
    assert code == 400, st
    assert st["reason"] == "BadRequest" and st["message"] == message


# --- watch from a resourceVersion not reached yet (cacher Watch) -----------------------


def test_a_watch_from_a_future_resource_version_sends_only_newer_events(
    apiserver: APIServer,
) -> None:
    # getAllEventsSinceLocked has nothing to replay, and cacheWatcher.process
    # sends only events newer than the requested resourceVersion: the writes
    # up to it are not seen (nor bookmarks before it).
    assert call(apiserver, "POST", CM, _cm("a"))[0] == 201
    ahead = apiserver.storage.resource_version + 2
    before = len(apiserver.storage.watchers())
    result: dict[str, Any] = {}

    def watch() -> None:
        result["answer"] = _stream(
            apiserver,
            f"{CM}?watch=1&resourceVersion={ahead}&allowWatchBookmarks=true&timeoutSeconds=2",
        )

    reader = threading.Thread(target=watch)
    reader.start()
    try:
        wait_for(lambda: len(apiserver.storage.watchers()) > before, timeout=10)
        created = []
        for name in ("b", "c", "d"):
            code, _, obj = call(apiserver, "POST", CM, _cm(name))
            assert code == 201
            created.append((name, int(obj["metadata"]["resourceVersion"])))
    finally:
        reader.join(timeout=20)
    code, _, docs = result["answer"]
    assert code == 200
    expected = [name for name, rv in created if rv > ahead]
    assert expected and len(expected) < len(created)
    assert [d["object"]["metadata"]["name"] for d in docs if d["type"] == "ADDED"] == expected
    for d in docs:
        assert int(d["object"]["metadata"]["resourceVersion"]) > ahead, d


# --- continue tokens (storage.DecodeContinue, etcd3 GetList) ----------------------------


def _token(payload: Any) -> str:
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    ("token", "why"),
    [
        ("abc=", "illegal base64 data at input byte 3"),
        ("ab.d", "illegal base64 data at input byte 2"),
        ("abcde", "illegal base64 data at input byte 4"),
        (
            _token({"v": "meta.k8s.io/v2", "rv": 5, "start": "default/a\x00"}),
            "server does not recognize this encoded version meta.k8s.io/v2",
        ),
        (
            _token({"v": "meta.k8s.io/v1", "rv": 0, "start": "default/a\x00"}),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            _token({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
        (_token({"v": "meta.k8s.io/v1", "rv": 5, "start": "../x"}), "../x"),
    ],
)
def test_a_bad_continue_token_is_getlists_400(apiserver: APIServer, token: str, why: str) -> None:
    # GetList: errors.NewBadRequest("invalid continue token: " + DecodeContinue's
    # error), each of DecodeContinue's checks in its order.
    code, _, st = call(apiserver, "GET", f"{CM}?limit=1&continue={token}")
    assert code == 400, st
    assert st["reason"] == "BadRequest"
    assert st["message"] == f"invalid continue token: continue key is not valid: {why}"


def test_a_continue_token_from_a_list_still_pages(apiserver: APIServer) -> None:
    for name in ("a", "b", "c"):
        assert call(apiserver, "POST", CM, _cm(name))[0] == 201
    names: list[str] = []
    path = f"{CM}?limit=2"
    while True:
        code, _, lst = call(apiserver, "GET", path)
        assert code == 200
        names += [i["metadata"]["name"] for i in lst["items"]]
        token = lst["metadata"].get("continue")
        if not token:
            break
        path = f"{CM}?limit=2&continue={token}"
    assert [n for n in names if n in ("a", "b", "c")] == ["a", "b", "c"]
