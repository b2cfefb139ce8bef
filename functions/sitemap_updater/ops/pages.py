"""Page records read from files, for ``build`` and ``backfill``: publish events whose
``type`` and ``version`` may be left out, each validated by the contract's own code
(``domain.events.parse_record``), so it is accepted or refused as the ingest function would
take it. The formats (CSV, JSON Lines, a JSON array, a text sitemap) are in
docs/OPERATIONS.md; the suffix picks one, and a ``.json`` file that is neither one document
nor an array but has several lines is read as JSON Lines.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zlib
from codecs import BOM_UTF8
from collections.abc import Iterator
from decimal import Decimal
from itertools import compress
from pathlib import Path
from typing import Any

import msgspec

from sitemap_updater.domain.contract import PageChange
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import parse_record
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.errors import UserError, utf8_text, warn

FIELDS = ("type", "url", "version", "lastmod", "changefreq", "priority", "title")
_LINE_SUFFIXES = {".jsonl", ".ndjson"}
_FORMATS = {".csv", ".tsv", ".txt", ".json", *_LINE_SUFFIXES}
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_ONE_DOCUMENT = msgspec.json.Decoder(msgspec.Raw)
_NUMBERS = ("version", "priority")


class Record(msgspec.Struct, gc=False):
    """One record as read: its JSON text, its values, or a CSV row's cells (``columns``
    names them; ``record_value`` reads them where the record is parsed: in parallel, for
    ``build``), or why it could not be read."""

    at: str  # its origin, or with ``number`` the start of it ("file:", "file#")
    value: bytes | dict[str, Any] | list[str] | None = None
    error: InvalidEvent | None = None
    dropped: tuple[str, ...] = ()  # what its source said that the contract cannot carry
    columns: list[str | None] | None = None
    number: int | None = None  # its line or index (spelt out only when asked: most never are)

    @property
    def origin(self) -> str:
        """file:line or file#index, for people."""
        return self.at if self.number is None else f"{self.at}{self.number}"


def record_value(record: Record) -> bytes | dict[str, Any]:
    """What the contract parses: the JSON text or the values (a CSV row's cells given, by
    field, trimmed, numbers as numbers); empty when the record could not be read."""
    value, columns = record.value, record.columns
    if columns is None or not isinstance(value, list):
        return b"" if value is None else value  # type: ignore[return-value]
    value = [cell.strip() for cell in value]  # "url, lastmod" as people write it
    cells: dict[Any, Any] = dict(compress(zip(columns, value, strict=True), value))
    cells.pop(None, None)  # ignored columns
    for name in _NUMBERS:  # cells that are numbers are numbers
        if name in cells and _JSON_NUMBER.fullmatch(cells[name]):
            cells[name] = Decimal(cells[name])
    return cells


class Problem(msgspec.Struct, frozen=True):
    """A record, document or step that failed, and why."""

    origin: str
    reason: str


def page_change(record: Record, site: Site, default_version: Decimal = Decimal(0)) -> PageChange:
    """The record's change, or InvalidEvent with the reason the ingest function would give."""
    if record.error is not None:
        raise record.error
    return parse_record(record_value(record), site, default_version)


def _json_lines(path: Path, data: bytes) -> list[Record]:
    at = f"{path}:"
    lines = enumerate(data.split(b"\n"), start=1)
    return [
        Record(at, line, number=number) for number, line in lines if line and not line.isspace()
    ]


def url_lines(text: str) -> Iterator[tuple[int, str]]:
    """A text sitemap's URLs (what ``build --format txt`` writes), one a line, trimmed, each
    with its line number."""
    for number, line in enumerate(text.split("\n"), start=1):
        if url := line.strip():
            yield number, url


def _json_document(path: Path, data: bytes) -> list[Record]:
    array = data.lstrip()[:1] == b"["
    elements: list[msgspec.Raw] | list[bytes] | None
    try:
        elements = _ARRAY.decode(data) if array else [_ONE_DOCUMENT.decode(data)]
    except (msgspec.DecodeError, RecursionError):
        texts = array_elements(data.decode()) if array else None  # read_records checked UTF-8
        elements = None if texts is None else [text.encode() for text in texts]
        if elements is None and not array and b"\n" in data.strip():
            return _json_lines(path, data)
    if array and elements is not None:
        at = f"{path}#"
        return [Record(at, bytes(element), number=n) for n, element in enumerate(elements)]
    return [Record(str(path), data)]  # one document, or refused with the decoder's reason


# An array's top level is split at its commas; strings (whose brackets and commas are
# text) and brackets are what say where that level is.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[][{},]', re.DOTALL)
_CLOSES = {"]": "[", "}": "{"}
_SPACE = " \t\r\n"  # JSON's whitespace: other text outside a value is no JSON


