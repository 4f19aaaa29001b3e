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
  Secret types' required keys, ``type`` immutable, ``immutable: true``;
- PersistentVolumeClaims: access modes, the storage request, and on update
  the immutable spec (``ValidatePersistentVolumeClaimUpdate``);
- Ingresses: backends, rule hosts and paths, TLS hosts and secret names;
- HorizontalPodAutoscalers: replica bounds, the target, metrics (type,
  source, target) and behavior (scaling rules and policies).

``causes(rt, obj, old)`` returns StatusCause dicts (``old``: the stored
object on update). Go's ``%#v`` of a struct is spelled out where its
fields are known (``intstr.IntOrString{Type:0, IntVal:0, StrVal:""}``).
"""

from __future__ import annotations

import copy
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


# core.PersistentVolumeClaimSpec's fields in Go's order: (JSON name, Go name, a pointer?).
_PVC_FIELDS = (
    ("accessModes", "AccessModes", False),
    ("selector", "Selector", True),
    ("resources", "Resources", False),
    ("volumeName", "VolumeName", False),
    ("storageClassName", "StorageClassName", True),
    ("volumeMode", "VolumeMode", True),
    ("dataSource", "DataSource", True),
    ("dataSourceRef", "DataSourceRef", True),
    ("volumeAttributesClassName", "VolumeAttributesClassName", True),
)
_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
_PVC_IMMUTABLE = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def _semantic(value: Any, pointer: bool = False) -> Any:
    """A spec value as ``apiequality.Semantic.DeepEqual`` compares it: empty
    and missing slices, maps and (non-pointer) strings alike (quantities:
    ``_pvc_semantic``)."""
    if isinstance(value, dict):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None} or None
    if isinstance(value, list):
        return [_semantic(v) for v in value] or None
    if isinstance(value, str) and not pointer:
        return value or None
    return value


def _pvc_semantic(spec: dict[str, Any]) -> dict[str, Any]:
    out = {name: _semantic(spec.get(name), ptr) for name, _go, ptr in _PVC_FIELDS}
    resources = _dict(spec.get("resources"))
    for key in ("limits", "requests"):
        amounts = {k: quantity.value(v) for k, v in _dict(resources.get(key)).items()}
        out[f"resources.{key}"] = amounts or None
    out["resources"] = None
    return out


def _go_text(value: Any, pointer: bool = False) -> str:
    """A JSON value about as go-cmp writes the Go value in a diff."""
    if value is None:
        return "nil"
    if isinstance(value, str):
        return ("&" if pointer else "") + quote(value)
    if isinstance(value, list):
        return "{" + ", ".join(_go_text(v) for v in value) + "}"
    if isinstance(value, dict):
        items = (f"{k[:1].upper()}{k[1:]}: {_go_text(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    return _shown(value)


def _pvc_spec_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """An approximation of ``cmp.Diff(oldSpec, newSpec)``: go-cmp's exact text
    is not reproducible (it elides fields by its own heuristics and picks
    spaces or non-breaking spaces at random, on purpose, so no one matches
    it); the changed fields are written as it writes a whole-field change."""
    lines = ["  core.PersistentVolumeClaimSpec{"]
    same = 0
    old_sem, new_sem = _pvc_semantic(old), _pvc_semantic(new)
    for name, go, ptr in _PVC_FIELDS:
        keys = [name] if name != "resources" else ["resources.limits", "resources.requests"]
        if all(old_sem[k] == new_sem[k] for k in keys):
            same += 1
            continue
        lines.append(f"- \t{go}: {_go_text(old.get(name), ptr)},")
        lines.append(f"+ \t{go}: {_go_text(new.get(name), ptr)},")
    if same:
        lines.append(f"  \t... // {same} identical fields")
    return "\n".join([*lines, "  }", ""])


def _pvc_update(obj: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """``ValidatePersistentVolumeClaimUpdate`` (1.32: RecoverVolumeExpansionFailure
    on, VolumeAttributesClass off): the spec is immutable but for
    ``volumeName`` set once, ``storageClassName`` set from nil (or from the
    beta annotation) and a bound claim's storage request, which may not go
    down to ``status.capacity``."""
    spec, old_spec = _dict(obj.get("spec")), _dict(old.get("spec"))
    new_c, old_c = copy.deepcopy(spec), copy.deepcopy(old_spec)
    out: list[Cause] = []
    if not old_spec.get("volumeName"):
        old_c["volumeName"] = new_c.get("volumeName")
    ann = _dict(_get(obj, "metadata", "annotations"))
    old_ann = _dict(_get(old, "metadata", "annotations"))
    new_class, old_class = spec.get("storageClassName"), old_spec.get("storageClassName")
    if (
        _BETA_CLASS in old_ann
        and old_class is None
        and new_class is not None
        and new_class == old_ann[_BETA_CLASS]
        and ann.get(_BETA_CLASS, old_ann[_BETA_CLASS]) == old_ann[_BETA_CLASS]
    ):
        new_c.pop("storageClassName", None)
    else:
        new_beta, old_beta = str(ann.get(_BETA_CLASS, "")), str(old_ann.get(_BETA_CLASS, ""))
        if new_beta != old_beta:
            field = f"metadata.annotations.{_BETA_CLASS}"
            out.append(invalid_cause(field, quote(new_beta), "field is immutable"))
        if (
            new_class is not None
            and old_class is None
            and old_ann.get(_BETA_CLASS, new_class) == new_class
        ):
            new_c.pop("storageClassName", None)
    requests = _dict(_dict(spec.get("resources")).get("requests"))
    old_requests = _dict(_dict(old_spec.get("resources")).get("requests"))
    new_requests = _dict(new_c.get("resources")).get("requests")
    if _get(obj, "status", "phase") == "Bound" and isinstance(new_requests, dict):
        new_requests["storage"] = old_requests.get("storage")
    new_c["volumeAttributesClassName"] = old_c.get("volumeAttributesClassName")
    if _pvc_semantic(new_c) != _pvc_semantic(old_c):
        diff = _pvc_spec_diff(old_c, new_c)
        out.append(_forbidden("spec", f"{_PVC_IMMUTABLE}\n{diff}"))
    new_size = quantity.value(requests.get("storage")) or 0
    old_size = quantity.value(old_requests.get("storage")) or 0
    capacity = quantity.value(_get(old, "status", "capacity", "storage")) or 0
    if new_size < old_size and new_size <= capacity:
        out.append(
            _forbidden(
                "spec.resources.requests.storage", "field can not be less than status.capacity"
            )
        )
    mode, old_mode = spec.get("volumeMode"), old_spec.get("volumeMode")
    if mode != old_mode:
        shown = "null" if mode is None else quote(str(mode))
        out.append(invalid_cause("volumeMode", shown, "field is immutable"))
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


_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
    "subdomain, which must consist of lower case alphanumeric characters, '-' or "
    "'.' and end with an alphanumeric character (e.g. '*.example.com', regex used "
    "for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]"
    "*[a-z0-9])?)*')"
)


def _host_errors(host: str) -> list[str]:
    """``IsWildcardDNS1123Subdomain`` for a host with a ``*``, else
    ``IsDNS1123Subdomain`` (Ingress rule and TLS hosts)."""
    if "*" not in host:
        return validate_name("subdomain", host)
    errs = ["must be no more than 253 characters"] if len(host) > 253 else []
    return errs + ([] if _WILDCARD_RE.match(host) else [_WILDCARD_MSG])


def _ingress_host(field: str, host: str) -> list[Cause]:
    out: list[Cause] = []
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        out.append(invalid_cause(field, quote(host), "must be a DNS name, not an IP address"))
    return out + [invalid_cause(field, quote(host), m) for m in _host_errors(host)]


def _ingress_tls(tls: Any, old_tls: Any) -> list[Cause]:
    """``validateIngressTLS``: each host a (wildcard) DNS-1123 subdomain, each
    ``secretName`` a Secret name, unless the stored Ingress already has an
    invalid one (``allowInvalidSecretName``)."""
    old_tls = old_tls if isinstance(old_tls, list) else []
    old_names = [str(_dict(t).get("secretName") or "") for t in old_tls]
    allow_invalid = any(validate_name("subdomain", n) for n in old_names if n)
    out: list[Cause] = []
    for i, item in enumerate(tls if isinstance(tls, list) else []):
        item = _dict(item)
        hosts = item.get("hosts")
        for j, host in enumerate(hosts if isinstance(hosts, list) else []):
            host = str(host or "")
            for msg in _host_errors(host):
                out.append(invalid_cause(f"spec.tls[{i}].hosts[{j}]", quote(host), msg))
        name = str(item.get("secretName") or "")
        for msg in validate_name("subdomain", name) if name and not allow_invalid else []:
            out.append(invalid_cause(f"spec.tls[{i}].secretName", quote(name), msg))
    return out


def _ingress(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[Cause]:
    """``ValidateIngressSpec`` (networking/v1): a rule or a default backend,
    backends, hosts, paths, TLS hosts and secret names, and the class name."""
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
    if spec.get("tls"):
        out.extend(_ingress_tls(spec.get("tls"), _dict(old_spec).get("tls")))
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        for msg in validate_name("subdomain", class_name):
            out.append(invalid_cause("spec.ingressClassName", quote(class_name), msg))
    return out


def _object_ref(field: str, ref: dict[str, Any]) -> list[Cause]:
    """``ValidateCrossVersionObjectReference``."""
    out: list[Cause] = []
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            out.append(required_cause(f"{field}.{key}"))
        for msg in _path_segment_errors(value) if value else []:
            out.append(invalid_cause(f"{field}.{key}", quote(value), msg))
    return out


def _hpa(spec: dict[str, Any], old_spec: dict[str, Any] | None) -> list[Cause]:
    """``validateHorizontalPodAutoscalerSpec``: replica bounds (1, or 0 for an
    HPA that already has 0: HPAScaleToZero is off in 1.32), the target, the
    metrics and the behavior. Validation runs on the internal type, whose
    metric and behavior fields are autoscaling/v2's (a v1 write is converted
    to v2 before it gets here), so the paths are v2's."""
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
    out.extend(_object_ref("spec.scaleTargetRef", _dict(spec.get("scaleTargetRef"))))
    out.extend(_hpa_metrics(spec.get("metrics"), min_replicas))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key in ("scaleUp", "scaleDown"):
            if isinstance(behavior.get(key), dict):
                out.extend(_scaling_rules(f"spec.behavior.{key}", behavior[key]))
    return out


