"""The RBAC rules a request needs, for tests that derive a controller's RBAC from a request log."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def rbac_request(method: str, path: str) -> tuple[str, str, str] | None:
    """(apiGroup, resource, verb) that authorizes a request; None for non-resource paths.

    GET of an item is ``get``, of a collection ``list``, with ``?watch=true|1``
    (or under ``/watch/``) ``watch``; POST/PUT/PATCH/DELETE are
    create/update/patch/delete (DELETE of a collection ``deletecollection``);
    ``/status`` etc. address ``<plural>/<sub>``.
    """
    split = urlsplit(path)
    parts = [p for p in split.path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 2:
        group, rest = parts[1], parts[3:]
    else:
        return None
    watch = parse_qs(split.query).get("watch", [""])[-1] in ("true", "1")
    if rest[:1] == ["watch"]:
        watch, rest = True, rest[1:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # a namespaced resource: drop "namespaces/<ns>"
    if not rest:
        return None
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    if method == "GET":
        verb = "watch" if watch else "get" if len(rest) > 1 else "list"
    elif method == "DELETE" and len(rest) == 1:
        verb = "deletecollection"
    else:
        verb = _VERBS[method]
    return group, resource, verb


def rbac_needed(method: str, path: str) -> set[tuple[str, str, str]]:
    """Every rule a request implies the controller needs.

    A streamed list (a watch with ``sendInitialEvents=true``) also needs
    ``list``: the reflector falls back to a paged LIST by itself on an API
    server without streaming lists, so the deployed RBAC must allow both.
    """
    rule = rbac_request(method, path)
    if rule is None:
        return set()
    needed = {rule}
    query = parse_qs(urlsplit(path).query)
    if rule[2] == "watch" and query.get("sendInitialEvents", [""])[-1] == "true":
        needed.add((rule[0], rule[1], "list"))
    return needed
