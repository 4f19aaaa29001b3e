"""``Status`` bodies and the exception that carries one.

Every error the embedded API server answers is a ``metav1.Status`` object
(``kind: Status``, ``apiVersion: v1``, ``status: Failure``) whose ``reason``,
``message``, ``details`` and ``code`` follow kube-apiserver's
``k8s.io/apimachinery/pkg/api/errors`` constructors, so clients (and the
``kubernetes`` package) classify them exactly as against a real cluster.

Code anywhere below the HTTP layer raises ``StatusError``; the HTTP layer turns
it into the response. Helpers take the ``ResourceType`` to build the qualified
resource name (``deployments.apps``) the way kube does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pycontroller.testing.apiserver.gofmt import quote
from pycontroller.testing.apiserver.resource_types import ResourceType

__all__ = [
    "StatusError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "internal_error",
    "invalid",
    "invalid_options",
    "method_not_allowed",
    "not_found",
    "not_supported_cause",
    "qualified_kind",
    "qualified_resource",
    "request_entity_too_large",
    "status_body",
    "success_status",
    "too_many_requests",
    "unknown_error",
    "unsupported_media_type",
]


def status_body(
    code: int,
    reason: str,
    message: str,
    details: dict[str, Any] | None = None,
    list_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``Status`` object with ``status: Failure``, its fields in the order
    kube's serializer writes them (kind, apiVersion, metadata, status, message,
    reason, details, code). An empty ``reason`` (``StatusReasonUnknown``) and
    ``details=None`` are omitted, as Go's ``omitempty`` does; ``details={}``
    is kept (kube writes ``"details": {}`` for generic 404/405 answers).
    ``list_meta`` is the Status's ``ListMeta`` (``metadata``), empty unless
    given (an expired continue token's replacement)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": dict(list_meta or {}),
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def success_status(details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
    }
    if details:
        body["details"] = details
    return body


class StatusError(Exception):
    """An error answer: HTTP ``code`` and the ``Status`` body to send."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        list_meta: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = dict(headers or {})
        self.list_meta = dict(list_meta or {})

    @property
    def body(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message, self.details, self.list_meta)


def qualified_resource(rt: ResourceType) -> str:
    """``pods`` for the core group, ``deployments.apps`` otherwise."""
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def _details(rt: ResourceType | None, name: str, *, kind: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if rt is not None and rt.group:
        d["group"] = rt.group
    if kind is not None:
        d["kind"] = kind
    elif rt is not None:
        d["kind"] = rt.plural
    return d


def not_found(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{qualified_resource(rt)} "{name}" not found', _details(rt, name)
    )


def namespace_not_found(namespace: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'namespaces "{namespace}" not found',
        {"name": namespace, "kind": "namespaces"},
    )


def already_exists(rt: ResourceType, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(rt)} "{name}" already exists',
        _details(rt, name),
    )


CONFLICT_SUFFIX = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def conflict(rt: ResourceType, name: str, why: str = CONFLICT_SUFFIX) -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(rt)} "{name}": {why}',
        _details(rt, name),
    )


def qualified_kind(rt: ResourceType) -> str:
    """``schema.GroupKind.String()``: ``Service`` for the core group,
    ``Deployment.apps`` / ``Widget.example.com`` otherwise."""
    return f"{rt.kind}.{rt.group}" if rt.group else rt.kind


def invalid(rt: ResourceType, name: str, causes: list[dict[str, Any]]) -> StatusError:
    """422 Invalid as ``errors.NewInvalid(rt.GroupKind(), name, errs)``:
    ``Deployment.apps "x" is invalid: <errs>`` with ``details.group`` and
    ``details.kind`` (the kind, not the plural). ``causes`` are
    ``{"reason", "message", "field"}`` dicts; the summary is the aggregate of
    their ``field: message`` strings (one, or ``[a, b]``; duplicates once)."""
    parts: list[str] = []
    for c in causes:
        field = c.get("field", "")
        msg = c.get("message", "")
        part = f"{field}: {msg}" if field else msg
        if part not in parts:
            parts.append(part)
    details = _details(rt, name, kind=rt.kind)
    details["causes"] = [
        {k: v for k, v in c.items() if k in ("reason", "message", "field")} for c in causes
    ]
    message = f"{qualified_kind(rt)} {quote(name)} is invalid"
    if parts:
        message += ": " + (parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]")
    return StatusError(422, "Invalid", message, details)


