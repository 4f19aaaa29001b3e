"""The verbs: get, list, create, update, patch, delete on one ``ResourceType``.

This is the embedded server's equivalent of kube-apiserver's generic registry
store plus the per-kind strategies: metadata stamping (uid,
creationTimestamp, generation, resourceVersion), name validation and
``generateName``, namespace existence, optimistic concurrency, the status
subresource split, defaulting, CRD schema validation, finalizers and
``deletionTimestamp``, propagation policies (executed by ``gc.py``), the
``/scale`` subresource (Scale views from ``scale.py``) and the CRD
lifecycle (register served types, write ``Established`` status, remove the
types and their objects on deletion).

Every read-modify-write runs under ``storage.lock``, so writes are
serialised and each sees the state the previous one left.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import functools
import json
import logging
import posixpath
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pycontroller import _json
from pycontroller._time import format_rfc3339
from pycontroller.meta import add_finalizer
from pycontroller.testing.apiserver.gofmt import quote as _go_quote
from pycontroller.testing.apiserver.http.auth import UserInfo
from pycontroller.testing.apiserver.registry import (
    admission_plugins,
    admission_policy,
    admission_webhook,
    conversion,
    resource_quota,
)
from pycontroller.testing.apiserver.registry import options as request_options
from pycontroller.testing.apiserver.registry import scale as scale_mod
from pycontroller.testing.apiserver.registry.kinds_registry import Registry
from pycontroller.testing.apiserver.registry.names import (
    generate_name,
    label_value_errors,
    qualified_name_errors,
    validate_name,
)
from pycontroller.testing.apiserver.registry.patch import (
    APPLY,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC,
    decode_patch,
    json_merge_patch,
    json_patch,
    json_patch_strict_errors,
    smp_decode_error,
    strategic_merge_patch,
)
from pycontroller.testing.apiserver.registry.selectors import Selector
from pycontroller.testing.apiserver.registry.storage import Storage
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import builtin, fieldmanager, goshape
from pycontroller.testing.apiserver.schema import crd as crd_mod
from pycontroller.testing.apiserver.schema import decode as decode_mod
from pycontroller.testing.apiserver.schema import kinds as kinds_mod
from pycontroller.testing.apiserver.schema import structural as schema_mod
from pycontroller.testing.apiserver.schema.builtin import Defaulter
from pycontroller.testing.apiserver.status import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    expired,
    forbidden,
    invalid,
    invalid_patch,
    namespace_not_found,
    not_found,
    qualified_kind,
    qualified_resource,
    success_status,
    unknown_error,
    unsupported_media_type,
)

__all__ = ["REST", "WriteOptions", "now_rfc3339", "parse_resource_version"]

logger = logging.getLogger(__name__)

CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"
CRD_RKEY = (CRD_GROUP, CRD_PLURAL)
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

# etcd's ErrFutureRev (rpctypes) and etcd3/errors.go's ``expired``.
_FUTURE_REVISION = "etcdserver: mvcc: required revision is a future revision"
_LIST_EXPIRED = "The resourceVersion for the provided list is too old."
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the results. Continuing with the "
    "provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may "
    "show up in the list."
)


# The kind scale writes are validated as (errors name "Scale.autoscaling").
_SCALE_RT = ResourceType(group="autoscaling", version="v1", kind="Scale", plural="scale")


def now_rfc3339() -> str:
    return format_rfc3339(time.time())


def _parse_uint(value: str) -> tuple[int | None, str]:
    """Go's ``strconv.ParseUint(value, 10, 64)``: the number, or None and the
    error text."""
    if not value.isascii() or not value.isdigit():
        return None, f"strconv.ParseUint: parsing {_go_quote(value)}: invalid syntax"
    n = int(value)
    if n >= 2**64:
        return None, f"strconv.ParseUint: parsing {_go_quote(value)}: value out of range"
    return n, ""


# apimachinery's TotalAnnotationSizeLimitB: keys plus values, 256 KiB.
_ANNOTATIONS_LIMIT = 256 * 1024


def _label_and_annotation_causes(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """``ValidateLabels`` and ``ValidateAnnotations`` (ObjectMeta validation,
    every kind): qualified-name keys, label values, annotation size."""
    causes: list[dict[str, Any]] = []

    def invalid_value(field: str, value: str, msg: str) -> None:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {_go_quote(value)}: {msg}",
                "field": field,
            }
        )

    labels = meta.get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            for msg in qualified_name_errors(str(k)):
                invalid_value("metadata.labels", str(k), msg)
            if isinstance(v, str):
                for msg in label_value_errors(v):
                    invalid_value("metadata.labels", v, msg)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        size = 0
        for k, v in annotations.items():
            for msg in qualified_name_errors(str(k).lower()):
                invalid_value("metadata.annotations", str(k), msg)
            size += len(str(k).encode()) + (len(v.encode()) if isinstance(v, str) else 0)
        if size > _ANNOTATIONS_LIMIT:
            causes.append(
                {
                    "reason": "FieldValueTooLong",
                    "message": f"Too long: may not be more than {_ANNOTATIONS_LIMIT} bytes",
                    "field": "metadata.annotations",
                }
            )
    return causes


def parse_resource_version(value: str | None) -> int:
    """A ``resourceVersion`` query parameter (list, watch, get) as the storage
    layer parses it (``APIObjectVersioner.ParseResourceVersion``): "" and "0"
    are 0; anything else must be an unsigned integer.

    kube-apiserver 1.32 answers an unparsable one with a 500 whose Status has no
    reason (the storage layer's ``InvalidError`` is not an API status, so
    ``ErrorToAPIStatus`` reports it as unknown); that is reproduced here, so a
    client that would loop on it against a cluster loops here too."""
    if not value or value == "0":
        return 0
    n, err = _parse_uint(value)
    if n is None:
        raise unknown_error(500, f"resourceVersion: Invalid value: {_go_quote(value)}: {err}")
    return n


def _parse_list_resource_version(value: str | None) -> int:
    """A list's ``resourceVersion`` as etcd3's ``resolveGetListRev`` parses
    it (storage/etcd3/store.go): an unparsable one is a 400 BadRequest
    "invalid resource version: " and the versioner's error."""
    if not value or value == "0":
        return 0
    n, err = _parse_uint(value)
    if n is None:
        raise bad_request(
            f"invalid resource version: resourceVersion: Invalid value: {_go_quote(value)}: {err}"
        )
    return n


def _check_object_resource_version(value: Any) -> None:
    """An update's ``metadata.resourceVersion`` as ``ObjectResourceVersion``
    parses it: the bare ``strconv`` error, a 500 without reason in kube 1.32."""
    if value in (None, ""):
        return
    n, err = _parse_uint(str(value))
    if n is None:
        raise unknown_error(500, err)


@dataclass
class WriteOptions:
    dry_run: bool = False
    field_validation: str = "Warn"  # Strict, Warn, Ignore
    field_manager: str = ""
    warnings: list[str] = field(default_factory=list)
    force: bool = False  # apply: take the fields of conflicting managers
    user_agent: str = ""  # names the field manager when fieldManager is not given
    # Set by an apply: the managedFields entries the write stores (fieldmanager.py).
    managed_fields: list[dict[str, Any]] | None = None
    # The type the request came through when it shares another's storage
    # (``stored_as``): field management runs in its version (``_track``).
    served_as: ResourceType | None = None


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but metadata and status (what generation tracks)."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


def _non_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything but metadata (apiextensions' ``copyNonMetadata``)."""
    return {k: v for k, v in obj.items() if k != "metadata"}


def _immutable_meta_causes(meta: dict[str, Any], old_meta: dict[str, Any]) -> list[dict[str, Any]]:
    """``ValidateObjectMetaAccessorUpdate``'s ``metadata.uid`` check (the other
    immutable system fields are restored by ``_merge_update``)."""
    uid, old_uid = meta.get("uid") or "", old_meta.get("uid") or ""
    if uid == old_uid:
        return []
    return [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {_go_quote(str(uid))}: field is immutable",
            "field": "metadata.uid",
        }
    ]


