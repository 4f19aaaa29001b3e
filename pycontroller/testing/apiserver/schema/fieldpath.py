"""Sets of field paths and their ``FieldsV1`` encoding (structured-merge-diff's
``fieldpath`` package).

A *path* is a tuple of path elements, each a small tuple:

- ``("f", name)``: a field of a map (``f:name`` in FieldsV1, ``.name`` in a
  message);
- ``("k", ((key, json), ...))``: the item of an associative list with these
  key values, sorted by key name (``k:{"name":"app"}``, ``[name="app"]``);
- ``("v", json)``: the item of a set (``v:"x"``, ``[="x"]``);
- ``("i", n)``: an item by index (only ever decoded, never produced here).

Values inside ``k``/``v`` elements are kept as canonical JSON text, so path
elements are hashable and compare by value.

A ``FieldSet`` is a trie: ``members`` are the elements that end a path at this
node, ``children`` the elements that continue into a sub-set. An element can
be both (a list item owned as a whole *and* through its fields); FieldsV1
then writes ``".": {}`` inside it. The empty path is never a member (nobody
owns the whole object). Sets are mutable; the operations that combine two
sets return new ones and never share nodes with their inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = [
    "FieldSet",
    "PathElement",
    "field",
    "format_path",
    "key_element",
    "value_element",
]

PathElement = tuple[str, Any]
Path = tuple[PathElement, ...]

# Elements sort fields first, then keys, then values, then indexes (SMD's
# PathElement.Compare); FieldsV1 writes them in this order.
_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


def canonical_json(value: Any) -> str:
    """The JSON text a value is keyed by (compact, keys sorted, UTF-8 as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def field(name: str) -> PathElement:
    return ("f", name)


def key_element(keys: dict[str, Any]) -> PathElement:
    return ("k", tuple(sorted((k, canonical_json(v)) for k, v in keys.items())))


def value_element(value: Any) -> PathElement:
    return ("v", canonical_json(value))


def _sort_key(pe: PathElement) -> tuple[int, Any]:
    return (_ORDER[pe[0]], pe[1])


def encode_element(pe: PathElement) -> str:
    kind, payload = pe
    if kind == "f":
        return f"f:{payload}"
    if kind == "k":
        inner = ",".join(f"{json.dumps(k, ensure_ascii=False)}:{v}" for k, v in payload)
        return "k:{" + inner + "}"
    if kind == "v":
        return f"v:{payload}"
    return f"i:{payload}"


def decode_element(text: str) -> PathElement:
    """One FieldsV1 key; ``ValueError`` if it is not one."""
    kind, sep, rest = text.partition(":")
    if not sep:
        raise ValueError(f"invalid path element {text!r}")
    if kind == "f":
        return ("f", rest)
    if kind == "k":
        keys = json.loads(rest)
        if not isinstance(keys, dict):
            raise ValueError(f"invalid key {text!r}")
        return key_element(keys)
    if kind == "v":
        return value_element(json.loads(rest))
    if kind == "i":
        return ("i", int(rest))
    raise ValueError(f"unknown path element kind {text!r}")


def _go_string(value: Any) -> str:
    """A value as SMD's ``value.ToString`` prints it in a path."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(_go_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_go_string(v)}" for k, v in value.items())
    return str(value)


def format_element(pe: PathElement) -> str:
    kind, payload = pe
    if kind == "f":
        return f".{payload}"
    if kind == "k":
        return "[" + ",".join(f"{k}={_go_string(json.loads(v))}" for k, v in payload) + "]"
    if kind == "v":
        return f"[={_go_string(json.loads(payload))}]"
    return f"[{payload}]"


def format_path(path: Path) -> str:
    """A path as kube prints it in conflicts: ``.spec.containers[name="a"].image``."""
    return "".join(format_element(pe) for pe in path)


class FieldSet:
    """A set of paths (see the module docstring)."""

    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, FieldSet] = {}

    # --- building ------------------------------------------------------------

    def insert(self, path: Path) -> None:
        if not path:
            return  # the whole object is never owned
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            node = child
        node.members.add(path[-1])

    def child(self, pe: PathElement) -> FieldSet | None:
        """The sub-set under ``pe`` (shared, do not mutate), if any."""
        return self.children.get(pe)

    def copy(self) -> FieldSet:
        out = FieldSet()
        out.members = set(self.members)
        out.children = {pe: c.copy() for pe, c in self.children.items()}
        return out

    # --- queries -------------------------------------------------------------

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def has(self, path: Path) -> bool:
        if not path:
            return False
        node: FieldSet | None = self
        for pe in path[:-1]:
            assert node is not None
            node = node.children.get(pe)
            if node is None:
                return False
        assert node is not None
        return path[-1] in node.members

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every member path, in FieldsV1 order."""
        for pe in sorted(self.members | set(self.children), key=_sort_key):
            if pe in self.members:
                yield (*prefix, pe)
            sub = self.children.get(pe)
            if sub is not None:
                yield from sub.paths((*prefix, pe))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return self.to_fields_v1() == other.to_fields_v1()

    def __repr__(self) -> str:
        return f"FieldSet({[format_path(p) for p in self.paths()]})"

    # --- algebra (new sets; inputs untouched) -------------------------------

    def union(self, other: FieldSet) -> FieldSet:
        out = FieldSet()
        out.members = self.members | other.members
        for pe in set(self.children) | set(other.children):
            a, b = self.children.get(pe), other.children.get(pe)
            if a is not None and b is not None:
                out.children[pe] = a.union(b)
            else:
                out.children[pe] = (a or b).copy()  # type: ignore[union-attr]
        return out

    def difference(self, other: FieldSet) -> FieldSet:
        """Paths of ``self`` that are not paths of ``other`` (exact matches)."""
        out = FieldSet()
        out.members = self.members - other.members
        for pe, sub in self.children.items():
            theirs = other.children.get(pe)
            rest = sub.difference(theirs) if theirs is not None else sub.copy()
            if not rest.empty():
                out.children[pe] = rest
        return out

    def intersection(self, other: FieldSet) -> FieldSet:
        out = FieldSet()
        out.members = self.members & other.members
        for pe, sub in self.children.items():
            theirs = other.children.get(pe)
            if theirs is not None:
                both = sub.intersection(theirs)
                if not both.empty():
                    out.children[pe] = both
        return out

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """``self`` less every path that is in ``other`` or lies under one of
        its members (how kube drops reset fields such as ``.status``)."""
        out = FieldSet()
        out.members = self.members - other.members
        for pe, sub in self.children.items():
            if pe in other.members:
                continue
            theirs = other.children.get(pe)
            rest = sub.recursive_difference(theirs) if theirs is not None else sub.copy()
            if not rest.empty():
                out.children[pe] = rest
        return out

    def only_under(self, pe: PathElement) -> FieldSet:
        """The paths of ``self`` that lie under (or are) the top-level ``pe``."""
        out = FieldSet()
        if pe in self.members:
            out.members.add(pe)
        sub = self.children.get(pe)
        if sub is not None and not sub.empty():
            out.children[pe] = sub.copy()
        return out

    def with_ancestors(self) -> FieldSet:
        """``self`` plus every proper prefix of its paths (SMD's
        ``EnsureNamedFieldsAreMembers``, for every kind of element)."""
        out = FieldSet()
        out.members = set(self.members)
        for pe, sub in self.children.items():
            if sub.empty():
                continue
            out.members.add(pe)
            out.children[pe] = sub.with_ancestors()
        return out

    # --- FieldsV1 ------------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pe in sorted(self.members | set(self.children), key=_sort_key):
            sub = self.children.get(pe)
            inner: dict[str, Any] = {}
            if sub is not None and not sub.empty():
                if pe in self.members:
                    inner["."] = {}
                inner.update(sub.to_fields_v1())
            elif pe not in self.members:
                continue
            out[encode_element(pe)] = inner
        return out

    @classmethod
    def from_fields_v1(cls, fields: Any) -> FieldSet:
        """Decode FieldsV1; ``ValueError`` if ``fields`` is not valid."""
        if not isinstance(fields, dict):
            raise ValueError("FieldsV1 must be a JSON object")
        out = cls()
        for key, inner in fields.items():
            if key == ".":
                continue
            pe = decode_element(key)
            if not isinstance(inner, dict):
                raise ValueError(f"FieldsV1 entry {key!r} must be an object")
            if not inner or "." in inner:
                out.members.add(pe)
            rest = {k: v for k, v in inner.items() if k != "."}
            if rest:
                out.children[pe] = cls.from_fields_v1(rest)
        return out
