"""Pod security contexts, affinity and topology spread constraints validated
as kube-apiserver 1.32's ``ValidatePodSpec`` does (``ValidateSecurityContext``,
``validatePodSpecSecurityContext``, ``validateAffinity``,
``validateTopologySpreadConstraints``), for Pods and pod templates, over HTTP:
the refused objects with kube's exact causes, and a valid spec accepted."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from support.http import request

from pycontroller.testing import APIServer

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
C0 = "spec.containers[0]"
SC = f"{C0}.securityContext"
PSC = "spec.securityContext"
NA = "spec.affinity.nodeAffinity"
REQ = f"{NA}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
PA = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
TSC = "spec.topologySpreadConstraints"
ID_RANGE = "must be between 0 and 2147483647, inclusive"
QNAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
TYPES = '"Localhost", "RuntimeDefault", "Unconfined"'


@pytest.fixture(scope="module")
def server() -> Iterator[APIServer]:
    with APIServer() as s:
        yield s


def pod(name: str, container: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    c = {"name": "c", "image": "nginx:1.27", **(container or {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [c], **spec},
    }


def deployment(name: str, pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def refused(server: APIServer, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    path = PODS if obj["kind"] == "Pod" else DEPLOYMENTS
    code, out = request(server, "POST", path, obj)
    assert code == 422, out
    return [(c["reason"], c["field"], c["message"]) for c in out["details"]["causes"]]


def sc(name: str, security_context: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return pod(name, {"securityContext": security_context}, **spec)


# -- container security contexts ---------------------------------------------


def test_container_ids_out_of_range(server: APIServer) -> None:
    assert refused(server, sc("ids", {"runAsUser": -1, "runAsGroup": 2**31})) == [
        ("FieldValueInvalid", f"{SC}.runAsUser", f"Invalid value: -1: {ID_RANGE}"),
        ("FieldValueInvalid", f"{SC}.runAsGroup", f"Invalid value: 2147483648: {ID_RANGE}"),
    ]


def test_privilege_escalation_conflicts(server: APIServer) -> None:
    ctx = {
        "privileged": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": ["NET_ADMIN", "CAP_SYS_ADMIN"]},
    }
    shown = (
        "core.SecurityContext{Capabilities:(*core.Capabilities)(0xc000000000), "
        "Privileged:(*bool)(0xc000000000), SELinuxOptions:(*core.SELinuxOptions)(nil), "
        "WindowsOptions:(*core.WindowsSecurityContextOptions)(nil), RunAsUser:(*int64)(nil), "
        "RunAsGroup:(*int64)(nil), RunAsNonRoot:(*bool)(nil), "
        "ReadOnlyRootFilesystem:(*bool)(nil), AllowPrivilegeEscalation:(*bool)(0xc000000000), "
        "ProcMount:(*core.ProcMountType)(nil), SeccompProfile:(*core.SeccompProfile)(nil), "
        "AppArmorProfile:(*core.AppArmorProfile)(nil)}"
    )
    assert refused(server, sc("escalate", ctx)) == [
        (
            "FieldValueInvalid",
            SC,
            f"Invalid value: {shown}: cannot set `allowPrivilegeEscalation` to false and "
            "`privileged` to true",
        ),
        (
            "FieldValueInvalid",
            SC,
            f"Invalid value: {shown}: cannot set `allowPrivilegeEscalation` to false and "
            "`capabilities.Add` CAP_SYS_ADMIN",
        ),
    ]


def test_seccomp_profiles(server: APIServer) -> None:
    assert refused(server, sc("sc1", {"seccompProfile": {"type": "Bogus"}})) == [
        (
            "FieldValueNotSupported",
            f"{SC}.seccompProfile.type",
            f'Unsupported value: "Bogus": supported values: {TYPES}',
        )
    ]
    assert refused(server, sc("sc2", {"seccompProfile": {"type": "Localhost"}})) == [
        (
            "FieldValueRequired",
            f"{SC}.seccompProfile.localhostProfile",
            "Required value: must be set when seccomp type is Localhost",
        )
    ]
    local = {"type": "Localhost", "localhostProfile": "/etc/../x.json"}
    field = f"{SC}.seccompProfile.localhostProfile"
    assert refused(server, sc("sc3", {"seccompProfile": local})) == [
        ("FieldValueInvalid", field, 'Invalid value: "/etc/../x.json": must be a relative path'),
        ("FieldValueInvalid", field, "Invalid value: \"/etc/../x.json\": must not contain '..'"),
    ]
    runtime = {"type": "RuntimeDefault", "localhostProfile": "x.json"}
    assert refused(server, sc("sc4", {"seccompProfile": runtime})) == [
        (
            "FieldValueInvalid",
            field,
            'Invalid value: core.SeccompProfile{Type:"RuntimeDefault", '
            "LocalhostProfile:(*string)(0xc000000000)}: can only be set when seccomp type is "
            "Localhost",
        )
    ]
    assert refused(server, sc("sc5", {"seccompProfile": {}})) == [
        (
            "FieldValueRequired",
            f"{SC}.seccompProfile.type",
            "Required value: type is required when seccompProfile is set",
        )
    ]


def test_apparmor_profiles(server: APIServer) -> None:
    field = f"{SC}.appArmorProfile.localhostProfile"
    cases: list[tuple[dict[str, Any], tuple[str, str, str]]] = [
        (
            {"type": "Localhost"},
            (
                "FieldValueRequired",
                field,
                "Required value: must be set when AppArmor type is Localhost",
            ),
        ),
        (
            {"type": "Localhost", "localhostProfile": " p "},
            (
                "FieldValueInvalid",
                field,
                'Invalid value: " p ": must not be padded with whitespace',
            ),
        ),
        (
            {"type": "Localhost", "localhostProfile": ""},
            (
                "FieldValueRequired",
                field,
                "Required value: must be set when AppArmor type is Localhost",
            ),
        ),
        (
            {"type": "Unconfined", "localhostProfile": "p"},
            (
                "FieldValueInvalid",
                field,
                'Invalid value: "p": can only be set when AppArmor type is Localhost',
            ),
        ),
        (
            {},
            (
                "FieldValueRequired",
                f"{SC}.appArmorProfile.type",
                "Required value: type is required when appArmorProfile is set",
            ),
        ),
        (
            {"type": "Strict"},
            (
                "FieldValueNotSupported",
                f"{SC}.appArmorProfile.type",
                f'Unsupported value: "Strict": supported values: {TYPES}',
            ),
        ),
    ]
    for n, (profile, cause) in enumerate(cases):
        assert refused(server, sc(f"aa{n}", {"appArmorProfile": profile})) == [cause]


def test_windows_options(server: APIServer) -> None:
    field = f"{SC}.windowsOptions"
    options = {"gmsaCredentialSpecName": "Bad_Name", "gmsaCredentialSpec": "", "runAsUserName": ""}
    assert refused(server, sc("win1", {"windowsOptions": options})) == [
        (
            "FieldValueInvalid",
            f"{field}.gmsaCredentialSpecName",
            'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "FieldValueInvalid",
            f"{field}.gmsaCredentialSpec",
            'Invalid value: "": gmsaCredentialSpec cannot be an empty string',
        ),
        (
            "FieldValueInvalid",
            f"{field}.runAsUserName",
            'Invalid value: "": runAsUserName cannot be an empty string',
        ),
    ]
    user = ".bad\\a@b"
    assert refused(server, sc("win2", {"windowsOptions": {"runAsUserName": user}})) == [
        (
            "FieldValueInvalid",
            f"{field}.runAsUserName",
            "Invalid value: \".bad\\\\a@b\": runAsUserName's Domain doesn't match the "
            "NetBios nor the DNS format",
        ),
        (
            "FieldValueInvalid",
            f"{field}.runAsUserName",
            'Invalid value: ".bad\\\\a@b": runAsUserName\'s User cannot contain the '
            'following characters: "/\\:;|=,+*?<>@[]',
        ),
    ]


def test_init_container_security_context(server: APIServer) -> None:
    init = {"name": "init", "image": "busybox", "securityContext": {"runAsUser": -5}}
    assert refused(server, pod("initsc", initContainers=[init])) == [
        (
            "FieldValueInvalid",
            "spec.initContainers[0].securityContext.runAsUser",
            f"Invalid value: -5: {ID_RANGE}",
        )
    ]


# -- the pod security context ------------------------------------------------


def test_pod_sysctls(server: APIServer) -> None:
    sysctls = [
        {"name": ""},
        {"name": "Net.Bad"},
        {"name": "kernel.shm_rmid_forced", "value": "1"},
        {"name": "kernel.shm_rmid_forced", "value": "0"},
        {"name": "net/ipv4/ip_forward", "value": "1"},
    ]
    regex = (
        "must have at most 253 characters and match regex "
        "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
    )
    spec = {"securityContext": {"sysctls": sysctls}, "hostNetwork": True, "hostIPC": True}
    assert refused(server, pod("sysctls", **spec)) == [
        ("FieldValueRequired", f"{PSC}.sysctls[0].name", "Required value"),
        ("FieldValueInvalid", f"{PSC}.sysctls[1].name", f'Invalid value: "Net.Bad": {regex}'),
        (
            "FieldValueInvalid",
            f"{PSC}.sysctls[2].name",
            "Invalid value: \"kernel.shm_rmid_forced\": may not be specified when 'hostIPC' is "
            "true",
        ),
        (
            "FieldValueDuplicate",
            f"{PSC}.sysctls[3].name",
            'Duplicate value: "kernel.shm_rmid_forced"',
        ),
        (
            "FieldValueInvalid",
            f"{PSC}.sysctls[3].name",
            "Invalid value: \"kernel.shm_rmid_forced\": may not be specified when 'hostIPC' is "
            "true",
        ),
        (
            "FieldValueInvalid",
            f"{PSC}.sysctls[4].name",
            "Invalid value: \"net/ipv4/ip_forward\": may not be specified when 'hostNetwork' is "
            "true",
        ),
    ]


def test_pod_security_context_policies_and_profiles(server: APIServer) -> None:
    ctx = {
        "runAsUser": -1,
        "fsGroupChangePolicy": "Sometimes",
        "seccompProfile": {"type": "Localhost", "localhostProfile": "../p.json"},
        "windowsOptions": {"runAsUserName": "a\\b\\c"},
        "appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"},
    }
    assert refused(
        server, pod("podsc", securityContext=ctx, shareProcessNamespace=True, hostPID=True)
    ) == [
        ("FieldValueInvalid", f"{PSC}.runAsUser", f"Invalid value: -1: {ID_RANGE}"),
        (
            "FieldValueInvalid",
            f"{PSC}.shareProcessNamespace",
            "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
        ),
        (
            "FieldValueNotSupported",
            f"{PSC}.fsGroupChangePolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "OnRootMismatch"',
        ),
        (
            "FieldValueInvalid",
            f"{PSC}.seccompProfile.localhostProfile",
            "Invalid value: \"../p.json\": must not contain '..'",
        ),
        (
            "FieldValueInvalid",
            f"{PSC}.windowsOptions.runAsUserName",
            'Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one backslash',
        ),
        (
            "FieldValueInvalid",
            f"{PSC}.appArmorProfile.localhostProfile",
            'Invalid value: "p": can only be set when AppArmor type is Localhost',
        ),
    ]


# -- affinity ----------------------------------------------------------------


def test_node_affinity_required_terms(server: APIServer) -> None:
    empty = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    assert refused(server, pod("na0", affinity=empty)) == [
        ("FieldValueRequired", REQ, "Required value: must have at least one node selector term")
    ]
    term = {
        "matchExpressions": [
            {"key": "zone", "operator": "In"},
            {"key": "zone", "operator": "Exists", "values": ["a"]},
            {"key": "cpus", "operator": "Gt", "values": ["1", "2"]},
            {"key": "bad key", "operator": "Near", "values": ["not a label value!"]},
        ],
        "matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
            {"key": "spec.nodeName", "operator": "Exists"},
            {"key": "metadata.name", "operator": "NotIn", "values": ["Bad_Node"]},
        ],
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    t0 = f"{REQ}[0]"
    assert refused(server, pod("na1", affinity=affinity)) == [
        (
            "FieldValueRequired",
            f"{t0}.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "FieldValueForbidden",
            f"{t0}.matchExpressions[1].values",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            "FieldValueRequired",
            f"{t0}.matchExpressions[2].values",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        (
            "FieldValueInvalid",
            f"{t0}.matchExpressions[3].operator",
            'Invalid value: "Near": not a valid selector operator',
        ),
        (
            "FieldValueInvalid",
            f"{t0}.matchExpressions[3].key",
            f'Invalid value: "bad key": {QNAME}',
        ),
        (
            "FieldValueRequired",
            f"{t0}.matchFields[0].values",
            "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node "
            "field selector",
        ),
        (
            "FieldValueInvalid",
            f"{t0}.matchFields[1].operator",
            'Invalid value: "Exists": not a valid selector operator',
        ),
        (
            "FieldValueInvalid",
            f"{t0}.matchFields[1].key",
            'Invalid value: "spec.nodeName": not a valid field selector key',
        ),
        (
            "FieldValueInvalid",
            f"{t0}.matchFields[2].values[0]",
            'Invalid value: "Bad_Node": a lowercase RFC 1123 subdomain must consist of lower '
            "case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ]


def test_preferred_node_affinity_weight(server: APIServer) -> None:
    preferred = [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Lt"}]}},
        {"weight": 101, "preference": {}},
    ]
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    pp = f"{NA}.preferredDuringSchedulingIgnoredDuringExecution"
    assert refused(server, pod("na2", affinity=affinity)) == [
        ("FieldValueInvalid", f"{pp}[0].weight", "Invalid value: 0: must be in the range 1-100"),
        (
            "FieldValueRequired",
            f"{pp}[0].preference.matchExpressions[0].values",
            "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
        ),
        ("FieldValueInvalid", f"{pp}[1].weight", "Invalid value: 101: must be in the range 1-100"),
    ]


def test_pod_affinity_terms(server: APIServer) -> None:
    term = {
        "labelSelector": {
            "matchLabels": {"app": "bad value!"},
            "matchExpressions": [
                {"key": "tier", "operator": "NotIn"},
                {"key": "tier", "operator": "DoesNotExist", "values": ["x"]},
                {"key": "tier", "operator": "Equals", "values": ["-bad-"]},
            ],
        },
        "namespaces": ["Bad_NS"],
        "topologyKey": "",
    }
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    t0 = f"{PA}[0]"
    assert refused(server, pod("pa1", affinity=affinity)) == [
        (
            "FieldValueInvalid",
            f"{t0}.labelSelector.matchLabels",
            f'Invalid value: "bad value!": {LABEL_VALUE}',
        ),
        (
            "FieldValueRequired",
            f"{t0}.labelSelector.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "FieldValueForbidden",
            f"{t0}.labelSelector.matchExpressions[1].values",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            "FieldValueInvalid",
            f"{t0}.labelSelector.matchExpressions[2].operator",
            'Invalid value: "Equals": not a valid selector operator',
        ),
        (
            "FieldValueInvalid",
            f"{t0}.labelSelector.matchExpressions[2].values[0]",
            f'Invalid value: "-bad-": {LABEL_VALUE}',
        ),
        (
            "FieldValueInvalid",
            f"{t0}.namespace",
            'Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case '
            "alphanumeric characters or '-', and must start and end with an alphanumeric "
            "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        ("FieldValueRequired", f"{t0}.topologyKey", "Required value: can not be empty"),
        (
            "FieldValueInvalid",
            f"{t0}.topologyKey",
            'Invalid value: "": name part must be non-empty',
        ),
        ("FieldValueInvalid", f"{t0}.topologyKey", f'Invalid value: "": {QNAME}'),
    ]


def test_pod_anti_affinity_weights_and_label_keys(server: APIServer) -> None:
    preferred = [
        {
            "weight": 0,
            "podAffinityTerm": {
                "labelSelector": {
                    "matchLabels": {"app": "x"},
                    "matchExpressions": [{"key": "app", "operator": "Exists"}],
                },
                "matchLabelKeys": ["app", "version"],
                "mismatchLabelKeys": ["version"],
                "topologyKey": "kubernetes.io/hostname",
            },
        },
        {
            "weight": 1,
            "podAffinityTerm": {"matchLabelKeys": ["app"], "topologyKey": "zone"},
        },
    ]
    affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    # In a template: a Pod's matchLabelKeys are merged into its selector from
    # its labels before validation (MatchLabelKeysInPodAffinity, beta in 1.32).
    spec = pod("x", affinity=affinity)["spec"]
    pp = "spec.template.spec.affinity.podAntiAffinity"
    pp += ".preferredDuringSchedulingIgnoredDuringExecution"
    assert refused(server, deployment("paa", spec)) == [
        ("FieldValueInvalid", f"{pp}[0].weight", "Invalid value: 0: must be in the range 1-100"),
        (
            "FieldValueInvalid",
            f"{pp}[0].podAffinityTerm[0]",
            'Invalid value: "app": exists in both matchLabelKeys and labelSelector',
        ),
        (
            "FieldValueInvalid",
            f"{pp}[0].podAffinityTerm.matchLabelKeys[1]",
            'Invalid value: "version": exists in both matchLabelKeys and mismatchLabelKeys',
        ),
        (
            "FieldValueForbidden",
            f"{pp}[1].podAffinityTerm.matchLabelKeys",
            "Forbidden: must not be specified when labelSelector is not set",
        ),
    ]


# -- topology spread constraints ---------------------------------------------


def test_topology_spread_constraints(server: APIServer) -> None:
    constraints = [
        {
            "maxSkew": 0,
            "topologyKey": "",
            "whenUnsatisfiable": "Sometimes",
            "minDomains": 0,
            "nodeAffinityPolicy": "Maybe",
            "nodeTaintsPolicy": "Never",
        },
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "minDomains": 2,
            "labelSelector": {"matchLabels": {"app": "x"}},
            "matchLabelKeys": ["app", "bad key"],
        },
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
        {
            "maxSkew": 1,
            "topologyKey": "node",
            "whenUnsatisfiable": "DoNotSchedule",
            "matchLabelKeys": ["pod-template-hash"],
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
        },
        {
            "maxSkew": 1,
            "topologyKey": "rack",
            "whenUnsatisfiable": "DoNotSchedule",
            "matchLabelKeys": ["app"],
        },
    ]
    assert refused(server, pod("tsc", topologySpreadConstraints=constraints)) == [
        ("FieldValueInvalid", f"{TSC}[0].maxSkew", "Invalid value: 0: must be greater than zero"),
        ("FieldValueRequired", f"{TSC}[0].topologyKey", "Required value: can not be empty"),
        (
            "FieldValueNotSupported",
            f"{TSC}[0].whenUnsatisfiable",
            'Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway"',
        ),
        (
            "FieldValueInvalid",
            f"{TSC}[0].minDomains",
            "Invalid value: 0: must be greater than zero",
        ),
        (
            "FieldValueInvalid",
            f"{TSC}[0].minDomains",
            "Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
            "Sometimes",
        ),
        (
            "FieldValueNotSupported",
            f"{TSC}[0].nodeAffinityPolicy",
            'Unsupported value: "Maybe": supported values: "Honor", "Ignore"',
        ),
        (
            "FieldValueNotSupported",
            f"{TSC}[0].nodeTaintsPolicy",
            'Unsupported value: "Never": supported values: "Honor", "Ignore"',
        ),
        (
            "FieldValueDuplicate",
            f"{TSC}[1].{{topologyKey, whenUnsatisfiable}}",
            'Duplicate value: "{zone, ScheduleAnyway}"',
        ),
        (
            "FieldValueInvalid",
            f"{TSC}[1].minDomains",
            "Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not "
            "ScheduleAnyway",
        ),
        (
            "FieldValueInvalid",
            f"{TSC}[1].matchLabelKeys[0]",
            'Invalid value: "app": exists in both matchLabelKeys and labelSelector',
        ),
        ("FieldValueInvalid", f"{TSC}[1].matchLabelKeys[1]", f'Invalid value: "bad key": {QNAME}'),
        (
            "FieldValueRequired",
            f"{TSC}[3].labelSelector.matchExpressions[0].values",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            "FieldValueForbidden",
            f"{TSC}[4].matchLabelKeys",
            "Forbidden: must not be specified when labelSelector is not set",
        ),
    ]


# -- through a template, and valid specs -------------------------------------


def test_rules_apply_to_a_deployment_template(server: APIServer) -> None:
    spec = {
        "containers": [
            {"name": "c", "image": "nginx", "securityContext": {"seccompProfile": {"type": "X"}}}
        ],
        "securityContext": {"fsGroupChangePolicy": "Never"},
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}},
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Later"}
        ],
    }
    t = "spec.template.spec"
    anti = f"{t}.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    assert refused(server, deployment("tmpl", spec)) == [
        (
            "FieldValueNotSupported",
            f"{t}.containers[0].securityContext.seccompProfile.type",
            f'Unsupported value: "X": supported values: {TYPES}',
        ),
        (
            "FieldValueNotSupported",
            f"{t}.securityContext.fsGroupChangePolicy",
            'Unsupported value: "Never": supported values: "Always", "OnRootMismatch"',
        ),
        ("FieldValueRequired", f"{anti}.topologyKey", "Required value: can not be empty"),
        (
            "FieldValueInvalid",
            f"{anti}.topologyKey",
            'Invalid value: "": name part must be non-empty',
        ),
        ("FieldValueInvalid", f"{anti}.topologyKey", f'Invalid value: "": {QNAME}'),
        (
            "FieldValueNotSupported",
            f"{t}.topologySpreadConstraints[0].whenUnsatisfiable",
            'Unsupported value: "Later": supported values: "DoNotSchedule", "ScheduleAnyway"',
        ),
    ]


VALID_SPEC: dict[str, Any] = {
    "containers": [
        {
            "name": "app",
            "image": "nginx:1.27",
            "securityContext": {
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "runAsNonRoot": True,
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/app.json"},
                "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-app"},
                "seLinuxOptions": {"level": "s0:c123,c456"},
            },
        },
        {"name": "debug", "image": "busybox", "securityContext": {"privileged": True}},
    ],
    "initContainers": [
        {
            "name": "init",
            "image": "busybox",
            "securityContext": {"windowsOptions": {"runAsUserName": "DOMAIN\\user"}},
        }
    ],
    "securityContext": {
        "runAsUser": 1000,
        "fsGroup": 2000,
        "fsGroupChangePolicy": "OnRootMismatch",
        "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}],
        "seccompProfile": {"type": "RuntimeDefault"},
        "appArmorProfile": {"type": "Unconfined"},
        "windowsOptions": {"gmsaCredentialSpecName": "gmsa-spec", "runAsUserName": "user"},
    },
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                            {"key": "cpus", "operator": "Gt", "values": ["2"]},
                            {"key": "spot", "operator": "DoesNotExist"},
                        ],
                        "matchFields": [
                            {"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}
                        ],
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]},
                }
            ],
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "namespaces": ["default"],
                    "namespaceSelector": {},
                    "topologyKey": "topology.kubernetes.io/zone",
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "podAffinityTerm": {
                        "labelSelector": {
                            "matchExpressions": [
                                {"key": "tier", "operator": "In", "values": ["web"]}
                            ]
                        },
                        "matchLabelKeys": ["pod-template-hash"],
                        "mismatchLabelKeys": ["team"],
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        },
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "minDomains": 3,
            "nodeAffinityPolicy": "Honor",
            "nodeTaintsPolicy": "Ignore",
            "labelSelector": {"matchLabels": {"tier": "web"}},
            "matchLabelKeys": ["pod-template-hash"],
        },
        {
            "maxSkew": 2,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
        },
    ],
}


def test_a_valid_pod_and_template_are_accepted(server: APIServer) -> None:
    obj = pod("valid") | {"spec": copy.deepcopy(VALID_SPEC)}
    code, out = request(server, "POST", PODS, obj)
    assert code == 201, out
    code, out = request(server, "POST", DEPLOYMENTS, deployment("valid", copy.deepcopy(VALID_SPEC)))
    assert code == 201, out
    # The same spec is checked, not waved through: one constraint made a
    # repeat of the other is its only error.
    spec = copy.deepcopy(VALID_SPEC)
    spec["topologySpreadConstraints"][1]["whenUnsatisfiable"] = "DoNotSchedule"
    assert refused(server, pod("repeat") | {"spec": spec}) == [
        (
            "FieldValueDuplicate",
            f"{TSC}[0].{{topologyKey, whenUnsatisfiable}}",
            'Duplicate value: "{topology.kubernetes.io/zone, DoNotSchedule}"',
        )
    ]
