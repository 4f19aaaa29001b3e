"""Listers: read-only, label-selecting views of an Indexer (client-go ``listers.go``).

A lister answers from the informer's cache, never from the API server. Every
object it returns is shared with the cache: **never mutate it** (the cache and
every other reader would see the change, and indices would go stale). Use
:meth:`Lister.get_copy` / :meth:`NamespaceLister.get_copy` or
:func:`pycontroller.cache.deep_copy` when a mutable copy is needed.

Missing objects raise :class:`pycontroller.errors.NotFoundError`, the same
error the API server gives, so callers handle "gone" one way.

Typed access at zero run-time cost: ``Lister`` and ``NamespaceLister`` are
generic in the object type ``T`` (default ``Any``, so a bare ``Lister`` is
what it always was). The objects stay the plain dicts the API server sent;
only mypy sees ``T``, typically a ``TypedDict`` written by
``python -m pycontroller.gen``::

    from controllers.network.types import Network

    networks: Lister[Network] = factory.lister("samplecrd.k8s.io", "v1", "networks")
    # or: networks = factory.lister("samplecrd.k8s.io", "v1", "networks", type=Network)
    networks.get("n1", "default")["spec"]["cidr"]   # ok
    networks.get("n1", "default")["spec"]["cdir"]   # mypy: TypedDict has no key "cdir"

Nothing checks at run time that the cached objects match ``T``.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic

from pycontroller.errors import NotFoundError
from pycontroller.labels import Selector, parse_selector

from .index import NAMESPACE_INDEX, Indexer
from .store import deep_copy

if TYPE_CHECKING:
    # PEP 696 defaults: a bare ``Lister`` means ``Lister[Any]``. At run time
    # ``typing.TypeVar`` (3.11) has no ``default``, and nothing needs it.
    from typing_extensions import TypeVar

    T = TypeVar("T", default=Any)
else:
    from typing import TypeVar

    T = TypeVar("T")

LabelSelectorArg = str | Mapping[str, Any] | Selector | None
"""A label selector in any form :func:`pycontroller.labels.parse_selector` accepts."""


def _labels(obj: Any) -> Mapping[str, str] | None:
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            labels = meta.get("labels")
            if isinstance(labels, Mapping):
                return labels
    return None


def _namespace(obj: Any) -> str:
    if isinstance(obj, Mapping):
        meta = obj.get("metadata")
        if isinstance(meta, Mapping):
            return str(meta.get("namespace") or "")
    return ""


def _select(objs: builtins.list[T], selector: Selector) -> builtins.list[T]:
    if selector.empty():
        return objs
    return [o for o in objs if selector.matches(_labels(o))]


class Lister(Generic[T]):
    """Lists and gets objects of one resource from an :class:`Indexer`.

    ``T`` is the object type mypy assumes (see the module docstring).

    ``resource`` (optional, e.g. ``"balancers.exposer.hliangzhao.io"``) is
    only used in not-found messages, like the API server's
    ``balancers.exposer.hliangzhao.io "x" not found``.
    """

    def __init__(self, indexer: Indexer, *, resource: str = "") -> None:
        self._indexer = indexer
        self._resource = resource

    @property
    def indexer(self) -> Indexer:
        """The underlying cache."""
        return self._indexer

    def list(self, label_selector: LabelSelectorArg = None) -> builtins.list[T]:
        """Every cached object matching ``label_selector`` (all for ``None``/``""``).

        Unordered. Objects are shared: do not mutate. ``ValueError`` for a
        malformed selector.
        """
        return _select(self._indexer.list(), parse_selector(label_selector))

    def get(self, name: str, namespace: str | None = None) -> T:
        """The cached object ``namespace/name`` (or cluster-scoped ``name``).

        Raises ``NotFoundError`` if it is not in the cache. Shared: do not mutate.
        """
        obj: T = _get(self._indexer, self._resource, namespace, name)
        return obj

    def get_copy(self, name: str, namespace: str | None = None) -> T:
        """Like :meth:`get`, but a private deep copy that may be mutated."""
        return deep_copy(self.get(name, namespace))

    def namespaced(self, namespace: str) -> NamespaceLister[T]:
        """A view of one namespace."""
        return NamespaceLister(self._indexer, namespace, resource=self._resource)


class NamespaceLister(Generic[T]):
    """Lists and gets objects of one namespace; uses the namespace index if present."""

    def __init__(self, indexer: Indexer, namespace: str, *, resource: str = "") -> None:
        self._indexer = indexer
        self._namespace = namespace
        self._resource = resource

    @property
    def namespace(self) -> str:
        return self._namespace

    def list(self, label_selector: LabelSelectorArg = None) -> builtins.list[T]:
        """Objects in this namespace matching ``label_selector``. Shared: do not mutate.

        The namespace ``""`` is client-go's ``metav1.NamespaceAll``
        (``ListAllByNamespace``): every object, whatever its namespace (for a
        cluster-scoped resource, all of them).
        """
        selector = parse_selector(label_selector)
        if not self._namespace:
            return _select(self._indexer.list(), selector)
        try:
            objs = self._indexer.by_index(NAMESPACE_INDEX, self._namespace)
        except KeyError:
            # No namespace index on this cache: filter everything.
            objs = [o for o in self._indexer.list() if _namespace(o) == self._namespace]
        return _select(objs, selector)

    def get(self, name: str) -> T:
        """The cached object ``namespace/name``; ``NotFoundError`` if absent."""
        obj: T = _get(self._indexer, self._resource, self._namespace, name)
        return obj

    def get_copy(self, name: str) -> T:
        """Like :meth:`get`, but a private deep copy that may be mutated."""
        return deep_copy(self.get(name))


def _get(indexer: Indexer, resource: str, namespace: str | None, name: str) -> Any:
    key = f"{namespace}/{name}" if namespace else name
    obj = indexer.get_by_key(key)
    if obj is None:
        raise _not_found(resource, name, key)
    return obj


def _not_found(resource: str, name: str, key: str) -> NotFoundError:
    message = f'{resource} "{name}" not found' if resource else f'"{key}" not found'
    return NotFoundError(
        message=message,
        body={
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": "NotFound",
            "details": {"name": name, **({"kind": resource} if resource else {})},
            "code": 404,
        },
    )
