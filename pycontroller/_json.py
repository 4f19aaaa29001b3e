"""JSON encoding and decoding: orjson when installed, the standard library otherwise.

``loads`` accepts ``bytes`` or ``str``; ``dumps`` always returns ``bytes``
(compact, UTF-8), ready to send as a request body. Both produce and consume
plain ``dict``/``list``/``str``/``int``/``float``/``bool``/``None`` trees, the
only object representation used in caches and handlers.
"""

from __future__ import annotations

import json as _stdlib_json
from collections.abc import Callable
from typing import Any

__all__ = ["HAVE_ORJSON", "dumps", "loads"]

try:  # pragma: no cover - depends on the environment
    import orjson as _orjson

    HAVE_ORJSON = True
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None  # type: ignore[assignment]
    HAVE_ORJSON = False


def _stdlib_loads(data: bytes | bytearray | memoryview | str) -> Any:
    if isinstance(data, memoryview):
        data = data.tobytes()
    return _stdlib_json.loads(data)


loads: Callable[[bytes | bytearray | memoryview | str], Any]
"""Decode one JSON document (``ValueError`` if malformed)."""
# orjson.loads itself (it takes all four input types and raises a ValueError
# subclass): no wrapper frame on the per-watch-event path.
loads = _orjson.loads if _orjson is not None else _stdlib_loads


def dumps(obj: Any) -> bytes:
    """Encode ``obj`` as compact UTF-8 JSON bytes."""
    if _orjson is not None:
        return _orjson.dumps(obj)
    return _stdlib_json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
