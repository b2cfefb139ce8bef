"""Page records: reading JSON Lines, JSON and CSV, and validating each exactly as its event."""

from __future__ import annotations

import gzip
import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import PageChange, parse_event, parse_record
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.pages import (
    Record,
    page_change,
    read_records,
    record_value,
)

SITE = Site.parse("https://www.example.com")
PORTED = Site.parse("http://127.0.0.1:8080")


def outcome(call: Any) -> Any:
    try:
        return call()
    except InvalidEvent as exc:
        return ("rejected", exc.reason)


def read(path: Path) -> list[Any]:
    """Each record's origin and its change's URL and priority, or its reason code."""
    result = []
    for record in read_records(path):
        try:
            change = page_change(record, SITE)
        except InvalidEvent as exc:
            result.append((record.origin, exc.code))
            continue
        priority = change.entry.priority if change.entry else None
        result.append((record.origin, change.url, priority))
    return result


# --- reading ------------------------------------------------------------------------------


def test_json_lines_are_read_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    path.write_text('{"url": "https://www.example.com/a", "priority": 0.1}\n\n{"url": "b"}\n')
    assert read(path) == [
        (f"{path}:1", "https://www.example.com/a", "0.1"),
        (f"{path}:3", "url_not_absolute"),
    ]


def test_a_malformed_json_line_is_refused_alone(tmp_path: Path) -> None:
    path = tmp_path / "pages.ndjson"
    path.write_text('{"url": "https://www.example.com/a"}\n{"url": \n[NaN]\n')
    assert read(path) == [
        (f"{path}:1", "https://www.example.com/a", None),
        (f"{path}:2", "malformed_json"),
        (f"{path}:3", "malformed_json"),
    ]


def test_a_json_array_gives_one_record_per_element(tmp_path: Path) -> None:
    path = tmp_path / "pages.json"
    path.write_text('[{"url": "https://www.example.com/a"}, {"url": "https://www.example.com/b"}]')
    assert [entry[:2] for entry in read(path)] == [
        (f"{path}#0", "https://www.example.com/a"),
        (f"{path}#1", "https://www.example.com/b"),
    ]


def test_a_json_object_is_one_record_and_lines_in_a_json_file_are_json_lines(
    tmp_path: Path,
) -> None:
    single = tmp_path / "one.json"
    single.write_text('{"url": "https://www.example.com/a"}')
    assert read(single) == [(str(single), "https://www.example.com/a", None)]
    lines = tmp_path / "lines.json"
    lines.write_text('{"url": "https://www.example.com/a"}\n{"url": "https://www.example.com/b"}\n')
    assert len(read(lines)) == 2


def test_csv_reads_the_header_in_any_case_numbers_and_empty_cells(tmp_path: Path) -> None:
    path = tmp_path / "pages.csv"
    path.write_text(
        "\ufeffURL,Lastmod,priority,version,changefreq\n"
        "https://www.example.com/a,2026-11-20,0.5,7,weekly\n"
        "https://www.example.com/b,,,,\n"
        ",,,,\n"
        "https://www.example.com/c,,high,,\n",
        encoding="utf-8",
    )
    (a, b, c) = list(read_records(path))
    assert record_value(a) == {
        "url": "https://www.example.com/a",
        "lastmod": "2026-11-20",
        "priority": Decimal("0.5"),
        "version": Decimal(7),
        "changefreq": "weekly",
    }
    assert page_change(a, SITE).version == 7
    assert record_value(b) == {"url": "https://www.example.com/b"}
    assert outcome(lambda: page_change(c, SITE))[1].startswith("invalid_priority")


@pytest.mark.parametrize("sep", [";", "\t"])
def test_a_csv_separated_by_semicolons_or_tabs_is_read_by_its_header(
    tmp_path: Path, sep: str
) -> None:
    """What a spreadsheet writes where the comma is the decimal mark, or a tab-separated
    export: the separator is the one that makes the header name a url column."""
    path = tmp_path / "pages.csv"
    rows = [
        ['\ufeff"URL"', "lastmod", "title"],
        ["https://www.example.com/a?x=1,2", "2026-11-20", '"Fish; chips, and peas"'],
        ["https://www.example.com/b", "", '"two\nlines'],
    ]
    path.write_text("".join(sep.join(row) + "\n" for row in rows), encoding="utf-8")
    a, b = list(read_records(path))
    assert record_value(a) == {
        "url": "https://www.example.com/a?x=1,2",
        "lastmod": "2026-11-20",
        "title": "Fish; chips, and peas",
    }
    assert b.error is not None
    assert b.error.detail == "a quote is never closed: lines 3-4 were read as one row"


