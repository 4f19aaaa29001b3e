"""OpenAPI schemas of built-in kinds, from the pinned Kubernetes definitions.

``kind_schemas(rt, v3=...)`` gives a built-in kind's schema and every
definition it references (transitively), converted from the JSON Schema that
``kubernetes-validate`` ships (``definitions.py``) back to the OpenAPI forms
kube-apiserver publishes: ``"type": ["string", "null"]`` becomes
``"type": "string"``, references point at ``#/components/schemas/<name>``
(v3, wrapped in ``allOf`` when the property carries a description, as kube
does) or ``#/definitions/<name>`` (v2), and the ``enum`` the converter added to
``apiVersion``/``kind`` is dropped. ``IntOrString`` and ``Quantity`` are
one-ofs in v3 and formatted strings in v2, as in kube's documents. So
``kubectl explain deployment.spec.template`` reads kube's own descriptions,
required fields and list types.

``common_schemas()`` keeps small, self-contained (reference-free) meta/v1
schemas: the server-side apply type converter inlines ``ObjectMeta`` from it
into CRD schemas, and documents fall back to them when the definitions are
unavailable.

Invariant: every call returns fresh dicts (callers may mutate them).
"""

from __future__ import annotations

import logging
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import definitions

logger = logging.getLogger(__name__)

__all__ = [
    "LIST_META",
    "META_V1",
    "OBJECT_META",
    "builtin_schema",
    "common_schemas",
    "convert_definitions",
    "kind_schemas",
    "meta_schemas",
]

META_V1 = "io.k8s.apimachinery.pkg.apis.meta.v1"
OBJECT_META = f"{META_V1}.ObjectMeta"
LIST_META = f"{META_V1}.ListMeta"

_DESCRIPTIONS = {
    "Namespace": "Namespace provides a scope for Names.",
    "Pod": "Pod is a collection of containers that can run on a host.",
    "Service": "Service is a named abstraction of software service (for example, mysql) "
    "consisting of local port (for example 3306) that the proxy listens on, and the "
    "selector that determines which pods will answer requests sent through the proxy.",
    "ConfigMap": "ConfigMap holds configuration data for pods to consume.",
    "Secret": "Secret holds secret data of a certain type.",
    "ServiceAccount": "ServiceAccount binds together: a name, understood by users, and "
    "perhaps by peripheral systems, for an identity; a principal that can be authenticated "
    "and authorized; a set of secrets.",
    "Event": "Event is a report of an event somewhere in the cluster.",
    "Deployment": "Deployment enables declarative updates for Pods and ReplicaSets.",
    "Lease": "Lease defines a lease concept.",
    "CustomResourceDefinition": "CustomResourceDefinition represents a resource that should "
    "be exposed on the API server.",
    "Role": "Role is a namespaced, logical grouping of PolicyRules that can be referenced as "
    "a unit by a RoleBinding.",
    "ClusterRole": "ClusterRole is a cluster level, logical grouping of PolicyRules that can "
    "be referenced as a unit by a RoleBinding or ClusterRoleBinding.",
    "RoleBinding": "RoleBinding references a role, but does not contain it.",
    "ClusterRoleBinding": "ClusterRoleBinding references a ClusterRole, but not contain it.",
}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _str(description: str) -> dict[str, Any]:
    return {"description": description, "type": "string"}


def _string_map(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "type": "object",
        "additionalProperties": {"type": "string", "default": ""},
    }


def _object_meta() -> dict[str, Any]:
    return {
        "description": "ObjectMeta is metadata that all persisted resources must have.",
        "type": "object",
        "properties": {
            "annotations": _string_map("Annotations is an unstructured key value map."),
            "creationTimestamp": {
                "description": "CreationTimestamp is a timestamp representing the server "
                "time when this object was created.",
                "type": "string",
                "format": "date-time",
            },
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
            "deletionTimestamp": {"type": "string", "format": "date-time"},
            "finalizers": {
                "type": "array",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            },
            "generateName": _str("GenerateName is an optional prefix used by the server."),
            "generation": {"type": "integer", "format": "int64"},
            "labels": _string_map("Map of string keys and values used to select objects."),
            "managedFields": {
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "name": _str("Name must be unique within a namespace."),
            "namespace": _str("Namespace defines the space within which each name must be "
                              "unique."),
            "ownerReferences": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["apiVersion", "kind", "name", "uid"],
                    "properties": {
                        "apiVersion": {"type": "string", "default": ""},
                        "blockOwnerDeletion": {"type": "boolean"},
                        "controller": {"type": "boolean"},
                        "kind": {"type": "string", "default": ""},
                        "name": {"type": "string", "default": ""},
                        "uid": {"type": "string", "default": ""},
                    },
                    "x-kubernetes-map-type": "atomic",
                },
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
            },
            "resourceVersion": _str("An opaque value that represents the internal version "
                                    "of this object."),
            "selfLink": _str("Deprecated: selfLink is a legacy read-only field."),
            "uid": _str("UID is the unique in time and space value for this object."),
        },
    }  # fmt: skip


