"""List and watch-list options: kube-apiserver's validation of a list's
``resourceVersionMatch`` and ``sendInitialEvents`` (``validate_list_options``)
and of a watch's, and the errors a streaming list answers.

``validate_watch_options`` is apimachinery's ``validateWatchOptions`` (1.32,
``pkg/apis/meta/internalversion/validation``): a watch with
``sendInitialEvents`` needs ``resourceVersionMatch=NotOlderThan``;
``resourceVersionMatch`` on a watch needs ``sendInitialEvents`` and only
``NotOlderThan`` is supported; with the WatchList feature off (``APIServer.
watch_list = False``) ``sendInitialEvents`` is forbidden. ``allowWatchBookmarks``
is not required: without it the initial events are streamed but no
``k8s.io/initial-events-end`` bookmark follows (the cacher's
``getBookmarkAfterResourceVersionLockedFunc``). The handler answers the errors
as ``errors.NewInvalid(ListOptions.meta.k8s.io, "", errs)``: 422.
"""

from __future__ import annotations

from typing import Any

from pycontroller.testing.apiserver.gofmt import quote
from pycontroller.testing.apiserver.status import (
    StatusError,
    invalid_options,
    not_supported_cause,
)

__all__ = [
    "INITIAL_EVENTS_ANNOTATION",
    "NOT_OLDER_THAN",
    "invalid_list_options",
    "too_large_resource_version",
    "validate_list_options",
    "validate_list_send_initial_events",
    "validate_watch_options",
]

NOT_OLDER_THAN = "NotOlderThan"
#: ``metav1.InitialEventsAnnotationKey``.
INITIAL_EVENTS_ANNOTATION = "k8s.io/initial-events-end"


def _forbidden(field: str, detail: str) -> dict[str, Any]:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def validate_watch_options(
    params: dict[str, str], *, watch_list_enabled: bool = True
) -> list[dict[str, Any]]:
    """The field errors (``StatusCause`` dicts) of a watch's query parameters."""
    causes: list[dict[str, Any]] = []
    match = params.get("resourceVersionMatch") or ""
    send_initial_given = "sendInitialEvents" in params
    if send_initial_given:
        if match != NOT_OLDER_THAN:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
                )
            )
        if not watch_list_enabled:
            causes.append(
                _forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature "
                    "gate is enabled",
                )
            )
    if match:
        if not send_initial_given:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != NOT_OLDER_THAN:
            causes.append(
                not_supported_cause("resourceVersionMatch", quote(match), [NOT_OLDER_THAN])
            )
        if params.get("continue"):
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    return causes


def validate_list_options(params: dict[str, str]) -> list[dict[str, Any]]:
    """The field errors (``StatusCause`` dicts) of a list's query parameters:
    ``ValidateListOptions`` for a list (not a watch). ``resourceVersionMatch``
    needs a ``resourceVersion``, goes without ``continue``, is ``Exact`` or
    ``NotOlderThan``, and ``Exact`` is not for resourceVersion "0";
    ``sendInitialEvents`` is forbidden."""
    causes: list[dict[str, Any]] = []
    match = params.get("resourceVersionMatch") or ""
    if match:
        if not params.get("resourceVersion"):
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if params.get("continue"):
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in ("Exact", NOT_OLDER_THAN):
            causes.append(
                not_supported_cause(
                    "resourceVersionMatch", quote(match), ["Exact", NOT_OLDER_THAN, ""]
                )
            )
        if match == "Exact" and params.get("resourceVersion") == "0":
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if "sendInitialEvents" in params:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def validate_list_send_initial_events(params: dict[str, str]) -> list[dict[str, Any]]:
    """``sendInitialEvents`` on a plain list is forbidden."""
    if "sendInitialEvents" in params:
        return [_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")]
    return []


def invalid_list_options(causes: list[dict[str, Any]]) -> StatusError:
    """422 as ``errors.NewInvalid(schema.GroupKind{"meta.k8s.io", "ListOptions"}, "", errs)``."""
    return invalid_options("ListOptions", causes)


def too_large_resource_version(requested: int, current: int) -> StatusError:
    """``storage.NewTooLargeResourceVersionError``: a 504 Timeout whose cause is
    ``ResourceVersionTooLarge`` (what the watch cache answers after waiting in
    vain for a resourceVersion it has not reached)."""
    return StatusError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )
