"""Label and field selectors for list, watch and deletecollection requests.

Label selectors use the full Kubernetes syntax via
``pycontroller.labels.parse_selector``.

Field selectors follow kube-apiserver 1.32 in three steps:

1. **Syntax** (apimachinery ``fields.ParseSelector``): comma-separated
   ``label=value`` / ``label==value`` / ``label!=value`` terms, sorted, the
   label taken literally (no trimming), the value unescaped (``\\,``, ``\\=``,
   ``\\\\``). Errors are 400 ``invalid selector: '<s>'; can't understand '<t>'``
   or ``invalid field selector: ...``.
2. **Label conversion** per group/version/kind (the handler's
   ``scope.Convertor.ConvertFieldLabel``): the kinds registering an
   ``AddFieldLabelConversionFunc`` accept their own labels (``_CONVERSIONS``,
   from ``pkg/apis/<group>/<version>/conversion.go``) with their own 400
   message; every other built-in kind gets
   ``runtime.DefaultMetaV1FieldSelectorConversion`` (``metadata.name`` and
   ``metadata.namespace``, even on cluster-scoped kinds, else ``"X" is not a
   known field selector: only "metadata.name", "metadata.namespace"``). Custom
   resources get apiextensions' ``crConverter.ConvertFieldLabel``:
   ``metadata.name``, ``metadata.namespace`` when namespaced, and the
   version's ``selectableFields`` (``rt.extra["selectable_fields"]``), else
   ``field label not supported: X``. Some labels are renamed here (pods'
   ``spec.host`` -> ``spec.nodeName``, events.k8s.io's ``regarding.*`` ->
   ``involvedObject.*``).
3. **Matching** against the store's field set (the strategy's ``GetAttrs`` /
   ``*ToSelectableFields``, ``_FIELD_SETS``, keyed by the storage
   group/resource so events.k8s.io reads core Events): strings as stored, bools
   ``"true"``/``"false"`` and ints in decimal as Go's ``strconv`` formats
   them, with the Go zero value for an absent field. A label the conversion
   accepts but the field set lacks (``metadata.namespace`` on cluster-scoped
   kinds, pods' ``status.podIPs``) reads ``""``, as ``fields.Set.Get`` does.
   Custom resources read their ``selectableFields`` as
   ``customResourceStrategy.selectableFields`` does (``fmt.Sprint`` of the
   JSONPath value, ``""`` when absent).

Known gaps: syntax and conversion errors are raised together, before the
list options' 422 (kube converts after validating and negotiating); custom
resources are matched in their stored form (identical to the served form
under the ``None`` conversion strategy).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pycontroller.labels import parse_selector
from pycontroller.testing.apiserver.status import StatusError, bad_request

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.resource_types import ResourceType

__all__ = ["FieldSelector", "LabelMatcher", "Selector", "parse_field_selector", "parse_label"]


class LabelMatcher(Protocol):
    def matches(self, labels: Mapping[str, str]) -> bool: ...


Getter = Callable[[dict[str, Any]], str]


def _go_quote(s: str) -> str:
    """Go's ``%q`` of a string (close enough: JSON string syntax)."""
    return json.dumps(s, ensure_ascii=False)


