"""Registering prometheus-client collectors once.

Modules that define metrics at import time can be imported twice (test
runners with importlib import mode, reloads, two providers on one registry);
prometheus-client refuses a second collector with the same name. ``register``
returns the collector already registered under that name when it is of the
same type, and raises otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import prometheus_client

_C = TypeVar("_C")


def register(
    cls: type[_C],
    name: str,
    documentation: str,
    labelnames: Sequence[str] = (),
    *,
    registry: prometheus_client.CollectorRegistry | None = None,
    **kwargs: Any,
) -> _C:
    target = registry if registry is not None else prometheus_client.REGISTRY
    try:
        return cls(name, documentation, list(labelnames), registry=target, **kwargs)  # type: ignore[call-arg]
    except ValueError:
        existing = getattr(target, "_names_to_collectors", {}).get(name)
        if isinstance(existing, cls):
            return existing
        raise
