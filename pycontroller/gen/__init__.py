"""``TypedDict`` definitions from a CRD's OpenAPI schema: the Python counterpart of code-generator.

Go controllers get typed structs, listers and clientsets from code-generator.
pycontroller keeps objects as the plain dicts the API server sent (decoding is
the hot path), so the Python counterpart costs nothing at run time: a module
of ``TypedDict`` classes that only mypy reads. Parameterise a lister with one
(``Lister[Network]``, ``factory.lister(..., type=Network)``) and mypy checks
every field access on the cached dicts.

``python -m pycontroller.gen crds/network.yaml -o controllers/network/types.py``

Mapping from ``openAPIV3Schema`` (structural schemas, as the API server requires):

- the resource: ``class <Kind>(TypedDict)`` with ``apiVersion``, ``kind``,
  ``metadata: dict[str, Any]`` (always present on objects the API server
  returns), then the schema's own properties (``spec``, ``status``, ...), and
  ``<Kind>List`` for list responses;
- every object with ``properties``: a ``TypedDict`` named after its path
  (``NetworkSpec``, ``BalancerSpecBackend`` for the items of ``backends``: a
  trailing ``s`` is dropped, otherwise ``Item`` is appended);
- required vs optional: a class whose fields are all required is total;
  otherwise ``total=False`` with ``Required[...]`` on the required ones;
- ``string``/``integer``/``number``/``boolean`` -> ``str``/``int``/``float``/``bool``;
  ``enum`` -> ``Literal[...]``; ``nullable`` -> ``X | None``;
- ``array`` -> ``list[X]``; ``additionalProperties: {schema}`` -> ``dict[str, X]``;
- ``x-kubernetes-int-or-string`` -> ``int | str``;
  ``x-kubernetes-preserve-unknown-fields`` (or ``x-kubernetes-embedded-resource``)
  without properties, or an object with no schema for its fields -> ``dict[str, Any]``;
  an ``anyOf``/``oneOf`` of typed branches -> their union; anything else -> ``Any``.

A ``TypedDict`` cannot say "other keys allowed": an object that declares
properties *and* preserves unknown fields gets a class with the declared
ones (unknown keys are still in the dict at run time; reach them through
``cast(dict[str, Any], obj)``). Names that are not Python identifiers use the
functional ``TypedDict("X", {...})`` form.

Output is deterministic (schema order, no timestamps), formatted as ``ruff
format`` leaves it, and passes ``mypy --strict``. With several served versions
every class name gets the version as a suffix (``NetworkV1``).
"""

from __future__ import annotations

import json
import keyword
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GenerationError", "generate", "generate_file"]

LINE_LENGTH = 100
_INDENT = "    "


class GenerationError(ValueError):
    """The input is not a CRD this generator understands."""


@dataclass
class _Field:
    name: str
    annotation: str
    required: bool
    description: str = ""


@dataclass
class _Class:
    name: str
    description: str
    fields: list[_Field] = field(default_factory=list)


@dataclass
class _Module:
    classes: list[_Class] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # name -> Literal[...] text
    names: set[str] = field(default_factory=set)
    typing: set[str] = field(default_factory=set)
    # Top-level names in definition order: aliases and classes interleaved.
    order: list[tuple[str, str]] = field(default_factory=list)

    def unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.names or keyword.iskeyword(candidate):
            candidate, n = f"{name}{n}", n + 1
        self.names.add(candidate)
        return candidate


