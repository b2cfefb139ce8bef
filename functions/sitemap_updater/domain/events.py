"""The event contract (docs/EVENTS.md), decoded and validated once for every caller: a publish
or an unpublish of one page, possibly wrapped in an EventBridge event (``detail``) or an SNS
notification (``Message``). A *page record* (``build``, ``backfill``) is a publish whose
``type`` and ``version`` are optional.

msgspec decodes and checks the shape in one compiled pass; :func:`to_change` then applies the
value and URL rules. What msgspec cannot take as it is (a lone surrogate escape, a key given
twice, NaN) is decoded by the standard library into the same models, for the same rules and an
exact reason. ``events/schema.json`` is generated from the models (``sitemap-updater schema``).
"""

import inspect
import json
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct

from sitemap_updater.domain import contract
from sitemap_updater.domain.contract import CHANGEFREQS, JsonNumber, PageChange, exact_json
from sitemap_updater.domain.dates import RFC3339, W3C_DATETIME, normalise_w3c
from sitemap_updater.domain.entries import News, SitemapEntry, Video
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.feed import MAX_TITLE
from sitemap_updater.domain.sharding import GROUP_NAME
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, normalise_url

MAX_IMAGES = 1000  # Google: up to 1,000 images per page
MAX_VIDEOS = 100
MAX_ALTERNATES = 64
MAX_TAGS = 32  # the video schema
MAX_DURATION = 28_800  # seconds; the video schema and Google
MAX_TEXT = 2048
MAX_ID = 256  # characters: with its prefix, within DynamoDB's 2,048-byte partition key

Number = Annotated[Any, Meta(extra_json_schema={"type": "number"})]
Url = Annotated[
    str, Meta(min_length=1, extra_json_schema={"format": "uri", "maxLength": MAX_URL_LENGTH})
]
Text = Annotated[str, Meta(extra_json_schema={"minLength": 1})]
HrefLang = Annotated[str, Meta(examples=["de", "en-GB", "x-default"])]
W3cDate = Annotated[str, Meta(extra_json_schema={"pattern": W3C_DATETIME.pattern})]
EntityId = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_ID,
        pattern="^[^\\x00-\\x1f\\x7f-\\x9f]+$",
        description="The page's id in the CMS (plus its locale, e.g. '42:de'). A publish under "
        "another URL than the id's unpublishes the old one; an unpublish may give the id alone.",
    ),
]
Country = Annotated[str, Meta(extra_json_schema={"pattern": "^[A-Z]{2}$"})]


class Model(Struct, forbid_unknown_fields=True, frozen=True, gc=False, omit_defaults=True):
    """What every part of an event is. Encoded, it writes exactly the keys that hold a value,
    which is how ``decode`` finds a key written twice or as null. (``frozen`` is repeated
    on each: type checkers do not inherit it.)"""


class Image(Model, frozen=True):
    """``{"loc": "https://cdn.example.com/a.jpg"}``: an image on the page (any host)."""

    loc: Url


class Restriction(Model, frozen=True):
    relationship: Literal["allow", "deny"]
    countries: Annotated[tuple[Country, ...], Meta(min_length=1, max_length=250)]


class Platform(Model, frozen=True):
    relationship: Literal["allow", "deny"]
    platforms: Annotated[tuple[Literal["web", "mobile", "tv"], ...], Meta(min_length=1)]


class Uploader(Model, frozen=True):
    name: Text
    info: Url | None = None


class VideoEvent(Model, frozen=True):
    """Google's required fields (thumbnail_loc, title, description, content_loc or
    player_loc) and the optional ones it still reads."""

    thumbnail_loc: Url
    title: Text
    description: Text
    content_loc: Url | None = None
    player_loc: Url | None = None
    duration: Annotated[Number, Meta(description=f"seconds, 1 to {MAX_DURATION:,}")] = None
    expiration_date: W3cDate | None = None
    rating: Annotated[Number, Meta(description="0.0 to 5.0")] = None
    view_count: Number = None
    publication_date: W3cDate | None = None
    tags: Annotated[tuple[Text, ...], Meta(max_length=MAX_TAGS)] | None = None
    family_friendly: bool | None = None
    restriction: Restriction | None = None
    requires_subscription: bool | None = None
    uploader: Uploader | None = None
    platform: Platform | None = None
    live: bool | None = None


