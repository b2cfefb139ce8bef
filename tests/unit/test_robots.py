"""robots.txt is the owner's: we edit only our own Sitemap lines (DESIGN.md invariant 8)."""

from __future__ import annotations

import re
from collections import Counter
from urllib.robotparser import RobotFileParser

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from protego import Protego

from sitemap_updater.domain.robots import (
    MAX_ROBOTS_BYTES,
    default_robots,
    own_path,
    with_sitemaps,
)
from sitemap_updater.domain.sharding import index_key
from sitemap_updater.domain.urls import Site

SITE = Site.parse("https://www.example.com")
S1 = SITE.url_for(index_key(0))
S2 = SITE.url_for(index_key(1))
S3 = SITE.url_for(index_key(2))
BOM = b"\xef\xbb\xbf"
OWNER = b"User-agent: *\nDisallow: /private\n"


def line(url: str, ending: bytes = b"\n") -> bytes:
    return b"Sitemap: " + url.encode() + ending


def robotparser_sitemaps(data: bytes) -> list[str]:
    parser = RobotFileParser()
    parser.parse(data.decode("utf-8", "replace").splitlines())
    return parser.site_maps() or []  # None, not [], when there are none


def protego_sitemaps(data: bytes) -> list[str]:
    return list(Protego.parse(data.decode("utf-8", "replace")).sitemaps)


# Google's reading: a key starting "sitemap" or "site-map" up to the first colon, or, with
# no colon, a first word of exactly two.
_ORACLE = re.compile(
    rb"[ \t\x0b\x0c]*site-?map(?:[^:#\r\n]*:([^#\r\n]*)"
    rb"|[^ \t:#\r\n]*[ \t]+([^ \t\x0b\x0c:#\r\n]+)[ \t\x0b\x0c]*(?:#[^\r\n]*)?[\r\n]*$)",
    re.I,
)
_HOST = re.compile(rb"\s*host\s*:", re.I)


def is_own_sitemap_url(value: str, site: Site) -> bool:
    return own_path(value, site) is not None


def own_lines(data: bytes) -> list[int]:
    """Indexes of the lines that are our Sitemap directives (an independent reading)."""
    found = []
    for number, text in enumerate(data.splitlines(keepends=True)):
        body = text.removeprefix(BOM) if number == 0 else text
        match = _ORACLE.match(body)
        value = (match.group(1) or match.group(2) or b"").strip() if match else b""
        value = value.decode("utf-8", "replace")
        if match and is_own_sitemap_url(value, SITE):
            found.append(number)
    return found


def without_own_lines(data: bytes) -> bytes:
    """``data`` less our lines; a CR goes between a CR ending and a blank LF line they parted."""
    drop = set(own_lines(data))
    kept: list[bytes] = []
    for number, text in enumerate(data.splitlines(keepends=True)):
        if number not in drop:
            if kept and kept[-1].endswith(b"\r") and text.startswith(b"\n"):
                kept.append(b"\r")
            kept.append(text)
    return b"".join(kept)


def host_lines(data: bytes) -> int:
    return sum(1 for t in data.splitlines() if _HOST.match(t))


def test_max_robots_bytes_is_500_kib() -> None:
    assert MAX_ROBOTS_BYTES == 500 * 1024


# --- default file ---------------------------------------------------------------------


def test_default_robots_without_sitemaps() -> None:
    assert default_robots([]) == b"User-agent: *\nDisallow:\n"


def test_default_robots_lists_sitemaps_after_a_blank_line() -> None:
    assert default_robots([S1, S2]) == (
        b"User-agent: *\nDisallow:\n\n"
        b"Sitemap: https://www.example.com/sitemap.xml\n"
        b"Sitemap: https://www.example.com/sitemap-index-2.xml\n"
    )


