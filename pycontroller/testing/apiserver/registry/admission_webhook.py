"""Admission webhooks: kube-apiserver 1.32's ``MutatingAdmissionWebhook`` and
``ValidatingAdmissionWebhook`` admission plugins (on by default).

``REST`` calls ``mutate`` before a write's strategy runs (the object the
webhooks see is decoded and defaulted; a patch they return is applied and
the result defaulted again) and ``validate`` after the
ValidatingAdmissionPolicies, as kube's admission chain orders them. Create,
update and patch (``/status`` and ``/scale`` too, the latter as a ``Scale``),
apply and delete are admitted; dry run included. Configurations are read
from storage on every request (kube syncs them through informers).

What follows kube (``apiserver/pkg/admission/plugin/webhook``):

* which webhooks are called (``generic/webhook.go`` ``ShouldCallHook``):
  configurations in name order, their webhooks in order; namespaceSelector,
  objectSelector, ``rules`` (``rules.Matcher``, shared with
  ``admission_policy``), ``matchPolicy`` Equivalent across the versions this
  server serves, ``matchConditions`` (CEL: ``object``, ``oldObject``,
  ``request``; an error denies under failurePolicy Fail, skips the webhook
  under Ignore). Configuration and policy objects themselves are never sent
  to webhooks (``IsExemptAdmissionConfigurationResource``);
* the call (``util/webhook``, ``request/admissionreview.go``): an
  ``AdmissionReview`` (``admission.k8s.io/v1``, or ``v1beta1`` when that is the
  first version the webhook lists) POSTed over HTTPS with ``?timeout=Ns``
  (``timeoutSeconds``, 10 by default), the server verified against
  ``caBundle`` (the system roots without one) and, for a ``service``
  reference, the name ``<service>.<namespace>.svc``;
* the answer (``VerifyAdmissionResponse``): the response's uid and kind for
  v1; a validating webhook may not return a patch; a mutating one returns a
  base64 ``JSONPatch`` with ``patchType``; ``warnings`` become ``Warning``
  headers; a denial is ``ToStatusErr``'s Status ("admission webhook "x"
  denied the request: ...", the webhook's code, at least 400);
* failures (``failurePolicy``, Fail by default): a webhook that cannot be
  called, times out or answers badly is kube's 500 ``InternalError``
  ("failed calling webhook ...") under Fail and is skipped under Ignore;
  a dry run reaching a webhook whose ``sideEffects`` are not ``None`` or
  ``NoneOnDryRun`` is a 400;
* mutating webhooks with ``reinvocationPolicy: IfNeeded`` are called once
  more when a later webhook changed the object.

Services: kube-apiserver routes a ``service`` reference to the Service's
cluster IP. This server has no Service network, so only an ``ExternalName``
Service (``externalName: 127.0.0.1`` or ``localhost``, resolved as kube's
``ResolveCluster`` does) or a ``url`` can reach a webhook; a reference to
another kind of Service fails as a call error naming why.

Locking: a webhook may call back into this server (to read other objects),
so the storage lock is released while webhooks run. Afterwards the write
checks that the object it started from is still the stored one; if another
write got in between, the whole request is run again (``Stale``), as kube's
``GuaranteedUpdate`` retries its transform. A caller that itself holds the
storage lock around the write (in-process compound operations) keeps it
held during the call.

Not done: webhook configuration validation is kube's subset in
``validate_configuration`` (names, clientConfig, sideEffects,
admissionReviewVersions, timeoutSeconds, rules' operations); audit
annotations are dropped (no audit log here); no metrics.
"""

from __future__ import annotations

import base64
import copy
import errno
import logging
import socket
import ssl
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.client import HTTPConnection, HTTPException
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pycontroller import _json
from pycontroller.testing.apiserver.gofmt import quote as _go_quote
from pycontroller.testing.apiserver.registry import admission_policy as policy
from pycontroller.testing.apiserver.registry import scale as scale_mod
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.schema import cel
from pycontroller.testing.apiserver.status import (
    StatusError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    invalid_cause,
    not_supported_cause,
    required_cause,
)

if TYPE_CHECKING:
    from pycontroller.testing.apiserver.registry.rest import REST

