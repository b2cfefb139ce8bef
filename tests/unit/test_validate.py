"""validate's checks on documents, without sockets."""

from __future__ import annotations

from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.crawl import ROBOTS, Document, load_document, sitemap_lines
from sitemap_updater.ops.fetch import Fetched
from sitemap_updater.ops.validate import MAX_SCHEMA_ERRORS, Checker, Mapping
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
    mapping = Mapping(SITE, "http://127.0.0.1:8080")
    assert mapping.fetch_url("https://www.example.com/sitemap.xml?x=1") == (
        "http://127.0.0.1:8080/sitemap.xml?x=1"
    )
    assert mapping.fetch_url("https://cdn.example.org/s.xml") == "https://cdn.example.org/s.xml"
    assert mapping.fetch_url("ftp://www.example.com/s.xml") is None


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
