"""Go's formatting of values in kube's messages, in one place.

``quote`` is ``strconv.Quote`` (and ``%q`` of a string): printable runes
(``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the
ASCII space) are kept, UTF-8 and all; ``"`` and ``\\`` are escaped; the
other runes become ``\\a \\b \\f \\n \\r \\t \\v``, ``\\xNN`` below a space (and
DEL), ``\\uNNNN`` or ``\\UNNNNNNNN`` (lower-case hex, as Go writes them).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

__all__ = ["go_json", "is_print", "quote", "value_text"]

_ESCAPES = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
    "\r": "\\r", "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\",
}  # fmt: skip


def is_print(ch: str) -> bool:
    """Go's ``unicode.IsPrint`` for one character."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def quote(value: str) -> str:
    """``strconv.Quote(value)``."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'  # the common case
    out = ['"']
    for ch in value:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif is_print(ch):
            out.append(ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def value_text(value: Any) -> str:
    """A simple value as ``field.Error`` prints it: a string ``%q``, a number
    or bool ``%v``."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def go_json(obj: Any) -> str:
    """``json.Marshal`` of a ``map[string]interface{}``: sorted keys, compact,
    HTML characters and the two JavaScript line separators escaped."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(ch, esc)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
