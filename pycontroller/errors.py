"""Errors raised by pycontroller.

    ApiError                 any non-2xx answer from the API server
    ├── NotFoundError        reason NotFound (or 404)
    ├── AlreadyExistsError   reason AlreadyExists
    ├── ConflictError        reason Conflict (or 409: optimistic-concurrency conflict)
    ├── GoneError            reason Gone or Expired (or 410: the resourceVersion is too old)
    ├── InvalidError         reason Invalid (or 422)
    └── TooManyRequestsError reason TooManyRequests (or 429; ``retry_after`` from Retry-After)

As apimachinery's ``IsNotFound`` & co., a ``Status`` body's known ``reason``
decides the class; only a Status without one (or with an unknown one) is
classified by its ``code``, else by the HTTP status.

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


# apimachinery's ``knownReasons``: a Status with one of these reasons is
# classified by its reason alone; any other reason (or none) by its code.
_KNOWN_REASONS = frozenset(
    {
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    }
)

# The code each classified subclass stands for (for reason-less Statuses).
_CLASS_BY_CODE = {
    404: "NotFound",
    409: "Conflict",
    410: "Gone",
    422: "Invalid",
    429: "TooManyRequests",
}


def api_error_from_status(
    status: int, body: dict[str, Any] | None, retry_after: float | None = None
) -> ApiError:
    """Map an HTTP status and decoded ``Status`` body to the matching ``ApiError``.

    Classified as apimachinery's ``IsNotFound``/``IsConflict``/... do
    (``reasonAndCodeForError``): by the Status ``reason`` when it is a known
    one, else by the Status ``code`` (the HTTP status when the body has
    none). So a 500 whose Status says ``reason: NotFound`` is a
    ``NotFoundError``, and a 404 whose Status says ``reason: Forbidden`` is
    not. ``ApiError.status`` is always the HTTP status.
    """
    reason = str((body or {}).get("reason") or "")
    message = str((body or {}).get("message") or "")
    if reason in _KNOWN_REASONS:
        kind = "Gone" if reason == "Expired" else reason
    else:
        code = (body or {}).get("code")
        if not isinstance(code, int) or isinstance(code, bool) or code <= 0:
            code = status
        kind = _CLASS_BY_CODE.get(code, "")
    if kind == "NotFound":
        return NotFoundError(status, reason or "NotFound", message, body)
    if kind == "AlreadyExists":
        return AlreadyExistsError(status, reason, message, body)
    if kind == "Conflict":
        return ConflictError(status, reason or "Conflict", message, body)
    if kind == "Gone":
        return GoneError(status, reason or "Gone", message, body)
    if kind == "Invalid":
        return InvalidError(status, reason or "Invalid", message, body)
    if kind == "TooManyRequests":
        return TooManyRequestsError(status, reason or "TooManyRequests", message, body, retry_after)
    err = ApiError(status, reason, message, body)
    err.retry_after = retry_after
    return err
