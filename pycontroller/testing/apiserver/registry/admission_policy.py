"""ValidatingAdmissionPolicy enforcement: kube-apiserver 1.32's
``ValidatingAdmissionPolicy`` admission plugin (GA, on by default).

``REST`` calls ``admit`` once per write, after the object is defaulted and
validated by its strategy and before it is stored (create, update and patch
including ``/status`` and ``/scale``, apply, delete; dry run included), as
kube's ``createValidation``/``updateValidation``/``deleteValidation`` do.
Policies and bindings are read from storage on every request, so they take
effect as soon as they are stored (kube syncs them through informers, a
short delay later).

What follows kube (``apiserver/pkg/admission/plugin/policy``):

* matching (``matching/matching.go``, ``webhook/predicates``): the policy's
  ``matchConstraints`` and then each binding's ``matchResources`` —
  namespaceSelector (a Namespace's own labels for its CREATE/UPDATE, ignored
  for other cluster-scoped kinds), objectSelector (object or old object),
  excludeResourceRules, resourceRules (groups, versions, ``res/sub`` with
  ``*``, operations, scope, resourceNames), ``matchPolicy`` Equivalent across
  the versions this server serves; the policy resources themselves are never
  admitted (``generic/plugin.go`` ``admissionResources``);
* params (``generic.CollectParams``): ``paramKind`` + ``paramRef`` by name or
  selector, namespaced or not, ``parameterNotFoundAction``, and kube's
  configuration errors;
* evaluation (``validating/validator.go``, ``matchconditions/matcher.go``):
  ``matchConditions``, lazily evaluated ``variables``, ``validations`` with
  ``message``/``messageExpression``/``reason``, ``auditAnnotations`` errors;
  CEL variables ``object``, ``oldObject``, ``request`` (the AdmissionRequest
  as JSON, its ``omitempty`` fields absent), ``params``, ``namespaceObject``,
  ``variables``; ``failurePolicy`` (Fail by default) for errors;
* results (``validating/dispatcher.go``): Deny is kube's Status (the first
  denial; code from ``reason``), Warn a ``Warning`` header, Audit nothing;
* the objects themselves: the validation rules of
  ``pkg/apis/admissionregistration/validation`` that do not depend on
  compiling CEL (required fields, validationActions, reasons, paramRef).

CEL: expressions run on ``schema/cel.py``'s subset evaluator. An expression
that fails there the way CEL fails (no such key, no such overload, division
by zero) is reported with kube's message. A construct outside the subset
cannot be evaluated here at all, so it is treated as an evaluation error —
logged at WARNING with the expression — and the policy's ``failurePolicy``
decides: under Fail (the default) the request is denied with a message that
names the unsupported construct, never silently admitted (kube would have
evaluated it and might deny); under Ignore it is admitted, as kube admits on
errors. Expressions are not type-checked when a policy is stored (kube
rejects a policy whose CEL does not compile; this server accepts it).
"""

from __future__ import annotations

import contextvars
import logging
from typing import TYPE_CHECKING, Any

from pycontroller.labels import selector_from_label_selector
from pycontroller.testing.apiserver.gofmt import quote as _go_quote
from pycontroller.testing.apiserver.http.auth import UserInfo
from pycontroller.testing.apiserver.registry import scale as scale_mod
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import cel
from pycontroller.testing.apiserver.status import (
    StatusError,
    invalid,
    invalid_cause,
    not_supported_cause,
    qualified_resource,
    required_cause,
)

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = ["REQUEST_USER", "Attributes", "admission_request", "admit", "matches"]

logger = logging.getLogger(__name__)

GROUP = "admissionregistration.k8s.io"
POLICIES = (GROUP, "validatingadmissionpolicies")
BINDINGS = (GROUP, "validatingadmissionpolicybindings")
# generic/plugin.go isPolicyResource: never admitted by the policies.
POLICY_RESOURCES = frozenset(
    {
        POLICIES,
        BINDINGS,
        (GROUP, "mutatingadmissionpolicies"),
        (GROUP, "mutatingadmissionpolicybindings"),
    }
)

