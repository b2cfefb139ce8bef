"""Ingest: validate each message, apply it to the registry if it is newer (the URL record is
the ordering gate), then ask for one rebuild per touched shard (docs/DESIGN.md#ingest).
An equal version is a duplicate: it changes nothing but asks again for its rebuilds, since
the delivery that committed it may have died before asking (a duplicate publish whose live
record lacks its entry commits again: REPAIRED).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from functools import partial
from typing import TYPE_CHECKING, TypeVar

import msgspec

from sitemap_updater.domain.clusters import (
    MAX_CLUSTER_MEMBERS,
    Cluster,
    Member,
    Pairs,
    alternates_bytes,
    listings,
    merge,
    needed_bytes,
    survivor,
    too_large,
    with_member,
)
from sitemap_updater.domain.contract import PageChange
from sitemap_updater.domain.errors import ConcurrentChange, InvalidEvent, RetryableError, ShardFull
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.feed import feed_entry
from sitemap_updater.domain.placement import ClusterWrite, Commit, EntityWrite, plan_commit
from sitemap_updater.domain.records import EntityRecord, Pending, UrlRecord, UrlState
from sitemap_updater.domain.sharding import GroupRules, Limits, checked_entry_size, parse_shard_id
from sitemap_updater.domain.urls import Site
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import ChangeNotifier, IngestQueues, Message, UrlRegistry
from sitemap_updater.usecases.retry import retry

if TYPE_CHECKING:
    from sitemap_updater.usecases.feed import UpdateFeed

MAX_ATTEMPTS = 8
R = TypeVar("R")


class Outcome(StrEnum):
    APPLIED = "applied"
    DUPLICATE = "duplicate"
    STALE = "stale"
    REPAIRED = "repaired"  # a duplicate whose missing entry it restored
    REJECTED = "rejected"
    FAILED = "failed"  # may pass: SQS delivers the message again


@dataclass(frozen=True)
class IngestResult:
    outcome: Outcome
    shards: frozenset[str] = frozenset()
    error: Exception | None = None  # why it FAILED
    left: frozenset[str] = frozenset()  # URLs it unpublished that the event does not name

    def value_or_raise(self) -> str:
        if self.error is not None:
            raise self.error
        return self.outcome.value


@dataclass(frozen=True)
class _Planned:
    commit: Commit
    placed: str | None  # the URL's shard as read: if it is full, the entry moves


@dataclass
class ApplyChange:
    """Apply one change to the registry if it is newer, placing a new URL and keeping its
    hreflang cluster complete (domain/clusters.py)."""

    registry: UrlRegistry
    limits: Limits
    tombstone_ttl_seconds: int
    clock: Callable[[], datetime]
    groups: GroupRules = field(default_factory=GroupRules)
    _open: dict[str, str] = field(default_factory=dict, init=False, repr=False)  # group: shard

    def __call__(self, change: PageChange) -> IngestResult:
        if change.entity is not None and not change.url:
            return self._unpublish_entity(change)
        base = checked_entry_size(change.entry, self.limits) if change.entry is not None else 0

        def plan(move: bool) -> _Planned | IngestResult:
            entity = self._entity_write(change) if change.entity is not None else None
            if isinstance(entity, IngestResult):
                return entity
            state = self.registry.url_state(change.url)
            record = state.record
            if record is not None and record.version > change.version:
                return IngestResult(Outcome.STALE)
            if (
                record is not None
                and record.version == change.version
                and not self._repairs(change, record)
            ):
                return self._again(change, entity.left if entity else None)
            retiring = self._retired(entity.left, change) if entity is not None else None
            write = self._cluster_write(change, state, retiring.change.url if retiring else None)
            size = base
            if write is not None and change.live:
                listed = listings(write.cluster)
                size += alternates_bytes(listed.get(change.url, ()))
                _siblings_fit(write.cluster, listed, change.url, self.limits)
            if size > self.limits.max_entry_bytes:
                raise InvalidEvent(
                    "entry_too_large",
                    f"with its alternates the entry is {size} bytes; a shard holds "
                    f"{self.limits.max_entry_bytes}",
                )
            commit = self._plan(record, change, size, base, move)
            commit = _with_cluster(commit, write, state.cluster)
            if entity is not None:
                commit = replace(commit, entity=entity, retired=retiring)
            return _Planned(commit, record.shard if record else None)

        retired, left = self._retire_in_cluster(change, plan)
        done = self._until_committed(plan, f"{change.url}: gave up after")
        if isinstance(done, IngestResult):
            return replace(done, shards=done.shards | retired, left=done.left | left)
        settled = self._settle(change, done.cluster) if done.cluster else frozenset()
        if done.retired is not None:
            left |= {done.retired.change.url}
        elif done.entity is not None and done.entity.left not in left:
            # Unpublished before its commit: on its own (a cluster's), or by a lost attempt.
            left |= self._left(done.entity.left, change.version)
        return IngestResult(_applied(done), done.touched | settled | retired, left=left)

    def _again(self, change: PageChange, leaves: str | None) -> IngestResult:
        """A duplicate. The delivery that committed it may have died before settling its
        cluster or asking for rebuilds: both are done again (idempotent), for the URL it
        left too, which is named again, for the feed and IndexNow."""
        left = self._left(leaves, change.version)
        gone = [PageChange(url, change.version, None, sent=change.sent) for url in left]
        shards = self._settle(change).union(*map(self._settle, gone))
        return IngestResult(Outcome.DUPLICATE, shards, left=left)

    def _entity_write(self, change: PageChange) -> EntityWrite | IngestResult:
        """The entity's new record (``left``: the live URL it leaves); stale if the entity
        holds a newer version, or the same version under another URL."""
        assert change.entity is not None  # noqa: S101 - the caller's guard
        known = self.registry.entity(change.entity)
        if known is not None and (
            known.version > change.version
            or (known.version == change.version and known.url != change.url)
        ):
            return IngestResult(Outcome.STALE)
        if known is not None and known.version == change.version:  # this change, again
            leaves = known.left
        else:
            leaves = known.url if known and known.live and known.url != change.url else None
        return EntityWrite(
            change.entity,
            change.url or None,
            change.version,
            change.live,
            known.version if known else None,
            None if change.live else self._tombstone_expires_at(),
            leaves,
        )

    def _left(self, url: str | None, version: Decimal) -> frozenset[str]:
        """``url`` (its entity's, left or named by id) if ``version``'s change unpublished it."""
        record = self.registry.url_state(url).record if url else None
        if record is None or record.live or record.version != version:
            return frozenset()
        return frozenset({record.url})

    def _retired(self, url: str | None, change: PageChange) -> Commit | None:
        """The unpublish of the URL an entity leaves, to commit with its change."""
        if url is None:
            return None
        record = self.registry.url_state(url).record
        if record is None or record.version >= change.version:
            return None
        return self._plan(record, PageChange(url, change.version, None), 0, 0, move=False)

    def _retire_in_cluster(
        self, change: PageChange, plan: Callable[[bool], _Planned | IngestResult]
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Unpublish first, on its own, a URL the entity leaves that is in an hreflang cluster
        (its members change with it): the shards it touched and the URL, if unpublished.
        Only for a move that ``plan`` makes and the registry can store: not a stale one, nor
        one refused (raised). With the URL the entity's last move left (``_behind``)."""
        none: tuple[frozenset[str], frozenset[str]] = frozenset(), frozenset()
        known = self.registry.entity(change.entity) if change.entity is not None else None
        if known is None or known.version >= change.version:
            return none
        behind = self._behind(known)
        if not known.live or known.url in (None, change.url):
            return behind
        if self.registry.url_state(known.url).cluster is None:
            return behind
        planned = plan(False)
        if isinstance(planned, IngestResult):  # stale, or a duplicate
            return behind
        self.registry.check(planned.commit)  # an item DynamoDB could never store: refused
        result = self(PageChange(known.url, change.version, None))
        gone = frozenset({known.url}) if result.outcome is Outcome.APPLIED else frozenset()
        return result.shards | behind[0], gone | behind[1]

    def _behind(self, known: EntityRecord) -> tuple[frozenset[str], frozenset[str]]:
        """The URL the entity's last move left, settled again while it is as that move left
        it: the move's invocation may have died before asking for its rebuilds, and this
        newer change makes the move's redelivery stale."""
        gone = self._left(known.left, known.version)
        settled = [self._settle(PageChange(url, known.version, None)) for url in gone]
        return frozenset().union(*settled), gone

    def _unpublish_entity(self, change: PageChange) -> IngestResult:
        """An unpublish by id alone: of the id's URL, or else the id's tombstone."""

        def attempt() -> IngestResult:
            known = self.registry.entity(change.entity or "")
            if known is not None and known.url is not None:
                result = self(msgspec.structs.replace(change, url=known.url))
                lost = result.outcome in (Outcome.STALE, Outcome.DUPLICATE)
                if lost and known.version < change.version:
                    # The URL holds this version or a newer one of its own (unpublished by
                    # URL, or another id's): it stays, but the id's newest is this unpublish.
                    return self._entity_gone(change, known)
                if result.outcome is Outcome.STALE and known.version == change.version:
                    return IngestResult(Outcome.DUPLICATE)  # that unpublish, delivered again
                return replace(result, left=result.left | self._left(known.url, change.version))
            if known is not None and known.version >= change.version:
                outcome = Outcome.DUPLICATE if known.version == change.version else Outcome.STALE
                return IngestResult(outcome)
            return self._entity_gone(change, known)

        return retry(
            attempt,
            MAX_ATTEMPTS,
            (ConcurrentChange,),
            give_up=lambda: RetryableError(f"{change.entity}: gave up after {MAX_ATTEMPTS}"),
        )

    def _entity_gone(self, change: PageChange, known: EntityRecord | None) -> IngestResult:
        """The id unpublished at this version, its URL (if any) left as it is."""
        url, version = (known.url, known.version) if known else (None, None)
        expires = self._tombstone_expires_at()
        entity = change.entity or ""
        self.registry.save_entity(EntityWrite(entity, url, change.version, False, version, expires))
        return IngestResult(Outcome.APPLIED)

    def _tombstone_expires_at(self) -> int:
        return int(self.clock().timestamp()) + self.tombstone_ttl_seconds

    def apply_plain(self, changes: Sequence[PageChange]) -> dict[str, IngestResult]:
        """Apply changes of distinct URLs outside any hreflang cluster together, deciding as
        one by one: one batched read, then a transaction per group the registry cuts them
        into. A URL missing from the answer (a cluster, an invalid entry, a failed
        transaction, which undoes no other) is to be applied on its own."""
        states = self.registry.url_states([change.url for change in changes])
        results: dict[str, IngestResult] = {}
        newer: list[tuple[UrlRecord | None, PageChange]] = []
        same: list[tuple[UrlRecord, PageChange]] = []  # duplicates
        for change in changes:
            state = states[change.url]
            record = state.record
            if _clustered(change, state.cluster) or change.entity is not None:
                continue
            if record is not None and record.version > change.version:
                results[change.url] = IngestResult(Outcome.STALE)
            elif record is not None and record.version == change.version:
                same.append((record, change))
            else:
                newer.append((record, change))
        stale = self.registry.stale_entries([record for record, _ in same]) if same else set()
        for record, change in same:  # see _repairs
            if change.live and change.url in stale:
                newer.append((record, change))
            else:
                own = frozenset({record.shard}) if record.shard else frozenset()
                results[change.url] = IngestResult(Outcome.DUPLICATE, own)
        planned: list[Commit] = []
        for record, change in newer:
            try:
                size = checked_entry_size(change.entry, self.limits) if change.entry else 0
            except InvalidEvent:
                continue
            planned.append(self._plan(record, change, size, size, move=False))
        return results | self._commit_together(planned)

    def _commit_together(self, planned: list[Commit]) -> dict[str, IngestResult]:
        """Commit in the registry's transactions; a failed one's events are left out."""
        results: dict[str, IngestResult] = {}
        for chunk in self.registry.transactions(planned):
            try:
                self.registry.commit_all(chunk)
            except Exception as failed:  # noqa: BLE001 - its events are applied on their own
                expected = isinstance(failed, ShardFull | RetryableError)
                (logger.info if expected else logger.warning)(
                    "batched commit not applied; its events are applied one by one",
                    reason=f"{type(failed).__name__}: {failed}",
                    events=len(chunk),
                )
                continue
            for commit in chunk:
                results[commit.change.url] = IngestResult(_applied(commit), commit.touched)
        return results

    def _repairs(self, change: PageChange, record: UrlRecord) -> bool:
        """Whether a duplicate commits again: its live record lacks its entry (or has one the
        reconciler restored without the event's fields). Only a bug or a lost write leaves
        that, and nothing else would heal it."""
        return change.live and record.url in self.registry.stale_entries([record])

    def _until_committed(self, plan: Callable[[bool], _Planned | R], gave_up: str) -> Commit | R:
        """Plan and commit until it holds: again after a concurrent change; after a full
        shard, closed, out of it if it was the URL's own."""
        move = False

        def attempt() -> Commit | R:
            nonlocal move
            planned = plan(move)
            if not isinstance(planned, _Planned):
                return planned
            commit = planned.commit
            try:
                self.registry.commit(commit)
            except ShardFull as full:
                self.registry.close_shard(full.shard)
                self._open.pop(parse_shard_id(full.shard)[0], None)
                move = move or planned.placed == full.shard
                raise
            if commit.previous_shard:
                metrics.add_metric(name=Metric.SHARD_MOVES, unit="Count", value=1)
                reason = f"outgrew {commit.previous_shard}"
                logger.info("entry moved", url=commit.change.url, shard=commit.shard, reason=reason)
            return commit

        return retry(
            attempt,
            MAX_ATTEMPTS,
            (ConcurrentChange, ShardFull),
            give_up=lambda: RetryableError(f"{gave_up} {MAX_ATTEMPTS} concurrent changes"),
        )

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
            tombstone_expires_at=self._tombstone_expires_at(),
            move=move,
            base=base,
            max_slots=self.groups.max_urls(group, self.limits),
        )

    def _cluster_write(
        self, change: PageChange, state: UrlState, retiring: str | None = None
    ) -> ClusterWrite | None:
        """The change's cluster after it, merged, with every URL it declares as a member;
        ``retiring``, the URL its entity leaves in the same commit, listed nowhere."""
        if not _clustered(change, state.cluster):
            return None
        targets = sorted({href for _, href in change.alternates} - {change.url})
        target_states = self.registry.url_states(targets) if targets else {}
        pointers = {state.cluster, *(s.cluster for s in target_states.values())} - {None}
        found = self.registry.clusters(c for c in pointers if c is not None)
        distinct = sorted({c.cid: c for c in found.values()}.values(), key=lambda c: c.cid)
        cluster, expected, before = _merged(change, distinct)
        if change.live:
            member = Member(lang=change.hreflang, declares=change.alternates, live=True)
        else:  # its newest event declares nothing: its links go, it stays where it is placed
            unlisted = cluster.all.get(change.url) or Member()
            member = msgspec.structs.replace(unlisted, lang=None, declares=(), live=False)
        cluster = with_member(cluster, change.url, member)
        target_writes = []
        for url in targets:
            target = target_states[url]
            newly = target.cluster not in found
            if url not in cluster.all or newly:  # a member whose record expired is as it is now
                cluster = with_member(cluster, url, _member(target.record))
            if newly and url != retiring:
                # Newly linked: its record must point here, as read. A page whose pointer
                # names one of the clusters merged here keeps it: the redirect the merge
                # leaves resolves it, that cluster's version guards its state, and a merge
                # of many clusters stays within DynamoDB's 100 actions a transaction. The
                # URL the entity leaves is not one: the same commit rewrites its record, and
                # a transaction touches an item once.
                version = target.record.version if target.record else None
                target_writes.append((url, version, target.cluster))
        if retiring is not None and retiring in cluster.all:
            gone = msgspec.structs.replace(
                cluster.all[retiring], lang=None, declares=(), live=False
            )
            cluster = with_member(cluster, retiring, gone)
        if too_large(cluster):
            raise InvalidEvent(
                "cluster_too_large",
                f"the hreflang cluster would have {len(cluster.all)} pages, over "
                f"{MAX_CLUSTER_MEMBERS}",
            )
        absorbed = tuple((c.cid, c.version) for c in distinct if c.cid != cluster.cid)
        # A page newly linked relinks too: its entry must come to name the cluster.
        relinks = (
            bool(target_writes)
            or before is None
            or _others(before, change.url) != _others(listings(cluster), change.url)
        )
        if not relinks:  # settled, and no sibling's line changes: settled at what it commits
            cluster = replace(cluster, settled=cluster.version + 1)
        return ClusterWrite(cluster, expected, absorbed, tuple(target_writes), relinks)

    def _settle(self, change: PageChange, write: ClusterWrite | None = None) -> frozenset[str]:
        """Grow (or move) each sibling whose entry outgrew its reservation, or whose entry
        names no cluster yet, mark each sibling's shard pending, then the cluster settled; the
        shards to rebuild: the URL's and its live siblings' (only the URL's when ``write``
        changed no sibling's line)."""
        url = change.url
        state = self.registry.url_state(url)
        record = state.record
        own = frozenset({record.shard}) if record and record.shard else frozenset()
        if state.cluster is None or (write is not None and not write.relinks):
            return own
        cluster = self.registry.clusters([state.cluster]).get(state.cluster)
        if cluster is None:
            return own
        shards = set(own)
        live = {u: m.shard for u, m in cluster.all.items() if u != url and m.live and m.shard}
        # Newly linked, or linked by a commit whose invocation died before it relinked them.
        unlinked = self.registry.unlinked(sorted(live.items())) if live else set()
        for other in sorted(live):
            if other in unlinked or needed_bytes(cluster, other) > cluster.all[other].reserved:
                shards |= self._resize(other, relink=other in unlinked)
        cluster = self.registry.clusters([state.cluster])[state.cluster]
        siblings = {m.shard for m in cluster.all.values() if m.live and m.shard is not None}
        if siblings:  # its own too: the marker committed with it may be applied already
            marker = Pending(url, str(change.version), change.sent, cluster.cid)
            self.registry.mark_pending(sorted(siblings), marker)
        joined = {u for u, m in cluster.all.items() if u != url and m.live and m.shard} - set(live)
        if cluster.settled != cluster.version and not joined:  # one may be unlinked: not checked
            self.registry.set_settled(cluster.cid, cluster.version)
        return frozenset(shards | siblings)

    def _resize(self, url: str, relink: bool = False) -> frozenset[str]:
        """Reserve what a sibling's entry now needs, in place or in the open shard; ``relink``
        (a page newly linked): write its entry again even if it fits, for it to name its
        cluster, which a rebuild renders its alternates from."""
        nothing: frozenset[str] = frozenset()

        def plan(move: bool) -> _Planned | frozenset[str]:
            state = self.registry.url_state(url)
            record = state.record
            if record is None or not record.live or record.shard is None or not state.cluster:
                return nothing
            cluster = self.registry.clusters([state.cluster])[state.cluster]
            needed = needed_bytes(cluster, url)
            # A relink leaves an entry the reconciler restored (no version) to the resend of
            # its event, which repairs it: written again here, it would look current.
            fits = needed <= record.reserved
            if fits and (not relink or self.registry.stale_entries([record])):
                return nothing
            entry = self.registry.entry(record.shard, url)
            if entry is None:  # its own change is half-way through; that change settles it
                return nothing
            member = cluster.all[url]
            same = PageChange(
                url, record.version, entry, hreflang=member.lang, alternates=member.declares
            )
            commit = self._plan(record, same, needed, record.base, move)
            commit = _with_cluster(commit, ClusterWrite(cluster, cluster.version), state.cluster)
            return _Planned(commit, record.shard)

        done = self._until_committed(plan, f"{url}: gave up resizing after")
        return done.touched if isinstance(done, Commit) else done

    def _open_shard(self, group: str) -> str:
        if group not in self._open:
            self._open[group] = self.registry.open_shard(group)
        return self._open[group]


