"""Fault injection for tests: fail the next matching requests, add latency.

``fail_next`` rules are consumed in the order they were added; each matches
on method (upper-case, None = any) and a regex searched in the path with its
query string. A matching request consumes one of the rule's ``times`` and is
answered with that status and a ``Status`` body (429 also carries
``Retry-After: 1``). Latency rules sleep before handling every matching
request until cleared. Thread-safe.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from pycontroller.testing.apiserver.status import for_code

__all__ = ["Faults"]


@dataclass
class _FailRule:
    status: int
    remaining: int
    method: str | None
    pattern: re.Pattern[str] | None
    message: str

    def matches(self, method: str, path: str) -> bool:
        if self.method is not None and self.method != method:
            return False
        return self.pattern is None or self.pattern.search(path) is not None


@dataclass
class _LatencyRule:
    seconds: float
    pattern: re.Pattern[str] | None


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fail: list[_FailRule] = []
        self._latency: list[_LatencyRule] = []

    def fail_next(
        self,
        status: int = 500,
        times: int = 1,
        method: str | None = None,
        path_regex: str | None = None,
        message: str = "",
    ) -> None:
        if times <= 0:
            return
        rule = _FailRule(
            status,
            times,
            method.upper() if method else None,
            re.compile(path_regex) if path_regex else None,
            message,
        )
        with self._lock:
            self._fail.append(rule)

    def set_latency(self, seconds: float, path_regex: str | None = None) -> None:
        """Delay matching requests by ``seconds`` (0 removes the rule for that regex)."""
        pattern = re.compile(path_regex) if path_regex else None
        with self._lock:
            self._latency = [
                r for r in self._latency if (r.pattern.pattern if r.pattern else None) != path_regex
            ]
            if seconds > 0:
                self._latency.append(_LatencyRule(seconds, pattern))

    def clear(self) -> None:
        with self._lock:
            self._fail.clear()
            self._latency.clear()

    def latency_for(self, path: str) -> float:
        with self._lock:
            return sum(
                r.seconds for r in self._latency if r.pattern is None or r.pattern.search(path)
            )

    def check(self, method: str, path: str) -> None:
        """Raise the injected error if a fail rule matches (consuming one use)."""
        with self._lock:
            for rule in self._fail:
                if rule.matches(method, path):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._fail.remove(rule)
                    err = for_code(rule.status, rule.message)
                    break
            else:
                return
        raise err
