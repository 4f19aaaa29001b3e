"""Errors raised by pycontroller.

    ApiError                 any non-2xx answer from the API server
    ├── NotFoundError        404
    ├── AlreadyExistsError   409, reason AlreadyExists
    ├── ConflictError        409 (optimistic-concurrency conflict)
    ├── GoneError            410 (Gone or Expired: the resourceVersion is too old)
    ├── InvalidError         422
    └── TooManyRequestsError 429 (``retry_after`` seconds, from Retry-After)

``ApiError.body`` is the decoded ``Status`` object when the server sent one.
Listers raise ``NotFoundError`` too, so callers handle "missing" one way
whether it came from the cache or from the server.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A non-2xx answer from the API server (or a cache miss in a lister)."""

    #: Seconds from the answer's ``Retry-After`` header (None: absent). Set on 429s and
    #: on other errors (5xx) that carried one; the client retries those (client-go's
    #: ``checkWait``) before raising.
    retry_after: float | None = None

    def __init__(
        self, status: int, reason: str = "", message: str = "", body: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body

    @property
    def causes(self) -> list[dict[str, Any]]:
        """The ``details.causes`` of the Status body (field paths for 422 Invalid)."""
        details = (self.body or {}).get("details") or {}
        causes = details.get("causes") or []
        return list(causes) if isinstance(causes, list) else []


class NotFoundError(ApiError):
    def __init__(
        self,
        status: int = 404,
        reason: str = "NotFound",
        message: str = "",
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(status, reason, message, body)


class AlreadyExistsError(ApiError):
    pass


class ConflictError(ApiError):
    pass


class GoneError(ApiError):
    pass


class InvalidError(ApiError):
    pass


class TooManyRequestsError(ApiError):
    def __init__(
        self,
        status: int = 429,
        reason: str = "TooManyRequests",
        message: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, reason, message, body)
        self.retry_after = retry_after


def api_error_from_status(
    status: int, body: dict[str, Any] | None, retry_after: float | None = None
) -> ApiError:
    """Map an HTTP status and decoded ``Status`` body to the matching ``ApiError``."""
    reason = str((body or {}).get("reason") or "")
    message = str((body or {}).get("message") or "")
    if status == 404:
        return NotFoundError(status, reason or "NotFound", message, body)
    if status == 409:
        if reason == "AlreadyExists":
            return AlreadyExistsError(status, reason, message, body)
        return ConflictError(status, reason or "Conflict", message, body)
    if status == 410:
        return GoneError(status, reason or "Gone", message, body)
    if status == 422:
        return InvalidError(status, reason or "Invalid", message, body)
    if status == 429:
        return TooManyRequestsError(status, reason or "TooManyRequests", message, body, retry_after)
    err = ApiError(status, reason, message, body)
    err.retry_after = retry_after
    return err
