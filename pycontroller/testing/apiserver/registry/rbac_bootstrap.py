"""The RBAC objects a cluster starts with, and ClusterRole aggregation.

kube-apiserver's ``rbac/bootstrap-roles`` post-start hook creates the default
ClusterRoles and ClusterRoleBindings (``plugin/pkg/auth/authorizer/rbac/
bootstrappolicy``); kube-controller-manager's ``clusterrole-aggregation``
controller then fills the rules of every ClusterRole that has an
``aggregationRule`` from the ClusterRoles its selectors match. Together they
make ``admin``, ``edit`` and ``view`` usable, and let an operator extend them
with a ClusterRole labelled ``rbac.authorization.k8s.io/aggregate-to-edit``.

This module holds the user-facing part of that policy, written from the
documented behaviour (https://kubernetes.io/docs/reference/access-authn-authz/
rbac/#default-roles-and-role-bindings) rather than copied: the user-facing
roles (``cluster-admin``, ``admin``, ``edit``, ``view`` and the
``system:aggregate-to-*`` roles that feed them) and the discovery roles every
user gets (``system:basic-user``, ``system:discovery``,
``system:public-info-viewer``, ``system:monitoring``,
``system:auth-delegator``, ``system:service-account-issuer-discovery``),
with their bindings. Not created: the roles of kube's own components
(``system:node``, ``system:kube-scheduler``, the ``system:controller:*``
roles...), which no component here authenticates as.

``ClusterRoleAggregator`` is the aggregation controller: a storage listener
wakes it on any ClusterRole change, and a pass rewrites (as field manager
``clusterrole-aggregation-controller``) each aggregated ClusterRole whose
rules differ from the union of its sources' rules: sources sorted by name,
each rule added once (kube's ``ruleExists``: deep equality), the role itself
skipped. It always runs, like the garbage collector, so that the default
roles are filled on every server (on a cluster the controller manager does
it within seconds; envtest, without one, leaves them empty).
"""

from __future__ import annotations

import copy
import logging
import threading
from typing import Any

from pycontroller.labels import selector_from_label_selector
from pycontroller.testing.apiserver.registry.loop import BackgroundLoop
from pycontroller.testing.apiserver.registry.rest import REST, WriteOptions
from pycontroller.testing.apiserver.registry.storage import Event
from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "AGGREGATION_MANAGER",
    "ClusterRoleAggregator",
    "bootstrap_cluster_role_bindings",
    "bootstrap_cluster_roles",
]

logger = logging.getLogger(__name__)

RBAC = "rbac.authorization.k8s.io"
AGGREGATION_MANAGER = "clusterrole-aggregation-controller"
_CLUSTERROLES = (RBAC, "clusterroles")

_READ = ("get", "list", "watch")
_WRITE = ("create", "delete", "deletecollection", "patch", "update")
_ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def _rule(verbs: tuple[str, ...], groups: tuple[str, ...], resources: str) -> dict[str, Any]:
    return {
        "verbs": list(verbs),
        "apiGroups": list(groups),
        "resources": resources.split(),
    }


def _urls(verbs: tuple[str, ...], urls: str) -> dict[str, Any]:
    return {"verbs": list(verbs), "nonResourceURLs": urls.split()}


_VIEW_RULES = (
    _rule(_READ, ("",), "configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status "
          "pods replicationcontrollers replicationcontrollers/scale serviceaccounts services "
          "services/status"),
    _rule(_READ, ("",), "bindings events limitranges namespaces/status pods/log pods/status "
          "replicationcontrollers/status resourcequotas resourcequotas/status"),
    _rule(_READ, ("",), "namespaces"),
    _rule(_READ, ("discovery.k8s.io",), "endpointslices"),
    _rule(_READ, ("apps",), "controllerrevisions daemonsets daemonsets/status deployments "
          "deployments/scale deployments/status replicasets replicasets/scale "
          "replicasets/status statefulsets statefulsets/scale statefulsets/status"),
    _rule(_READ, ("autoscaling",), "horizontalpodautoscalers horizontalpodautoscalers/status"),
    _rule(_READ, ("batch",), "cronjobs cronjobs/status jobs jobs/status"),
    _rule(_READ, ("extensions",), "daemonsets daemonsets/status deployments deployments/scale "
          "deployments/status ingresses ingresses/status networkpolicies replicasets "
          "replicasets/scale replicasets/status replicationcontrollers/scale"),
    _rule(_READ, ("policy",), "poddisruptionbudgets poddisruptionbudgets/status"),
    _rule(_READ, ("networking.k8s.io",), "ingresses ingresses/status networkpolicies"),
)  # fmt: skip

