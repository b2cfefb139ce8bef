"""Page records: the publish event's fields, one page per record, read from files.

A page record is what a publish event says about a page (``url``, and optionally
``lastmod``, ``changefreq``, ``priority``); ``type`` and ``version`` may be given and are
otherwise ``publish`` and the caller's default version. Each record is validated exactly
as that event would be by the ingest function: :func:`page_change` either returns what
``domain.events.parse_event`` returns, or raises the same InvalidEvent with the same reason.

Formats, chosen by the file name, in UTF-8 (a byte order mark at the start is skipped; a record
holding bytes that are not UTF-8 is refused alone, its text holding lone surrogates):

* ``*.csv``: a header row naming the columns (``url`` required; ``type``, ``version``,
  ``lastmod``, ``changefreq``, ``priority`` optional). An empty cell is an absent field;
  ``version`` and ``priority`` cells that are numbers become numbers.
* ``*.jsonl`` / ``*.ndjson``: one JSON object per line (blank lines skipped).
* anything else (``*.json``): one JSON document, an array of records or one record (a record
  that repeats a key or holds NaN is refused alone); a file that is not one JSON document but
  has several lines is read as JSON Lines.

JSON numbers are read as decimals (as the ingest function reads them), so ``0.1`` stays 0.1.
With orjson installed (the ``cli`` extra), JSON Lines are decoded by orjson where that gives
the very same value: its floats become those decimals, and a line with a number of 16 or
more digits or an exponent (where a float could differ from the decimal), a float nested
deeper than a record's fields and the items of their lists, or anything orjson refuses, is
decoded by the standard library as before.
"""

from __future__ import annotations

import csv
import json
import marshal
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from sitemap_updater.domain.contract import (
    EVENT_JSON,
    PageChange,
    reject_json_constant,
    unique_json_keys,
)
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.fast_records import FastPage, fast_change, line_reader

FIELDS = ("type", "url", "version", "lastmod", "changefreq", "priority")
_FIELD_SET = frozenset(FIELDS)
_LINE_SUFFIXES = {".jsonl", ".ndjson"}
# JSON Lines files of this many lines or more are read by two processes (measured: below it,
# forking and sending the pages back cost about what the second core saves).
PARALLEL_FROM = 20_000
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)


_DECODER = EVENT_JSON  # as the ingest function decodes (domain.contract)


