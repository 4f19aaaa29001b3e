"""Object-metadata helpers every controller needs, with apimachinery's semantics.

- Owner references (controller-runtime ``controllerutil`` and apimachinery
  ``metav1``): ``set_controller_reference(owner, obj)``,
  ``set_owner_reference(owner, obj)``, ``remove_owner_reference(owner, obj)``,
  ``remove_controller_reference(owner, obj)``,
  ``has_owner_reference(owner_references, owner)``,
  ``has_controller_reference(obj)``, ``controller_of(obj)``,
  ``is_controlled_by(obj, owner)``.
- Status conditions (apimachinery ``meta``): ``set_status_condition``,
  ``find_status_condition``, ``remove_status_condition``,
  ``is_status_condition_true`` / ``is_status_condition_false``.
- Finalizers (``controllerutil``): ``add_finalizer``, ``remove_finalizer``,
  ``contains_finalizer``.

Objects are plain dicts as the API server sends them. The setters mutate
their argument in place and report whether anything changed, so that a
caller writes only when something did. Never call a setter on an object
handed out by a lister or informer: those are shared with the cache (take a
``copy.deepcopy`` first).
"""

from __future__ import annotations

from typing import Any

from ._objmeta import object_meta as _meta
from ._time import format_rfc3339
from .clock import REAL_CLOCK, Clock

__all__ = [
    "AlreadyOwnedError",
    "add_finalizer",
    "contains_finalizer",
    "controller_of",
    "find_status_condition",
    "has_controller_reference",
    "has_owner_reference",
    "is_controlled_by",
    "is_status_condition_false",
    "is_status_condition_true",
    "join_problems",
    "remove_controller_reference",
    "remove_finalizer",
    "remove_owner_reference",
    "remove_status_condition",
    "set_controller_reference",
    "set_owner_reference",
    "set_status_condition",
    "shorten",
]

Obj = dict[str, Any]


def _writable_meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    return meta


# --------------------------------------------------------------------------- owner references


class AlreadyOwnedError(ValueError):
    """controller-runtime's ``AlreadyOwnedError``: another controller owns the object.

    ``obj`` is the object that was to be controlled, ``owner`` its existing
    controller ownerReference.
    """

    def __init__(self, obj: Obj, owner: Obj) -> None:
        meta = _meta(obj)
        super().__init__(
            f"Object {meta.get('namespace') or ''}/{meta.get('name') or ''} is already owned "
            f"by another {owner.get('kind')} controller {owner.get('name')}"
        )
        self.obj = obj
        self.owner = owner


def _api_group(api_version: Any) -> str | None:
    """The group of an ``apiVersion`` (``""`` for core); None if it does not parse.

    apimachinery's ``schema.ParseGroupVersion``: ``""`` and ``"v1"`` are the
    core group, ``"g/v"`` is group ``g``, anything with more slashes is invalid.
    """
    text = str(api_version or "")
    if text.count("/") > 1:
        return None
    return text.rpartition("/")[0]


def _refer_same_object(a: Obj, b: Obj) -> bool:
    """controller-runtime's ``referSameObject``: same group, kind and name (not uid or version)."""
    a_group, b_group = _api_group(a.get("apiVersion")), _api_group(b.get("apiVersion"))
    if a_group is None or b_group is None:
        return False
    return a_group == b_group and a.get("kind") == b.get("kind") and a.get("name") == b.get("name")


def controller_of(obj: Any) -> Obj | None:
    """metav1 ``GetControllerOf``: a copy of the ownerReference with ``controller: true``, or None.

    Accepts a ``DeletedFinalStateUnknown``.
    """
    for ref in _meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return dict(ref)
    return None


def is_controlled_by(obj: Any, owner: Any) -> bool:
    """metav1 ``IsControlledBy``: ``obj``'s controller ownerReference has ``owner``'s uid.

    Compares uids only, so an owner deleted and re-created under the same
    name does not control the old owner's children. Both arguments may be
    ``DeletedFinalStateUnknown``.
    """
    ref = controller_of(obj)
    if ref is None:
        return False
    return bool((ref.get("uid") or "") == (_meta(owner).get("uid") or ""))


