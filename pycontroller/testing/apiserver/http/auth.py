"""Authentication and authorization, as kube-apiserver does them for tests.

Authentication (``Authenticator``): a bearer token the server issued names
its user (``issue``; service account tokens from ``serviceaccounts/token``);
any other request, with or without credentials, is the cluster admin
(``kubernetes-admin`` in ``system:masters``), so clients that were never
given a token keep working. ``Impersonate-User`` / ``Impersonate-Group``
/ ``Impersonate-Uid`` headers (``kubectl --as``) switch the user when the
requester may ``impersonate``.

Request attributes (``request_attributes``) are resolved from the path and
verb as kube's ``RequestInfoFactory`` does (``list`` vs ``get``, ``watch``,
``deletecollection``, subresources, non-resource URLs).

Authorization is pluggable (``Authorizer``):

- ``AlwaysAllow`` (the default): every request is allowed, as envtest runs.
- ``RBACAuthorizer``: evaluates the stored Roles, ClusterRoles, RoleBindings
  and ClusterRoleBindings as kube's RBAC authorizer does (verbs, API groups,
  resources and ``resource/subresource``, ``resourceNames``, non-resource
  URLs with a trailing ``*``; User, Group and ServiceAccount subjects).
  ``system:masters`` is allowed everything, and every authenticated user
  gets what kube's bootstrap ``system:discovery``, ``system:basic-user`` and
  ``system:public-info-viewer`` bindings give (discovery, ``/version``,
  OpenAPI, health, self reviews). A denied request is 403 Forbidden with
  kube's message: ``pods is forbidden: User "u" cannot list resource "pods"
  in API group "" in the namespace "default"``.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "ADMIN",
    "AlwaysAllow",
    "Attributes",
    "Authenticator",
    "Authorizer",
    "RBACAuthorizer",
    "UserInfo",
    "authorize_request",
    "forbidden_error",
    "make_authorizer",
    "request_attributes",
    "service_account_user",
    "user_named",
]

AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    """``user.Info``: who sent a request."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)

    def to_api(self) -> dict[str, Any]:
        """``authentication.k8s.io/v1`` ``UserInfo``."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo("kubernetes-admin", groups=("system:masters", AUTHENTICATED))


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    """The user a service account's token authenticates as."""
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        uid=uid,
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


def user_named(name: str, groups: Iterable[str] = ()) -> UserInfo:
    """A user by name; ``system:serviceaccount:ns:name`` gets the service
    account groups, every user ``system:authenticated``."""
    parts = name.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        sa = service_account_user(parts[2], parts[3])
        extra_groups = tuple(g for g in groups if g not in sa.groups)
        return UserInfo(sa.name, groups=sa.groups[:-1] + extra_groups + (AUTHENTICATED,))
    gs = tuple(g for g in groups if g != AUTHENTICATED)
    return UserInfo(name, groups=(*gs, AUTHENTICATED))


class Authenticator:
    """Bearer tokens to users. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[str, UserInfo] = {"embedded": ADMIN}

    def issue(self, user: UserInfo) -> str:
        """A new token that authenticates as ``user``."""
        token = "pyc-" + secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[token] = user
        return token

    def lookup(self, token: str) -> UserInfo | None:
        """The user ``token`` was issued for (TokenReview), or None."""
        with self._lock:
            return self._tokens.get(token)

    def authenticate(self, authorization: str | None) -> UserInfo:
        """The user of an ``Authorization`` header (the admin when unknown)."""
        if authorization and authorization[:7].lower() == "bearer ":
            user = self.lookup(authorization[7:].strip())
            if user is not None:
                return user
        return ADMIN


# --- request attributes -------------------------------------------------------------


@dataclass(frozen=True)
class Attributes:
    """``authorizer.Attributes`` of one request."""

    user: UserInfo
    verb: str
    resource_request: bool
    path: str = ""
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


_SPECIAL_VERBS = {"proxy", "watch"}


def request_attributes(
    user: UserInfo, method: str, path: str, params: Mapping[str, str]
) -> Attributes:
    """kube's ``RequestInfoFactory.NewRequestInfo`` for ``method path``."""
    parts = [p for p in path.split("?", 1)[0].strip("/").split("/") if p]
    method = method.upper()
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        rest = []
        group = version = ""
    if not rest:
        return Attributes(user, method.lower() if method != "HEAD" else "get", False, path=path)
    verb = {
        "POST": "create",
        "GET": "get",
        "HEAD": "get",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }.get(method, method.lower())
    watch_path = False
    if rest[0] in _SPECIAL_VERBS:
        watch_path = rest[0] == "watch"
        if not watch_path:
            verb = rest[0]
        rest = rest[1:]
    namespace = ""
    if len(rest) > 1 and rest[0] == "namespaces":
        namespace = rest[1]
        rest = rest[2:] if len(rest) > 2 else ["namespaces", rest[1]]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces" and not namespace and name:
        namespace = name
    if not name and verb == "get":
        verb = "list"
    if not name and verb == "delete":
        verb = "deletecollection"
    if watch_path or (verb == "list" and params.get("watch", "").lower() in ("true", "1")):
        verb = "watch"
    if verb in ("list", "watch") and not name:
        for term in (params.get("fieldSelector") or "").split(","):
            key, _, value = term.partition("=")
            if key.strip() == "metadata.name" and value and not value.startswith("="):
                name = value.strip()
    return Attributes(
        user,
        verb,
        True,
        path=path,
        namespace=namespace,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        name=name,
    )


