"""The feed of recent changes: which pages it lists, in which order, and its Atom."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_updater.domain.contract import PageChange, fitted_text, text
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.feed import MAX_TITLE, Feed, FeedEntry, Gathered, feed_entry, merged
from sitemap_updater.domain.render import render_feed
from sitemap_updater.domain.urls import Site
from sitemap_updater.usecases.feed import ATOM_CONTENT_TYPE, feed_file
from sitemap_updater.usecases.ports import StoredObject
from sitemap_updater.usecases.site_files import PublishSiteFiles, SiteFile
from tests.atom import read_atom

SITE = "https://www.example.com"
APPLIED = datetime(2026, 11, 21, 12, 0, 5, tzinfo=UTC)


def entry(path: str, updated: str, title: str | None = None) -> FeedEntry:
    return FeedEntry(f"{SITE}{path}", updated, title)


def test_an_entry_is_updated_at_its_lastmod_or_else_when_its_change_was_applied() -> None:
    url = f"{SITE}/a"
    dated = PageChange(url, 1, SitemapEntry(url, lastmod="2026-11-20"), title="A")
    timed = PageChange(url, 1, SitemapEntry(url, lastmod="2026-11-20T09:30:00Z"))
    assert feed_entry(dated, APPLIED) == FeedEntry(url, "2026-11-20T00:00:00Z", "A")
    assert feed_entry(timed, APPLIED) == FeedEntry(url, "2026-11-20T09:30:00Z")
    assert feed_entry(PageChange(url, 1, SitemapEntry(url)), APPLIED) == FeedEntry(
        url, "2026-11-21T12:00:05Z"
    )
    assert feed_entry(PageChange(url, 2, None), APPLIED) is None  # unpublished: it leaves


def test_the_feed_keeps_the_newest_pages_each_once_and_unpublished_pages_leave() -> None:
    feed = (entry("/c", "2026-11-03T00:00:00Z"), entry("/b", "2026-11-02T00:00:00Z"))
    changes = {
        f"{SITE}/a": entry("/a", "2026-11-04T00:00:00Z"),
        f"{SITE}/b": entry("/b", "2026-11-05T00:00:00Z", "B"),  # updated again: moves up
        f"{SITE}/old": entry("/old", "2020-01-01T00:00:00Z"),  # older than all: not kept
        f"{SITE}/c": None,
    }
    assert merged(feed, changes, 3) == (
        entry("/b", "2026-11-05T00:00:00Z", "B"),
        entry("/a", "2026-11-04T00:00:00Z"),
        entry("/old", "2020-01-01T00:00:00Z"),
    )
    assert merged(feed, changes, 2)[-1] == entry("/a", "2026-11-04T00:00:00Z")


def test_a_duplicate_delivered_again_keeps_its_entry_or_adds_the_missing_one() -> None:
    feed = (entry("/a", "2026-11-03T00:00:00Z"),)
    again = {
        f"{SITE}/a": entry("/a", "2026-11-24T06:00:00Z"),  # no lastmod: the redelivery's time
        f"{SITE}/b": entry("/b", "2026-11-24T06:00:00Z"),  # its first delivery died first
    }
    replayed = {f"{SITE}/a", f"{SITE}/b"}
    assert merged(feed, again, 5, replayed) == (
        entry("/b", "2026-11-24T06:00:00Z"),
        entry("/a", "2026-11-03T00:00:00Z"),
    )
    assert merged(feed, {f"{SITE}/a": None}, 5, {f"{SITE}/a"}) == ()  # an unpublish: it goes


def test_the_feed_is_atom_that_a_feed_reader_reads_back() -> None:
    entries = (
        entry("/b?x=1&y=2", "2026-11-05T10:00:00Z", "Fish & <chips>"),
        entry("/caf%C3%A9", "2026-11-04T00:00:00Z"),
    )
    body = render_feed(Feed(entries, "2026-11-05T10:00:01Z"), Site.parse(SITE))
    parsed = read_atom(body)
    assert parsed.feed.id == f"{SITE}/feed.atom"
    assert parsed.feed.updated == "2026-11-05T10:00:01Z"
    assert [(e.link, e.title, e.updated) for e in parsed.entries] == [
        (f"{SITE}/b?x=1&y=2", "Fish & <chips>", "2026-11-05T10:00:00Z"),
        (f"{SITE}/caf%C3%A9", f"{SITE}/caf%C3%A9", "2026-11-04T00:00:00Z"),  # no title: the URL
    ]
    empty = render_feed(Feed(), Site.parse(SITE))
    assert read_atom(empty).entries == []


@given(st.text(max_size=400))
def test_any_text_fitted_as_a_title_passes_the_contract_s_check(value: str) -> None:
    fitted = fitted_text(value, MAX_TITLE)
    if fitted is None:
        with pytest.raises(ValueError, match=r"empty|forbids|bidirectional|C1"):
            text(value, MAX_TITLE)
    else:
        assert text(fitted, MAX_TITLE) == fitted
        assert len(fitted) <= MAX_TITLE


def test_a_backfill_s_changes_keep_the_newest_pages_and_every_unpublished_one() -> None:
    gathered = Gathered(2)
    for day in range(1, 29):
        gathered.add(f"{SITE}/{day}", entry(f"/{day}", f"2026-11-{day:02d}T00:00:00Z"))
    gathered.add(f"{SITE}/28", None)  # unpublished after it was published
    gathered.add(f"{SITE}/gone", None)
    changes = gathered.changes
    assert (changes[f"{SITE}/28"], changes[f"{SITE}/gone"]) == (None, None)
    assert len(changes) <= 2 + 8 * 2 + 1  # memory stays flat, however many pages
    assert merged((), gathered.changes, 2) == (
        entry("/27", "2026-11-27T00:00:00Z"),
        entry("/26", "2026-11-26T00:00:00Z"),
    )


def test_a_page_dated_before_the_year_1000_is_written_and_ordered_as_the_time_it_is() -> None:
    """Zero dates are common (Go's 0001-01-01, .NET's MinValue): four digits, and older."""
    zero = PageChange(f"{SITE}/zero", 1, SitemapEntry(f"{SITE}/zero", lastmod="0001-01-01"))
    assert feed_entry(zero, APPLIED) == FeedEntry(f"{SITE}/zero", "0001-01-01T00:00:00Z")
    old = PageChange(f"{SITE}/old", 1, SitemapEntry(f"{SITE}/old", lastmod="0999-12-31"))
    mid = PageChange(f"{SITE}/mid", 1, SitemapEntry(f"{SITE}/mid", lastmod="1999-01-01"))
    changes = {c.url: feed_entry(c, APPLIED) for c in (old, mid, zero)}
    assert [e.url for e in merged((), changes, 2)] == [f"{SITE}/mid", f"{SITE}/old"]


def test_the_feed_file_lists_at_most_the_size_set_now() -> None:
    """A lowered FEED_ENTRIES shows in the next published file, not at the next change."""

    class Stored:
        def feed(self) -> Feed:
            return Feed(tuple(entry(f"/{n}", f"2026-11-{20 - n:02d}T00:00:00Z") for n in range(10)))

    file = feed_file(Stored(), Site.parse(SITE), 3)  # type: ignore[arg-type]
    assert [e.link for e in read_atom(file.body).entries] == [f"{SITE}/0", f"{SITE}/1", f"{SITE}/2"]


def test_the_feed_file_is_written_again_when_it_returns_to_earlier_bytes() -> None:
    """A, then A and B, then A again (B unpublished within the same second): the warm index
    function must not take A for written because it once wrote it."""

    class Bucket:
        def __init__(self) -> None:
            self.objects: dict[str, StoredObject] = {}

        def head(self, key: str) -> StoredObject | None:
            return self.objects.get(key)

        def put(self, key: str, body: bytes, **options: Any) -> str:
            self.objects[key] = StoredObject("etag", options["metadata"], body)
            return "etag"

    bodies = iter([b"A", b"A+B", b"A"])
    bucket = Bucket()
    publish = PublishSiteFiles(
        (),
        bucket,
        "max-age=60",
        lambda: SiteFile("feed.atom", next(bodies), ATOM_CONTENT_TYPE),  # type: ignore[arg-type]
    )
    assert [publish(), publish(), publish()] == [["feed.atom"]] * 3
    assert bucket.objects["feed.atom"].body == b"A"
