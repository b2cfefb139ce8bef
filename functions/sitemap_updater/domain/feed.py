"""The Atom feed of recent changes (FEED_ENTRIES): the most recently published or updated
pages, newest first, each once. An entry's ``updated`` is the page's lastmod, else the time
its change was applied; never the time of a rendering. An unpublished page leaves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from msgspec import Struct

from sitemap_updater.domain.contract import PageChange

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


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def feed_entry(change: PageChange, applied: datetime) -> FeedEntry | None:
    """A change as the feed lists it; None for an unpublish (the page leaves the feed)."""
    if change.entry is None:
        return None
    lastmod = change.entry.lastmod  # normalised: a date, or a UTC datetime to the second
    if lastmod is None:
        updated = rfc3339(applied)
    else:
        updated = lastmod if "T" in lastmod else f"{lastmod}T00:00:00Z"
    return FeedEntry(change.url, updated, change.title)


def merged(
    entries: Sequence[FeedEntry], changes: Mapping[str, FeedEntry | None], size: int
) -> tuple[FeedEntry, ...]:
    """The ``size`` newest of ``entries`` with ``changes`` (URL -> its entry, or None: gone)."""
    kept = {entry.url: entry for entry in entries if entry.url not in changes}
    kept.update((url, entry) for url, entry in changes.items() if entry is not None)
    newest = sorted(kept.values(), key=lambda entry: (entry.updated, entry.url), reverse=True)
    return tuple(newest[:size])
