"""Minimal OpenAPI v3 schemas for built-in kinds and meta/v1 types.

The embedded server does not validate built-in kinds against a schema, so
these schemas only need to be correct, not complete: every built-in kind is an
object with typed ``apiVersion``/``kind``/``metadata`` and
``x-kubernetes-preserve-unknown-fields: true`` for the rest, which is what
clients such as kubectl need (a GVK to find, a schema that accepts any
valid object). ``ObjectMeta``, ``ListMeta``, ``Status``, ``Patch`` and
``DeleteOptions`` are described as in apimachinery, abridged.

Invariant: every call returns fresh dicts (callers may mutate them).
"""

from __future__ import annotations

import logging
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType

logger = logging.getLogger(__name__)

__all__ = ["LIST_META", "META_V1", "OBJECT_META", "builtin_schema", "common_schemas"]

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
