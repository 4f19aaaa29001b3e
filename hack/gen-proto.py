#!/usr/bin/env python3
"""Generate ``pycontroller/testing/apiserver/_proto/`` from Kubernetes' own
protobuf definitions.

Two steps:

1. ``--api GIT_DIR --apimachinery GIT_DIR [--ref v0.32.0]`` (only when the
   pinned version changes): copy the upstream ``generated.proto`` files of
   k8s.io/api and k8s.io/apimachinery at ``--ref`` into ``hack/proto/`` (as
   published, Apache-2.0 headers kept), and read from the same tag's Go types
   what ``.proto`` files do not say but kube's JSON depends on: each field's
   JSON name, ``omitempty``, whether it is a pointer (an explicit zero is
   kept), inlined structs, named slice types (``Verbs``, ``ExtraValue``,
   wrapped in an ``items`` message on the wire) and each package's API group.
   Those facts go to ``_proto/gotypes.py``. ``GIT_DIR`` is a clone (bare or
   not) of github.com/kubernetes/api and .../apimachinery.

2. Always: compile ``hack/proto/**/*.proto`` with ``grpc_tools.protoc``
   (``pip install grpcio-tools``) into ``_proto/k8s_io/...`` and rewrite the
   generated imports (``k8s.io`` is not a Python package name) to
   ``pycontroller.testing.apiserver._proto.k8s_io``.

Likewise for gnostic's OpenAPI v2 model, which ``/openapi/v2`` is served in
as protobuf (kube-openapi's handler): ``--gnostic GIT_DIR [--gnostic-ref
v0.6.8]`` (the gnostic-models version k8s.io/client-go v0.32.0's go.mod pins)
copies ``openapiv2/OpenAPIv2.proto`` to ``hack/proto/openapiv2/`` and reads,
from the same tag's generated ``openapiv2/OpenAPIv2.go``, how ``NewDocument``
and friends turn JSON into the messages: each function's required and allowed
keys, each field's JSON key, enum checks and map patterns. Those go to
``_proto/openapiv2/rules.py``; step 2 compiles the .proto into
``_proto/openapiv2/OpenAPIv2_pb2.py``.

The output is checked in, so installing pycontroller needs only the
``protobuf`` runtime. Usage::

    python hack/gen-proto.py --api ../api/.git --apimachinery ../apimachinery/.git
    python hack/gen-proto.py --gnostic ../gnostic-models/.git
    python hack/gen-proto.py            # recompile hack/proto only
    python hack/gen-proto.py --check    # exit 1 if _proto is out of date
"""

from __future__ import annotations

import argparse
import pprint
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "hack" / "proto"
OUT_PKG = "pycontroller.testing.apiserver._proto"
OUT_DIR = ROOT / "pycontroller" / "testing" / "apiserver" / "_proto"

# The apimachinery packages the API types import (meta/v1beta1 and the test
# group are left out: nothing served uses them).
APIMACHINERY_PACKAGES = [
    "pkg/api/resource",
    "pkg/apis/meta/v1",
    "pkg/runtime",
    "pkg/runtime/schema",
    "pkg/util/intstr",
]

_STRUCT = re.compile(r"^type (\w+) struct \{")
_NAMED_SLICE = re.compile(r"^type (\w+) \[\](\w+)\s*$")
_FIELD = re.compile(r"^\t(?:(\w+)\s+)?([\w\.\*\[\]]+(?:\[[\w\.]+\][\w\.\*\[\]]+)?)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')
_GROUP = re.compile(r'^const GroupName = "([^"]*)"', re.M)

GNOSTIC_DIR = PROTO_DIR / "openapiv2"
GNOSTIC_OUT = OUT_DIR / "openapiv2"
_GO_FUNC = re.compile(r"^func New(\w+)\(in \*yaml\.Node", re.M)
_GO_PATTERN = re.compile(r'^\s*(pattern\d+) = regexp\.MustCompile\("((?:[^"\\]|\\.)*)"\)', re.M)
_GO_FIELD = re.compile(r"^\s*// (?:repeated )?\S+ (\w+) = \d+;$")
_GO_LIST = re.compile(r"^\s*(requiredKeys|allowedKeys) := \[\]string\{(.*)\}$")
_GO_PATTERNS = re.compile(r"^\s*allowedPatterns := \[\]\*regexp\.Regexp\{(.*)\}$")
_GO_KEY = re.compile(r'compiler\.MapValueForKey\(m, "([^"]*)"\)')
_GO_MAP = re.compile(r"^\s*// MAP: (\w+)(?: (\S+))?$")
_GO_ENUM = re.compile(r"StringArrayContainsValues?\(\[\]string\{(.*)\}, x\.\w+\)")


class GitTree:
    """Files of one tag of a git clone, read with ``git show`` (no checkout)."""

    def __init__(self, git_dir: str, ref: str) -> None:
        self.git_dir = git_dir
        self.ref = ref

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True, text=True
        ).stdout

    def files(self) -> list[str]:
        return self._git("ls-tree", "-r", "--name-only", self.ref).split()

    def read(self, path: str) -> str:
        return self._git("show", f"{self.ref}:{path}")