def test_default_robots_allows_everything_and_parsers_read_the_sitemaps() -> None:
    data = default_robots([S1, S2, S3])
    parser = RobotFileParser()
    parser.parse(data.decode().splitlines())
    assert parser.can_fetch("Googlebot", "https://www.example.com/any/page")
    assert robotparser_sitemaps(data) == [S1, S2, S3]
    protego = Protego.parse(data.decode())
    assert protego.can_fetch("https://www.example.com/any/page", "Googlebot")
    assert list(protego.sitemaps) == [S1, S2, S3]


def test_no_robots_yet_gets_the_default_file() -> None:
    assert with_sitemaps(None, [S1], SITE) == default_robots([S1])


def test_no_robots_and_no_sitemaps_gives_nothing() -> None:
    assert with_sitemaps(None, [], SITE) == b""


# --- what is ours ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        S1,
        S2,
        "https://www.example.com/sitemap-index-12.xml",
        "/sitemap.xml",
        "/sitemap-index-2.xml",
        "sitemap.xml",
        "//www.example.com/sitemap.xml",
        "http://www.example.com/sitemap.xml",
        "HTTPS://WWW.EXAMPLE.COM/sitemap.xml",
        "https://www.example.com:443/sitemap.xml",
        "http://www.example.com:80/sitemap.xml",
        "https://www.example.com./sitemap.xml",
    ],
)
def test_own_sitemap_urls(value: str) -> None:
    assert is_own_sitemap_url(value, SITE)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "https://example.com/sitemap.xml",
        "https://other.example/sitemap.xml",
        "https://www.example.com.evil.example/sitemap.xml",
        "https://www.example.com:8443/sitemap.xml",
        "http://www.example.com:443/sitemap.xml",
        "https://www.example.com:99999/sitemap.xml",
        "https://user@www.example.com/sitemap.xml",
        "ftp://www.example.com/sitemap.xml",
        "/sitemap_news.xml",
        "/news-sitemap.xml",
        "/Sitemap.xml",
        "/sitemap.xml.gz",
        "/sitemap-pages-00001.xml.gz",
        "/sitemap-index-.xml",
        "/sitemap-index-x.xml",
        "/sitemap-2.xml",
        "/blog/sitemap.xml",
        "//sitemap.xml",
        "/sitemap.xml?x=1",
        "/sitemap.xml?",
        "/sitemap.xml#top",
        "/sitemap.xml/",
        "/sitemap.xml extra",
        "/sitemap.xml\n",
        "https://[::1/sitemap.xml",
        "https://www.example.com/sitemap.xml\u00a0",
    ],
)
def test_not_own_sitemap_urls(value: str) -> None:
    assert not is_own_sitemap_url(value, SITE)


def test_own_sitemap_urls_on_a_site_with_a_port() -> None:
    site = Site.parse("http://localhost:8080")
    assert is_own_sitemap_url("http://localhost:8080/sitemap.xml", site)
    assert is_own_sitemap_url("https://LOCALHOST:8080/sitemap.xml", site)
    assert is_own_sitemap_url("/sitemap-index-2.xml", site)
    assert not is_own_sitemap_url("http://localhost/sitemap.xml", site)
    assert not is_own_sitemap_url("http://localhost:8081/sitemap.xml", site)


def test_own_sitemap_url_with_an_internationalised_host() -> None:
    site = Site.parse("https://bücher.example")
    assert site.host == "xn--bcher-kva.example"
    assert is_own_sitemap_url("https://bücher.example/sitemap.xml", site)
    assert is_own_sitemap_url("https://xn--bcher-kva.example/sitemap.xml", site)


@given(st.text())
def test_is_own_sitemap_url_is_total(value: str) -> None:
    assert is_own_sitemap_url(value, SITE) in (True, False)


# --- adding ---------------------------------------------------------------------------


def test_adds_to_an_owner_file_without_trailing_newline() -> None:
    current = b"User-agent: *\nDisallow: /private"
    assert with_sitemaps(current, [S1], SITE) == (
        b"User-agent: *\nDisallow: /private\n\nSitemap: https://www.example.com/sitemap.xml\n"
    )


