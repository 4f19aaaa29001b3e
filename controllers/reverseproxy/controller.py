"""Wiring of both controllers on a ``pycontroller.Manager``: one builder call per kind.

- ``for_`` the kind: creates, deletes, resyncs, a new uid, and updates of
  ``generation``, ``deletionTimestamp`` or ``finalizers``; not status writes.
- ``owns`` ConfigMaps, Deployments, Services: *every* event of a child whose
  controller ownerReference is an object of the kind enqueues it, so any drift
  heals (the original watched child deletions only). Both kinds own the same
  child resources; the builder tells them apart by the owner's kind.
"""

from __future__ import annotations

from typing import Any

from controllers.reverseproxy import names
from controllers.reverseproxy.reconcile import Reconciler
from pycontroller import Controller, Manager
from pycontroller.handlers import deletion_timestamp_changed as deletion_changed
from pycontroller.handlers import generation_changed, resource_version_changed
from pycontroller.predicates import Funcs
from pycontroller.record import Recorder

CHILDREN = {
    "ConfigMap": ("", "v1", "configmaps"),
    "Deployment": ("apps", "v1", "deployments"),
    "Service": ("", "v1", "services"),
}


def relevant_update(old: Any, new: Any) -> bool:
    """A spec, deletion or finalizer change, or a periodic resync."""
    fin = [(o.get("metadata") or {}).get("finalizers") for o in (old, new)]
    resync = not resource_version_changed(old, new)
    return resync or generation_changed(old, new) or deletion_changed(old, new) or fin[0] != fin[1]


def setup(
    mgr: Manager,
    *,
    nginx_image: str | None = None,
    workers: int = 1,
    recorder: Recorder | None = None,
) -> list[Controller]:
    """Add the ReverseProxy and TCPReverseProxy controllers to ``mgr``; return them."""
    rec = recorder if recorder is not None else mgr.recorder(names.COMPONENT)
    lister, client = mgr.informers.lister, mgr.client
    children = {k: (lister(*gvr), client(*gvr)) for k, gvr in CHILDREN.items()}
    out = []
    for kind in names.KINDS:
        gvr = (names.GROUP, names.VERSION, kind.plural)
        reconciler = Reconciler(
            kind, lister=lister(*gvr), client=client(*gvr), children=children,
            recorder=rec, nginx_image=nginx_image,
        )  # fmt: skip
        predicates = [Funcs(update=relevant_update)]
        builder = mgr.controller(kind.controller).for_(*gvr, predicates=predicates, kind=kind.kind)
        for child in CHILDREN.values():
            builder.owns(*child)
        out.append(builder.with_options(workers=workers).complete(reconciler.reconcile))
    return out
