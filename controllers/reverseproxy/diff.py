"""Merge the fields the controller owns into a live child (pure): the mutate step.

``overlay(desired, live)`` returns ``live`` with every field of ``desired``
written over it and nothing else touched, so what the API server and other
actors set stays: clusterIP, defaulted fields (``imagePullPolicy``,
``terminationMessagePath``, ``httpGet.scheme``, ``strategy``...), the
``kubectl.kubernetes.io/restartedAt`` annotation of ``kubectl rollout
restart``, foreign labels on the objects themselves. The original replaced
whole objects on every pass, wiping those (prior art 6.2).

"Did anything drift?" is then ``overlay(desired, live) != live``: zero writes
at steady state, a write for any drift of an owned field.

Owned maps and fields that must match exactly (``EXACT``): a key someone
added there is drift, and a field absent from ``desired`` is removed from
``live`` (e.g. ``spec.nodeSelector`` after the user dropped it). Everywhere
else a dict in ``desired`` is a subset of ``live``'s. Lists of equal length
merge item by item (so server defaults inside a container or port survive);
lists of another length are replaced (a sidecar someone added is removed).

Resource quantities compare by value (``"0.5"`` equals ``"500m"``, ``"1Gi"``
equals ``"1024Mi"``), because the API server canonicalises them: comparing
text would write on every reconcile, each write triggering the next.

Neither function mutates its arguments.
"""

from __future__ import annotations

import copy
import re
from decimal import Decimal, InvalidOperation
from typing import Any

Obj = dict[str, Any]
Path = tuple[str, ...]

_CONTAINER = ("spec", "template", "spec", "containers", "*")

#: Per kind, the paths whose value must equal ``desired``'s exactly ("*": any list index).
EXACT: dict[str, tuple[Path, ...]] = {
    "ConfigMap": (("data",),),
    "Service": (("spec", "selector"),),
    "Deployment": (
        ("spec", "selector", "matchLabels"),
        ("spec", "template", "metadata", "labels"),
        ("spec", "template", "spec", "nodeSelector"),
        ("spec", "template", "spec", "affinity"),
        (*_CONTAINER, "env"),
        (*_CONTAINER, "resources"),
    ),
}

_QUANTITY_PATHS = (
    (*_CONTAINER, "resources", "limits", "*"),
    (*_CONTAINER, "resources", "requests", "*"),
)

_SUFFIXES = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(|[numkMGTPE]|[KMGTPE]i)$")


def quantity(value: Any) -> Decimal | None:
    """The value of a Kubernetes quantity (``"500m"``, ``"1Gi"``, ``2``), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _QUANTITY.fullmatch(str(value))
    if not match:
        return None
    try:
        return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation:
        return None


def _matches(path: Path, pattern: Path) -> bool:
    return len(path) == len(pattern) and all(
        p == q or q == "*" for p, q in zip(path, pattern, strict=True)
    )


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == [] or value == ""


def _merge(want: Any, have: Any, path: Path, exact: tuple[Path, ...]) -> Any:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return copy.deepcopy(want)
        is_exact = any(_matches(path, p) for p in exact)
        out: Obj = {} if is_exact else dict(have)
        for key, value in want.items():
            if _empty(value) and _empty(have.get(key)):
                if key in have:
                    out[key] = have[key]
                continue
            out[key] = _merge(value, have.get(key), (*path, key), exact)
        return out
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return copy.deepcopy(want)
        return [_merge(w, h, (*path, "*"), exact) for w, h in zip(want, have, strict=True)]
    if any(_matches(path, p) for p in _QUANTITY_PATHS):
        a, b = quantity(want), quantity(have)
        if a is not None and a == b:
            return have
    return copy.deepcopy(want)


def _remove_absent(want: Any, out: Any, pattern: Path) -> None:
    """Delete ``pattern`` from ``out`` where ``want`` has no such field."""
    head, rest = pattern[0], pattern[1:]
    if head == "*":
        if isinstance(want, list) and isinstance(out, list) and len(want) == len(out):
            for w, o in zip(want, out, strict=True):
                _remove_absent(w, o, rest)
        return
    if not isinstance(out, dict) or head not in out:
        return
    w = want.get(head) if isinstance(want, dict) else None
    if not rest:
        if w is None:
            del out[head]
        return
    _remove_absent(w, out[head], rest)


def overlay(desired: Obj, live: Obj) -> Obj:
    """``live`` with the owned fields of ``desired`` written over it (a new object).

    Only ``metadata.labels``, ``metadata.annotations`` (key by key) and
    ``metadata.ownerReferences`` (our controller reference; others kept) of
    ``desired``'s metadata are owned; identity and status are never touched.
    """
    kind = str(desired.get("kind") or live.get("kind") or "")
    exact = EXACT.get(kind, ())
    out: Obj = copy.deepcopy(live)
    for key, value in desired.items():
        if key in ("apiVersion", "kind", "metadata", "status"):
            continue
        out[key] = _merge(value, live.get(key), (key,), exact)
    for pattern in exact:
        _remove_absent(desired, out, pattern)
    want_meta = desired.get("metadata") or {}
    meta = out.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        if want_meta.get(key):
            meta[key] = {**(meta.get(key) or {}), **want_meta[key]}
    refs = want_meta.get("ownerReferences") or []
    if refs:
        uids = {r.get("uid") for r in refs}
        kept = [
            r
            for r in meta.get("ownerReferences") or []
            if r.get("uid") not in uids and not r.get("controller")
        ]
        mine = {r.get("uid"): r for r in meta.get("ownerReferences") or []}
        merged = [mine[r["uid"]] if mine.get(r["uid"]) == r else copy.deepcopy(r) for r in refs]
        if (meta.get("ownerReferences") or []) != [*kept, *merged]:
            meta["ownerReferences"] = [*kept, *merged]
    return out


def drifted(desired: Obj, live: Obj) -> bool:
    """True iff ``live`` differs from ``desired`` in a field the controller owns."""
    return overlay(desired, live) != live
