"""More of kube 1.32's ``ValidatePodSpec`` (``pkg/apis/core/validation``):
the pod-spec rules beyond containers, ports and volumes (``validation.py``).

``pod_spec_causes(path, spec)`` returns StatusCause dicts for the pod spec at
``path`` (``spec`` of a Pod, ``spec.template.spec`` of a workload), in the
order kube finds them:

- per container (regular, then init): ``terminationMessagePolicy``, ``env``
  (relaxed names, as the ``RelaxedEnvironmentVariableValidation`` gate, beta
  and on in 1.32, has them; one ``valueFrom`` source, not with ``value``; the
  sources' own checks), ``envFrom``, ``imagePullPolicy``, ``resources``
  (resource names, non-negative, requests within limits, extended resources
  and hugepages not overcommitted); lifecycle handlers and probes (one handler,
  its checks, non-negative numbers, ``successThreshold`` 1 for liveness and
  startup probes); a container ``restartPolicy`` (only ``Always``, only on init
  containers, which alone without it may have no probes or lifecycle);
  duplicate host ports; the container ``securityContext`` (ids, privilege
  escalation conflicts, seccomp and AppArmor profiles, Windows options), for
  ephemeral containers too;
- ``hostNetwork`` ports, ``restartPolicy``, ``dnsPolicy``, ``nodeSelector``,
  the pod ``securityContext`` (ids, ``shareProcessNamespace``, sysctls,
  ``fsGroupChangePolicy``, profiles, Windows options), ``affinity`` (node
  selector terms, pod (anti-)affinity terms and their label selectors and
  label keys, weights), ``dnsConfig``, ``readinessGates``, ``schedulingGates``,
  ``topologySpreadConstraints``, ``serviceAccountName``, ``nodeName``,
  ``activeDeadlineSeconds``, ``hostname``, ``subdomain``, ``tolerations``,
  ``hostAliases``, ``priorityClassName``, ``runtimeClassName``,
  ``preemptionPolicy``; on a Pod, images without surrounding whitespace.

Fields behind gates off in 1.32 (``procMount``, ``hostUsers``,
``supplementalGroupsPolicy``, ``seLinuxChangePolicy``) are dropped by kube
before validation, so not checked; privileged containers are allowed (a
cluster's ``--allow-privileged``).

Defaulting has run: ``restartPolicy``, ``dnsPolicy``, ``imagePullPolicy``,
``terminationMessagePolicy``, probe thresholds and ``httpGet`` path and
scheme arrive filled. Go ranges over resource maps in random order; here
they are checked in the order given.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from pycontroller.testing.apiserver.gofmt import quote
from pycontroller.testing.apiserver.gofmt import value_text as _shown
from pycontroller.testing.apiserver.registry.names import (
    config_key_errors,
    label_value_errors,
    qualified_name_errors,
    regex_error,
    validate_name,
)
from pycontroller.testing.apiserver.schema import quantity
from pycontroller.testing.apiserver.schema.validation import as_int as _int
from pycontroller.testing.apiserver.schema.validation import port_name_errors
from pycontroller.testing.apiserver.status import forbidden_cause as _forbidden
from pycontroller.testing.apiserver.status import invalid_cause
from pycontroller.testing.apiserver.status import required_cause as _required

__all__ = ["pod_spec_causes"]

Cause = dict[str, Any]

_MAX_INT32 = 2**31 - 1
_NEGATIVE = "must be greater than or equal to 0"
_FORBIDDEN_INIT = "may not be set for init containers without restartPolicy=Always"


# -- causes, as field.Error prints them ------------------------------------


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return invalid_cause(field, _shown(value), detail)


def _duplicate(field: str, value: Any) -> Cause:
    return {
        "reason": "FieldValueDuplicate",
        "message": f"Duplicate value: {_shown(value)}",
        "field": field,
    }


def _not_supported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    values = ", ".join(quote(v) for v in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {_shown(value)}: supported values: {values}",
        "field": field,
    }


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return [
        (i, v)
        for i, v in enumerate(value if isinstance(value, list) else [])
        if isinstance(v, dict)
    ]


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _each(field: str, value: str, msgs: list[str]) -> list[Cause]:
    return [_invalid(field, value, m) for m in msgs]


def _subdomain(field: str, value: str, prefix: bool = False) -> list[Cause]:
    """``NameIsDNSSubdomain(value, prefix)``: a generated-name prefix may end in '-'."""
    checked = value[:-1] + "a" if prefix and value.endswith("-") else value
    return _each(field, value, validate_name("subdomain", checked))


# -- apimachinery's string checks ------------------------------------------

_RELAXED_ENV_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters other "
    "than '='"
)
_HTTP_HEADER_FMT = "[-A-Za-z0-9]+"
_HTTP_HEADER_RE = re.compile(_HTTP_HEADER_FMT)
_DOTTED_QUAD = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){3}")


def _relaxed_env_name_errors(name: str) -> list[str]:
    """``IsRelaxedEnvVarName`` (a non-empty name)."""
    if any(ord(ch) > 0x7E or ord(ch) < 0x20 or ch == "=" for ch in name):
        return [_RELAXED_ENV_MSG]
    return []


def _is_ip(value: str) -> bool:
    """``netutils.ParseIPSloppy`` accepts it (IPv4 parts may have leading zeros)."""
    if "%" in value:
        return False
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    return bool(_DOTTED_QUAD.fullmatch(value)) and all(int(p) <= 255 for p in value.split("."))


def _ip(field: str, value: str) -> list[Cause]:
    if _is_ip(value):
        return []
    return [_invalid(field, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


def _go_strings(values: list[Any]) -> str:
    """``%#v`` of a ``[]string``."""
    return "[]string{" + ", ".join(quote(str(v)) for v in values) + "}"


