"""XML rendering: schema-valid, escaped, deterministic, sized exactly (invariants 5, 6, 7, 9)."""

from __future__ import annotations

import json
import re
from datetime import UTC, timedelta, timezone
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import CHANGEFREQS, PageChange, parse_body
from sitemap_updater.domain.render import (
    SITEMAP_NS,
    URLSET_FRAME_BYTES,
    URLSET_OPEN,
    IndexEntry,
    escape,
    render_entry,
    render_index,
    render_links,
    with_links,
)
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, normalise_url
from sitemap_updater.schemas import sitemap_schema
from tests.rendering import entry_size, render_urlset

SITE = Site.parse("https://www.example.com")
NS = {"s": SITEMAP_NS}

FULL = SitemapEntry(
    url="https://www.example.com/s?q=a&b=c",
    lastmod="2026-11-20T09:30:00Z",
    changefreq="weekly",
    priority="0.6",
)
BARE = SitemapEntry(url="https://www.example.com/")
UNICODE = SitemapEntry(
    url=normalise_url("https://www.example.com/café/日本?q=ü&x=1", SITE), lastmod="2026-11-20"
)


def assert_valid(xml: bytes) -> etree._Element:
    """Well-formed, UTF-8, and valid against the official schemas."""
    assert xml.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n')
    xml.decode("utf-8")  # strict: raises on anything that is not UTF-8
    root = etree.fromstring(xml)
    schema = sitemap_schema()
    assert schema.validate(root), schema.error_log
    return root


# --- urlset -----------------------------------------------------------------------------------


def test_urlset_with_every_field_is_valid_and_exact() -> None:
    xml = render_urlset([FULL, BARE])
    assert xml == (
        URLSET_OPEN.encode() + b"<url><loc>https://www.example.com/s?q=a&amp;b=c</loc>"
        b"<lastmod>2026-11-20T09:30:00Z</lastmod><changefreq>weekly</changefreq>"
        b"<priority>0.6</priority></url>\n"
        b"<url><loc>https://www.example.com/</loc></url>\n"
        b"</urlset>\n"
    )
    root = assert_valid(xml)
    assert root.tag == f"{{{SITEMAP_NS}}}urlset"
    assert root.xpath("s:url/s:loc/text()", namespaces=NS) == [FULL.url, BARE.url]


@pytest.mark.parametrize(
    "entry",
    [
        BARE,
        FULL,
        UNICODE,
        SitemapEntry(url="https://www.example.com/a", lastmod="2026-11-20"),
        SitemapEntry(url="https://www.example.com/a", lastmod="0999-01-01T00:00:00Z"),
        SitemapEntry(url="https://www.example.com/a", changefreq="never"),
        SitemapEntry(url="https://www.example.com/a", priority="0.0"),
        SitemapEntry(url="https://www.example.com/a", priority="1.0"),
        SitemapEntry(url="https://www.example.com/a", priority="0.00000000000000001"),
        SitemapEntry(url="https://www.example.com/" + "a" * (MAX_URL_LENGTH - 24)),
        SitemapEntry(url="https://www.example.com/a;b=c,d!$&()*+:@~?x=1&y=2?z"),
    ],
)
def test_single_entry_urlsets_are_schema_valid(entry: SitemapEntry) -> None:
    root = assert_valid(render_urlset([entry]))
    assert root.findtext("s:url/s:loc", namespaces=NS) == entry.url


def test_every_changefreq_is_schema_valid() -> None:
    entries = [SitemapEntry(url=f"https://www.example.com/{c}", changefreq=c) for c in CHANGEFREQS]
    root = assert_valid(render_urlset(entries))
    assert root.xpath("s:url/s:changefreq/text()", namespaces=NS) == list(CHANGEFREQS)


def test_entries_keep_the_callers_order_one_per_line() -> None:
    entries = [SitemapEntry(url=f"https://www.example.com/{n}") for n in (3, 1, 2)]
    lines = render_urlset(entries).decode().splitlines()
    assert lines[2:5] == [f"<url><loc>https://www.example.com/{n}</loc></url>" for n in (3, 1, 2)]


def test_empty_urlset_is_well_formed_but_not_schema_valid() -> None:
    """The schema wants at least one <url>: callers must never write an empty shard."""
    xml = render_urlset([])
    root = etree.fromstring(xml)
    assert len(root) == 0
    assert not sitemap_schema().validate(root)


def test_rendering_is_deterministic() -> None:
    entries = [FULL, BARE, UNICODE]
    first = render_urlset(entries)
    assert render_urlset(iter(list(entries))) == first
    assert render_urlset(tuple(SitemapEntry(**vars_of(e)) for e in entries)) == first
    index = [IndexEntry("https://www.example.com/sitemap-pages-00001.xml.gz", "2026-11-20")]
    assert render_index(index) == render_index(list(index))


