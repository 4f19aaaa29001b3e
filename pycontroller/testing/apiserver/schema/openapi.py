"""OpenAPI v3 documents (and a v2 answer) for the embedded API server.

``openapi_response(registry, path, accept)`` serves:

- ``/openapi/v3``: the discovery index, ``{"paths": {"api/v1":
  {"serverRelativeURL": "/openapi/v3/api/v1?hash=<SHA512>"}, "apis/<g>/<v>":
  ...}}``, one entry per served group/version, the hash being that of the
  document's bytes (as kube-apiserver, so clients may cache by URL).
- ``/openapi/v3/<api/v1 | apis/<g>/<v>>``: an OpenAPI 3.0 document with
  ``components.schemas`` for every kind of that group/version (and its
  ``...List``), each carrying ``x-kubernetes-group-version-kind``, and
  ``paths`` for the collection, item and ``/status`` endpoints whose
  operations carry ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``
  and list their query parameters.

  kubectl depends on two details here. Its ``QueryParamVerifierV3`` decides
  whether server-side field validation is supported by finding the PATCH
  operation with the kind's GVK and looking for a ``fieldValidation`` query
  parameter: every PATCH therefore lists it (otherwise kubectl falls back to
  client-side validation, which needs ``/openapi/v2``). kubectl's
  client-side ``apply`` builds a strategic merge patch from the v3 schema
  only when the PATCH request body lists
  ``application/strategic-merge-patch+json``; our built-in schemas are
  minimal (``x-kubernetes-preserve-unknown-fields``), so it is deliberately
  not listed and kubectl uses its compiled-in types instead (the server does
  accept strategic merge patches for built-ins).
- ``/openapi/v2``: 404 with a ``Status`` body. kubectl asks for protobuf
  there; a 404 makes it fall back cleanly (to ``/swagger-2.0.0.pb-v1``, also
  404, then to compiled-in types).

CRD kinds publish their ``openAPIV3Schema`` with ``apiVersion``/``kind``/
``metadata`` filled in as apiextensions-apiserver does, the kind and its list
carrying ``x-kubernetes-selectable-fields`` (``[{"fieldPath": "spec.x"}]``,
``[]`` without ``selectableFields``, as ``buildSelectableFields``); built-in kinds get
minimal object schemas (``openapi_builtin.py``).

Invariant: documents are pure functions of the registry's types; the last
set of built documents is cached and rebuilt when the set of types changes.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import re
import threading
from typing import Any

from pycontroller import _json
from pycontroller.testing.apiserver.http.discovery import (
    RegistryView,
    not_found_status,
    version_priority_key,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import definitions
from pycontroller.testing.apiserver.schema.openapi_builtin import (
    LIST_META,
    META_V1,
    OBJECT_META,
    builtin_schema,
    kind_schemas,
    meta_schemas,
)

logger = logging.getLogger(__name__)

__all__ = ["build_documents", "definition_name", "openapi_response"]

JSON = "application/json"
KUBE_VERSION = "v1.32.0"

_GVK = "x-kubernetes-group-version-kind"
_SELECTABLE = "x-kubernetes-selectable-fields"
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
# Listed for built-in kinds only, as kube does: kubectl's client-side apply
# then builds strategic merge patches from the kind's published schema.
_STRATEGIC = "application/strategic-merge-patch+json"

# Go package paths kube uses in definition names for built-in groups.
_BUILTIN_PACKAGES = {
    "": "io.k8s.api.core",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac",
}


def gv_path(group: str, version: str) -> str:
    """``api/v1`` for the core group, ``apis/<group>/<version>`` otherwise."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def definition_name(rt: ResourceType) -> str:
    """kube's OpenAPI definition name: ``io.k8s.api.apps.v1.Deployment`` for
    built-ins, reversed group for CRDs (``com.example.v1.Widget``)."""
    if not rt.is_crd:
        known = definitions.by_gvk(rt.group, rt.version, rt.kind)
        if known is not None:
            return known
        pkg = _BUILTIN_PACKAGES.get(rt.group)
        if pkg is None:
            if rt.group.endswith(".k8s.io"):
                pkg = "io.k8s.api." + rt.group[: -len(".k8s.io")]
            else:
                pkg = "io.k8s.api." + rt.group
        return f"{pkg}.{rt.version}.{rt.kind}"
    reversed_group = ".".join(reversed(rt.group.split(".")))
    return f"{reversed_group}.{rt.version}.{rt.kind}"


