"""The progress bar: drawn on a terminal only, always cleared before the summary; what the
commands print from outside is escaped."""

from __future__ import annotations

import io
import json

import pytest

from sitemap_updater.ops.errors import warn
from sitemap_updater.ops.progress import Progress, print_summary


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_when_the_stream_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    with Progress("backfill", total=10) as bar:
        bar.advance(10)
    assert stream.getvalue() == ""
    assert bar.done == 10


def test_a_terminal_sees_the_bar_and_then_a_cleared_line(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = Terminal()
    monkeypatch.setattr("sys.stderr", stream)
    with Progress("rebuild", total=4) as bar:
        bar.advance()
    drawn = stream.getvalue()
    assert "rebuild [######..................] 1/4 25%" in drawn
    assert drawn.endswith("\r\x1b[K")


def test_a_known_total_shows_the_time_left_at_the_rate_so_far() -> None:
    bar = Progress("send", total=10_000)
    bar.advance(2_500)
    assert bar.line(now=bar._started + 50) == (
        "send [######..................] 2,500/10,000 25% 50/s eta 0:02:30"
    )
    assert bar.line(now=bar._started + 50 * 3600).endswith(" eta 150:00:00")
    assert Progress("x", total=3).line().endswith(" 0/s eta -")


def test_an_unknown_total_shows_a_count() -> None:
    bar = Progress("send")
    bar.advance(1234)
    assert bar.line().startswith("send 1,234 ")


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_summaries_escape_what_a_terminal_acts_on_and_keep_readable_text(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    stdout = io.TextIOWrapper(io.BytesIO(), encoding=encoding)
    monkeypatch.setattr("sys.stdout", stdout)
    hostile = "caf\u00e9 \x1b[2J \x9b1m \u202e \u2028 \ud800"

    print_summary([f"fault {hostile}"], {"where": hostile}, as_json=True, ensure_ascii=False)

    stdout.seek(0)
    text, last = stdout.read().splitlines()
    escaped = "\\u001b[2J \\u009b1m \\u202e \\u2028 \\ud800"
    assert text == ("fault caf\u00e9 " if encoding == "utf-8" else "fault caf\\xe9 ") + escaped
    assert json.loads(last) == {"where": hostile}


def test_a_warning_is_escaped_too(capsys: pytest.CaptureFixture[str]) -> None:
    warn("file \x1b]0;title\x07.csv")
    assert capsys.readouterr().err == "sitemap-updater: warning: file \\u001b]0;title\\u0007.csv\n"