def _lookup(obj: Any, path: str) -> Any:
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _sprint(v: Any) -> str:
    """Go ``fmt.Sprint`` of a decoded JSON scalar (``""`` for nil)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):  # %v: shortest form, exponent from 1e21
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _s(path: str) -> Getter:
    """A string field (Go zero value ``""``)."""
    return lambda o: _sprint(_lookup(o, path))


def _b(path: str) -> Getter:
    """A bool field, ``strconv.FormatBool`` (absent is false)."""
    return lambda o: "true" if _lookup(o, path) is True else "false"


def _i(path: str) -> Getter:
    """An int field, ``strconv.Itoa`` (absent is 0)."""
    return lambda o: _sprint(_lookup(o, path) or 0)


def _pod_ip(o: dict[str, Any]) -> str:
    """``status.podIP``: the internal ``PodIPs[0].IP`` (v1 ``podIPs``, else ``podIP``)."""
    status = o.get("status") or {}
    ips = status.get("podIPs") or []
    if ips and isinstance(ips[0], dict):
        return str(ips[0].get("ip") or "")
    return str(status.get("podIP") or "")


def _event_source(o: dict[str, Any]) -> str:
    """``source``: ``Source.Component``, else ``ReportingController``."""
    return _sprint(_lookup(o, "source.component")) or _sprint(o.get("reportingComponent"))


_REF = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_EVENT_FIELDS = (*(f"involvedObject.{f}" for f in _REF), "reason", "reportingComponent",
                 "source", "type")  # fmt: skip
_POD_FIELDS = ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
               "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
               "status.nominatedNodeName")  # fmt: skip

# The strategies' GetAttrs field sets beyond ObjectMeta's, by storage
# (group, resource), read from the stored (v1) object.
_FIELD_SETS: dict[tuple[str, str], dict[str, Getter]] = {
    ("", "pods"): {  # pod.ToSelectableFields
        **{f: _s(f) for f in _POD_FIELDS},
        "spec.hostNetwork": _b("spec.hostNetwork"),
        "status.podIP": _pod_ip,
    },
    ("", "nodes"): {"spec.unschedulable": _b("spec.unschedulable")},  # NodeToSelectableFields
    ("", "replicationcontrollers"): {"status.replicas": _i("status.replicas")},
    ("", "events"): {**{f: _s(f) for f in _EVENT_FIELDS}, "source": _event_source},
    ("", "namespaces"): {"status.phase": _s("status.phase")},
    ("", "secrets"): {"type": _s("type")},
    ("", "services"): {"spec.clusterIP": _s("spec.clusterIP"), "spec.type": _s("spec.type")},
    # ReplicaSetToSelectableFields; unreachable, apps/v1 converts no labels.
    ("apps", "replicasets"): {"status.replicas": _i("status.replicas")},
    ("batch", "jobs"): {"status.successful": _i("status.succeeded")},
    ("certificates.k8s.io", "certificatesigningrequests"): {
        "spec.signerName": _s("spec.signerName")
    },
}


@dataclass(frozen=True)
class _Conversion:
    """One ``AddFieldLabelConversionFunc``: accepted label -> field-set label,
    and the error message (``{label}``, or ``{qlabel}`` for Go's ``%q``)."""

    labels: Mapping[str, str]
    message: str = "field label not supported: {label}"


def _same(*labels: str) -> dict[str, str]:
    return {label: label for label in labels}


_META = ("metadata.name", "metadata.namespace")
_CORE_EVENT = _same(*_EVENT_FIELDS, *_META)
_DEFAULT = _Conversion(
    _same(*_META),
    '{qlabel} is not a known field selector: only "metadata.name", "metadata.namespace"',
)
# kube 1.32's field label conversion funcs for the kinds served here, by
# (group, version, kind). apps/v1 registers none: ReplicaSet's
# ``status.replicas`` is in its field set but refused (kubernetes#135136).
_CONVERSIONS: dict[tuple[str, str, str], _Conversion] = {
    # pkg/apis/core/v1/conversion.go
    ("", "v1", "Pod"): _Conversion(
        {
            **_same(*_META, *_POD_FIELDS, "status.podIPs"),  # podIPs: accepted, never set
            "spec.host": "spec.nodeName",  # old v1 clients
        }
    ),
    ("", "v1", "Node"): _Conversion(_same("metadata.name", "spec.unschedulable")),
    ("", "v1", "ReplicationController"): _Conversion(_same(*_META, "status.replicas")),
    ("", "v1", "Event"): _Conversion(_CORE_EVENT),  # AddFieldLabelConversionsForEvent
    ("", "v1", "Namespace"): _Conversion(_same("status.phase", "metadata.name")),
    ("", "v1", "Secret"): _Conversion(_same("type", *_META)),
    ("", "v1", "Service"): _Conversion(_same(*_META, "spec.clusterIP", "spec.type")),
    # pkg/apis/batch/v1/conversion.go
    ("batch", "v1", "Job"): _Conversion(
        _same(*_META, "status.successful"), "field label {qlabel} not supported for batchv1.Job"
    ),
    # pkg/apis/certificates/v1/conversion.go
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"): _Conversion(
        _same("metadata.name", "spec.signerName")
    ),
    # pkg/apis/events/v1/conversion.go AddFieldLabelConversionsForEvent
    ("events.k8s.io", "v1", "Event"): _Conversion(
        {
            **{f"regarding.{f}": f"involvedObject.{f}" for f in _REF},
            "reportingController": "reportingComponent",
            **_same("reason", "source", "type", *_META),
        }
    ),
}


