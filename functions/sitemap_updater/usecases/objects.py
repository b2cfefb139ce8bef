"""Writing a derived object: compare-and-set on the ETag, each object described by its own
metadata (hash, entry count, size, lastmod). When a condition is lost, what is really there
is recorded (``adopting``) and the next attempt reads the registry again; the registry is
read *after* the ETag the write is conditional on, so an older read can never win."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from sitemap_updater.domain.errors import ConcurrentChange, WriteConflict
from sitemap_updater.domain.records import ObjectState
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import ObjectStore

XML_CONTENT_TYPE = "application/xml; charset=utf-8"
GZIP_CONTENT_TYPE = "application/gzip"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"


class NewerOutput(WriteConflict):
    """The object holds output newer than its record: never put the recorded bytes over it."""


def sha256(document: bytes) -> str:
    return hashlib.sha256(document).hexdigest()


@dataclass(frozen=True)
class Writer:
    store: ObjectStore
    content_type: str
    cache_control: str

    def write(self, state: ObjectState, body: bytes, previous: ObjectState | None) -> ObjectState:
        """Write ``body`` under ``state.key`` if it still holds ``previous`` (or WriteConflict)."""
        etag = self.store.put(
            state.key,
            body,
            content_type=self.content_type,
            cache_control=self.cache_control,
            expected_etag=previous.etag if previous and previous.key == state.key else None,
            metadata={name: str(getattr(state, name)) for name in _DESCRIPTION},
        )
        return replace(state, etag=etag)

    def rewrite(self, recorded: ObjectState, body: bytes) -> ObjectState | None:
        """Write the recorded object again if it is missing or altered (None: it is intact)."""
        found = self.store.head(recorded.key)
        meta = found.metadata if found is not None else {}
        if found is not None and meta.get("sha256") == recorded.sha256:
            return None
        # Other output of ours, not an altered object nor an older one put back: a writer
        # takes its lastmod after it read the record, so never before the recorded one
        # (equal within a second: newer, the safe side).
        if "sha256" in meta and meta.get("lastmod", "") >= recorded.lastmod:
            raise NewerOutput(f"{recorded.key} was rewritten since its record was read")
        previous = None if found is None else replace(recorded, etag=found.etag)
        return self.write(recorded, body, previous)


def recorded_body(store: ObjectStore, recorded: ObjectState) -> bytes | None:
    """The object's bytes if its ETag is still the recorded one (None: gone or replaced)."""
    found = store.get(recorded.key)
    return found.body if found is not None and found.etag == recorded.etag else None


@contextmanager
def taking_back(
    store: ObjectStore, written: ObjectState, recorded: Callable[[], ObjectState | None]
) -> Iterator[None]:
    """Around recording an object written back: if the record moved on meanwhile
    (ConcurrentChange, raised again), the object is deleted unless that record now holds it
    (``recorded``) or it was replaced since: no bytes outlive their record."""
    try:
        yield
    except ConcurrentChange:
        if (now := recorded()) is None or now.etag != written.etag:
            try:
                store.delete(written.key, expected_etag=written.etag)
            except WriteConflict:
                logger.info("restored object replaced since; kept", key=written.key)
        raise


@contextmanager
def adopting(
    store: ObjectStore,
    key: str,
    lastmod: str,
    save: Callable[[ObjectState | None], None],
    touched: list[str],
) -> Iterator[None]:
    """Around a conditional write or delete of ``key``: when its condition is lost (maybe to
    our own write, landed with its answer lost), ``key`` is touched and what is really
    there is recorded (``save``), unless the record moved on; then the conflict is raised."""
    try:
        yield
    except WriteConflict:
        touched.append(key)
        found, state = store.head(key), None
        if found is not None:
            meta = found.metadata
            sha, lastmod = meta.get("sha256", ""), meta.get("lastmod", lastmod)
            entries, size = _int(meta.get("entries")), _int(meta.get("bytes"))
            state = ObjectState(key, found.etag, sha, entries, size, lastmod)
        try:
            save(state)
        except ConcurrentChange:
            logger.info("record moved on; not adopting", key=key)
        raise


def conflicts(what: str, **context: Any) -> Callable[[int, Exception], None]:
    def lost(attempt: int, error: Exception) -> None:
        metrics.add_metric(name=Metric.WRITE_CONFLICTS, unit="Count", value=1)
        logger.warning(f"{what} write conflict", attempt=attempt, reason=str(error), **context)

    return lost


def _int(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


_DESCRIPTION = ("sha256", "entries", "bytes", "lastmod")  # an object's metadata
