"""validate's checks on documents, without sockets."""

from __future__ import annotations

from functools import partial
from xml.sax.saxutils import escape

import pytest

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.urls import Site, normalise_url
from sitemap_updater.ops.crawl import ROBOTS, Document, load_document, sitemap_lines
from sitemap_updater.ops.fetch import Fetched
from sitemap_updater.ops.validate import MAX_SCHEMA_ERRORS, Checker, fetch_url
from tests.httpsite import urlset

SITE = Site.parse("https://www.example.com")


def check(body: str, url: str = "https://www.example.com/s.xml") -> Checker:
    checker = Checker(SITE)
    checker.check(load_document(url, Fetched(url, url, 200, body.encode())))
    return checker


def test_a_clean_urlset_has_no_findings_and_counts_its_urls() -> None:
    checker = check(urlset("<loc>https://www.example.com/a</loc>"))
    assert (checker.faults, checker.warnings) == ([], [])
    assert checker.counts["urls"] == checker.counts["sitemaps"] == 1


def test_a_urlset_outside_the_namespace_is_one_fault_not_a_cascade() -> None:
    checker = check("<urlset><url><loc>https://www.example.com/a</loc></url></urlset>")
    assert [f.message for f in checker.faults] == [
        "<urlset> is not in the sitemaps.org namespace http://www.sitemaps.org/schemas/sitemap/0.9"
    ]


def test_schema_faults_are_capped_per_document() -> None:
    entries = [f"<loc>https://www.example.com/{n}</loc><priority>9</priority>" for n in range(30)]
    checker = check(urlset(*entries))
    schema = [f for f in checker.faults if f.message.startswith("schema:")]
    assert len(schema) == MAX_SCHEMA_ERRORS + 1
    assert schema[0].message == "schema: 10 more errors"  # no line: first


def test_the_site_port_and_scheme_are_part_of_the_origin() -> None:
    checker = check(
        urlset(
            "<loc>https://www.example.com:443/a</loc>",
            "<loc>http://www.example.com/b</loc>",
            "<loc>https://www.example.com:8443/c</loc>",
            "<loc>https://WWW.EXAMPLE.COM/d</loc>",
        )
    )
    assert [f.where for f in checker.faults] == [
        "https://www.example.com/s.xml:4",
        "https://www.example.com/s.xml:5",
    ]


def test_a_served_copy_is_fetched_from_where_it_is_served() -> None:
    served = partial(fetch_url, SITE, "http://127.0.0.1:8080")
    assert served("https://www.example.com/sitemap.xml?x=1") == (
        "http://127.0.0.1:8080/sitemap.xml?x=1"
    )
    assert served("https://cdn.example.org/s.xml") == "https://cdn.example.org/s.xml"
    assert served("ftp://www.example.com/s.xml") is None


def test_a_redirect_to_another_origin_is_named_with_both_urls() -> None:
    asked = "https://www.example.com/s.xml"
    body = urlset("<loc>https://www.example.com/a</loc>").encode()
    checker = Checker(SITE)
    elsewhere = Fetched(asked, "https://other.example.org/s.xml", 200, body)
    checker.check(load_document(asked, elsewhere, "https://www.example.com/robots.txt:2"))
    assert [(f.where, f.message) for f in checker.faults] == [
        (
            asked,
            f"redirected from {asked} to https://other.example.org/s.xml, another origin "
            "(named at https://www.example.com/robots.txt:2): crawlers take a sitemap's URLs "
            "only from the origin that serves it (unless robots.txt there names it), so they "
            "ignore these",
        )
    ]

    onto = Checker(SITE)  # from another origin onto the site: followed, a warning
    upgraded = Fetched("http://www.example.com/s.xml", asked, 200, body)
    onto.check(load_document("http://www.example.com/s.xml", upgraded))
    assert onto.faults == []
    assert [w.message for w in onto.warnings] == [
        f"redirected from http://www.example.com/s.xml to {asked}, another origin; "
        "it ends on the site"
    ]

    same = Checker(SITE)  # within the origin: nothing to say
    same.check(load_document(asked, Fetched(asked, f"{asked}?v=2", 200, body)))
    assert (same.faults, same.warnings) == ([], [])


def test_a_robots_txt_redirected_elsewhere_is_a_warning() -> None:
    robots = "https://www.example.com/robots.txt"
    fetched = Fetched(robots, "https://other.example.org/robots.txt", 200, b"Sitemap: /s.xml\n")
    document = Document(robots, None, fetched, kind=ROBOTS)
    document.sitemap_lines = sitemap_lines(fetched.body, robots)
    checker = Checker(SITE)
    checker.check(document)
    first = checker.warnings[0]  # then: the relative Sitemap line
    assert (first.where, first.message) == (
        robots,
        f"redirected from {robots} to https://other.example.org/robots.txt, another origin: "
        "crawlers follow it and apply the rules found there to this host",
    )