def _camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.\-_]", s) if p)


def _group_camel(group: str) -> str:
    if not group:
        return "Core"
    if group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"):
        group = group[: -len(".k8s.io")]
    return _camel(group)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _param(name: str, description: str, typ: str = "string") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": typ, "uniqueItems": True},
    }


_DRY_RUN = _param(
    "dryRun",
    "When present, indicates that modifications should not be persisted. Valid values: All",
)
_FIELD_MANAGER = _param(
    "fieldManager", "fieldManager is a name associated with the actor or entity making changes."
)
_FIELD_VALIDATION = _param(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request "
    "containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
)
_FORCE = _param("force", 'Force is going to "force" Apply requests (apply-patch only).', "boolean")
_PRETTY = _param("pretty", "If 'true', then the output is pretty printed.")
_LIST_PARAMS = [
    _param("allowWatchBookmarks", "allowWatchBookmarks requests watch events with type BOOKMARK.",
           "boolean"),
    _param("continue", "The continue option should be set when retrieving more results."),
    _param("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _param("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _param("limit", "limit is a maximum number of responses to return for a list call.",
           "integer"),
    _param("resourceVersion", "resourceVersion sets a constraint on what resource versions a "
           "request may be served from."),
    _param("resourceVersionMatch", "resourceVersionMatch determines how resourceVersion is "
           "applied to list calls."),
    _param("sendInitialEvents", "`sendInitialEvents=true` may be set together with "
           "`watch=true`.", "boolean"),
    _param("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
    _param("watch", "Watch for changes to the described resources.", "boolean"),
]  # fmt: skip
_DELETE_PARAMS = [
    _DRY_RUN,
    _param("gracePeriodSeconds", "The duration in seconds before the object should be deleted.",
           "integer"),
    _param("propagationPolicy", "Whether and how garbage collection will be performed. "
           "Acceptable values are: 'Orphan', 'Background', 'Foreground'."),
]  # fmt: skip


def _content(
    schema: dict[str, Any], types: tuple[str, ...] = (JSON, "application/yaml")
) -> dict[str, Any]:
    return {t: {"schema": schema} for t in types}


def _operation(
    rt: ResourceType,
    action: str,
    op_id: str,
    description: str,
    *,
    params: list[dict[str, Any]],
    body: dict[str, Any] | None = None,
    response: dict[str, Any],
    created: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _content(response)}}
    if created:
        responses["201"] = {"description": "Created", "content": _content(response)}
        responses["202"] = {"description": "Accepted", "content": _content(response)}
    op: dict[str, Any] = {
        "tags": [f"{_group_camel(rt.group)[:1].lower()}{_group_camel(rt.group)[1:]}_{rt.version}"],
        "description": description,
        "operationId": op_id,
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": action,
        _GVK: {"group": rt.group, "version": rt.version, "kind": rt.kind},
    }
    if body is not None:
        op["requestBody"] = {"content": body, "required": True}
    return op


def _path_params(namespaced: bool, named: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if named:
        out.append(
            {
                "name": "name",
                "in": "path",
                "description": "name of the resource",
                "required": True,
                "schema": {"type": "string", "uniqueItems": True},
            }
        )
    if namespaced:
        out.append(
            {
                "name": "namespace",
                "in": "path",
                "description": "object name and auth scope, such as for teams and projects",
                "required": True,
                "schema": {"type": "string", "uniqueItems": True},
            }
        )
    out.append(_PRETTY)
    return out


def _paths_for(rt: ResourceType) -> dict[str, Any]:
    prefix = "/" + gv_path(rt.group, rt.version)
    ns = "namespaces/{namespace}/" if rt.namespaced else ""
    collection = f"{prefix}/{ns}{rt.plural}"
    item = f"{collection}/{{name}}"
    kind_ref = _ref(definition_name(rt))
    list_ref = _ref(definition_name(rt) + "List")
    status_ref = _ref(f"{META_V1}.Status")
    patch_ref = _ref(f"{META_V1}.Patch")
    gc = _group_camel(rt.group) + _camel(rt.version)
    scoped = "Namespaced" if rt.namespaced else ""
    write = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    patch_types = _PATCH_TYPES if rt.is_crd else (*_PATCH_TYPES, _STRATEGIC)
    patch_body = _content(patch_ref, patch_types)
    paths: dict[str, Any] = {
        collection: {
            "get": _operation(
                rt, "list", f"list{gc}{scoped}{rt.kind}",
                f"list or watch objects of kind {rt.kind}",
                params=list(_LIST_PARAMS), response=list_ref,
            ),
            "post": _operation(
                rt, "post", f"create{gc}{scoped}{rt.kind}", f"create a {rt.kind}",
                params=write, body=_content(kind_ref), response=kind_ref, created=True,
            ),
            "delete": _operation(
                rt, "deletecollection", f"deleteCollection{gc}{scoped}{rt.kind}",
                f"delete collection of {rt.kind}",
                params=[*_DELETE_PARAMS, *_LIST_PARAMS], response=status_ref,
            ),
            "parameters": _path_params(rt.namespaced, named=False),
        },
        item: {
            "get": _operation(
                rt, "get", f"read{gc}{scoped}{rt.kind}", f"read the specified {rt.kind}",
                params=[], response=kind_ref,
            ),
            "put": _operation(
                rt, "put", f"replace{gc}{scoped}{rt.kind}", f"replace the specified {rt.kind}",
                params=write, body=_content(kind_ref), response=kind_ref, created=True,
            ),
            "patch": _operation(
                rt, "patch", f"patch{gc}{scoped}{rt.kind}",
                f"partially update the specified {rt.kind}",
                params=[*write, _FORCE], body=patch_body, response=kind_ref, created=True,
            ),
            "delete": _operation(
                rt, "delete", f"delete{gc}{scoped}{rt.kind}", f"delete a {rt.kind}",
                params=_DELETE_PARAMS, response=status_ref,
            ),
            "parameters": _path_params(rt.namespaced, named=True),
        },
    }  # fmt: skip
    if rt.namespaced:
        paths[f"{prefix}/{rt.plural}"] = {
            "get": _operation(
                rt,
                "list",
                f"list{gc}{rt.kind}ForAllNamespaces",
                f"list or watch objects of kind {rt.kind}",
                params=list(_LIST_PARAMS),
                response=list_ref,
            ),
            "parameters": [_PRETTY],
        }
    if rt.has_status:
        paths[f"{item}/status"] = {
            "get": _operation(
                rt, "get", f"read{gc}{scoped}{rt.kind}Status",
                f"read status of the specified {rt.kind}", params=[], response=kind_ref,
            ),
            "put": _operation(
                rt, "put", f"replace{gc}{scoped}{rt.kind}Status",
                f"replace status of the specified {rt.kind}",
                params=write, body=_content(kind_ref), response=kind_ref, created=True,
            ),
            "patch": _operation(
                rt, "patch", f"patch{gc}{scoped}{rt.kind}Status",
                f"partially update status of the specified {rt.kind}",
                params=[*write, _FORCE], body=patch_body, response=kind_ref, created=True,
            ),
            "parameters": _path_params(rt.namespaced, named=True),
        }  # fmt: skip
    return paths


def _create_only_paths(rt: ResourceType) -> dict[str, Any]:
    """The single ``create`` path of a review kind (``reviews.py``)."""
    prefix = "/" + gv_path(rt.group, rt.version)
    ns = "namespaces/{namespace}/" if rt.namespaced else ""
    kind_ref = _ref(definition_name(rt))
    gc = _group_camel(rt.group) + _camel(rt.version)
    scoped = "Namespaced" if rt.namespaced else ""
    write = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    return {
        f"{prefix}/{ns}{rt.plural}": {
            "post": _operation(
                rt, "post", f"create{gc}{scoped}{rt.kind}", f"create a {rt.kind}",
                params=write, body=_content(kind_ref), response=kind_ref, created=True,
            ),
            "parameters": _path_params(rt.namespaced, named=False),
        }
    }  # fmt: skip


def _gvk_ext(rt: ResourceType, kind: str | None = None) -> list[dict[str, str]]:
    return [{"group": rt.group, "kind": kind or rt.kind, "version": rt.version}]


def _type_meta_props() -> dict[str, Any]:
    return {
        "apiVersion": {
            "description": "APIVersion defines the versioned schema of this representation "
            "of an object.",
            "type": "string",
        },
        "kind": {
            "description": "Kind is a string value representing the REST resource this "
            "object represents.",
            "type": "string",
        },
    }


def _kind_schema(rt: ResourceType) -> dict[str, Any]:
    if rt.schema is not None:
        schema = copy.deepcopy(rt.schema)
        props = schema.setdefault("properties", {})
        props.update(_type_meta_props())
        props["metadata"] = {"allOf": [_ref(OBJECT_META)], "default": {}}
    else:
        schema = builtin_schema(rt)
    schema[_GVK] = _gvk_ext(rt)
    if rt.is_crd:
        schema[_SELECTABLE] = _selectable_ext(rt)
    return schema


def _selectable_ext(rt: ResourceType) -> list[dict[str, str]]:
    """apiextensions' ``buildSelectableFields``: the version's selectable field
    paths without the leading dot (``[]`` when it has none, as kube 1.32)."""
    return [{"fieldPath": p.removeprefix(".")} for p in rt.extra.get("selectable_fields") or ()]


def _list_schema(rt: ResourceType) -> dict[str, Any]:
    return {
        "description": f"{rt.kind}List is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            **_type_meta_props(),
            "items": {
                "description": f"List of {rt.plural}.",
                "type": "array",
                "items": _ref(definition_name(rt)),
            },
            "metadata": {"allOf": [_ref(LIST_META)], "default": {}},
        },
        _GVK: _gvk_ext(rt, rt.list_kind),
        **({_SELECTABLE: _selectable_ext(rt)} if rt.is_crd else {}),
    }


def _kind_schemas(rt: ResourceType, *, v3: bool) -> dict[str, Any]:
    """``rt``'s schema, its list's and what they reference: the pinned
    definitions for built-ins (a minimal schema if they lack the kind), the
    CRD's structural schema for custom resources."""
    if rt.schema is None:
        found = kind_schemas(rt, v3=v3)
        if found:
            return found
    name = definition_name(rt)
    return {name: _kind_schema(rt), name + "List": _list_schema(rt)}


def _gv_document(rts: list[ResourceType]) -> dict[str, Any]:
    schemas = meta_schemas()
    paths: dict[str, Any] = {}
    for rt in sorted(rts, key=lambda r: r.plural):
        schemas.update(_kind_schemas(rt, v3=True))
        if rt.extra.get("virtual"):
            paths.update(_create_only_paths(rt))
            continue
        paths.update(_paths_for(rt))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }


