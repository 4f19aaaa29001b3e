"""A kopf operator with admission webhooks, for the embedded server's webhook tests.

kopf serves the webhooks (HTTPS, with the certificate the test made) and
manages the ``auto.kopf.dev`` Validating/MutatingWebhookConfigurations itself,
as a kopf user's operator does on a cluster:

    python tests/support/operators/kopf_admission.py KUBECONFIG PORT CERT KEY CA

(In its own directory: run as a script, its directory is the first entry of
``sys.path``, and ``tests/support/http.py`` would shadow the standard library.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import kopf

KUBECONFIG, PORT, CERT, KEY, CA = sys.argv[1:6]


@kopf.on.login()
def login(**kwargs: Any) -> Any:
    return kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1",
        host="127.0.0.1",
        port=int(PORT),
        certfile=CERT,
        pkeyfile=KEY,
        cadata=Path(CA).read_bytes(),
    )
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("configmaps", id="mode-check")
def mode_check(body: kopf.Body, **_: Any) -> None:
    if (body.get("data") or {}).get("mode") == "bad":
        raise kopf.AdmissionError("mode bad is not allowed", code=403)


@kopf.on.mutate("configmaps", id="stamp", operations=["CREATE"])
def stamp(patch: kopf.Patch, **_: Any) -> None:
    patch.metadata.labels["stamped-by"] = "kopf"


if __name__ == "__main__":
    os.environ["KUBECONFIG"] = KUBECONFIG
    kopf.configure(verbose=True)
    kopf.run(standalone=True, clusterwide=True)
