"""Testing support: an embedded Kubernetes API server and a pytest plugin.

    from pycontroller.testing import APIServer

    with APIServer(crds=["crds/"]) as server:
        api_client = server.api_client()
        ...

Its dependencies (jsonschema, jsonpatch) are in the ``testing`` extra; the
library itself never imports this package.
"""

from __future__ import annotations

from pycontroller.testing.apiserver.server import APIServer, RequestRecord

__all__ = ["APIServer", "RequestRecord"]
