"""controllers.reverseproxy.validation: the original's defaults, one grammar
per field (messages name the field), total on any input, and the CRDs agree."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.reverseproxy import names, validation
from controllers.reverseproxy.validation import validate, with_defaults

REPO = Path(__file__).resolve().parents[3]


def rp(**spec: Any) -> dict[str, Any]:
    return {
        "kind": "ReverseProxy",
        "metadata": {"name": "p", "namespace": "d"},
        "spec": {"proxyPass": "http://up", **spec},
    }


def tcp(**spec: Any) -> dict[str, Any]:
    return {
        "kind": "TCPReverseProxy",
        "metadata": {"name": "t", "namespace": "d"},
        "spec": {"servers": [{"server": "db:5432"}], **spec},
    }


def test_defaults_of_the_crd_and_the_webhook() -> None:
    spec = with_defaults(rp(proxySetHeader={"X-A": "1"}, rewrite=[{}]), nginx_image="img")["spec"]
    assert spec["image"] == "img"
    assert (spec["replicas"], spec["servicePort"], spec["workerConnections"]) == (1, 80, 1024)
    assert spec["proxySetHeader"] == {"x-a": "1", "host": "up"}
    assert spec["logFormat"] == validation.COMBINED_LOG_FORMAT
    assert spec["rewrite"] == [{"flag": "break"}]
    assert [spec[f] for f in validation.HTTP_TIMEOUT_FIELDS] == ["15s"] * 3
    assert "workerProcesses" not in spec  # auto
    spec = with_defaults(tcp(image="mine"), nginx_image="img")["spec"]
    assert (spec["image"], spec["protocol"], spec["proxyTimeout"]) == ("mine", "TCP", "10m")
    assert "logFormat" not in spec and "proxySetHeader" not in spec
    # explicit values are kept: "" log format, an explicit host, no image without a default
    spec = with_defaults(rp(logFormat="", proxySetHeader={"HOST": "h"}))["spec"]
    assert spec["logFormat"] == "" and spec["proxySetHeader"] == {"host": "h"}
    assert "image" not in spec


def test_host_default_keeps_the_port_and_drops_user_info() -> None:
    assert validation.proxy_pass_host("https://u:p@example.com:8443/x") == "example.com:8443"
    assert validation.proxy_pass_host("http://[::1]:80") == "[::1]:80"
    assert validation.proxy_pass_host(7) == ""


def test_the_samples_and_golden_cases_are_valid() -> None:
    paths = sorted((REPO / "crds" / "samples").glob("*proxy.yaml"))
    paths += sorted((REPO / "tests/unit/reverseproxy/golden").glob("*/input.yaml"))
    assert len(paths) >= 7
    for path in paths:
        assert validate(yaml.safe_load(path.read_text()), nginx_image="i") == [], path


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        (rp(proxyPass=""), "spec.proxyPass"),
        (rp(proxyPass="ftp://x"), "spec.proxyPass"),
        (rp(proxyPass="http://x/$host"), "spec.proxyPass"),
        (rp(proxyPass="http://x:70000"), "spec.proxyPass"),
        (rp(proxyPass="http://x?y"), "spec.proxyPass"),
        (rp(rewrite=[{"regex": "(", "replacement": "/"}]), "spec.rewrite[0].regex"),
        (rp(rewrite=[{"regex": "^/", "replacement": "/a b"}]), "spec.rewrite[0].replacement"),
        (rp(rewrite=[{"regex": "^/", "replacement": "/$10"}]), "spec.rewrite[0].replacement"),
        (
            rp(rewrite=[{"regex": "^/", "replacement": "/", "flag": "redirect"}]),
            "spec.rewrite[0].flag",
        ),
        (rp(rewrite=[{"replacement": "/"}]), "spec.rewrite[0].regex"),
        (rp(proxyHideHeader=["a b"]), "spec.proxyHideHeader[0]"),
        (rp(proxySetHeader={"a": 1}), "spec.proxySetHeader[a]"),
        (rp(proxySetHeader={"a": "$"}), "spec.proxySetHeader[a]"),
        (rp(proxySetHeader={"a": "${nope}"}), "spec.proxySetHeader[a]"),
        (rp(proxySetHeader={"X-A": "1", "x-a": "2"}), "spec.proxySetHeader"),
        (rp(logFormat="$bogus"), "spec.logFormat"),
        (rp(logFormat="a\tb"), "spec.logFormat"),
        (rp(proxyReadTimeout="15"), "spec.proxyReadTimeout"),
        (rp(proxyConnectTimeout="1m"), "spec.proxyConnectTimeout"),
        (rp(resolver=["10.0.0.1 valid=5s"]), "spec.resolver[0]"),
        (rp(resolver="10.0.0.1"), "spec.resolver"),
        (rp(replicas=-1), "spec.replicas"),
        (rp(replicas=True), "spec.replicas"),
        (rp(servicePort=0), "spec.servicePort"),
        (rp(workerProcesses=0), "spec.workerProcesses"),
        (rp(workerConnections="1024"), "spec.workerConnections"),
        (rp(image="nginx 1"), "spec.image"),
        (rp(nodeSelector={"a": "b c"}), "spec.nodeSelector[a]"),
        (rp(podLabels={"bad key!": "v"}), "spec.podLabels[bad key!]"),
        (rp(env=[{"value": "x"}]), "spec.env[0]"),
        (rp(affinity=[]), "spec.affinity"),
        (tcp(servers=[]), "spec.servers"),
        (tcp(servers=[{"server": "db"}]), "spec.servers[0].server"),
        (tcp(servers=[{"server": "db:1", "weight": 0}]), "spec.servers[0].weight"),
        (tcp(servers=[{"server": "db:1", "maxConns": -1}]), "spec.servers[0].maxConns"),
        (tcp(hash="$http_host"), "spec.hash"),
        (tcp(hash="$remote_addr  consistent"), "spec.hash"),
        (tcp(protocol="SCTP"), "spec.protocol"),
        (tcp(proxyTimeout="1h"), "spec.proxyTimeout"),
    ],
)
def test_each_problem_names_its_field(obj: dict[str, Any], field: str) -> None:
    problems = validate(obj, nginx_image="i")
    assert problems, obj
    assert any(p.startswith(f"{field}: ") for p in problems), problems


def test_variables_nginx_knows_are_accepted() -> None:
    obj = rp(
        logFormat="$remote_addr ${request_time} $upstream_http_x_id $cookie_session",
        proxySetHeader={"x-f": "$proxy_add_x_forwarded_for", "x-a": "${arg_q}x"},
        rewrite=[{"regex": "^/(?<rest>.*)$", "replacement": "/$1?u=$uri"}],
    )
    assert validate(obj, nginx_image="i") == []
    assert validate(tcp(hash="$binary_remote_addr$server_port consistent"), nginx_image="i") == []


@pytest.mark.parametrize(
    ("kind", "longest"), [(names.REVERSE_PROXY, 53), (names.TCP_REVERSE_PROXY, 50)]
)
def test_names_fit_the_children(kind: names.Kind, longest: int) -> None:
    obj = rp() if kind is names.REVERSE_PROXY else tcp()
    obj["metadata"]["name"] = "n" * longest
    assert validate(obj, nginx_image="i") == []
    assert len(names.child_name(kind, "n" * longest)) == 63
    for bad in ("n" * (longest + 1), "a.b", "Upper", "-a"):
        obj["metadata"]["name"] = bad
        assert validate(obj, nginx_image="i")[0].startswith("metadata.name: ")
    assert validate(obj, nginx_image="i", check_name=False) == []


def test_an_empty_image_is_invalid_only_without_a_default() -> None:
    assert validate(rp(), nginx_image="i") == []
    assert validate(rp()) == []  # the renderer needs no image
    assert validation.validate(rp(image=""), nginx_image="") == ["spec.image: must not be empty"]


JUNK: list[Any] = [None, 0, "x", [], {}, [1], {"a": None}, True, 1.5, [{}], {"server": 1}]


def test_total_on_any_input() -> None:
    """validate and with_defaults never raise and never mutate, whatever the field types."""
    rng = random.Random(5)
    fields = [
        "proxyPass", "logFormat", "rewrite", "proxyHideHeader", "proxySetHeader", "resolver",
        "replicas", "servicePort", "workerProcesses", "image", "env", "servers", "hash",
        "protocol", "proxyTimeout", "nodeSelector", "podLabels", "resources", "affinity",
    ]  # fmt: skip
    for _ in range(2000):
        obj = rng.choice([rp, tcp])()
        for field in rng.sample(fields, 3):
            obj["spec"][field] = copy.deepcopy(rng.choice(JUNK))
        if rng.random() < 0.1:
            obj["spec"] = rng.choice(JUNK)
        if rng.random() < 0.1:
            obj["metadata"] = rng.choice(JUNK)
        before = copy.deepcopy(obj)
        assert isinstance(validate(obj, nginx_image="i"), list)
        with_defaults(obj, nginx_image="i")
        assert obj == before
    assert validate("nope") == ["object: must be a mapping"]


# --- the CRDs say the same ---------------------------------------------------------


def crd_spec(kind: names.Kind) -> dict[str, Any]:
    crd = yaml.safe_load((REPO / "crds" / f"{kind.singular}.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    spec: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec


def test_crd_defaults_and_patterns_are_the_controllers() -> None:
    http = crd_spec(names.REVERSE_PROXY)["properties"]
    stream = crd_spec(names.TCP_REVERSE_PROXY)["properties"]
    for props in (http, stream):
        assert props["replicas"]["default"] == validation.DEFAULT_REPLICAS
        assert props["servicePort"]["default"] == validation.DEFAULT_SERVICE_PORT
        assert props["workerConnections"]["default"] == validation.DEFAULT_WORKER_CONNECTIONS
        assert props["resolver"]["items"]["pattern"] == validation.RESOLVER_PATTERN
        assert "default" not in props["image"]  # the controller's (the webhook's) default
    for field in validation.HTTP_TIMEOUT_FIELDS:
        assert http[field]["default"] == validation.DEFAULT_PROXY_TIMEOUT_HTTP
        assert http[field]["pattern"] == validation.HTTP_TIMEOUT_PATTERN
    assert http["proxyPass"]["pattern"] == validation.PROXY_PASS_PATTERN
    rewrite = http["rewrite"]["items"]["properties"]
    assert rewrite["flag"]["default"] == validation.DEFAULT_REWRITE_FLAG
    assert rewrite["replacement"]["pattern"] == validation.WORD_PATTERN
    assert http["proxyHideHeader"]["items"]["pattern"] == validation.HEADER_NAME_PATTERN
    assert http["proxySetHeader"]["additionalProperties"]["pattern"] == validation.TEXT_PATTERN
    assert (
        validation.HEADER_NAME_PATTERN
        in http["proxySetHeader"]["x-kubernetes-validations"][0]["rule"]
    )
    assert "default" not in http["logFormat"]  # nil means combined, "" means off
    assert stream["protocol"]["default"] == validation.DEFAULT_PROTOCOL
    assert stream["proxyTimeout"]["default"] == validation.DEFAULT_PROXY_TIMEOUT_TCP
    assert (
        stream["servers"]["items"]["properties"]["server"]["pattern"] == validation.SERVER_PATTERN
    )
    assert stream["hash"]["pattern"] == validation.HASH_PATTERN
