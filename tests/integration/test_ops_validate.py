"""``sitemap-updater validate`` against hand-made sites on 127.0.0.1, good and broken, and
against sites this project produced (``build``, and the pipeline served as ``local`` does)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.server import SiteServer
from tests.httpsite import StaticSite, gz, sitemapindex, urlset
from tests.integration.conftest import publish
from tests.pipeline import Pipeline

IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"


def validate(
    capsys: pytest.CaptureFixture[str], url: str, *argv: str
) -> tuple[int, dict[str, Any]]:
    status = main(["validate", url, *argv, "--json"])
    return status, json.loads(capsys.readouterr().out.splitlines()[-1])


def messages(report: dict[str, Any], kind: str = "faults") -> list[tuple[str, str]]:
    return [(finding["where"], finding["message"]) for finding in report[kind]]


def good_site(site: StaticSite) -> None:
    o = site.origin
    site.put(
        "/robots.txt",
        f"\ufeffUser-agent: *\r\nDisallow: /admin\r\n\r\nSitemap: {o}/sitemap_index.xml # all\r\n",
    )
    site.put(
        "/sitemap_index.xml",
        sitemapindex(
            f"<loc>{o}/posts.xml.gz</loc><lastmod>2026-11-20T10:00:00+01:00</lastmod>",
            f"<loc>{o}/pages.xml</loc>",
        ),
    )
    site.put(
        "/posts.xml.gz",
        gz(
            urlset(
                f"<loc>{o}/posts/caf%C3%A9?a=1&amp;b=2</loc><lastmod>2026-11-20</lastmod>",
                f"<loc>{o}/posts/2</loc><changefreq>daily</changefreq><priority>0.8</priority>",
            )
        ),
    )
    site.put(
        "/pages.xml",
        urlset(
            f'<loc>{o}/about</loc><image:image xmlns:image="{IMAGE_NS}">'
            "<image:loc>https://cdn.example.org/team.jpg</image:loc></image:image>"
        ),
        Content_Type="application/xml",
    )


def test_a_good_site_is_clean(http_site: StaticSite, capsys: pytest.CaptureFixture[str]) -> None:
    good_site(http_site)
    status, report = validate(capsys, http_site.origin + "/")
    assert (status, report["faults"], report["warnings"]) == (0, [], [])
    assert report["counts"] == {"robots": 1, "indexes": 1, "sitemaps": 2, "urls": 3}


def test_relative_sitemap_lines_and_nested_indexes_are_followed_with_warnings(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/robots.txt", "Sitemap: /outer.xml\n")
    http_site.put("/outer.xml", sitemapindex(f"<loc>{o}/inner.xml</loc>"))
    http_site.put("/inner.xml", sitemapindex(f"<loc>{o}/leaf.xml</loc>"))
    http_site.put("/leaf.xml", urlset(f"<loc>{o}/x</loc>"))
    status, report = validate(capsys, f"{o}/robots.txt")
    assert (status, report["faults"]) == (0, [])
    assert report["counts"]["urls"] == 1
    warnings = messages(report, "warnings")
    assert warnings[0][0] == f"{o}/robots.txt:1"
    assert warnings[0][1].startswith("relative Sitemap URL '/outer.xml'")
    assert warnings[1][0] == f"{o}/inner.xml"
    assert "does not allow nesting" in warnings[1][1]


def test_an_index_that_lists_itself_or_two_that_list_each_other_are_a_loop(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/robots.txt", f"Sitemap: {o}/self.xml\nSitemap: {o}/a.xml\n")
    http_site.put("/self.xml", sitemapindex(f"<loc>{o}/self.xml</loc>"))
    http_site.put("/a.xml", sitemapindex(f"<loc>{o}/b.xml</loc>"))
    http_site.put("/b.xml", sitemapindex(f"<loc>{o}/leaf.xml</loc>", f"<loc>{o}/a.xml</loc>"))
    http_site.put("/leaf.xml", urlset(f"<loc>{o}/x</loc>"))
    status, report = validate(capsys, f"{o}/robots.txt")
    assert status == 1
    assert messages(report) == [
        (f"{o}/self.xml:3", "loop: the index lists itself"),
        (f"{o}/b.xml:4", f"loop: the index lists {o}/a.xml, which lists this index"),
    ]


def test_a_gz_that_is_not_gzip_says_so(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/robots.txt", f"Sitemap: {o}/plain.xml.gz\nSitemap: {o}/html.xml.gz\n")
    http_site.put("/plain.xml.gz", urlset(f"<loc>{o}/x</loc>"))
    http_site.put("/html.xml.gz", "<html><body>Not found</body>")
    status, report = validate(capsys, f"{o}/robots.txt")
    assert status == 1
    assert messages(report) == [
        (f"{o}/plain.xml.gz", f"named .gz, but not gzip (named at {o}/robots.txt:1)"),
        (f"{o}/html.xml.gz", f"named .gz, but not gzip (named at {o}/robots.txt:2)"),
    ]
    assert report["counts"]["urls"] == 1  # the plain XML is still checked


def test_max_sitemaps_counts_sitemap_files_only_and_a_truncated_walk_is_a_fault(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/robots.txt", f"Sitemap: {o}/a.xml\nSitemap: {o}/b.xml\n")
    http_site.put("/a.xml", urlset(f"<loc>{o}/a</loc>"))
    http_site.put("/b.xml", urlset(f"<loc>{o}/b</loc>"))
    status, report = validate(capsys, f"{o}/robots.txt", "--max-sitemaps", "2")
    assert (status, report["faults"], report["counts"]["sitemaps"]) == (0, [], 2)
    status, report = validate(capsys, f"{o}/robots.txt", "--max-sitemaps", "1")
    assert status == 1
    assert report["counts"]["sitemaps"] == 1
    assert messages(report) == [
        (
            f"{o}/robots.txt",
            "truncated: stopped after 1 sitemap file(s) (--max-sitemaps); the others named "
            "were not checked",
        )
    ]


def test_a_broken_site_gets_every_fault_with_its_location(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/robots.txt", f"Sitemap: {o}/index.xml\nSitemap: ftp://{o[7:]}/x.xml\n")
    http_site.put(
        "/index.xml",
        sitemapindex(
            f"<loc>{o}/a.xml</loc>",
            f"<loc>{o}/gone.xml.gz</loc>",
            "<loc>https://elsewhere.example.org/c.xml</loc>",
            f"<loc>{o}/latin1.xml</loc>",
            f"<loc>{o}/html.xml</loc>",
            f"<loc>{o}/broken.xml</loc>",
        ),
    )
    http_site.put(
        "/a.xml",
        urlset(
            f"<loc>{o}/ok</loc>",  # line 3
            "<loc>https://elsewhere.example.org/p</loc>",  # 4
            "<loc>/relative</loc>",  # 5
            f"<loc>{o}/when</loc><lastmod>2026-11-20T10:00</lastmod>",  # 6: no zone
            f"<loc>{o}/ok</loc>",  # 7: duplicate
            f"<loc>{o}/{'x' * 2100}</loc>",  # 8: too long
            f"<loc>{o}/a b</loc>",  # 9: not escaped
            f"<loc>{o}/freq</loc><changefreq>sometimes</changefreq>",  # 10
        ),
    )
    http_site.put(
        "/latin1.xml",
        f'<?xml version="1.0" encoding="ISO-8859-1"?>\n<urlset xmlns="{SITEMAP}">'
        f"<url><loc>{o}/l</loc></url></urlset>\n".encode("latin-1"),
    )
    http_site.put("/html.xml", "<html><body>not a sitemap</body></html>")
    http_site.put("/broken.xml", "<urlset><url>")
    status, report = validate(capsys, o)
    assert status == 1
    found = messages(report)

    def has(where: str, text: str) -> bool:
        return any(w == where and text in m for w, m in found)

    assert has(f"{o}/robots.txt:2", "is not an http(s) URL")
    assert has(f"{o}/gone.xml.gz", f"dead link: HTTP 404 (named at {o}/index.xml:4)")
    assert has(f"{o}/index.xml:5", "is not on the site")
    assert has(f"{o}/a.xml:4", "https://elsewhere.example.org/p is not on the site")
    assert has(f"{o}/a.xml:5", "is not an absolute http(s) URL: '/relative'")
    assert has(f"{o}/a.xml:6", "<lastmod> '2026-11-20T10:00': lastmod must be W3C Datetime")
    assert has(f"{o}/a.xml:6", "schema: ")  # the schemas reject it too
    assert has(f"{o}/a.xml:7", f"duplicate URL {o}/ok (first listed at {o}/a.xml:3)")
    assert has(f"{o}/a.xml:8", "<loc> is 2,")
    assert has(f"{o}/a.xml:9", "<loc> holds whitespace")
    assert has(f"{o}/a.xml:10", "schema: ")
    assert has(f"{o}/latin1.xml", "encoded as ISO-8859-1; sitemaps must be UTF-8")
    assert has(f"{o}/html.xml", "an HTML page, not a sitemap")
    assert has(f"{o}/broken.xml", "not well-formed XML")
    assert "elsewhere.example.org/c.xml" not in " ".join(http_site.requests)  # not followed


SITEMAP = "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_size_and_entry_limits(http_site: StaticSite, capsys: pytest.CaptureFixture[str]) -> None:
    o = http_site.origin
    entries = "".join(f"<url><loc>{o}/{n}</loc></url>" for n in range(50_001))
    http_site.put("/many.xml.gz", gz(f'<urlset xmlns="{SITEMAP}">{entries}</urlset>'))
    padding = " " * (52_428_800 - 40)
    http_site.put(
        "/huge.xml.gz", gzip.compress(f'<urlset xmlns="{SITEMAP}">{padding}</urlset>'.encode())
    )
    http_site.put(
        "/index.xml", sitemapindex(f"<loc>{o}/many.xml.gz</loc>", f"<loc>{o}/huge.xml.gz</loc>")
    )
    status, report = validate(capsys, f"{o}/index.xml")
    assert status == 1
    assert (f"{o}/many.xml.gz", "50,001 <url> entries; at most 50,000 are allowed") in messages(
        report
    )
    assert any(
        w == f"{o}/huge.xml.gz" and m.startswith("over 52,428,800 bytes uncompressed")
        for w, m in messages(report)
    )


def test_a_missing_robots_txt_is_a_fault_and_sitemap_xml_is_tried(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/sitemap.xml", urlset(f"<loc>{o}/a</loc>"))
    status, report = validate(capsys, o)
    assert status == 1
    assert messages(report)[0][0] == f"{o}/robots.txt"
    assert "no robots.txt" in messages(report)[0][1]
    assert report["counts"]["urls"] == 1


def test_a_failing_robots_txt_is_a_fault(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    http_site.put("/robots.txt", "oops", status=503)
    status, report = validate(capsys, http_site.origin)
    assert status == 1
    assert "treats the whole site as disallowed" in messages(report)[0][1]


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "www.example.com"]) == 2
    assert "absolute http(s) URL" in capsys.readouterr().err


def test_what_build_writes_is_clean(
    http_site: StaticSite, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    pages = tmp_path / "pages.jsonl"
    pages.write_text(
        "".join(
            json.dumps(
                {
                    "url": f"{o}/p/{n}/caf\u00e9?q=a&b=<{n}>".replace("<", "").replace(">", ""),
                    "lastmod": "2026-11-20T10:00:00+01:00",
                    "priority": 0.5,
                }
            )
            + "\n"
            for n in range(25)
        )
    )
    out = tmp_path / "site"
    assert (
        main(
            [
                "build",
                str(pages),
                "--site-url",
                o,
                "--out",
                str(out),
                "--max-urls-per-shard",
                "10",
                "--max-sitemaps-per-index",
                "2",
            ]
        )
        == 0
    )
    for path in out.iterdir():
        http_site.put(f"/{path.name}", path.read_bytes())
    capsys.readouterr()
    status, report = validate(capsys, o)
    assert (status, report["faults"], report["warnings"]) == (0, [], [])
    assert report["counts"] == {"robots": 1, "indexes": 2, "sitemaps": 3, "urls": 25}


def validate_served(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any]]:
    """Five pages through the pipeline, then ``validate`` of what its local copy serves."""
    pipeline.send_events([publish(f"/p{n}", 1, lastmod="2026-11-20") for n in range(5)])
    pipeline.drain()
    server = SiteServer(pipeline.s3, pipeline.app.settings.bucket_name).start()
    try:
        return validate(capsys, f"{server.url}/robots.txt", "--site-url", "https://www.example.com")
    finally:
        server.stop()


def test_what_the_pipeline_serves_is_clean_checked_through_a_local_copy(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    status, report = validate_served(pipeline, capsys)
    assert (status, report["faults"], report["warnings"]) == (0, [], [])
    assert report["counts"]["urls"] == 5
    assert report["site"] == "https://www.example.com"


@pytest.mark.parametrize("timeout", ["0", "-1", "nan"])
def test_a_timeout_that_is_not_positive_is_a_usage_error(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str], timeout: str
) -> None:
    assert main(["validate", http_site.origin, "--timeout", timeout]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--timeout must be a number of seconds > 0" in err
    assert http_site.requests == []  # nothing fetched


def test_a_multi_member_gzip_sitemap_is_read_to_its_end(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    text = urlset(*(f"<loc>{o}/{n}</loc>" for n in range(4)))
    half = len(text) // 2
    http_site.put("/sitemap.xml.gz", gz(text[:half]) + gz(text[half:]))  # as `cat a.gz b.gz`
    status, report = validate(capsys, f"{o}/sitemap.xml.gz")
    assert (status, report["faults"]) == (0, [])
    assert report["counts"]["urls"] == 4


def test_a_server_dripping_bytes_gets_the_timeout_for_the_whole_document(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    # 40 bytes, one every 0.05 s: each read waits far less than the timeout, the document
    # takes 2 s at least. Without a deadline per document it would be read to its end (and
    # a server that never ends would hang the command); the drip ends, so this test does.
    http_site.put("/slow.xml", b"#" * 40, drip=0.05)
    status, report = validate(capsys, http_site.url("/slow.xml"), "--timeout", "0.5")
    assert status == 1
    assert messages(report) == [(http_site.url("/slow.xml"), "cannot fetch: timed out after 0.5 s")]


def test_the_timeout_covers_the_redirects_too(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two hops that each take 1 s at least (a dripped redirect body, then a dripped
    # sitemap): each alone fits in 1.5 s, the document does not.
    o = http_site.origin
    http_site.put("/hop.xml", b"." * 20, 302, drip=0.05, Location=f"{o}/slow.xml")
    http_site.put("/slow.xml", b"#" * 20, drip=0.05)
    status, report = validate(capsys, f"{o}/hop.xml", "--timeout", "1.5")
    assert status == 1
    assert messages(report) == [(f"{o}/hop.xml", "cannot fetch: timed out after 1.5 s")]


def test_a_sitemap_redirected_to_another_origin_is_a_fault_naming_both(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    other = StaticSite()
    try:
        other.put("/elsewhere.xml", urlset(f"<loc>{o}/a</loc>"))
        http_site.put("/robots.txt", f"Sitemap: {o}/sitemap.xml\n")
        http_site.redirect("/sitemap.xml", other.url("/elsewhere.xml"))
        status, report = validate(capsys, o)
    finally:
        other.stop()
    assert status == 1
    [(where, message)] = messages(report)
    assert where == f"{o}/sitemap.xml"
    assert message.startswith(
        f"redirected from {o}/sitemap.xml to {other.url('/elsewhere.xml')}, another origin "
        f"(named at {o}/robots.txt:1): crawlers take a sitemap's URLs only from the origin"
    )
    assert report["counts"]["urls"] == 1  # still checked


def test_urls_are_judged_by_the_functions_rules(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put(
        "/sitemap.xml",
        urlset(
            f"<loc>{o}/team/o'neill</loc>",  # a sub-delim the functions keep as it is
            f"<loc>{o}/a#top</loc>",  # line 4: a fragment the functions refuse
            f"<loc>{o}/team/O'Neill</loc>",
        ),
    )
    status, report = validate(capsys, f"{o}/sitemap.xml")
    assert status == 1
    assert messages(report) == [
        (f"{o}/sitemap.xml:4", f"<loc> has a #fragment; list the page itself: '{o}/a#top'")
    ]
    assert report["counts"]["urls"] == 3


def test_text_sitemaps_and_feeds_an_index_names_are_checked_by_the_same_rules(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o = http_site.origin
    http_site.put("/robots.txt", f"Sitemap: {o}/index.xml\nSitemap: {o}/news.rss\n")
    http_site.put(
        "/index.xml",
        sitemapindex(*(f"<loc>{o}/{name}</loc>" for name in ("a.txt", "feed.atom", "many.txt"))),
    )
    http_site.put("/a.txt", f"\ufeff{o}/x\r\n\n{o}/a b\nhttps://elsewhere.example.org/y\n{o}/x\n")
    http_site.put(
        "/feed.atom",
        f'<feed xmlns="http://www.w3.org/2005/Atom"><id>{o}/feed.atom</id><title>t</title>'
        f"<updated>2026-11-21T12:00:00Z</updated><entry><id>1</id><title>x</title>"
        f'<link rel="edit" href="{o}/edit/1"/><link href="{o}/x"/>'
        f"<updated>2026-11-21T12:00:00Z</updated></entry><entry><id>2</id><title>z</title>"
        f'<link href="https://elsewhere.example.org/z"/><updated>yesterday</updated></entry>'
        "</feed>",
    )
    http_site.put(
        "/news.rss",
        f'<rss version="2.0"><channel><title>n</title><item><link> {o}/n </link></item>'
        "</channel></rss>",
    )
    http_site.put("/many.txt", "".join(f"{o}/{n}\n" for n in range(50_001)))
    status, report = validate(capsys, o)
    assert status == 1
    faults = messages(report)
    assert (f"{o}/a.txt:5", f"duplicate URL {o}/x (first listed at {o}/a.txt:1)") in faults
    assert any(w == f"{o}/a.txt:3" and "whitespace" in m for w, m in faults)
    assert any(
        w == f"{o}/a.txt:4" or "elsewhere.example.org/y is not on the site" in m for w, m in faults
    )
    assert (f"{o}/many.txt", "50,001 URL lines; at most 50,000 are allowed") in faults
    feed = [(w, m) for w, m in faults if w.startswith(f"{o}/feed.atom")]
    assert [w for w, _ in feed] == [f"{o}/feed.atom:1", f"{o}/feed.atom:1"]
    assert "elsewhere.example.org/z is not on the site" in feed[0][1] + feed[1][1]
    assert "<lastmod> 'yesterday'" in feed[0][1] + feed[1][1]
    assert not any(w.startswith(f"{o}/news.rss") for w, _ in faults)
    assert report["counts"]["sitemaps"] == 4


def test_what_the_pipeline_serves_as_text_with_a_feed_is_clean(
    make_pipeline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = make_pipeline(SITEMAP_FORMAT="txt", FEED_ENTRIES=3)
    status, report = validate_served(pipeline, capsys)
    assert (status, report["faults"], report["warnings"]) == (0, [], [])
    assert report["counts"] == {"robots": 1, "indexes": 1, "sitemaps": 2, "urls": 5}


def test_what_a_crawled_site_says_reaches_the_terminal_escaped(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hostile robots.txt must not drive the operator's terminal: ESC, C1 and a bidi
    override are escaped in the report, readable text (é) is left as it is."""
    hostile = "/caf\u00e9-\x1b]0;owned\x07\x1b[2J-\x9b31m-\u202e.xml"
    http_site.put("/robots.txt", f"User-agent: *\nSitemap: {hostile}\n")
    status = main(["validate", http_site.origin + "/", "--json"])
    out = capsys.readouterr().out
    assert status == 1
    assert not any(char in out for char in "\x1b\x07\x9b\u202e")
    assert "caf\u00e9-\\u001b]0;owned\\u0007\\u001b[2J-\\u009b31m-\\u202e.xml" in out
    report = json.loads(out.splitlines()[-1])  # the JSON line decodes to what the site said
    assert http_site.origin + hostile in [finding["where"] for finding in report["faults"]]


