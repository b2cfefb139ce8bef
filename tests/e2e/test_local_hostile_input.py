"""``sitemap-updater local`` over events built to break its reports: JSON nested deeper than
the json module can decode, lone surrogates, control characters. Each is a rejected event
like any other: the good events are published and the summary is printed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.e2e.test_local_cli import (
    SITE,
    LocalRun,
    free_port,
    run,
    start,
    stop,
    wait_until_served,
)

DEEP_ARRAY = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a":' * 1000 + "1" + "}" * 1000


def publish(path: str, site: str = SITE) -> str:
    return json.dumps({"type": "publish", "url": f"{site}{path}", "version": 1})


def published(out: Path) -> set[str]:
    text = gzip.decompress((out / "sitemap-pages-00001.xml.gz").read_bytes()).decode()
    return {path for path in ("/a", "/b", "/c", "/d") if f"<loc>{SITE}{path}</loc>" in text}


def test_json_nested_too_deep_to_decode_is_a_rejected_event(tmp_path: Path) -> None:
    lines = tmp_path / "deep.jsonl"
    lines.write_text(f"{publish('/a')}\n{DEEP_ARRAY}\n{DEEP_OBJECT}\n{publish('/b')}\n")
    array = tmp_path / "deep.json"
    array.write_text(f"[{publish('/c')},\n{DEEP_ARRAY},\n{publish('/d')}]\n")

    result = run("local", lines, array, "--site-url", SITE, "--out", tmp_path / "out", "--json")

    assert result.returncode == 0, result.stderr
    summary = LocalRun(result, tmp_path / "out").summary
    assert (summary["sent"], summary["accepted"]) == (7, 4)
    assert [r["event"] for r in summary["rejected"]] == [DEEP_ARRAY, DEEP_OBJECT, DEEP_ARRAY]
    assert {r["reason"].split(":")[0] for r in summary["rejected"]} == {"malformed_json"}
    assert result.stdout.count("  rejected: malformed_json: ") == 3
    assert published(tmp_path / "out") == {"/a", "/b", "/c", "/d"}


def test_serve_starts_over_json_nested_too_deep_to_decode(tmp_path: Path) -> None:
    port = free_port()
    site = f"http://127.0.0.1:{port}"
    events = tmp_path / "deep.jsonl"
    events.write_text(f"{publish('/a', site)}\n{DEEP_OBJECT}\n")
    process = start(
        "local", events, "--site-url", site, "--out", tmp_path / "out",
        "--serve", "--port", str(port),
        logs=tmp_path / "logs",
    )  # fmt: skip
    try:
        wait_until_served(process, port, tmp_path / "logs")
    finally:
        stop(process)

    assert "1 rejected" in (tmp_path / "logs" / "stdout").read_text()


HOSTILE = [
    '{"type": "publish", "url": "https://www.example.com/\\ud800", "version": 1}',
    '{"type": "publ\\udfffish", "url": "https://www.example.com/x", "version": 1}',
    '{"type": "publish", "url": "https://www.example.com/x", "version": 1, "\\ud800": 1}',
    '{"type": "publish", "url": "https://www.example.com/x", "version": "\\udbff"}',
    '{"type": "publish", "url": "https://www.example.com/x\\u001b[2J\\u0085", "version": 1}',
]
NOT_JSON = "not JSON \x1b[31m red \x07 \x85 \u2028 \u202e"


def test_lone_surrogates_and_control_characters_are_escaped_in_the_summary(
    tmp_path: Path,
) -> None:
    events = tmp_path / "hostile.jsonl"
    events.write_text("\n".join([publish("/a"), *HOSTILE, NOT_JSON]) + "\n", encoding="utf-8")

    result = run("local", events, "--site-url", SITE, "--out", tmp_path / "out", "--json")

    assert result.returncode == 0, result.stderr
    summary = LocalRun(result, tmp_path / "out").summary
    assert (summary["sent"], summary["accepted"]) == (7, 1)
    assert [r["event"] for r in summary["rejected"]] == [
        *(json.loads(line) for line in HOSTILE),
        NOT_JSON,
    ]  # the JSON line escapes what it cannot carry, and decodes to the events as sent
    text = result.stdout.rsplit("\n", 2)[0]  # the summary before the JSON line
    assert all(line.isprintable() for line in text.splitlines())
    assert "not JSON \\u001b[31m red \\u0007 \\u0085 \\u2028 \\u202e" in text
    assert published(tmp_path / "out") == {"/a"}
