"""OpenAPI string formats the embedded server checks, as kube-apiserver does."""

from __future__ import annotations

import pytest

from pycontroller.testing.apiserver.schema.structural import _FORMAT_CHECKER

CASES = {
    "date-time": ("2024-01-02T03:04:05Z", "2024-01-02 nope"),
    "date": ("2024-01-02", "2024-1-2"),
    "byte": ("aGk=", "!!"),
    "uuid": ("12345678-1234-5678-1234-567812345678", "x"),
    "ipv4": ("1.2.3.4", "1.2.3"),
    "ipv6": ("::1", "1.2"),
    "cidr": ("10.0.0.0/8", "10.0.0.0"),
    "mac": ("00:11:22:33:44:55", "00:11"),
    "hostname": ("a.example", "A_B"),
    "email": ("a@b.io", "a@b"),
    "duration": ("1h5m", "5x"),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_format(fmt: str) -> None:
    good, bad = CASES[fmt]
    assert _FORMAT_CHECKER.conforms(good, fmt)
    assert not _FORMAT_CHECKER.conforms(bad, fmt)
    assert _FORMAT_CHECKER.conforms(5, fmt)  # non-strings are left to ``type``