_EDIT_RULES = (
    _rule(_READ, ("",), "pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy"),
    _rule(("impersonate",), ("",), "serviceaccounts"),
    _rule(_WRITE, ("",), "pods pods/attach pods/exec pods/portforward pods/proxy"),
    _rule(("create",), ("",), "pods/eviction"),
    _rule(_WRITE, ("",), "configmaps events persistentvolumeclaims replicationcontrollers "
          "replicationcontrollers/scale secrets serviceaccounts services services/proxy"),
    _rule(("create",), ("",), "serviceaccounts/token"),
    _rule(_WRITE, ("apps",), "daemonsets deployments deployments/rollback deployments/scale "
          "replicasets replicasets/scale statefulsets statefulsets/scale"),
    _rule(_WRITE, ("autoscaling",), "horizontalpodautoscalers"),
    _rule(_WRITE, ("batch",), "cronjobs jobs"),
    _rule(_WRITE, ("extensions",), "daemonsets deployments deployments/rollback "
          "deployments/scale ingresses networkpolicies replicasets replicasets/scale "
          "replicationcontrollers/scale"),
    _rule(_WRITE, ("policy",), "poddisruptionbudgets"),
    _rule(_WRITE, ("networking.k8s.io",), "ingresses networkpolicies"),
    _rule(_ALL, ("coordination.k8s.io",), "leases"),
)  # fmt: skip

_ADMIN_RULES = (
    _rule(("create",), ("authorization.k8s.io",), "localsubjectaccessreviews"),
    _rule(_ALL, (RBAC,), "rolebindings roles"),
)


def _meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **(labels or {})},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _role(
    name: str,
    rules: tuple[dict[str, Any], ...] | None,
    *,
    labels: dict[str, str] | None = None,
    aggregate_from: str = "",
) -> dict[str, Any]:
    role: dict[str, Any] = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": _meta(name, labels),
    }
    if aggregate_from:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [
                {"matchLabels": {f"{RBAC}/aggregate-to-{aggregate_from}": "true"}}
            ]
        }
    if rules is not None:
        role["rules"] = copy.deepcopy(list(rules))
    return role


def _to(target: str) -> dict[str, str]:
    return {f"{RBAC}/aggregate-to-{target}": "true"}


def bootstrap_cluster_roles() -> list[dict[str, Any]]:
    """Fresh copies of the default ClusterRoles (aggregated ones without rules:
    ``ClusterRoleAggregator`` fills them)."""
    return [
        _role("cluster-admin", (_rule(("*",), ("*",), "*"), _urls(("*",), "*"))),
        _role("admin", None, aggregate_from="admin"),
        _role("edit", None, aggregate_from="edit", labels=_to("admin")),
        _role("view", None, aggregate_from="view", labels=_to("edit")),
        _role("system:aggregate-to-admin", _ADMIN_RULES, labels=_to("admin")),
        _role("system:aggregate-to-edit", _EDIT_RULES, labels=_to("edit")),
        _role("system:aggregate-to-view", _VIEW_RULES, labels=_to("view")),
        _role(
            "system:auth-delegator",
            (
                _rule(("create",), ("authentication.k8s.io",), "tokenreviews"),
                _rule(("create",), ("authorization.k8s.io",), "subjectaccessreviews"),
            ),
        ),
        _role(
            "system:basic-user",
            (
                _rule(
                    ("create",),
                    ("authorization.k8s.io",),
                    "selfsubjectaccessreviews selfsubjectrulesreviews",
                ),
                _rule(("create",), ("authentication.k8s.io",), "selfsubjectreviews"),
            ),
        ),
        _role(
            "system:discovery",
            (
                _urls(
                    ("get",),
                    "/api /api/* /apis /apis/* /healthz /livez /openapi /openapi/* /readyz "
                    "/version /version/",
                ),
            ),
        ),
        _role(
            "system:monitoring",
            (
                _urls(
                    ("get",),
                    "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz "
                    "/readyz/*",
                ),
            ),
        ),
        _role(
            "system:public-info-viewer",
            (_urls(("get",), "/healthz /livez /readyz /version /version/"),),
        ),
        _role(
            "system:service-account-issuer-discovery",
            (_urls(("get",), "/.well-known/openid-configuration /openid/v1/jwks"),),
        ),
    ]