def test_extensions_the_contract_refuses_are_faults_as_backfill_refuses_the_page(
    http_site: StaticSite, capsys: pytest.CaptureFixture[str]
) -> None:
    o, xhtml = http_site.origin, 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
    image = f'<image:image xmlns:image="{IMAGE_NS}"><image:loc>{{}}</image:loc></image:image>'
    link = f'<xhtml:link {xhtml} rel="alternate" hreflang="{{}}" href="{{}}"/>'
    http_site.put(
        "/sitemap.xml",
        urlset(
            f"<loc>{o}/a</loc>" + image.format("/img/a.jpg"),  # line 3: relative
            f"<loc>{o}/b</loc>" + image.format("https://cdn.example.org/my photo.jpg"),
            f"<loc>{o}/c</loc>" + link.format("de", f"{o}/de/c") + link.format("de", f"{o}/c2"),
            f"<loc>{o}/d</loc>" + link.format("fr", "/fr/d"),  # line 6: relative href
            f"<loc>{o}/e</loc>" + image.format("https://cdn.example.org/e.jpg"),
            f"<loc>{o}/f#x</loc>" + image.format("/img/f.jpg"),  # the <loc>'s fault alone
        ),
    )
    status, report = validate(capsys, f"{o}/sitemap.xml")
    found = messages(report)
    assert status == 1
    assert [(where.rpartition(":")[2], message.split(":")[:2]) for where, message in found] == [
        ("3", ["the page is refused", " image_not_absolute"]),
        ("4", ["the page is refused", " image_whitespace"]),
        ("5", ["the page is refused", " invalid_alternate"]),
        ("6", ["the page is refused", " alternate_not_absolute"]),
        ("8", ["<loc> has a #fragment; list the page itself", " '" + o.partition(":")[0]]),
    ]
    assert "hreflang de is given two hrefs" in found[2][1]