def _without_rv(obj: dict[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    m = dict(out.get("metadata") or {})
    m.pop("resourceVersion", None)
    out["metadata"] = m
    return out


def _keep_managed_fields_times(new: dict[str, Any], old: dict[str, Any]) -> None:
    """kube's ``IgnoreManagedFieldsTimestampsTransformer``: a write whose object
    and managedFields differ from the old ones in the entries' times only keeps
    the old times (so it is a no-op: ``2048Mi`` applied over ``2Gi``...)."""
    new_mf, old_mf = _meta(new).get("managedFields"), _meta(old).get("managedFields")
    if not isinstance(new_mf, list) or not isinstance(old_mf, list) or new_mf == old_mf:
        return

    def timeless(entries: list[Any]) -> list[Any]:
        return [
            {k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e
            for e in entries
        ]

    if timeless(new_mf) != timeless(old_mf):
        return
    a, b = _without_rv(new), _without_rv(old)
    a["metadata"].pop("managedFields", None)
    b["metadata"].pop("managedFields", None)
    if a == b:
        _meta(new)["managedFields"] = copy.deepcopy(old_mf)


def _parse_grace(value: Any, *, query: bool) -> int | None:
    """``gracePeriodSeconds`` (an int64) from the query or the body."""
    if value is None:
        return None
    if query:
        text = str(value)
        try:
            return int(text, 10)
        except ValueError:
            raise bad_request(
                f"strconv.ParseInt: parsing {_go_quote(text)}: invalid syntax"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(
            "json: cannot unmarshal "
            f"{'string' if isinstance(value, str) else type(value).__name__} into Go struct "
            "field DeleteOptions.gracePeriodSeconds of type int64"
        )
    return int(value)


@dataclass
class DeleteOptions:
    """What a DELETE asks for: ``propagationPolicy`` (None: the kind's default,
    Background), preconditions, dry run and ``gracePeriodSeconds``.

    As kube's ``DeleteResource`` and ``DeleteCollection`` handlers: from the
    body's ``DeleteOptions`` when the request has a body, else from the query
    (one or the other, never a mix)."""

    propagation: str | None = None
    preconditions: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    grace_period_seconds: int | None = None
    # ``orphanDependents`` as given (None: not given); ``False`` makes
    # ``DeleteResource`` answer 202 for an object not deleted at once.
    orphan_dependents: bool | None = None

    @classmethod
    def parse(cls, params: dict[str, str], body: Any) -> DeleteOptions:
        options = body if isinstance(body, dict) else {}
        if body is not None:
            params = {}
        propagation = params.get("propagationPolicy") or options.get("propagationPolicy")
        orphan = params.get("orphanDependents", options.get("orphanDependents"))
        orphaned = None if orphan is None else str(orphan).lower() in ("true", "t", "1")
        raw_dry = options.get("dryRun") if body is not None else params.get("dryRun")
        dry_values = [raw_dry] if isinstance(raw_dry, str) else list(raw_dry or [])
        err = request_options.check_delete(propagation, orphan, [str(v) for v in dry_values])
        if err is not None:
            raise err
        if propagation is None and orphaned is not None:
            propagation = "Orphan" if orphaned else "Background"
        dry = dry_values == ["All"]
        if isinstance(body, dict):
            grace = _parse_grace(body.get("gracePeriodSeconds"), query=False)
        else:
            grace = _parse_grace(params.get("gracePeriodSeconds"), query=True)
        return cls(propagation, dict(options.get("preconditions") or {}), dry, grace, orphaned)


def _deleted_status(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """``finalizeDelete``'s answer for a store without ``ReturnDeletedObject``:
    a Success ``Status`` whose details name the object, the request's group
    and the resource plural as its kind (StatusDetails' field order)."""
    meta = _meta(obj)
    details: dict[str, Any] = {"name": meta.get("name", "")}
    if rt.group:
        details["group"] = rt.group  # omitempty
    details["kind"] = rt.plural  # "Yes we set Kind field to resource."
    if meta.get("uid"):
        details["uid"] = meta["uid"]
    return success_status(details)


# The kinds whose strategy implements ``RESTGracefulDeleteStrategy``.
_GRACEFUL_KINDS = frozenset({("", "pods")})


def _pod_grace_period(pod: dict[str, Any], requested: int | None) -> int:
    """The pod strategy's ``CheckGracefulDelete``: the requested grace period,
    else ``spec.terminationGracePeriodSeconds``, else 0; 0 for a pod not
    scheduled or already Succeeded/Failed; a negative one is 1."""
    spec = pod.get("spec") or {}
    if requested is not None:
        period = requested
    else:
        tgps = spec.get("terminationGracePeriodSeconds")
        period = tgps if isinstance(tgps, int) and not isinstance(tgps, bool) else 0
    if not spec.get("nodeName"):
        period = 0
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        period = 0
    return 1 if period < 0 else period


def _parse_rfc3339(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _check_no_uid_on_apply_create(rt: ResourceType, name: str, obj: dict[str, Any]) -> None:
    """The patcher's ``applyPatch``: an apply that would create may not name a uid."""
    uid = _meta(obj).get("uid")
    if uid:
        raise conflict(
            rt,
            name,
            f"uid mismatch: the provided object specified uid {uid}, "
            "and no existing object was found",
        )


def patch_type(rt: ResourceType, content_type: str) -> str:
    """The patch type of a PATCH's ``Content-Type`` (its parameters dropped),
    or the 415 kube's patch handler answers before anything else (options,
    body) is looked at. Built-in kinds take strategic merge patches, custom
    resources do not; their ``/scale`` takes the types its parent takes
    (apiextensions-apiserver's ``serveScale``)."""
    ctype = content_type.split(";", 1)[0].strip()
    accepted = [JSON_PATCH, MERGE_PATCH]
    if not rt.is_crd:
        accepted.append(STRATEGIC)
    accepted.append(APPLY)
    if ctype not in accepted:
        raise unsupported_media_type(accepted)
    return ctype


def _set_finalizers(meta: dict[str, Any], finalizers: list[str]) -> None:
    """``metadata.finalizers`` set to ``finalizers``; none is no field (omitempty)."""
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)


#: Kinds whose strategy's ``DefaultGarbageCollectionPolicy`` orphans the
#: dependents of a delete that states no policy: batch/v1 Jobs ("for back
#: compatibility"; their pods stay, and the delete answers ``JOB_DELETE_WARNING``).
ORPHAN_BY_DEFAULT = frozenset({("batch", "jobs")})
JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set "
    "propagationPolicy=Background to remove them or set propagationPolicy=Orphan to "
    "suppress this warning"
)


def _gc_finalizers(
    finalizers: list[str], propagation: str | None, orphan_by_default: bool = False
) -> list[str]:
    """``deletionFinalizersForGarbageCollection``: the object's finalizers with
    ``orphan`` and ``foregroundDeletion`` as the delete asks. An explicit
    policy decides (Background removes both: a terminating object waiting on
    the collector is then deleted at once if nothing else holds it); without
    one (None) a finalizer already there decides, else the kind's default
    (``orphan_by_default``: ``ORPHAN_BY_DEFAULT``; Background for every other
    kind kube-apiserver 1.32 serves). Unchanged (same set) keeps the stored
    order."""
    if propagation is not None:
        orphan, foreground = propagation == "Orphan", propagation == "Foreground"
    else:
        first = next((f for f in finalizers if f in (ORPHAN, FOREGROUND)), None)
        orphan, foreground = first == ORPHAN, first == FOREGROUND
        if first is None:
            orphan = orphan_by_default
    new = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if orphan:
        new.append(ORPHAN)
    if foreground:
        new.append(FOREGROUND)
    return finalizers if set(new) == set(finalizers) else new


def _deleted_during_update(old_meta: dict[str, Any], new_fins: Any) -> bool:
    """kube's ``Store.shouldDeleteDuringUpdate``: an update removes the object
    when it leaves no finalizers on an object being deleted whose deletion
    grace period is over (absent or 0; a Pod in its grace period stays until
    its kubelet deletes it)."""
    if new_fins or not old_meta.get("deletionTimestamp"):
        return False
    return not old_meta.get("deletionGracePeriodSeconds")


def rkey(rt: ResourceType) -> tuple[str, str]:
    """The storage key of ``rt``'s objects: ``(group, plural)``, or that of the
    type whose storage it shares (``extra["stored_as"]``, events.k8s.io)."""
    stored = rt.extra.get("stored_as")
    if stored:
        return (stored[0], stored[2])
    return (rt.group, rt.plural)


# kubernetes 1.32 ``pkg/kubeapiserver/default_storage_factory_builder.go``
# ``SpecialDefaultResourcePrefixes``: the etcd prefixes that are not the plural.
_ETCD_PREFIXES: dict[tuple[str, str], str] = {
    ("", "replicationcontrollers"): "controllers",
    ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("networking.k8s.io", "ingresses"): "ingress",
}
# The servers whose storage prefixes each resource with its group
# (apiextensions-apiserver, kube-aggregator; custom resources too).
_GROUP_PREFIXED = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})


def etcd_key(rt: ResourceType, ns: str, name: str) -> str:
    """The etcd key kube-apiserver stores the object under (``--etcd-prefix``
    ``/registry``, the store's resource prefix, ``NamespaceKeyFunc`` or
    ``NoNamespaceKeyFunc``), as storage errors print it."""
    group, plural = rkey(rt)
    if rt.is_crd or group in _GROUP_PREFIXED:
        prefix = f"{group}/{plural}"
    else:
        prefix = _ETCD_PREFIXES.get((group, plural), plural)
    return f"/registry/{prefix}/{ns}/{name}" if rt.namespaced else f"/registry/{prefix}/{name}"


def _uid_precondition_failed(
    rt: ResourceType, ns: str, name: str, wanted: str, actual: str
) -> StatusError:
    """An update's UID precondition (``defaultUpdatedObjectInfo.Preconditions``:
    the body's ``metadata.uid``) failing ``storage.Preconditions.Check`` in
    ``GuaranteedUpdate``: its ``InvalidObj`` ``StorageError`` made a Conflict
    by ``InterpretUpdateError`` (the error printed whole)."""
    return conflict(
        rt,
        name,
        f"StorageError: invalid object, Code: 4, Key: {etcd_key(rt, ns, name)}, "
        f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: "
        f"{wanted}, UID in object meta: {actual}",
    )


def _delete_precondition_failed(rt: ResourceType, name: str, why: str) -> StatusError:
    """``rest.BeforeDelete``'s precondition check: ``NewConflict`` with the
    object's group and *kind* as its GroupResource (``Operation cannot be
    fulfilled on Deployment.apps "x": ...``, ``details.kind`` the kind)."""
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_kind(rt)} "{name}": {why}',
        {"name": name, **({"group": rt.group} if rt.group else {}), "kind": rt.kind},
    )


