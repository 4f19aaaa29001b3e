"""A write's options are validated as kube-apiserver 1.32's handlers do, before
anything is written (apimachinery's ``ValidateCreateOptions``,
``ValidateUpdateOptions``, ``ValidatePatchOptions``, ``ValidateDeleteOptions``):
422 ``<Kind>.meta.k8s.io "" is invalid`` with one cause per problem."""

from __future__ import annotations

from typing import Any

from support.http import request

from pycontroller.testing import APIServer

CM = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _invalid(status: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    assert status["code"] == 422 and status["reason"] == "Invalid", status
    assert status["details"]["group"] == "meta.k8s.io"
    assert status["details"]["kind"] == kind
    assert status["message"].startswith(f'{kind}.meta.k8s.io "" is invalid: ')
    causes: list[dict[str, Any]] = status["details"]["causes"]
    return causes


def test_a_dry_run_value_other_than_all_is_refused_and_nothing_is_written(
    apiserver: APIServer,
) -> None:
    code, st = request(apiserver, "POST", f"{CM}?dryRun=Yes", {"metadata": {"name": "a"}})
    assert code == 422
    assert _invalid(st, "CreateOptions") == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: []string{"Yes"}: supported values: "All"',
            "field": "dryRun",
        }
    ]
    assert st["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '[]string{"Yes"}: supported values: "All"'
    )
    assert request(apiserver, "GET", f"{CM}/a")[0] == 404  # it used to be created


def test_field_validation_and_field_manager_are_checked(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, {"metadata": {"name": "a"}})
    code, st = request(
        apiserver, "PUT", f"{CM}/a?fieldValidation=strict", {"metadata": {"name": "a"}}
    )
    assert code == 422
    assert _invalid(st, "UpdateOptions") == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "strict": supported values: "", "Ignore", '
            '"Strict", "Warn"',
            "field": "fieldValidation",
        }
    ]
    code, st = request(apiserver, "POST", f"{CM}?fieldManager={'m' * 129}", {"metadata": {}})
    assert code == 422
    assert _invalid(st, "CreateOptions") == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 128 bytes",
            "field": "fieldManager",
        }
    ]
    code, st = request(apiserver, "POST", f"{CM}?fieldManager=a%09b", {"metadata": {"name": "b"}})
    assert code == 422
    assert _invalid(st, "CreateOptions")[0]["message"] == (
        'Invalid value: "a\\tb": invalid character U+0009 (at position 1)'
    )


def test_patch_options_force_and_field_manager(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, {"metadata": {"name": "a"}})
    code, st = request(apiserver, "PATCH", f"{CM}/a?force=true", {"data": {"k": "v"}}, MERGE)
    assert code == 422
    assert _invalid(st, "PatchOptions") == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified for non-apply patch",
            "field": "force",
        }
    ]
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    code, st = request(apiserver, "PATCH", f"{CM}/a", body, APPLY)
    assert code == 422
    assert st["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    code, _ = request(apiserver, "PATCH", f"{CM}/a?fieldManager=me&force=true", body, APPLY)
    assert code == 200


def test_delete_options_are_validated(apiserver: APIServer) -> None:
    request(apiserver, "POST", CM, {"metadata": {"name": "a"}})
    code, st = request(
        apiserver,
        "DELETE",
        f"{CM}/a",
        {"kind": "DeleteOptions", "propagationPolicy": "Orphan", "orphanDependents": True},
    )
    assert code == 422
    assert _invalid(st, "DeleteOptions") == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "Orphan": orphanDependents and deletionPropagation '
            "cannot be both set",
            "field": "propagationPolicy",
        }
    ]
    code, st = request(apiserver, "DELETE", f"{CM}/a?propagationPolicy=Later")
    assert code == 422
    assert _invalid(st, "DeleteOptions") == [
        {
            "reason": "FieldValueNotSupported",
            "message": 'Unsupported value: "Later": supported values: "Foreground", '
            '"Background", "Orphan", "nil"',
            "field": "propagationPolicy",
        }
    ]
    code, st = request(apiserver, "DELETE", f"{CM}/a", {"dryRun": ["all"]})
    assert code == 422 and _invalid(st, "DeleteOptions")[0]["field"] == "dryRun"
    assert request(apiserver, "GET", f"{CM}/a")[0] == 200  # nothing deleted


def test_an_unsupported_patch_type_is_a_415_before_the_options_are_looked_at(
    apiserver: APIServer,
) -> None:
    # kube's patch handler checks the Content-Type first: a request with both
    # an unknown patch type and invalid options gets the 415, listing the
    # patch types the resource takes.
    assert request(apiserver, "POST", CM, {"metadata": {"name": "c"}})[0] == 201
    code, st = request(
        apiserver, "PATCH", f"{CM}/c?dryRun=Bogus&force=true", {"data": {}}, "text/plain"
    )
    assert code == 415, st
    assert st["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml"
    )
