"""Page records: reading JSON Lines, JSON and CSV, and validating each exactly as its event."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import PageChange, parse_event
from sitemap_updater.domain.urls import Site, normalise_url
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.pages import as_event, page_change, read_pages, read_paths, read_records

SITE = Site.parse("https://www.example.com")
PORTED = Site.parse("http://127.0.0.1:8080")


def values(path: Path) -> list[Any]:
    return [record.value for record in read_records(path)]


# --- reading ------------------------------------------------------------------------------


def test_json_lines_are_read_line_by_line_with_decimal_numbers(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    path.write_text('{"url": "https://www.example.com/a", "priority": 0.1}\n\n{"url": "b"}\n')
    records = list(read_records(path))
    assert [r.origin for r in records] == [f"{path}:1", f"{path}:3"]
    assert records[0].value == {"url": "https://www.example.com/a", "priority": Decimal("0.1")}


def test_a_malformed_json_line_is_a_record_with_its_error(tmp_path: Path) -> None:
    path = tmp_path / "pages.ndjson"
    path.write_text('{"url": "https://www.example.com/a"}\n{"url": \n[NaN]\n')
    records = list(read_records(path))
    assert records[0].error is None
    assert [r.error.code for r in records[1:] if r.error] == ["malformed_json", "malformed_json"]


def test_a_json_array_gives_one_record_per_element(tmp_path: Path) -> None:
    path = tmp_path / "pages.json"
    path.write_text('[{"url": "https://www.example.com/a"}, {"url": "https://www.example.com/b"}]')
    records = list(read_records(path))
    assert [r.origin for r in records] == [f"{path}#0", f"{path}#1"]
    assert values(path)[1] == {"url": "https://www.example.com/b"}


def test_a_json_object_is_one_record_and_lines_in_a_json_file_are_json_lines(
    tmp_path: Path,
) -> None:
    single = tmp_path / "one.json"
    single.write_text('{"url": "https://www.example.com/a"}')
    assert values(single) == [{"url": "https://www.example.com/a"}]
    lines = tmp_path / "lines.json"
    lines.write_text('{"url": "https://www.example.com/a"}\n{"url": "https://www.example.com/b"}\n')
    assert len(values(lines)) == 2


def test_csv_reads_the_header_turns_numbers_into_numbers_and_drops_empty_cells(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pages.csv"
    path.write_text(
        "\ufeffurl,lastmod,priority,version,changefreq\n"
        "https://www.example.com/a,2026-11-20,0.5,7,weekly\n"
        "https://www.example.com/b,,,,\n"
        ",,,,\n"
        "https://www.example.com/c,,high,,\n",
        encoding="utf-8",
    )
    assert values(path) == [
        {
            "url": "https://www.example.com/a",
            "lastmod": "2026-11-20",
            "priority": Decimal("0.5"),
            "version": Decimal(7),
            "changefreq": "weekly",
        },
        {"url": "https://www.example.com/b"},
        {"url": "https://www.example.com/c", "priority": "high"},
    ]
    with pytest.raises(InvalidEvent) as caught:
        page_change(values(path)[2], SITE)
    assert caught.value.code == "invalid_priority"


def test_a_csv_row_with_the_wrong_number_of_cells_is_rejected_alone(tmp_path: Path) -> None:
    path = tmp_path / "pages.csv"
    path.write_text("url,lastmod\nhttps://www.example.com/a,2026-11-20,extra\n")
    (record,) = read_records(path)
    assert record.error is not None
    assert record.error.code == "malformed_csv"
    assert record.origin == f"{path}:2"


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("url,title\n", r"unknown column\(s\) 'title'"),
        ("lastmod\n", "no 'url' column"),
        ("url,url\n", "repeats a column"),
    ],
)
def test_a_bad_csv_header_is_one_user_error(tmp_path: Path, header: str, message: str) -> None:
    path = tmp_path / "pages.csv"
    path.write_text(header + "https://www.example.com/a,x\n")
    with pytest.raises(UserError, match=message):
        list(read_records(path))


def test_a_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        list(read_paths([tmp_path / "nope.jsonl"]))


# --- validation: exactly the event's ---------------------------------------------------------


def test_a_page_record_is_its_publish_event_with_version_zero() -> None:
    change = page_change({"url": "https://WWW.example.com/caf\u00e9", "priority": 1}, SITE)
    assert change == parse_event(
        {
            "type": "publish",
            "version": 0,
            "url": "https://www.example.com/caf%C3%A9",
            "priority": 1,
        },
        SITE,
    )
    assert change.version == 0
    assert change.entry is not None
    assert change.entry.priority == "1.0"


def test_a_record_may_carry_its_own_type_and_version() -> None:
    change = page_change(
        {"type": "unpublish", "url": "https://www.example.com/a", "version": 9}, SITE
    )
    assert change == PageChange(url="https://www.example.com/a", version=Decimal(9), entry=None)


@pytest.mark.parametrize(
    ("record", "code"),
    [
        ({"url": "https://other.example.com/a"}, "url_foreign_host"),
        ({"url": "https://www.example.com/a", "lastmod": "2026-13-01"}, "invalid_lastmod"),
        ({"url": "https://www.example.com/a", "title": "x"}, "unknown_field"),
        ({"lastmod": "2026-11-20"}, "missing_field"),
        ({"url": "https://www.example.com/" + "a" * 2048}, "url_too_long"),
        (["https://www.example.com/a"], "not_an_object"),
        ({"url": "https://www.example.com/a", "version": -1}, "invalid_version"),
        ({"url": "https://www.example.com/a", "type": "delete"}, "unknown_type"),
    ],
)
def test_rejections_have_the_events_reasons(record: Any, code: str) -> None:
    with pytest.raises(InvalidEvent) as caught:
        page_change(record, SITE)
    assert caught.value.code == code


def _outcome(call: Any) -> Any:
    try:
        return call()
    except InvalidEvent as exc:
        return ("rejected", exc.reason)


URL_TEXT = st.text(
    alphabet=st.sampled_from(list("abcAZ09-._~!$&()*+,;=:@/?%#'<> \u00e9\u200e\t2Ee")),
    max_size=30,
)
URLS = st.one_of(
    st.builds(lambda tail: f"https://www.example.com/{tail}", URL_TEXT),
    st.builds(lambda tail: f"http://www.example.com/{tail}", URL_TEXT),
    st.builds(lambda tail: f"https://www.example.com:443/{tail}", URL_TEXT),
    st.builds(lambda tail: f"https://WWW.example.com{tail}", URL_TEXT),
    st.just("https://www.example.com"),
    st.just("https://www.example.com/" + "x" * 2030),
    st.integers(),
    st.none(),
)
FIELD_VALUES = {
    "url": URLS,
    "type": st.sampled_from(["publish", "unpublish", "other", 1]),
    "version": st.one_of(
        st.integers(min_value=-2, max_value=10**40),
        st.decimals(allow_nan=True),
        st.text(max_size=3),
        st.booleans(),
        st.none(),
    ),
    "lastmod": st.one_of(
        st.sampled_from(
            ["2026-11-20", "2026-11-20T09:30Z", "2026-11-20T09:30:00.5+01:00", "2026-02-30", "x"]
        ),
        st.integers(),
        st.none(),
    ),
    "changefreq": st.one_of(st.sampled_from(["daily", "Daily", "sometimes"]), st.none()),
    "priority": st.one_of(
        st.decimals(min_value=-1, max_value=2, places=3),
        st.floats(allow_nan=True),
        st.sampled_from(["0.5", True]),
        st.none(),
    ),
    "extra": st.just("x"),
}
RECORDS = st.one_of(
    st.fixed_dictionaries(
        {"url": URLS}, optional={k: v for k, v in FIELD_VALUES.items() if k != "url"}
    ),
    st.dictionaries(st.sampled_from(list(FIELD_VALUES)), st.just("x"), max_size=3),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=600, deadline=None)
@given(record=RECORDS, ported=st.booleans())
def test_the_fast_path_answers_exactly_as_parse_event(record: Any, ported: bool) -> None:
    site = PORTED if ported else SITE
    if ported and isinstance(record, dict) and isinstance(record.get("url"), str):
        record = {**record, "url": record["url"].replace("https://www.example.com", site.origin)}
    expected = _outcome(lambda: parse_event(as_event(record, Decimal(0)), site))
    assert _outcome(lambda: page_change(record, site)) == expected


@settings(max_examples=400, deadline=None)
@given(tail=URL_TEXT)
def test_urls_the_fast_path_keeps_are_ones_normalise_url_keeps(tail: str) -> None:
    url = f"https://www.example.com/{tail}"
    record = {"url": url}
    fast = _outcome(lambda: page_change(record, SITE))
    slow = _outcome(lambda: normalise_url(url, SITE))
    if isinstance(fast, PageChange):
        assert fast.url == slow
    else:
        assert fast == slow


@pytest.mark.parametrize("name", ["pages.jsonl", "pages.json", "lines.json"])
def test_a_utf8_bom_at_the_start_of_a_json_file_is_not_part_of_the_first_record(
    tmp_path: Path, name: str
) -> None:
    # Windows tools write one (as for CSV, which is read past it): it is the file's, not JSON.
    a, b = ({"url": f"https://www.example.com/{p}"} for p in "ab")
    text = (
        '[\n  {"url": "https://www.example.com/a"},\n  {"url": "https://www.example.com/b"}\n]\n'
        if name == "pages.json"
        else '{"url": "https://www.example.com/a"}\n{"url": "https://www.example.com/b"}\n'
    )
    path = tmp_path / name
    path.write_text("\ufeff" + text, encoding="utf-8")
    assert [(r.value, r.error) for r in read_records(path)] == [(a, None), (b, None)]
    urls = [
        item[0] if isinstance(item, tuple) else item.value["url"]
        for item in read_pages([path], SITE)
    ]
    assert urls == [a["url"], b["url"]]


def test_json_lines_in_a_json_file_are_split_where_json_lines_files_are(tmp_path: Path) -> None:
    # A JSON string may hold U+2028, U+2029 or U+0085 as they are (a news title pasted from
    # a word processor): they end no line, in a .json file of lines as in a .jsonl file.
    text = (
        '{"url": "https://www.example.com/a", "news": {"title": "One\u2028two\u0085three"}}\n'
        '{"url": "https://www.example.com/b"}\n'
    )
    as_json, as_lines = tmp_path / "lines.json", tmp_path / "lines.jsonl"
    as_json.write_text(text, encoding="utf-8")
    as_lines.write_text(text, encoding="utf-8")
    read = [(r.origin.rsplit(":", 1)[1], r.value, r.error) for r in read_records(as_json)]
    assert read == [(r.origin.rsplit(":", 1)[1], r.value, r.error) for r in read_records(as_lines)]
    assert [value["url"] for _, value, _ in read] == [
        "https://www.example.com/a",
        "https://www.example.com/b",
    ]


def test_a_record_of_a_json_array_that_repeats_a_key_or_holds_nan_is_refused_alone(
    tmp_path: Path,
) -> None:
    # As a JSON Lines line is: the array's other records are still read (they were all
    # lost, the whole file refused as one malformed document, or line by line).
    path = tmp_path / "pages.json"
    path.write_text(
        '[\n  {"url": "https://www.example.com/a"},\n'
        '  {"url": "https://www.example.com/b", "priority": 0.5, "priority": 0.6},\n'
        '  {"url": "https://www.example.com/c", "images": [{"loc": NaN}]},\n'
        '  {"url": "https://www.example.com/d", "news": {"title": [Infinity], "t": 1, "t": 2}},\n'
        '  {"url": "https://www.example.com/e", "priority": 0.5}\n]\n'
    )
    records = list(read_records(path))
    assert [r.origin for r in records] == [f"{path}#{n}" for n in range(5)]
    assert [r.value for r in records if r.error is None] == [
        {"url": "https://www.example.com/a"},
        {"url": "https://www.example.com/e", "priority": Decimal("0.5")},
    ]
    assert [str(r.error) for r in records if r.error is not None] == [
        "malformed_json: not JSON: duplicate key 'priority'",
        "malformed_json: not JSON: NaN is not valid JSON",
        "malformed_json: not JSON: Infinity is not valid JSON",
    ]
    path.write_text('{"url": "https://www.example.com/a", "url": "https://www.example.com/b"}')
    (record,) = read_records(path)
    assert (record.origin, str(record.error)) == (
        str(path),
        "malformed_json: not JSON: duplicate key 'url'",
    )


def test_a_csv_row_that_is_not_utf8_is_rejected_alone_as_in_json_lines(tmp_path: Path) -> None:
    # A spreadsheet exported as Latin-1: the row's bytes are not its text. It was a
    # UnicodeDecodeError for the whole file, whichever row held the byte.
    rows = (
        b"https://www.example.com/a\nhttps://www.example.com/caf\xe9\nhttps://www.example.com/b\n"
    )
    (tmp_path / "pages.csv").write_bytes(b"url\n" + rows)
    (tmp_path / "pages.jsonl").write_bytes(
        b"".join(b'{"url": "%s"}\n' % row for row in rows.splitlines())
    )
    outcomes = {}
    for name in ("pages.csv", "pages.jsonl"):
        outcomes[name] = []
        for record in read_records(tmp_path / name):
            try:
                outcomes[name].append(page_change(record.value, SITE).url)
            except InvalidEvent as exc:
                outcomes[name].append(exc.code)
    assert (
        outcomes["pages.csv"]
        == outcomes["pages.jsonl"]
        == [
            "https://www.example.com/a",
            "url_xml_illegal_character",
            "https://www.example.com/b",
        ]
    )
