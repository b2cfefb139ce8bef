"""Changes applied to a document's previous lines: a rebuild or an index refresh replaces,
inserts and removes a few lines, then finishes with the full render's own function, so the
bytes are a full render's. A document the renderer did not write gives None: render in full.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from itertools import islice

from sitemap_updater.domain.render import (
    INDEX_CLOSE,
    INDEX_OPEN,
    URLSET_CLOSE,
    URLSET_OPEN,
)

_URL_START = "<url><loc>"
_SITEMAP_START = "<sitemap><loc>"
_STYLESHEET_START = b"<?xml-stylesheet "
_UNESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&#13;", "\r"))


def shard_lines(document: bytes) -> list[str] | None:
    """The ``<url>`` lines of a shard document the renderer wrote, in order (None: not one)."""
    return _lines(document, URLSET_OPEN, URLSET_CLOSE, _URL_START, "</url>\n")


def index_lines(document: bytes) -> list[str] | None:
    """The ``<sitemap>`` lines of an index file the renderer wrote (None: not one)."""
    return _lines(document, INDEX_OPEN, INDEX_CLOSE, _SITEMAP_START, "</sitemap>\n")


def _lines(document: bytes, opening: str, closing: str, start: str, end: str) -> list[str] | None:
    # Split as bytes, decoded line by line: a shard of 50 MiB decoded whole would take four
    # bytes a character for a single emoji. The renderer writes no CR nor LF in a line.
    pieces = document.splitlines(keepends=True)
    frame = opening.encode().splitlines(keepends=True)  # the declaration, the root's tag
    if len(pieces) > 1 and pieces[1].startswith(_STYLESHEET_START):  # the human view's
        del pieces[1]
    if pieces[: len(frame)] != frame or pieces[-1:] != [closing.encode()]:
        return None
    try:
        lines = [piece.decode() for piece in islice(pieces, len(frame), len(pieces) - 1)]
    except UnicodeDecodeError:
        return None
    del pieces
    if any(
        not (line.startswith(start) and line.endswith(end)) or line.find(start, 1) > 0
        for line in lines
    ):
        return None
    return lines


def loc_of(line: str) -> str:
    """The ``<loc>`` of a ``<url>`` or ``<sitemap>`` line, unescaped."""
    start = line.index("<loc>") + 5
    loc = line[start : line.index("</loc>", start)]
    if "&" in loc:
        for escaped, char in _UNESCAPES:
            loc = loc.replace(escaped, char)
        loc = loc.replace("&amp;", "&")
    return loc


def patched(
    lines: list[str], changes: Mapping[str, str | None], key: Callable[[str], str] = loc_of
) -> list[str]:
    """``lines`` (in the order of ``key``) with the line of each key in ``changes`` replaced,
    inserted in order, or removed (None)."""
    result = list(lines)
    for name, line in changes.items():
        at = bisect_left(result, name, key=key)
        present = at < len(result) and key(result[at]) == name
        if line is None:
            if present:
                del result[at]
        elif present:
            result[at] = line
        else:
            result.insert(at, line)
    return result
