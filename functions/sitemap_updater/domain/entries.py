"""A sitemap entry: what one <url> element says about a page, extensions included.

Immutable values, as msgspec structs: a build makes one per page, and a struct is made ten
times faster than a frozen dataclass.
"""

from __future__ import annotations

from msgspec import Struct


class Video(Struct, frozen=True, gc=False, omit_defaults=True):
    """One <video:video>, every field validated and normalised (see domain.events)."""

    thumbnail_loc: str
    title: str
    description: str
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    expiration_date: str | None = None
    rating: str | None = None
    view_count: int | None = None
    publication_date: str | None = None
    tags: tuple[str, ...] = ()
    family_friendly: bool | None = None
    restriction: tuple[str, tuple[str, ...]] | None = None  # (allow|deny, countries)
    requires_subscription: bool | None = None
    uploader: str | None = None
    uploader_info: str | None = None
    platform: tuple[str, tuple[str, ...]] | None = None  # (allow|deny, web/mobile/tv)
    live: bool | None = None


class News(Struct, frozen=True, gc=False, omit_defaults=True):
    """One <news:news>. Rendered only while the article is recent (domain.news)."""

    publication_name: str
    publication_language: str
    publication_date: str  # W3C datetime, normalised
    title: str


class SitemapEntry(Struct, frozen=True, gc=False, omit_defaults=True):
    """One page as listed in a shard. Every field is already validated and normalised.

    ``alternates`` is the page's hreflang cluster as rendered: (hreflang, href) pairs, the
    page itself included. The registry derives it from the cluster, never from one event.
    """

    url: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: str | None = None
    images: tuple[str, ...] = ()
    videos: tuple[Video, ...] = ()
    news: News | None = None
    alternates: tuple[tuple[str, str], ...] = ()
