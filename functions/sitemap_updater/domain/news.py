"""Google News rules: ``news:news`` only for articles published in the last two days (none
for one dated in the future, beyond clock skew, until that date), at most 1,000 in one
sitemap; the page itself stays listed. A rendering says when it next changes by itself, and
a scheduled sweep rebuilds every shard whose moment has passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from datetime import datetime, timedelta

import msgspec

from sitemap_updater.domain.dates import instant
from sitemap_updater.domain.entries import SitemapEntry

NEWS_WINDOW = timedelta(days=2)
CLOCK_SKEW = timedelta(minutes=5)  # a CMS's clock may run a little ahead of ours
MAX_NEWS_PER_SITEMAP = 1000


def current_news(
    entries: Sequence[SitemapEntry], now: datetime
) -> tuple[list[SitemapEntry], datetime | None]:
    """The entries as they render at ``now`` (of the current news, the 1,000 most recently
    published keep it; ties by URL), and when that rendering next changes by itself."""
    recent = []
    changes = []  # when a news block dated in the future appears
    for position, entry in enumerate(entries):
        if entry.news is None:
            continue
        published = instant(entry.news.publication_date)
        if published > now + CLOCK_SKEW:  # not published - CLOCK_SKEW: 0001-01-01 has no before
            changes.append(published - CLOCK_SKEW)
        elif now - published <= NEWS_WINDOW:
            recent.append((published, entry.url, position))
    recent.sort(key=lambda item: (-item[0].timestamp(), item[1]))
    kept = {position: published for published, _, position in recent[:MAX_NEWS_PER_SITEMAP]}
    result = [
        entry
        if entry.news is None or position in kept
        else msgspec.structs.replace(entry, news=None)
        for position, entry in enumerate(entries)
    ]
    for published in kept.values():  # when each news block turns two days old
        with suppress(OverflowError):  # past year 9999: it never expires
            changes.append(published + NEWS_WINDOW)
    return result, min(changes, default=None)
