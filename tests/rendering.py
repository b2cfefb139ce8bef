"""Whole documents and sizes from entries, for tests: production renders each entry once
(``render_entry``) and frames the lines (``shard_document``, ``urlset_of``)."""

from __future__ import annotations

from collections.abc import Iterable

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.render import render_entry, rendered_size, urlset_of
from sitemap_updater.domain.sharding import Limits, shard_document


def entry_size(entry: SitemapEntry) -> int:
    """Bytes this entry adds to a shard (UTF-8): what placement reserves for it."""
    return rendered_size(render_entry(entry))


def render_urlset(entries: Iterable[SitemapEntry], *, stylesheet: str | None = None) -> bytes:
    """A complete ``<urlset>`` document, unchecked against any limit."""
    return urlset_of([render_entry(entry) for entry in entries], stylesheet=stylesheet)


def render_shard(
    entries: Iterable[SitemapEntry], limits: Limits, *, stylesheet: str | None = None
) -> bytes:
    """A shard's document, checked against ``limits`` (LimitExceeded)."""
    return shard_document([render_entry(entry) for entry in entries], limits, stylesheet=stylesheet)