def _validate_owner(owner: Obj, obj: Obj) -> None:
    """controller-runtime's ``validateOwner``: owner references never cross namespaces."""
    owner_ns = _meta(owner).get("namespace") or ""
    if not owner_ns:
        return  # a cluster-scoped owner may own anything
    obj_ns = _meta(obj).get("namespace") or ""
    if not obj_ns:
        raise ValueError(
            "cluster-scoped resource must not have a namespace-scoped owner, "
            f"owner's namespace {owner_ns}"
        )
    if owner_ns != obj_ns:
        raise ValueError(
            "cross-namespace owner references are disallowed, "
            f"owner's namespace {owner_ns}, obj's namespace {obj_ns}"
        )


def _reference_to(owner: Obj, *, uid: bool = True) -> Obj:
    """``{apiVersion, kind, name[, uid]}`` of ``owner``; ``ValueError`` naming what it lacks."""
    owner_meta = _meta(owner)
    fields = [
        ("apiVersion", owner.get("apiVersion")),
        ("kind", owner.get("kind")),
        ("metadata.name", owner_meta.get("name")),
    ]
    if uid:
        fields.append(("metadata.uid", owner_meta.get("uid")))
    missing = [field for field, value in fields if not value]
    if missing:
        raise ValueError(f"owner has no {', '.join(missing)}: cannot reference it")
    ref: Obj = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner_meta["name"],
    }
    if uid:
        ref["uid"] = owner_meta["uid"]
    return ref


def _index_owner_ref(refs: list[Any], ref: Obj) -> int:
    """controller-runtime's ``indexOwnerRef``: the first reference to the same object, or -1."""
    for i, r in enumerate(refs):
        if isinstance(r, dict) and _refer_same_object(r, ref):
            return i
    return -1


def _upsert_owner_ref(ref: Obj, obj: Obj) -> None:
    """controller-runtime's ``upsertOwnerRef``: replace the same object's reference, or append."""
    meta = _writable_meta(obj)
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, dict)]
    i = _index_owner_ref(refs, ref)
    if i == -1:
        refs.append(ref)
    else:
        refs[i] = ref
    meta["ownerReferences"] = refs


def _set_owner_refs(obj: Obj, refs: list[Any]) -> None:
    meta = _writable_meta(obj)
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)  # omitempty, as Go leaves an emptied list


def _describe(obj: Obj) -> str:
    meta = _meta(obj)
    name = meta.get("name") or ""
    namespace = meta.get("namespace") or ""
    return f"{obj.get('kind') or 'object'} {namespace + '/' if namespace else ''}{name}"


def set_controller_reference(owner: Obj, obj: Obj) -> None:
    """Make ``owner`` the controller of ``obj`` (controller-runtime ``SetControllerReference``).

    Adds, or replaces in place, the ownerReference ``{apiVersion, kind, name,
    uid, controller: true, blockOwnerDeletion: true}`` built from ``owner``;
    other ownerReferences are kept. An existing reference "to the same
    object" is one with the same API group, kind and name (the version and uid
    may differ: a re-created owner takes its children over).

    Raises ``ValueError``:

    - ``AlreadyOwnedError`` (a subclass) if a different object already is
      ``obj``'s controller (only one ownerReference may be);
    - for a namespaced owner of a cluster-scoped object, or an owner in
      another namespace (the garbage collector would delete such children);
    - if ``owner`` lacks ``apiVersion``, ``kind``, ``metadata.name`` or
      ``metadata.uid`` (an owner must exist on the server before it owns).
    """
    ref = _reference_to(owner)
    _validate_owner(owner, obj)
    ref["controller"] = True
    ref["blockOwnerDeletion"] = True
    existing = controller_of(obj)
    if existing is not None and not _refer_same_object(existing, ref):
        raise AlreadyOwnedError(obj, existing)
    _upsert_owner_ref(ref, obj)


def set_owner_reference(owner: Obj, obj: Obj) -> None:
    """Make ``owner`` an owner of ``obj`` (controller-runtime ``SetOwnerReference``).

    Adds, or replaces in place, the ownerReference ``{apiVersion, kind, name,
    uid}`` (no ``controller``, no ``blockOwnerDeletion``): the garbage
    collector deletes ``obj`` once all its owners are gone, but no controller
    claims it. As in controller-runtime the reference *replaces* one to the
    same object (same group, kind and name), so calling this for ``obj``'s
    controller turns that reference into a plain one. Other references are
    kept.

    Raises ``ValueError`` for the owner namespace rules and an incomplete
    owner, as ``set_controller_reference`` does; never ``AlreadyOwnedError``.
    """
    ref = _reference_to(owner)
    _validate_owner(owner, obj)
    _upsert_owner_ref(ref, obj)