_V3_REF = "#/components/schemas/"
_V2_REF = "#/definitions/"


def _v2_refs(node: Any) -> Any:
    """A v3 schema with its references in v2 form (``allOf`` of one ref
    flattened: v2 has no siblings to keep apart)."""
    if isinstance(node, list):
        return [_v2_refs(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _v2_refs(v) for k, v in node.items() if k != "allOf"}
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        out.update(_v2_refs(all_of[0]))
    elif all_of is not None:
        out["allOf"] = _v2_refs(all_of)
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith(_V3_REF):
        out["$ref"] = _V2_REF + ref[len(_V3_REF) :]
    return out


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in op.items() if k not in ("requestBody", "responses", "parameters")}
    params: list[dict[str, Any]] = []
    body = op.get("requestBody")
    if isinstance(body, dict):
        media = list(body.get("content") or {})
        first = (body.get("content") or {}).get(media[0], {}) if media else {}
        params.append(
            {"name": "body", "in": "body", "required": True,
             "schema": _v2_refs(first.get("schema") or {})}
        )  # fmt: skip
        out["consumes"] = media
    params.extend(_v2_param(p) for p in op.get("parameters") or [])
    out["parameters"] = params
    out["produces"] = [JSON, "application/yaml"]
    out["schemes"] = ["https"]
    responses: dict[str, Any] = {}
    for code, resp in (op.get("responses") or {}).items():
        content: dict[str, Any] = resp.get("content") or {}
        offered: dict[str, Any] = next(iter(content.values())) if content else {}
        schema = offered.get("schema")
        entry: dict[str, Any] = {"description": resp.get("description", "")}
        if schema is not None:
            entry["schema"] = _v2_refs(schema)
        responses[code] = entry
    out["responses"] = responses
    return out