def test_adds_after_a_blank_line() -> None:
    assert with_sitemaps(OWNER, [S1], SITE) == OWNER + b"\n" + line(S1)


def test_no_second_blank_line_when_the_file_ends_with_one() -> None:
    current = OWNER + b"\n"
    assert with_sitemaps(current, [S1], SITE) == current + line(S1)


def test_appends_next_to_the_owners_sitemap_lines_without_a_blank_line() -> None:
    current = OWNER + b"\nSitemap: https://www.example.com/news-sitemap.xml\n"
    assert with_sitemaps(current, [S1], SITE) == current + line(S1)


def test_empty_file_gets_only_our_lines() -> None:
    assert with_sitemaps(b"", [S1, S2], SITE) == line(S1) + line(S2)


def test_blank_file_gets_no_extra_blank_line() -> None:
    assert with_sitemaps(b"\n", [S1], SITE) == b"\n" + line(S1)


def test_crlf_file_stays_crlf() -> None:
    current = b"User-agent: *\r\nDisallow: /private\r\n"
    result = with_sitemaps(current, [S1, S2], SITE)
    assert result == current + b"\r\n" + line(S1, b"\r\n") + line(S2, b"\r\n")
    assert result.count(b"\n") == result.count(b"\r\n")


def test_crlf_file_without_final_newline_gets_crlf() -> None:
    current = b"User-agent: *\r\nDisallow: /private"
    assert with_sitemaps(current, [S1], SITE) == current + b"\r\n\r\n" + line(S1, b"\r\n")


def test_cr_only_file_stays_cr() -> None:
    current = b"User-agent: *\rDisallow:\r"
    assert with_sitemaps(current, [S1], SITE) == current + b"\r" + line(S1, b"\r")


def test_mixed_endings_use_the_first_and_keep_the_others() -> None:
    current = b"User-agent: *\r\nDisallow: /a\nDisallow: /b\r"
    assert with_sitemaps(current, [S1], SITE) == current + b"\r\n" + line(S1, b"\r\n")


def test_final_cr_in_an_lf_file_still_gets_a_real_blank_line() -> None:
    current = b"User-agent: *\nDisallow: /a\r"
    result = with_sitemaps(current, [S1], SITE)
    assert result == current + b"\r" + line(S1)  # a lone "\n" would have made "\r\n"
    assert result.decode().splitlines()[-2:] == ["", f"Sitemap: {S1}"]
    assert robotparser_sitemaps(result) == protego_sitemaps(result) == [S1]


def test_bom_is_kept() -> None:
    current = BOM + OWNER
    result = with_sitemaps(current, [S1], SITE)
    assert result == BOM + OWNER + b"\n" + line(S1)


def test_bom_only_file() -> None:
    assert with_sitemaps(BOM, [S1], SITE) == BOM + b"\n" + line(S1)


def test_own_line_sharing_the_first_line_with_a_bom_moves_out_of_it() -> None:
    current = BOM + b"Sitemap: /sitemap.xml\n" + OWNER
    result = with_sitemaps(current, [S1], SITE)
    assert result == BOM + b"\n" + OWNER + b"\n" + line(S1)
    # Parsers that keep the BOM (Python's RobotFileParser.read decodes with "utf-8") see
    # no directive on the BOM's line; they now see ours.
    assert robotparser_sitemaps(current) == []
    assert robotparser_sitemaps(result) == protego_sitemaps(result) == [S1]
    assert with_sitemaps(result, [S1], SITE) is result


def test_stale_own_line_on_the_bom_line_leaves_the_bom() -> None:
    current = BOM + b"Sitemap: /sitemap-index-3.xml\r\nSitemap: https://other.example/s.xml\r\n"
    assert with_sitemaps(current, [], SITE) == BOM + b"\r\nSitemap: https://other.example/s.xml\r\n"


