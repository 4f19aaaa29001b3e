"""Create-only virtual resources and the special subresources.

- ``authorization.k8s.io/v1``: ``selfsubjectaccessreviews``,
  ``subjectaccessreviews``, ``localsubjectaccessreviews`` (answer
  ``status.allowed`` from the server's authorizer, ``auth.py``) and
  ``selfsubjectrulesreviews`` (the rules the requester holds in a namespace);
- ``authentication.k8s.io/v1``: ``selfsubjectreviews`` (who am I) and
  ``tokenreviews`` (who a token is);
- ``serviceaccounts/{name}/token`` (``TokenRequest``: a token that
  authenticates as the service account, ``kubectl create token``);
- ``namespaces/{name}/finalize`` (replace ``spec.finalizers``);
- ``pods/{name}/eviction`` and the subresources only a kubelet serves
  (``pods/log``, ``exec``, ``attach``, ``portforward``, ``proxy``,
  ``nodes/proxy``, ``services/proxy``): ``eviction.py``.

Nothing here is stored except the finalize write: a review answers with the
request body plus its ``status`` (201 Created), as kube's REST for these
kinds does.
"""

from __future__ import annotations

import copy
import time
from typing import Any

from pycontroller._time import format_rfc3339
from pycontroller.testing.apiserver.http import auth
from pycontroller.testing.apiserver.registry import eviction
from pycontroller.testing.apiserver.registry.rest import REST, WriteOptions, rkey
from pycontroller.testing.apiserver.resource_types import ResourceType
from pycontroller.testing.apiserver.status import (
    bad_request,
    conflict,
    invalid,
    method_not_allowed,
    not_found,
)

__all__ = ["SPECIAL_SUBRESOURCES", "finalize_namespace", "review", "serve", "token_request"]

_AUTHZ = "authorization.k8s.io"
_AUTHN = "authentication.k8s.io"
# TokenRequest's default lifetime (kube: 1 hour unless asked).
_DEFAULT_EXPIRATION = 3600


def _body(rt: ResourceType, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    kind = body.get("kind")
    if kind and kind != rt.kind:
        raise bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )
    out: dict[str, Any] = {"kind": rt.kind, "apiVersion": rt.api_version}
    meta = body.get("metadata")
    out["metadata"] = copy.deepcopy(meta) if isinstance(meta, dict) and meta else {}
    out["metadata"].setdefault("creationTimestamp", None)
    spec = body.get("spec")
    out["spec"] = copy.deepcopy(spec) if isinstance(spec, dict) else {}
    return out


def _cause(field: str, message: str) -> dict[str, Any]:
    return {"reason": "FieldValueInvalid", "message": message, "field": field}


def _attributes_from_spec(
    rt: ResourceType, user: auth.UserInfo, spec: dict[str, Any], namespace: str | None
) -> auth.Attributes:
    ra = spec.get("resourceAttributes")
    nra = spec.get("nonResourceAttributes")
    if (ra is None) == (nra is None):
        raise invalid(
            rt,
            "",
            [
                _cause(
                    "spec.resourceAttributes",
                    f"Invalid value: {_go_struct(ra)}: exactly one of nonResourceAttributes "
                    "or resourceAttributes must be specified",
                )
            ],
        )
    if isinstance(ra, dict):
        ns = str(ra.get("namespace") or "")
        if namespace is not None and ns != namespace:
            raise invalid(
                rt,
                "",
                [
                    _cause(
                        "spec.resourceAttributes.namespace",
                        f'Invalid value: "{ns}": must match metadata.namespace',
                    )
                ],
            )
        return auth.Attributes(
            user,
            str(ra.get("verb") or ""),
            True,
            namespace=ns,
            api_group=str(ra.get("group") or ""),
            api_version=str(ra.get("version") or ""),
            resource=str(ra.get("resource") or ""),
            subresource=str(ra.get("subresource") or ""),
            name=str(ra.get("name") or ""),
        )
    assert isinstance(nra, dict)
    return auth.Attributes(user, str(nra.get("verb") or ""), False, path=str(nra.get("path") or ""))


def _go_struct(v: Any) -> str:
    return "null" if v is None else "{}"


def _access_status(authorizer: auth.Authorizer, a: auth.Attributes) -> dict[str, Any]:
    allowed, reason = authorizer.authorize(a)
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return status


