"""Fault injection for tests: fail the next matching requests, add latency.

``fail_next`` rules are consumed in the order they were added; each matches
on method (upper-case, None = any) and a regex searched in the path with its
query string. A matching request consumes one of the rule's ``times`` and is
answered with that status and a ``Status`` body (429 also carries
``Retry-After``: 1 second unless the rule gives ``retry_after``). Latency
rules sleep before handling every matching request until cleared.
``delay_watch_events`` holds every watch event back that many seconds after
its commit (a lagging watch cache), in order, on open and new watches alike.
Thread-safe.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from pycontroller.testing.apiserver.status import StatusError, for_code

__all__ = ["Faults"]


@dataclass
class _FailRule:
    status: int
    remaining: int
    method: str | None
    pattern: re.Pattern[str] | None
    message: str
    retry_after: int | None = None

    def error(self) -> StatusError:
        err = for_code(self.status, self.message)
        if self.retry_after is not None:
            # kube-apiserver sends both: the header and details.retryAfterSeconds.
            err.headers["Retry-After"] = str(self.retry_after)
            err.details = {**(err.details or {}), "retryAfterSeconds": self.retry_after}
        return err

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
        self._delayed = 0
        #: Seconds each watch event is held back after its commit (0: none).
        #: Read without the lock by every watcher on each event (a float read).
        self.watch_event_delay = 0.0

    def fail_next(
        self,
        status: int = 500,
        times: int = 1,
        method: str | None = None,
        path_regex: str | None = None,
        message: str = "",
        retry_after: int | None = None,
    ) -> None:
        """Fail the next ``times`` matching requests with ``status``.

        ``retry_after`` (seconds) sets the ``Retry-After`` header (and
        ``details.retryAfterSeconds``) of the answer, whatever its status.
        """
        if times <= 0:
            return
        if retry_after is not None and retry_after < 0:
            raise ValueError("retry_after must be >= 0")
        rule = _FailRule(
            status,
            times,
            method.upper() if method else None,
            re.compile(path_regex) if path_regex else None,
            message,
            retry_after,
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

    def delay_watch_events(self, seconds: float) -> None:
        """Deliver each watch event ``seconds`` after it was committed (0 stops delaying)."""
        if not seconds >= 0:
            raise ValueError("seconds must be >= 0")
        self.watch_event_delay = float(seconds)

    def pending(self) -> int:
        """Failures still to be answered by the ``fail_next`` rules."""
        with self._lock:
            return sum(r.remaining for r in self._fail)

    def clear(self) -> None:
        with self._lock:
            self._fail.clear()
            self._latency.clear()
            self.watch_event_delay = 0.0

    def latency_for(self, path: str) -> float:
        """Seconds to delay a request for ``path``; a positive answer counts as delayed."""
        with self._lock:
            seconds = sum(
                r.seconds for r in self._latency if r.pattern is None or r.pattern.search(path)
            )
            if seconds > 0:
                self._delayed += 1
            return seconds

    def delayed(self) -> int:
        """Requests delayed by a latency rule so far (started, not necessarily answered):
        a test waits on it to know that a request is hanging."""
        with self._lock:
            return self._delayed

    def check(self, method: str, path: str) -> None:
        """Raise the injected error if a fail rule matches (consuming one use)."""
        with self._lock:
            for rule in self._fail:
                if rule.matches(method, path):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._fail.remove(rule)
                    err = rule.error()
                    break
            else:
                return
        raise err
