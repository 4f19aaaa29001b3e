"""Label and field selectors for list and watch requests.

Label selectors use the full Kubernetes syntax via
``pycontroller.labels.parse_selector``. Field selectors support ``=``, ``==`` and ``!=``
on ``metadata.name`` and ``metadata.namespace`` for every kind, plus a few
per-kind fields kube-apiserver also indexes (pods' ``spec.nodeName``,
``status.phase``...). Anything else answers 400 BadRequest as kube does
(``field label not supported: X``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pycontroller.labels import parse_selector
from pycontroller.testing.apiserver.status import StatusError, bad_request

__all__ = ["FieldSelector", "LabelMatcher", "Selector", "parse_field_selector", "parse_label"]


class LabelMatcher(Protocol):
    def matches(self, labels: Mapping[str, str]) -> bool: ...


def _get(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "Pod": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "Secret": ("type",),
    "Event": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "Namespace": ("status.phase",),
}


@dataclass(frozen=True)
class _FieldReq:
    field: str
    op: str  # "=" or "!="
    value: str


class FieldSelector:
    """A parsed field selector; ``matches(obj)`` on a full object dict."""

    def __init__(self, reqs: list[_FieldReq]) -> None:
        self._reqs = reqs

    @property
    def empty(self) -> bool:
        return not self._reqs

    def matches(self, obj: dict[str, Any]) -> bool:
        for r in self._reqs:
            val = _get(obj, r.field)
            if (val == r.value) != (r.op == "="):
                return False
        return True

    def name_equals(self) -> str | None:
        """The name required by ``metadata.name=X``, if any (a fast path)."""
        for r in self._reqs:
            if r.field == "metadata.name" and r.op == "=":
                return r.value
        return None


def _split_unescaped(s: str, sep: str) -> list[str]:
    out: list[str] = []
    cur = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            cur.append(s[i : i + 2])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


def parse_field_selector(text: str | None, kind: str) -> FieldSelector:
    """Parse ``text``; raise 400 for unsupported fields or bad syntax."""
    if not text:
        return FieldSelector([])
    allowed = set(_COMMON_FIELDS) | set(_KIND_FIELDS.get(kind, ()))
    reqs: list[_FieldReq] = []
    for term in _split_unescaped(text, ","):
        term = term.strip()
        if not term:
            continue
        m = re.match(r"^([^=!]+?)\s*(==|!=|=)\s*(.*)$", term)
        if not m:
            raise bad_request(f"invalid field selector: '{term}': no operator")
        field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3).strip())
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        reqs.append(_FieldReq(field, "!=" if op == "!=" else "=", value))
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
