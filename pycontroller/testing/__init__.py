"""Testing support: an embedded Kubernetes API server and a pytest plugin.

    from pycontroller.testing import APIServer, wait_for

    with APIServer(crds=["crds/"]) as server:
        api_client = server.api_client()
        ...
        wait_for(lambda: lister.list(), timeout=5, what="a listed object")

``wait_for(cond, timeout=10.0, *, interval=0.02, what="condition")`` polls
``cond()`` until it returns a truthy value (which it returns) and raises
``AssertionError`` naming ``what`` and the last value at the deadline.

The server's dependencies (jsonschema, jsonpatch) are in the ``testing``
extra; the library itself never imports this package. ``APIServer`` and
``RequestRecord`` are resolved lazily so that loading the pytest plugin
(``pycontroller.testing.pytest_plugin``, registered for every pytest run) or
importing ``wait_for`` (standard library only) does not need the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pycontroller.testing.wait import wait_for

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.server import APIServer, RequestRecord

__all__ = ["APIServer", "RequestRecord", "wait_for"]

_LAZY = frozenset({"APIServer", "RequestRecord"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from pycontroller.testing.apiserver import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
