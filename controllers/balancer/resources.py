"""Pure functions: a Balancer -> the child objects that implement it.

For a Balancer ``N`` in namespace ``NS`` the children are, in this order
(the order the reconciler creates them, so that nginx, which resolves its
upstream host names once at start, never starts before its backend
Services exist — prior-art bug B8):

1. one Service ``N-<backend>-backend`` per backend, in spec order: ClusterIP,
   labelled ``balancer-name: N``, selector = ``spec.selector`` overlaid by
   the backend's selector (backend keys win), one port per spec port with
   ``targetPort`` defaulting to ``port``;
2. the ConfigMap ``N-proxy-configmap`` (labelled) with ``nginx.conf`` =
   ``nginx.render(balancer)``;
3. the Deployment ``N-proxy`` (labelled): one nginx replica, the config
   mounted at ``/etc/nginx/nginx.conf``, pod-template annotation
   ``configmap-hash`` = ``config_hash(nginx.conf)`` so that a config change
   rolls the pods;
4. the front Service ``N`` (unlabelled, see ``names``): ClusterIP selecting
   the nginx pods, one port per spec port with ``targetPort`` = ``port``
   (the port nginx listens on).

Every child is in ``NS`` and has exactly one ownerReference, the Balancer's
controller reference (``controller: true, blockOwnerDeletion: true``, set by
``pycontroller.meta.set_controller_reference``), so the garbage collector
deletes children with their Balancer and child events map back to it.

Invariants:

* Pure: no I/O, no clock, no randomness. Equal input gives equal output
  (dicts built in a fixed key order, selectors sorted by key), and the input
  is never mutated: every returned dict and list is freshly built, none is
  shared with the input or with another child.
* Only valid specs are rendered: ``desired_children`` raises ``ValueError``
  listing ``validation.validate()``'s messages when there are any, so an
  invalid or injected name can never reach the API server or nginx.conf.
  ``desired_children`` takes any mapping (a server without schema
  enforcement hands over whatever it stored); the builders of single children
  take a ``types.Balancer``, the shape ``validate()`` has checked.

The nginx pod runs as the official image's unprivileged ``nginx`` user
(uid/gid 101) with a read-only root filesystem, no privilege escalation and
every capability dropped (it satisfies the "restricted" Pod Security
Standard). nginx's compiled-in writable paths get emptyDir volumes
(``/var/cache/nginx`` for temp files, ``/var/run`` for the pid file); the
error log goes to ``/var/log/nginx/error.log``, which the official image
links to stderr. Ports below 1024 are made bindable without
``NET_BIND_SERVICE`` (a capability added to a non-root container is not
effective, Kubernetes sets no ambient capabilities) through the namespaced,
"safe" sysctl ``net.ipv4.ip_unprivileged_port_start=0`` (Kubernetes >= 1.22).
The container's command is ``nginx -g "daemon off;"`` (the image's default
command, without the entrypoint scripts that try to rewrite ``/etc/nginx``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, cast

from controllers.balancer import names
from controllers.balancer.nginx import render
from controllers.balancer.types import Balancer, BalancerSpec, BalancerSpecBackend, BalancerSpecPort
from controllers.balancer.validation import validate
from pycontroller.meta import set_controller_reference

Obj = dict[str, Any]

#: uid/gid of the ``nginx`` user in the official nginx images (Debian and Alpine).
NGINX_UID = 101
_NGINX_CONF_PATH = "/etc/nginx/nginx.conf"
_CONFIG_VOLUME = "nginx-conf"
_CACHE_VOLUME = "nginx-cache"
_RUN_VOLUME = "nginx-run"


class InvalidBalancer(ValueError):
    """``desired_children`` was given a spec ``validate()`` rejects; ``problems``
    holds its messages."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid Balancer: " + "; ".join(problems))
        self.problems = problems


def config_hash(text: str) -> str:
    """Hash of a rendered nginx.conf for the pod-template annotation: the
    first 16 hex digits of its SHA-256. Equal iff the texts are equal (up to
    a 2**-64 collision chance); stable across processes and Python versions
    (unlike ``hash()``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _owner(balancer: Balancer) -> Obj:
    """The Balancer as ``set_controller_reference`` reads an owner.

    ``apiVersion`` and ``kind`` are the API's (``names``), whatever the input
    says, and the namespace is the one the children get.
    """
    meta = balancer["metadata"]
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace") or "default",
            "uid": meta.get("uid") or "",
        },
    }


def _owned(balancer: Balancer, child: Obj) -> Obj:
    """``child`` (built here, owned by nothing yet) with the Balancer as its controller.

    ``metadata.uid`` is always set on objects from the API server. A
    Balancer without one (a sample file rendered offline) cannot own
    anything and ``set_controller_reference`` refuses it; its children get
    the same reference with ``uid: ""``, which the API server would reject.
    """
    owner = _owner(balancer)
    if owner["metadata"]["uid"]:
        set_controller_reference(owner, child)
        return child
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": "",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return child


def _metadata(balancer: Balancer, name: str, *, labelled: bool = True) -> Obj:
    """A child's metadata without ownerReferences (``_owned`` adds them)."""
    meta = balancer["metadata"]
    out: Obj = {"name": name, "namespace": meta.get("namespace") or "default"}
    if labelled:
        out["labels"] = names.selector_labels(meta["name"])
    return out


def _protocol(port: BalancerSpecPort) -> str:
    return str(port.get("protocol") or "TCP")


def _backend_selector(spec: BalancerSpec, backend: BalancerSpecBackend) -> dict[str, str]:
    merged = dict(spec.get("selector") or {})
    merged.update(backend.get("selector") or {})
    return {key: str(merged[key]) for key in sorted(merged)}