def _resource_version_required(rt: ResourceType, name: str) -> StatusError:
    """``Store.Update``'s answer to an update without resourceVersion of a kind
    whose strategy does not allow unconditional updates: ``NewInvalid`` with
    the qualified resource (not the kind) as its group kind."""
    cause = {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: 0x0: must be specified for an update",
        "field": "metadata.resourceVersion",
    }
    return StatusError(
        422,
        "Invalid",
        f'{qualified_resource(rt)} "{name}" is invalid: metadata.resourceVersion: '
        "Invalid value: 0x0: must be specified for an update",
        {"name": name, **({"group": rt.group} if rt.group else {}), "kind": rt.plural,
         "causes": [cause]},
    )  # fmt: skip


def _check_object_name(obj_name: Any, name: str) -> None:
    """The handlers' ``checkName`` (``handlers/rest.go``) of an update's or a
    patch result's ``metadata.name`` against the URL's."""
    if not obj_name:
        # ContextBasedNaming.ObjectName: errEmptyName.
        raise bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: "
            "name must be provided"
        )
    if obj_name != name:
        raise bad_request(
            f"the name of the object ({obj_name}) does not match the name on the URL ({name})"
        )


_NAMESPACE_MISMATCH = (
    "the namespace of the provided object does not match the namespace sent on the request"
)


def encode_continue(rv: int, start: str) -> str:
    """``storage.EncodeContinue``: a token continuing at ``start`` (a key
    relative to the list's key prefix: ``PrepareContinueToken`` gives the last
    key listed plus NUL) at ``rv``."""
    raw = _json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