def forbidden_error(a: Attributes, reason: str = "") -> StatusError:
    """``responsewriters.Forbidden``: kube's 403 for a denied request."""
    who = f'User "{a.user.name}"'
    if not a.resource_request:
        msg = f'forbidden: {who} cannot {a.verb} path "{a.path.split("?", 1)[0]}"'
        if reason:
            msg += f": {reason}"
        return StatusError(403, "Forbidden", msg, {})
    resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    why = f'{who} cannot {a.verb} resource "{resource}" in API group "{a.api_group}"'
    why += f' in the namespace "{a.namespace}"' if a.namespace else " at the cluster scope"
    if reason:
        why += f": {reason}"
    qualified = f"{a.resource}.{a.api_group}" if a.api_group else a.resource
    details: dict[str, Any] = {}
    if a.name:
        details["name"] = a.name
    if a.api_group:
        details["group"] = a.api_group
    details["kind"] = a.resource
    subject = f'{qualified} "{a.name}"' if a.name else qualified
    return StatusError(403, "Forbidden", f"{subject} is forbidden: {why}", details)


# --- authorizers ----------------------------------------------------------------------


class Authorizer(Protocol):
    def authorize(self, a: Attributes) -> tuple[bool, str]:
        """(allowed, reason)."""
        ...

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(resourceRules, nonResourceRules) ``user`` has in ``namespace``."""
        ...


class AlwaysAllow:
    """Allows every request (kube's ``--authorization-mode=AlwaysAllow``)."""

    def authorize(self, a: Attributes) -> tuple[bool, str]:
        return True, ""

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return (
            [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        )


class ObjectSource(Protocol):
    """What the RBAC authorizer reads: stored objects by (group, plural)."""

    def items(self, rk: tuple[str, str], namespace: str | None = None) -> list[dict[str, Any]]: ...

    def get(self, rk: tuple[str, str], namespace: str, name: str) -> dict[str, Any] | None: ...


_RBAC = "rbac.authorization.k8s.io"


def _has(values: Any, want: str) -> bool:
    return isinstance(values, list) and ("*" in values or want in values)


def _resource_matches(rule: dict[str, Any], a: Attributes) -> bool:
    resources = rule.get("resources")
    if not isinstance(resources, list):
        return False
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    for r in resources:
        if r == "*" or r == combined:
            return True
        if a.subresource and r == f"*/{a.subresource}":
            return True
    return False


def rule_allows(rule: dict[str, Any], a: Attributes) -> bool:
    """``RuleAllows`` of kube's RBAC authorizer."""
    if not _has(rule.get("verbs"), a.verb):
        return False
    if a.resource_request:
        if not _has(rule.get("apiGroups"), a.api_group) or not _resource_matches(rule, a):
            return False
        names = rule.get("resourceNames")
        return not names or (isinstance(names, list) and a.name in names)
    path = a.path.split("?", 1)[0]
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def _subject_matches(subject: dict[str, Any], user: UserInfo, binding_ns: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user.name == f"system:serviceaccount:{ns}:{name}"
    return False


class RBACAuthorizer:
    """kube's RBAC authorizer over the server's stored RBAC objects."""

    def __init__(self, objects: ObjectSource) -> None:
        self.objects = objects

    def _role_rules(self, ref: dict[str, Any], namespace: str) -> list[dict[str, Any]]:
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "ClusterRole":
            role = self.objects.get((_RBAC, "clusterroles"), "", name)
        elif kind == "Role":
            role = self.objects.get((_RBAC, "roles"), namespace, name)
        else:
            role = None
        rules = (role or {}).get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []

    def _visit(self, user: UserInfo, namespace: str) -> Iterable[tuple[str, dict[str, Any]]]:
        """(describing source, rule) for every rule ``user`` holds in ``namespace``."""
        for b in self.objects.items((_RBAC, "clusterrolebindings")):
            if any(
                isinstance(s, dict) and _subject_matches(s, user, "")
                for s in b.get("subjects") or []
            ):
                ref = b.get("roleRef") or {}
                src = (
                    f'ClusterRoleBinding "{(b.get("metadata") or {}).get("name")}" of '
                    f'ClusterRole "{ref.get("name")}"'
                )
                for rule in self._role_rules(ref, ""):
                    yield src, rule
        if not namespace:
            return
        for b in self.objects.items((_RBAC, "rolebindings"), namespace):
            if any(
                isinstance(s, dict) and _subject_matches(s, user, namespace)
                for s in b.get("subjects") or []
            ):
                ref = b.get("roleRef") or {}
                src = (
                    f'RoleBinding "{(b.get("metadata") or {}).get("name")}/{namespace}" of '
                    f'{ref.get("kind")} "{ref.get("name")}"'
                )
                for rule in self._role_rules(ref, namespace):
                    yield src, rule

    def authorize(self, a: Attributes) -> tuple[bool, str]:
        if "system:masters" in a.user.groups:
            return True, ""
        for src, rule in self._visit(a.user, a.namespace):
            if rule_allows(rule, a):
                kind = "User"
                return True, f'RBAC: allowed by {src} to {kind} "{a.user.name}"'
        return False, ""

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if "system:masters" in user.groups:
            return AlwaysAllow().rules_for(user, namespace)
        resource_rules: list[dict[str, Any]] = []
        non_resource: list[dict[str, Any]] = []
        for _src, rule in self._visit(user, namespace):
            if rule.get("nonResourceURLs"):
                non_resource.append(
                    {"verbs": list(rule["verbs"]), "nonResourceURLs": list(rule["nonResourceURLs"])}
                )
            else:
                out = {
                    k: list(rule[k])
                    for k in ("verbs", "apiGroups", "resources", "resourceNames")
                    if isinstance(rule.get(k), list)
                }
                resource_rules.append(out)
        return resource_rules, non_resource


def make_authorizer(mode: str, objects: ObjectSource) -> Authorizer:
    """``"AlwaysAllow"`` (default) or ``"RBAC"`` (case-insensitive)."""
    m = mode.lower()
    if m in ("alwaysallow", "allow", "always-allow"):
        return AlwaysAllow()
    if m == "rbac":
        return RBACAuthorizer(objects)
    raise ValueError(f"unknown authorizer {mode!r}: use 'AlwaysAllow' or 'RBAC'")


def authorize_request(
    authenticator: Authenticator,
    authorizer: Authorizer,
    method: str,
    path: str,
    params: Mapping[str, str],
    headers: Any,
) -> UserInfo:
    """Authenticate a request (impersonation included) and authorize it;
    returns its user or raises the 403 kube answers. ``headers`` is an
    ``email.message.Message`` (``http.server``'s request headers)."""
    user = authenticator.authenticate(headers.get("Authorization"))
    target = headers.get("Impersonate-User")
    groups = [str(g) for g in headers.get_all("Impersonate-Group") or []]
    if target or groups:
        if not target:
            raise StatusError(
                500,
                "InternalError",
                "Internal error occurred: requested [{Kind: Group}] without impersonating a user",
            )
        check = Attributes(user, "impersonate", True, resource="users", name=str(target))
        allowed, reason = authorizer.authorize(check)
        if not allowed:
            raise forbidden_error(check, reason)
        impersonated = user_named(str(target), groups)
        uid = headers.get("Impersonate-Uid")
        user = UserInfo(impersonated.name, uid=str(uid or ""), groups=impersonated.groups)
    a = request_attributes(user, method, path, params)
    allowed, reason = authorizer.authorize(a)
    if not allowed:
        raise forbidden_error(a, reason)
    return user