def go_facts(source: str, proto_package: str, facts: dict[str, dict[int, str]]) -> list[str]:
    """Add the protobuf fields of the structs in one Go file to ``facts``.

    ``facts[message][field number]`` is ``"json name|flags"`` with flags ``o``
    (omitempty), ``p`` (pointer) and ``i`` (inlined), for the fields that
    differ from the common case (JSON name = proto name, omitempty, not a
    pointer). Returns the named slice types declared in the file."""
    slices: list[str] = []
    current: str | None = None
    for line in source.splitlines():
        if current is None:
            m = _STRUCT.match(line)
            if m:
                current = f"{proto_package}.{m.group(1)}"
                continue
            m = _NAMED_SLICE.match(line)
            if m and m.group(2) != "byte":
                slices.append(f"{proto_package}.{m.group(1)}")
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _FIELD.match(line)
        if not m:
            continue
        tags = dict(_TAG.findall(m.group(3)))
        pb = tags.get("protobuf", "")
        if not pb or pb == "-":
            continue
        number = int(pb.split(",")[1])
        json_tag = tags.get("json", "").split(",")
        go_type = m.group(2)
        flags = ""
        if "omitempty" in json_tag[1:]:
            flags += "o"
        if go_type.startswith("*"):
            flags += "p"
        if "inline" in json_tag[1:] and not json_tag[0]:
            flags += "i"
        proto_name = dict(kv.split("=", 1) for kv in pb.split(",") if "=" in kv).get("name")
        if json_tag[0] == proto_name and flags == "o":
            continue  # the common case, left out of the table
        facts.setdefault(current, {})[number] = f"{json_tag[0]}|{flags}"
    return slices


def vendor(api: GitTree, machinery: GitTree) -> None:
    """Copy the .proto files and write ``gotypes.py`` (step 1)."""
    if (PROTO_DIR / "k8s.io").exists():
        shutil.rmtree(PROTO_DIR / "k8s.io")
    facts: dict[str, dict[int, str]] = {}
    slices: list[str] = []
    groups: dict[str, str] = {}
    trees = [
        (api, "k8s.io/api", [f for f in api.files() if f.endswith("/generated.proto")]),
        (
            machinery,
            "k8s.io/apimachinery",
            [f"{p}/generated.proto" for p in APIMACHINERY_PACKAGES],
        ),
    ]
    for tree, module, protos in trees:
        all_files = tree.files()
        for proto in protos:
            dest = PROTO_DIR / module / proto
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(tree.read(proto))
            pkg_dir = proto.rsplit("/", 1)[0]
            proto_package = f"{module}/{pkg_dir}".replace("/", ".")
            for f in all_files:
                if (
                    f.rsplit("/", 1)[0] == pkg_dir
                    and f.endswith(".go")
                    and not f.endswith(("_test.go", ".pb.go"))
                    and "zz_generated" not in f
                ):
                    text = tree.read(f)
                    slices += go_facts(text, proto_package, facts)
                    g = _GROUP.search(text)
                    if g and module == "k8s.io/api":
                        version = pkg_dir.rsplit("/", 1)[1]
                        groups[f"{g.group(1)}/{version}".lstrip("/")] = proto_package
    _write_versions({"k8s.io/api": api.ref, "k8s.io/apimachinery": machinery.ref})
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    body = "\n\n".join(
        [
            f'"""Facts from the Go types of k8s.io/api {api.ref} and k8s.io/apimachinery '
            f"{machinery.ref}.\n\nGenerated by hack/gen-proto.py; do not edit.\n\n"
            "FIELDS[message][field number] is 'json name|flags': o omitempty, p pointer,\n"
            "i inlined; a field not listed has its proto name as JSON name and is\n"
            "omitempty, not a pointer. LIST_WRAPPERS: named slice types (an items\n"
            "message on the wire).\n"
            'GROUP_VERSIONS: API group/version to the proto package of its types.\n"""',
            f"FIELDS: dict[str, dict[int, str]] = {pprint.pformat(facts, width=100)}",
            f"LIST_WRAPPERS: frozenset[str] = frozenset({pprint.pformat(sorted(slices))})",
            f"GROUP_VERSIONS: dict[str, str] = {pprint.pformat(groups, width=100)}",
        ]
    )
    (OUT_DIR / "gotypes.py").write_text(body + "\n")


