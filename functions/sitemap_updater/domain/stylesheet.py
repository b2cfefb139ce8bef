"""The human view (``STYLESHEET``): every index file and shard references ``/sitemap.xsl``,
which a browser applies (a table) and crawlers ignore. Root-relative, as browsers apply XSLT
only from the document's own origin: the same bytes work on a staging copy and on ``local``.
Imports nothing of the domain, so the renderer can import it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

STYLESHEET_KEY = "sitemap.xsl"
STYLESHEET_HREF = f"/{STYLESHEET_KEY}"
# What the processing instruction declares (browsers apply it whatever the Content-Type).
STYLESHEET_CONTENT_TYPE = "text/xsl; charset=utf-8"
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def processing_instruction(href: str) -> bytes:
    """``<?xml-stylesheet type="text/xsl" href="..."?>`` and a newline."""
    plain = href.startswith("/") and not href.startswith("//")
    if not plain or any(c in href for c in "\"'<>&?\n\r\t "):
        raise ValueError(f"not a plain root-relative path: {href!r}")
    return f'<?xml-stylesheet type="text/xsl" href="{href}"?>\n'.encode()


def with_stylesheet(document: bytes, href: str | None, max_bytes: int | None = None) -> bytes:
    """``document`` with the stylesheet's processing instruction after its XML declaration;
    unchanged when ``href`` is None or the instruction would push it over ``max_bytes`` (the
    protocol's limit wins over the view)."""
    if href is None:
        return document
    if not document.startswith(_DECLARATION):
        raise ValueError("the document does not start with the XML declaration")
    return b"".join(viewed(document[len(_DECLARATION) :], len(document), href, max_bytes))


def viewed(rest: bytes, size: int, href: str | None, max_bytes: int | None) -> list[bytes]:
    """The XML declaration, the instruction if any (as ``with_stylesheet`` decides for a
    document of ``size`` bytes), then ``rest``: the document after its declaration."""
    instruction = b"" if href is None else processing_instruction(href)
    if max_bytes is not None and size + len(instruction) > max_bytes:
        instruction = b""
    return [_DECLARATION, instruction, rest] if instruction else [_DECLARATION, rest]


@cache
def stylesheet_bytes() -> bytes:
    """The stylesheet shipped inside the package (``sitemap_updater/assets/sitemap.xsl``)."""
    return resources.files("sitemap_updater").joinpath("assets", STYLESHEET_KEY).read_bytes()
