"""Ingest: validate each message, apply it to the registry if it is newer, then ask for one
rebuild per touched shard.

The URL record is the ordering gate. A newer version commits (record, entry and capacity in
one transaction); an equal version is a duplicate and changes nothing, but still asks for a
rebuild of its shard, because the delivery that committed it may have crashed before asking;
an older version is stale and is acknowledged. An event that can never succeed goes to the
dead-letter queue at once with its reason; anything that may pass is raised so SQS retries.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Protocol

from sitemap_updater.domain.clusters import (
    MAX_CLUSTER_MEMBERS,
    Cluster,
    Member,
    alternates,
    alternates_bytes,
    merge,
    needed_bytes,
    survivor,
    too_large,
    with_member,
)
from sitemap_updater.domain.contract import PageChange
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import ConcurrentChange, InvalidEvent, RetryableError, ShardFull
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.placement import (
    ClusterWrite,
    Commit,
    plan_commit,
)
from sitemap_updater.domain.records import UrlRecord, UrlState
from sitemap_updater.domain.sharding import GroupRules, Limits, checked_entry_size, parse_shard_id
from sitemap_updater.domain.urls import Site
from sitemap_updater.observability import Metric, logger, metrics

MAX_ATTEMPTS = 8


class UrlRegistry(Protocol):
    def url_state(self, url: str) -> UrlState: ...
    def url_states(self, urls: Sequence[str]) -> dict[str, UrlState]: ...
    def clusters(self, cids: Iterable[str]) -> dict[str, Cluster]: ...
    def entry(self, shard: str, url: str) -> SitemapEntry | None: ...
    def commit(self, commit: Commit) -> None: ...
    def transactions(self, commits: Sequence[Commit]) -> list[list[Commit]]: ...
    def commit_all(self, commits: Sequence[Commit]) -> None: ...
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
    """Apply one validated change to the registry, in order, placing new URLs and keeping
    its hreflang cluster complete (see domain.clusters)."""

    def __init__(
        self,
        registry: UrlRegistry,
        limits: Limits,
        tombstone_ttl_seconds: int,
        clock: Callable[[], datetime],
        groups: GroupRules | None = None,
    ):
        self.registry = registry
        self.limits = limits
        self.tombstone_ttl_seconds = tombstone_ttl_seconds
        self.clock = clock
        self.groups = groups or GroupRules()
        self._open: dict[str, str] = {}

    def __call__(self, change: PageChange) -> IngestResult:
        base = checked_entry_size(change.entry, self.limits) if change.entry is not None else 0
        move = False
        for _attempt in range(MAX_ATTEMPTS):
            state = self.registry.url_state(change.url)
            record = state.record
            if record is not None and record.version > change.version:
                return IngestResult(Outcome.STALE)
            if record is not None and record.version == change.version:
                # The delivery that committed it may have died before settling the cluster
                # or asking for rebuilds: do both again (both are idempotent).
                return IngestResult(Outcome.DUPLICATE, self._settle(change.url))
            write = self._cluster_write(change, state)
            size = base
            if write is not None and change.live:
                size += alternates_bytes(alternates(write.cluster, change.url))
                if size > self.limits.max_entry_bytes:
                    raise InvalidEvent(
                        "entry_too_large",
                        f"with its alternates the entry is {size} bytes; a shard holds "
                        f"{self.limits.max_entry_bytes}",
                    )
            commit = self._plan(record, change, size, base, move)
            commit = replace(
                commit,
                cluster=self._placed(write, commit) if write else None,
                expected_cluster=state.cluster,
            )
            try:
                self.registry.commit(commit)
            except ConcurrentChange:
                continue
            except ShardFull as full:
                self._close(full.shard)
                move = move or (record is not None and record.shard == full.shard)
                continue
            self._log_move(commit)
            shards = commit.touched | (self._settle(change.url) if write else frozenset())
            return IngestResult(Outcome.APPLIED, shards)
        raise RetryableError(f"{change.url}: gave up after {MAX_ATTEMPTS} concurrent changes")

    def apply_plain(self, changes: Sequence[PageChange]) -> dict[str, IngestResult]:
        """Apply changes of distinct URLs that have nothing to do with any hreflang cluster,
        together: one batched read, then one transaction per group the registry cuts them
        into (at most ``MAX_COMMITS_TOGETHER``, and within DynamoDB's size limits).

        The same decisions as one by one, at a fraction of the requests (a burst of
        publishes costs a read and a write per few dozen events, not two per event). A URL
        missing from the answer was not applied (it has a cluster, its entry is invalid,
        or its transaction failed): apply it on its own, which settles every such case.
        A transaction that fails never costs the outcomes of those that committed before it.
        """
        if len({change.url for change in changes}) != len(changes):
            raise ValueError("apply_plain takes each URL once")
        states = self.registry.url_states([change.url for change in changes])
        results: dict[str, IngestResult] = {}
        planned: list[Commit] = []
        for change in changes:
            state = states[change.url]
            record = state.record
            if state.cluster is not None or change.alternates or change.hreflang is not None:
                continue
            if record is not None and record.version > change.version:
                results[change.url] = IngestResult(Outcome.STALE)
            elif record is not None and record.version == change.version:
                own = frozenset({record.shard}) if record.shard else frozenset()
                results[change.url] = IngestResult(Outcome.DUPLICATE, own)
            elif change.entry is None:
                planned.append(self._plan(record, change, 0, 0, move=False))
            else:
                try:
                    size = checked_entry_size(change.entry, self.limits)
                except InvalidEvent:
                    continue  # rejected with its reason on its own
                planned.append(self._plan(record, change, size, size, move=False))
        for chunk in self.registry.transactions(planned):
            try:
                self.registry.commit_all(chunk)
            except (ConcurrentChange, ShardFull, RetryableError) as failed:
                # Not lost: each of these is applied on its own, which retries, closes a
                # full shard, or raises for SQS to deliver it again.
                logger.info(
                    "batched commit not applied",
                    reason=f"{type(failed).__name__}: {failed}",
                    events=len(chunk),
                )
                continue
            except Exception as failed:  # noqa: BLE001 - not swallowed: see below
                # Anything else (an entry no item holds, a refused request) is raised again,
                # or rejected with its reason, when its events are applied on their own; the
                # transactions already committed keep their outcomes.
                logger.warning(
                    "batched commit failed; its events are applied one by one",
                    reason=f"{type(failed).__name__}: {failed}",
                    events=len(chunk),
                )
                continue
            for commit in chunk:
                results[commit.change.url] = IngestResult(Outcome.APPLIED, commit.touched)
        return results

    def _plan(
        self, record: UrlRecord | None, change: PageChange, size: int, base: int, move: bool
    ) -> Commit:
        group = (
            parse_shard_id(record.shard)[0]
            if record and record.shard
            else self.groups.group_for(change.url, change.group)
        )
        return plan_commit(
            record,
            change,
            size,
            open_shard=partial(self._open_shard, group),
            tombstone_expires_at=int(self.clock().timestamp()) + self.tombstone_ttl_seconds,
            move=move,
            base=base,
            max_slots=self.groups.max_urls(group, self.limits),
        )

    # -- hreflang clusters -------------------------------------------------------------------

    def _cluster_write(self, change: PageChange, state: UrlState) -> ClusterWrite | None:
        """The cluster this change belongs to after it, merged and with every URL it
        declares as a member (None: the page has nothing to do with any cluster)."""
        if state.cluster is None and not change.alternates and change.hreflang is None:
            return None
        targets = sorted({href for _, href in change.alternates} - {change.url})
        target_states = self.registry.url_states(targets) if targets else {}
        pointers = {state.cluster, *(s.cluster for s in target_states.values())} - {None}
        found = self.registry.clusters(c for c in pointers if c is not None)
        distinct = sorted({c.cid: c for c in found.values()}.values(), key=lambda c: c.cid)
        if distinct:
            kept = survivor(distinct)
            cluster = replace(merge(distinct, kept.cid), version=kept.version)
            expected: int | None = kept.version
        else:
            seed = f"{change.url}@{change.version}".encode()
            cluster = Cluster(cid=hashlib.sha256(seed).hexdigest()[:20], members={})
            expected = None
        previous = cluster.all.get(change.url)
        if change.live:
            member = Member(lang=change.hreflang, declares=change.alternates, live=True)
        else:  # an unpublished page keeps what it declared; it is just not listed
            member = replace(previous or Member(), live=False)
        cluster = with_member(cluster, change.url, member)
        target_writes = []
        for url in targets:
            target = target_states[url]
            if url not in cluster.all:
                found_record = target.record
                cluster = with_member(
                    cluster,
                    url,
                    Member(
                        live=bool(found_record and found_record.live),
                        shard=found_record.shard if found_record else None,
                        base=found_record.base if found_record else 0,
                        reserved=found_record.reserved if found_record else 0,
                    ),
                )
            if target.cluster not in found:
                # Newly linked: its record must point here, as read. A page whose pointer
                # names one of the clusters merged here keeps it (the redirect the merge
                # leaves resolves it, as for their other members, and that cluster's version
                # condition guards its state): rewriting those too took a merge of many
                # clusters past DynamoDB's 100 actions a transaction, refused every time.
                version = target.record.version if target.record else None
                target_writes.append((url, version, target.cluster))
        if too_large(cluster):
            raise InvalidEvent(
                "cluster_too_large",
                f"the hreflang cluster would have {len(cluster.all)} pages, over "
                f"{MAX_CLUSTER_MEMBERS}",
            )
        absorbed = tuple((c.cid, c.version) for c in distinct if c.cid != cluster.cid)
        return ClusterWrite(cluster, expected, absorbed, tuple(target_writes))

    @staticmethod
    def _placed(write: ClusterWrite, commit: Commit) -> ClusterWrite:
        """The cluster with this URL's member at its (new) place and reservation."""
        url = commit.change.url
        member = replace(
            write.cluster.all[url], shard=commit.shard, base=commit.base, reserved=commit.reserved
        )
        return replace(write, cluster=with_member(write.cluster, url, member))

    def _settle(self, url: str) -> frozenset[str]:
        """Grow (or move) every sibling whose entry outgrew its reservation when the cluster
        changed; return the shards to rebuild: the URL's and every published sibling's."""
        state = self.registry.url_state(url)
        own = (
            frozenset({state.record.shard}) if state.record and state.record.shard else frozenset()
        )
        if state.cluster is None:
            return own
        cluster = self.registry.clusters([state.cluster]).get(state.cluster)
        if cluster is None:
            return own
        shards = set(own)
        for member_url, member in sorted(cluster.all.items()):
            if (
                member_url != url
                and member.live
                and needed_bytes(cluster, member_url) > member.reserved
            ):
                shards |= self._resize(member_url)
        cluster = self.registry.clusters([state.cluster])[state.cluster]
        shards |= {m.shard for m in cluster.all.values() if m.live and m.shard is not None}
        return frozenset(shards)

    def _resize(self, url: str) -> frozenset[str]:
        """Reserve what a sibling's entry now needs, in place or in the open shard."""
        move = False
        for _attempt in range(MAX_ATTEMPTS):
            state = self.registry.url_state(url)
            record = state.record
            if record is None or not record.live or record.shard is None or not state.cluster:
                return frozenset()
            cluster = self.registry.clusters([state.cluster])[state.cluster]
            needed = needed_bytes(cluster, url)
            if needed <= record.reserved:
                return frozenset()
            entry = self.registry.entry(record.shard, url)
            if entry is None:  # its own change is half-way through; that change settles it
                return frozenset()
            member = cluster.all[url]
            same = PageChange(
                url, record.version, entry, hreflang=member.lang, alternates=member.declares
            )
            commit = self._plan(record, same, needed, record.base, move)
            write = ClusterWrite(cluster, cluster.version)
            commit = replace(
                commit, cluster=self._placed(write, commit), expected_cluster=state.cluster
            )
            try:
                self.registry.commit(commit)
            except ConcurrentChange:
                continue
            except ShardFull as full:
                self._close(full.shard)
                move = move or record.shard == full.shard
                continue
            self._log_move(commit)
            return commit.touched
        raise RetryableError(f"{url}: gave up resizing after {MAX_ATTEMPTS} concurrent changes")

    # -- shards ------------------------------------------------------------------------------

    def _log_move(self, commit: Commit) -> None:
        if commit.previous_shard:
            metrics.add_metric(name=Metric.SHARD_MOVES, unit="Count", value=1)
            logger.info(
                "entry moved",
                url=commit.change.url,
                shard=commit.shard,
                reason=f"outgrew {commit.previous_shard}",
            )

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
    # By message id, from prepare: each change parsed, and the outcomes already applied.
    _parsed: dict[str, PageChange] = field(default_factory=dict, init=False, repr=False)
    _results: dict[str, IngestResult] = field(default_factory=dict, init=False, repr=False)

    def prepare(self, messages: Sequence[tuple[str, str]]) -> None:
        """Before the messages (id, body) are handled one by one: parse them all and apply
        the plain changes together (``ApplyChange.apply_plain``); ``handle`` then reports
        each message's outcome, applying on its own whatever this left undone.

        An error here costs requests, never an event: it is logged, and each event is then
        applied on its own, which raises its own errors for SQS to retry.
        """
        first: dict[str, tuple[str, PageChange]] = {}
        repeated: set[str] = set()
        for message_id, body in messages:
            try:
                change = parse_body(body, self.site, self.max_event_bytes)
            except InvalidEvent:
                continue  # rejected by handle, with its reason
            self._parsed[message_id] = change
            if change.url in first:
                repeated.add(change.url)
            first.setdefault(change.url, (message_id, change))
        plain = [change for url, (_, change) in first.items() if url not in repeated]
        if len(plain) < 2:
            return
        try:
            results = self.apply.apply_plain(plain)
        except Exception as exc:  # noqa: BLE001 - each event is applied on its own instead
            logger.warning(
                "batched apply failed; events applied one by one",
                reason=f"{type(exc).__name__}: {exc}",
                events=len(plain),
            )
            return
        for url, result in results.items():
            self._results[first[url][0]] = result

    def handle(self, message_id: str, body: str, *, redelivered: bool = False) -> IngestResult:
        """``redelivered``: SQS has delivered this message before (see ``_note_change``)."""
        try:
            change = self._parsed.pop(message_id, None) or parse_body(
                body, self.site, self.max_event_bytes
            )
            result = self._results.pop(message_id, None) or self.apply(change)
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