def _merged(
    change: PageChange, distinct: list[Cluster]
) -> tuple[Cluster, int | None, dict[str, Pairs] | None]:
    """The clusters the change reaches, merged into one (a new one if none); the version its
    commit is conditional on; and, when it is settled, what each member lists before."""
    if not distinct:
        seed = f"{change.url}@{change.version}".encode()
        return Cluster(cid=hashlib.sha256(seed).hexdigest()[:20], members={}), None, None
    kept = survivor(distinct)
    cluster = replace(merge(distinct, kept.cid), version=kept.version, settled=kept.settled)
    settled = len(distinct) == 1 and kept.settled == kept.version
    return cluster, kept.version, listings(cluster) if settled else None


def _others(listed: dict[str, Pairs], url: str) -> dict[str, Pairs]:
    """The alternates each member but ``url`` lists."""
    return {other: pairs for other, pairs in listed.items() if other != url}


def _siblings_fit(cluster: Cluster, listed: dict[str, Pairs], url: str, limits: Limits) -> None:
    """Refuse a change that would grow a live sibling's entry past its reservation and past
    what a shard holds: no shard, not even a new one, could take it. (A sibling already
    that large, under a higher MAX_SHARD_BYTES, does not hold up its cluster's changes.)"""
    for other, member in sorted(cluster.all.items()):
        size = member.base + alternates_bytes(listed.get(other, ()))
        if other != url and member.live and size > max(member.reserved, limits.max_entry_bytes):
            raise InvalidEvent(
                "entry_too_large",
                f"with its alternates the entry of {other} would be {size} bytes; a shard "
                f"holds {limits.max_entry_bytes}",
            )


