"""The human view in a real browser: headless Chromium opens the index and a shard served
from the bucket over HTTP (as CloudFront serves them) and shows tables of their rows.

Over HTTP, not file://: Chromium applies XSLT only from the document's own origin.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.domain.stylesheet import STYLESHEET_HREF, stylesheet_bytes
from sitemap_updater.local.server import SiteServer
from tests.browser import rendered
from tests.conftest import SITE, FakeClock
from tests.httpsite import StaticSite
from tests.integration.conftest import publish
from tests.pipeline import Pipeline
from tests.unit.test_stylesheet import DECLARATION, EXTENDED_SHARD, PI

PAGES = {
    f"{SITE}/a": {"lastmod": "2026-11-20", "changefreq": "daily", "priority": "0.8"},
    f"{SITE}/b?x=1&y=2": {"lastmod": "2026-11-19T08:00:00Z", "changefreq": None, "priority": None},
    f"{SITE}/caf%C3%A9": {"lastmod": None, "changefreq": "never", "priority": None},
    f"{SITE}/d": {"lastmod": None, "changefreq": None, "priority": None},
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Pipeline, str]]:
    """One site for the module's browser runs (each Chromium start is the slow part)."""
    with mock_aws():
        pipeline = Pipeline.create(
            SITE,
            {"STYLESHEET": "true", "COMPRESS_SHARDS": "false", "MAX_URLS_PER_SHARD": 3},
            visibility_timeout=1,
            clock=FakeClock(),
            prefix="browser",
            session=boto3.session.Session(  # module scope: before the autouse env fixture
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
                region_name="us-east-1",
            ),
        )
        yield from _serve(pipeline)


def _serve(pipeline: Pipeline) -> Iterator[tuple[Pipeline, str]]:
    pipeline.send_events(
        [
            publish("/a", 1, lastmod="2026-11-20", changefreq="daily", priority=0.8),
            publish("/b?x=1&y=2", 1, lastmod="2026-11-19T09:00:00+01:00"),
            publish("/caf\u00e9", 1, changefreq="never"),
            publish("/d", 1),
        ]
    )
    pipeline.drain()
    server = SiteServer(pipeline.s3, pipeline.app.settings.bucket_name).start()
    try:
        yield pipeline, server.url
    finally:
        server.stop()


def rows(page: Any, table: str) -> list[list[str]]:
    return [
        [cell.text_content().strip() for cell in row.xpath("td")]
        for row in page.xpath(f"//table[@id='{table}']/tbody/tr")
    ]


def test_a_shard_shows_its_urls_as_links_with_their_fields(served: tuple[Pipeline, str]) -> None:
    _, origin = served
    page = rendered(f"{origin}/sitemap-pages-00001.xml")
    assert page.findtext(".//h1") == "Sitemap"
    assert page.get_element_by_id("url-count").text == "3"
    shown = rows(page, "urls")
    expected = sorted(PAGES)[:3]  # a shard lists its URLs in order
    assert [row[1] for row in shown] == expected
    for row in shown:
        fields = PAGES[row[1]]
        assert row[2:] == [fields[name] or "" for name in ("lastmod", "changefreq", "priority")]
    links = page.xpath("//table[@id='urls']/tbody/tr/td[2]/a")
    assert [(a.get("href"), a.text) for a in links] == [(url, url) for url in expected]


def test_the_index_shows_each_shard_with_a_link(served: tuple[Pipeline, str]) -> None:
    pipeline, origin = served
    page = rendered(f"{origin}/sitemap.xml")
    assert page.findtext(".//h1") == "Sitemap index"
    assert page.get_element_by_id("sitemap-count").text == "2"
    shards = [f"{SITE}/sitemap-pages-0000{n}.xml" for n in (1, 2)]
    assert page.xpath("//table[@id='sitemaps']/tbody/tr/td[2]/a/@href") == shards
    lastmods = [row[2] for row in rows(page, "sitemaps")]
    assert lastmods == [pipeline.app.clock().strftime("%Y-%m-%dT%H:%M:%SZ")] * 2


def test_a_shard_with_extensions_shows_their_counts(http_site: StaticSite) -> None:
    """What the image, video, news and hreflang work will write, viewed in the browser."""
    http_site.put(STYLESHEET_HREF, stylesheet_bytes(), Content_Type="text/xsl; charset=utf-8")
    http_site.put(
        "/sitemap-news-00001.xml",
        DECLARATION + PI + EXTENDED_SHARD.removeprefix(DECLARATION),
        Content_Type="application/xml; charset=utf-8",
    )
    page = rendered(http_site.url("/sitemap-news-00001.xml"))
    header = [th.text_content() for th in page.xpath("//table[@id='urls']/thead/tr/th")]
    assert header[5:] == ["Images", "Videos", "Alternates", "News"]
    assert [row[5:] for row in rows(page, "urls")] == [["2", "1", "3", "1"], ["0", "0", "0", "0"]]


def test_without_xslt_the_browser_still_shows_the_xml(served: tuple[Pipeline, str]) -> None:
    """Browsers are removing XSLT (Chromium warns on every page that uses it). Then the
    processing instruction is ignored and Chromium's XML viewer shows the document itself:
    nothing breaks, the table is gone. ``--disable-blink-features=XSLT`` is that browser."""
    _, origin = served
    page = rendered(f"{origin}/sitemap-pages-00001.xml", "--disable-blink-features=XSLT")
    assert page.xpath("//style[@id='xml-viewer-style']")  # Chromium's own XML tree viewer
    assert page.xpath("//table") == []
    text = page.text_content()
    for url in sorted(PAGES)[:3]:
        assert url in text
