"""Timestamps as the Kubernetes API writes them (metav1.Time, metav1.MicroTime)."""

from __future__ import annotations

import datetime

__all__ = ["format_rfc3339"]


def format_rfc3339(epoch: float, micro: bool = False) -> str:
    """``epoch`` (Unix seconds) as RFC 3339 in UTC.

    ``micro=False``: metav1.Time, second precision (``2006-01-02T15:04:05Z``);
    ``micro=True``: metav1.MicroTime (``2006-01-02T15:04:05.000000Z``).
    """
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).strftime(fmt)
