"""Writing a derived object: skip identical bytes, compare-and-set on the ETag, adopt the truth.

Every object the updater writes carries its own description in its metadata (content hash,
entry count, uncompressed size, lastmod). When a conditional write loses, the writer reads
what is really there and records that (``observe``), then tries again from a fresh read of
the registry. Because the registry is read *after* the ETag the write is conditional on,
an object is only ever replaced by output at least as new: an older read cannot win.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sitemap_updater.domain.records import ObjectState

XML_CONTENT_TYPE = "application/xml; charset=utf-8"
GZIP_CONTENT_TYPE = "application/gzip"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"


class StoredObjectView(Protocol):
    @property
    def etag(self) -> str: ...
    @property
    def metadata(self) -> dict[str, str]: ...


class ObjectStore(Protocol):
    def put(
        self,
        key: str,
        body: bytes,
        *,
        content_type: str,
        cache_control: str,
        expected_etag: str | None,
        metadata: dict[str, str] | None = None,
    ) -> str: ...

    def head(self, key: str) -> StoredObjectView | None: ...

    def delete(self, key: str, expected_etag: str | None = None) -> None: ...


class Invalidator(Protocol):
    """Makes the CDN forget the given keys; never raises (a failure is logged and counted)."""

    def invalidate(self, keys: Sequence[str]) -> bool: ...


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
    return ObjectState(
        key=state.key,
        etag=etag,
        sha256=state.sha256,
        entries=state.entries,
        bytes=state.bytes,
        lastmod=state.lastmod,
    )


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


def newer_output(found: StoredObjectView, recorded: ObjectState) -> bool:
    """Whether ``found`` is output of ours written since ``recorded`` (by a concurrent writer
    that has not recorded it yet), rather than an altered object or an older one put back.

    A restore must never put the recorded (older) bytes over it. Our objects carry their
    hash and lastmod; a writer's lastmod is taken after it read the record, so it is never
    before the recorded one (equal within a second: counted as newer, the safe side).
    """
    meta = found.metadata
    if "sha256" not in meta or meta["sha256"] == recorded.sha256:
        return False
    return meta.get("lastmod", "") >= recorded.lastmod


def _int(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0
