"""Page records: the publish event's fields, one page per record, read from files.

A page record is what a publish event says about a page (``url``, and optionally
``lastmod``, ``changefreq``, ``priority``); ``type`` and ``version`` may be given and are
otherwise ``publish`` and the caller's default version. Each record is validated exactly
as that event would be by the ingest function: :func:`page_change` either returns what
``domain.events.parse_event`` returns, or raises the same InvalidEvent with the same reason.

Formats, chosen by the file name:

* ``*.csv``: a header row naming the columns (``url`` required; ``type``, ``version``,
  ``lastmod``, ``changefreq``, ``priority`` optional). An empty cell is an absent field;
  ``version`` and ``priority`` cells that are numbers become numbers.
* ``*.jsonl`` / ``*.ndjson``: one JSON object per line (blank lines skipped).
* anything else (``*.json``): one JSON document, an array of records or one record; a file
  that is not one JSON document but has several lines is read as JSON Lines.

JSON numbers are read as decimals (as the ingest function reads them), so ``0.1`` stays 0.1.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Any

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import (
    PageChange,
    _changefreq,
    _priority,
    _version,
    normalise_lastmod,
    parse_event,
)
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, normalise_url
from sitemap_updater.ops.errors import UserError

FIELDS = ("type", "url", "version", "lastmod", "changefreq", "priority")
_FIELD_SET = frozenset(FIELDS)
_LINE_SUFFIXES = {".jsonl", ".ndjson"}
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder for every line: json.loads(..., parse_float=...) would build one per call.
_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)


@dataclass(frozen=True, slots=True)
class Record:
    """One record as read: its decoded value, or why it could not be decoded."""

    origin: str  # file:line or file#index, for people
    value: Any = None
    error: InvalidEvent | None = None


def _decode(text: str, origin: str) -> Record:
    try:
        return Record(origin, _DECODER.decode(text))
    except (ValueError, RecursionError) as exc:
        return Record(origin, error=InvalidEvent("malformed_json", f"not JSON: {exc}"))


def _json_lines(path: Path, lines: Iterable[str]) -> Iterator[Record]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield _decode(line, f"{path}:{number}")


def _csv_value(column: str, cell: str) -> Any:
    if column in ("version", "priority") and _JSON_NUMBER.fullmatch(cell):
        try:
            return Decimal(cell)
        except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
            return cell
    return cell


def _csv(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            return
        columns = [name.strip() for name in header]
        unknown = [name for name in columns if name not in _FIELD_SET]
        if unknown:
            raise UserError(
                f"{path}: unknown column(s) {', '.join(map(repr, unknown))}; "
                f"page records have {', '.join(FIELDS)}"
            )
        if "url" not in columns:
            raise UserError(f"{path}: the header has no 'url' column")
        if len(set(columns)) != len(columns):
            raise UserError(f"{path}: the header repeats a column")
        for row in reader:
            origin = f"{path}:{reader.line_num}"
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(columns):
                error = InvalidEvent(
                    "malformed_csv", f"{len(row)} cells, the header has {len(columns)}"
                )
                yield Record(origin, error=error)
                continue
            yield Record(
                origin,
                {
                    name: _csv_value(name, cell)
                    for name, cell in zip(columns, row, strict=True)
                    if cell
                },
            )


def read_records(path: Path) -> Iterator[Record]:
    """Every record of one file, in order (streamed for CSV and JSON Lines)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv(path)
        return
    if suffix in _LINE_SUFFIXES:
        with path.open(encoding="utf-8", errors="surrogateescape") as handle:
            yield from _json_lines(path, handle)
        return
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    try:
        document = _DECODER.decode(text)
    except (ValueError, RecursionError):
        lines = text.splitlines()
        if len([line for line in lines if line.strip()]) > 1:
            yield from _json_lines(path, lines)
        elif text.strip():
            yield _decode(text, str(path))
        return
    if isinstance(document, list):
        for number, element in enumerate(document):
            yield Record(f"{path}#{number}", element)
    else:
        yield Record(str(path), document)


def read_paths(paths: Iterable[Path]) -> Iterator[Record]:
    """Records from files, in the order given; a missing file is a UserError."""
    for path in paths:
        if not path.is_file():
            raise UserError(f"no such file: {path}")
        yield from read_records(path)


def as_event(record: Any, default_version: Decimal) -> Any:
    """The event a page record stands for: ``type`` publish and the default version if absent."""
    if not isinstance(record, dict):
        return record
    event = {"type": "publish", "version": default_version}
    event.update(record)
    return event


def page_change(record: Any, site: Site, default_version: Decimal = Decimal(0)) -> PageChange:
    """Validate a page record as its publish event; raises InvalidEvent with the same reason.

    The common case (a publish record whose URL is already canonical) is checked here
    without building the pydantic model, with the contract's own field validators; anything
    else goes through ``parse_event``. A test holds the two paths to the same answers.
    """
    if type(record) is dict:
        fast = _fast_change(record, site, default_version)
        if fast is not None:
            return fast
    return parse_event(as_event(record, default_version), site)


def _fast_change(record: dict[str, Any], site: Site, default_version: Decimal) -> PageChange | None:
    """The PageChange for a plain publish record, or None to leave it to parse_event."""
    if not _FIELD_SET.issuperset(record) or record.get("type", "publish") != "publish":
        return None
    url = record.get("url")
    if type(url) is not str or not 0 < len(url) <= MAX_URL_LENGTH:
        return None
    try:
        version = _version(record["version"]) if "version" in record else default_version
        lastmod = record.get("lastmod")
        if lastmod is not None:
            lastmod = normalise_lastmod(lastmod)
        changefreq = record.get("changefreq")
        if changefreq is not None:
            changefreq = _changefreq(changefreq)
        priority = record.get("priority")
        if priority is not None:
            priority = _priority(priority)
    except ValueError:
        return None
    if not (_canonical_url(site).fullmatch(url) and "/." not in url and "%2E" not in url):
        url = normalise_url(url, site)  # the model accepted every field: its URL check is next
    entry = SitemapEntry(url=url, lastmod=lastmod, changefreq=changefreq, priority=priority)
    return PageChange(url=url, version=version, entry=entry)


@cache
def _canonical_url(site: Site) -> re.Pattern[str]:
    """URLs that ``normalise_url`` returns unchanged: on the site's origin, only characters
    it leaves alone, upper-case escapes, a non-empty query if any. (Dot segments are
    excluded by the caller.)"""
    char = r"(?:[A-Za-z0-9\-._~!$&()*+,;=:@/]|%[0-9A-F]{2})"
    return re.compile(rf"{re.escape(site.origin)}/{char}*(?:\?(?:{char}|\?)+)?", re.ASCII)
