"""``create_or_update``: controller-runtime's ``controllerutil.CreateOrUpdate`` for dict objects.

The mutate function is the whole trick. It is handed the *live* object (or,
when there is none, the caller's object) and sets only the fields the
controller owns; everything the API server or other actors filled in
(defaults, clusterIP, other controllers' labels, status) stays as it was.
So "did mutate change anything?" is exactly "does the live object differ
from what we want in the fields we own?", and a steady state makes no write.

Caveat (as in controller-runtime): if mutate sets a field to a value the
server then changes (clears a defaulted field, writes ``"1"`` where the
server stores ``1``), every call writes. Set what the server keeps.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal, Protocol

from .errors import NotFoundError

__all__ = ["OperationResult", "create_or_apply", "create_or_update"]

Obj = dict[str, Any]

#: What ``create_or_update`` did; the words complete "ConfigMap ns/x has been ...".
OperationResult = Literal["created", "updated", "unchanged"]


class _Scoped(Protocol):
    namespaced: bool


class _Client(Protocol):
    """The part of ``pycontroller.ResourceClient`` that ``create_or_update`` uses."""

    namespaced: bool

    def get(self, name: str, namespace: str | None = None) -> Obj: ...

    def create(self, obj: Obj, namespace: str | None = None) -> Obj: ...

    def update(self, obj: Obj) -> Obj: ...


class _ApplyClient(Protocol):
    """The part of ``pycontroller.ResourceClient`` that ``create_or_apply`` uses."""

    namespaced: bool

    def get(self, name: str, namespace: str | None = None) -> Obj: ...

    def apply(
        self, obj: Obj, field_manager: str, force: bool = False, namespace: str | None = None
    ) -> Obj: ...


def _key(client: _Scoped, obj: Obj) -> tuple[str, str]:
    """``(namespace, name)`` as the client resolves them (namespaced: "default" if unset)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ValueError("object has no metadata.name")
    namespace = str(meta.get("namespace") or "")
    if client.namespaced and not namespace:
        namespace = "default"
    return namespace, str(meta["name"])


def _mutate(client: _Client, mutate: Callable[[Obj], None], key: tuple[str, str], obj: Obj) -> None:
    mutate(obj)
    if _key(client, obj) != key:
        raise ValueError("mutate cannot change the object's name and/or namespace")


def create_or_update(client: _Client, obj: Obj, mutate: Callable[[Obj], None]) -> OperationResult:
    """Create ``obj`` or bring the live object in line; say which: created, updated, unchanged.

    1. GET the object named by ``obj``'s ``metadata.name`` and
       ``metadata.namespace`` (``"default"`` when unset, as the client does).
    2. Not found: ``mutate(obj)``, then create it -> ``"created"``.
    3. Found: ``mutate(live)`` on the fetched object; if it changed nothing
       -> ``"unchanged"`` with no write, else update it (optimistic
       concurrency on the fetched ``resourceVersion``) -> ``"updated"``.

    Afterwards ``obj`` holds the object as the server returned it (created,
    updated, or fetched), as controller-runtime leaves its ``obj``: so pass a
    fresh dict, never one from an informer cache. Only ``name`` and
    ``namespace`` of ``obj`` are used when the object exists.

    Raises ``ValueError`` if mutate changes the name or namespace (nothing is
    written) and whatever mutate or the client raises: ``ConflictError``
    when the object changed between the GET and the update, and
    ``AlreadyExistsError`` when someone created it in between (retry both,
    e.g. by requeueing). Changes mutate makes to ``status`` are sent with the
    update but ignored by a server that has a status subresource.
    """
    key = _key(client, obj)
    namespace, name = key
    try:
        live = client.get(name, namespace or None)
    except NotFoundError:
        _mutate(client, mutate, key, obj)
        result = client.create(obj)
        _replace(obj, result)
        return "created"

    before = copy.deepcopy(live)
    _mutate(client, mutate, key, live)
    if _semantically_equal(live, before):
        _replace(obj, live)
        return "unchanged"
    result = client.update(live)
    _replace(obj, result)
    return "updated"


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, dict | list) and not value)


