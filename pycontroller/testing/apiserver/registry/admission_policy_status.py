"""kube-controller-manager's ``validatingadmissionpolicy-status`` controller.

On a cluster, a ValidatingAdmissionPolicy's status is written by this
controller (``pkg/controller/validatingadmissionpolicystatus``): whenever a
policy's ``metadata.generation`` is newer than its
``status.observedGeneration``, it type-checks the policy's expressions and
server-side-applies ``status.observedGeneration`` and
``status.typeChecking.expressionWarnings`` (field manager
``validatingadmissionpolicy-status``, forced). Tools that install policies
wait for ``observedGeneration`` before relying on them, so without it they
would wait forever here.

The embedded server has no CEL type checker (``schema/cel.py`` evaluates, it
does not check types against the matched kinds' schemas), so the warnings are
always empty: a policy kube would warn about is reported clean here (listed
in the README's table).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING

from pycontroller.testing.apiserver.registry.admission_policy import GROUP, POLICIES
from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.patch import APPLY
from pycontroller.testing.apiserver.registry.rest import WriteOptions
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.status import StatusError

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = ["CONTROLLER_NAME", "PolicyStatusController"]

logger = logging.getLogger(__name__)

CONTROLLER_NAME = "validatingadmissionpolicy-status"


class PolicyStatusController(BackgroundLoop):
    """Writes ``status.observedGeneration`` (and empty ``typeChecking``) of every
    ValidatingAdmissionPolicy whose generation it has not observed."""

    thread_name = "apiserver-validatingadmissionpolicy-status"

    def __init__(self, rest: REST, *, debounce: float = 0.01) -> None:
        super().__init__(debounce)
        self.rest = rest
        rest.storage.add_listener(self._on_event)

    def _on_event(self, ev: Event) -> None:
        if ev.rkey == POLICIES and ev.type != "DELETED":
            self._wake.set()

    def sync_once(self) -> int:
        """Apply the status of every policy not yet observed; returns how many."""
        rt = self.rest.registry.get(GROUP, "v1", "validatingadmissionpolicies")
        if rt is None:
            return 0
        written = 0
        for policy in self.rest.storage.items(POLICIES):
            meta = policy.get("metadata") or {}
            generation = meta.get("generation") or 0
            observed = (policy.get("status") or {}).get("observedGeneration") or 0
            if generation <= observed:
                continue
            body = {
                "apiVersion": f"{GROUP}/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": meta.get("name")},
                "status": {"observedGeneration": generation, "typeChecking": {}},
            }
            opts = WriteOptions(field_manager=CONTROLLER_NAME, force=True)
            try:
                self.rest.patch(
                    rt,
                    None,
                    str(meta.get("name")),
                    APPLY,
                    json.dumps(body).encode(),
                    opts,
                    subresource="status",
                )
            except StatusError as err:  # gone or changed meanwhile: the next event retries
                logger.debug("status of ValidatingAdmissionPolicy %s: %s", meta.get("name"), err)
                continue
            written += 1
        return written

    def run_pass(self, stop: threading.Event) -> None:
        # Its own status writes wake it again; that pass finds every policy
        # observed and writes nothing.
        self.sync_once()
