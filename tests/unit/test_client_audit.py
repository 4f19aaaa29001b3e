"""Audit of ResourceClient, load_config and the error classes against client-go:
apimachinery's error classification (reason before code), rest.DefaultServerURL
(scheme-less servers), clientcmd overrides (--master keeps the cluster's TLS),
controller-runtime's loadConfig ($KUBECONFIG errors are final), path prefixes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from support.fakes import SleepRecorder
from support.stub_http import Stub, stub_server

from pycontroller import config
from pycontroller.client import ResourceClient, TokenBucketRateLimiter, set_rate_limiter
from pycontroller.config import ConfigError, load_config
from pycontroller.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
    TooManyRequestsError,
    api_error_from_status,
)

# --------------------------------------------------------------------------- stub server


@pytest.fixture
def stub() -> Iterator[tuple[Stub, str]]:
    with stub_server() as (state, url):
        yield state, url


def api_client(host: str) -> k8s.ApiClient:
    cfg = k8s.Configuration()
    cfg.host = host
    api = k8s.ApiClient(configuration=cfg)
    set_rate_limiter(api, TokenBucketRateLimiter(0, 1))
    return api


def status_body(code: int, reason: str, message: str = "m") -> bytes:
    import json

    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "reason": reason,
            "message": message,
            "code": code,
        }
    ).encode()


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("http_status", "body", "cls"),
    [
        # A known reason decides, whatever the code (apimachinery IsNotFound & co.).
        (500, {"reason": "NotFound", "code": 404}, NotFoundError),
        (500, {"reason": "NotFound"}, NotFoundError),
        (400, {"reason": "AlreadyExists", "code": 409}, AlreadyExistsError),
        (500, {"reason": "Conflict"}, ConflictError),
        (500, {"reason": "Expired", "code": 500}, GoneError),
        (400, {"reason": "Invalid", "code": 400}, InvalidError),
        (503, {"reason": "TooManyRequests", "code": 503}, TooManyRequestsError),
        # A known reason of another kind is not re-classified by the code.
        (404, {"reason": "Forbidden", "code": 404}, ApiError),
        (409, {"reason": "Invalid", "code": 409}, InvalidError),
        (410, {"reason": "InternalError", "code": 410}, ApiError),
        # No (or an unknown) reason: the Status code, else the HTTP status.
        (500, {"reason": "", "code": 404}, NotFoundError),
        (500, {"reason": "SomethingNew", "code": 409}, ConflictError),
        (404, {"reason": "SomethingNew"}, NotFoundError),
        (409, {"reason": "", "code": 0}, ConflictError),
    ],
)
def test_error_class_follows_status_reason_then_code(
    http_status: int, body: dict[str, Any], cls: type[ApiError]
) -> None:
    err = api_error_from_status(http_status, {"kind": "Status", "status": "Failure", **body})
    assert type(err) is cls
    assert err.status == http_status  # the wire status is kept


def test_status_reason_decides_over_http(stub: tuple[Stub, str]) -> None:
    state, url = stub
    # An aggregated API server / proxy answering 500 with a NotFound Status.
    state.responses = [(500, {"Content-Type": "application/json"}, status_body(404, "NotFound"))]
    client = ResourceClient(api_client(url), "", "v1", "pods", clock=SleepRecorder())
    with pytest.raises(NotFoundError) as info:
        client.get("p", "ns")
    assert info.value.reason == "NotFound" and info.value.message == "m"
    # And a 404 whose Status says Forbidden is not "not found".
    state.responses = [(404, {"Content-Type": "application/json"}, status_body(404, "Forbidden"))]
    with pytest.raises(ApiError) as info2:
        client.get("p", "ns")
    assert not isinstance(info2.value, NotFoundError) and info2.value.reason == "Forbidden"


# --------------------------------------------------------------------------- request paths


def test_server_path_prefix_is_kept(stub: tuple[Stub, str]) -> None:
    """rest.DefaultServerURL: a server path (a proxy such as Rancher's
    /k8s/clusters/c-1) prefixes every request."""
    state, url = stub
    client = ResourceClient(api_client(url + "/k8s/clusters/c-1/"), "apps", "v1", "deployments")
    client.get("d", "ns")
    client.list()
    assert state.requests == [
        "GET /k8s/clusters/c-1/apis/apps/v1/namespaces/ns/deployments/d",
        "GET /k8s/clusters/c-1/apis/apps/v1/deployments",
    ]


def test_post_with_retry_after_is_retried_http_date_is_not(stub: tuple[Stub, str]) -> None:
    """checkWait: any verb whose 429/5xx carries an integer Retry-After is retried
    (the body is replayable); an HTTP-date Retry-After fails strconv.Atoi."""
    state, url = stub
    clock = SleepRecorder()
    client = ResourceClient(api_client(url), "", "v1", "configmaps", clock=clock)
    state.responses = [
        (503, {"Retry-After": "2"}, status_body(503, "ServiceUnavailable")),
        (201, {}, b'{"metadata":{"name":"c"}}'),
    ]
    assert client.create({"metadata": {"name": "c"}}, "ns")["metadata"]["name"] == "c"
    assert clock.sleeps == [2.0]
    assert [r.split()[0] for r in state.requests] == ["POST", "POST"]
    state.responses = [
        (429, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, status_body(429, "TooManyRequests"))
    ]
    with pytest.raises(TooManyRequestsError) as info:
        client.get("c", "ns")
    assert info.value.retry_after is None
    assert clock.sleeps == [2.0]


# --------------------------------------------------------------------------- load_config


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    cluster: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    context_cluster: str = "c",
) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "contexts": [{"name": "ctx", "context": {"cluster": context_cluster, "user": "u"}}],
        "users": [{"name": "u", "user": user or {"token": "tok"}}],
        "current-context": "ctx",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_scheme_less_server_defaults_like_default_server_url(
    clean_env: Path, tmp_path: Path
) -> None:
    """rest.DefaultServerURL: "host:port" is https:// when TLS is configured
    (a CA, a client certificate, insecure-skip-tls-verify), else http://."""
    ca = tmp_path / "ca.crt"
    ca.write_text("not really a cert")
    with_ca = write_kubeconfig(
        tmp_path / "a.yaml", server="10.0.0.1:6443", cluster={"certificate-authority": str(ca)}
    )
    cfg = load_config(kubeconfig=with_ca).configuration
    assert cfg.host == "https://10.0.0.1:6443"
    assert cfg.ssl_ca_cert == str(ca)  # the python loader loads a CA only for https
    insecure = write_kubeconfig(
        tmp_path / "b.yaml", server="[::1]:6443", cluster={"insecure-skip-tls-verify": True}
    )
    assert load_config(kubeconfig=insecure).configuration.host == "https://[::1]:6443"
    plain = write_kubeconfig(tmp_path / "c.yaml", server="localhost:8080")
    assert load_config(kubeconfig=plain).configuration.host == "http://localhost:8080"
    # --master alone (BuildConfigFromFlags(master, "")): no TLS, so http.
    assert load_config(master="127.0.0.1:8080").configuration.host == "http://127.0.0.1:8080"