__all__ = ["Stale", "configured", "mutate", "validate", "validate_configuration"]

logger = logging.getLogger(__name__)

GROUP = policy.GROUP
MUTATING = (GROUP, "mutatingwebhookconfigurations")
VALIDATING = (GROUP, "validatingwebhookconfigurations")
# IsExemptAdmissionConfigurationResource: the policy resources (which the
# policies exempt too) and the webhook configurations themselves.
_EXEMPT = policy.POLICY_RESOURCES | {MUTATING, VALIDATING}
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class Stale(Exception):
    """The object changed while the storage lock was released for webhooks:
    run the request again. ``error`` is what to answer if retries run out."""

    def __init__(self, error: StatusError) -> None:
        super().__init__(error.message)
        self.error = error


def configured(rest: REST, rt: ResourceType) -> bool:
    """Whether a mutating webhook configuration exists that could see ``rt``."""
    return (rt.group, rt.plural) not in _EXEMPT and bool(rest.storage.items(MUTATING))


# --- the lock -------------------------------------------------------------------------


@contextmanager
def _unlocked(rest: REST) -> Iterator[None]:
    """Release the storage lock (every level this thread holds, if it holds it
    once) for the duration; a thread holding it more than once keeps it."""
    lock: Any = rest.storage.lock
    owned = lock._is_owned()
    if not owned:
        yield
        return
    state = lock._release_save()
    if state[0] > 1:  # re-entered by a compound in-process operation: stay locked
        lock._acquire_restore(state)
        yield
        return
    try:
        yield
    finally:
        lock._acquire_restore(state)


# --- matching -------------------------------------------------------------------------