def _pascal(name: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", name)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    if not out or out[0].isdigit():
        out = "X" + out
    return out


def _item_name(prop: str) -> str:
    base = _pascal(prop)
    if prop.endswith("s") and not prop.endswith("ss") and len(prop) > 1:
        return base[:-1]
    return base + "Item"


def _literal(values: Iterable[Any]) -> str:
    return ", ".join(_py_literal(v) for v in values)


def _py_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # A JSON string is a valid Python literal, double-quoted as ruff format wants.
        return json.dumps(value, ensure_ascii=False)
    raise GenerationError(f"enum value {value!r} cannot be a Literal")


class _Generator:
    def __init__(self) -> None:
        self.module = _Module()

    # -- types -------------------------------------------------------------------------

    def type_of(self, schema: Mapping[str, Any], name: str) -> str:
        """The annotation for ``schema``; ``name`` is the class name an object would get."""
        ann = self._type_of(schema, name)
        if schema.get("nullable") is True and ann != "Any":
            ann = f"{ann} | None"
        return ann

    def _type_of(self, schema: Mapping[str, Any], name: str) -> str:
        if not isinstance(schema, Mapping):
            return self._any()
        if schema.get("x-kubernetes-int-or-string") is True:
            return "int | str"
        typ = schema.get("type")
        enum = [v for v in schema.get("enum") or () if v is not None]
        if enum and typ in ("string", "integer", "boolean"):
            self.module.typing.add("Literal")
            return f"Literal[{_literal(enum)}]"
        if typ == "string":
            return "str"
        if typ == "integer":
            return "int"
        if typ == "number":
            return "float"
        if typ == "boolean":
            return "bool"
        if typ == "array":
            items = schema.get("items")
            if not isinstance(items, Mapping):
                return f"list[{self._any()}]"
            return f"list[{self.type_of(items, name)}]"
        if typ == "object" or "properties" in schema:
            return self._object(schema, name)
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                types = [self._type_of(b, name) for b in branches]
                if "Any" not in types:
                    return " | ".join(dict.fromkeys(types))
        return self._any()

    def _any(self) -> str:
        self.module.typing.add("Any")
        return "Any"

    def _object(self, schema: Mapping[str, Any], name: str) -> str:
        props = schema.get("properties")
        if isinstance(props, Mapping) and props:
            return self.object_class(schema, name)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return f"dict[str, {self.type_of(extra, name + 'Value')}]"
        return f"dict[str, {self._any()}]"

    # -- classes -------------------------------------------------------------------------

    def object_class(
        self,
        schema: Mapping[str, Any],
        name: str,
        *,
        leading: Iterable[_Field] = (),
        override: Mapping[str, str] | None = None,
    ) -> str:
        """Emit a TypedDict for ``schema`` (children first); return its name."""
        cls_name = self.module.unique(name)
        required = set(schema.get("required") or ())
        props: Mapping[str, Any] = schema.get("properties") or {}
        fields = list(leading)
        taken = {f.name for f in fields}
        for prop, sub in props.items():
            if prop in taken:
                continue
            if override and prop in override:
                ann = override[prop]
            else:
                is_list = isinstance(sub, Mapping) and sub.get("type") == "array"
                child = cls_name + (_item_name(prop) if is_list else _pascal(prop))
                ann = self.type_of(sub, child)
            desc = str(sub.get("description") or "") if isinstance(sub, Mapping) else ""
            fields.append(_Field(prop, ann, prop in required, desc))
        self._add_class(_Class(cls_name, str(schema.get("description") or ""), fields))
        return cls_name

    def _add_class(self, cls: _Class) -> None:
        self.module.typing.add("TypedDict")
        if any(not f.required for f in cls.fields) and any(f.required for f in cls.fields):
            self.module.typing.add("Required")
        self.module.classes.append(cls)
        self.module.order.append(("class", cls.name))

    def literal_alias(self, name: str, annotation: str) -> str:
        alias = self.module.unique(name)
        self.module.aliases[alias] = annotation
        self.module.order.append(("alias", alias))
        return alias


# -- rendering -------------------------------------------------------------------------------


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for para in re.split(r"\n\s*\n", text.strip()):
        para = " ".join(para.split())
        if para:
            if lines:
                lines.append("")
            lines.extend(textwrap.wrap(para, width, break_long_words=False, break_on_hyphens=False))
    return lines


def _docstring(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = _wrap(text, LINE_LENGTH - len(indent) - 6)
    if not lines:
        return []
    if lines[-1].endswith('"'):
        lines[-1] += " "
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    out = [f'{indent}"""{lines[0]}']
    out += [f"{indent}{line}" if line else "" for line in lines[1:]]
    out.append(f'{indent}"""')
    return out


def _comment(text: str, indent: str) -> list[str]:
    return [
        f"{indent}#: {line}" if line else f"{indent}#:"
        for line in _wrap(text, LINE_LENGTH - len(indent) - 3)
    ]


def _field_annotation(cls: _Class, f: _Field) -> str:
    all_required = all(x.required for x in cls.fields)
    return f.annotation if all_required or not f.required else f"Required[{f.annotation}]"


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _render_class(cls: _Class) -> list[str]:
    total = all(f.required for f in cls.fields)
    if all(_is_identifier(f.name) for f in cls.fields):
        head = f"class {cls.name}(TypedDict{'' if total else ', total=False'}):"
        out = [head]
        out += _docstring(cls.description, _INDENT)
        if cls.description and cls.fields:
            out.append("")
        for f in cls.fields:
            out += _comment(f.description, _INDENT)
            out.append(f"{_INDENT}{f.name}: {_field_annotation(cls, f)}")
        if len(out) == 1:
            out.append(f"{_INDENT}pass")
        return out
    # Keys that are not identifiers: the functional form (no docstring possible).
    out = _comment(cls.description, "")
    out.append(f"{cls.name} = TypedDict(")
    out.append(f'{_INDENT}"{cls.name}",')
    out.append(f"{_INDENT}{{")
    for f in cls.fields:
        out += _comment(f.description, _INDENT * 2)
        out.append(f"{_INDENT * 2}{_py_literal(f.name)}: {_field_annotation(cls, f)},")
    out.append(f"{_INDENT}}},")
    if not total:
        out.append(f"{_INDENT}total=False,")
    out.append(")")
    return out


def _render_alias(name: str, annotation: str) -> list[str]:
    line = f"{name} = {annotation}"
    if len(line) <= LINE_LENGTH:
        return [line]
    inner = annotation[len("Literal[") : -1]
    values = _split_literal(inner)
    return [f"{name} = Literal[", *(f"{_INDENT}{v}," for v in values), "]"]


def _split_literal(inner: str) -> list[str]:
    values, current, in_str, escaped = [], "", False, False
    for ch in inner:
        if in_str:
            current += ch
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str, current = True, current + ch
        elif ch == ",":
            values.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        values.append(current.strip())
    return values


def _shorten(gen: _Generator) -> None:
    """Move Literal annotations whose field line would pass LINE_LENGTH to named aliases."""
    for cls in gen.module.classes:
        indent = _INDENT * (1 if all(_is_identifier(f.name) for f in cls.fields) else 2)
        for f in cls.fields:
            name = f.name if _is_identifier(f.name) else _py_literal(f.name)
            if len(f"{indent}{name}: {_field_annotation(cls, f)},") <= LINE_LENGTH:
                continue
            match = re.search(r"Literal\[[^\]]*\]", f.annotation)
            if match:
                alias = gen.literal_alias(cls.name + _pascal(f.name), match.group(0))
                f.annotation = f.annotation.replace(match.group(0), alias)
    # Aliases are defined before every class that may use them.
    aliases = [o for o in gen.module.order if o[0] == "alias"]
    gen.module.order = aliases + [o for o in gen.module.order if o[0] != "alias"]


def _crds(docs: Iterable[Any]) -> list[Mapping[str, Any]]:
    crds = [
        d
        for d in docs
        if isinstance(d, Mapping)
        and d.get("kind") == "CustomResourceDefinition"
        and str(d.get("apiVersion", "")).startswith("apiextensions.k8s.io/")
    ]
    if not crds:
        raise GenerationError("no apiextensions.k8s.io CustomResourceDefinition found")
    return crds


def generate(docs: Iterable[Any], source: str) -> str:
    """The module text for the CRDs among ``docs`` (decoded YAML documents).

    ``source`` is the path named in the header (as the user passed it; several
    paths separated by spaces).
    """
    gen = _Generator()
    for crd in _crds(docs):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        kind = names.get("kind")
        if not kind:
            raise GenerationError("CRD has no spec.names.kind")
        group = spec.get("group", "")
        versions = [v for v in spec.get("versions") or () if v.get("served", True)]
        if not versions:
            raise GenerationError(f"CRD {kind} serves no version")
        for version in versions:
            schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
            suffix = _pascal(version["name"]) if len(versions) > 1 else ""
            api_version = f"{group}/{version['name']}" if group else version["name"]
            top = [
                _Field("apiVersion", "str", True, f"{api_version}"),
                _Field("kind", "str", True, str(kind)),
                _Field("metadata", "dict[str, Any]", True, "ObjectMeta"),
            ]
            gen.module.typing.add("Any")
            desc = str(schema.get("description") or "") or f"{kind} ({api_version})."
            root = dict(schema)
            root["description"] = desc
            required = set(root.get("required") or ())
            root["required"] = sorted(required - {"apiVersion", "kind", "metadata"})
            cls = gen.object_class(root, f"{kind}{suffix}", leading=top)
            list_kind = str(names.get("listKind") or f"{kind}List")
            gen.object_class(
                {
                    "description": f"The answer to a list of {names.get('plural', kind)}.",
                    "properties": {"items": {}},
                    "required": ["items"],
                },
                f"{list_kind}{suffix}",
                leading=[
                    _Field("apiVersion", "str", True),
                    _Field("kind", "str", True),
                    _Field("metadata", "dict[str, Any]", True, "ListMeta"),
                ],
                override={"items": f"list[{cls}]"},
            )
    _shorten(gen)
    return _render(gen.module, source)


def _render(module: _Module, source: str) -> str:
    imports = sorted(module.typing)
    exported = sorted([c.name for c in module.classes] + list(module.aliases))
    header = f"# generated by python -m pycontroller.gen from {source}; do not edit."
    if len(header) > LINE_LENGTH:
        header += "  # noqa: E501"  # kept on one line: tests find the sources here
    out = [
        header,
        '"""Types of the objects the CRDs in the file(s) named above define.',
        "",
        "``TypedDict`` classes: mypy reads them, nothing runs. Objects stay the plain",
        "dicts the API server sends; annotate listers and variables with these",
        "classes (``Lister[X]``) and mypy checks every field access.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f"from typing import {', '.join(imports)}",
        "",
        "__all__ = [",
        *(f'{_INDENT}"{name}",' for name in exported),
        "]",
    ]
    classes = {c.name: c for c in module.classes}
    previous = ""
    for what, name in module.order:
        if what == "alias":
            out += [""] if previous == "alias" else ["", ""]
            out += _render_alias(name, module.aliases[name])
        else:
            out += ["", ""]
            out += _render_class(classes[name])
        previous = what
    return "\n".join(out) + "\n"


def generate_file(*paths: str) -> str:
    """The module text for the CRDs in the files ``paths`` (named in the header as given)."""
    import yaml

    docs: list[Any] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            docs.extend(yaml.safe_load_all(f))
    return generate(docs, " ".join(paths))
