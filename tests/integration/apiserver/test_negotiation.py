"""Response negotiation of the embedded API server, over HTTP, as kube-apiserver
1.32 does it: one ``NegotiateOutputMediaType`` picks the media type (JSON, YAML,
protobuf) and the transform (Table, PartialObjectMetadata[List]) of every
answer, watches and error ``Status`` bodies included.

What kube does (k8s.io/apiserver ``handlers/negotiation``, ``handlers/response.go``,
``handlers/watch.go``, ``responsewriters/writers.go``; apiextensions-apiserver's
``crdHandler``):

- ``application/yaml``: the object (list, Table, Status) as sigs.k8s.io/yaml
  writes its JSON (yaml.v2: keys in its natural order, quoting of strings that
  would read back as something else, 80-column folding);
- a watch whose negotiated type has no stream serializer (YAML) is 406, listing
  the ``;stream=watch`` types, its Status written in YAML by ``ErrorNegotiated``;
- ``as=PartialObjectMetadata[List]`` is served in protobuf when that clause
  comes first, for custom resources too (their scope refuses protobuf only
  for the objects themselves);
- nothing acceptable: 406 ``NotAcceptable`` listing the served types, written
  as ``WriteRawJSON``'s indented JSON when the error writer cannot negotiate
  either, and checked before the verb runs (nothing is created).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import time
from typing import Any
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

import pytest
import yaml
from support import crds
from support.kubectl import KUBECTL

from pycontroller.testing import APIServer
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.apis.meta.v1 import (
    generated_pb2 as meta,
)
from pycontroller.testing.apiserver._proto.k8s_io.apimachinery.pkg.runtime import (
    generated_pb2 as runtime,
)
from pycontroller.testing.apiserver.http import negotiation

PB = "application/vnd.kubernetes.protobuf"
YAML = "application/yaml"
CM = "/api/v1/namespaces/default/configmaps"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
META_LIST = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# client-go's metadata client (k8s.io/client-go/metadata).
METADATA_CLIENT_LIST = f"{PB};{META_LIST},application/json;{META_LIST},application/json"
METADATA_CLIENT = f"{PB};{META},application/json;{META},application/json"
SERVED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
STREAMS = "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"


def _request(
    server: APIServer,
    method: str,
    path: str,
    accept: str | None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, str, bytes]:
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    try:
        h = dict(headers or {})
        if accept is not None:
            h["Accept"] = accept
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


def _json_get(server: APIServer, path: str) -> Any:
    code, _, body = _request(server, "GET", path, "application/json")
    assert code == 200, body
    return json.loads(body)


def _unknown(body: bytes) -> Any:
    assert body[:4] == b"k8s\x00", body[:16]
    env = runtime.Unknown()
    env.ParseFromString(body[4:])
    return env


def _create_cm(server: APIServer, name: str, **data: str) -> None:
    code, _, body = _request(
        server, "POST", CM, "application/json", {"metadata": {"name": name}, "data": data}
    )
    assert code == 201, body


def _install_widgets(server: APIServer) -> None:
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    crd = crds.crd("widgets", "Widget")
    code, _, body = _request(server, "POST", path, "application/json", crd)
    assert code == 201, body
    for _ in range(100):  # served once established (bounded: 5 s)
        if _request(server, "GET", WIDGETS, "application/json")[0] == 200:
            return
        time.sleep(0.05)
    raise AssertionError("widgets are not served")


# --- YAML ----------------------------------------------------------------------------


def test_yaml_get_is_the_object_as_yaml(apiserver: APIServer) -> None:
    obj = _json_get(apiserver, "/api/v1/namespaces/default")
    code, ctype, body = _request(apiserver, "GET", "/api/v1/namespaces/default", YAML)
    assert (code, ctype) == (200, YAML)
    assert yaml.safe_load(body) == obj
    text = body.decode()
    # sigs.k8s.io/yaml: sorted keys, two-space indent, sequences flush with
    # their key, timestamps and numeric strings double-quoted, no "---".
    assert text.startswith('apiVersion: v1\nkind: Namespace\nmetadata:\n  creationTimestamp: "')
    assert f'  resourceVersion: "{obj["metadata"]["resourceVersion"]}"\n' in text
    assert "spec:\n  finalizers:\n  - kubernetes\nstatus:\n  phase: Active\n" in text
    # Through the standard library too, as any HTTP client would ask.
    req = Request(apiserver.url + "/api/v1/namespaces/default", headers={"Accept": YAML})
    with urlopen(req, timeout=10) as resp:
        assert resp.headers["Content-Type"] == YAML and resp.read() == body


def test_yaml_quoting_and_order_are_yaml_v2s(apiserver: APIServer) -> None:
    data = {
        "b10": "x",
        "b9": "true",
        "a": "2024-01-01T00:00:00Z",
        "multi": "l1\nl2\n",
        "num": "123",
        "y": "y",
        "colon": "a: b",
        "long": " ".join(["word"] * 40),
        "base60": "1:20",
        "dash": "-",
        "hex": "0x1F",
        "dot": ".5",
        "empty": "",
        "plain": "hello world",
    }
    _create_cm(apiserver, "quoting", **data)
    code, _, body = _request(apiserver, "GET", f"{CM}/quoting", YAML)
    assert code == 200
    text = body.decode()
    expected = (
        "data:\n"
        '  a: "2024-01-01T00:00:00Z"\n'
        '  b9: "true"\n'
        "  b10: x\n"
        '  base60: "1:20"\n'
        "  colon: 'a: b'\n"
        "  dash: '-'\n"
        '  dot: ".5"\n'
        '  empty: ""\n'
        '  hex: "0x1F"\n'
        "  long: word word word word word word word word word word word word word word word\n"
        "    word word word word word word word word word word word word word word word word\n"
        "    word word word word word word word word word\n"
        "  multi: |\n"
        "    l1\n"
        "    l2\n"
        '  num: "123"\n'
        "  plain: hello world\n"
        '  "y": "y"\n'
        "kind: ConfigMap\n"
    )
    assert text.startswith("apiVersion: v1\n" + expected)
    assert yaml.safe_load(body)["data"] == data


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_yaml_matches_kubectls_sigs_yaml() -> None:
    # kubectl's YAML printer is sigs.k8s.io/yaml over the object's JSON, the
    # same conversion kube-apiserver's YAML serializer makes.
    assert KUBECTL is not None
    literals = {
        "b10": "x",
        "b9": "true",
        "a01": "2024-1-2",
        "a1": "on",
        "a": "2024-01-01 10:00:00",
        "multi": "l1\n  l2\n\n",
        "trail": "no newline\nat end",
        "num": "-1e3",
        "oct": "0o17",
        "under": "1_000",
        "big": "99999999999999999999",
        "null": "null",
        "tilde": "~",
        "amp": "<a&b>",
        "lead": " lead",
        "hash": "a #b",
        "star": "*x",
        "long": "x" * 100,
        "quote": 'it\'s "q"',
        "unicode": "caf\u00e9 \u00fc",
    }
    args = [KUBECTL, "create", "configmap", "x", "--dry-run=client"]
    args += [f"--from-literal={k}={v}" for k, v in literals.items()]
    env = {"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin"}

    def run(fmt: str) -> str:
        proc = subprocess.run(
            [*args, "-o", fmt], capture_output=True, text=True, env=env, timeout=60, check=True
        )
        return proc.stdout

    obj = json.loads(run("json"))
    assert negotiation.encode_yaml(obj).decode() == run("yaml")


def test_yaml_list_table_and_errors(apiserver: APIServer) -> None:
    _create_cm(apiserver, "a", k="v")
    lst = _json_get(apiserver, CM)
    code, ctype, body = _request(apiserver, "GET", CM, YAML)
    assert (code, ctype) == (200, YAML)
    assert yaml.safe_load(body) == lst
    assert b"\nitems:\n- data:\n    k: v\n  metadata:\n" in body  # typed list: items lose TypeMeta
    # Tables may be YAML (and JSON), not protobuf.
    table_accept = f"{YAML};as=Table;g=meta.k8s.io;v=v1"
    code, ctype, body = _request(apiserver, "GET", CM, table_accept)
    assert (code, ctype) == (200, YAML)
    table = yaml.safe_load(body)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [r["cells"][0] for r in table["rows"]] == ["a"]
    # Errors: ErrorNegotiated picks YAML too.
    code, ctype, body = _request(apiserver, "GET", f"{CM}/missing", YAML)
    assert (code, ctype) == (404, YAML)
    assert body.decode() == (
        "apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: missing\n"
        'kind: Status\nmessage: configmaps "missing" not found\nmetadata: {}\n'
        "reason: NotFound\nstatus: Failure\n"
    )


def test_yaml_watch_is_not_acceptable(apiserver: APIServer) -> None:
    code, ctype, body = _request(apiserver, "GET", f"{CM}?watch=true", YAML)
    assert (code, ctype) == (406, YAML)
    status = yaml.safe_load(body)
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 406, "NotAcceptable")
    assert status["message"] == f"only the following media types are accepted: {STREAMS}"
    # YAML chosen first is refused even when JSON follows (the stream
    # negotiation lands on the same clause)...
    code, _, _ = _request(apiserver, "GET", f"{CM}?watch=true", f"{YAML}, application/json")
    assert code == 406
    # ...while JSON first streams, and ;stream=watch skips YAML.
    code, ctype, _ = _request(
        apiserver, "GET", f"{CM}?watch=true&timeoutSeconds=1", "application/json, application/yaml"
    )
    assert (code, ctype) == (200, "application/json")
    code, ctype, _ = _request(
        apiserver, "GET", f"{CM}?watch=true&timeoutSeconds=1", f"{YAML};stream=watch, {PB}"
    )
    assert (code, ctype) == (200, f"{PB};stream=watch")


# --- PartialObjectMetadata in protobuf ---------------------------------------------------


def test_metadata_client_list_and_get_are_protobuf(apiserver: APIServer) -> None:
    _create_cm(apiserver, "a", big="x")
    _create_cm(apiserver, "b")
    code, ctype, body = _request(apiserver, "GET", CM, METADATA_CLIENT_LIST)
    assert (code, ctype) == (200, PB)
    env = _unknown(body)
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == (
        "meta.k8s.io/v1",
        "PartialObjectMetadataList",
    )
    lst = meta.PartialObjectMetadataList()
    lst.ParseFromString(env.raw)
    assert [i.metadata.name for i in lst.items] == ["a", "b"]
    assert lst.metadata.resourceVersion
    assert all(i.metadata.uid and i.metadata.resourceVersion for i in lst.items)

    code, ctype, body = _request(apiserver, "GET", f"{CM}/a", METADATA_CLIENT)
    assert (code, ctype) == (200, PB)
    env = _unknown(body)
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == (
        "meta.k8s.io/v1",
        "PartialObjectMetadata",
    )
    one = meta.PartialObjectMetadata()
    one.ParseFromString(env.raw)
    assert one.metadata.name == "a" and one.metadata.namespace == "default"
    # The wrong form is still 406; its Status is protobuf when a plain
    # protobuf clause follows (ErrorNegotiated refuses the transform)...
    code, ctype, body = _request(apiserver, "GET", f"{CM}/a", f"{PB};{META_LIST}, {PB}")
    assert (code, ctype) == (406, PB)
    status = meta.Status()
    status.ParseFromString(_unknown(body).raw)
    assert status.reason == "NotAcceptable" and "is not a list (*v1.ConfigMap)" in status.message
    # ...and WriteRawJSON's JSON when nothing else is acceptable.
    code, ctype, body = _request(apiserver, "GET", f"{CM}/a", f"{PB};{META_LIST}")
    assert (code, ctype) == (406, "application/json") and body.startswith(b'{\n  "kind"')


def test_v1beta1_partial_list_is_its_own_message(apiserver: APIServer) -> None:
    _create_cm(apiserver, "a")
    accept = f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"
    code, ctype, body = _request(apiserver, "GET", CM, accept)
    assert (code, ctype) == (200, PB)
    env = _unknown(body)
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == (
        "meta.k8s.io/v1beta1",
        "PartialObjectMetadataList",
    )
    # v1beta1's list: items = 1, metadata = 2 (v1's are the other way round).
    assert env.raw[0] == (1 << 3) | 2
    item = meta.PartialObjectMetadata()
    item.ParseFromString(env.raw[2 : 2 + env.raw[1]])
    assert item.metadata.name == "a"


def _frames(body: bytes) -> list[Any]:
    out = []
    while body:
        size = int.from_bytes(body[:4], "big")
        event = meta.WatchEvent()
        event.ParseFromString(body[4 : 4 + size])
        out.append(event)
        body = body[4 + size :]
    return out


def test_metadata_watch_is_protobuf(apiserver: APIServer) -> None:
    _create_cm(apiserver, "a", big="x")
    accept = f"{PB};{META},application/json;{META},application/json"
    path = f"{CM}?watch=true&resourceVersion=0&timeoutSeconds=1&allowWatchBookmarks=true"
    code, ctype, body = _request(apiserver, "GET", path, accept)
    assert (code, ctype) == (200, f"{PB};stream=watch")
    events = _frames(body)
    assert events and events[0].type == "ADDED"
    env = _unknown(events[0].object.raw)
    assert (env.typeMeta.apiVersion, env.typeMeta.kind) == (
        "meta.k8s.io/v1",
        "PartialObjectMetadata",
    )
    obj = meta.PartialObjectMetadata()
    obj.ParseFromString(env.raw)
    assert obj.metadata.name == "a"


def test_custom_resources_serve_partial_metadata_in_protobuf(apiserver: APIServer) -> None:
    # apiextensions' unstructuredNegotiatedSerializer includes protobuf; the
    # scope's StandardSerializers refuse it for the objects only, and
    # PartialObjectMetadata is encoded by the meta codecs.
    _install_widgets(apiserver)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    code, _, body = _request(apiserver, "POST", WIDGETS, "application/json", widget)
    assert code == 201, body
    code, ctype, body = _request(apiserver, "GET", WIDGETS, METADATA_CLIENT_LIST)
    assert (code, ctype) == (200, PB)
    env = _unknown(body)
    assert env.typeMeta.kind == "PartialObjectMetadataList"
    lst = meta.PartialObjectMetadataList()
    lst.ParseFromString(env.raw)
    assert [i.metadata.name for i in lst.items] == ["w"]
    # A metadata watch of custom resources is a protobuf stream too.
    path = f"{WIDGETS}?watch=true&resourceVersion=0&timeoutSeconds=1"
    code, ctype, body = _request(apiserver, "GET", path, METADATA_CLIENT)
    assert (code, ctype) == (200, f"{PB};stream=watch")
    events = _frames(body)
    assert events and _unknown(events[0].object.raw).typeMeta.kind == "PartialObjectMetadata"
    # The objects themselves are never protobuf: JSON when acceptable...
    code, ctype, _ = _request(apiserver, "GET", f"{WIDGETS}/w", f"{PB}, application/json")
    assert (code, ctype) == (200, "application/json")
    # ...406 when protobuf is all the client takes, the Status itself protobuf.
    code, ctype, body = _request(apiserver, "GET", f"{WIDGETS}/w", PB)
    assert (code, ctype) == (406, PB)
    status = meta.Status()
    status.ParseFromString(_unknown(body).raw)
    assert (status.code, status.reason) == (406, "NotAcceptable")
    assert status.message == f"only the following media types are accepted: {SERVED}"


# --- nothing acceptable ----------------------------------------------------------------


def test_unacceptable_is_406_in_raw_json(apiserver: APIServer) -> None:
    expected = (
        "{\n"
        '  "kind": "Status",\n'
        '  "apiVersion": "v1",\n'
        '  "metadata": {},\n'
        '  "status": "Failure",\n'
        f'  "message": "only the following media types are accepted: {SERVED}",\n'
        '  "reason": "NotAcceptable",\n'
        '  "code": 406\n'
        "}"
    )
    for path in ("/api/v1/namespaces/default", CM, f"{CM}/missing", f"{CM}?watch=true"):
        code, ctype, body = _request(apiserver, "GET", path, "text/html")
        assert (code, ctype, body.decode()) == (406, "application/json", expected), path
    # A Table is not served in protobuf: with nothing else acceptable, 406.
    code, _, _ = _request(apiserver, "GET", CM, f"{PB};as=Table;g=meta.k8s.io;v=v1")
    assert code == 406
    # Negotiated before the verb: the object is not created.
    code, _, _ = _request(apiserver, "POST", CM, "text/html", {"metadata": {"name": "nope"}})
    assert code == 406
    assert _request(apiserver, "GET", f"{CM}/nope", "application/json")[0] == 404
    # Wildcards and an empty header are JSON.
    for accept in ("*/*", "application/*", "", None):
        code, ctype, _ = _request(apiserver, "GET", CM, accept)
        assert (code, ctype) == (200, "application/json"), accept


# --- Tables and pretty ------------------------------------------------------------------


def test_table_options_and_versions(apiserver: APIServer) -> None:
    _create_cm(apiserver, "a")
    accept = "application/json;as=Table;g=meta.k8s.io;v=v1beta1"
    code, _, body = _request(apiserver, "GET", CM, accept)
    table = json.loads(body)
    assert code == 200 and table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert table["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    # optionsForTransform: an unknown includeObject is 400 (raw JSON: the
    # error writer refuses the Table clause and nothing else is acceptable).
    code, _, body = _request(apiserver, "GET", f"{CM}?includeObject=All", accept)
    assert code == 400
    assert json.loads(body)["message"] == (
        'Unable to convert to Table as requested: includeObject: Invalid value: "All": '
        "must be 'Metadata', 'Object', 'None', or empty"
    )
    # A Table in a group version other than meta's is not a transform kube serves.
    code, ctype, _ = _request(
        apiserver, "GET", CM, "application/json;as=Table;g=example.com;v=v1, application/yaml"
    )
    assert (code, ctype) == (200, YAML)


def test_table_watch_sends_columns_once(apiserver: APIServer) -> None:
    _create_cm(apiserver, "a")
    _create_cm(apiserver, "b")
    accept = "application/json;as=Table;g=meta.k8s.io;v=v1"
    path = f"{CM}?watch=true&resourceVersion=0&timeoutSeconds=1"
    code, ctype, body = _request(apiserver, "GET", path, accept)
    assert (code, ctype) == (200, "application/json")
    events = [json.loads(line) for line in body.splitlines()]
    assert [e["object"]["kind"] for e in events] == ["Table", "Table"]
    assert events[0]["object"]["columnDefinitions"]
    # watchEmbeddedEncoder: later Tables are NoHeaders.
    assert events[1]["object"]["columnDefinitions"] is None
    # A streaming list refuses Tables (watchListEndpointRestrictions): the
    # next clause, plain JSON, is served.
    stream = f"{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    stream += "&allowWatchBookmarks=true&timeoutSeconds=1"
    code, _, body = _request(apiserver, "GET", stream, f"{accept}, application/json")
    assert code == 200
    assert json.loads(body.splitlines()[0])["object"]["kind"] == "ConfigMap"


def test_pretty_json(apiserver: APIServer) -> None:
    obj = _json_get(apiserver, "/api/v1/namespaces/default")
    pretty = json.dumps(obj, indent=2).encode()
    for query, headers, accept in (
        ("?pretty=true", {}, "application/json"),
        ("", {}, "application/json;pretty=1"),
        ("", {"User-Agent": "curl/8.5.0"}, "application/json"),
    ):
        path = "/api/v1/namespaces/default" + query
        code, _, body = _request(apiserver, "GET", path, accept, headers=headers)
        assert (code, body) == (200, pretty), (query, headers, accept)
    # pretty=false beats a curl User-Agent; YAML and protobuf have no pretty form.
    code, _, body = _request(
        apiserver,
        "GET",
        "/api/v1/namespaces/default?pretty=false",
        "application/json",
        headers={"User-Agent": "curl/8.5.0"},
    )
    assert body.endswith(b"}\n") and b"\n  " not in body
