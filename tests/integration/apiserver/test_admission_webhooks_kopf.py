"""A real kopf operator's admission webhooks against the embedded API server:
kopf creates and patches its own ``auto.kopf.dev`` webhook configurations and
serves the AdmissionReviews this server sends (a client nobody on this team
wrote, on both sides of the webhook call)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from support.http import request

from pycontroller.testing import APIServer, wait_for

OPERATOR = Path(__file__).parents[2] / "support" / "operators" / "kopf_admission.py"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ARV1 = "/apis/admissionregistration.k8s.io/v1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def operator(tmp_path: Path) -> Iterator[tuple[APIServer, Path, subprocess.Popen[bytes]]]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file, ca_file = tmp_path / "tls.crt", tmp_path / "tls.key", tmp_path / "ca.crt"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    log = tmp_path / "kopf.log"
    with APIServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    str(OPERATOR),
                    kubeconfig,
                    str(_free_port()),
                    str(cert_file),
                    str(key_file),
                    str(ca_file),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            try:
                yield server, log, proc
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _configured(
    server: APIServer, kind: str, proc: subprocess.Popen[bytes]
) -> dict[str, Any] | None:
    assert proc.poll() is None, "the kopf operator exited"
    code, cfg = request(server, "GET", f"{ARV1}/{kind}/auto.kopf.dev")
    if code != 200 or not cfg.get("webhooks"):
        return None
    return dict(cfg)


def test_kopf_validates_and_mutates_through_the_embedded_server(
    operator: tuple[APIServer, Path, subprocess.Popen[bytes]],
) -> None:
    server, log, proc = operator
    try:
        validating = wait_for(
            lambda: _configured(server, "validatingwebhookconfigurations", proc),
            timeout=60,
            what="kopf's ValidatingWebhookConfiguration",
        )
        wait_for(
            lambda: _configured(server, "mutatingwebhookconfigurations", proc),
            timeout=60,
            what="kopf's MutatingWebhookConfiguration",
        )
    except Exception:
        print(log.read_text(errors="replace")[-5000:])
        raise
    hook = validating["webhooks"][0]
    assert hook["name"] == "mode-check.auto.kopf.dev"
    assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:")

    def created(body: dict[str, Any]) -> tuple[int, Any] | None:
        # kopf's webhook server may still be starting: a call error (500) is retried.
        code, out = request(server, "POST", CONFIGMAPS, body)
        return None if code == 500 else (code, out)

    bad = {"metadata": {"name": "bad"}, "data": {"mode": "bad"}}
    code, out = wait_for(lambda: created(bad), timeout=30, what="kopf's webhook answering")
    assert code == 403, out
    assert out["message"] == (
        'admission webhook "mode-check.auto.kopf.dev" denied the request: '
        "mode bad is not allowed"
    )
    assert request(server, "GET", f"{CONFIGMAPS}/bad")[0] == 404
    code, out = request(server, "POST", CONFIGMAPS, {"metadata": {"name": "good"}, "data": {}})
    assert code == 201, out
    assert out["metadata"]["labels"] == {"stamped-by": "kopf"}
