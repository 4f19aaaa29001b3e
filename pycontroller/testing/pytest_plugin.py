"""pytest plugin (entry point ``pytest11``): fixtures for the embedded API server.

- ``apiserver``: a started ``APIServer`` per test, stopped after it. Its
  constructor arguments come from an optional ``apiserver`` marker::

      @pytest.mark.apiserver(crds=["crds/"], bookmark_interval=0.1)
      def test_x(apiserver): ...

- ``apiserver_factory``: ``factory(**kwargs) -> APIServer`` building started
  servers with custom arguments (``crds=``, ``history_size=``,
  ``bookmark_interval=``...); all are stopped after the test.

Servers bind to a free loopback port each, so tests may run in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    # Imported lazily: this plugin is loaded by every pytest run of anyone who
    # installs pycontroller, and the server needs the `testing` extra.
    from pycontroller.testing.apiserver.server import APIServer

__all__ = ["apiserver", "apiserver_factory"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "apiserver(**kwargs): constructor arguments for the `apiserver` fixture's APIServer",
    )


@pytest.fixture
def apiserver_factory() -> Iterator[Callable[..., APIServer]]:
    """Build started ``APIServer`` instances; every one is stopped at teardown."""
    from pycontroller.testing.apiserver.server import APIServer

    servers: list[APIServer] = []

    def factory(**kwargs: Any) -> APIServer:
        server = APIServer(**kwargs)
        servers.append(server)
        return server.start()

    yield factory
    for server in reversed(servers):
        server.stop()


@pytest.fixture
def apiserver(
    request: pytest.FixtureRequest, apiserver_factory: Callable[..., APIServer]
) -> APIServer:
    """A started ``APIServer`` (arguments from the ``apiserver`` marker, if any)."""
    marker = request.node.get_closest_marker("apiserver")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    return apiserver_factory(**kwargs)
