"""Server-side printing: ``meta.k8s.io/v1`` ``Table`` for ``Accept: ...;as=Table``.

``to_table(rt, obj, include_object=...)`` converts one object or a list
(anything with ``items``) into a Table, the way kube-apiserver does for
``kubectl get``:

- Custom resources (apiextensions ``tableconvertor``): a ``Name`` column,
  then the version's ``additionalPrinterColumns`` (or a single ``Age`` column
  of type ``date`` when there are none). Each cell is the first result of the
  column's JSONPath, converted by column type: ``integer``/``number``/
  ``boolean`` as JSON values, ``string`` as text (maps and lists as compact
  JSON), ``date`` rendered as an age (``5m``) as kube does (kubectl prints
  cells verbatim), ``None`` when the path finds nothing.
- Built-in kinds: ``Name`` and ``Age`` (a pre-rendered duration like ``5m``,
  as kube's printers send) plus the most used kind-specific columns
  (Deployment READY/UP-TO-DATE/AVAILABLE, Service TYPE/CLUSTER-IP/...,
  Pod READY/STATUS/RESTARTS, ...). Wide-only columns have ``priority: 1``.
  Events use kube's event columns (LAST SEEN, TYPE, REASON, OBJECT, MESSAGE;
  no leading Name).

Each row's ``object`` is a ``PartialObjectMetadata`` (``include_object=
"Metadata"``, the default), the full object (``"Object"``) or ``None``
(``"None"``). List metadata (``resourceVersion``, ``continue``,
``remainingItemCount``) is carried over.

JSONPath support (``jsonpath_find``) covers what printer columns use:
``.a.b``, escaped dots (``.metadata.annotations.a\\.b/c``), ``['key']``,
``[n]`` (negative too), ``[*]``, slices ``[a:b]`` and filters
``[?(@.type=="Ready")]`` with ``== != < <= > >=`` or bare existence.

Invariant: inputs are never mutated; rows hold deep copies.
"""

from __future__ import annotations

import copy
import datetime
import json
import logging
import re
from collections.abc import Callable
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema.structural import go_value

logger = logging.getLogger(__name__)

__all__ = ["JSONPathError", "human_duration", "jsonpath_find", "to_table"]

_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


class JSONPathError(ValueError):
    """A printer-column JSONPath that cannot be parsed."""


# --------------------------------------------------------------------------
# JSONPath
# --------------------------------------------------------------------------

_MISSING = object()
_FILTER = re.compile(
    r"^\?\(\s*@((?:\.[^.\s=!<>]+)*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)$", re.DOTALL
)


def _split_segments(path: str) -> list[str]:
    """Split ``.a.b[0]['c.d'][?(@.x=="y")]`` into steps (``.a``, ``[0]``, ...)."""
    p = path.strip()
    if p.startswith("{") and p.endswith("}"):
        p = p[1:-1].strip()
    if p.startswith("$"):
        p = p[1:]
    steps: list[str] = []
    i = 0
    while i < len(p):
        c = p[i]
        if c == ".":
            j = i + 1
            name = ""
            while j < len(p) and p[j] not in ".[":
                if p[j] == "\\" and j + 1 < len(p):
                    name += p[j + 1]
                    j += 2
                    continue
                name += p[j]
                j += 1
            if name:
                steps.append("." + name)
            i = j
        elif c == "[":
            depth = 0
            j = i
            quote: str | None = None
            while j < len(p):
                ch = p[j]
                if quote:
                    if ch == quote:
                        quote = None
                elif ch in "'\"":
                    quote = ch
                elif ch == "[":
                    depth += 1
                elif ch == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(p):
                raise JSONPathError(f"unterminated [ in {path!r}")
            steps.append(p[i : j + 1])
            i = j + 1
        else:
            # A leading bare name ("spec.x") is accepted like ".spec.x".
            j = i
            while j < len(p) and p[j] not in ".[":
                j += 1
            steps.append("." + p[i:j])
            i = j
    return steps


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _get_field(value: Any, dotted: str) -> Any:
    cur = value
    for name in [n for n in dotted.split(".") if n]:
        if not isinstance(cur, dict) or name not in cur:
            return _MISSING
        cur = cur[name]
    return cur


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    try:
        if op == "<":
            return bool(left < right)
        if op == "<=":
            return bool(left <= right)
        if op == ">":
            return bool(left > right)
        return bool(left >= right)
    except TypeError:
        return False


