"""PATCH bodies: JSON merge patch, JSON patch, strategic merge patch, apply.

- ``application/merge-patch+json``: RFC 7386 (``null`` deletes, objects merge
  recursively, everything else replaces).
- ``application/json-patch+json``: RFC 6902 via the ``jsonpatch`` package.
- ``application/strategic-merge-patch+json`` (built-in kinds only; custom
  resources answer 415 as kube does, before this module is reached): a port
  of apimachinery 1.32 ``pkg/util/strategicpatch`` ``StrategicMergeMapPatch``
  (``mergeMap``, ``mergeSlice``, ``applyRetainKeysDirective``,
  ``mergePatchIntoOriginal``), including the order rules (``sort.SliceStable``
  with kube's comparator) and the errors kube's patch handler answers with
  (``interpretStrategicMergePatchError``: 400 for a malformed
  ``$retainKeys`` / ``$setElementOrder`` / ``$deleteFromPrimitiveList``
  directive, 422 for lists of lists, otherwise the error text with a 500).
  Each field's patch strategy and merge key come from the pinned Kubernetes
  definitions (``x-kubernetes-patch-strategy`` /
  ``x-kubernetes-patch-merge-key``, the data of the Go struct tags kube's
  ``PatchMetaFromStruct`` reads), walked alongside the object from the
  definition of the target's ``apiVersion``/``kind``. A target without a
  known kind falls back to a by-field-name table (``MERGE_KEYS``).
- ``application/apply-patch+yaml``: server-side apply approximated as a merge
  patch of the applied configuration (no field ownership).

All functions return a new object; inputs are not mutated.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import re
from collections.abc import Callable
from typing import Any

import yaml

from pycontroller import _json
from pycontroller.testing.apiserver.gofmt import quote
from pycontroller.testing.apiserver.schema import definitions as defs_mod
from pycontroller.testing.apiserver.schema.decode import json_kind
from pycontroller.testing.apiserver.schema.structural import _go_float
from pycontroller.testing.apiserver.status import StatusError, bad_request, invalid_patch

logger = logging.getLogger(__name__)

__all__ = [
    "APPLY",
    "JSON_PATCH",
    "MERGE_KEYS",
    "MERGE_PATCH",
    "STRATEGIC",
    "apply_patch",
    "decode_patch",
    "json_merge_patch",
    "json_patch",
    "json_patch_strict_errors",
    "schema_from_definitions",
    "smp_decode_error",
    "strategic_merge_patch",
]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

# Fallback for targets whose kind has no definition (e.g. bare dicts in unit
# tests): field name -> merge key of its list elements (k8s.io/api
# patchMergeKey tags of the common fields; "ports" is decided by the parent).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "secrets": "name",
}
# Lists of scalars merged as sets (patchStrategy: merge on primitive lists).
SET_LISTS = frozenset({"finalizers"})


def decode_patch(body: bytes, content_type: str) -> Any:
    try:
        if content_type == APPLY:
            return yaml.safe_load(body.decode("utf-8"))
        return _json.loads(body)
    except Exception as err:
        raise bad_request(f"error decoding patch: {err}") from err


def json_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = json_merge_patch(out.get(k), v)
    return out


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object read as its (key, value) pairs, in document order."""


# handlers/patch.go jsonPatchOp: the fields of one operation.
_JSON_PATCH_OP_FIELDS = frozenset({"op", "path", "from", "value"})


