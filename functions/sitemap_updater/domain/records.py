"""What the registry remembers, as plain values (the DynamoDB adapter maps them to items)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal


@dataclass(frozen=True)
class UrlRecord:
    """The newest state of one URL: the ordering gate and its placement. ``live``: False for a
    tombstone; ``shard``: None for a URL unpublished before it was ever published;
    ``reserved``: the bytes its shard holds for its entry."""

    url: str
    version: Decimal
    live: bool
    shard: str | None
    reserved: int
    base: int = 0  # bytes of its entry without hreflang alternates


@dataclass(frozen=True)
class EntityRecord:
    """A CMS entity (id and locale) and the URL of its newest change (None: only ever
    unpublished by id), which a publish under another URL unpublishes."""

    url: str | None
    version: Decimal
    live: bool
    left: str | None = None  # the URL that change unpublished: told again on its redelivery


@dataclass(frozen=True)
class UrlState:
    """A URL's record (None: never seen) and the cluster its pointer names (None: none)."""

    record: UrlRecord | None = None
    cluster: str | None = None


@dataclass(frozen=True)
class ObjectState:
    """What a rebuild wrote to S3 (or found there): enough to skip, to CAS, and to list it."""

    key: str
    etag: str
    sha256: str
    entries: int
    bytes: int
    lastmod: str  # when these bytes were first written (W3C datetime, UTC)


@dataclass(frozen=True)
class ShardOutput:
    """A shard's published state. ``generation`` grows with every change (the rebuild's
    compare-and-set); ``listed``: an index may name it (set before, cleared after);
    ``retiring``: no live entries left, its object deleted once no index names it."""

    shard: str
    generation: int = 0
    obj: ObjectState | None = None
    listed: bool = False
    retiring: bool = False
    news_expiry: str | None = None  # when its rendering next changes by itself (news ageing)
    rendering: str | None = None  # the render settings its bytes were written with
    checked: str | None = None  # when the reconciler last checked it (W3C datetime, UTC)

    @property
    def nameable(self) -> bool:
        return self.obj is not None and not self.retiring

    def with_object(
        self, obj: ObjectState | None, retiring: bool = False, news_expiry: str | None = None
    ) -> ShardOutput:
        return replace(
            self,
            obj=obj,
            retiring=retiring,
            news_expiry=news_expiry,
            generation=self.generation + 1,
        )


@dataclass(frozen=True)
class Pending:
    """A committed change its shard's object may not show yet, listed by a pending marker
    (deleted by the rebuild that applies it)."""

    url: str
    version: str
    sent: int | None = None  # when SQS received the event (epoch ms): freshness is measured
    cluster: str | None = None  # its hreflang cluster: the members in the shard change too
    marker: str = ""  # the id of the marker that lists it (as read)


@dataclass(frozen=True)
class IndexOutput:
    """A written index file. ``whole`` (the first file's): the last full publish finished, so
    the files and robots.txt name every shard; only then may a refresh patch the files."""

    key: str
    generation: int
    obj: ObjectState | None
    whole: bool = False
