"""Read event files into SQS message bodies, exactly as a CMS would have sent them.

* ``*.jsonl`` / ``*.ndjson``: each non-blank line is one body, exactly as written (a
  malformed line is rejected by the ingest handler, like any bad message from a real CMS).
* Any other file holding one JSON document: an SQS batch (``{"Records": [...]}``, as Lambda
  receives it) gives each record's body; an array gives one body per element; an object is
  one body, the file's text as written. A JSON Schema document (``"$schema"``) is skipped.
* A file that is not one JSON document is JSON Lines if it has several lines, else one body.
* A directory is read in name order (files ending .json, .jsonl or .ndjson, recursively).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

EVENT_SUFFIXES = {".json", ".jsonl", ".ndjson"}
LINE_SUFFIXES = {".jsonl", ".ndjson"}


@dataclass(frozen=True)
class MessageBody:
    body: str
    origin: str  # file[:line or #index], for people


def _split(text: str) -> list[str]:
    """JSON Lines are split at \\n (\\r\\n) only: JSON strings may hold U+2028, U+0085..."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def _lines(path: Path, text: str) -> Iterator[MessageBody]:
    for number, line in enumerate(_split(text), start=1):
        if line.strip():
            yield MessageBody(line, f"{path}:{number}")


def read_file(path: Path) -> Iterator[MessageBody]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not content
    except UnicodeDecodeError as exc:  # SQS carries Unicode text only: no CMS could send it
        raise ValueError(f"{path} is not UTF-8 text (byte {exc.start}): {exc.reason}") from exc
    if path.suffix.lower() in LINE_SUFFIXES:
        yield from _lines(path, text)
        return
    try:
        document = json.loads(text)
    except ValueError:
        if len([line for line in _split(text) if line.strip()]) > 1:
            yield from _lines(path, text)
        elif text.strip():
            yield MessageBody(text.strip(), str(path))
        return
    if isinstance(document, dict) and isinstance(document.get("Records"), list):
        for number, record in enumerate(document["Records"]):
            body = record.get("body") if isinstance(record, dict) else None
            if isinstance(body, str):
                yield MessageBody(body, f"{path}#Records[{number}]")
    elif isinstance(document, dict) and "$schema" in document:
        return
    elif isinstance(document, list):
        for number, element in enumerate(_element_texts(text)):
            yield MessageBody(element, f"{path}#{number}")
    else:
        yield MessageBody(text.strip(), str(path))


def _element_texts(text: str) -> Iterator[str]:
    """Each element of a JSON array exactly as written (numbers keep all their digits)."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    while True:
        position = _skip_space(text, position)
        if text[position] == "]":
            return
        _, end = decoder.raw_decode(text, position)
        yield text[position:end]
        position = _skip_space(text, end)
        if text[position] == ",":
            position += 1


def _skip_space(text: str, position: int) -> int:
    while text[position] in " \t\r\n":
        position += 1
    return position


def read_paths(paths: Iterable[Path]) -> list[MessageBody]:
    """Every message body from the given files and directories, in order."""
    bodies: list[MessageBody] = []
    for path in paths:
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EVENT_SUFFIXES
            )
            for file in files:
                bodies.extend(read_file(file))
        elif path.is_file():
            bodies.extend(read_file(path))
        else:
            raise FileNotFoundError(f"no such file or directory: {path}")
    return bodies
