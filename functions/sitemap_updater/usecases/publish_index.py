"""Publish the sitemap index (and robots.txt's Sitemap lines) from the shard records, one run
at a time (docs/DESIGN.md#index): only the changed shards' lines while the files name them
all (as a finished full publish left them: ``IndexOutput.whole``), else in full. A full
publish marks each shard ``listed`` before naming it, and clears it on the retiring shards
no file names, asking their rebuild to delete them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from sitemap_updater.domain.dates import w3c
from sitemap_updater.domain.errors import ConcurrentChange, WriteConflict
from sitemap_updater.domain.patch import index_lines, loc_of, patched
from sitemap_updater.domain.records import IndexOutput, ObjectState, ShardOutput
from sitemap_updater.domain.render import IndexEntry, index_line, index_of
from sitemap_updater.domain.robots import MAX_ROBOTS_BYTES, grows_too_large, with_sitemaps
from sitemap_updater.domain.sharding import (
    INDEX_KEY,
    ROBOTS_KEY,
    Limits,
    index_room,
    shard_of_key,
    split_index,
    write_order,
)
from sitemap_updater.domain.urls import Site
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.objects import (
    TEXT_CONTENT_TYPE,
    XML_CONTENT_TYPE,
    NewerOutput,
    Writer,
    adopting,
    conflicts,
    recorded_body,
    sha256,
    taking_back,
)
from sitemap_updater.usecases.ports import (
    IndexRegistry,
    Invalidator,
    ObjectStore,
    RebuildRequests,
    SiteFiles,
)
from sitemap_updater.usecases.retry import retry

MAX_ATTEMPTS = 3


class RobotsOutcome(StrEnum):
    UNCHANGED = "unchanged"
    WRITTEN = "written"
    TOO_LARGE = "too_large"


class Restored(StrEnum):
    UNCHANGED = "unchanged"  # the object is there, as recorded
    RESTORED = "restored"  # written again, byte for byte
    BEHIND = "behind"  # the registry has moved on: the index function must publish


@dataclass(frozen=True)
class RestoreResult:
    index_files: dict[str, Restored]
    robots: RobotsOutcome | None  # None when the index is behind (robots.txt is left alone)

    @property
    def behind(self) -> bool:
        return self.robots is None


@dataclass(kw_only=True)
class PublishIndex:
    site: Site
    limits: Limits
    cache_control: str
    registry: IndexRegistry
    store: ObjectStore
    retire: RebuildRequests
    clock: Callable[[], datetime]
    cdn: Invalidator | None = None
    stylesheet: str | None = None  # the human view's href, referenced from the index
    site_files: SiteFiles | None = None
    extras: tuple[str, ...] = ()  # listed after our shards, in the first index file
    # Publish-to-visible latencies (ms) of the changes published, newest last (the local
    # runtime reports them; bounded, as a warm function serves many runs).
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    # Each index file as last read or written: (ETag, hash, bytes). The index runs one at a
    # time, mostly in one warm function, so a refresh need not GET what it wrote; the write
    # stays conditional on the recorded ETag, so an object changed since is found.
    _last_index: dict[str, tuple[str, str, bytes]] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def _room(self) -> Limits:
        return index_room(self.limits, self.extras)

    @property
    def _writer(self) -> Writer:
        return Writer(self.store, XML_CONTENT_TYPE, self.cache_control)

    def __call__(self, shards: Sequence[str] | None = None, sent: Sequence[int] = ()) -> None:
        """Publish the index: only the entries of ``shards`` when that is all that changed
        (none: only the site files; None: in full); then count how long ago SQS received
        the changes shown (``sent``, epoch ms)."""
        # Keys written by any attempt, invalidated once one succeeds (an attempt after a
        # lost race finds them as recorded and writes nothing).
        touched: list[str] = []

        def attempt() -> None:
            if self.site_files is not None:  # first: the index may reference them
                touched.extend(self.site_files())
            if shards is None or not self._patch(shards, touched):
                self._publish(touched)

        retry(attempt, MAX_ATTEMPTS, (WriteConflict, ConcurrentChange), lost=conflicts("index"))
        if self.cdn is not None and touched:
            self.cdn.invalidate(list(dict.fromkeys(touched)))
        now = self.clock().timestamp() * 1000
        for oldest in sent:
            latency = max(now - oldest, 0.0)
            metrics.add_metric(name=Metric.PUBLISH_TO_VISIBLE, unit="Milliseconds", value=latency)
            self.latencies.append(latency)

    def _patch(self, shards: Sequence[str], touched: list[str]) -> bool:
        """Rewrite the lines of ``shards`` in the index files naming them, reading only the
        first file's record and theirs (the other files' records only for a shard the first
        does not name). False: a full publish not finished, a file not as recorded, its
        extras not the ones configured, or the set of shards named would change."""
        first, outputs = self.registry.index_and_shards(INDEX_KEY, sorted(set(shards)))
        if first is None or not first.whole or not all(o.nameable for o in outputs):
            return False
        left: dict[str, str | None] = {o.shard: self._line(o) for o in outputs}
        found: list[tuple[IndexOutput, list[str], dict[str, str | None]]] = []
        for record in self._index_files(first, lambda: bool(left)):
            read = self._own_lines(record)
            if read is None:
                return False
            lines, named_here = read
            named = {shard: left.pop(shard) for shard in named_here if shard in left}
            if named:
                found.append((record, lines, named))
        if left:
            return False
        for record, lines, changes in found:
            count, document = self._render(record.key, patched(lines, changes, key=self._shard_of))
            written = self._write_document(record.key, count, document, record, touched)
            logger.debug("index patched", key=record.key, shards=sorted(changes), written=written)
        return True

    def _index_files(self, first: IndexOutput, wanted: Callable[[], bool]) -> Iterator[IndexOutput]:
        """The first index file's record, then, while ``wanted``, the others' (one read)."""
        yield first
        if wanted():
            others = self.registry.index_outputs()
            for key in sorted(set(others) - {INDEX_KEY}, key=lambda k: (len(k), k)):  # 2, .., 10
                if not wanted():
                    return
                yield others[key]

    def _own_lines(self, record: IndexOutput) -> tuple[list[str], list[str]] | None:
        """The lines of our shards in the index file and the shards they name, if its object
        is exactly as recorded, its extras are the ones configured, and every line names one
        of our shards."""
        recorded = record.obj
        if recorded is None:
            return None
        cached = self._last_index.get(record.key)
        if cached is not None and cached[:2] == (recorded.etag, recorded.sha256):
            body: bytes | None = cached[2]
        else:
            body = recorded_body(self.store, recorded)
        lines = index_lines(body) if body and sha256(body) == recorded.sha256 else None
        if lines is None or index_of(lines, stylesheet=self.stylesheet) != body:
            return None
        self._last_index[record.key] = (recorded.etag, recorded.sha256, body)
        extras = self._extras(record.key)
        own = lines[: len(lines) - len(extras)]
        if len(lines) < len(extras) or lines[len(own) :] != extras:
            return None
        shards = [self._shard_of(line) for line in own]
        return None if "" in shards else (own, shards)

    def _extras(self, key: str) -> list[str]:
        """The lines of the extra sitemaps, which only the first index file lists."""
        if key != INDEX_KEY:
            return []
        return [index_line(IndexEntry(url, None)) for url in self.extras]

    def _shard_of(self, line: str) -> str:
        """The shard an index line names ("": not one of ours); the index is in shard order."""
        url = loc_of(line)
        key = url.rpartition("/")[2]
        try:
            return shard_of_key(key) if self.site.url_for(key) == url else ""
        except ValueError:
            return ""

    def _publish(self, touched: list[str]) -> None:
        outputs = sorted(self.registry.shard_outputs(), key=lambda output: output.shard)
        named = {output.shard: output for output in outputs if output.nameable}
        for output in named.values():
            if not output.listed:
                self.registry.set_listed(output.shard, True)
        files = split_index(list(named), self._room)
        previous = self.registry.index_outputs()
        if (first := previous.get(INDEX_KEY)) is not None and first.whole:
            # No patch until this publish is done: it may leave robots.txt or files behind.
            self.registry.set_whole(INDEX_KEY, False)
        written = []
        listed = [output.shard for output in outputs if output.listed]
        for key, shards in write_order(files, listed, self._room):
            count, document = self._render(key, [self._line(named[s]) for s in shards])
            if self._write_document(key, count, document, previous.get(key), touched):
                written.append(key)
        keys = [key for key, _ in files]
        robots = self.robots([self.site.url_for(key) for key in keys])
        deleted = [key for key in sorted(previous) if key not in keys]
        for key in deleted:
            self.store.delete(key)
            touched.append(key)
            self.registry.delete_index_output(key)
            self._last_index.pop(key, None)
        self._request_rebuilds(outputs)
        if keys:
            self.registry.set_whole(INDEX_KEY, True)
        if written:
            metrics.add_metric(name=Metric.INDEX_FILES_WRITTEN, unit="Count", value=len(written))
        if robots is RobotsOutcome.WRITTEN:
            touched.append(ROBOTS_KEY)
        logger.info(
            "index published",
            shards=len(named),
            written=written,
            deleted=deleted,
            robots=robots.value,
        )

    def _request_rebuilds(self, outputs: list[ShardOutput]) -> None:
        """Clear ``listed`` on the retiring shards no index names now, and ask their rebuild
        to delete them; ask for the rebuild of every shard whose news have aged out."""
        # Not only those it stops naming now: a run that died before its request leaves
        # one unlisted with its object, and the next run asks again.
        retired = [o for o in outputs if not o.nameable and (o.listed or o.obj is not None)]
        for output in retired:
            if output.listed:
                self.registry.set_listed(output.shard, False)
        requests = {o.shard: [f"unlisted@{o.generation}"] for o in retired}
        # News ageing: a shard whose rendering changes by itself (news turning two days old)
        # is rebuilt once that moment has passed, with no new event: the index runs on a schedule.
        now = w3c(self.clock())
        for output in outputs:
            if output.news_expiry is not None and output.news_expiry <= now:
                requests.setdefault(output.shard, []).append(f"news@{output.news_expiry}")
        if requests:
            self.retire.request_rebuilds(requests)

    def restore(self) -> RestoreResult:
        """Write back the index files (and robots.txt's lines) whose recorded bytes are current
        but whose object is missing or altered (``sitemap-updater rebuild``, outside the
        index's message group); BEHIND if the registry moved on: the index must publish."""
        if self.site_files is not None:
            self.site_files(verify=True)
        named = {o.shard: o for o in self.registry.shard_outputs() if o.nameable}
        files = split_index(sorted(named), self._room)
        previous = self.registry.index_outputs()
        outcomes = {
            key: self._restore_index(key, [named[s] for s in shards], previous.get(key))
            for key, shards in files
        }
        stale = {key for key, output in previous.items() if output.obj} - set(outcomes)
        if stale or Restored.BEHIND in outcomes.values():
            outcomes.update(dict.fromkeys(stale, Restored.BEHIND))
            return RestoreResult(outcomes, robots=None)
        if set(self.registry.index_outputs()) != set(previous):
            # The index function published or dropped a file meanwhile: robots.txt's lines
            # are its to set now (from a list this restore no longer knows to be right).
            return RestoreResult(outcomes, robots=None)
        return RestoreResult(outcomes, self.robots([self.site.url_for(key) for key, _ in files]))

    def _restore_index(
        self, key: str, shards: list[ShardOutput], before: IndexOutput | None
    ) -> Restored:
        _count, document = self._render(key, [self._line(s) for s in shards])
        recorded = before.obj if before is not None else None
        if before is None or recorded is None or recorded.sha256 != sha256(document):
            return Restored.BEHIND
        try:
            written = self._writer.rewrite(recorded, document)
        except NewerOutput:
            return Restored.BEHIND  # the index function has published since: never undo it
        if written is None:
            return Restored.UNCHANGED
        restored = IndexOutput(key=key, generation=before.generation + 1, obj=written)
        # The index function may have moved on meanwhile, dropping this file: an index file
        # no record names would never be deleted.
        now = self.registry.index_outputs
        with taking_back(self.store, written, lambda: getattr(now().get(key), "obj", None)):
            self.registry.save_index_output(restored, before.generation)
        return Restored.RESTORED

    def _line(self, output: ShardOutput) -> str:
        assert output.obj is not None  # noqa: S101 - a nameable shard
        return index_line(IndexEntry(self.site.url_for(output.obj.key), output.obj.lastmod))

    def _render(self, key: str, own: list[str]) -> tuple[int, bytes]:
        """An index file's entry count and bytes: the lines of our shards, then its extras."""
        lines = [*own, *self._extras(key)]
        return len(lines), index_of(lines, stylesheet=self.stylesheet)

    def _write_document(
        self, key: str, count: int, document: bytes, before: IndexOutput | None, touched: list[str]
    ) -> bool:
        digest = sha256(document)
        if before is None:
            # Recorded before its first write: a file whose write landed and whose record
            # was then lost would otherwise be named by no record, and never deleted.
            before = IndexOutput(key=key, generation=1, obj=None)
            self.registry.save_index_output(before, 0)
        expected = before.obj
        if expected is not None and expected.sha256 == digest:
            # The record says these bytes are there; check (one HEAD): a run that died
            # between its PutObject and its record left other bytes, which may name a shard
            # that is about to be deleted. Those are replaced, conditionally on their ETag.
            stored = self.store.head(key)
            if stored is not None and stored.metadata.get("sha256") == digest:
                return False
            expected = None if stored is None else replace(expected, etag=stored.etag)
        now = w3c(self.clock())
        state = ObjectState(key, "", digest, count, len(document), now)
        generation = before.generation

        def save(obj: ObjectState | None) -> None:
            self.registry.save_index_output(IndexOutput(key, generation + 1, obj), generation)

        with adopting(self.store, key, now, save, touched):
            written = self._writer.write(state, document, expected)
        save(written)
        touched.append(key)
        self._last_index[key] = (written.etag, written.sha256, document)
        return True

    def robots(self, sitemap_urls: list[str]) -> RobotsOutcome:
        """Keep robots.txt's own Sitemap lines right without losing a byte of the owner's."""
        contested = False

        def attempt() -> RobotsOutcome:
            current = self.store.get(ROBOTS_KEY)
            before = current.body if current is not None else None
            after = with_sitemaps(before, sitemap_urls, self.site)
            if after == (before or b""):
                # After a lost condition the bytes wanted may be our own write, landed with
                # its answer lost: written, then (so that the CDN's copy is invalidated).
                return RobotsOutcome.WRITTEN if contested else RobotsOutcome.UNCHANGED
            if grows_too_large(before, after):
                metrics.add_metric(name=Metric.ROBOTS_TOO_LARGE, unit="Count", value=1)
                logger.error(
                    "robots.txt not updated",
                    reason=f"it would be {len(after)} bytes, over {MAX_ROBOTS_BYTES}",
                )
                return RobotsOutcome.TOO_LARGE
            self.store.put(
                ROBOTS_KEY,
                after,
                content_type=TEXT_CONTENT_TYPE,
                cache_control=self.cache_control,
                expected_etag=current.etag if current is not None else None,
            )
            metrics.add_metric(name=Metric.ROBOTS_WRITTEN, unit="Count", value=1)
            return RobotsOutcome.WRITTEN

        def lost(attempt: int, _: Exception) -> None:
            # The owner edited it meanwhile: read their edit and apply ours on top.
            nonlocal contested
            contested = True
            logger.info("robots.txt changed during update", attempt=attempt)

        return retry(
            attempt,
            MAX_ATTEMPTS,
            (WriteConflict,),
            lost=lost,
            give_up=lambda: WriteConflict(f"robots.txt kept changing over {MAX_ATTEMPTS} attempts"),
        )