class Publication(Model, frozen=True):
    name: Text
    language: Annotated[str, Meta(examples=["en", "zh-cn"])]


class NewsEvent(Model, frozen=True):
    """Google News: the publication, when the article was first published, its title."""

    publication: Publication
    publication_date: W3cDate
    title: Text


class Alternate(Model, frozen=True):
    """A language version of this page: ``{"hreflang": "de", "href": "https://.../de/a"}``."""

    hreflang: HrefLang
    href: Url


Version = Annotated[
    Any,
    Meta(
        description="Grows with every change of the page: a CMS revision, epoch "
        "milliseconds, or an RFC 3339 time with its zone (read as epoch milliseconds x 10, "
        "plus 1 for an unpublish). Newer wins; an equal version is a duplicate.",
        extra_json_schema={
            "anyOf": [
                {"type": "number", "minimum": 0},
                {
                    "type": "string",
                    "format": "date-time",
                    "pattern": RFC3339.pattern.replace("(?P<zone>", "(?:"),  # ECMA-262's syntax
                },
            ]
        },
    ),
]


Lastmod = Annotated[
    W3cDate,
    Meta(
        description="W3C Datetime, as the CMS knows it. Omitted: no <lastmod>.",
        examples=["2026-11-20", "2026-11-20T09:30:00Z", "2026-11-20T10:30:00+01:00"],
    ),
]
Images = Annotated[tuple[Image, ...], Meta(description=f"At most {MAX_IMAGES:,}; any host.")]
Videos = Annotated[tuple[VideoEvent, ...], Meta(description=f"At most {MAX_VIDEOS}.")]
NewsBlock = Annotated[
    NewsEvent, Meta(description="Carried as <news:news> for two days after publication.")
]
OwnLang = Annotated[
    HrefLang, Meta(description="This page's own language (otherwise known from its alternates).")
]
Alternates = Annotated[
    tuple[Alternate, ...],
    Meta(
        description="Other language versions of this page, on this site "
        f"(at most {MAX_ALTERNATES})."
    ),
]
Group = Annotated[
    str,
    Meta(
        description="The group whose shards hold this page when it is first placed "
        "(otherwise the configured path rules decide).",
        extra_json_schema={"pattern": f"^{GROUP_NAME.pattern}$"},
    ),
]
Title = Annotated[
    Text,
    Meta(
        description=f"The page's title in the feed of recent changes (at most {MAX_TITLE} "
        "characters; otherwise its URL)."
    ),
]


class Publish(Model, frozen=True, tag_field="type", tag="publish"):
    """A page was published or updated: list it (again) with these fields."""

    url: Url
    version: Version = UNSET
    id: EntityId | None = None
    lastmod: Lastmod | None = None
    changefreq: Literal[CHANGEFREQS] | None = None  # type: ignore[valid-type]
    priority: Annotated[Number, Meta(extra_json_schema={"minimum": 0, "maximum": 1})] = None
    images: Images | None = None
    videos: Videos | None = None
    news: NewsBlock | None = None
    hreflang: OwnLang | None = None
    alternates: Alternates | None = None
    sitemap: Group | None = None
    title: Title | None = None


class Unpublish(Model, frozen=True, tag_field="type", tag="unpublish"):
    """A page was unpublished: removed, and remembered so that a late, older publish cannot
    bring it back."""

    url: Url | None = None
    version: Version = UNSET
    id: EntityId | None = None


