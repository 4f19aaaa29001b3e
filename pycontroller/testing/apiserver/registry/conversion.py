"""Kinds served at one version and stored at another: their conversions.

A ``ResourceType`` whose ``extra["stored_as"]`` names another type shares
that type's storage (``rest.py``): bodies written through it are converted to
the stored form, and whatever it serves (GET, LIST, WATCH, write responses)
is converted back. The pairs, each kube's own conversion reimplemented over
JSON values:

- ``events.k8s.io/v1`` events, stored as core/v1 events (``events.py``);
- ``autoscaling/v1`` horizontalpodautoscalers, stored as ``autoscaling/v2``
  (``hpa.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycontroller.testing.apiserver.registry import events, hpa
from pycontroller.testing.apiserver.resource_types import ResourceType

__all__ = ["converted", "from_stored", "to_stored"]

_Convert = Callable[[dict[str, Any]], dict[str, Any]]

# (group, version, plural) served -> (to the stored form, from the stored form)
_CONVERSIONS: dict[tuple[str, str, str], tuple[_Convert, _Convert]] = {
    ("events.k8s.io", "v1", "events"): (events.events_to_core, events.core_to_events),
    ("autoscaling", "v1", "horizontalpodautoscalers"): (hpa.v1_to_v2, hpa.v2_to_v1),
}
# The stored types of those pairs.
_STORED = {("", "v1", "events"), ("autoscaling", "v2", "horizontalpodautoscalers")}


def converted(rt: ResourceType) -> bool:
    """True when ``rt`` is one side of a real conversion (served from, or
    storing for, another version): its versions' fields differ."""
    key = (rt.group, rt.version, rt.plural)
    return key in _CONVERSIONS or key in _STORED


def _relabelled(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "apiVersion": rt.api_version}


def to_stored(rt: ResourceType, stored: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj``, written through ``rt``, in ``stored``'s form."""
    pair = _CONVERSIONS.get((rt.group, rt.version, rt.plural))
    return pair[0](obj) if pair else _relabelled(stored, obj)


def from_stored(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """Stored ``obj`` as ``rt`` serves it."""
    pair = _CONVERSIONS.get((rt.group, rt.version, rt.plural))
    return pair[1](obj) if pair else _relabelled(rt, obj)