def test_invalid_utf8_nul_and_trailing_spaces_are_kept() -> None:
    head = b"User-agent: *  \t\nDisallow: /caf\xe9\xff\xfe\x80\n# \xc3\x28 \x00 nul \x00\n"
    tail = b"Allow: /\xed\xa0\x80 \nDisallow: /\x00\n"
    current = head + b"Sitemap: /sitemap.xml\n" + tail
    result = with_sitemaps(current, [S1], SITE)
    assert result == head + line(S1) + tail


def test_host_line_is_never_written_and_the_owners_is_kept() -> None:
    for current in (None, b"", OWNER, OWNER + b"Host: example.com\n"):
        result = with_sitemaps(current, [S1, S2], SITE)
        assert host_lines(result) == host_lines(current or b"")
        assert b"host:" not in result.lower().replace(b"host: example.com", b"")
    owners = b"Host: www.example.com\nSitemap: /sitemap.xml\n"
    assert with_sitemaps(owners, [S1], SITE) == b"Host: www.example.com\n" + line(S1)


# --- the owner's other Sitemap lines ----------------------------------------------------

OTHERS = (
    b"Sitemap: https://other.example/sitemap.xml\n"
    b"Sitemap: https://www.example.com/news-sitemap.xml\n"
    b"Sitemap: https://www.example.com/sitemap.xml?x=1\n"
    b"sitemap:/sitemap_news.xml\n"
    b"Sitemap: https://example.com/sitemap.xml\n"
    b"Sitemap: https://www.example.com:8443/sitemap.xml\n"
    b"Sitemaps: https://www.example.com/sitemaps.xml\n"
    b"Sitemap:\n"
)


def test_owners_other_sitemap_lines_are_untouched() -> None:
    current = OWNER + b"\n" + OTHERS
    result = with_sitemaps(current, [S1], SITE)
    assert result == current + line(S1)
    owners_robotparser = robotparser_sitemaps(current)
    assert robotparser_sitemaps(result) == [*owners_robotparser, S1]
    assert protego_sitemaps(result) == [*protego_sitemaps(current), S1]
    assert "https://www.example.com/sitemap.xml?x=1" in owners_robotparser
    assert with_sitemaps(current, [], SITE) is current


@pytest.mark.parametrize(
    "own",
    [
        b"Sitemaps: https://www.example.com/sitemap.xml",
        b"site-map: /sitemap.xml",
        b"Sitemap https://www.example.com/sitemap.xml",  # key "Sitemap https", as Google reads
        b"Sitemap /sitemap.xml",
        b"sitemap\t/sitemap.xml  # the index",
    ],
)
def test_lines_google_reads_as_sitemaps_are_ours_when_they_name_our_index(own: bytes) -> None:
    # Google's parser takes any key starting with "sitemap" or "site-map" and, with no colon,
    # two words; protego follows it. Left alone, such a line would list the index twice, or a
    # deleted index file for good.
    current = OWNER + own + b"\n"
    assert protego_sitemaps(current) != []
    assert with_sitemaps(current, [S1], SITE) == OWNER + line(S1)
    assert with_sitemaps(current, [], SITE) == OWNER


@pytest.mark.parametrize(
    "other", [b"Sitemap", b"Sitemap /sitemap.xml extra", b"Sitemapper /x.xml", b"Site map: /x"]
)
def test_other_colon_less_lines_stay_the_owners(other: bytes) -> None:
    current = OWNER + other + b"\n"
    result = with_sitemaps(current, [S1], SITE)
    assert result.startswith(current)
    assert result.endswith(line(S1))
    assert with_sitemaps(current, [], SITE) is current


def test_a_value_is_the_whole_rest_of_the_line_as_crawlers_read_it() -> None:
    # Google's parser and protego take everything up to "#", stripped: with words after it
    # the line names another URL, not ours, so it stays the owner's and ours is added.
    current = b"Sitemap: /sitemap.xml extra words\n"
    assert protego_sitemaps(current) == ["/sitemap.xml extra words"]
    assert with_sitemaps(current, [S1], SITE) == current + line(S1)