Event = Publish | Unpublish
_EVENT = msgspec.json.Decoder(Event, float_hook=JsonNumber)
_RECORD = msgspec.json.Decoder(Publish, float_hook=JsonNumber)
_ENCODER = msgspec.json.Encoder(enc_hook=str)  # a JsonNumber: its text, quoted


class _Envelope(Struct):
    """What an SNS notification or an EventBridge event wraps an event in."""

    Type: msgspec.Raw = msgspec.Raw(b"")
    Message: msgspec.Raw = msgspec.Raw(b"")
    detail_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="detail-type")
    detail: msgspec.Raw = msgspec.Raw(b"")


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_ESCAPED_COLON = b"\\u003"  # \u003a or \u003A (or a digit: rarely escaped, read exactly too)


# --- decoding -----------------------------------------------------------------------------


# The fields of each model that hold models, and theirs (a test holds this to the models).
NESTED: dict[type[Any], dict[str, type[Any]]] = {
    Publish: {"images": Image, "videos": VideoEvent, "news": NewsEvent, "alternates": Alternate},
    VideoEvent: {"restriction": Restriction, "uploader": Uploader, "platform": Platform},
    NewsEvent: {"publication": Publication},
}


def _in_field_order(value: Any, model: type[Any]) -> Any:
    """A decoded document's objects with their keys in the models' order (``type`` first,
    unknown keys last), so that of several faults the same one is named whatever the order
    the keys were written in."""
    if isinstance(value, list):
        return [_in_field_order(item, model) for item in value]
    if not isinstance(value, dict):
        return value
    order = {name: n for n, name in enumerate(("type", *model.__struct_fields__))}
    nested = NESTED.get(model, {})
    return {
        key: _in_field_order(value[key], nested[key]) if key in nested else value[key]
        for key in sorted(value, key=lambda key: (order.get(key, len(order)), key))
    }


def _keys_written(data: bytes) -> int:
    """The keys a JSON text writes, ``type`` aside (msgspec's encoding always writes it; a
    record may not), plus the colons its strings hold, which the same strings hold alike in
    the text and in msgspec's encoding of what was decoded from it (a text that escapes a
    colon, ``\\u003a``, is read exactly). ``"type":`` is only ever a key: in a string its
    quotes are escaped; ``"type" :`` counts as another key, so such a text is read exactly."""
    return _colons(data) - data.count(b'"type":')


def _colons(data: bytes) -> int:
    # Deleted, not counted: ``replace`` finds them with memchr, ``count`` compares byte by
    # byte (twice the instructions on a text of page records).
    return len(data) - len(data.replace(b":", b""))


def _exactly(data: bytes, record: bool) -> Publish | Unpublish | InvalidEvent:
    """The standard library's reading of ``data``, or why not: for what msgspec refuses or
    may read otherwise (a lone surrogate, a key given twice), with the exact reason."""
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        return InvalidEvent(
            "not_utf8", f"not UTF-8 text: byte 0x{data[exc.start]:02X} at {exc.start}"
        )
    try:
        document = exact_json(text)
    except (ValueError, RecursionError) as exc:
        return InvalidEvent("malformed_json", f"not JSON: {exc}")
    try:
        return _convert(document, record)
    except InvalidEvent as refused:
        return refused


def _convert(document: Any, record: bool) -> Publish | Unpublish:
    """Python values as an event (``record``: a page record, its type publish if absent)."""
    if not isinstance(document, dict):
        raise InvalidEvent(
            "not_an_object", f"event must be a JSON object, got {_json_type(document)}"
        )
    publish = document.get("type", "publish") == "publish"
    kind = Publish if record and publish else Event
    try:
        return msgspec.convert(document, kind, strict=True)
    except (msgspec.ValidationError, UnicodeEncodeError):
        pass  # read again below, in the models' order, to name the fault
    try:
        event: Publish | Unpublish = msgspec.convert(
            _in_field_order(document, Publish if publish else Unpublish), kind, strict=True
        )
    except msgspec.ValidationError as exc:
        raise _translate(str(exc)) from None
    except UnicodeEncodeError:  # a key no UTF-8 holds: msgspec cannot compare it with ours
        raise InvalidEvent("unknown_field", "a field name holds a lone surrogate") from None
    return event


