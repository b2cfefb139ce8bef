"""Invariants 3, 4 and 5: only the affected shard is touched, a URL keeps its shard for life,
and no object ever exceeds the protocol limits."""

from __future__ import annotations

from collections import Counter

from sitemap_updater.bootstrap import build_app
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.sharding import Limits
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    PipelineFactory,
    Recorder,
    document,
    parse,
    publish,
    shard_of,
    shard_urls,
    site_entries,
    unpublish,
)
from tests.pipeline import Pipeline
from tests.rendering import entry_size


def _site(pipeline_count: int) -> list[dict[str, object]]:
    return [publish(f"/p{n:03d}", 1) for n in range(pipeline_count)]


def test_a_change_to_one_url_writes_only_its_shard_and_the_index(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2)
    recorder = Recorder(pipeline)
    pipeline.send_events(_site(6))  # three shards
    pipeline.drain()
    assert shard_of(pipeline.objects(), f"{SITE}/p003") == "sitemap-pages-00002.xml.gz"
    recorder.reset()
    clock.advance(60)  # the shard's bytes change later, so its lastmod in the index moves

    pipeline.send_events([publish("/p003", 2, lastmod="2026-11-21")])
    pipeline.drain()

    assert sorted(recorder.puts) == ["sitemap-pages-00002.xml.gz", "sitemap.xml"]
    assert recorder.count("DeleteObject") == 0
    assert recorder.violations == []


def test_the_work_for_one_event_does_not_grow_with_the_site(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    """The same update costs the same AWS requests on a site of 2 shards and of 8."""
    counts = []
    for size in (4, 16):
        pipeline = make_pipeline(MAX_URLS_PER_SHARD=2)
        recorder = Recorder(pipeline)
        pipeline.send_events(_site(size))
        pipeline.drain()
        recorder.reset()
        clock.advance(60)
        pipeline.send_events([publish("/p001", 2, priority=0.4)])
        pipeline.drain()
        counts.append(Counter(name for name, _ in recorder.calls))
    assert counts[0] == counts[1]
    assert counts[0]["PutObject"] == 2  # the shard and the index; robots.txt is unchanged


def test_a_url_keeps_its_shard_through_update_unpublish_and_republish(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2)
    pipeline.send_events([publish("/a", 1), publish("/b", 1), publish("/c", 1)])
    pipeline.drain()
    home = shard_of(pipeline.objects(), f"{SITE}/a")
    assert home == "sitemap-pages-00001.xml.gz"
    # Many new URLs arrive; /a is updated, unpublished and republished among them.
    pipeline.send_events([publish("/a", 2, changefreq="daily"), *_site(5)])
    pipeline.drain()
    assert shard_of(pipeline.objects(), f"{SITE}/a") == home
    pipeline.send_events([unpublish("/a", 3)])
    pipeline.drain()
    assert shard_of(pipeline.objects(), f"{SITE}/a") is None
    pipeline.send_events([publish("/a", 4)])
    pipeline.drain()
    assert shard_of(pipeline.objects(), f"{SITE}/a") == home


def test_new_urls_fill_the_open_shard_and_a_full_shard_closes(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=3)
    for path in ("/1", "/2", "/3", "/4", "/5", "/6", "/7"):  # one at a time: arrival order
        pipeline.send_events([publish(path, 1)])
        pipeline.drain()
    objects = pipeline.objects()
    shards = {key: shard_urls(body) for key, body in objects.items() if key.endswith(".xml.gz")}
    assert shards == {
        "sitemap-pages-00001.xml.gz": [f"{SITE}/1", f"{SITE}/2", f"{SITE}/3"],
        "sitemap-pages-00002.xml.gz": [f"{SITE}/4", f"{SITE}/5", f"{SITE}/6"],
        "sitemap-pages-00003.xml.gz": [f"{SITE}/7"],
    }
    # An unpublished URL keeps its slot: the shard does not take a new URL in its place.
    pipeline.send_events([unpublish("/2", 2), publish("/8", 1)])
    pipeline.drain()
    objects = pipeline.objects()
    assert shard_urls(objects["sitemap-pages-00001.xml.gz"]) == [f"{SITE}/1", f"{SITE}/3"]
    assert shard_urls(objects["sitemap-pages-00003.xml.gz"]) == [f"{SITE}/7", f"{SITE}/8"]


def test_an_entry_that_outgrows_its_shard_by_bytes_moves_to_the_open_shard(
    make_pipeline: PipelineFactory,
) -> None:
    max_bytes = 4096
    room = Limits(max_shard_bytes=max_bytes).max_entry_bytes
    bare = entry_size(SitemapEntry(url=f"{SITE}/"))  # an entry whose path is empty
    path_length = room // 3 - bare - 5  # three bare entries fit, with 15 bytes to spare
    paths = [f"/{letter * path_length}" for letter in "abc"]
    pipeline = make_pipeline(MAX_SHARD_BYTES=max_bytes)
    recorder = Recorder(pipeline)
    pipeline.send_events([publish(path, 1) for path in paths])
    pipeline.drain()
    assert len(shard_urls(pipeline.objects()["sitemap-pages-00001.xml.gz"])) == 3

    # /b gains a lastmod, changefreq and priority: more bytes than its shard has left.
    grown = publish(paths[1], 2, lastmod="2026-11-21T10:00:00Z", changefreq="weekly", priority=0.7)
    pipeline.send_events([grown])
    pipeline.drain()

    objects = pipeline.objects()
    assert shard_urls(objects["sitemap-pages-00001.xml.gz"]) == [SITE + paths[0], SITE + paths[2]]
    assert shard_urls(objects["sitemap-pages-00002.xml.gz"]) == [SITE + paths[1]]
    entries = site_entries(objects)  # asserts each URL is listed once
    assert entries[SITE + paths[1]]["changefreq"] == "weekly"
    for key, body in objects.items():
        assert len(document(body)) <= max_bytes, key
    assert recorder.violations == []

    # It stays in its new shard from now on.
    pipeline.send_events([publish(paths[1], 3)])
    pipeline.drain()
    assert shard_of(pipeline.objects(), SITE + paths[1]) == "sitemap-pages-00002.xml.gz"


def test_no_shard_ever_exceeds_the_configured_limits(make_pipeline: PipelineFactory) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=4, MAX_SHARD_BYTES=4096)
    long_paths = [publish(f"/{n}-{'x' * 300}", 1, lastmod="2026-11-01") for n in range(20)]
    pipeline.send_events(long_paths)
    pipeline.drain()
    objects = pipeline.objects()
    shards = [key for key in objects if key.endswith(".xml.gz")]
    assert len(shards) >= 5
    for key in shards:
        assert len(shard_urls(objects[key])) <= 4
        assert len(document(objects[key])) <= 4096
    assert len(site_entries(objects)) == 20