def array_elements(text: str) -> list[str] | None:
    """The elements of the JSON array ``text``, each exactly as written (to be read, and
    refused, alone: NaN, a huge number, nesting too deep), or None if it is not one array."""
    if not text.lstrip(_SPACE).startswith("["):
        return None
    opened: list[str] = []
    elements: list[str] = []
    start = 0
    for token in _TOKEN.finditer(text):
        mark = token.group()
        if mark in _CLOSES:
            if not opened or opened.pop() != _CLOSES[mark]:
                return None
            if not opened:  # the array's end
                last = text[start : token.start()].strip(_SPACE)
                if text[token.end() :].strip(_SPACE) or (elements and not last):
                    return None  # more after it, or a comma before "]"
                return [*elements, last] if elements or last else []
        elif mark in ("[", "{"):
            opened.append(mark)
            start = token.end() if len(opened) == 1 else start
        elif mark == "," and len(opened) == 1:
            elements.append(text[start : token.start()].strip(_SPACE))
            start = token.end()
            if not elements[-1]:  # a comma too many: not an array
                return None
    return None


def _columns(path: Path, header: list[str]) -> list[str | None]:
    """The header's page-record fields (any case); None for a column that is ignored."""
    named = [name.strip().lower() for name in header]
    if "url" not in named:
        raise UserError(f"{path}: the header has no 'url' column")
    columns = [name if name in FIELDS else None for name in named]
    known = [name for name in columns if name]
    if len(set(known)) != len(known):
        raise UserError(f"{path}: the header repeats a column")
    if ignored := [given for given, name in zip(header, columns, strict=True) if name is None]:
        named_ignored = ", ".join(map(repr, ignored))
        warn(f"{path}: column(s) {named_ignored} ignored (page records have {', '.join(FIELDS)})")
    return columns


def _csv(path: Path, text: str) -> Iterator[Record]:
    # No cell is longer than the file: csv's default limit, 128 KiB, would stop a file whose
    # ignored columns hold whole articles.
    csv.field_size_limit(max(len(text), csv.field_size_limit()))
    stream = io.StringIO(text, newline="")
    delimiter = _delimiter(text)
    reader = csv.reader(stream, delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        return
    if reader.line_num > 1 and _unclosed(stream, text, 1, delimiter):
        raise UserError(f"{path}: the header row opens a quote that is never closed")
    columns = _columns(path, header)
    at, first = f"{path}:", reader.line_num + 1
    for row in reader:
        last = reader.line_num
        if (last > first or len(row) != len(columns)) and _unclosed(stream, text, first, delimiter):
            span = f"lines {first}-{last} were read as one row" if last > first else f"line {first}"
            error = InvalidEvent("malformed_csv", f"a quote is never closed: {span}")
            yield Record(at, error=error, number=first)
        elif len(row) != len(columns) and "".join(row).strip():
            why = f"{len(row)} cells, the header has {len(columns)}"
            yield Record(at, error=InvalidEvent("malformed_csv", why), number=first)
        elif "".join(row).strip():
            yield Record(at, row, columns=columns, number=first)
        first = last + 1


def _delimiter(text: str) -> str:
    """The first of ',', ';' (what spreadsheets write where the comma is the decimal mark)
    and tab that makes the header name a url column; ',' if none does."""
    header = text.split("\n", 1)[0].split("\r", 1)[0]
    for delimiter in (",", ";", "\t"):
        if "url" in (name.strip(' "\r').lower() for name in header.split(delimiter)):
            return delimiter
    return ","


def _unclosed(stream: io.StringIO, text: str, line: int, delimiter: str) -> bool:
    """Whether the row read from ``line`` on ran to the end of the file inside a quoted
    cell, which csv takes silently (the rest of the file read as one cell)."""
    if stream.tell() < len(text):
        return False
    rest = io.StringIO(text, newline="")
    for _ in range(line - 1):
        rest.readline()
    strict = csv.reader(rest, delimiter=delimiter, strict=True)
    while True:
        try:
            if next(strict, None) is None:
                return False
        except csv.Error as exc:
            if str(exc) == "unexpected end of data":
                return True


def read_bytes(path: Path) -> bytes:
    """A file's bytes; a folder, a missing or an unreadable file is a UserError."""
    if path.is_dir():
        raise UserError(f"{path} is a directory: give the files in it")
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise UserError(f"no such file: {path}") from exc
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from exc


def record_suffix(path: Path) -> str:
    """The suffix that names a file's format: ``pages.jsonl.gz`` is JSON Lines, gzipped."""
    suffix = path.suffix.lower()
    return Path(path.stem).suffix.lower() if suffix == ".gz" else suffix


def read_records(path: Path) -> list[Record]:
    """Every record of one file (gunzipped when named .gz), in order: a list, as callers
    take them all at once (a generator was resumed once for every record)."""
    data = read_bytes(path)
    if (suffix := record_suffix(path)) not in _FORMATS:
        sitemap = " (a sitemap is backfill's to read)" if suffix == ".xml" else ""
        raise UserError(
            f"{path}: page records are {', '.join(sorted(_FORMATS))}, or one of these .gz{sitemap}"
        )
    if path.suffix.lower() == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # not gzip, or a download cut short
            raise UserError(f"{path}: bad gzip data: {exc}") from None
    text = utf8_text(path, data)
    data = data.removeprefix(BOM_UTF8)
    if suffix in (".csv", ".tsv"):
        return list(_csv(path, text))
    if suffix == ".txt":
        at = f"{path}:"
        return [Record(at, {"url": url}, number=n) for n, url in url_lines(text)]
    if suffix in _LINE_SUFFIXES:
        return _json_lines(path, data)
    return _json_document(path, data)
