"""Rebuild one shard: apply its pending changes to the bytes it wrote before, or else render
it in full from the registry; write only when the bytes changed (docs/DESIGN.md#rebuild).
The record (with the ETag the write is conditional on) is read *before* the entries: an older
read never overwrites newer output. Bytes the record says are unchanged are checked with one
HEAD: a run that died between its PutObject and its record leaves bytes the record does not
describe (newer: adopted and written again; missing or altered: written back as recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

import msgspec

from sitemap_updater.domain.clusters import Cluster, listings
from sitemap_updater.domain.dates import w3c
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import ConcurrentChange, LimitExceeded, WriteConflict
from sitemap_updater.domain.news import current_news
from sitemap_updater.domain.patch import patched, shard_lines
from sitemap_updater.domain.records import ObjectState, Pending, ShardOutput
from sitemap_updater.domain.render import RENDERING, render_entry
from sitemap_updater.domain.sharding import (
    PROTOCOL_MAX_BYTES,
    PROTOCOL_MAX_URLS,
    Limits,
    ShardFormat,
    shard_document,
    text_document,
)
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.objects import (
    GZIP_CONTENT_TYPE,
    TEXT_CONTENT_TYPE,
    XML_CONTENT_TYPE,
    Writer,
    adopting,
    conflicts,
    recorded_body,
    sha256,
    taking_back,
)
from sitemap_updater.usecases.ports import IndexRequests, Invalidator, ObjectStore, ShardRegistry
from sitemap_updater.usecases.retry import retry

MAX_ATTEMPTS = 3
# Pending changes a rebuild applies to the shard's previous bytes; beyond, it reads the
# shard in full (a BatchGet of this many entries costs about what a full Query does).
MAX_PATCHED = 100


class Rebuilt(StrEnum):
    WRITTEN = "written"
    UNCHANGED = "unchanged"
    RETIRING = "retiring"  # empty; waiting for the index to stop naming it
    DELETED = "deleted"
    ABSENT = "absent"
    RESTORED = "restored"  # same bytes, rewritten because the object was missing or altered


@dataclass(kw_only=True)
class RebuildShard:
    limits: Limits
    shard_format: ShardFormat
    cache_control: str
    registry: ShardRegistry
    store: ObjectStore
    index: IndexRequests
    clock: Callable[[], datetime]
    cdn: Invalidator | None = None
    stylesheet: str | None = None  # the human view's href, referenced from each shard

    @property
    def _writer(self) -> Writer:
        shards = self.shard_format
        content_type = TEXT_CONTENT_TYPE if shards.text else XML_CONTENT_TYPE
        content_type = GZIP_CONTENT_TYPE if shards.gzipped else content_type
        return Writer(self.store, content_type, self.cache_control)

    def __call__(self, shard: str, *, restore: bool = False) -> Rebuilt:
        outcome = last = self._attempts(shard, restore)
        for _check in range(MAX_ATTEMPTS):
            # A restore runs outside the shard's message group: a change committed after its
            # read, whose own rebuild found nothing to do, would stay unrendered under the
            # bytes it wrote. So it reads again until a pass finds nothing to write.
            if not restore or last not in (Rebuilt.WRITTEN, Rebuilt.RESTORED):
                return outcome
            last = self._attempts(shard, restore)
        raise ConcurrentChange(f"{shard} kept changing while it was restored")

    def _attempts(self, shard: str, restore: bool) -> Rebuilt:
        # Keys written or deleted, or whose condition was lost (maybe to our own write, landed
        # with its answer lost: the next attempt then writes nothing): invalidated once here.
        touched: list[str] = []
        try:
            outcome = retry(
                lambda: self._rebuild(shard, restore, touched),
                MAX_ATTEMPTS,
                (WriteConflict, ConcurrentChange),
                lost=conflicts("shard", shard=shard),
            )
        finally:
            if self.cdn is not None and touched:
                self.cdn.invalidate(list(dict.fromkeys(touched)))
        metric = _METRICS.get(outcome, Metric.SHARDS_UNCHANGED)
        metrics.add_metric(name=metric, unit="Count", value=1)
        logger.debug("shard rebuilt", shard=shard, outcome=outcome.value)  # per change
        return outcome

    @property
    def rendering(self) -> str:
        """The render settings; bytes written with others are rebuilt in full."""
        shards = self.shard_format
        stored = "txt" if shards.text else str(int(shards.gzipped))
        return f"{RENDERING}|{stored}|{self.stylesheet or ''}"

    def _rebuild(self, shard: str, restore: bool, touched: list[str]) -> Rebuilt:
        read_at = w3c(self.clock())  # before the reads (see _delete_unrecorded)
        output = self.registry.shard_output(shard)  # before the entries
        pending = [] if restore else self.registry.pending(shard)
        sent = min((p.sent for p in pending if p.sent is not None), default=None)
        outcome = None if restore else self._patch(output, pending, touched, sent)
        if outcome is None:
            outcome = self._full(output, restore, touched, read_at, sent)
        if pending:  # applied: their changes are in what was read after them
            self.registry.clear_pending(shard, pending)
        return outcome

    def _full(
        self, output: ShardOutput, restore: bool, touched: list[str], read_at: str, sent: int | None
    ) -> Rebuilt:
        stored = self.registry.shard_entries(output.shard)
        if not stored:
            return self._retire(output, touched, read_at)
        moment = self.clock()
        try:
            document, expiry = self._document(stored, moment, self.limits)
        except LimitExceeded as exc:
            # Placed under larger limits than today's (a setting lowered): written within the
            # protocol's all the same, never left stale and failing; new URLs go elsewhere.
            logger.warning("shard over its limits", shard=output.shard, reason=str(exc))
            widest = replace(
                self.limits,
                max_urls_per_shard=PROTOCOL_MAX_URLS,
                max_shard_bytes=PROTOCOL_MAX_BYTES,
            )
            document, expiry = self._document(stored, moment, widest)
        news_expiry = w3c(expiry) if expiry is not None else None
        written = _Written(document, len(stored), news_expiry, moment, sent)
        return self._publish(output, written, touched, restore)

    def _document(
        self, stored: list[tuple[SitemapEntry, str | None]], moment: datetime, limits: Limits
    ) -> tuple[bytes, datetime | None]:
        """The shard's document and when its news next ages (LimitExceeded: over ``limits``)."""
        if self.shard_format.text:  # URLs only: no alternates, no news
            return text_document([entry.url for entry, _ in stored], limits), None
        lines, expiry = self._rendered(stored, moment)
        return shard_document(lines, limits, stylesheet=self.stylesheet), expiry

    def _patch(
        self, output: ShardOutput, pending: list[Pending], touched: list[str], sent: int | None
    ) -> Rebuilt | None:
        """Apply the pending changes to the recorded bytes (None: anything unexpected, for
        the full path; only XML lines are patched)."""
        current = output.obj
        if (
            current is None
            or self.shard_format.text
            or output.retiring
            or output.news_expiry is not None
            or output.rendering != self.rendering
            or len(pending) > MAX_PATCHED
        ):
            return None
        if not pending:  # nothing committed since these bytes: check they are there
            found = self.store.head(current.key)
            if found is None or found.metadata.get("sha256") != current.sha256:
                return None
            self._request_index(output)
            return Rebuilt.UNCHANGED
        moment = self.clock()
        body = recorded_body(self.store, current)
        document = None if body is None else self.shard_format.document_of(body)
        if document is None or sha256(document) != current.sha256:  # not the recorded object
            return None
        lines = shard_lines(document)
        changes = None if lines is None else self._changed_lines(output.shard, pending, moment)
        if lines is None or changes is None:
            return None
        rendered = patched(lines, changes)
        if not rendered:  # emptied: it retires
            return None
        try:
            document = shard_document(rendered, self.limits, stylesheet=self.stylesheet)
        except LimitExceeded:
            return None
        return self._publish(output, _Written(document, len(rendered), None, moment, sent), touched)

    def _changed_lines(
        self, shard: str, pending: list[Pending], moment: datetime
    ) -> dict[str, str | None] | None:
        """The line of each changed entry (None: removed) and of this shard's members of the
        changed clusters; None when one has news (their rendering ages)."""
        cids = {marker.cluster for marker in pending if marker.cluster is not None}
        clusters = self.registry.clusters(cids) if cids else {}
        urls = {marker.url for marker in pending} | {
            url for c in clusters.values() for url, member in c.all.items() if member.shard == shard
        }
        stored = self.registry.entries(shard, sorted(urls))
        if any(entry.news is not None for entry, _ in stored.values()):
            return None
        pairs = list(stored.values())
        lines, _ = self._rendered(pairs, moment, clusters)
        rendered = {entry.url: line for (entry, _), line in zip(pairs, lines, strict=True)}
        return {url: rendered.get(url) for url in urls}

    def _publish(
        self, output: ShardOutput, new: _Written, touched: list[str], restore: bool = False
    ) -> Rebuilt:
        digest = sha256(new.document)
        key = self.shard_format.key(output.shard)
        current = output.obj
        if current is not None and current.sha256 == digest and current.key == key:
            if output.retiring and restore:  # its own rebuild, not a restore, brings it back
                return Rebuilt.UNCHANGED
            return self._same_bytes(output, current, new, touched)
        now = w3c(new.moment)
        state = ObjectState(key, "", digest, new.count, len(new.document), now)
        with self._adopting(output, key, now, touched):
            written = self._writer.write(state, self.shard_format.body(new.document), current)
        touched.append(key)
        updated = self._recorded(output, written, new.news_expiry)
        self.registry.save_shard_output(updated, output.generation)
        self._request_index(updated, new.sent)
        return Rebuilt.WRITTEN

    def _request_index(self, output: ShardOutput, sent: int | None = None) -> None:
        shard = output.shard
        self.index.request_index(f"{shard}@{output.generation}", shard=shard, sent=sent)

    def _recorded(
        self, output: ShardOutput, obj: ObjectState, news_expiry: str | None
    ) -> ShardOutput:
        return replace(output.with_object(obj, news_expiry=news_expiry), rendering=self.rendering)

    def _same_bytes(
        self, output: ShardOutput, current: ObjectState, new: _Written, touched: list[str]
    ) -> Rebuilt:
        news_expiry = new.news_expiry
        with self._adopting(output, current.key, current.lastmod, touched):
            restored = self._writer.rewrite(current, self.shard_format.body(new.document))
        shard = output.shard
        if restored is None and not output.retiring:
            if output.news_expiry != news_expiry or output.rendering != self.rendering:
                # An adopted record may lack the news expiry the index's sweep ages them by.
                output = self._recorded(output, current, news_expiry)
                self.registry.save_shard_output(output, output.generation - 1)
            # The run that wrote (or adopted) this state may have died before asking for the
            # index: ask again (cheap, and deduplicated by the FIFO queue).
            self._request_index(output, new.sent)
            return Rebuilt.UNCHANGED
        # Written back as recorded (the index need not change), or republished while
        # retiring to exactly the bytes it had: its object and lastmod kept.
        updated = self._recorded(output, restored or current, news_expiry)
        if restored is None:
            self.registry.save_shard_output(updated, output.generation)
        else:
            touched.append(current.key)
            with taking_back(self.store, restored, lambda: self.registry.shard_output(shard).obj):
                self.registry.save_shard_output(updated, output.generation)
        if not output.retiring:
            return Rebuilt.RESTORED
        self._request_index(updated, new.sent)
        return Rebuilt.WRITTEN

    def _rendered(
        self,
        stored: list[tuple[SitemapEntry, str | None]],
        moment: datetime,
        known: Mapping[str, Cluster] | None = None,
    ) -> tuple[list[str], datetime | None]:
        """Each entry's ``<url>`` line as it renders now, in order (with its cluster's
        alternates, read after the entries unless ``known``; news only while recent), and
        when that rendering next changes by itself."""
        entries, expiry = current_news([entry for entry, _ in stored], moment)
        lines = [""] * len(entries)
        waiting: dict[str, list[int]] = {}  # cluster id -> positions of its entries
        for position, (entry, (_, cid)) in enumerate(zip(entries, stored, strict=True)):
            if cid is None:
                lines[position] = render_entry(entry)
            else:
                waiting.setdefault(cid, []).append(position)
        for cid, cluster in self._clusters(list(waiting), known or {}):
            listing = listings(cluster)
            for position in waiting.pop(cid, ()):
                alternates = listing.get(entries[position].url, ())
                entry = msgspec.structs.replace(entries[position], alternates=alternates)
                lines[position] = render_entry(entry)
        for position in (p for positions in waiting.values() for p in positions):  # not found
            lines[position] = render_entry(entries[position])
        return lines, expiry

    def _clusters(
        self, cids: Iterable[str], known: Mapping[str, Cluster]
    ) -> Iterator[tuple[str, Cluster]]:
        """The clusters asked for, a BatchGetItem's hundred at a time, each dropped once its
        entries are rendered: a shard's clusters may list 64 pages each (held at once, about
        1 GB for 38,000 pages in ten languages)."""
        yield from known.items()
        missing = sorted(set(cids) - known.keys())
        for at in range(0, len(missing), 100):
            yield from self.registry.clusters(missing[at : at + 100]).items()

    def _adopting(
        self, output: ShardOutput, key: str, lastmod: str, touched: list[str]
    ) -> AbstractContextManager[None]:
        def save(found: ObjectState | None) -> None:
            # Bytes of unknown render settings (a concurrent writer's): rebuilt in full.
            kept = output.with_object(found, output.retiring, output.news_expiry)
            self.registry.save_shard_output(replace(kept, rendering=None), output.generation)

        return adopting(self.store, key, lastmod, save, touched)

    def _retire(self, output: ShardOutput, touched: list[str], read_at: str) -> Rebuilt:
        obj = output.obj
        if obj is None:
            return self._delete_unrecorded(output.shard, touched, read_at)
        if not output.retiring:
            retiring = replace(output, retiring=True, generation=output.generation + 1)
            self.registry.save_shard_output(retiring, output.generation)
            # Read ``listed`` again, after the mark: an index may have named the shard since
            # the first read, and none can start to from now on (set_listed refuses).
            output = self.registry.shard_output(output.shard)
            if output.generation != retiring.generation:
                raise ConcurrentChange(f"{output.shard} changed while it was retiring")
        if output.listed:
            self._request_index(output)
            return Rebuilt.RETIRING
        with self._adopting(output, obj.key, obj.lastmod, touched):
            # Only the object recorded: never one a concurrent republish has just written.
            self.store.delete(obj.key, expected_etag=obj.etag)
        touched.append(obj.key)
        self.registry.save_shard_output(output.with_object(None), output.generation)
        return Rebuilt.DELETED

    def _delete_unrecorded(self, shard: str, touched: list[str], read_at: str) -> Rebuilt:
        """Delete the object of an empty shard with none recorded: written by a run that died
        before its first record, never listed. One written since this run's read (its lastmod
        taken after it: equal counts as newer) is a concurrent rebuild's, about to be
        recorded, and is kept."""
        try:
            key = self.shard_format.key(shard)
        except ValueError:  # not a shard id: it names no object
            return Rebuilt.ABSENT
        found = self.store.head(key)
        if found is None or "sha256" not in found.metadata:  # nothing, or not ours
            return Rebuilt.ABSENT
        if found.metadata.get("lastmod", "") >= read_at:
            return Rebuilt.UNCHANGED
        self.store.delete(key, expected_etag=found.etag)
        touched.append(key)
        return Rebuilt.DELETED


@dataclass(frozen=True)
class _Written:
    """A shard's new document, and what its record and index request say of it."""

    document: bytes
    count: int
    news_expiry: str | None
    moment: datetime  # its lastmod, if written
    sent: int | None  # when SQS received the oldest change it shows (epoch ms)


_METRICS = {
    Rebuilt.WRITTEN: Metric.SHARDS_WRITTEN,
    Rebuilt.RESTORED: Metric.SHARDS_WRITTEN,
    Rebuilt.DELETED: Metric.SHARDS_DELETED,
}