def vars_of(entry: SitemapEntry) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in ("url", "lastmod", "changefreq", "priority")}


def test_urlset_frame_size_is_what_an_empty_urlset_weighs() -> None:
    assert len(render_urlset([])) == URLSET_FRAME_BYTES


# --- escaping -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain", "plain"),
        ("a&b", "a&amp;b"),
        ("<>", "&lt;&gt;"),
        ("\"'", "&quot;&apos;"),
        ("&amp;", "&amp;amp;"),
        ("日本", "日本"),
        ("a\r\nb", "a&#13;&#10;b"),  # a parser would read a raw CR as LF; one line a <url>
        ("", ""),
    ],
)
def test_escape(text: str, escaped: str) -> None:
    assert escape(text) == escaped


def test_hostile_text_in_a_loc_stays_text() -> None:
    """Even if an unvalidated value got here, it could not inject markup."""
    evil = "https://www.example.com/?a=</loc><loc>x&b='\"<!--"
    root = etree.fromstring(render_urlset([SitemapEntry(url=evil)]))
    assert root.findtext("s:url/s:loc", namespaces=NS) == evil
    assert len(root.findall("s:url/s:loc", namespaces=NS)) == 1


def test_ampersands_in_queries_round_trip() -> None:
    url = normalise_url("https://www.example.com/search?q=a&b=c&d=%26", SITE)
    xml = render_urlset([SitemapEntry(url=url)])
    assert b"?q=a&amp;b=c&amp;d=%26<" in xml
    assert assert_valid(xml).findtext("s:url/s:loc", namespaces=NS) == url


# --- entry_size --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry", [BARE, FULL, UNICODE, SitemapEntry(url="https://www.example.com/ü")]
)
def test_entry_size_is_the_bytes_an_entry_adds(entry: SitemapEntry) -> None:
    base = render_urlset([BARE])
    assert entry_size(entry) == len(render_urlset([BARE, entry])) - len(base)
    assert entry_size(entry) == len(render_urlset([entry])) - URLSET_FRAME_BYTES
    assert entry_size(entry) == len(render_entry(entry).encode("utf-8"))


def test_entry_size_counts_bytes_not_characters() -> None:
    # Never produced by normalisation, but entry_size must not under-count if it were.
    entry = SitemapEntry(url="https://www.example.com/日本")
    assert entry_size(entry) == len(render_entry(entry)) + 4


def test_entry_size_counts_escapes() -> None:
    plain = SitemapEntry(url="https://www.example.com/?a=1+b=2")
    amp = SitemapEntry(url="https://www.example.com/?a=1&b=2")
    assert entry_size(amp) == entry_size(plain) + len("amp;")


def test_sizes_add_up_for_a_whole_shard() -> None:
    entries = [FULL, BARE, UNICODE] * 50
    assert len(render_urlset(entries)) == URLSET_FRAME_BYTES + sum(map(entry_size, entries))


# --- index --------------------------------------------------------------------------------------


def test_index_is_valid_and_exact() -> None:
    xml = render_index(
        [
            IndexEntry(
                "https://www.example.com/sitemap-pages-00001.xml.gz", "2026-11-20T09:30:00Z"
            ),
            IndexEntry("https://www.example.com/sitemap-pages-00002.xml.gz", None),
        ]
    )
    assert xml == (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<sitemap><loc>https://www.example.com/sitemap-pages-00001.xml.gz</loc>"
        b"<lastmod>2026-11-20T09:30:00Z</lastmod></sitemap>\n"
        b"<sitemap><loc>https://www.example.com/sitemap-pages-00002.xml.gz</loc></sitemap>\n"
        b"</sitemapindex>\n"
    )
    root = assert_valid(xml)
    assert root.tag == f"{{{SITEMAP_NS}}}sitemapindex"


def test_index_escapes_its_locs() -> None:
    loc = "https://www.example.com/sitemap.xml?a=1&b=2"
    xml = render_index([IndexEntry(loc, "2026-11-20")])
    assert b"a=1&amp;b=2" in xml
    assert assert_valid(xml).findtext("s:sitemap/s:loc", namespaces=NS) == loc


def test_index_with_many_entries_is_valid() -> None:
    entries = [
        IndexEntry(SITE.url_for(f"sitemap-pages-{n:05d}.xml.gz"), f"2026-11-{1 + n % 28:02d}")
        for n in range(1, 1001)
    ]
    root = assert_valid(render_index(entries))
    assert len(root) == 1000


def test_empty_index_is_well_formed_but_not_schema_valid() -> None:
    """The schema wants at least one <sitemap>: callers must never write an empty index."""
    root = etree.fromstring(render_index([]))
    assert len(root) == 0
    assert not sitemap_schema().validate(root)