def decode(texts: Sequence[bytes], record: bool) -> list[Publish | Unpublish | InvalidEvent]:
    """Events (or, ``record``: page records) from their JSON texts, or why not, each.

    msgspec reads them when it reads them as the standard library would: a key given twice
    (msgspec keeps the last) or a null (read as absent) makes the keys written and the keys
    decoded differ (``_keys_written``). That is counted over all the texts at once, and text
    by text only when the totals differ; a text that differs, or that msgspec refuses, is read
    by the standard library (``_exactly``), which gives the reason. So is a text that gives
    ``type`` twice: it is left out of the count, so a second one would cancel out."""
    decoder = _RECORD if record else _EVENT
    events: list[Publish | Unpublish | InvalidEvent] = []
    quick: list[int] = []  # positions msgspec decoded, pending the key check
    for position, text in enumerate(texts):
        try:
            events.append(decoder.decode(text))
            quick.append(position)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            events.append(_exactly(text, record))
    # Encoded, an event writes each key that holds a value once: the texts wrote as many.
    every = len(quick) == len(texts)
    written = b"\n".join(texts if every else [texts[position] for position in quick])
    decoded = _ENCODER.encode(events if every else [events[position] for position in quick])
    escapes = b"\\" in written and _ESCAPED_COLON in written
    types = written.count(b'"type":')  # as _keys_written counts them, read once for both
    differ = escapes or _colons(written) - types != _keys_written(decoded)
    typed = types > 0
    if differ or typed:
        for position in quick:
            text = texts[position]
            if (typed and text.count(b'"type":') > 1) or (
                differ and _differs(text, events[position])
            ):
                events[position] = _exactly(text, record)
    return events


def _differs(text: bytes, event: Any) -> bool:
    return _ESCAPED_COLON in text or _keys_written(text) != _keys_written(_ENCODER.encode(event))


def _unwrapped(data: bytes) -> bytes:
    """The event an SNS notification or an EventBridge event holds (``data`` if neither)."""
    try:
        envelope = _ENVELOPE.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return data  # not an object, or not JSON: said by the event's decoding
    if bytes(envelope.Type) == b'"Notification"' and bytes(envelope.Message)[:1] == b'"':
        try:
            message: str = msgspec.json.decode(envelope.Message, type=str)
        except msgspec.DecodeError:  # a lone surrogate escape
            message = json.loads(bytes(envelope.Message))
        return _unwrapped(message.encode("utf-8", "surrogatepass"))
    if bytes(envelope.detail_type) and bytes(envelope.detail):
        return bytes(envelope.detail)
    return data


# --- reasons ------------------------------------------------------------------------------

# A field's refusal code: invalid_<field>, in the singular for a list.
_FIELD_CODES = {name: f"invalid_{name}" for name in Publish.__struct_fields__} | {
    "images": "invalid_image",
    "videos": "invalid_video",
    "alternates": "invalid_alternate",
}
_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_NAMED = re.compile(r"`([^`]*)`")