def common_schemas() -> dict[str, Any]:
    """meta/v1 definitions every group/version document references."""
    return {
        OBJECT_META: _object_meta(),
        LIST_META: {
            "description": "ListMeta describes metadata that synthetic resources must have.",
            "type": "object",
            "properties": {
                "continue": {"type": "string"},
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": {"type": "string"},
                "selfLink": {"type": "string"},
            },
        },
        f"{META_V1}.Patch": {
            "description": "Patch is provided to give a concrete name and type to the "
            "Kubernetes PATCH request body.",
            "type": "object",
        },
        f"{META_V1}.Status": {
            "description": "Status is a return value for calls that don't return other objects.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "code": {"type": "integer", "format": "int32"},
                "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "kind": {"type": "string"},
                "message": {"type": "string"},
                "metadata": {"allOf": [_ref(LIST_META)], "default": {}},
                "reason": {"type": "string"},
                "status": {"type": "string"},
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}],
        },
        f"{META_V1}.DeleteOptions": {
            "description": "DeleteOptions may be provided when deleting an API object.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "dryRun": {"type": "array", "items": {"type": "string", "default": ""}},
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "kind": {"type": "string"},
                "preconditions": {
                    "type": "object",
                    "properties": {
                        "resourceVersion": {"type": "string"},
                        "uid": {"type": "string"},
                    },
                },
                "propagationPolicy": {"type": "string"},
            },
        },
    }


def builtin_schema(rt: ResourceType) -> dict[str, Any]:
    """A minimal, permissive schema for a built-in kind (GVK added by the caller)."""
    return {
        "description": _DESCRIPTIONS.get(rt.kind, f"{rt.kind} is a built-in kind."),
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [_ref(OBJECT_META)], "default": {}},
        },
        "x-kubernetes-preserve-unknown-fields": True,
    }


# --- the pinned version's definitions --------------------------------------------

_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_META_ROOTS = (OBJECT_META, LIST_META, f"{META_V1}.Status", f"{META_V1}.Patch",
               f"{META_V1}.DeleteOptions")  # fmt: skip


def _closure(roots: list[str], defs: dict[str, Any]) -> list[str]:
    """``roots`` and every definition they reference, in discovery order."""
    seen: dict[str, None] = {}
    stack = [r for r in roots if r in defs]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen[name] = None
        found: list[str] = []
        _refs(defs[name], found)
        stack.extend(n for n in reversed(found) if n in defs and n not in seen)
    return list(seen)


def _refs(node: Any, out: list[str]) -> None:
    if isinstance(node, dict):
        ref = definitions.ref_name(node)
        if ref is not None:
            out.append(ref)
        for k, v in node.items():
            if k != "$ref":
                _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def _convert(node: Any, prefix: str, v3: bool, *, top: bool = False) -> Any:
    """One JSON Schema node in kube's OpenAPI form (see the module docstring)."""
    if isinstance(node, list):
        return [_convert(v, prefix, v3) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    ref = definitions.ref_name(node)
    for k, v in node.items():
        if k == "$ref":
            continue
        if k == "type" and isinstance(v, list):
            types = [t for t in v if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
            continue
        if k == "properties" and isinstance(v, dict):
            props = {}
            for name, sub in v.items():
                conv = _convert(sub, prefix, v3)
                if name in ("apiVersion", "kind") and isinstance(conv, dict):
                    conv.pop("enum", None)
                props[name] = conv
            out[k] = props
            continue
        if k in ("items", "additionalProperties", "oneOf", "anyOf", "allOf", "not"):
            out[k] = _convert(v, prefix, v3)
            continue
        out[k] = v
    if ref is not None:
        target = {"$ref": prefix + ref}
        if not out:
            return target
        if v3:
            out["allOf"] = [target]
            return out
        return {**target, **out} if top else {**out, **target}
    return out


def _definition(name: str, node: dict[str, Any], prefix: str, v3: bool) -> dict[str, Any]:
    # kube-openapi's OpenAPI v3 definitions of these two are one-ofs (so
    # kubectl explain names the type), v2 has them as formatted strings.
    description = node.get("description", "")
    if name == _INT_OR_STRING:
        if v3:
            return {"description": description,
                    "oneOf": [{"type": "integer"}, {"type": "string"}]}  # fmt: skip
        return {"description": description, "type": "string", "format": "int-or-string"}
    if name == _QUANTITY:
        if v3:
            return {"description": description,
                    "oneOf": [{"type": "string"}, {"type": "number"}]}  # fmt: skip
        return {"description": description, "type": "string"}
    out: dict[str, Any] = _convert(node, prefix, v3, top=True)
    return out


def convert_definitions(names: list[str], *, v3: bool = True) -> dict[str, Any]:
    """The definitions ``names`` and their references, in OpenAPI v3
    (``components.schemas``) or v2 (``definitions``) form; {} when the pinned
    definitions are unavailable."""
    defs = definitions.definitions()
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    return {n: _definition(n, defs[n], prefix, v3) for n in _closure(names, defs)}


def meta_schemas(*, v3: bool = True) -> dict[str, Any]:
    """meta/v1 definitions every document references (``ObjectMeta``,
    ``Status`` ...), from the pinned definitions when available."""
    converted = convert_definitions(list(_META_ROOTS), v3=v3)
    if OBJECT_META not in converted:
        return common_schemas()
    return converted


def kind_schemas(rt: ResourceType, *, v3: bool = True) -> dict[str, Any]:
    """The schema of built-in ``rt`` and of its list kind, with everything they
    reference; {} when the definitions do not describe ``rt``."""
    name = definitions.by_gvk(rt.group, rt.version, rt.kind)
    if name is None:
        return {}
    roots = [name]
    list_name = definitions.by_gvk(rt.group, rt.version, rt.list_kind)
    if list_name is not None:
        roots.append(list_name)
    return convert_definitions(roots, v3=v3)