def _apply_step(values: list[Any], step: str) -> list[Any]:
    out: list[Any] = []
    if step.startswith("."):
        name = step[1:]
        for v in values:
            if name == "*":
                if isinstance(v, dict):
                    out.extend(v.values())
                elif isinstance(v, list):
                    out.extend(v)
            elif isinstance(v, dict) and name in v:
                out.append(v[name])
        return out
    inner = step[1:-1].strip()
    if inner.startswith("?"):
        m = _FILTER.match(inner)
        if not m:
            raise JSONPathError(f"unsupported filter {step!r}")
        dotted, op, lit = m.group(1), m.group(2), m.group(3)
        right = _literal(lit) if op else None
        for v in values:
            items = v if isinstance(v, list) else list(v.values()) if isinstance(v, dict) else []
            for item in items:
                left = _get_field(item, dotted)
                if left is _MISSING:
                    continue
                if op is None or _compare(left, op, right):
                    out.append(item)
        return out
    if inner == "*":
        for v in values:
            if isinstance(v, list):
                out.extend(v)
            elif isinstance(v, dict):
                out.extend(v.values())
        return out
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        keys = [k.strip().strip("'\"") for k in inner.split(",")]
        for v in values:
            if isinstance(v, dict):
                out.extend(v[k] for k in keys if k in v)
        return out
    if ":" in inner:
        parts = inner.split(":")
        try:
            bounds = [int(x) if x.strip() else None for x in parts]
        except ValueError as err:
            raise JSONPathError(f"bad slice {step!r}") from err
        start, stop = bounds[0], bounds[1] if len(bounds) > 1 else None
        stride = bounds[2] if len(bounds) > 2 and bounds[2] else 1
        for v in values:
            if isinstance(v, list):
                out.extend(v[start:stop:stride])
        return out
    try:
        index = int(inner)
    except ValueError as err:
        raise JSONPathError(f"unsupported subscript {step!r}") from err
    for v in values:
        if isinstance(v, list) and -len(v) <= index < len(v):
            out.append(v[index])
    return out


def jsonpath_find(obj: Any, path: str) -> list[Any]:
    """All values ``path`` selects in ``obj`` (in document order); ``[]`` if none."""
    values: list[Any] = [obj]
    for step in _split_segments(path):
        values = _apply_step(values, step)
        if not values:
            break
    return values


# --------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------


def _parse_time(value: str) -> datetime.datetime | None:
    try:
        t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.UTC)
    return t


def human_duration(seconds_total: float) -> str:
    """apimachinery ``duration.HumanDuration`` (what kubectl shows as AGE)."""
    seconds = int(seconds_total)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


def _text(value: Any) -> str:
    """How k8s jsonpath prints a result: scalars as Go ``fmt.Print``, maps and
    lists as compact JSON with sorted keys."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if value is None:
        return "<nil>"
    return go_value(value)


def _cell(col_type: str, value: Any, now: datetime.datetime) -> Any:
    """apiextensions ``cellForJSONValue`` plus string printing; a ``date`` is
    rendered server-side as the age (``ConvertToHumanReadableDateType``)."""
    if value is None:
        return None
    if col_type == "string":
        return _text(value)
    if col_type == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value)
        return None
    if col_type == "number":
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return value
        return None
    if col_type == "boolean":
        return value if isinstance(value, bool) else None
    if col_type == "date":
        if isinstance(value, str):
            t = _parse_time(value)
            if t is None:
                return "<invalid>"
            return human_duration((now - t).total_seconds())
        return None
    return None


def _column(
    name: str, col_type: str, description: str = "", *, fmt: str = "", priority: int = 0
) -> dict[str, Any]:
    return {
        "name": name,
        "type": col_type,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


def _name_column() -> dict[str, Any]:
    return _column("Name", "string", _NAME_DESCRIPTION, fmt="name")


# --------------------------------------------------------------------------
# Built-in kinds
# --------------------------------------------------------------------------

_Now = datetime.datetime
_Builtin = tuple[list[dict[str, Any]], Callable[[dict[str, Any], _Now], list[Any]]]


def _age(obj: dict[str, Any], now: _Now) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    t = _parse_time(ts) if isinstance(ts, str) else None
    if t is None:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


def _created_at(obj: dict[str, Any], now: _Now) -> Any:
    """The default table convertor's "Created At": the RFC 3339 timestamp."""
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    t = _parse_time(ts) if isinstance(ts, str) else None
    return format_rfc3339(t.timestamp()) if t else None


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, dict) else {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, dict) else {}


def _selector_text(sel: Any) -> str:
    if not isinstance(sel, dict) or not sel:
        return "<none>"
    if "matchLabels" in sel or "matchExpressions" in sel:
        parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
        for expr in sel.get("matchExpressions") or []:
            op = str(expr.get("operator", "")).lower()
            vals = ",".join(expr.get("values") or [])
            key = expr.get("key", "")
            if op == "exists":
                parts.append(str(key))
            elif op == "doesnotexist":
                parts.append(f"!{key}")
            else:
                parts.append(f"{key} {op} ({vals})")
        return ",".join(parts) or "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(sel.items()))


def _deployment_cells(obj: dict[str, Any], now: _Now) -> list[Any]:
    spec, status = _spec(obj), _status(obj)
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(obj, now),
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        _selector_text(spec.get("selector")),
    ]


def _service_ports(spec: dict[str, Any]) -> str:
    out = []
    for p in spec.get("ports") or []:
        text = f"{p.get('port')}"
        if p.get("nodePort"):
            text += f":{p['nodePort']}"
        out.append(f"{text}/{p.get('protocol', 'TCP')}")
    return ",".join(out) or "<none>"


