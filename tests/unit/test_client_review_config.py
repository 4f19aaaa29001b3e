"""load_config against clientcmd's kubeconfig rules: merging several files,
relative paths per file, token files re-read and trimmed (in-cluster too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from pycontroller import config
from pycontroller.config import load_config


def kubeconfig(
    path: Path,
    *,
    server: str,
    name: str,
    user: dict[str, Any] | None = None,
    current: str | None = None,
    user_name: str | None = None,
) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user_name or name}}],
        "users": [{"name": user_name or name, "user": user or {"token": f"tok-{name}"}}],
    }
    if current is not None:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def bearer(client: Any) -> str | None:
    settings = client.configuration.auth_settings()
    value = settings.get("BearerToken", {}).get("value")
    return None if value is None else str(value)


def test_first_current_context_wins_when_merging(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # clientcmd: "the first file to set CurrentContext wins" (the python loader
    # let the last one win).
    a = kubeconfig(tmp_path / "a.yaml", server="http://a:1", name="a", current="a")
    b = kubeconfig(tmp_path / "b.yaml", server="http://b:2", name="b", current="b")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([a, b]))
    client = load_config()
    assert client.configuration.host == "http://a:1"
    assert bearer(client) == "Bearer tok-a"
    # The other file's context is still there to select.
    assert load_config(context="b").configuration.host == "http://b:2"


def test_missing_and_empty_files_in_kubeconfig_list_are_skipped(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    a = kubeconfig(tmp_path / "a.yaml", server="http://a:1", name="a", current="a")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), str(empty), a]))
    assert load_config().configuration.host == "http://a:1"


def test_relative_client_cert_resolved_against_its_own_file(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # File one holds the cluster and the context, file two (another directory)
    # the user, whose client-certificate/-key are relative to file two.
    one = tmp_path / "one" / "config"
    kubeconfig(one, server="https://one:6443", name="one", current="one", user_name="two")
    doc = yaml.safe_load(one.read_text())
    doc["users"] = []
    one.write_text(yaml.safe_dump(doc))
    two_dir = tmp_path / "two"
    two_dir.mkdir()
    (two_dir / "client.crt").write_text("cert")
    (two_dir / "client.key").write_text("key")
    two = kubeconfig(
        two_dir / "config",
        server="https://unused:1",
        name="two",
        user={"client-certificate": "client.crt", "client-key": "client.key"},
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(one), two]))
    cfg = load_config().configuration
    assert cfg.host == "https://one:6443"
    assert cfg.cert_file == str(two_dir / "client.crt")
    assert cfg.key_file == str(two_dir / "client.key")


def test_token_file_is_trimmed_re_read_and_wins_over_token(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "TOKEN_FILE_REFRESH_PERIOD", 0.0)
    token = tmp_path / "kc" / "token"
    token.parent.mkdir()
    token.write_text("first\n")  # `echo first > token`
    path = kubeconfig(
        tmp_path / "kc" / "config",
        server="http://h:1",
        name="c",
        current="c",
        user={"tokenFile": "token", "token": "static"},  # relative to the kubeconfig
    )
    client = load_config(kubeconfig=path)
    assert bearer(client) == "Bearer first"
    token.write_text("second\n")  # rotated
    assert bearer(client) == "Bearer second"
    token.unlink()  # a failed re-read keeps the last good token
    assert bearer(client) == "Bearer second"


def test_token_file_cached_for_the_refresh_period(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "TOKEN_FILE_REFRESH_PERIOD", 3600.0)
    token = tmp_path / "token"
    token.write_text("first")
    path = kubeconfig(
        tmp_path / "config",
        server="http://h:1",
        name="c",
        current="c",
        user={"tokenFile": str(token)},
    )
    client = load_config(kubeconfig=path)
    token.write_text("second")
    assert bearer(client) == "Bearer first"


def test_in_cluster_token_trimmed_and_re_read(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "TOKEN_FILE_REFRESH_PERIOD", 0.0)
    token = tmp_path / "token"
    token.write_text("sa-token\n")
    ca = tmp_path / "ca.crt"
    ca.write_text("not really a cert")
    monkeypatch.setattr(config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    client = load_config()
    assert client.configuration.host == "https://[fd00::1]:443"
    assert bearer(client) == "Bearer sa-token"
    token.write_text("rotated")
    assert bearer(client) == "Bearer rotated"
