"""The crawler's reading rules and walk order, without sockets."""

from __future__ import annotations

import gzip
import zlib
from functools import partial

import pytest

from sitemap_updater.ops.crawl import (
    INDEX,
    ROBOTS,
    UNKNOWN,
    UNREADABLE,
    URLSET,
    Walk,
    load_document,
    robots_url_for,
    sitemap_lines,
)
from sitemap_updater.ops.fetch import Fetched, fetch, gunzip
from tests.httpsite import StaticSite, sitemapindex, urlset

ORIGIN = "https://www.example.com"


def ok(url: str, body: str | bytes) -> Fetched:
    return Fetched(url, url, 200, body.encode() if isinstance(body, str) else body)


class FakeWeb:
    def __init__(self, pages: dict[str, str], redirects: dict[str, str] | None = None):
        self.pages = pages
        self.redirects = redirects or {}
        self.asked: list[str] = []

    def __call__(self, url: str) -> Fetched:
        self.asked.append(url)
        final = self.redirects.get(url, url)
        if final in self.pages:
            body = self.pages[final].encode()
            return Fetched(url, final, 200, body)
        return Fetched(url, final, 404)


def test_sitemap_lines_are_found_in_any_case_with_comments_bom_and_crlf() -> None:
    body = (
        b"\xef\xbb\xbfSitemap: https://www.example.com/a.xml\r\n"
        b"User-agent: *\r\n"
        b"  SITEMAP :/b.xml # ours\r\n"
        b"# Sitemap: https://www.example.com/commented.xml\n"
        b"sitemap:\n"
        b"Sitemaps: https://www.example.com/plural.xml\r"  # Google reads any "sitemap..." key
        b"Sitemap /e.xml\n"  # and two words without a colon
        b"Sitemap /not /a-directive.xml\n"
        b"\x0bSitemap:\x0c/c.xml\x0b\n"
        b"Sitemap: /d.xml and more\n"
    )
    lines = sitemap_lines(body, f"{ORIGIN}/robots.txt")
    assert [(line.line, line.value, line.url) for line in lines] == [
        (1, "https://www.example.com/a.xml", "https://www.example.com/a.xml"),
        (3, "/b.xml", "https://www.example.com/b.xml"),
        (5, "", ""),
        (6, "https://www.example.com/plural.xml", "https://www.example.com/plural.xml"),
        (7, "/e.xml", "https://www.example.com/e.xml"),
        (9, "/c.xml", "https://www.example.com/c.xml"),
        (10, "/d.xml and more", "https://www.example.com/d.xml and more"),
    ]


@pytest.mark.parametrize(
    ("url", "robots"),
    [
        ("https://www.example.com", "https://www.example.com/robots.txt"),
        ("https://www.example.com/", "https://www.example.com/robots.txt"),
        ("http://127.0.0.1:8080/robots.txt", "http://127.0.0.1:8080/robots.txt"),
        ("https://www.example.com/sitemap.xml", None),
        ("https://www.example.com/?page=1", None),
    ],
)
def test_where_a_walk_starts(url: str, robots: str | None) -> None:
    assert robots_url_for(url) == robots


def test_entries_are_read_by_local_name_stripped_with_their_lines() -> None:
    body = (
        "<?xml version='1.0'?>\n<urlset>\n<!-- a comment -->\n"
        "<url><loc>\n  https://www.example.com/a  \n</loc><lastmod>2026-11-20</lastmod>"
        '<image:image xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        "<image:loc>https://cdn.example.com/a.jpg</image:loc></image:image></url>\n"
        "<url><priority>0.5</priority></url>\n</urlset>"
    )
    document = load_document("u", ok("u", body))
    assert (document.error, document.kind, document.sitemaps) == (None, URLSET, [])
    assert [(u.loc, u.lastmod, u.priority, u.line) for u in document.urls] == [
        ("https://www.example.com/a", "2026-11-20", None, 4),
        (None, None, "0.5", 7),  # the <loc> above spans three lines
    ]


def test_an_rss_item_s_page_is_its_own_link_not_an_atom_link_beside_it() -> None:
    body = (
        '<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom"><channel><title>n</title>'
        '<item><atom:link rel="self" href="https://www.example.com/feed"/>'
        "<link>https://www.example.com/a</link></item></channel></rss>"
    )
    document = load_document("u", ok("u", body))
    assert [u.loc for u in document.urls] == ["https://www.example.com/a"]


