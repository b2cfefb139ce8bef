"""Writing a derived object: skip identical bytes, compare-and-set on the ETag, adopt the truth.

Every object the updater writes carries its own description in its metadata (content hash,
entry count, uncompressed size, lastmod). When a conditional write loses, the writer reads
what is really there and records that (``adopt``), then tries again from a fresh read of
the registry. Because the registry is read *after* the ETag the write is conditional on,
an object is only ever replaced by output at least as new: an older read cannot win.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from sitemap_updater.domain.errors import ConcurrentChange, WriteConflict
from sitemap_updater.domain.records import ObjectState
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import ObjectStore, StoredObject

XML_CONTENT_TYPE = "application/xml; charset=utf-8"
GZIP_CONTENT_TYPE = "application/gzip"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"


class NewerOutput(WriteConflict):
    """The object holds output written since its record was read, by a writer that has
    not recorded it yet: the recorded (older) bytes must never be put over it."""


def sha256(document: bytes) -> str:
    return hashlib.sha256(document).hexdigest()


def w3c_now(clock_value: datetime) -> str:
    return clock_value.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_object(
    store: ObjectStore,
    state: ObjectState,
    body: bytes,
    *,
    content_type: str,
    cache_control: str,
    previous: ObjectState | None,
) -> ObjectState:
    """Write ``body`` under ``state.key`` if it still holds ``previous`` (raises WriteConflict)."""
    expected = previous.etag if previous is not None and previous.key == state.key else None
    etag = store.put(
        state.key,
        body,
        content_type=content_type,
        cache_control=cache_control,
        expected_etag=expected,
        metadata={
            "sha256": state.sha256,
            "entries": str(state.entries),
            "bytes": str(state.bytes),
            "lastmod": state.lastmod,
        },
    )
    return replace(state, etag=etag)


def rewrite(
    store: ObjectStore, recorded: ObjectState, body: bytes, *, content_type: str, cache_control: str
) -> ObjectState | None:
    """Write the recorded object again, byte for byte, if it is missing or altered (None:
    it is intact). NewerOutput if it holds newer output (see ``newer_output``)."""
    found = store.head(recorded.key)
    if found is not None and found.metadata.get("sha256") == recorded.sha256:
        return None
    if found is not None and newer_output(found, recorded):
        raise NewerOutput(f"{recorded.key} was rewritten since its record was read")
    there = None if found is None else replace(recorded, etag=found.etag)
    return write_object(
        store,
        recorded,
        body,
        content_type=content_type,
        cache_control=cache_control,
        previous=there,
    )


def take_back(store: ObjectStore, written: ObjectState, recorded: ObjectState | None) -> None:
    """An object was written back, and its record moved on meanwhile: delete it, unless the
    record now holds it (``recorded``) or it was replaced since. Bytes must never outlive
    the record that accounts for them."""
    if recorded is not None and recorded.etag == written.etag:
        return
    try:
        store.delete(written.key, expected_etag=written.etag)
    except WriteConflict:
        logger.info("restored object replaced since; kept", key=written.key)


def adopt(
    store: ObjectStore, key: str, lastmod: str, save: Callable[[ObjectState | None], None]
) -> None:
    """Record what is really stored under ``key`` (``save``), so the next attempt's condition
    can hold. A record that moved on since it was read holds a newer writer's own state,
    which the next attempt reads: nothing of ours to adopt."""
    try:
        save(observe(store, key, lastmod))
    except ConcurrentChange:
        logger.info("record moved on; not adopting", key=key)


def observe(store: ObjectStore, key: str, fallback_lastmod: str) -> ObjectState | None:
    """What is really stored under ``key``, described from its metadata (None: nothing)."""
    found = store.head(key)
    if found is None:
        return None
    meta = found.metadata
    return ObjectState(
        key=key,
        etag=found.etag,
        sha256=meta.get("sha256", ""),
        entries=_int(meta.get("entries")),
        bytes=_int(meta.get("bytes")),
        lastmod=meta.get("lastmod", fallback_lastmod),
    )


def newer_output(found: StoredObject, recorded: ObjectState) -> bool:
    """Whether ``found`` is output of ours written since ``recorded`` (by a concurrent writer
    that has not recorded it yet), rather than an altered object or an older one put back.

    Our objects carry their hash and lastmod; a writer's lastmod is taken after it read the
    record, so it is never before the recorded one (equal within a second: counted as newer,
    the safe side).
    """
    meta = found.metadata
    if "sha256" not in meta or meta["sha256"] == recorded.sha256:
        return False
    return meta.get("lastmod", "") >= recorded.lastmod


def conflicts(what: str, **context: Any) -> Callable[[int, Exception], None]:
    """What an attempt that lost a race leaves: a count and a warning."""

    def lost(attempt: int, error: Exception) -> None:
        metrics.add_metric(name=Metric.WRITE_CONFLICTS, unit="Count", value=1)
        logger.warning(f"{what} write conflict", attempt=attempt, reason=str(error), **context)

    return lost


def _int(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0
