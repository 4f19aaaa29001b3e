"""Pure functions: a ReverseProxy or TCPReverseProxy -> the child objects that implement it.

For an object ``N`` of kind ``K`` in namespace ``NS`` the children, in the
order the reconciler writes them (as the original did), are all named
``K.prefix + N`` (``ngx-proxy-N`` / ``ngx-tcpproxy-N``):

1. a ConfigMap with ``nginx.conf`` = ``nginx.render(obj)``;
2. a Deployment running nginx on it (the original's exact pod: uid 101,
   read-only root, ``nginx`` as the command with ``daemon off;`` in the
   config, the config mounted with ``subPath``, probes on ``/_/ping``);
3. a ClusterIP Service on ``spec.servicePort`` -> the pods' port ``nginx``.

Labels: ``app.kubernetes.io/managed-by: nginx-operator`` and
``app.kubernetes.io/instance: <child name>`` on all three (the Deployment's
selector and the Service's selector are exactly these two);
``nginx-operator/configsum: <md5 of nginx.conf>`` on the ConfigMap and the
pod template, so a config change rolls the pods. ``spec.podLabels`` go on the
pod template under the operator's keys (which win). Every child has the
object's controller ownerReference (``pycontroller.meta.set_controller_reference``).

Defaults (``validation.with_defaults``) are applied first; ``nginx_image`` is
what an empty ``spec.image`` means. One deviation from the original's shape:
when ``spec.resources`` has a limit without a request, the request is set to
the limit, which is what the API server stores anyway; writing it ourselves
keeps the live Deployment equal to the desired one (no write per reconcile).

Invariants: pure (no I/O, clock or randomness; the input is never mutated;
returned objects share nothing with it or with each other); only valid
objects are rendered: ``desired_children`` raises ``validation.InvalidSpec``
with ``validate()``'s messages otherwise.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, cast

from controllers.reverseproxy import names
from controllers.reverseproxy.nginx import render
from controllers.reverseproxy.types import (
    ReverseProxy,
    ReverseProxySpec,
    TCPReverseProxy,
    TCPReverseProxySpec,
)
from controllers.reverseproxy.validation import check
from pycontroller.meta import set_controller_reference

Obj = dict[str, Any]
#: A checked object (``validation.check``: valid, defaults filled in).
Proxy = ReverseProxy | TCPReverseProxy

_CONFIG_VOLUME = "config"
_TMP_VOLUME = "tmp"


def config_sum(text: str) -> str:
    """md5 hex of a rendered nginx.conf (the original's ``configsum`` label value)."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _metadata(obj: Proxy, name: str, labels: dict[str, str]) -> Obj:
    return {
        "name": name,
        "namespace": obj["metadata"].get("namespace") or "default",
        "labels": labels,
    }


def _owned(owner: Obj, child: Obj) -> Obj:
    set_controller_reference(owner, child)
    return child


def configmap(obj: Proxy, name: str, text: str) -> Obj:
    labels = {**names.selector_labels(name), names.LABEL_CONFIGSUM: config_sum(text)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(obj, name, labels),
        "data": {names.NGINX_CONF_KEY: text},
    }


def _probe(initial_delay: int | None) -> Obj:
    probe: Obj = {"httpGet": {"path": names.PING_PATH, "port": names.PROBE_PORT_NAME}}
    if initial_delay is not None:
        probe["initialDelaySeconds"] = initial_delay
    probe.update(periodSeconds=5, timeoutSeconds=5, successThreshold=1, failureThreshold=10)
    return probe


def _resources(spec: ReverseProxySpec | TCPReverseProxySpec) -> Obj:
    resources: Obj = dict(copy.deepcopy(spec.get("resources") or {}))
    limits = resources.get("limits") or {}
    if limits:
        # ``requests: null`` means no requests, as the API server reads it.
        requests = resources["requests"] = resources.get("requests") or {}
        for key, value in limits.items():
            requests.setdefault(key, value)
    return resources


def deployment(obj: Proxy, name: str, text: str, protocol: str) -> Obj:
    spec = obj["spec"]
    selector = names.selector_labels(name)
    pod_labels = {
        **(spec.get("podLabels") or {}),
        **selector,
        names.LABEL_CONFIGSUM: config_sum(text),
    }
    container: Obj = {
        "name": names.CONTAINER_NAME,
        "image": spec["image"],
        "command": ["nginx"],
    }
    if spec.get("env"):
        container["env"] = copy.deepcopy(spec["env"])
    container.update(
        resources=_resources(spec),
        volumeMounts=[
            {
                "name": _CONFIG_VOLUME,
                "mountPath": "/etc/nginx/nginx.conf",
                "subPath": names.NGINX_CONF_KEY,
            },
            {"name": _TMP_VOLUME, "mountPath": "/tmp"},
        ],
        ports=[
            {
                "name": names.PROXY_PORT_NAME,
                "containerPort": names.PROXY_PORT,
                "protocol": protocol,
            },
            {"name": names.PROBE_PORT_NAME, "containerPort": names.PROBE_PORT, "protocol": "TCP"},
        ],
        securityContext={
            "runAsUser": names.NGINX_UID,
            "runAsGroup": names.NGINX_UID,
            "runAsNonRoot": True,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        livenessProbe=_probe(5),
        readinessProbe=_probe(None),
    )
    pod: Obj = {"enableServiceLinks": False, "automountServiceAccountToken": False}
    if spec.get("nodeSelector"):
        pod["nodeSelector"] = dict(spec["nodeSelector"])
    if spec.get("affinity"):
        pod["affinity"] = copy.deepcopy(spec["affinity"])
    pod["volumes"] = [
        {"name": _CONFIG_VOLUME, "configMap": {"name": name}},
        {"name": _TMP_VOLUME, "emptyDir": {}},
    ]
    pod["containers"] = [container]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(obj, name, names.selector_labels(name)),
        "spec": {
            "replicas": spec["replicas"],
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": pod_labels}, "spec": pod},
        },
    }


def service(obj: Proxy, name: str, protocol: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(obj, name, names.selector_labels(name)),
        "spec": {
            "type": "ClusterIP",
            "selector": names.selector_labels(name),
            "ports": [
                {
                    "name": names.PROXY_PORT_NAME,
                    "port": obj["spec"]["servicePort"],
                    "targetPort": names.PROXY_PORT_NAME,
                    "protocol": protocol,
                }
            ],
        },
    }


def desired_children(
    obj: dict[str, Any], *, nginx_image: str | None = None
) -> list[dict[str, Any]]:
    """ConfigMap, Deployment, Service of ``obj`` (in write order), each controlled by it.

    ``nginx_image`` (default ``names.default_nginx_image()``) fills an empty
    ``spec.image``. Raises ``validation.InvalidSpec`` for an invalid object,
    and ``ValueError`` if ``obj`` has no ``metadata.uid`` (an owner must exist
    on the server before it owns).
    """
    image = nginx_image or names.default_nginx_image()
    effective = cast(Proxy, check(obj, nginx_image=image))
    kind = names.kind_of(obj)
    name = names.child_name(kind, effective["metadata"]["name"])
    text = render(obj)
    protocol = str(effective["spec"].get("protocol") or "TCP")
    owner = {
        "apiVersion": obj.get("apiVersion") or names.API_VERSION,
        "kind": kind.kind,
        "metadata": obj["metadata"],
    }
    return [
        _owned(owner, configmap(effective, name, text)),
        _owned(owner, deployment(effective, name, text, protocol)),
        _owned(owner, service(effective, name, protocol)),
    ]
