"""Names shared by every part of the Balancer controller: the API, labels,
annotations, child object names, condition types and event reasons.

Everything here is a constant or a pure function of a Balancer name, so the
renderer (``resources.py``, ``nginx.py``), the validator, the reconciler and
the tests agree on one spelling.

Compatibility with the Go project ``hliangzhao/balancer``
---------------------------------------------------------
* API group/version/kind/plural, the label key and the annotation key are the
  Go project's, so existing YAML and label selectors keep working.
* Child names: front Service ``N``, backend Services ``N-<backend>-backend``,
  ConfigMap ``N-proxy-configmap`` are the Go names. The Deployment is
  ``N-proxy`` (the Go code created ``Nproxy`` but looked up ``N``: prior-art
  bug B1); we create and look it up under the same name.
* The front Service ``N`` deliberately carries **no labels**, as in Go: a
  label-selected list ``balancer.exposer.hliangzhao.io/balancer-name=N`` of
  Services is then exactly the set of backend Services, which is what the
  status counters (``activeBackendsNum`` / ``obsoleteBackendsNum``) count.
  Children are owned through their controller ownerReference, which is how
  the reconciler maps events back to the Balancer, so the front Service
  needs no label to be found.

Invariant: when ``validation.validate()`` returned no message for a
Balancer ``N`` (so ``N`` is a DNS-1035 label and ``len(N) + len(backend) <=
54``, hence ``len(N) <= 53``), every Service name produced here (``N``,
``N-<backend>-backend``) is a DNS-1035 label of at most 63 characters, and
the ConfigMap (``N-proxy-configmap``, at most 70 characters) and Deployment
(``N-proxy``) names are valid DNS-1123 subdomains; ``N`` is also a valid
label value. The name functions themselves do not check (they are used to
*describe* bad names in validation messages too).
"""

from __future__ import annotations

import re
from typing import Final

# --- API -------------------------------------------------------------------

GROUP: Final = "exposer.hliangzhao.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "Balancer"
LIST_KIND: Final = "BalancerList"
PLURAL: Final = "balancers"
SINGULAR: Final = "balancer"
SHORT_NAME: Final = "blc"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

# --- labels and annotations -------------------------------------------------

#: Label on backend Services, the ConfigMap, the Deployment and the nginx pods
#: (it is also the Deployment's and the front Service's selector). Value: N.
LABEL_BALANCER_NAME: Final = "balancer.exposer.hliangzhao.io/balancer-name"

#: Pod-template annotation holding ``config_hash(nginx.conf)``: changing the
#: rendered config changes the template and so rolls the nginx pods (nginx
#: reads its config once, at start).
ANNOTATION_CONFIGMAP_HASH: Final = "balancer.exposer.hliangzhao.io/configmap-hash"

#: Key of the rendered config in the ConfigMap's ``data``.
NGINX_CONF_KEY: Final = "nginx.conf"

#: Official nginx image; it is built ``--with-stream`` (static), runs as uid
#: 101 when asked to, and its compiled-in paths are covered by the emptyDir
#: mounts in ``resources.py``.
DEFAULT_NGINX_IMAGE: Final = "nginx:1.27-alpine"

#: Name of the nginx container in the proxy Deployment.
NGINX_CONTAINER_NAME: Final = "nginx"

# --- conditions (metav1.Condition) -------------------------------------------

CONDITION_RECONCILED: Final = "Reconciled"

#: ``Reconciled=True``: every child matches the spec.
REASON_RECONCILE_SUCCEEDED: Final = "ReconcileSucceeded"
#: ``Reconciled=False``: an API call failed; the key is retried with backoff.
REASON_RECONCILE_FAILED: Final = "ReconcileFailed"
#: ``Reconciled=False``: ``validate()`` rejected the spec; nothing was written
#: and the key is not retried until the Balancer changes.
REASON_INVALID_SPEC: Final = "InvalidSpec"

# --- events ------------------------------------------------------------------

EVENT_REASON_SYNCED: Final = "Synced"
EVENT_REASON_INVALID_SPEC: Final = "InvalidSpec"
EVENT_REASON_RECONCILE_FAILED: Final = "ReconcileFailed"
EVENT_REASON_CREATED: Final = "Created"
EVENT_REASON_UPDATED: Final = "Updated"
EVENT_REASON_DELETED: Final = "Deleted"
#: A child with the desired name exists but is not controlled by this
#: Balancer; it is left alone (sample-controller's ``ErrResourceExists``).
EVENT_REASON_RESOURCE_EXISTS: Final = "ErrResourceExists"

# --- child names ---------------------------------------------------------------

#: Longest Kubernetes DNS-1035 / DNS-1123 label.
DNS_LABEL_MAX_LENGTH: Final = 63
_DNS1035_LABEL_RE: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")

BACKEND_SERVICE_SUFFIX: Final = "-backend"
#: ``len(N) + len(backend) <= MAX_NAME_AND_BACKEND_LENGTH`` keeps
#: ``N-<backend>-backend`` within 63 characters.
MAX_NAME_AND_BACKEND_LENGTH: Final = DNS_LABEL_MAX_LENGTH - len("-") - len(BACKEND_SERVICE_SUFFIX)
#: The schema's bound on a backend name alone (the Balancer name has at least
#: one character); the combination is checked by ``validate()``.
MAX_BACKEND_NAME_LENGTH: Final = MAX_NAME_AND_BACKEND_LENGTH - 1


def is_dns1035_label(value: object) -> bool:
    """True iff ``value`` is a str that is a DNS-1035 label (RFC 1035):
    1..63 characters of ``[a-z0-9-]``, starting with a letter and ending
    with a letter or digit. Such a string can never carry nginx syntax
    (no whitespace, ``;``, ``{``, ``#``, quotes or ``:``)."""
    return (
        isinstance(value, str)
        and len(value) <= DNS_LABEL_MAX_LENGTH
        and _DNS1035_LABEL_RE.fullmatch(value) is not None
    )


def backend_service_name(name: str, backend: str) -> str:
    """Name of the Service selecting backend ``backend`` of Balancer ``name``:
    ``N-<backend>-backend`` (the host name nginx proxies to)."""
    return f"{name}-{backend}{BACKEND_SERVICE_SUFFIX}"


def configmap_name(name: str) -> str:
    """Name of the ConfigMap holding nginx.conf: ``N-proxy-configmap``."""
    return f"{name}-proxy-configmap"


def deployment_name(name: str) -> str:
    """Name of the nginx Deployment: ``N-proxy`` (created and looked up
    under this one name; see prior-art bug B1)."""
    return f"{name}-proxy"


def frontend_service_name(name: str) -> str:
    """Name of the front-end Service clients connect to: ``N`` itself."""
    return name


def upstream_name(port_name: str) -> str:
    """nginx upstream block name for a spec port: ``upstream_<port name>``."""
    return f"upstream_{port_name}"


def selector_labels(name: str) -> dict[str, str]:
    """Labels on the nginx pods; also the Deployment's matchLabels and the
    front Service's selector. A fresh dict on every call."""
    return {LABEL_BALANCER_NAME: name}