def _inclusive_range(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


# -- env ---------------------------------------------------------------------

_ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
# ConvertDownwardAPIFieldLabel's labels (1.32).
_DOWNWARD_LABELS = frozenset(
    {
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    }
)
_ENV_RESOURCES = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_HUGEPAGES_DOWNWARD = ("limits.hugepages-", "requests.hugepages-")
_SIZE_DIVISORS = frozenset("1 1k 1M 1G 1T 1P 1E 1Ki 1Mi 1Gi 1Ti 1Pi 1Ei".split())
_SIZE_DIVISORS_TEXT = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
# validateContainerResourceDivisor's cases (limits.X and requests.X alike).
_DIVISOR_KINDS = {"cpu": "cpu", "memory": "memory", "ephemeral-storage": "local ephemeral storage"}


def _split_subscript(path: str) -> tuple[str, str] | None:
    """``fieldpath.SplitMaybeSubscriptedPath``."""
    if not path.endswith("']"):
        return None
    parts = path[:-2].split("['", 1)
    if len(parts) < 2 or not parts[0]:
        return None
    return parts[0], parts[1]


def _field_ref(fp: str, ref: dict[str, Any]) -> list[Cause]:
    """``validateObjectFieldSelector`` with the env var paths."""
    api_version = _str(ref.get("apiVersion"))
    field_path = _str(ref.get("fieldPath"))
    if not api_version:
        return [_required(f"{fp}.apiVersion")]
    if not field_path:
        return [_required(f"{fp}.fieldPath")]
    split = _split_subscript(field_path)
    err = ""
    if api_version != "v1":
        err = f"unsupported pod version: {api_version}"
    elif split is not None and split[0] not in ("metadata.annotations", "metadata.labels"):
        err = f"field label does not support subscript: {field_path}"
    elif split is None and field_path not in _DOWNWARD_LABELS and field_path != "spec.host":
        err = f"field label not supported: {field_path}"
    if err:
        return [_invalid(f"{fp}.fieldPath", field_path, f"error converting fieldPath: {err}")]
    if split is not None:
        path, subscript = split
        key = subscript.lower() if path == "metadata.annotations" else subscript
        return _each(fp, key, qualified_name_errors(key))
    path = "spec.nodeName" if field_path == "spec.host" else field_path
    if path not in _ENV_FIELD_PATHS:
        return [_not_supported(f"{fp}.fieldPath", path, _ENV_FIELD_PATHS)]
    return []


def _resource_field_ref(fp: str, ref: dict[str, Any]) -> list[Cause]:
    """``validateContainerResourceFieldSelector`` (env: no container name needed)."""
    out: list[Cause] = []
    resource = _str(ref.get("resource"))
    if not resource:
        out.append(_required(f"{fp}.resource"))
    elif resource not in _ENV_RESOURCES and not resource.startswith(_HUGEPAGES_DOWNWARD):
        out.append(_not_supported(f"{fp}.resource", resource, _ENV_RESOURCES))
    divisor = ref.get("divisor")
    amount = quantity.value(divisor) if divisor is not None else None
    if not amount:
        return out
    shown = quantity.canonical(divisor)
    prefix, _, rest = resource.partition(".")
    kind = _DIVISOR_KINDS.get(rest, "") if prefix in ("limits", "requests") else ""
    if kind == "cpu" and shown not in ("1m", "1"):
        detail = "only divisor's values 1m and 1 are supported with the cpu resource"
        out.append(_invalid(f"{fp}.divisor", resource, detail))
    elif kind and kind != "cpu" and shown not in _SIZE_DIVISORS:
        detail = (
            f"only divisor's values {_SIZE_DIVISORS_TEXT} are supported with the {kind} resource"
        )
        out.append(_invalid(f"{fp}.divisor", resource, detail))
    if resource.startswith(_HUGEPAGES_DOWNWARD) and shown not in _SIZE_DIVISORS:
        detail = (
            f"only divisor's values {_SIZE_DIVISORS_TEXT} are supported with the hugepages resource"
        )
        out.append(_invalid(f"{fp}.divisor", resource, detail))
    return out


def _key_selector(fp: str, sel: dict[str, Any]) -> list[Cause]:
    """``validateConfigMapKeySelector`` / ``validateSecretKeySelector``."""
    name = _str(sel.get("name"))
    out = _subdomain(f"{fp}.name", name)
    key = _str(sel.get("key"))
    if not key:
        out.append(_required(f"{fp}.key"))
    else:
        out.extend(_each(f"{fp}.key", key, config_key_errors(key)))
    return out


def _env(path: str, env: Any) -> list[Cause]:
    """``ValidateEnv`` with relaxed names."""
    out: list[Cause] = []
    for i, ev in _dicts(env):
        ip = f"{path}[{i}]"
        name = _str(ev.get("name"))
        if not name:
            out.append(_required(f"{ip}.name"))
        else:
            out.extend(_each(f"{ip}.name", name, _relaxed_env_name_errors(name)))
        source = _dict(ev.get("valueFrom"))
        if source is None:
            continue
        fp = f"{ip}.valueFrom"
        sources = 0
        checks: tuple[tuple[str, Callable[[str, dict[str, Any]], list[Cause]]], ...] = (
            ("fieldRef", _field_ref),
            ("resourceFieldRef", _resource_field_ref),
            ("configMapKeyRef", _key_selector),
            ("secretKeyRef", _key_selector),
        )
        for key, check in checks:
            ref = _dict(source.get(key))
            if ref is not None:
                sources += 1
                out.extend(check(f"{fp}.{key}", ref))
        if sources == 0:
            out.append(
                _invalid(
                    fp,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                    "`secretKeyRef`",
                )
            )
        elif _str(ev.get("value")):
            out.append(_invalid(fp, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            out.append(_invalid(fp, "", "may not have more than one field specified at a time"))
    return out


def _env_from(path: str, env_from: Any) -> list[Cause]:
    """``ValidateEnvFrom`` with relaxed prefixes."""
    out: list[Cause] = []
    for i, ev in _dicts(env_from):
        ip = f"{path}[{i}]"
        prefix = _str(ev.get("prefix"))
        if prefix:
            out.extend(_each(f"{ip}.prefix", prefix, _relaxed_env_name_errors(prefix)))
        sources = 0
        for key in ("configMapRef", "secretRef"):
            ref = _dict(ev.get(key))
            if ref is None:
                continue
            sources += 1
            name = _str(ref.get("name"))
            if not name:
                out.append(_required(f"{ip}.{key}.name"))
            else:
                out.extend(_subdomain(f"{ip}.{key}.name", name, prefix=True))
        if sources == 0:
            out.append(_invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif sources > 1:
            out.append(_invalid(path, "", "may not have more than one field specified at a time"))
    return out


# -- resources ---------------------------------------------------------------

_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_extended(name: str) -> bool:
    if _is_native(name) or name.startswith("requests."):
        return False
    return not qualified_name_errors("requests." + name)


def _resource_name(field: str, name: str) -> list[Cause]:
    """``validateContainerResourceName``."""
    out = _each(field, name, qualified_name_errors(name))
    standard = name in _STANDARD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))
    if not out and "/" not in name and not standard:
        out.append(_invalid(field, name, "must be a standard resource type or fully qualified"))
    if "/" not in name:
        if not (name in _CONTAINER_RESOURCES or _is_hugepages(name)):
            out.append(_invalid(field, name, "must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        out.append(_invalid(field, name, "doesn't follow extended resource name standard"))
    return out


def _resources(path: str, resources: Any) -> list[Cause]:
    """``ValidateResourceRequirements`` (without the integer and hugepage-size
    checks: kube prints those values as Go structs)."""
    res = _dict(resources) or {}
    limits = _dict(res.get("limits")) or {}
    requests = _dict(res.get("requests")) or {}
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    out: list[Cause] = []
    cpu_or_memory = hugepages = False
    for name, raw in limits.items():
        fp = f"{lim_path}[{name}]"
        out.extend(_resource_name(fp, name))
        amount = quantity.value(raw)
        if amount is not None and amount < 0:
            out.append(_invalid(fp, quantity.canonical(raw), _NEGATIVE))
        hugepages = hugepages or _is_hugepages(name)
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    for name, raw in requests.items():
        fp = f"{req_path}[{name}]"
        out.extend(_resource_name(fp, name))
        amount = quantity.value(raw)
        shown = quantity.canonical(raw) if amount is not None else ""
        if amount is not None and amount < 0:
            out.append(_invalid(fp, shown, _NEGATIVE))
        overcommit = _is_native(name) and not _is_hugepages(name)
        if name in limits:
            limit = quantity.value(limits[name])
            if amount is not None and limit is not None:
                limit_shown = quantity.canonical(limits[name])
                if amount != limit and not overcommit:
                    out.append(
                        _invalid(req_path, shown, f"must be equal to {name} limit of {limit_shown}")
                    )
                elif amount > limit:
                    out.append(
                        _invalid(
                            req_path,
                            shown,
                            f"must be less than or equal to {name} limit of {limit_shown}",
                        )
                    )
        elif not overcommit:
            out.append(_required(lim_path, "Limit must be set for non overcommitable resources"))
        hugepages = hugepages or _is_hugepages(name)
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    if hugepages and not cpu_or_memory:
        out.append(_forbidden(path, "HugePages require cpu or memory"))
    return out


# -- handlers and probes -----------------------------------------------------


def _port_num_or_name(field: str, port: Any) -> list[Cause]:
    """``ValidatePortNumOrName``."""
    if isinstance(port, str):
        return _each(field, port, port_name_errors(port))
    n = _int(port) or 0
    if not 1 <= n <= 65535:
        return [_invalid(field, n, _inclusive_range(1, 65535))]
    return []


def _handler(
    path: str, handler: dict[str, Any], kinds: tuple[str, ...], grace: int | None
) -> list[Cause]:
    """``validateHandler``: exactly one of ``kinds``, and its own checks."""
    out: list[Cause] = []
    count = 0
    for kind in kinds:
        action = _dict(handler.get(kind))
        if action is None:
            continue
        hp = f"{path}.{kind}"
        if count:
            out.append(_forbidden(hp, "may not specify more than 1 handler type"))
            continue
        count += 1
        if kind == "exec":
            if not action.get("command"):
                out.append(_required(f"{hp}.command"))
        elif kind == "httpGet":
            if not _str(action.get("path")):
                out.append(_required(f"{hp}.path"))
            out.extend(_port_num_or_name(f"{hp}.port", action.get("port")))
            scheme = _str(action.get("scheme"))
            if scheme not in ("HTTP", "HTTPS"):
                out.append(_not_supported(f"{hp}.scheme", scheme, ("HTTP", "HTTPS")))
            for _, header in _dicts(action.get("httpHeaders")):
                name = _str(header.get("name"))
                if not _HTTP_HEADER_RE.fullmatch(name):
                    msg = regex_error(
                        "a valid HTTP header must consist of alphanumeric characters or '-'",
                        _HTTP_HEADER_FMT,
                        "X-Header-Name",
                    )
                    out.append(_invalid(f"{hp}.httpHeaders", name, msg))
        elif kind == "tcpSocket":
            out.extend(_port_num_or_name(f"{hp}.port", action.get("port")))
        elif kind == "grpc":
            out.extend(_port_num_or_name(f"{hp}.port", _int(action.get("port")) or 0))
        elif kind == "sleep" and grace is not None:
            seconds = _int(action.get("seconds")) or 0
            if seconds <= 0 or seconds > grace:
                out.append(
                    _invalid(
                        hp,
                        seconds,
                        "must be greater than 0 and less than terminationGracePeriodSeconds "
                        f"({grace})",
                    )
                )
    if not count:
        out.append(_required(path, "must specify a handler type"))
    return out


_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")


def _lifecycle(path: str, lifecycle: dict[str, Any], grace: int | None) -> list[Cause]:
    out: list[Cause] = []
    for hook in ("postStart", "preStop"):
        handler = _dict(lifecycle.get(hook))
        if handler is not None:
            out.extend(_handler(f"{path}.{hook}", handler, _LIFECYCLE_HANDLERS, grace))
    return out


def _probe(path: str, probe: dict[str, Any], kind: str, grace: int | None) -> list[Cause]:
    """``validateLivenessProbe`` / ``validateReadinessProbe`` / ``validateStartupProbe``."""
    out = _handler(path, probe, _PROBE_HANDLERS, grace)
    for key in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        n = _int(probe.get(key)) or 0
        if n < 0:
            out.append(_invalid(f"{path}.{key}", n, _NEGATIVE))
    tgps = _int(probe.get("terminationGracePeriodSeconds"))
    if tgps is not None and tgps <= 0:
        out.append(
            _invalid(f"{path}.terminationGracePeriodSeconds", tgps, "must be greater than 0")
        )
    if kind == "readinessProbe":
        if tgps is not None:
            out.append(
                _invalid(
                    f"{path}.terminationGracePeriodSeconds",
                    tgps,
                    "must not be set for readinessProbes",
                )
            )
    else:
        success = _int(probe.get("successThreshold")) or 0
        if success != 1:
            out.append(_invalid(f"{path}.successThreshold", success, "must be 1"))
    return out


def _probes_and_lifecycle(cp: str, c: dict[str, Any], grace: int | None) -> list[Cause]:
    out: list[Cause] = []
    lifecycle = _dict(c.get("lifecycle"))
    if lifecycle is not None:
        out.extend(_lifecycle(f"{cp}.lifecycle", lifecycle, grace))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _dict(c.get(kind))
        if probe is not None:
            out.extend(_probe(f"{cp}.{kind}", probe, kind, grace))
    return out


# -- security contexts -------------------------------------------------------

_ID_RANGE = _inclusive_range(0, _MAX_INT32)
_PROFILE_TYPES = ("Localhost", "RuntimeDefault", "Unconfined")  # seccomp and AppArmor
_FS_GROUP_CHANGE_POLICIES = ("Always", "OnRootMismatch")
_MAX_APPARMOR_PROFILE = 4095  # PATH_MAX - 1
_SYSCTL_SEGMENT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_FMT = rf"({_SYSCTL_SEGMENT}[\./])*{_SYSCTL_SEGMENT}"
_SYSCTL_RE = re.compile(_SYSCTL_FMT)
_SYSCTL_MSG = f"must have at most 253 characters and match regex ^{_SYSCTL_FMT}$"
_CTRL_RE = re.compile(r"[\x00-\x1f\x7f]")
_NETBIOS_RE = re.compile(r'[^\\/:*?"<>|.][^\\/:*?"<>|]{0,14}')
_WIN_LABEL = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
_WIN_DOMAIN_RE = re.compile(rf"{_WIN_LABEL}(?:\.{_WIN_LABEL})*")
_WIN_USER_CHARS_RE = re.compile(r'["/\\:;|=,+*?<>@\[\]]')
_WIN_DOTS_SPACES_RE = re.compile(r"[. ]+")
# core.SecurityContext's fields in order, as %#v prints them (pointers).
_SECURITY_CONTEXT_FIELDS = (
    ("Capabilities", "capabilities", "core.Capabilities"),
    ("Privileged", "privileged", "bool"),
    ("SELinuxOptions", "seLinuxOptions", "core.SELinuxOptions"),
    ("WindowsOptions", "windowsOptions", "core.WindowsSecurityContextOptions"),
    ("RunAsUser", "runAsUser", "int64"),
    ("RunAsGroup", "runAsGroup", "int64"),
    ("RunAsNonRoot", "runAsNonRoot", "bool"),
    ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "bool"),
    ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "bool"),
    ("ProcMount", "", "core.ProcMountType"),  # dropped: the ProcMountType gate is off in 1.32
    ("SeccompProfile", "seccompProfile", "core.SeccompProfile"),
    ("AppArmorProfile", "appArmorProfile", "core.AppArmorProfile"),
)


def _go_pointer(go_type: str, value: Any) -> str:
    """A pointer field in ``%#v`` (Go prints the address; a fixed one here)."""
    return f"(*{go_type})(nil)" if value is None else f"(*{go_type})(0xc000000000)"


def _go_security_context(ctx: dict[str, Any]) -> str:
    fields = (
        f"{name}:{_go_pointer(go_type, ctx.get(key) if key else None)}"
        for name, key, go_type in _SECURITY_CONTEXT_FIELDS
    )
    return "core.SecurityContext{" + ", ".join(fields) + "}"


def _ids(path: str, ctx: dict[str, Any], keys: tuple[str, ...]) -> list[Cause]:
    """``IsValidUserID`` / ``IsValidGroupID``."""
    out: list[Cause] = []
    for key in keys:
        n = _int(ctx.get(key))
        if n is not None and not 0 <= n <= _MAX_INT32:
            out.append(_invalid(f"{path}.{key}", n, _ID_RANGE))
    return out


def _local_descending_path(field: str, value: str) -> list[Cause]:
    """``validateLocalDescendingPath``."""
    out: list[Cause] = []
    if value.startswith("/"):
        out.append(_invalid(field, value, "must be a relative path"))
    if ".." in value.split("/"):
        out.append(_invalid(field, value, "must not contain '..'"))
    return out


def _seccomp_profile(path: str, profile: Any) -> list[Cause]:
    """``validateSeccompProfileField``."""
    sp = _dict(profile)
    if sp is None:
        return []
    out: list[Cause] = []
    kind = _str(sp.get("type"))
    if not kind:
        out.append(_required(f"{path}.type", "type is required when seccompProfile is set"))
    elif kind not in _PROFILE_TYPES:
        out.append(_not_supported(f"{path}.type", kind, _PROFILE_TYPES))
    local = sp.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            detail = "must be set when seccomp type is Localhost"
            out.append(_required(f"{path}.localhostProfile", detail))
        else:
            out.extend(_local_descending_path(f"{path}.localhostProfile", _str(local)))
    elif local is not None:
        shown = (
            f"core.SeccompProfile{{Type:{quote(kind)}, "
            f"LocalhostProfile:{_go_pointer('string', local)}}}"
        )
        detail = "can only be set when seccomp type is Localhost"
        out.append(_c_raw(f"{path}.localhostProfile", shown, detail))
    return out


def _apparmor_profile(path: str, profile: Any) -> list[Cause]:
    """``ValidateAppArmorProfileField``."""
    ap = _dict(profile)
    if ap is None:
        return []
    kind = _str(ap.get("type"))
    local = ap.get("localhostProfile")
    field = f"{path}.localhostProfile"
    out: list[Cause] = []
    if kind == "Localhost":
        required = "must be set when AppArmor type is Localhost"
        if local is None:
            return [_required(field, required)]
        name = _str(local)
        if name.strip() != name:
            out.append(_invalid(field, name, "must not be padded with whitespace"))
        elif not name:
            out.append(_required(field, required))
        if len(name.encode()) > _MAX_APPARMOR_PROFILE:
            out.append(
                {
                    "reason": "FieldValueTooLong",
                    "message": f"Too long: may not be more than {_MAX_APPARMOR_PROFILE} bytes",
                    "field": field,
                }
            )
    elif kind in _PROFILE_TYPES:
        if local is not None:
            detail = "can only be set when AppArmor type is Localhost"
            out.append(_invalid(field, _str(local), detail))
    elif not kind:
        out.append(_required(f"{path}.type", "type is required when appArmorProfile is set"))
    else:
        out.append(_not_supported(f"{path}.type", kind, _PROFILE_TYPES))
    return out


def _run_as_user_name(field: str, name: str) -> list[Cause]:
    """``validateWindowsSecurityContextOptions``' ``runAsUserName``."""
    if not name:
        return [_invalid(field, name, "runAsUserName cannot be an empty string")]
    if _CTRL_RE.search(name):
        return [_invalid(field, name, "runAsUserName cannot contain control characters")]
    parts = name.split("\\")
    if len(parts) > 2:
        return [_invalid(field, name, "runAsUserName cannot contain more than one backslash")]
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    msgs: list[str] = []
    if len(domain.encode()) >= 256:
        msgs.append("runAsUserName's Domain length must be under 256 characters")
    if len(parts) == 2 and not (_NETBIOS_RE.fullmatch(domain) or _WIN_DOMAIN_RE.fullmatch(domain)):
        msgs.append("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
    if not user:
        msgs.append("runAsUserName's User cannot be empty")
    elif len(user.encode()) > 104:
        msgs.append("runAsUserName's User length must not be longer than 104 characters")
    if _WIN_DOTS_SPACES_RE.fullmatch(user):
        msgs.append("runAsUserName's User cannot contain only periods or spaces")
    if _WIN_USER_CHARS_RE.search(user):
        msgs.append(
            "runAsUserName's User cannot contain the following characters: " '"/\\:;|=,+*?<>@[]'
        )
    return _each(field, name, msgs)


def _windows_options(path: str, options: Any) -> list[Cause]:
    """``validateWindowsSecurityContextOptions``."""
    opts = _dict(options)
    if opts is None:
        return []
    out: list[Cause] = []
    spec_name = opts.get("gmsaCredentialSpecName")
    if isinstance(spec_name, str):
        out.extend(_subdomain(f"{path}.gmsaCredentialSpecName", spec_name))
    spec = opts.get("gmsaCredentialSpec")
    if isinstance(spec, str):
        field = f"{path}.gmsaCredentialSpec"
        if not spec:
            out.append(_invalid(field, spec, "gmsaCredentialSpec cannot be an empty string"))
        elif len(spec.encode()) > 64 * 1024:
            out.append(_invalid(field, spec, "gmsaCredentialSpec size must be under 64 KiB"))
    user_name = opts.get("runAsUserName")
    if isinstance(user_name, str):
        out.extend(_run_as_user_name(f"{path}.runAsUserName", user_name))
    return out


def _container_security_context(path: str, sc: Any) -> list[Cause]:
    """``ValidateSecurityContext``, privileged containers allowed (kube-apiserver
    run with ``--allow-privileged``, as clusters are); ``procMount`` is not
    checked: the ProcMountType gate is off in 1.32 and kube drops the field."""
    ctx = _dict(sc)
    if ctx is None:
        return []
    out = _ids(path, ctx, ("runAsUser", "runAsGroup"))
    out.extend(_seccomp_profile(f"{path}.seccompProfile", ctx.get("seccompProfile")))
    if ctx.get("allowPrivilegeEscalation") is False:
        if ctx.get("privileged") is True:
            detail = "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
            out.append(_c_raw(path, _go_security_context(ctx), detail))
        for cap in (_dict(ctx.get("capabilities")) or {}).get("add") or []:
            if cap == "CAP_SYS_ADMIN":
                detail = (
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                    "CAP_SYS_ADMIN"
                )
                out.append(_c_raw(path, _go_security_context(ctx), detail))
    out.extend(_windows_options(f"{path}.windowsOptions", ctx.get("windowsOptions")))
    out.extend(_apparmor_profile(f"{path}.appArmorProfile", ctx.get("appArmorProfile")))
    return out


def _sysctl_namespace(name: str) -> str:
    """``utilsysctl.GetNamespace``'s namespace ("net", "ipc" or "")."""
    first = re.search(r"[./]", name)
    if first is not None and first.group() == "/":
        name = name.translate(str.maketrans("./", "/."))
    name = name.split("*", 1)[0]
    if name == "kernel.sem" or name.startswith(("kernel.shm", "kernel.msg", "fs.mqueue.")):
        return "ipc"
    return "net" if name.startswith("net.") else ""


def _sysctls(path: str, spec: dict[str, Any], sysctls: Any) -> list[Cause]:
    """``validateSysctls``, namespaced sysctls refused with host namespaces (as
    on create)."""
    out: list[Cause] = []
    seen: set[str] = set()
    for i, sysctl in _dicts(sysctls):
        field = f"{path}[{i}].name"
        name = _str(sysctl.get("name"))
        if not name:
            out.append(_required(field))
        elif len(name) > 253 or not _SYSCTL_RE.fullmatch(name):
            out.append(_invalid(field, name, _SYSCTL_MSG))
        elif name in seen:
            out.append(_duplicate(field, name))
        namespace = _sysctl_namespace(name)
        if spec.get("hostNetwork") is True and namespace == "net":
            out.append(_invalid(field, name, "may not be specified when 'hostNetwork' is true"))
        elif spec.get("hostIPC") is True and namespace == "ipc":
            out.append(_invalid(field, name, "may not be specified when 'hostIPC' is true"))
        seen.add(name)
    return out


def _security_context(path: str, spec: dict[str, Any]) -> list[Cause]:
    """``validatePodSpecSecurityContext`` (``supplementalGroupsPolicy`` and
    ``seLinuxChangePolicy`` have alpha gates, off in 1.32: kube drops them)."""
    ctx = _dict(spec.get("securityContext")) or {}
    out = _ids(path, ctx, ("fsGroup", "runAsUser", "runAsGroup"))
    for g, gid in enumerate(ctx.get("supplementalGroups") or []):
        n = _int(gid)
        if n is not None and not 0 <= n <= _MAX_INT32:
            out.append(_invalid(f"{path}.supplementalGroups[{g}]", n, _ID_RANGE))
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID") is True:
        detail = "ShareProcessNamespace and HostPID cannot both be enabled"
        out.append(_invalid(f"{path}.shareProcessNamespace", True, detail))
    if ctx.get("sysctls"):
        out.extend(_sysctls(f"{path}.sysctls", spec, ctx.get("sysctls")))
    policy = ctx.get("fsGroupChangePolicy")
    if isinstance(policy, str) and policy not in _FS_GROUP_CHANGE_POLICIES:
        out.append(_not_supported(f"{path}.fsGroupChangePolicy", policy, _FS_GROUP_CHANGE_POLICIES))
    out.extend(_seccomp_profile(f"{path}.seccompProfile", ctx.get("seccompProfile")))
    out.extend(_windows_options(f"{path}.windowsOptions", ctx.get("windowsOptions")))
    out.extend(_apparmor_profile(f"{path}.appArmorProfile", ctx.get("appArmorProfile")))
    return out


# -- containers --------------------------------------------------------------

_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")


def _container_common(cp: str, c: dict[str, Any]) -> list[Cause]:
    """``validateContainerCommon``'s checks not in ``validation.py``."""
    out: list[Cause] = []
    policy = _str(c.get("terminationMessagePolicy"))
    if not policy:
        out.append(_required(f"{cp}.terminationMessagePolicy"))
    elif policy not in _MESSAGE_POLICIES:
        out.append(_not_supported(f"{cp}.terminationMessagePolicy", policy, _MESSAGE_POLICIES))
    out.extend(_env(f"{cp}.env", c.get("env")))
    out.extend(_env_from(f"{cp}.envFrom", c.get("envFrom")))
    pull = _str(c.get("imagePullPolicy"))
    if not pull:
        out.append(_required(f"{cp}.imagePullPolicy"))
    elif pull not in _PULL_POLICIES:
        out.append(_not_supported(f"{cp}.imagePullPolicy", pull, _PULL_POLICIES))
    out.extend(_resources(f"{cp}.resources", c.get("resources")))
    out.extend(_container_security_context(f"{cp}.securityContext", c.get("securityContext")))
    return out


def _host_port_conflicts(path: str, containers: list[tuple[int, dict[str, Any]]]) -> list[Cause]:
    """``AccumulateUniqueHostPorts``."""
    out: list[Cause] = []
    seen: set[str] = set()
    for ci, c in containers:
        for pi, port in _dicts(c.get("ports")):
            host_port = _int(port.get("hostPort")) or 0
            if not host_port:
                continue
            key = f"{_str(port.get('protocol'))}/{_str(port.get('hostIP'))}/{host_port}"
            if key in seen:
                out.append(_duplicate(f"{path}[{ci}].ports[{pi}].hostPort", key))
            seen.add(key)
    return out


def _containers(path: str, containers: Any, grace: int | None) -> list[Cause]:
    out: list[Cause] = []
    listed = _dicts(containers)
    for i, c in listed:
        cp = f"{path}[{i}]"
        out.extend(_container_common(cp, c))
        out.extend(_probes_and_lifecycle(cp, c, grace))
        if c.get("restartPolicy") is not None:
            out.append(_forbidden(f"{cp}.restartPolicy", "may not be set for non-init containers"))
    out.extend(_host_port_conflicts(path, listed))
    return out


def _init_containers(path: str, containers: Any, grace: int | None) -> list[Cause]:
    out: list[Cause] = []
    for i, c in _dicts(containers):
        cp = f"{path}[{i}]"
        out.extend(_container_common(cp, c))
        policy = c.get("restartPolicy")
        if policy is not None and policy != "Always":
            out.append(_not_supported(f"{cp}.restartPolicy", _str(policy), ("Always",)))
        # kube checks each init container alone, as the list's first.
        out.extend(_host_port_conflicts(path, [(0, c)]))
        if policy == "Always":
            out.extend(_probes_and_lifecycle(cp, c, grace))
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if c.get(key) is not None:
                    out.append(_forbidden(f"{cp}.{key}", _FORBIDDEN_INIT))
    return out


# -- affinity and topology spread --------------------------------------------

_SELECTOR_VALUES = "must be specified when `operator` is 'In' or 'NotIn'"
_SELECTOR_NO_VALUES = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
_BAD_OPERATOR = "not a valid selector operator"
_WEIGHT = "must be in the range 1-100"
_NO_SELECTOR = "must not be specified when labelSelector is not set"
_SCHEDULE_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


def _label_name(field: str, key: str) -> list[Cause]:
    """``ValidateLabelName``."""
    return _each(field, key, qualified_name_errors(key))


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _label_selector(path: str, selector: Any) -> list[Cause]:
    """``ValidateLabelSelector`` (label values checked, as on create)."""
    sel = _dict(selector)
    if sel is None:
        return []
    out = _node_selector(f"{path}.matchLabels", sel.get("matchLabels"))
    for i, expr in _dicts(sel.get("matchExpressions")):
        ep = f"{path}.matchExpressions[{i}]"
        op = _str(expr.get("operator"))
        values = _strings(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                out.append(_required(f"{ep}.values", _SELECTOR_VALUES))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                out.append(_forbidden(f"{ep}.values", _SELECTOR_NO_VALUES))
        else:
            out.append(_invalid(f"{ep}.operator", op, _BAD_OPERATOR))
        out.extend(_label_name(f"{ep}.key", _str(expr.get("key"))))
        for vi, value in enumerate(values):
            out.extend(_each(f"{ep}.values[{vi}]", value, label_value_errors(value)))
    return out


def _node_selector_requirement(path: str, req: dict[str, Any]) -> list[Cause]:
    """``ValidateNodeSelectorRequirement`` (values unchecked until 1.33)."""
    op = _str(req.get("operator"))
    values = _strings(req.get("values"))
    out: list[Cause] = []
    if op in ("In", "NotIn"):
        if not values:
            out.append(_required(f"{path}.values", _SELECTOR_VALUES))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            out.append(_forbidden(f"{path}.values", _SELECTOR_NO_VALUES))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            out.append(_required(f"{path}.values", detail))
    else:
        out.append(_invalid(f"{path}.operator", op, _BAD_OPERATOR))
    return out + _label_name(f"{path}.key", _str(req.get("key")))


def _node_field_requirement(path: str, req: dict[str, Any]) -> list[Cause]:
    """``ValidateNodeFieldSelectorRequirement``: ``metadata.name`` only."""
    op = _str(req.get("operator"))
    values = _strings(req.get("values"))
    out: list[Cause] = []
    if op not in ("In", "NotIn"):
        out.append(_invalid(f"{path}.operator", op, _BAD_OPERATOR))
    elif len(values) != 1:
        detail = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
        out.append(_required(f"{path}.values", detail))
    key = _str(req.get("key"))
    if key != "metadata.name":
        return [*out, _invalid(f"{path}.key", key, "not a valid field selector key")]
    for i, value in enumerate(values):
        out.extend(_subdomain(f"{path}.values[{i}]", value))
    return out


def _node_selector_term(path: str, term: dict[str, Any]) -> list[Cause]:
    """``ValidateNodeSelectorTerm``."""
    out: list[Cause] = []
    for j, req in _dicts(term.get("matchExpressions")):
        out.extend(_node_selector_requirement(f"{path}.matchExpressions[{j}]", req))
    for j, req in _dicts(term.get("matchFields")):
        out.extend(_node_field_requirement(f"{path}.matchFields[{j}]", req))
    return out


def _node_affinity(path: str, affinity: dict[str, Any]) -> list[Cause]:
    """``validateNodeAffinity``."""
    out: list[Cause] = []
    required = _dict(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required is not None:
        tp = f"{path}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        terms = required.get("nodeSelectorTerms")
        if not terms:
            out.append(_required(tp, "must have at least one node selector term"))
        for i, term in _dicts(terms):
            out.extend(_node_selector_term(f"{tp}[{i}]", term))
    for i, pref in _dicts(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        tp = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        weight = _int(pref.get("weight")) or 0
        if not 1 <= weight <= 100:
            out.append(_invalid(f"{tp}.weight", weight, _WEIGHT))
        out.extend(_node_selector_term(f"{tp}.preference", _dict(pref.get("preference")) or {}))
    return out


def _match_label_keys(path: str, term: dict[str, Any]) -> list[Cause]:
    """``validateMatchLabelKeysAndMismatchLabelKeys`` (kube's own path for a
    key also in the selector: the term's, indexed)."""
    selector = _dict(term.get("labelSelector"))
    match = _strings(term.get("matchLabelKeys"))
    mismatch = _strings(term.get("mismatchLabelKeys"))
    out: list[Cause] = []
    for name, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        if keys and selector is None:
            out.append(_forbidden(f"{path}.{name}", _NO_SELECTOR))
        elif keys:
            for i, key in enumerate(keys):
                out.extend(_label_name(f"{path}.{name}[{i}]", key))
    if selector is not None:
        index = {key: i for i, key in enumerate(match)}
        seen = set(_dict(selector.get("matchLabels")) or {})
        for _, expr in _dicts(selector.get("matchExpressions")):
            key = _str(expr.get("key"))
            if key in index and key in seen:
                detail = "exists in both matchLabelKeys and labelSelector"
                out.append(_invalid(f"{path}[{index[key]}]", key, detail))
            seen.add(key)
    for i, key in enumerate(match):
        if key in mismatch:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            out.append(_invalid(f"{path}.matchLabelKeys[{i}]", key, detail))
    return out


def _pod_affinity_term(path: str, term: dict[str, Any]) -> list[Cause]:
    """``validatePodAffinityTerm``."""
    out = _label_selector(f"{path}.labelSelector", term.get("labelSelector"))
    out.extend(_label_selector(f"{path}.namespaceSelector", term.get("namespaceSelector")))
    for name in _strings(term.get("namespaces")):
        out.extend(_each(f"{path}.namespace", name, validate_name("label", name)))
    out.extend(_match_label_keys(path, term))
    topology_key = _str(term.get("topologyKey"))
    if not topology_key:
        out.append(_required(f"{path}.topologyKey", "can not be empty"))
    return out + _label_name(f"{path}.topologyKey", topology_key)


def _pod_affinity(path: str, affinity: dict[str, Any]) -> list[Cause]:
    """``validatePodAffinity`` / ``validatePodAntiAffinity``."""
    out: list[Cause] = []
    rp = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in _dicts(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
        out.extend(_pod_affinity_term(f"{rp}[{i}]", term))
    pp = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, weighted in _dicts(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        weight = _int(weighted.get("weight")) or 0
        if not 1 <= weight <= 100:
            out.append(_invalid(f"{pp}[{i}].weight", weight, _WEIGHT))
        term = _dict(weighted.get("podAffinityTerm")) or {}
        out.extend(_pod_affinity_term(f"{pp}[{i}].podAffinityTerm", term))
    return out


def _affinity(path: str, affinity: Any) -> list[Cause]:
    """``validateAffinity``."""
    aff = _dict(affinity) or {}
    out: list[Cause] = []
    node = _dict(aff.get("nodeAffinity"))
    if node is not None:
        out.extend(_node_affinity(f"{path}.nodeAffinity", node))
    for key in ("podAffinity", "podAntiAffinity"):
        pod = _dict(aff.get(key))
        if pod is not None:
            out.extend(_pod_affinity(f"{path}.{key}", pod))
    return out


def _topology_spread(path: str, constraints: Any) -> list[Cause]:
    """``validateTopologySpreadConstraints`` (label selectors checked, as on
    create)."""
    out: list[Cause] = []
    listed = _dicts(constraints)
    for n, (i, c) in enumerate(listed):
        cp = f"{path}[{i}]"
        skew = _int(c.get("maxSkew")) or 0
        if skew <= 0:
            out.append(_invalid(f"{cp}.maxSkew", skew, "must be greater than zero"))
        topology_key = _str(c.get("topologyKey"))
        if not topology_key:
            out.append(_required(f"{cp}.topologyKey", "can not be empty"))
        action = _str(c.get("whenUnsatisfiable"))
        if action not in _SCHEDULE_ACTIONS:
            out.append(_not_supported(f"{cp}.whenUnsatisfiable", action, _SCHEDULE_ACTIONS))
        pair = (topology_key, action)
        if any(
            (_str(o.get("topologyKey")), _str(o.get("whenUnsatisfiable"))) == pair
            for _, o in listed[n + 1 :]
        ):
            out.append(
                _duplicate(
                    f"{cp}.{{topologyKey, whenUnsatisfiable}}", f"{{{topology_key}, {action}}}"
                )
            )
        min_domains = _int(c.get("minDomains"))
        if min_domains is not None:
            if min_domains <= 0:
                out.append(_invalid(f"{cp}.minDomains", min_domains, "must be greater than zero"))
            if action != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                out.append(_invalid(f"{cp}.minDomains", min_domains, detail))
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = c.get(key)
            if isinstance(policy, str) and policy not in _NODE_INCLUSION_POLICIES:
                out.append(_not_supported(f"{cp}.{key}", policy, _NODE_INCLUSION_POLICIES))
        out.extend(_spread_label_keys(f"{cp}.matchLabelKeys", c))
        out.extend(_label_selector(f"{cp}.labelSelector", c.get("labelSelector")))
    return out


def _spread_label_keys(path: str, constraint: dict[str, Any]) -> list[Cause]:
    """``validateMatchLabelKeysInTopologySpread``."""
    keys = _strings(constraint.get("matchLabelKeys"))
    if not keys:
        return []
    selector = _dict(constraint.get("labelSelector"))
    out: list[Cause] = []
    in_selector: set[str] = set()
    if selector is None:
        out.append(_forbidden(path, _NO_SELECTOR))
    else:
        in_selector.update(_dict(selector.get("matchLabels")) or {})
        in_selector.update(_str(e.get("key")) for _, e in _dicts(selector.get("matchExpressions")))
    for i, key in enumerate(keys):
        out.extend(_label_name(f"{path}[{i}]", key))
        if key in in_selector:
            detail = "exists in both matchLabelKeys and labelSelector"
            out.append(_invalid(f"{path}[{i}]", key, detail))
    return out


# -- the pod spec ------------------------------------------------------------

_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")  # core.PreemptNever is "Never"


def _host_network(path: str, spec: dict[str, Any], is_pod: bool) -> list[Cause]:
    """``validatePodHostNetworkDeps``."""
    if spec.get("hostNetwork") is not True:
        return []
    out: list[Cause] = []
    for i, c in _dicts(spec.get("containers")):
        for j, port in _dicts(c.get("ports")):
            hp = _int(port.get("hostPort")) or 0
            cp = _int(port.get("containerPort")) or 0
            if (is_pod or hp != 0) and hp != cp:
                out.append(
                    _invalid(
                        f"{path}.containers[{i}].ports[{j}].hostPort",
                        hp,
                        "must match `containerPort` when `hostNetwork` is true",
                    )
                )
    return out


def _node_selector(field: str, selector: Any) -> list[Cause]:
    """``ValidateLabels``."""
    out: list[Cause] = []
    for key, value in (_dict(selector) or {}).items():
        out.extend(_each(field, key, qualified_name_errors(key)))
        if isinstance(value, str):
            out.extend(_each(field, value, label_value_errors(value)))
    return out


def _dns_config(path: str, config: Any, policy: str) -> list[Cause]:
    """``validatePodDNSConfig``."""
    cfg = _dict(config)
    if policy == "None":
        if cfg is None:
            return [_required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not cfg.get("nameservers"):
            return [
                _required(
                    f"{path}.nameservers",
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                )
            ]
    if cfg is None:
        return []
    out: list[Cause] = []
    nameservers = [str(n) for n in cfg.get("nameservers") or []]
    if len(nameservers) > 3:
        out.append(
            _c_raw(
                f"{path}.nameservers",
                _go_strings(nameservers),
                "must not have more than 3 nameservers",
            )
        )
    for i, ns in enumerate(nameservers):
        out.extend(_ip(f"{path}.nameservers[{i}]", ns))
    searches = [str(s) for s in cfg.get("searches") or []]
    if len(searches) > 32:
        out.append(
            _c_raw(
                f"{path}.searches", _go_strings(searches), "must not have more than 32 search paths"
            )
        )
    if len(" ".join(searches).encode()) > 2048:
        out.append(
            _c_raw(
                f"{path}.searches",
                _go_strings(searches),
                "must not have more than 2048 characters (including spaces) in the search list",
            )
        )
    for i, search in enumerate(searches):
        trimmed = search[:-1] if search.endswith(".") else search
        out.extend(_subdomain(f"{path}.searches[{i}]", trimmed))
    for i, option in enumerate(cfg.get("options") or []):
        if not (isinstance(option, dict) and _str(option.get("name"))):
            out.append(_required(f"{path}.options[{i}]", "must not be empty"))
    return out


def _c_raw(field: str, shown: str, detail: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": field,
    }


def _go_toleration(t: dict[str, Any]) -> str:
    """``%#v`` of a ``core.Toleration`` (a set ``tolerationSeconds`` is a
    pointer, whose address Go prints)."""
    seconds = "(*int64)(nil)" if t.get("tolerationSeconds") is None else "(*int64)(0xc000000000)"
    return (
        f"core.Toleration{{Key:{quote(_str(t.get('key')))}, "
        f"Operator:{quote(_str(t.get('operator')))}, Value:{quote(_str(t.get('value')))}, "
        f"Effect:{quote(_str(t.get('effect')))}, TolerationSeconds:{seconds}}}"
    )


def _tolerations(path: str, tolerations: Any) -> list[Cause]:
    """``ValidateTolerations``."""
    out: list[Cause] = []
    for i, t in _dicts(tolerations):
        ip = f"{path}[{i}]"
        key = _str(t.get("key"))
        operator = _str(t.get("operator"))
        value = _str(t.get("value"))
        effect = _str(t.get("effect"))
        if key:
            out.extend(_each(f"{ip}.key", key, qualified_name_errors(key)))
        if not key and operator != "Exists":
            out.append(
                _invalid(
                    f"{ip}.operator",
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            out.append(
                _invalid(
                    f"{ip}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            errs = label_value_errors(value)
            if errs:
                out.append(_invalid(f"{ip}.operator", value, ";".join(errs)))
        elif operator == "Exists":
            if value:
                out.append(
                    _c_raw(
                        f"{ip}.operator",
                        _go_toleration(t),
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            out.append(_not_supported(f"{ip}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in _TAINT_EFFECTS:
            out.append(_not_supported(f"{ip}.effect", effect, _TAINT_EFFECTS))
    return out


def _host_aliases(path: str, aliases: Any) -> list[Cause]:
    out: list[Cause] = []
    for i, alias in _dicts(aliases):
        out.extend(_ip(f"{path}[{i}].ip", _str(alias.get("ip"))))
        for j, hostname in enumerate(alias.get("hostnames") or []):
            out.extend(_subdomain(f"{path}[{i}].hostnames[{j}]", str(hostname)))
    return out


def _gates(path: str, spec: dict[str, Any]) -> list[Cause]:
    """``validateReadinessGates`` and ``validateSchedulingGates``."""
    out: list[Cause] = []
    for i, gate in _dicts(spec.get("readinessGates")):
        ctype = _str(gate.get("conditionType"))
        out.extend(
            _each(f"{path}.readinessGates[{i}].conditionType", ctype, qualified_name_errors(ctype))
        )
    seen: set[str] = set()
    for i, gate in _dicts(spec.get("schedulingGates")):
        name = _str(gate.get("name"))
        out.extend(_each(f"{path}.schedulingGates[{i}]", name, qualified_name_errors(name)))
        if name in seen:
            out.append(_duplicate(f"{path}.schedulingGates[{i}]", name))
        seen.add(name)
    return out


def _names(path: str, spec: dict[str, Any]) -> list[Cause]:
    """``serviceAccountName`` and ``nodeName`` (DNS subdomains)."""
    out: list[Cause] = []
    for key in ("serviceAccountName", "nodeName"):
        value = _str(spec.get(key))
        if value:
            out.extend(_subdomain(f"{path}.{key}", value))
    return out


def _dns_labels(path: str, spec: dict[str, Any]) -> list[Cause]:
    out: list[Cause] = []
    for key in ("hostname", "subdomain"):
        value = _str(spec.get(key))
        if value:
            out.extend(_each(f"{path}.{key}", value, validate_name("label", value)))
    return out


def _scheduling(path: str, spec: dict[str, Any]) -> list[Cause]:
    out: list[Cause] = []
    out.extend(_tolerations(f"{path}.tolerations", spec.get("tolerations")))
    out.extend(_host_aliases(f"{path}.hostAliases", spec.get("hostAliases")))
    for key in ("priorityClassName",):
        value = _str(spec.get(key))
        if value:
            out.extend(_subdomain(f"{path}.{key}", value))
    runtime_class = spec.get("runtimeClassName")
    if isinstance(runtime_class, str):
        out.extend(_subdomain(f"{path}.runtimeClassName", runtime_class))
    preemption = spec.get("preemptionPolicy")
    if isinstance(preemption, str):
        if not preemption:
            out.append(_required(f"{path}.preemptionPolicy"))
        elif preemption not in _PREEMPTION_POLICIES:
            out.append(_not_supported(f"{path}.preemptionPolicy", preemption, _PREEMPTION_POLICIES))
    return out


def _pod_only(path: str, spec: dict[str, Any]) -> list[Cause]:
    """``validateContainersOnlyForPod``: no whitespace around an image."""
    out: list[Cause] = []
    for key in ("containers", "initContainers"):
        for i, c in _dicts(spec.get(key)):
            image = _str(c.get("image"))
            if image != image.strip(" \t\n\r\v\f"):
                out.append(
                    _invalid(
                        f"{path}.{key}[{i}].image",
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    return out


def pod_spec_causes(path: str, spec: Any) -> list[dict[str, Any]]:
    """The causes of ``ValidatePodSpec``'s rules not in ``validation.py``."""
    if not isinstance(spec, dict):
        return []
    is_pod = path == "spec"
    grace = _int(spec.get("terminationGracePeriodSeconds"))
    out: list[Cause] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        out.append(_required(f"{path}.terminationGracePeriodSeconds"))
    out.extend(_containers(f"{path}.containers", spec.get("containers"), grace))
    out.extend(_init_containers(f"{path}.initContainers", spec.get("initContainers"), grace))
    for i, c in _dicts(spec.get("ephemeralContainers")):
        field = f"{path}.ephemeralContainers[{i}].securityContext"
        out.extend(_container_security_context(field, c.get("securityContext")))
    out.extend(_host_network(path, spec, is_pod))
    restart = _str(spec.get("restartPolicy"))
    if not restart:
        out.append(_required(f"{path}.restartPolicy"))
    elif restart not in _RESTART_POLICIES:
        out.append(_not_supported(f"{path}.restartPolicy", restart, _RESTART_POLICIES))
    dns_policy = _str(spec.get("dnsPolicy"))
    if not dns_policy:
        out.append(_required(f"{path}.dnsPolicy"))
    elif dns_policy not in _DNS_POLICIES:
        out.append(_not_supported(f"{path}.dnsPolicy", dns_policy, _DNS_POLICIES))
    out.extend(_node_selector(f"{path}.nodeSelector", spec.get("nodeSelector")))
    out.extend(_security_context(f"{path}.securityContext", spec))
    out.extend(_affinity(f"{path}.affinity", spec.get("affinity")))
    out.extend(_dns_config(f"{path}.dnsConfig", spec.get("dnsConfig"), dns_policy))
    out.extend(_gates(path, spec))
    out.extend(
        _topology_spread(f"{path}.topologySpreadConstraints", spec.get("topologySpreadConstraints"))
    )
    out.extend(_names(path, spec))
    deadline = _int(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        out.append(
            _invalid(f"{path}.activeDeadlineSeconds", deadline, _inclusive_range(1, _MAX_INT32))
        )
    out.extend(_dns_labels(path, spec))
    out.extend(_scheduling(path, spec))
    if is_pod:
        out.extend(_pod_only(path, spec))
    return out