def remove_owner_reference(owner: Obj, obj: Obj) -> None:
    """Remove ``obj``'s ownerReference to ``owner`` (controller-runtime ``RemoveOwnerReference``).

    The reference is matched by API group, kind and name (the first such one
    goes, controller or not); an emptied list is removed from the metadata.
    Raises ``ValueError`` when ``obj`` has no ownerReferences at all, or none
    to ``owner`` (nothing is changed then).
    """
    refs = list(_meta(obj).get("ownerReferences") or ())
    if not refs:
        raise ValueError(f"{_describe(obj)} does not have any owner references")
    ref = _reference_to(owner, uid=False)
    i = _index_owner_ref(refs, ref)
    if i == -1:
        raise ValueError(
            f"{_describe(obj)} does not have an owner reference for {_describe(owner)}"
        )
    del refs[i]
    _set_owner_refs(obj, refs)


def remove_controller_reference(owner: Obj, obj: Obj) -> None:
    """Remove ``obj``'s controller reference to ``owner`` (``RemoveControllerReference``).

    Raises ``ValueError`` (nothing changed) when ``obj`` has no controller
    reference, has no reference to ``owner``, or its reference to ``owner``
    is not the controller one.
    """
    if not has_controller_reference(obj):
        raise ValueError(
            f"{_describe(obj)} does not have an owner reference with controller equals true"
        )
    refs = list(_meta(obj).get("ownerReferences") or ())
    i = _index_owner_ref(refs, _reference_to(owner, uid=False))
    if i == -1:
        raise ValueError(
            f"{_describe(obj)} does not have a controller reference for {_describe(owner)}"
        )
    if refs[i].get("controller") is not True:
        raise ValueError(f"{_describe(owner)} is not the controller reference of {_describe(obj)}")
    del refs[i]
    _set_owner_refs(obj, refs)


def has_controller_reference(obj: Any) -> bool:
    """controllerutil ``HasControllerReference``: some ownerReference has ``controller: true``."""
    return controller_of(obj) is not None


def has_owner_reference(owner_references: list[Obj] | None, owner: Obj) -> bool:
    """controllerutil ``HasOwnerReference``: a reference in the list is to ``owner``.

    Matched by API group, kind and name, as ``set_owner_reference`` matches
    (not by uid or version). Pass ``obj["metadata"].get("ownerReferences")``.
    Raises ``ValueError`` if ``owner`` lacks ``apiVersion``, ``kind`` or a name.
    """
    return _index_owner_ref(list(owner_references or ()), _reference_to(owner, uid=False)) != -1


# --------------------------------------------------------------------------- conditions


def find_status_condition(conditions: list[Obj] | None, type: str) -> Obj | None:
    """meta ``FindStatusCondition``: the condition of ``type`` (the list's own dict), or None."""
    for cond in conditions or ():
        if cond.get("type") == type:
            return cond
    return None


def set_status_condition(
    conditions: list[Obj] | None, condition: Obj, *, clock: Clock = REAL_CLOCK
) -> bool:
    """meta ``SetStatusCondition``: put ``condition`` into ``conditions`` in place.

    - No condition of that ``type`` yet: a copy of ``condition`` is appended,
      with ``lastTransitionTime`` set to now (``clock.time()``) if it has none.
    - Otherwise the existing condition keeps its place. Its
      ``lastTransitionTime`` changes only when ``status`` changes (to
      ``condition``'s own time if it has one, else now), and ``reason``,
      ``message`` and ``observedGeneration`` are set to ``condition``'s
      (missing counts as ``""`` / 0, as Go's zero values do).
    - ``reason`` and ``message`` are always written, ``""`` if missing (they
      are not omitempty in ``metav1.Condition``; CRDs generated from it
      require both), ``observedGeneration`` only when not 0.

    Returns whether anything changed, so a status write can be skipped when
    nothing did. ``conditions`` must be the list stored in the object
    (``obj.setdefault("status", {}).setdefault("conditions", [])``); None
    changes nothing and returns False, as Go's nil pointer does.
    """
    if conditions is None:
        return False
    if not condition.get("type"):
        raise ValueError("condition has no type")
    existing = find_status_condition(conditions, condition["type"])
    if existing is None:
        new = dict(condition)
        if not new.get("lastTransitionTime"):
            new["lastTransitionTime"] = format_rfc3339(clock.time())
        for key in ("reason", "message"):  # not omitempty in metav1.Condition
            new.setdefault(key, "")
        conditions.append(new)
        return True

    changed = False
    for key in ("reason", "message"):
        existing.setdefault(key, "")
    if existing.get("status") != condition.get("status"):
        existing["status"] = condition.get("status")
        existing["lastTransitionTime"] = condition.get("lastTransitionTime") or format_rfc3339(
            clock.time()
        )
        changed = True
    for key in ("reason", "message"):
        value = condition.get(key) or ""
        if (existing.get(key) or "") != value:
            existing[key] = value
            changed = True
    generation = condition.get("observedGeneration") or 0
    if (existing.get("observedGeneration") or 0) != generation:
        if generation:
            existing["observedGeneration"] = generation
        else:
            existing.pop("observedGeneration", None)  # omitempty, like Go's 0
        changed = True
    return changed


