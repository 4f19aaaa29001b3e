"""Content negotiation as kube-apiserver 1.32 does it, and the bodies it picks.

``media_ranges`` parses an ``Accept`` header as ``goautoneg.ParseAccept``
(github.com/munnerz/goautoneg) and orders it the same way; ``choose`` then
picks the served media type as apiserver's
``handlers/negotiation.NegotiateMediaTypeOptions`` and
``acceptMediaTypeOptions`` do, under an ``Endpoint``'s restrictions (a
resource's ``RequestScope``, or ``DefaultEndpointRestrictions`` for errors),
and returns it as a ``Negotiated``: the media type, the transform target
(``as``/``g``/``v``: a Table or PartialObjectMetadata[List]) and ``pretty``.
``output`` and ``output_stream`` are ``NegotiateOutputMediaType`` and
``NegotiateOutputMediaTypeStream``: no match is kube's 406 ``NotAcceptable``
listing the served (or streamable) media types.

The bodies: ``encode_json`` (Go's ``json.Encoder``), ``encode_json_pretty``
(``json.MarshalIndent``: the pretty serializer, and ``WriteRawJSON``) and
``encode_yaml`` (apimachinery's YAML serializer: sigs.k8s.io/yaml over the
JSON form).
"""

from __future__ import annotations

import functools
import json
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from pycontroller import _json
from pycontroller.testing.apiserver.status import StatusError

__all__ = [
    "CUSTOM_RESOURCE",
    "DEFAULT",
    "JSON",
    "PROTOBUF",
    "RESOURCE",
    "SERVED",
    "YAML",
    "Endpoint",
    "Negotiated",
    "choose",
    "convert_target",
    "encode_json",
    "encode_json_pretty",
    "encode_yaml",
    "is_pretty",
    "media_ranges",
    "negotiate",
    "not_acceptable",
    "output",
    "output_stream",
]

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def encode_json(obj: Any) -> bytes:
    """An API object as kube-apiserver's JSON serializer writes it: compact,
    ending with a newline (apimachinery's ``json.Serializer`` uses Go's
    ``json.Encoder.Encode``, which appends one). Objects, lists, Tables,
    Status errors and discovery documents; not ``/version`` (indented, no
    newline) nor the OpenAPI documents (marshalled bytes, no newline)."""
    return _json.dumps(obj) + b"\n"


# Go's encoding/json escapes these inside strings (HTMLEscape, and the two
# line separators JavaScript does not accept in string literals).
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))  # fmt: skip


def encode_json_pretty(obj: Any) -> bytes:
    """``json.MarshalIndent(obj, "", "  ")``: what the JSON serializer's
    pretty variant writes (``?pretty=true``, ``pretty=1``, curl's and
    browsers' User-Agents) and what ``WriteRawJSON`` writes for an error no
    negotiated serializer can carry. No final newline."""
    out = json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")
    for raw, escaped in _GO_ESCAPES:
        if raw in out:  # only ever inside strings, where Go escapes them
            out = out.replace(raw, escaped)
    return out


# --- YAML ---------------------------------------------------------------------------
#
# kube's YAML serializer (apimachinery runtime/serializer/json with Yaml: true)
# marshals the object to JSON and converts it with sigs.k8s.io/yaml's
# JSONToYAML, which unmarshals the JSON with its fork of gopkg.in/yaml.v2
# (integers stay integers, other numbers are float64) and marshals that
# back with yaml.v2. yaml.v2's emitter is a port of libyaml, as PyYAML's
# is, so PyYAML writes the same text once it is given yaml.v2's choices:
#
# - keys sorted as yaml.v2's ``keyList.Less`` does (runs of digits compare
#   as numbers: ``b9`` before ``b10``), not in code point order;
# - a string is plain unless yaml.v2's resolver would read it back as
#   something else (``"true"``, ``"123"``, ``"2024-01-01T00:00:00Z"``,
#   ``"y"``, ``""``...), then double-quoted; with a newline it is a literal
#   block (``|``). Plain strings the emitter cannot write plain
#   (``'a: b'``, ``'-'``) fall back to single quotes in both emitters;
# - floats as Go's ``strconv.FormatFloat(f, 'g', -1, 64)``;
# - two-space indentation, sequences not indented under their key, lines
#   folded at 80 columns (yaml.v2's defaults, and PyYAML's), no ``---``.
#
# The dumper resolves every plain scalar to a string, so PyYAML never adds
# quotes or tags of its own: the representers below choose each style.

