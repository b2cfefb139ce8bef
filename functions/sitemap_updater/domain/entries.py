"""A sitemap entry: what one <url> element says about a page."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One page as listed in a shard. Every field is already validated and normalised."""

    url: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: str | None = None
