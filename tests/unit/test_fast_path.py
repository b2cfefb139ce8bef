"""build's fast path answers exactly as the ingest function's full validation.

``ops.fast_records`` (records of the common shape, no pydantic), the orjson decoder and the
render-once build must give the same entry or the same rejection reason as ``parse_event``,
record by record, and the same files byte for byte.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater.domain import urls
from sitemap_updater.domain.clusters import alternates
from sitemap_updater.domain.contract import (
    X_DEFAULT,
    PageChange,
    normalise_lastmod,
    normalise_priority,
)
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import _loads, parse_event, unwrap
from sitemap_updater.domain.render import _ESCAPES, escape, render_entry
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site, check_characters, normalise_url
from sitemap_updater.ops import fast_records, pages
from sitemap_updater.ops.build import cluster_alternates, clusters_of, render_site
from sitemap_updater.ops.fast_records import (
    NON_ASCII_REFUSED,
    lastmod_of,
    line_reader,
    links_of,
    priority_of,
    with_alternates,
)
from sitemap_updater.ops.pages import Record, as_event, page_change, read_pages, read_records

SITE = Site.parse("https://www.example.com")
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bad-input"


def outcome(call: Any) -> Any:
    try:
        return call()
    except InvalidEvent as exc:
        return ("rejected", exc.reason)


def both_paths(record: Any, site: Site = SITE) -> tuple[Any, Any]:
    fast = outcome(lambda: page_change(record, site))
    full = outcome(lambda: parse_event(as_event(record, Decimal(0)), site))
    return fast, full


# --- record by record -------------------------------------------------------------------------

URL_TAIL = st.text(
    alphabet=st.sampled_from(list("aZ09-._~!$&()*+,;=:@/?%#'<> \u00e9\u200e\t\ud800\ufffd2Ee")),
    max_size=20,
)
SITE_URLS = st.one_of(
    st.builds(lambda tail: f"https://www.example.com/{tail}", URL_TAIL),
    st.builds(lambda tail: f"https://WWW.example.com:443/{tail}", URL_TAIL),
    st.builds(lambda tail: f"https://other.example.com/{tail}", URL_TAIL),
    st.just("https://www.example.com/" + "x" * 2030),
    st.just(""),
    st.integers(),
)
ANY_URLS = st.one_of(
    SITE_URLS,
    st.builds(lambda tail: f"https://cdn.example.net/{tail}", URL_TAIL),
    st.builds(lambda tail: f"http://img-1.example.org:8080/{tail}", URL_TAIL),
    st.builds(lambda tail: f"https://bad_host.example/{tail}", URL_TAIL),
)
LANGS = st.one_of(
    st.sampled_from(["en", "de", "EN-gb", "zh-hant-tw", "es-419", "x-default", "X-Default"]),
    st.sampled_from(["", "english", "e", "de_DE", 1]),
)
IMAGES = st.one_of(
    st.lists(st.fixed_dictionaries({"loc": ANY_URLS}), max_size=3),
    st.lists(st.just({"loc": "https://cdn.example.net/a.jpg", "title": "x"}), max_size=1),
    st.just([{"loc": "https://cdn.example.net/a.jpg"}] * 1001),
    st.just([{}]),
    st.just("https://cdn.example.net/a.jpg"),
    st.none(),
)
ALTERNATES = st.one_of(
    st.lists(st.fixed_dictionaries({"hreflang": LANGS, "href": SITE_URLS}), max_size=3),
    st.just([{"hreflang": "de"}]),
    st.just([{"href": "https://www.example.com/de", "hreflang": "de", "rel": "x"}]),
    st.just([{"hreflang": "de", "href": "https://www.example.com/de"}] * 65),
    st.none(),
)
LASTMODS = st.one_of(
    st.sampled_from(
        [
            "2026-11-20",
            "2026-02-30",
            "0000-01-01",
            "2026-11-20T09:30:00Z",
            "2026-11-20T24:00:00Z",
            "2026-11-20T09:30:60Z",
            "2026-11-20T09:30Z",
            "2026-11-20T09:30:00.5+01:00",
            "20261120",
            "2026-W47-5",
            "2026-11-20T09:30:00",
            "2026-11-20t09:30:00z",
        ]
    ),
    st.dates().map(str),
    st.datetimes().map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.text(alphabet="0123456789-:TZ", max_size=20),
    st.integers(),
    st.none(),
)
NUMBERS = st.one_of(
    st.decimals(min_value=-1, max_value=2, places=3),
    st.decimals(allow_nan=True),
    st.floats(allow_nan=True),
    st.integers(min_value=-2, max_value=10**40),
    st.sampled_from([Decimal("0.10"), Decimal("0.1"), Decimal("1E-20"), True, "0.5"]),
    st.none(),
)
FIELDS = {
    "type": st.sampled_from(["publish", "unpublish", "other"]),
    "version": NUMBERS,
    "lastmod": LASTMODS,
    "changefreq": st.sampled_from(["daily", "Daily", "sometimes", None]),
    "priority": NUMBERS,
    "hreflang": st.one_of(LANGS, st.none()),
    "images": IMAGES,
    "alternates": ALTERNATES,
    "sitemap": st.sampled_from(["news", "Bad Group"]),
    "videos": st.just([]),
    "title": st.just("x"),
}
RECORDS = st.fixed_dictionaries({"url": SITE_URLS}, optional=FIELDS)


@settings(max_examples=1500, deadline=None)
@given(record=RECORDS)
def test_any_record_gets_the_same_entry_or_the_same_reason_on_both_paths(record: Any) -> None:
    fast, full = both_paths(record)
    assert fast == full


# Mostly valid records, so that the fast path's acceptances are compared too.
GOOD_URLS = st.builds(
    lambda tail: f"https://www.example.com/{tail}",
    st.text(alphabet=st.sampled_from(list("aZ09-._~&=/?%\u00e9 E")), max_size=12),
)
LIKELY_GOOD = st.fixed_dictionaries(
    {"url": GOOD_URLS},
    optional={
        "version": st.one_of(st.integers(min_value=0, max_value=10**6), st.floats(0, 1e6)),
        "lastmod": st.one_of(
            st.dates().map(str),
            st.datetimes().map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")),
        ),
        "changefreq": st.sampled_from(["daily", "weekly"]),
        "priority": st.one_of(st.decimals(0, 1, places=2), st.floats(0, 1), st.just(1)),
        "hreflang": st.sampled_from(["en", "de-AT", "X-DEFAULT"]),
        "images": st.lists(
            st.fixed_dictionaries(
                {"loc": st.builds(lambda u: u.replace("www.", "cdn."), GOOD_URLS)}
            ),
            max_size=3,
        ),
        "alternates": st.lists(
            st.fixed_dictionaries(
                {"hreflang": st.sampled_from(["fr", "en-gb"]), "href": GOOD_URLS}
            ),
            max_size=3,
        ),
    },
)


@settings(max_examples=1000, deadline=None)
@given(record=LIKELY_GOOD)
def test_likely_good_records_get_the_same_entry_on_both_paths(record: Any) -> None:
    fast, full = both_paths(record)
    assert fast == full


@settings(max_examples=500, deadline=None)
@given(value=LASTMODS)
def test_the_lastmod_shortcut_is_normalise_lastmod(value: Any) -> None:
    def call(normalise: Any) -> Any:
        try:
            return normalise(value)
        except ValueError as exc:
            return ("refused", str(exc))

    assert call(lastmod_of) == call(normalise_lastmod)


@settings(max_examples=500, deadline=None)
@given(value=NUMBERS)
def test_the_remembered_priorities_are_normalise_priority(value: Any) -> None:
    def call(normalise: Any) -> Any:
        try:
            return normalise(value)
        except ValueError as exc:
            return ("refused", str(exc))

    assert call(priority_of) == call(normalise_priority)
    # A float and the Decimal of its exact value are equal numbers: never one cache entry.
    if isinstance(value, float) and not math.isnan(value):
        assert call(priority_of) == call(lambda _: normalise_priority(Decimal(str(value))))
        assert call(lambda _: priority_of(Decimal(value))) == call(
            lambda _: normalise_priority(Decimal(value))
        )


def _corpus_events() -> list[tuple[str, Any]]:
    cases = []
    for path in sorted(CORPUS.glob("*.json")):
        case = json.loads(path.read_text(encoding="ascii"))
        if "pad_to_bytes" in case:
            continue  # the body limit, not the contract
        body = case["body"] if "body" in case else json.dumps(case["event"])
        try:
            cases.append((path.name, unwrap(_loads(body))))
        except (ValueError, RecursionError, InvalidEvent):
            continue  # not JSON (or an envelope holding none): never a record
    return cases


@pytest.mark.parametrize(("name", "event"), _corpus_events())
def test_every_bad_input_case_gets_the_same_reason_on_both_paths(name: str, event: Any) -> None:
    fast, full = both_paths(event)
    assert fast == full, name


# --- whole lines (ops.fast_records.line_reader) -----------------------------------------------

READ_LINE = line_reader(SITE)


def line_outcomes(line: str) -> tuple[Any, Any, Any]:
    """(the line reader's page, the build's full path, the ingest function's) for one line."""
    page = READ_LINE(line)

    def full() -> Any:
        record = pages._decode(line, "t")
        if record.error is not None:
            raise record.error
        return page_change(record.value, SITE, fast=False)

    def ingest() -> Any:
        try:
            document = _loads(line)
        except ValueError:
            return ("rejected", "malformed_json")
        return parse_event(as_event(document, Decimal(0)), SITE)

    return page, outcome(full), outcome(ingest)


def assert_same_page(line: str) -> bool:
    """When the line reader takes a line, both full paths accept it as the very same page."""
    page, full, ingest = line_outcomes(line)
    if page is None:
        return False
    assert full == ingest, line
    url, version, text, lastmod, hreflang, declared, change = page
    assert full.url == url, line
    assert full.version == version, line
    assert full.entry is not None, line
    assert render_entry(full.entry) == text, line
    assert full.entry.lastmod == lastmod, line
    assert (full.hreflang, full.alternates, full.group) == (hreflang, declared, None), line
    assert change is None
    links = ((X_DEFAULT, url), ("zh-Hant", f"{url}?x=1&y=2"))
    rendered = with_alternates(text, links_of(links))
    assert rendered == render_entry(replace(full.entry, alternates=links))
    return True


def as_line(record: dict[str, Any], style: int) -> str:
    """A record as one JSON Lines line, written the ways producers write them."""
    if style == 1 and "url" in record:  # type and version first
        head = {key: record[key] for key in ("type", "version") if key in record}
        record = {**head, **record}
    return (
        json.dumps(
            record,
            ensure_ascii=style == 2,
            separators=(",", ":") if style == 3 else None,
            default=str,
        )
        + "\n"
    )


LINE_URLS = st.one_of(
    GOOD_URLS,
    st.builds(
        lambda tail: f"https://www.example.com/{tail}",
        st.text(alphabet=st.characters(codec="utf-8", min_codepoint=0x21), max_size=8),
    ),
    st.builds(lambda tail: f"https://www.example.com/{tail}", URL_TAIL),
    st.sampled_from(
        [
            "https://www.example.com/a/./b",
            "https://www.example.com/%2e%2E/b",
            "https://www.example.com/a%2x",
            "https://www.example.com/a?",
            "https://www.example.com/a?b?c&d",
            "https://www.example.com",
            "https://www.example.com/" + "\u00e9" * 700,
            "https://www.example.com/" + "x" * 2025,
            "https://www.example.com/a\u200eb",
            "https://www.example.com/a\u00a0b",
        ]
    ),
)
LINE_RECORDS = st.fixed_dictionaries(
    {"url": LINE_URLS},
    optional={
        "type": st.sampled_from(["publish", "publish", "unpublish"]),
        "version": st.one_of(
            st.integers(min_value=-1, max_value=10**20), st.floats(0, 10), st.just(True)
        ),
        "lastmod": LASTMODS,
        "changefreq": st.sampled_from(["daily", "weekly", "Daily", "sometimes", "never"]),
        "priority": st.one_of(
            st.decimals(0, 1, places=2),
            st.floats(0, 1.5),
            st.sampled_from([0, 1, 2, 0.1, 1.0, 0.30000000000000004]),
        ),
        "hreflang": LANGS,
        "images": IMAGES,
        "alternates": ALTERNATES,
    },
)


@settings(max_examples=1500, deadline=None)
@given(record=LINE_RECORDS, style=st.integers(0, 3))
def test_a_line_the_line_reader_takes_is_the_same_page_on_every_path(
    record: dict[str, Any], style: int
) -> None:
    assert_same_page(as_line(record, style))


@settings(max_examples=500, deadline=None)
@given(record=LIKELY_GOOD, style=st.integers(0, 3))
def test_likely_good_lines_are_the_same_page_on_every_path(
    record: dict[str, Any], style: int
) -> None:
    assert_same_page(as_line(record, style))


SAFE_TAIL = st.text(
    alphabet=st.sampled_from(list("aZ09-._~!$&()*+,;=:@/\u00e9\u65e5")), max_size=12
)
CANONICAL_TAILS = st.builds(  # no dot segment ("/." anywhere is left to the full path)
    lambda path, escape, query: f"x{path}{escape}{query}".replace("/.", "/x"),
    SAFE_TAIL,
    st.sampled_from(["", "%41", "%C3%A9"]),
    st.one_of(st.just(""), SAFE_TAIL.filter(bool).map(lambda query: "?" + query)),
)
TAKEN = st.fixed_dictionaries(
    {"url": CANONICAL_TAILS.map(lambda tail: f"https://www.example.com/{tail}")},
    optional={
        "type": st.just("publish"),
        "version": st.integers(min_value=0, max_value=10**18 - 1),
        "lastmod": st.one_of(
            st.dates().map(date.isoformat),
            st.datetimes().map(lambda moment: moment.isoformat(timespec="seconds") + "Z"),
        ),
        "changefreq": st.sampled_from(["always", "hourly", "never", "yearly"]),
        "priority": st.one_of(
            st.sampled_from([0, 1, 0.0, 1.0, 0.5, 0.25]),
            st.integers(0, 1000).map(lambda n: n / 1000),
        ),
        "hreflang": st.sampled_from(["en", "DE-at", "zh-Hant-TW", "es-419", "X-DEFAULT"]),
        "images": st.lists(
            st.fixed_dictionaries(
                {
                    "loc": st.builds(
                        lambda host, tail: f"{host}/{tail}",
                        st.sampled_from(["https://cdn.example.net", "http://a-1.b.org"]),
                        CANONICAL_TAILS.filter(str.isascii),
                    )
                }
            ),
            min_size=1,
            max_size=4,
        ),
        "alternates": st.lists(
            st.fixed_dictionaries(
                {
                    "hreflang": st.sampled_from(["fr", "en-GB", "x-default", "FR"]),
                    "href": CANONICAL_TAILS.filter(str.isascii).map(
                        lambda tail: f"https://www.example.com/{tail}"
                    ),
                }
            ),
            min_size=1,
            max_size=4,
        ),
    },
)


@settings(max_examples=1000, deadline=None)
@given(record=TAKEN, style=st.integers(0, 3))
def test_valid_lines_of_the_common_shape_are_taken_as_the_same_page(
    record: dict[str, Any], style: int
) -> None:
    order = ("url", "type", "version", "lastmod", "changefreq", "priority", "hreflang")
    record = {key: record[key] for key in (*order, "images", "alternates") if key in record}
    line = as_line(record, style)
    # \u escapes (ensure_ascii) are left to the full path: the line reader has no decoder.
    assert assert_same_page(line) or (style == 2 and "\\u" in line)


@pytest.mark.parametrize(
    "line",
    [
        '{"url": "https://www.example.com/a", "version": 1, "version": 2}\n',
        '{"type": "publish", "url": "https://www.example.com/a", "type": "publish"}\n',
        '{"version": 1, "url": "https://www.example.com/a", "version": 2}\n',
        '{"url": "https://www.example.com/a", "lastmod": "2026-02-30"}\n',
        '{"url": "https://www.example.com/a", "priority": 1.5}\n',
        '{"url": "https://www.example.com/a", "priority": 01}\n',
        '{"url": "https://www.example.com/a", "version": 012}\n',
        '{"url": "https://www.example.com/a", "images": [{"loc": "https://bad_host/a.jpg"}]}\n',
        '{"url": "https://www.example.com/a"} {"url": "https://www.example.com/b"}\n',
        '{"url": "https://www.example.com/a",}\n',
        '{"url": "https://www.example.com/a\\u00e9"}\n',
        '{"url": "https://www.example.com/a\udcff"}\n',
    ],
)
def test_lines_the_line_reader_leaves_to_the_full_path(line: str) -> None:
    assert READ_LINE(line) is None


def test_lines_of_the_common_shapes_are_taken() -> None:
    lines = [
        '{"url": "https://www.example.com/a?b=1&c=2", "lastmod": "2026-11-20"}\n',
        '{"type":"publish","version":7,"url":"https://www.example.com/caf\u00e9/\u65e5"}',
        '{"url": "https://www.example.com/", "version": 3, "lastmod": "2026-11-20T09:30:00Z", '
        '"changefreq": "daily", "priority": 0.50, "images": [{"loc": "https://cdn.example.net'
        '/a.jpg"}, {"loc": "https://cdn.example.net/a.jpg"}, {"loc": "http://x.org/%C3%A9"}]}',
        '{"url": "https://www.example.com/en", "hreflang": "EN-gb", "alternates": [{"hreflang": '
        '"de", "href": "https://www.example.com/de?a&b"}, {"hreflang": "X-Default", "href": '
        '"https://www.example.com/"}, {"hreflang": "de", "href": "https://www.example.com/de?a&b"}'
        "]}",
    ]
    assert all(assert_same_page(line) for line in lines)


PAGE_URLS = st.sampled_from([f"https://www.example.com/{n}" for n in range(8)])
DECLARATIONS = st.lists(
    st.tuples(
        PAGE_URLS,
        st.one_of(st.none(), st.sampled_from(["en", "de", X_DEFAULT])),
        st.lists(
            st.tuples(st.sampled_from(["en", "de", "fr", X_DEFAULT]), PAGE_URLS), max_size=4
        ).map(lambda pairs: tuple(sorted(set(pairs)))),
        st.booleans(),
    ),
    max_size=8,
    unique_by=lambda declaration: declaration[0],
)


@settings(max_examples=1000, deadline=None)
@given(declarations=DECLARATIONS)
def test_cluster_alternates_are_what_each_member_lists(
    declarations: list[tuple[str, str | None, Any, bool]],
) -> None:
    changes = [
        PageChange(
            url=url,
            version=Decimal(0),
            entry=SitemapEntry(url) if live else None,
            hreflang=lang,
            alternates=pairs,
        )
        for url, lang, pairs, live in declarations
    ]
    clusters = clusters_of(changes)
    expected = {url: alternates(clusters[url], url) for url in clusters}
    got = cluster_alternates(
        (url, lang, pairs, live) for url, lang, pairs, live in declarations if lang or pairs
    )
    assert got == {url: pairs for url, pairs in expected.items() if pairs}


def test_the_line_reader_percent_encodes_every_non_ascii_character_it_lets_through() -> None:
    refused = re.compile(f"[{NON_ASCII_REFUSED}]")
    allowed = "".join(chr(code) for code in range(0x80, 0x110000) if not refused.match(chr(code)))
    check_characters(allowed)  # none of them is refused by the URL rules
    for start in range(0, len(allowed), 150):  # 150 characters encode to at most 1,800
        chunk = allowed[start : start + 150]
        line = json.dumps({"url": f"https://www.example.com/{chunk}"}, ensure_ascii=False)
        page = READ_LINE(line)
        assert page is not None
        assert page[0] == normalise_url(f"https://www.example.com/{chunk}", SITE)
        if start % 15000 == 0:
            assert assert_same_page(line)


@pytest.mark.parametrize(("name", "event"), _corpus_events())
def test_no_bad_input_case_is_taken_by_the_line_reader_unless_it_is_valid(
    name: str, event: Any
) -> None:
    for style in range(4):
        try:
            line = as_line(event, style) if isinstance(event, dict) else json.dumps(event)
        except (TypeError, ValueError):
            return
        assert_same_page(line)


# --- decoding ---------------------------------------------------------------------------------

JSON_NUMBERS = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: str(d).replace("E", "e")),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0.10", "-0.0", "1E2", "0.30000000000000001", "1e-400", "1e400", "5.0"]),
)
JSON_RECORDS = st.fixed_dictionaries(
    {"url": st.just('"https://www.example.com/a"')},
    optional={
        "priority": JSON_NUMBERS,
        "version": JSON_NUMBERS,
        "images": JSON_NUMBERS.map(lambda n: f'[{{"loc": "x", "n": {n}}}]'),
        "videos": JSON_NUMBERS.map(lambda n: f'[{{"rating": [{n}]}}]'),
        "nested": JSON_NUMBERS.map(lambda n: f'{{"a": {{"b": {n}}}}}'),
        "list": JSON_NUMBERS.map(lambda n: f"[[{n}]]"),
    },
).map(lambda fields: "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}")