def _service_cells(obj: dict[str, Any], now: _Now) -> list[Any]:
    spec = _spec(obj)
    svc_type = spec.get("type", "ClusterIP")
    # getServiceExternalIP (the server prints wide: no clipping).
    external = [str(x) for x in spec.get("externalIPs") or []]
    ingress = ((_status(obj).get("loadBalancer") or {}).get("ingress")) or []
    lb_ips = sorted({str(i.get("ip") or i.get("hostname")) for i in ingress
                     if isinstance(i, dict) and (i.get("ip") or i.get("hostname"))})  # fmt: skip
    if svc_type == "ExternalName":
        ext = spec.get("externalName", "")
    elif svc_type == "LoadBalancer":
        ext = ",".join([*lb_ips, *external]) or "<pending>"
    elif svc_type in ("ClusterIP", "NodePort"):
        ext = ",".join(external) or "<none>"
    else:
        ext = "<unknown>"
    return [
        svc_type,
        spec.get("clusterIP") or "<none>",
        ext,
        _service_ports(spec),
        _age(obj, now),
        _selector_text(spec.get("selector")),
    ]


def _restartable(container: Any) -> bool:
    return isinstance(container, dict) and container.get("restartPolicy") == "Always"


def _finished_at(state: Any) -> datetime.datetime | None:
    term = (state or {}).get("terminated") if isinstance(state, dict) else None
    ts = term.get("finishedAt") if isinstance(term, dict) else None
    return _parse_time(ts) if isinstance(ts, str) and ts else None


def _later(a: _Now | None, b: _Now | None) -> _Now | None:
    return b if a is None or (b is not None and b > a) else a


def _terminated_reason(term: dict[str, Any], prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _pod_cells(obj: dict[str, Any], now: _Now) -> list[Any]:
    """kube 1.32 ``printPod``: READY, STATUS (the pod's reason or phase, then
    what its init and app containers say), RESTARTS (``N (Xm ago)``), AGE,
    and the wide IP, NODE, NOMINATED NODE and READINESS GATES."""
    spec, status = _spec(obj), _status(obj)
    phase = status.get("phase") or ""
    reason = str(status.get("reason") or phase)
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    if any(
        c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions
    ):
        reason = "SchedulingGated"
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or [] if isinstance(c, dict)}
    total = len(spec.get("containers") or []) + sum(
        1 for c in init_specs.values() if _restartable(c)
    )
    ready = restarts = sidecar_restarts = 0
    last: datetime.datetime | None = None
    sidecar_last: datetime.datetime | None = None
    init_statuses = status.get("initContainerStatuses") or []
    initializing = False
    for i, c in enumerate(init_statuses):
        state = c.get("state") or {}
        restarts += int(c.get("restartCount") or 0)
        last = _later(last, _finished_at(c.get("lastState")))
        sidecar = _restartable(init_specs.get(c.get("name")))
        if sidecar:
            sidecar_restarts += int(c.get("restartCount") or 0)
            sidecar_last = _later(sidecar_last, _finished_at(c.get("lastState")))
        term, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(term, dict) and not term.get("exitCode"):
            continue
        if sidecar and c.get("started"):
            ready += 1 if c.get("ready") else 0
            continue
        initializing = True
        if isinstance(term, dict):
            reason = _terminated_reason(term, "Init:")
        elif isinstance(waiting, dict) and waiting.get("reason") not in (
            None,
            "",
            "PodInitializing",
        ):
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions
    )
    if not initializing or initialized:
        restarts, last = sidecar_restarts, sidecar_last
        running = False
        for c in reversed(status.get("containerStatuses") or []):
            state = c.get("state") or {}
            restarts += int(c.get("restartCount") or 0)
            last = _later(last, _finished_at(c.get("lastState")))
            waiting, term = state.get("waiting"), state.get("terminated")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(term, dict):
                reason = _terminated_reason(term)
            elif c.get("ready") and isinstance(state.get("running"), dict):
                running = True
                ready += 1
        if reason == "Completed" and running:
            pod_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
            )
            reason = "Running" if pod_ready else "NotReady"
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    shown = str(restarts)
    if restarts and last is not None:
        shown = f"{restarts} ({human_duration((now - last).total_seconds())} ago)"
    ips = status.get("podIPs") or []
    pod_ip = (ips[0].get("ip") if ips and isinstance(ips[0], dict) else "") or ""
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        by_type: dict[Any, Any] = {}
        for c in conditions:
            by_type.setdefault(c.get("type"), c.get("status"))
        true = sum(by_type.get((g or {}).get("conditionType")) == "True" for g in gates)
        readiness = f"{true}/{len(gates)}"
    return [
        f"{ready}/{total}",
        reason,
        shown,
        _age(obj, now),
        pod_ip or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        readiness,
    ]


def _pod_row_conditions(obj: dict[str, Any]) -> list[dict[str, Any]] | None:
    """``podSuccessConditions`` / ``podFailedConditions`` of a finished pod's row."""
    phase = _status(obj).get("phase")
    if phase == "Succeeded":
        return [
            {
                "type": "Completed",
                "status": "True",
                "reason": "",
                "message": "The pod has completed successfully.",
            }
        ]
    if phase == "Failed":
        return [
            {"type": "Completed", "status": "True", "reason": "", "message": "The pod has failed."}
        ]
    return None


#: Kinds whose printer sets a row's ``conditions`` (kube's TableRow.Conditions).
_ROW_CONDITIONS: dict[tuple[str, str], Callable[[dict[str, Any]], list[dict[str, Any]] | None]] = {
    ("", "Pod"): _pod_row_conditions,
}


