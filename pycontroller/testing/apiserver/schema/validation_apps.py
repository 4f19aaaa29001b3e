"""More of kube 1.32's per-kind validation (``pkg/apis/{apps,batch,core,
networking,autoscaling}/validation``) for workloads and the core kinds
controllers write: the rules beyond those in ``validation.py`` and
``builtin.py``.

- workload templates' ``restartPolicy`` (``Always`` for Deployments,
  ReplicaSets, StatefulSets, DaemonSets and ReplicationControllers;
  ``OnFailure`` or ``Never`` for Jobs and CronJobs' job templates) and
  ``activeDeadlineSeconds`` (forbidden on the ``Always`` kinds);
- Deployments: non-negative counts, ``progressDeadlineSeconds`` above
  ``minReadySeconds``, strategy type and ``rollingUpdate`` int-or-percent
  values; ReplicaSets, ReplicationControllers, StatefulSets (pod
  management policy, update strategy, PVC retention policy, which spec
  fields may change) and DaemonSets (update strategy);
- Jobs and CronJobs' job templates: non-negative counts, completion mode;
  CronJobs: ``schedule`` (robfig/cron's standard parser, as kube vendors
  it), ``timeZone``, ``concurrencyPolicy``, history limits;
- Services: ``type``, ``sessionAffinity``, a headless NodePort or
  LoadBalancer Service, ``externalName``, selector labels;
- ConfigMaps and Secrets: keys, a key both in ``data`` and ``binaryData``,
  Secret types' required keys, ``type`` immutable, ``immutable: true``.

``causes(rt, obj, old)`` returns StatusCause dicts (``old``: the stored
object on update). Go's ``%#v`` of a struct is spelled out where its
fields are known (``intstr.IntOrString{Type:0, IntVal:0, StrVal:""}``).
"""

from __future__ import annotations

import ipaddress
import re
import zoneinfo
from collections.abc import Callable
from typing import Any

from pycontroller.testing.apiserver.gofmt import quote
from pycontroller.testing.apiserver.gofmt import value_text as _shown
from pycontroller.testing.apiserver.registry.names import (
    config_key_errors,
    label_value_errors,
    qualified_name_errors,
    validate_name,
)
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import quantity
from pycontroller.testing.apiserver.schema.validation import as_int as _int
from pycontroller.testing.apiserver.schema.validation import get_path as _get
from pycontroller.testing.apiserver.schema.validation import port_name_errors
from pycontroller.testing.apiserver.status import forbidden_cause as _forbidden
from pycontroller.testing.apiserver.status import (
    invalid_cause,
    not_supported_cause,
    required_cause,
)

__all__ = ["causes"]

Cause = dict[str, Any]

_NEGATIVE = "must be greater than or equal to 0"  # IsNegativeErrorMsg
_IMMUTABLE_SET = "field is immutable when `immutable` is set"


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _nonnegative(field: str, value: Any) -> list[Cause]:
    """``ValidateNonnegativeField`` (for a set field)."""
    n = _int(value)
    if n is not None and n < 0:
        return [invalid_cause(field, str(n), _NEGATIVE)]
    return []


# --- int-or-percent (apps validation) --------------------------------------------

_PERCENT_RE = re.compile(r"^[0-9]+%$")
_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def _intstr_go(value: Any) -> str:
    """``%#v`` of an ``intstr.IntOrString``."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{quote(value)}}}"
    n = _int(value) or 0
    return f'intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:""}}'


def _atoi(s: str) -> int | None:
    """Go's ``strconv.Atoi`` (None on an error)."""
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None


def _intstr_value(value: Any) -> int:
    """``getIntOrPercentValue``: a valid percent's number, else ``IntValue()``."""
    if isinstance(value, str):
        if _PERCENT_RE.match(value):
            return int(value[:-1])
        return _atoi(value) or 0
    return _int(value) or 0


def _positive_int_or_percent(field: str, value: Any) -> list[Cause]:
    """``ValidatePositiveIntOrPercent``."""
    if isinstance(value, str):
        if not _PERCENT_RE.match(value):
            return [invalid_cause(field, _intstr_go(value), _PERCENT_MSG)]
        return []
    return _nonnegative(field, value)


