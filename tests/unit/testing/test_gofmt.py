"""gofmt.quote is Go's strconv.Quote (outputs checked against Go's documented rules)."""

from __future__ import annotations

import pytest

from pycontroller.testing.apiserver.gofmt import quote


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("a\tb\nc", '"a\\tb\\nc"'),
        ("\x01\x7f", '"\\x01\\x7f"'),
        ("é ü 日本", '"é ü 日本"'),  # printable runes stay UTF-8
        ("\u00a0", '"\\u00a0"'),  # a non-ASCII space is not printable for Go
        ("\U000e0001", '"\\U000e0001"'),  # a format character beyond the BMP
    ],
)
def test_quote_is_strconv_quote(value: str, quoted: str) -> None:
    assert quote(value) == quoted
