"""Kubernetes label selectors: parsing, validation and matching
(apimachinery ``pkg/labels`` and ``metav1.LabelSelectorAsSelector``).

Three inputs produce a :class:`Selector`:

* the string syntax of ``kubectl -l`` and ``?labelSelector=``:
  ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a``
  (exists), ``!a`` (does not exist), ``a>1`` / ``a<1`` (integer compare),
  comma-separated (all must hold), whitespace-tolerant; ``""`` selects
  everything;
* a ``dict`` of equalities (``{"app": "web"}``), like ``labels.SelectorFromSet``;
* a ``metav1.LabelSelector`` dict (``matchLabels`` + ``matchExpressions`` with
  ``In``/``NotIn``/``Exists``/``DoesNotExist``).

Semantics worth remembering: ``!=`` and ``notin`` also match objects that lack
the key; ``in ()`` means "in the set containing the empty value". Keys must be
qualified names (``[prefix/]name``) and values valid label values, as
Kubernetes validates them; malformed input raises ``ValueError`` naming the
offending part.

This module has no dependencies beyond the standard library: the embedded API
server reuses it to filter lists and watches.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

__all__ = [
    "DNS1035_LABEL_MAX_LENGTH",
    "DNS1123_LABEL_MAX_LENGTH",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "Operator",
    "Requirement",
    "Selector",
    "everything",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "nothing",
    "parse_selector",
    "selector_from_label_selector",
    "selector_from_set",
]

# --------------------------------------------------------------- validation

_NAME_MAX = 63
_NAME_FMT = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(_NAME_FMT)
_DNS1123_LABEL_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(rf"{_DNS1123_LABEL_FMT}(\.{_DNS1123_LABEL_FMT})*")
_DNS1035_LABEL_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

#: Longest DNS-1123 label (RFC 1123): names of most namespaced objects' parts.
DNS1123_LABEL_MAX_LENGTH = 63
#: Longest DNS-1123 subdomain: most object names (ConfigMaps, Deployments, Events).
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
#: Longest DNS-1035 label (RFC 1035): Service names.
DNS1035_LABEL_MAX_LENGTH = 63
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def is_dns1123_label(value: object) -> bool:
    """True iff ``value`` is a str of 1..63 ``[a-z0-9-]`` characters with
    alphanumeric ends (apimachinery ``IsDNS1123Label``)."""
    return (
        isinstance(value, str)
        and len(value) <= DNS1123_LABEL_MAX_LENGTH
        and _DNS1123_LABEL_RE.fullmatch(value) is not None
    )


def is_dns1123_subdomain(value: object) -> bool:
    """True iff ``value`` is a str of at most 253 characters made of
    DNS-1123 labels joined by ``.`` (apimachinery ``IsDNS1123Subdomain``)."""
    return (
        isinstance(value, str)
        and len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH
        and _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None
    )


def is_dns1035_label(value: object) -> bool:
    """True iff ``value`` is a str of 1..63 ``[a-z0-9-]`` characters starting
    with a letter and ending with a letter or digit (apimachinery
    ``IsDNS1035Label``). Such a string carries no whitespace, ``;``, ``{``,
    ``#``, quotes or ``:``."""
    return (
        isinstance(value, str)
        and len(value) <= DNS1035_LABEL_MAX_LENGTH
        and _DNS1035_LABEL_RE.fullmatch(value) is not None
    )


def is_qualified_name(value: str) -> list[str]:
    """Validate a label/annotation key (``[dns-subdomain/]name``).

    Returns the list of problems; empty means valid.
    """
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errors: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errors = []
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > DNS1123_SUBDOMAIN_MAX_LENGTH:
                errors.append(
                    f"prefix part must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
                )
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                errors.append(
                    "prefix part must be a lowercase RFC 1123 subdomain: lower case "
                    "alphanumeric characters, '-' or '.', starting and ending with an "
                    "alphanumeric character (e.g. 'example.com')"
                )
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    else:
        if len(name) > _NAME_MAX:
            errors.append(f"name part must be no more than {_NAME_MAX} characters")
        if not _NAME_RE.fullmatch(name):
            errors.append(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName', "
                f"'my.name' or '123-abc'; regex used for validation is '{_NAME_FMT}')"
            )
    return errors


def is_valid_label_value(value: str) -> list[str]:
    """Validate a label value (empty, or <= 63 chars of ``[A-Za-z0-9_.-]`` with
    alphanumeric ends). Returns the list of problems; empty means valid."""
    errors: list[str] = []
    if len(value) > _NAME_MAX:
        errors.append(f"must be no more than {_NAME_MAX} characters")
    if value and not _NAME_RE.fullmatch(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character "
            f"(regex used for validation is '({_NAME_FMT})?')"
        )
    return errors


# ------------------------------------------------------------- requirements


class Operator(str, enum.Enum):
    """A requirement's operator; the value is its spelling in the string syntax."""

    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_EXACT_OPS = (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS)
_SET_OPS = (Operator.IN, Operator.NOT_IN)
_EXISTENCE_OPS = (Operator.EXISTS, Operator.DOES_NOT_EXIST)
_NUMERIC_OPS = (Operator.GREATER_THAN, Operator.LESS_THAN)


def _parse_int64(value: str) -> int | None:
    if not _INTEGER_RE.fullmatch(value):
        return None
    number = int(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        return None
    return number


@dataclass(frozen=True)
class Requirement:
    """One condition on one label key.

    ``values`` is sorted and de-duplicated. Build requirements with
    :meth:`new`, which validates; the constructor trusts its arguments.
    """

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: Operator | str, values: Iterable[str] = ()) -> Requirement:
        """Validate and build a requirement; ``ValueError`` names the offending part."""
        try:
            op = Operator(operator)
        except ValueError:
            raise ValueError(f"{operator!r} is not a valid label selector operator") from None
        vals = tuple(sorted(set(values)))
        problems = [f"key {key!r}: {p}" for p in is_qualified_name(key)]
        if op in _SET_OPS and not vals:
            problems.append(f"key {key!r}: for 'in', 'notin' operators, values set can't be empty")
        elif op in _EXACT_OPS and len(vals) != 1:
            problems.append(f"key {key!r}: exact-match compatibility requires one single value")
        elif op in _EXISTENCE_OPS and vals:
            problems.append(f"key {key!r}: values set must be empty for exists and does not exist")
        elif op in _NUMERIC_OPS:
            if len(vals) != 1:
                problems.append(
                    f"key {key!r}: for 'gt', 'lt' operators, exactly one value is required"
                )
            for v in vals:
                if _parse_int64(v) is None:
                    problems.append(
                        f"key {key!r}: value {v!r}: for 'gt', 'lt' operators, "
                        "the value must be an integer"
                    )
        for v in vals:
            problems.extend(f"key {key!r}: value {v!r}: {p}" for p in is_valid_label_value(v))
        if problems:
            raise ValueError("invalid label requirement: " + "; ".join(problems))
        return cls(key, op, vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfies this requirement.

        ``!=`` and ``notin`` hold when the key is absent; ``gt``/``lt`` need a
        present, integer-valued label.
        """
        op = self.operator
        present = self.key in labels
        if op is Operator.EXISTS:
            return present
        if op is Operator.DOES_NOT_EXIST:
            return not present
        if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN):
            return present and labels[self.key] in self.values
        if op in (Operator.NOT_EQUALS, Operator.NOT_IN):
            return not present or labels[self.key] not in self.values
        # GREATER_THAN / LESS_THAN
        if not present:
            return False
        have = _parse_int64(labels[self.key])
        if have is None:
            logger.debug("label %s=%r is not an integer", self.key, labels[self.key])
            return False
        want = _parse_int64(self.values[0]) if self.values else None
        if want is None:
            return False
        return have > want if op is Operator.GREATER_THAN else have < want

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in _SET_OPS:
            return f"{self.key} {op.value} ({','.join(self.values)})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{self.values[0] if self.values else ''}"


# ---------------------------------------------------------------- selectors


class Selector:
    """A conjunction of requirements (all must hold).

    Immutable. A selector with no requirements selects everything, except the
    special :func:`nothing` selector (a nil ``LabelSelector``), which selects
    nothing. ``str()`` gives the canonical string form (requirements sorted by
    key), which :func:`parse_selector` reads back to an equal selector.
    """

    __slots__ = ("_matches_nothing", "_requirements")

    def __init__(self, requirements: Iterable[Requirement] = (), *, matches_nothing: bool = False):
        self._requirements: tuple[Requirement, ...] = tuple(
            sorted(requirements, key=lambda r: r.key)
        )
        self._matches_nothing = matches_nothing

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements, sorted by key (stable for equal keys)."""
        return self._requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` (``None`` = no labels) is selected."""
        if self._matches_nothing:
            return False
        ls: Mapping[str, str] = labels if labels is not None else {}
        return all(r.matches(ls) for r in self._requirements)

    def empty(self) -> bool:
        """True if this selector selects everything (it has no requirements)."""
        return not self._requirements and not self._matches_nothing

    def add(self, *requirements: Requirement) -> Selector:
        """Return a new selector with ``requirements`` added."""
        return Selector((*self._requirements, *requirements), matches_nothing=self._matches_nothing)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        if self._matches_nothing:
            return "Selector(<nothing>)"
        return f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return (
            self._requirements == other._requirements
            and self._matches_nothing == other._matches_nothing
        )

    def __hash__(self) -> int:
        return hash((self._requirements, self._matches_nothing))


def everything() -> Selector:
    """A selector matching every object."""
    return Selector()


def nothing() -> Selector:
    """A selector matching no object (what a nil ``LabelSelector`` means)."""
    return Selector(matches_nothing=True)


def selector_from_set(labels: Mapping[str, Any] | None) -> Selector:
    """A selector requiring every ``key=value`` of ``labels``; empty selects everything.

    Raises ``ValueError`` for a non-string or invalid key or value.
    """
    if not labels:
        return everything()
    reqs = []
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(
                f"label selector set: key and value must be strings, got {key!r}: {value!r}"
            )
        reqs.append(Requirement.new(key, Operator.EQUALS, [value]))
    return Selector(reqs)


_LABEL_SELECTOR_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def selector_from_label_selector(ls: Mapping[str, Any] | None) -> Selector:
    """Convert a ``metav1.LabelSelector`` dict (``LabelSelectorAsSelector``).

    ``None`` selects nothing; ``{}`` (no matchLabels, no matchExpressions)
    selects everything. Raises ``ValueError`` for an unknown operator, bad
    shape, or invalid key/values.
    """
    if ls is None:
        return nothing()
    if not isinstance(ls, Mapping):
        raise ValueError(f"label selector must be an object, got {ls!r}")
    unknown = sorted(set(ls) - {"matchLabels", "matchExpressions"})
    if unknown:
        raise ValueError(f"label selector: unknown field(s) {unknown}")
    match_labels = ls.get("matchLabels") or {}
    match_expressions = ls.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping):
        raise ValueError(f"label selector: matchLabels must be an object, got {match_labels!r}")
    if not isinstance(match_expressions, list):
        raise ValueError(
            f"label selector: matchExpressions must be a list, got {match_expressions!r}"
        )
    reqs = list(selector_from_set(match_labels).requirements)
    for i, expr in enumerate(match_expressions):
        where = f"label selector: matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            raise ValueError(f"{where} must be an object, got {expr!r}")
        key = expr.get("key")
        operator = expr.get("operator")
        values = expr.get("values") or []
        if not isinstance(key, str):
            raise ValueError(f"{where}.key must be a string, got {key!r}")
        if operator not in _LABEL_SELECTOR_OPERATORS:
            raise ValueError(f"{where}: {operator!r} is not a valid label selector operator")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{where}.values must be a list of strings, got {values!r}")
        try:
            reqs.append(Requirement.new(key, _LABEL_SELECTOR_OPERATORS[operator], values))
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
    return Selector(reqs)


def _is_label_selector_shape(sel: Mapping[str, Any]) -> bool:
    """A dict is a LabelSelector (not an equality set) if a matchLabels /
    matchExpressions entry holds a non-string (an equality set's values are strings)."""
    return any(
        k in ("matchLabels", "matchExpressions") and not isinstance(v, str) for k, v in sel.items()
    )


def parse_selector(sel: str | Mapping[str, Any] | Selector | None) -> Selector:
    """Build a :class:`Selector` from any accepted form.

    ``None`` and ``""`` select everything. A ``str`` is parsed with the
    Kubernetes syntax; a dict is a ``metav1.LabelSelector`` if it has a
    ``matchLabels``/``matchExpressions`` object or list, else a set of
    equalities. A ``Selector`` is returned as is. Raises ``ValueError`` on
    malformed input.
    """
    if sel is None:
        return everything()
    if isinstance(sel, Selector):
        return sel
    if isinstance(sel, str):
        return _Parser(sel).parse()
    if isinstance(sel, Mapping):
        if _is_label_selector_shape(sel):
            return selector_from_label_selector(sel)
        return selector_from_set(sel)
    raise ValueError(f"unsupported label selector {sel!r}: expected str, dict or None")


# ------------------------------------------------------------------- parser

_WHITESPACE = " \t\r\n"
_SPECIAL = "!=<>(),"

_IDENT, _IN, _NOTIN, _EOS = "identifier", "'in'", "'notin'", "end of string"


class _Parser:
    """Recursive-descent parser for the string syntax (one use per instance)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._tokens = self._lex(text)
        self._pos = 0

    def _error(self, problem: str) -> ValueError:
        return ValueError(f"invalid label selector {self._text!r}: {problem}")

    def _lex(self, text: str) -> list[tuple[str, str, int]]:
        """Tokens as (kind, literal, offset); kind is the literal for operators."""
        tokens: list[tuple[str, str, int]] = []
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch in _WHITESPACE:
                i += 1
                continue
            if ch in _SPECIAL:
                two = text[i : i + 2]
                if two in ("==", "!="):
                    tokens.append((two, two, i))
                    i += 2
                else:
                    tokens.append((ch, ch, i))
                    i += 1
                continue
            start = i
            while i < n and text[i] not in _WHITESPACE and text[i] not in _SPECIAL:
                i += 1
            word = text[start:i]
            kind = {"in": _IN, "notin": _NOTIN}.get(word, _IDENT)
            tokens.append((kind, word, start))
        tokens.append((_EOS, "", n))
        return tokens

    def _peek(self) -> tuple[str, str, int]:
        return self._tokens[self._pos]

    def _next(self) -> tuple[str, str, int]:
        tok = self._tokens[self._pos]
        if tok[0] != _EOS:
            self._pos += 1
        return tok

    def _unexpected(self, tok: tuple[str, str, int], expected: str) -> ValueError:
        kind, literal, offset = tok
        found = "end of string" if kind == _EOS else repr(literal)
        return self._error(f"found {found} at position {offset}, expected {expected}")

    def parse(self) -> Selector:
        if self._peek()[0] == _EOS:
            return everything()
        reqs = [self._requirement()]
        while True:
            tok = self._next()
            if tok[0] == _EOS:
                return Selector(reqs)
            if tok[0] != ",":
                raise self._unexpected(tok, "',' or end of string")
            reqs.append(self._requirement())

    def _key(self) -> str:
        tok = self._next()
        # 'in'/'notin' are ordinary identifiers in key position.
        if tok[0] not in (_IDENT, _IN, _NOTIN):
            raise self._unexpected(tok, "a label key")
        return tok[1]

    def _requirement(self) -> Requirement:
        start = self._peek()[2]
        if self._peek()[0] == "!":
            self._next()
            key = self._key()
            return self._build(start, key, Operator.DOES_NOT_EXIST, [])
        key = self._key()
        kind = self._peek()[0]
        if kind in (",", _EOS):
            return self._build(start, key, Operator.EXISTS, [])
        op_tok = self._next()
        exact = {
            "=": Operator.EQUALS,
            "==": Operator.DOUBLE_EQUALS,
            "!=": Operator.NOT_EQUALS,
            ">": Operator.GREATER_THAN,
            "<": Operator.LESS_THAN,
        }
        if op_tok[0] in exact:
            return self._build(start, key, exact[op_tok[0]], [self._exact_value()])
        if op_tok[0] in (_IN, _NOTIN):
            op = Operator.IN if op_tok[0] == _IN else Operator.NOT_IN
            return self._build(start, key, op, self._value_set())
        raise self._unexpected(op_tok, "'=', '==', '!=', 'in', 'notin', '>', '<', ',' or end")

    def _exact_value(self) -> str:
        kind = self._peek()[0]
        if kind in (",", _EOS):
            return ""  # "a=" means the label is present with an empty value
        tok = self._next()
        if tok[0] not in (_IDENT, _IN, _NOTIN):
            raise self._unexpected(tok, "a value")
        return tok[1]

    def _value_set(self) -> list[str]:
        tok = self._next()
        if tok[0] != "(":
            raise self._unexpected(tok, "'('")
        values: list[str] = []
        expect_value = True
        while True:
            tok = self._next()
            if tok[0] in (_IDENT, _IN, _NOTIN) and expect_value:
                values.append(tok[1])
                expect_value = False
            elif tok[0] == ",":
                if expect_value:
                    values.append("")  # "(a,,b)" and "(,a)" hold an empty value
                expect_value = True
            elif tok[0] == ")":
                if expect_value:
                    values.append("")  # "()" and "(a,)" hold an empty value
                return values
            else:
                raise self._unexpected(tok, "a value, ',' or ')'")

    def _build(self, start: int, key: str, op: Operator, values: list[str]) -> Requirement:
        try:
            return Requirement.new(key, op, values)
        except ValueError as err:
            raise self._error(f"at position {start}: {err}") from None