def _data_count(obj: dict[str, Any]) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})


def _binding_role(obj: dict[str, Any]) -> str:
    ref = obj.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _param_kind(obj: dict[str, Any]) -> str:
    """printValidatingAdmissionPolicy's ParamKind: ``apiVersion/kind``."""
    kind = _spec(obj).get("paramKind")
    if not isinstance(kind, dict):
        return "<unset>"
    return f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"


def _param_ref(obj: dict[str, Any]) -> str:
    """printValidatingAdmissionPolicyBinding's ParamRef: ``namespace/name``,
    ``*/name`` without a namespace, else the selector."""
    ref = _spec(obj).get("paramRef")
    if not isinstance(ref, dict):
        return "<unset>"
    if ref.get("name"):
        return f"{ref.get('namespace') or '*'}/{ref['name']}"
    if ref.get("selector") is not None:
        return _go_label_selector_string(ref["selector"])
    return "<unset>"


def _go_label_selector_string(sel: Any) -> str:
    """The generated ``(*metav1.LabelSelector).String()``."""
    sel = sel if isinstance(sel, dict) else {}
    labels = sel.get("matchLabels") or {}
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in sel.get("matchExpressions") or []
    )
    pairs = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )


def _binding_subjects(obj: dict[str, Any]) -> list[str]:
    """``rbac.SubjectsStrings``: the users, groups and service accounts, each
    joined with ", "."""
    users: list[str] = []
    groups: list[str] = []
    sas: list[str] = []
    for subject in obj.get("subjects") or []:
        kind, name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "ServiceAccount":
            sas.append(f"{subject.get('namespace', '')}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [", ".join(users), ", ".join(groups), ", ".join(sas)]


def _since(ts: Any, now: _Now) -> str:
    t = _parse_time(ts) if isinstance(ts, str) and ts else None
    if t is None:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


def _event_columns() -> list[dict[str, Any]]:
    return [
        _column("Last Seen", "string", "Time the latest event occurred."),
        _column("Type", "string", "Type of this event."),
        _column("Reason", "string", "Reason why this event was generated."),
        _column("Object", "string", "The object this Event is about."),
        _column("Subobject", "string", "The subobject this Event is about.", priority=1),
        _column("Source", "string", "The component reporting this event.", priority=1),
        _column("Message", "string", "A human-readable description of the status of this "
                "operation."),
        _column("First Seen", "string", "Time the first event occurred.", priority=1),
        _column("Count", "integer", "The number of times this event has occurred.",
                priority=1),
        _column("Name", "string", _NAME_DESCRIPTION, fmt="name", priority=1),
    ]  # fmt: skip


def _event_cells(obj: dict[str, Any], now: _Now) -> list[Any]:
    """kube's ``printEvent`` (wide) for core/v1 and events.k8s.io/v1 Events."""
    new_api = "regarding" in obj or "note" in obj or "deprecatedCount" in obj
    target_ref = obj.get("regarding" if new_api else "involvedObject") or {}
    first_ts = obj.get("deprecatedFirstTimestamp" if new_api else "firstTimestamp")
    last_ts = obj.get("deprecatedLastTimestamp" if new_api else "lastTimestamp")
    first = _since(first_ts, now) if first_ts else _since(obj.get("eventTime"), now)
    last = _since(last_ts, now) if last_ts else first
    count = obj.get("deprecatedCount" if new_api else "count") or 0
    series = obj.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"), now)
        count = series.get("count", count)
    elif not count:
        count = 1
    kind = str(target_ref.get("kind", "")).lower()
    target = f"{kind}/{target_ref['name']}" if target_ref.get("name") else kind
    source = obj.get("deprecatedSource" if new_api else "source") or {}
    # (the internal ReportingController is core/v1's reportingComponent)
    reporter = obj.get("reportingController" if new_api else "reportingComponent")
    component = source.get("component") or reporter or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    message = obj.get("note" if new_api else "message") or ""
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        target_ref.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(message).strip(),
        first,
        int(count),
        (obj.get("metadata") or {}).get("name", ""),
    ]


# --- columns declared in kinds.py ------------------------------------------------

_TEMPLATE_FIELD = re.compile(r"\{(\.[^|}]*)\|([^}]*)\}")


def _join(values: list[str]) -> str:
    return ",".join(values) if values else "<none>"


def _pod_template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = _spec(obj)
    tmpl = obj.get("template") if "template" in obj else spec.get("template")
    return ((tmpl or {}).get("spec") or {}) if isinstance(tmpl, dict) else {}


def _names(containers: Any, key: str) -> str:
    return ",".join(str(c.get(key, "")) for c in containers or [] if isinstance(c, dict))


def _labels_text(labels: Any) -> str:
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _job_status(obj: dict[str, Any]) -> str:
    """kube 1.32 ``printJob``'s STATUS."""
    conds = {c.get("type"): c.get("status") for c in _status(obj).get("conditions") or []}
    for ctype, text in (
        ("Failed", "Failed"),
        ("Complete", "Complete"),
        ("SuccessCriteriaMet", "SuccessCriteriaMet"),
        ("FailureTarget", "FailureTarget"),
        ("Suspended", "Suspended"),
    ):
        if conds.get(ctype) == "True":
            return text
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _job_completions(obj: dict[str, Any]) -> str:
    spec = _spec(obj)
    succeeded = _status(obj).get("succeeded", 0)
    completions = spec.get("completions")
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = spec.get("parallelism", 0)
    return (
        f"{succeeded}/1 of {parallelism}" if parallelism and parallelism > 1 else f"{succeeded}/1"
    )