_METRIC_SOURCES = {  # metric type -> its source field, in validateMetricSpec's order
    "Object": "object",
    "External": "external",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
}
_METRIC_TYPES = sorted(_METRIC_SOURCES)
_SELECT_POLICIES = ("Disabled", "Max", "Min")
_POLICY_TYPES = ("Percent", "Pods")


def _quantity_go(raw: Any) -> str:
    """``%#v`` of a ``resource.Quantity`` (``field.Invalid`` of a
    ``*resource.Quantity``: its ``String`` has a pointer receiver, so Go
    prints the struct), for a quantity ``ParseQuantity`` keeps as an int64
    (any non-positive target a client writes); ``s`` is the text when it
    was already canonical."""
    q = quantity.parse(str(raw).strip() if isinstance(raw, str) else str(raw))
    sign, digits, exponent = q.amount.as_tuple()
    n = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = exponent if isinstance(exponent, int) else 0
    return (
        f"resource.Quantity{{i:resource.int64Amount{{value:{n}, scale:{scale}}}, "
        f"d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{quote(q.s or '')}, "
        f"Format:{quote(q.format)}}}"
    )


def _hpa_metrics(metrics: Any, min_replicas: int | None) -> list[Cause]:
    """``validateMetrics``: each metric, and an Object or External metric for
    ``minReplicas: 0``."""
    out: list[Cause] = []
    types = set()
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        metric = _dict(metric)
        types.add(metric.get("type"))
        out.extend(_metric_spec(f"spec.metrics[{i}]", metric))
    if min_replicas == 0 and not types & {"Object", "External"}:
        out.append(
            _forbidden(
                "spec.metrics",
                "must specify at least one Object or External metric to support scaling to "
                "zero replicas",
            )
        )
    return out


