"""The strict grammar of the nginx.conf that ``controllers.balancer.nginx.render`` emits.

Every line must match one of ``LINES`` (whole-line regexes, one per
directive we emit), the whole text must match ``FILE`` (the block
structure: header, server blocks, upstream blocks, footer), every number
must be in range, and every ``proxy_pass`` must name an upstream defined
exactly once. Names are DNS-1035 labels, numbers are decimal without sign
or leading zero: no byte of user input can open a block, end a directive,
start a comment or a quoted string (``{ } ; # " '``), or a new line.
"""

from __future__ import annotations

import re

LABEL = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
NUMBER = r"[1-9][0-9]{0,9}"

LINES: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in {
        "blank": r"",
        "close": r"\}",
        "events": r"events \{",
        "worker_connections": r"    worker_connections 1024;",
        "stream": r"stream \{",
        "server": r"server \{",
        "listen": rf"    listen (?P<port>{NUMBER}) (?:udp)?;",
        "proxy_pass": rf"    proxy_pass upstream_(?P<upstream>{LABEL});",
        "upstream": rf"upstream upstream_(?P<upstream>{LABEL}) \{{",
        "upstream_server": (
            rf"    server (?P<host>{LABEL}):(?P<port>{NUMBER}) weight=(?P<weight>{NUMBER});"
        ),
    }.items()
}

FILE = re.compile(
    r"events \{\n    worker_connections 1024;\n\}\nstream \{\n"
    rf"(?:\nserver \{{\n    listen {NUMBER} (?:udp)?;\n    proxy_pass upstream_{LABEL};\n\}}\n)*"
    rf"(?:\nupstream upstream_{LABEL} \{{\n"
    rf"(?:    server {LABEL}:{NUMBER} weight={NUMBER};\n)+\n\}}\n)*"
    r"\}\n"
)

_RANGES = {"port": (1, 65535), "weight": (1, 2**31 - 1)}


def _directive(line: str) -> tuple[str, re.Match[str]] | None:
    """(directive name, match) of the ``LINES`` pattern ``line`` matches."""
    for kind, pattern in LINES.items():
        match = pattern.fullmatch(line)
        if match is not None:
            return kind, match
    return None


def violations(text: str, *, references: bool = True) -> list[str]:
    """What in ``text`` breaks the grammar (``[]``: it is well-formed).

    With ``references`` (for validated specs) also: every upstream defined
    once, every ``proxy_pass`` to a defined one. ``render`` alone does not
    look for duplicate names (they cannot inject anything; nginx refuses
    them and ``validate`` reports them), so checks of unvalidated input
    pass ``references=False``.
    """
    out: list[str] = []
    if not text.endswith("\n"):
        out.append("the text does not end with a newline")
    if FILE.fullmatch(text) is None:
        out.append("the block structure does not match FILE")
    proxied: list[str] = []
    defined: list[str] = []
    for number, line in enumerate(text.split("\n")[:-1], 1):
        found = _directive(line)
        if found is None:
            out.append(f"line {number} matches no directive: {line!r}")
            continue
        kind, match = found
        for group, (low, high) in _RANGES.items():
            value = match.groupdict().get(group)
            if value is not None and not low <= int(value) <= high:
                out.append(f"line {number}: {group} {value} out of [{low}, {high}]")
        if kind == "proxy_pass":
            proxied.append(match["upstream"])
        elif kind == "upstream":
            defined.append(match["upstream"])
    if not references:
        return out
    for name in sorted(set(defined)):
        if defined.count(name) > 1:
            out.append(f"upstream upstream_{name} defined {defined.count(name)} times")
    for name in proxied:
        if name not in defined:
            out.append(f"proxy_pass to undefined upstream upstream_{name}")
    return out
