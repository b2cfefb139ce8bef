"""FEED_ENTRIES on the local runtime: ``/feed.atom`` lists the most recently published or
updated pages, changes with each applied change at the cost of one small read, leaves out
unpublished pages, and is listed in the index."""

from __future__ import annotations

from typing import Any

from sitemap_updater.domain.feed import FEED_KEY
from tests.atom import read_atom
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    FaultInjector,
    Recorder,
    index_locs,
    publish,
    site_entries,
    unpublish,
)


def test_the_feed_lists_the_newest_changes_and_the_index_names_it(
    make_pipeline: Any, clock: FakeClock
) -> None:
    pipeline = make_pipeline(FEED_ENTRIES=2)
    recorder = Recorder(pipeline)
    pipeline.send_events([publish("/a", 1, lastmod="2026-11-01", title="A & B")])
    pipeline.drain()
    clock.advance(60)
    pipeline.send_events([publish("/b", 1), publish("/c", 1, lastmod="2026-11-02T08:00:00+01:00")])
    pipeline.drain()
    objects = pipeline.objects()
    assert index_locs(objects["sitemap.xml"]) == [
        f"{SITE}/sitemap-pages-00001.xml.gz",
        f"{SITE}/{FEED_KEY}",
    ]
    feed = read_atom(objects[FEED_KEY])
    # /b has no lastmod: the time its change was applied; /a is the oldest, and left out.
    assert [(e.link, e.updated) for e in feed.entries] == [
        (f"{SITE}/b", "2026-11-21T12:01:00Z"),
        (f"{SITE}/c", "2026-11-02T07:00:00Z"),
    ]
    assert feed.feed.updated == "2026-11-21T12:01:00Z"

    recorder.reset()
    clock.advance(60)
    pipeline.send_events([unpublish("/b", 2), publish("/a", 2, lastmod="2026-11-21", title="A")])
    pipeline.drain()
    feed = read_atom(pipeline.objects()[FEED_KEY])
    assert [(e.link, e.title) for e in feed.entries] == [
        (f"{SITE}/a", "A"),
        (f"{SITE}/c", f"{SITE}/c"),
    ]
    # The feed costs one item read by the ingest and one by the index function: no scan.
    feed_reads = [
        params
        for name, params in recorder.calls
        if name == "GetItem" and params["Key"]["pk"]["S"] == "FEED"
    ]
    assert len(feed_reads) == 2
    assert recorder.count("Scan") == 0
    assert recorder.violations == []


def test_a_change_that_moves_only_the_feed_reads_no_shard_records(
    make_pipeline: Any, clock: FakeClock
) -> None:
    """A new title changes the feed, not the shard: the index function writes the feed and
    leaves the index, without the full publish that reads every shard's record."""
    pipeline = make_pipeline(FEED_ENTRIES=5)
    pipeline.send_events([publish("/a", 1, title="A")])
    pipeline.drain()
    index = pipeline.objects()["sitemap.xml"]
    recorder = Recorder(pipeline)
    clock.advance(60)
    pipeline.send_events([publish("/a", 2, title="A, again")])  # same entry, new title
    pipeline.drain()

    objects = pipeline.objects()
    assert [e.title for e in read_atom(objects[FEED_KEY]).entries] == ["A, again"]
    assert objects["sitemap.xml"] == index
    shard_record_reads = [
        params
        for name, params in recorder.calls
        if name == "Query" and params["ExpressionAttributeValues"][":pk"]["S"] == "SHARDS"
    ]
    assert shard_record_reads == []
    assert recorder.violations == []


def test_a_duplicate_changes_nothing_in_the_feed(make_pipeline: Any, clock: FakeClock) -> None:
    pipeline = make_pipeline(FEED_ENTRIES=5)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    before = pipeline.objects()[FEED_KEY]
    clock.advance(3600)
    pipeline.send_events([publish("/a", 1)])  # the same version: a duplicate
    pipeline.drain()
    assert pipeline.objects()[FEED_KEY] == before


def two_pages_named_by_id(make_pipeline: Any, clock: FakeClock) -> Any:
    """/old-slug (id 42) and /other (id 7) in the feed, a minute ago."""
    pipeline = make_pipeline(FEED_ENTRIES=5)
    pipeline.send_events([publish("/old-slug", 1, id="42"), publish("/other", 1, id="7")])
    pipeline.drain()
    clock.advance(60)
    return pipeline