def _metric_spec(field: str, metric: dict[str, Any]) -> list[Cause]:
    """``validateMetricSpec``: the type, its source (the first one given is
    validated) and no other source."""
    out: list[Cause] = []
    mtype = str(metric.get("type") or "")
    if not mtype:
        out.append(required_cause(f"{field}.type", "must specify a metric source type"))
    unsupported = not_supported_cause(f"{field}.type", quote(mtype), _METRIC_TYPES)
    if mtype not in _METRIC_SOURCES:
        out.append(unsupported)
    present = [f for f in _METRIC_SOURCES.values() if metric.get(f) is not None]
    if present:
        source = _dict(metric.get(present[0]))
        out.extend(_METRIC_VALIDATORS[present[0]](f"{field}.{present[0]}", source))
    expected = _METRIC_SOURCES.get(mtype, "")
    if not expected:
        out.append(unsupported)  # the switch's default case: reported twice, as kube does
    elif metric.get(expected) is None:
        detail = "must populate information for the given metric source"
        out.append(required_cause(f"{field}.{expected}", detail))
    if len(present) != 1:
        # Go ranges over a set here (random order): ours is the source order.
        for name in present:
            if name != expected:
                out.append(
                    _forbidden(f"{field}.{name}", "must populate the given metric source only")
                )
    return out