def _v2_param(p: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in p.items() if k != "schema"}
    out.update(p.get("schema") or {})
    return out


def _v2_document(types: list[ResourceType]) -> dict[str, Any]:
    """The Swagger 2.0 document of every served type (``/openapi/v2``)."""
    defs = _v2_refs(meta_schemas(v3=True))
    paths: dict[str, Any] = {}
    for rt in sorted(types, key=lambda r: (r.group, version_priority_key(r.version), r.plural)):
        if rt.schema is None:
            found = kind_schemas(rt, v3=False)
            defs.update(found or _v2_refs(_kind_schemas(rt, v3=True)))
        else:
            defs.update(_v2_refs(_kind_schemas(rt, v3=True)))
        gv_paths = _create_only_paths(rt) if rt.extra.get("virtual") else _paths_for(rt)
        for path, item in gv_paths.items():
            paths[path] = {
                k: (_v2_operation(v) if k != "parameters" else [_v2_param(p) for p in v])
                for k, v in item.items()
            }
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBE_VERSION},
        "paths": paths,
        "definitions": defs,
        "securityDefinitions": {
            "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey",
                            "name": "authorization", "in": "header"}
        },
        "security": [{"BearerToken": []}],
    }  # fmt: skip


def _accepts_json(accept: str) -> bool:
    if not accept.strip():
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("application/json", "application/*", "*/*"):
            return True
    return False