def remove_status_condition(conditions: list[Obj] | None, type: str) -> bool:
    """meta ``RemoveStatusCondition``: drop conditions of ``type`` in place; True if any was."""
    if not conditions:
        return False
    kept = [c for c in conditions if c.get("type") != type]
    removed = len(kept) != len(conditions)
    conditions[:] = kept
    return removed


def is_status_condition_true(conditions: list[Obj] | None, type: str) -> bool:
    """The condition of ``type`` is present with status ``"True"``."""
    cond = find_status_condition(conditions, type)
    return cond is not None and cond.get("status") == "True"


def is_status_condition_false(conditions: list[Obj] | None, type: str) -> bool:
    """The condition of ``type`` is present with status ``"False"``."""
    cond = find_status_condition(conditions, type)
    return cond is not None and cond.get("status") == "False"


# --------------------------------------------------------------------------- finalizers


def contains_finalizer(obj: Any, name: str) -> bool:
    """``name`` is in ``metadata.finalizers``."""
    return name in (_meta(obj).get("finalizers") or ())


def add_finalizer(obj: Obj, name: str) -> bool:
    """controllerutil ``AddFinalizer``: append ``name`` unless present; True if added."""
    if contains_finalizer(obj, name):
        return False
    meta = _writable_meta(obj)
    meta["finalizers"] = [*(meta.get("finalizers") or ()), name]
    return True


def remove_finalizer(obj: Obj, name: str) -> bool:
    """controllerutil ``RemoveFinalizer``: remove every ``name``; True if any was removed.

    An emptied list is removed from the metadata (Go's ``omitempty``), so a
    later diff against the server's copy, which has no such key, is clean.
    """
    if not contains_finalizer(obj, name):
        return False
    meta = _writable_meta(obj)
    kept = [f for f in meta.get("finalizers") or () if f != name]
    if kept:
        meta["finalizers"] = kept
    else:
        meta.pop("finalizers", None)
    return True


# --------------------------------------------------------------------------- messages


def _more(count: int) -> str:
    return f" (and {count} more problem{'' if count == 1 else 's'})"


def shorten(text: str, limit: int = 100) -> str:
    """``text`` cut to ``limit`` characters, ending in "..." when cut: a
    value quoted in a problem message stays readable however long it is."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def join_problems(problems: list[str], limit: int = 1024) -> str:
    """``problems`` joined by "; " in at most ``limit`` characters: the
    message of an ``InvalidSpec`` condition or Warning event.

    Problems that do not fit are counted instead (``...; spec.ports[0].port:
    ... (and 7 more problems)``); the first problem is always there (cut,
    with "...", if it alone is too long), so the message always starts with
    the first field. The default limit is an events.k8s.io note's (1 kB); a
    condition message may hold 32 kB.
    """
    text = "; ".join(problems)
    if len(text) <= limit:
        return text
    kept = length = 0
    for i, problem in enumerate(problems):
        new_length = length + (2 if i else 0) + len(problem)
        if new_length + len(_more(len(problems) - i - 1)) > limit:
            break
        kept, length = i + 1, new_length
    if kept == 0:
        tail = _more(len(problems) - 1) if len(problems) > 1 else ""
        return problems[0][: max(limit - len(tail) - 3, 0)] + "..." + tail
    return "; ".join(problems[:kept]) + _more(len(problems) - kept)