def test_vertical_tab_and_form_feed_are_whitespace_around_the_value() -> None:
    # Google's parser strips ASCII whitespace (\v and \f too) around key and value.
    current = b"\x0bSitemap:\x0c/sitemap.xml\x0b\n" + OWNER
    assert with_sitemaps(current, [S1], SITE) == line(S1) + OWNER


# --- rewriting in place ----------------------------------------------------------------


@pytest.mark.parametrize(
    "own",
    [
        b"Sitemap: /sitemap.xml",
        b"Sitemap: sitemap.xml",
        b"Sitemap: http://www.example.com/sitemap.xml",
        b"SITEMAP : https://www.example.com/sitemap.xml",
        b"sitemap:https://WWW.EXAMPLE.COM:443/sitemap.xml",
        b"  Sitemap:\t//www.example.com/sitemap.xml",
        b"Sitemap: https://www.example.com/sitemap.xml ",
        b"Sitemap: https://www.example.com/sitemap.xml  # the index",
        b"Sitemap: https://www.example.com/sitemap.xml#the-index",
    ],
)
def test_own_line_variants_are_rewritten_in_place(own: bytes) -> None:
    before = b"User-agent: *\nDisallow: /private\n"
    after = b"# after\nSitemap: https://other.example/s.xml\n"
    current = before + own + b"\n" + after
    assert with_sitemaps(current, [S1], SITE) == before + line(S1) + after


def test_rewrite_keeps_the_line_ending() -> None:
    current = b"Sitemap: /sitemap.xml\r\nUser-agent: *\r\nSitemap: /sitemap-index-2.xml"
    assert with_sitemaps(current, [S1, S2], SITE) == (
        line(S1, b"\r\n") + b"User-agent: *\r\n" + line(S2, b"")
    )


def test_dropping_an_own_line_does_not_join_cr_and_lf_into_one_ending() -> None:
    current = b"Disallow: /a\rSitemap: /sitemap-index-3.xml\n\nUser-agent: b\n"
    result = with_sitemaps(current, [], SITE)
    assert result == b"Disallow: /a\r\r\nUser-agent: b\n"
    assert result.splitlines() == [b"Disallow: /a", b"", b"User-agent: b"]


def test_exact_lines_are_kept_and_the_same_object_is_returned() -> None:
    current = OWNER + b"\n" + line(S1) + line(S2, b"")
    assert with_sitemaps(current, [S1, S2], SITE) is current


def test_duplicate_own_lines_collapse_to_the_first() -> None:
    current = (
        b"Sitemap: http://www.example.com/sitemap.xml\n"
        + OWNER
        + line(S1)
        + b"Sitemap: /sitemap.xml\n"
        + b"# end\n"
    )
    assert with_sitemaps(current, [S1], SITE) == line(S1) + OWNER + b"# end\n"


def test_stale_index_lines_are_removed() -> None:
    current = OWNER + b"\n" + line(S1) + line(S2) + line(S3) + b"Sitemap: /sitemap-index-1.xml\n"
    assert with_sitemaps(current, [S1, S2], SITE) == OWNER + b"\n" + line(S1) + line(S2)


def test_several_index_urls_in_order() -> None:
    urls = [SITE.url_for(index_key(n)) for n in range(5)]
    assert urls[:3] == [S1, S2, S3]
    result = with_sitemaps(OWNER, urls, SITE)
    assert result == OWNER + b"\n" + b"".join(line(u) for u in urls)
    assert robotparser_sitemaps(result) == protego_sitemaps(result) == urls


def test_missing_urls_are_appended_and_present_ones_stay_in_place() -> None:
    current = line(S2) + OWNER
    assert with_sitemaps(current, [S1, S2, S3], SITE) == current + b"\n" + line(S1) + line(S3)


def test_appends_right_after_our_own_line() -> None:
    current = OWNER + b"\n" + line(S1)
    assert with_sitemaps(current, [S1, S2], SITE) == current + line(S2)


