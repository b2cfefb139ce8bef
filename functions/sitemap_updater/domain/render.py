"""XML rendering of shards (``<urlset>``) and sitemap indexes (``<sitemapindex>``).

Plain string building: every value is validated before it gets here and escaped on the
way out, one ``<url>`` per line, UTF-8, no timestamps of our own, so the same entries
always give the same bytes (a rebuild that changes nothing writes nothing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sitemap_updater.domain.entries import SitemapEntry

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_OPEN = f'{XML_DECLARATION}<urlset xmlns="{SITEMAP_NS}">\n'
URLSET_CLOSE = "</urlset>\n"
INDEX_OPEN = f'{XML_DECLARATION}<sitemapindex xmlns="{SITEMAP_NS}">\n'
INDEX_CLOSE = "</sitemapindex>\n"
URLSET_FRAME_BYTES = len(URLSET_OPEN) + len(URLSET_CLOSE)

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"})


def escape(text: str) -> str:
    """Escape the five XML special characters (for element text and attribute values)."""
    return text.translate(_ESCAPES)


def render_entry(entry: SitemapEntry) -> str:
    """One ``<url>`` element on one line."""
    parts = ["<url><loc>", escape(entry.url), "</loc>"]
    # The other fields' grammars leave nothing to escape; escaped all the same, so no value
    # that got past validation some other way (a registry item) could ever be markup.
    if entry.lastmod is not None:
        parts += ["<lastmod>", escape(entry.lastmod), "</lastmod>"]
    if entry.changefreq is not None:
        parts += ["<changefreq>", escape(entry.changefreq), "</changefreq>"]
    if entry.priority is not None:
        parts += ["<priority>", escape(entry.priority), "</priority>"]
    parts.append("</url>\n")
    return "".join(parts)


def entry_size(entry: SitemapEntry) -> int:
    """Bytes this entry adds to a shard (UTF-8): what placement reserves for it."""
    text = render_entry(entry)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def render_urlset(entries: Iterable[SitemapEntry]) -> bytes:
    """A complete ``<urlset>`` document; the caller orders the entries."""
    body = "".join(render_entry(entry) for entry in entries)
    return f"{URLSET_OPEN}{body}{URLSET_CLOSE}".encode()


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One ``<sitemap>`` element of an index: a shard's absolute URL and when its bytes changed."""

    loc: str
    lastmod: str | None


def render_index(entries: Iterable[IndexEntry]) -> bytes:
    """A complete ``<sitemapindex>`` document."""
    lines = []
    for entry in entries:
        lastmod = f"<lastmod>{escape(entry.lastmod)}</lastmod>" if entry.lastmod else ""
        lines.append(f"<sitemap><loc>{escape(entry.loc)}</loc>{lastmod}</sitemap>\n")
    return f"{INDEX_OPEN}{''.join(lines)}{INDEX_CLOSE}".encode()
