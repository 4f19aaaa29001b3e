"""pytest plugin (entry point ``pytest11``): fixtures for the embedded API server.

- ``apiserver``: a started ``APIServer`` (no CRDs) per test, stopped after it.
- ``apiserver_factory``: ``factory(**kwargs) -> APIServer`` building started
  servers with custom arguments (``crds=``, ``history_size=``,
  ``bookmark_interval=``...); all are stopped after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pycontroller.testing.apiserver.server import APIServer

__all__ = ["apiserver", "apiserver_factory"]


@pytest.fixture
def apiserver_factory() -> Iterator[Callable[..., APIServer]]:
    servers: list[APIServer] = []

    def factory(**kwargs: Any) -> APIServer:
        server = APIServer(**kwargs)
        servers.append(server)
        return server.start()

    yield factory
    for server in reversed(servers):
        server.stop()


@pytest.fixture
def apiserver(apiserver_factory: Callable[..., APIServer]) -> APIServer:
    return apiserver_factory()