def _not_more_than_100(field: str, value: Any) -> list[Cause]:
    """``IsNotMoreThan100Percent``."""
    if isinstance(value, str) and _PERCENT_RE.match(value) and int(value[:-1]) > 100:
        return [invalid_cause(field, _intstr_go(value), "must not be greater than 100%")]
    return []


# --- pod templates ----------------------------------------------------------------


def _always_template(path: str, template: Any, kind: str) -> list[Cause]:
    """The ``restartPolicy`` and ``activeDeadlineSeconds`` rules of the
    template of a kind whose pods always restart."""
    spec = _dict(_get(template, "spec"))
    out: list[Cause] = []
    policy = spec.get("restartPolicy") or ""
    if policy != "Always":
        out.append(not_supported_cause(f"{path}.spec.restartPolicy", quote(policy), ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        out.append(
            _forbidden(
                f"{path}.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return out


# --- apps -------------------------------------------------------------------------


def _deployment(spec: dict[str, Any]) -> list[Cause]:
    out = _nonnegative("spec.replicas", spec.get("replicas"))
    out.extend(_always_template("spec.template", spec.get("template"), "ReplicaSet"))
    strategy = spec.get("strategy")
    if isinstance(strategy, dict):
        stype = strategy.get("type") or ""
        rolling = strategy.get("rollingUpdate")
        if stype == "RollingUpdate":
            if rolling is None:
                out.append(
                    required_cause(
                        "spec.strategy.rollingUpdate", "this should be defaulted and never be nil"
                    )
                )
            elif isinstance(rolling, dict):
                path = "spec.strategy.rollingUpdate"
                unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
                out.extend(_positive_int_or_percent(f"{path}.maxUnavailable", unavailable))
                out.extend(_positive_int_or_percent(f"{path}.maxSurge", surge))
                if _intstr_value(unavailable) == 0 and _intstr_value(surge) == 0:
                    out.append(
                        invalid_cause(
                            f"{path}.maxUnavailable",
                            _intstr_go(unavailable),
                            "may not be 0 when `maxSurge` is 0",
                        )
                    )
                out.extend(_not_more_than_100(f"{path}.maxUnavailable", unavailable))
        elif stype != "Recreate" and rolling is None:
            shown = (
                f"apps.DeploymentStrategy{{Type:{quote(stype)}, "
                "RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}"
            )
            out.append(not_supported_cause("spec.strategy", shown, ["Recreate", "RollingUpdate"]))
    out.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    out.extend(_nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    deadline = _int(spec.get("progressDeadlineSeconds"))
    if deadline is not None:
        out.extend(_nonnegative("spec.progressDeadlineSeconds", deadline))
        if deadline <= (_int(spec.get("minReadySeconds")) or 0):
            out.append(
                invalid_cause(
                    "spec.progressDeadlineSeconds",
                    str(deadline),
                    "must be greater than minReadySeconds",
                )
            )
    return out


def _replicaset(spec: dict[str, Any], kind: str) -> list[Cause]:
    out = _nonnegative("spec.replicas", spec.get("replicas"))
    out.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    if spec.get("template") is not None:
        out.extend(_always_template("spec.template", spec.get("template"), kind))
    return out


_STS_MUTABLE = (
    "replicas",
    "template",
    "updateStrategy",
    "minReadySeconds",
    "ordinals",
    "persistentVolumeClaimRetentionPolicy",
)


def _statefulset(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[Cause]:
    out: list[Cause] = []
    policy = spec.get("podManagementPolicy") or ""
    if not policy:
        out.append(required_cause("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        out.append(
            invalid_cause(
                "spec.podManagementPolicy", quote(policy), "must be 'OrderedReady' or 'Parallel'"
            )
        )
    strategy = _dict(spec.get("updateStrategy"))
    stype = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if not stype:
        out.append(required_cause("spec.updateStrategy"))
    elif stype == "OnDelete":
        if isinstance(rolling, dict) and rolling.get("maxUnavailable") is None:
            partition = _int(rolling.get("partition")) or 0
            shown = (
                f"apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}, "
                "MaxUnavailable:(*intstr.IntOrString)(nil)}"
            )
            out.append(
                invalid_cause(
                    "spec.updateStrategy.rollingUpdate",
                    shown,
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif stype == "RollingUpdate":
        if isinstance(rolling, dict):
            out.extend(
                _nonnegative(
                    "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition")
                )
            )
    elif rolling is None:
        shown = (
            f"apps.StatefulSetUpdateStrategy{{Type:{quote(stype)}, "
            "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}"
        )
        out.append(
            invalid_cause("spec.updateStrategy", shown, "must be 'RollingUpdate' or 'OnDelete'")
        )
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            value = retention.get(key) or ""
            if value not in ("Retain", "Delete"):
                out.append(
                    not_supported_cause(
                        f"spec.persistentVolumeClaimRetentionPolicy.{key}",
                        quote(value),
                        ["Retain", "Delete"],
                    )
                )
    out.extend(_nonnegative("spec.replicas", spec.get("replicas")))
    out.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    out.extend(_nonnegative("spec.ordinals.start", _get(spec, "ordinals", "start")))
    out.extend(_always_template("spec.template", spec.get("template"), "StatefulSet"))
    if old_spec is not None:
        new_rest = {k: v for k, v in spec.items() if k not in _STS_MUTABLE}
        old_rest = {k: v for k, v in old_spec.items() if k not in _STS_MUTABLE}
        if new_rest != old_rest:
            out.append(
                _forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            )
    return out


def _daemonset(spec: dict[str, Any]) -> list[Cause]:
    out = _always_template("spec.template", spec.get("template"), "DaemonSet")
    out.extend(_nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    out.extend(_nonnegative("spec.templateGeneration", spec.get("templateGeneration")))
    strategy = spec.get("updateStrategy")
    if isinstance(strategy, dict):
        stype = strategy.get("type") or ""
        rolling = strategy.get("rollingUpdate")
        path = "spec.updateStrategy"
        if stype == "RollingUpdate":
            if rolling is None:
                out.append(required_cause(f"{path}.rollingUpdate"))
            elif isinstance(rolling, dict):
                rp = f"{path}.rollingUpdate"
                unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
                out.extend(_positive_int_or_percent(f"{rp}.maxUnavailable", unavailable))
                out.extend(_positive_int_or_percent(f"{rp}.maxSurge", surge))
                out.extend(_not_more_than_100(f"{rp}.maxUnavailable", unavailable))
                out.extend(_not_more_than_100(f"{rp}.maxSurge", surge))
                has_unavailable = _intstr_value(unavailable) != 0
                has_surge = _intstr_value(surge) != 0
                if has_unavailable and has_surge:
                    out.append(
                        invalid_cause(
                            f"{rp}.maxSurge",
                            _intstr_go(surge),
                            "may not be set when maxUnavailable is non-zero",
                        )
                    )
                elif not has_unavailable and not has_surge:
                    out.append(
                        required_cause(f"{rp}.maxUnavailable", "cannot be 0 when maxSurge is 0")
                    )
        elif stype != "OnDelete" and rolling is None:
            shown = (
                f"apps.DaemonSetUpdateStrategy{{Type:{quote(stype)}, "
                "RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}"
            )
            out.append(not_supported_cause(path, shown, ["RollingUpdate", "OnDelete"]))
    out.extend(_nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    return out


# --- batch ------------------------------------------------------------------------


def _job_spec(path: str, spec: dict[str, Any]) -> list[Cause]:
    """``validateJobSpec``'s rules on counts, completion mode and the
    template's restart policy."""
    out: list[Cause] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
        out.extend(_nonnegative(f"{path}.{key}", spec.get(key)))
    out.extend(_nonnegative(f"{path}.ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished")))
    out.extend(_nonnegative(f"{path}.backoffLimitPerIndex", spec.get("backoffLimitPerIndex")))
    mode = spec.get("completionMode")
    if isinstance(mode, str):
        if mode not in ("NonIndexed", "Indexed"):
            out.append(
                not_supported_cause(
                    f"{path}.completionMode", quote(mode), ["NonIndexed", "Indexed"]
                )
            )
        if mode == "Indexed" and spec.get("completions") is None:
            out.append(required_cause(f"{path}.completions", "when completion mode is Indexed"))
    policy = _get(spec, "template", "spec", "restartPolicy") or ""
    field = f"{path}.template.spec.restartPolicy"
    if policy in ("Always", ""):
        out.append(required_cause(field, 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        out.append(not_supported_cause(field, quote(policy), ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        out.append(
            invalid_cause(
                field, quote(policy), 'only "Never" is supported when podFailurePolicy is specified'
            )
        )
    return out


# robfig/cron v3 (``cron.ParseStandard``): minute, hour, day of month, month,
# day of week, or a descriptor.
_CRON_BOUNDS: tuple[tuple[int, int, dict[str, int] | None], ...] = (
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (
        1,
        12,
        {
            m: i + 1
            for i, m in enumerate(
                ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
            )
        },
    ),
    (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}),
)
_CRON_DESCRIPTORS = frozenset(
    {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)


class _CronError(Exception):
    pass


def _cron_int(expr: str) -> int:
    """robfig/cron's ``mustParseInt``."""
    n = _atoi(expr)
    if n is None:
        why = (
            "invalid syntax" if re.fullmatch(r"[+-]?[0-9]+", expr) is None else "value out of range"
        )
        raise _CronError(
            f"failed to parse int from {expr}: strconv.Atoi: parsing {quote(expr)}: {why}"
        )
    if n < 0:
        raise _CronError(f"negative number ({n}) not allowed: {expr}")
    return n


def _cron_range(expr: str, low: int, high: int, names: dict[str, int] | None) -> None:
    """robfig/cron's ``getRange`` (errors only)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1

    def value(s: str) -> int:
        if names is not None and s.lower() in names:
            return names[s.lower()]
        return _cron_int(s)

    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = value(low_and_high[0])
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = value(low_and_high[1])
        else:
            raise _CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _cron_int(range_and_step[1])
        if single:
            end = high
    else:
        raise _CronError(f"too many slashes: {expr}")
    if start < low:
        raise _CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise _CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise _CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise _CronError(f"step of range should be a positive number: {expr}")


_DURATION_UNITS = ("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h")


def _duration_error(text: str) -> str:
    """Go's ``time.ParseDuration`` error for ``text``, "" when it parses."""
    q = quote(text)
    s = text[1:] if text[:1] in ("-", "+") else text
    if s == "0":
        return ""
    if not s:
        return f"time: invalid duration {q}"
    while s:
        m = re.match(r"([0-9]*)(\.[0-9]*)?", s)
        assert m is not None
        if not m.group(1) and len(m.group(2) or "") <= 1:
            return f"time: invalid duration {q}"
        s = s[m.end() :]
        u = re.match(r"[^0-9.]*", s)
        unit = u.group(0) if u else ""
        if not unit:
            return f"time: missing unit in duration {q}"
        if unit not in _DURATION_UNITS:
            return f"time: unknown unit {quote(unit)} in duration {q}"
        s = s[len(unit) :]
    return ""


def _cron_parse(spec: str) -> None:
    """``cron.ParseStandard``: raises ``_CronError`` with robfig/cron's message."""
    if not spec:
        raise _CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        i, eq = spec.find(" "), spec.find("=")
        if i < 0:
            return  # Go would panic slicing here; leave it to the TZ rule.
        zone = spec[eq + 1 : i]
        err = _load_location(zone)
        if err:
            raise _CronError(f"provided bad location {zone}: {err}")
        spec = spec[i:].strip()
    if spec.startswith("@"):
        if spec in _CRON_DESCRIPTORS:
            return
        if spec.startswith("@every "):
            duration = spec[len("@every ") :]
            err = _duration_error(duration)
            if err:
                raise _CronError(f"failed to parse duration {spec}: {err}")
            return
        raise _CronError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise _CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, (low, high, names) in zip(fields, _CRON_BOUNDS, strict=True):
        for expr in (e for e in text.split(",") if e):
            _cron_range(expr, low, high, names)


def _load_location(zone: str) -> str:
    """Go's ``time.LoadLocation`` error, "" when ``zone`` loads."""
    if zone in ("", "UTC"):
        return ""
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {zone}"
    return ""


_TZ_PART_RE = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _time_zone(field: str, zone: str) -> list[Cause]:
    """``validateTimeZone``."""
    if not zone:
        return [invalid_cause(field, '""', "timeZone must be nil or non-empty string")]
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART_RE.match(part):
            return [invalid_cause(field, quote(zone), f"unknown time zone {zone}")]
    out: list[Cause] = []
    if zone.lower() == "local":
        out.append(
            invalid_cause(
                field,
                quote(zone),
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
            )
        )
    elif err := _load_location(zone):
        out.append(invalid_cause(field, quote(zone), err))
    return out


def _cronjob(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[Cause]:
    out: list[Cause] = []
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule:
        out.append(required_cause("spec.schedule"))
    else:
        try:
            _cron_parse(schedule)
        except _CronError as e:
            out.append(invalid_cause("spec.schedule", quote(schedule), str(e)))
        allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule") or "")
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            out.append(
                invalid_cause(
                    "spec.schedule",
                    quote(schedule),
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                )
            )
        elif not allow_tz and "TZ" in schedule:
            out.append(
                invalid_cause(
                    "spec.schedule",
                    quote(schedule),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )
            )
    out.extend(_nonnegative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds")))
    zone = spec.get("timeZone")
    if isinstance(zone, str) and (old_spec is None or old_spec.get("timeZone") != zone):
        out.extend(_time_zone("spec.timeZone", zone))
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        out.append(required_cause("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        out.append(
            not_supported_cause(
                "spec.concurrencyPolicy", quote(policy), ["Allow", "Forbid", "Replace"]
            )
        )
    out.extend(_job_spec("spec.jobTemplate.spec", _dict(_get(spec, "jobTemplate", "spec"))))
    out.extend(
        _nonnegative("spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"))
    )
    out.extend(_nonnegative("spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit")))
    return out


# --- core -------------------------------------------------------------------------

_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def _service(spec: dict[str, Any]) -> list[Cause]:
    out: list[Cause] = []
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        out.append(required_cause("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        out.append(
            not_supported_cause("spec.sessionAffinity", quote(affinity), ["ClientIP", "None"])
        )
    stype = spec.get("type") or ""
    if not stype:
        out.append(required_cause("spec.type"))
    elif stype not in _SERVICE_TYPES:
        out.append(not_supported_cause("spec.type", quote(stype), _SERVICE_TYPES))
    ips = spec.get("clusterIPs")
    first = ips[0] if isinstance(ips, list) and ips else spec.get("clusterIP")
    if stype in ("LoadBalancer", "NodePort") and first == "None":
        out.append(
            invalid_cause(
                "spec.clusterIPs[0]", '"None"', f"may not be set to 'None' for {stype} services"
            )
        )
    elif stype == "ExternalName":
        name = str(spec.get("externalName") or "")
        cname = name[:-1] if name.endswith(".") else name
        if cname:
            for msg in validate_name("subdomain", cname):
                out.append(invalid_cause("spec.externalName", quote(cname), msg))
        else:
            out.append(required_cause("spec.externalName"))
    out.extend(_labels("spec.selector", spec.get("selector")))
    return out


def _labels(field: str, labels: Any) -> list[Cause]:
    """``ValidateLabels``: each key a qualified name, each value a label value
    (the errors name the map, not the key)."""
    out: list[Cause] = []
    for k, v in _dict(labels).items():
        for msg in qualified_name_errors(str(k)):
            out.append(invalid_cause(field, quote(str(k)), msg))
        for msg in label_value_errors(str(v)):
            out.append(invalid_cause(field, quote(str(v)), msg))
    return out


def _keys(field: str, values: Any) -> list[Cause]:
    return [
        invalid_cause(f"{field}[{k}]", quote(str(k)), msg)
        for k in _dict(values)
        for msg in config_key_errors(str(k))
    ]


def _immutable_update(
    obj: dict[str, Any], old: dict[str, Any], fields: tuple[str, ...]
) -> list[Cause]:
    """An ``immutable: true`` ConfigMap or Secret keeps its flag and data."""
    if old.get("immutable") is not True:
        return []
    out: list[Cause] = []
    if obj.get("immutable") is not True:
        out.append(_forbidden("immutable", _IMMUTABLE_SET))
    for key in fields:
        if (obj.get(key) or {}) != (old.get(key) or {}):
            out.append(_forbidden(key, _IMMUTABLE_SET))
    return out


def _configmap(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    out = _immutable_update(obj, old, ("data", "binaryData")) if old is not None else []
    data, binary = _dict(obj.get("data")), _dict(obj.get("binaryData"))
    for k in data:
        for msg in config_key_errors(str(k)):
            out.append(invalid_cause(f"data[{k}]", quote(str(k)), msg))
        if k in binary:
            out.append(
                invalid_cause(f"data[{k}]", quote(str(k)), "duplicate of key present in binaryData")
            )
    out.extend(_keys("binaryData", binary))
    return out


def _secret(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    out: list[Cause] = []
    stype = str(obj.get("type") or "")
    if old is not None:
        old_type = str(old.get("type") or "")
        if stype != old_type:
            out.append(invalid_cause("type", quote(stype), "field is immutable"))
        out.extend(_immutable_update(obj, old, ("data",)))
    data = _dict(obj.get("data"))
    out.extend(_keys("data", data))
    if stype == "kubernetes.io/service-account-token":
        name = _get(obj, "metadata", "annotations", "kubernetes.io/service-account.name")
        if not name:
            out.append(required_cause("metadata.annotations[kubernetes.io/service-account.name]"))
    elif stype == "kubernetes.io/dockercfg":
        if ".dockercfg" not in data:
            out.append(required_cause("data[.dockercfg]"))
    elif stype == "kubernetes.io/dockerconfigjson":
        if ".dockerconfigjson" not in data:
            out.append(required_cause("data[.dockerconfigjson]"))
    elif stype == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            # field.NewPath("data[%s]").Key(...): kube's own path.
            out.append(required_cause("data[%s][username]"))
            out.append(required_cause("data[%s][password]"))
    elif stype == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            out.append(required_cause("data[%s][ssh-privatekey]"))
    elif stype == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                out.append(required_cause(f"data[{key}]"))
    return out


# --- dispatch ---------------------------------------------------------------------

_Validator = Callable[[dict[str, Any], dict[str, Any] | None], list[Cause]]


# --- PersistentVolumeClaims, Ingresses, HorizontalPodAutoscalers ------------------

_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


def _pvc(spec: dict[str, Any]) -> list[Cause]:
    """``ValidatePersistentVolumeClaimSpec``: access modes and the storage request."""
    out: list[Cause] = []
    modes = spec.get("accessModes")
    modes = modes if isinstance(modes, list) else []
    if not modes:
        out.append(required_cause("spec.accessModes", "at least 1 access mode is required"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            out.append(not_supported_cause("spec.accessModes", _shown(mode), _ACCESS_MODES))
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        out.append(
            _forbidden("spec.accessModes", "may not use ReadWriteOncePod with other access modes")
        )
    requests = _dict(_dict(spec.get("resources")).get("requests"))
    if "storage" not in requests:
        out.append(required_cause("spec.resources[storage]"))
        return out
    value = quantity.value(requests["storage"])
    if value is None:
        return out  # the decoder refused it already
    shown = quote(quantity.canonical(requests["storage"]))
    if value < 0:
        out.append(invalid_cause("spec.resources[storage]", shown, _NEGATIVE))
    if value <= 0:
        out.append(invalid_cause("spec.resources[storage]", shown, "must be greater than zero"))
    return out


_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_BAD_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_BAD_PATH_SUFFIXES = ("/..", "/.")
_WILDCARD_RE = re.compile(r"^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _path_segment_errors(name: str) -> list[str]:
    """``path.IsValidPathSegmentName``."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _ingress_backend(field: str, backend: dict[str, Any]) -> list[Cause]:
    """``validateIngressBackend`` (networking/v1 field names)."""
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [invalid_cause(field, '""', "cannot set both resource and service backends")]
    out: list[Cause] = []
    if resource is not None:
        ref = _dict(resource)
        for key in ("kind", "name"):
            value = str(ref.get(key) or "")
            if not value:
                out.append(required_cause(f"{field}.resource.{key}", f"{key} is required"))
            for msg in _path_segment_errors(value) if value else []:
                out.append(invalid_cause(f"{field}.resource.{key}", quote(value), msg))
        return out
    if service is None:
        return [invalid_cause(field, '""', "resource or service backend is required")]
    service = _dict(service)
    name = str(service.get("name") or "")
    if not name:
        out.append(required_cause(f"{field}.service.name"))
    for msg in validate_name("dns1035", name) if name else []:
        out.append(invalid_cause(f"{field}.service.name", quote(name), msg))
    port = _dict(service.get("port"))
    port_name, port_number = str(port.get("name") or ""), _int(port.get("number")) or 0
    if port_name and port_number:
        out.append(invalid_cause(field, '""', "cannot set both port name & port number"))
    elif port_name:
        for msg in port_name_errors(port_name):
            out.append(invalid_cause(f"{field}.service.port.name", quote(port_name), msg))
    elif port_number:
        if not 1 <= port_number <= 65535:
            out.append(
                invalid_cause(
                    f"{field}.service.port.number",
                    str(port_number),
                    "must be between 1 and 65535, inclusive",
                )
            )
    else:
        out.append(required_cause(field, "port name or number is required"))
    return out


def _ingress_path(field: str, path: dict[str, Any]) -> list[Cause]:
    """``validateHTTPIngressPath``."""
    path_type = path.get("pathType")
    if path_type is None:
        return [required_cause(f"{field}.pathType", "pathType must be specified")]
    value = str(path.get("path") or "")
    out: list[Cause] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            out.append(invalid_cause(f"{field}.path", quote(value), "must be an absolute path"))
        if value:
            for seq in _BAD_PATH_SEQUENCES:
                if seq in value:
                    out.append(
                        invalid_cause(f"{field}.path", quote(value), f"must not contain '{seq}'")
                    )
            for suffix in _BAD_PATH_SUFFIXES:
                if value.endswith(suffix):
                    out.append(
                        invalid_cause(f"{field}.path", quote(value), f"cannot end with '{suffix}'")
                    )
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            out.append(invalid_cause(f"{field}.path", quote(value), "must be an absolute path"))
    else:
        out.append(not_supported_cause(f"{field}.pathType", _shown(path_type), _PATH_TYPES))
    out.extend(_ingress_backend(f"{field}.backend", _dict(path.get("backend"))))
    return out


def _ingress_host(field: str, host: str) -> list[Cause]:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [invalid_cause(field, quote(host), "must be a DNS name, not an IP address")]
    if "*" not in host:
        return [invalid_cause(field, quote(host), m) for m in validate_name("subdomain", host)]
    if len(host) > 253:
        return [invalid_cause(field, quote(host), "must be no more than 253 characters")]
    if not _WILDCARD_RE.match(host):
        return [
            invalid_cause(
                field,
                quote(host),
                "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
                "subdomain, which must consist of lower case alphanumeric characters, '-' or "
                "'.' and end with an alphanumeric character (e.g. '*.example.com', regex used "
                "for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]"
                "*[a-z0-9])?)*')",
            )
        ]
    return []


def _ingress(spec: dict[str, Any]) -> list[Cause]:
    """``ValidateIngressSpec`` (networking/v1): a rule or a default backend,
    backends, hosts, paths and the class name; TLS is not checked here."""
    out: list[Cause] = []
    rules = spec.get("rules")
    if not rules and spec.get("defaultBackend") is None:
        shown = "[]networking.IngressRule(nil)" if rules is None else "[]networking.IngressRule{}"
        out.append(
            invalid_cause("spec", shown, "either `defaultBackend` or `rules` must be specified")
        )
    if spec.get("defaultBackend") is not None:
        out.extend(_ingress_backend("spec.defaultBackend", _dict(spec.get("defaultBackend"))))
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        rule = _dict(rule)
        host = str(rule.get("host") or "")
        if host:
            out.extend(_ingress_host(f"spec.rules[{i}].host", host))
        http = rule.get("http")
        if http is None:
            continue
        paths = _dict(http).get("paths")
        if not paths:
            out.append(required_cause(f"spec.rules[{i}].http.paths"))
        for j, path in enumerate(paths if isinstance(paths, list) else []):
            out.extend(_ingress_path(f"spec.rules[{i}].http.paths[{j}]", _dict(path)))
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        for msg in validate_name("subdomain", class_name):
            out.append(invalid_cause("spec.ingressClassName", quote(class_name), msg))
    return out


def _hpa(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[Cause]:
    """``validateHorizontalPodAutoscalerSpec``: replica bounds (1, or 0 for an
    HPA that already has 0: HPAScaleToZero is off in 1.32) and the target."""
    out: list[Cause] = []
    low = 0 if old_spec is not None and _int(old_spec.get("minReplicas")) == 0 else 1
    min_replicas = _int(spec.get("minReplicas"))
    max_replicas = _int(spec.get("maxReplicas")) or 0
    if min_replicas is not None and min_replicas < low:
        out.append(
            invalid_cause(
                "spec.minReplicas", str(min_replicas), f"must be greater than or equal to {low}"
            )
        )
    if max_replicas < 1:
        out.append(invalid_cause("spec.maxReplicas", str(max_replicas), "must be greater than 0"))
    if min_replicas is not None and max_replicas < min_replicas:
        out.append(
            invalid_cause(
                "spec.maxReplicas",
                str(max_replicas),
                "must be greater than or equal to `minReplicas`",
            )
        )
    ref = _dict(spec.get("scaleTargetRef"))
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            out.append(required_cause(f"spec.scaleTargetRef.{key}"))
        for msg in _path_segment_errors(value) if value else []:
            out.append(invalid_cause(f"spec.scaleTargetRef.{key}", quote(value), msg))
    return out


def _spec_of(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if obj is None else _dict(obj.get("spec"))


_KINDS: dict[tuple[str, str], _Validator] = {
    ("apps", "Deployment"): lambda o, _old: _deployment(_dict(o.get("spec"))),
    ("apps", "ReplicaSet"): lambda o, _old: _replicaset(_dict(o.get("spec")), "ReplicaSet"),
    ("", "ReplicationController"): lambda o, _old: _replicaset(
        _dict(o.get("spec")), "ReplicationController"
    ),
    ("apps", "StatefulSet"): lambda o, old: _statefulset(_dict(o.get("spec")), _spec_of(old)),
    ("apps", "DaemonSet"): lambda o, _old: _daemonset(_dict(o.get("spec"))),
    ("batch", "Job"): lambda o, _old: _job_spec("spec", _dict(o.get("spec"))),
    ("batch", "CronJob"): lambda o, old: _cronjob(_dict(o.get("spec")), _spec_of(old)),
    ("", "Service"): lambda o, _old: _service(_dict(o.get("spec"))),
    ("", "ConfigMap"): _configmap,
    ("", "Secret"): _secret,
    ("", "PersistentVolumeClaim"): lambda o, _old: _pvc(_dict(o.get("spec"))),
    ("networking.k8s.io", "Ingress"): lambda o, _old: _ingress(_dict(o.get("spec"))),
    ("autoscaling", "HorizontalPodAutoscaler"): lambda o, old: _hpa(
        _dict(o.get("spec")), _spec_of(old)
    ),
}


def causes(
    rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The validation errors of built-in ``obj`` these rules find."""
    if rt.is_crd:
        return []
    validator = _KINDS.get((rt.group, rt.kind))
    return validator(obj, old) if validator is not None else []
