"""Testing support: an embedded Kubernetes API server and a pytest plugin.

    from pycontroller.testing import APIServer

    with APIServer(crds=["crds/"]) as server:
        api_client = server.api_client()
        ...

Its dependencies (jsonschema, jsonpatch) are in the ``testing`` extra; the
library itself never imports this package. Names are resolved lazily so that
loading the pytest plugin (``pycontroller.testing.pytest_plugin``, registered
for every pytest run) does not need the extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.server import APIServer, RequestRecord

__all__ = ["APIServer", "RequestRecord"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pycontroller.testing.apiserver import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
