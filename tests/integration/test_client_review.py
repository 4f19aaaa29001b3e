"""ResourceClient and load_config over the embedded API server: Warning
headers are logged (client-go's WarningLogger), a kubeconfig tokenFile
written with a trailing newline authenticates."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from pycontroller.client import ResourceClient
from pycontroller.config import load_config
from pycontroller.testing import APIServer


def test_server_warnings_are_logged(apiserver: APIServer, caplog: pytest.LogCaptureFixture) -> None:
    client = ResourceClient(apiserver.api_client(), "", "v1", "configmaps")
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "w", "namespace": "default"},
        "data": {"k": "v"},
        "bogus": 1,  # unknown field: fieldValidation=Warn answers with a Warning header
    }
    with caplog.at_level(logging.WARNING, logger="pycontroller.client"):
        created = client.create(obj)
    assert "bogus" not in created
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "pycontroller.client" and r.getMessage().startswith("Warning: ")
    ]
    assert len(warnings) == 1 and "bogus" in warnings[0], warnings


def test_kubeconfig_token_file_with_newline_authenticates(
    apiserver: APIServer, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text(apiserver.token_for("alice") + "\n")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": apiserver.url}}],
        "users": [{"name": "u", "user": {"tokenFile": "token"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    api = load_config(kubeconfig=str(path))
    try:
        client = ResourceClient(api, "", "v1", "configmaps")
        assert client.list("default")["items"] == []
    finally:
        api.close()
