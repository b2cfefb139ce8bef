"""The event contract's extensions: images, videos, news and hreflang alternates.

Each is validated the way Google documents it (required fields, lengths, ranges), and
against the official schemas' restrictions, so that nothing accepted here can make a
sitemap invalid. Image, video and thumbnail URLs may live on another host (a CDN); they
must still be absolute http(s) URLs without the characters no sitemap may hold. Alternates
must be pages of this site: only pages the registry knows can be kept reciprocal.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator

from sitemap_updater.domain.contract import (
    MAX_ALTERNATES,
    MAX_IMAGES,
    X_DEFAULT,
    alternate_pairs,
    image_locs,
    normalise_hreflang,
)
from sitemap_updater.domain.dates import normalise_w3c
from sitemap_updater.domain.entries import News, Video
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, normalise_url

MAX_VIDEOS = 100
MAX_TAGS = 32  # the video schema
MAX_VIDEO_TITLE = 100  # the video schema
MAX_VIDEO_DESCRIPTION = 2048  # the video schema and Google
MAX_DURATION = 28_800  # seconds; the video schema and Google
MAX_TEXT = 2048
_NEWS_LANGUAGE = re.compile(r"^(?:zh-cn|zh-tw|[a-z]{2,3})$", re.ASCII)
_COUNTRY = re.compile(r"^[A-Z]{2}$", re.ASCII)
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(limit: int) -> Any:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("must be a string")  # noqa: TRY004 - pydantic reports ValueError
        text = value.strip()
        if not text:
            raise ValueError("must not be empty")
        if len(text) > limit:
            raise ValueError(f"is {len(text)} characters, over {limit}")
        if _XML_ILLEGAL.search(text):
            raise ValueError("holds a character XML 1.0 forbids")
        return text

    return Annotated[
        str,
        PlainValidator(check),
        WithJsonSchema({"type": "string", "minLength": 1, "maxLength": limit}),
    ]


UrlText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_URL_LENGTH, json_schema_extra={"format": "uri"}),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Image(_Strict):
    """``{"loc": "https://cdn.example.com/a.jpg"}``: an image on the page (any host)."""

    loc: UrlText


class Restriction(_Strict):
    relationship: Literal["allow", "deny"]
    countries: list[Annotated[str, Field(pattern=_COUNTRY.pattern)]] = Field(
        min_length=1, max_length=250
    )


class Platform(_Strict):
    relationship: Literal["allow", "deny"]
    platforms: list[Literal["web", "mobile", "tv"]] = Field(min_length=1, max_length=3)


class Uploader(_Strict):
    name: _text(255)  # type: ignore[valid-type]
    info: UrlText | None = None


def _rating(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise ValueError("rating must be a number from 0.0 to 5.0")  # noqa: TRY004
    number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite() or not 0 <= number <= 5:
        raise ValueError("rating must be from 0.0 to 5.0")
    text = format(abs(number).quantize(Decimal("0.1")), "f")
    return text


class VideoModel(_Strict):
    """Google's required fields (thumbnail_loc, title, description, content_loc or
    player_loc) and the optional ones it still reads."""

    thumbnail_loc: UrlText
    title: _text(MAX_VIDEO_TITLE)  # type: ignore[valid-type]
    description: _text(MAX_VIDEO_DESCRIPTION)  # type: ignore[valid-type]
    content_loc: UrlText | None = None
    player_loc: UrlText | None = None
    duration: int | None = Field(None, ge=1, le=MAX_DURATION, strict=True)
    expiration_date: str | None = None
    rating: (
        Annotated[
            str,
            PlainValidator(_rating),
            WithJsonSchema({"type": "number", "minimum": 0, "maximum": 5}),
        ]
        | None
    ) = None
    view_count: int | None = Field(None, ge=0, strict=True)
    publication_date: str | None = None
    tags: list[_text(256)] | None = Field(None, max_length=MAX_TAGS)  # type: ignore[valid-type]
    family_friendly: bool | None = Field(None, strict=True)
    restriction: Restriction | None = None
    requires_subscription: bool | None = Field(None, strict=True)
    uploader: Uploader | None = None
    platform: Platform | None = None
    live: bool | None = Field(None, strict=True)

    @model_validator(mode="after")
    def _a_video_to_play(self) -> VideoModel:
        if self.content_loc is None and self.player_loc is None:
            raise ValueError("a video needs content_loc or player_loc")
        return self


class Publication(_Strict):
    name: _text(MAX_TEXT)  # type: ignore[valid-type]
    language: Annotated[str, Field(pattern=_NEWS_LANGUAGE.pattern)]


class NewsModel(_Strict):
    """Google News: the publication, when the article was first published, its title."""

    publication: Publication
    publication_date: str
    title: _text(MAX_TEXT)  # type: ignore[valid-type]


class Alternate(_Strict):
    """A language version of this page: ``{"hreflang": "de", "href": "https://.../de/a"}``."""

    hreflang: Annotated[
        str,
        PlainValidator(normalise_hreflang),
        WithJsonSchema({"type": "string", "examples": ["de", "en-GB", "x-default"]}),
    ]
    href: UrlText


def _foreign(raw: str, site: Site, field: str) -> str:
    """A URL that may be on another host (images, videos): still absolute, clean, bounded."""
    return normalise_url(raw, site, field=field, same_site=False)


def to_images(images: list[Image] | None, site: Site) -> tuple[str, ...]:
    if not images:
        return ()
    return image_locs([image.loc for image in images], site)


def to_videos(videos: list[VideoModel] | None, page: str, site: Site) -> tuple[Video, ...]:
    if not videos:
        return ()
    if len(videos) > MAX_VIDEOS:
        raise InvalidEvent("invalid_video", f"{len(videos)} videos, over {MAX_VIDEOS}")
    result = []
    for video in videos:
        content = _foreign(video.content_loc, site, "video") if video.content_loc else None
        player = _foreign(video.player_loc, site, "video") if video.player_loc else None
        if page in (content, player):
            raise InvalidEvent(
                "invalid_video", "content_loc and player_loc must not be the page's own URL"
            )
        info = video.uploader.info if video.uploader else None
        result.append(
            Video(
                thumbnail_loc=_foreign(video.thumbnail_loc, site, "video"),
                title=video.title,
                description=video.description,
                content_loc=content,
                player_loc=player,
                duration=video.duration,
                expiration_date=_date(video.expiration_date, "expiration_date"),
                rating=video.rating,
                view_count=video.view_count,
                publication_date=_date(video.publication_date, "publication_date"),
                tags=tuple(video.tags or ()),
                family_friendly=video.family_friendly,
                restriction=(
                    (
                        video.restriction.relationship,
                        tuple(dict.fromkeys(video.restriction.countries)),
                    )
                    if video.restriction
                    else None
                ),
                requires_subscription=video.requires_subscription,
                uploader=video.uploader.name if video.uploader else None,
                uploader_info=normalise_url(info, site, field="video") if info else None,
                platform=(
                    (video.platform.relationship, tuple(dict.fromkeys(video.platform.platforms)))
                    if video.platform
                    else None
                ),
                live=video.live,
            )
        )
    return tuple(result)


def to_news(news: NewsModel | None) -> News | None:
    if news is None:
        return None
    return News(
        publication_name=news.publication.name,
        publication_language=news.publication.language,
        publication_date=_date(news.publication_date, "publication_date", "invalid_news") or "",
        title=news.title,
    )


def to_alternates(alternates: list[Alternate] | None, site: Site) -> tuple[tuple[str, str], ...]:
    """The declared language versions, each a page of this site, in a canonical order."""
    if not alternates:
        return ()
    return alternate_pairs([(a.hreflang, a.href) for a in alternates], site)


def _date(value: str | None, name: str, code: str = "invalid_video") -> str | None:
    if value is None:
        return None
    try:
        return normalise_w3c(value, name)
    except ValueError as exc:
        raise InvalidEvent(code, f"{name}: {exc}") from exc


__all__ = [
    "MAX_ALTERNATES",
    "MAX_IMAGES",
    "X_DEFAULT",
    "Alternate",
    "Image",
    "NewsModel",
    "VideoModel",
    "normalise_hreflang",
    "to_alternates",
    "to_images",
    "to_news",
    "to_videos",
]