class _Documents:
    """Built documents for one set of types: ``gv path -> (bytes, hash)``."""

    __slots__ = ("_v2", "_v2_lock", "docs", "types")

    def __init__(self, types: list[ResourceType]) -> None:
        self.types = types  # kept alive so the ids in the cache key stay unique
        self._v2: bytes | None = None  # built on first request
        self._v2_lock = threading.Lock()
        by_gv: dict[str, list[ResourceType]] = {}
        for rt in sorted(types, key=lambda r: (r.group, version_priority_key(r.version))):
            by_gv.setdefault(gv_path(rt.group, rt.version), []).append(rt)
        self.docs: dict[str, tuple[bytes, str]] = {}
        for p, group_types in by_gv.items():
            body = _json.dumps(_gv_document(group_types))
            self.docs[p] = (body, hashlib.sha512(body).hexdigest().upper())

    def v2(self) -> bytes:
        with self._v2_lock:
            if self._v2 is None:
                self._v2 = _json.dumps(_v2_document(self.types))
            return self._v2

    def index(self) -> bytes:
        return _json.dumps(
            {
                "paths": {
                    p: {"serverRelativeURL": f"/openapi/v3/{p}?hash={h}"}
                    for p, (_, h) in self.docs.items()
                }
            }
        )


_cache_lock = threading.Lock()
_cache: dict[int, tuple[tuple[int, ...], _Documents]] = {}


def build_documents(registry: RegistryView) -> dict[str, bytes]:
    """Every group/version document, keyed by ``api/v1`` / ``apis/<g>/<v>``."""
    return {p: body for p, (body, _) in _documents(registry).docs.items()}


def _documents(registry: RegistryView) -> _Documents:
    types = registry.all()
    key = tuple(id(rt) for rt in types)
    with _cache_lock:
        hit = _cache.get(id(registry))
        if hit is not None and hit[0] == key:
            return hit[1]
    docs = _Documents(types)
    with _cache_lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[id(registry)] = (key, docs)
    return docs


def not_acceptable_status() -> bytes:
    """kube's 406 Status when no offered media type can be served."""
    return _json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "only the following media types are accepted: application/json",
            "reason": "NotAcceptable",
            "details": {},
            "code": 406,
        }
    )


def openapi_response(
    registry: RegistryView, path: str, accept: str
) -> tuple[int, bytes, str] | None:
    """``(status, body, content_type)`` for ``/openapi/...`` paths, else None.

    Answers JSON. ``/openapi/v2`` asked for in protobuf only (client-go's
    ``OpenAPISchema``) is 406 Not Acceptable, which client-go takes as "no v2
    here" and kubectl then works from v3.
    """
    path = path.split("?", 1)[0].rstrip("/")
    if path == "/openapi/v2":
        if not _accepts_json(accept):
            return 406, not_acceptable_status(), JSON
        return 200, _documents(registry).v2(), JSON
    if path == "/swagger-2.0.0.pb-v1":
        return 404, not_found_status(), JSON
    if path == "/openapi/v3":
        return 200, _documents(registry).index(), JSON
    if path.startswith("/openapi/v3/"):
        doc = _documents(registry).docs.get(path[len("/openapi/v3/") :])
        if doc is None:
            return 404, not_found_status(), JSON
        return 200, doc[0], JSON
    return None
