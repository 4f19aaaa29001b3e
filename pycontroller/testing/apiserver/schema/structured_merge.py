"""Schema-aware walks over JSON objects: field sets, comparison, merge and
removal (structured-merge-diff's ``typed`` package, over plain dicts).

Server-side apply needs four operations on an object typed by its schema:

- ``to_field_set(value)``: the paths a configuration sets (what an applier
  owns);
- ``compare(old, new)``: the paths added, modified and removed between two
  versions (what an update takes from other managers);
- ``merge(live, config)``: the configuration merged into the live object;
- ``remove(value, paths)``: the object without the given paths.

The schema decides how a node behaves. A map is granular (merged key by key)
unless ``x-kubernetes-map-type: atomic``; a list is atomic (replaced whole)
unless ``x-kubernetes-list-type`` is ``map`` (items merged by
``x-kubernetes-list-map-keys``) or ``set`` (scalar items merged by value). For
built-in kinds, whose OpenAPI predates list types on some fields, a list with
``x-kubernetes-patch-strategy: merge`` is associative too, keyed by its
``x-kubernetes-patch-merge-key`` (kube-openapi's ``schemaconv`` rule). A node
without a schema (``x-kubernetes-preserve-unknown-fields``, unknown fields) is
*deduced* from its value: maps granular, lists atomic, as SMD's deduced type.
A value whose shape contradicts its schema is deduced too, so a malformed
object never makes a walk fail (validation reports it elsewhere).

No maintained Python package implements structured merge (the reference is
the Go module ``sigs.k8s.io/structured-merge-diff``), so this is written for
this server, following SMD's rules; where it simplifies, it says so:

- an associative list whose items cannot all be keyed (an item without any
  key field, duplicate keys, a non-scalar set item) is treated as atomic,
  where SMD reports an error or tracks duplicates specially; an applied
  configuration is checked first (``patch_errors``: duplicates, null or
  wrongly shaped items, undeclared fields), as kube refuses
  it, but a missing key field is not reported;
- two values of different shapes (a map against a scalar) compare as one
  modified leaf.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pycontroller.testing.apiserver.schema.fieldpath import (
    FieldSet,
    Path,
    PathElement,
    canonical_json,
    format_element,
    format_path,
    key_element,
    value_element,
)

__all__ = ["MISSING", "Comparison", "Schema"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # an absent value (not JSON null)


class _Atom(NamedTuple):
    kind: str  # "scalar", "map" or "list"
    atomic: bool
    fields: Mapping[str, Any]  # map: declared fields -> their schema nodes
    elem: Any  # map: schema of other keys; list: schema of items (None: deduce)
    keys: tuple[str, ...] | None  # list: map keys; () for a set; None if atomic


_DEDUCED_MAP = _Atom("map", False, {}, None, None)
_ATOMIC_LIST = _Atom("list", True, {}, None, None)
_SCALAR = _Atom("scalar", True, {}, None, None)


@dataclass
class Comparison:
    added: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    removed: FieldSet = field(default_factory=FieldSet)

    def changed(self) -> FieldSet:
        """Modified or added paths (what an update takes ownership of)."""
        return self.modified.union(self.added)


def _value_kind(value: Any) -> str | None:
    if value is MISSING or value is None:
        return None
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return "scalar"


def _equal(a: Any, b: Any) -> bool:
    """JSON equality (``True != 1``, unlike Python's ``==``)."""
    if type(a) is type(b) and isinstance(a, str | int | float):
        return bool(a == b)
    return canonical_json(a) == canonical_json(b)


class Schema:
    """One kind's OpenAPI schema, read the way SMD reads its converted form.

    ``root`` is the kind's schema node (``None``: everything deduced);
    ``definitions`` resolves ``$ref`` by the last segment of the reference.
    ``patch_strategy_lists`` turns on the built-in rule for lists without a
    list type; ``key_defaults`` supplies a key field's value when an item
    omits it and its schema has no ``default`` (kube's OpenAPI defaults
    ``protocol`` to ``TCP``; the JSON schemas we read drop defaults).
    Instances are immutable and shared between requests.
    """

    def __init__(
        self,
        root: Mapping[str, Any] | None,
        definitions: Mapping[str, Any] | None = None,
        *,
        patch_strategy_lists: bool = False,
        key_defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self.root = root
        self.definitions = definitions or {}
        self.patch_strategy_lists = patch_strategy_lists
        self.key_defaults = dict(key_defaults or {})
        # id(schema node) -> (node, what the node alone says, None: deduce from the
        # value). Nodes belong to the immutable schema (the entry keeps its node
        # alive, so an id is never reused); every compare/merge/field-set walk asks
        # for each node it visits, and reading the node each time (dereferencing,
        # type sets) was most of a create's cost.
        self._atoms: dict[int, tuple[Any, _Atom | None]] = {}

    # --- typing ----------------------------------------------------------------

    def _deref(self, node: Any) -> Mapping[str, Any] | None:
        for _ in range(64):  # a chain of references, never a cycle in practice
            if not isinstance(node, Mapping):
                return None
            ref = node.get("$ref")
            if isinstance(ref, str):
                node = self.definitions.get(ref.rsplit("/", 1)[-1])
                continue
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and "type" not in node:
                node = all_of[0]
                continue
            return node
        return None

    def _atom(self, node: Any, value: Any) -> _Atom:
        hit = self._atoms.get(id(node))
        if hit is None:
            hit = (node, self._schema_atom(node))
            self._atoms[id(node)] = hit  # one dict store: safe under the GIL
        atom = hit[1]
        vkind = _value_kind(value)
        if atom is None or (vkind is not None and vkind != atom.kind):
            kind = vkind or "scalar"
            return {"map": _DEDUCED_MAP, "list": _ATOMIC_LIST}.get(kind, _SCALAR)
        return atom

    def _schema_atom(self, node: Any) -> _Atom | None:
        """What schema ``node`` says about a value (None: nothing; deduce it)."""
        n = self._deref(node)
        if n is None:
            return None
        t = n.get("type")
        types = {t} if isinstance(t, str) else set(t or ())
        types.discard("null")
        if (
            "object" in types
            or "properties" in n
            or isinstance(n.get("additionalProperties"), Mapping)
        ):
            props = n.get("properties")
            extra = n.get("additionalProperties")
            map_type = n.get("x-kubernetes-map-type")
            if isinstance(node, Mapping) and "x-kubernetes-map-type" in node:
                # A reference's own map type overrides its target's (SMD's
                # TypeRef.ElementRelationship: PersistentVolumeSpec.claimRef
                # is a granular ObjectReference, an atomic struct elsewhere).
                map_type = node["x-kubernetes-map-type"]
            return _Atom(
                "map",
                map_type == "atomic",
                props if isinstance(props, Mapping) else {},
                extra if isinstance(extra, Mapping) else None,
                None,
            )
        if "array" in types or "items" in n:
            list_type = n.get("x-kubernetes-list-type")
            keys = n.get("x-kubernetes-list-map-keys")
            if list_type is None and self.patch_strategy_lists:
                strategy = str(n.get("x-kubernetes-patch-strategy") or "")
                if "merge" in strategy.split(","):
                    merge_key = n.get("x-kubernetes-patch-merge-key")
                    list_type, keys = ("map", [merge_key]) if merge_key else ("set", None)
            items = n.get("items")
            if list_type == "map" and isinstance(keys, list) and keys:
                return _Atom("list", False, {}, items, tuple(str(k) for k in keys))
            if list_type == "set":
                return _Atom("list", False, {}, items, ())
            return _Atom("list", True, {}, items, None)
        if types or n.get("x-kubernetes-int-or-string") or "enum" in n:
            return _SCALAR
        return None

    def _key_default(self, item_node: Any, key: str) -> Any:
        n = self._deref(item_node)
        props = n.get("properties") if n is not None else None
        prop = self._deref(props.get(key)) if isinstance(props, Mapping) else None
        if prop is not None and "default" in prop:
            return prop["default"]
        return self.key_defaults.get(key, MISSING)

    def _key_fields(
        self, atom: _Atom, item: dict[str, Any], *, all_keys: bool
    ) -> dict[str, Any] | None:
        """An associative list item's key fields (a missing one from its
        schema default); a key with neither is left out, or, ``all_keys``,
        makes the answer ``None``."""
        found: dict[str, Any] = {}
        for key in atom.keys or ():
            if key in item:
                found[key] = item[key]
            else:
                default = self._key_default(atom.elem, key)
                if default is not MISSING:
                    found[key] = default
                elif all_keys:
                    return None
        return found

    def _item_elements(self, atom: _Atom, items: list[Any]) -> list[PathElement] | None:
        """Each item's path element, or ``None`` if the list cannot be keyed."""
        pes: list[PathElement] = []
        for item in items:
            if atom.keys:
                if not isinstance(item, dict):
                    return None
                found = self._key_fields(atom, item, all_keys=False)
                if not found:
                    return None
                pes.append(key_element(found))
            else:
                if item is None or isinstance(item, dict | list):
                    return None
                pes.append(value_element(item))
        if len(set(pes)) != len(pes):
            return None
        return pes

    @staticmethod
    def _child(atom: _Atom, key: str) -> Any:
        return atom.fields.get(key, atom.elem)

    # --- field sets ------------------------------------------------------------

    def to_field_set(self, value: Any) -> FieldSet:
        """The paths ``value`` sets: leaves, list items, atomic nodes, empty
        maps, nulls, and keys of maps that are not declared fields."""
        out = FieldSet()
        self._to_field_set((), value, self.root, out)
        return out

    def _to_field_set(self, path: Path, value: Any, node: Any, out: FieldSet) -> None:
        atom = self._atom(node, value)
        if atom.kind == "scalar":
            out.insert(path)
            return
        if atom.kind == "list":
            items = value if isinstance(value, list) else []
            pes = None if atom.atomic else self._item_elements(atom, items)
            if pes is None:
                out.insert(path)
                return
            for pe, item in zip(pes, items, strict=True):
                child = (*path, pe)
                self._to_field_set(child, item, atom.elem, out)
                out.insert(child)
            return
        if atom.atomic:
            out.insert(path)
            return
        for key, val in (value if isinstance(value, dict) else {}).items():
            child = (*path, ("f", key))
            self._to_field_set(child, val, self._child(atom, key), out)
            if val is None or val == {} or key not in atom.fields:
                out.insert(child)

    def ensure_named_fields(self, fs: FieldSet) -> FieldSet:
        """SMD's ``EnsureNamedFieldsAreMembers``: ``fs`` with, as members too,
        the declared struct fields it has paths under (not list items, nor the
        keys of a map that are not declared fields)."""
        return self._ensure_named(fs, self.root)

    def _ensure_named(self, fs: FieldSet, node: Any) -> FieldSet:
        out = FieldSet()
        out.members = set(fs.members)
        atom = self._atom(node, None)
        for pe, sub in fs.children.items():
            child: Any = None
            if atom.kind == "map" and pe[0] == "f":
                if pe[1] in atom.fields:
                    out.members.add(pe)
                child = self._child(atom, pe[1])
            elif atom.kind == "list":
                child = atom.elem
            out.children[pe] = self._ensure_named(sub, child)
        return out

    # --- typing an applied configuration -------------------------------------

    def patch_errors(self, value: Any, *, missing_keys: bool = False) -> list[str]:
        """What SMD refuses when it types an applied configuration (kube's
        ``structuredMergeManager.Apply``: ``ObjectToTyped(patchObj)``, without
        ``AllowDuplicates``; SMD's ``typed/validate.go``), as
        ``ValidationError`` texts: an associative list's duplicate keys,
        null or non-map items of a keyed list, map, list or null items of a
        set, and a field a declared struct does not have (kube converts the
        OpenAPI of built-in kinds and of CRDs without preserving unknown
        fields, except under ``x-kubernetes-preserve-unknown-fields``).
        A key field missing from an item (without a schema default) is
        reported only with ``missing_keys``, for schemas exact about their key
        defaults (a CRD's, whose map keys are required or defaulted); our
        built-in schemas lack some of kube's key defaults, so there such a
        list stays atomic, as elsewhere.
        """
        out: list[str] = []
        self._patch_errors((), value, self.root, out, missing_keys)
        return out

    def _declared(self, path: Path, node: Any, atom: _Atom) -> Mapping[str, Any] | None:
        """The fields of a struct that refuses others (kube converts both built-in
        and CRD schemas without preserving unknown fields), or None: a map, an
        untyped node (``x-kubernetes-preserve-unknown-fields``) or a struct
        without declared fields (deduced here)."""
        if not atom.fields or atom.elem is not None:
            return None
        n = self._deref(node)
        if (
            n is None
            or n.get("x-kubernetes-preserve-unknown-fields")
            or n.get("additionalProperties")
        ):
            return None
        if not path or n.get("x-kubernetes-embedded-resource"):
            # Every kind's (and embedded object's) OpenAPI declares these.
            return {**atom.fields, "apiVersion": None, "kind": None, "metadata": None}
        return atom.fields

    def _patch_errors(
        self, path: Path, value: Any, node: Any, out: list[str], missing_keys: bool = False
    ) -> None:
        atom = self._atom(node, value)
        if atom.kind == "map" and isinstance(value, dict):
            declared = self._declared(path, node, atom)
            for key, val in value.items():
                child: Path = (*path, ("f", key))
                if declared is not None and key not in declared:
                    out.append(f"{format_path(child)}: field not declared in schema")
                    continue
                self._patch_errors(child, val, self._child(atom, key), out, missing_keys)
            return
        if atom.kind != "list" or not isinstance(value, list):
            return
        where = format_path(path)
        if atom.keys is None:  # atomic: items by index
            for i, item in enumerate(value):
                self._patch_errors((*path, ("i", i)), item, atom.elem, out, missing_keys)
            return
        seen: set[PathElement] = set()
        for i, item in enumerate(value):
            problem = self._item_problem(atom, item)
            if problem is None and missing_keys:
                problem = self._missing_key(atom, item)
            if problem is not None:
                out.append(f"{where}: element {i}: {problem}")
                continue
            pe = self._item_element(atom, item)
            if pe is None:
                return  # a key field is missing: the list is not keyed
            if pe in seen:
                out.append(f"{where}: duplicate entries for key {format_element(pe)}")
            seen.add(pe)
            self._patch_errors((*path, pe), item, atom.elem, out, missing_keys)

    @staticmethod
    def _item_problem(atom: _Atom, item: Any) -> str | None:
        """SMD's ``listItemToPathElement`` errors for one item."""
        if atom.keys:
            if item is None:
                return "associative list with keys may not have a null element"
            if not isinstance(item, dict):
                return "associative list with keys may not have non-map elements"
            return None
        if isinstance(item, dict):
            return "associative list without keys has an element that's a map type"
        if isinstance(item, list):
            return "not supported: associative list with lists as elements"
        if item is None:
            return "associative list without keys has an element that's an explicit null"
        return None

    def _missing_key(self, atom: _Atom, item: dict[str, Any]) -> str | None:
        """SMD's ``keyedAssociativeListItemToPathElement`` error for an item
        without one of its keys that the schema does not default."""
        for key in atom.keys or ():
            if key not in item and self._key_default(atom.elem, key) is MISSING:
                return (
                    f"associative list with keys has an element that omits key field "
                    f'"{key}" (and doesn\'t have default value)'
                )
        return None

    def _item_element(self, atom: _Atom, item: Any) -> PathElement | None:
        if not atom.keys:
            return value_element(item)
        found = self._key_fields(atom, item, all_keys=True)
        return None if found is None else key_element(found)

    # --- comparison ------------------------------------------------------------

    def compare(self, old: Any, new: Any) -> Comparison:
        out = Comparison()
        self._compare((), old, new, self.root, out)
        return out

    def _compare(self, path: Path, lhs: Any, rhs: Any, node: Any, out: Comparison) -> None:
        latom = self._atom(node, lhs) if lhs is not MISSING else None
        ratom = self._atom(node, rhs) if rhs is not MISSING else None
        atom = ratom or latom
        assert atom is not None
        leaf = atom.kind == "scalar" or atom.atomic
        if latom is not None and ratom is not None and latom.kind != ratom.kind:
            leaf = True
        elif atom.kind == "map" and not leaf:
            lmap = lhs if isinstance(lhs, dict) else {}
            rmap = rhs if isinstance(rhs, dict) else {}
            if not lmap and not rmap:
                leaf = True
            else:
                for key in {**lmap, **rmap}:
                    self._compare(
                        (*path, ("f", key)),
                        lmap.get(key, MISSING),
                        rmap.get(key, MISSING),
                        self._child(atom, key),
                        out,
                    )
        elif atom.kind == "list" and not leaf:
            llist = lhs if isinstance(lhs, list) else []
            rlist = rhs if isinstance(rhs, list) else []
            lpes = self._item_elements(atom, llist)
            rpes = self._item_elements(atom, rlist)
            if (not llist and not rlist) or lpes is None or rpes is None:
                leaf = True
            else:
                lby = dict(zip(lpes, llist, strict=True))
                rby = dict(zip(rpes, rlist, strict=True))
                for pe in dict.fromkeys([*lpes, *rpes]):
                    self._compare(
                        (*path, pe), lby.get(pe, MISSING), rby.get(pe, MISSING), atom.elem, out
                    )
        if lhs is MISSING:
            out.added.insert(path)
        elif rhs is MISSING:
            out.removed.insert(path)
        elif leaf and not _equal(lhs, rhs):
            out.modified.insert(path)

    # --- merge -----------------------------------------------------------------

    def merge(self, live: Any, config: Any) -> Any:
        """``config`` merged into ``live`` (new value; inputs untouched)."""
        return self._merge(live, config, self.root)

    def _merge(self, lhs: Any, rhs: Any, node: Any) -> Any:
        if rhs is MISSING:
            return copy.deepcopy(lhs)
        if lhs is MISSING:
            return copy.deepcopy(rhs)
        latom, ratom = self._atom(node, lhs), self._atom(node, rhs)
        if latom.kind != ratom.kind or ratom.kind == "scalar" or ratom.atomic:
            return copy.deepcopy(rhs)
        atom = ratom
        if atom.kind == "map":
            lmap = lhs if isinstance(lhs, dict) else {}
            rmap = rhs if isinstance(rhs, dict) else {}
            if not lmap and not rmap:
                return copy.deepcopy(rhs)
            out = {}
            for key in {**lmap, **rmap}:
                out[key] = self._merge(
                    lmap.get(key, MISSING), rmap.get(key, MISSING), self._child(atom, key)
                )
            return out
        llist = lhs if isinstance(lhs, list) else []
        rlist = rhs if isinstance(rhs, list) else []
        lpes = self._item_elements(atom, llist)
        rpes = self._item_elements(atom, rlist)
        if (not llist and not rlist) or lpes is None or rpes is None:
            return copy.deepcopy(rhs)
        return self._merge_items(atom, lpes, llist, rpes, rlist)

    def _merge_items(
        self,
        atom: _Atom,
        lpes: list[PathElement],
        llist: list[Any],
        rpes: list[PathElement],
        rlist: list[Any],
    ) -> list[Any]:
        """SMD's order: the configuration's items in its order, live items it
        does not mention kept where they were relative to the shared ones."""
        lby = dict(zip(lpes, llist, strict=True))
        rby = dict(zip(rpes, rlist, strict=True))
        shared = [pe for pe in rpes if pe in lby]
        shared.reverse()
        next_shared = shared.pop() if shared else None
        merged: set[PathElement] = set()
        out: list[Any] = []
        li = ri = 0
        while li < len(lpes) or ri < len(rpes):
            if li < len(lpes) and ri < len(rpes):
                pe = lpes[li]
                if pe == rpes[ri]:
                    merged.add(pe)
                    out.append(self._merge(lby[pe], rby[pe], atom.elem))
                    li += 1
                    ri += 1
                    next_shared = shared.pop() if shared else None
                    continue
                if pe in rby and next_shared is not None and next_shared != pe:
                    li += 1
                    continue
            if li < len(lpes):
                pe = lpes[li]
                if pe not in rby:
                    out.append(copy.deepcopy(lby[pe]))
                    li += 1
                    continue
                if pe in merged:
                    li += 1
            if ri < len(rpes):
                pe = rpes[ri]
                merged.add(pe)
                out.append(self._merge(lby.get(pe, MISSING), rby[pe], atom.elem))
                ri += 1
                if next_shared is not None and next_shared == pe:
                    next_shared = shared.pop() if shared else None
        return out

    # --- removal ---------------------------------------------------------------

    def remove(self, value: Any, paths: FieldSet) -> Any:
        """``value`` without the members of ``paths`` (and what lies under
        them). A map or list emptied by the removal is dropped from its parent,
        as Go's ``omitempty`` drops it from a built-in object."""
        out = self._remove(value, paths, self.root)
        return out if out is not MISSING else {}

    def _remove(self, value: Any, paths: FieldSet, node: Any) -> Any:
        atom = self._atom(node, value)
        if atom.atomic or atom.kind == "scalar":
            return value
        if atom.kind == "map" and isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, val in value.items():
                pe: PathElement = ("f", key)
                if pe in paths.members:
                    continue
                sub = paths.children.get(pe)
                if sub is None:
                    out[key] = val
                    continue
                kept = self._remove(val, sub, self._child(atom, key))
                if kept is not MISSING:
                    out[key] = kept
            return out if out or not value else MISSING
        if atom.kind == "list" and isinstance(value, list):
            pes = self._item_elements(atom, value)
            if pes is None:
                return value
            items: list[Any] = []
            for pe, item in zip(pes, value, strict=True):
                if pe in paths.members:
                    continue
                sub = paths.children.get(pe)
                kept = item if sub is None else self._remove(item, sub, atom.elem)
                if kept is not MISSING:
                    items.append(kept)
            return items if items or not value else MISSING
        return value
