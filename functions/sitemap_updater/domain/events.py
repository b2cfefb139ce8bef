"""The event contract: what a CMS sends, and how a message body becomes a PageChange.

Two event types, one per page:

* ``{"type": "publish", "url": ..., "version": 7, "lastmod"?, "changefreq"?, "priority"?}``
  (publish also means update), and
* ``{"type": "unpublish", "url": ..., "version": 8}``.

``version`` is any non-negative number that grows with every change of the page. A body
may be the event itself, an EventBridge event whose ``detail`` is the event, or an SNS
notification whose ``Message`` is either of those. ``events/schema.json`` is generated
from the models here (``sitemap-updater schema``); a test fails when it drifts.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)

from sitemap_updater.domain.contract import (
    CHANGEFREQS,
    PageChange,
    normalise_changefreq,
    normalise_lastmod,
    normalise_priority,
    normalise_version,
    reject_json_constant,
    unique_json_keys,
)
from sitemap_updater.domain.dates import W3C_DATETIME
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.extensions import (
    MAX_ALTERNATES,
    MAX_IMAGES,
    Alternate,
    Image,
    NewsModel,
    VideoModel,
    normalise_hreflang,
    to_alternates,
    to_images,
    to_news,
    to_videos,
)
from sitemap_updater.domain.sharding import GROUP_NAME
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, normalise_url

Version = Annotated[
    Decimal,
    PlainValidator(normalise_version),
    WithJsonSchema(
        {
            "type": "number",
            "minimum": 0,
            "description": "Grows with every change of the page: a CMS revision or epoch "
            "milliseconds. Newer wins; an equal version is a duplicate.",
        }
    ),
]
Url = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="Absolute http(s) URL on the configured site's scheme and host.",
        json_schema_extra={"format": "uri"},
    ),
]
Lastmod = Annotated[
    str,
    PlainValidator(normalise_lastmod),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": W3C_DATETIME.pattern,
            "description": "W3C Datetime, as the CMS knows it. Omitted: no <lastmod>.",
            "examples": ["2026-11-20", "2026-11-20T09:30:00Z", "2026-11-20T10:30:00+01:00"],
        }
    ),
]
ChangeFreq = Annotated[
    str,
    PlainValidator(normalise_changefreq),
    WithJsonSchema({"type": "string", "enum": list(CHANGEFREQS)}),
]
Priority = Annotated[
    str,
    PlainValidator(normalise_priority),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1}),
]


def _group(value: Any) -> str:
    if not isinstance(value, str) or not GROUP_NAME.fullmatch(value):
        raise ValueError(
            "sitemap must be a group name: 1-32 of a-z, 0-9 and '-', not starting or ending "
            "with '-'"
        )
    return value


HrefLang = Annotated[
    str,
    PlainValidator(normalise_hreflang),
    WithJsonSchema({"type": "string", "examples": ["de", "en-GB", "x-default"]}),
]
SitemapGroup = Annotated[
    str,
    PlainValidator(_group),
    WithJsonSchema({"type": "string", "pattern": f"^{GROUP_NAME.pattern}$"}),
]


class PublishEvent(BaseModel):
    """A page was published or updated: list it (again) with these fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="publish")

    type: Literal["publish"]
    url: Url
    version: Version
    lastmod: Lastmod | None = None
    changefreq: ChangeFreq | None = None
    priority: Priority | None = None
    images: list[Image] | None = Field(None, description=f"At most {MAX_IMAGES}; any host.")
    videos: list[VideoModel] | None = None
    news: NewsModel | None = Field(
        None, description="Carried as <news:news> for two days after publication_date."
    )
    hreflang: HrefLang | None = Field(
        None, description="This page's own language (otherwise known from its alternates)."
    )
    alternates: list[Alternate] | None = Field(
        None,
        description=f"Other language versions of this page, on this site "
        f"(at most {MAX_ALTERNATES}).",
    )
    sitemap: SitemapGroup | None = Field(
        None,
        description="The group whose shards hold this page when it is first placed "
        "(otherwise the configured path rules decide).",
    )