def _job_duration(obj: dict[str, Any], now: _Now) -> str:
    st = _status(obj)
    start = _parse_time(st["startTime"]) if isinstance(st.get("startTime"), str) else None
    if start is None:
        return ""
    end_ts = st.get("completionTime")
    end = _parse_time(end_ts) if isinstance(end_ts, str) else now
    return human_duration(((end or now) - start).total_seconds())


def _cronjob_template(obj: dict[str, Any]) -> dict[str, Any]:
    jt = _spec(obj).get("jobTemplate") or {}
    return jt.get("spec") or {} if isinstance(jt, dict) else {}


def _ingress_hosts(obj: dict[str, Any]) -> str:
    hosts = [str(r.get("host")) for r in _spec(obj).get("rules") or [] if r.get("host")]
    return ",".join(hosts) if hosts else "*"


def _lb_addresses(obj: dict[str, Any]) -> str:
    ingress = ((_status(obj).get("loadBalancer") or {}).get("ingress")) or []
    return ",".join(str(i.get("ip") or i.get("hostname") or "") for i in ingress)


def _hpa_targets(obj: dict[str, Any]) -> str:
    cpu = _spec(obj).get("targetCPUUtilizationPercentage")  # autoscaling/v1
    if cpu is not None:
        current = _status(obj).get("currentCPUUtilizationPercentage")
        return f"{'<unknown>' if current is None else f'{current}%'}/{cpu}%"
    metrics = _spec(obj).get("metrics") or []
    if not metrics:
        return "<none>"
    parts = []
    for m in metrics:
        target = ((m.get(_lower_first(str(m.get("type", "")))) or {}).get("target")) or {}
        if target.get("averageUtilization") is not None:
            parts.append(f"<unknown>/{target['averageUtilization']}%")
        else:
            value = target.get("averageValue") or target.get("value") or ""
            parts.append(f"<unknown>/{value}")
    return ", ".join(parts)


def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:]


def _computed(name: str, obj: dict[str, Any], now: _Now) -> Any:
    """The cells kinds.py names with ``@``: kube's printers, abridged."""
    spec, status = _spec(obj), _status(obj)
    meta = obj.get("metadata") or {}
    if name == "age":
        return _age(obj, now)
    if name == "created":
        return _created_at(obj, now)
    if name == "containers":
        return _names(_pod_template_spec(obj).get("containers"), "name")
    if name == "images":
        return _names(_pod_template_spec(obj).get("containers"), "image")
    if name == "selector":
        return _selector_text(spec.get("selector"))
    if name == "template_containers":
        return _names(((obj.get("template") or {}).get("spec") or {}).get("containers"), "name")
    if name == "template_images":
        return _names(((obj.get("template") or {}).get("spec") or {}).get("containers"), "image")
    if name == "template_labels":
        return _labels_text(((obj.get("template") or {}).get("metadata") or {}).get("labels"))
    if name == "node_selector":
        return _labels_text(_pod_template_spec(obj).get("nodeSelector"))
    if name == "pod_selector":
        return _selector_text(spec.get("podSelector")) if spec.get("podSelector") else "<none>"
    if name == "controller_ref":
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller"):
                group = str(ref.get("apiVersion", "")).rpartition("/")[0]
                kind = str(ref.get("kind", "")).lower() + (f".{group}" if group else "")
                return f"{kind}/{ref.get('name', '')}"
        return "<none>"
    if name == "job_status":
        return _job_status(obj)
    if name == "job_completions":
        return _job_completions(obj)
    if name == "job_duration":
        return _job_duration(obj, now)
    if name == "cronjob_active":
        return len(status.get("active") or [])
    if name == "cronjob_last_schedule":
        ts = status.get("lastScheduleTime")
        return _since(ts, now) if ts else "<none>"
    if name in ("cronjob_containers", "cronjob_images"):
        pod = (_cronjob_template(obj).get("template") or {}).get("spec") or {}
        return _names(pod.get("containers"), "name" if name.endswith("containers") else "image")
    if name == "cronjob_selector":
        return _selector_text(_cronjob_template(obj).get("selector"))
    if name == "ingress_hosts":
        return _ingress_hosts(obj)
    if name == "ingress_address":
        return _lb_addresses(obj)
    if name == "ingress_ports":
        return "80, 443" if spec.get("tls") else "80"
    if name == "ingressclass_parameters":
        params = spec.get("parameters")
        if not isinstance(params, dict):
            return "<none>"
        group = f".{params['apiGroup']}" if params.get("apiGroup") else ""
        return f"{params.get('kind', '')}{group}/{params.get('name', '')}"
    if name == "endpoints":
        # formatEndpoints: a subset's addresses port by port (net.JoinHostPort),
        # its bare IPs when it has no ports.
        addrs = [
            (f"[{ip}]:{p.get('port')}" if ":" in ip else f"{ip}:{p.get('port')}") if p else ip
            for sub in obj.get("subsets") or []
            for p in (sub.get("ports") or [None])
            for ip in (str(a.get("ip", "")) for a in sub.get("addresses") or [])
        ]
        if not obj.get("subsets"):
            return "<none>"
        # (subsets of not-ready addresses alone: an empty cell)
        return ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    if name == "slice_ports":
        ports = [str(p.get("port")) for p in obj.get("ports") or [] if p.get("port") is not None]
        return _join(ports) if obj.get("ports") is not None else "<unset>"
    if name == "slice_endpoints":
        addrs = [str(a) for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
        if not addrs:
            return "<unset>"
        return ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    if name == "hpa_targets":
        return _hpa_targets(obj)
    if name in ("access_modes", "pvc_access_modes"):
        src = status if name == "pvc_access_modes" else spec
        return _access_modes(src.get("accessModes"))
    if name == "pv_claim":
        ref = spec.get("claimRef") or {}
        return f"{ref.get('namespace')}/{ref.get('name')}" if ref else ""
    if name == "pvc_status":
        return "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
    if name in ("quota_request", "quota_limit"):
        hard, used = status.get("hard") or {}, status.get("used") or {}
        limits = [k for k in sorted(hard) if (k.startswith("limits.")) == (name == "quota_limit")]
        return ", ".join(f"{k}: {used.get(k, '0')}/{hard[k]}" for k in limits)
    if name == "node_status":
        conds: list[dict[str, Any]] = status.get("conditions") or []
        ready: dict[str, Any] = next((c for c in conds if c.get("type") == "Ready"), {})
        text = "Ready" if ready.get("status") == "True" else "NotReady"
        if not ready:
            text = "Unknown"
        return text + (",SchedulingDisabled" if spec.get("unschedulable") else "")
    if name == "node_roles":
        prefix = "node-role.kubernetes.io/"
        roles = sorted(k[len(prefix) :] for k in meta.get("labels") or {} if k.startswith(prefix))
        return ",".join(r for r in roles if r) or "<none>"
    if name in ("node_internal_ip", "node_external_ip"):
        # printers.go getNodeInternalIP / getNodeExternalIP: the first of its type.
        wanted = "InternalIP" if name == "node_internal_ip" else "ExternalIP"
        for a in status.get("addresses") or []:
            if a.get("type") == wanted:
                return a.get("address", "")
        return "<none>"
    if name == "apiservice_service":
        svc = spec.get("service")
        return f"{svc.get('namespace')}/{svc.get('name')}" if svc else "Local"
    if name == "apiservice_available":
        cond = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "Available"), None
        )
        if cond is None:
            return "Unknown"
        ok = cond.get("status") == "True"
        return "True" if ok else f"{cond.get('status')} ({cond.get('reason', '')})"
    return None