# --- the property: any event either fails alone or renders a valid sitemap -------------------

_segment = st.one_of(
    st.text(max_size=20),  # anything at all, surrogates and controls included
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc", "Cf", "Zs", "Zl", "Zp"),
            blacklist_characters="%#<>\"'\\",
        ),
        min_size=1,
        max_size=20,
    ),
)
_query_pair = st.tuples(_segment, _segment).map(lambda kv: f"{kv[0]}={kv[1]}")
_query = st.none() | st.lists(_query_pair, max_size=4).map("&".join)
_zones = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
)
_lastmod = st.one_of(
    st.dates().map(lambda d: d.isoformat()),
    st.datetimes(timezones=_zones).map(lambda moment: moment.isoformat().replace("+00:00", "Z")),
    st.text(max_size=25),
)
_priority = st.one_of(
    st.decimals(min_value=0, max_value=1, places=3, allow_nan=False),
    st.floats(min_value=0, max_value=1),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def _events(draw: st.DrawFn) -> tuple[str, str]:
    path = "/".join(draw(st.lists(_segment, max_size=6)))
    query = draw(_query)
    host = draw(st.sampled_from(["www.example.com", "WWW.Example.COM", "www.example.com:443"]))
    url = f"https://{host}/{path}" + ("" if query is None else f"?{query}")
    document: dict[str, Any] = {
        "type": draw(st.sampled_from(["publish", "unpublish"])),
        "url": url,
        "version": draw(st.integers(min_value=0, max_value=10**20)),
    }
    if document["type"] == "publish":
        if draw(st.booleans()):
            document["lastmod"] = draw(_lastmod)
        if draw(st.booleans()):
            document["changefreq"] = draw(st.sampled_from(CHANGEFREQS))
        if draw(st.booleans()):
            value = draw(_priority)
            document["priority"] = float(value) if isinstance(value, Decimal) else value
    return json.dumps(document, ensure_ascii=draw(st.booleans())), url


_pairs = st.lists(
    st.tuples(
        st.sampled_from(["en", "de-AT", "x-default"]),
        st.sampled_from(["https://www.example.com/a?b=1&c=2", "https://www.example.com/o'brien"]),
    ),
    min_size=1,
    max_size=3,
)


@given(_events(), _pairs)
def test_links_added_to_a_rendered_line_are_the_line_rendered_with_them(
    generated: tuple[str, str], pairs: list[tuple[str, str]]
) -> None:
    change = _parse_or_reason(generated[0])
    if isinstance(change, InvalidEvent) or change.entry is None:
        return
    with_alternates = msgspec.structs.replace(change.entry, alternates=tuple(pairs))

    added = with_links(render_entry(change.entry), render_links(pairs))

    assert added == render_entry(with_alternates)


def _parse_or_reason(body: str) -> PageChange | InvalidEvent:
    try:
        return parse_body(body, SITE, 256 * 1024)
    except InvalidEvent as exc:
        return exc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_events())
def test_any_event_is_rejected_or_renders_a_valid_sitemap(generated: tuple[str, str]) -> None:
    body, raw_url = generated
    change = _parse_or_reason(body)
    if isinstance(change, InvalidEvent):
        event(f"rejected: {change.code}")
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", change.code)
        assert change.detail
        return
    assert change.url == normalise_url(raw_url, SITE)
    if change.entry is None:
        event("accepted: unpublish")
        return
    event("accepted: publish")
    root = assert_valid(render_urlset([change.entry]))
    loc = root.findtext("s:url/s:loc", namespaces=NS)
    assert loc == change.url
    assert len(loc) <= MAX_URL_LENGTH
    assert loc.isascii()
    assert entry_size(change.entry) == len(render_urlset([change.entry])) - URLSET_FRAME_BYTES


@settings(max_examples=200, deadline=None)
@given(
    segments=st.lists(
        st.text(
            alphabet=st.characters(
                blacklist_categories=("Cs", "Cc", "Cf", "Zs", "Zl", "Zp"),
                blacklist_characters="%#<>\"'\\.\ufffe\uffff",
            ),
            min_size=1,
            max_size=15,
        ),
        max_size=5,
    ),
    query=st.dictionaries(st.from_regex(r"[a-z]{1,5}", fullmatch=True), st.text("ab&=?/ü日")),
)
def test_clean_unicode_urls_are_always_accepted(segments: list[str], query: dict[str, str]) -> None:
    """The first property is not vacuous: printable unicode paths and &-queries get through."""
    raw = "https://www.example.com/" + "/".join(segments)
    if query:
        raw += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    change = parse_body(json.dumps({"type": "publish", "url": raw, "version": 1}), SITE, 10**6)
    assert change.entry is not None
    root = assert_valid(render_urlset([change.entry]))
    assert root.findtext("s:url/s:loc", namespaces=NS) == change.url
