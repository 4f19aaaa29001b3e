"""Content negotiation as kube-apiserver 1.32 does it.

``media_ranges`` parses an ``Accept`` header as ``goautoneg.ParseAccept``
(github.com/munnerz/goautoneg) and orders it the same way; ``negotiate``
then picks the served media type as apiserver's
``handlers/negotiation.NegotiateMediaTypeOptions`` and
``acceptMediaTypeOptions`` do, under an ``Endpoint``'s restrictions (a
resource's ``RequestScope``, or ``DefaultEndpointRestrictions`` for errors).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pycontroller import _json

__all__ = [
    "CUSTOM_RESOURCE",
    "DEFAULT",
    "RESOURCE",
    "SERVED",
    "Endpoint",
    "convert_target",
    "encode_json",
    "media_ranges",
    "negotiate",
]


def encode_json(obj: Any) -> bytes:
    """An API object as kube-apiserver's JSON serializer writes it: compact,
    ending with a newline (apimachinery's ``json.Serializer`` uses Go's
    ``json.Encoder.Encode``, which appends one). Objects, lists, Tables,
    Status errors and discovery documents; not ``/version`` (indented, no
    newline) nor the OpenAPI documents (marshalled bytes, no newline)."""
    return _json.dumps(obj) + b"\n"


# The serializers of a CodecFactory (and of a custom resource's
# unstructuredNegotiatedSerializer), in order: (media type, has a stream
# serializer). CBOR is behind a feature gate that 1.32 leaves off.
SERVED: tuple[tuple[str, bool], ...] = (
    ("application/json", True),
    ("application/yaml", False),
    ("application/vnd.kubernetes.protobuf", True),
)

_META_GROUP_VERSIONS = (("meta.k8s.io", "v1"), ("meta.k8s.io", "v1beta1"))


@dataclass(frozen=True)
class Endpoint:
    """apiserver's ``EndpointRestrictions``.

    ``standard``: the media types served without a transform (a
    ``RequestScope``'s ``StandardSerializers``; None: all). ``scope``: a
    resource's ``RequestScope`` (Table and PartialObjectMetadata transforms,
    ``sv=v1``) rather than ``DefaultEndpointRestrictions`` (no transform,
    no ``sv``)."""

    standard: tuple[str, ...] | None
    scope: bool

    def allows_transform(self, media: str, target: tuple[str, str, str] | None) -> bool:
        if target is None:
            return self.standard is None or media in self.standard
        if not self.scope:
            return False
        group, version, kind = target
        if (group, version) not in _META_GROUP_VERSIONS:
            return False
        if kind == "Table":
            return media in ("application/json", "application/yaml")
        return kind in ("PartialObjectMetadata", "PartialObjectMetadataList")

    def allows_server_version(self, version: str) -> bool:
        return self.scope and version == "v1"  # the scope's MetaGroupVersion

    def allows_stream(self, schema: str) -> bool:
        return schema == "watch"


# A built-in resource's scope; a custom resource's (its StandardSerializers
# leave protobuf out: "CRDs explicitly do not support protobuf, but some
# objects returned by the API server do"); errors (ErrorNegotiated).
RESOURCE = Endpoint(standard=None, scope=True)
CUSTOM_RESOURCE = Endpoint(standard=("application/json", "application/yaml"), scope=True)
DEFAULT = Endpoint(standard=None, scope=False)


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


def negotiate(
    accept: str,
    endpoint: Endpoint,
    served: Sequence[tuple[str, bool]] = SERVED,
) -> tuple[str, dict[str, str]] | None:
    """The media type kube answers ``accept`` with and the clause's parameters
    (``as``/``g``/``v``, ``stream``, ...); None when none can be served
    (kube's 406, or the raw JSON of an error).

    An empty header is the first served type (JSON)."""
    if not accept and served:
        return served[0][0], {}
    for clause in _parse_accept(accept):
        for media, stream in served:
            m_type, _, m_subtype = media.partition("/")
            if clause.type == "*" and clause.subtype == "*":
                pass
            elif clause.type != m_type or clause.subtype not in (m_subtype, "*"):
                continue
            if _acceptable(clause.params, media, stream, endpoint):
                return media, clause.params
    return None
