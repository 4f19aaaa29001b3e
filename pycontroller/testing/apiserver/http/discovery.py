"""API discovery documents and ``/version`` for the embedded API server.

``discovery_response(registry, path, accept)`` answers ``/api``, ``/api/v1``,
``/apis``, ``/apis/<group>`` and ``/apis/<group>/<version>`` from the
registry's current ``ResourceType``s, as kube-apiserver does:

- Legacy documents (``APIVersions``, ``APIGroupList``, ``APIGroup``,
  ``APIResourceList``) served as ``application/json``.
- Aggregated discovery (``apidiscovery.k8s.io/v2`` and ``v2beta1``
  ``APIGroupDiscoveryList``) for ``/api`` and ``/apis`` when the ``Accept``
  header prefers it, as kubectl 1.32 and client-go do; the response
  ``Content-Type`` names the aggregated GVK, which is how client-go tells the
  two apart (a plain ``application/json`` answer makes it fall back to the
  legacy per-group-version requests).

Versions within a group are ordered by kube's version priority (``v1`` >
``v1beta2`` > ``v1beta1`` > ``v1alpha1`` > non-kube-like names), so the first
is the preferred version. Built-in groups come first in registry order, CRD
groups after them, sorted by name.

Invariant: pure functions of the registry snapshot (``registry.all()``); no
state is kept between calls.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import platform
import re
import sys
from collections.abc import Iterable
from typing import Any, Protocol

from pycontroller.testing.apiserver.http.negotiation import encode_json
from pycontroller.testing.apiserver.registry.scale import SCALE_GVK, scale_paths
from pycontroller.testing.apiserver.resource_types import NOT_STORED, ResourceType

logger = logging.getLogger(__name__)

__all__ = [
    "AGGREGATED_V2BETA1_CONTENT_TYPE",
    "AGGREGATED_V2_CONTENT_TYPE",
    "RegistryView",
    "discovery_response",
    "not_found_status",
    "version_info",
    "version_priority_key",
]

AGGREGATED_V2_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1_CONTENT_TYPE = (
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
)
JSON = "application/json"

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


class RegistryView(Protocol):
    """The part of ``registry.Registry`` discovery and OpenAPI read."""

    def all(self) -> list[ResourceType]: ...


def version_priority_key(version: str) -> tuple[int, int, int, str]:
    """Sort key: kube-like GA first (higher major first), then beta, then alpha,
    then other names alphabetically (apimachinery ``CompareKubeAwareVersionStrings``)."""
    m = _KUBE_VERSION.match(version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, "")


def not_found_status(message: str = "the server could not find the requested resource") -> bytes:
    """A ``Status`` body for a 404, as kube-apiserver sends it."""
    return encode_json(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "NotFound",
            "details": {},
            "code": 404,
        }
    )


def _groups(types: Iterable[ResourceType]) -> dict[str, dict[str, list[ResourceType]]]:
    """group -> version -> resource types, groups and versions in serving order."""
    builtin: dict[str, dict[str, list[ResourceType]]] = {}
    custom: dict[str, dict[str, list[ResourceType]]] = {}
    for rt in types:
        target = custom if rt.is_crd and rt.group not in builtin else builtin
        target.setdefault(rt.group, {}).setdefault(rt.version, []).append(rt)
    out: dict[str, dict[str, list[ResourceType]]] = {}
    for g in [*builtin, *sorted(custom)]:
        versions = builtin.get(g) or custom[g]
        ordered = sorted(versions, key=version_priority_key)
        out[g] = {v: sorted(versions[v], key=lambda rt: rt.plural) for v in ordered}
    return out


def _gv(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


# Other subresources built-in kinds declare (``kinds.py``): response kind
# (empty: the resource's own) and verbs, as kube-apiserver's discovery lists them.
_EXTRA_SUBRESOURCES: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "finalize": ({}, ("update",)),
    "approval": ({}, ("get", "patch", "update")),
    "token": (
        {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
        ("create",),
    ),
    "eviction": ({"group": "policy", "version": "v1", "kind": "Eviction"}, ("create",)),
}


def _subresources(rt: ResourceType) -> list[tuple[str, dict[str, str], list[str]]]:
    """(name, responseKind, verbs) for each subresource of ``rt``."""
    subs: list[tuple[str, dict[str, str], list[str]]] = []
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    if rt.has_status:
        subs.append(("status", gvk, ["get", "patch", "update"]))
    if scale_paths(rt) is not None:
        subs.append(("scale", dict(SCALE_GVK), ["get", "patch", "update"]))
    for name in rt.extra.get("subresources") or ():
        sub = _EXTRA_SUBRESOURCES.get(name)
        if sub is not None:
            subs.append((name, dict(sub[0]) or gvk, list(sub[1])))
    subs.sort(key=lambda s: s[0])
    return subs


def _storage_version_hash(
    rt: ResourceType, groups: dict[str, dict[str, list[ResourceType]]]
) -> str | None:
    """``discovery.StorageVersionHash`` of the group/version/kind the resource
    is stored as: a CRD's storage version; for a built-in its group's
    preferred version (events.k8s.io Events are stored as core v1 Events)."""
    if (rt.group, rt.plural) in NOT_STORED:  # no rest.StorageVersionProvider
        return None
    group, version = rt.group, rt.version
    if rt.is_crd:
        served = groups.get(rt.group, {})
        stored = [v for v, rts in served.items() for t in rts if t.plural == rt.plural
                  and t.extra.get("storage")]  # fmt: skip
        if not stored:
            return None
        version = stored[0]
    else:
        stored_as = rt.extra.get("stored_as")
        if stored_as and stored_as[0] != rt.group:
            group, version = stored_as[0], stored_as[1]
        else:
            served = groups.get(rt.group, {})
            version = next(
                (v for v, rts in served.items() if any(t.plural == rt.plural for t in rts)),
                rt.version,
            )
    digest = hashlib.sha256(f"{group}/{version}/{rt.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode("ascii")


def _api_resources(rt: ResourceType, storage_hash: str | None = None) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular_name,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": sorted(rt.verbs),
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    if storage_hash:
        main["storageVersionHash"] = storage_hash
    out = [main]
    for name, kind, verbs in _subresources(rt):
        # metav1.APIResource's field order: group and version before kind.
        sub: dict[str, Any] = {
            "name": f"{rt.plural}/{name}",
            "singularName": "",
            "namespaced": rt.namespaced,
        }
        if kind["group"] != rt.group:
            sub["group"] = kind["group"]
            sub["version"] = kind["version"]
        sub["kind"] = kind["kind"]
        sub["verbs"] = verbs
        out.append(sub)
    return out


def _resource_discovery(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular_name,
        "verbs": sorted(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subs = [
        {"subresource": name, "responseKind": kind, "verbs": verbs}
        for name, kind, verbs in _subresources(rt)
    ]
    if subs:
        entry["subresources"] = subs
    return entry


def _group_discovery(group: str, versions: dict[str, list[ResourceType]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": group} if group else {}
    metadata["creationTimestamp"] = None
    return {
        "metadata": metadata,
        "versions": [
            {
                "version": v,
                "resources": [_resource_discovery(rt) for rt in rts],
                "freshness": "Current",
            }
            for v, rts in versions.items()
        ],
    }


def _aggregated(groups: list[dict[str, Any]], api_version: str) -> dict[str, Any]:
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": api_version,
        "metadata": {},
        "items": groups,
    }


def _api_group(group: str, versions: Iterable[str]) -> dict[str, Any]:
    vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


def _parse_accept(accept: str) -> list[tuple[str, dict[str, str]]]:
    out: list[tuple[str, dict[str, str]]] = []
    for part in accept.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces or not pieces[0]:
            continue
        params: dict[str, str] = {}
        for p in pieces[1:]:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        out.append((pieces[0].lower(), params))
    return out


def _aggregated_choice(accept: str) -> str | None:
    """``"v2"``/``"v2beta1"`` if the client prefers aggregated discovery, else None."""
    for media, params in _parse_accept(accept or JSON):
        if media in ("application/json", "application/*", "*/*"):
            if (
                params.get("g") == "apidiscovery.k8s.io"
                and params.get("as") == "APIGroupDiscoveryList"
                and params.get("v") in ("v2", "v2beta1")
            ):
                return params["v"]
            if "as" not in params:
                return None
        # Other media types (protobuf, ...) are not served; try the next one.
    return None


def discovery_response(
    registry: RegistryView, path: str, accept: str
) -> tuple[int, bytes, str] | None:
    """``(status, body, content_type)`` for a discovery path, or None if ``path``
    is not a discovery path (the caller routes it elsewhere).

    ``path`` may carry a query string (ignored) and a trailing slash. Unknown
    groups and versions answer 404 with a ``Status`` body.
    """
    path = path.split("?", 1)[0].rstrip("/") or "/"
    parts = path.strip("/").split("/")
    if parts[0] not in ("api", "apis") or len(parts) > 3 or (parts[0] == "api" and len(parts) > 2):
        return None
    groups = _groups(registry.all())
    doc: dict[str, Any]
    if parts == ["api"]:
        core = groups.get("", {})
        choice = _aggregated_choice(accept)
        if choice:
            items = [_group_discovery("", core)] if core else []
            api_version = f"apidiscovery.k8s.io/{choice}"
            ctype = (
                AGGREGATED_V2_CONTENT_TYPE if choice == "v2" else AGGREGATED_V2BETA1_CONTENT_TYPE
            )
            return 200, encode_json(_aggregated(items, api_version)), ctype
        doc = {
            "kind": "APIVersions",
            "versions": list(core),
            "serverAddressByClientCIDRs": [],
        }
        return 200, encode_json(doc), JSON
    if parts == ["apis"]:
        named = {g: vs for g, vs in groups.items() if g}
        choice = _aggregated_choice(accept)
        if choice:
            items = [_group_discovery(g, vs) for g, vs in named.items()]
            api_version = f"apidiscovery.k8s.io/{choice}"
            ctype = (
                AGGREGATED_V2_CONTENT_TYPE if choice == "v2" else AGGREGATED_V2BETA1_CONTENT_TYPE
            )
            return 200, encode_json(_aggregated(items, api_version)), ctype
        doc = {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_api_group(g, vs) for g, vs in named.items()],
        }
        return 200, encode_json(doc), JSON
    if parts[0] == "api":
        group, version = "", parts[1]
    elif len(parts) == 2:
        group = parts[1]
        if not group or group not in groups:
            return 404, not_found_status(), JSON
        doc = {"kind": "APIGroup", "apiVersion": "v1", **_api_group(group, groups[group])}
        return 200, encode_json(doc), JSON
    else:
        group, version = parts[1], parts[2]
        if not group:
            return 404, not_found_status(), JSON
    rts = groups.get(group, {}).get(version)
    if not rts:
        return 404, not_found_status(), JSON
    resources: list[dict[str, Any]] = []
    for rt in rts:
        resources.extend(_api_resources(rt, _storage_version_hash(rt, groups)))
    doc = {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": _gv(group, version),
        "resources": resources,
    }
    return 200, encode_json(doc), JSON


def _platform() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "amd64": "amd64"}.get(
        machine, machine or "unknown"
    )
    os_name = "darwin" if sys.platform == "darwin" else sys.platform.rstrip("0123456789")
    return f"{os_name}/{arch}"


def version_info() -> dict[str, Any]:
    """The ``/version`` document (``version.Info``): Kubernetes 1.32."""
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-pycontroller",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "pycontroller",
        "platform": _platform(),
    }
