"""Invariants 6 and 7: every object is valid and whole when written, and lastmod means
something (the CMS's value per URL; the time the bytes changed per shard)."""

from __future__ import annotations

import gzip

from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    NS,
    PipelineFactory,
    Recorder,
    assert_valid,
    parse,
    publish,
    site_entries,
    unpublish,
)
from tests.pipeline import Pipeline


def index_lastmods(pipeline: Pipeline) -> dict[str, str]:
    index = parse(pipeline.objects()["sitemap.xml"])
    return {
        node.findtext("sm:loc", namespaces=NS): node.findtext("sm:lastmod", namespaces=NS)
        for node in index.findall("sm:sitemap", NS)
    }


def test_every_object_is_valid_and_served_with_the_right_headers(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    pipeline.send_events(
        [
            publish("/a?x=1&y=<2>", 1),  # '<' is rejected; '&' is escaped
            publish("/b?x=1&y=2", 1, lastmod="2026-11-20T10:30:00+01:00", priority=1),
            publish("/caf\u00e9/\u00fcber", 1, changefreq="never"),
        ]
    )
    pipeline.drain()
    objects = pipeline.objects()
    for key, body in objects.items():
        if key != "robots.txt":
            assert_valid(key, body)
    shard = gzip.decompress(objects["sitemap-pages-00001.xml.gz"])
    assert shard.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    assert b"/b?x=1&amp;y=2</loc>" in shard
    assert b"/caf%C3%A9/%C3%BCber</loc>" in shard
    assert b"y=<2>" not in shard
    s3 = pipeline.s3
    bucket = pipeline.app.settings.bucket_name
    heads = {key: s3.head_object(Bucket=bucket, Key=key) for key in objects}
    assert heads["sitemap-pages-00001.xml.gz"]["ContentType"] == "application/gzip"
    assert heads["sitemap.xml"]["ContentType"] == "application/xml; charset=utf-8"
    assert heads["robots.txt"]["ContentType"] == "text/plain; charset=utf-8"
    assert {head["CacheControl"] for head in heads.values()} == {"public, max-age=60"}
    assert recorder.violations == []  # checked at every single write, not only at the end


def test_uncompressed_shards_when_compression_is_off(make_pipeline: PipelineFactory) -> None:
    pipeline = make_pipeline(COMPRESS_SHARDS="false")
    pipeline.send_events([publish("/plain", 1)])
    pipeline.drain()
    objects = pipeline.objects()
    assert objects["sitemap-pages-00001.xml"].startswith(b"<?xml")
    assert f"{SITE}/sitemap-pages-00001.xml" in index_lastmods(pipeline)


def test_a_url_lastmod_is_the_cms_value_never_the_rebuild_time(
    pipeline: Pipeline, clock: FakeClock
) -> None:
    clock.advance(86_400 * 300)  # rebuilds happen long after the pages changed
    pipeline.send_events(
        [publish("/dated", 1, lastmod="2026-01-02T03:04:05+02:00"), publish("/undated", 1)]
    )
    pipeline.drain()
    entries = site_entries(pipeline.objects())
    assert entries[f"{SITE}/dated"]["lastmod"] == "2026-01-02T01:04:05Z"
    assert entries[f"{SITE}/undated"]["lastmod"] is None


def test_a_shard_lastmod_moves_only_when_its_bytes_change(
    pipeline: Pipeline, recorder: Recorder, clock: FakeClock
) -> None:
    pipeline.send_events([publish("/p", 1, lastmod="2026-11-01")])
    pipeline.drain()
    shard_url = f"{SITE}/sitemap-pages-00001.xml.gz"
    first = index_lastmods(pipeline)[shard_url]
    assert first == "2026-11-21T12:00:00Z"  # the clock when its bytes were written

    clock.advance(3600)
    recorder.reset()
    # A newer version with identical fields, a duplicate and a stale event: same bytes.
    pipeline.send_events(
        [
            publish("/p", 2, lastmod="2026-11-01"),
            publish("/p", 2, lastmod="2026-11-01"),
            publish("/p", 1, lastmod="1999-01-01"),
        ]
    )
    pipeline.drain()
    assert recorder.puts == []
    assert index_lastmods(pipeline)[shard_url] == first

    clock.advance(3600)
    pipeline.send_events([publish("/p", 3, lastmod="2026-11-02")])
    pipeline.drain()
    assert index_lastmods(pipeline)[shard_url] == "2026-11-21T14:00:00Z"


def test_republishing_the_same_bytes_keeps_the_shard_lastmod(
    pipeline: Pipeline, clock: FakeClock
) -> None:
    pipeline.send_events([publish("/only", 1)])
    pipeline.drain()
    shard_url = f"{SITE}/sitemap-pages-00001.xml.gz"
    first = index_lastmods(pipeline)[shard_url]
    clock.advance(60)
    # The shard empties (it retires and is deleted), then the page returns unchanged.
    pipeline.send_events([unpublish("/only", 2)])
    pipeline.drain()
    assert "sitemap.xml" not in pipeline.objects()
    clock.advance(60)
    pipeline.send_events([publish("/only", 3)])
    pipeline.drain()
    # Deleted and written again: its bytes changed (they did not exist), so lastmod moves.
    assert index_lastmods(pipeline)[shard_url] == "2026-11-21T12:02:00Z"
    assert index_lastmods(pipeline)[shard_url] != first
