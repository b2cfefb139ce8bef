"""The human view: the processing instruction in every document, schema validity kept, the
byte limit first; the XSL itself (run here by libxslt through lxml, the engine Chromium
uses too) turning an index and a shard, extensions included, into tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from lxml import html as lxml_html

from sitemap_updater.cli import main
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import LimitExceeded
from sitemap_updater.domain.render import IndexEntry, render_index
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.stylesheet import (
    STYLESHEET_HREF,
    STYLESHEET_KEY,
    prologue,
    stylesheet_bytes,
)
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.build import render_site
from sitemap_updater.ops.pages import Record
from sitemap_updater.schemas import sitemap_schema
from tests.rendering import render_shard, render_urlset

SITE = Site.parse("https://www.example.com")
DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'
PI = b'<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>\n'
ENTRIES = [
    SitemapEntry("https://www.example.com/a", "2026-11-20", "daily", "0.5"),
    SitemapEntry("https://www.example.com/b?x=1&y=2"),
]
INDEX = [
    IndexEntry("https://www.example.com/sitemap-pages-00001.xml", "2026-11-21T10:00:00Z"),
    IndexEntry("https://www.example.com/sitemap-pages-00002.xml", None),
]
EXTENDED_SHARD = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
 xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
 xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
 xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
 xmlns:xhtml="http://www.w3.org/1999/xhtml">
<url><loc>https://www.example.com/en/story</loc><lastmod>2026-11-21</lastmod>
 <image:image><image:loc>https://cdn.example.net/1.jpg</image:loc></image:image>
 <image:image><image:loc>https://cdn.example.net/2.jpg</image:loc></image:image>
 <video:video><video:thumbnail_loc>https://cdn.example.net/t.jpg</video:thumbnail_loc>
  <video:title>A video</video:title><video:description>About it</video:description>
  <video:content_loc>https://cdn.example.net/v.mp4</video:content_loc></video:video>
 <news:news><news:publication><news:name>Example News</news:name>
  <news:language>en</news:language></news:publication>
  <news:publication_date>2026-11-21</news:publication_date><news:title>Story</news:title>
 </news:news>
 <xhtml:link rel="alternate" hreflang="en" href="https://www.example.com/en/story"/>
 <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/story"/>
 <xhtml:link rel="alternate" hreflang="x-default" href="https://www.example.com/story"/>
</url>
<url><loc>https://www.example.com/plain</loc></url>
</urlset>
"""


def transform(document: bytes) -> Any:
    """The page a browser shows: the document through the shipped XSL."""
    xslt = etree.XSLT(etree.fromstring(stylesheet_bytes()))
    result = xslt(etree.fromstring(document))
    return lxml_html.fromstring(str(result))


def valid(document: bytes) -> Any:
    root = etree.fromstring(document)
    schema = sitemap_schema()
    assert schema.validate(root), schema.error_log
    return root


# --- the processing instruction -----------------------------------------------------------------


def test_the_instruction_follows_the_declaration_and_nothing_else_changes() -> None:
    plain = render_urlset(ENTRIES)
    viewed = render_urlset(ENTRIES, stylesheet=STYLESHEET_HREF)
    assert viewed.startswith(DECLARATION + PI + b"<urlset ")
    assert viewed == DECLARATION + PI + plain[len(DECLARATION) :]
    index = render_index(INDEX, stylesheet=STYLESHEET_HREF)
    assert index == DECLARATION + PI + render_index(INDEX)[len(DECLARATION) :]


def test_documents_with_the_instruction_stay_schema_valid() -> None:
    for document in (
        render_urlset(ENTRIES, stylesheet=STYLESHEET_HREF),
        render_index(INDEX, stylesheet=STYLESHEET_HREF),
    ):
        root = valid(document)
        instruction = root.getprevious()
        assert instruction.target == "xml-stylesheet"
        assert instruction.get("type") == "text/xsl"
        assert instruction.get("href") == "/sitemap.xsl"


def test_without_a_stylesheet_the_documents_are_as_before() -> None:
    assert b"xml-stylesheet" not in render_urlset(ENTRIES)
    assert b"xml-stylesheet" not in render_index(INDEX)


@pytest.mark.parametrize(
    "href", ["sitemap.xsl", '/a"b.xsl', "/a b.xsl", "/a?>.xsl", "/a&b", "//evil.example/x"]
)
def test_only_plain_root_relative_hrefs(href: str) -> None:
    with pytest.raises(ValueError, match="root-relative"):
        prologue(0, href, None)


def test_the_byte_limit_wins_over_the_view() -> None:
    """A shard placed before the view was turned on may be full to the byte: it keeps its
    bytes (no instruction) rather than break the limit; with room, it gets the view."""
    plain = render_urlset(ENTRIES)
    full = Limits(max_urls_per_shard=10, max_shard_bytes=len(plain))
    assert render_shard(ENTRIES, full, stylesheet=STYLESHEET_HREF) == plain
    roomy = Limits(max_urls_per_shard=10, max_shard_bytes=len(plain) + len(PI))
    assert render_shard(ENTRIES, roomy, stylesheet=STYLESHEET_HREF).startswith(DECLARATION + PI)
    with pytest.raises(LimitExceeded):  # the entries themselves still have to fit
        render_shard(ENTRIES, Limits(max_shard_bytes=len(plain) - 1), stylesheet=STYLESHEET_HREF)


