"""``backfill`` keeps what real-world sitemaps say: Google's own image, video, news and
hreflang examples (``tests/corpus/real-world/``), imported into a deployment on the local
runtime, come out of the pipeline's shards with every extension the contract carries; what
it cannot carry is listed in the summary."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.stack import LOCAL_STACK_NAME, register_stack
from tests.conftest import FakeClock
from tests.integration.conftest import parse
from tests.pipeline import Pipeline

CORPUS = Path(__file__).parents[1] / "corpus" / "real-world"
NS = {
    "sm": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
    "video": "http://www.google.com/schemas/sitemap-video/1.1",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
}


def backfill(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str], site: str, name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the summary, the published <url> elements by loc) of one fixture's import."""
    pipeline: Pipeline = make_pipeline(SITE_URL=site)
    register_stack(pipeline.stack)
    argv = ["backfill", str(CORPUS / name), "--stack", LOCAL_STACK_NAME, "--json"]
    assert main([*argv, "--workers", "1"]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    pipeline.drain()
    objects = pipeline.objects()
    urls = {}
    for key, body in objects.items():
        if key.startswith("sitemap-pages-"):
            urls |= {
                u.findtext("sm:loc", namespaces=NS): u
                for u in parse(body).iter(f"{{{NS['sm']}}}url")
            }
    return summary, urls


def texts(element: Any, path: str) -> list[str]:
    return [found.text for found in element.findall(path, NS)]


def test_googles_video_example_keeps_its_video_and_lists_the_retired_price(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, urls = backfill(make_pipeline, capsys, "http://www.example.com", "google-video.xml")
    page = "http://www.example.com/videos/some_video_landing_page.html"
    assert summary["applied"] == 1
    assert summary["not_carried"] == [
        {"origin": f"{CORPUS / 'google-video.xml'}:4", "reason": "video:price"}
    ]
    assert summary["values_not_carried"] == 1
    (video,) = urls[page].findall("video:video", NS)
    fields = {child.tag.rpartition("}")[2]: (child.text, dict(child.attrib)) for child in video}
    assert fields == {
        "thumbnail_loc": ("http://www.example.com/thumbs/123.jpg", {}),
        "title": ("Grilling steaks for summer", {}),
        "description": (
            "Alkis shows you how to get perfectly done steaks every\n         time",
            {},
        ),
        "content_loc": ("http://streamserver.example.com/video123.mp4", {}),  # trimmed
        "player_loc": ("http://www.example.com/videoplayer.php?video=123", {}),
        "duration": ("600", {}),
        "expiration_date": ("2021-11-05T11:20:30Z", {}),
        "rating": ("4.2", {}),
        "view_count": ("12345", {}),
        "publication_date": ("2007-11-05T11:20:30Z", {}),
        "family_friendly": ("yes", {}),
        "restriction": ("IE GB US CA", {"relationship": "allow"}),
        "requires_subscription": ("yes", {}),
        "uploader": (
            "GrillyMcGrillerson",
            {"info": "http://www.example.com/users/grillymcgrillerson"},
        ),
        "live": ("no", {}),
    }


def test_googles_image_example_keeps_every_image_and_lists_the_retired_metadata(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, urls = backfill(make_pipeline, capsys, "http://example.com", "google-image.xml")
    assert summary["applied"] == 2
    assert texts(urls["http://example.com/sample1.html"], "image:image/image:loc") == [
        "http://example.com/image.jpg",
        "http://example.com/photo.jpg",
    ]
    assert texts(urls["http://example.com/sample2.html"], "image:image/image:loc") == [
        "http://example.com/picture.jpg"
    ]
    (dropped,) = summary["not_carried"]
    assert dropped["reason"] == "image:caption; image:geo_location; image:title; image:license"
    assert summary["values_not_carried"] == 4


def test_googles_news_example_keeps_its_article(
    make_pipeline: Any, clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    clock.now = datetime(2008, 12, 23, 12, tzinfo=UTC)  # while the article is news
    summary, urls = backfill(make_pipeline, capsys, "http://www.example.org", "google-news.xml")
    (news,) = urls["http://www.example.org/business/article55.html"].findall("news:news", NS)
    assert texts(news, "news:publication/news:name") == ["The Example Times"]
    assert texts(news, "news:publication/news:language") == ["en"]
    assert texts(news, "news:publication_date") == ["2008-12-23"]
    assert texts(news, "news:title") == ["Companies A, B in Merger Talks"]
    (dropped,) = summary["not_carried"]
    assert dropped["reason"] == "news:access; news:genres; news:keywords; news:stock_tickers"


def test_googles_hreflang_example_keeps_each_pages_alternates(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, urls = backfill(make_pipeline, capsys, "http://www.example.com", "google-hreflang.xml")
    assert (summary["applied"], summary["not_carried"]) == (3, [])
    cluster = [
        ("de", "http://www.example.com/deutsch/"),
        ("de-CH", "http://www.example.com/schweiz-deutsch/"),
        ("en", "http://www.example.com/english/"),
    ]
    for page in ("english", "deutsch", "schweiz-deutsch"):
        links = urls[f"http://www.example.com/{page}/"].findall("xhtml:link", NS)
        assert sorted((link.get("hreflang"), link.get("href")) for link in links) == cluster


def test_alternates_on_another_site_are_listed_not_dropped_silently(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "google-hreflang-two-sites.xml"
    summary, urls = backfill(make_pipeline, capsys, "https://www.example.com", name)
    assert summary["applied"] == 1
    assert [r["reason"].split(":")[0] for r in summary["rejected"]] == ["url_foreign_host"]
    (dropped,) = summary["not_carried"]  # the rejected page's are not counted
    assert dropped["reason"] == (
        "xhtml:link hreflang de https://www.example.de/deutsch/page.html (on another site); "
        "xhtml:link hreflang de-ch https://www.example.de/schweiz-deutsch/page.html "
        "(on another site)"
    )
    # Its one alternate left is itself: a cluster of one lists none.
    assert urls["https://www.example.com/english/page.html"].findall("xhtml:link", NS) == []