def _access_modes(modes: Any) -> str:
    short = {
        "ReadWriteOnce": "RWO",
        "ReadOnlyMany": "ROX",
        "ReadWriteMany": "RWX",
        "ReadWriteOncePod": "RWOP",
    }
    return ",".join(short.get(str(m), str(m)) for m in modes or [])


def _render(template: str, col_type: str, obj: dict[str, Any], now: _Now) -> Any:
    """One cell of a ``kinds.py`` column (see its docstring)."""
    if template.startswith("@"):
        return _computed(template[1:], obj, now)
    whole = _TEMPLATE_FIELD.fullmatch(template)
    if whole is not None:
        found = jsonpath_find(obj, whole.group(1))
        if not found or found[0] is None:
            default = whole.group(2)
            if col_type == "integer":
                return int(default) if default.lstrip("-").isdigit() else None
            if col_type == "boolean":
                return default.lower() == "true"
            return default
        value = found[0]
        if col_type == "string":
            return _text(value)
        return value

    def field(m: re.Match[str]) -> str:
        found = jsonpath_find(obj, m.group(1))
        return _text(found[0]) if found and found[0] is not None else m.group(2)

    return _TEMPLATE_FIELD.sub(field, template)


def _declared_columns(columns: Any) -> _Builtin:
    specs = [(str(c[0]), str(c[1]), str(c[2]), int(c[3])) for c in columns]
    cols = [
        _column(
            name,
            "date" if tmpl == "@created" else ctype,
            _AGE_DESCRIPTION if tmpl in ("@age", "@created") else "",
            priority=priority,
        )
        for name, tmpl, ctype, priority in specs
    ]

    def cells(o: dict[str, Any], now: _Now) -> list[Any]:
        return [_render(tmpl, ctype, o, now) for _, tmpl, ctype, _ in specs]

    return cols, cells


