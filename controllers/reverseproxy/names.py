"""Names shared by every part of the ReverseProxy operator.

The API (group, version, kinds, plurals, short names), the labels, the child
name prefixes and the finalizer are the original operator's
(yxwuxuanl/k8s-nginx-operator), so existing YAML, label selectors and
``kubectl get ngxpxy`` keep working. Everything here is a constant or a pure
function of a name.

Invariant: when ``validation.validate()`` accepted an object named ``N`` of
kind ``K``, ``child_name(K, N)`` (``K.prefix + N``) is a DNS-1035 label of at
most 63 characters: a valid Service, ConfigMap and Deployment name and a
valid label value (the ``instance`` label).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

# --- API -------------------------------------------------------------------

GROUP: Final = "nginx.lin2ur.cn"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"


@dataclass(frozen=True)
class Kind:
    """One of the two custom resource kinds and what differs between them."""

    kind: str
    plural: str
    singular: str
    short_name: str
    #: Child objects are named ``prefix + <CR name>``.
    prefix: str
    #: The controller (and work queue, and metrics label) name.
    controller: str
    #: Whether the controller puts ``FINALIZER`` on the object and cleans up itself
    #: (the original does so for TCPReverseProxy only; ReverseProxy relies on GC).
    finalizer: bool

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"

    @property
    def max_name_length(self) -> int:
        """Longest CR name whose children still have 63-character names."""
        return DNS_LABEL_MAX_LENGTH - len(self.prefix)


DNS_LABEL_MAX_LENGTH: Final = 63

REVERSE_PROXY: Final = Kind(
    kind="ReverseProxy",
    plural="reverseproxies",
    singular="reverseproxy",
    short_name="ngxpxy",
    prefix="ngx-proxy-",
    controller="reverseproxy",
    finalizer=False,
)
TCP_REVERSE_PROXY: Final = Kind(
    kind="TCPReverseProxy",
    plural="tcpreverseproxies",
    singular="tcpreverseproxy",
    short_name="ngxtcppxy",
    prefix="ngx-tcpproxy-",
    controller="tcpreverseproxy",
    finalizer=True,
)
KINDS: Final = (REVERSE_PROXY, TCP_REVERSE_PROXY)
KINDS_BY_NAME: Final = {k.kind: k for k in KINDS}

# --- labels, keys, finalizer ----------------------------------------------------

LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "nginx-operator"
LABEL_INSTANCE: Final = "app.kubernetes.io/instance"
#: md5 hex of nginx.conf, on the ConfigMap and the pod template (not on the
#: Deployment's own metadata, not in the selector): a new config changes the
#: pod template, which rolls the pods (the config is mounted with subPath, so
#: the kubelet never updates it in place).
LABEL_CONFIGSUM: Final = "nginx-operator/configsum"

NGINX_CONF_KEY: Final = "nginx.conf"
FINALIZER: Final = "nginx.lin2ur.cn/finalizer"

#: Component of the Events (the original's recorder name).
COMPONENT: Final = "nginx-operator"
#: The original's leader-election Lease name.
LEADER_ELECTION_ID: Final = "8fa9858e.lin2ur.cn"

#: nginx image when ``spec.image`` is empty: ``$DEFAULT_NGINX_IMAGE`` as in the
#: original (its webhook read that variable), else this. Official nginx images
#: have the stream module compiled in.
FALLBACK_NGINX_IMAGE: Final = "nginx:1.25"


def default_nginx_image() -> str:
    return os.environ.get("DEFAULT_NGINX_IMAGE") or FALLBACK_NGINX_IMAGE


# --- the pod ----------------------------------------------------------------------

CONTAINER_NAME: Final = "nginx"
PROXY_PORT: Final = 8080
PROBE_PORT: Final = 3001
PROXY_PORT_NAME: Final = "nginx"
PROBE_PORT_NAME: Final = "probe"
PING_PATH: Final = "/_/ping"
NGINX_UID: Final = 101

# --- conditions and events ----------------------------------------------------------

CONDITION_RECONCILED: Final = "Reconciled"
#: ``Reconciled=True``: every child matches the spec (the original's reason).
REASON_SUCCESS: Final = "Success"
#: ``Reconciled=False``: the spec is invalid; nothing was written, no retry
#: until the object changes. The message names the field.
REASON_INVALID_SPEC: Final = "InvalidSpec"
#: ``Reconciled=False``: a child with our name exists and is not ours; it is
#: left alone (the original adopted and, on TCP deletion, deleted it).
REASON_CHILD_CONFLICT: Final = "ChildConflict"
#: ``Reconciled=False``: the API server refused a child as invalid (422).
REASON_CHILD_INVALID: Final = "ChildInvalid"
#: ``Reconciled=False``: an API call failed; retried with backoff.
REASON_RECONCILE_FAILED: Final = "ReconcileFailed"

CONDITION_REASONS: Final = (
    REASON_SUCCESS,
    REASON_INVALID_SPEC,
    REASON_CHILD_CONFLICT,
    REASON_CHILD_INVALID,
    REASON_RECONCILE_FAILED,
)

EVENT_CREATED: Final = "Created"
EVENT_UPDATED: Final = "Updated"
EVENT_DELETED: Final = "Deleted"
#: The original's Warning reasons.
EVENT_RECONCILE_FAILED: Final = "ReconcileFailed"
EVENT_DELETE_FAILED: Final = "DeleteFailed"


# --- child names ------------------------------------------------------------------


def child_name(kind: Kind, name: str) -> str:
    """Name of all three children of the ``kind`` object ``name``: ``prefix + name``."""
    return f"{kind.prefix}{name}"


def selector_labels(child: str) -> dict[str, str]:
    """The Deployment's matchLabels and the Service's selector (a fresh dict)."""
    return {LABEL_MANAGED_BY: MANAGED_BY, LABEL_INSTANCE: child}


def kind_of(obj: object) -> Kind:
    """The ``Kind`` of a custom resource dict: by ``kind``, else by shape.

    An object without ``kind`` (a bare spec in a test) is a TCPReverseProxy
    if its spec has ``servers``, else a ReverseProxy.
    """
    if isinstance(obj, dict):
        known = KINDS_BY_NAME.get(str(obj.get("kind") or ""))
        if known is not None:
            return known
        spec = obj.get("spec")
        if isinstance(spec, dict) and "servers" in spec:
            return TCP_REVERSE_PROXY
    return REVERSE_PROXY
