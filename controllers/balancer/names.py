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

from typing import Final

from pycontroller.labels import DNS1035_LABEL_MAX_LENGTH
from pycontroller.labels import is_dns1035_label as is_dns1035_label  # re-export

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
#
# The one set of condition types and reasons ``reconcile.py`` writes; every
# reason matches the CRD's condition ``reason`` pattern (a test checks).

CONDITION_RECONCILED: Final = "Reconciled"
CONDITION_AVAILABLE: Final = "Available"

#: ``Reconciled=True``: every child matches the spec.
REASON_SYNCED: Final = "Synced"
#: ``Reconciled=False``: ``validate()`` rejected the spec; nothing was written
#: and the key is not retried until the Balancer changes.
REASON_INVALID_SPEC: Final = "InvalidSpec"
#: ``Reconciled=False``: a desired child exists but is controlled by something
#: else; it is left alone (sample-controller's ``ErrResourceExists``).
REASON_CHILD_CONFLICT: Final = "ChildConflict"
#: ``Reconciled=False``: an API call failed; the key is retried with backoff.
REASON_RECONCILE_FAILED: Final = "ReconcileFailed"
#: ``Available=True``: the nginx Deployment has an available replica.
REASON_MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
#: ``Available=False``: the nginx Deployment has no available replica.
REASON_DEPLOYMENT_UNAVAILABLE: Final = "DeploymentUnavailable"
#: ``Available=False``: the nginx Deployment does not exist (yet).
REASON_DEPLOYMENT_MISSING: Final = "DeploymentMissing"

CONDITION_REASONS: Final = (
    REASON_SYNCED,
    REASON_INVALID_SPEC,
    REASON_CHILD_CONFLICT,
    REASON_RECONCILE_FAILED,
    REASON_MINIMUM_REPLICAS_AVAILABLE,
    REASON_DEPLOYMENT_UNAVAILABLE,
    REASON_DEPLOYMENT_MISSING,
)

# --- events ------------------------------------------------------------------
#
# Normal events for child writes; Warning events for a stuck Balancer reuse
# the condition's reason (InvalidSpec, ChildConflict), failed writes use the
# *Failed reasons.

EVENT_REASON_CREATED: Final = "Created"
EVENT_REASON_UPDATED: Final = "Updated"
EVENT_REASON_DELETED: Final = "Deleted"
EVENT_REASON_CREATE_FAILED: Final = "CreateFailed"
EVENT_REASON_UPDATE_FAILED: Final = "UpdateFailed"
EVENT_REASON_DELETE_FAILED: Final = "DeleteFailed"


# --- child names ---------------------------------------------------------------

#: Longest Kubernetes DNS-1035 / DNS-1123 label.
DNS_LABEL_MAX_LENGTH: Final = DNS1035_LABEL_MAX_LENGTH

BACKEND_SERVICE_SUFFIX: Final = "-backend"
#: ``len(N) + len(backend) <= MAX_NAME_AND_BACKEND_LENGTH`` keeps
#: ``N-<backend>-backend`` within 63 characters.
MAX_NAME_AND_BACKEND_LENGTH: Final = DNS_LABEL_MAX_LENGTH - len("-") - len(BACKEND_SERVICE_SUFFIX)
#: The schema's bound on a backend name alone (the Balancer name has at least
#: one character); the combination is checked by ``validate()``.
MAX_BACKEND_NAME_LENGTH: Final = MAX_NAME_AND_BACKEND_LENGTH - 1


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
