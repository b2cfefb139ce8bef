"""Each CMS: how its requests are verified, and how its payloads become events of our contract.
docs/CONNECTORS.md gives each scheme's source, and what to set up in the CMS.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from sitemap_updater.connectors.common import (
    ACCEPTED,
    MALFORMED_JSON,
    MALFORMED_SIGNATURE,
    MISSING_SIGNATURE,
    MISSING_SLUG,
    MISSING_VERSION,
    UNKNOWN_KEY,
    UNMAPPABLE_PAYLOAD,
    WRONG_SOURCE,
    Mapped,
    Refusal,
    Request,
    Signed,
    Verdict,
    check,
    digits,
    entity_id,
    fresh,
    hmac_sha256,
    identifier,
    ignored,
    load_object,
    loads,
    lookup,
    mapped,
    pair,
    publish,
    refused,
    text,
    token,
    unpublish,
    url_for,
)
from sitemap_updater.connectors.config import Connector, ContentType
from sitemap_updater.domain.dates import moment

Item = dict[str, Any] | Refusal

# --- native: our own contract; the body is one event, a JSON array, or JSON Lines -------------
# X-Sitemap-Signature: t=<Unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>

NATIVE = Signed(
    "x-sitemap-signature", pair("v1", "t"), lambda t, body: (t, b".", body), per_second=1
)
NOT_AN_OBJECT = "not_an_object"  # the contract's own code


def native(request: Request, connector: Connector) -> Mapped:
    """Each event passed on as it is: the ingest validates it (and dead-letters it, with why)."""
    items = _documents(request.body)
    if not items:
        return ignored("no events in the body")
    return mapped(
        item
        if isinstance(item, Refusal | dict)
        else Refusal(NOT_AN_OBJECT, f"an event must be a JSON object, not {type(item).__name__}")
        for item in items
    )


def _documents(body: bytes) -> list[Any]:
    """One JSON value (an array gives its elements), else JSON Lines, a bad line refused alone."""
    try:
        document = loads(body)
    except ValueError as whole:
        items = [_line(line, n) for n, line in enumerate(body.splitlines(), 1) if line.strip()]
        if len(items) < 2 or not any(isinstance(item, dict) for item in items):
            return [Refusal(MALFORMED_JSON, f"the body is not JSON: {whole}")]  # not JSON Lines
        return items
    return list(document) if isinstance(document, list) else [document]


def _line(line: bytes, number: int) -> Any:
    try:
        return loads(line)
    except ValueError as exc:
        return Refusal(MALFORMED_JSON, f"line {number} is not JSON: {exc}")


# --- Ghost: post.* and page.* -----------------------------------------------------------------
# X-Ghost-Signature: sha256=<hex HMAC-SHA256(secret, raw body + t)>, t=<milliseconds>
# {"post": {"current": {...}, "previous": {the changed fields}}}; a deleted post has an empty
# current. Ghost 6 names the event in the body, older Ghosts do not: the statuses tell.

GHOST = Signed("x-ghost-signature", pair("sha256", "t"), lambda t, body: (body, t))
GHOST_EVENTS = {
    f"{kind}.{event}"
    for kind in ("post", "page")
    for event in ("published", "published.edited", "unpublished", "deleted")
}


def ghost(request: Request, connector: Connector) -> Mapped:
    if isinstance(document := load_object(request.body), Mapped):
        return document
    kind = next((k for k in ("post", "page") if k in document), None)
    event = document.get("event")
    if kind is None or not isinstance(document[kind], dict):
        return ignored(f"not a post or page webhook (event {event!r})")
    if event is not None and event not in GHOST_EVENTS:
        return ignored(f"event {event!r} is not handled")
    if kind not in connector.content_types:
        return ignored(f"{kind}s are not pages of this connector")
    current, previous = document[kind].get("current"), document[kind].get("previous")
    for name, value in (("current", current), ("previous", {} if previous is None else previous)):
        if not isinstance(value, dict):
            return refused(UNMAPPABLE_PAYLOAD, f"{kind}.{name} is not an object")
    previous = previous or {}
    if not current:  # deleted: what it was is in previous
        post, gone = previous, True
    elif current.get("status") == "published" or previous.get("status") == "published":
        post, gone = current, current.get("status") != "published"
    else:
        return ignored(f"not published (status {current.get('status')!r})")
    return mapped([_ghost_event(post, gone, connector.content_types[kind], request)])


def _ghost_event(post: dict[str, Any], gone: bool, kind: ContentType, request: Request) -> Item:
    """Gone: an unpublish by id (Ghost's URL for an unpublished post is its preview, not the
    page), versioned by when Ghost sent it if the post has no time."""
    cms_id = identifier(post.get("id"))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the post has no id")
    when = moment(post.get("updated_at")) or (GHOST.stamp(request) if gone else None)
    if when is None:
        return Refusal(MISSING_VERSION, f"post {cms_id}: no updated_at")
    if gone:
        return unpublish(when, cms_id)
    url = url_for(kind, post.get("slug"), sent=post.get("url"))
    if url is None:
        return Refusal(MISSING_SLUG, f"post {cms_id}: no url and no slug")
    return publish(url, when, cms_id, lookup(post, kind.title_field))


# --- WordPress, through the WP Webhooks plugin: post_create, _update, _trash, _delete ----------
# X-WP-Webhook-Signature: base64(HMAC-SHA256(secret, body)) up to 3.x (signature = "body"); from
# 4.x a shared token (signature = "static"). No timestamp: a replay is a duplicate or stale event.

WP_HANDLED = {"post_create", "post_update", "post_trash", "post_delete"}
WP_GONE = {"post_trash", "post_delete"}


def wp_verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    header = request.headers.get("x-wp-webhook-signature")
    if header is None or connector.signature == "static":
        return token(header, secrets)
    return check(
        header.strip(),
        secrets,
        lambda s: base64.b64encode(hmac_sha256(s, request.body)).decode("ascii"),
    )


def wp_webhooks(request: Request, connector: Connector) -> Mapped:
    trigger = request.headers.get("x-wp-webhook-name")
    if trigger is not None and trigger not in WP_HANDLED:
        return ignored(f"trigger {trigger!r} is not handled")
    if isinstance(document := load_object(request.body), Mapped):
        return document
    post = document.get("post")
    if not isinstance(post, dict):
        return ignored("not a post trigger (no post object)")
    post_type = post.get("post_type")
    if not isinstance(post_type, str) or post_type not in connector.content_types:
        return ignored(f"post type {post_type!r} is not a page of this connector")
    public = post.get("post_status") == "publish" and not post.get("post_password")
    gone = trigger in WP_GONE or not public
    return mapped([_wp_event(document, post, gone, connector.content_types[post_type])])


def _wp_event(
    document: dict[str, Any], post: dict[str, Any], gone: bool, kind: ContentType
) -> Item:
    cms_id = identifier(post.get("ID", document.get("post_id")))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the post has no ID")
    when = moment(post.get("post_modified_gmt"), naive_utc=True)
    if when is None:
        return Refusal(MISSING_VERSION, f"post {cms_id}: no post_modified_gmt")
    if post.get("post_status") == "publish":
        # A scheduled post goes live at post_date, its post_modified unchanged since it was
        # scheduled (and unpublished, as "future", at that time): the later of the two.
        when = max(when, moment(post.get("post_date_gmt"), naive_utc=True) or when)
    if gone:  # a trashed post's permalink is not its page: the registry knows the page by id
        return unpublish(when, cms_id)
    url = url_for(kind, post.get("post_name"), sent=document.get("post_permalink"))
    if url is None:
        return Refusal(MISSING_SLUG, f"post {cms_id}: no permalink and no post_name")
    return publish(url, when, cms_id, lookup(post, kind.title_field))


# --- Strapi v4 and v5: entry.publish, .unpublish, .delete (and .create, .update when live) ----
# No signature: a shared token, "Authorization: Bearer <secret>" (auth_header; "Bearer "
# optional). No timestamp: TLS and the versions (a replay is a duplicate or stale) protect it.

STRAPI_LIVE = {"entry.publish", "entry.create", "entry.update"}
STRAPI_GONE = {"entry.unpublish", "entry.delete"}


def strapi_verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    value = request.headers.get(connector.auth_header)
    if value is not None and value.strip()[:7].lower() == "bearer ":
        value = value.strip()[7:]
    return token(value, secrets)


def strapi(request: Request, connector: Connector) -> Mapped:
    if isinstance(document := load_object(request.body), Mapped):
        return document
    event = document.get("event", request.headers.get("x-strapi-event"))
    if event not in STRAPI_LIVE | STRAPI_GONE:
        return ignored(f"event {event!r} is not handled")
    entry = document.get("entry")
    if not isinstance(entry, dict):
        return refused(UNMAPPABLE_PAYLOAD, f"{event}: no entry object")
    names = [n for n in (document.get("model"), document.get("uid")) if isinstance(n, str)]
    kind = next((connector.content_types[n] for n in names if n in connector.content_types), None)
    if kind is None:
        return ignored(f"content type {document.get('model')!r} is not a page of this connector")
    locale = text(lookup(entry, kind.locale_field))
    if locale is not None and kind.url_locale(locale) is None:
        return ignored(f"locale {locale!r} is not one the site serves")
    gone = event in STRAPI_GONE
    if not gone and "publishedAt" in entry and entry["publishedAt"] is None:
        return ignored(f"{event} of a draft")
    return mapped([_strapi_event(document, entry, kind, gone)])


def _strapi_event(
    document: dict[str, Any], entry: dict[str, Any], kind: ContentType, gone: bool
) -> Item:
    cms_id = identifier(entry.get("documentId", entry.get("id")))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the entry has no documentId or id")
    # v5's documentId is shared by an entry's locales: the locale names the page too.
    locale = text(lookup(entry, kind.locale_field))  # one the site serves: see strapi()
    if kind.localised and locale is None:
        return Refusal(UNMAPPABLE_PAYLOAD, f"entry {cms_id}: no {kind.locale_field} for {{locale}}")
    # The event's own time: a delete carries the entry as it was, with its last updatedAt.
    when = moment(document.get("createdAt")) or moment(entry.get("updatedAt"))
    if when is None:
        return Refusal(MISSING_VERSION, f"entry {cms_id}: no createdAt or updatedAt")
    url = url_for(kind, lookup(entry, kind.slug_field), locale)
    name = entity_id(cms_id, locale)
    if gone:
        return unpublish(when, name, url)
    if url is None:
        return Refusal(MISSING_SLUG, f"entry {cms_id}: no {kind.slug_field}")
    title = lookup(entry, kind.title_field)
    return publish(url, when, name, title, updated=moment(entry.get("updatedAt")))


# --- Contentful: X-Contentful-Topic ContentManagement.Entry.publish, unpublish, archive, delete
# As verifyRequest and signRequest in Contentful's node-apps-toolkit compute it (the canonical
# request: docs/CONNECTORS.md). The path is getNormalizedEncodedURI's: the query
# querystring.escape'd, the whole encodeURI'd. The toolkit allows 30 s; tolerance_seconds either
# way lets retries pass. An Entry (publish, archive) has sys and localised fields
# ({"slug": {"en-US": "..."}}); a DeletedEntry (unpublish, delete) has sys only.

CF_SIGNATURE = "x-contentful-signature"
CF_SIGNED_HEADERS = "x-contentful-signed-headers"
CF_TIMESTAMP = "x-contentful-timestamp"
CF_GONE = {"unpublish": "deletedAt", "archive": "archivedAt", "delete": "deletedAt"}
# Locale-based publishing: sys.fieldStatus["*"] holds each locale's own state ("changed" is
# published, with edits not yet published); a site whose delivery follows it (the connector's
# locale_based_publishing) does not serve a locale in neither.
CF_LIVE = {"published", "changed"}


def contentful_verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    headers = {name.strip(): value.strip() for name, value in request.headers.items()}
    signature, timestamp = headers.get(CF_SIGNATURE), digits(headers.get(CF_TIMESTAMP))
    if signature is None:
        return Verdict(MISSING_SIGNATURE)
    if timestamp is None or CF_SIGNED_HEADERS not in headers:
        return Verdict(MALFORMED_SIGNATURE)
    try:
        canonical = canonical_request(request, headers, timestamp)
    except ValueError:  # a lone surrogate: encodeURI throws on it too
        return Verdict(MALFORMED_SIGNATURE)
    verdict = check(signature, secrets, lambda s: hmac_sha256(s, canonical).hex())
    return fresh(verdict, timestamp / 1000, request, connector)


def canonical_request(request: Request, headers: dict[str, str], timestamp: int) -> bytes:
    # split(","), not trimmed: the toolkit's own pickHeaders misses " name" as well.
    names = set(headers[CF_SIGNED_HEADERS].split(","))
    signed = {name: value for name, value in headers.items() if name in names}
    signed[CF_TIMESTAMP] = str(timestamp)
    signed[CF_SIGNED_HEADERS] = ",".join(sorted({*signed, CF_SIGNED_HEADERS}))
    lines = ";".join(f"{name}:{signed[name]}" for name in sorted(signed))
    head = "\n".join((request.method, encoded_path(request.path), lines, ""))
    return head.encode("utf-8") + request.body


def encoded_path(path: str) -> str:
    pathname, *rest = path.split("?")
    search = quote(rest[0], safe="-_.!~*'()") if rest else ""  # querystring.escape
    uri = f"{pathname}?{search}" if search else pathname
    return quote(uri, safe=";,/?:@&=+$-_.!~*'()#")  # encodeURI


def contentful(request: Request, connector: Connector) -> Mapped:
    topic = request.headers.get("x-contentful-topic", "")
    family, _, action = topic.rpartition(".")
    if family != "ContentManagement.Entry" or action not in {"publish", *CF_GONE}:
        return ignored(f"topic {topic!r} is not handled")
    if isinstance(document := load_object(request.body), Mapped):
        return document
    sys, fields = document.get("sys"), document.get("fields", {})
    if not isinstance(sys, dict) or text(sys.get("id")) is None:
        return refused(UNMAPPABLE_PAYLOAD, f"{topic}: no sys.id")
    if not isinstance(fields, dict):
        return refused(UNMAPPABLE_PAYLOAD, f"{topic}: fields is not an object")
    content_type = lookup(sys, "contentType.sys.id")
    kind = connector.content_types.get(content_type) if isinstance(content_type, str) else None
    if kind is None:
        return ignored(f"content type {content_type!r} is not a page of this connector")
    items = _cf_events(sys, fields, kind, action, connector.locale_based_publishing)
    return mapped(items) if items else ignored(f"entry {sys['id']}: in no locale this site serves")


def _cf_locales(fields: dict[str, Any], kind: ContentType) -> list[str | None]:
    """The CMS locales to name pages by: each one served that has a slug, or None for a
    template without one. A locale without its own takes the first listed locale's: a field
    that is not localised holds only the default locale's value, which Contentful serves in
    every locale (as it does a localised one's, through the default fallback)."""
    if not kind.localised:
        return [None]
    served = [cms for cms, _ in kind.locales]
    slugs = fields.get(kind.slug_field)
    if not fields or (isinstance(slugs, dict) and text(slugs.get(served[0]))):
        return list(served)  # (no fields: a DeletedEntry, every locale the site serves)
    return [cms for cms in served if isinstance(slugs, dict) and text(slugs.get(cms))]


def _cf_field(fields: dict[str, Any], name: str, locale: str | None, kind: ContentType) -> Any:
    values = lookup(fields, name)
    if not isinstance(values, dict) or not values:
        return None
    if locale is None:  # no {locale}: the first served locale, else the first in the payload
        locale = next((cms for cms, _ in kind.locales if cms in values), next(iter(values)))
    default = kind.locales[0][0] if kind.locales else locale  # see _cf_locales
    return text(values.get(locale)) or text(values.get(default))


def _cf_url(fields: dict[str, Any], locale: str | None, kind: ContentType) -> str | None:
    return url_for(kind, _cf_field(fields, kind.slug_field, locale, kind), locale)


def _cf_events(
    sys: dict[str, Any], fields: dict[str, Any], kind: ContentType, action: str, by_locale: bool
) -> list[Item]:
    cms_id, time_field = str(sys["id"]), CF_GONE.get(action, "updatedAt")
    when = moment(sys.get(time_field)) or moment(sys.get("updatedAt"))
    if when is None:
        return [Refusal(MISSING_VERSION, f"entry {cms_id}: no sys.{time_field}")]
    if action in CF_GONE:
        return [
            unpublish(when, entity_id(cms_id, locale), _cf_url(fields, locale, kind))
            for locale in _cf_locales(fields, kind)
        ]
    if not isinstance(lookup(fields, kind.slug_field), dict):
        return [Refusal(MISSING_SLUG, f"entry {cms_id}: no {kind.slug_field}")]
    events: list[Item] = []
    present = _cf_locales(fields, kind)
    if by_locale and kind.localised and isinstance(states := lookup(sys, "fieldStatus.*"), dict):
        present = [cms for cms in present if states.get(cms) in CF_LIVE]
    for locale in present:
        url = _cf_url(fields, locale, kind)
        if url is None:
            events.append(Refusal(MISSING_SLUG, f"entry {cms_id} ({locale}): no {kind.slug_field}"))
            continue
        title = _cf_field(fields, kind.title_field, locale, kind)
        events.append(publish(url, when, entity_id(cms_id, locale), title))
    # Contentful leaves out a locale whose slug was removed: its page is gone, by id (as is a
    # locale it says is not published).
    if kind.localised:
        gone = [cms for cms, _ in kind.locales if cms not in present]
        events += [unpublish(when, entity_id(cms_id, cms)) for cms in gone]
    return events


# --- Sanity: GROQ-projected document webhooks, on create, update and delete --------------------
# sanity-webhook-signature: t=<ms>,v1=<base64url HMAC-SHA256(secret, "<t>.<raw body>")>, as
# sanity-io/webhook-toolkit's signature.ts; the toolkit checks no age, tolerance_seconds does.
# "operation" and _id fall back to headers (sanity-operation, sanity-document-id) only when
# the body lacks them: the body is signed, headers are not. Each language is a document: _id
# names the page.

_SANITY = re.compile(r"t=([0-9]{1,20})[, ]+v1=([^, ]+)", re.ASCII)  # the toolkit's, anchored
_SANITY_OTHER = re.compile(r"t=[0-9]+[, ]+v[0-9]+=", re.ASCII)


def _sanity_header(header: str) -> tuple[str, str] | str:
    match = _SANITY.fullmatch(header.strip())
    if match is None:
        return UNKNOWN_KEY if _SANITY_OTHER.match(header.strip()) else MALFORMED_SIGNATURE
    return match.group(1), match.group(2)


SANITY = Signed(
    "sanity-webhook-signature",
    _sanity_header,
    lambda t, body: (t, b".", body),
    lambda mac: base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii"),
)


def sanity(request: Request, connector: Connector) -> Mapped:
    if isinstance(document := load_object(request.body), Mapped):
        return document
    operation = document.get("operation") or request.headers.get("sanity-operation")
    if operation not in {"create", "update", "delete"}:
        return ignored(f"operation {operation!r} is not handled")
    cms_id = text(document.get("_id")) or text(request.headers.get("sanity-document-id"))
    if cms_id is None:
        return refused(UNMAPPABLE_PAYLOAD, "no _id (project it: {_id, ...})")
    if cms_id.startswith(("drafts.", "versions.")):
        return ignored(f"{cms_id} is a draft")
    doc_type = document.get("_type")
    kind = connector.content_types.get(doc_type) if isinstance(doc_type, str) else None
    if kind is None and not (operation == "delete" and doc_type is None):
        return ignored(f"document type {doc_type!r} is not a page of this connector")
    language = text(lookup(document, kind.locale_field)) if kind is not None else None
    if kind is not None and kind.localised and language and kind.url_locale(language) is None:
        return ignored(f"language {language!r} is not one the site serves")
    return mapped([_sanity_event(document, cms_id, operation == "delete", kind, request)])


def _sanity_event(
    document: dict[str, Any], cms_id: str, gone: bool, kind: ContentType | None, request: Request
) -> Item:
    when = moment(document.get("_updatedAt")) or SANITY.stamp(request)  # else when it was sent
    if when is None:
        return Refusal(MISSING_VERSION, f"{cms_id}: no _updatedAt (project it)")
    if kind is None:  # a delete that names no type (see sanity): by id
        return unpublish(when, cms_id)
    language = text(lookup(document, kind.locale_field))  # one the site serves: see sanity()
    slug = lookup(document, kind.slug_field) if language or not kind.localised else None
    url = url_for(kind, slug, language)
    if gone:
        return unpublish(when, cms_id, url)
    if url is None:
        return Refusal(MISSING_SLUG, f"{cms_id}: no slug, or no language for {{locale}}")
    return publish(url, when, cms_id, lookup(document, kind.title_field))


# --- Shopify products, through its Amazon EventBridge partner event source ---------------------
# No HTTP, no signature: only Shopify can put events on its partner source, and the rule is
# ours. detail.payload is the webhook body (a deleted product: {"id": ...} only), and
# detail.metadata its headers (X-Shopify-Topic, X-Shopify-Triggered-At, ...).

SHOPIFY_LIVE = {"products/create", "products/update"}
SHOPIFY_GONE = "products/delete"


def verify_shopify(event: Mapping[str, Any], connector: Connector) -> Verdict:
    source = event.get("source")
    partner = isinstance(source, str) and source.startswith("aws.partner/shopify.com/")
    if event.get("detail-type") != "shopifyWebhook" or not partner:
        return Verdict(WRONG_SOURCE)
    return ACCEPTED if connector.event_source in (None, source) else Verdict(WRONG_SOURCE)


def shopify(event: Mapping[str, Any], connector: Connector) -> Mapped:
    topic = _shopify_header(event, "topic")
    if topic not in SHOPIFY_LIVE and topic != SHOPIFY_GONE:
        return ignored(f"topic {topic!r} is not handled")
    product = lookup(event, "detail.payload")
    if not isinstance(product, dict) or identifier(product.get("id")) is None:
        return refused(UNMAPPABLE_PAYLOAD, f"{topic}: no product id")
    kind = connector.content_types.get("product")
    if kind is None:
        return ignored("products are not pages of this connector")
    if topic == SHOPIFY_GONE:
        return mapped([_shopify_deleted(event, product)])
    return mapped([_shopify_changed(product, kind)])


def _shopify_header(event: Mapping[str, Any], name: str) -> Any:
    """A header of detail.metadata, in any case, ``X-Shopify-Topic`` or ``shopify-topic`` (as
    Shopify's newer deliveries name them)."""
    metadata = lookup(event, "detail.metadata")
    wanted = f"shopify-{name}"
    for key, value in metadata.items() if isinstance(metadata, dict) else ():
        if isinstance(key, str) and key.lower().removeprefix("x-") == wanted:
            return value
    return None


def _shopify_changed(product: dict[str, Any], kind: ContentType) -> Item:
    cms_id, updated = str(identifier(product["id"])), moment(product.get("updated_at"))
    if updated is None:
        return Refusal(MISSING_VERSION, f"product {cms_id}: no updated_at")
    url = url_for(kind, lookup(product, kind.slug_field))
    if "published_at" not in product:  # left out by the subscription's includeFields
        return Refusal(UNMAPPABLE_PAYLOAD, f"product {cms_id}: no published_at (null or a time)")
    live = product.get("status", "active") == "active" and product["published_at"] is not None
    if not live:  # a draft, archived, or not on the online store
        return unpublish(updated, cms_id, url)
    if url is None:
        return Refusal(MISSING_SLUG, f"product {cms_id}: no {kind.slug_field}")
    return publish(url, updated, cms_id, lookup(product, kind.title_field))


def _shopify_deleted(event: Mapping[str, Any], product: dict[str, Any]) -> Item:
    """A deleted product is only its id: the time is when Shopify triggered the webhook."""
    cms_id = str(identifier(product["id"]))
    when = moment(_shopify_header(event, "triggered-at")) or moment(event.get("time"))
    if when is None:
        return Refusal(MISSING_VERSION, f"product {cms_id}: no X-Shopify-Triggered-At or time")
    return unpublish(when, cms_id)


Verify = Callable[[Request, Sequence[str], Connector], Verdict]
Map = Callable[[Request, Connector], Mapped]
HTTP: dict[str, tuple[Verify, Map]] = {
    "native": (NATIVE.verify, native),
    "wp-webhooks": (wp_verify, wp_webhooks),
    "ghost": (GHOST.verify, ghost),
    "strapi": (strapi_verify, strapi),
    "contentful": (contentful_verify, contentful),
    "sanity": (SANITY.verify, sanity),
}