@pytest.mark.parametrize(
    "entity", ['<!ENTITY e SYSTEM "file:///etc/passwd">', '<!ENTITY e "https://www.example.com">']
)
def test_a_document_declaring_a_doctype_is_unreadable_and_its_entities_never_read(
    entity: str,
) -> None:
    """Left unexpanded, an entity would make a <loc> other than the one meant (and the
    schema check cannot take it): the document is refused, with its reason."""
    body = (
        f'<?xml version="1.0"?><!DOCTYPE urlset [{entity}]>'
        "<urlset><url><loc>&e;/a</loc></url></urlset>"
    ).encode()
    document = load_document("u", ok("u", body))
    assert (document.kind, document.urls) == (UNREADABLE, [])
    assert document.error == "declares a DOCTYPE: a sitemap has none"


def test_a_value_is_its_whole_text_around_comments_and_instructions() -> None:
    body = urlset("<loc>https://www.example.com/a<!-- x -->bc<?pi y?>d</loc>")
    (entry,) = load_document("u", ok("u", body)).urls
    assert entry.loc == "https://www.example.com/abcd"


def test_documents_say_what_they_are_or_why_they_cannot_be_read() -> None:
    assert load_document("u", ok("u", urlset("<loc>x</loc>"))).kind == URLSET
    assert load_document("u", ok("u", sitemapindex("<loc>x</loc>"))).kind == INDEX
    assert load_document("u", ok("u", "<svg/>")).kind == UNKNOWN
    html = load_document("u", ok("u", "<html/>"))
    assert (html.kind, html.error) == (UNREADABLE, "an HTML page, not a sitemap")
    broken = load_document("u", ok("u", "<urlset><url>"))
    assert broken.kind == UNREADABLE
    assert broken.error is not None
    assert broken.error.startswith("not well-formed XML")
    wide = load_document("u", ok("u", ("\ufeff" + urlset("<loc>x</loc>")).encode("utf-16-le")))
    assert (wide.kind, wide.error) == (UNREADABLE, "encoded as UTF-16: the protocol asks for UTF-8")
    gone = load_document("u", Fetched("u", "u", 410))
    assert (gone.kind, gone.error) == (UNREADABLE, "HTTP 410")


def test_a_walk_goes_breadth_first_in_order_once_per_url_and_not_forever() -> None:
    web = FakeWeb(
        {
            f"{ORIGIN}/robots.txt": "Sitemap: /index.xml\nSitemap: /direct.xml\n",
            f"{ORIGIN}/index.xml": sitemapindex(
                f"<loc>{ORIGIN}/a.xml</loc>",
                f"<loc>{ORIGIN}/nested.xml</loc>",
                f"<loc>{ORIGIN}/index.xml</loc>",  # itself: no loop
                f"<loc>{ORIGIN}/a.xml</loc>",  # twice: fetched once
            ),
            f"{ORIGIN}/nested.xml": sitemapindex(f"<loc>{ORIGIN}/b.xml</loc>"),
            f"{ORIGIN}/a.xml": urlset(f"<loc>{ORIGIN}/1</loc>"),
            f"{ORIGIN}/b.xml": urlset(f"<loc>{ORIGIN}/2</loc>"),
            f"{ORIGIN}/direct.xml": urlset(f"<loc>{ORIGIN}/3</loc>"),
        }
    )
    walk = Walk(fetch=web, workers=3)
    documents = list(walk.run(ORIGIN))
    assert [(d.url.removeprefix(ORIGIN), d.kind, d.depth) for d in documents] == [
        ("/robots.txt", ROBOTS, 0),
        ("/index.xml", INDEX, 0),
        ("/direct.xml", URLSET, 0),
        ("/a.xml", URLSET, 1),
        ("/nested.xml", INDEX, 1),
        ("/b.xml", URLSET, 2),
    ]
    assert documents[3].referrer == f"{ORIGIN}/index.xml:3"
    assert sorted(web.asked) == sorted(set(web.asked))


def test_a_walk_stops_at_its_budget_and_follows_only_what_it_may() -> None:
    index = sitemapindex(*(f"<loc>{ORIGIN}/s{n}.xml</loc>" for n in range(10)))
    web = FakeWeb({f"{ORIGIN}/i.xml": index} | {f"{ORIGIN}/s{n}.xml": urlset() for n in range(10)})
    walk = Walk(fetch=web, max_documents=4)
    assert len(list(walk.run(f"{ORIGIN}/i.xml"))) == 4
    assert walk.truncated

    picky = Walk(fetch=FakeWeb(web.pages), accept=lambda _d, e: (e.loc or "").endswith("s1.xml"))
    assert [d.url for d in picky.run(f"{ORIGIN}/i.xml")] == [f"{ORIGIN}/i.xml", f"{ORIGIN}/s1.xml"]