def test_past_the_index_limit_more_index_files_each_listed_in_robots_txt(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=2)
    recorder = Recorder(pipeline)
    pipeline.send_events(_site(5))  # five shards: three index files
    pipeline.drain()
    objects = pipeline.objects()
    indexes = ["sitemap.xml", "sitemap-index-2.xml", "sitemap-index-3.xml"]
    assert [key for key in indexes if key in objects] == indexes
    named = [
        loc.text
        for key in indexes
        for loc in parse(objects[key]).iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")
    ]
    assert named == [f"{SITE}/sitemap-pages-{n:05d}.xml.gz" for n in range(1, 6)]
    robots = objects["robots.txt"].decode()
    assert [line for line in robots.splitlines() if line.startswith("Sitemap:")] == [
        f"Sitemap: {SITE}/{key}" for key in indexes
    ]

    # Unpublish three pages: their shards retire, two index files are no longer needed.
    pipeline.send_events([unpublish(f"/p{n:03d}", 2) for n in (0, 2, 4)])
    pipeline.drain()
    objects = pipeline.objects()
    assert sorted(objects) == [
        "robots.txt",
        "sitemap-pages-00002.xml.gz",
        "sitemap-pages-00004.xml.gz",
        "sitemap.xml",
    ]
    assert objects["robots.txt"].decode().count("Sitemap:") == 1
    assert recorder.violations == []  # nothing was deleted while an index named it


def test_a_shard_placed_under_a_larger_limit_than_today_s_is_still_rebuilt(
    make_pipeline: PipelineFactory,
) -> None:
    """MAX_URLS_PER_SHARD lowered on a live site: a shard already fuller than the new limit
    takes its changes (written within the protocol's limits), and new URLs go elsewhere."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=4)
    pipeline.send_events([publish(f"/p{n}", 1) for n in range(4)])
    pipeline.drain()
    settings = type(pipeline.app.settings).model_validate(
        {**pipeline.app.settings.model_dump(), "max_urls_per_shard": 2}
    )
    assert settings.limits.max_urls_per_shard == 2
    pipeline = Pipeline(pipeline.stack, build_app(settings, clock=pipeline.app.clock))
    pipeline.send_events([publish("/p1", 2, lastmod="2026-11-20"), publish("/new", 1)])
    pipeline.drain()

    assert pipeline.dead_letters() == []
    entries = site_entries(pipeline.objects())
    assert entries[f"{SITE}/p1"]["lastmod"] == "2026-11-20"
    assert len(entries) == 5
    # /p1 grew and moved out; the three left are over today's limit, rebuilt all the same.
    assert [shard_of(pipeline.objects(), f"{SITE}/p{n}") for n in (0, 2, 3)] == [
        "sitemap-pages-00001.xml.gz"
    ] * 3
    assert shard_of(pipeline.objects(), f"{SITE}/new") != "sitemap-pages-00001.xml.gz"
