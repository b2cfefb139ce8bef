"""The feed of recent changes (FEED_ENTRIES): each ingest batch's applied changes merged into
the feed's one registry item (compare-and-set); the index function publishes ``/feed.atom``."""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from datetime import datetime

import msgspec

from sitemap_updater.domain.dates import w3c
from sitemap_updater.domain.errors import ConcurrentChange
from sitemap_updater.domain.feed import FEED_KEY, Feed, FeedEntry, merged
from sitemap_updater.domain.render import render_feed
from sitemap_updater.domain.urls import Site
from sitemap_updater.usecases.ports import FeedRegistry, IndexRequests
from sitemap_updater.usecases.retry import retry
from sitemap_updater.usecases.site_files import SiteFile

ATOM_CONTENT_TYPE = "application/atom+xml; charset=utf-8"
MAX_ATTEMPTS = 8  # the ingest function's few concurrent batches may each want the item


@dataclass
class UpdateFeed:
    registry: FeedRegistry
    index: IndexRequests
    size: int

    def __call__(
        self,
        changes: Mapping[str, FeedEntry | None],
        applied: datetime,
        replayed: Set[str] = frozenset(),
    ) -> None:
        """Merge ``changes`` (URL: its entry, None if unpublished); raises if it cannot, so
        SQS delivers the batch again (its events, duplicates then, are merged again)."""

        def attempt() -> int | None:
            feed = self.registry.feed()
            entries = merged(feed.entries, changes, self.size, replayed)
            if entries == feed.entries:
                return None
            generation = feed.generation + 1
            self.registry.save_feed(Feed(entries, w3c(applied), generation), feed.generation)
            return generation

        generation = retry(attempt, MAX_ATTEMPTS, (ConcurrentChange,))
        if generation is not None:
            self.index.request_index(f"feed@{generation}", files=True)


def feed_file(registry: FeedRegistry, site: Site, size: int) -> SiteFile:
    """``/feed.atom`` as the registry's feed item says now, its newest ``size`` entries (a
    lowered FEED_ENTRIES shows at once, not at the next change)."""
    feed = registry.feed()
    feed = msgspec.structs.replace(feed, entries=feed.entries[:size])
    return SiteFile(FEED_KEY, render_feed(feed, site), ATOM_CONTENT_TYPE)
