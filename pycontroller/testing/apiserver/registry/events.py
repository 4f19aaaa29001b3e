"""One Event storage behind two APIs: core/v1 ``events`` and ``events.k8s.io/v1``.

kube-apiserver stores Events once (the ``/events`` etcd prefix) and serves
them through both groups, converting field by field
(``pkg/apis/events/v1/conversion.go``):

    core/v1              events.k8s.io/v1
    involvedObject   <-> regarding
    message          <-> note
    reportingComponent <-> reportingController
    source           <-> deprecatedSource
    firstTimestamp   <-> deprecatedFirstTimestamp
    lastTimestamp    <-> deprecatedLastTimestamp
    count            <-> deprecatedCount

``eventTime``, ``series``, ``reportingInstance``, ``action``, ``reason``,
``related``, ``type`` and ``metadata`` are the same in both. The embedded
server stores the core/v1 form; ``rest.py`` converts bodies written through
``events.k8s.io`` to it and converts what it serves there (GET, LIST, WATCH,
write responses) back. Field selectors on ``events.k8s.io`` use its own
names (``regarding.name``, ``reportingController``), mapped to the stored ones
as kube's field label conversion does.

Limits: no per-version validation (kube requires e.g. ``eventTime`` and
``reportingController`` on events.k8s.io creates; accepted here without
them); fields outside the table above pass through unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EVENTS_API_VERSION",
    "core_to_events",
    "events_to_core",
]

EVENTS_API_VERSION = "events.k8s.io/v1"

_CORE_TO_EVENTS = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
_EVENTS_TO_CORE = {v: k for k, v in _CORE_TO_EVENTS.items()}


def _rename(obj: dict[str, Any], names: dict[str, str], api_version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Event", "apiVersion": api_version}
    for k, v in obj.items():
        if k in ("kind", "apiVersion"):
            continue
        out[names.get(k, k)] = v
    return out


def core_to_events(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 serves it (values are shared,
    not copied: the caller must not mutate the result's nested values)."""
    return _rename(obj, _CORE_TO_EVENTS, EVENTS_API_VERSION)


def events_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event body in its stored core/v1 form (shallow)."""
    return _rename(obj, _EVENTS_TO_CORE, "v1")
