"""The console script's reports hold text from the events, files and command line: what a
terminal would act on, or an encoding cannot write, is escaped, never a crash."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sitemap_updater.cli import _one_line, _print_summary, main
from sitemap_updater.local.runtime import Rejection, Summary, _as_json, freshness

HOSTILE = "caf\u00e9 \ud800 \x1b[2J \x85 \u2028 \u202e \U000e0001"


def summary() -> Summary:
    return Summary(
        sent=2,
        accepted=1,
        rejected=[Rejection(f"malformed_json: {HOSTILE}", HOSTILE)],
        out="site",
    )


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_the_summary_escapes_what_the_terminal_or_stdout_cannot_take(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    monkeypatch.setattr("sys.stdout", stdout)

    _print_summary(summary(), as_json=True)

    stdout.seek(0)
    *text, last = stdout.read().splitlines()
    assert json.loads(last)["rejected"] == [
        {"reason": f"malformed_json: {HOSTILE}", "event": HOSTILE}
    ]
    assert all(line.isascii() if encoding == "ascii" else line.isprintable() for line in text)
    assert "\\ud800 \\u001b[2J \\u0085 \\u2028 \\u202e \\udb40\\udc01" in text[1]


def test_an_error_line_escapes_control_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "events\x1b[2J\n.jsonl"

    status = main(["local", str(missing), "--site-url", "https://www.example.com"])

    assert status == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.endswith("events\\u001b[2J\\u000a.jsonl\n")


def test_a_rejected_event_is_shown_as_json_only_when_that_says_what_its_text_says() -> None:
    """NaN, a number beyond a float or a key given twice would be shown otherwise than
    written (and NaN would break the --json line): the text is shown instead."""
    for text in (
        '{"type": "publish", "priority": NaN}',
        '{"type": "publish", "version": 1e400}',
        '{"type": "publish", "version": 1, "version": 2}',
        '{"type": "publish", "version": 1.00000000000000001}',
    ):
        assert _as_json(text) == text
    assert _as_json('{"type": "publish", "version": 1.5}') == {"type": "publish", "version": 1.5}


def test_an_error_is_its_first_line_or_its_kind_when_it_says_nothing() -> None:
    assert _one_line(ValueError("bad limit\nmore detail")) == "bad limit"
    assert _one_line(OSError()) == "OSError"


def test_schema_to_a_folder_that_does_not_exist_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", "--out", str(tmp_path / "no" / "schema.json")]) == 2
    assert capsys.readouterr().err.startswith("sitemap-updater: error: cannot write ")


def test_a_serve_port_out_of_range_is_a_usage_error_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = ["--site-url", "https://www.example.com", "--out", str(tmp_path / "out")]
    assert main(["local", str(tmp_path), *site, "--serve", "--port", "99999"]) == 2
    assert capsys.readouterr().err == (
        "sitemap-updater: error: --port must be 1 to 65535, got 99999\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("latencies", "p50", "p99"),
    [(range(1, 101), 50, 99), ([1, 2], 1, 2), ([7], 7, 7), (range(1, 1001), 500, 990)],
)
def test_freshness_is_by_nearest_rank(latencies: range | list[int], p50: int, p99: int) -> None:
    figures = freshness(list(latencies))
    assert (figures["p50"], figures["p99"], figures["max"]) == (p50, p99, max(latencies))
