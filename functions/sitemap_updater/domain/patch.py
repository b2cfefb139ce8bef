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
    declaration = len(XML_DECLARATION)
    if text.startswith(_STYLESHEET_START, declaration):  # the human view's instruction
        text = XML_DECLARATION + text[text.find("\n", declaration) + 1 :]
    if not (text.startswith(opening) and text.endswith(closing)):
        return None
    body = text[len(opening) : len(text) - len(closing)]
    lines = [f"{line}\n" for line in body.split("\n")[:-1]]
    if len("".join(lines)) != len(body) or any(
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