def _typed(value: Any) -> Any:
    """A value with every number's type and exact value spelled out, for comparison."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, Decimal):
        return ("decimal", value.normalize() if value.is_finite() else str(value))
    return (type(value).__name__, value)


@settings(max_examples=800, deadline=None)
@given(text=st.one_of(JSON_RECORDS, JSON_NUMBERS, st.just('{"url": "\\ud800"}')))
def test_the_orjson_decoder_gives_the_exact_decoders_values(text: str) -> None:
    fast = pages._decode(text, "t")
    exact = pages._DECODER.decode(text)
    assert fast.error is None
    assert _typed(fast.value) == _typed(exact)


def test_orjson_is_what_decodes_in_this_environment() -> None:
    assert pages._FAST_LOADS is not None  # the dev extra installs it: the tests above use it


# --- whole builds -----------------------------------------------------------------------------


def mixed_pages(count: int) -> list[dict[str, Any]]:
    """Escaping, non-ASCII, images, hreflang clusters, duplicates, unpublishes and bad rows."""
    rows: list[dict[str, Any]] = []
    for n in range(count):
        row: dict[str, Any] = {"url": f"https://www.example.com/p/{n}?a=1&b=<{n % 3}>"}
        if n % 5 == 1:
            row["url"] = f"https://WWW.example.com/caf\u00e9/{n}/\u65e5\u672c"
        if n % 4 == 2:  # the commonest shape (JSON Lines: whole lines read as they are)
            row["url"] = f"https://www.example.com/q/{n % 50}/caf\u00e9?a=1&b=2"
            if n % 3:
                row["lastmod"] = f"2026-0{1 + n % 9}-1{n % 10}"
        if n % 3:
            row["lastmod"] = f"2026-0{1 + n % 9}-1{n % 10}T0{n % 10}:30:00+01:00"
        if n % 4 == 0:
            row["priority"] = [0.1, Decimal("0.10"), 1, 0.25][n % 16 // 4]
        if n % 6 == 0:
            row["changefreq"] = "weekly"
        if n % 10 == 3:
            row["images"] = [
                {"loc": f"https://cdn.example.net/{n}/{k}\u00e9.jpg"} for k in range(3)
            ]
        if n % 10 == 5:
            lang = ("en", "de", "fr")[n // 10 % 3]
            row["url"] = f"https://www.example.com/{lang}/{n // 30}"
            row["hreflang"] = lang
            row["alternates"] = [
                {"hreflang": other, "href": f"https://www.example.com/{other}/{n // 30}"}
                for other in ("en", "de", "fr")
                if other != lang
            ]
        if n % 17 == 0:
            row["url"] = "https://www.example.com/p/1?a=1&b=<1>"  # a duplicate
            row["version"] = n
        if n % 19 == 0:
            row = {"type": "unpublish", "url": row["url"], "version": n + 1}
        if n % 23 == 0:
            row["lastmod"] = "2026-02-30"  # rejected
        if n % 29 == 0:
            row["url"] = "https://www.example.com/a b"  # rejected
        rows.append(row)
    rows.append({"url": "https://www.example.com/news/1", "news": {"x": 1}})  # full path only
    return rows


def test_build_writes_the_same_bytes_on_the_fast_and_the_full_path(tmp_path: Path) -> None:
    rows = mixed_pages(600)
    source = tmp_path / "pages.jsonl"
    source.write_text(
        "".join(json.dumps(row, ensure_ascii=False, default=float) + "\n" for row in rows),
        encoding="utf-8",
    )
    records = list(read_records(source))
    limits = Limits(max_urls_per_shard=100)
    fast = render_site(records, SITE, limits, fast=True)
    full = render_site(records, SITE, limits, fast=False)
    assert fast.files == full.files
    assert fast.result.rejected == full.result.rejected
    assert fast.result.rejected  # the bad rows were there, and refused alike
    assert (fast.result.pages, fast.result.duplicates, fast.result.removed) == (
        full.result.pages,
        full.result.duplicates,
        full.result.removed,
    )
    lines = render_site(read_pages([source], SITE), SITE, limits)
    assert lines.files == full.files
    assert lines.result.rejected == full.result.rejected
    assert lines.result.shards == full.result.shards
    assert (lines.result.pages, lines.result.duplicates, lines.result.removed) == (
        full.result.pages,
        full.result.duplicates,
        full.result.removed,
    )
    taken = sum(1 for item in read_pages([source], SITE) if isinstance(item, tuple))
    assert 0 < taken < len(rows)  # the line reader took most lines, not all
    shard = fast.files["sitemap-pages-00001.xml.gz"]
    assert shard == render_site(records, SITE, limits).files["sitemap-pages-00001.xml.gz"]


def test_records_in_memory_build_alike_on_both_paths() -> None:
    records = [Record(str(n), row) for n, row in enumerate(mixed_pages(200))]
    fast = render_site(records, SITE, Limits(max_urls_per_shard=50))
    full = render_site(records, SITE, Limits(max_urls_per_shard=50), fast=False)
    assert fast.files == full.files


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("a&<>\"'\r\n;#é"))))
def test_escape_is_the_translation_table(text: str) -> None:
    assert escape(text) == text.translate(_ESCAPES)


def plain(items: Any) -> list[Any]:
    """Records comparable by value (an exception equals only itself)."""
    return [
        item if isinstance(item, tuple) else (item.origin, item.value, repr(item.error))
        for item in items
    ]


def test_reading_in_two_processes_gives_the_same_records_and_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = mixed_pages(300)
    source = tmp_path / "pages.jsonl"
    lines = [json.dumps(row, ensure_ascii=False, default=float) for row in rows]
    lines[7:7] = ["", "  ", "not json", "[1, 2]"]  # blank lines are skipped, bad ones refused
    source.write_text("\n".join(lines), encoding="utf-8")  # no final line end
    alone = plain(read_pages([source], SITE, parallel_from=10**9))
    assert plain(read_pages([source], SITE, parallel_from=2)) == alone
    limits = Limits(max_urls_per_shard=40)
    full = render_site(read_records(source), SITE, limits, fast=False)
    built = render_site(read_pages([source], SITE, parallel_from=2), SITE, limits)
    assert built.files == full.files
    assert built.result.rejected == full.result.rejected
    # The other process failing (or no fork): its lines are read here, to the same records.
    monkeypatch.setattr(pages, "_read_elsewhere", lambda lines, site: lambda: None)
    assert plain(read_pages([source], SITE, parallel_from=2)) == alone
    monkeypatch.setattr(pages, "_read_elsewhere", lambda lines, site: None)
    assert plain(read_pages([source], SITE, parallel_from=2)) == alone


def test_a_reader_left_early_still_waits_for_the_other_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "pages.jsonl"
    source.write_text(
        "".join(f'{{"url": "https://www.example.com/{n}"}}\n' for n in range(50)), "utf-8"
    )
    real, waited = pages._read_elsewhere, []

    def elsewhere(lines: list[str], site: Site) -> Any:
        result = real(lines, site)
        assert result is not None
        return lambda: waited.append(result())

    monkeypatch.setattr(pages, "_read_elsewhere", elsewhere)
    reader = read_pages([source], SITE, parallel_from=2)
    assert next(reader)[0] == "https://www.example.com/0"
    reader.close()  # the generator's finally collects the child: no zombie, no open pipe
    assert len(waited) == 1
    assert len(waited[0]) == 30  # the last three fifths, read there


def test_the_line_patterns_url_characters_are_what_normalise_url_keeps() -> None:
    # ASCII: exactly the characters normalise_url keeps as they are (less those that
    # check_characters refuses first), and "%" (escapes are checked apart); no non-ASCII
    # character outside NON_ASCII_REFUSED... is refused by the pattern itself.
    for chars, safe in (
        (fast_records._PATH_CHARS, urls._PATH_SAFE),
        (fast_records._QUERY_CHARS, urls._QUERY_SAFE),
    ):
        pattern = re.compile(chars)
        matched = {chr(code) for code in range(0x80) if pattern.match(chr(code))}
        assert matched == (safe | {"%"}) - set(urls._FORBIDDEN)
        refused = re.compile(f"[{NON_ASCII_REFUSED}]")
        assert all(
            pattern.match(chr(code)) or refused.match(chr(code)) for code in range(0x80, 0x3000)
        )


KEYS = st.sampled_from(["url", "loc", "a", 'q"uote', "back\\slash", "x:y"])
JSON_VALUES = st.recursive(
    st.one_of(st.integers(-5, 5), st.sampled_from(["s", '":', "\\", "a\\u00e9"]), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(st.tuples(KEYS, inner), max_size=4),  # an object, keys maybe repeated
    ),
    max_leaves=8,
)


def _json_text(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(item, tuple) for item in value):
        pairs = (f"{json.dumps(key)}: {_json_text(item)}" for key, item in value)
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_json_text(item) for item in value) + "]"
    return json.dumps(value)


@settings(max_examples=800, deadline=None)
@given(pairs=st.lists(st.tuples(KEYS, JSON_VALUES), min_size=1, max_size=5))
def test_the_build_refuses_repeated_keys_as_the_ingest_function_does(pairs: Any) -> None:
    text = _json_text(pairs)
    record = pages._decode(text, "t")
    try:
        ingest: Any = _loads(text)
    except ValueError as exc:
        ingest = ("refused", str(exc))
    if isinstance(ingest, tuple):
        assert record.error is not None
        assert record.error.code == "malformed_json"
        assert ingest[1] in record.error.detail
    else:
        assert record.error is None
        assert _typed(record.value) == _typed(ingest)


@pytest.mark.parametrize(
    "line",
    [
        '{"url": "https://www.example.com/a", "url": "https://www.example.com/b"}',
        '{"url": "https://www.example.com/a", "lastmod": "2026-01-01", "lastmod": "2026-01-02"}',
        '{"url": "https://www.example.com/a", "images": [{"loc": "https://c.example/1.jpg", '
        '"loc": "https://c.example/2.jpg"}]}',
        '{"type": "publish", "url": "https://www.example.com/a", "type": "publish"}',
    ],
)
def test_a_record_with_a_repeated_key_is_refused_on_every_path(line: str) -> None:
    page, full, ingest = line_outcomes(line + "\n")
    assert page is None
    assert full[0] == ingest[0] == "rejected"
    assert full[1].startswith("malformed_json: ")
    assert ingest == ("rejected", "malformed_json")
