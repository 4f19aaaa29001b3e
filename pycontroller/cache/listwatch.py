"""ListWatch: the list and watch functions a Reflector drives (client-go ``listwatch.go``).

A ``ListerWatcher`` has two methods, both taking keyword options only:

- ``list(*, resource_version, limit, continue_) -> dict``: one page of the
  collection as the decoded ``List`` (``items`` and ``metadata`` with
  ``resourceVersion`` and maybe ``continue``). ``resource_version`` is
  ``None`` on continuation pages (the token carries it), ``""`` for a
  consistent read, ``"0"`` for "any cached state" or an exact version;
  ``limit``/``continue_`` are ``None`` when unused.
- ``watch(*, resource_version, timeout_seconds, allow_bookmarks) -> Watch``:
  an iterator of events ``{"type": ..., "object": {...}}``.

A ListerWatcher that can serve streaming lists (its ``watch`` takes
``send_initial_events=True`` and ``resource_version_match="NotOlderThan"`` and
the server answers with the initial state and the bookmark annotated
``k8s.io/initial-events-end``) says so with a true ``supports_watch_list``
attribute; reflectors stream only from those unless told otherwise
(``Reflector(use_watch_list=True)``). ``ListWatch.from_client`` does.

A ``Watch`` may also have ``close()``; the reflector calls it *from another
thread* to stop a watch whose reader is blocked, so ``close`` must be
thread-safe and must make a blocked ``next()`` return (``WatchStream`` does;
a generator's ``close`` does not, so fakes should use a small class).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..client import ResourceClient

__all__ = ["ListFunc", "ListWatch", "ListerWatcher", "WatchFunc"]

ListFunc = Callable[..., dict[str, Any]]
WatchFunc = Callable[..., Iterator[dict[str, Any]]]


class ListerWatcher(Protocol):
    """What a Reflector lists and watches."""

    def list(self, **options: Any) -> dict[str, Any]: ...

    def watch(self, **options: Any) -> Iterator[dict[str, Any]]: ...


class ListWatch:
    """A ``ListerWatcher`` made of two functions.

    ``list_func(**options)`` and ``watch_func(**options)`` receive the
    options described in the module docstring.
    """

    def __init__(
        self,
        list_func: ListFunc,
        watch_func: WatchFunc,
        *,
        name: str = "",
        supports_watch_list: bool = False,
    ) -> None:
        self.list_func = list_func
        self.watch_func = watch_func
        self.name = name
        self.supports_watch_list = supports_watch_list
        # (group, version, resource) when known: informers label their metrics with it.
        self.gvr: tuple[str, str, str] | None = None

    def list(self, **options: Any) -> dict[str, Any]:
        return self.list_func(**options)

    def watch(self, **options: Any) -> Iterator[dict[str, Any]]:
        return self.watch_func(**options)

    def __repr__(self) -> str:
        return f"ListWatch({self.name or '?'})"

    @classmethod
    def from_client(
        cls,
        client: ResourceClient,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListWatch:
        """List and watch ``client``'s resource (all namespaces when ``namespace`` is None)."""
        selectors: dict[str, Any] = {}
        if label_selector:
            selectors["label_selector"] = label_selector
        if field_selector:
            selectors["field_selector"] = field_selector

        def list_func(
            *,
            resource_version: str | None = None,
            limit: int | None = None,
            continue_: str | None = None,
            **extra: Any,
        ) -> dict[str, Any]:
            params: dict[str, Any] = dict(selectors)
            params.update(extra)
            if resource_version:  # "" (consistent read) is the same as unset
                params["resource_version"] = resource_version
            if limit:
                params["limit"] = limit
            if continue_:
                params["continue_"] = continue_
            return client.list(namespace, **params)

        def watch_func(
            *,
            resource_version: str | None = None,
            timeout_seconds: int | None = None,
            allow_bookmarks: bool = True,
            **extra: Any,
        ) -> Iterator[dict[str, Any]]:
            params: dict[str, Any] = dict(selectors)
            params.update(extra)
            return client.watch(
                namespace,
                resource_version=resource_version or None,
                timeout_seconds=timeout_seconds,
                allow_bookmarks=allow_bookmarks,
                **params,
            )

        where = f" in {namespace}" if namespace else ""
        lw = cls(list_func, watch_func, name=f"{client.resource}{where}", supports_watch_list=True)
        gvr = tuple(getattr(client, a, None) for a in ("group", "version", "plural"))
        if all(isinstance(x, str) for x in gvr):
            lw.gvr = (str(gvr[0]), str(gvr[1]), str(gvr[2]))
        return lw