def _go_strings(text: str) -> list[str]:
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def gnostic_rules(go: str) -> dict[str, dict[str, object]]:
    """What gnostic's generated ``New<Message>`` functions check, per message.

    ``required``/``allowed`` keys (``allowed`` absent: keys are not checked),
    ``patterns`` (regexps of the other allowed keys), ``keys`` (field -> JSON
    key), ``maps`` (field -> key regexp, "" for every key: the ``// MAP:``
    fields, ordered (name, value) lists) and ``enums`` (field -> values)."""
    patterns = dict(_GO_PATTERN.findall(go))
    rules: dict[str, dict[str, object]] = {}
    starts = list(_GO_FUNC.finditer(go))
    for i, m in enumerate(starts):
        body = go[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(go)]
        rule: dict[str, object] = {}
        keys: dict[str, str] = {}
        maps: dict[str, str] = {}
        enums: dict[str, list[str]] = {}
        field = None
        for line in body.splitlines():
            if f := _GO_FIELD.match(line):
                field = f.group(1)
            elif lst := _GO_LIST.match(line):
                rule["required" if lst.group(1) == "requiredKeys" else "allowed"] = _go_strings(
                    lst.group(2)
                )
            elif pats := _GO_PATTERNS.match(line):
                names = [n.strip() for n in pats.group(1).split(",") if n.strip()]
                rule["patterns"] = [_go_unquote(patterns[n]) for n in names]
            elif field and (mp := _GO_MAP.match(line)):
                maps[field] = _go_unquote(mp.group(2) or "")
            elif field and (k := _GO_KEY.search(line)) and field not in keys:
                keys[field] = k.group(1)
            elif field and (e := _GO_ENUM.search(line)):
                enums[field] = _go_strings(e.group(1))
        for name, value in (("keys", keys), ("maps", maps), ("enums", enums)):
            if value:
                rule[name] = value
        rules[m.group(1)] = rule
    return rules


def _go_unquote(s: str) -> str:
    return s.replace('\\"', '"').replace("\\\\", "\\")


def _write_versions(lines: dict[str, str]) -> None:
    """Update ``hack/proto/VERSION`` (one ``module tag`` line per vendored module)."""
    path = PROTO_DIR / "VERSION"
    current = dict(
        line.split(" ", 1) for line in (path.read_text().splitlines() if path.exists() else [])
    )
    current.update(lines)
    path.write_text("".join(f"{k} {v}\n" for k, v in current.items()))


def vendor_gnostic(tree: GitTree) -> None:
    """Copy gnostic's OpenAPIv2.proto and write ``_proto/openapiv2/rules.py``."""
    GNOSTIC_DIR.mkdir(parents=True, exist_ok=True)
    (GNOSTIC_DIR / "OpenAPIv2.proto").write_text(tree.read("openapiv2/OpenAPIv2.proto"))
    rules = gnostic_rules(tree.read("openapiv2/OpenAPIv2.go"))
    _write_versions({"github.com/google/gnostic-models": tree.ref})
    GNOSTIC_OUT.mkdir(parents=True, exist_ok=True)
    body = (
        f'"""How github.com/google/gnostic-models {tree.ref} (openapiv2/OpenAPIv2.go)\n'
        "builds each openapi.v2 message from JSON/YAML.\n\n"
        "Generated by hack/gen-proto.py; do not edit. RULES[message]: 'required'\n"
        "and 'allowed' keys (no 'allowed': keys unchecked), 'patterns' of other\n"
        "allowed keys, 'keys' (field -> JSON key), 'maps' (field -> regexp of the\n"
        "keys it collects as (name, value) pairs; '' for all), 'enums' (field ->\n"
        'allowed values).\n"""\n\n'
        f"RULES: dict[str, dict[str, object]] = {pprint.pformat(rules, width=100)}\n"
    )
    (GNOSTIC_OUT / "rules.py").write_text(body)


