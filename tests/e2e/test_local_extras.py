"""``sitemap-updater local`` with the human view and IndexNow on (``--setting``): the real
console script over events/, IndexNow submitting to an endpoint on 127.0.0.1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree
from lxml import html as lxml_html

from sitemap_updater.domain.stylesheet import stylesheet_bytes
from tests.e2e.test_local_cli import (
    EVENTS,
    SITE,
    bodies_in,
    entries,
    newest_publishes,
    run,
    shard_files,
    xml_of,
)
from tests.indexnow_endpoint import RecordingEndpoint

KEY = "e2e-0123456789-key"
PI = b'<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>'
SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
NAMESPACES = {
    "sm": SM,
    "image": "http://www.google.com/schemas/sitemap-image/1.1",
    "video": "http://www.google.com/schemas/sitemap-video/1.1",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
}
EXTENSIONS = {
    "image": "sm:url/image:image",
    "video": "sm:url/video:video",
    "alternate": "sm:url/xhtml:link[@rel='alternate']",
    "news": "sm:url/news:news",
}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RecordingEndpoint]:
    recording = RecordingEndpoint()
    yield recording
    recording.stop()


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory, endpoint: RecordingEndpoint) -> Path:
    site = tmp_path_factory.mktemp("extras") / "site"
    result = run(
        "local", "events/", "--site-url", SITE, "--out", site,
        "--setting", "STYLESHEET=true",
        "--setting", f"INDEXNOW_KEY={KEY}",
        "--setting", f"INDEXNOW_ENDPOINT={endpoint.url}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return site


def test_the_site_serves_the_stylesheet_and_the_key_file(out: Path) -> None:
    assert (out / "sitemap.xsl").read_bytes() == stylesheet_bytes()
    assert (out / f"{KEY}.txt").read_text(encoding="utf-8") == KEY
    for name in ("sitemap.xml", "sitemap-pages-00001.xml.gz"):
        assert xml_of((out / name).read_bytes()).splitlines()[1] == PI


def test_indexnow_hears_of_every_applied_change_and_nothing_else(
    out: Path, endpoint: RecordingEndpoint
) -> None:
    submitted = set(endpoint.submitted())
    listed = set(entries(out, SITE))
    assert listed == set(newest_publishes(bodies_in(EVENTS), SITE))
    assert listed <= submitted  # every page in the sitemaps
    assert f"{SITE}/old-page" in submitted  # events/04-unpublish.json: crawlers see its 404
    assert all(url.startswith(f"{SITE}/") for url in submitted)  # never evil.example.net
    assert "https://www.example.com/late-and-stale" not in submitted  # rejected: bad version
    for request in endpoint.requests:
        assert request.body["key"] == KEY
        assert request.body["keyLocation"] == f"{SITE}/{KEY}.txt"
        assert 1 <= len(request.urls) <= 10_000


def test_a_setting_the_local_stack_owns_is_a_usage_error(tmp_path: Path) -> None:
    result = run(
        "local", "events/", "--site-url", SITE, "--out", tmp_path / "site",
        "--setting", "TABLE_NAME=mine",
    )  # fmt: skip
    assert result.returncode == 2
    assert "--setting TABLE_NAME: the local stack sets it" in result.stderr


def test_a_rule_across_settings_is_reported_as_its_own_message(tmp_path: Path) -> None:
    result = run(
        "local", "events/", "--site-url", SITE, "--out", tmp_path / "site",
        "--setting", "INVALIDATE_PATHS=true",
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        "sitemap-updater: error: INVALIDATE_PATHS is true but DISTRIBUTION_ID is empty\n"
    )


def test_indexnow_without_an_endpoint_of_ones_own_is_a_usage_error(tmp_path: Path) -> None:
    """A local run never submits its URLs to the real engines by default."""
    result = run(
        "local", "events/", "--site-url", SITE, "--out", tmp_path / "site",
        "--setting", f"INDEXNOW_KEY={KEY}",
    )  # fmt: skip
    assert result.returncode == 2
    assert "give --setting INDEXNOW_ENDPOINT=... too" in result.stderr
    assert not (tmp_path / "site").exists()


def test_the_human_view_counts_the_extensions_the_pipeline_wrote(out: Path) -> None:
    """events/ holds images, a video, a news article and an hreflang cluster: each shard's
    table counts exactly what its XML holds (the XSL run by libxslt, as in Chromium)."""
    xslt = etree.XSLT(etree.fromstring(stylesheet_bytes()))
    totals: Counter[str] = Counter()
    for shard in shard_files(out, SITE):
        document = etree.fromstring(xml_of(shard.read_bytes()))
        page = lxml_html.fromstring(str(xslt(document)))
        assert page.get_element_by_id("url-count").text == str(
            len(document.findall(f"{{{SM}}}url"))
        )
        for name, path in EXTENSIONS.items():
            held = int(document.xpath(f"count({path})", namespaces=NAMESPACES))
            shown = page.xpath(f"//*[@id='{name}-count']/text()")
            assert shown == ([str(held)] if held else []), (shard.name, name)
            totals[name] += held
    # events/ holds all four; its news article ages out two days after its date, so only
    # the other three are sure to be there whenever this runs.
    assert all(totals[name] > 0 for name in ("image", "video", "alternate")), totals
