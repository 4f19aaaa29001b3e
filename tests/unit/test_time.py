"""pycontroller._time: metav1.Time and metav1.MicroTime formatting."""

from __future__ import annotations

from pycontroller._time import format_rfc3339


def test_format_rfc3339() -> None:
    assert format_rfc3339(1_700_000_000.123456) == "2023-11-14T22:13:20Z"
    assert format_rfc3339(1_700_000_000.123456, micro=True) == "2023-11-14T22:13:20.123456Z"
    assert format_rfc3339(0) == "1970-01-01T00:00:00Z"
