"""A progress bar on stderr, drawn only on a terminal (never in logs or CI), and the summary
every command ends with."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from typing import Any

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
    """The summary lines, then with ``--json`` the summary as one JSON line."""
    print("\n".join(lines), flush=True)
    if as_json:
        print(json.dumps(summary, ensure_ascii=ensure_ascii), flush=True)