# The user of the request being served; the HTTP handler sets it after
# authentication. Writes made in-process (simulators, tests calling REST)
# have none: ``request.userInfo`` is then ``{}``.
REQUEST_USER: contextvars.ContextVar[UserInfo | None] = contextvars.ContextVar(
    "pycontroller_apiserver_request_user", default=None
)

_REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}
_REASONS = ("Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized")
_ACTIONS = ("Audit", "Deny", "Warn")
_OPTIONS_KIND = {
    "CREATE": "CreateOptions",
    "UPDATE": "UpdateOptions",
    "DELETE": "DeleteOptions",
}


class Attributes:
    """kube's ``admission.Attributes`` for one request."""

    def __init__(
        self,
        rt: ResourceType,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        subresource: str,
        dry_run: bool,
        name: str,
        namespace: str,
    ) -> None:
        self.rt = rt
        self.operation = operation
        self.object = obj
        self.old_object = old
        self.subresource = subresource
        self.dry_run = dry_run
        self.name = name
        self.namespace = namespace
        if subresource == "scale":
            self.kind = ("autoscaling", "v1", "Scale")
        else:
            self.kind = (rt.group, rt.version, rt.kind)
        self.resource = (rt.group, rt.version, rt.plural)


class _Denied:
    def __init__(self, policy: str, binding: str | None, message: str, reason: str) -> None:
        self.policy = policy
        self.binding = binding
        self.message = message
        self.reason = reason


def admit(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
    dry_run: bool = False,
    warnings: list[str] | None = None,
) -> None:
    """Run the ValidatingAdmissionPolicies bound to this request; raise kube's
    Status for a denial, append Warn failures to ``warnings``. For the policy
    and binding kinds themselves (never admitted), validate the object as
    kube's strategy does instead."""
    rk = (rt.group, rt.plural)
    if rk in POLICY_RESOURCES:
        if operation != "DELETE" and obj is not None and subresource == "":
            _validate_policy_object(rt, obj)
        return
    storage = rest.storage
    bindings = storage.items(BINDINGS)
    if not bindings:
        return
    policies = storage.items(POLICIES)
    if not policies:
        return
    meta = (obj if obj is not None else old or {}).get("metadata") or {}
    name = str(meta.get("name") or "")
    if rk == ("", "namespaces"):
        namespace = name if operation != "CREATE" else ""
    else:
        namespace = str(meta.get("namespace") or "") if rt.namespaced else ""
    if subresource == "scale":
        paths = scale_mod.scale_paths(rt)
        if paths is not None:
            obj = scale_mod.to_scale(rt, obj, paths) if obj is not None else None
            old = scale_mod.to_scale(rt, old, paths) if old is not None else None
    attr = Attributes(rt, operation, obj, old, subresource, dry_run, name, namespace)
    by_policy: dict[str, list[dict[str, Any]]] = {}
    for b in bindings:
        pname = (b.get("spec") or {}).get("policyName")
        if isinstance(pname, str):
            by_policy.setdefault(pname, []).append(b)
    denied: list[_Denied] = []
    for policy in sorted(policies, key=lambda p: str((p.get("metadata") or {}).get("name"))):
        pname = str((policy.get("metadata") or {}).get("name") or "")
        if pname not in by_policy:
            continue
        _dispatch(rest, attr, policy, pname, by_policy[pname], denied, warnings)
    if denied:
        raise _deny_error(attr, denied[0])


# --- matching ---------------------------------------------------------------------


def _exact_or_wildcard(items: Any, requested: str) -> bool:
    return isinstance(items, list) and any(i == "*" or i == requested for i in items)


def _rule_matches(rule: dict[str, Any], attr: Attributes, resource: tuple[str, str, str]) -> bool:
    """``rules.Matcher.Matches``: scope, operation, group, version, resource."""
    scope = rule.get("scope") or "*"
    is_ns_object = resource == ("", "v1", "namespaces")
    if scope == "Namespaced":
        if is_ns_object or attr.namespace == "":
            return False
    elif scope == "Cluster":
        if not (is_ns_object or attr.namespace == ""):
            return False
    elif scope != "*":
        return False
    ops = rule.get("operations")
    if not (isinstance(ops, list) and ("*" in ops or attr.operation in ops)):
        return False
    if not _exact_or_wildcard(rule.get("apiGroups"), resource[0]):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions"), resource[1]):
        return False
    for res in rule.get("resources") or []:
        if not isinstance(res, str):
            continue
        r, _, sub = res.partition("/")
        if (r == "*" or r == resource[2]) and (sub == "*" or sub == attr.subresource):
            return True
    return False


