"""Object name validation and ``generateName``, as kube-apiserver does them.

``validate_name(rule, name)`` returns error messages (empty when valid) for the
rules a ``ResourceType.name_rule`` names: ``subdomain`` (DNS-1123 subdomain,
most kinds), ``label`` (DNS-1123 label, namespaces), ``dns1035`` (DNS-1035
label, services) and ``path`` (path segment name, anything without ``/``,
``%`` or a bare ``.``/``..``).
"""

from __future__ import annotations

import random
import re

__all__ = [
    "config_key_errors",
    "generate_name",
    "label_value_errors",
    "qualified_name_errors",
    "regex_error",
    "validate_name",
]

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"

_LABEL_RE = re.compile(rf"^{_DNS1123_LABEL}$")
_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_SUBDOMAIN}$")
_DNS1035_RE = re.compile(rf"^{_DNS1035_LABEL}$")

# The alphabet of k8s.io/apimachinery/pkg/util/rand.String: no vowels, no
# confusable digits, so generated names never spell words.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM = random.SystemRandom()


def generate_name(base: str) -> str:
    """``base`` (truncated so the result fits 63 chars) + 5 random characters."""
    max_base = 63 - 5
    if len(base) > max_base:
        base = base[:max_base]
    return base + "".join(_RANDOM.choice(_ALPHABET) for _ in range(5))


def validate_name(rule: str, name: str) -> list[str]:
    """Messages describing why ``name`` violates ``rule`` (empty if valid)."""
    if rule == "path":
        errs = []
        if name in (".", ".."):
            errs.append(f"may not be '{name}'")
        for ch in ("/", "%"):
            if ch in name:
                errs.append(f"may not contain '{ch}'")
        return errs
    if rule == "label":
        errs = []
        if len(name) > 63:
            errs.append("must be no more than 63 characters")
        if not _LABEL_RE.fullmatch(name):
            errs.append(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                "characters or '-', and must start and end with an alphanumeric character "
                "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                f"'{_DNS1123_LABEL}')"
            )
        return errs
    if rule == "dns1035":
        errs = []
        if len(name) > 63:
            errs.append("must be no more than 63 characters")
        if not _DNS1035_RE.fullmatch(name):
            errs.append(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                f"(e.g. 'my-name',  or 'abc-123', regex used for validation is '{_DNS1035_LABEL}')"
            )
        return errs
    errs = []
    if len(name) > 253:
        errs.append("must be no more than 253 characters")
    if not _SUBDOMAIN_RE.fullmatch(name):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            f"'example.com', regex used for validation is '{_DNS1123_SUBDOMAIN}')"
        )
    return errs


# k8s.io/apimachinery/pkg/util/validation: label keys and annotation keys are
# qualified names (an optional DNS subdomain prefix and "/", then a name part);
# label values are at most 63 characters of the same alphabet, or empty.
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(rf"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE_RE = re.compile(rf"^{_LABEL_VALUE_FMT}$")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError`` (its doubled space before "or" included)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)


def config_key_errors(key: str) -> list[str]:
    """``validation.IsConfigMapKey``: a ConfigMap or Secret key, and the keys
    pods reference in them."""
    errs = []
    if len(key) > 253:
        errs.append("must be no more than 253 characters")
    if not _CONFIG_KEY_RE.fullmatch(key):
        errs.append(
            regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                _CONFIG_KEY_FMT,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """``validation.IsQualifiedName``."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in validate_name("subdomain", prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """``validation.IsValidLabelValue``."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