def json_patch_strict_errors(body: bytes, ops: Any) -> list[str]:
    """What ``applyJSPatch`` gets from ``kjson.UnmarshalStrict(patch,
    &[]jsonPatchOp)`` under ``fieldValidation`` Strict or Warn
    (handlers/patch.go): each unknown or repeated field of an operation, in
    document order, as ``json patch unknown field "[i].name"`` / ``json
    patch duplicate field "[i].name"``. A body that is not a list of objects
    is the 400 ``error decoding patch: json: cannot unmarshal ...``."""
    if ops is None:
        return []  # null decodes as a nil slice: no operations
    if not isinstance(ops, list):
        raise bad_request(
            f"error decoding patch: json: cannot unmarshal {json_kind(ops)} "
            "into Go value of type []handlers.jsonPatchOp"
        )
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise bad_request(
                f"error decoding patch: json: cannot unmarshal {json_kind(op)} "
                "into Go value of type handlers.jsonPatchOp"
            )
    # A second read of the (small) body, keeping each operation's pairs:
    # the decoded dicts have lost repeated keys.
    errors: list[str] = []
    paired = json.loads(body, object_pairs_hook=_Pairs)
    for i, op in enumerate(paired):
        if not isinstance(op, _Pairs):
            continue
        seen: set[str] = set()
        for key, _ in op:
            path = f"[{i}].{key}"
            if key not in _JSON_PATCH_OP_FIELDS:
                errors.append(f"json patch unknown field {quote(path)}")
            elif key in seen:
                errors.append(f"json patch duplicate field {quote(path)}")
            else:
                seen.add(key)
    return errors


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    import jsonpatch

    if not isinstance(ops, list):
        # jsonpatch.DecodePatch's json.Unmarshal into a Patch (evanphx/json-patch),
        # answered as errors.NewBadRequest(err.Error()) (handlers/patch.go).
        raise bad_request(
            f"json: cannot unmarshal {json_kind(ops)} into Go value of type jsonpatch.Patch"
        )
    try:
        result = jsonpatch.JsonPatch(ops).apply(target, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as err:
        # kube's applyJSPatch: NewGenericServerResponse(422, ...) with the patch
        # library's text as the server message, which it drops: the answer is
        # the generic sentence with empty details (logged here for debugging).
        logger.info("JSON patch failed: %s", err)
        raise StatusError(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        ) from err
    except (TypeError, KeyError, ValueError, IndexError) as err:
        raise bad_request(f"invalid json patch: {err}") from err
    if not isinstance(result, dict):
        raise bad_request("json patch result is not an object")
    return result


# --- strategic merge patch: errors ---------------------------------------------

_DIRECTIVE = "$patch"
_DELETE = "delete"
_REPLACE = "replace"
_MERGE = "merge"
_RETAIN_KEYS = "retainKeys"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
_RETAIN_KEYS_DIRECTIVE = "$retainKeys"
_SET_ELEMENT_ORDER = "$setElementOrder"

# mergepatch errors the patch handler answers with 400 / 422.
_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
_BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
_NO_LIST_OF_LISTS = "lists of lists are not supported"
_BAD_REQUEST_ERRORS = frozenset({_BAD_PRIMITIVE_LIST, _BAD_RETAIN_KEYS, _BAD_SET_ELEMENT_ORDER})
_PANIC = "This request caused apiserver to panic. Look in the logs for details."

_MAP_TYPE = "map[string]interface {}"
_SLICE_TYPE = "[]interface {}"


class _PatchError(Exception):
    """An error ``strategicpatch`` returns (its ``Error()`` text)."""


class _Panic(Exception):
    """Where Go would panic (e.g. hashing a map); kube answers 500."""


def _status(err: _PatchError) -> StatusError:
    """``interpretStrategicMergePatchError``: known mergepatch errors are 400 or
    422 (a generic response: its message replaces the error's); any other error
    is not an API status and goes out as a 500 with its text."""
    msg = str(err)
    if msg in _BAD_REQUEST_ERRORS:
        return bad_request(msg)
    if msg == _NO_LIST_OF_LISTS:
        return StatusError(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        )
    return StatusError(500, "", msg)


def _go_type(v: Any) -> str | None:
    """``reflect.TypeOf`` of a decoded JSON value (ints stay int64: kube decodes
    patches with ``UnmarshalCaseSensitivePreserveInts``)."""
    if v is None:
        return None
    if isinstance(v, dict):
        return _MAP_TYPE
    if isinstance(v, list):
        return _SLICE_TYPE
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    return "string"


def _go_fmt(v: Any, verb: str = "v") -> str:
    """``fmt`` of an ``interface{}`` holding decoded JSON with ``%v`` or ``%s``."""
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{_go_fmt(v[k], verb)}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(_go_fmt(x, verb) for x in v) + "]"
    if isinstance(v, str):
        return v
    if v is None:
        text = "<nil>"
    elif isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, float):
        text = _go_float(v)
    else:
        text = str(v)
    if verb == "s":
        return f"%!s({text})" if v is None else f"%!s({_go_type(v)}={text})"
    return text


def _bad_arg_type(expected: str, actual: Any) -> _PatchError:
    """``mergepatch.ErrBadArgType``."""
    got = _go_type(actual) or "%!s(<nil>)"
    return _PatchError(f"expected a {expected}, but received a {got}")


def _no_merge_key(m: dict[str, Any], key: str) -> _PatchError:
    return _PatchError(f"map: {_go_fmt(m)} does not contain declared merge key: {key}")


def _bad_patch_type(t: Any, m: dict[str, Any]) -> _PatchError:
    return _PatchError(f"unknown patch type: {_go_fmt(t, 's')} in map: {_go_fmt(m)}")


def _go_eq(a: Any, b: Any) -> bool:
    """Go's ``==`` on two ``interface{}`` values."""
    ta, tb = _go_type(a), _go_type(b)
    if ta != tb:
        return False
    if ta in (_MAP_TYPE, _SLICE_TYPE):
        raise _Panic(f"runtime error: comparing uncomparable type {ta}")
    return bool(a == b)


