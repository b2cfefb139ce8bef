"""The composition root: settings, clients, adapters and use cases, each built once on first
use. Handlers call :func:`app`; tests and the local runtime :func:`build_app`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache, cached_property, partial
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.config import Config

from sitemap_updater.adapters import clients
from sitemap_updater.adapters.cdn import Cdn
from sitemap_updater.adapters.indexnow import IndexNowClient
from sitemap_updater.adapters.queues import IndexNowQueue, Queues
from sitemap_updater.adapters.registry import Registry
from sitemap_updater.adapters.store import SitemapStore
from sitemap_updater.domain.feed import FEED_KEY
from sitemap_updater.domain.stylesheet import (
    STYLESHEET_CONTENT_TYPE,
    STYLESHEET_KEY,
    stylesheet_bytes,
)
from sitemap_updater.resources import RECONCILE_MINUTES
from sitemap_updater.settings import Settings
from sitemap_updater.usecases.objects import TEXT_CONTENT_TYPE
from sitemap_updater.usecases.site_files import PublishSiteFiles, SiteFile

# A function imports only its own use case: the rebuild's cold start never loads ingest's
# event models (bench/coldstart.py).
if TYPE_CHECKING:
    import boto3

    from sitemap_updater.usecases.indexnow import SubmitChanges
    from sitemap_updater.usecases.ingest import ApplyChange, Ingest
    from sitemap_updater.usecases.publish_index import PublishIndex
    from sitemap_updater.usecases.rebuild import RebuildShard
    from sitemap_updater.usecases.reconcile import Reconcile
    from sitemap_updater.usecases.webhook import ReceiveWebhook

# Throttling and 5xx are retried a few times by botocore, then raised so SQS retries.
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 4}, connect_timeout=5, read_timeout=20
)
# The ingest function's IndexNow notification must not hold its invocation up for long.
NOTIFY_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 2}, connect_timeout=1, read_timeout=3
)
_T = TypeVar("_T")


def utc_now() -> datetime:
    return datetime.now(UTC)


def site_files_for(settings: Settings) -> list[SiteFile]:
    """The static files the settings ask the site to serve from the bucket."""
    files = []
    if settings.stylesheet:
        files.append(SiteFile(STYLESHEET_KEY, stylesheet_bytes(), STYLESHEET_CONTENT_TYPE))
    if settings.indexnow_key_file is not None:  # the key, as the IndexNow spec asks
        body = settings.indexnow_key.encode()
        files.append(SiteFile(settings.indexnow_key_file, body, TEXT_CONTENT_TYPE))
    return files


def site_file_keys(settings: Settings) -> list[str]:
    """Their keys, and the feed's (the stack grants and routes exactly these)."""
    feed = [FEED_KEY] if settings.feed_entries else []
    return [file.key for file in site_files_for(settings)] + feed


class _once(cached_property[_T]):
    """A cached property built once under the App's lock, whichever thread asks first
    (botocore sessions are not thread-safe)."""

    def __get__(self, app: App, owner: type[Any] | None = None) -> _T:  # type: ignore[override]
        with app._lock:
            return super().__get__(app, owner)