class _Refused:
    """Where _DECODER refuses a document (a repeated key, NaN or Infinity), and why: a .json
    file's array is decoded whole, so that such a record is refused alone."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _refused_in(value: Any) -> _Refused | None:
    """The first refusal in ``value`` (an object holding one is one already)."""
    if type(value) is _Refused:
        return value
    if type(value) is list:
        for item in value:
            refused = _refused_in(item)
            if refused is not None:
                return refused
    return None


def _object_or_refused(pairs: list[tuple[str, Any]]) -> Any:
    for _, value in pairs:  # what _DECODER meets first, in the order of the text
        refused = _refused_in(value)
        if refused is not None:
            return refused
    try:
        return unique_json_keys(pairs)
    except ValueError as exc:
        return _Refused(str(exc))


def _constant_refused(name: str) -> _Refused:
    try:
        return reject_json_constant(name)  # type: ignore[no-any-return]  # it always raises
    except ValueError as exc:
        return _Refused(str(exc))


# _DECODER's values, but a refusal in place of what _DECODER would refuse.
_DOCUMENT_DECODER = json.JSONDecoder(
    parse_float=Decimal, parse_constant=_constant_refused, object_pairs_hook=_object_or_refused
)
# Every JSON string of a text, and whether a ':' follows it (then it is an object's key).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"([ \t\n\r]*:)?')
# Where a float may not be the decimal its text says: 16 digits or more (a double holds 15
# exactly; orjson also reads integers beyond 64 bits as floats), or an exponent (beyond a
# double's range). A line holding a float and this goes to _DECODER.
_LOSSY_NUMBER = re.compile(r"[0-9](?:[0-9.]{15}|[eE])", re.ASCII)


def _orjson_loads() -> Callable[[str], Any] | None:
    try:
        import orjson  # noqa: PLC0415 - optional: the cli extra brings it
    except ImportError:  # pragma: no cover - the dev environment has it
        return None
    return orjson.loads


_FAST_LOADS = _orjson_loads()


def _exact_numbers(value: Any, text: str) -> Any:
    """A record decoded by orjson with its floats as the exact decoder's Decimals, equal in
    value; None when a float may differ (see _LOSSY_NUMBER) or sits deeper than we look."""
    if type(value) is not dict:
        return None if _holds_float(value) else value
    for key, field in value.items():
        if type(field) is float:
            if _LOSSY_NUMBER.search(text):
                return None
            value[key] = Decimal(repr(field))
        elif type(field) is list:
            for item in field:
                if type(item) is float or (type(item) is dict and _holds_float(item)):
                    return None
                if type(item) is list and _holds_float(item):
                    return None
        elif type(field) is dict and _holds_float(field):
            return None
    return value


def _holds_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if type(value) is dict:
        return any(_holds_float(item) for item in value.values())
    if type(value) is list:
        return any(_holds_float(item) for item in value)
    return False


@dataclass(frozen=True, slots=True)
class Record:
    """One record as read: its decoded value, or why it could not be decoded."""

    origin: str  # file:line or file#index, for people
    value: Any = None
    error: InvalidEvent | None = None


def _decode(text: str, origin: str) -> Record:
    if _FAST_LOADS is not None:
        value = _fast_value(text)
        if value is not None:
            return Record(origin, value)
    try:
        return Record(origin, _DECODER.decode(text))
    except (ValueError, RecursionError) as exc:
        return Record(origin, error=InvalidEvent("malformed_json", f"not JSON: {exc}"))


def _fast_value(text: str) -> Any:
    """The value orjson decodes, exactly as _DECODER would; None to ask _DECODER (orjson
    refused the text, an object repeats a key, or it holds a float we do not convert:
    _DECODER gives the answer and any error's message)."""
    if _FAST_LOADS is None:  # pragma: no cover - the caller checks
        return None
    try:
        value = _FAST_LOADS(text)
    except ValueError:
        return None
    if _key_count(value) != sum(1 for string in _STRING.finditer(text) if string.group(1)):
        return None  # a key given twice in an object (orjson keeps the last): refused there
    return _exact_numbers(value, text)


def _key_count(value: Any) -> int:
    if type(value) is dict:
        return len(value) + sum(_key_count(item) for item in value.values())
    if type(value) is list:
        return sum(_key_count(item) for item in value)
    return 0


def _document_record(origin: str, value: Any) -> Record:
    refused = _refused_in(value)
    if refused is not None:
        return Record(origin, error=InvalidEvent("malformed_json", f"not JSON: {refused.reason}"))
    return Record(origin, value)


def _json_lines(path: Path, lines: Iterable[str]) -> Iterator[Record]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield _decode(line, f"{path}:{number}")


def _fast_json_lines(
    path: Path, lines: list[str], site: Site, parallel_from: int = PARALLEL_FROM
) -> Iterator[Record | FastPage]:
    """``_json_lines``, but a line of the commonest shape comes as its FastPage, neither
    decoded nor validated again (``fast_records.line_reader``: the same page).

    From ``parallel_from`` lines on, a forked copy of this process reads the later lines
    while this one reads the first ones (the machine's second core); its pages come back
    through a pipe and are given in line order, so the records are the same either way.
    """
    read = line_reader(site)  # its pattern compiled before the fork: once, for both
    split = len(lines)
    elsewhere = None
    if len(lines) >= parallel_from and (os.cpu_count() or 1) > 1:
        split = len(lines) * 2 // 5  # this process also collects every record
        elsewhere = _read_elsewhere(lines[split:], site)
        if elsewhere is None:
            split = len(lines)
    try:
        for number in range(split):
            line = lines[number]
            page = read(line)
            if page is not None:
                yield page
            elif line.strip():
                yield _decode(line, f"{path}:{number + 1}")
    finally:
        read_there = elsewhere() if elsewhere is not None else None
    if split == len(lines):
        return
    if read_there is None:  # the other process failed: read its lines here
        read_there = [read(line) for line in lines[split:]]
    for number, page in enumerate(read_there, start=split):
        if page is not None:
            yield page
        elif lines[number].strip():
            yield _decode(lines[number], f"{path}:{number + 1}")


def _read_elsewhere(
    lines: list[str], site: Site
) -> Callable[[], list[FastPage | None] | None] | None:
    """Start a forked process reading ``lines`` (line_reader); the function returned waits
    for it and gives its pages, or None if it failed. None when no process can be forked."""
    if not hasattr(os, "fork"):  # pragma: no cover - POSIX has it
        return None
    try:
        source, sink = os.pipe()
        pid = os.fork()
    except OSError:  # pragma: no cover - out of processes or descriptors
        return None
    if pid == 0:  # pragma: no cover - the child: coverage does not follow it
        status = 1
        try:
            os.close(source)
            read = line_reader(site)  # the pattern is compiled already (cached)
            pages = marshal.dumps([read(line) for line in lines])  # str, int, tuple, None
            with os.fdopen(sink, "wb") as stream:
                stream.write(pages)
            status = 0
        finally:
            os._exit(status)  # no atexit, no flushing of the parent's buffers
    os.close(sink)

    def result() -> list[FastPage | None] | None:
        with os.fdopen(source, "rb") as stream:
            data = stream.read()
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return None
        pages: list[FastPage | None] = marshal.loads(data)  # noqa: S302 - our own child's
        return pages if len(pages) == len(lines) else None

    return result


def _csv_value(column: str, cell: str) -> Any:
    if column in ("version", "priority") and _JSON_NUMBER.fullmatch(cell):
        try:
            return Decimal(cell)
        except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
            return cell
    return cell


def _csv(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
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
        with path.open(encoding="utf-8-sig", errors="surrogateescape") as handle:
            yield from _json_lines(path, handle)
        return
    text = path.read_text(encoding="utf-8-sig", errors="surrogateescape")
    try:
        document = _DOCUMENT_DECODER.decode(text)
    except (ValueError, RecursionError):
        # The lines a file's iteration gives (read_text made every line end "\n"), not
        # splitlines(), which also ends lines at U+2028, U+0085, ... inside JSON strings.
        lines = text.split("\n")
        if len([line for line in lines if line.strip()]) > 1:
            yield from _json_lines(path, lines)
        elif text.strip():
            yield _decode(text, str(path))
        return
    if isinstance(document, list):
        for number, element in enumerate(document):
            yield _document_record(f"{path}#{number}", element)
    else:
        yield _document_record(str(path), document)


def read_paths(paths: Iterable[Path]) -> Iterator[Record]:
    """Records from files, in the order given; a missing file is a UserError."""
    for path in paths:
        if not path.is_file():
            raise UserError(f"no such file: {path}")
        yield from read_records(path)


def read_pages(
    paths: Iterable[Path], site: Site, parallel_from: int = PARALLEL_FROM
) -> Iterator[Record | FastPage]:
    """``read_paths`` for ``build``: the lines of JSON Lines files that are of the commonest
    shape come as FastPages (see ``_fast_json_lines``), every other record as a Record."""
    for path in paths:
        if not path.is_file():
            raise UserError(f"no such file: {path}")
        if path.suffix.lower() in _LINE_SUFFIXES:
            with path.open(encoding="utf-8-sig", errors="surrogateescape") as handle:
                lines = handle.readlines()  # the lines iterating the file gives
            yield from _fast_json_lines(path, lines, site, parallel_from)
        else:
            yield from read_records(path)


def as_event(record: Any, default_version: Decimal) -> Any:
    """The event a page record stands for: ``type`` publish and the default version if absent."""
    if not isinstance(record, dict):
        return record
    event = {"type": "publish", "version": default_version}
    event.update(record)
    return event


def page_change(
    record: Any, site: Site, default_version: Decimal = Decimal(0), *, fast: bool = True
) -> PageChange:
    """Validate a page record as its publish event; raises InvalidEvent with the same reason.

    The common shapes are checked by ``ops.fast_records`` with the contract's own rules,
    without pydantic; anything else (every record with ``fast=False``) goes through
    ``parse_event``, imported only then, as it builds the pydantic models. Tests hold the
    two paths to the same answers.
    """
    if fast and type(record) is dict:
        change = fast_change(record, site, default_version)
        if change is not None:
            return change
    from sitemap_updater.domain.events import parse_event  # noqa: PLC0415 - see above

    return parse_event(as_event(record, default_version), site)