def _builtin_columns(rt: ResourceType) -> _Builtin:
    age_col = _column("Age", "string", _AGE_DESCRIPTION)
    created_col = _column("Created At", "date", _AGE_DESCRIPTION)
    key = (rt.group, rt.kind)
    if rt.extra.get("columns") is not None:
        return _declared_columns(rt.extra["columns"])
    if key == ("apps", "Deployment"):
        return (
            [
                _column("Ready", "string", "Number of the pod with ready state"),
                _column("Up-to-date", "integer", "Total number of non-terminated pods "
                        "targeted by this deployment that have the desired template spec."),
                _column("Available", "integer", "Total number of available pods (ready for "
                        "at least minReadySeconds) targeted by this deployment."),
                age_col,
                _column("Containers", "string", "Names of each container in the template.",
                        priority=1),
                _column("Images", "string", "Images referenced by each container in the "
                        "template.", priority=1),
                _column("Selector", "string", "Label selector for pods.", priority=1),
            ],
            _deployment_cells,
        )  # fmt: skip
    if key == ("", "Service"):
        return (
            [
                _column("Type", "string", "The type of service."),
                _column("Cluster-IP", "string", "The cluster IP of the service."),
                _column("External-IP", "string", "The external IP of the service."),
                _column("Port(s)", "string", "The ports of the service."),
                age_col,
                _column("Selector", "string", "The selector of the service.", priority=1),
            ],
            _service_cells,
        )
    if key == ("", "Pod"):
        return (
            [
                _column(
                    "Ready",
                    "string",
                    "The aggregate readiness state of this pod for accepting traffic.",
                ),
                _column("Status", "string", "The aggregate status of the containers in this pod."),
                _column(
                    "Restarts",
                    "string",
                    "The number of times the containers in this pod have been restarted and "
                    "when the last container in this pod has restarted.",
                ),
                age_col,
                _column("IP", "string", "IP address of the pod.", priority=1),
                _column("Node", "string", "Name of the node.", priority=1),
                _column("Nominated Node", "string", "Name of the nominated node.", priority=1),
                _column("Readiness Gates", "string", "The pod's readiness gates.", priority=1),
            ],
            _pod_cells,
        )
    if key == ("", "Namespace"):
        return (
            [_column("Status", "string", "The status of the namespace."), age_col],
            lambda o, now: [_status(o).get("phase", ""), _age(o, now)],
        )
    if key == ("", "ConfigMap"):
        return (
            [_column("Data", "string", "Number of data in configmap."), age_col],
            lambda o, now: [_data_count(o), _age(o, now)],
        )
    if key == ("", "Secret"):
        return (
            [
                _column("Type", "string", "The type of the secret."),
                _column("Data", "string", "Number of data in the secret."),
                age_col,
            ],
            lambda o, now: [o.get("type", "Opaque"), _data_count(o), _age(o, now)],
        )
    if key == ("", "ServiceAccount"):
        return (
            [_column("Secrets", "string", "Secrets is a list of the secrets."), age_col],
            lambda o, now: [len(o.get("secrets") or []), _age(o, now)],
        )
    if key == ("coordination.k8s.io", "Lease"):
        return (
            [_column("Holder", "string", "The holder of the lease."), age_col],
            lambda o, now: [_spec(o).get("holderIdentity", ""), _age(o, now)],
        )
    if key in (
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ):
        # printRoleBinding / printClusterRoleBinding: the subjects in the wide
        # columns (rbac.SubjectsStrings), descriptions of rbac/v1beta1 roleRef.
        what = "roleBinding" if rt.kind == "RoleBinding" else "clusterRoleBinding"
        ref_doc = (
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the "
            "global namespace. If the RoleRef cannot be resolved, the Authorizer must return "
            "an error."
            if rt.kind == "RoleBinding"
            else "RoleRef can only reference a ClusterRole in the global namespace. If the "
            "RoleRef cannot be resolved, the Authorizer must return an error."
        )
        return (
            [
                _column("Role", "string", ref_doc),
                age_col,
                _column("Users", "string", f"Users in the {what}", priority=1),
                _column("Groups", "string", f"Groups in the {what}", priority=1),
                _column("ServiceAccounts", "string", f"ServiceAccounts in the {what}", priority=1),
            ],
            lambda o, now: [_binding_role(o), _age(o, now), *_binding_subjects(o)],
        )
    if key in (
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ):
        # printValidatingWebhook / printMutatingWebhook
        doc = "Webhooks indicates the number of webhooks registered in this configuration"
        return (
            [_column("Webhooks", "integer", doc), age_col],
            lambda o, now: [len(o.get("webhooks") or []), _age(o, now)],
        )
    if key == ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"):
        return (
            [
                _column("Validations", "integer", "Validations indicates the number of "
                        "validation rules defined in this configuration"),
                _column("ParamKind", "string", "ParamKind specifies the kind of resources "
                        "used to parameterize this policy"),
                age_col,
            ],
            lambda o, now: [
                len(_spec(o).get("validations") or []), _param_kind(o), _age(o, now)
            ],
        )  # fmt: skip
    if key == ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"):
        return (
            [
                _column("PolicyName", "string", "PolicyName indicates the policy definition "
                        "which the policy binding binded to"),
                _column("ParamRef", "string", "ParamRef indicates the param resource which "
                        "sets the configration param"),
                age_col,
            ],
            lambda o, now: [_spec(o).get("policyName", ""), _param_ref(o), _age(o, now)],
        )  # fmt: skip
    if key in (
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ):
        return ([created_col], lambda o, now: [_created_at(o, now)])
    return ([age_col], lambda o, now: [_age(o, now)])


# --------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------


def _crd_columns(rt: ResourceType) -> list[dict[str, Any]]:
    cols = list(rt.printer_columns)
    if not cols:
        cols = [
            {
                "name": "Age",
                "type": "date",
                "jsonPath": ".metadata.creationTimestamp",
                "description": _AGE_DESCRIPTION,
            }
        ]
    return cols


