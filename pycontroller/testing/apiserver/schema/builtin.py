"""Built-in resource types and their per-kind defaulting.

The kinds served out of the box, with the scope, short names, status
subresource and name rule kube-apiserver gives them, and the defaults kube's
defaulting functions and registry strategies apply on create/update: every
type's ``SetDefaults_*`` wherever it occurs (``defaults.py``: pod specs,
containers, probes, volumes, Deployment and other specs), and here what needs
the kind or the server (Service clusterIP and node ports, Pod ``Pending``
phase, Namespace ``Active`` phase and ``kubernetes`` finalizer, Secret type
and ``stringData``). The shape Go's encoding/json gives the defaulted
object (zero ``status``, ``creationTimestamp: null`` in templates,
non-omitempty zeros ...) is ``goshape.py``'s. Controllers tested against this
server therefore see the same defaulted objects they would on a cluster and
must diff semantically, as they must against kube.

Defaulting is deterministic apart from allocated Service cluster IPs and node
ports, which come from a per-server ``Defaulter`` (so a restarted server keeps
allocating fresh addresses).
"""

from __future__ import annotations

import base64
import binascii
import copy
import threading
from fractions import Fraction
from typing import Any

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import defaults as defaults_mod
from pycontroller.testing.apiserver.schema import goshape, pod_strategy, quantity
from pycontroller.testing.apiserver.schema import kinds as _kinds
from pycontroller.testing.apiserver.schema import validation as validation_mod

__all__ = [
    "BUILTIN_TYPES",
    "MAX_SECRET_SIZE",
    "Defaulter",
    "builtin_types",
    "tracks_generation",
]

# core.MaxSecretSize: the most a ConfigMap's data+binaryData or a Secret's data
# may hold (1 MiB), checked by ValidateConfigMap / ValidateSecret.
MAX_SECRET_SIZE = 1024 * 1024

