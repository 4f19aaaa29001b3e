"""``resource.Quantity`` as kube-apiserver parses and writes it.

A built-in object's quantities (a container's ``resources``, a PVC's
``storage``, a ResourceQuota's ``hard``, a node's ``capacity``...) are decoded
into ``resource.Quantity`` and written back with ``MarshalJSON``, so what a
client reads is the *canonical* form, not the text it sent: ``1024Mi`` is
read back as ``1Gi``, ``0.5`` as ``500m``, ``1000`` as ``1k``, a JSON number
``2`` as the string ``"2"``. A controller that compares the quantities it
wrote with the ones it reads must expect this (or it rewrites them forever on
a cluster); the embedded server does the same so a test shows it.

This is a port of ``k8s.io/apimachinery/pkg/api/resource`` (quantity.go,
amount.go, suffix.go; v0.32): ``parseQuantityString``'s scanner, the int64
fast path that keeps the text it was given when that text is already
canonical, the exact decimal path that rounds up to the nano, and
``CanonicalizeBytes``. No maintained Python package does this: the
``kubernetes`` client's ``parse_quantity`` returns a ``Decimal`` and has no
canonical writer, and its parsing rules differ from Go's (it rounds nothing
and accepts other spellings).
"""

from __future__ import annotations

import decimal
import json
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

__all__ = ["Quantity", "QuantityError", "canonical", "check", "parse", "value"]

# resource.ErrFormatWrong, ErrNumeric and ErrSuffix.
FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC = "unable to parse numeric part of quantity"
SUFFIX = "unable to parse quantity's suffix"

DECIMAL_EXPONENT = "DecimalExponent"
DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12}
_DECIMAL_SUFFIXES |= {"P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {e: s for s, e in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = -9
_MAX_INT64 = 2**63 - 1
_MAX_INT64_FACTORS = 18
# Exact decimal arithmetic whatever the size (inf.Dec's): a quantity may be
# "1e999999999" or have thousands of digits, and must cost no more than Go.
_EXACT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.Overflow],
)
_NANO_DEC = Decimal("1e-9")


class QuantityError(ValueError):
    """A text ``resource.ParseQuantity`` refuses; the message is Go's."""


class Quantity(NamedTuple):
    """A parsed quantity: its exact value, its format, and the text Go keeps
    (``s``: set when the text was already canonical, and then written as is)."""

    amount: Decimal
    format: str
    s: str | None = None


def _scan(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: (positive, value, num, denom, suffix)."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":  # leading zeros
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_WRONG)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix (``suffixHandler.interpret``)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        try:  # strconv.ParseInt: an optional sign and digits (the scanner allows no more)
            return 10, int(suffix[1:], 10), DECIMAL_EXPONENT
        except ValueError:
            raise QuantityError(SUFFIX) from None
    raise QuantityError(SUFFIX)


def parse(text: str) -> Quantity:
    """``resource.ParseQuantity``; raises :class:`QuantityError` with Go's message."""
    if not text:
        raise QuantityError(FORMAT_WRONG)
    if text == "0":
        return Quantity(Decimal(0), DECIMAL_SI, "0")
    positive, number, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    # The int64 fast path: exact, and keeps the text when it is canonical.
    precision, scale, mantissa = 0, 0, 1
    if fmt in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - exponent * 3 // 10 - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO:
            shifted = num + denom
            result = int(shifted) * mantissa
            if result <= _MAX_INT64:
                amount = Decimal((0 if positive else 1, tuple(map(int, str(result))), scale))
                if fmt == BINARY_SI:
                    keep = exponent % 10 == 0 and int(shifted) & 0x07 != 0
                else:
                    keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(amount, fmt, text if keep else None)
    # The exact decimal path (inf.Dec).
    try:
        amount = _EXACT.create_decimal(number)
    except decimal.InvalidOperation:
        raise QuantityError(NUMERIC) from None
    if not amount.is_finite():
        raise QuantityError(NUMERIC)
    if base == 10:
        amount = amount.scaleb(exponent, _EXACT)
    else:
        amount = _EXACT.multiply(amount, Decimal(2**exponent))
    negative = amount.is_signed()
    amount = amount.copy_abs()
    if amount and amount.as_tuple().exponent < _NANO:  # type: ignore[operator]
        # rounded up to the nano: asking for some gets at least some
        amount = amount.quantize(_NANO_DEC, decimal.ROUND_UP, _EXACT)
    if fmt == BINARY_SI and amount > _MAX_INT64:
        amount = Decimal(_MAX_INT64)
    if fmt == BINARY_SI and 0 < amount < 1:
        fmt = DECIMAL_SI
    return Quantity(amount.copy_negate() if negative else amount, fmt)


def _remove_factors(n: int, factor: int) -> tuple[int, int]:
    times = 0
    while n and n % factor == 0:
        n //= factor
        times += 1
    return n, times


def _canonical(q: Quantity) -> str:
    """``Quantity.CanonicalizeBytes``: number and suffix."""
    amount = q.amount
    if not amount:
        return "0"
    fmt = q.format
    if fmt == BINARY_SI and (-1024 < amount < 1024 or amount != amount.to_integral_value()):
        fmt = DECIMAL_SI  # no rounding, no confusion; no lost precision
    if fmt == BINARY_SI:  # |amount| <= 2^63 here
        mantissa, times = _remove_factors(int(amount), 1024)
        return f"{mantissa}{_BINARY_BY_EXPONENT.get(times * 10, '')}"
    # Decimal: the digits without trailing zeros, and a power of ten brought
    # down to a multiple of 3.
    sign, digits, exponent = amount.normalize(_EXACT).as_tuple()
    assert isinstance(exponent, int)
    pad = exponent % 3
    number = "-" * sign + "".join(map(str, digits)) + "0" * pad
    exponent -= pad
    if fmt == DECIMAL_EXPONENT:
        return f"{number}e{exponent}" if exponent else number
    # Go writes no suffix where its table has none (exponents above 18).
    return number + _DECIMAL_BY_EXPONENT.get(exponent, "")


def _text(raw: Any) -> str:
    """The text ``Quantity.UnmarshalJSON`` parses: a string, or a JSON number's text."""
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise QuantityError(FORMAT_WRONG)
    return json.dumps(raw)


def check(raw: Any) -> None:
    """Raise :class:`QuantityError` if ``Quantity.UnmarshalJSON`` refuses ``raw``
    (``null`` is the zero quantity)."""
    if raw is not None:
        parse(_text(raw))


def canonical(raw: Any) -> str:
    """What kube-apiserver writes for a quantity it was sent as ``raw`` (a
    string or a JSON number): ``MarshalJSON`` of the parsed value."""
    if raw is None:
        return "0"
    q = parse(_text(raw))
    return q.s if q.s is not None else _canonical(q)


def value(raw: Any) -> Fraction | None:
    """The value of ``raw`` (None if it is not a quantity), exact up to 10^40
    (larger ones are clamped there: no resource comes near it, and the exact
    value of "1e999999999" would take a billion digits)."""
    try:
        amount = parse(_text(raw)).amount
    except QuantityError:
        return None
    if amount.adjusted() > 40:
        return Fraction(-(10**40) if amount < 0 else 10**40)
    return Fraction(amount)
