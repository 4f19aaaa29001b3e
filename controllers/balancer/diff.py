"""Compare a desired child with its live object, looking only at what we own.

The controller sets a small part of every child: some labels and annotations,
the controller ownerReference, a few spec fields, ConfigMap data. The API
server and other actors fill in the rest (clusterIP, sessionAffinity, the
default targetPort and protocol, strategy, revisionHistoryLimit,
terminationMessagePath, dnsPolicy, imagePullPolicy, ...). Invariants:

- ``needs_update(desired, live)`` is False whenever every field of
  ``desired`` (after ``normalize``) is present in ``live`` with the same value:
  server-defaulted or foreign fields never cause a write;
- fully owned maps (``EXACT_PATHS``: a Service's ``spec.selector``, a
  ConfigMap's ``data``) must match exactly: a key someone else added there is
  drift, because it changes what the object does;
- ``overlay(desired, live)`` returns a new object equal to ``live`` with our
  fields written over it (resourceVersion kept for optimistic concurrency), and
  ``needs_update(desired, overlay(desired, live))`` is False.

Inputs are never mutated (live objects usually come from an informer cache).

This is what ``pycontroller.create_or_update`` generalises (a mutate function
that sets only owned fields, no write when it changes nothing). The reconciler
keeps this lister-based form because ``create_or_update`` GETs every child
from the server first, a request per child per sync where this diff reads the
informer cache (see ``reconcile.Reconciler._apply``). Owner references are
compared here, and written by ``resources`` through
``pycontroller.meta.set_controller_reference``; controller checks use
``pycontroller.meta.is_controlled_by``.
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]
Path = tuple[str, ...]

# Maps whose whole content is ours, per kind: compared and written as a whole.
EXACT_PATHS: dict[str, frozenset[Path]] = {
    "Service": frozenset({("spec", "selector")}),
    "ConfigMap": frozenset({("data",)}),
    "Deployment": frozenset({("spec", "selector", "matchLabels")}),
}

# Top-level keys that identify an object rather than describe it.
_IDENTITY_KEYS = frozenset({"apiVersion", "kind", "status"})
# metadata keys we compare (name/namespace identify; ownerReferences are special).
_OWNED_METADATA_KEYS = ("labels", "annotations")


def normalize(desired: Obj) -> Obj:
    """Return ``desired`` with the server's defaults for fields we set filled in.

    A Service port without ``protocol`` is defaulted to TCP and one without
    ``targetPort`` to its ``port``; writing those explicitly lets us notice
    when a live port differs from the default (e.g. a stale targetPort left
    over after the spec dropped it).
    """
    out = copy.deepcopy(desired)
    if out.get("kind") == "Service":
        for port in (out.get("spec") or {}).get("ports") or []:
            port.setdefault("protocol", "TCP")
            if port.get("targetPort") in (None, ""):
                port["targetPort"] = port.get("port")
    return out


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def _subset(desired: Any, live: Any, path: Path, exact: frozenset[Path]) -> bool:
    """True iff every field of ``desired`` is in ``live`` with the same value."""
    if path in exact:
        return (desired or None) == (live or None)
    if isinstance(desired, dict):
        if _empty(desired) and _empty(live):
            return True
        if not isinstance(live, dict):
            return False
        return all(_subset(v, live.get(k), (*path, k), exact) for k, v in desired.items())
    if isinstance(desired, list):
        if _empty(desired) and _empty(live):
            return True
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        return all(_subset(d, x, path, exact) for d, x in zip(desired, live, strict=True))
    if desired is None:
        return True
    return bool(desired == live)


def _merge(desired: Any, live: Any, path: Path, exact: frozenset[Path]) -> Any:
    if path in exact:
        return copy.deepcopy(desired)
    if isinstance(desired, dict) and isinstance(live, dict):
        out = dict(live)
        for k, v in desired.items():
            out[k] = _merge(v, live.get(k), (*path, k), exact)
        return out
    if isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        return [_merge(d, x, path, exact) for d, x in zip(desired, live, strict=True)]
    return copy.deepcopy(desired)


def _owned_body(obj: Obj) -> Obj:
    """The parts of ``obj`` we compare, minus ownerReferences."""
    body = {k: v for k, v in obj.items() if k not in _IDENTITY_KEYS and k != "metadata"}
    meta = obj.get("metadata") or {}
    body["metadata"] = {k: meta[k] for k in _OWNED_METADATA_KEYS if k in meta}
    return body


def _owner_refs_match(desired: Obj, live: Obj) -> bool:
    live_refs = {r.get("uid"): r for r in (live.get("metadata") or {}).get("ownerReferences") or []}
    for ref in (desired.get("metadata") or {}).get("ownerReferences") or []:
        got = live_refs.get(ref.get("uid"))
        if got is None or not _subset(ref, got, (), frozenset()):
            return False
    return True


def _merged_owner_refs(desired: Obj, live: Obj) -> list[Obj]:
    wanted = list((desired.get("metadata") or {}).get("ownerReferences") or [])
    wanted_uids = {r.get("uid") for r in wanted}
    keep = [
        r
        for r in (live.get("metadata") or {}).get("ownerReferences") or []
        if r.get("uid") not in wanted_uids
    ]
    return keep + copy.deepcopy(wanted)


def needs_update(desired: Obj, live: Obj) -> bool:
    """True iff a field we set in ``desired`` differs in ``live``."""
    return bool(differing_fields(desired, live))


def differing_fields(desired: Obj, live: Obj) -> list[str]:
    """Top-level owned fields that differ (for log lines): e.g. ``["spec", "metadata"]``."""
    want = normalize(desired)
    exact = EXACT_PATHS.get(str(want.get("kind")), frozenset())
    mine, theirs = _owned_body(want), _owned_body(live)
    out = [k for k in mine if not _subset(mine[k], theirs.get(k), (k,), exact)]
    if not _owner_refs_match(want, live):
        out.append("metadata.ownerReferences")
    return out


def overlay(desired: Obj, live: Obj) -> Obj:
    """``live`` with our fields from ``desired`` written over it (a new object)."""
    want = normalize(desired)
    exact = EXACT_PATHS.get(str(want.get("kind")), frozenset())
    out: Obj = copy.deepcopy(live)
    body = _owned_body(want)
    meta_want = body.pop("metadata")
    for key, value in body.items():
        out[key] = _merge(value, live.get(key), (key,), exact)
    meta: Obj = out.setdefault("metadata", {})
    for key, value in meta_want.items():
        meta[key] = _merge(value, meta.get(key), ("metadata", key), exact)
    meta["ownerReferences"] = _merged_owner_refs(want, live)
    return out
