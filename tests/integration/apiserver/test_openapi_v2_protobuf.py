"""``/openapi/v2`` in protobuf (gnostic's ``openapi.v2.Document``), as
kube-openapi's handler serves it to client-go's ``OpenAPISchema`` and kubectl."""

from __future__ import annotations

import gzip
import http.client
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf.message import Message
from support import crds
from support.kubectl import KUBECTL, Kubectl

from pycontroller.testing import APIServer
from pycontroller.testing.apiserver._proto.openapiv2 import OpenAPIv2_pb2 as pb
from pycontroller.testing.apiserver._proto.openapiv2.rules import RULES
from pycontroller.testing.apiserver.http.openapi_v2 import to_document, yaml_v3

PB = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
PB_OLD = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "default": 1, "minimum": 0},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "mode": {"type": "string", "enum": ["a", "b"]},
            },
        }
    },
}


def fetch(server: APIServer, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        conn.request("GET", "/openapi/v2", headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def to_json(msg: Message) -> Any:
    """A Document (part) back to JSON, inverting gnostic's mapping."""
    name = msg.DESCRIPTOR.name
    if name == "Any":
        return yaml.safe_load(msg.yaml)  # type: ignore[attr-defined]
    if name == "TypeItem":
        values = list(msg.value)  # type: ignore[attr-defined]
        return values[0] if len(values) == 1 else values
    if name == "ItemsItem":
        return to_json(msg.schema[0])  # type: ignore[attr-defined]
    if name == "StringArray":
        return list(msg.value)  # type: ignore[attr-defined]
    if msg.DESCRIPTOR.oneofs_by_name.get("oneof") is not None:
        which = msg.WhichOneof("oneof")
        value = getattr(msg, which)
        return value if isinstance(value, bool) else to_json(value)
    rule: dict[str, Any] = RULES[name]
    out: dict[str, Any] = {}
    for field, value in msg.ListFields():
        if field.name in rule.get("maps", {}):
            for pair in value:
                v = pair.value
                out[pair.name] = v if isinstance(v, str) else to_json(v)
            continue
        key = rule["keys"][field.name]
        if field.message_type is None:
            out[key] = list(value) if field.is_repeated else value
        elif field.is_repeated:
            out[key] = [to_json(v) for v in value]
        else:
            out[key] = to_json(value)
    return out


_ANY_KEYS = ("default", "example", "enum")
_MAPS = ("properties", "definitions", "security[]")  # their entries are all kept


def _zero(x: Any) -> bool:
    return x == [] or (not isinstance(x, dict | list) and x in (0, False, ""))


def proto3_view(v: Any, key: str = "") -> Any:
    """JSON as a proto3 round trip keeps it: fields holding their zero value
    (0, false, "", []) are not on the wire (gnostic's Go structs alike);
    values held in ``Any`` (defaults, examples, enums, extensions) are kept."""
    if key in _ANY_KEYS or key.startswith("x-"):
        return v
    if isinstance(v, dict):
        return {
            k: proto3_view(x, k)
            for k, x in v.items()
            if not (_zero(x) and k not in _ANY_KEYS and not k.startswith("x-") and key not in _MAPS)
        }
    if isinstance(v, list):
        return [proto3_view(x, key + "[]") for x in v]
    return v


def definitions(doc: pb.Document) -> dict[str, Any]:
    return {d.name: d.value for d in doc.definitions.additional_properties}


@pytest.fixture
def server(apiserver_factory: Any) -> APIServer:
    srv: APIServer = apiserver_factory(
        crds=[crds.crd("widgets", "Widget", schema=WIDGET_SCHEMA, subresources={"status": {}})]
    )
    return srv


def test_protobuf_document_matches_the_json_one(server: APIServer) -> None:
    code, headers, body = fetch(server, {"Accept": PB_OLD})
    assert code == 200, body[:200]
    assert headers["content-type"] == PB
    doc = pb.Document()
    doc.ParseFromString(body)
    code, jheaders, jbody = fetch(server, {"Accept": "application/json"})
    assert code == 200 and jheaders["content-type"] == "application/json"
    as_json = json.loads(jbody)
    assert doc.swagger == "2.0" and doc.info.title == as_json["info"]["title"]
    assert [p.name for p in doc.paths.path] == list(as_json["paths"])
    defs = definitions(doc)
    assert list(defs) == list(as_json["definitions"])
    for name in (
        "io.k8s.api.apps.v1.Deployment",
        "io.k8s.api.apps.v1.DeploymentSpec",
        "com.example.v1.Widget",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",  # x-kubernetes-list-type
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    ):
        assert to_json(defs[name]) == proto3_view(as_json["definitions"][name]), name
    # Vendor extensions are Any messages holding yaml.v3's text.
    gvk = {e.name: e.value.yaml for e in defs["io.k8s.api.apps.v1.Deployment"].vendor_extension}
    assert gvk["x-kubernetes-group-version-kind"] == (
        "- group: apps\n  kind: Deployment\n  version: v1\n"
    )
    widget = to_json(defs["com.example.v1.Widget"])
    tags = widget["properties"]["spec"]["properties"]["tags"]
    assert tags["x-kubernetes-list-type"] == "set"
    # The whole document round-trips (paths: parameters, responses, operations).
    assert to_json(doc) == proto3_view(as_json)
    # Both protobuf media types get the same bytes; ETag is the JSON one's.
    code, headers2, body2 = fetch(server, {"Accept": PB})
    assert code == 200 and body2 == body and headers2["content-type"] == PB
    assert headers["etag"] == jheaders["etag"] == headers2["etag"]
    assert headers["etag"].startswith('"') and len(headers["etag"]) == 128 + 2
    assert "Accept" in headers["vary"] and "Accept-Encoding" in headers["vary"]
    assert headers["accept-ranges"] == "bytes" and "last-modified" in headers


def test_etag_304_gzip_and_406(server: APIServer) -> None:
    code, headers, body = fetch(server, {"Accept": PB})
    etag = headers["etag"]
    code, h304, b304 = fetch(server, {"Accept": PB, "If-None-Match": etag})
    assert code == 304 and b304 == b"" and h304["etag"] == etag
    assert "last-modified" not in h304
    code, _, _ = fetch(server, {"Accept": "application/json", "If-None-Match": f"W/{etag}"})
    assert code == 304
    code, _, again = fetch(server, {"Accept": PB, "If-None-Match": '"other"'})
    assert code == 200 and again == body
    code, hgz, gz = fetch(server, {"Accept": PB, "Accept-Encoding": "gzip"})
    assert code == 200 and hgz["content-encoding"] == "gzip"
    assert gzip.decompress(gz) == body
    code, hplain, _ = fetch(server, {"Accept": PB, "Accept-Encoding": "gzip;q=0"})
    assert code == 200 and "content-encoding" not in hplain
    # A single byte range, as http.ServeContent serves it.
    code, hr, part = fetch(server, {"Accept": PB, "Range": "bytes=0-9"})
    assert code == 206 and part == body[:10]
    assert hr["content-range"] == f"bytes 0-9/{len(body)}"
    # Nothing acceptable: a bare 406 (kube-openapi writes no body).
    code, h406, b406 = fetch(server, {"Accept": "text/plain"})
    assert code == 406 and b406 == b"" and "Accept" in h406["vary"]
    # No Accept is */*: JSON first; so is a wildcard clause.
    for accept in ({}, {"Accept": "*/*"}, {"Accept": f"{PB};q=0.5, application/*"}):
        code, h, _ = fetch(server, accept)
        assert code == 200 and h["content-type"] == "application/json", accept
    code, h, _ = fetch(server, {"Accept": f"{PB}, application/json;q=0.9"})
    assert h["content-type"] == PB


def test_document_follows_crds(server: APIServer) -> None:
    _, headers, _ = fetch(server, {"Accept": PB})
    server.install_crd(crds.crd("gadgets", "Gadget"))
    code, after, body = fetch(server, {"Accept": PB, "If-None-Match": headers["etag"]})
    assert code == 200 and after["etag"] != headers["etag"]
    doc = pb.Document()
    doc.ParseFromString(body)
    assert "com.example.v1.Gadget" in definitions(doc)


def test_gnostic_mapping_details() -> None:
    doc = to_document(
        json.dumps(
            {
                "swagger": "2.0",
                "info": {"title": "t", "version": "v"},
                "paths": {
                    "/x": {
                        "parameters": [
                            {"$ref": "#/parameters/p"},
                            {"name": "q", "in": "query", "type": "string", "uniqueItems": True},
                        ],
                        "get": {"responses": {"200": {"description": "OK",
                                                      "schema": {"type": "string"}}}},
                    }
                },
                "definitions": {
                    "A": {"type": ["string", "null"], "additionalProperties": False,
                          "items": {"type": "integer"}, "default": {"a": [1, "2", ""]}},
                    "B": {"additionalProperties": {"type": "string"}, "maximum": 1.5},
                },
            }
        ).encode()
    )  # fmt: skip
    params = doc.paths.path[0].value.parameters
    assert params[0].WhichOneof("oneof") == "json_reference"
    assert params[1].parameter.non_body_parameter.WhichOneof("oneof") == (
        "query_parameter_sub_schema"
    )
    resp = doc.paths.path[0].value.get.responses.response_code[0]
    assert resp.name == "200" and resp.value.response.schema.schema.type.value == ["string"]
    a = doc.definitions.additional_properties[0].value
    assert list(a.type.value) == ["string", "null"]
    assert a.additional_properties.WhichOneof("oneof") == "boolean"
    assert a.additional_properties.boolean is False
    assert a.items.schema[0].type.value == ["integer"]
    assert a.default.yaml == 'a:\n    - 1\n    - "2"\n    - ""\n'
    b = doc.definitions.additional_properties[1].value
    assert b.additional_properties.schema.type.value == ["string"]
    assert b.maximum == 1.5


def test_yaml_v3_text() -> None:
    # yaml.v3 (gnostic's compiler.Marshal): indent 4, sequences indented in
    # mappings, +2 after "- ", strings that would read as another type quoted.
    assert yaml_v3({"a": [{"b": {"c": 1}}]}) == "a:\n    - b:\n        c: 1\n"
    assert yaml_v3("atomic") == "atomic\n"
    assert yaml_v3(True) == "true\n"
    assert yaml_v3(["true", "1.5", "x: y", "2024-01-02"]) == (
        '- "true"\n- "1.5"\n- \'x: y\'\n- "2024-01-02"\n'
    )
    assert yaml_v3({}) == "{}\n"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_explain_reads_the_protobuf_document(server: APIServer, tmp_path: Path) -> None:
    kubectl = Kubectl(server, tmp_path)
    out = kubectl.run("explain", "--output=plaintext-openapiv2", "deployments.spec.replicas")
    assert "FIELD:    replicas <integer>" in out.stdout
    out = kubectl.run("explain", "--output=plaintext-openapiv2", "widgets.spec")
    assert "KIND:     Widget" in out.stdout and "size\t<integer>" in out.stdout
    assert "tags\t<[]string>" in out.stdout
    proc: subprocess.CompletedProcess[str] = kubectl.run(
        "explain", "--output=plaintext-openapiv2", "deployments", "-v=6", check=False
    )
    assert proc.returncode == 0
    assert "/openapi/v2" in proc.stderr and "200 OK" in proc.stderr