def required_cause(field: str, detail: str = "") -> dict[str, Any]:
    """``field.Required``'s cause."""
    return {
        "reason": "FieldValueRequired",
        "message": "Required value" + (f": {detail}" if detail else ""),
        "field": field,
    }


def forbidden_cause(field: str, detail: str) -> dict[str, Any]:
    """``field.Forbidden``'s cause."""
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def invalid_cause(field: str, shown: str, detail: str) -> dict[str, Any]:
    """``field.Invalid``'s cause: ``shown`` is the bad value as Go prints it."""
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": field,
    }


def not_supported_cause(field: str, shown: str, supported: Sequence[str]) -> dict[str, Any]:
    """``field.NotSupported``'s cause: ``shown`` is the bad value as Go prints it
    (``gofmt.quote`` for a string), the supported values are ``strconv.Quote``d."""
    values = ", ".join(quote(v) for v in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {shown}: supported values: {values}",
        "field": field,
    }


def invalid_options(kind: str, causes: list[dict[str, Any]]) -> StatusError:
    """422 for request options (``CreateOptions``, ``DeleteOptions``, ...):
    ``errors.NewInvalid(GroupKind{meta.k8s.io, kind}, "", errs)``, as the
    handlers answer a failed ``Validate<Kind>``."""
    parts: list[str] = []
    for c in causes:
        part = f"{c['field']}: {c['message']}"
        if part not in parts:
            parts.append(part)
    message = f'{kind}.meta.k8s.io "" is invalid: ' + (
        parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    )
    details = {"group": "meta.k8s.io", "kind": kind, "causes": causes}
    return StatusError(422, "Invalid", message, details)


def invalid_patch(shown: str, detail: str) -> StatusError:
    """422 of a patch whose result does not decode (handlers/patch.go:
    ``errors.NewInvalid(schema.GroupKind{}, "", field.Invalid("patch", ...))``;
    the kind is empty, so the message starts with a space). ``shown`` is the
    value as kube prints it, already quoted."""
    message = f"Invalid value: {shown}: {detail}"
    return StatusError(
        422,
        "Invalid",
        f' "" is invalid: patch: {message}',
        {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]},
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def forbidden(rt: ResourceType, name: str, why: str) -> StatusError:
    """``errors.NewForbidden``: the name is left out of the message when empty."""
    subject = f'{qualified_resource(rt)} "{name}"' if name else qualified_resource(rt)
    return StatusError(403, "Forbidden", f"{subject} is forbidden: {why}", _details(rt, name))


def expired(message: str, *, continue_token: str = "") -> StatusError:
    """``errors.NewResourceExpired``; ``continue_token`` goes in the Status's
    ``metadata.continue`` (etcd3's ``handleCompactedErrorForPaging``)."""
    list_meta = {"continue": continue_token} if continue_token else None
    return StatusError(410, "Expired", message, list_meta=list_meta)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> StatusError:
    """405 as go-restful's error goes through kube's ServiceErrorHandler
    (``errors.NewGenericServerResponse``): with an empty ``details``."""
    return StatusError(405, "MethodNotAllowed", message, {})


def request_entity_too_large(limit: int) -> StatusError:
    """``errors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))``."""
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def unknown_error(code: int, message: str) -> StatusError:
    """What kube answers for an error that is not an API status
    (``responsewriters.ErrorToAPIStatus``): the code, no reason, the message."""
    return StatusError(code, "", message)


def unsupported_media_type(accepted: Sequence[str]) -> StatusError:
    """``negotiation.NewUnsupportedMediaTypeError(accepted)``."""
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


def too_many_requests(message: str = "Too many requests, please try again later.") -> StatusError:
    return StatusError(
        429,
        "TooManyRequests",
        message,
        {"retryAfterSeconds": 1},
        headers={"Retry-After": "1"},
    )


def internal_error(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")


_REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def for_code(code: int, message: str = "") -> StatusError:
    """A generic error for ``code`` (used by fault injection)."""
    if code == 429:
        return too_many_requests(message or "Too many requests, please try again later.")
    reason = _REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    return StatusError(code, reason, message or f"injected failure ({code} {reason})")