@dataclass
class Ingest:
    """One invocation's messages, each one's outcome by message id. Plain changes commit
    together, the rest one by one; then one rebuild request per touched shard and the feed's
    update (if either fails, every message but the rejected fails: SQS delivers them again,
    and the committed events, duplicates now, ask again); then IndexNow, which never raises."""

    site: Site
    max_event_bytes: int
    apply: ApplyChange
    queues: IngestQueues
    indexnow: ChangeNotifier | None = None  # only when IndexNow is on
    feed: UpdateFeed | None = None  # only when the feed of recent changes is on

    def __call__(self, messages: Sequence[Message]) -> dict[str, IngestResult]:
        parsed = {message.message_id: self._parse(message) for message in messages}
        together, uncertain = self._apply_together(parsed)
        results: dict[str, IngestResult] = {}
        touched: dict[str, list[str]] = defaultdict(list)
        changed: dict[str, PageChange | None] = {}  # for IndexNow and the feed, in order
        replayed: set[str] = set()  # of those, delivered again as duplicates
        applied = self.apply.clock()
        # In the order they commit, the batched ones first: what the feed hears last stays.
        for message in sorted(messages, key=lambda m: m.message_id not in together):
            change = parsed[message.message_id]
            result = self._result(message, change, together.pop(message.message_id, None))
            results[message.message_id] = result
            for shard in result.shards:
                touched[shard].append(message.message_id)
            # IndexNow hears of every applied change (an unpublished page too: crawlers should
            # see its 404), and of a duplicate that may be its own: redelivered (the delivery
            # that applied it may have died before queueing its URL), or left out of a batched
            # commit that failed (its answer lost, the commit may have landed).
            mine = message.redelivered or message.message_id in uncertain
            replay = result.outcome is Outcome.DUPLICATE and mine
            if isinstance(change, PageChange) and (result.outcome is Outcome.APPLIED or replay):
                # An entity's previous URL, or the one an id alone names, is unpublished too.
                urls = [*sorted(result.left), *([change.url] if change.url else [])]
                changed.update((url, change if url == change.url else None) for url in urls)
                # A lastmod dates its entry whatever the delivery: merged as any other.
                dated = change.entry is not None and change.entry.lastmod is not None
                replayed.update(urls if replay and not dated else ())
        try:
            if touched:
                self.queues.request_rebuilds(touched)
            if self.feed is not None and changed:
                entries = {url: feed_entry(c, applied) if c else None for url, c in changed.items()}
                self.feed(entries, applied, replayed)
        except Exception as error:  # noqa: BLE001 - every message but the rejected is retried
            # SQS delivers them again (duplicates then, they ask again); a rejected one is
            # in the dead-letter queue already, and would be put there a second time.
            failed = IngestResult(Outcome.FAILED, error=error)
            return {
                key: r if r.outcome is Outcome.REJECTED else failed for key, r in results.items()
            }
        finally:
            self._notify(list(changed))
        return results

    def _parse(self, message: Message) -> PageChange | InvalidEvent:
        try:
            change = parse_body(message.body, self.site, self.max_event_bytes)
        except InvalidEvent as rejected:
            return rejected
        return msgspec.structs.replace(change, sent=message.sent_timestamp)

    def _apply_together(
        self, parsed: dict[str, PageChange | InvalidEvent]
    ) -> tuple[dict[str, IngestResult], set[str]]:
        """The outcomes of the plain changes applied together, by message id (a URL given
        twice is applied one by one, in order), and the ids of those left to be applied on
        their own (a failed transaction's among them: it may have landed). A failure here
        costs requests, never an event."""
        changes = {key: change for key, change in parsed.items() if isinstance(change, PageChange)}
        times = Counter(change.url for change in changes.values())
        plain = {key: change for key, change in changes.items() if times[change.url] == 1}
        if len(plain) < 2:
            return {}, set()
        try:
            results = self.apply.apply_plain(list(plain.values()))
        except Exception as exc:  # noqa: BLE001 - each event is applied on its own instead
            logger.warning(
                "batched apply failed; events applied one by one",
                reason=f"{type(exc).__name__}: {exc}",
                events=len(plain),
            )
            return {}, set(plain)
        done = {key: results[c.url] for key, c in plain.items() if c.url in results}
        return done, set(plain) - set(done)

    def _result(
        self, message: Message, change: PageChange | InvalidEvent, done: IngestResult | None
    ) -> IngestResult:
        """Its outcome; FAILED, with the error, when it may pass (SQS delivers it again)."""
        try:
            try:
                if isinstance(change, InvalidEvent):
                    raise change
                result = done or self.apply(change)
                logger.debug("event ingested", url=change.url, outcome=result.outcome.value)
            except InvalidEvent as rejected:
                self.queues.dead_letter(
                    message.body, rejected.code, rejected.reason, message.message_id
                )
                logger.warning(
                    "event rejected",
                    reason=rejected.reason,
                    reason_code=rejected.code,
                    message_id=message.message_id,
                )
                result = IngestResult(Outcome.REJECTED)
        except Exception as error:  # noqa: BLE001 - this message alone fails
            return IngestResult(Outcome.FAILED, error=error)
        metrics.add_metric(name=_OUTCOME_METRICS[result.outcome], unit="Count", value=1)
        return result

    def _notify(self, urls: list[str]) -> None:
        """Queue the changed URLs for IndexNow, even when the rebuild requests failed (the
        retry finds duplicates). Never raises: a failure is counted (alarmed) and logged."""
        if self.indexnow is None or not urls:
            return
        try:
            self.indexnow.notify(urls)
        except Exception as exc:  # noqa: BLE001 - any failure: the sitemap work goes on
            metrics.add_metric(name=Metric.INDEXNOW_NOT_QUEUED, unit="Count", value=len(urls))
            logger.error(
                "IndexNow URLs not queued", urls=urls, reason=f"{type(exc).__name__}: {exc}"
            )
        else:
            metrics.add_metric(name=Metric.INDEXNOW_QUEUED, unit="Count", value=len(urls))


