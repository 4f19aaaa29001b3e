"""Validation of a write's query options, as kube-apiserver 1.32's handlers do
it before anything else (``ValidateCreateOptions``, ``ValidateUpdateOptions``,
``ValidatePatchOptions`` and ``ValidateDeleteOptions`` of apimachinery's
``pkg/apis/meta/v1/validation``): a bad ``dryRun``, ``fieldValidation`` or
``fieldManager``, ``force`` on a patch that is not an apply, an apply without
a field manager, ``propagationPolicy`` with ``orphanDependents`` or an unknown
one, each answered with the 422 ``<Kind>.meta.k8s.io "" is invalid`` of
``status.invalid_options``.

The messages are field.Error's: a ``[]string`` value is printed with Go's
``%#v`` and a supported-values list is ``strconv.Quote``d, sorted as
``sets.String.List`` sorts it.
"""

from __future__ import annotations

from typing import Any

from pycontroller.testing.apiserver.gofmt import is_print, quote
from pycontroller.testing.apiserver.status import (
    StatusError,
    invalid_options,
    not_supported_cause,
)

__all__ = ["FIELD_MANAGER_MAX_LENGTH", "check_delete", "check_write"]

#: apimachinery's FieldManagerMaxLength.
FIELD_MANAGER_MAX_LENGTH = 128
_DRY_RUN = ("All",)
_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")
_PROPAGATION = ("Foreground", "Background", "Orphan", "nil")
_APPLY_TYPES = ("application/apply-patch+yaml", "application/apply-patch+cbor")


def _dry_run(values: list[str]) -> list[dict[str, Any]]:
    if all(v in _DRY_RUN for v in values):
        return []
    shown = "[]string{" + ", ".join(quote(v) for v in values) + "}"
    return [not_supported_cause("dryRun", shown, _DRY_RUN)]


def _field_manager(manager: str) -> list[dict[str, Any]]:
    causes: list[dict[str, Any]] = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes",
                "field": "fieldManager",
            }
        )
    position = 0
    for ch in manager:
        if not is_print(ch):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {quote(manager)}: invalid character "
                    f"U+{ord(ch):04X} (at position {position})",
                    "field": "fieldManager",
                }
            )
        position += len(ch.encode())  # Go ranges over a string by byte offset
    return causes


def check_write(kind: str, params: dict[str, str], *, patch_type: str | None = None) -> None:
    """Raise kube's 422 when the options of a create, update or patch (``kind``:
    ``CreateOptions``, ``UpdateOptions``, ``PatchOptions``) are invalid."""
    causes: list[dict[str, Any]] = []
    manager = params.get("fieldManager", "")
    if kind == "PatchOptions":
        if patch_type in _APPLY_TYPES:
            if not manager:
                causes.append(
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value: is required for apply patch",
                        "field": "fieldManager",
                    }
                )
        elif "force" in params:
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: may not be specified for non-apply patch",
                    "field": "force",
                }
            )
    causes += _field_manager(manager)
    if "dryRun" in params:
        causes += _dry_run([params["dryRun"]])
    validation = params.get("fieldValidation", "")
    if validation not in _FIELD_VALIDATION:
        causes.append(not_supported_cause("fieldValidation", quote(validation), _FIELD_VALIDATION))
    if causes:
        raise invalid_options(kind, causes)


def check_delete(
    propagation: Any, orphan_dependents: Any, dry_run: list[str] | None
) -> StatusError | None:
    """``ValidateDeleteOptions``' 422 for the options as given (None: not given)."""
    causes: list[dict[str, Any]] = []
    shown = "null" if propagation is None else quote(str(propagation))
    if orphan_dependents is not None and propagation is not None:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {shown}: orphanDependents and "
                "deletionPropagation cannot be both set",
                "field": "propagationPolicy",
            }
        )
    if propagation is not None and propagation not in _PROPAGATION[:3]:
        causes.append(not_supported_cause("propagationPolicy", shown, _PROPAGATION))
    if dry_run:
        causes += _dry_run(dry_run)
    return invalid_options("DeleteOptions", causes) if causes else None