_RAW_URL_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def decode_continue(token: str) -> tuple[int, str]:
    """``storage.DecodeContinue``: the resourceVersion and the key (relative to
    the list's key prefix) a token continues from, inclusive; a bad token is
    400 (GetList's "invalid continue token")."""
    prefix = "invalid continue token: continue key is not valid"
    # base64.RawURLEncoding: the URL alphabet, no padding; Go's
    # CorruptInputError names the first byte it cannot use.
    bad = next((i for i, ch in enumerate(token) if ch not in _RAW_URL_B64), None)
    if bad is None and len(token) % 4 == 1:
        bad = len(token) - 1
    if bad is not None:
        raise bad_request(f"{prefix}: illegal base64 data at input byte {bad}")
    try:
        pad = "=" * (-len(token) % 4)
        data = _json.loads(base64.urlsafe_b64decode(token + pad))
        if not isinstance(data, dict):
            raise TypeError("not an object")
        version = data.get("v", "")
        rv = int(data.get("rv") or 0)
        start = str(data.get("start") or "")
    except (ValueError, KeyError, TypeError, binascii.Error) as err:
        raise bad_request(f"{prefix}: {err}") from err
    # storage.DecodeContinue: the version, then the resourceVersion, then the key.
    if version != "meta.k8s.io/v1":
        raise bad_request(f"{prefix}: server does not recognize this encoded version {version}")
    if rv == 0:
        raise bad_request(
            f"{prefix}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not start:
        raise bad_request(f"{prefix}: encoded start key empty (version meta.k8s.io/v1)")
    key = start if start.startswith("/") else "/" + start
    if key.startswith("//") or posixpath.normpath(key) != key:
        raise bad_request(f"{prefix}: {start}")  # path.Clean would change it
    return rv, key[1:]


def _decode_patched(
    rt: ResourceType, patched: dict[str, Any], opts: WriteOptions, op_errors: list[str]
) -> dict[str, Any]:
    """The result of a non-apply patch as ``jsonPatcher.applyPatchToCurrentObject``
    decodes it into the Go type: a wrong JSON type is 422 (field ``patch``);
    then the JSON-patch operations' strict errors (``op_errors``) and the
    unknown fields of built-in kinds (dropped) are warnings (Warn) or one 422
    Invalid of field ``patch`` (Strict)."""
    result = decode_mod.decode_patched(rt, patched)
    out: dict[str, Any] = result.obj
    if opts.field_validation == "Ignore":
        return out
    errors = list(op_errors)
    if not rt.is_crd:
        errors.extend(f'unknown field "{p}"' for p in result.unknown)
    if opts.field_validation != "Strict" or not errors:
        opts.warnings.extend(errors)
        return out
    doc = json.dumps(patched, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    raise invalid_patch(_go_quote(doc), "strict decoding error: " + ", ".join(errors))


# How often a write is run again when the object changed while admission
# webhooks ran with the storage lock released (kube's GuaranteedUpdate retries
# its transform on every conflict; bounded here, then a 409).
_STALE_RETRIES = 10

_F = TypeVar("_F", bound=Callable[..., Any])


def _rerun_if_stale(fn: _F) -> _F:
    """Run a write again when its object changed during admission webhooks."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for _ in range(_STALE_RETRIES - 1):
            try:
                return fn(*args, **kwargs)
            except admission_webhook.Stale:
                continue
        try:
            return fn(*args, **kwargs)
        except admission_webhook.Stale as err:
            raise err.error from None

    return wrapper  # type: ignore[return-value]


class REST:
    """Verb implementations over one ``Storage`` and ``Registry``."""

    def __init__(self, storage: Storage, registry: Registry, defaulter: Defaulter) -> None:
        self.storage = storage
        self.registry = registry
        self.defaulter = defaulter
        # APIServer.watch_cache: False pages a list at "0" as etcd does (--watch-cache=false).
        self.watch_cache = True

    # --- helpers -----------------------------------------------------------------

    def out(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` as served at ``rt``'s version (a shallow copy if apiVersion
        differs; converted when ``rt`` shares another type's storage)."""
        if rt.extra.get("stored_as") and obj.get("apiVersion") != rt.api_version:
            return conversion.from_stored(rt, obj)
        if obj.get("apiVersion") != rt.api_version:
            obj = dict(obj)
            obj["apiVersion"] = rt.api_version
        return obj

    def type_for(self, rk: tuple[str, str]) -> ResourceType | None:
        types = self.registry.versions_of(*rk)
        if not types:
            return None
        for rt in types:
            if rt.extra.get("storage"):
                return rt
        return types[0]

    def _stored_type(self, rt: ResourceType) -> ResourceType | None:
        """The type whose storage (and object form) ``rt`` shares, if any."""
        stored = rt.extra.get("stored_as")
        if not stored:
            return None
        target = self.registry.get(*stored)
        if target is None:
            raise StatusError(500, "InternalError", f"no storage for {rt.api_version} {rt.plural}")
        return target

    def _field_views(self, rt: ResourceType) -> fieldmanager.Views | None:
        """For field management: ``rt``'s objects converted to each other version
        of their storage (``conversion.py``); None when none converts."""
        if not conversion.converted(rt):
            return None
        stored_rt = self._stored_type(rt) or rt

        def view(api_version: str) -> tuple[ResourceType, Callable[..., dict[str, Any]]] | None:
            group, _, version = api_version.rpartition("/")
            target = self.registry.get(group, version, rt.plural)
            if target is None or target is rt:
                return None

            def convert(obj: dict[str, Any]) -> dict[str, Any]:
                stored = obj if stored_rt is rt else conversion.to_stored(rt, stored_rt, obj)
                return stored if target is stored_rt else conversion.from_stored(target, stored)

            return target, convert

        return view

    def _track(
        self,
        rt: ResourceType,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        opts: WriteOptions,
        subresource: str = "",
    ) -> None:
        """Record the write in ``new``'s managedFields (``fieldmanager.py``), in the
        version the request came through (``opts.served_as``), as kube's field
        manager works on the request's version of the object."""
        served = opts.served_as or rt
        if served is rt:
            old_view, new_view = old, new
        else:
            new_view = conversion.from_stored(served, new)
            old_view = None if old is None else conversion.from_stored(served, old)
        views = self._field_views(served)
        if old_view is None:
            fieldmanager.track_create(served, new_view, opts, views)
        else:
            fieldmanager.track_update(served, old_view, new_view, opts, subresource, views)
        if new_view is not new:
            managed = _meta(new_view).get("managedFields")
            if managed is None:
                _meta(new).pop("managedFields", None)
            else:
                _meta(new)["managedFields"] = managed

    def _admit_mutating(
        self,
        rt: ResourceType,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        opts: WriteOptions,
        subresource: str = "",
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Mutating admission (the built-in plugins, then the webhooks): the
        object to write, and a copy of it as it was before admission when
        admission changed it (None otherwise), so that the field manager
        records only what the request itself wrote: kube's handlers run the
        field manager before mutating admission, whose changes are owned by
        no manager."""
        before = (
            copy.deepcopy(obj)
            if admission_plugins.may_mutate(rt, subresource)
            or admission_webhook.configured(self, rt)
            else None
        )
        admission_plugins.mutate(self, rt, operation, obj, old, subresource=subresource)
        mutated = admission_webhook.mutate(
            self, rt, operation, obj, old, subresource=subresource, dry_run=opts.dry_run,
            warnings=opts.warnings, default=lambda o: self.defaulter.default(rt, o, old),
        )  # fmt: skip
        result = obj if mutated is None else mutated
        if before is not None and before == result:
            before = None
        return result, before

    def _default_keeping_managed_reset(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        """Default ``obj``, keeping a ``managedFields: []`` it carries: Go decodes
        it to an empty non-nil slice, the field manager's request to clear them
        (``isResetManagedFields``), which the JSON defaulting would drop."""
        reset = _meta(obj).get("managedFields") == []
        self.defaulter.default(rt, obj, old)
        if reset:
            _meta(obj)["managedFields"] = []

    def _track_unadmitted(
        self,
        rt: ResourceType,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        unadmitted: dict[str, Any] | None,
        opts: WriteOptions,
        subresource: str = "",
    ) -> None:
        """``_track`` the write as the request made it: over ``unadmitted``
        (defaulted as ``new`` was) when admission changed the object, its
        managedFields then carried over to ``new``."""
        if unadmitted is None:
            self._track(rt, old, new, opts, subresource)
            return
        if rt.resets_status_on_create and old is None:
            unadmitted.pop("status", None)
        self._default_keeping_managed_reset(rt, unadmitted, old)
        self._track(rt, old, unadmitted, opts, subresource)
        managed = _meta(unadmitted).get("managedFields")
        if managed is None:
            _meta(new).pop("managedFields", None)
        else:
            _meta(new)["managedFields"] = managed

    def _check_namespace(self, rt: ResourceType, ns: str, name: str) -> None:
        nsobj = self.storage.get(("", "namespaces"), "", ns)
        if nsobj is None:
            raise namespace_not_found(ns)
        if _meta(nsobj).get("deletionTimestamp"):
            # NamespaceLifecycle admission: the 403 carries a NamespaceTerminating
            # cause (controller-runtime and client-go check for it).
            err = forbidden(
                rt,
                name,
                f"unable to create new content in namespace {ns} because it is being terminated",
            )
            details = err.details if err.details is not None else {}
            err.details = details
            details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {ns} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise err

    def _validate_custom(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        opts: WriteOptions,
        subresource: str = "",
    ) -> None:
        if rt.schema is None:
            return
        name = _meta(obj).get("name", "")
        unknown = schema_mod.unknown_fields(rt, obj)
        if unknown:
            if opts.field_validation == "Strict":
                raise bad_request(
                    "strict decoding error: "
                    + ", ".join(f'unknown field "{p.lstrip(".")}"' for p in unknown)
                )
            if opts.field_validation != "Ignore":
                opts.warnings.extend(f'unknown field "{p.lstrip(".")}"' for p in unknown)
        causes = schema_mod.validate_custom_object(
            rt, obj, old=old, warnings=opts.warnings, subresource=subresource
        )
        if causes:
            raise invalid(rt, name, causes)

    def _validate_meta(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        meta = _meta(obj)
        name = meta.get("name", "")
        causes: list[dict[str, Any]] = []
        for key in ("labels", "annotations"):
            val = meta.get(key)
            if val is not None and (
                not isinstance(val, dict) or not all(isinstance(v, str) for v in val.values())
            ):
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: must be a map of string to string",
                        "field": f"metadata.{key}",
                    }
                )
        causes.extend(_label_and_annotation_causes(meta))
        fins = meta.get("finalizers")
        if fins is not None and (
            not isinstance(fins, list) or not all(isinstance(f, str) for f in fins)
        ):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: must be a list of strings",
                    "field": "metadata.finalizers",
                }
            )
        refs = meta.get("ownerReferences")
        if refs is not None:
            if not isinstance(refs, list):
                refs = []
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: must be a list",
                        "field": "metadata.ownerReferences",
                    }
                )
            controllers = 0
            for i, ref in enumerate(refs):
                if not isinstance(ref, dict):
                    continue
                for req in ("apiVersion", "kind", "name", "uid"):
                    if not ref.get(req):
                        causes.append(
                            {
                                "reason": "FieldValueRequired"
                                if req != "uid"
                                else "FieldValueInvalid",
                                "message": "Required value"
                                if req != "uid"
                                else 'Invalid value: "": uid must not be empty',
                                "field": f"metadata.ownerReferences[{i}].{req}",
                            }
                        )
                if ref.get("controller"):
                    controllers += 1
            if controllers > 1:
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: only one reference can have Controller set "
                        "to true",
                        "field": "metadata.ownerReferences",
                    }
                )
        if causes:
            raise invalid(rt, name, causes)

    def _check_kind(self, rt: ResourceType, body: dict[str, Any]) -> None:
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        api_version = body.get("apiVersion")
        if api_version and api_version != rt.api_version:
            # Same group, other served version: accepted (no conversion needed),
            # but not for a custom resource: its RequestScope has no
            # AcceptsGroupVersionDelegate, so create.go / update.go accept
            # only the endpoint's version.
            group = api_version.rpartition("/")[0] if "/" in api_version else ""
            if group != rt.group or rt.is_crd:
                raise bad_request(
                    f"the API version in the data ({api_version}) does not match the "
                    f"expected API version ({rt.api_version})"
                )

    # --- reads -------------------------------------------------------------------

    def get(self, rt: ResourceType, ns: str, name: str) -> dict[str, Any]:
        obj = self.storage.get(rkey(rt), ns if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt, name)
        return self.out(rt, obj)

    def list(
        self,
        rt: ResourceType,
        ns: str | None,
        selector: Selector,
        *,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        rk = rkey(rt)
        start: str | None = None

        def relative_key(o: dict[str, Any]) -> str:
            # The object's storage key less the list's key prefix.
            m = _meta(o)
            if ns is not None or not rt.namespaced:
                return str(m["name"])
            return f"{m.get('namespace') or ''}/{m['name']}"

        with self.storage.lock:
            if continue_token:
                # etcd3 GetList: the token, then resolveGetListRev, then the
                # compacted revision (handleCompactedErrorForPaging: a token
                # at resourceVersion -1 continues at the current state).
                rv, start = decode_continue(continue_token)
                if resource_version not in (None, "", "0"):
                    raise bad_request(
                        "specifying resource version is not allowed when using continue"
                    )
                if rv < 0:
                    rv = self.storage.resource_version
                elif rv < self.storage.oldest_resource_version:
                    raise expired(_CONTINUE_EXPIRED, continue_token=encode_continue(-1, start))
                items = self.storage.snapshot(rk, ns, rv)
            else:
                # ListOptions were validated by the handler (listoptions.py).
                # etcd3 resolveGetListRev: a paged list at a resourceVersion
                # other than "0" with no resourceVersionMatch is the legacy
                # exact read (the cacher delegates it to etcd: shouldDelegateList).
                legacy_exact = (
                    not resource_version_match
                    and limit > 0
                    and resource_version not in (None, "", "0")
                )
                if resource_version_match == "Exact" or legacy_exact:
                    # Served by etcd at that revision (storage/etcd3/store.go
                    # GetList): an unparsable one is resolveGetListRev's 400; a
                    # revision not reached yet is etcd's ErrFutureRev, which
                    # interpretListError passes on as is (a 500 without
                    # reason); a compacted one is its ErrCompacted, the list's
                    # "too old" 410.
                    rv = _parse_list_resource_version(resource_version)
                    if rv > self.storage.resource_version:
                        raise unknown_error(500, _FUTURE_REVISION)
                    try:
                        items = self.storage.snapshot(rk, ns, rv)
                    except StatusError as err:
                        if err.code != 410:
                            raise
                        raise expired(_LIST_EXPIRED) from None
                else:
                    # The watch cache (the versioner's unparsable: a 500).
                    parse_resource_version(resource_version)
                    rv = self.storage.resource_version
                    items = self.storage.items(rk, ns)
                    if resource_version == "0" and self.watch_cache:
                        # The watch cache's computeListLimit: no limit at "0"
                        # (etcd, without the cache, pages it).
                        limit = 0
        if start is not None:
            # etcd's range from the start key (keys are in key order).
            items = [o for o in items if relative_key(o) >= start]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        # Store.ListPredicate: a selector requiring one name, the namespace
        # known, reads that one key (a non-recursive GetList: never continued).
        one_key = (
            not continue_token
            and selector.fields.name_equals() is not None
            and (ns is not None or not rt.namespaced)
        )
        if limit > 0 and not one_key:
            # Cacher.GetList and etcd3 GetList fill a page in key order; it is
            # continued whenever keys follow its last item, matching or not.
            page: list[dict[str, Any]] = []
            for i, o in enumerate(items):
                if selector.empty or selector.matches(o):
                    page.append(o)
                if len(page) >= limit:
                    if i < len(items) - 1:
                        meta["continue"] = encode_continue(rv, relative_key(o) + "\x00")
                        if selector.empty:
                            meta["remainingItemCount"] = len(items) - limit
                    break
            items = page
        elif not selector.empty:
            items = [o for o in items if selector.matches(o)]
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": meta,
            "items": [self.out(rt, o) for o in items],
        }

    # --- create ------------------------------------------------------------------

    @_rerun_if_stale
    def create(
        self, rt: ResourceType, ns: str | None, body: Any, opts: WriteOptions
    ) -> dict[str, Any]:
        if rt.is_crd:
            self._check_crd_not_terminating(rt)
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        self._check_kind(rt, body)
        stored_rt = self._stored_type(rt)
        if stored_rt is not None:
            stored_body = conversion.to_stored(rt, stored_rt, body)
            created = self.create(stored_rt, ns, stored_body, replace(opts, served_as=rt))
            return self.out(rt, created)
        # kind and apiVersion first, as kube serializes them.
        obj = {"kind": rt.kind, "apiVersion": rt.api_version, **copy.deepcopy(body)}
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        meta = _meta(obj)
        if rt.namespaced:
            ns = ns or ""
            body_ns = meta.get("namespace")
            if body_ns and body_ns != ns:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
            ns = ""
        with self.storage.lock:
            name = meta.get("name") or ""
            if not name and meta.get("generateName"):
                for _ in range(8):
                    name = generate_name(str(meta["generateName"]))
                    if self.storage.get(rkey(rt), ns, name) is None:
                        break
                meta["name"] = name
            return self._create_locked(rt, ns, obj, opts)

    def _create_locked(
        self,
        rt: ResourceType,
        ns: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        on_update: bool = False,
    ) -> dict[str, Any]:
        """Create ``obj`` (lock held). ``on_update``: the creation of an update
        (a PUT to a missing name of a kind that allows it, or an apply): its
        ``metadata.resourceVersion`` is dropped (``GuaranteedUpdate``'s
        ``PrepareObjectForStorage``) instead of refused. A dry run answers it
        as given (the dry-run storage copies the object out as it is)."""
        meta = _meta(obj)
        name = meta.get("name") or ""
        # etcd3 store.Create refuses an object whose resourceVersion parses to a
        # number other than 0 (one that does not parse is dropped); a dry run
        # (DryRunnableStorage.Create) never gets there and answers it as given.
        rv_set = (
            not on_update
            and not opts.dry_run
            and _parse_uint(str(meta.get("resourceVersion") or "0"))[0] not in (None, 0)
        )
        if not name:
            raise invalid(
                rt,
                "",
                [
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value: name or generateName is required",
                        "field": "metadata.name",
                    }
                ],
            )
        errs = validate_name(rt.name_rule, name)
        if errs:
            raise invalid(
                rt,
                name,
                [
                    {
                        "reason": "FieldValueInvalid",
                        "message": f"Invalid value: {_go_quote(name)}: {'; '.join(errs)}",
                        "field": "metadata.name",
                    }
                ],
            )
        self._validate_meta(rt, obj)
        if rt.namespaced:
            self._check_namespace(rt, ns, name)
        if self.storage.get(rkey(rt), ns, name) is not None and not rv_set:
            raise already_exists(rt, name)
        mutated, unadmitted = self._admit_mutating(rt, "CREATE", obj, None, opts)
        if mutated is not obj:
            obj = mutated
            meta = _meta(obj)
            self._check_kind(rt, obj)
            if rt.namespaced:
                meta["namespace"] = ns
            _check_object_name(meta.get("name"), name)
        if rt.resets_status_on_create:
            obj.pop("status", None)
        if not opts.dry_run:
            meta.pop("resourceVersion", None)
        for k in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(k, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if builtin.tracks_generation(rt):
            meta["generation"] = 1
        self.defaulter.default(rt, obj, None)
        causes = builtin.validate(rt, obj, None)
        if causes:
            raise invalid(rt, name, causes)
        admission_webhook.validate_configuration(rt, obj)
        self._validate_custom(rt, obj, None, opts)
        self._track_unadmitted(rt, None, obj, unadmitted, opts)
        is_crd = (rt.group, rt.plural) == (CRD_GROUP, CRD_PLURAL)
        if is_crd:
            crd_mod.default_crd(obj)
            self._validate_crd(rt, obj, None)
        admission_plugins.validate(self, rt, "CREATE", obj, warnings=opts.warnings)
        admission_policy.admit(
            self, rt, "CREATE", obj, None, dry_run=opts.dry_run, warnings=opts.warnings
        )
        admission_webhook.validate(
            self, rt, "CREATE", obj, None, dry_run=opts.dry_run, warnings=opts.warnings
        )
        resource_quota.admit(self, rt, "CREATE", obj, None, dry_run=opts.dry_run)
        if rv_set:
            # storage.ErrResourceVersionSetOnCreate: a plain error, which
            # InterpretCreateError passes through and ErrorToAPIStatus makes a
            # 500 without reason (before the store looks for an existing key).
            raise unknown_error(500, "resourceVersion should not be set on objects to be created")
        if opts.dry_run:
            return self.out(rt, obj)
        stored = self.storage.commit("ADDED", rkey(rt), obj, None)
        if is_crd:
            stored = self._crd_changed(rt, stored)
        return self.out(rt, stored)

    # --- update ------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        body: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> dict[str, Any]:
        """A PUT's object (see ``update_answer``)."""
        return self.update_answer(rt, ns, name, body, opts, subresource=subresource)[0]

    @_rerun_if_stale
    def update_answer(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        body: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """A PUT as kube's ``UpdateResource`` and ``Store.Update`` serve it: the
        object and whether it was created (201: a missing name of a kind whose
        strategy allows create on update, ``ResourceType.allow_create_on_update``).

        In kube's order: the body's namespace and name against the URL's
        (``EnsureObjectNamespaceMatchesRequestNamespace``, ``checkName``: 400);
        the UID precondition the body's ``metadata.uid`` makes (409); the
        object missing (404, or created); the resourceVersion (unparsable: 500;
        absent or 0 is an unconditional update, 422 for a kind whose strategy
        does not allow it; another one: 409)."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        self._check_kind(rt, body)
        stored_rt = self._stored_type(rt)
        if stored_rt is not None:
            stored = conversion.to_stored(rt, stored_rt, body)
            served = replace(opts, served_as=rt)
            updated, created = self.update_answer(
                stored_rt, ns, name, stored, served, subresource=subresource
            )
            return self.out(rt, updated), created
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        ns = (ns or "") if rt.namespaced else ""
        body_ns = meta.get("namespace")
        if rt.namespaced and body_ns and body_ns != ns:
            raise bad_request(_NAMESPACE_MISMATCH)
        _check_object_name(meta.get("name"), name)
        with self.storage.lock:
            old = self.storage.get(rkey(rt), ns, name)
            uid = meta.get("uid")
            old_uid = "" if old is None else str(_meta(old).get("uid") or "")
            if uid and str(uid) != old_uid:
                raise _uid_precondition_failed(rt, ns, name, str(uid), old_uid)
            if old is None:
                if subresource or not rt.allow_create_on_update:
                    raise not_found(rt, name)
                return self._create_on_update(rt, ns, name, body, opts), True
            rv = meta.get("resourceVersion")
            _check_object_resource_version(rv)
            if not rv or str(rv) == "0":
                if not rt.allow_unconditional_update:
                    raise _resource_version_required(rt, name)
            elif str(rv) != _meta(old).get("resourceVersion"):
                raise conflict(rt, name)
            new = self._merge_update(rt, old, body, subresource)
            return self._write_update(rt, old, new, opts, subresource=subresource), False

    def _create_on_update(
        self, rt: ResourceType, ns: str, name: str, body: dict[str, Any], opts: WriteOptions
    ) -> dict[str, Any]:
        """``Store.Update``'s creating branch (lock held): the body created as
        a POST would create it, its resourceVersion dropped."""
        if rt.is_crd:
            self._check_crd_not_terminating(rt)
        obj = {"kind": rt.kind, "apiVersion": rt.api_version, **copy.deepcopy(body)}
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version
        meta = _meta(obj)
        if rt.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        return self._create_locked(rt, ns, obj, opts, on_update=True)

    def _merge_update(
        self, rt: ResourceType, old: dict[str, Any], body: dict[str, Any], subresource: str
    ) -> dict[str, Any]:
        if subresource == "status":
            new = copy.deepcopy(old)
            if "status" in body:
                new["status"] = copy.deepcopy(body["status"])
            else:
                new.pop("status", None)
            if (rt.group, rt.kind) == ("apps", "Deployment"):
                # deploymentStatusStrategy resets only spec and labels: the
                # Deployment controller writes its revision annotation with
                # UpdateStatus, which does not bump the generation.
                bmeta = body.get("metadata")
                if isinstance(bmeta, dict) and isinstance(bmeta.get("annotations"), dict):
                    _meta(new)["annotations"] = copy.deepcopy(bmeta["annotations"])
            elif (rt.group, rt.plural) == ("", "pods"):
                # podStatusStrategy.PrepareForUpdate resets only spec,
                # deletionTimestamp and ownerReferences: labels, annotations and
                # finalizers written through pods/status are kept; status.qosClass
                # is immutable and backfilled when a status write drops it.
                bmeta = body.get("metadata")
                if isinstance(bmeta, dict):
                    meta = _meta(new)
                    for k in ("labels", "annotations", "finalizers"):
                        if k in bmeta:
                            meta[k] = copy.deepcopy(bmeta[k])
                        else:
                            meta.pop(k, None)
                qos = (old.get("status") or {}).get("qosClass")
                status = new.setdefault("status", {})
                if qos and isinstance(status, dict) and not status.get("qosClass"):
                    status["qosClass"] = qos
            return new
        new = copy.deepcopy(body)
        new["kind"] = rt.kind
        new["apiVersion"] = old.get("apiVersion", rt.api_version)
        if rt.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        meta = _meta(new)
        old_meta = _meta(old)
        # rest.BeforeUpdate: "Ensure requests cannot update generation" (every
        # kind: the strategy's PrepareForUpdate may then bump it), "Use the
        # existing UID if none is provided" (another one is refused by
        # ValidateObjectMetaUpdate, see _write_update), creation and deletion
        # timestamps kept.
        system = ["name", "namespace", "creationTimestamp", "generation"]
        system += ["deletionTimestamp", "deletionGracePeriodSeconds"]
        if not meta.get("uid"):
            system.append("uid")
        for k in system:
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta.pop("selfLink", None)
        return new

    def _write_update(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> dict[str, Any]:
        """Validate, default and commit ``new`` over ``old`` (lock held)."""
        name = _meta(old).get("name", "")
        mutated, unadmitted = self._admit_mutating(rt, "UPDATE", new, old, opts, subresource)
        if mutated is not new:
            new = mutated
            self._check_kind(rt, new)
        self._validate_meta(rt, new)
        immutable = _immutable_meta_causes(_meta(new), _meta(old))
        if immutable:
            # BeforeUpdate's validateCommonFields, then the strategy's
            # ValidateUpdate (ValidateObjectMetaUpdate again): each cause twice.
            raise invalid(rt, name, immutable + immutable)
        is_crd = (rt.group, rt.plural) == (CRD_GROUP, CRD_PLURAL)
        # kube decodes (and so defaults, and gives the Go shape to) the whole
        # object of every write, a status write's too (whose strategy then
        # keeps the old spec), before the field manager sees it.
        self._default_keeping_managed_reset(rt, new, old)
        if subresource != "status":
            if is_crd:
                crd_mod.default_crd(new)
            causes = builtin.validate(rt, new, old)
            if causes:
                raise invalid(rt, name, causes)
            admission_webhook.validate_configuration(rt, new)
        self._validate_custom(rt, new, old, opts, subresource)
        if is_crd and subresource != "status":
            self._validate_crd(rt, new, old)
        meta = _meta(new)
        old_meta = _meta(old)
        terminating = bool(old_meta.get("deletionTimestamp"))
        if terminating:
            added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
            if added:
                raise invalid(
                    rt,
                    name,
                    [
                        {
                            "reason": "FieldValueForbidden",
                            "message": "Forbidden: no new finalizers can be added if the "
                            "object is being deleted, found new finalizers "
                            + _json.dumps(sorted(added)).decode(),
                            "field": "metadata.finalizers",
                        }
                    ],
                )
        self._track_unadmitted(rt, old, new, unadmitted, opts, subresource)
        if builtin.tracks_generation(rt):
            gen = int(old_meta.get("generation") or 1)
            # A custom resource without status subresource: its strategy's
            # PrepareForUpdate compares everything but metadata
            # (copyNonMetadata), status included.
            tracked = _non_metadata if rt.is_crd and not rt.has_status else _spec_part
            if tracked(new) != tracked(old) or (
                # kube's deployment strategy: annotations are copied to the
                # ReplicaSets, so changing them bumps the generation too.
                (rt.group, rt.kind) == ("apps", "Deployment")
                and subresource != "status"
                and meta.get("annotations") != old_meta.get("annotations")
            ):
                gen += 1
            meta["generation"] = gen
        if not meta.get("finalizers"):
            meta.pop("finalizers", None)
        admission_plugins.validate(
            self, rt, "UPDATE", new, old, subresource=subresource, warnings=opts.warnings
        )
        admission_policy.admit(
            self, rt, "UPDATE", new, old, subresource=subresource, dry_run=opts.dry_run,
            warnings=opts.warnings,
        )  # fmt: skip
        admission_webhook.validate(
            self, rt, "UPDATE", new, old, subresource=subresource, dry_run=opts.dry_run,
            warnings=opts.warnings,
        )  # fmt: skip
        resource_quota.admit(
            self, rt, "UPDATE", new, old, subresource=subresource, dry_run=opts.dry_run
        )
        _keep_managed_fields_times(new, old)
        if _without_rv(new) == _without_rv(old):
            return self.out(rt, old)  # no-op update: no new resourceVersion, no event
        if opts.dry_run:
            meta["resourceVersion"] = old_meta.get("resourceVersion")
            return self.out(rt, new)
        if _deleted_during_update(old_meta, meta.get("finalizers")) and rt.kind != "Namespace":
            # kube's Store.Update -> deleteWithoutFinalizers: the emptied object
            # is never stored; the stored one is deleted, so the DELETED event
            # carries the last stored state (finalizers and all, at the
            # deletion's resourceVersion), while the writer gets back the
            # object it sent.
            self._remove_locked(rt, copy.deepcopy(old))
            meta["resourceVersion"] = old_meta.get("resourceVersion")
            return self.out(rt, new)
        stored = self.storage.commit("MODIFIED", rkey(rt), new, old)
        if is_crd and subresource != "status":
            stored = self._crd_changed(rt, stored)
        return self.out(rt, stored)

    # --- patch -------------------------------------------------------------------

    @_rerun_if_stale
    def patch(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        content_type: str,
        body: bytes,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """Apply a patch; returns (object, created) — apply may create."""
        ctype = patch_type(rt, content_type)
        if ctype == APPLY and not opts.field_manager:  # in-process callers; HTTP checks first
            request_options.check_write("PatchOptions", {}, patch_type=ctype)
        patch = decode_patch(body, ctype)
        if ctype == APPLY and subresource != "scale":
            fieldmanager.check_apply_gvk(rt, patch)
        op_errors: list[str] = []
        if ctype == JSON_PATCH and opts.field_validation in ("Strict", "Warn"):
            op_errors = json_patch_strict_errors(body, patch)
        ns = (ns or "") if rt.namespaced else ""
        stored_rt = self._stored_type(rt)
        if stored_rt is not None:
            return self._patch_converted(
                rt, stored_rt, ns, name, ctype, patch, opts, subresource=subresource
            )
        with self.storage.lock:
            old = self.storage.get(rkey(rt), ns, name)
            if old is None:
                if ctype == APPLY and subresource == "":
                    if rt.is_crd:
                        self._check_crd_not_terminating(rt, applied=name)
                    if not isinstance(patch, dict):
                        raise bad_request("apply patch must be an object")
                    obj = copy.deepcopy(patch)
                    ameta = _meta(obj)
                    if ameta.get("name") and ameta["name"] != name:
                        raise bad_request(
                            f"the name of the object ({ameta['name']}) does not match the "
                            f"name on the URL ({name})"
                        )
                    ameta["name"] = name
                    self._check_kind(rt, obj)
                    obj["kind"] = rt.kind
                    obj["apiVersion"] = rt.api_version
                    if rt.namespaced:
                        if ameta.get("namespace") and ameta["namespace"] != ns:
                            raise bad_request(
                                "the namespace of the provided object does not match the "
                                "namespace sent on the request"
                            )
                        ameta["namespace"] = ns
                    # Checked against the version the patch names, not the one set above.
                    config = {**obj, "apiVersion": patch.get("apiVersion") or rt.api_version}
                    obj = fieldmanager.apply(rt, None, config, opts)
                    _check_no_uid_on_apply_create(rt, name, obj)
                    return self._create_locked(rt, ns, obj, opts, on_update=True), True
                raise not_found(rt, name)
            patched = self._patched(rt, self.out(rt, old), ctype, patch, opts, subresource)
            if ctype != APPLY:
                try:
                    patched = _decode_patched(rt, patched, opts, op_errors)
                except StatusError as err:
                    raise (smp_decode_error(patch, err) if ctype == STRATEGIC else err) from None
            pmeta: Any = patched.get("metadata")
            if not isinstance(pmeta, dict):
                pmeta = {}
                patched["metadata"] = pmeta
            # The patcher's applyPatch: the namespace, then checkName.
            pns = pmeta.get("namespace")
            if rt.namespaced and pns and pns != ns:
                raise bad_request(_NAMESPACE_MISMATCH)
            _check_object_name(pmeta.get("name"), name)
            rv = pmeta.get("resourceVersion")
            _check_object_resource_version(rv)
            if rv and str(rv) != _meta(old).get("resourceVersion"):
                raise conflict(rt, name)
            new = self._merge_update(rt, old, patched, subresource)
            return self._write_update(rt, old, new, opts, subresource=subresource), False

    def _patched(
        self,
        rt: ResourceType,
        current: dict[str, Any],
        ctype: str,
        patch: Any,
        opts: WriteOptions,
        subresource: str = "",
    ) -> dict[str, Any]:
        """``current`` with ``patch`` of content type ``ctype`` applied."""
        if ctype == MERGE_PATCH:
            patched = json_merge_patch(current, patch)
        elif ctype == JSON_PATCH:
            patched = json_patch(current, patch)
        elif ctype == STRATEGIC:
            patched = strategic_merge_patch(current, patch)
        else:
            self._check_kind(rt, patch if isinstance(patch, dict) else {})
            views = self._field_views(rt)
            patched = fieldmanager.apply(rt, current, patch, opts, subresource, views)
        if not isinstance(patched, dict):
            raise bad_request("patch result is not an object")
        return patched

    def _patch_converted(
        self,
        rt: ResourceType,
        stored_rt: ResourceType,
        ns: str,
        name: str,
        ctype: str,
        patch: Any,
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> tuple[dict[str, Any], bool]:
        """Patch through a type that shares ``stored_rt``'s storage: the patch
        applies to the object as ``rt`` serves it; the result is converted back
        and written as an update of the stored type (lock held throughout),
        through the same ``subresource`` (which never creates)."""
        with self.storage.lock:
            old = self.storage.get(rkey(rt), ns, name)
            if old is None:
                if ctype == APPLY and subresource == "" and isinstance(patch, dict):
                    body = copy.deepcopy(patch)
                    _meta(body).setdefault("name", name)
                    body = fieldmanager.apply(rt, None, body, opts, "", self._field_views(rt))
                    _check_no_uid_on_apply_create(rt, name, body)
                    return self.create(rt, ns, body, opts), True
                raise not_found(rt, name)
            current = copy.deepcopy(self.out(rt, old))
            patched = self._patched(rt, current, ctype, patch, opts, subresource)
            return self.update(rt, ns, name, patched, opts, subresource=subresource), False

    # --- scale subresource -------------------------------------------------------

    def _scale_paths(self, rt: ResourceType) -> scale_mod.ScalePaths:
        paths = scale_mod.scale_paths(rt)
        if paths is None:
            raise StatusError(
                404, "NotFound", "the server could not find the requested resource", {}
            )
        return paths

    def get_scale(self, rt: ResourceType, ns: str | None, name: str) -> dict[str, Any]:
        """``GET .../{name}/scale``: the object's ``autoscaling/v1`` Scale."""
        paths = self._scale_paths(rt)
        obj = self.storage.get(rkey(rt), (ns or "") if rt.namespaced else "", name)
        if obj is None:
            raise self._scale_not_found(rt, name)
        return scale_mod.to_scale(rt, obj, paths)

    @staticmethod
    def _scale_not_found(rt: ResourceType, name: str) -> StatusError:
        """kube's deployment ScaleREST answers NotFound on ``deployments/scale``;
        a custom resource's scale answers with the resource's own NotFound."""
        if rt.is_crd:
            return not_found(rt, name)
        sub = f"{rt.plural}/scale"
        qualified = f"{sub}.{rt.group}" if rt.group else sub
        details = {"name": name, **({"group": rt.group} if rt.group else {}), "kind": sub}
        return StatusError(404, "NotFound", f'{qualified} "{name}" not found', details)

    @_rerun_if_stale
    def update_scale(
        self, rt: ResourceType, ns: str | None, name: str, body: Any, opts: WriteOptions
    ) -> dict[str, Any]:
        """``PUT .../{name}/scale``: set the replicas from a Scale body."""
        paths = self._scale_paths(rt)
        with self.storage.lock:
            old = self.storage.get(rkey(rt), (ns or "") if rt.namespaced else "", name)
            if old is None:
                raise self._scale_not_found(rt, name)
            return self._write_scale_locked(rt, old, paths, body, opts)

    @_rerun_if_stale
    def patch_scale(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        content_type: str,
        body: bytes,
        opts: WriteOptions,
    ) -> dict[str, Any]:
        """``PATCH .../{name}/scale``: patch the Scale, then write its replicas."""
        paths = self._scale_paths(rt)
        ctype = patch_type(rt, content_type)
        patch = decode_patch(body, ctype)
        with self.storage.lock:
            old = self.storage.get(rkey(rt), (ns or "") if rt.namespaced else "", name)
            if old is None:
                raise self._scale_not_found(rt, name)
            current = scale_mod.to_scale(rt, old, paths)
            if ctype == MERGE_PATCH:
                patched = json_merge_patch(current, patch)
            elif ctype == JSON_PATCH:
                patched = json_patch(current, patch)
            elif ctype == APPLY:
                patched = fieldmanager.apply_scale(
                    _SCALE_RT, old, current, patch, opts, paths.spec_replicas
                )
            else:
                patched = strategic_merge_patch(current, patch)
            return self._write_scale_locked(rt, old, paths, patched, opts)

    def _write_scale_locked(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        paths: scale_mod.ScalePaths,
        body: Any,
        opts: WriteOptions,
    ) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        kind = body.get("kind")
        if kind and kind != "Scale":
            raise bad_request(
                f"the kind in the data ({kind}) does not match the expected kind (Scale)"
            )
        name = _meta(old).get("name", "")
        smeta: Any = body.get("metadata")
        if not isinstance(smeta, dict):
            smeta = {}
        rv = smeta.get("resourceVersion")
        if rv and str(rv) != _meta(old).get("resourceVersion"):
            raise conflict(rt, name)
        spec: Any = body.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        replicas = spec.get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise bad_request(
                f'Scale in version "v1" cannot be handled as a Scale: json: cannot '
                f"unmarshal {type(replicas).__name__} into Go struct field "
                "ScaleSpec.spec.replicas of type int32"
            )
        if replicas < 0:
            raise invalid(
                _SCALE_RT,
                name,
                [
                    {
                        "reason": "FieldValueInvalid",
                        "message": f"Invalid value: {replicas}: must be greater than or "
                        "equal to 0",
                        "field": "spec.replicas",
                    }
                ],
            )
        new = scale_mod.apply_replicas(old, paths, replicas)
        stored = self._write_update(rt, old, new, opts, subresource="scale")
        return scale_mod.to_scale(rt, stored, paths)

    # --- delete ------------------------------------------------------------------

    def delete_collection(
        self,
        rt: ResourceType,
        ns: str | None,
        selector: Selector,
        *,
        propagation: str | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> dict[str, Any]:
        """DELETE on a collection: every object ``selector`` matches, one by one as
        ``delete`` would (finalizers, propagation and each pod's own grace
        period included), under one lock so the list and the deletions see
        the same objects. Objects gone meanwhile are skipped. Returns the List
        as listed, before the deletions, whatever the kind: kube's
        ``Store.DeleteCollection`` answers the items its ``List`` gave its
        workers (not what each ``Delete`` answered). With a ``limit`` only
        that one page is deleted (``hasLimit``: kube does not page on), and
        its List, ``continue`` token included, is the answer."""
        with self.storage.lock:
            listed = self.list(rt, ns, selector, limit=limit, continue_token=continue_token)
            for item in listed["items"]:
                meta = item.get("metadata") or {}
                try:
                    self.delete(
                        rt,
                        meta.get("namespace"),
                        meta["name"],
                        propagation=propagation,
                        dry_run=dry_run,
                        grace_period_seconds=grace_period_seconds,
                    )
                except StatusError as err:
                    if err.code != 404:
                        raise
        return listed

    def delete(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """kube's ``Store.Delete``: its answer (see ``delete_answer``).
        ``grace_period_seconds`` is ``DeleteOptions.gracePeriodSeconds``
        (None: not given)."""
        return self.delete_answer(
            rt,
            ns,
            name,
            propagation=propagation,
            preconditions=preconditions,
            dry_run=dry_run,
            grace_period_seconds=grace_period_seconds,
        )[0]

    @_rerun_if_stale
    def delete_answer(
        self,
        rt: ResourceType,
        ns: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        grace_period_seconds: int | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """kube's ``Store.Delete``: what it answers and whether the object was
        deleted at once (``DeleteResource``'s ``wasDeleted``, which makes an
        ``orphanDependents: false`` request answer 202 when false).

        The answer is ``finalizeDelete``'s when the object was removed at once
        (a dry run's would-be removal included) or a pod already in a grace
        period the request does not shorten: the object for the stores that
        set ``ReturnDeletedObject`` (``kinds.returns_deleted_object``), else a
        ``Status`` naming it (``details.kind`` is the resource, "Yes we set
        Kind field to resource"). An object kept (finalizers, a pod's grace
        period, a namespace) is answered as marked, whatever the kind."""
        ns = (ns or "") if rt.namespaced else ""
        with self.storage.lock:
            old = self.storage.get(rkey(rt), ns, name)
            if old is None:
                raise not_found(rt, name)
            meta = _meta(old)
            pre = preconditions or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise _delete_precondition_failed(
                    rt,
                    name,
                    f"the UID in the precondition ({pre['uid']}) does not match the UID in "
                    f"record ({meta.get('uid') or ''}). The object might have been deleted "
                    "and then recreated",
                )
            if pre.get("resourceVersion") and str(pre["resourceVersion"]) != meta.get(
                "resourceVersion"
            ):
                raise _delete_precondition_failed(
                    rt,
                    name,
                    f"the ResourceVersion in the precondition ({pre['resourceVersion']}) does "
                    f"not match the ResourceVersion in record ({meta.get('resourceVersion')}). "
                    "The object might have been modified",
                )
            if (rt.group, rt.plural) == ("", "namespaces") and name in PROTECTED_NAMESPACES:
                raise forbidden(rt, name, "this namespace may not be deleted")
            self._admit_delete(rt, old, dry_run=dry_run)
            # A dry run goes the whole way but commits nothing: an object that
            # finalizers (or the propagation policy's) keep is answered marked
            # as deleting, as kube's updateForGracefulDeletionAndFinalizers does.
            obj, finalized, deleted = self._delete_locked(
                rt, old, propagation, grace_period_seconds, dry_run=dry_run
            )
            if finalized and not kinds_mod.returns_deleted_object(rt):
                return _deleted_status(rt, obj), deleted
            return self.out(rt, obj), deleted

    def _admit_delete(self, rt: ResourceType, old: dict[str, Any], *, dry_run: bool) -> None:
        """A DELETE's admission: mutating webhooks (which may not change
        anything), the policies, the validating webhooks."""
        admission_webhook.mutate(self, rt, "DELETE", None, old, dry_run=dry_run)
        admission_policy.admit(self, rt, "DELETE", None, old, dry_run=dry_run)
        admission_webhook.validate(self, rt, "DELETE", None, old, dry_run=dry_run)

    def admit_delete_locked(self, rt: ResourceType, old: dict[str, Any], user: UserInfo) -> None:
        """Admit a delete the server's own controllers make (garbage collector,
        namespace deleter, CRD finalizer) as ``user``: they delete through the
        API on a cluster, so admission policies and webhooks see (and may
        refuse) their deletes too. Raises the refusal's ``StatusError`` (or
        ``admission_webhook.Stale`` when ``old`` changed while webhooks ran)."""
        token = admission_policy.REQUEST_USER.set(user)
        try:
            self._admit_delete(rt, old, dry_run=False)
        finally:
            admission_policy.REQUEST_USER.reset(token)

    def delete_locked(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        propagation: str | None,
        grace_period_seconds: int | None = None,
        *,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete ``old`` as kube's ``Store.Delete`` does (lock held): the
        object removed, marked or kept (see ``_delete_locked``)."""
        return self._delete_locked(rt, old, propagation, grace_period_seconds, dry_run=dry_run)[0]

    def _delete_locked(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        propagation: str | None,
        grace_period_seconds: int | None = None,
        *,
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool, bool]:
        """Delete ``old`` as kube's ``Store.Delete`` does (lock held), with
        ``DeleteOptions.gracePeriodSeconds`` ``grace_period_seconds`` (None:
        not given, the default of the garbage collector and namespace
        controller).

        Pods (``rest.BeforeDelete`` with the pod strategy's
        ``CheckGracefulDelete``) are deleted gracefully: ``deletionTimestamp``
        now + grace and ``deletionGracePeriodSeconds`` are written (and the
        generation bumped); with a grace period > 0 the pod stays until a
        deletion with grace 0 (its kubelet's); with 0 it is removed right
        after that write (MODIFIED then DELETED) unless finalizers remain. A
        pod already terminating only has its grace period shortened (the
        timestamp moves back by the difference); a longer or absent one
        changes nothing (``gracefulPending``: the object is answered as is).

        Other kinds: marked terminating (``deletionTimestamp`` now, grace 0) if
        finalizers (including the one the propagation policy adds) remain,
        else removed. ``dry_run``: the would-be result, nothing committed.

        Returns the object (removed, marked or as is), whether kube answers it
        through ``finalizeDelete`` (removed at once, or ``pendingGraceful``)
        and whether it was deleted at once (``Store.Delete``'s second result)."""
        meta = _meta(old)
        new = copy.deepcopy(old)
        nmeta = _meta(new)
        if rkey(rt) == CRD_RKEY and not meta.get("deletionTimestamp"):
            # apiextensions' REST.Delete: the first delete of a CRD only marks
            # it (no Store.Delete: no grace period, no generation bump, no
            # propagation finalizer); the CRD finalizer (gc.py) then deletes
            # its instances and removes the cleanup finalizer.
            nmeta["deletionTimestamp"] = now_rfc3339()
            add_finalizer(new, crd_mod.CLEANUP_FINALIZER)
            crd_mod.set_condition(
                new,
                "Terminating",
                "True",
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; "
                "CustomResource deletion will begin soon",
            )
            if dry_run:
                return new, False, False
            return self.storage.commit("MODIFIED", rkey(rt), new, old), False, False
        grace = grace_period_seconds
        if grace is not None and grace < 0:
            grace = 1  # BeforeDelete: a negative grace period is 1 second
        graceful = False
        if rkey(rt) in _GRACEFUL_KINDS:
            current = meta.get("deletionGracePeriodSeconds")
            if isinstance(current, int) and current < 0:
                current = 1
            if meta.get("deletionTimestamp") and current:
                # Already in its grace period: it may only be shortened.
                if grace is None or grace >= current:
                    return old, True, False  # pendingGraceful: finalizeDelete(obj)
                at = _parse_rfc3339(meta.get("deletionTimestamp"))
                if at is not None:
                    nmeta["deletionTimestamp"] = format_rfc3339(at - current + grace)
                nmeta["deletionGracePeriodSeconds"] = grace
                graceful = True
            elif not meta.get("deletionTimestamp"):
                grace = _pod_grace_period(old, grace)
                nmeta["deletionTimestamp"] = format_rfc3339(time.time() + grace)
                nmeta["deletionGracePeriodSeconds"] = grace
                gen = nmeta.get("generation")
                if isinstance(gen, int) and not isinstance(gen, bool) and gen > 0:
                    nmeta["generation"] = gen + 1
                graceful = True
        fins = _gc_finalizers(
            list(meta.get("finalizers") or []), propagation, rkey(rt) in ORPHAN_BY_DEFAULT
        )
        is_ns = (rt.group, rt.plural) == ("", "namespaces")
        if graceful:
            _set_finalizers(nmeta, fins)
            kept = bool(fins) or nmeta["deletionGracePeriodSeconds"] > 0
            if dry_run:
                # Store.Delete answers a dry run's updated object as is.
                return new, False, not kept
            stored = self.storage.commit("MODIFIED", rkey(rt), new, old)
            if kept:
                return stored, False, False
            # Graceless: removed right after the update, the DELETED event
            # carrying the state just stored.
            return self._remove_locked(rt, copy.deepcopy(stored)), True, True
        if not fins and not is_ns:
            if dry_run:
                return old, True, True
            return self._remove_locked(rt, new), True, True
        if meta.get("deletionTimestamp") and fins == list(meta.get("finalizers") or []):
            return old, False, False  # already terminating, nothing new to record
        _set_finalizers(nmeta, fins)
        if not nmeta.get("deletionTimestamp"):
            nmeta["deletionTimestamp"] = now_rfc3339()
            nmeta["deletionGracePeriodSeconds"] = 0
            # Store.markAsDeleting: a finalizer-delayed deletion bumps the
            # generation of objects that have one.
            gen = nmeta.get("generation")
            if isinstance(gen, int) and not isinstance(gen, bool) and gen > 0:
                nmeta["generation"] = gen + 1
        if is_ns:
            status = new.setdefault("status", {})
            status["phase"] = "Terminating"
        if dry_run:
            return new, False, False
        return self.storage.commit("MODIFIED", rkey(rt), new, old), False, False

    def _remove_locked(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """Remove the object for good (a DELETED event). ``obj`` is a fresh copy."""
        old = self.storage.get(rkey(rt), _meta(obj).get("namespace") or "", _meta(obj)["name"])
        deleted = self.storage.commit("DELETED", rkey(rt), obj, old)
        if (rt.group, rt.plural) == (CRD_GROUP, CRD_PLURAL):
            self._crd_removed(deleted)
        return deleted

    def remove_finalizer_locked(
        self, rt: ResourceType, obj: dict[str, Any], finalizer: str
    ) -> dict[str, Any]:
        """Drop ``finalizer`` from a stored object (GC); deletes it if it was the
        last one of a terminating object (the DELETED event then carries the
        stored state, as for a client's update: see ``_write_update``)."""
        new = copy.deepcopy(obj)
        meta = _meta(new)
        fins = [f for f in meta.get("finalizers") or [] if f != finalizer]
        if fins:
            meta["finalizers"] = fins
        else:
            meta.pop("finalizers", None)
        if _deleted_during_update(_meta(obj), fins) and rt.kind != "Namespace":
            return self._remove_locked(rt, copy.deepcopy(obj))
        return self.storage.commit("MODIFIED", rkey(rt), new, obj)

    def replace_locked(
        self, rt: ResourceType, old: dict[str, Any], new: dict[str, Any]
    ) -> dict[str, Any]:
        """Commit an internal (GC) modification of ``old``, shaped as Go stores it."""
        goshape.shape(rt, new)
        return self.storage.commit("MODIFIED", rkey(rt), new, old)

    # --- CRDs --------------------------------------------------------------------

    def _validate_crd(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        causes = crd_mod.validate_crd(obj)
        name = _meta(obj).get("name", "")
        if causes:
            raise invalid(rt, name, list(causes))
        if old is not None:
            spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
            for key in ("group",):
                if spec.get(key) != old_spec.get(key):
                    raise invalid(
                        rt,
                        name,
                        [
                            {
                                "reason": "FieldValueInvalid",
                                "message": f'Invalid value: "{spec.get(key)}": field is immutable',
                                "field": f"spec.{key}",
                            }
                        ],
                    )
            old_names = old_spec.get("names") or {}
            new_names = spec.get("names") or {}
            if old_names.get("plural") != new_names.get("plural"):
                raise invalid(
                    rt,
                    name,
                    [
                        {
                            "reason": "FieldValueInvalid",
                            "message": "Invalid value: field is immutable",
                            "field": "spec.names.plural",
                        }
                    ],
                )

    def _check_crd_not_terminating(self, rt: ResourceType, *, applied: str = "") -> None:
        """The crdHandler refuses to create instances of a terminating CRD:
        a POST with 405, whatever the body; a server-side apply that would
        create ``applied`` with 403 (kubernetes#132467, 1.34: before it, such
        an apply went through)."""
        crd = self.storage.get(CRD_RKEY, "", rt.crd_name or "")
        if crd is None or not crd_mod.is_condition_true(crd, "Terminating"):
            return
        why = "create not allowed while custom resource definition is terminating"
        if applied:
            raise forbidden(rt, applied, why)
        raise StatusError(405, "MethodNotAllowed", why, {"group": rt.group, "kind": rt.plural})

    def _crd_changed(self, rt: ResourceType, crd: dict[str, Any]) -> dict[str, Any]:
        """Register the CRD's served types (replacing old ones), then write its
        Established status as a separate write (lock held)."""
        crd_name = _meta(crd)["name"]
        new_types = crd_mod.crd_to_resource_types(crd)
        keep = {(t.group, t.version, t.plural) for t in new_types}
        for t in self.registry.for_crd(crd_name):
            if (t.group, t.version, t.plural) not in keep:
                self.registry.remove(t.group, t.version, t.plural)
        for t in new_types:
            self.registry.add(t)
        status = crd_mod.established_status(crd)
        if status == crd.get("status"):
            return crd
        new = copy.deepcopy(crd)
        new["status"] = status
        return self.storage.commit("MODIFIED", rkey(rt), new, crd)

    def _crd_removed(self, crd: dict[str, Any]) -> None:
        crd_name = _meta(crd)["name"]
        types = self.registry.for_crd(crd_name)
        if not types:
            return
        rk = (types[0].group, types[0].plural)
        for obj in self.storage.items(rk):
            self.storage.commit("DELETED", rk, copy.deepcopy(obj), obj)
        for t in types:
            self.registry.remove(t.group, t.version, t.plural)

    def install_crd(self, crd: dict[str, Any]) -> dict[str, Any]:
        """Create (or update) a CRD from a dict (server start-up, ``crds=``)."""
        rt = self.registry.get(CRD_GROUP, "v1", CRD_PLURAL)
        assert rt is not None
        name = _meta(crd).get("name", "")
        with self.storage.lock:
            existing = self.storage.get(rkey(rt), "", name)
            if existing is None:
                return self.create(rt, None, crd, WriteOptions())
            body = copy.deepcopy(crd)
            # CRDs take no unconditional update: at the stored resourceVersion.
            _meta(body)["resourceVersion"] = _meta(existing).get("resourceVersion")
            _meta(body).pop("uid", None)
            return self.update(rt, None, name, body, WriteOptions())