def _applied(commit: Commit) -> Outcome:
    """APPLIED, or REPAIRED: a duplicate committed again, to restore its entry."""
    if commit.expected_version == commit.change.version:
        metrics.add_metric(name=Metric.ENTRIES_REPAIRED, unit="Count", value=1)
        logger.warning("entry repaired", url=commit.change.url, shard=commit.shard)
        return Outcome.REPAIRED
    return Outcome.APPLIED


def _clustered(change: PageChange, pointer: str | None) -> bool:
    """Whether the change is in an hreflang cluster: the URL's own, or one it declares."""
    return pointer is not None or bool(change.alternates) or change.hreflang is not None


def _member(record: UrlRecord | None) -> Member:
    """A newly declared page as a member, placed as its record says (None: unpublished)."""
    if record is None:
        return Member()
    return Member(live=record.live, shard=record.shard, base=record.base, reserved=record.reserved)


def _with_cluster(commit: Commit, write: ClusterWrite | None, pointer: str | None) -> Commit:
    """The commit with its cluster's write (this URL's member at its new place and
    reservation), conditional on the cluster pointer its record was read with."""
    if write is not None:
        url = commit.change.url
        member = msgspec.structs.replace(
            write.cluster.all[url], shard=commit.shard, base=commit.base, reserved=commit.reserved
        )
        write = replace(write, cluster=with_member(write.cluster, url, member))
    return replace(commit, cluster=write, expected_cluster=pointer)


_OUTCOME_METRICS = {
    Outcome.REJECTED: Metric.EVENTS_REJECTED,
    Outcome.APPLIED: Metric.EVENTS_APPLIED,
    Outcome.REPAIRED: Metric.EVENTS_DUPLICATE,
    Outcome.DUPLICATE: Metric.EVENTS_DUPLICATE,
    Outcome.STALE: Metric.EVENTS_STALE,
}
