"""The one settings model for every function, the local runtime, the CDK stack and the tests.
Each field is the environment variable of its name in upper case (``SITE_URL``), written by
:meth:`to_env` and validated at cold start with a message naming it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sitemap_updater.domain.feed import MAX_FEED_ENTRIES
from sitemap_updater.domain.indexnow import KEY_PATTERN, key_file
from sitemap_updater.domain.sharding import (
    PROTOCOL_MAX_BYTES,
    PROTOCOL_MAX_INDEX_ENTRIES,
    PROTOCOL_MAX_URLS,
    GroupRules,
    Limits,
    ShardFormat,
    index_extras,
    index_room,
)
from sitemap_updater.domain.stylesheet import STYLESHEET_HREF
from sitemap_updater.domain.urls import Site

SQS_MAX_RETENTION_DAYS = 14
DEFAULT_INDEXNOW_ENDPOINT = "https://api.indexnow.org/indexnow"


class SettingsError(ValueError):
    """The environment does not describe a usable deployment."""


def problems(exc: ValidationError, label: Callable[[str], str] = str) -> str:
    """A settings validation's problems on one line: ``label(NAME): why`` for a setting, and
    a rule across settings as its own message (it names them)."""
    found = []
    for error in exc.errors(include_url=False):
        why = str(error["msg"]).removeprefix("Value error, ")
        why = "missing" if error["type"] == "missing" else why
        found.append(f"{label(str(error['loc'][0]))}: {why}" if error["loc"] else why)
    return "; ".join(found)


class Settings(BaseModel):
    model_config = ConfigDict(
        frozen=True, populate_by_name=True, extra="ignore", alias_generator=str.upper
    )

    site_url: str = Field(description="Origin of the site, e.g. https://www.example.com")
    table_name: str = Field(min_length=3)
    bucket_name: str = Field(min_length=3)
    rebuild_queue_url: str = Field(min_length=1)
    index_queue_url: str = Field(min_length=1)
    ingest_dlq_url: str = Field(
        min_length=1,
        description="Where events that can never succeed go at once, with their reason.",
    )
    ingest_queue_url: str = Field("", description="Where the webhook endpoint sends events.")
    connectors: str = Field(
        "",
        description="The webhook connectors (docs/CONNECTORS.md) as JSON, without secrets "
        "('' = no webhook endpoint).",
    )
    max_urls_per_shard: int = Field(10_000, ge=1, le=PROTOCOL_MAX_URLS)
    max_shard_bytes: int = Field(PROTOCOL_MAX_BYTES, ge=4096, le=PROTOCOL_MAX_BYTES)
    max_sitemaps_per_index: int = Field(
        PROTOCOL_MAX_INDEX_ENTRIES, ge=1, le=PROTOCOL_MAX_INDEX_ENTRIES
    )
    max_event_bytes: int = Field(262_144, ge=1024, le=1_048_576)
    tombstone_ttl_days: int = Field(
        30,
        gt=SQS_MAX_RETENTION_DAYS,
        le=3650,
        description="How long an unpublished URL is remembered; must outlive any queued event.",
    )
    compress_shards: bool = True
    sitemap_format: Literal["xml", "txt"] = Field(
        "xml",
        description="Shards as XML, or as text files of one URL per line (no lastmod, no "
        "extensions; never gzipped).",
    )
    reconcile_period_hours: int = Field(
        168,
        ge=1,
        le=8760,
        description="The reconciler checks every shard against the registry once in this "
        "many hours, a slice each hour (default: once a week).",
    )
    group_rules: str = Field(
        "",
        description="Path prefixes that give new URLs their own shards: '/news/=news,/shop/=shop'",
    )
    news_groups: str = Field(
        "news",
        description="Groups whose shards follow Google News's 1,000-URL limit (comma-separated).",
    )
    extra_sitemaps: str = Field(
        "",
        description="Sitemaps and feeds on the site, made elsewhere, that the index lists "
        "after ours: absolute URLs, comma-separated, in order.",
    )
    feed_entries: int = Field(
        0,
        ge=0,
        le=MAX_FEED_ENTRIES,
        description="Entries of the Atom feed of recent changes at /feed.atom (0: no feed).",
    )
    cache_max_age_seconds: int = Field(60, ge=0, le=86_400)
    distribution_id: str = Field(
        "",
        description="The CloudFront distribution that serves the bucket ('' when none is known).",
    )
    invalidate_paths: bool = Field(
        False, description="After each write or delete, invalidate exactly the changed paths."
    )
    stylesheet: bool = Field(
        False,
        description="Serve /sitemap.xsl and reference it from the index and shards, so a "
        "browser shows them as tables (the human view).",
    )
    indexnow_key: str = Field(
        "",
        description="IndexNow key ('' = off): served as /<key>.txt; every applied change's "
        "URL is submitted to INDEXNOW_ENDPOINT.",
    )
    indexnow_endpoint: str = Field(
        DEFAULT_INDEXNOW_ENDPOINT,
        description="Where IndexNow submissions go (any participating engine shares them).",
    )
    indexnow_queue_url: str = Field("", description="The queue of URLs to submit to IndexNow.")
    indexnow_dlq_url: str = Field(
        "", description="Where URLs go that IndexNow refused or that could not be submitted."
    )

    @field_validator("site_url")
    @classmethod
    def _origin(cls, value: str) -> str:
        return Site.parse(value).origin

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        self.groups  # noqa: B018 - parsed for the ValueError it raises
        try:
            index_room(self.limits, self.index_extras)
        except ValueError as exc:
            raise ValueError(f"EXTRA_SITEMAPS: {exc}") from None
        if self.invalidate_paths and not self.distribution_id:
            raise ValueError("INVALIDATE_PATHS is true but DISTRIBUTION_ID is empty")
        if self.indexnow_key and not (self.indexnow_queue_url and self.indexnow_dlq_url):
            raise ValueError(
                "INDEXNOW_KEY is set but INDEXNOW_QUEUE_URL or INDEXNOW_DLQ_URL is empty"
            )
        return self

    @cached_property
    def index_extras(self) -> tuple[str, ...]:
        """What the index lists after our shards: EXTRA_SITEMAPS, then the feed when it is on."""
        return index_extras(self.extra_sitemaps.split(","), self.site, bool(self.feed_entries))

    @cached_property
    def groups(self) -> GroupRules:
        return GroupRules.parse(self.group_rules, self.news_groups)

    @field_validator("indexnow_key")
    @classmethod
    def _indexnow_key(cls, value: str) -> str:
        if value and not KEY_PATTERN.fullmatch(value):
            raise ValueError("an IndexNow key is 8 to 128 characters of a-z, A-Z, 0-9 and '-'")
        return value

    @field_validator("indexnow_endpoint")
    @classmethod
    def _indexnow_endpoint(cls, value: str) -> str:
        value = value.strip()  # as urllib does, and as SITE_URL is read
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
            raise ValueError(f"not an http(s) URL: {value!r}")
        # What urllib would only refuse at the first submission (http.client sends the
        # request line as ASCII, no spaces; the port is read when connecting).
        if not value.isascii() or not value.isprintable() or " " in value:
            raise ValueError(f"holds a space, a control or a non-ASCII character: {value!r}")
        try:
            parts.port  # noqa: B018 - read for the ValueError it raises
        except ValueError as exc:
            raise ValueError(f"has an invalid port: {value!r}") from exc
        return value

    @cached_property
    def site(self) -> Site:
        return Site.parse(self.site_url)

    @property
    def shard_format(self) -> ShardFormat:
        return ShardFormat(text=self.sitemap_format == "txt", compressed=self.compress_shards)

    @cached_property
    def limits(self) -> Limits:
        return Limits(
            max_urls_per_shard=self.max_urls_per_shard,
            max_shard_bytes=self.max_shard_bytes,
            max_sitemaps_per_index=self.max_sitemaps_per_index,
        )

    @property
    def stylesheet_href(self) -> str | None:
        """The href the index and shards reference the human view by (None: off)."""
        return STYLESHEET_HREF if self.stylesheet else None

    @property
    def indexnow_key_file(self) -> str | None:
        """The key file's object key, at the site root (None: IndexNow is off)."""
        return key_file(self.indexnow_key) if self.indexnow_key else None

    @property
    def cache_control(self) -> str:
        return f"public, max-age={self.cache_max_age_seconds}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and validate the environment (``os.environ`` by default)."""
        source = os.environ if environ is None else environ
        try:
            return cls.model_validate(dict(source))
        except ValidationError as exc:
            raise SettingsError(f"invalid function environment: {problems(exc)}") from exc

    def to_env(self) -> dict[str, str]:
        """Every setting as the environment variables a function receives."""
        values = self.model_dump(by_alias=True)
        return {
            name: str(v).lower() if isinstance(v, bool) else str(v) for name, v in values.items()
        }

    @classmethod
    def env_names(cls) -> set[str]:
        return {field.alias or name for name, field in cls.model_fields.items()}