class UnpublishEvent(BaseModel):
    """A page was unpublished: remove it, remembered so a late, older publish cannot revive it."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="unpublish")

    type: Literal["unpublish"]
    url: Url
    version: Version


Event = Annotated[PublishEvent | UnpublishEvent, Field(discriminator="type")]
EVENT_ADAPTER: TypeAdapter[PublishEvent | UnpublishEvent] = TypeAdapter(Event)


def event_json_schema() -> dict[str, Any]:
    """The JSON Schema of one event body, as written to ``events/schema.json``."""
    schema = EVENT_ADAPTER.json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/sitemap-updater/sitemap-updater/events/schema.json",
        "title": "sitemap-updater page event",
        "description": (
            "One event per page. The ingest queue also accepts this object as the 'detail' of "
            "an EventBridge event, or as the JSON 'Message' of an SNS notification."
        ),
        **schema,
    }


def _loads(text: str) -> Any:
    return json.loads(
        text,
        parse_float=Decimal,
        parse_constant=reject_json_constant,
        object_pairs_hook=unique_json_keys,
    )


def unwrap(document: Any) -> Any:
    """Strip an SNS notification and/or an EventBridge envelope, if present."""
    if (
        isinstance(document, dict)
        and document.get("Type") == "Notification"
        and isinstance(document.get("Message"), str)
    ):
        try:
            document = _loads(document["Message"])
        except (ValueError, RecursionError) as exc:
            raise InvalidEvent("malformed_json", f"SNS Message is not JSON: {exc}") from exc
    if isinstance(document, dict) and "detail-type" in document and "detail" in document:
        document = document["detail"]
    return document


_FIELD_CODES = {
    "url": "invalid_url",
    "version": "invalid_version",
    "lastmod": "invalid_lastmod",
    "changefreq": "invalid_changefreq",
    "priority": "invalid_priority",
    "images": "invalid_image",
    "videos": "invalid_video",
    "news": "invalid_news",
    "hreflang": "invalid_hreflang",
    "alternates": "invalid_alternate",
    "sitemap": "invalid_sitemap",
}


def _path(loc: list[str]) -> str:
    """``['videos', '0', 'title']`` -> ``videos[0].title``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if part.isdigit() else (f".{part}" if text else part)
    return text


def _translate(error: ValidationError) -> InvalidEvent:
    first = error.errors(include_url=False)[0]
    kind = first["type"]
    loc = [str(part) for part in first["loc"]]
    if loc and loc[0] in ("publish", "unpublish"):  # the discriminator's tag
        loc = loc[1:]
    field = loc[0] if loc else "type"
    path = _path(loc) if loc else "type"
    message = str(first["msg"]).removeprefix("Value error, ")
    if kind == "union_tag_not_found":
        return InvalidEvent("missing_field", "type is required")
    if kind == "union_tag_invalid":
        return InvalidEvent("unknown_type", "type must be 'publish' or 'unpublish'")
    if kind == "missing" and len(loc) > 1:
        return InvalidEvent(_FIELD_CODES.get(field, "invalid_event"), f"{path} is required")
    if kind == "missing":
        return InvalidEvent("missing_field", f"{field} is required")
    if kind == "string_unicode" and not loc:  # a field name that is not valid Unicode
        return InvalidEvent("unknown_field", "a field name holds a lone surrogate")
    if kind == "extra_forbidden":
        # Quote a hostile name (NUL, RLO, ...): the reason travels as an SQS message attribute,
        # which refuses control characters and lone surrogates.
        name = path if path.isascii() and path.isprintable() else ascii(path)
        return InvalidEvent("unknown_field", f"{name} is not part of the event contract")
    if field == "url" and kind == "string_unicode":
        return InvalidEvent("url_xml_illegal_character", "url holds a lone surrogate")
    if field == "url" and kind == "string_too_long":
        return InvalidEvent("url_too_long", f"url is longer than {MAX_URL_LENGTH} characters")
    detail = message if message.startswith(field) else f"{path}: {message}"
    return InvalidEvent(_FIELD_CODES.get(field, "invalid_event"), detail)


def parse_event(document: Any, site: Site) -> PageChange:
    """Validate one decoded event object (already unwrapped) against the contract and the site."""
    if not isinstance(document, dict):
        raise InvalidEvent(
            "not_an_object", f"event must be a JSON object, got {_json_type(document)}"
        )
    try:
        event = EVENT_ADAPTER.validate_python(document)
    except ValidationError as exc:
        raise _translate(exc) from exc
    url = normalise_url(event.url, site)
    if isinstance(event, UnpublishEvent):
        return PageChange(url=url, version=event.version, entry=None)
    entry = SitemapEntry(
        url=url,
        lastmod=event.lastmod,
        changefreq=event.changefreq,
        priority=event.priority,
        images=to_images(event.images, site),
        videos=to_videos(event.videos, url, site),
        news=to_news(event.news),
    )
    return PageChange(
        url=url,
        version=event.version,
        entry=entry,
        hreflang=event.hreflang,
        alternates=to_alternates(event.alternates, site),
        group=event.sitemap,
    )


def parse_body(body: str, site: Site, max_bytes: int) -> PageChange:
    """Turn an SQS message body into a PageChange, or raise InvalidEvent with the reason."""
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidEvent("body_too_large", f"body is {size} bytes, over the {max_bytes} limit")
    try:
        document = _loads(body)
    except (ValueError, RecursionError) as exc:
        raise InvalidEvent("malformed_json", f"body is not JSON: {exc}") from exc
    return parse_event(unwrap(document), site)


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    return "a number"


__all__ = [
    "CHANGEFREQS",
    "PageChange",
    "PublishEvent",
    "UnpublishEvent",
    "event_json_schema",
    "normalise_lastmod",
    "parse_body",
    "parse_event",
]
