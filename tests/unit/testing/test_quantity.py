"""``resource.Quantity`` parsing and canonical form, as apimachinery v0.32 has them.

Each expected string is what Go's ``Quantity.MarshalJSON`` writes for the text
(worked through ``quantity.go``/``amount.go``: the int64 fast path keeps a text
that is already canonical, anything else is rewritten with the largest suffix
that keeps it an integer, fractions below a nano round up).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycontroller.testing.apiserver.schema import quantity


@pytest.mark.parametrize(
    ("text", "written"),
    [
        # rewritten: binary multiples up to the largest exact suffix
        ("1024Mi", "1Gi"),
        ("1024Ki", "1Mi"),
        ("8Ki", "8Ki"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("-1024Mi", "-1Gi"),
        # a binary fraction is written in decimal, never rounded
        ("1.1Ki", "1126400m"),
        # decimal: trailing zeros move into the suffix, exponents are multiples of 3
        ("1000", "1k"),
        ("2000", "2k"),
        ("1000k", "1M"),
        ("1000m", "1"),
        ("0.5", "500m"),
        ("0.1", "100m"),
        ("5.5", "5500m"),
        ("0.0001", "100u"),
        ("1.5e3", "1500"),
        # below a nano: rounded up (away from zero)
        ("0.1n", "1n"),
        ("-0.1n", "-1n"),
        ("1e-12", "1e-9"),
        # kept as sent: already canonical for the fast path
        ("100m", "100m"),
        ("1Gi", "1Gi"),
        ("3Ki", "3Ki"),
        ("129M", "129M"),
        ("1e3", "1e3"),
        ("1.500", "1.500"),
        ("01Ki", "01Ki"),
        # zeros
        ("0", "0"),
        ("-0", "0"),
        ("0.0", "0"),
        ("0Ki", "0"),
        # whitespace around the text is trimmed (UnmarshalJSON)
        (" 1Gi ", "1Gi"),
        # huge exponents cost nothing
        ("1e999999999", "1e999999999"),
        ("1e-999999999", "1e-9"),
        # BinarySI is capped at MaxInt64
        ("10Ei", "9223372036854775807"),
    ],
)
def test_canonical_form_is_go_marshal_json(text: str, written: str) -> None:
    assert quantity.canonical(text) == written


def test_json_numbers_are_written_as_strings() -> None:
    assert quantity.canonical(2) == "2"
    assert quantity.canonical(0.5) == "500m"
    assert quantity.canonical(None) == "0"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", quantity.FORMAT_WRONG),
        ("abc", quantity.FORMAT_WRONG),
        ("1.2.3", quantity.FORMAT_WRONG),
        ("1Kb", quantity.FORMAT_WRONG),
        ("1KK", quantity.SUFFIX),
        ("1e", quantity.SUFFIX),
        ("1e+", quantity.SUFFIX),
        ("--1", quantity.SUFFIX),
    ],
)
def test_invalid_texts_fail_with_go_messages(text: str, message: str) -> None:
    with pytest.raises(quantity.QuantityError) as err:
        quantity.parse(text)
    assert str(err.value) == message


def test_value_is_exact_and_none_for_garbage() -> None:
    assert quantity.value("1.5Gi") == Fraction(3 * 2**29)
    assert quantity.value("250m") == Fraction(1, 4)
    assert quantity.value(True) is None
    assert quantity.value("x") is None
    assert quantity.value("1e999999999") == Fraction(10**40)


# The kubernetes client's parse_quantity as an oracle for the value (it keeps
# full precision and has no canonical writer: values exact to the nano, where
# Go neither rounds nor caps binary values at MaxInt64, must agree).
_NUMBERS = st.one_of(
    st.integers(0, 10**9).map(str),
    st.decimals(min_value=0, max_value=10**6, places=3, allow_nan=False).map(str),
)
_SUFFIXES = st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e3", "E2"])


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(number=_NUMBERS, suffix=_SUFFIXES, sign=st.sampled_from(["", "-"]))
def test_values_agree_with_the_kubernetes_client(number: str, suffix: str, sign: str) -> None:
    from kubernetes.utils.quantity import parse_quantity

    text = f"{sign}{number}{suffix}"
    ours = quantity.value(text)
    assert ours is not None, text
    assert ours == Fraction(parse_quantity(text)), text
    # and what the server writes back means the same value
    assert quantity.value(quantity.canonical(text)) == ours, text