def test_master_keeps_the_kubeconfig_clusters_tls(clean_env: Path, tmp_path: Path) -> None:
    """clientcmd ConfigOverrides.ClusterInfo.Server replaces only the server: the
    cluster's CA still applies (also when the file's own server was http), and a
    scheme-less --master is https because of it."""
    ca = tmp_path / "ca.crt"
    ca.write_text("not really a cert")
    path = write_kubeconfig(
        tmp_path / "a.yaml", server="http://old:1", cluster={"certificate-authority": str(ca)}
    )
    cfg = load_config(kubeconfig=path, master="https://new:6443/k8s/clusters/c-1/").configuration
    assert cfg.host == "https://new:6443/k8s/clusters/c-1"
    assert cfg.ssl_ca_cert == str(ca)
    cfg = load_config(kubeconfig=path, master="new:6443").configuration
    assert cfg.host == "https://new:6443"


def test_broken_kubeconfig_env_is_final_not_a_fallback(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """controller-runtime's loadConfig: with $KUBECONFIG set, clientcmd's error is
    returned; neither in-cluster nor ~/.kube/config (another cluster) is used."""
    write_kubeconfig(clean_env / ".kube" / "config", server="http://home:1")
    broken = write_kubeconfig(tmp_path / "a.yaml", server="http://a:1", context_cluster="nope")
    monkeypatch.setenv("KUBECONFIG", broken)
    with pytest.raises(ConfigError, match="nope") as info:
        load_config()
    assert len(info.value.attempts) == 1
    with pytest.raises(ConfigError):
        load_config(context="missing")
    # Only when none of its files exists are the next sources tried.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing.yaml"))
    assert load_config().configuration.host == "http://home:1"


def test_in_cluster_without_ca_file_uses_system_roots(
    clean_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """rest.InClusterConfig: a ca.crt that cannot be loaded is logged and left
    out (the system roots verify the server); only host, port and token are required."""
    write_kubeconfig(clean_env / ".kube" / "config", server="http://home:1")
    token = tmp_path / "token"
    token.write_text("sa-token\n")
    monkeypatch.setattr(config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(config, "SERVICE_CERT_FILENAME", str(tmp_path / "missing-ca.crt"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with caplog.at_level("ERROR", logger="pycontroller.config"):
        cfg = load_config().configuration
    assert cfg.host == "https://10.0.0.1:443"  # not ~/.kube/config
    assert cfg.ssl_ca_cert is None and cfg.verify_ssl
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer sa-token"
    assert any("missing-ca.crt" in r.getMessage() for r in caplog.records)
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(config, "SERVICE_CERT_FILENAME", str(ca))
    assert load_config().configuration.ssl_ca_cert == str(ca)
    # Host without port: not in-cluster (ErrNotInCluster), the next source is used.
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT")
    assert load_config().configuration.host == "http://home:1"


def test_kubeconfig_impersonation_is_sent(
    clean_env: Path, tmp_path: Path, stub: tuple[Stub, str]
) -> None:
    """clientcmd: a user's as/as-uid/as-groups/as-user-extra become
    rest.Config.Impersonate; the transport sends Impersonate-* headers (one per
    group and extra value, extra keys %-escaped). The python loader drops them,
    so requests ran as the real user."""
    state, url = stub
    path = write_kubeconfig(
        tmp_path / "a.yaml",
        server=url,
        user={
            "token": "tok",
            "as": "system:serviceaccount:ns:sa",
            "as-uid": "1234",
            "as-groups": ["g1", "system:authenticated"],
            "as-user-extra": {"scopes/x": ["a", "b"]},
        },
    )
    api = load_config(kubeconfig=path, qps=0)
    ResourceClient(api, "", "v1", "pods").get("p", "ns")
    headers = state.headers[-1]
    assert headers["Authorization"] == "Bearer tok"
    assert headers.get_all("Impersonate-User") == ["system:serviceaccount:ns:sa"]
    assert headers.get_all("Impersonate-Uid") == ["1234"]
    assert headers.get_all("Impersonate-Group") == ["g1", "system:authenticated"]
    assert headers.get_all("Impersonate-Extra-scopes%2Fx") == ["a", "b"]
    # Without "as" nothing is impersonated (as-groups alone is ignored, as in clientcmd).
    plain = write_kubeconfig(tmp_path / "b.yaml", server=url, user={"as-groups": ["g"]})
    ResourceClient(load_config(kubeconfig=plain, qps=0), "", "v1", "pods").get("p", "ns")
    assert not [k for k in state.headers[-1] if k.lower().startswith("impersonate")]