def test_index_url_with_the_other_scheme_is_accepted_and_matches() -> None:
    http_s1 = "http://www.example.com/sitemap.xml"
    current = OWNER + b"\nSitemap: /sitemap.xml\n"
    assert with_sitemaps(current, [http_s1], SITE) == OWNER + b"\n" + line(http_s1)


def test_empty_list_removes_only_own_lines() -> None:
    current = b"Sitemap: /sitemap.xml\n" + OWNER + b"\n" + OTHERS + line(S2) + b"# bye"
    assert with_sitemaps(current, [], SITE) == OWNER + b"\n" + OTHERS + b"# bye"


def test_empty_list_removing_a_last_line_without_ending() -> None:
    assert with_sitemaps(OWNER + b"Sitemap: /sitemap.xml", [], SITE) == OWNER


def test_empty_list_on_a_file_without_own_lines_returns_it() -> None:
    current = OWNER + b"\n" + OTHERS
    assert with_sitemaps(current, [], SITE) is current


@pytest.mark.parametrize(
    "url",
    [
        "https://other.example/sitemap.xml",
        "https://www.example.com/sitemap_news.xml",
        "https://www.example.com/sitemap.xml?x=1",
        "/sitemap.xml",
        "https://www.example.com/sitemap\n.xml",
        "https://www.exämple.com/sitemap.xml",
    ],
)
def test_urls_that_are_not_our_index_files_are_refused(url: str) -> None:
    # Such a URL would not be recognised as ours next time and be appended again and again.
    with pytest.raises(ValueError, match="not a sitemap index URL"):
        with_sitemaps(OWNER, [url], SITE)


@pytest.mark.parametrize(
    "current",
    [
        b"",
        OWNER,
        b"User-agent: *\nDisallow: /private",
        BOM + b"Sitemap: /sitemap.xml",
        b"Sitemap: /sitemap-index-3.xml\r\nDisallow: /x\r",
        OWNER + b"\n" + OTHERS + b"Sitemap: /sitemap.xml\nSitemap: /sitemap.xml\n",
    ],
)
@pytest.mark.parametrize("count", [0, 1, 3])
def test_idempotent(current: bytes, count: int) -> None:
    urls = [SITE.url_for(index_key(n)) for n in range(count)]
    once = with_sitemaps(current, urls, SITE)
    twice = with_sitemaps(once, urls, SITE)
    assert twice == once
    assert twice is once


# --- properties ------------------------------------------------------------------------