# --- the stylesheet -----------------------------------------------------------------------------


def test_the_stylesheet_ships_in_the_package_as_xslt_1() -> None:
    root = etree.fromstring(stylesheet_bytes())
    assert root.tag == "{http://www.w3.org/1999/XSL/Transform}stylesheet"
    assert root.get("version") == "1.0"
    source = Path(__file__).parents[2] / "functions/sitemap_updater/assets" / STYLESHEET_KEY
    assert source.read_bytes() == stylesheet_bytes()


def test_an_index_becomes_a_table_of_its_sitemaps() -> None:
    page = transform(render_index(INDEX, stylesheet=STYLESHEET_HREF))
    assert page.findtext(".//h1") == "Sitemap index"
    assert page.get_element_by_id("sitemap-count").text == "2"
    rows = page.xpath("//table[@id='sitemaps']/tbody/tr")
    assert [row.xpath("td[2]/a/@href")[0] for row in rows] == [entry.loc for entry in INDEX]
    assert [row.xpath("string(td[3])") for row in rows] == ["2026-11-21T10:00:00Z", ""]


def test_a_shard_becomes_a_table_of_its_urls() -> None:
    page = transform(render_urlset(ENTRIES, stylesheet=STYLESHEET_HREF))
    assert page.findtext(".//h1") == "Sitemap"
    assert page.get_element_by_id("url-count").text == "2"
    header = [th.text_content() for th in page.xpath("//table[@id='urls']/thead/tr/th")]
    assert header == ["#", "URL", "Last modified", "Change frequency", "Priority"]
    rows = [
        [td.text_content().strip() for td in row.xpath("td")]
        for row in page.xpath("//table[@id='urls']/tbody/tr")
    ]
    assert rows == [
        ["1", "https://www.example.com/a", "2026-11-20", "daily", "0.5"],
        ["2", "https://www.example.com/b?x=1&y=2", "", "", ""],
    ]
    links = page.xpath("//table[@id='urls']//a/@href")
    assert links == [entry.url for entry in ENTRIES]
    assert page.xpath("//p[@class='summary']/a/@href") == ["/sitemap.xml"]


def test_a_shard_with_extensions_counts_them_per_url() -> None:
    valid(EXTENDED_SHARD)  # what the extended renderer will write is valid
    page = transform(EXTENDED_SHARD)
    header = [th.text_content() for th in page.xpath("//table[@id='urls']/thead/tr/th")]
    assert header[5:] == ["Images", "Videos", "Alternates", "News"]
    rows = [
        [td.text_content().strip() for td in row.xpath("td")]
        for row in page.xpath("//table[@id='urls']/tbody/tr")
    ]
    assert rows[0][5:] == ["2", "1", "3", "1"]
    assert rows[1][5:] == ["0", "0", "0", "0"]
    counts = {
        name: page.get_element_by_id(f"{name}-count").text
        for name in ("url", "image", "video", "alternate", "news")
    }
    assert counts == {"url": "2", "image": "2", "video": "1", "alternate": "3", "news": "1"}


def test_only_http_urls_become_links() -> None:
    hostile = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>javascript:alert(document.domain)</loc></url></urlset>"
    )
    page = transform(hostile)
    assert page.xpath("//a[starts-with(@href, 'javascript')]") == []
    assert "javascript:alert" in page.xpath("string(//table[@id='urls']/tbody/tr/td[2])")


# --- build ---------------------------------------------------------------------------------------


def records(*paths: str) -> list[Record]:
    return [Record(f"t#{n}", {"url": f"https://www.example.com{p}"}) for n, p in enumerate(paths)]


def test_build_with_the_stylesheet_writes_it_and_references_it() -> None:
    built = render_site(records("/a", "/b"), SITE, Limits(), compress=False, stylesheet=True)
    assert built.files[STYLESHEET_KEY] == stylesheet_bytes()
    for key in ("sitemap.xml", "sitemap-pages-00001.xml"):
        assert built.files[key].startswith(DECLARATION + PI)
        valid(built.files[key])
    plain = render_site(records("/a", "/b"), SITE, Limits(), compress=False)
    assert STYLESHEET_KEY not in plain.files
    assert not any(b"xml-stylesheet" in body for body in plain.files.values())


def test_build_stylesheet_flag_and_a_later_build_without_it(tmp_path: Path) -> None:
    pages = tmp_path / "pages.jsonl"
    pages.write_text('{"url": "https://www.example.com/a"}\n', encoding="utf-8")
    out = tmp_path / "site"
    common = [str(pages), "--site-url", "https://www.example.com", "--out", str(out)]
    assert main(["build", *common, "--stylesheet"]) == 0
    assert (out / STYLESHEET_KEY).read_bytes() == stylesheet_bytes()
    assert (out / "sitemap.xml").read_bytes().startswith(DECLARATION + PI)
    assert main(["build", *common]) == 0  # the view turned off: its file goes too
    assert not (out / STYLESHEET_KEY).exists()
    assert b"xml-stylesheet" not in (out / "sitemap.xml").read_bytes()
