"""Page records read from files, for ``build`` and ``backfill``: publish events whose
``type`` and ``version`` may be left out, each validated by the contract's own code
(``domain.events.parse_record``), so it is accepted or refused as the ingest function would
take it. The formats (CSV, JSON Lines, a JSON array) are in docs/OPERATIONS.md; the suffix
picks one, and a ``.json`` file that is not one document but has several lines is read as
JSON Lines.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
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
_BOM = b"\xef\xbb\xbf"
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
    field, numbers as numbers); empty when the record could not be read."""
    value, columns = record.value, record.columns
    if columns is None or not isinstance(value, list):
        return value or b""  # type: ignore[return-value]
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
    if record.value is None:
        raise InvalidEvent("malformed_json", "empty record")
    return parse_record(record_value(record), site, default_version)


def _json_lines(path: Path, data: bytes) -> list[Record]:
    at = f"{path}:"
    lines = enumerate(data.split(b"\n"), start=1)
    return [
        Record(at, line, number=number) for number, line in lines if line and not line.isspace()
    ]


def _json_document(path: Path, data: bytes) -> Iterator[Record]:
    array = data.lstrip()[:1] == b"["
    try:
        elements = _ARRAY.decode(data) if array else [_ONE_DOCUMENT.decode(data)]
    except msgspec.DecodeError:
        values = _array_exactly(data)
        if values is not None:
            yield from (_value_record(f"{path}#{n}", value) for n, value in enumerate(values))
        elif data.strip().count(b"\n") > 0:
            yield from _json_lines(path, data)
        else:
            yield Record(str(path), data)  # refused with the decoder's reason
        return
    if array:
        at = f"{path}#"
        yield from [Record(at, bytes(element), number=n) for n, element in enumerate(elements)]
    else:
        yield Record(str(path), data)


def _value_record(origin: str, value: Any) -> Record:
    if isinstance(value, _Refused):
        return Record(origin, error=InvalidEvent("malformed_json", f"not JSON: {value}"))
    if not isinstance(value, dict):
        return Record(origin, error=InvalidEvent("not_an_object", "a record must be an object"))
    return Record(origin, value)


class _Refused(str):
    """Where the standard library's reading of an array found NaN or a key given twice."""


def _marked(pairs: list[tuple[str, Any]]) -> Any:
    document = dict(pairs)
    if len(document) != len(pairs):
        return _Refused("a key is given twice")
    refused = next((value for _, value in pairs if isinstance(value, _Refused)), None)
    return refused if refused is not None else document


def _array_exactly(data: bytes) -> list[Any] | None:
    """An array msgspec cannot read (NaN, a lone surrogate escape), read element by element:
    the elements that are records as values, the others as the reason they are refused."""
    try:
        document = json.loads(
            data.decode("utf-8", "surrogatepass"),
            parse_float=Decimal,
            parse_constant=lambda name: _Refused(f"{name} is not valid JSON"),
            object_pairs_hook=_marked,
        )
    except (ValueError, RecursionError):
        return None
    return document if isinstance(document, list) else None


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
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return
    columns = _columns(path, header)
    at = f"{path}:"
    for row in reader:
        if not "".join(row).strip():
            continue
        if len(row) != len(columns):
            error = InvalidEvent(
                "malformed_csv", f"{len(row)} cells, the header has {len(columns)}"
            )
            yield Record(at, error=error, number=reader.line_num)
            continue
        yield Record(at, row, columns=columns, number=reader.line_num)


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


def read_records(path: Path) -> Iterator[Record]:
    """Every record of one file, in order."""
    data = read_bytes(path)
    text = utf8_text(path, data)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv(path, text)
        return
    data = data.removeprefix(_BOM)
    if suffix in _LINE_SUFFIXES:
        yield from _json_lines(path, data)
    else:
        yield from _json_document(path, data)


def read_paths(paths: Iterable[Path]) -> Iterator[Record]:
    """Records from files, in the order given."""
    for path in paths:
        yield from read_records(path)