def compile_gnostic(out: Path = GNOSTIC_OUT) -> None:
    """Compile hack/proto/openapiv2 into ``out`` (step 2)."""
    from grpc_tools import protoc  # type: ignore[import-untyped]

    well_known = Path(protoc.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main(
            [
                "protoc",
                f"-I{PROTO_DIR}",
                f"-I{well_known}",
                f"--python_out={tmp}",
                "openapiv2/OpenAPIv2.proto",
            ]
        )
        if rc != 0:
            sys.exit(f"protoc failed ({rc})")
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(tmp) / "openapiv2" / "OpenAPIv2_pb2.py", out / "OpenAPIv2_pb2.py")
    init = out / "__init__.py"
    if not init.exists():
        init.write_text(
            '"""gnostic\'s openapi.v2 messages (OpenAPIv2_pb2) and their JSON rules (rules)."""\n'
        )


def compile_protos(out: Path = OUT_DIR / "k8s_io") -> None:
    """Compile hack/proto/k8s.io into ``out`` (step 2; _proto/k8s_io by default)."""
    from grpc_tools import protoc  # type: ignore[import-untyped]

    protos = sorted(str(p.relative_to(PROTO_DIR)) for p in (PROTO_DIR / "k8s.io").rglob("*.proto"))
    if out.exists():
        shutil.rmtree(out)
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main(["protoc", f"-I{PROTO_DIR}", f"--python_out={tmp}", *protos])
        if rc != 0:
            sys.exit(f"protoc failed ({rc})")
        for src in Path(tmp).rglob("*_pb2.py"):
            rel = src.relative_to(Path(tmp) / "k8s" / "io")
            dest = out / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text()
            text = re.sub(r"^from k8s\.io\.", f"from {OUT_PKG}.k8s_io.", text, flags=re.M)
            dest.write_text(text)
    for d in [out, *(p for p in out.rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
    init = OUT_DIR / "__init__.py"
    if not init.exists():
        init.write_text('"""Generated by hack/gen-proto.py: protobuf modules, Go type facts."""\n')


def _descriptors(root: Path) -> dict[str, str]:
    """Each module's serialized descriptor line (what protoc's version does not change)."""
    out = {}
    for f in root.rglob("*_pb2.py"):
        lines = [x for x in f.read_text().splitlines() if "AddSerializedFile(" in x]
        out[str(f.relative_to(root))] = "\n".join(lines)
    return out


def check() -> int:
    """Compile into a scratch directory and compare with the checked-in modules."""
    with tempfile.TemporaryDirectory() as tmp:
        compile_protos(Path(tmp) / "k8s_io")
        compile_gnostic(Path(tmp) / "openapiv2")
        fresh = _descriptors(Path(tmp))
    current = _descriptors(OUT_DIR)
    drift = sorted(k for k in fresh.keys() | current.keys() if fresh.get(k) != current.get(k))
    for name in drift:
        print(f"out of date: {name}", file=sys.stderr)
    return 1 if drift else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", help="git dir of github.com/kubernetes/api")
    parser.add_argument("--apimachinery", help="git dir of github.com/kubernetes/apimachinery")
    parser.add_argument("--ref", default="v0.32.0", help="tag of both (kube 1.32.0: v0.32.0)")
    parser.add_argument("--gnostic", help="git dir of github.com/google/gnostic-models")
    parser.add_argument(
        "--gnostic-ref", default="v0.6.8", help="its tag (k8s.io/client-go v0.32.0: v0.6.8)"
    )
    parser.add_argument(
        "--check", action="store_true", help="only report modules that differ from hack/proto"
    )
    args = parser.parse_args()
    if args.check:
        sys.exit(check())
    if bool(args.api) != bool(args.apimachinery):
        parser.error("--api and --apimachinery go together")
    if args.api:
        vendor(GitTree(args.api, args.ref), GitTree(args.apimachinery, args.ref))
    if args.gnostic:
        vendor_gnostic(GitTree(args.gnostic, args.gnostic_ref))
    compile_protos()
    compile_gnostic()


if __name__ == "__main__":
    main()
