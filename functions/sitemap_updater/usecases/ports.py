"""What the use cases need of the registry, the bucket, the queues and the CDN (the adapters
and the tests' fakes provide it), and the SQS message they take."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sitemap_updater.domain.clusters import Cluster
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.feed import Feed
from sitemap_updater.domain.indexnow import Submission
from sitemap_updater.domain.placement import Commit, EntityWrite
from sitemap_updater.domain.records import (
    EntityRecord,
    IndexOutput,
    Pending,
    ShardOutput,
    UrlRecord,
    UrlState,
)

if TYPE_CHECKING:  # the connectors load only in the webhook function
    from sitemap_updater.connectors.config import Connector


@dataclass(frozen=True)
class Message:
    message_id: str
    body: str
    redelivered: bool = False  # SQS delivered it before (ApproximateReceiveCount > 1)
    sent_timestamp: int | None = None  # when SQS received it, in epoch milliseconds


class UrlRegistry(Protocol):
    def url_state(self, url: str) -> UrlState: ...
    def url_states(self, urls: Sequence[str]) -> dict[str, UrlState]: ...
    def clusters(self, cids: Iterable[str]) -> dict[str, Cluster]: ...
    def entry(self, shard: str, url: str) -> SitemapEntry | None: ...
    def stale_entries(self, records: Sequence[UrlRecord]) -> set[str]: ...
    def entity(self, entity: str) -> EntityRecord | None: ...
    def save_entity(self, write: EntityWrite) -> None: ...
    def commit(self, commit: Commit) -> None: ...
    def transactions(self, commits: Sequence[Commit]) -> list[list[Commit]]: ...
    def commit_all(self, commits: Sequence[Commit]) -> None: ...
    def open_shard(self, group: str) -> str: ...
    def close_shard(self, shard: str) -> None: ...
    def mark_pending(self, shards: Iterable[str], change: Pending) -> None: ...


class ShardRegistry(Protocol):
    def shard_output(self, shard: str) -> ShardOutput: ...
    def shard_entries(self, shard: str) -> list[tuple[SitemapEntry, str | None]]: ...
    def entries(
        self, shard: str, urls: Sequence[str]
    ) -> dict[str, tuple[SitemapEntry, str | None]]: ...
    def pending(self, shard: str) -> list[Pending]: ...
    def clear_pending(self, shard: str, applied: Sequence[Pending]) -> None: ...
    def clusters(self, cids: Iterable[str]) -> dict[str, Cluster]: ...
    def save_shard_output(self, output: ShardOutput, previous_generation: int) -> None: ...


class KnownShards(Protocol):
    def shard_outputs(self) -> list[ShardOutput]: ...
    def open_shard(self, group: str) -> str: ...


class ReconcileRegistry(KnownShards, Protocol):
    def placed_live(self, shard: str) -> set[str]: ...
    def shard_entries(self, shard: str) -> list[tuple[SitemapEntry, str | None]]: ...
    def url_state(self, url: str) -> UrlState: ...
    def entry(self, shard: str, url: str) -> SitemapEntry | None: ...
    def restore_entry(self, shard: str, url: str, cluster: str | None) -> None: ...
    def remove_entry(self, shard: str, url: str) -> None: ...
    def mark_checked(self, shard: str, when: str) -> None: ...


class IndexRegistry(Protocol):
    def shard_outputs(self) -> list[ShardOutput]: ...
    def set_listed(self, shard: str, listed: bool) -> None: ...
    def index_outputs(self) -> dict[str, IndexOutput]: ...
    def index_and_shards(
        self, key: str, shards: Sequence[str]
    ) -> tuple[IndexOutput | None, list[ShardOutput]]: ...
    def save_index_output(self, output: IndexOutput, previous_generation: int) -> None: ...
    def set_whole(self, key: str, whole: bool) -> None: ...
    def delete_index_output(self, key: str) -> None: ...


class FeedRegistry(Protocol):
    def feed(self) -> Feed: ...
    def save_feed(self, feed: Feed, previous_generation: int) -> None: ...


class RebuildRequests(Protocol):
    def request_rebuilds(self, requests: Mapping[str, Sequence[str]]) -> None: ...


class IndexRequests(Protocol):
    def request_index(
        self, cause: str, *, shard: str | None = None, sent: int | None = None, files: bool = False
    ) -> None: ...


class DeadLetters(Protocol):
    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None: ...


class IngestQueues(RebuildRequests, DeadLetters, Protocol): ...


class IngestInbox(DeadLetters, Protocol):
    def send(self, bodies: Sequence[str]) -> None: ...  # events onto the ingest queue


class SecretValues(Protocol):
    def values(self, connector: Connector) -> tuple[str, ...]: ...  # one, or two rotating


class ChangeNotifier(Protocol):
    def notify(self, urls: Sequence[str]) -> None: ...  # queues URLs for IndexNow


class UrlSubmitter(Protocol):
    def submit(self, urls: Sequence[str], deadline: float | None = None) -> Submission: ...


@dataclass(frozen=True)
class StoredObject:
    etag: str
    metadata: dict[str, str]
    body: bytes | None = None  # only from get()


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
    def head(self, key: str) -> StoredObject | None: ...
    def get(self, key: str) -> StoredObject | None: ...
    def delete(self, key: str, expected_etag: str | None = None) -> None: ...


class Invalidator(Protocol):
    def invalidate(self, keys: Sequence[str]) -> bool: ...  # never raises: logs and counts


class SiteFiles(Protocol):
    def __call__(self, *, verify: bool = False) -> list[str]: ...  # the keys written