def test_a_same_origin_walk_leaves_other_origins_and_says_why() -> None:
    other = "https://cdn.example.org"
    web = FakeWeb(
        {
            f"{ORIGIN}/robots.txt": f"Sitemap: {ORIGIN}/index.xml\n",
            f"{ORIGIN}/index.xml": sitemapindex(
                f"<loc>{ORIGIN}/a.xml</loc>",
                f"<loc>{other}/b.xml</loc>",  # elsewhere: not followed
                f"<loc>{other}/b.xml</loc>",  # reported once
            ),
            f"{ORIGIN}/a.xml": urlset(f"<loc>{ORIGIN}/1</loc>"),
            f"{other}/b.xml": urlset(f"<loc>{ORIGIN}/2</loc>"),
        }
    )
    documents = list(Walk(fetch=web, same_origin=True).run(ORIGIN))
    assert [(d.url, d.kind, d.referrer, d.error) for d in documents] == [
        (f"{ORIGIN}/robots.txt", ROBOTS, None, None),
        (f"{ORIGIN}/index.xml", INDEX, f"{ORIGIN}/robots.txt:1", None),
        (
            f"{other}/b.xml",
            UNREADABLE,
            f"{ORIGIN}/index.xml:4",
            "on another origin than the index naming it; not followed",
        ),
        (f"{ORIGIN}/a.xml", URLSET, f"{ORIGIN}/index.xml:3", None),
    ]
    assert f"{other}/b.xml" not in web.asked

    # Without same_origin (validate's walk: it reports instead) both are read.
    everything = list(Walk(fetch=FakeWeb(web.pages)).run(ORIGIN))
    assert [d.kind for d in everything] == [ROBOTS, INDEX, URLSET, URLSET]


def test_a_same_origin_fetch_leaves_redirects_to_another_origin(http_site: StaticSite) -> None:
    other = StaticSite()
    try:
        other.put("/robots.txt", f"Sitemap: {http_site.url('/a.xml')}\n")
        other.put("/c.xml", urlset(f"<loc>{ORIGIN}/3</loc>"))
        http_site.redirect("/robots.txt", other.url("/robots.txt"))
        http_site.put("/index.xml", sitemapindex(f"<loc>{http_site.url('/moved.xml')}</loc>"))
        http_site.redirect("/moved.xml", other.url("/c.xml"))
        stay = partial(fetch, same_origin=True)
        robots = list(Walk(fetch=stay, same_origin=True).run(http_site.origin))
        index = list(Walk(fetch=stay, same_origin=True).run(http_site.url("/index.xml")))
        asked_elsewhere = list(other.requests)
    finally:
        other.stop()
    not_followed = "on another origin; not followed"
    assert [(d.kind, d.error) for d in robots] == [
        (ROBOTS, f"redirected to {other.url('/robots.txt')}, {not_followed}"),
        (UNREADABLE, "HTTP 404"),  # then /sitemap.xml, where sitemaps usually are
    ]
    assert [(d.url, d.kind, d.referrer, d.error) for d in index] == [
        (http_site.url("/index.xml"), INDEX, None, None),
        (
            http_site.url("/moved.xml"),
            UNREADABLE,
            f"{http_site.url('/index.xml')}:3",
            f"redirected to {other.url('/c.xml')}, {not_followed}",
        ),
    ]
    assert asked_elsewhere == []


def test_gunzip_reads_every_member_within_one_limit() -> None:
    two = gzip.compress(b"<urlset>a") + gzip.compress(b"b</urlset>")
    assert gunzip(two, 1000) == (b"<urlset>ab</urlset>", False)
    assert gunzip(two + b"\0" * 512, 1000) == (b"<urlset>ab</urlset>", False)  # gzip's padding
    assert gunzip(two, 12) == (b"<urlset>ab</", True)  # the limit counts all members
    bombs = gzip.compress(b" " * 600) * 3
    assert gunzip(bombs, 1000) == (b" " * 1000, True)
    with pytest.raises(zlib.error):
        gunzip(two + gzip.compress(b"more")[:-6], 1000)  # a cut last member
    assert gunzip(two + gzip.compress(b"more")[:-6], 1000, complete=False) == (
        b"<urlset>ab</urlset>more",
        True,
    )
    with pytest.raises(zlib.error):
        gunzip(two + b"trailing garbage", 1000)


def test_gunzip_stops_at_the_limit_and_rejects_a_cut_stream() -> None:
    bomb = gzip.compress(b" " * 1_000_000)
    assert gunzip(bomb, 1000) == (b" " * 1000, True)
    assert gunzip(gzip.compress(b"abc"), 10) == (b"abc", False)
    with pytest.raises(zlib.error):
        gunzip(gzip.compress(b"abc" * 1000)[:-10], 10_000)


def test_only_http_urls_are_fetched() -> None:
    fetched = fetch("file:///etc/passwd")
    assert fetched.status is None
    assert fetched.error == "not an http(s) URL: 'file:///etc/passwd'"
    assert fetched.body == b""