def _named_rule_matches(rule: Any, attr: Attributes, resource: tuple[str, str, str]) -> bool:
    if not isinstance(rule, dict) or not _rule_matches(rule, attr, resource):
        return False
    names = rule.get("resourceNames") or []
    return not names or attr.name in names


def _rules_match(
    rest: REST, rules: Any, match_policy: Any, attr: Attributes
) -> tuple[bool, tuple[str, str, str]]:
    """``matchesResourceRules``: the rules against the request's resource,
    then (matchPolicy Equivalent, the API default) against the other served
    versions of the same resource. Returns the resource that matched."""
    rules = rules if isinstance(rules, list) else []
    for rule in rules:
        if _named_rule_matches(rule, attr, attr.resource):
            return True, attr.resource
    if match_policy == "Exact":
        return False, attr.resource
    group, _, plural = attr.resource
    for other in rest.registry.versions_of(group, plural):
        equivalent = (other.group, other.version, other.plural)
        if equivalent == attr.resource:
            continue
        for rule in rules:
            if _named_rule_matches(rule, attr, equivalent):
                return True, equivalent
    return False, attr.resource


def _labels_of(obj: dict[str, Any] | None) -> dict[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _selector(value: Any) -> Any:
    try:
        return selector_from_label_selector(value if isinstance(value, dict) else {})
    except ValueError:
        return None


def matches(
    rest: REST, constraints: dict[str, Any], attr: Attributes
) -> tuple[bool, tuple[str, str, str]]:
    """``matching.Matcher.Matches`` for a policy's matchConstraints or a
    binding's matchResources (absent selectors select everything)."""
    ns_sel = _selector(constraints.get("namespaceSelector"))
    if ns_sel is None:
        return False, attr.resource
    is_ns = attr.rt.group == "" and attr.rt.plural == "namespaces"
    if (attr.namespace or is_ns) and not ns_sel.empty():
        if is_ns and attr.subresource == "" and attr.operation in ("CREATE", "UPDATE"):
            ns_labels = _labels_of(attr.object) or {}
        else:
            nsobj = rest.storage.get(("", "namespaces"), "", attr.namespace)
            ns_labels = _labels_of(nsobj) or {}
        if not ns_sel.matches(ns_labels):
            return False, attr.resource
    obj_sel = _selector(constraints.get("objectSelector"))
    if obj_sel is None:
        return False, attr.resource
    if not obj_sel.empty():
        new_labels, old_labels = _labels_of(attr.object), _labels_of(attr.old_object)
        if not (
            (new_labels is not None and obj_sel.matches(new_labels))
            or (old_labels is not None and obj_sel.matches(old_labels))
        ):
            return False, attr.resource
    policy = constraints.get("matchPolicy")
    excluded, _ = _rules_match(rest, constraints.get("excludeResourceRules"), policy, attr)
    if excluded:
        return False, attr.resource
    rules = constraints.get("resourceRules")
    if not rules:
        return True, attr.resource
    return _rules_match(rest, rules, policy, attr)


# --- params -----------------------------------------------------------------------


class _ConfigError(Exception):
    pass


def _param_type(rest: REST, param_kind: dict[str, Any]) -> ResourceType:
    api_version = str(param_kind.get("apiVersion") or "")
    kind = str(param_kind.get("kind") or "")
    group, _, version = api_version.rpartition("/")
    rt = rest.registry.by_kind(group, version, kind)
    if rt is None:
        raise _ConfigError(
            f"failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        )
    return rt


def _collect_params(
    rest: REST, param_rt: ResourceType | None, ref: Any, namespace: str
) -> list[Any]:
    """``generic.CollectParams``: the param objects a binding selects."""
    if param_rt is None or not isinstance(ref, dict):
        return [None]
    rk = (param_rt.group, param_rt.plural)
    ref_ns = str(ref.get("namespace") or "")
    if param_rt.namespaced:
        ns = ref_ns or namespace
        if not ns:
            raise _ConfigError(
                "cannot use namespaced paramRef in policy binding that matches "
                "cluster-scoped resources"
            )
    elif ref_ns:
        raise _ConfigError(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
        )
    else:
        ns = ""
    name = ref.get("name")
    params: list[Any]
    if name:
        if ref.get("selector") is not None:
            raise _ConfigError("paramRef.name and paramRef.selector are mutually exclusive")
        found = rest.storage.get(rk, ns, str(name))
        params = [] if found is None else [rest.out(param_rt, found)]
    elif ref.get("selector") is not None:
        sel = _selector(ref.get("selector"))
        if sel is None:
            raise _ConfigError("invalid paramRef.selector")
        params = [
            rest.out(param_rt, o)
            for o in rest.storage.items(rk, ns if param_rt.namespaced else None)
            if sel.matches(_labels_of(o) or {})
        ]
    else:
        raise _ConfigError("one of name or selector must be provided")
    if not params and ref.get("parameterNotFoundAction") == "Deny":
        raise _ConfigError("no params found for policy binding with `Deny` parameterNotFoundAction")
    return params


# --- evaluation -------------------------------------------------------------------


class _EvalError(Exception):
    """An expression that errored (kube's message in ``str()``)."""


def _run(expression: str, env: dict[str, Any], where: str) -> Any:
    try:
        return cel.evaluate_env(expression, env)
    except cel.CELUnsupported as err:
        logger.warning(
            "ValidatingAdmissionPolicy %s: expression %r cannot be evaluated by the "
            "embedded API server (%s); failurePolicy decides",
            where,
            expression,
            err,
        )
        raise _EvalError(
            f"expression '{expression}' resulted in error: {err} (not supported by "
            "pycontroller's embedded API server)"
        ) from err
    except cel.CELError as err:
        raise _EvalError(f"expression '{expression}' resulted in error: {err}") from err
    except (RecursionError, ValueError, TypeError, KeyError, IndexError) as err:
        raise _EvalError(f"expression '{expression}' resulted in error: {err}") from err


class _LazyVariables(dict[str, Any]):
    """``variables``: each evaluated on first use, at most once."""

    def __init__(self, specs: list[dict[str, Any]], env: dict[str, Any], where: str) -> None:
        super().__init__()
        self._specs = {str(v.get("name")): str(v.get("expression") or "") for v in specs}
        self._env = env
        self._where = where
        self._errors: dict[str, cel.CELError] = {}
        self._values: dict[str, Any] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._specs

    def __getitem__(self, key: str) -> Any:
        if key in self._values:
            return self._values[key]
        if key in self._errors:
            raise self._errors[key]
        if key not in self._specs:
            raise KeyError(key)
        try:
            value = _run(self._specs[key], self._env, self._where)
        except _EvalError as err:
            self._errors[key] = cel.CELError(str(err))
            raise self._errors[key] from None
        self._values[key] = value
        return value


def admission_request(
    attr: Attributes, matched: tuple[str, str, str], dry_run: bool
) -> dict[str, Any]:
    """``CreateAdmissionRequest`` as unstructured JSON (``omitempty`` fields absent)."""
    kind = attr.kind
    if matched != attr.resource and attr.subresource != "scale":
        kind = (matched[0], matched[1], attr.rt.kind)
    req: dict[str, Any] = {
        "uid": "",
        "kind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
        "resource": {"group": matched[0], "version": matched[1], "resource": matched[2]},
    }
    if attr.subresource:
        req["subResource"] = attr.subresource
    req["requestKind"] = {"group": attr.kind[0], "version": attr.kind[1], "kind": attr.kind[2]}
    req["requestResource"] = {
        "group": attr.resource[0],
        "version": attr.resource[1],
        "resource": attr.resource[2],
    }
    if attr.subresource:
        req["requestSubResource"] = attr.subresource
    if attr.name:
        req["name"] = attr.name
    if attr.namespace:
        req["namespace"] = attr.namespace
    req["operation"] = attr.operation
    user = REQUEST_USER.get()
    req["userInfo"] = user.to_api() if user is not None else {}
    req["dryRun"] = dry_run
    options_kind = _OPTIONS_KIND.get(attr.operation)
    if options_kind:
        req["options"] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}
    return req


def _namespace_object(rest: REST, attr: Attributes) -> dict[str, Any] | None:
    """``CreateNamespaceObject``: the request's Namespace, metadata trimmed."""
    if not attr.namespace or attr.kind == ("", "v1", "Namespace"):
        return None
    ns = rest.storage.get(("", "namespaces"), "", attr.namespace)
    if ns is None:
        return None
    meta = ns.get("metadata") or {}
    keep = (
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
    )
    out: dict[str, Any] = {"metadata": {k: meta[k] for k in keep if k in meta}}
    for k in ("spec", "status"):
        if k in ns:
            out[k] = ns[k]
    return out


def _dispatch(
    rest: REST,
    attr: Attributes,
    policy: dict[str, Any],
    pname: str,
    bindings: list[dict[str, Any]],
    denied: list[_Denied],
    warnings: list[str] | None,
) -> None:
    """The dispatcher's loop for one policy and its bindings."""
    spec = policy.get("spec") or {}
    fail = spec.get("failurePolicy") != "Ignore"
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict):
        return  # "policy contained no match constraints": never matches
    matched_ok, matched = matches(rest, constraints, attr)
    if not matched_ok:
        return
    param_rt: ResourceType | None = None
    param_kind = spec.get("paramKind")
    if isinstance(param_kind, dict):
        try:
            param_rt = _param_type(rest, param_kind)
        except _ConfigError as err:
            if fail:
                denied.append(_Denied(pname, None, f"failed to configure policy: {err}", ""))
            return
    request = admission_request(attr, matched, attr.dry_run)
    ns_object = _namespace_object(rest, attr)
    obj = attr.object
    old = attr.old_object
    if matched != attr.resource and attr.subresource != "scale":
        # Equivalent match: the object as the matched version (same schema here).
        version = f"{matched[0]}/{matched[1]}" if matched[0] else matched[1]
        obj = {**obj, "apiVersion": version} if obj is not None else None
        old = {**old, "apiVersion": version} if old is not None else None
    for binding in sorted(bindings, key=lambda b: str((b.get("metadata") or {}).get("name"))):
        bname = str((binding.get("metadata") or {}).get("name") or "")
        bspec = binding.get("spec") or {}
        resources = bspec.get("matchResources")
        if isinstance(resources, dict) and not matches(rest, resources, attr)[0]:
            continue
        try:
            params = _collect_params(rest, param_rt, bspec.get("paramRef"), attr.namespace)
        except _ConfigError as err:
            if fail:
                denied.append(_Denied(pname, bname, f"failed to configure binding: {err}", ""))
            continue
        actions = bspec.get("validationActions") or []
        for param in params:
            env: dict[str, Any] = {
                "object": obj,
                "oldObject": old,
                "request": request,
                "namespaceObject": ns_object,
            }
            if param_rt is not None:
                env["params"] = param
            for message, reason in _validate(spec, env, fail, f"'{pname}' binding '{bname}'"):
                if "Deny" in actions:
                    denied.append(_Denied(pname, bname, message, reason))
                if "Warn" in actions and warnings is not None:
                    warnings.append(
                        f"Validation failed for ValidatingAdmissionPolicy '{pname}' with "
                        f"binding '{bname}': {message}"
                    )


