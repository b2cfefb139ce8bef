"""Google News rules: ``news:news`` only for articles published in the last two days, and at
most 1,000 of them in one sitemap. The page itself stays listed as an ordinary entry.

An article dated in the future (beyond a few minutes of clock skew) carries no news block
until that date comes: a scheduled post announced early must not stay "news" for two days
past its date, nor be news before it exists.

Ageing happens by itself: whoever renders a shard says when its rendering will next change
on its own (the earliest moment a news block appears or expires); a scheduled sweep asks for
a rebuild of every shard whose moment has passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import msgspec

from sitemap_updater.domain.dates import instant
from sitemap_updater.domain.entries import SitemapEntry

NEWS_WINDOW = timedelta(days=2)
CLOCK_SKEW = timedelta(minutes=5)  # a CMS's clock may run a little ahead of ours
MAX_NEWS_PER_SITEMAP = 1000


def current_news(
    entries: Sequence[SitemapEntry], now: datetime, limit: int = MAX_NEWS_PER_SITEMAP
) -> tuple[list[SitemapEntry], datetime | None]:
    """The entries as they render at ``now``, and when that rendering next changes by itself.

    News older than two days, or dated in the future, is dropped from its entry; of the rest,
    the ``limit`` most recently published keep theirs (ties broken by URL, so the result is
    deterministic).
    """
    recent = []
    changes = []  # when a news block dated in the future appears
    for position, entry in enumerate(entries):
        if entry.news is None:
            continue
        published = instant(entry.news.publication_date)
        if published - CLOCK_SKEW > now:
            changes.append(published - CLOCK_SKEW)
        elif now - published <= NEWS_WINDOW:
            recent.append((published, entry.url, position))
    recent.sort(key=lambda item: (-item[0].timestamp(), item[1]))
    kept = {position: published for published, _, position in recent[:limit]}
    result = [
        entry
        if entry.news is None or position in kept
        else msgspec.structs.replace(entry, news=None)
        for position, entry in enumerate(entries)
    ]
    changes.extend(filter(None, (_expiry(published) for published in kept.values())))
    return result, min(changes, default=None)


def _expiry(published: datetime) -> datetime | None:
    """When a news block published at ``published`` turns two days old; None when that is
    past the last moment a datetime holds (a date late in year 9999): it never expires."""
    try:
        return published + NEWS_WINDOW
    except OverflowError:
        return None
