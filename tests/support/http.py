"""Raw HTTP to the embedded API server, below the ``kubernetes`` client."""

from __future__ import annotations

import http.client
import json
import urllib.error
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from pycontroller.testing import APIServer, wait_for


def call(
    server: APIServer,
    method: str,
    path: str,
    body: Any = None,
    ctype: str = "application/json",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One request on a fresh connection: ``(status, headers, decoded JSON body or None)``.

    ``body`` is sent as is if it is ``bytes``, else JSON-encoded.
    """
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=10)
    try:
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": ctype, **(headers or {})})
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, dict(resp.getheaders()), json.loads(raw) if raw else None
    finally:
        conn.close()


def request(
    server: APIServer, method: str, path: str, body: Any = None, ctype: str = "application/json"
) -> tuple[int, Any]:
    """``call`` without the response headers: ``(status, decoded body or None)``."""
    status, _, decoded = call(server, method, path, body, ctype)
    return status, decoded


def until_found(probe: Callable[[], Any], what: str, timeout: float = 10.0) -> None:
    """``wait_for`` ``probe()`` where an HTTP 404 from it means "not yet"."""

    def attempt() -> Any:
        try:
            return probe()
        except urllib.error.HTTPError as err:
            if err.code != 404:
                raise
            return None

    wait_for(attempt, timeout, interval=0.05, what=what)
