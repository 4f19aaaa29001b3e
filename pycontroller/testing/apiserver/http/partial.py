"""``PartialObjectMetadata`` responses (kube-apiserver ``handlers/response.go``).

A client that sends ``Accept: application/json;as=PartialObjectMetadataList;
g=meta.k8s.io;v=v1`` on a list (client-go's ``metadata`` client, metadata-only
informers) gets a ``PartialObjectMetadataList`` whose items carry only
``metadata``; ``as=PartialObjectMetadata`` does the same for one object (get,
writes, and each object of a watch). Which clause is served, and in which
media type (JSON, YAML or protobuf, for custom resources too), is
``negotiation``'s; this module transforms the object. Asking for the list
form on one object, or the object form on a list, is 406 as in kube
(``asPartialObjectMetadata``/``asPartialObjectMetadataList``). ``Status``
objects pass through unchanged (``doTransformObject``).
"""

from __future__ import annotations

from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "META_API_VERSION",
    "PARTIAL",
    "PARTIAL_LIST",
    "as_partial",
    "as_partial_list",
    "transform",
]

PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
META_API_VERSION = "meta.k8s.io/v1"


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
