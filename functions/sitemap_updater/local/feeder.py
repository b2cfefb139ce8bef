"""Event files as SQS message bodies, exactly as written (the ingest rejects a bad one):

* ``.jsonl`` / ``.ndjson``: a body per non-blank line;
* one JSON document: an SQS batch (``{"Records": [...]}``) gives each record's body, an array
  one per element, an object one; a JSON Schema (``"$schema"``, no event ``type``) is skipped
  with a warning;
* anything else: JSON Lines if it has several lines, else one body.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sitemap_updater.ops.errors import UserError, utf8_text, warn
from sitemap_updater.ops.pages import array_elements

EVENT_SUFFIXES = {".json", ".jsonl", ".ndjson"}
LINE_SUFFIXES = {".jsonl", ".ndjson"}
_EVENT_FILES = "event files (.json, .jsonl, .ndjson)"
_BACKFILL = "page records (CSV) and sitemaps are imported with `sitemap-updater backfill`"


@dataclass(frozen=True)
class MessageBody:
    body: str
    origin: str  # file[:line or #index], for people


def _lines(path: Path, text: str) -> Iterator[MessageBody]:
    """JSON Lines are split at \\n (\\r\\n) only: JSON strings may hold U+2028, U+0085..."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield MessageBody(line.removesuffix("\r"), f"{path}:{number}")


def read_file(path: Path, in_folder: bool = False) -> Iterator[MessageBody]:
    """``path``'s bodies; a JSON Schema is skipped, named in a warning when the file was
    named itself (a folder's, such as events/schema.json, is its own)."""
    text = utf8_text(path, path.read_bytes())  # SQS carries Unicode text only
    if path.suffix.lower() in LINE_SUFFIXES:
        yield from _lines(path, text)
        return
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        # An array holding NaN, a number too long for Python or nesting too deep still
        # gives its elements one by one, so that the ingest function rejects only those.
        elements = array_elements(text)
        yield from _not_json(path, text) if elements is None else _numbered(path, elements)
        return
    if isinstance(document, dict) and isinstance(document.get("Records"), list):
        for number, record in enumerate(document["Records"]):
            body = record.get("body") if isinstance(record, dict) else None
            if isinstance(body, str):
                yield MessageBody(body, f"{path}#Records[{number}]")
            else:  # SQS carries text only: there is no message to send
                warn(f"{path}#Records[{number}]: no text body: not sent")
    elif isinstance(document, list):
        yield from _numbered(path, array_elements(text) or [])
    elif isinstance(document, dict) and "$schema" in document and not _event_type(document):
        if not in_folder:
            warn(f"{path}: a JSON Schema, not events: skipped")
    else:
        yield MessageBody(text.strip(), str(path))


def _event_type(document: dict[str, object]) -> bool:
    return document.get("type") in ("publish", "unpublish")  # a schema's is "object"


def _not_json(path: Path, text: str) -> Iterator[MessageBody]:
    lines = list(_lines(path, text))
    if len(lines) > 1:
        yield from lines
    elif text.strip():
        yield MessageBody(text.strip(), str(path))


def _numbered(path: Path, elements: list[str]) -> Iterator[MessageBody]:
    for number, element in enumerate(elements):
        yield MessageBody(element, f"{path}#{number}")


def read_paths(paths: Iterable[Path]) -> list[MessageBody]:
    """The bodies of the event files; a folder's own files in name order (not its subfolders,
    such as events/cms/), the ones skipped named in a warning. A named non-event file is refused."""
    bodies: list[MessageBody] = []
    for path in paths:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file())
            skipped = [p.name for p in files if p.suffix.lower() not in EVENT_SUFFIXES]
            if skipped:
                more = f" and {len(skipped) - 5:,} more" if len(skipped) > 5 else ""
                warn(f"{path}: skipped {', '.join(skipped[:5])}{more}: not {_EVENT_FILES}")
            for file in files:
                if file.suffix.lower() in EVENT_SUFFIXES:
                    bodies.extend(read_file(file, in_folder=True))
        elif path.is_file():
            if path.suffix.lower() not in EVENT_SUFFIXES:
                raise UserError(f"{path}: not one of the {_EVENT_FILES}; {_BACKFILL}")
            bodies.extend(read_file(path))
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    return bodies