def _custom_resource(rt: ResourceType) -> tuple[_Conversion, dict[str, Getter]]:
    """apiextensions' ``crConverter.ConvertFieldLabel`` and
    ``customResourceStrategy.selectableFields`` for one served version."""
    paths = [str(p).removeprefix(".") for p in rt.extra.get("selectable_fields") or ()]
    labels = _same("metadata.name", *(("metadata.namespace",) if rt.namespaced else ()), *paths)
    return _Conversion(labels), {p: _s(p) for p in paths}


def _for(rt: ResourceType | str) -> tuple[_Conversion, dict[str, Getter], bool]:
    """The conversion, extra field set and scope for ``rt`` (a kind name alone
    means a namespaced core/v1 kind)."""
    if isinstance(rt, str):
        return (
            _CONVERSIONS.get(("", "v1", rt), _DEFAULT),
            _FIELD_SETS.get(("", rt.lower() + "s"), {}),
            True,
        )
    if rt.is_crd:
        conv, fields = _custom_resource(rt)
        return conv, fields, rt.namespaced
    conv = _CONVERSIONS.get((rt.group, rt.version, rt.kind), _DEFAULT)
    return conv, _FIELD_SETS.get(rt.storage_group_resource, {}), rt.namespaced


@dataclass(frozen=True)
class _FieldReq:
    field: str
    op: str  # "=" or "!="
    value: str
    get: Getter


def _absent(_: dict[str, Any]) -> str:
    return ""


class FieldSelector:
    """A parsed, converted field selector; ``matches(obj)`` on a stored object."""

    def __init__(self, reqs: list[_FieldReq]) -> None:
        self._reqs = reqs

    @property
    def empty(self) -> bool:
        return not self._reqs

    def matches(self, obj: dict[str, Any]) -> bool:
        return all((r.get(obj) == r.value) == (r.op == "=") for r in self._reqs)

    def name_equals(self) -> str | None:
        """The name required by ``metadata.name=X``, if any (a fast path)."""
        for r in self._reqs:
            if r.field == "metadata.name" and r.op == "=":
                return r.value
        return None


def _split_terms(s: str) -> list[str]:
    """``fields.splitTerms``: split on unescaped commas, escapes kept."""
    out: list[str] = []
    start, in_slash = 0, False
    for i, ch in enumerate(s):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            out.append(s[start:i])
            start = i + 1
    out.append(s[start:])
    return out


def _split_term(term: str) -> tuple[str, str, str] | None:
    """``fields.splitTerm``: the first ``!=``, ``==`` or ``=`` splits."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(s: str) -> str:
    """``fields.UnescapeValue``."""
    out: list[str] = []
    in_slash = False
    for ch in s:
        if in_slash:
            if ch not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str | None, rt: ResourceType | str) -> FieldSelector:
    """Parse ``text`` for ``rt`` (or a core/v1 kind name) and convert its labels
    as kube does; raise 400 on a syntax error or an unsupported label."""
    if not text:
        return FieldSelector([])
    parsed: list[tuple[str, str, str]] = []
    for part in sorted(_split_terms(text)):  # fields.parseSelector sorts the terms
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        label, op, value = split
        parsed.append((label, "!=" if op == "!=" else "=", _unescape(value)))
    conv, fields, namespaced = _for(rt)
    getters: dict[str, Getter] = {"metadata.name": _s("metadata.name"), **fields}
    if namespaced:
        getters["metadata.namespace"] = _s("metadata.namespace")
    reqs: list[_FieldReq] = []
    for label, op, value in parsed:
        field = conv.labels.get(label)
        if field is None:
            raise bad_request(conv.message.format(label=label, qlabel=_go_quote(label)))
        reqs.append(_FieldReq(field, op, value, getters.get(field, _absent)))
    return FieldSelector(reqs)


# --- label selectors -------------------------------------------------------------


def parse_label(text: str | None) -> LabelMatcher | None:
    """Parse a label selector (None when empty); raise 400 on a syntax error."""
    if not text or not text.strip():
        return None
    try:
        return parse_selector(text)
    except StatusError:
        raise
    except Exception as err:  # any parse failure is the client's fault
        raise bad_request(f"unable to parse requirement: {err}") from err


class Selector:
    """Label + field selector together, for one list or watch request."""

    def __init__(self, labels: LabelMatcher | None, fields: FieldSelector) -> None:
        self.labels = labels
        self.fields = fields

    @property
    def empty(self) -> bool:
        return self.labels is None and self.fields.empty

    def matches(self, obj: dict[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.labels is not None:
            lbls = (obj.get("metadata") or {}).get("labels") or {}
            if not self.labels.matches(lbls):
                return False
        return self.fields.matches(obj)
