"""``validate`` and ``backfill`` on what real sites serve: cut-short downloads, throttling,
redirect loops, deep index trees, plugins' flags, a site without robots.txt."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from tests.conftest import SITE
from tests.httpsite import SITEMAP_NS, StaticSite, sitemapindex, urlset
from tests.integration.conftest import STACK
from tests.pipeline import Pipeline

XHTML = "http://www.w3.org/1999/xhtml"
IMAGE = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO = "http://www.google.com/schemas/sitemap-video/1.1"


def validate(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, dict[str, Any]]:
    status = main(["validate", url, "--json"])
    return status, json.loads(capsys.readouterr().out.splitlines()[-1])


def backfill(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status = main(["backfill", *argv, *STACK, "--json", "--workers", "1"])
    return status, json.loads(capsys.readouterr().out.splitlines()[-1])


def test_a_truncated_local_gzip_sitemap_is_refused_with_a_reason(
    deployed: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = gzip.compress(urlset(f"<loc>{SITE}/a</loc>").encode(), mtime=0)
    source = tmp_path / "sitemap.xml.gz"
    source.write_bytes(body[:-8])  # the download stopped 8 bytes short
    status = main(["backfill", str(source), *STACK, "--dry-run"])
    assert status == 2
    assert "gzip" in capsys.readouterr().err


# Google reads a robots.txt answering 429 as a server error (the whole site disallowed), not
# as "no robots.txt" (what every other 4xx means).
def test_a_robots_txt_answering_429_is_reported_as_google_reads_it(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/robots.txt", "slow down", 429, Retry_After="120")
    _status, report = validate(capsys, http_site.origin + "/")
    robots = [f["message"] for f in report["faults"] if f["where"].endswith("/robots.txt")]
    assert robots == ["HTTP 429: Google then treats the whole site as disallowed"]


@pytest.mark.parametrize("status", [429, 503])
def test_a_throttled_or_failing_sitemap_is_not_called_a_dead_link(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str], status: int
) -> None:
    http_site.put("/robots.txt", f"Sitemap: {http_site.url('/sitemap.xml')}\n")
    http_site.put("/sitemap.xml", "busy", status, Retry_After="30")
    _status, report = validate(capsys, http_site.origin + "/")
    (fault,) = [f["message"] for f in report["faults"]]
    assert "dead link" not in fault


def test_a_redirect_loop_is_named_as_one(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/robots.txt", f"Sitemap: {http_site.url('/a.xml')}\n")
    http_site.redirect("/a.xml", http_site.url("/b.xml"), 301)
    http_site.redirect("/b.xml", http_site.url("/a.xml"), 301)
    _status, report = validate(capsys, http_site.origin + "/")
    (fault,) = [f["message"] for f in report["faults"]]
    assert "dead link" not in fault
    assert "redirect" in fault


def _deep_tree(site: StaticSite) -> None:
    site.put("/robots.txt", f"Sitemap: {site.url('/i0.xml')}\n")
    for level in range(7):
        site.put(f"/i{level}.xml", sitemapindex(f"<loc>{site.url(f'/i{level + 1}.xml')}</loc>"))
    site.put("/i7.xml", urlset(f"<loc>{SITE}/deep</loc>"))


def test_validate_says_so_when_it_stops_following_nested_indexes(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    _deep_tree(http_site)
    status, _report = validate(capsys, http_site.origin + "/")
    assert "/i6.xml" not in http_site.requests  # not followed ...
    assert status == 1  # ... and said so


def test_backfill_says_so_when_it_stops_following_nested_indexes(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    _deep_tree(http_site)
    status, summary = backfill(capsys, http_site.url("/robots.txt"), "--dry-run")
    assert summary["read"] == 0
    assert (status, len(summary["source_faults"])) == (1, 1)


def test_a_video_flag_written_true_as_plugins_do_is_read_as_yes(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put(
        "/sitemap.xml",
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}" '
        f'xmlns:video="{VIDEO}">\n<url><loc>{SITE}/v</loc><video:video>'
        "<video:thumbnail_loc>https://i.ytimg.com/vi/abc/hqdefault.jpg</video:thumbnail_loc>"
        "<video:title>T</video:title><video:description>D</video:description>"
        "<video:player_loc>https://www.youtube.com/embed/abc</video:player_loc>"
        "<video:family_friendly>true</video:family_friendly></video:video></url>\n</urlset>\n",
    )
    _status, summary = backfill(capsys, http_site.url("/sitemap.xml"), "--dry-run")
    assert (summary["read"], summary["rejected"]) == (1, [])


def test_backfill_of_a_site_root_finds_what_validate_finds_without_a_robots_txt(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/sitemap.xml", urlset(f"<loc>{http_site.origin}/a</loc>"))
    _status, report = validate(capsys, http_site.origin + "/")
    assert report["counts"]["urls"] == 1  # validate found the page
    http_site.put("/sitemap.xml", urlset(f"<loc>{SITE}/a</loc>"))
    _status, summary = backfill(capsys, http_site.origin + "/", "--dry-run")
    assert summary["read"] == 1


def test_backfill_says_what_it_leaves_of_an_index_that_holds_pages(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/pages.xml", urlset(f"<loc>{SITE}/b</loc>"))
    http_site.put(
        "/sitemap.xml",
        sitemapindex(f"<loc>{http_site.url('/pages.xml')}</loc>").replace(
            "</sitemapindex>", f"<url><loc>{SITE}/a</loc></url><url><loc>{SITE}/c</loc></url>\n"
        )
        + "</sitemapindex>\n",
    )
    status, summary = backfill(capsys, http_site.url("/sitemap.xml"), "--dry-run")
    assert (status, summary["read"]) == (1, 1)
    (fault,) = summary["source_faults"]
    assert fault["origin"] == http_site.url("/sitemap.xml")
    assert fault["reason"].startswith("2 <url> entries in a <sitemapindex>: not read")


@pytest.mark.parametrize(
    "page", ["<!DOCTYPE html>\n<html><body><p>Home<br></body></html>", "  <HTML><p>x</HTML>"]
)
def test_an_html_page_served_for_a_sitemap_is_named_as_one(
    deployed: Pipeline, http_site: StaticSite, capsys: pytest.CaptureFixture[str], page: str
) -> None:
    http_site.put("/robots.txt", f"Sitemap: {http_site.url('/sitemap.xml')}\n")
    http_site.put("/sitemap.xml", page, Content_Type="text/html")
    _status, report = validate(capsys, http_site.origin + "/")
    assert [f["message"] for f in report["faults"]] == [
        "an HTML page, not a sitemap" + (f" (named at {http_site.url('/robots.txt')}:1)")
    ]
    _status, summary = backfill(capsys, http_site.url("/sitemap.xml"), "--dry-run")
    assert [f["reason"] for f in summary["source_faults"]] == ["an HTML page, not a sitemap"]