def robots(body: str, site: Site = SITE) -> Checker:
    url = f"{site.origin}/robots.txt"
    fetched = Fetched(url, url, 200, body.encode())
    document = Document(url, None, fetched, kind=ROBOTS)
    document.sitemap_lines = sitemap_lines(fetched.body, url)
    checker = Checker(site)
    checker.check(document)
    return checker


@pytest.mark.parametrize(
    ("site", "loc"),
    [
        ("https://www.example.com", "https://www.example.com/o'neill"),  # RFC 3986 sub-delims
        ("https://www.example.com", "https://www.example.com/a(b)*c!$,;=:@"),
        ("https://www.example.com", "https://www.example.com/caf%c3%a9"),  # escapes in any case
        ("https://cdn_1.example.com", "https://cdn_1.example.com/a"),  # '_' in a DNS label
    ],
)
def test_a_loc_the_functions_accept_as_it_is_is_clean(site: str, loc: str) -> None:
    url = f"{site}/s.xml"
    checker = Checker(Site.parse(site))
    checker.check(load_document(url, Fetched(url, url, 200, urlset(f"<loc>{loc}</loc>").encode())))
    assert (checker.faults, checker.warnings) == ([], [])


@pytest.mark.parametrize(
    ("loc", "message"),
    [
        ("https://user@www.example.com/a", "<loc> holds a user name or password"),
        ("https://www.example.com/a#top", "<loc> has a #fragment; list the page itself"),
        ("https://www.example.com/a/../b", "<loc> path holds a '.' or '..' segment"),
        ('https://www.example.com/a"b', "<loc> holds a double quote"),
        ("https://www.example.com/a\\b", "<loc> holds a backslash"),
        ("https://www.example.com/a\u200eb", "<loc> holds bidirectional control U+200E"),
        ("https://www.example.com/a b", "<loc> holds whitespace at 25"),
    ],
)
def test_a_loc_the_functions_refuse_is_a_fault_with_their_reason(loc: str, message: str) -> None:
    checker = check(urlset(f"<loc>{escape(loc)}</loc>"))
    assert [(f.where, f.message) for f in checker.faults] == [
        ("https://www.example.com/s.xml:3", f"{message}: {loc!r}")
    ]
    with pytest.raises(InvalidEvent) as refused:  # the same words as the ingest function's
        normalise_url(loc, SITE)
    assert refused.value.detail.removeprefix("url ") == message.removeprefix("<loc> ")


def test_a_loc_the_functions_would_escape_is_a_fault_naming_its_escaped_form() -> None:
    checker = check(
        urlset("<loc>https://www.example.com/a|b</loc>", "<loc>https://www.example.com/é</loc>")
    )
    assert [f.message for f in checker.faults] == [
        "<loc> holds characters that must be percent-encoded: 'https://www.example.com/a|b' "
        "(escaped: https://www.example.com/a%7Cb)",
        "<loc> holds 'é', which must be percent-encoded (UTF-8): 'https://www.example.com/é'",
    ]


def test_a_url_listed_twice_is_found_in_any_spelling_of_it() -> None:
    checker = check(
        urlset(
            "<loc>https://www.example.com/a</loc>",
            "<loc>HTTPS://WWW.EXAMPLE.COM:443/a</loc>",
        )
    )
    assert [(f.where, f.message) for f in checker.faults] == [
        (
            "https://www.example.com/s.xml:4",
            "duplicate URL HTTPS://WWW.EXAMPLE.COM:443/a (first listed at "
            "https://www.example.com/s.xml:3)",
        )
    ]


def test_sitemap_lines_are_judged_by_the_domains_url_rules() -> None:
    checker = robots(
        "Sitemap: https://www.example.com/o'neill.xml\n"
        "Sitemap: https://cdn_1.example.com/s.xml\n"
        "Sitemap: https://www.example.com/site map.xml\n"
        "Sitemap: HTTPS://WWW.EXAMPLE.COM/o'neill.xml\n"
    )
    robots_txt = "https://www.example.com/robots.txt"
    assert [(f.where, f.message) for f in checker.faults] == [
        (
            f"{robots_txt}:3",
            "Sitemap: holds whitespace at 28: 'https://www.example.com/site map.xml'",
        )
    ]
    assert [(w.where, w.message) for w in checker.warnings] == [
        (
            f"{robots_txt}:2",
            "Sitemap URL https://cdn_1.example.com/s.xml is on another origin than the site",
        ),
        (f"{robots_txt}:4", "Sitemap URL https://WWW.EXAMPLE.COM/o'neill.xml is given twice"),
    ]


def test_sitemap_lines_are_read_as_the_domain_reads_them() -> None:
    # The domain's one rule: \v and \f are whitespace; words after the URL are part of it.
    checker = robots(
        "\vSitemap:\f https://www.example.com/s.xml\n"
        "Sitemap: https://www.example.com/t.xml # comment\n"
        "Sitemap: https://www.example.com/u.xml more\n"
    )
    assert [(f.where, f.message) for f in checker.faults] == [
        (
            "https://www.example.com/robots.txt:3",
            "Sitemap: holds whitespace at 29: 'https://www.example.com/u.xml more'",
        )
    ]
    assert checker.warnings == []
