"""Event files into SQS message bodies: every input format of ``local/feeder.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sitemap_updater.local.feeder import MessageBody, read_file, read_paths
from sitemap_updater.ops.errors import UserError

REPO = Path(__file__).resolve().parents[2]
SITE = "https://www.example.com"


def event(path: str, version: int = 1, **fields: object) -> dict[str, object]:
    return {"type": "publish", "url": f"{SITE}{path}", "version": version, **fields}


def bodies(messages: list[MessageBody]) -> list[str]:
    return [message.body for message in messages]


def test_a_file_holding_one_event_is_one_body_as_written(tmp_path: Path) -> None:
    text = '{"type": "publish",  "url": "https://www.example.com/a", "version": 7.50}'
    path = tmp_path / "one.json"
    path.write_text(text + "\n", encoding="utf-8")

    assert read_paths([path]) == [MessageBody(text, str(path))]


def test_a_pretty_printed_event_is_one_body_with_its_layout(tmp_path: Path) -> None:
    text = json.dumps(event("/pretty"), indent=2)
    path = tmp_path / "pretty.json"
    path.write_text(f"\n{text}\n\n", encoding="utf-8")

    assert bodies(read_paths([path])) == [text]


def test_a_json_array_gives_one_body_per_element_in_order(tmp_path: Path) -> None:
    elements = [event("/a"), event("/städte/köln", 2), "not an event", 42, None]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(elements, ensure_ascii=False, indent=1), encoding="utf-8")

    messages = read_paths([path])

    assert [json.loads(body) for body in bodies(messages)] == elements
    assert "köln" in messages[1].body  # non-ASCII kept, not \u-escaped
    assert [m.origin for m in messages] == [f"{path}#{n}" for n in range(len(elements))]


def test_an_empty_array_gives_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]", encoding="utf-8")

    assert read_paths([path]) == []


def test_json_lines_are_sent_verbatim_malformed_lines_included(tmp_path: Path) -> None:
    lines = [
        '{"type": "publish", "url": "https://www.example.com/a", "version": 1}',
        '{"type":"publish","url":"https://www.example.com/b","version":2, "priority": 0.50}',
        '{"type": "publish", "url": "https://www.example.com/c", "version": 1, "priority": 1.5',
        "not json at all",
        "[1, 2, 3]",
        '  {"type": "unpublish", "url": "https://www.example.com/a", "version": 3}  ',
    ]
    path = tmp_path / "events.jsonl"
    # blank and whitespace-only lines are skipped; the line numbers still count them
    path.write_text("\n".join([lines[0], "", *lines[1:3], "   ", *lines[3:]]) + "\n")

    messages = read_paths([path])

    assert bodies(messages) == lines
    assert [m.origin for m in messages] == [f"{path}:{n}" for n in (1, 3, 4, 6, 7, 8)]


def test_ndjson_and_upper_case_suffixes_are_json_lines(tmp_path: Path) -> None:
    first, second = json.dumps(event("/n1")), json.dumps(event("/n2"))
    ndjson = tmp_path / "a.ndjson"
    ndjson.write_text(f"{first}\n{second}", encoding="utf-8")  # no final newline
    upper = tmp_path / "b.JSONL"
    upper.write_text(f"{second}\n{first}\n", encoding="utf-8")

    assert bodies(read_paths([ndjson])) == [first, second]
    assert bodies(read_paths([upper])) == [second, first]


def test_crlf_json_lines_lose_only_their_line_ending(tmp_path: Path) -> None:
    first, second = json.dumps(event("/crlf1")), json.dumps(event("/crlf2"))
    path = tmp_path / "windows.jsonl"
    path.write_bytes(f"{first}\r\n{second}\r\n".encode())

    assert bodies(read_paths([path])) == [first, second]


def test_a_json_line_holding_unicode_line_separators_stays_one_body(tmp_path: Path) -> None:
    """JSON allows U+2028, U+2029 and U+0085 raw inside strings; only \\n ends a JSON line."""
    envelope = {
        "detail-type": "Page Published\u2028(via CMS)",
        "source": "cms\x85example\u2029",
        "detail": event("/separators"),
    }
    line = json.dumps(envelope, ensure_ascii=False)
    path = tmp_path / "separators.jsonl"
    path.write_text(f"{line}\n{json.dumps(event('/next'))}\n", encoding="utf-8")

    messages = read_paths([path])

    assert len(messages) == 2
    assert messages[0].body == line
    assert json.loads(messages[0].body) == envelope


def test_an_sqs_batch_gives_each_records_body_exactly(tmp_path: Path) -> None:
    inner = [
        '{"type": "publish", "url": "https://www.example.com/q", "version": 1}',
        '{"detail-type": "Page Published", "detail": {"type": "publish", '
        '"url": "https://www.example.com/r", "version": 2}}',
        '{"type": "publish", "url": "https://www.example.com/broken"',
    ]
    batch = {
        "Records": [
            {"messageId": str(n), "body": body, "eventSource": "aws:sqs"}
            for n, body in enumerate(inner)
        ]
    }
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(batch, indent=2), encoding="utf-8")

    messages = read_paths([path])

    assert bodies(messages) == inner
    assert [m.origin for m in messages] == [f"{path}#Records[{n}]" for n in range(3)]


def test_a_json_schema_document_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"})
    )

    assert read_paths([schema]) == []
    assert read_paths([REPO / "events" / "schema.json"]) == []
    assert "a JSON Schema, not events: skipped" in capsys.readouterr().err
    read_paths([REPO / "events"])  # a folder's own schema: skipped quietly
    assert "JSON Schema" not in capsys.readouterr().err


def test_an_event_that_names_a_schema_is_sent_for_the_ingest_to_judge(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"$schema": "x", **event("/a")}))
    assert len(read_paths([path])) == 1


def test_sqs_records_without_a_text_body_are_named_in_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps(event("/a"))
    path = tmp_path / "batch.json"
    path.write_text(json.dumps({"Records": [{"messageId": "x"}, {"body": 123}, {"body": good}]}))

    assert bodies(read_paths([path])) == [good]
    assert capsys.readouterr().err.splitlines() == [
        f"sitemap-updater: warning: {path}#Records[0]: no text body: not sent",
        f"sitemap-updater: warning: {path}#Records[1]: no text body: not sent",
    ]


def test_an_array_element_no_reader_takes_is_sent_alone_for_the_ingest_to_refuse(
    tmp_path: Path,
) -> None:
    good, nan = json.dumps(event("/a")), '{"type": "publish", "url": "u", "priority": NaN}'
    huge = '{"type": "publish", "url": "u", "version": 1' + "0" * 4400 + "}"
    path = tmp_path / "array.json"
    path.write_text(f"[{good},\n {nan},\n {huge}]")
    assert bodies(read_paths([path])) == [good, nan, huge]


def test_a_malformed_json_file_is_one_body_as_written(tmp_path: Path) -> None:
    text = '{"type": "publish", "url": "https://www.example.com/a", "version": 1,'
    path = tmp_path / "broken.json"
    path.write_text(f"  {text}\n", encoding="utf-8")

    assert read_paths([path]) == [MessageBody(text, str(path))]


def test_a_non_json_file_of_several_lines_is_read_as_json_lines(tmp_path: Path) -> None:
    lines = [json.dumps(event("/l1")), json.dumps(event("/l2")), "{oops"]
    path = tmp_path / "lines.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    messages = read_paths([path])

    assert bodies(messages) == lines
    assert [m.origin for m in messages] == [f"{path}:{n}" for n in (1, 2, 3)]


def test_an_empty_file_gives_nothing(tmp_path: Path) -> None:
    for name in ("empty.json", "empty.jsonl", "blank.json"):
        (tmp_path / name).write_text("" if name.startswith("empty") else " \n\n", "utf-8")

    assert read_paths([tmp_path]) == []


def test_a_directory_is_read_in_name_order_without_its_subfolders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def put(relative: str, *paths: str) -> None:
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(json.dumps(event(p)) for p in paths) + "\n")

    put("b.jsonl", "/b1", "/b2")
    put("a/z.json", "/a-z")
    put("a/b/c.ndjson", "/a-b-c")
    put("10.json", "/10")
    put("2.json", "/2")
    put("c.JSON", "/c")
    put("notes.txt", "/ignored-txt")
    put("README.md", "/ignored-md")
    put("d.json.bak", "/ignored-bak")

    urls = [json.loads(body)["url"] for body in bodies(read_paths([tmp_path]))]

    # name order ("10" before "2"); a/ and a/b/ are not read (events/cms/ holds webhook samples)
    assert urls == [f"{SITE}{p}" for p in ("/10", "/2", "/b1", "/b2", "/c")]
    assert capsys.readouterr().err == (
        f"sitemap-updater: warning: {tmp_path}: skipped README.md, d.json.bak, notes.txt: not "
        "event files (.json, .jsonl, .ndjson)\n"
    )


@pytest.mark.parametrize("name", ["pages.csv", "sitemap.xml", "sitemap.xml.gz"])
def test_a_file_named_that_is_not_an_event_file_is_refused_by_name(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_text("url\nhttps://www.example.com/a\n")
    with pytest.raises(UserError, match=f"^{path}: not one of the event files .*backfill`$"):
        read_paths([path])


def test_paths_are_read_in_the_order_given(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(event("/a")))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").write_text(json.dumps(event("/b")))

    messages = read_paths([tmp_path / "sub", tmp_path / "a.json", tmp_path / "sub" / "b.json"])

    assert [json.loads(m.body)["url"] for m in messages] == [f"{SITE}/b", f"{SITE}/a", f"{SITE}/b"]


def test_a_missing_path_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    (tmp_path / "ok.json").write_text(json.dumps(event("/ok")))

    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl"):
        read_paths([tmp_path / "ok.json", missing])


def test_a_file_that_is_not_utf8_is_an_error_naming_it(tmp_path: Path) -> None:
    """SQS carries Unicode text only, so no CMS could have sent these bytes."""
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        b'{"type": "publish", "url": "https://www.example.com/k\xf6ln", "version": 1}\n'
    )

    with pytest.raises(UserError, match=r"latin1\.jsonl is not UTF-8 \(line 1: byte 0xF6\)"):
        read_paths([path])


def test_read_file_is_lazy_per_file_and_agrees_with_read_paths(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(event("/x")) + "\n")

    assert list(read_file(path)) == read_paths([path])


def test_the_sample_events_folder() -> None:
    """events/: 25 bodies (schema.json skipped); the rejected examples arrive verbatim."""
    events = REPO / "events"
    rejected = (events / "90-rejected-examples.jsonl").read_text(encoding="utf-8").splitlines()

    messages = read_paths([events])

    origins = [Path(m.origin.split("#")[0].rsplit(":", 1)[0]).name for m in messages]
    assert origins == sorted(origins)
    assert "schema.json" not in origins
    assert len(messages) == 25
    assert bodies(messages)[-3:] == rejected
    assert messages[-1].body.endswith('"priority": 1.5')  # the malformed line, untouched


def test_array_elements_are_sent_exactly_as_written(tmp_path: Path) -> None:
    path = tmp_path / "array.json"
    path.write_text(
        '[ {"type": "publish", "url": "https://www.example.com/x",'
        ' "version": 12345678901234567890123456789012345678} ,\n'
        '  {"type":"unpublish","url":"https://www.example.com/y","version":1.50}]\n'
    )
    assert [m.body for m in read_file(path)] == [
        '{"type": "publish", "url": "https://www.example.com/x",'
        ' "version": 12345678901234567890123456789012345678}',
        '{"type":"unpublish","url":"https://www.example.com/y","version":1.50}',
    ]


def test_a_byte_order_mark_is_not_part_of_the_event(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(
        b'\xef\xbb\xbf{"type": "publish", "url": "https://www.example.com/", "version": 1}'
    )
    assert [m.body for m in read_file(path)] == [
        '{"type": "publish", "url": "https://www.example.com/", "version": 1}'
    ]


DEEP = "[" * 1000 + "]" * 1000  # deeper than the json module decodes


def test_an_array_element_nested_too_deep_to_decode_is_one_body_as_written(
    tmp_path: Path,
) -> None:
    first, last = json.dumps(event("/a")), json.dumps(event("/b"))
    path = tmp_path / "deep.json"
    path.write_text(f"[ {first},\n{DEEP} ,{last}\n]\n", encoding="utf-8")

    assert read_paths([path]) == [
        MessageBody(first, f"{path}#0"),
        MessageBody(DEEP, f"{path}#1"),
        MessageBody(last, f"{path}#2"),
    ]


def test_a_file_too_deep_to_decode_that_is_not_one_array_is_read_as_not_json(
    tmp_path: Path,
) -> None:
    deep_object = '{"a":' * 1000 + "1" + "}" * 1000
    one, lines, unclosed = tmp_path / "one.json", tmp_path / "lines.json", tmp_path / "open.json"
    one.write_text(f" {deep_object}\n", encoding="utf-8")
    lines.write_text(f"{DEEP}\n{json.dumps(event('/a'))}\n", encoding="utf-8")
    unclosed.write_text(f"[{DEEP}", encoding="utf-8")

    assert read_paths([one]) == [MessageBody(deep_object, str(one))]
    assert bodies(read_paths([lines])) == [DEEP, json.dumps(event("/a"))]
    assert read_paths([unclosed]) == [MessageBody(f"[{DEEP}", str(unclosed))]