FRAGMENTS = [
    b"User-agent: *",
    b"User-agent: Googlebot",
    b"Disallow: /private",
    b"Disallow:",
    b"Allow: /",
    b"Crawl-delay: 10",
    b"Host: www.example.com",
    b"# a comment: Sitemap: https://www.example.com/sitemap.xml",
    b"Sitemap: https://other.example/sitemap.xml",
    b"Sitemap: https://www.example.com/news-sitemap.xml",
    b"Sitemap: https://www.example.com/sitemap.xml?x=1",
    b"sitemap :/sitemap_news.xml  # news",
    b"Sitemap:",
    b"Sitemaps: https://www.example.com/news.xml",
    b"Sitemap /sitemap.xml and more",
    b"\x1cSitemap: https://www.example.com/sitemap.xml",  # str.splitlines() breaks at \x1c
    b"\xc2\xa0Sitemap: https://www.example.com/sitemap.xml",  # str.strip() drops NBSP
    BOM,
    BOM + b"User-agent: *",
    b"\xff\xfe\x00",
    b"   ",
    b"\t",
    b"",
]
ENDINGS = [b"\n", b"\r\n", b"\r"]
owner_line = st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=24))
owner_content = st.lists(st.tuples(owner_line, st.sampled_from([*ENDINGS, b""])), max_size=12).map(
    lambda items: b"".join(body + ending for body, ending in items)
)
own_line = st.builds(
    lambda key, value, tail: key + value + tail,
    st.sampled_from(
        [b"Sitemap: ", b"sitemap:", b"SITEMAP :", b"  Sitemap:\t", b"Sitemaps: ", b"site-map "]
    ),
    st.sampled_from(
        [
            S1.encode(),
            S2.encode(),
            b"/sitemap.xml",
            b"/sitemap-index-3.xml",
            b"http://WWW.example.com/sitemap-index-2.xml",
            b"//www.example.com/sitemap-index-7.xml",
        ]
    ),
    st.sampled_from([b"", b" ", b"  # ours"]),
)
index_urls = st.integers(0, 4).map(lambda n: [SITE.url_for(index_key(i)) for i in range(n)])
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(owner_content, index_urls)
def test_owner_content_is_preserved_byte_for_byte(current: bytes, urls: list[str]) -> None:
    assume(not own_lines(current))
    result = with_sitemaps(current, urls, SITE)
    if not urls:
        assert result is current
        return
    assert result.startswith(current)
    added = result[len(current) :]
    ours = added.lstrip(b"\r\n")
    separator = added[: len(added) - len(ours)]
    assert len(separator.splitlines()) <= 2  # a final line ending, a blank line
    first_ending = re.search(rb"\r\n|\n|\r", current)
    newline = first_ending.group() if first_ending else b"\n"
    assert ours == b"".join(line(url, newline) for url in urls)
    assert robotparser_sitemaps(result) == [*robotparser_sitemaps(current), *urls]
    assert protego_sitemaps(result) == [*protego_sitemaps(current), *urls]
    assert host_lines(result) == host_lines(current)
    assert with_sitemaps(result, urls, SITE) is result


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.tuples(owner_line, st.sampled_from(ENDINGS)),
            st.tuples(own_line, st.sampled_from(ENDINGS)),
        ),
        max_size=12,
    ),
    st.sampled_from([*ENDINGS, b""]),
    index_urls,
)
def test_own_lines_end_up_exactly_the_wanted_urls(
    items: list[tuple[bytes, bytes]], last_ending: bytes, urls: list[str]
) -> None:
    current = b"".join(body + ending for body, ending in items)
    if items:
        current = current[: len(current) - len(items[-1][1])] + last_ending
    assume(not current.startswith(BOM) or 0 not in own_lines(current))
    result = with_sitemaps(current, urls, SITE)

    result_lines = result.splitlines(keepends=True)
    ours = [result_lines[n] for n in own_lines(result)]
    assert Counter(t.rstrip(b"\r\n") for t in ours) == Counter(line(u, b"") for u in urls)

    # The owner's lines survive in order and in content, with at most a final line ending
    # and a blank line added; LFs stay where they were, only CRs may be added (see the
    # module: a CR keeps a blank LF line from joining the CR ending of a line before it).
    kept_current, kept_result = without_own_lines(current), without_own_lines(result)
    current_bodies, result_bodies = kept_current.splitlines(), kept_result.splitlines()
    assert result_bodies[: len(current_bodies)] == current_bodies
    assert result_bodies[len(current_bodies) :] in ([], [b""])
    current_lf, result_lf = kept_current.replace(b"\r", b""), kept_result.replace(b"\r", b"")
    assert result_lf.startswith(current_lf)
    assert not result_lf[len(current_lf) :].strip(b"\n")

    expected = Counter(robotparser_sitemaps(kept_current)) + Counter(urls)
    assert Counter(robotparser_sitemaps(result)) == expected
    expected = Counter(protego_sitemaps(kept_current)) + Counter(urls)
    assert Counter(protego_sitemaps(result)) == expected
    assert host_lines(result) == host_lines(current)
    assert with_sitemaps(result, urls, SITE) is result


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), index_urls)
def test_total_and_idempotent_on_arbitrary_bytes(current: bytes, urls: list[str]) -> None:
    result = with_sitemaps(current, urls, SITE)
    assert with_sitemaps(result, urls, SITE) is result
    result_lines = result.splitlines(keepends=True)
    ours = [result_lines[n].rstrip(b"\r\n") for n in own_lines(result)]
    assert Counter(ours) == Counter(line(u, b"") for u in urls)