@dataclass
class App:
    """Settings and clock, and what a function's use case reaches of what they make."""

    settings: Settings
    # (service, config) -> a botocore client: see build_app.
    client_for: Callable[[str, Config], Any] = field(repr=False)
    clock: Callable[[], datetime] = field(default=utc_now)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    def _client(self, service: str, config: Config = CLIENT_CONFIG) -> Any:
        return self.client_for(service, config)

    @_once
    def registry(self) -> Registry:
        settings = self.settings
        return Registry(settings.table_name, settings.limits, self._client("dynamodb"))

    @_once
    def store(self) -> SitemapStore:
        return SitemapStore(self.settings.bucket_name, self._client("s3"))

    @_once
    def queues(self) -> Queues:
        settings = self.settings
        rebuild, index = settings.rebuild_queue_url, settings.index_queue_url
        return Queues(rebuild, index, settings.ingest_dlq_url, self._client("sqs"))

    @_once
    def cdn(self) -> Cdn | None:
        if not self.settings.invalidate_paths:
            return None
        return Cdn(self.settings.distribution_id, self._client("cloudfront"))

    @_once
    def indexnow_queue(self) -> IndexNowQueue | None:
        settings = self.settings
        if not settings.indexnow_key:
            return None
        client = self._client("sqs", NOTIFY_CONFIG)
        return IndexNowQueue(settings.indexnow_queue_url, settings.indexnow_dlq_url, client)

    @_once
    def apply_change(self) -> ApplyChange:
        from sitemap_updater.usecases.ingest import ApplyChange  # noqa: PLC0415

        settings = self.settings
        ttl = settings.tombstone_ttl_days * 86_400
        return ApplyChange(self.registry, settings.limits, ttl, self.clock, settings.groups)

    @_once
    def ingest(self) -> Ingest:
        from sitemap_updater.usecases.ingest import Ingest  # noqa: PLC0415

        settings, feed = self.settings, None
        if settings.feed_entries:
            from sitemap_updater.usecases.feed import UpdateFeed  # noqa: PLC0415

            feed = UpdateFeed(self.registry, self.queues, settings.feed_entries)
        site, max_bytes = settings.site, settings.max_event_bytes
        return Ingest(site, max_bytes, self.apply_change, self.queues, self.indexnow_queue, feed)

    @_once
    def rebuild_shard(self) -> RebuildShard:
        from sitemap_updater.usecases.rebuild import RebuildShard  # noqa: PLC0415

        return RebuildShard(
            limits=self.settings.limits,
            shard_format=self.settings.shard_format,
            cache_control=self.settings.cache_control,
            registry=self.registry,
            store=self.store,
            index=self.queues,
            clock=self.clock,
            cdn=self.cdn,
            stylesheet=self.settings.stylesheet_href,
        )

    @_once
    def reconcile(self) -> Reconcile:
        from sitemap_updater.usecases.reconcile import Reconcile  # noqa: PLC0415

        return Reconcile(
            registry=self.registry,
            rebuild=self.rebuild_shard,
            period=timedelta(hours=self.settings.reconcile_period_hours),
            interval=timedelta(minutes=RECONCILE_MINUTES),
            clock=self.clock,
            groups=self.settings.groups.named,
        )

    @_once
    def publish_index(self) -> PublishIndex:
        from sitemap_updater.usecases.publish_index import PublishIndex  # noqa: PLC0415

        return PublishIndex(
            site=self.settings.site,
            limits=self.settings.limits,
            cache_control=self.settings.cache_control,
            registry=self.registry,
            store=self.store,
            retire=self.queues,
            clock=self.clock,
            cdn=self.cdn,
            stylesheet=self.settings.stylesheet_href,
            site_files=self.site_files,
            extras=self.settings.index_extras,
        )

    @_once
    def submit_indexnow(self) -> SubmitChanges:
        settings, site = self.settings, self.settings.site
        if self.indexnow_queue is None or settings.indexnow_key_file is None:
            raise RuntimeError("IndexNow is off: INDEXNOW_KEY is empty")
        from sitemap_updater.adapters.queues import requested_urls  # noqa: PLC0415
        from sitemap_updater.usecases.indexnow import SubmitChanges  # noqa: PLC0415

        host = site.host if site.port is None else f"{site.host}:{site.port}"
        location = site.url_for(settings.indexnow_key_file)
        client = IndexNowClient(settings.indexnow_endpoint, settings.indexnow_key, host, location)
        return SubmitChanges(site, client, self.indexnow_queue, requested_urls)

    @_once
    def receive_webhook(self) -> ReceiveWebhook:
        import json  # noqa: PLC0415

        from sitemap_updater import connectors  # noqa: PLC0415
        from sitemap_updater.adapters.queues import IngestInbox  # noqa: PLC0415
        from sitemap_updater.adapters.secrets import ConnectorSecrets  # noqa: PLC0415
        from sitemap_updater.usecases.webhook import ReceiveWebhook  # noqa: PLC0415

        settings = self.settings
        found = connectors.parse(json.loads(settings.connectors or "{}"), "CONNECTORS")
        inbox = IngestInbox(settings.ingest_queue_url, settings.ingest_dlq_url, self._client("sqs"))
        secrets = ConnectorSecrets(self._client, lambda: self.clock().timestamp())
        by_name = {connector.name: connector for connector in found}
        return ReceiveWebhook(by_name, secrets, inbox)

    @_once
    def site_files(self) -> PublishSiteFiles | None:
        files, feed = site_files_for(self.settings), None
        if self.settings.feed_entries:
            from sitemap_updater.usecases.feed import feed_file  # noqa: PLC0415

            feed = partial(feed_file, self.registry, self.settings.site, self.settings.feed_entries)
        if not files and feed is None:
            return None
        return PublishSiteFiles(files, self.store, self.settings.cache_control, feed)


def build_app(
    settings: Settings,
    session: boto3.session.Session | None = None,
    clock: Callable[[], datetime] = utc_now,
    endpoint_url: str | None = None,
) -> App:
    """An App whose clients come from ``session``, else from botocore's shared one;
    ``endpoint_url`` goes to every client but CloudFront's (which has no local stand-in)."""
    make = session.client if session is not None else clients.client

    def client_for(service: str, config: Config) -> Any:
        endpoint = None if service == "cloudfront" else endpoint_url
        return make(service, endpoint_url=endpoint, config=config)  # type: ignore[call-overload]

    return App(settings=settings, client_for=client_for, clock=clock)


@cache
def app() -> App:
    """The function's App, from its validated environment."""
    return build_app(Settings.from_env())
