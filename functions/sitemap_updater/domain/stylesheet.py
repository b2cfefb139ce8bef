"""The human view: an XSL stylesheet that a browser applies to the index and the shards.

With the ``STYLESHEET`` setting on, every index file and shard carries
``<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>`` right after the XML declaration,
and the index function serves ``/sitemap.xsl`` from the bucket. Crawlers ignore the
processing instruction (it is not part of the sitemap schema's content model and changes
nothing a schema validator sees); a person who opens the file in a browser gets a table.

The href is root-relative on purpose: browsers apply XSLT only from the document's own
origin, so the same bytes work on the site, on a staging copy and on ``local --serve``.

Pure: nothing here imports the rest of the domain, so the renderer can import it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

STYLESHEET_KEY = "sitemap.xsl"
STYLESHEET_HREF = f"/{STYLESHEET_KEY}"
# Chromium applies the stylesheet whatever its Content-Type (checked: text/xsl,
# application/xslt+xml, application/xml, text/xml, even text/plain, with and without
# X-Content-Type-Options: nosniff); text/xsl is the type every browser names XSLT by,
# and the one the processing instruction declares.
STYLESHEET_CONTENT_TYPE = "text/xsl; charset=utf-8"
_DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'


def processing_instruction(href: str) -> bytes:
    """``<?xml-stylesheet type="text/xsl" href="..."?>`` and a newline."""
    plain = href.startswith("/") and not href.startswith("//")
    if not plain or any(c in href for c in "\"'<>&?\n\r\t "):
        raise ValueError(f"not a plain root-relative path: {href!r}")
    return f'<?xml-stylesheet type="text/xsl" href="{href}"?>\n'.encode()


def with_stylesheet(document: bytes, href: str | None, max_bytes: int | None = None) -> bytes:
    """``document`` with the stylesheet's processing instruction after its XML declaration.

    ``href=None`` returns the document unchanged. So does a document that the instruction
    would push over ``max_bytes``: the protocol's size limit always wins over the view (only
    a shard placed within a few dozen bytes of its byte limit before the view was turned on
    can be that full).
    """
    if href is None:
        return document
    if not document.startswith(_DECLARATION):
        raise ValueError("the document does not start with the XML declaration")
    viewed = _DECLARATION + processing_instruction(href) + document[len(_DECLARATION) :]
    if max_bytes is not None and len(viewed) > max_bytes:
        return document
    return viewed


@cache
def stylesheet_bytes() -> bytes:
    """The stylesheet shipped inside the package (``sitemap_updater/assets/sitemap.xsl``)."""
    return resources.files("sitemap_updater").joinpath("assets", STYLESHEET_KEY).read_bytes()