def test_pages_named_by_their_cms_id_leave_the_feed_when_they_move_or_go(
    make_pipeline: Any, clock: FakeClock
) -> None:
    pipeline = two_pages_named_by_id(make_pipeline, clock)
    pipeline.send_events([publish("/new-slug", 2, id="42")])  # a slug change
    pipeline.drain()
    feed = read_atom(pipeline.objects()[FEED_KEY])
    assert [e.link for e in feed.entries] == [f"{SITE}/new-slug", f"{SITE}/other"]

    clock.advance(60)
    pipeline.send_events([{"type": "unpublish", "id": "42", "version": 3}])  # no URL
    pipeline.drain()
    feed = read_atom(pipeline.objects()[FEED_KEY])
    assert [e.link for e in feed.entries] == [f"{SITE}/other"]


def test_a_move_whose_answer_was_lost_still_takes_the_old_url_out_of_the_feed(
    make_pipeline: Any, clock: FakeClock
) -> None:
    """Delivered again, the move is a duplicate: the registry still knows the URL it left."""
    pipeline = two_pages_named_by_id(make_pipeline, clock)
    faults = FaultInjector(pipeline)
    faults.fail("TransactWriteItems", occurrence=1, after=True)
    pipeline.send_events([publish("/new-slug", 2, id="42")])
    pipeline.drain()

    assert faults.fired
    feed = read_atom(pipeline.objects()[FEED_KEY])
    assert [e.link for e in feed.entries] == [f"{SITE}/new-slug", f"{SITE}/other"]


def test_the_feed_hears_a_batch_in_the_order_its_changes_commit(
    make_pipeline: Any, clock: FakeClock
) -> None:
    """One batch: entity 42 moves away from /old-slug, then /old-slug is published on its own
    at an older version. The plain publishes commit together first, the move after them, and
    it unpublishes /old-slug: the feed must not list it."""
    pipeline = two_pages_named_by_id(make_pipeline, clock)
    pipeline.send_events(
        [publish("/new-slug", 3, id="42"), publish("/old-slug", 2), publish("/x", 1)]
    )
    pipeline.drain()

    assert f"{SITE}/old-slug" not in site_entries(pipeline.objects())
    feed = read_atom(pipeline.objects()[FEED_KEY])
    assert {e.link for e in feed.entries} == {f"{SITE}/new-slug", f"{SITE}/x", f"{SITE}/other"}


def test_a_batched_commit_whose_answer_was_lost_still_reaches_the_feed(
    make_pipeline: Any,
) -> None:
    """The batch's transaction lands, its answer is lost: applied again one by one, its
    events are duplicates of themselves, and must still be merged (and sent to IndexNow)."""
    pipeline = make_pipeline(FEED_ENTRIES=10)
    faults = FaultInjector(pipeline)
    faults.fail("TransactWriteItems", occurrence=1, after=True)
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()

    assert faults.fired
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/a", f"{SITE}/b"}
    listed = {entry.link for entry in read_atom(pipeline.objects()[FEED_KEY]).entries}
    assert listed == {f"{SITE}/a", f"{SITE}/b"}


def test_a_publish_whose_batch_failed_after_its_commit_still_shows_in_the_feed(
    make_pipeline: Any,
) -> None:
    """Its redelivery is a duplicate: it must still replace what an older version listed."""
    pipeline = make_pipeline(FEED_ENTRIES=10)
    pipeline.send_events([publish("/a", 1, title="Old title", lastmod="2026-11-01")])
    pipeline.send_events([publish("/b", 1, title="B")])  # no lastmod: its place is its time
    pipeline.drain()
    faults = FaultInjector(pipeline)
    faults.fail("SendMessageBatch")  # the rebuild request: the batch is delivered again
    pipeline.send_events([publish("/a", 2, title="New title", lastmod="2026-11-20")])
    pipeline.drain()
    faults.fail("SendMessageBatch")
    pipeline.send_events([publish("/b", 2, title="B, again")])
    pipeline.drain()

    assert len(faults.fired) == 2
    entries = {
        e.link: (e.title, e.updated) for e in read_atom(pipeline.objects()[FEED_KEY]).entries
    }
    assert entries[f"{SITE}/a"] == ("New title", "2026-11-20T00:00:00Z")
    assert entries[f"{SITE}/b"][0] == "B, again"
