"""Ingest: validate each message, apply it to the registry if it is newer, then ask for one
rebuild per touched shard.

The URL record is the ordering gate. A newer version commits (record, entry and capacity in
one transaction); an equal version is a duplicate and changes nothing, but still asks for a
rebuild of its shard, because the delivery that committed it may have crashed before asking;
an older version is stale and is acknowledged. An event that can never succeed goes to the
dead-letter queue at once with its reason; anything that may pass is raised so SQS retries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Protocol

from sitemap_updater.domain.errors import ConcurrentChange, InvalidEvent, RetryableError, ShardFull
from sitemap_updater.domain.events import PageChange, parse_body
from sitemap_updater.domain.placement import Commit, plan_commit
from sitemap_updater.domain.records import UrlRecord
from sitemap_updater.domain.sharding import Limits, checked_entry_size, group_for, parse_shard_id
from sitemap_updater.domain.urls import Site
from sitemap_updater.observability import Metric, logger, metrics

MAX_ATTEMPTS = 8


class UrlRegistry(Protocol):
    def get_url(self, url: str) -> UrlRecord | None: ...
    def commit(self, commit: Commit) -> None: ...
    def open_shard(self, group: str) -> str: ...
    def close_shard(self, shard: str) -> None: ...


class RebuildRequests(Protocol):
    def request_rebuilds(self, requests: Mapping[str, Sequence[str]]) -> None: ...
    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None: ...


class ChangeNotifier(Protocol):
    """Queues the URLs of applied changes for IndexNow (adapters/indexnow_queue.py)."""

    def notify(self, urls: Sequence[str]) -> None: ...


class Outcome(StrEnum):
    APPLIED = "applied"
    DUPLICATE = "duplicate"
    STALE = "stale"
    REJECTED = "rejected"


@dataclass(frozen=True)
class IngestResult:
    outcome: Outcome
    shards: frozenset[str] = frozenset()


class ApplyChange:
    """Apply one validated change to the registry, in order, placing new URLs."""

    def __init__(
        self,
        registry: UrlRegistry,
        limits: Limits,
        tombstone_ttl_seconds: int,
        clock: Callable[[], datetime],
    ):
        self.registry = registry
        self.limits = limits
        self.tombstone_ttl_seconds = tombstone_ttl_seconds
        self.clock = clock
        self._open: dict[str, str] = {}

    def __call__(self, change: PageChange) -> IngestResult:
        size = checked_entry_size(change.entry, self.limits) if change.entry is not None else 0
        move = False
        for _attempt in range(MAX_ATTEMPTS):
            record = self.registry.get_url(change.url)
            if record is not None and record.version > change.version:
                return IngestResult(Outcome.STALE)
            if record is not None and record.version == change.version:
                shards = frozenset({record.shard}) if record.shard else frozenset()
                return IngestResult(Outcome.DUPLICATE, shards)
            group = (
                parse_shard_id(record.shard)[0]
                if record and record.shard
                else group_for(change.url)
            )
            commit = plan_commit(
                record,
                change,
                size,
                open_shard=partial(self._open_shard, group),
                tombstone_expires_at=int(self.clock().timestamp()) + self.tombstone_ttl_seconds,
                move=move,
            )
            try:
                self.registry.commit(commit)
            except ConcurrentChange:
                continue
            except ShardFull as full:
                self._close(full.shard)
                move = move or (record is not None and record.shard == full.shard)
                continue
            if commit.previous_shard:
                metrics.add_metric(name=Metric.SHARD_MOVES, unit="Count", value=1)
                logger.info(
                    "entry moved", url=change.url, shard=commit.shard, reason="outgrew its shard"
                )
            return IngestResult(Outcome.APPLIED, commit.touched)
        raise RetryableError(f"{change.url}: gave up after {MAX_ATTEMPTS} concurrent changes")

    def _open_shard(self, group: str) -> str:
        if group not in self._open:
            self._open[group] = self.registry.open_shard(group)
        return self._open[group]

    def _close(self, shard: str) -> None:
        group = parse_shard_id(shard)[0]
        self.registry.close_shard(shard)
        self._open.pop(group, None)


@dataclass
class IngestBatch:
    """One Lambda invocation's worth of messages: handle each, then flush the rebuild requests."""

    site: Site
    max_event_bytes: int
    apply: ApplyChange
    queues: RebuildRequests
    touched: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    indexnow: ChangeNotifier | None = None  # only when IndexNow is on
    changed: list[str] = field(default_factory=list)  # URLs for IndexNow, in order

    def handle(self, message_id: str, body: str, *, redelivered: bool = False) -> IngestResult:
        """``redelivered``: SQS has delivered this message before (see ``_note_change``)."""
        try:
            change = parse_body(body, self.site, self.max_event_bytes)
            result = self.apply(change)
        except InvalidEvent as rejected:
            self.queues.dead_letter(body, rejected.code, rejected.reason, message_id)
            metrics.add_metric(name=Metric.EVENTS_REJECTED, unit="Count", value=1)
            logger.warning(
                "event rejected",
                reason=rejected.reason,
                reason_code=rejected.code,
                message_id=message_id,
            )
            return IngestResult(Outcome.REJECTED)
        for shard in result.shards:
            self.touched[shard].append(message_id)
        self._note_change(change.url, result.outcome, redelivered)
        metrics.add_metric(name=_OUTCOME_METRICS[result.outcome], unit="Count", value=1)
        logger.debug("event ingested", url=change.url, outcome=result.outcome.value)
        return result

    def flush(self) -> None:
        """Ask for one rebuild per touched shard; raises if the request could not be sent.
        Then (even then) queue the changed URLs for IndexNow, which never raises."""
        try:
            if self.touched:
                self.queues.request_rebuilds(dict(self.touched))
                self.touched.clear()
        finally:
            self._notify_changes()

    def _note_change(self, url: str, outcome: Outcome, redelivered: bool) -> None:
        """IndexNow hears of every applied change (publish or unpublish: a removed page
        should be crawled to see its 404/410), not of stale or duplicate events. Except a
        duplicate SQS has delivered before: the delivery that applied it may have died
        before queueing the URL (a timeout after the commit), and a second submission is
        cheaper than a lost one."""
        if self.indexnow is None:
            return
        if outcome is Outcome.APPLIED or (outcome is Outcome.DUPLICATE and redelivered):
            self.changed.append(url)

    def _notify_changes(self) -> None:
        """Queue the batch's changed URLs for IndexNow. Never raises, and runs after the
        rebuild requests: IndexNow must never hold up or fail the sitemap work. A failure
        is logged with the URLs and counted (IndexNowUrlsNotQueued, alarmed)."""
        if self.indexnow is None or not self.changed:
            return
        urls = list(dict.fromkeys(self.changed))
        self.changed.clear()
        try:
            self.indexnow.notify(urls)
        except Exception as exc:  # noqa: BLE001 - any failure: the sitemap work goes on
            metrics.add_metric(name=Metric.INDEXNOW_NOT_QUEUED, unit="Count", value=len(urls))
            logger.error(
                "IndexNow URLs not queued", urls=urls, reason=f"{type(exc).__name__}: {exc}"
            )
        else:
            metrics.add_metric(name=Metric.INDEXNOW_QUEUED, unit="Count", value=len(urls))


_OUTCOME_METRICS = {
    Outcome.APPLIED: Metric.EVENTS_APPLIED,
    Outcome.DUPLICATE: Metric.EVENTS_DUPLICATE,
    Outcome.STALE: Metric.EVENTS_STALE,
}
