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


def prologue(size: int, href: str | None, max_bytes: int | None) -> bytes:
    """The XML declaration, then the stylesheet's processing instruction unless ``href`` is
    None or the instruction would push a document of ``size`` bytes over ``max_bytes`` (the
    protocol's limit wins over the view). ``href``: a plain root-relative path (ValueError)."""
    if href is None:
        return _DECLARATION
    plain = href.startswith("/") and not href.startswith("//")
    if not plain or any(c in href for c in "\"'<>&?\n\r\t "):
        raise ValueError(f"not a plain root-relative path: {href!r}")
    instruction = f'<?xml-stylesheet type="text/xsl" href="{href}"?>\n'.encode()
    if max_bytes is not None and size + len(instruction) > max_bytes:
        return _DECLARATION
    return _DECLARATION + instruction


@cache
def stylesheet_bytes() -> bytes:
    """The stylesheet shipped inside the package (``sitemap_updater/assets/sitemap.xsl``)."""
    return resources.files("sitemap_updater").joinpath("assets", STYLESHEET_KEY).read_bytes()
