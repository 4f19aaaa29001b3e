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

__all__ = ["OperationResult", "create_or_update"]

Obj = dict[str, Any]

#: What ``create_or_update`` did; the words complete "ConfigMap ns/x has been ...".
OperationResult = Literal["created", "updated", "unchanged"]


class _Client(Protocol):
    """The part of ``pycontroller.ResourceClient`` that ``create_or_update`` uses."""

    namespaced: bool

    def get(self, name: str, namespace: str | None = None) -> Obj: ...

    def create(self, obj: Obj, namespace: str | None = None) -> Obj: ...

    def update(self, obj: Obj) -> Obj: ...


def _key(client: _Client, obj: Obj) -> tuple[str, str]:
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
    if live == before:
        _replace(obj, live)
        return "unchanged"
    result = client.update(live)
    _replace(obj, result)
    return "updated"


def _replace(obj: Obj, new: Obj) -> None:
    if new is not obj:
        obj.clear()
        obj.update(new)
