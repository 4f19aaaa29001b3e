"""``PartialObjectMetadata`` responses (kube-apiserver ``handlers/response.go``).

A client that sends ``Accept: application/json;as=PartialObjectMetadataList;
g=meta.k8s.io;v=v1`` on a list (client-go's ``metadata`` client, metadata-only
informers) gets a ``PartialObjectMetadataList`` whose items carry only
``metadata``; ``as=PartialObjectMetadata`` does the same for one object (get,
writes, and each object of a watch). Media ranges are taken as kube's
negotiation does: highest ``q`` first, the first one served wins; protobuf
ranges with ``as=`` are not served here (JSON follows them in client-go's
header). Asking for the list form on one object, or the object form on a list,
is 406 as in kube (``asPartialObjectMetadata``/``asPartialObjectMetadataList``).
``Status`` objects pass through unchanged (``doTransformObject``).
"""

from __future__ import annotations

from typing import Any

from pycontroller.testing.apiserver.http.negotiation import media_ranges
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "META_API_VERSION",
    "PARTIAL",
    "PARTIAL_LIST",
    "as_partial",
    "as_partial_list",
    "partial_target",
    "transform",
]

PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
META_API_VERSION = "meta.k8s.io/v1"
_GROUP_VERSIONS = {"v1": "meta.k8s.io/v1", "v1beta1": "meta.k8s.io/v1beta1"}
_JSON_RANGES = ("application/json", "*/*", "application/*")


def partial_target(accept: str) -> tuple[str, str] | None:
    """``(kind, apiVersion)`` when the first served media range of ``accept``
    asks for ``as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1|v1beta1``;
    None for a plain (or other ``as=``, e.g. Table) answer."""
    if "PartialObjectMetadata" not in accept:
        return None  # the common case, without parsing
    for media, params in media_ranges(accept):
        if media not in _JSON_RANGES:
            continue  # protobuf, yaml with as=...: not served as metadata here
        target = params.get("as")
        if not target:
            return None
        if target not in (PARTIAL, PARTIAL_LIST) or params.get("g") != "meta.k8s.io":
            return None
        api_version = _GROUP_VERSIONS.get(params.get("v", ""))
        if api_version is None:
            return None
        return target, api_version
    return None


def _not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


def _go_type(rt: ResourceType, *, is_list: bool) -> str:
    if rt.is_crd:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    return f"*{rt.version}.{rt.list_kind if is_list else rt.kind}"


def as_partial(obj: dict[str, Any], api_version: str = META_API_VERSION) -> dict[str, Any]:
    """The object's ``PartialObjectMetadata`` (its metadata shared, not copied)."""
    return {"kind": PARTIAL, "apiVersion": api_version, "metadata": obj.get("metadata") or {}}


def as_partial_list(lst: dict[str, Any], api_version: str = META_API_VERSION) -> dict[str, Any]:
    """The list as a ``PartialObjectMetadataList`` (ListMeta kept)."""
    return {
        "kind": PARTIAL_LIST,
        "apiVersion": api_version,
        "metadata": lst.get("metadata") or {},
        "items": [as_partial(i, api_version) for i in lst.get("items") or []],
    }


def transform(rt: ResourceType, obj: dict[str, Any], target: tuple[str, str]) -> dict[str, Any]:
    """``obj`` (an object or a list) in the ``target`` form; 406 on a mismatch."""
    if obj.get("kind") == "Status":
        return obj
    kind, api_version = target
    is_list = isinstance(obj.get("items"), list)
    if kind == PARTIAL:
        if is_list:
            raise _not_acceptable(
                "you requested PartialObjectMetadata, but the requested object is a list "
                f"({_go_type(rt, is_list=True)})"
            )
        return as_partial(obj, api_version)
    if not is_list:
        raise _not_acceptable(
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            f"({_go_type(rt, is_list=False)})"
        )
    return as_partial_list(obj, api_version)
