"""Changes applied to a document's previous lines: a rebuild or an index refresh replaces,
inserts and removes a few lines, then finishes with the full render's own function, so the
bytes are a full render's. A document the renderer did not write gives None: render in full.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping

from sitemap_updater.domain.render import (
    INDEX_CLOSE,
    INDEX_OPEN,
    URLSET_CLOSE,
    URLSET_OPEN,
    XML_DECLARATION,
)

_URL_START = "<url><loc>"
_SITEMAP_START = "<sitemap><loc>"
_STYLESHEET_START = "<?xml-stylesheet "
_UNESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&#13;", "\r"))


def shard_lines(document: bytes) -> list[str] | None:
    """The ``<url>`` lines of a shard document the renderer wrote, in order (None: not one)."""
    return _lines(document, URLSET_OPEN, URLSET_CLOSE, _URL_START, "</url>\n")


def index_lines(document: bytes) -> list[str] | None:
    """The ``<sitemap>`` lines of an index file the renderer wrote (None: not one)."""
    return _lines(document, INDEX_OPEN, INDEX_CLOSE, _SITEMAP_START, "</sitemap>\n")


def _lines(document: bytes, opening: str, closing: str, start: str, end: str) -> list[str] | None:
    try:
        text = document.decode("utf-8")
    except UnicodeDecodeError:
        return None
    start_at = declaration = len(XML_DECLARATION)
    if text.startswith(_STYLESHEET_START, declaration):  # the human view's instruction
        start_at = text.find("\n", declaration) + 1
    frame = opening[declaration:]
    if not (
        text.startswith(XML_DECLARATION)
        and text.startswith(frame, start_at)
        and text.endswith(closing)
    ):
        return None
    pieces = text[start_at + len(frame) : len(text) - len(closing)].split("\n")
    del text  # shards reach 50 MiB: hold as few copies as can be
    if pieces.pop():  # the body ends with a line break
        return None
    lines = [f"{line}\n" for line in pieces]
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
