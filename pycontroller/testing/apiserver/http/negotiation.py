"""Parsing an ``Accept`` header as kube-apiserver's content negotiation does
(apimachinery ``handlers/negotiation``): media ranges in preference order."""

from __future__ import annotations

__all__ = ["media_ranges"]


def media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    """``(media type, parameters)`` of each range of ``accept``, highest ``q``
    first (ties keep header order).

    Media types and parameter names are lower-cased; ``q`` is removed from the
    parameters (unparsable counts as 1); ranges with ``q=0`` or no media type
    are dropped. The first range a handler serves wins.
    """
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for i, part in enumerate(accept.split(",")):
        media, *raw = (p.strip() for p in part.split(";"))
        params: dict[str, str] = {}
        for p in raw:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if media and q > 0:
            ranges.append((-q, i, media.lower(), params))
    return [(media, params) for _, _, media, params in sorted(ranges)]