def _aggregate(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def _validate(
    spec: dict[str, Any], env: dict[str, Any], fail: bool, where: str
) -> list[tuple[str, str]]:
    """``validator.Validate``: the (message, reason) of each failed decision."""
    conditions = spec.get("matchConditions") or []
    errors: list[str] = []
    # The match-condition matcher is given no namespace (matchconditions/matcher.go).
    cond_env = {**env, "namespaceObject": None}
    for cond in conditions:
        try:
            result = _run(str(cond.get("expression") or ""), cond_env, where)
        except _EvalError as err:
            errors.append(str(err))
            continue
        if result is False:
            return []
    if errors:
        return [(_aggregate(errors), "")] if fail else []
    variables = spec.get("variables") or []
    full_env = dict(env)
    full_env["variables"] = _LazyVariables(list(variables), full_env, where)
    out: list[tuple[str, str]] = []
    for v in spec.get("validations") or []:
        if not isinstance(v, dict):
            continue
        expression = str(v.get("expression") or "")
        try:
            result = _run(expression, full_env, where)
        except _EvalError as err:
            if fail:
                out.append((str(err), ""))
            continue
        if result is True:
            continue
        out.append((_message(v, full_env, where), str(v.get("reason") or "Invalid")))
    for a in spec.get("auditAnnotations") or []:
        if not isinstance(a, dict):
            continue
        expression = str(a.get("valueExpression") or "")
        try:
            value = _run(expression, full_env, where)
        except _EvalError as err:
            if fail:
                out.append((str(err), ""))
            continue
        if value is not None and not isinstance(value, str) and fail:
            out.append(
                (
                    f"valueExpression '{expression}' resulted in unsupported return type: "
                    f"{_cel_type(value)}. Return type must be either string or null.",
                    "",
                )
            )
    return out


def _cel_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _message(v: dict[str, Any], env: dict[str, Any], where: str) -> str:
    """A failed validation's message: messageExpression (a one-line string
    of at most 5000 bytes), else message, else ``failed expression: <expr>``."""
    message = ""
    expr = v.get("messageExpression")
    if isinstance(expr, str) and expr.strip():
        try:
            result = _run(expr, env, where)
        except _EvalError as err:
            logger.info("error while evaluating messageExpression: %s", err)
        else:
            if isinstance(result, str):
                message = result.strip()
                if len(message.encode()) > 5000 or "\n" in message:
                    message = ""
    if not message and v.get("message"):
        message = str(v["message"]).strip()
    if not message:
        message = f"failed expression: {str(v.get('expression') or '').strip()}"
    return message


def _deny_error(attr: Attributes, d: _Denied) -> StatusError:
    """``admission.NewForbidden`` re-coded by the dispatcher: the message names
    the resource and object, the reason and code come from the validation."""
    if d.binding is not None:
        message = (
            f"ValidatingAdmissionPolicy '{d.policy}' with binding '{d.binding}' denied "
            f"request: {d.message}"
        )
    else:
        message = f"ValidatingAdmissionPolicy '{d.policy}' denied request: {d.message}"
    name = attr.name
    if not name:
        src = attr.object or {}
        name = str((src.get("metadata") or {}).get("generateName") or "") or "Unknown"
    resource = qualified_resource(attr.rt)
    reason = d.reason or "Invalid"
    details: dict[str, Any] = {"name": name}
    if attr.rt.group:
        details["group"] = attr.rt.group
    details["kind"] = attr.rt.plural
    details["causes"] = [{"message": message}]
    return StatusError(
        _REASON_CODES.get(reason, 422),
        reason,
        f'{resource} "{name}" is forbidden: {message}',
        details,
    )


# --- validation of the policy objects -----------------------------------------------


def _validate_policy_object(rt: ResourceType, obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if rt.plural == POLICIES[1]:
        causes = _policy_causes(spec)
    elif rt.plural == BINDINGS[1]:
        causes = _binding_causes(spec)
    else:
        return
    if causes:
        raise invalid(rt, str((obj.get("metadata") or {}).get("name") or ""), causes)


def _policy_causes(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """``validateValidatingAdmissionPolicySpec``, less what needs the CEL
    compiler and what kube's defaulting fills (failurePolicy, matchPolicy,
    selectors)."""
    causes: list[dict[str, Any]] = []
    fp = spec.get("failurePolicy")
    if fp is not None and fp not in ("Fail", "Ignore"):
        causes.append(
            not_supported_cause("spec.failurePolicy", _go_quote(str(fp)), ("Fail", "Ignore"))
        )
    constraints = spec.get("matchConstraints")
    if not isinstance(constraints, dict):
        causes.append(required_cause("spec.matchConstraints"))
    elif not constraints.get("resourceRules"):
        causes.append(required_cause("spec.matchConstraints.resourceRules"))
    for i, cond in enumerate(spec.get("matchConditions") or []):
        where = f"spec.matchConditions[{i}]"
        if not str((cond or {}).get("expression") or "").strip():
            causes.append(required_cause(f"{where}.expression"))
        if not (cond or {}).get("name"):
            causes.append(required_cause(f"{where}.name"))
    for i, var in enumerate(spec.get("variables") or []):
        where = f"spec.variables[{i}]"
        if not str((var or {}).get("name") or "").strip():
            causes.append(required_cause(f"{where}.name", "name is not specified"))
        if not str((var or {}).get("expression") or "").strip():
            causes.append(required_cause(f"{where}.expression", "expression is not specified"))
    validations = spec.get("validations") or []
    if not validations and not spec.get("auditAnnotations"):
        detail = "validations or auditAnnotations must contain at least one item"
        causes.append(required_cause("spec.validations", detail))
        causes.append(required_cause("spec.auditAnnotations", detail))
        return causes
    for i, v in enumerate(validations):
        where = f"spec.validations[{i}]"
        v = v if isinstance(v, dict) else {}
        if not str(v.get("expression") or "").strip():
            causes.append(required_cause(f"{where}.expression", "expression is not specified"))
        mexpr = v.get("messageExpression")
        if isinstance(mexpr, str) and mexpr and not mexpr.strip():
            causes.append(
                invalid_cause(
                    f"{where}.messageExpression", _go_quote(mexpr), "must be non-empty if specified"
                )
            )
        msg = v.get("message")
        if isinstance(msg, str) and msg and not msg.strip():
            causes.append(
                invalid_cause(
                    f"{where}.message", _go_quote(msg), "message must be non-empty if specified"
                )
            )
        elif isinstance(msg, str) and ("\n" in msg.strip() or "\r" in msg.strip()):
            causes.append(
                invalid_cause(
                    f"{where}.message", _go_quote(msg), "message must not contain line breaks"
                )
            )
        reason = v.get("reason")
        if reason is not None and reason not in _REASONS:
            causes.append(not_supported_cause(f"{where}.reason", _go_quote(str(reason)), _REASONS))
    return causes


def _binding_causes(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """``validateValidatingAdmissionPolicyBindingSpec`` (policyName, paramRef,
    validationActions)."""
    causes: list[dict[str, Any]] = []
    if not spec.get("policyName"):
        causes.append(required_cause("spec.policyName"))
    ref = spec.get("paramRef")
    if isinstance(ref, dict):
        if ref.get("name") and ref.get("selector") is not None:
            forbidden = "Forbidden: name and selector are mutually exclusive"
            for f in ("name", "selector"):
                causes.append(
                    {
                        "reason": "FieldValueForbidden",
                        "message": forbidden,
                        "field": f"spec.paramRef.{f}",
                    }
                )
        if not ref.get("name") and ref.get("selector") is None:
            causes.append(
                required_cause("spec.paramRef", "one of name or selector must be specified")
            )
        action = ref.get("parameterNotFoundAction")
        if not action:
            causes.append(required_cause("spec.paramRef.parameterNotFoundAction"))
        elif action not in ("Deny", "Allow"):
            causes.append(
                not_supported_cause(
                    "spec.paramRef.parameterNotFoundAction",
                    _go_quote(str(action)),
                    ("Deny", "Allow"),
                )
            )
    actions = spec.get("validationActions")
    actions = actions if isinstance(actions, list) else []
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in _ACTIONS:
            causes.append(
                not_supported_cause(
                    f"spec.validationActions[{i}]", _go_quote(str(action)), _ACTIONS
                )
            )
        if action in seen:
            causes.append(
                {
                    "reason": "FieldValueDuplicate",
                    "message": f"Duplicate value: {_go_quote(str(action))}",
                    "field": f"spec.validationActions[{i}]",
                }
            )
        seen.add(str(action))
    if "Deny" in seen and "Warn" in seen:
        listed = ", ".join(_go_quote(str(a)) for a in actions)
        causes.append(
            invalid_cause(
                "spec.validationActions",
                f"[]admissionregistration.ValidationAction{{{listed}}}",
                "must not contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            )
        )
    if not seen:
        causes.append(
            required_cause("spec.validationActions", "at least one validation action is required")
        )
    return causes