def _binding(name: str, *groups: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": g} for g in groups],
    }


def bootstrap_cluster_role_bindings() -> list[dict[str, Any]]:
    """Fresh copies of the default ClusterRoleBindings."""
    return [
        _binding("cluster-admin", "system:masters"),
        _binding("system:basic-user", "system:authenticated"),
        _binding("system:discovery", "system:authenticated"),
        _binding("system:monitoring", "system:monitoring"),
        _binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
        _binding("system:service-account-issuer-discovery", "system:serviceaccounts"),
    ]


def aggregated_rules(role: dict[str, Any], roles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules ``role``'s ``aggregationRule`` gives it, from ``roles``."""
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    name = (role.get("metadata") or {}).get("name")
    sources: dict[str, dict[str, Any]] = {}
    for sel in selectors:
        if not isinstance(sel, dict):
            continue
        try:
            selector = selector_from_label_selector(sel)
        except ValueError:
            continue  # validation refuses such selectors; nothing to match
        for other in roles:
            m = other.get("metadata") or {}
            if m.get("name") != name and selector.matches(m.get("labels") or {}):
                sources[str(m.get("name"))] = other
    out: list[dict[str, Any]] = []
    for source_name in sorted(sources):
        for r in sources[source_name].get("rules") or []:
            if r not in out:
                out.append(copy.deepcopy(r))
    return out


class ClusterRoleAggregator(BackgroundLoop):
    """kube-controller-manager's ``clusterrole-aggregation`` controller."""

    def __init__(self, rest: REST, *, debounce: float = 0.01) -> None:
        super().__init__(debounce)
        self.rest = rest
        rest.storage.add_listener(self._on_event)

    def _on_event(self, ev: Event) -> None:
        if ev.rkey == _CLUSTERROLES:
            self._wake.set()

    def sync_once(self) -> int:
        """Rewrite every aggregated ClusterRole whose rules are stale; returns
        how many were written."""
        rt = self.rest.registry.get(RBAC, "v1", "clusterroles")
        if rt is None:
            return 0
        written = 0
        with self.rest.storage.lock:
            roles = self.rest.storage.items(_CLUSTERROLES)
            for role in roles:
                if not isinstance(role.get("aggregationRule"), dict):
                    continue
                rules = aggregated_rules(role, roles)
                if rules == (role.get("rules") or []):
                    continue
                new = copy.deepcopy(role)
                new["rules"] = rules
                name = str((role.get("metadata") or {}).get("name"))
                try:
                    self.rest.update(
                        rt, None, name, new,
                        WriteOptions(field_manager=AGGREGATION_MANAGER,
                                     user_agent=AGGREGATION_MANAGER),
                    )  # fmt: skip
                except StatusError as err:  # retried on the next change
                    logger.info("aggregating ClusterRole %s failed: %s", name, err)
                    continue
                written += 1
        return written

    thread_name = "apiserver-clusterrole-aggregation"

    def run_pass(self, stop: threading.Event) -> None:
        # A pass's own writes wake it again; the next pass finds the roles
        # current and writes nothing, so this settles.
        self.sync_once()
