"""A progress bar on stderr, drawn only on a terminal (never in logs or CI), the summary
every command ends with, and the one way the commands print text from outside (sites,
files, queues, events): a terminal acts on control characters, so they are escaped."""

from __future__ import annotations

import codecs
import json
import sys
import time
from collections.abc import Iterable
from typing import Any, TextIO

_WIDTH = 24
_INTERVAL = 0.1  # seconds between redraws


class Progress:
    """``with Progress("backfill", total=n) as bar: bar.advance()``: with a total, the share
    done and the time left; else the count and rate."""

    def __init__(self, label: str, total: int | None = None, enabled: bool = True):
        self.label, self.total, self.done = label, total, 0
        self.stream = sys.stderr
        try:
            self.enabled = enabled and self.stream.isatty()
        except (AttributeError, ValueError):  # no isatty, or closed
            self.enabled = False
        self._started = time.monotonic()
        self._drawn, self._shown = 0.0, False

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self.enabled and (now := time.monotonic()) - self._drawn >= _INTERVAL:
            self._drawn = now
            self.stream.write(f"\r\x1b[K{self.line(now)}")
            self.stream.flush()
            self._shown = True

    def line(self, now: float | None = None) -> str:
        elapsed = max((now if now is not None else time.monotonic()) - self._started, 1e-9)
        speed = self.done / elapsed
        rate = f"{speed:,.0f}/s"
        if not self.total:
            return f"{self.label} {self.done:,} {rate}"
        filled = min(_WIDTH, _WIDTH * self.done // self.total)
        percent = min(100, 100 * self.done // self.total)
        bar = "#" * filled + "." * (_WIDTH - filled)
        left = round(max(self.total - self.done, 0) / speed) if speed else None
        eta = "-" if left is None else f"{left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"
        return f"{self.label} [{bar}] {self.done:,}/{self.total:,} {percent}% {rate} eta {eta}"

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._shown:  # the summary that follows starts on a clean line
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def print_summary(
    lines: Iterable[str], summary: dict[str, Any], as_json: bool, ensure_ascii: bool = True
) -> None:
    """The summary lines, then with ``--json`` the summary as one JSON line (in ASCII when
    stdout is not UTF-8: an escape is the only way to write what it cannot encode)."""
    print_lines(lines)
    if as_json:
        utf8 = codecs.lookup(sys.stdout.encoding or "utf-8").name == "utf-8"
        print_lines([json.dumps(summary, ensure_ascii=ensure_ascii or not utf8)])


def print_lines(lines: Iterable[str], stream: TextIO | None = None) -> None:
    """Each line escaped (:func:`escape_unsafe`), in what the stream can encode."""
    stream = stream or sys.stdout
    encoding = stream.encoding or "utf-8"
    text = "\n".join(escape_unsafe(line) for line in lines)
    print(text.encode(encoding, "backslashreplace").decode(encoding), file=stream, flush=True)


def escape_unsafe(text: str) -> str:
    """``text`` with every character that is not printable (controls a terminal acts on, line
    separators, bidirectional overrides, lone surrogates no encoding can write) escaped as JSON
    escapes it: a JSON line stays valid and decodes to the same text."""
    return "".join(char if char.isprintable() else _json_escape(char) for char in text)


def _json_escape(char: str) -> str:
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[n]:02x}{units[n + 1]:02x}" for n in range(0, len(units), 2))