def _translate(error: str) -> InvalidEvent:
    """msgspec's message (``Expected `str`, got `int` - at `$.videos[0].title```) as the
    contract's reason."""
    parts = _AT.fullmatch(error)
    assert parts is not None  # noqa: S101 - the pattern matches any text
    message, path = parts["message"], (parts["path"] or "").lstrip(".")
    named = _NAMED.search(message)
    if message.startswith("Object contains unknown field"):
        name = f"{path}.{named[1]}" if path and named else (named[1] if named else "?")
        shown = name if name.isascii() and name.isprintable() else ascii(name)
        return InvalidEvent("unknown_field", f"{shown} is not part of the event contract")
    if message.startswith("Object missing required field") and named:
        if not path:
            return InvalidEvent("missing_field", f"{named[1]} is required")
        path = f"{path}.{named[1]}"
        message = "is required"
    if message.startswith("Expected `object`") and not path:
        return InvalidEvent("not_an_object", f"event must be a JSON object: {message}")
    field = re.split(r"[.\[]", path, maxsplit=1)[0]
    if field == "type":
        return InvalidEvent("unknown_type", "type must be 'publish' or 'unpublish'")
    if field == "changefreq":
        return InvalidEvent(
            "invalid_changefreq", f"changefreq must be one of {', '.join(CHANGEFREQS)}"
        )
    return InvalidEvent(_FIELD_CODES.get(field, "invalid_event"), f"{path or 'event'}: {message}")


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return next((name for kind, name in names.items() if isinstance(value, kind)), "a number")


# --- what an event becomes -----------------------------------------------------------------


def _rule(code: str, name: str, check: Callable[..., Any], *args: Any) -> Any:
    try:
        return check(*args)
    except ValueError as exc:
        message = str(exc)
        raise InvalidEvent(
            code, message if message.startswith(name) else f"{name}: {message}"
        ) from None


def to_change(
    event: Publish | Unpublish, site: Site, default_version: Decimal | None = None
) -> PageChange:
    """Apply the value and URL rules to a decoded event. ``default_version``: a page record's
    version when it gives none (None: events must give one)."""
    unpublish = type(event) is Unpublish
    if event.version is not UNSET:
        version = _rule(
            "invalid_version", "version", contract.normalise_version, event.version, unpublish
        )
    elif default_version is not None:
        version = default_version
    else:
        raise InvalidEvent("missing_field", "version is required")
    if isinstance(event, Unpublish):
        if event.url is None and event.id is None:
            raise InvalidEvent("missing_field", "an unpublish needs url, id or both")
        url = "" if event.url is None else normalise_url(event.url, site)
        return PageChange(url, version, None, entity=event.id)
    lastmod, priority, title = event.lastmod, event.priority, event.title
    if lastmod is not None:
        lastmod = _rule("invalid_lastmod", "lastmod", normalise_w3c, lastmod, "lastmod")
    if priority is not None:
        priority = _rule("invalid_priority", "priority", contract.normalise_priority, priority)
    url = normalise_url(event.url, site)
    if title is not None:
        title = _rule("invalid_title", "title", contract.text, title, MAX_TITLE)
    group = event.sitemap
    if group is not None and not GROUP_NAME.fullmatch(group):
        raise InvalidEvent(
            "invalid_sitemap",
            "sitemap must be a group name: 1-32 of a-z, 0-9 and '-', not starting or ending "
            "with '-'",
        )
    if not (event.images or event.videos or event.news or event.hreflang or event.alternates):
        entry = SitemapEntry(url, lastmod, event.changefreq, priority)
        return PageChange(url, version, entry, group=group, title=title, entity=event.id)
    entry = SitemapEntry(
        url,
        lastmod,
        event.changefreq,
        priority,
        images=_images(event.images, site) if event.images else (),
        videos=_videos(event.videos, url, site) if event.videos else (),
        news=_news(event.news) if event.news else None,
    )
    hreflang = event.hreflang
    if hreflang is not None:
        hreflang = _rule("invalid_hreflang", "hreflang", contract.normalise_hreflang, hreflang)
    alternates = _alternates(event.alternates, site) if event.alternates else ()
    return PageChange(url, version, entry, hreflang, alternates, group, title, entity=event.id)


def _images(images: tuple[Image, ...], site: Site) -> tuple[str, ...]:
    """A page's images (any host), normalised, each listed once, in the order given."""
    if len(images) > MAX_IMAGES:
        raise InvalidEvent("invalid_image", f"{len(images)} images, over Google's {MAX_IMAGES}")
    return tuple(dict.fromkeys(normalise_url(image.loc, site, "image", False) for image in images))