def backend_service(balancer: Balancer, backend: BalancerSpecBackend) -> Obj:
    """The Service ``N-<backend>-backend`` that nginx proxies to for
    ``backend`` (an item of ``spec.backends``)."""
    name = balancer["metadata"]["name"]
    spec = balancer["spec"]
    ports = [
        {
            "name": port["name"],
            "protocol": _protocol(port),
            "port": port["port"],
            "targetPort": port.get("targetPort", port["port"]),
        }
        for port in spec["ports"]
    ]
    return _owned(
        balancer,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _metadata(balancer, names.backend_service_name(name, backend["name"])),
            "spec": {
                "type": "ClusterIP",
                "selector": _backend_selector(spec, backend),
                "ports": ports,
            },
        },
    )


def configmap(balancer: Balancer, config: str | None = None) -> Obj:
    """The ConfigMap ``N-proxy-configmap`` holding nginx.conf (``config``,
    rendered from ``balancer`` when not given)."""
    text = render(balancer) if config is None else config
    return _owned(
        balancer,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _metadata(balancer, names.configmap_name(balancer["metadata"]["name"])),
            "data": {names.NGINX_CONF_KEY: text},
        },
    )


def _probes(ports: list[BalancerSpecPort]) -> Obj:
    """TCP readiness and liveness probes on the first TCP port. A UDP-only
    Balancer gets none: kubelet has no UDP probe and nginx opens no TCP
    socket then, so a TCP probe would always fail."""
    tcp = [port["port"] for port in ports if _protocol(port) == "TCP"]
    if not tcp:
        return {}
    return {
        "readinessProbe": {
            "tcpSocket": {"port": tcp[0]},
            "periodSeconds": 5,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "tcpSocket": {"port": tcp[0]},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "failureThreshold": 3,
        },
    }


def deployment(
    balancer: Balancer,
    config: str | None = None,
    *,
    nginx_image: str = names.DEFAULT_NGINX_IMAGE,
) -> Obj:
    """The nginx Deployment ``N-proxy`` serving ``config`` (rendered from
    ``balancer`` when not given) from the ConfigMap ``N-proxy-configmap``."""
    name = balancer["metadata"]["name"]
    ports = balancer["spec"]["ports"]
    text = render(balancer) if config is None else config
    container: Obj = {
        "name": names.NGINX_CONTAINER_NAME,
        "image": nginx_image,
        "command": ["nginx", "-g", "daemon off;"],
        "ports": [{"containerPort": port["port"], "protocol": _protocol(port)} for port in ports],
        **_probes(ports),
        "resources": {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"memory": "128Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {
                "name": _CONFIG_VOLUME,
                "mountPath": _NGINX_CONF_PATH,
                "subPath": names.NGINX_CONF_KEY,
                "readOnly": True,
            },
            {"name": _CACHE_VOLUME, "mountPath": "/var/cache/nginx"},
            {"name": _RUN_VOLUME, "mountPath": "/var/run"},
        ],
    }
    pod_security: Obj = {
        "runAsNonRoot": True,
        "runAsUser": NGINX_UID,
        "runAsGroup": NGINX_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if any(port["port"] < 1024 for port in ports):
        pod_security["sysctls"] = [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]
    return _owned(
        balancer,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _metadata(balancer, names.deployment_name(name)),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": names.selector_labels(name)},
                "template": {
                    "metadata": {
                        "labels": names.selector_labels(name),
                        "annotations": {names.ANNOTATION_CONFIGMAP_HASH: config_hash(text)},
                    },
                    "spec": {
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        "securityContext": pod_security,
                        "containers": [container],
                        "volumes": [
                            {
                                "name": _CONFIG_VOLUME,
                                "configMap": {"name": names.configmap_name(name)},
                            },
                            {"name": _CACHE_VOLUME, "emptyDir": {}},
                            {"name": _RUN_VOLUME, "emptyDir": {}},
                        ],
                    },
                },
            },
        },
    )


def frontend_service(balancer: Balancer) -> Obj:
    """The front-end Service ``N`` (unlabelled) in front of the nginx pods."""
    name = balancer["metadata"]["name"]
    ports = [
        {
            "name": port["name"],
            "protocol": _protocol(port),
            "port": port["port"],
            "targetPort": port["port"],
        }
        for port in balancer["spec"]["ports"]
    ]
    return _owned(
        balancer,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _metadata(balancer, names.frontend_service_name(name), labelled=False),
            "spec": {
                "type": "ClusterIP",
                "selector": names.selector_labels(name),
                "ports": ports,
            },
        },
    )


def desired_children(
    balancer: Mapping[str, Any], *, nginx_image: str = names.DEFAULT_NGINX_IMAGE
) -> list[Obj]:
    """All children of ``balancer``: backend Services (spec order), the
    ConfigMap, the Deployment (image ``nginx_image``), the front Service.

    Raises ``InvalidBalancer`` (a ``ValueError``; message: the ``validate()``
    messages joined by "; ", also in its ``problems``) if the spec is invalid;
    the reconciler reports them as a condition and an event.
    """
    problems = validate(balancer)
    if problems:
        raise InvalidBalancer(problems)
    # validate() passed: the object has the shape types.Balancer describes.
    valid = cast(Balancer, balancer)
    text = render(valid)
    return [
        *(backend_service(valid, backend) for backend in valid["spec"]["backends"]),
        configmap(valid, text),
        deployment(valid, text, nginx_image=nginx_image),
        frontend_service(valid),
    ]