def _semantically_equal(a: Any, b: Any) -> bool:
    """``a`` (the object after mutate) ``== b`` (the live object before it),
    where an absent key, ``None`` and an empty map or list are one value, as
    apimachinery's ``equality.Semantic.DeepEqual`` compares typed objects (a
    nil and an empty map or slice are equal; JSON ``null`` decodes to nil).
    kube stores no empty map or list where the field is ``omitempty``, so a
    mutate that leaves one (``setdefault("labels", {})``) must not count as
    a change, or every reconcile would write.

    One exception: an empty object the server *returned* is kept on purpose,
    so it is a pointer to a struct whose presence means something (a
    NetworkPolicy peer's ``podSelector: {}`` selects every Pod;
    ``emptyDir: {}`` is a volume source), not an ``omitempty`` map; a mutate
    that removes it changes the object (DeepEqual: a nil pointer is not a
    pointer to an empty struct)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            x, y = a.get(k), b.get(k)
            if _empty(x) and _empty(y):
                if isinstance(y, dict) and not isinstance(x, dict):
                    return False  # a present empty object removed
                continue
            if not _semantically_equal(x, y):
                return False
        return True
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        return all(_semantically_equal(x, y) for x, y in zip(a, b, strict=True))
    if _empty(a) and _empty(b):
        return True
    return bool(type(a) is type(b) and a == b) or (
        # 1 == 1.0 as JSON numbers; True is not 1
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _replace(obj: Obj, new: Obj) -> None:
    if new is not obj:
        obj.clear()
        obj.update(new)


def create_or_apply(
    client: _ApplyClient,
    obj: Obj,
    *,
    field_manager: str,
    force: bool = True,
    current: Obj | None = None,
) -> OperationResult:
    """The server-side-apply variant: apply ``obj`` as ``field_manager`` unless it is in place.

    ``obj`` is the *desired* object: ``apiVersion``, ``kind``, ``metadata.name``
    (and ``namespace``) and exactly the fields this controller owns. The
    server merges it and removes what this manager applied before and leaves
    out now, so no mutate function is needed. ``force`` (default True, as a
    controller owns what it applies) takes fields from other managers;
    ``force=False`` raises ``ConflictError`` naming them.

    ``current`` is the live object when the caller has it (an informer's
    copy: read only, never modified); without it one GET fetches it. The
    apply is skipped -- ``"unchanged"``, and with ``current`` not a single
    request -- when every field of ``obj`` has the same value in ``current``
    and ``field_manager``'s ``Apply`` entry in ``metadata.managedFields`` owns
    exactly those fields (nothing to take over, nothing to remove). Otherwise
    the object is applied: ``"created"`` when it did not exist, else
    ``"updated"``, or ``"unchanged"`` when the server's resourceVersion did
    not move (kube-apiserver does not persist a no-op apply). A stale
    ``current`` costs at most one apply that changes nothing.
    """
    namespace, name = _key(client, obj)
    if current is None:
        try:
            current = client.get(name, namespace or None)
        except NotFoundError:
            current = None
    if current is not None and _in_place(obj, current, field_manager):
        return "unchanged"
    result = client.apply(copy.deepcopy(obj), field_manager, force, namespace or None)
    if current is None:
        return "created"
    before = (current.get("metadata") or {}).get("resourceVersion")
    after = (result.get("metadata") or {}).get("resourceVersion")
    return "unchanged" if before is not None and before == after else "updated"


# Identity, not owned fields: never in a manager's field set.
_IDENTITY = {(): {"apiVersion", "kind"}, ("metadata",): {"name", "namespace"}}
_Path = tuple[str, ...]


def _in_place(desired: Obj, live: Obj, manager: str) -> bool:
    """Same values, and ``manager``'s Apply entry owns exactly ``desired``'s fields."""
    if not _subset(desired, live, ()):
        return False
    entries = (live.get("metadata") or {}).get("managedFields") or []
    owned: set[_Path] | None = None
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            owned = set()
            _owned_paths(entry.get("fieldsV1") or {}, (), owned)
            break
    if owned is None:
        return False
    wanted: set[_Path] = set()
    leaves: set[_Path] = set()
    _desired_paths(desired, (), wanted, leaves)
    # Nothing applied before is left out now, and every field we want is ours.
    return owned <= wanted and leaves <= owned


def _subset(want: Any, have: Any, path: _Path) -> bool:
    """Maps compare key by key (``have`` may hold more); lists and scalars exactly."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return False
        skip = _IDENTITY.get(path, set())
        return all(
            k in skip or (k in have and _subset(v, have[k], (*path, k))) for k, v in want.items()
        )
    return bool(want == have)


def _desired_paths(obj: Obj, path: _Path, every: set[_Path], leaves: set[_Path]) -> None:
    skip = _IDENTITY.get(path, set())
    for k, v in obj.items():
        if k in skip:
            continue
        here = (*path, k)
        every.add(here)
        if isinstance(v, dict) and v:
            _desired_paths(v, here, every, leaves)
        else:
            leaves.add(here)  # a scalar, a list (set as a whole here), or an empty map


def _owned_paths(fields: Obj, path: _Path, out: set[_Path]) -> None:
    """``FieldsV1`` (``{"f:data": {"f:k": {}}}``) as field paths; a list field is a leaf."""
    for k, v in fields.items():
        if not k.startswith("f:"):
            continue  # ".": the field itself; "k:"/"v:"/"i:": list items (see below)
        here = (*path, k[2:])
        out.add(here)
        if isinstance(v, dict) and not any(c[:2] in ("k:", "v:", "i:") for c in v):
            _owned_paths(v, here, out)
