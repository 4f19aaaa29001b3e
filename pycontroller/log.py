"""Process-wide logging configuration for controller programs (``--log-level``, ``--log-format``).

The library never configures handlers; ``Manager.from_args`` calls
``configure`` on behalf of a program's ``__main__`` (the only place that
may), and everything else logs through module loggers. Every record
becomes one line. Controllers write messages as ``key=value`` pairs
(``controller=balancer key=ns/name action=create ...``); the JSON format
lifts those pairs into fields of the JSON object, so ``controller``,
``key`` and ``action`` are queryable without parsing the message.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any, TextIO

FORMATS = ("text", "json")

_TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# key=value pairs; a value is the run of non-space characters after "=" (messages put
# free text with spaces last, e.g. message=...).
_PAIR_RE = re.compile(r"(?:^|\s)([a-zA-Z_][\w.-]*)=(\S*)")


def _utc_time(record: logging.LogRecord) -> str:
    """``record``'s creation time as RFC 3339 UTC with milliseconds."""
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{base}.{int(record.msecs):03d}Z"


class JSONFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, key=value fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        out: dict[str, Any] = {
            "ts": _utc_time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": message,
        }
        for key, value in _PAIR_RE.findall(message):
            out.setdefault(key, value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _UTCFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _utc_time(record)


def configure(level: str = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Send every log record to ``stream`` (stderr) as one line of ``fmt``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; want one of {FORMATS}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else _UTCFormatter(_TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The kubernetes client's urllib3 pool is chatty at DEBUG; keep it at WARNING.
    logging.getLogger("urllib3").setLevel(max(logging.WARNING, root.level))