def _parsable_columns(cols: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """tableconvertor.New: the columns before the first whose JSONPath does
    not parse (an unterminated or non-numeric subscript; filters are left to
    ``_crd_cells``), which the handler then serves as they are."""
    for i, col in enumerate(cols):
        try:
            for step in _split_segments(str(col.get("jsonPath", ""))):
                if step.startswith("[") and not step[1:].lstrip().startswith("?"):
                    _apply_step([], step)
        except JSONPathError:
            return cols[:i]
    return cols


def _crd_cells(
    cols: list[dict[str, Any]], obj: dict[str, Any], now: datetime.datetime
) -> list[Any]:
    cells: list[Any] = []
    for col in cols:
        try:
            results = jsonpath_find(obj, str(col.get("jsonPath", "")))
        except JSONPathError:
            logger.debug("bad printer column jsonPath %r", col.get("jsonPath"))
            results = []
        col_type = str(col.get("type", "string"))
        cells.append(_cell(col_type, results[0], now) if results else None)
    return cells


def _row_object(obj: dict[str, Any], include_object: str, api_version: str) -> Any:
    if include_object == "None":
        return None
    if include_object == "Object":
        return copy.deepcopy(obj)
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": copy.deepcopy(obj.get("metadata") or {}),
    }


def to_table(
    rt: ResourceType,
    obj: dict[str, Any],
    *,
    include_object: str = "Metadata",
    now: datetime.datetime | None = None,
    api_version: str = "meta.k8s.io/v1",
    headers: bool = True,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table for one object or a list of ``rt`` objects.

    ``include_object`` is the ``includeObject`` query parameter: ``Metadata``
    (default), ``Object`` or ``None``. ``now`` (for the server-rendered ages)
    defaults to the current time. ``api_version``: the Table's (and its rows'
    PartialObjectMetadata) group version, ``meta.k8s.io/v1`` or ``v1beta1``
    as the client asked. ``headers=False`` is ``TableOptions.NoHeaders``
    (every Table of a watch after the first): ``columnDefinitions`` is null.
    """
    now = now or datetime.datetime.now(datetime.UTC)
    is_list = isinstance(obj.get("items"), list)
    items: list[dict[str, Any]] = list(obj["items"]) if is_list else [obj]
    src_meta = obj.get("metadata") or {}
    meta: dict[str, Any] = {}
    if src_meta.get("resourceVersion"):
        meta["resourceVersion"] = src_meta["resourceVersion"]
    if is_list:
        if src_meta.get("continue"):
            meta["continue"] = src_meta["continue"]
        if src_meta.get("remainingItemCount") is not None:
            meta["remainingItemCount"] = src_meta["remainingItemCount"]

    if rt.kind == "Event" and rt.group in ("", "events.k8s.io"):
        # kube's event printer has no leading Name column.
        columns = _event_columns()

        def cells(o: dict[str, Any]) -> list[Any]:
            return _event_cells(o, now)

        rows = [
            {"cells": cells(item), "object": _row_object(item, include_object, api_version)}
            for item in items
        ]
        return _table(meta, columns if headers else None, rows, api_version)

    if rt.is_crd or rt.schema is not None:
        printer_cols = _parsable_columns(_crd_columns(rt))
        columns = [_name_column()] + [
            _column(
                str(c.get("name", "")),
                str(c.get("type", "string")),
                # tableconvertor.New: a column without one describes its path.
                str(c.get("description") or "")
                or "Custom resource definition column (in JSONPath format): "
                + str(c.get("jsonPath", "")),
                fmt=str(c.get("format", "")),
                priority=int(c.get("priority", 0) or 0),
            )
            for c in printer_cols
        ]

        def cells(o: dict[str, Any]) -> list[Any]:
            return _crd_cells(printer_cols, o, now)
    else:
        extra_cols, cell_fn = _builtin_columns(rt)
        columns = [_name_column(), *extra_cols]

        def cells(o: dict[str, Any]) -> list[Any]:
            return cell_fn(o, now)

    rows = []
    for item in items:
        item_meta = item.get("metadata") or {}
        name = item_meta.get("name", "")
        if (rt.group, rt.kind) == ("storage.k8s.io", "StorageClass"):
            # printStorageClass: storageutil.IsDefaultAnnotation marks the name.
            annotations = item_meta.get("annotations") or {}
            if "true" in (
                annotations.get("storageclass.kubernetes.io/is-default-class"),
                annotations.get("storageclass.beta.kubernetes.io/is-default-class"),
            ):
                name += " (default)"
        row: dict[str, Any] = {"cells": [name, *cells(item)]}
        row_conditions = _ROW_CONDITIONS.get((rt.group, rt.kind))
        conditions = row_conditions(item) if row_conditions is not None else None
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(item, include_object, api_version)
        rows.append(row)
    return _table(meta, columns if headers else None, rows, api_version)


def _table(
    meta: dict[str, Any],
    columns: list[dict[str, Any]] | None,
    rows: list[dict[str, Any]],
    api_version: str,
) -> dict[str, Any]:
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": meta,
        "columnDefinitions": columns,
        "rows": rows,
    }