def test_csv_cells_are_trimmed_and_a_header_ends_at_any_line_end(tmp_path: Path) -> None:
    """As people write CSV by hand ("url, lastmod"), and as classic Mac files end lines."""
    path = tmp_path / "pages.csv"
    path.write_text("lastmod; url ;changefreq\r 2026-11-20 ; https://www.example.com/a ;weekly\r")
    (record,) = read_records(path)
    assert record_value(record) == {
        "url": "https://www.example.com/a",
        "lastmod": "2026-11-20",
        "changefreq": "weekly",
    }


def test_a_text_sitemap_is_page_records(tmp_path: Path) -> None:
    """A list of URLs, what ``build --format txt`` writes."""
    path = tmp_path / "sitemap.txt"
    path.write_text("https://www.example.com/a\n\n https://www.example.com/b\r\n")
    assert [(r.origin, record_value(r)) for r in read_records(path)] == [
        (f"{path}:1", {"url": "https://www.example.com/a"}),
        (f"{path}:3", {"url": "https://www.example.com/b"}),
    ]


def test_a_tsv_file_is_csv_separated_by_tabs(tmp_path: Path) -> None:
    path = tmp_path / "pages.tsv"
    path.write_text("title\turl\nA, B\thttps://www.example.com/a\n")
    (record,) = read_records(path)
    assert record_value(record) == {"title": "A, B", "url": "https://www.example.com/a"}


def test_a_csv_row_with_the_wrong_number_of_cells_is_rejected_alone(tmp_path: Path) -> None:
    path = tmp_path / "pages.csv"
    path.write_text("url,lastmod\nhttps://www.example.com/a,2026-11-20,extra\n")
    assert read(path) == [(f"{path}:2", "malformed_csv")]


def test_a_csv_quote_never_closed_is_refused_not_the_rest_of_the_file_read_as_one_cell(
    tmp_path: Path,
) -> None:
    """Loose quoting that spreadsheets write is read as before; only a quote that runs to
    the end of the file is refused, naming the lines it took."""
    path = tmp_path / "pages.csv"
    path.write_text(
        "url,title\n"
        'https://www.example.com/a,"A ""quoted"" title"\n'
        'https://www.example.com/b,"B" and more\n'
        'https://www.example.com/c,"C" \n'
        'https://www.example.com/m,"two\nlines"\n'
        'https://www.example.com/d,"Say ""hi\n'
        "https://www.example.com/e,E\n"
    )
    records = list(read_records(path))
    assert [r.origin for r in records] == [f"{path}:{n}" for n in (2, 3, 4, 5, 7)]
    assert [record_value(r)["title"] for r in records[:4]] == [
        'A "quoted" title',
        "B and more",
        "C",  # trimmed, as every cell
        "two\nlines",
    ]
    assert records[4].error is not None
    assert (records[4].error.code, records[4].error.detail) == (
        "malformed_csv",
        "a quote is never closed: lines 7-8 were read as one row",
    )
    path.write_text('url,title,priority\nhttps://www.example.com/a,"A,0.5\n')  # the last line
    (last,) = list(read_records(path))
    assert last.error is not None
    assert last.error.detail == "a quote is never closed: line 2"


@pytest.mark.parametrize(
    "broken", ['[{"url": "a"},\n{"url": "b"},\n]', '[{"url": "a"},, {"url": "b"}]', "[,]"]
)
def test_a_json_array_with_a_comma_too_many_is_not_an_array(tmp_path: Path, broken: str) -> None:
    """Its records are not taken one by one as if the array were whole, nor its lines as
    JSON Lines: it is one document, refused with the reason that says where."""
    path = tmp_path / "pages.json"
    path.write_text(broken)
    (record,) = read_records(path)
    assert outcome(lambda: page_change(record, SITE))[1].startswith("malformed_json")


def test_a_csv_cell_longer_than_the_csv_module_s_default_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "pages.csv"
    article = "x" * 200_000
    path.write_text(
        f'url,body\nhttps://www.example.com/a,"{article}"\nhttps://www.example.com/b,b\n'
    )
    assert [origin for origin, *_ in read(path)] == [f"{path}:2", f"{path}:3"]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("lastmod\n", "no 'url' column"),
        ("url,URL\n", "repeats a column"),
        ('url,"title\n', "the header row opens a quote that is never closed"),
    ],
)
def test_a_bad_csv_header_is_one_user_error(tmp_path: Path, header: str, message: str) -> None:
    path = tmp_path / "pages.csv"
    path.write_text(header + "https://www.example.com/a,x\n")
    with pytest.raises(UserError, match=message):
        list(read_records(path))


def test_other_csv_columns_are_ignored_and_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pages.csv"
    path.write_text(
        "Author,URL,Notes\nA,https://www.example.com/a,x\nB,https://www.example.com/b,\n"
    )
    assert [record_value(record) for record in read_records(path)] == [
        {"url": "https://www.example.com/a"},
        {"url": "https://www.example.com/b"},
    ]
    assert capsys.readouterr().err == (
        f"sitemap-updater: warning: {path}: column(s) 'Author', 'Notes' ignored (page records "
        "have type, url, version, lastmod, changefreq, priority, title)\n"
    )