# The built-in kinds whose registry strategy sets metadata.generation (1 on
# create, +1 on a spec change) in Kubernetes 1.32. Every other built-in kind
# (ConfigMap, Secret, Service, Pod, Namespace, ...) has no generation;
# custom resources always do.
_GENERATION_KINDS = frozenset(
    {
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("batch", "Job"),
        ("batch", "CronJob"),
        ("", "ReplicationController"),
        ("policy", "PodDisruptionBudget"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "IngressClass"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    }
)


def tracks_generation(rt: ResourceType) -> bool:
    """Whether the server owns ``metadata.generation`` for ``rt``'s objects."""
    return rt.is_crd or (rt.group, rt.kind) in _GENERATION_KINDS


# The served kinds, their scope, short names, subresources and name rules:
# the data table of kinds.py.
BUILTIN_TYPES: tuple[ResourceType, ...] = tuple(_kinds.builtin_types())


def builtin_types() -> list[ResourceType]:
    """A fresh list of the built-in resource types (``kinds.py``)."""
    return _kinds.builtin_types()


# --- defaulting ----------------------------------------------------------------


# Kinds defaulted by the functions above rather than by defaults.py.
_OWN_DEFAULTS = frozenset({("", "Service"), ("", "Namespace")})


def qos_class(spec: Any) -> str:
    """``qos.GetPodQOS`` (``pkg/apis/core/helper/qos``, 1.32): BestEffort
    without CPU or memory requests and limits; Guaranteed when every
    container limits both and the summed requests equal the summed limits;
    Burstable otherwise."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    containers = [
        c
        for key in ("containers", "initContainers")
        for c in ((spec.get(key) or []) if isinstance(spec, dict) else [])
        if isinstance(c, dict)
    ]
    for c in containers:
        resources: Any = c.get("resources")
        if not isinstance(resources, dict):
            resources = {}
        for source, into in (("requests", requests), ("limits", limits)):
            values = resources.get(source)
            found = set()
            for name, raw in values.items() if isinstance(values, dict) else ():
                q = quantity.value(raw)
                if name in ("cpu", "memory") and q is not None and q > 0:
                    into[name] = into.get(name, Fraction(0)) + q
                    found.add(name)
            if source == "limits" and found != {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (
        guaranteed
        and all(limits.get(k) == v for k, v in requests.items())
        and len(requests) == len(limits)
    ):
        return "Guaranteed"
    return "Burstable"


class Defaulter:
    """Per-kind defaulting; owns the Service IP / node-port allocators.

    Thread-safe: allocation happens under ``_lock`` (callers also serialise
    writes under the storage lock, so this is belt and braces).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_ip = 1
        self._next_node_port = 30000

    def _alloc_ip(self) -> str:
        with self._lock:
            n = self._next_ip
            self._next_ip += 1
        # 10.96.0.0/12, skipping .0 and 10.96.0.1 (the kubernetes service).
        n += 1
        return f"10.{96 + (n >> 16) % 16}.{(n >> 8) & 0xFF}.{n & 0xFF}"

    def _alloc_node_port(self) -> int:
        with self._lock:
            p = self._next_node_port
            self._next_node_port = 30000 + (self._next_node_port - 30000 + 1) % 2768
        return p

    def default(self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Apply defaults to ``obj`` in place (``old`` is the stored object on update)."""
        if rt.is_crd:
            return
        key = (rt.group, rt.kind)
        if key == ("", "Service"):
            self._default_service(obj, old)
        elif key == ("", "Namespace"):
            spec = obj.get("spec")
            if not isinstance(spec, dict):
                spec = obj["spec"] = {}
            if old is None:
                # namespaceStrategy.PrepareForCreate: the "kubernetes" finalizer.
                fins = list(spec.get("finalizers") or [])
                spec["finalizers"] = fins if "kubernetes" in fins else [*fins, "kubernetes"]
            else:
                # PrepareForUpdate: spec.finalizers change only through /finalize.
                old_fins = (old.get("spec") or {}).get("finalizers")
                if old_fins:
                    spec["finalizers"] = list(old_fins)
                else:
                    spec.pop("finalizers", None)
            st = obj.setdefault("status", {})
            st.setdefault("phase", "Active")
            name = (obj.get("metadata") or {}).get("name", "")
            labels = obj["metadata"].get("labels")
            if not isinstance(labels, dict):
                labels = {}
                obj["metadata"]["labels"] = labels
            labels["kubernetes.io/metadata.name"] = name
        elif key not in _OWN_DEFAULTS:
            # Every other kind: its types' defaults, found through its
            # definition (defaults.py), then its strategy's.
            defaults_mod.apply(rt, obj)
            defaults_mod.strategy_defaults(rt, obj, old)
            # PrepareForCreate/PrepareForUpdate of Pods and of the kinds with
            # a pod template: fields of gates off in 1.32 dropped (after
            # decoding's defaults, before validation and the Go shape).
            pod_strategy.drop_disabled_kind_fields(key, obj, old)
            if key == ("", "Pod") and old is None:
                # podStrategy.PrepareForCreate: Pending, and the QoS class.
                st = obj.setdefault("status", {})
                st.setdefault("phase", "Pending")
                st.setdefault("qosClass", qos_class(obj.get("spec")))
                pod_strategy.prepare_for_create(obj)
        if key == ("", "Secret"):
            obj.setdefault("type", "Opaque")
            # Convert_v1_Secret_To_core_Secret: stringData is write-only, merged
            # into data (base64) and never stored.
            string_data = obj.pop("stringData", None)
            if isinstance(string_data, dict) and string_data:
                data = obj.get("data")
                if not isinstance(data, dict):
                    data = {}
                    obj["data"] = data
                for k, v in string_data.items():
                    if isinstance(v, str):
                        data[k] = base64.b64encode(v.encode()).decode("ascii")
        # Decoding into the Go type and marshalling it back: the shape a
        # cluster stores and answers (and the field manager sees).
        goshape.shape(rt, obj)
        if key == ("apps", "DaemonSet"):
            _template_generation(obj, old)

    def _default_service(self, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = obj.setdefault("spec", {})
        old_spec = (old or {}).get("spec") or {}
        if old is not None and isinstance(spec, dict) and isinstance(old_spec, dict):
            _drop_type_dependent_fields(obj, spec, old_spec)
        if not spec.get("sessionAffinity"):
            spec["sessionAffinity"] = "None"
        if spec["sessionAffinity"] == "None":
            spec.pop("sessionAffinityConfig", None)
        elif spec["sessionAffinity"] == "ClientIP":
            config = spec.get("sessionAffinityConfig")
            client_ip = config.get("clientIP") if isinstance(config, dict) else None
            if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
                # v1.DefaultClientIPServiceAffinitySeconds
                spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
        if not spec.get("type"):
            spec["type"] = "ClusterIP"
        stype = spec["type"]
        if stype != "ExternalName":
            if not spec.get("clusterIP"):
                if old_spec.get("clusterIP"):
                    spec["clusterIP"] = old_spec["clusterIP"]
                    if old_spec.get("clusterIPs"):
                        spec["clusterIPs"] = list(old_spec["clusterIPs"])
                else:
                    spec["clusterIP"] = self._alloc_ip()
            if spec["clusterIP"] != "None" or "clusterIPs" not in spec:
                spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p
            for p in old_spec.get("ports") or []
            if isinstance(p, dict)
        }
        for p in spec.get("ports") or []:
            if not isinstance(p, dict):
                continue
            if not p.get("protocol"):
                p["protocol"] = "TCP"
            if p.get("targetPort") in (None, 0, ""):
                p["targetPort"] = p.get("port", 0)
            if stype in ("NodePort", "LoadBalancer") and not p.get("nodePort"):
                prev = old_ports.get((p.get("port"), p["protocol"]))
                p["nodePort"] = (prev or {}).get("nodePort") or self._alloc_node_port()
        if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
            spec["externalTrafficPolicy"] = "Cluster"
        if (
            stype == "LoadBalancer"
            and spec.get("externalTrafficPolicy") == "Local"
            and not spec.get("healthCheckNodePort")
        ):
            # The Service REST's allocHealthCheckNodePort (needsHCNodePort):
            # the one it had, else a new one.
            spec["healthCheckNodePort"] = (
                old_spec.get("healthCheckNodePort") or self._alloc_node_port()
            )
        if stype == "LoadBalancer":
            if spec.get("allocateLoadBalancerNodePorts") is None:
                spec["allocateLoadBalancerNodePorts"] = True
            # An ingress point with an IP and no ipMode is a VIP.
            status = obj.get("status")
            lb = status.get("loadBalancer") if isinstance(status, dict) else None
            ingress = lb.get("ingress") if isinstance(lb, dict) else None
            for point in ingress if isinstance(ingress, list) else ():
                if isinstance(point, dict) and point.get("ip") and point.get("ipMode") is None:
                    point["ipMode"] = "VIP"


def _node_ports(spec: dict[str, Any]) -> set[Any]:
    return {
        p.get("nodePort")
        for p in spec.get("ports") or []
        if isinstance(p, dict) and p.get("nodePort") not in (None, 0)
    }


def _externally_accessible(spec: dict[str, Any]) -> bool:
    """``service.ExternallyAccessible``."""
    stype = spec.get("type")
    return stype in ("NodePort", "LoadBalancer") or (
        stype == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def _drop_type_dependent_fields(
    obj: dict[str, Any], spec: dict[str, Any], old_spec: dict[str, Any]
) -> None:
    """The Service strategy's ``dropTypeDependentFields`` (PrepareForUpdate):
    an update to a type that has no use for a field the server allocated or
    defaulted drops it, when the update left it unchanged (so a client that
    sends back what it read, e.g. the ``nodePort`` values of a NodePort
    Service it turns into a ClusterIP one, is not refused); the load
    balancer status goes with the LoadBalancer type."""
    # Decoding defaults an unset type (SetDefaults_Service) before the strategy runs.
    old_type, new_type = old_spec.get("type") or "ClusterIP", spec.get("type") or "ClusterIP"
    if old_type != "ExternalName" and new_type == "ExternalName":  # needsClusterIP
        if spec.get("clusterIP") == old_spec.get("clusterIP") and spec.get(
            "clusterIPs"
        ) == old_spec.get("clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if spec.get("ipFamilies") == old_spec.get("ipFamilies"):
            spec.pop("ipFamilies", None)
        if spec.get("ipFamilyPolicy") == old_spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    node_port_types = ("NodePort", "LoadBalancer")  # needsNodePort
    if (
        old_type in node_port_types
        and new_type not in node_port_types
        and _node_ports(spec) <= _node_ports(old_spec)  # sameNodePorts: none net-new
    ):
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.pop("nodePort", None)
    # needsHCNodePort: a LoadBalancer with externalTrafficPolicy Local.
    if (
        old_type == "LoadBalancer"
        and old_spec.get("externalTrafficPolicy") == "Local"
        and not (new_type == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local")
        and spec.get("healthCheckNodePort") == old_spec.get("healthCheckNodePort")
    ):
        spec.pop("healthCheckNodePort", None)
    if old_type == "LoadBalancer" and new_type != "LoadBalancer":
        new_alloc, old_alloc = (
            spec.get("allocateLoadBalancerNodePorts"),
            old_spec.get("allocateLoadBalancerNodePorts"),
        )
        if new_alloc is not None and old_alloc is not None and new_alloc == old_alloc:
            spec.pop("allocateLoadBalancerNodePorts", None)
        if spec.get("loadBalancerClass") == old_spec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if (
        _externally_accessible(old_spec)
        and not _externally_accessible(spec)
        and spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy")
    ):
        spec.pop("externalTrafficPolicy", None)
    if new_type != "LoadBalancer" and isinstance(obj.get("status"), dict):
        obj["status"]["loadBalancer"] = {}


TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_generation(obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """A DaemonSet's internal ``spec.templateGeneration``, which apps/v1
    carries in the ``deprecated.daemonset.template.generation`` annotation
    (``Convert_apps_DaemonSet_To_v1_DaemonSet``): on create the one the
    annotation gives, at least 1 (``PrepareForCreate``); on update the stored
    one, plus 1 when the pod template changed (``PrepareForUpdate``)."""
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}

    def parsed(value: Any) -> int:
        try:
            return int(str(value))
        except ValueError:
            return 0

    if old is None:
        generation = max(1, parsed(annotations.get(TEMPLATE_GENERATION)))
    else:
        stored = parsed(((old.get("metadata") or {}).get("annotations") or {}).get(
            TEMPLATE_GENERATION
        ))  # fmt: skip
        changed = (obj.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template")
        generation = stored + 1 if changed else stored
    annotations[TEMPLATE_GENERATION] = str(generation)


def default_copy(
    defaulter: Defaulter, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> dict[str, Any]:
    """A defaulted deep copy of ``obj`` (``obj`` is left untouched)."""
    out = copy.deepcopy(obj)
    defaulter.default(rt, out, old)
    return out


# --- validation ------------------------------------------------------------------


def _cause(field: str, message: str, reason: str = "FieldValueInvalid") -> dict[str, Any]:
    return {"reason": reason, "message": message, "field": field}


def validate(
    rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The per-kind rules kube enforces that controllers commonly trip over:
    a Deployment's selector is required, must match its template's labels and
    is immutable; ConfigMap and Secret size; a Service's allocated cluster IP
    may not change once set; pod specs, ports, selectors of the other
    workloads and Job immutability (``validation.py``)."""
    if rt.is_crd:
        return []
    key = (rt.group, rt.kind)
    causes: list[dict[str, Any]] = []
    if key == ("apps", "Deployment"):
        spec = obj.get("spec") or {}
        selector = spec.get("selector")
        if not isinstance(selector, dict) or not (
            selector.get("matchLabels") or selector.get("matchExpressions")
        ):
            causes.append(_cause("spec.selector", "Required value", "FieldValueRequired"))
        else:
            labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
            match = selector.get("matchLabels") or {}
            if any(labels.get(k) != v for k, v in match.items()):
                causes.append(
                    _cause(
                        "spec.template.metadata.labels",
                        f"Invalid value: {_go_map(labels)}: `selector` does not match "
                        "template `labels`",
                    )
                )
            if old is not None:
                old_sel = (old.get("spec") or {}).get("selector")
                if old_sel is not None and old_sel != selector:
                    causes.append(_cause("spec.selector", "Invalid value: field is immutable"))
        strategy = spec.get("strategy")
        if (
            isinstance(strategy, dict)
            and strategy.get("type") == "Recreate"
            and strategy.get("rollingUpdate") is not None
        ):
            # ValidateDeploymentStrategy: what a merge patch from RollingUpdate
            # to Recreate that does not null rollingUpdate runs into.
            causes.append(
                _cause(
                    "spec.strategy.rollingUpdate",
                    "Forbidden: may not be specified when strategy `type` is 'Recreate'",
                    "FieldValueForbidden",
                )
            )
    elif key == ("", "ConfigMap"):
        size = _bytes_size(obj.get("data"), binary=False) + _bytes_size(
            obj.get("binaryData"), binary=True
        )
        if size > MAX_SECRET_SIZE:
            # field.TooLong(field.NewPath(""), cfg, core.MaxSecretSize): the
            # empty path prints as "[]".
            causes.append(_too_long("[]", MAX_SECRET_SIZE))
    elif key == ("", "Secret"):
        if _bytes_size(obj.get("data"), binary=True) > MAX_SECRET_SIZE:
            causes.append(_too_long("data", MAX_SECRET_SIZE))
    if key == ("", "Service") and old is not None:
        new_ip = (obj.get("spec") or {}).get("clusterIP")
        old_ip = (old.get("spec") or {}).get("clusterIP")
        if old_ip and new_ip and new_ip != old_ip:
            causes.append(
                _cause("spec.clusterIPs[0]", f'Invalid value: "{new_ip}": may not change once set')
            )
    causes.extend(validation_mod.causes(rt, obj, old))
    return causes


def _too_long(field: str, limit: int) -> dict[str, Any]:
    """``field.TooLong`` (1.32 wording)."""
    return _cause(field, f"Too long: may not be more than {limit} bytes", "FieldValueTooLong")


def _bytes_size(values: Any, *, binary: bool) -> int:
    """The bytes a ``map[string]string`` (UTF-8) or ``map[string][]byte``
    (base64 on the wire, counted decoded) holds."""
    if not isinstance(values, dict):
        return 0
    total = 0
    for v in values.values():
        if not isinstance(v, str):
            continue
        if binary:
            try:
                total += len(base64.b64decode(v))
            except (binascii.Error, ValueError):
                total += len(v) * 3 // 4
        else:
            total += len(v.encode("utf-8"))
    return total


def _go_map(m: dict[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(m.items()))
    return "map[string]string{" + inner + "}"
