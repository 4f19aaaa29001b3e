"""Fixtures shared by the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from pycontroller import config


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $KUBECONFIG, no in-cluster environment, and ``~/.kube/config`` in
    a fresh home under ``tmp_path`` (returned): configuration sources are
    only what the test writes."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setattr(config, "DEFAULT_KUBECONFIG", str(home / ".kube" / "config"))
    return home