def _alternates(alternates: tuple[Alternate, ...], site: Site) -> tuple[tuple[str, str], ...]:
    """The declared language versions, each a page of this site, each language once, in a
    canonical order."""
    if len(alternates) > MAX_ALTERNATES:
        raise InvalidEvent(
            "invalid_alternate", f"{len(alternates)} alternates, over {MAX_ALTERNATES}"
        )
    pairs: dict[str, str] = {}
    for alternate in alternates:
        lang = _rule(
            "invalid_alternate", "hreflang", contract.normalise_hreflang, alternate.hreflang
        )
        href = normalise_url(alternate.href, site, "alternate")
        if pairs.setdefault(lang, href) != href:
            raise InvalidEvent(
                "invalid_alternate", f"hreflang {lang} is given two hrefs: {pairs[lang]}, {href}"
            )
    return tuple(sorted(pairs.items()))


def _optional(code: str, name: str, check: Callable[..., Any], value: Any, *args: Any) -> Any:
    return None if value is None else _rule(code, name, check, value, *args)


def _date(value: str | None, name: str, code: str) -> str | None:
    return _optional(code, name, normalise_w3c, value, name)  # type: ignore[no-any-return]


def _videos(videos: tuple[VideoEvent, ...], page: str, site: Site) -> tuple[Video, ...]:
    if len(videos) > MAX_VIDEOS:
        raise InvalidEvent("invalid_video", f"{len(videos)} videos, over {MAX_VIDEOS}")
    return tuple(_video(video, page, site) for video in videos)


def _video(video: VideoEvent, page: str, site: Site) -> Video:
    code = "invalid_video"
    if video.content_loc is None and video.player_loc is None:
        raise InvalidEvent(code, "a video needs content_loc or player_loc")
    content = normalise_url(video.content_loc, site, "video", False) if video.content_loc else None
    player = normalise_url(video.player_loc, site, "video", False) if video.player_loc else None
    if page in (content, player):
        raise InvalidEvent(code, "content_loc and player_loc must not be the page's own URL")
    uploader = video.uploader
    return Video(
        thumbnail_loc=normalise_url(video.thumbnail_loc, site, "video", False),
        title=_rule(code, "title", contract.text, video.title, 100),
        description=_rule(code, "description", contract.text, video.description, MAX_TEXT),
        content_loc=content,
        player_loc=player,
        duration=_optional(code, "duration", contract.whole, video.duration, 1, MAX_DURATION),
        expiration_date=_date(video.expiration_date, "expiration_date", code),
        rating=_optional(code, "rating", contract.rating, video.rating),
        view_count=_optional(code, "view_count", contract.whole, video.view_count, 0, 10**18),
        publication_date=_date(video.publication_date, "publication_date", code),
        tags=tuple(_rule(code, "tag", contract.text, tag, 256) for tag in video.tags or ()),
        family_friendly=video.family_friendly,
        restriction=_choice(video.restriction, video.restriction and video.restriction.countries),
        requires_subscription=video.requires_subscription,
        uploader=_rule(code, "uploader", contract.text, uploader.name, 255) if uploader else None,
        uploader_info=normalise_url(uploader.info, site, "video")
        if uploader and uploader.info
        else None,
        platform=_choice(video.platform, video.platform and video.platform.platforms),
        live=video.live,
    )


def _choice(value: Restriction | Platform | None, items: Any) -> tuple[str, tuple[str, ...]] | None:
    """(allow|deny, the countries or platforms, each once)."""
    if value is None:
        return None
    for country in items if isinstance(value, Restriction) else ():
        if not re.fullmatch("[A-Z]{2}", country):
            raise InvalidEvent(
                "invalid_video", f"restriction: {country!r} is not an ISO 3166 code in capitals"
            )
    return value.relationship, tuple(dict.fromkeys(items))