def test_a_missing_file_or_a_folder_is_a_user_error_saying_which(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        list(read_records(tmp_path / "nope.jsonl"))
    with pytest.raises(UserError, match=f"^{tmp_path} is a directory: give the files in it$"):
        list(read_records(tmp_path))


@pytest.mark.parametrize("name", ["pages.jsonl", "pages.json", "lines.json"])
def test_a_utf8_bom_at_the_start_of_a_json_file_is_not_part_of_the_first_record(
    tmp_path: Path, name: str
) -> None:
    text = (
        '[\n  {"url": "https://www.example.com/a"},\n  {"url": "https://www.example.com/b"}\n]\n'
        if name == "pages.json"
        else '{"url": "https://www.example.com/a"}\n{"url": "https://www.example.com/b"}\n'
    )
    path = tmp_path / name
    path.write_text("\ufeff" + text, encoding="utf-8")
    assert [entry[1] for entry in read(path)] == [
        "https://www.example.com/a",
        "https://www.example.com/b",
    ]


def test_a_line_separator_inside_a_json_string_ends_no_line(tmp_path: Path) -> None:
    # A news title pasted from a word processor may hold U+2028 or U+0085 as they are.
    text = (
        '{"url": "https://www.example.com/a", "lastmod": "2026-11-20", "x": "One\u2028two"}\n'
        '{"url": "https://www.example.com/b"}\n'
    )
    as_json, as_lines = tmp_path / "lines.json", tmp_path / "lines.jsonl"
    as_json.write_text(text, encoding="utf-8")
    as_lines.write_text(text, encoding="utf-8")
    assert [entry[1:] for entry in read(as_json)] == [entry[1:] for entry in read(as_lines)]
    assert [entry[1:] for entry in read(as_lines)] == [
        ("unknown_field",),
        ("https://www.example.com/b", None),
    ]


def test_a_record_of_a_json_array_that_repeats_a_key_or_holds_nan_is_refused_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pages.json"
    path.write_text(
        '[\n  {"url": "https://www.example.com/a"},\n'
        '  {"url": "https://www.example.com/b", "priority": 0.5, "priority": 0.6},\n'
        '  {"url": "https://www.example.com/c", "priority": NaN},\n'
        '  {"url": "https://www.example.com/d", "x": ' + "[" * 1000 + "]" * 1000 + "},\n"
        '  {"url": "https://www.example.com/d", "version": 1' + "0" * 4400 + "},\n"
        '  {"url": "https://www.example.com/e,]}", "priority": 0.5}\n]\n'
    )
    records = list(read_records(path))
    reasons = [outcome(lambda r=r: page_change(r, SITE)) for r in records]
    assert len(reasons) == 6
    assert reasons[0].url == "https://www.example.com/a"
    assert reasons[1] == ("rejected", "malformed_json: not JSON: duplicate key 'priority'")
    assert reasons[2] == ("rejected", "malformed_json: not JSON: NaN is not valid JSON")
    assert reasons[3][1].startswith("malformed_json: not JSON: maximum recursion depth")
    assert reasons[4] == (
        "rejected",
        "invalid_version: version has more than 38 significant digits",
    )
    assert reasons[5].url == "https://www.example.com/e,%5D%7D"
    path.write_text('{"url": "https://www.example.com/a", "url": "https://www.example.com/b"}')
    (record,) = read_records(path)
    assert outcome(lambda: page_change(record, SITE)) == (
        "rejected",
        "malformed_json: not JSON: duplicate key 'url'",
    )


@pytest.mark.parametrize("name", ["pages.csv", "pages.jsonl", "pages.json"])
def test_a_file_that_is_not_utf8_is_refused_whole_naming_the_first_bad_byte(
    tmp_path: Path, name: str
) -> None:
    # A spreadsheet exported as Windows-1252: every row's bytes are not its text.
    path = tmp_path / name
    path.write_bytes(b"url\nhttps://www.example.com/a\nhttps://www.example.com/caf\xe9\n")
    message = f"{path} is not UTF-8 (line 3: byte 0xE9): save it as UTF-8 (in Excel: CSV UTF-8)"
    with pytest.raises(UserError) as refused:
        list(read_records(path))
    assert str(refused.value) == message


# --- validation: exactly the event's ---------------------------------------------------------


def test_a_page_record_is_its_publish_event_with_the_default_version() -> None:
    record = Record("x", {"url": "https://WWW.example.com/caf\u00e9", "priority": 1})
    change = page_change(record, SITE, Decimal(3))
    assert change == parse_event(
        {
            "type": "publish",
            "version": 3,
            "url": "https://www.example.com/caf%C3%A9",
            "priority": 1,
        },
        SITE,
    )


def test_a_record_may_carry_its_own_type_and_version() -> None:
    record = Record("x", b'{"type": "unpublish", "url": "https://www.example.com/a", "version": 9}')
    assert page_change(record, SITE) == PageChange(
        url="https://www.example.com/a", version=Decimal(9), entry=None
    )


@pytest.mark.parametrize(
    ("record", "code"),
    [
        ({"url": "https://other.example.com/a"}, "url_foreign_host"),
        ({"url": "https://www.example.com/a", "lastmod": "2026-13-01"}, "invalid_lastmod"),
        ({"url": "https://www.example.com/a", "headline": "x"}, "unknown_field"),
        ({"lastmod": "2026-11-20"}, "missing_field"),
        ({"url": "https://www.example.com/" + "a" * 2048}, "url_too_long"),
        (["https://www.example.com/a"], "not_an_object"),
        ({"url": "https://www.example.com/a", "version": -1}, "invalid_version"),
        ({"url": "https://www.example.com/a", "type": "delete"}, "unknown_type"),
    ],
)
def test_rejections_have_the_events_reasons(record: Any, code: str) -> None:
    for value in (json.dumps(record).encode(), record):
        if not isinstance(value, dict | bytes):
            continue
        with pytest.raises(InvalidEvent) as caught:
            page_change(Record("x", value), SITE)
        assert caught.value.code == code


URL_TEXT = st.text(
    alphabet=st.sampled_from(list("abcAZ09-._~!$&()*+,;=:@/?%#'<>\" \\\u00e9\u200e\t2Ee\ud800")),
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
        st.decimals(allow_nan=False, allow_infinity=False),
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
        st.sampled_from(["0.5", True]),
        st.none(),
    ),
    "images": st.lists(st.fixed_dictionaries({"loc": URLS}), max_size=2),
    "hreflang": st.sampled_from(["en", "EN-gb", "x-default", "english"]),
    "alternates": st.lists(
        st.fixed_dictionaries({"hreflang": st.sampled_from(["de", "fr"]), "href": URLS}),
        max_size=2,
    ),
    "extra": st.just("x"),
}
RECORDS = st.fixed_dictionaries(
    {"url": URLS}, optional={k: v for k, v in FIELD_VALUES.items() if k != "url"}
)