def _metric_identifier(field: str, source: dict[str, Any]) -> list[Cause]:
    """``validateMetricIdentifier`` of ``source.metric``."""
    name = str(_dict(source.get("metric")).get("name") or "")
    if not name:
        return [required_cause(f"{field}.metric.name", "must specify a metric name")]
    return [
        invalid_cause(f"{field}.metric.name", quote(name), msg)
        for msg in _path_segment_errors(name)
    ]


def _metric_target(field: str, target: dict[str, Any]) -> list[Cause]:
    """``validateMetricTarget``."""
    out: list[Cause] = []
    ttype = str(target.get("type") or "")
    if not ttype:
        out.append(required_cause(f"{field}.type", "must specify a metric target type"))
    if ttype not in ("Utilization", "Value", "AverageValue"):
        out.append(
            invalid_cause(
                f"{field}.type", quote(ttype), "must be either Utilization, Value, or AverageValue"
            )
        )
    for key in ("value", "averageValue"):
        raw = target.get(key)
        amount = quantity.value(raw) if raw is not None else None
        if amount is not None and amount <= 0:
            out.append(invalid_cause(f"{field}.{key}", _quantity_go(raw), "must be positive"))
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        out.append(
            invalid_cause(f"{field}.averageUtilization", str(utilization), "must be greater than 0")
        )
    return out


def _object_source(field: str, source: dict[str, Any]) -> list[Cause]:
    """``validateObjectSource``."""
    target = _dict(source.get("target"))
    out = _object_ref(f"{field}.describedObject", _dict(source.get("describedObject")))
    out += _metric_identifier(field, source) + _metric_target(f"{field}.target", target)
    if target.get("value") is None and target.get("averageValue") is None:
        detail = "must set either a target value or averageValue"
        out.append(required_cause(f"{field}.target.averageValue", detail))
    return out


def _external_source(field: str, source: dict[str, Any]) -> list[Cause]:
    """``validateExternalSource``."""
    target = _dict(source.get("target"))
    out = _metric_identifier(field, source) + _metric_target(f"{field}.target", target)
    return out + _one_target(
        field,
        target,
        ("value", "averageValue"),
        ("target value for metric", "per-pod target"),
        required="averageValue",
        forbidden="value",
    )


def _pods_source(field: str, source: dict[str, Any]) -> list[Cause]:
    """``validatePodsSource``."""
    target = _dict(source.get("target"))
    out = _metric_identifier(field, source) + _metric_target(f"{field}.target", target)
    if target.get("averageValue") is None:
        detail = "must specify a positive target averageValue"
        out.append(required_cause(f"{field}.target.averageValue", detail))
    return out