def _news(news: NewsEvent) -> News:
    code, publication = "invalid_news", news.publication
    return News(
        publication_name=_rule(code, "publication.name", contract.text, publication.name, MAX_TEXT),
        publication_language=_rule(
            code, "publication.language", contract.normalise_news_language, publication.language
        ),
        publication_date=_rule(
            code, "publication_date", normalise_w3c, news.publication_date, "publication_date"
        ),
        title=_rule(code, "title", contract.text, news.title, MAX_TEXT),
    )


# --- the callers' entry points ---------------------------------------------------------------


def parse_body(body: str | bytes, site: Site, max_bytes: int) -> PageChange:
    """An SQS message body as a PageChange, or InvalidEvent with the reason."""
    data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if len(data) > max_bytes:
        raise InvalidEvent(
            "body_too_large", f"body is {len(data)} bytes, over the {max_bytes} limit"
        )
    (event,) = decode([_unwrapped(data)], record=False)
    if isinstance(event, InvalidEvent):
        raise event
    return to_change(event, site)


def parse_event(document: Any, site: Site) -> PageChange:
    """An event already decoded into Python values (not wrapped in an envelope)."""
    return to_change(_convert(document, record=False), site)


def parse_record(
    record: bytes | dict[str, Any], site: Site, default_version: Decimal = Decimal(0)
) -> PageChange:
    """A page record (JSON text, or the values of a CSV row) as a PageChange."""
    (change,) = parse_records([record], site, default_version)
    if isinstance(change, InvalidEvent):
        raise change
    return change


def parse_records(
    records: Sequence[bytes | dict[str, Any]], site: Site, default_version: Decimal = Decimal(0)
) -> list[PageChange | InvalidEvent]:
    """Page records (JSON texts, or the values of CSV rows), each as its publish event with
    ``type`` publish and ``default_version`` when it gives none, or why not."""
    texts = iter(decode([r for r in records if isinstance(r, bytes)], record=True))
    changes: list[PageChange | InvalidEvent] = []
    for record in records:
        try:
            event = next(texts) if isinstance(record, bytes) else _convert(record, record=True)
            if isinstance(event, InvalidEvent):
                raise event
            changes.append(to_change(event, site, default_version))
        except InvalidEvent as refused:
            changes.append(refused)
    return changes


def event_json_schema() -> dict[str, Any]:
    """The JSON Schema of one event body, as written to ``events/schema.json``."""
    (schema,), definitions = msgspec.json.schema_components([Event], ref_template="#/$defs/{name}")
    for definition in definitions.values():
        if "description" in definition:  # the docstring: msgspec 0.23 dedents it, 0.22 not
            definition["description"] = inspect.cleandoc(definition["description"])
        for name, field in definition["properties"].items():
            if field.pop("default", UNSET) is None and "anyOf" not in field:  # null allowed
                definition["properties"][name] = {"anyOf": [field, {"type": "null"}]}
    for name, tag in (("Publish", "publish"), ("Unpublish", "unpublish")):
        definitions[name]["required"] = sorted({*definitions[name]["required"], "version"})
        definitions[name]["properties"]["type"] = {"const": tag}
    definitions["Unpublish"]["anyOf"] = [{"required": ["url"]}, {"required": ["id"]}]
    changefreq = definitions["Publish"]["properties"]["changefreq"]["anyOf"][0]
    changefreq.update(type="string", enum=list(CHANGEFREQS))  # in the protocol's order
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/sitemap-updater/sitemap-updater/events/schema.json",
        "title": "sitemap-updater page event",
        "description": (
            "One event per page. The ingest queue also accepts this object as the 'detail' of "
            "an EventBridge event, or as the JSON 'Message' of an SNS notification."
        ),
        "oneOf": schema["anyOf"],  # a body is exactly one of them, by its type
        "discriminator": schema["discriminator"],
        "$defs": definitions,
    }