_YAML_STR = "tag:yaml.org,2002:str"

# yaml.v2 resolve.go's map of special plain scalars (bools of YAML 1.1,
# nulls, the float specials, the merge key).
_V2_SPECIAL = frozenset(
    "y Y yes Yes YES true True TRUE on On ON n N no No NO false False FALSE off Off OFF "
    "~ null Null NULL .nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF "
    "<<".split()
) | {""}
_V2_INT = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_V2_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_V2_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_V2_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?")
# yaml.v2's timestamp layouts (time.Parse): 2006-1-2T15:4:5.999999999Z07:00
# (T or t), "2006-1-2 15:4:5.999999999" and "2006-1-2".
_V2_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[+-]\d{2}:\d{2})"
    r"| (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?)?"
)


def _v2_timestamp(s: str) -> bool:
    m = _V2_TIMESTAMP.fullmatch(s)
    if m is None:
        return False
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not 1 <= day <= days:
        return False
    clock = m.group(4, 5, 6) if m[4] is not None else m.group(7, 8, 9)
    if clock[0] is None:
        return True
    hour, minute, second = (int(x) for x in clock)
    return hour < 24 and minute < 60 and second < 60


def _go_parse_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``'s syntax (sign, ``0x``/``0o``/``0b``
    prefixes, a leading ``0`` for octal), without its range check."""
    if _V2_INT.fullmatch(text) is None:
        return None
    body = text[1:] if text[0] in "+-" else text
    if len(body) > 1 and body[0] == "0" and body[1] in "xXoObB":
        value = int(body, 0)
    elif body[0] == "0":
        value = int(body, 8)
    else:
        value = int(body)
    return -value if text[0] == "-" else value


def _v2_quoted(s: str) -> bool:
    """True when yaml.v2 double-quotes the string ``s``: its resolver would
    read it back plain as something else (``stringv``'s ``canUsePlain``), or
    it looks like a base 60 float."""
    if s in _V2_SPECIAL:
        return True
    c = s[0]
    if c == ".":
        return _V2_DOT_FLOAT.fullmatch(s) is not None  # ParseFloat
    if c not in "+-0123456789":
        return False
    if _v2_timestamp(s):
        return True
    plain = s.replace("_", "")
    value = _go_parse_int(plain)
    if value is not None:
        if -(2**63) <= value < 2**63:  # ParseInt
            return True
        if plain[0] not in "+-" and value < 2**64:  # ParseUint
            return True
    if _V2_FLOAT.fullmatch(plain) and not math.isinf(float(plain)):  # ParseFloat's ErrRange
        return True
    return _V2_BASE60.fullmatch(s) is not None


def _go_float(f: float) -> str:
    """yaml.v2's float: ``strconv.FormatFloat(f, 'g', -1, 64)`` (the shortest
    digits that read back the same, as Python's ``repr``; an exponent form
    below 1e-4 and from 1e6 up, the precision Go's %g takes for shortest)."""
    if math.isnan(f):
        return ".nan"
    if math.isinf(f):
        return ".inf" if f > 0 else "-.inf"
    sign = "-" if math.copysign(1.0, f) < 0 else ""
    if f == 0:
        return sign + "0"
    _, digit_tuple, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # the decimal point follows this many digits
    exp = point - 1
    if exp < -4 or exp >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{head}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _v2_key_less(a: str, b: str) -> bool:
    """yaml.v2's ``keyList.Less`` for two string keys: letters compare as
    runes, a letter sorts after a non-letter, and runs of digits compare by
    their numeric value."""
    for i in range(min(len(a), len(b))):
        ca, cb = a[i], b[i]
        if ca == cb:
            continue
        al, bl = ca.isalpha(), cb.isalpha()
        if al and bl:
            return ca < cb
        if al or bl:
            return bl
        an = bn = 0
        if ca == "0" or cb == "0":
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(a) and a[ai].isdecimal():
            an = an * 10 + ord(a[ai]) - 48
            ai += 1
        bi = i
        while bi < len(b) and b[bi].isdecimal():
            bn = bn * 10 + ord(b[bi]) - 48
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ca < cb
    return len(a) < len(b)


def _v2_compare(a: tuple[str, Any], b: tuple[str, Any]) -> int:
    return -1 if _v2_key_less(a[0], b[0]) else (1 if _v2_key_less(b[0], a[0]) else 0)


_v2_key = functools.cmp_to_key(_v2_compare)


class _GoYAMLDumper(yaml.SafeDumper):
    """PyYAML set up to write what sigs.k8s.io/yaml (yaml.v2) writes."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def ignore_aliases(self, data: Any) -> bool:
        return True  # yaml.v2 never writes anchors


def _represent_str(dumper: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
    if "\n" in s:
        style: str | None = "|"
    elif _v2_quoted(s):
        style = '"'
    else:
        style = None
    return dumper.represent_scalar(_YAML_STR, s, style=style)


def _represent_plain(text: str) -> Any:
    return lambda dumper, _value: dumper.represent_scalar(_YAML_STR, text)


def _represent_int(dumper: yaml.SafeDumper, n: int) -> yaml.ScalarNode:
    if not -(2**63) <= n < 2**64:
        return dumper.represent_scalar(_YAML_STR, _go_float(float(n)))  # read back as a float
    return dumper.represent_scalar(_YAML_STR, str(n))


def _represent_float(dumper: yaml.SafeDumper, f: float) -> yaml.ScalarNode:
    # Go's JSON writes an integral float64 below 1e21 without a fraction or
    # an exponent ("1000000"), which yaml.v2 reads back as an integer.
    if f.is_integer() and abs(f) < 1e21:
        return _represent_int(dumper, int(f))
    return dumper.represent_scalar(_YAML_STR, _go_float(f))


def _represent_map(dumper: yaml.SafeDumper, m: Mapping[str, Any]) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", sorted(m.items(), key=_v2_key))


_GoYAMLDumper.add_representer(str, _represent_str)
_GoYAMLDumper.add_representer(bool, lambda d, b: d.represent_scalar(_YAML_STR, str(b).lower()))
_GoYAMLDumper.add_representer(int, _represent_int)
_GoYAMLDumper.add_representer(float, _represent_float)
_GoYAMLDumper.add_representer(type(None), _represent_plain("null"))
_GoYAMLDumper.add_representer(dict, _represent_map)
_GoYAMLDumper.add_representer(
    list, lambda d, seq: d.represent_sequence("tag:yaml.org,2002:seq", seq)
)


def encode_yaml(obj: Any) -> bytes:
    """An API object as kube-apiserver's YAML serializer writes it (see above)."""
    text = yaml.dump(
        obj,
        Dumper=_GoYAMLDumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        indent=2,
        width=80,
    )
    return text.encode("utf-8")


# The serializers of a CodecFactory (and of a custom resource's
# unstructuredNegotiatedSerializer), in order: (media type, has a stream
# serializer). CBOR is behind a feature gate that 1.32 leaves off.
SERVED: tuple[tuple[str, bool], ...] = (
    (JSON, True),
    (YAML, False),
    (PROTOBUF, True),
)

_META_GROUP_VERSIONS = (("meta.k8s.io", "v1"), ("meta.k8s.io", "v1beta1"))


@dataclass(frozen=True)
class Endpoint:
    """apiserver's ``EndpointRestrictions``.

    ``standard``: the media types served without a transform (a
    ``RequestScope``'s ``StandardSerializers``; None: all). ``scope``: a
    resource's ``RequestScope`` (Table and PartialObjectMetadata transforms,
    ``sv=v1``) rather than ``DefaultEndpointRestrictions`` (no transform,
    no ``sv``). ``tables``: whether the scope converts to Tables (it has a
    ``TableConvertor``, and the request is not a streaming list, which
    ``watchListEndpointRestrictions`` refuses Tables)."""

    standard: tuple[str, ...] | None
    scope: bool
    tables: bool = True

    def allows_transform(self, media: str, target: tuple[str, str, str] | None) -> bool:
        if target is None:
            return self.standard is None or media in self.standard
        if not self.scope:
            return False
        group, version, kind = target
        if (group, version) not in _META_GROUP_VERSIONS:
            return False
        if kind == "Table":
            return self.tables and media in (JSON, YAML)
        return kind in ("PartialObjectMetadata", "PartialObjectMetadataList")

    def allows_server_version(self, version: str) -> bool:
        return self.scope and version == "v1"  # the scope's MetaGroupVersion

    def allows_stream(self, schema: str) -> bool:
        return schema == "watch"

    def without_tables(self) -> Endpoint:
        return Endpoint(self.standard, self.scope, tables=False)


# A built-in resource's scope; a custom resource's (its StandardSerializers
# leave protobuf out: "CRDs explicitly do not support protobuf, but some
# objects returned by the API server do", PartialObjectMetadata among them);
# errors (ErrorNegotiated).
RESOURCE = Endpoint(standard=None, scope=True)
CUSTOM_RESOURCE = Endpoint(standard=(JSON, YAML), scope=True)
DEFAULT = Endpoint(standard=None, scope=False)


@dataclass(frozen=True)
class Negotiated:
    """What one negotiation picked (apiserver's ``MediaTypeOptions``).

    ``media_type``: the serializer's media type (``Content-Type`` of a body);
    ``stream``: whether it has a stream serializer (JSON and protobuf do,
    YAML does not); ``target``: the transform asked for with ``as``/``g``/``v``
    as ``(group, version, kind)``, None for the object itself; ``pretty``:
    the clause's ``pretty=1``."""

    media_type: str
    stream: bool = True
    target: tuple[str, str, str] | None = None
    pretty: bool = False

    @property
    def kind(self) -> str | None:
        """The target kind (``Table``, ``PartialObjectMetadata``, ...), or None."""
        return self.target[2] if self.target is not None else None

    @property
    def target_api_version(self) -> str:
        """The target's ``apiVersion`` (``meta.k8s.io/v1``); "" without one."""
        return f"{self.target[0]}/{self.target[1]}" if self.target is not None else ""

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` of a watch stream in this media type
        (``serveWatchHandler``: JSON as is, others with ``;stream=watch``)."""
        return self.media_type if self.media_type == JSON else self.media_type + ";stream=watch"


def not_acceptable(accepted: Sequence[str]) -> StatusError:
    """negotiation's ``NewNotAcceptableError``: 406 listing what can be served."""
    return StatusError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {', '.join(accepted)}",
    )


@dataclass(frozen=True)
class _Clause:
    type: str
    subtype: str
    q: float
    params: dict[str, str]


# strconv.ParseFloat's decimal and special forms (hex floats are rarer still).
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?i:inf|infinity|nan)")


def _parse_q(text: str) -> float:
    """``strconv.ParseFloat(text, 32)``; a syntax error is 0 (goautoneg ignores the error)."""
    if not _FLOAT.fullmatch(text):
        return 0.0
    value = float(text)
    if math.isinf(value) or math.isnan(value):
        return value
    try:
        rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)  # out of float32 range: ±Inf
    return rounded


def _less(a: _Clause, b: _Clause) -> bool:
    # goautoneg's accept_slice.Less, as it is (not a strict order: sort.Sort's
    # insertion sort makes the outcome depend on the header's order).
    if a.q > b.q:
        return True
    if a.type != "*" and b.type == "*":
        return True
    return a.subtype != "*" and b.subtype == "*"


def _parse_accept(accept: str) -> list[_Clause]:
    clauses: list[_Clause] = []
    for raw_part in accept.split(","):
        part = raw_part.strip(" ")
        media_range, *raw_params = part.split(";")
        sp = media_range.split("/")
        type_ = sp[0].strip(" ")
        if len(sp) == 1 and type_ == "*":
            subtype = "*"
        elif len(sp) == 2:
            subtype = sp[1].strip(" ")
        else:
            continue
        q = 1.0
        params: dict[str, str] = {}
        for param in raw_params:
            token, eq, value = param.partition("=")
            if not eq:
                continue
            token = token.strip(" ")
            if token == "q":
                q = _parse_q(value)
            else:
                params[token] = value.strip(" ")
        clauses.append(_Clause(type_, subtype, q, params))
    # sort.Sort: an insertion sort for up to 12 elements (pdqsort's cut-off),
    # which every real Accept header is; longer ones are sorted the same way.
    for i in range(1, len(clauses)):
        j = i
        while j > 0 and _less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    """``(type/subtype, parameters)`` of each clause of ``accept``, in the order
    kube tries them (goautoneg: by ``q``, specific types before wildcards).

    As goautoneg: nothing is lower-cased; ``q`` is removed from the
    parameters (unparsable is 0); ``q=0`` clauses are kept (1.32 still
    matches them, last); a bare ``*`` is ``*/*``; a clause without a
    ``type/subtype`` is dropped."""
    return [(f"{c.type}/{c.subtype}", c.params) for c in _parse_accept(accept)]


def convert_target(params: dict[str, str]) -> tuple[str, str, str] | None:
    """The ``(group, version, kind)`` a clause's ``g``/``v``/``as`` ask for, or None."""
    if not any(k in params for k in ("as", "g", "v")):
        return None
    return params.get("g", ""), params.get("v", ""), params.get("as", "")


def _acceptable(params: dict[str, str], media: str, stream: bool, endpoint: Endpoint) -> bool:
    """``acceptMediaTypeOptions``: whether a clause's parameters can be served."""
    for key, value in params.items():
        if key == "stream" and value and (not stream or not endpoint.allows_stream(value)):
            return False
        if key == "sv" and value and not endpoint.allows_server_version(value):
            return False
        # as/g/v: the transform, checked below; pretty, export and unknown
        # parameters are ignored.
    return endpoint.allows_transform(media, convert_target(params))


def _choose(
    accept: str, endpoint: Endpoint, served: Sequence[tuple[str, bool]]
) -> tuple[str, bool, dict[str, str]] | None:
    if not accept and served:
        return served[0][0], served[0][1], {}
    for clause in _parse_accept(accept):
        for media, stream in served:
            m_type, _, m_subtype = media.partition("/")
            if clause.type == "*" and clause.subtype == "*":
                pass
            elif clause.type != m_type or clause.subtype not in (m_subtype, "*"):
                continue
            if _acceptable(clause.params, media, stream, endpoint):
                return media, stream, clause.params
    return None


def negotiate(
    accept: str,
    endpoint: Endpoint,
    served: Sequence[tuple[str, bool]] = SERVED,
) -> tuple[str, dict[str, str]] | None:
    """The media type kube answers ``accept`` with and the clause's parameters
    (``as``/``g``/``v``, ``stream``, ...); None when none can be served
    (kube's 406, or the raw JSON of an error).

    An empty header is the first served type (JSON)."""
    chosen = _choose(accept, endpoint, served)
    return None if chosen is None else (chosen[0], chosen[2])


def choose(
    accept: str,
    endpoint: Endpoint,
    served: Sequence[tuple[str, bool]] = SERVED,
) -> Negotiated | None:
    """``NegotiateMediaTypeOptions``: what kube answers ``accept`` with at
    ``endpoint``, or None when nothing can be served."""
    chosen = _choose(accept, endpoint, served)
    if chosen is None:
        return None
    media, stream, params = chosen
    return Negotiated(media, stream, convert_target(params), params.get("pretty") == "1")


def output(
    accept: str, endpoint: Endpoint, served: Sequence[tuple[str, bool]] = SERVED
) -> Negotiated:
    """``NegotiateOutputMediaType``: ``choose``, or the 406 that lists the
    served media types (all of the endpoint's serializers, protobuf included
    for a custom resource whose objects it refuses: kube lists them so)."""
    chosen = choose(accept, endpoint, served)
    if chosen is None:
        raise not_acceptable([media for media, _ in served])
    return chosen


def output_stream(
    accept: str, endpoint: Endpoint, served: Sequence[tuple[str, bool]] = SERVED
) -> Negotiated:
    """A watch's two negotiations: ``NegotiateOutputMediaType`` (406 listing
    the served media types), then ``NegotiateOutputMediaTypeStream`` over the
    same header and restrictions, whose choice must have a stream serializer
    (YAML has none: 406 listing the ``;stream=watch`` types)."""
    chosen = output(accept, endpoint, served)
    if not chosen.stream:
        raise not_acceptable([f"{media};stream=watch" for media, stream in served if stream])
    return chosen


# strconv.ParseBool
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def is_pretty(chosen: Negotiated, query_pretty: str | None, user_agent: str) -> bool:
    """Whether kube writes a body with the pretty serializer
    (``NegotiateOutputMediaType``): the clause's ``pretty=1``, else a
    ``pretty`` query parameter (``strconv.ParseBool``; set, it decides), else
    a human client's User-Agent (curl, Wget, browsers)."""
    if chosen.pretty:
        return True
    if query_pretty:
        return query_pretty in _GO_TRUE
    return user_agent.startswith(("curl", "Wget", "Mozilla/5.0"))
