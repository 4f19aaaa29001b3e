"""load_config precedence: explicit path, $KUBECONFIG, in-cluster, ~/.kube/config; --master."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pycontroller import config
from pycontroller.config import ConfigError, load_config


def write_kubeconfig(path: Path, server: str, context: str = "ctx", token: str = "tok") -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": "c", "user": "u"}},
            {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "x"}},
        ],
        "current-context": context,
    }
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_explicit_path_wins_over_env(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = write_kubeconfig(tmp_path / "a.yaml", "http://explicit:1")
    env = write_kubeconfig(tmp_path / "b.yaml", "http://env:2")
    monkeypatch.setenv("KUBECONFIG", env)
    client = load_config(kubeconfig=explicit)
    assert client.configuration.host == "http://explicit:1"
    assert "tok" in str(client.configuration.api_key)


def test_env_kubeconfig_then_master_override(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", write_kubeconfig(tmp_path / "b.yaml", "http://env:2"))
    assert load_config().configuration.host == "http://env:2"
    assert load_config(master="http://other:3/").configuration.host == "http://other:3"


def test_context_selection_and_unknown_context(clean_env: Path, tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "a.yaml", "http://h:1")
    assert load_config(kubeconfig=path, context="other").configuration.host == "http://h:1"
    with pytest.raises(ConfigError, match="a.yaml"):
        load_config(kubeconfig=path, context="missing")


def test_explicit_missing_file_is_an_error_not_a_fallback(clean_env: Path, tmp_path: Path) -> None:
    (clean_env / ".kube").mkdir()
    write_kubeconfig(clean_env / ".kube" / "config", "http://home:1")
    with pytest.raises(ConfigError, match="nope.yaml"):
        load_config(kubeconfig=str(tmp_path / "nope.yaml"))


def test_in_cluster_before_home(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean_env / ".kube").mkdir()
    write_kubeconfig(clean_env / ".kube" / "config", "http://home:1")
    token = tmp_path / "token"
    token.write_text("sa-token")
    ca = tmp_path / "ca.crt"
    ca.write_text("not really a cert")
    monkeypatch.setattr(config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    client = load_config()
    assert client.configuration.host == "https://10.0.0.1:443"
    assert "sa-token" in str(client.configuration.api_key)


def test_home_config_last(clean_env: Path) -> None:
    (clean_env / ".kube").mkdir()
    write_kubeconfig(clean_env / ".kube" / "config", "http://home:1")
    assert load_config().configuration.host == "http://home:1"


def test_nothing_found_names_every_source(clean_env: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert "$KUBECONFIG" in message and "in-cluster" in message and ".kube" in message
    assert len(info.value.attempts) == 3


def test_master_alone_is_enough(clean_env: Path) -> None:
    assert load_config(master="http://127.0.0.1:8080").configuration.host == "http://127.0.0.1:8080"
