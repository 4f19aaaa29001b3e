"""The ``PodSecurity`` admission plugin kube-apiserver 1.32 runs by default
(``plugin/pkg/admission/security/podsecurity`` over
``k8s.io/pod-security-admission``), with the default configuration (no
AdmissionConfiguration): every mode ``privileged:latest`` unless the namespace
says otherwise, no exempt users, namespaces nor runtime classes.

A namespace's labels ``pod-security.kubernetes.io/{enforce,audit,warn}``
(``privileged``, ``baseline`` or ``restricted``) and ``…-version``
(``latest`` or ``v1.N``) choose the policy (``api.PolicyToEvaluate``):

* a Pod create, or a pod update that changes what the policy looks at
  (``isSignificantPodUpdate``: the containers' number or images, a
  container's seccomp annotation, a new ephemeral container; any pod
  subresource but ``status``, ``binding``, ``eviction``, ``exec``… too),
  that violates the ``enforce`` level is kube's 403
  ``pods "x" is forbidden: violates PodSecurity "restricted:latest": …``;
* an allowed one that violates the ``warn`` level gets a
  ``would violate PodSecurity "…": …`` warning;
* a workload with a pod template (Deployments, ReplicaSets, StatefulSets,
  DaemonSets, Jobs, CronJobs, ReplicationControllers, PodTemplates) is never
  refused: only the ``warn`` level is evaluated, for the warning
  (``ValidatePodController``);
* a namespace created or updated with an invalid label value is kube's 422
  (an update only when the errors changed); an update that makes the enforce
  level stricter evaluates the namespace's pods and warns of those that
  violate it (``EvaluatePodsInNamespace``).

The checks (``policy/check_*.go``) in kube's order, with their messages and
their versions: a ``v1.N`` label evaluates the checks as they were in that
policy version (``latest`` and any version above 1.32 as 1.32's). The audit
mode only writes audit annotations in kube: there is no audit log here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pycontroller.testing.apiserver.gofmt import quote
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import forbidden, invalid, invalid_cause

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = ["validate"]

_PREFIX = "pod-security.kubernetes.io/"
_MODES = ("enforce", "audit", "warn")
_PRIVILEGED, _BASELINE, _RESTRICTED = "privileged", "baseline", "restricted"
_LEVELS = (_PRIVILEGED, _BASELINE, _RESTRICTED)

#: The newest policy version a check changed in (1.32: the sysctls); ``latest``
#: and newer versions evaluate as this one (``checkRegistry.maxVersion``).
_MAX_MINOR = 32
_LATEST = -1  # ``latest`` as a parsed version's minor
_GO_MAX_INT = (1 << 63) - 1

_NAMESPACES = ("", "namespaces")
_PODS = ("", "pods")
_POD_CONTROLLERS = frozenset(
    {
        ("", "replicationcontrollers"),
        ("", "podtemplates"),
        ("apps", "replicasets"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
    }
)
_IGNORED_POD_SUBRESOURCES = frozenset(
    {"exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"}
)
_MAX_PODS_TO_CHECK = 3000

LevelVersion = tuple[str, int]
Policy = dict[str, LevelVersion]
Failure = tuple[str, str]  # (ForbiddenReason, ForbiddenDetail)
Check = Callable[[dict[str, Any], dict[str, Any]], Failure | None]


# --- policy -----------------------------------------------------------------------


def _version_string(minor: int) -> str:
    return "latest" if minor == _LATEST else f"v1.{minor}"


def _lv_string(lv: LevelVersion) -> str:
    """``LevelVersion.String``: ``restricted:latest``."""
    return f"{lv[0]}:{_version_string(lv[1])}"


_VERSION_RE = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")


def _parse_version(value: str) -> int | None:
    if value == "latest":
        return _LATEST
    m = _VERSION_RE.fullmatch(value)
    if m is None or not value.isascii():
        return None
    minor = int(m.group(1))
    return minor if minor <= _GO_MAX_INT else None


def policy_to_evaluate(labels: dict[str, Any]) -> tuple[Policy, list[dict[str, Any]]]:
    """``api.PolicyToEvaluate`` over the default policy (all ``privileged:latest``):
    the policy, and the ``field.Invalid`` causes of the labels that do not parse
    (a bad enforce level is ``restricted``, a bad audit or warn level
    ``privileged``, a bad version ``latest``)."""
    policy: Policy = {mode: (_PRIVILEGED, _LATEST) for mode in _MODES}
    causes: list[dict[str, Any]] = []
    for mode in _MODES:
        level, minor = policy[mode]
        key = _PREFIX + mode
        if key in labels:
            value = str(labels[key])
            if value in _LEVELS:
                level = value
            else:
                level = _RESTRICTED if mode == "enforce" else _PRIVILEGED
                causes.append(
                    invalid_cause(
                        f"metadata.labels[{key}]",
                        quote(value),
                        "must be one of " + ", ".join(_LEVELS),
                    )
                )
        key = f"{_PREFIX}{mode}-version"
        if key in labels:
            value = str(labels[key])
            parsed = _parse_version(value)
            if parsed is None:
                minor = _LATEST
                causes.append(
                    invalid_cause(
                        f"metadata.labels[{key}]", quote(value), 'must be "latest" or "v1.x"'
                    )
                )
            else:
                minor = parsed
        policy[mode] = (level, minor)
    return policy, causes


def _compare_levels(a: str, b: str) -> int:
    return _LEVELS.index(a) - _LEVELS.index(b)


# --- helpers ----------------------------------------------------------------------


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``visitContainers``: init containers, containers, ephemeral containers."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            if isinstance(c, dict):
                yield c


def _name(c: dict[str, Any]) -> str:
    return str(c.get("name") or "")


def _sc(obj: dict[str, Any]) -> dict[str, Any] | None:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else None


def _join_quote(items: list[str]) -> str:
    """``joinQuote``: the items in double quotes (not escaped), comma-separated."""
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _setters(pod_bad: bool, containers: list[str]) -> list[str]:
    out = ["pod"] if pod_bad else []
    if containers:
        out.append(
            f"{_plural('container', 'containers', len(containers))} {_join_quote(containers)}"
        )
    return out


def _windows(spec: dict[str, Any]) -> bool:
    return _d(spec.get("os")).get("name") == "windows"


def _quote_list(items: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(quote(i) for i in items) + "]"


# --- baseline checks --------------------------------------------------------------


def _app_armor(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    allowed_types = ("RuntimeDefault", "Localhost")
    bad_values: set[str] = set()
    pod_profile = _d(_sc(spec)).get("appArmorProfile")
    pod_bad = False
    if isinstance(pod_profile, dict) and pod_profile.get("type") not in allowed_types:
        pod_bad = True
        bad_values.add(str(pod_profile.get("type") or ""))
    bad: list[str] = []
    for c in _containers(spec):
        profile = _d(_sc(c)).get("appArmorProfile")
        if isinstance(profile, dict) and profile.get("type") not in allowed_types:
            bad.append(_name(c))
            bad_values.add(str(profile.get("type") or ""))
    setters = _setters(pod_bad, bad)
    annotations = []
    for k, v in _d(meta.get("annotations")).items():
        value = str(v or "")
        if k.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
            value == "" or value == "runtime/default" or value.startswith("localhost/")
        ):
            annotations.append(f"{k}={quote(value)}")
    values = sorted(bad_values)
    if annotations:
        values += sorted(annotations)
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    return (
        _plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
        f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(values)}",
    )


_BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)


def _capabilities_baseline(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    bad: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        sc = _sc(c)
        if sc is None or not isinstance(sc.get("capabilities"), dict):
            continue
        added = [str(a) for a in _list(sc["capabilities"].get("add"))]
        forbidden_caps = [a for a in added if a not in _BASELINE_CAPABILITIES]
        if forbidden_caps:
            caps.update(forbidden_caps)
            bad.append(_name(c))
    if not bad:
        return None
    return (
        "non-default capabilities",
        f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must not include "
        f"{_join_quote(sorted(caps))} in securityContext.capabilities.add",
    )


def _host_namespaces(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    used = sorted(k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True)
    return ("host namespaces", ", ".join(used)) if used else None


def _host_path_volumes(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    names = [
        str(v.get("name") or "")
        for v in _list(spec.get("volumes"))
        if isinstance(v, dict) and v.get("hostPath") is not None
    ]
    if not names:
        return None
    return "hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}"


def _host_ports(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    bad: list[str] = []
    ports: set[str] = set()
    for c in _containers(spec):
        used = [
            str(p.get("hostPort"))
            for p in _list(c.get("ports"))
            if isinstance(p, dict) and p.get("hostPort") not in (None, 0)
        ]
        if used:
            ports.update(used)
            bad.append(_name(c))
    if not bad:
        return None
    return (
        "hostPort",
        f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} "
        f"{_plural('uses', 'use', len(bad))} {_plural('hostPort', 'hostPorts', len(ports))} "
        + ", ".join(sorted(ports)),
    )


def _privileged(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    bad = [_name(c) for c in _containers(spec) if _d(_sc(c)).get("privileged") is True]
    if not bad:
        return None
    return (
        "privileged",
        f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must not set "
        "securityContext.privileged=true",
    )


def _proc_mount(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    bad: list[str] = []
    types: set[str] = set()
    for c in _containers(spec):
        mount = _d(_sc(c)).get("procMount")
        if mount is not None and mount != "Default":
            bad.append(_name(c))
            types.add(str(mount))
    if not bad:
        return None
    return (
        "procMount",
        f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must not set "
        f"securityContext.procMount to {_join_quote(sorted(types))}",
    )


_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})


def _se_linux_options(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: dict[str, Any]) -> bool:
        ok = True
        t = str(opts.get("type") or "")
        if t not in _SELINUX_TYPES:
            ok = False
            bad_types.add(t)
        for k in ("user", "role"):
            if opts.get(k):
                ok = False
                flags[k] = True
        return ok

    pod_opts = _d(_sc(spec)).get("seLinuxOptions")
    pod_bad = isinstance(pod_opts, dict) and not valid(pod_opts)
    bad: list[str] = []
    for c in _containers(spec):
        opts = _d(_sc(c)).get("seLinuxOptions")
        if isinstance(opts, dict) and not valid(opts):
            bad.append(_name(c))
    setters = _setters(pod_bad, bad)
    if not setters:
        return None
    data: list[str] = []
    if bad_types:
        data.append(f"{_plural('type', 'types', len(bad_types))} {_join_quote(sorted(bad_types))}")
    if flags["user"]:
        data.append("user may not be set")
    if flags["role"]:
        data.append("role may not be set")
    return (
        "seLinuxOptions",
        f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
    )


_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def _valid_seccomp(profile: dict[str, Any]) -> bool:
    return profile.get("type") in ("Localhost", "RuntimeDefault")


def _seccomp_baseline_1_0(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    annotations = _d(meta.get("annotations"))

    def ok(v: Any) -> bool:
        s = str(v or "")
        return s in ("runtime/default", "docker/default") or s.startswith("localhost/")

    bad: set[str] = set()
    if _SECCOMP_POD_ANNOTATION in annotations and not ok(annotations[_SECCOMP_POD_ANNOTATION]):
        bad.add(
            f"{_SECCOMP_POD_ANNOTATION}={quote(str(annotations[_SECCOMP_POD_ANNOTATION] or ''))}"
        )
    for c in _containers(spec):
        key = _SECCOMP_CONTAINER_ANNOTATION + _name(c)
        if key in annotations and not ok(annotations[key]):
            bad.add(f"{key}={quote(str(annotations[key] or ''))}")
    if not bad:
        return None
    return (
        "seccompProfile",
        f"forbidden {_plural('annotation', 'annotations', len(bad))} " + ", ".join(sorted(bad)),
    )


def _seccomp(spec: dict[str, Any], *, restricted: bool) -> Failure | None:
    bad_values: set[str] = set()
    pod_bad = pod_set = False
    profile = _d(_sc(spec)).get("seccompProfile")
    if isinstance(profile, dict):
        if _valid_seccomp(profile):
            pod_set = True
        else:
            pod_bad = True
            bad_values.add(str(profile.get("type") or ""))
    explicit: list[str] = []
    implicit: list[str] = []
    for c in _containers(spec):
        profile = _d(_sc(c)).get("seccompProfile")
        if isinstance(profile, dict):
            if not _valid_seccomp(profile):
                explicit.append(_name(c))
                bad_values.add(str(profile.get("type") or ""))
        elif not pod_set:
            implicit.append(_name(c))
    setters = _setters(pod_bad, explicit)
    if setters:
        return (
            "seccompProfile",
            f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
            + _join_quote(sorted(bad_values)),
        )
    if restricted and implicit:
        return (
            "seccompProfile",
            f"pod or {_plural('container', 'containers', len(implicit))} {_join_quote(implicit)} "
            'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
        )
    return None


def _seccomp_baseline_1_19(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    return _seccomp(spec, restricted=False)


_SYSCTLS_1_0 = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
)
_SYSCTLS_1_27 = (*_SYSCTLS_1_0, "net.ipv4.ip_local_reserved_ports")
_SYSCTLS_1_29 = (
    *_SYSCTLS_1_27,
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)
_SYSCTLS_1_32 = (*_SYSCTLS_1_29, "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")


def _sysctls(allowed: tuple[str, ...]) -> Check:
    def check(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
        names = [
            str(s.get("name") or "")
            for s in _list(_d(_sc(spec)).get("sysctls"))
            if isinstance(s, dict)
        ]
        bad = [n for n in names if n not in allowed]
        return ("forbidden sysctls", ", ".join(bad)) if bad else None

    return check


def _windows_host_process(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    def host_process(obj: dict[str, Any]) -> bool:
        return _d(_d(_sc(obj)).get("windowsOptions")).get("hostProcess") is True

    setters = _setters(host_process(spec), [_name(c) for c in _containers(spec) if host_process(c)])
    if not setters:
        return None
    return (
        "hostProcess",
        f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true",
    )


# --- restricted checks ------------------------------------------------------------


def _allow_privilege_escalation_1_8(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    bad = [
        _name(c)
        for c in _containers(spec)
        if _d(_sc(c)).get("allowPrivilegeEscalation") is not False
    ]
    if not bad:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_plural('container', 'containers', len(bad))} {_join_quote(bad)} must set "
        "securityContext.allowPrivilegeEscalation=false",
    )


def _capabilities_restricted_1_22(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    missing_drop: list[str] = []
    adding: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        sc = _sc(c)
        capabilities = sc.get("capabilities") if sc is not None else None
        if not isinstance(capabilities, dict):
            missing_drop.append(_name(c))
            continue
        if "ALL" not in [str(x) for x in _list(capabilities.get("drop"))]:
            missing_drop.append(_name(c))
        added = [str(a) for a in _list(capabilities.get("add")) if a != "NET_BIND_SERVICE"]
        if added:
            caps.update(added)
            adding.append(_name(c))
    details: list[str] = []
    if missing_drop:
        details.append(
            f"{_plural('container', 'containers', len(missing_drop))} {_join_quote(missing_drop)} "
            'must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_plural('container', 'containers', len(adding))} {_join_quote(adding)} must not "
            f"include {_join_quote(sorted(caps))} in securityContext.capabilities.add"
        )
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_RESTRICTED_VOLUME_SOURCES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)


def _restricted_volumes(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    names: set[str] = set()
    for v in _list(spec.get("volumes")):
        if not isinstance(v, dict):
            continue
        if not any(v.get(k) is not None for k in _RESTRICTED_VOLUME_SOURCES):
            names.add(str(v.get("name") or ""))
    if not names:
        return None
    return "restricted volume types", f"volumes {_quote_list(sorted(names))} have restricted types"


def _run_as_non_root(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    pod_value = _d(_sc(spec)).get("runAsNonRoot")
    pod_bad = pod_value is False
    pod_non_root = pod_value is True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in _containers(spec):
        value = _d(_sc(c)).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(_name(c))
        elif not pod_non_root:
            implicit.append(_name(c))
    setters = _setters(pod_bad, explicit)
    if setters:
        return (
            "runAsNonRoot != true",
            f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return (
            "runAsNonRoot != true",
            f"pod or {_plural('container', 'containers', len(implicit))} {_join_quote(implicit)} "
            "must set securityContext.runAsNonRoot=true",
        )
    return None


def _run_as_user_1_23(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    def root(obj: dict[str, Any]) -> bool:
        value = _d(_sc(obj)).get("runAsUser")
        return value is not None and not isinstance(value, bool) and value == 0

    setters = _setters(root(spec), [_name(c) for c in _containers(spec) if root(c)])
    if not setters:
        return None
    return "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0"


def _seccomp_restricted_1_19(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
    return _seccomp(spec, restricted=True)


def _not_on_windows(check: Check) -> Check:
    """The 1.25 revisions: a pod with ``spec.os.name: windows`` passes."""

    def wrapped(meta: dict[str, Any], spec: dict[str, Any]) -> Failure | None:
        return None if _windows(spec) else check(meta, spec)

    return wrapped


# --- registry ---------------------------------------------------------------------

# (check's versions as (minimum minor, check), overlap) in kube's order: the
# checks register themselves from their files' init functions, which Go runs in
# file name order.
_Versioned = tuple[tuple[int, Check], ...]
_BASELINE_CHECKS: tuple[tuple[_Versioned, bool], ...] = (
    (((0, _app_armor),), False),
    (((0, _capabilities_baseline),), True),
    (((0, _host_namespaces),), False),
    (((0, _host_path_volumes),), True),
    (((0, _host_ports),), False),
    (((0, _privileged),), False),
    (((0, _proc_mount),), False),
    (((0, _se_linux_options),), False),
    (((0, _seccomp_baseline_1_0), (19, _seccomp_baseline_1_19)), True),
    (
        (
            (0, _sysctls(_SYSCTLS_1_0)),
            (27, _sysctls(_SYSCTLS_1_27)),
            (29, _sysctls(_SYSCTLS_1_29)),
            (32, _sysctls(_SYSCTLS_1_32)),
        ),
        False,
    ),
    (((0, _windows_host_process),), False),
)
_RESTRICTED_CHECKS: tuple[_Versioned, ...] = (
    (
        (8, _allow_privilege_escalation_1_8),
        (25, _not_on_windows(_allow_privilege_escalation_1_8)),
    ),
    (
        (22, _capabilities_restricted_1_22),
        (25, _not_on_windows(_capabilities_restricted_1_22)),
    ),
    ((0, _restricted_volumes),),
    ((0, _run_as_non_root),),
    ((23, _run_as_user_1_23),),
    ((19, _seccomp_restricted_1_19), (25, _not_on_windows(_seccomp_restricted_1_19))),
)


def _at(versions: _Versioned, minor: int) -> Check | None:
    found: Check | None = None
    for minimum, check in versions:
        if minimum <= minor:
            found = check
    return found


def evaluate(lv: LevelVersion, meta: dict[str, Any], spec: dict[str, Any]) -> list[Failure]:
    """``checkRegistry.EvaluatePod`` + ``AggregateCheckResults``: the failed
    checks' reasons and details, in kube's order."""
    level, minor = lv
    if level == _PRIVILEGED:
        return []
    if minor == _LATEST or minor > _MAX_MINOR:
        minor = _MAX_MINOR
    checks: list[Check] = []
    for versions, overlap in _BASELINE_CHECKS:
        check = _at(versions, minor)
        if check is not None and (not overlap or level == _BASELINE):
            checks.append(check)
    if level == _RESTRICTED:
        for versions in _RESTRICTED_CHECKS:
            check = _at(versions, minor)
            if check is not None:
                checks.append(check)
    out: list[Failure] = []
    for check in checks:
        failure = check(meta, spec)
        if failure is not None:
            out.append((failure[0] or "unknown forbidden reason", failure[1]))
    return out


def forbidden_detail(failures: list[Failure]) -> str:
    """``AggregateCheckResult.ForbiddenDetail``."""
    return ", ".join(f"{r} ({d})" if d else r for r, d in failures)


def _forbidden_reason(failures: list[Failure]) -> str:
    return ", ".join(r for r, _ in failures)


# --- admission --------------------------------------------------------------------


def validate(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
    warnings: list[str] | None = None,
) -> None:
    """``PodSecurity``'s ``Validate`` (lock held): raises kube's 403 / 422,
    appends its warnings to ``warnings``."""
    if obj is None or operation not in ("CREATE", "UPDATE"):
        return
    rk = (rt.group, rt.plural)
    if rk == _NAMESPACES:
        out = _validate_namespace(rest, rt, operation, obj, old, subresource)
    elif rk == _PODS:
        out = _validate_pod(rest, rt, operation, obj, old, subresource)
    elif rk in _POD_CONTROLLERS:
        out = _validate_pod_controller(rest, rk, obj, subresource)
    else:
        return
    if warnings is not None:
        warnings.extend(out)


def _labels(obj: dict[str, Any] | None) -> dict[str, Any]:
    return _d(_d(_d(obj).get("metadata")).get("labels"))


def _namespace_policy(
    rest: REST, obj: dict[str, Any]
) -> tuple[Policy, list[dict[str, Any]]] | None:
    ns = str(_d(obj.get("metadata")).get("namespace") or "")
    nsobj = rest.storage.get(_NAMESPACES, "", ns)
    if nsobj is None:
        return None
    return policy_to_evaluate(_labels(nsobj))


def _validate_namespace(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    subresource: str,
) -> list[str]:
    if subresource:
        return []
    name = str(_d(obj.get("metadata")).get("name") or "")
    new_policy, new_errs = policy_to_evaluate(_labels(obj))
    if operation == "CREATE":
        if new_errs:
            raise invalid(rt, name, new_errs)
        return []
    old_policy, old_errs = policy_to_evaluate(_labels(old))
    if new_errs and (not old_errs or new_errs != old_errs):
        raise invalid(rt, name, new_errs)
    new_enforce, old_enforce = new_policy["enforce"], old_policy["enforce"]
    if new_enforce == old_enforce or new_enforce[0] == _PRIVILEGED:
        return []
    if new_enforce[1] == old_enforce[1] and _compare_levels(new_enforce[0], old_enforce[0]) < 1:
        return []
    return _evaluate_pods_in_namespace(rest, name, new_enforce)


def _controller_uid(pod: dict[str, Any]) -> str | None:
    for ref in _list(_d(pod.get("metadata")).get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return None


def _evaluate_pods_in_namespace(rest: REST, namespace: str, enforce: LevelVersion) -> list[str]:
    """``EvaluatePodsInNamespace`` (the pods of one controller after the first
    one of each: ``prioritizePods``)."""
    first: list[dict[str, Any]] = []
    duplicates: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pod in rest.storage.items(_PODS, namespace):
        uid = _controller_uid(pod)
        if uid is not None and uid in seen:
            duplicates.append(pod)
            continue
        if uid is not None:
            seen.add(uid)
        first.append(pod)
    pods = first + duplicates
    total = len(pods)
    pods = pods[:_MAX_PODS_TO_CHECK]
    order: list[str] = []
    counts: dict[str, tuple[str, int]] = {}
    for pod in pods:
        meta = _d(pod.get("metadata"))
        failures = evaluate(enforce, meta, _d(pod.get("spec")))
        if not failures:
            continue
        warning = _forbidden_reason(failures)
        pod_name = str(meta.get("name") or "")
        if warning not in counts:
            order.append(warning)
            counts[warning] = (pod_name, 1)
        else:
            first_name, count = counts[warning]
            counts[warning] = (min(first_name, pod_name), count + 1)
    warnings: list[str] = []
    if len(pods) < total:
        warnings.append(
            f"new PodSecurity enforce level only checked against the first {len(pods)} of "
            f"{total} existing pods"
        )
    if order:
        warnings.append(
            f"existing pods in namespace {quote(namespace)} violate the new PodSecurity "
            f"enforce level {quote(_lv_string(enforce))}"
        )
    decorated: list[str] = []
    for warning in order:
        pod_name, count = counts[warning]
        if count == 1:
            decorated.append(f"{pod_name}: {warning}")
        elif count == 2:
            decorated.append(f"{pod_name} (and 1 other pod): {warning}")
        else:
            decorated.append(f"{pod_name} (and {count - 1} other pods): {warning}")
    return warnings + sorted(decorated)


def _containers_significant(
    new: dict[str, Any] | None,
    old: dict[str, Any] | None,
    annotations: dict[str, Any],
    old_annotations: dict[str, Any],
) -> bool:
    """``isSignificantContainerUpdate``: the image, or the container's seccomp
    annotation, changed."""
    n, o = _d(new), _d(old)
    if n.get("image") != o.get("image"):
        return True
    key = _SECCOMP_CONTAINER_ANNOTATION + _name(n)
    return annotations.get(key) != old_annotations.get(key)


def _significant_pod_update(pod: dict[str, Any], old: dict[str, Any]) -> bool:
    """``isSignificantPodUpdate``."""
    spec, old_spec = _d(pod.get("spec")), _d(old.get("spec"))
    ann = _d(_d(pod.get("metadata")).get("annotations"))
    old_ann = _d(_d(old.get("metadata")).get("annotations"))
    for key in ("containers", "initContainers"):
        new_list, old_list = _list(spec.get(key)), _list(old_spec.get(key))
        if len(new_list) != len(old_list):
            return True
    for key in ("containers", "initContainers"):
        for n, o in zip(_list(spec.get(key)), _list(old_spec.get(key)), strict=False):
            if _containers_significant(n, o, ann, old_ann):
                return True
    old_ephemeral = {
        _name(c): c for c in _list(old_spec.get("ephemeralContainers")) if isinstance(c, dict)
    }
    for c in _list(spec.get("ephemeralContainers")):
        if not isinstance(c, dict):
            continue
        previous = old_ephemeral.get(_name(c))
        if previous is None or _containers_significant(c, previous, ann, old_ann):
            return True
    return False


def _validate_pod(
    rest: REST,
    rt: ResourceType,
    operation: str,
    pod: dict[str, Any],
    old: dict[str, Any] | None,
    subresource: str,
) -> list[str]:
    if subresource in _IGNORED_POD_SUBRESOURCES:
        return []
    found = _namespace_policy(rest, pod)
    if found is None:
        return []
    policy, errs = found
    if not errs and all(policy[m][0] == _PRIVILEGED for m in _MODES):
        return []
    if operation == "UPDATE" and old is not None and not _significant_pod_update(pod, old):
        return []
    meta, spec = _d(pod.get("metadata")), _d(pod.get("spec"))
    cached: dict[LevelVersion, list[Failure]] = {}
    enforce = policy["enforce"]
    failures = cached[enforce] = evaluate(enforce, meta, spec)
    if failures:
        raise forbidden(
            rt,
            str(meta.get("name") or ""),
            f"violates PodSecurity {quote(_lv_string(enforce))}: {forbidden_detail(failures)}",
        )
    return _warn(policy, meta, spec, cached)


def _warn(
    policy: Policy,
    meta: dict[str, Any],
    spec: dict[str, Any],
    cached: dict[LevelVersion, list[Failure]],
) -> list[str]:
    warn = policy["warn"]
    failures = cached.get(warn)
    if failures is None:
        failures = evaluate(warn, meta, spec)
    if not failures:
        return []
    return [f"would violate PodSecurity {quote(_lv_string(warn))}: {forbidden_detail(failures)}"]


def _pod_template(rt_key: tuple[str, str], obj: dict[str, Any]) -> dict[str, Any] | None:
    """``DefaultPodSpecExtractor.ExtractPodSpec``: the pod template, or None
    (a ReplicationController without one)."""
    if rt_key == ("", "podtemplates"):
        return _d(obj.get("template"))
    spec = _d(obj.get("spec"))
    if rt_key == ("batch", "cronjobs"):
        return _d(_d(_d(spec.get("jobTemplate")).get("spec")).get("template"))
    template = spec.get("template")
    if rt_key == ("", "replicationcontrollers") and not isinstance(template, dict):
        return None
    return _d(template)


def _validate_pod_controller(
    rest: REST, rk: tuple[str, str], obj: dict[str, Any], subresource: str
) -> list[str]:
    if subresource:
        return []
    found = _namespace_policy(rest, obj)
    if found is None:
        return []
    policy, errs = found
    if not errs and policy["warn"][0] == _PRIVILEGED and policy["audit"][0] == _PRIVILEGED:
        return []
    template = _pod_template(rk, obj)
    if template is None:
        return []
    return _warn(policy, _d(template.get("metadata")), _d(template.get("spec")), {})