def _go_key(v: Any) -> tuple[Any, ...]:
    """A hashable stand-in for an ``interface{}`` map key (Go panics on maps)."""
    t = _go_type(v)
    if t in (_MAP_TYPE, _SLICE_TYPE):
        raise _Panic(f"runtime error: hash of unhashable type {t}")
    return (t, v)


# --- strategic merge patch: patch meta from the definitions ---------------------


class _Meta:
    """``PatchMeta``: the field's patch strategies and merge key."""

    __slots__ = ("merge_key", "strategies")

    def __init__(self, strategies: tuple[str, ...], merge_key: str) -> None:
        self.strategies = strategies
        self.merge_key = merge_key


class _Type:
    """A Go type as ``PatchMetaFromStruct`` sees it, read from a definition
    node. ``kind`` is Go's ``reflect.Kind`` name; field lookups are cached per
    type (definitions are shared, so per definition)."""

    __slots__ = ("_fields", "kind", "name", "node", "resolve")

    def __init__(
        self,
        kind: str,
        name: str,
        node: dict[str, Any],
        resolve: Callable[[str], _Type] | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.node = node
        self.resolve = resolve or _definition_type
        self._fields: dict[str, tuple[_Type, _Meta] | _PatchError] = {}

    def elem(self) -> _Type:
        if self.kind == "slice":
            items = self.node.get("items")
        else:
            items = self.node.get("additionalProperties")
        return _type_of(items if isinstance(items, dict) else {}, self.resolve)

    def lookup_struct(self, key: str) -> tuple[_Type, _Meta]:
        """``LookupPatchMetadataForStruct``."""
        found = self._fields.get(key)
        if found is None:
            found = self._lookup(key)
            self._fields[key] = found
        if isinstance(found, _PatchError):
            raise found
        return found

    def _lookup(self, key: str) -> tuple[_Type, _Meta] | _PatchError:
        if self.kind != "struct":
            return _PatchError(
                "merging an object in json but data type is not struct, " f"instead is: {self.kind}"
            )
        props: dict[str, Any] = self.node.get("properties") or {}
        prop = props.get(key)
        if prop is None:  # the json package's case-insensitive match
            folded = key.lower()
            prop = next((p for n, p in props.items() if n.lower() == folded), None)
        if not isinstance(prop, dict):
            return _PatchError(
                f"unable to find api field in struct {self.name} for the json field {quote(key)}"
            )
        strategy = prop.get("x-kubernetes-patch-strategy")
        merge_key = prop.get("x-kubernetes-patch-merge-key")
        meta = _Meta(
            tuple(strategy.split(",")) if isinstance(strategy, str) else (),
            merge_key if isinstance(merge_key, str) else "",
        )
        return _type_of(prop, self.resolve), meta

    def lookup_slice(self, key: str) -> tuple[_Type, _Meta]:
        """``LookupPatchMetadataForSlice``: the element type."""
        t, meta = self.lookup_struct(key)
        if t.kind != "slice":
            raise _PatchError(f"expected slice or array type, but got: {self.kind}")
        elem = t.elem()
        if elem.kind == "slice":
            raise _PatchError("unexpected slice of slice")
        return elem, meta


class _ByName(_Type):
    """The fallback for a target of no known kind: patch meta by field name."""

    __slots__ = ()

    def __init__(self, field: str = "") -> None:
        super().__init__("struct", "", {})
        self.name = field

    def lookup_struct(self, key: str) -> tuple[_Type, _Meta]:
        if key == "ports":
            parent = self.name
            containers = parent in ("containers", "initContainers", "ephemeralContainers")
            return _ByName(key), _Meta((_MERGE,), "containerPort" if containers else "port")
        if key in MERGE_KEYS:
            return _ByName(key), _Meta((_MERGE,), MERGE_KEYS[key])
        if key in SET_LISTS:
            return _ByName(key), _Meta((_MERGE,), "")
        return _ByName(key), _Meta((), "")

    def lookup_slice(self, key: str) -> tuple[_Type, _Meta]:
        return self.lookup_struct(key)


def _schema_types(node: dict[str, Any]) -> list[str]:
    t = node.get("type")
    types = t if isinstance(t, list) else [t] if isinstance(t, str) else []
    return [x for x in types if x != "null"]


_SCALAR_KINDS = {"string": "string", "boolean": "bool", "number": "float64"}


def _type_of(node: dict[str, Any], resolve: Callable[[str], _Type]) -> _Type:
    """The Go type a (property) schema node stands for (``resolve`` gives a
    named definition's)."""
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of and isinstance(all_of[0], dict):
        node = all_of[0]
    ref = defs_mod.ref_name(node)
    if ref is not None:
        return resolve(ref)
    types = _schema_types(node)
    kind = "interface"
    if "array" in types:
        kind = "slice"
    elif isinstance(node.get("additionalProperties"), dict):
        kind = "map"
    elif "object" in types or "properties" in node:
        kind = "struct"
    elif "integer" in types:
        kind = "int32" if node.get("format") == "int32" else "int64"
    else:
        kind = next((_SCALAR_KINDS[t] for t in types if t in _SCALAR_KINDS), kind)
    return _Type(kind, "", node, resolve)


def _named_type(
    name: str, node: dict[str, Any], resolve: Callable[[str], _Type] | None = None
) -> _Type:
    """A named definition: a Go struct (named types of maps and slices are
    inlined in kube's definitions)."""
    short = name.rsplit(".", 1)[-1]
    if "properties" not in node and isinstance(node.get("additionalProperties"), dict):
        return _Type("map", short, node, resolve)
    if "array" in _schema_types(node):
        return _Type("slice", short, node, resolve)
    return _Type("struct", short, node, resolve)


@functools.cache
def _definition_type(name: str) -> _Type:
    """A definition of the pinned Kubernetes version (cached: the lookups of
    its fields are cached on it)."""
    return _named_type(name, defs_mod.definitions().get(name) or {})


def schema_from_definitions(defs: dict[str, Any], root: str) -> _Type:
    """The patch meta of ``root`` among ``defs`` (JSON Schema definitions with
    ``$ref: "#/$defs/<name>"``), for ``strategic_merge_patch(schema=...)``."""
    cache: dict[str, _Type] = {}

    def resolve(name: str) -> _Type:
        if name not in cache:
            cache[name] = _named_type(name, defs.get(name) or {}, resolve)
        return cache[name]

    return resolve(root)


def _schema_for(target: Any) -> _Type:
    """The patch meta of the target's kind (its ``apiVersion``/``kind``)."""
    if isinstance(target, dict):
        api_version, kind = target.get("apiVersion"), target.get("kind")
        if isinstance(api_version, str) and isinstance(kind, str):
            group, _, version = api_version.rpartition("/")
            name = defs_mod.by_gvk(group, version, kind)
            if name is not None:
                return _definition_type(name)
    return _ByName()


# --- strategic merge patch: strategicpatch.mergeMap and friends -----------------


def _extract_retain_keys_strategy(strategies: tuple[str, ...]) -> str:
    """``extractRetainKeysPatchStrategy``: the strategy besides retainKeys."""
    if not strategies:
        return ""
    if len(strategies) == 1:
        return "" if strategies[0] == _RETAIN_KEYS else strategies[0]
    if len(strategies) == 2:
        if strategies[0] == _RETAIN_KEYS:
            return strategies[1]
        if strategies[1] == _RETAIN_KEYS:
            return strategies[0]
    raise _PatchError(f"unexpected patch strategy: [{' '.join(strategies)}]")


def _extract_key(s: str, prefix: str) -> str:
    parts = s.split("/", 1)
    if len(parts) <= 1 or parts[0] != prefix:
        if prefix == _DELETE_FROM_PRIMITIVE_LIST:
            raise _PatchError(_BAD_PRIMITIVE_LIST)
        raise _PatchError(_BAD_SET_ELEMENT_ORDER)
    return parts[1]


def _remove_directives(obj: Any) -> tuple[Any, bool]:
    """``removeDirectives``: drops maps holding ``$patch`` (and list elements)."""
    if isinstance(obj, dict):
        if _DIRECTIVE in obj:
            return None, False
        for k in list(obj):
            v, keep = _remove_directives(obj[k])
            if keep:
                obj[k] = v
            else:
                del obj[k]
        return obj, True
    if isinstance(obj, list):
        res = []
        for v in obj:
            nv, keep = _remove_directives(v)
            if keep:
                res.append(nv)
        return res, True
    return obj, True


def _discard_nulls(v: Any) -> None:
    if isinstance(v, dict):
        for k in list(v):
            if v[k] is None:
                del v[k]
            else:
                _discard_nulls(v[k])
    elif isinstance(v, list):
        for x in v:
            _discard_nulls(x)


def _take_patch_value(original: dict[str, Any], k: str, patch_v: Any) -> None:
    _discard_nulls(patch_v)  # IgnoreUnmatchedNulls
    v, keep = _remove_directives(patch_v)
    if keep:
        original[k] = v
    else:
        original.pop(k, None)


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: _Type) -> dict[str, Any]:
    """``mergeMap`` with ``MergeParallelList`` and ``IgnoreUnmatchedNulls``."""
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == _REPLACE:
            del patch[_DIRECTIVE]
            return patch
        if directive == _DELETE:
            return {}
        raise _bad_patch_type(directive, patch)
    _apply_retain_keys(original, patch)
    _merge_patch_into_original(original, patch, schema)
    for key, patch_v in list(patch.items()):
        k = key
        is_delete_list = key.startswith(_DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            k = _extract_key(key, _DELETE_FROM_PRIMITIVE_LIST)
        if patch_v is None:
            original.pop(k, None)
            continue
        if k not in original or _go_type(original[k]) != _go_type(patch_v):
            if not is_delete_list:
                _take_patch_value(original, k, patch_v)
            continue
        if isinstance(patch_v, dict):
            sub, meta = schema.lookup_struct(k)
            strategy = _extract_retain_keys_strategy(meta.strategies)
            if strategy != _REPLACE:
                original[k] = _merge_map(original[k], patch_v, sub)
            else:
                original[k] = patch_v
        elif isinstance(patch_v, list):
            sub, meta = schema.lookup_slice(k)
            strategy = _extract_retain_keys_strategy(meta.strategies)
            original[k] = _merge_slice_handler(
                original[k], patch_v, sub, strategy, meta.merge_key, is_delete_list
            )
        else:
            original[k] = patch_v
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``applyRetainKeysDirective``: keys of ``original`` not listed are cleared;
    every non-null key of the patch must be listed."""
    if _RETAIN_KEYS_DIRECTIVE not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS_DIRECTIVE)
    if not isinstance(retain, list):
        raise _PatchError(_BAD_RETAIN_KEYS)
    keep = {_go_key(v) for v in retain}
    for k, v in patch.items():
        if v is None or k.startswith((_DELETE_FROM_PRIMITIVE_LIST, _SET_ELEMENT_ORDER)):
            continue
        if ("string", k) not in keep:
            raise _PatchError(_BAD_RETAIN_KEYS)
    for k in list(original):
        if ("string", k) not in keep:
            del original[k]


def _merge_patch_into_original(
    original: dict[str, Any], patch: dict[str, Any], schema: _Type
) -> None:
    """``mergePatchIntoOriginal``: each ``$setElementOrder/<list>`` with its list."""
    for key, set_order in list(patch.items()):
        if not key.startswith(_SET_ELEMENT_ORDER):
            continue
        del patch[key]
        if not isinstance(set_order, list):
            raise _bad_arg_type(_SLICE_TYPE, set_order)
        field = _extract_key(key, _SET_ELEMENT_ORDER)
        found_original, found_patch = field in original, field in patch
        original_list: list[Any] = []
        patch_list: list[Any] = []
        if found_original:
            if not isinstance(original[field], list):
                raise _bad_arg_type(_SLICE_TYPE, original[field])
            original_list = original[field]
        if found_patch:
            if not isinstance(patch[field], list):
                raise _bad_arg_type(_SLICE_TYPE, patch[field])
            patch_list = patch[field]
        sub, meta = schema.lookup_slice(field)
        strategy = _extract_retain_keys_strategy(meta.strategies)
        merge_key = meta.merge_key
        _validate_patch_with_set_order_list(patch_list, set_order, merge_key)
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            merged = _remove_directives(patch_list)[0]
        elif found_original and found_patch:
            merged = _merge_slice_handler(
                original_list, patch_list, sub, strategy, merge_key, False
            )
        else:
            continue
        if not merge_key:
            patch_items, server_only = _partition_primitives(merged, set_order)
        else:
            patch_items, server_only = _partition_maps(merged, set_order, merge_key)
        kind = _slice_element_type(original_list, patch_list)
        original[field] = _normalize_element_order(
            patch_items, server_only, set_order, original_list, merge_key, kind
        )
        patch.pop(field, None)


def _validate_patch_with_set_order_list(
    patch_list: list[Any], set_order: list[Any], merge_key: str
) -> None:
    """``validatePatchWithSetOrderList``: the patch list's order must agree
    with (and its items be a subset of) the ``$setElementOrder`` list."""
    if not set_order or not patch_list:
        return
    non_delete = _extract_to_delete_items(patch_list)[0] if merge_key else patch_list
    pi = si = 0
    while pi < len(non_delete) and si < len(set_order):
        item = non_delete[pi]
        if isinstance(item, dict) and _DIRECTIVE in item:
            pi += 1
            continue
        if _merge_key_value_equal(item, set_order[si], merge_key):
            pi += 1
        si += 1
    if pi < len(non_delete) and si >= len(set_order):
        raise _PatchError(
            f"The order in patch list:\n{_go_fmt(patch_list)}\n doesn't match "
            f"{_SET_ELEMENT_ORDER} list:\n{_go_fmt(set_order)}\n"
        )


def _merge_key_value_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _go_eq(left, right)
    if not isinstance(left, dict):
        raise _bad_arg_type(_MAP_TYPE, left)
    if not isinstance(right, dict):
        raise _bad_arg_type(_MAP_TYPE, right)
    if merge_key not in left:
        raise _no_merge_key(left, merge_key)
    if merge_key not in right:
        raise _no_merge_key(right, merge_key)
    return _go_eq(left[merge_key], right[merge_key])


def _merge_slice_handler(
    original: list[Any],
    patch: list[Any],
    schema: _Type,
    strategy: str,
    merge_key: str,
    is_delete_list: bool,
) -> list[Any]:
    """``mergeSliceHandler``: merge lists merge, every other list is replaced."""
    if strategy == _MERGE or is_delete_list:
        return _merge_slice(original, patch, schema, merge_key, is_delete_list)
    return patch


def _merge_slice(
    original: list[Any], patch: list[Any], schema: _Type, merge_key: str, is_delete_list: bool
) -> list[Any]:
    """``mergeSlice``. For a list of maps, ``original`` is also Go's backing
    array, which the caller (``mergePatchIntoOriginal``) reads afterwards as the
    live order: deletions shift it in place and appended items fill the room
    they leave (``append`` within capacity; ``ToUnstructured`` makes slices
    with ``cap == len``), so the same happens to the Python list."""
    if not original and not patch:
        return original
    kind = _slice_element_type(original, patch)
    if kind != _MAP_TYPE:
        if is_delete_list:
            drop = {_go_key(v) for v in patch}
            return [v for v in original if _go_key(v) not in drop]
        merged = _deduplicate_scalars(original + patch)
    else:
        if not merge_key:
            raise _PatchError(f"cannot merge lists without merge key for {schema.kind}")
        backing = original
        length, rest, replace = _merge_slice_with_special_elements(backing, patch, merge_key)
        if replace:
            original, patch = rest, []
            merged = _merge_slice_without_special_elements(rest, len(rest), [], merge_key, schema)
        else:
            original, patch = backing[:length], rest
            merged = _merge_slice_without_special_elements(backing, length, rest, merge_key, schema)
    if not merge_key:
        patch_items, server_only = _partition_primitives(merged, patch)
    else:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _merge_slice_with_special_elements(
    backing: list[Any], patch: list[Any], merge_key: str
) -> tuple[int, list[Any], bool]:
    """``mergeSliceWithSpecialElements``: the ``$patch`` elements of a list of
    maps. Deletions shift ``backing`` in place (``deleteMatchingEntries``);
    returns the remaining length, the other patch elements, and whether the
    list is replaced by them."""
    length = len(backing)
    rest: list[Any] = []
    replace = False
    for v in patch:
        if _DIRECTIVE not in v:
            rest.append(v)
            continue
        directive = v[_DIRECTIVE]
        if directive == _DELETE:
            if merge_key not in v:
                raise _no_merge_key(v, merge_key)
            value = v[merge_key]
            while True:
                _, idx = _find_map(backing[:length], merge_key, value)
                if idx < 0:
                    break
                backing[idx : length - 1] = backing[idx + 1 : length]
                length -= 1
        elif directive == _REPLACE:
            replace = True
        elif directive == _MERGE:
            raise _PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, v)
    return length, rest, replace


def _merge_slice_without_special_elements(
    backing: list[Any], length: int, patch: list[Any], merge_key: str, schema: _Type
) -> list[Any]:
    """``mergeSliceWithoutSpecialElements`` on ``backing[:length]``: matching
    items merge, others are appended (into ``backing`` while it has room)."""
    out = backing[:length]
    shared = True
    for v in patch:
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        found, idx = _find_map(out, merge_key, v[merge_key])
        if found is not None:
            out[idx] = _merge_map(found, v, schema)
            if shared:
                backing[idx] = out[idx]
        else:
            if shared and len(out) < len(backing):
                backing[len(out)] = v
            else:
                shared = False
            out.append(v)
    return out


def _find_map(items: list[Any], key: str, value: Any) -> tuple[dict[str, Any] | None, int]:
    """``findMapInSliceBasedOnKeyValue``."""
    for i, v in enumerate(items):
        if not isinstance(v, dict):
            raise _PatchError(f"value for key {i} is not a map")
        if key in v and _go_eq(v[key], value):
            return v, i
    return None, -1


def _deduplicate_scalars(s: list[Any]) -> list[Any]:
    """``deduplicateScalars`` (its order, too)."""
    s = list(s)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _go_eq(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _slice_element_type(*slices: list[Any]) -> str:
    """``sliceElementType``: the one Go type of every element."""
    prev: str | None = None
    for s in slices:
        for v in s:
            t = _go_type(v)
            if prev is None:
                if t is None:
                    raise _Panic("runtime error: invalid memory address or nil pointer dereference")
                prev = t
                if prev == _SLICE_TYPE:
                    raise _PatchError(_NO_LIST_OF_LISTS)
            elif prev != t:
                shown = "[" + " ".join(_go_fmt(x) for x in slices) + "]"
                raise _PatchError(f"list element types are not identical: {shown}")
    if prev is None:
        raise _PatchError("no elements in any of the given slices")
    return prev


def _partition_primitives(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = {_go_key(v) for v in by}
    patch: list[Any] = []
    server_only: list[Any] = []
    for v in items:
        (patch if _go_key(v) in present else server_only).append(v)
    return patch, server_only


def _partition_maps(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    patch: list[Any] = []
    server_only: list[Any] = []
    for v in items:
        if not isinstance(v, dict):
            raise _bad_arg_type(_MAP_TYPE, v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        found, _ = _find_map(by, merge_key, v[merge_key])
        (patch if found is not None else server_only).append(v)
    return patch, server_only


def _extract_to_delete_items(items: list[Any]) -> tuple[list[Any], list[Any]]:
    keep: list[Any] = []
    delete: list[Any] = []
    for v in items:
        if not isinstance(v, dict):
            raise _bad_arg_type(_MAP_TYPE, v)
        (delete if v.get(_DIRECTIVE) == _DELETE else keep).append(v)
    return keep, delete


def _index(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    """``index``: position of ``value`` (by merge key for maps), or -1."""
    if kind == _MAP_TYPE:

        def get(item: Any) -> Any:
            return item.get(merge_key) if isinstance(item, dict) else None

    else:

        def get(item: Any) -> Any:
            return item

    want = get(value)
    for i, v in enumerate(items):
        if _go_eq(want, get(v)):
            return i
    return -1


def _normalize_element_order(
    patch: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """``normalizeElementOrder``: patch items in the patch's (or
    ``$setElementOrder``'s) order, server-only items in the live order,
    interleaved by the live order."""
    patch = _normalize_slice_order(patch, patch_order, merge_key, kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind)
    return _merge_sorted_slice(server_only, patch, server_order, merge_key, kind)


def _normalize_slice_order(
    to_sort: list[Any], order: list[Any], merge_key: str, kind: str
) -> list[Any]:
    to_delete: list[Any] = []
    if kind == _MAP_TYPE:
        for lst in (to_sort, order):
            for item in lst:
                if not isinstance(item, dict):
                    raise _bad_arg_type(_MAP_TYPE, item)
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key)
        to_sort, to_delete = _extract_to_delete_items(to_sort)
    else:
        to_sort = list(to_sort)

    def less(i: int, j: int) -> bool:
        ii = _index(order, to_sort[i], merge_key, kind)
        if ii >= 0:
            ij = _index(order, to_sort[j], merge_key, kind)
            if ij >= 0:
                return ii < ij
        return True

    def swap(i: int, j: int) -> None:
        to_sort[i], to_sort[j] = to_sort[j], to_sort[i]

    _go_stable_sort(len(to_sort), less, swap)
    return to_sort + to_delete


def _merge_sorted_slice(
    left: list[Any], right: list[Any], server_order: list[Any], merge_key: str, kind: str
) -> list[Any]:
    """``mergeSortedSlice``."""
    out: list[Any] = []
    i = j = 0
    for _ in range(len(left) + len(right)):
        if i >= len(left) and j < len(right):
            out.append(right[j])
            j += 1
        elif j >= len(right) and i < len(left):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


# Go's sort.SliceStable (insertion-sorted blocks of 20, then SymMerge): kube's
# comparator above is not a strict order, so the algorithm decides the result.


def _go_stable_sort(
    n: int, less: Callable[[int, int], bool], swap: Callable[[int, int], None]
) -> None:
    block = 20
    a, b = 0, block
    while b <= n:
        _insertion_sort(a, b, less, swap)
        a = b
        b += block
    _insertion_sort(a, n, less, swap)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            _sym_merge(a, a + block, b, less, swap)
            a = b
            b += 2 * block
        m = a + block
        if m < n:
            _sym_merge(a, m, n, less, swap)
        block *= 2


def _insertion_sort(
    a: int, b: int, less: Callable[[int, int], bool], swap: Callable[[int, int], None]
) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(j, j - 1):
            swap(j, j - 1)
            j -= 1


def _sym_merge(
    a: int, m: int, b: int, less: Callable[[int, int], bool], swap: Callable[[int, int], None]
) -> None:
    if m - a == 1:
        i, j = m, b
        while i < j:
            h = (i + j) >> 1
            if less(h, a):
                i = h + 1
            else:
                j = h
        for k in range(a, i - 1):
            swap(k, k + 1)
        return
    if b - m == 1:
        i, j = a, m
        while i < j:
            h = (i + j) >> 1
            if not less(m, h):
                i = h + 1
            else:
                j = h
        for k in range(m, i, -1):
            swap(k, k - 1)
        return
    mid = (a + b) >> 1
    n = mid + m
    if m > mid:
        start, r = n - b, mid
    else:
        start, r = a, m
    p = n - 1
    while start < r:
        c = (start + r) >> 1
        if not less(p - c, c):
            start = c + 1
        else:
            r = c
    end = n - start
    if start < m < end:
        _rotate(start, m, end, swap)
    if a < start < mid:
        _sym_merge(a, start, mid, less, swap)
    if mid < end < b:
        _sym_merge(mid, end, b, less, swap)


def _rotate(a: int, m: int, b: int, swap: Callable[[int, int], None]) -> None:
    i, j = m - a, b - m
    while i != j:
        if i > j:
            _swap_range(m - i, m, j, swap)
            i -= j
        else:
            _swap_range(m - i, m + j - i, i, swap)
            j -= i
    _swap_range(m - i, m, i, swap)


def _swap_range(a: int, b: int, n: int, swap: Callable[[int, int], None]) -> None:
    for i in range(n):
        swap(a + i, b + i)


_JSON_KINDS = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def strategic_merge_patch(
    target: dict[str, Any], patch: Any, *, schema: _Type | None = None
) -> dict[str, Any]:
    """``target`` with the strategic merge patch applied, as kube's patch
    handler does for a built-in kind (``strategicpatch.StrategicMergeMapPatch``
    with the patch meta of the target's kind, or ``schema``)."""
    if patch is None:  # JSON null decodes to an empty (nil) patch map
        patch = {}
    if not isinstance(patch, dict):
        shown = _JSON_KINDS.get(type(patch), "value")
        raise bad_request(
            f"json: cannot unmarshal {shown} into Go value of type map[string]interface {{}}"
        )
    if schema is None:
        schema = _schema_for(target)
    try:
        result = _merge_map(copy.deepcopy(target), copy.deepcopy(patch), schema)
    except _PatchError as err:
        raise _status(err) from err
    except (_Panic, RecursionError) as err:
        raise StatusError(500, "InternalError", _PANIC) from err
    return result


_JSON_DECODE_ERROR = re.compile(
    r"json: cannot unmarshal (\w+)( [^ ]+)? into Go (?:struct field \S* |value )of type (\S+)$"
)
_GO_SCALARS = frozenset({"string", "bool", "int32", "int64", "float32", "float64"})


def smp_decode_error(patch: Any, err: StatusError) -> StatusError:
    """The error of a strategic merge patch whose result does not fit the Go
    type, as kube's ``applyPatchToObject`` reports it: the patched map goes
    through ``runtime.DefaultUnstructuredConverter.FromUnstructured`` (not the
    JSON decoder that merge and JSON patches use), so the value is the patch
    map (``%+v``) and the text that converter's::

         "" is invalid: patch: Invalid value: "map[metadata:map[labels:x]]":
         cannot restore map from string

    ``err`` is the JSON decoder's error for the patched object; one the
    converter words alike (or does not have) is returned as is."""
    match = _JSON_DECODE_ERROR.search(err.message) if err.code == 422 else None
    if match is None:
        return err
    kind, number, go_type = match.groups()
    src = {"object": "map", "array": "slice", "number": "int64"}.get(kind, kind)
    if go_type.startswith("map["):
        text = f"cannot restore map from {src}"
    elif go_type.startswith("[]") and go_type != "[]uint8":
        text = f"cannot restore slice from {src}"
    elif go_type in _GO_SCALARS:
        # fromUnstructured into a scalar: a Go conversion the converter allows
        # (an integer to a string is one, the int64 JSON numbers decode to)
        # that it does not do is "cannot convert"; no conversion at all, the
        # destination's "unrecognized type".
        if kind == "number" and number:  # a float or out-of-range number for an integer
            if "." not in number and "e" not in number.lower():
                return err  # the converter truncates it silently
            text = f"cannot convert float64 to {go_type}"
        elif kind == "number" and go_type == "string":
            text = "cannot convert int64 to string"
        else:
            text = f"unrecognized type: {go_type}"
    elif "." in go_type and go_type != "resource.Quantity":
        text = f"cannot restore struct from: {src}"
    else:
        return err
    return invalid_patch(quote(_go_fmt(patch)), text)


def apply_patch(target: dict[str, Any] | None, applied: Any) -> dict[str, Any]:
    if not isinstance(applied, dict):
        raise bad_request("apply patch must be an object")
    if target is None:
        return copy.deepcopy(applied)
    merged = json_merge_patch(target, applied)
    return merged if isinstance(merged, dict) else {}
