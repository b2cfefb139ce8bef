"""An in-memory registry that keeps the DynamoDB adapter's contract: the same conditions
(URL record version and cluster pointer, cluster versions, shard capacity), the same
outcomes (ConcurrentChange, ShardFull), thread-safe. For fast use-case tests without moto.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from sitemap_updater.domain.clusters import MAX_REDIRECTS, Cluster, too_many_redirects
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import ConcurrentChange, RetryableError, ShardFull
from sitemap_updater.domain.placement import Commit, EntityWrite
from sitemap_updater.domain.records import EntityRecord, Pending, UrlRecord, UrlState
from sitemap_updater.domain.sharding import Limits, parse_shard_id, shard_id

# The registry adapter's transactions hold this many plain commits into one shard: two
# actions each, one pending marker and one reservation within DynamoDB's 100.
COMMITS_TOGETHER = 49


@dataclass
class _Stored:
    record: UrlRecord | None
    cluster: str | None


class MemoryRegistry:
    def __init__(self, limits: Limits, flaky: dict[str, int] | None = None):
        self.limits = limits
        self.lock = threading.RLock()
        self.urls: dict[str, _Stored] = {}
        self.entries: dict[str, dict[str, tuple[SitemapEntry, str | None]]] = defaultdict(dict)
        self.capacity: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
        self.cluster_records: dict[str, Cluster | str] = {}  # a str is a redirect
        self.open: dict[str, int] = {}
        self.entities: dict[str, EntityRecord] = {}
        self.commits: list[Commit] = []
        self.flaky = flaky or {}  # url -> how many commits fail (throttled) first
        self.before_commit: Callable[[Commit], None] | None = None  # a rival's interleaving
        self.marked: dict[str, list[Pending]] = defaultdict(list)  # shard -> sibling markers

    # -- reads -------------------------------------------------------------------------------

    def url_state(self, url: str) -> UrlState:
        with self.lock:
            stored = self.urls.get(url)
            return UrlState(stored.record, stored.cluster) if stored else UrlState()

    def get_url(self, url: str) -> UrlRecord | None:
        return self.url_state(url).record

    def url_states(self, urls: Sequence[str]) -> dict[str, UrlState]:
        return {url: self.url_state(url) for url in urls}

    def clusters(self, cids: Iterable[str]) -> dict[str, Cluster]:
        result = {}
        with self.lock:
            for cid in cids:
                found = self.cluster_records.get(cid)
                for _ in range(MAX_REDIRECTS):
                    if not isinstance(found, str):
                        break
                    found = self.cluster_records.get(found)
                if isinstance(found, str):
                    raise too_many_redirects(cid)
                if found is not None:
                    result[cid] = found
        return result

    def entry(self, shard: str, url: str) -> SitemapEntry | None:
        with self.lock:
            found = self.entries[shard].get(url)
            return found[0] if found else None

    def stale_entries(self, records: Sequence[UrlRecord]) -> set[str]:
        return {r.url for r in records if r.live and r.shard and not self.entry(r.shard, r.url)}

    def unlinked(self, entries: Iterable[tuple[str, str]]) -> set[str]:
        with self.lock:
            found = [self.entries[shard].get(url) for url, shard in entries]
            return {pair[0].url for pair in found if pair is not None and pair[1] is None}

    def entity(self, entity: str) -> EntityRecord | None:
        with self.lock:
            return self.entities.get(entity)

    def save_entity(self, write: EntityWrite) -> None:
        with self.lock:
            self._check_entity(write)
            self.entities[write.entity] = EntityRecord(
                write.url, write.version, write.live, write.left
            )

    def _check_entity(self, write: EntityWrite) -> None:
        known = self.entities.get(write.entity)
        if (known.version if known else None) != write.expected:
            raise ConcurrentChange(f"entity {write.entity}")

    def shard_entries(self, shard: str) -> list[tuple[SitemapEntry, str | None]]:
        with self.lock:
            return sorted(self.entries[shard].values(), key=lambda pair: pair[0].url)

    def shard_of(self, url: str) -> str | None:
        return next((s for s, entries in self.entries.items() if url in entries), None)

    # -- the transaction ---------------------------------------------------------------------

    def commit(self, commit: Commit) -> None:
        if self.before_commit is not None:
            hook, self.before_commit = self.before_commit, None
            hook(commit)
        url = commit.change.url
        with self.lock:
            if self.flaky.get(url, 0) > 0:
                self.flaky[url] -= 1
                raise RetryableError("throttled")
            self._check_record(url, commit.expected_version, commit.expected_cluster)
            retired = commit.retired
            if retired is not None:
                self._check_record(retired.change.url, retired.expected_version, None)
            if commit.entity is not None:
                self._check_entity(commit.entity)
            write = commit.cluster
            if write is not None:
                current = self.cluster_records.get(write.cluster.cid)
                version = current.version if isinstance(current, Cluster) else None
                if version != write.expected:
                    raise ConcurrentChange(f"cluster {write.cluster.cid}")
                for cid, absorbed_version in write.absorbed:
                    found = self.cluster_records.get(cid)
                    if not isinstance(found, Cluster) or found.version != absorbed_version:
                        raise ConcurrentChange(f"cluster {cid}")
                for target, target_version, pointer in write.targets:
                    self._check_record(target, target_version, pointer)
            if commit.reservation is not None:
                reservation = commit.reservation
                slots, used = self.capacity[reservation.shard]
                limit = min(self.limits.max_urls_per_shard, reservation.max_slots)
                if (
                    slots + reservation.slots > limit
                    or used + reservation.bytes > self.limits.max_entry_bytes
                ):
                    raise ShardFull(reservation.shard)
                self.capacity[reservation.shard] = (
                    slots + reservation.slots,
                    used + reservation.bytes,
                )
            # Every condition held: apply it all.
            self.urls[url] = _Stored(commit.record, commit.cluster_id)
            if retired is not None:
                self.urls[retired.change.url] = _Stored(retired.record, None)
                if retired.shard is not None:
                    self.entries[retired.shard].pop(retired.change.url, None)
            if commit.entity is not None:
                entity = commit.entity
                self.entities[entity.entity] = EntityRecord(
                    entity.url, entity.version, entity.live, entity.left
                )
            if write is not None:
                self.cluster_records[write.cluster.cid] = replace(
                    write.cluster, version=(write.expected or 0) + 1
                )
                for cid, _ in write.absorbed:
                    self.cluster_records[cid] = write.cluster.cid
                for target, _, _ in write.targets:
                    stored = self.urls.get(target) or _Stored(None, None)
                    self.urls[target] = _Stored(stored.record, write.cluster.cid)
            if commit.previous_shard is not None:
                self.entries[commit.previous_shard].pop(url, None)
            if commit.shard is not None:
                if commit.change.entry is not None:
                    self.entries[commit.shard][url] = (commit.change.entry, commit.cluster_id)
                else:
                    self.entries[commit.shard].pop(url, None)
            self.commits.append(commit)

    def check(self, commit: Commit) -> None:
        """Nothing to raise: an item here has no size limit."""

    def transactions(self, commits: Sequence[Commit]) -> list[list[Commit]]:
        """Groups of ``COMMITS_TOGETHER`` (an item here has no size limit)."""
        return [
            list(commits[start : start + COMMITS_TOGETHER])
            for start in range(0, len(commits), COMMITS_TOGETHER)
        ]

    def commit_all(self, commits: Sequence[Commit]) -> None:
        """All or nothing, as one DynamoDB transaction."""
        with self.lock:
            saved = (
                dict(self.urls),
                {shard: dict(entries) for shard, entries in self.entries.items()},
                dict(self.capacity),
                dict(self.cluster_records),
                len(self.commits),
            )
            try:
                for commit in commits:
                    self.commit(commit)
            except Exception:
                self.urls, entries, capacity, self.cluster_records, count = saved
                self.entries = defaultdict(dict, entries)
                self.capacity = defaultdict(lambda: (0, 0), capacity)
                del self.commits[count:]
                raise

    def _check_record(self, url: str, version: Decimal | None, cluster: str | None) -> None:
        stored = self.urls.get(url) or _Stored(None, None)
        held = stored.record.version if stored.record else None
        if held != version or stored.cluster != cluster:
            raise ConcurrentChange(url)

    # -- shards ------------------------------------------------------------------------------

    def mark_pending(self, shards: Iterable[str], change: Pending) -> None:
        with self.lock:
            for shard in shards:
                self.marked[shard].append(change)

    def set_settled(self, cid: str, version: int) -> None:
        with self.lock:
            found = self.cluster_records.get(cid)
            if isinstance(found, Cluster) and found.version == version:
                self.cluster_records[cid] = replace(found, settled=version)

    def open_shard(self, group: str) -> str:
        with self.lock:
            return shard_id(group, self.open.get(group, 1))

    def close_shard(self, shard: str) -> None:
        group, number = parse_shard_id(shard)
        with self.lock:
            if self.open.get(group, 1) == number:
                self.open[group] = number + 1
