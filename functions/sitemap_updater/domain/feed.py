"""The Atom feed of recent changes (FEED_ENTRIES): the most recently published or updated
pages, newest first, each once. An entry's ``updated`` is the page's lastmod, else the time
its change was applied; never the time of a rendering. An unpublished page leaves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from datetime import datetime

import msgspec
from msgspec import Struct

from sitemap_updater.domain.contract import PageChange
from sitemap_updater.domain.dates import instant, w3c

FEED_KEY = "feed.atom"
MAX_FEED_ENTRIES = 100  # the feed's one registry item stays far below DynamoDB's 400 KB
MAX_TITLE = 256


class FeedEntry(Struct, frozen=True, gc=False):
    url: str
    updated: str  # RFC 3339, UTC: 2026-11-20T09:30:00Z
    title: str | None = None


class Feed(Struct, frozen=True, gc=False):
    """The feed's entries, newest first; ``changed``: when a change last altered them."""

    entries: tuple[FeedEntry, ...] = ()
    changed: str = "1970-01-01T00:00:00Z"
    generation: int = 0


def feed_entry(change: PageChange, applied: datetime) -> FeedEntry | None:
    """A change as the feed lists it; None for an unpublish (the page leaves the feed)."""
    if change.entry is None:
        return None
    lastmod = change.entry.lastmod  # normalised: a date, or a UTC datetime to the second
    updated = w3c(applied if lastmod is None else instant(lastmod))
    return FeedEntry(change.url, updated, change.title)


def merged(
    entries: Sequence[FeedEntry],
    changes: Mapping[str, FeedEntry | None],
    size: int,
    replayed: Set[str] = frozenset(),
) -> tuple[FeedEntry, ...]:
    """The ``size`` newest of ``entries`` with ``changes`` (URL -> its entry, or None: gone).
    A ``replayed`` page (a duplicate publish delivered again, its time the time of this
    delivery) keeps its place and takes its title: the entry listed may be an older
    version's, if the first delivery died before the feed was written."""
    kept = {entry.url: entry for entry in entries}
    for url, entry in changes.items():
        if entry is None:
            kept.pop(url, None)
        elif url in replayed and url in kept:
            kept[url] = msgspec.structs.replace(kept[url], title=entry.title)
        else:
            kept[url] = entry
    newest = sorted(kept.values(), key=lambda entry: (entry.updated, entry.url), reverse=True)
    return tuple(newest[:size])


class Gathered:
    """The feed's changes of a backfill, to merge at once: every unpublished page and only the
    ``size`` newest published ones, so that memory stays flat."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.gone: set[str] = set()
        self.published: dict[str, FeedEntry] = {}

    def add(self, url: str, entry: FeedEntry | None) -> None:
        if entry is None:
            self.gone.add(url)
            self.published.pop(url, None)
            return
        self.gone.discard(url)
        self.published[url] = entry
        if len(self.published) > 8 * self.size:
            newest = merged((), self.published, self.size)
            self.published = {e.url: e for e in newest}

    @property
    def changes(self) -> dict[str, FeedEntry | None]:
        return {**dict.fromkeys(sorted(self.gone)), **self.published}
