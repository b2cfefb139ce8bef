"""The one settings model for every function, the local runtime, the CDK stack and the tests.
Each field is the environment variable of its name in upper case (``SITE_URL``), written by
:meth:`to_env` and validated at cold start with a message naming it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

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


def _indexnow_key(value: str) -> str:
    if value and not KEY_PATTERN.fullmatch(value):
        raise ValueError("an IndexNow key is 8 to 128 characters of a-z, A-Z, 0-9 and '-'")
    return value


def _indexnow_endpoint(value: str) -> str:
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


class Settings(BaseModel):
    model_config = ConfigDict(
        frozen=True, populate_by_name=True, extra="ignore", alias_generator=str.upper
    )

    # Each setting's meaning and default: docs/DEPLOY.md#configuration.
    site_url: Annotated[str, AfterValidator(lambda value: Site.parse(value).origin)]
    table_name: str = Field(min_length=3)
    bucket_name: str = Field(min_length=3)
    rebuild_queue_url: str = Field(min_length=1)
    index_queue_url: str = Field(min_length=1)
    ingest_dlq_url: str = Field(min_length=1)
    ingest_queue_url: str = ""
    connectors: str = ""  # JSON, without secrets ('': no webhook endpoint)
    max_urls_per_shard: int = Field(10_000, ge=1, le=PROTOCOL_MAX_URLS)
    max_shard_bytes: int = Field(PROTOCOL_MAX_BYTES, ge=4096, le=PROTOCOL_MAX_BYTES)
    max_sitemaps_per_index: int = Field(
        PROTOCOL_MAX_INDEX_ENTRIES, ge=1, le=PROTOCOL_MAX_INDEX_ENTRIES
    )
    max_event_bytes: int = Field(262_144, ge=1024, le=1_048_576)
    # An unpublished URL is remembered longer than any event can wait in SQS.
    tombstone_ttl_days: int = Field(30, gt=SQS_MAX_RETENTION_DAYS, le=3650)
    compress_shards: bool = True
    sitemap_format: Literal["xml", "txt"] = "xml"
    reconcile_period_hours: int = Field(168, ge=1, le=8760)
    group_rules: str = ""
    news_groups: str = "news"
    extra_sitemaps: str = ""
    feed_entries: int = Field(0, ge=0, le=MAX_FEED_ENTRIES)
    cache_max_age_seconds: int = Field(60, ge=0, le=86_400)
    distribution_id: str = ""
    invalidate_paths: bool = False
    stylesheet: bool = False
    indexnow_key: Annotated[str, AfterValidator(_indexnow_key)] = ""
    indexnow_endpoint: Annotated[str, AfterValidator(_indexnow_endpoint)] = (
        DEFAULT_INDEXNOW_ENDPOINT
    )
    indexnow_queue_url: str = ""
    indexnow_dlq_url: str = ""

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

    @cached_property
    def site(self) -> Site:
        return Site.parse(self.site_url)

    @property
    def shard_format(self) -> ShardFormat:
        return ShardFormat(text=self.sitemap_format == "txt", compressed=self.compress_shards)

    @cached_property
    def limits(self) -> Limits:
        return Limits(self.max_urls_per_shard, self.max_shard_bytes, self.max_sitemaps_per_index)

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
        try:
            return cls.model_validate(dict(os.environ if environ is None else environ))
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
