"""Google News rules: ``news:news`` only for articles published in the last two days, and at
most 1,000 of them in one sitemap. The page itself stays listed as an ordinary entry.

Ageing happens by itself: whoever renders a shard says when its rendering will next change
on its own (the earliest moment a kept ``news:news`` expires); a scheduled sweep asks for a
rebuild of every shard whose moment has passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from sitemap_updater.domain.dates import instant
from sitemap_updater.domain.entries import SitemapEntry

NEWS_WINDOW = timedelta(days=2)
MAX_NEWS_PER_SITEMAP = 1000


def current_news(
    entries: Sequence[SitemapEntry], now: datetime, limit: int = MAX_NEWS_PER_SITEMAP
) -> tuple[list[SitemapEntry], datetime | None]:
    """The entries as they render at ``now``, and when that rendering next expires.

    News older than two days is dropped from its entry; of the rest, the ``limit`` most
    recently published keep theirs (ties broken by URL, so the result is deterministic).
    """
    recent = []
    for position, entry in enumerate(entries):
        if entry.news is None:
            continue
        published = instant(entry.news.publication_date)
        if now - published <= NEWS_WINDOW:
            recent.append((published, entry.url, position))
    recent.sort(key=lambda item: (-item[0].timestamp(), item[1]))
    kept = {position: published for published, _, position in recent[:limit]}
    result = [
        entry if entry.news is None or position in kept else replace(entry, news=None)
        for position, entry in enumerate(entries)
    ]
    expiries = (_expiry(published) for published in kept.values())
    expiry = min((moment for moment in expiries if moment is not None), default=None)
    return result, expiry


def _expiry(published: datetime) -> datetime | None:
    """When a news block published at ``published`` turns two days old; None when that is
    past the last moment a datetime holds (a publication date late in year 9999, which the
    contract accepts): such a block never expires, and its shard must still render."""
    try:
        return published + NEWS_WINDOW
    except OverflowError:
        return None
