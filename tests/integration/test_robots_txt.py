"""Invariant 8: robots.txt is the owner's. Only our own Sitemap line(s) change."""

from __future__ import annotations

from typing import Any

from sitemap_updater.domain.robots import MAX_ROBOTS_BYTES
from tests.conftest import SITE
from tests.integration.conftest import Recorder, publish
from tests.pipeline import Pipeline

OWNER = (
    b"# robots.txt for www.example.com\r\n"
    b"User-agent: *\r\n"
    b"Disallow: /admin/\r\n"
    b"Host: www.example.com\r\n"
    b"Sitemap: https://www.example.com/news-sitemap.xml\r\n"
    b"Sitemap: http://www.example.com/sitemap.xml\r\n"  # ours, but the wrong scheme
    b"\r\n"
    b"User-agent: BadBot\r\n"
    b"Disallow: /\r\n"
)


def put_robots(pipeline: Pipeline, body: bytes) -> None:
    pipeline.s3.put_object(Bucket=pipeline.app.settings.bucket_name, Key="robots.txt", Body=body)


def robots(pipeline: Pipeline) -> bytes:
    return pipeline.objects()["robots.txt"]


def test_a_default_robots_txt_is_created_when_there_is_none(pipeline: Pipeline) -> None:
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert robots(pipeline) == (
        b"User-agent: *\nDisallow:\n\nSitemap: https://www.example.com/sitemap.xml\n"
    )


def test_the_owners_file_keeps_every_other_byte(pipeline: Pipeline) -> None:
    put_robots(pipeline, OWNER)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    # Only our own line changed, in place, with the file's CRLF.
    assert robots(pipeline) == OWNER.replace(
        b"Sitemap: http://www.example.com/sitemap.xml\r\n",
        b"Sitemap: https://www.example.com/sitemap.xml\r\n",
    )
    assert robots(pipeline).count(b"Host:") == 1  # the owner's; we never write one


def test_robots_txt_is_written_only_when_its_sitemap_lines_must_change(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    put_robots(pipeline, OWNER.replace(b"http://www", b"https://www"))
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    pipeline.send_events([publish("/b", 1), publish("/a", 2, priority=0.1)])
    pipeline.drain()
    assert "robots.txt" not in recorder.puts


def test_an_owners_edit_during_the_update_is_not_lost(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    put_robots(pipeline, b"User-agent: *\nDisallow:\n")
    owner_edit = b"User-agent: *\nDisallow: /private/\n"
    edited = []

    def owner_edits_first(context: dict[str, Any], **_: Any) -> None:
        params = context.get("recorded_params", {})
        if params.get("Key") == "robots.txt" and not edited:
            edited.append(True)
            put_robots(pipeline, owner_edit)  # lands between our read and our write

    pipeline.app.store.client.meta.events.register("before-call.s3.PutObject", owner_edits_first)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()

    assert edited
    assert robots(pipeline) == owner_edit + b"\nSitemap: https://www.example.com/sitemap.xml\n"
    assert recorder.puts.count("robots.txt") == 1  # the first, stale, write was refused


def test_a_robots_txt_that_would_exceed_500_kib_is_left_alone(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    comment = b"# " + b"x" * 97 + b"\n"
    big = b"User-agent: *\nDisallow:\n" + comment * ((MAX_ROBOTS_BYTES - 60) // len(comment))
    big += b"#" * (MAX_ROBOTS_BYTES - 20 - len(big)) + b"\n"  # 19 bytes short of the limit
    assert len(big) < MAX_ROBOTS_BYTES < len(big) + len(f"Sitemap: {SITE}/sitemap.xml\n")
    put_robots(pipeline, big)
    pipeline.send_events([publish("/a", 1)])
    pipeline.drain()
    assert robots(pipeline) == big
    assert "sitemap.xml" in recorder.puts  # the index is still published
    assert pipeline.function_errors == 0