def _utilization_or_value(field: str, target: dict[str, Any]) -> list[Cause]:
    """A (container) resource metric's target: a utilization or an average value."""
    return _metric_target(f"{field}.target", target) + _one_target(
        field,
        target,
        ("averageValue", "averageUtilization"),
        ("target raw value", "target utilization"),
        required="averageUtilization",
        forbidden="averageValue",
    )


def _one_target(
    field: str,
    target: dict[str, Any],
    keys: tuple[str, str],
    words: tuple[str, str],
    *,
    required: str,
    forbidden: str,
) -> list[Cause]:
    """Exactly one of a target's two ``keys`` (described by ``words``), with
    kube's "must set either" / "may not set both" causes."""
    given = [target.get(k) is not None for k in keys]
    if not any(given):
        detail = f"must set either a {words[0]} or a {words[1]}"
        return [required_cause(f"{field}.target.{required}", detail)]
    if all(given):
        detail = f"may not set both a {words[0]} and a {words[1]}"
        return [_forbidden(f"{field}.target.{forbidden}", detail)]
    return []


def _resource_source(field: str, source: dict[str, Any]) -> list[Cause]:
    """``validateResourceSource``."""
    out: list[Cause] = []
    if not source.get("name"):
        out.append(required_cause(f"{field}.name", "must specify a resource name"))
    return out + _utilization_or_value(field, _dict(source.get("target")))


def _container_resource_source(field: str, source: dict[str, Any]) -> list[Cause]:
    """``validateContainerResourceSource`` (the resource name's
    ``ValidateContainerResourceName`` is not checked)."""
    out: list[Cause] = []
    if not source.get("name"):
        out.append(required_cause(f"{field}.name", "must specify a resource name"))
    container = str(source.get("container") or "")
    if not container:
        out.append(required_cause(f"{field}.container", "must specify a container"))
    for msg in validate_name("label", container) if container else []:
        out.append(invalid_cause(f"{field}.container", quote(container), msg))
    return out + _utilization_or_value(field, _dict(source.get("target")))


_METRIC_VALIDATORS: dict[str, Callable[[str, dict[str, Any]], list[Cause]]] = {
    "object": _object_source,
    "external": _external_source,
    "pods": _pods_source,
    "resource": _resource_source,
    "containerResource": _container_resource_source,
}


def _scaling_rules(field: str, rules: dict[str, Any]) -> list[Cause]:
    """``validateScalingRules`` and ``validateScalingPolicy`` (of rules the
    v2 defaults completed: ``policies`` is missing only if sent empty)."""
    out: list[Cause] = []
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        detail = "must be greater than or equal to zero"
        out.append(invalid_cause(f"{field}.stabilizationWindowSeconds", str(window), detail))
    if window is not None and window > 3600:
        detail = "must be less than or equal to 3600"
        out.append(invalid_cause(f"{field}.stabilizationWindowSeconds", str(window), detail))
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        out.append(not_supported_cause(f"{field}.selectPolicy", _shown(select), _SELECT_POLICIES))
    policies = rules.get("policies")
    policies = policies if isinstance(policies, list) else []
    if not policies:
        out.append(required_cause(f"{field}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        policy, path = _dict(policy), f"{field}.policies[{i}]"
        ptype = str(policy.get("type") or "")
        if ptype not in _POLICY_TYPES:
            out.append(not_supported_cause(f"{path}.type", quote(ptype), _POLICY_TYPES))
        value, period = _int(policy.get("value")) or 0, _int(policy.get("periodSeconds")) or 0
        if value <= 0:
            out.append(invalid_cause(f"{path}.value", str(value), "must be greater than zero"))
        if period <= 0:
            detail = "must be greater than zero"
            out.append(invalid_cause(f"{path}.periodSeconds", str(period), detail))
        if period > 1800:
            detail = "must be less than or equal to 1800"
            out.append(invalid_cause(f"{path}.periodSeconds", str(period), detail))
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
    ("", "PersistentVolumeClaim"): lambda o, old: _pvc(_dict(o.get("spec")))
    + (_pvc_update(o, old) if old is not None else []),
    ("networking.k8s.io", "Ingress"): lambda o, old: _ingress(_dict(o.get("spec")), _spec_of(old)),
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