def _hooks(rest: REST, rk: tuple[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """(configuration name, webhook) in kube's order: configurations by name."""
    out: list[tuple[str, dict[str, Any]]] = []
    configs = sorted(rest.storage.items(rk), key=lambda c: str(c["metadata"].get("name")))
    for config in configs:
        cname = str(config["metadata"].get("name") or "")
        for hook in config.get("webhooks") or []:
            if isinstance(hook, dict):
                out.append((cname, hook))
    return out


def _should_call(
    rest: REST, hook: dict[str, Any], attr: policy.Attributes
) -> tuple[str, str, str] | None:
    """``ShouldCallHook``: the resource the webhook matched, or None."""
    rules = hook.get("rules")
    if not rules:
        return None
    constraints = {
        "namespaceSelector": hook.get("namespaceSelector"),
        "objectSelector": hook.get("objectSelector"),
        "resourceRules": rules,
        "matchPolicy": hook.get("matchPolicy") or "Equivalent",
    }
    matches, matched = policy.matches(rest, constraints, attr)
    if not matches:
        return None
    conditions = hook.get("matchConditions") or []
    if not conditions:
        return matched
    env = {
        "object": attr.object,
        "oldObject": attr.old_object,
        "request": policy.admission_request(attr, matched, attr.dry_run),
    }
    errors: list[str] = []
    for cond in conditions:
        expression = str((cond or {}).get("expression") or "")
        try:
            result = cel.evaluate_env(expression, env)
        except cel.CELError as err:  # CELUnsupported included: we cannot tell, so no silent pass
            errors.append(f"expression '{expression}' resulted in error: {err}")
            continue
        if result is False:
            return None
    if errors:
        if hook.get("failurePolicy") == "Ignore":
            return None
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise forbidden(attr.rt, attr.name, message)
    return matched


# --- the call -------------------------------------------------------------------------


class _CallError(Exception):
    """``ErrCallingWebhook``: the webhook could not be called or answered badly."""


def _endpoint(rest: REST, cc: dict[str, Any]) -> tuple[str, str, int, str, str]:
    """(url as Go prints it, host to dial, port, request path, TLS server name)."""
    url = cc.get("url")
    if isinstance(url, str) and url:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or 443
        return url, host, port, parts.path or "/", host
    svc_ref = cc.get("service") or {}
    ns, name = str(svc_ref.get("namespace") or ""), str(svc_ref.get("name") or "")
    port = int(svc_ref.get("port") or 443)
    path = str(svc_ref.get("path") or "/")
    server_name = f"{name}.{ns}.svc"
    shown = f"https://{server_name}:{port}{path}"
    svc = rest.storage.get(("", "services"), ns, name)
    if svc is None:
        raise _CallError(f'failed to call webhook: Post "{shown}": service "{name}" not found')
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return shown, str(spec.get("externalName") or ""), port, path, server_name
    if spec.get("clusterIP") == "None":
        raise _CallError(
            f'failed to call webhook: Post "{shown}": cannot route to service with ClusterIP "None"'
        )
    raise _CallError(
        f'failed to call webhook: Post "{shown}": the embedded API server has no Service '
        f'network and cannot reach the cluster IP of service "{ns}/{name}"; use a url or an '
        "ExternalName Service"
    )


def _tls_context(cc: dict[str, Any]) -> ssl.SSLContext:
    bundle = cc.get("caBundle")
    if isinstance(bundle, str) and bundle:
        try:
            pem = base64.b64decode(bundle).decode()
            return ssl.create_default_context(cadata=pem)
        except (ValueError, ssl.SSLError) as err:
            raise _CallError(
                f"could not get REST client: unable to load root certificates: {err}"
            ) from None
    return ssl.create_default_context()


_GENERIC_RESPONSES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    413: "the server has rejected the request because the request entity is too large",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted",
}


def _post(rest: REST, hook: dict[str, Any], body: bytes) -> Any:
    """POST the review; the decoded answer, or ``_CallError`` with Go's words."""
    cc = hook.get("clientConfig") or {}
    timeout = int(hook.get("timeoutSeconds") or 10)
    shown, host, port, path, server_name = _endpoint(rest, cc)
    sep = "&" if "?" in shown else "?"
    post = f'failed to call webhook: Post "{shown}{sep}timeout={timeout}s"'
    context = _tls_context(cc)
    try:
        raw = socket.create_connection((host, port), timeout=timeout)
    except TimeoutError:
        raise _CallError(f"{post}: context deadline exceeded") from None
    except OSError as err:
        if err.errno == errno.ECONNREFUSED:
            raise _CallError(
                f"{post}: dial tcp {host}:{port}: connect: connection refused"
            ) from None
        raise _CallError(f"{post}: dial tcp {host}:{port}: {err.strerror or err}") from None
    conn = HTTPConnection(host, port, timeout=timeout)
    try:
        try:
            conn.sock = context.wrap_socket(raw, server_hostname=server_name)
        except ssl.SSLCertVerificationError as err:
            raw.close()
            why = err.verify_message or str(err)
            raise _CallError(f"{post}: tls: failed to verify certificate: x509: {why}") from None
        except (ssl.SSLError, OSError) as err:
            raw.close()
            raise _CallError(f"{post}: remote error: tls: {err}") from None
        conn.request(
            "POST",
            f"{path}{'&' if '?' in path else '?'}timeout={timeout}s",
            body=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, */*",
                "User-Agent": "kube-apiserver-admission",
            },
        )
        response = conn.getresponse()
        data = response.read()
        code = response.status
    except TimeoutError:
        raise _CallError(f"{post}: context deadline exceeded") from None
    except (HTTPException, OSError) as err:
        raise _CallError(f"{post}: {err}") from None
    finally:
        conn.close()
    if not 200 <= code < 300:
        raise _CallError(
            "failed to call webhook: "
            + _GENERIC_RESPONSES.get(
                code,
                f"an error on the server ({_go_quote(data.decode(errors='replace')[:512])}) has "
                "prevented the request from succeeding"
                if code >= 500
                else f"the server responded with the status code {code} but did not return more "
                "information",
            )
        )
    try:
        return _json.loads(data)
    except ValueError as err:
        raise _CallError(
            f"failed to call webhook: couldn't get version/kind; json parse error: {err}"
        ) from None


def _review(
    hook: dict[str, Any], attr: policy.Attributes, matched: tuple[str, str, str], obj: Any
) -> tuple[str, str, dict[str, Any]]:
    """(uid, review version, the AdmissionReview to send): ``CreateAdmissionObjects``."""
    versions = [v for v in hook.get("admissionReviewVersions") or [] if v in ("v1", "v1beta1")]
    if not versions:
        raise _CallError(
            "could not create admission objects: webhook does not accept known "
            "AdmissionReview versions (v1, v1beta1)"
        )
    uid = str(uuid.uuid4())
    request = policy.admission_request(attr, matched, attr.dry_run)
    request["uid"] = uid
    request["object"] = obj
    request["oldObject"] = attr.old_object
    request.setdefault("options", None)
    version = f"admission.k8s.io/{versions[0]}"
    return uid, versions[0], {"kind": "AdmissionReview", "apiVersion": version, "request": request}


def _verify(uid: str, version: str, review: Any, mutating: bool) -> dict[str, Any]:
    """``VerifyAdmissionResponse``: the response, or ``_CallError``."""
    if not isinstance(review, dict):
        raise _CallError("received invalid webhook response: webhook response was absent")
    response = review.get("response")
    if not isinstance(response, dict):
        raise _CallError("received invalid webhook response: webhook response was absent")
    patch, patch_type = response.get("patch"), response.get("patchType")
    if version == "v1":
        got = str(response.get("uid") or "")
        if got != uid:
            raise _CallError(
                f"received invalid webhook response: expected response.uid={_go_quote(uid)}, "
                f"got {_go_quote(got)}"
            )
        if (review.get("apiVersion"), review.get("kind")) != (
            "admission.k8s.io/v1",
            "AdmissionReview",
        ):
            gvk = f"{review.get('apiVersion') or '/'}, Kind={review.get('kind') or ''}"
            raise _CallError(
                "received invalid webhook response: expected webhook response of "
                f"admission.k8s.io/v1, Kind=AdmissionReview, got {gvk}"
            )
        if mutating:
            if patch and patch_type is None:
                raise _CallError(
                    "received invalid webhook response: webhook returned response.patch but "
                    "not response.patchType"
                )
            if not patch and patch_type is not None:
                raise _CallError(
                    "received invalid webhook response: webhook returned response.patchType "
                    "but not response.patch"
                )
            if patch_type is not None and not patch_type:
                raise _CallError(
                    "received invalid webhook response: webhook returned invalid "
                    'response.patchType of ""'
                )
        else:
            if patch:
                raise _CallError(
                    "received invalid webhook response: validating webhook may not return "
                    "response.patch"
                )
            if patch_type is not None:
                raise _CallError(
                    "received invalid webhook response: validating webhook may not return "
                    "response.patchType"
                )
    elif mutating and patch:
        patch_type = "JSONPatch"  # v1beta1 answers were never checked: pinned
    return {**response, "patchType": patch_type if mutating else None}


def _denied(name: str, result: Any) -> StatusError:
    """``ToStatusErr``: the webhook's Status, marked as its denial."""
    result = dict(result) if isinstance(result, dict) else {}
    denied_by = f"admission webhook {_go_quote(name)} denied the request"
    code = result.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    message, reason = str(result.get("message") or ""), str(result.get("reason") or "")
    if message:
        message = f"{denied_by}: {message}"
    elif reason:
        message = f"{denied_by}: {reason}"
    else:
        message = f"{denied_by} without explanation"
    details = result.get("details")
    return StatusError(code, reason, message, details if isinstance(details, dict) else None)


def _internal(message: str) -> StatusError:
    """``apierrors.NewInternalError``."""
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def _call(
    rest: REST,
    hook: dict[str, Any],
    attr: policy.Attributes,
    matched: tuple[str, str, str],
    obj: Any,
    mutating: bool,
    warnings: list[str] | None,
) -> dict[str, Any] | None:
    """Call one webhook; its verified response, or None when a failure is
    ignored (failurePolicy Ignore). Raises the Status that fails the request."""
    name = str(hook.get("name") or "")
    if attr.dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
        if hook.get("sideEffects") is None:
            error = _CallError("Webhook SideEffects is nil")
        else:
            raise bad_request(f"admission webhook {_go_quote(name)} does not support dry run")
    else:
        error = None
    response = None
    if error is None:
        try:
            uid, version, review = _review(hook, attr, matched, obj)
            body = _json.dumps(review)
            with _unlocked(rest):
                answer = _post(rest, hook, body)
            response = _verify(uid, version, answer, mutating)
        except _CallError as err:
            error = err
    if error is not None:
        text = f"failed calling webhook {_go_quote(name)}: {error}"
        if hook.get("failurePolicy") == "Ignore":
            logger.warning("Failed calling webhook, failing open %s: %s", name, text)
            return None
        logger.warning("Failed calling webhook, failing closed %s: %s", name, text)
        raise _internal(text)
    assert response is not None
    if warnings is not None:
        warnings.extend(str(w) for w in response.get("warnings") or [])
    if not response.get("allowed"):
        raise _denied(name, response.get("status"))
    return response


# --- the entry points -----------------------------------------------------------------


def _attributes(
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    subresource: str,
    dry_run: bool,
) -> policy.Attributes:
    meta = (obj if obj is not None else old or {}).get("metadata") or {}
    name = str(meta.get("name") or "")
    if (rt.group, rt.plural) == ("", "namespaces"):
        namespace = name if operation != "CREATE" else ""
    else:
        namespace = str(meta.get("namespace") or "") if rt.namespaced else ""
    return policy.Attributes(rt, operation, obj, old, subresource, dry_run, name, namespace)


def _check_current(rest: REST, rt: ResourceType, attr: policy.Attributes, rv: str | None) -> None:
    """After the lock was released: the stored object is still the one the
    write started from (``rv``; None: still absent)."""
    ns = attr.namespace if rt.namespaced else ""
    current = rest.storage.get((rt.group, rt.plural), ns, attr.name)
    now = None if current is None else str(current["metadata"].get("resourceVersion") or "")
    if now == rv:
        return
    if rv is None:
        raise already_exists(rt, attr.name)  # created by another request meanwhile
    raise Stale(conflict(rt, attr.name))


def mutate(
    rest: REST,
    rt: ResourceType,
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    *,
    subresource: str = "",
    dry_run: bool = False,
    warnings: list[str] | None = None,
    default: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """Run the mutating webhooks; return the object they leave (``obj`` itself
    when none matched). ``default`` defaults an object as the write's decoder
    does (before the first webhook and after each patch). Lock held by the
    caller; released during calls (see the module docstring)."""
    hooks = [] if (rt.group, rt.plural) in _EXEMPT else _hooks(rest, MUTATING)
    if not hooks:
        return obj
    paths = scale_mod.scale_paths(rt) if subresource == "scale" else None
    current = copy.deepcopy(obj) if obj is not None else None
    if current is not None and default is not None and paths is None:
        default(current)
    rv = None if old is None else str((old.get("metadata") or {}).get("resourceVersion") or "")
    as_sent = current
    if paths is not None:
        as_sent = scale_mod.to_scale(rt, current, paths) if current is not None else None
        old = scale_mod.to_scale(rt, old, paths) if old is not None else None
    attr = _attributes(rt, operation, as_sent, old, subresource, dry_run)
    invoked: list[int] = []  # reinvocable webhooks called so far (IfNeeded)
    reinvoke: set[int] = set()
    released = False
    for round_ in (0, 1):
        for i, (_, hook) in enumerate(hooks):
            if round_ == 1 and i not in reinvoke:
                continue
            attr.object = as_sent
            matched = _should_call(rest, hook, attr)
            if matched is None:
                continue
            released = True
            response = _call(rest, hook, attr, matched, as_sent, True, warnings)
            changed = False
            if response is not None and response.get("patch"):
                patched = _apply(hook, as_sent, response)
                if patched is not None:
                    changed = patched != as_sent
                    as_sent = patched
                    if default is not None and paths is None:
                        default(as_sent)
            if changed:
                reinvoke = set(invoked)
            if hook.get("reinvocationPolicy") == "IfNeeded" and i not in invoked:
                invoked.append(i)
            if round_ == 1:
                reinvoke.discard(i)
        if not reinvoke or round_ == 1:
            break
    if released:
        _check_current(rest, rt, attr, rv)
    if paths is not None and as_sent is not None and current is not None:
        replicas = (as_sent.get("spec") or {}).get("replicas", 0)
        if isinstance(replicas, int) and not isinstance(replicas, bool):
            return scale_mod.apply_replicas(current, paths, replicas)
        return current
    return as_sent


def _apply(hook: dict[str, Any], obj: Any, response: dict[str, Any]) -> dict[str, Any] | None:
    """The mutating webhook's JSONPatch applied to ``obj`` (None: an empty patch)."""
    import jsonpatch  # the maintained RFC 6902 implementation registry/patch.py uses too

    name = str(hook.get("name") or "")
    try:
        ops = _json.loads(base64.b64decode(str(response.get("patch")), validate=True))
    except ValueError as err:
        raise _internal(
            f"failed calling webhook {_go_quote(name)}: received undecodable patch in webhook "
            f"response: {err}"
        ) from None
    if not isinstance(ops, list):
        raise _internal(
            f"failed calling webhook {_go_quote(name)}: received undecodable patch in webhook "
            "response: a JSON patch is a list of operations"
        )
    if not ops:
        return None
    if response.get("patchType") != "JSONPatch":
        raise _internal(
            f"failed calling webhook {_go_quote(name)}: unsupported patch type "
            f"{_go_quote(str(response.get('patchType')))}"
        )
    if obj is None:
        raise _internal(
            f"admission webhook {_go_quote(name)} attempted to modify the object, which is "
            "not supported for this operation"
        )
    try:
        patched = jsonpatch.JsonPatch(ops).apply(obj, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as err:
        raise _internal(str(err)) from None
    except (TypeError, KeyError, ValueError, IndexError) as err:
        raise _internal(f"invalid json patch: {err}") from None
    if not isinstance(patched, dict):
        raise _internal("the patched object is not an object")
    return patched


def validate(
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
    """Run the validating webhooks (one after another here; kube calls them in
    parallel and answers the first failure). Lock held by the caller;
    released during calls."""
    hooks = [] if (rt.group, rt.plural) in _EXEMPT else _hooks(rest, VALIDATING)
    if not hooks:
        return
    rv = None if old is None else str((old.get("metadata") or {}).get("resourceVersion") or "")
    if subresource == "scale":
        paths = scale_mod.scale_paths(rt)
        if paths is not None:
            obj = scale_mod.to_scale(rt, obj, paths) if obj is not None else None
            old = scale_mod.to_scale(rt, old, paths) if old is not None else None
    attr = _attributes(rt, operation, obj, old, subresource, dry_run)
    released = False
    for _, hook in hooks:
        matched = _should_call(rest, hook, attr)
        if matched is None:
            continue
        released = True
        _call(rest, hook, attr, matched, obj, False, warnings)
    if released:
        _check_current(rest, rt, attr, rv)


# --- validation of the configuration objects -------------------------------------------


def validate_configuration(rt: ResourceType, obj: dict[str, Any]) -> None:
    """``ValidateValidatingWebhookConfiguration`` / ``...Mutating...``, the
    checks users trip on: webhook names (unique, a domain of three or more
    segments), clientConfig (exactly one of url and service, https, no user
    or fragment), sideEffects, admissionReviewVersions, timeoutSeconds,
    rules' operations, failurePolicy, matchPolicy, reinvocationPolicy."""
    if (rt.group, rt.plural) not in (MUTATING, VALIDATING):
        return
    mutating = (rt.group, rt.plural) == MUTATING
    causes: list[dict[str, Any]] = []
    seen: set[str] = set()
    hooks = obj.get("webhooks")
    for i, hook in enumerate(hooks if isinstance(hooks, list) else []):
        where = f"webhooks[{i}]"
        hook = hook if isinstance(hook, dict) else {}
        name = str(hook.get("name") or "")
        if not name:
            causes.append(required_cause(f"{where}.name"))
        else:
            if name in seen:
                causes.append(
                    {
                        "reason": "FieldValueDuplicate",
                        "message": f"Duplicate value: {_go_quote(name)}",
                        "field": f"{where}.name",
                    }
                )
            seen.add(name)
            if len(name.split(".")) < 3:
                causes.append(
                    invalid_cause(
                        f"{where}.name",
                        _go_quote(name),
                        "should be a domain with at least three segments separated by dots",
                    )
                )
        causes.extend(_client_config_causes(hook.get("clientConfig"), f"{where}.clientConfig"))
        side = hook.get("sideEffects")
        allowed_side = ("None", "NoneOnDryRun")
        if side is None:
            causes.append(
                required_cause(f"{where}.sideEffects", "must specify one of None, NoneOnDryRun")
            )
        elif side not in allowed_side:
            causes.append(
                not_supported_cause(f"{where}.sideEffects", _go_quote(str(side)), allowed_side)
            )
        versions = hook.get("admissionReviewVersions")
        if not versions:
            causes.append(
                required_cause(
                    f"{where}.admissionReviewVersions",
                    "must specify one of v1, v1beta1",
                )
            )
        elif not any(v in ("v1", "v1beta1") for v in versions):
            causes.append(
                invalid_cause(
                    f"{where}.admissionReviewVersions",
                    "[]string{" + ", ".join(_go_quote(str(v)) for v in versions) + "}",
                    "must include at least one of v1, v1beta1",
                )
            )
        timeout = hook.get("timeoutSeconds")
        if isinstance(timeout, int) and not 1 <= timeout <= 30:
            causes.append(
                invalid_cause(
                    f"{where}.timeoutSeconds",
                    str(timeout),
                    "the timeout value must be between 1 and 30 seconds",
                )
            )
        for field, values in (
            ("failurePolicy", ("Fail", "Ignore")),
            ("matchPolicy", ("Equivalent", "Exact")),
        ) + ((("reinvocationPolicy", ("IfNeeded", "Never")),) if mutating else ()):
            value = hook.get(field)
            if value is not None and value not in values:
                causes.append(
                    not_supported_cause(f"{where}.{field}", _go_quote(str(value)), values)
                )
        for j, rule in enumerate(hook.get("rules") or []):
            ops = (rule or {}).get("operations")
            if not ops:
                causes.append(required_cause(f"{where}.rules[{j}].operations"))
            allowed_ops = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
            for k, op in enumerate(ops or []):
                if op not in allowed_ops:
                    causes.append(
                        not_supported_cause(
                            f"{where}.rules[{j}].operations[{k}]", _go_quote(str(op)), allowed_ops
                        )
                    )
    if causes:
        raise invalid(rt, str((obj.get("metadata") or {}).get("name") or ""), causes)


def _client_config_causes(cc: Any, where: str) -> list[dict[str, Any]]:
    """``webhook.ValidateWebhookURL`` / ``ValidateWebhookService``."""
    cc = cc if isinstance(cc, dict) else {}
    url, svc = cc.get("url"), cc.get("service")
    if (url is None) == (svc is None):
        return [required_cause(where, "exactly one of url or service is required")]
    causes: list[dict[str, Any]] = []
    if url is not None:
        parts = urlsplit(str(url))
        field = f"{where}.url"
        if parts.scheme != "https":
            causes.append(
                invalid_cause(field, _go_quote(str(url)), "'https' is the only allowed URL scheme")
            )
        if not parts.hostname:
            causes.append(invalid_cause(field, _go_quote(str(url)), "host must be specified"))
        if parts.username or parts.password:
            causes.append(
                invalid_cause(
                    field, _go_quote(str(url)), "user information is not permitted in the URL"
                )
            )
        if parts.fragment:
            causes.append(
                invalid_cause(field, _go_quote(str(url)), "fragments are not permitted in the URL")
            )
        if parts.query:
            causes.append(
                invalid_cause(
                    field, _go_quote(str(url)), "query parameters are not permitted in the URL"
                )
            )
        return causes
    svc = svc if isinstance(svc, dict) else {}
    if not svc.get("name"):
        causes.append(required_cause(f"{where}.service.name", "service name is required"))
    if not svc.get("namespace"):
        causes.append(required_cause(f"{where}.service.namespace", "service namespace is required"))
    port = svc.get("port")
    if isinstance(port, int) and not 1 <= port <= 65535:
        causes.append(
            invalid_cause(
                f"{where}.service.port",
                str(port),
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    path = svc.get("path")
    if isinstance(path, str) and path and not path.startswith("/"):
        causes.append(
            invalid_cause(f"{where}.service.path", _go_quote(path), "must start with a '/'")
        )
    return causes