def review(
    rest: REST,
    authenticator: auth.Authenticator,
    authorizer: auth.Authorizer,
    user: auth.UserInfo,
    rt: ResourceType,
    namespace: str | None,
    body: Any,
) -> dict[str, Any]:
    """Answer a create of one of the review kinds (the object with its status)."""
    obj = _body(rt, body)
    spec = obj["spec"]
    kind = (rt.group, rt.kind)
    if kind == (_AUTHZ, "SelfSubjectAccessReview"):
        obj["status"] = _access_status(authorizer, _attributes_from_spec(rt, user, spec, None))
        spec.pop("user", None)
    elif kind in ((_AUTHZ, "SubjectAccessReview"), (_AUTHZ, "LocalSubjectAccessReview")):
        name = str(spec.get("user") or "")
        groups = tuple(str(g) for g in spec.get("groups") or [])
        if not name and not groups:
            raise invalid(
                rt,
                "",
                [_cause("spec.user", 'Invalid value: "": at least one of user or group must '
                        "be specified")],
            )  # fmt: skip
        extra = spec.get("extra") if isinstance(spec.get("extra"), dict) else {}
        subject = auth.UserInfo(
            name,
            uid=str(spec.get("uid") or ""),
            groups=groups,
            extra={k: tuple(v) for k, v in (extra or {}).items() if isinstance(v, list)},
        )
        ns = namespace if kind[1] == "LocalSubjectAccessReview" else None
        if ns is not None:
            obj["metadata"]["namespace"] = ns
        obj["status"] = _access_status(authorizer, _attributes_from_spec(rt, subject, spec, ns))
    elif kind == (_AUTHZ, "SelfSubjectRulesReview"):
        ns = str(spec.get("namespace") or "")
        resource_rules, non_resource = authorizer.rules_for(user, ns)
        obj["status"] = {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource,
            "incomplete": False,
        }
    elif kind == (_AUTHN, "SelfSubjectReview"):
        obj.pop("spec", None)
        obj["status"] = {"userInfo": user.to_api()}
    elif kind == (_AUTHN, "TokenReview"):
        token = spec.get("token")
        if not isinstance(token, str) or not token:
            raise invalid(rt, "", [_cause("spec.token", "Required value: token is required")])
        found = authenticator.lookup(token)
        audiences = [str(a) for a in spec.get("audiences") or []]
        if found is None:
            obj["status"] = {"user": {}}
        else:
            obj["status"] = {"authenticated": True, "user": found.to_api()}
            if audiences:
                obj["status"]["audiences"] = audiences
    else:
        raise method_not_allowed()
    return obj


def token_request(
    rest: REST,
    authenticator: auth.Authenticator,
    sa_rt: ResourceType,
    namespace: str,
    name: str,
    body: Any,
) -> dict[str, Any]:
    """``POST serviceaccounts/{name}/token``: a ``TokenRequest`` whose
    ``status.token`` authenticates as the service account."""
    sa = rest.storage.get(rkey(sa_rt), namespace, name)
    if sa is None:
        raise not_found(sa_rt, name)
    req: dict[str, Any] = body if isinstance(body, dict) else {}
    raw_spec = req.get("spec")
    spec: dict[str, Any] = copy.deepcopy(raw_spec) if isinstance(raw_spec, dict) else {}
    expiration = spec.get("expirationSeconds")
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        expiration = _DEFAULT_EXPIRATION
    spec["expirationSeconds"] = expiration
    spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
    spec.setdefault("boundObjectRef", None)
    uid = str((sa.get("metadata") or {}).get("uid") or "")
    token = authenticator.issue(auth.service_account_user(namespace, name, uid))
    meta = req.get("metadata") if isinstance(req.get("metadata"), dict) else {}
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": (meta or {}).get("creationTimestamp"),
        },
        "spec": spec,
        "status": {
            "token": token,
            "expirationTimestamp": format_rfc3339(time.time() + expiration),
        },
    }


def finalize_namespace(
    rest: REST, ns_rt: ResourceType, name: str, body: Any, opts: WriteOptions
) -> dict[str, Any]:
    """``PUT namespaces/{name}/finalize``: replace ``spec.finalizers`` only
    (kube's ``namespaceFinalizeStrategy``)."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request must be a JSON object")
    with rest.storage.lock:
        old = rest.storage.get(rkey(ns_rt), "", name)
        if old is None:
            raise not_found(ns_rt, name)
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if rv and str(rv) != (old.get("metadata") or {}).get("resourceVersion"):
            raise conflict(ns_rt, name)
        new = copy.deepcopy(old)
        fins = (body.get("spec") or {}).get("finalizers")
        spec = new.setdefault("spec", {})
        if fins:
            spec["finalizers"] = [str(f) for f in fins]
        else:
            spec.pop("finalizers", None)
        if new == old or opts.dry_run:
            return rest.out(ns_rt, new)
        return rest.out(ns_rt, rest.replace_locked(ns_rt, old, new))


SPECIAL_SUBRESOURCES = frozenset({"finalize", "token", "eviction"}) | eviction.KUBELET_ONLY


def serve(
    rest: REST,
    authenticator: auth.Authenticator,
    authorizer: auth.Authorizer,
    user: auth.UserInfo,
    method: str,
    rt: ResourceType,
    namespace: str | None,
    name: str | None,
    subresource: str,
    body: Any,
    opts: WriteOptions,
) -> tuple[int, dict[str, Any]] | None:
    """Serve a request for a review kind or a special subresource; None when
    the request is for neither (the caller serves it)."""
    if rt.extra.get("virtual"):
        if method != "POST" or name is not None:
            raise method_not_allowed()
        return 201, review(rest, authenticator, authorizer, user, rt, namespace, body)
    if name is None or subresource not in SPECIAL_SUBRESOURCES:
        return None
    if subresource == "token" and (rt.group, rt.plural) == ("", "serviceaccounts"):
        if method != "POST":
            raise method_not_allowed()
        return 201, token_request(rest, authenticator, rt, namespace or "", name, body)
    if subresource == "finalize" and (rt.group, rt.plural) == ("", "namespaces"):
        if method != "PUT":
            raise method_not_allowed()
        return 200, finalize_namespace(rest, rt, name, body, opts)
    if subresource == "eviction" and (rt.group, rt.plural) == ("", "pods"):
        if method != "POST":
            raise method_not_allowed()
        return eviction.evict(
            rest,
            rt,
            namespace or "",
            name,
            body,
            query_dry_run=opts.dry_run,
            user_agent=opts.user_agent,
        )
    if subresource in eviction.KUBELET_SUBRESOURCES.get((rt.group, rt.plural), ()):
        raise eviction.kubelet_only(rest, rt, namespace, name, subresource)
    return None