def _spelt(record: dict[str, Any], rng: random.Random) -> bytes:
    """The record as JSON text in one of its many spellings: key order, escapes, spaces."""
    items = list(record.items())
    rng.shuffle(items)
    text = json.dumps(
        dict(items),
        ensure_ascii=rng.random() < 0.5,
        separators=rng.choice([(",", ":"), (", ", ": "), (" ,", " : ")]),
        default=str,
    )
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=500, deadline=None)
@given(record=RECORDS, ported=st.booleans(), seed=st.integers(0, 2**32))
def test_every_spelling_of_a_record_gives_the_same_answer(
    record: dict[str, Any], ported: bool, seed: int
) -> None:
    """msgspec's reading and the standard library's agree, whatever the key order, escapes
    or spaces: one contract, whichever decoder ran."""
    site = PORTED if ported else SITE
    if isinstance(record.get("url"), str):
        record = {**record, "url": record["url"].replace("https://www.example.com", site.origin)}
    record = {k: float(v) if isinstance(v, Decimal) else v for k, v in record.items()}
    expected = outcome(lambda: parse_record(json.loads(json.dumps(record)), site))
    rng = random.Random(seed)
    for _ in range(3):
        spelt = _spelt(record, rng)
        assert outcome(lambda spelt=spelt: parse_record(spelt, site)) == expected


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pages.jsonl.gz", '{"url": "https://www.example.com/a"}\n'),
        ("Pages.CSV.GZ", "url\nhttps://www.example.com/a\n"),
    ],
)
def test_a_gzipped_file_is_read_by_the_format_its_name_gives(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()))
    (record,) = read_records(path)
    assert page_change(record, SITE).url == "https://www.example.com/a"
    path.write_bytes(gzip.compress(text.encode())[:-8])  # a download cut short
    with pytest.raises(UserError, match="bad gzip data"):
        list(read_records(path))


@pytest.mark.parametrize(("name", "hint"), [("sitemap.xml", "backfill"), ("pages", ".tsv")])
def test_a_file_of_another_format_is_one_usage_error(tmp_path: Path, name: str, hint: str) -> None:
    """Not a rejection per line as if each were JSON: the formats page records come in."""
    path = tmp_path / name
    path.write_text('<?xml version="1.0"?>\n<urlset>\n</urlset>\n')
    with pytest.raises(UserError, match=hint):
        list(read_records(path))
