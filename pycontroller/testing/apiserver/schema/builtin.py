"""Built-in resource types and their per-kind defaulting.

The kinds served out of the box, with the scope, short names, status
subresource and name rule kube-apiserver gives them, and the defaults kube's
defaulting functions and registry strategies apply on create/update: every
type's ``SetDefaults_*`` wherever it occurs (``defaults.py``: pod specs,
containers, probes, volumes, Deployment and other specs), and here what needs
the kind or the server (Service clusterIP and node ports, Pod ``Pending``
phase, Namespace ``Active`` phase and ``kubernetes`` finalizer, Secret type
and ``stringData``), and the shape Go's encoding/json
gives structs kube never omits: the zero ``status`` (``go_zero_status``) and
the ``creationTimestamp: null`` of every ``ObjectMeta`` embedded below the
root, pod and claim templates (``go_embedded_meta``), both found in the
generated protobuf messages. Controllers tested against this
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
import functools
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import defaults as defaults_mod
from pycontroller.testing.apiserver.schema import kinds as _kinds
from pycontroller.testing.apiserver.schema import validation as validation_mod

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.http.protobuf import Step

__all__ = [
    "BUILTIN_TYPES",
    "MAX_SECRET_SIZE",
    "Defaulter",
    "builtin_types",
    "go_embedded_meta",
    "go_zero_status",
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


@functools.cache
def _zero_status(api_version: str, kind: str) -> dict[str, Any] | None:
    """The ``status`` Go's encoding/json writes for a zero status struct of
    ``kind`` (None when ``status`` is a pointer or absent): non-omitempty
    fields at their zero (``ReplicaSetStatus.replicas: 0``), non-pointer
    structs as ``{}``. Read from the generated messages and Go type facts the
    protobuf codec uses (imported lazily: the codec lives with HTTP)."""
    from pycontroller.testing.apiserver.http import protobuf

    cls = protobuf.message_class(api_version, kind)
    if cls is None:
        return None
    status = protobuf.to_json(cls()).get("status")
    return status if isinstance(status, dict) else None


def go_zero_status(rt: ResourceType, obj: dict[str, Any]) -> None:
    """kube-apiserver answers every built-in object as Go marshals it: a
    non-pointer ``status`` is always there (``"status": {}`` on a new
    Deployment, ``{"replicas": 0}`` on a ReplicaSet), its non-omitempty
    fields too. Fills what is missing at the top of ``status``."""
    zero = _zero_status(rt.api_version, rt.kind)
    if zero is None:
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        obj["status"] = copy.deepcopy(zero)
        return
    for k, v in zero.items():
        if k not in status:
            status[k] = copy.deepcopy(v)


# The Go type kube embeds in pod templates, job templates and claim templates.
_OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# A JSON path to a struct field, as ``protobuf.message_paths`` gives it.
_Path: TypeAlias = "tuple[Step, ...]"


@functools.cache
def _embedded_meta_paths(api_version: str, kind: str) -> tuple[_Path, ...]:
    """Where ``kind`` embeds an ``ObjectMeta`` below its root (``spec.template.metadata``,
    ``spec.volumeClaimTemplates[].metadata``, an ephemeral volume's
    ``volumeClaimTemplate.metadata`` ...), read from the generated messages
    (imported lazily, as in ``_zero_status``)."""
    from pycontroller.testing.apiserver.http import protobuf

    paths = protobuf.message_paths(api_version, kind, _OBJECT_META)
    return tuple(p for p in paths if len(p) > 1)


def go_embedded_meta(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Give every ``ObjectMeta`` a built-in object embeds the shape Go marshals.

    ``ObjectMeta.CreationTimestamp`` is a ``metav1.Time`` struct, which
    encoding/json never omits (a zero one is ``null``), and a template's
    ``ObjectMeta`` is a struct field too: kube-apiserver answers
    ``spec.template.metadata.creationTimestamp: null`` for every Deployment,
    ``metadata: {creationTimestamp: null}`` for a template sent without
    metadata. Fills in what is missing where the parent is present (a
    non-pointer metadata field is created, one behind a pointer only
    completed); values already there are kept."""
    if rt.is_crd:
        return
    for path in _embedded_meta_paths(rt.api_version, rt.kind):
        _fill_meta(obj, path, 0)


def _fill_meta(value: Any, path: _Path, i: int) -> None:
    if not isinstance(value, dict):
        return
    step = path[i]
    if i < len(path) - 1:
        child = value if step.name is None else value.get(step.name)
        for item in _each(child, step.shape):
            _fill_meta(item, path, i + 1)
        return
    if step.name is None:
        return  # never inlined: an ObjectMeta is always a "metadata" field
    if step.shape == "one" and value.get(step.name) is None and not step.pointer:
        value[step.name] = {}  # a struct field: Go writes it, "null" or not
    for meta in _each(value.get(step.name), step.shape):
        if isinstance(meta, dict):
            meta.setdefault("creationTimestamp", None)


def _each(value: Any, shape: str) -> Iterable[Any]:
    """The values a path step reaches: the field's, or each item's of a list or map."""
    if shape == "list":
        return value if isinstance(value, list) else ()
    if shape == "map":
        return value.values() if isinstance(value, dict) else ()
    return (value,)


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
        go_zero_status(rt, obj)
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
            if key == ("", "Pod") and old is None:
                st = obj.setdefault("status", {})
                st.setdefault("phase", "Pending")
                st.setdefault("qosClass", "BestEffort")
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
        go_embedded_meta(rt, obj)

    def _default_service(self, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        spec = obj.setdefault("spec", {})
        old_spec = (old or {}).get("spec") or {}
        spec.setdefault("type", "ClusterIP")
        stype = spec["type"]
        if stype != "ExternalName":
            spec.setdefault("sessionAffinity", "None")
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
            p.setdefault("protocol", "TCP")
            if "targetPort" not in p and "port" in p:
                p["targetPort"] = p["port"]
            if stype in ("NodePort", "LoadBalancer") and not p.get("nodePort"):
                prev = old_ports.get((p.get("port"), p["protocol"]))
                p["nodePort"] = (prev or {}).get("nodePort") or self._alloc_node_port()
        if stype in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if stype == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        st = obj.get("status")
        if not isinstance(st, dict):
            obj["status"] = {"loadBalancer": {}}
        else:
            st.setdefault("loadBalancer", {})


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
