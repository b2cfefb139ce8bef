"""Strapi v4 and v5: ``entry.publish``, ``entry.unpublish``, ``entry.delete`` (and
``entry.create`` / ``entry.update`` of entries that are live, for content types without Draft &
Publish, or v4's edits of a published entry).

Strapi does not sign its webhooks. Its documentation ("Securing your webhooks",
docs.strapi.io/cms/backend-customization/webhooks) sends a shared token in a header, set per
webhook in the admin panel or for all in ``config/server`` ``webhooks.defaultHeaders``::

    Authorization: Bearer <secret>

The connector compares that header (``auth_header``, default ``Authorization``; ``Bearer ``
optional) with its secrets. No signature covers the body and there is no timestamp: TLS and
the versions (a replay is a duplicate or stale) are the protection.

The body: ``{"event", "createdAt", "model", "uid", "entry": {...}}``; ``entry`` has ``id`` (v4),
``documentId`` (v5), ``locale`` with i18n, ``publishedAt``, ``updatedAt`` and the fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sitemap_updater.connectors.common import (
    MISSING_SIGNATURE,
    MISSING_SLUG,
    MISSING_VERSION,
    UNMAPPABLE_PAYLOAD,
    Mapped,
    Refusal,
    Request,
    Verdict,
    check,
    entity_id,
    identifier,
    ignored,
    load_object,
    lookup,
    mapped,
    moment,
    page_url,
    publish,
    text,
    time_version,
    unpublish,
)
from sitemap_updater.connectors.config import Connector, ContentType
from sitemap_updater.domain.dates import w3c

LIVE = {"entry.publish", "entry.create", "entry.update"}
GONE = {"entry.unpublish", "entry.delete"}


def verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    value = request.headers.get(connector.auth_header)
    if value is None:
        return Verdict(MISSING_SIGNATURE)
    token = value.strip()
    if token[:7].lower() == "bearer ":
        token = token[7:].strip()
    return check(token, secrets, lambda s: s)


def map_request(request: Request, connector: Connector) -> Mapped:
    document = load_object(request.body)
    if isinstance(document, Refusal):
        return mapped([document])
    event = document.get("event", request.headers.get("x-strapi-event"))
    if event not in LIVE | GONE:
        return ignored(f"event {event!r} is not handled")
    entry = document.get("entry")
    if not isinstance(entry, dict):
        return mapped([Refusal(UNMAPPABLE_PAYLOAD, f"{event}: no entry object")])
    names = [n for n in (document.get("model"), document.get("uid")) if isinstance(n, str)]
    kind = next((connector.content_types[n] for n in names if n in connector.content_types), None)
    if kind is None:
        return ignored(f"content type {document.get('model')!r} is not a page of this connector")
    locale = text(lookup(entry, kind.locale_field))
    if kind.localised and locale is not None and kind.url_locale(locale) is None:
        return ignored(f"locale {locale!r} is not one the site serves")
    if event in GONE:
        return mapped([_event(document, entry, kind, gone=True)])
    if "publishedAt" in entry and entry["publishedAt"] is None:
        return ignored(f"{event} of a draft")
    return mapped([_event(document, entry, kind, gone=False)])


def _event(
    document: dict[str, Any], entry: dict[str, Any], kind: ContentType, gone: bool
) -> dict[str, Any] | Refusal:
    cms_id = identifier(entry.get("documentId", entry.get("id")))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the entry has no documentId or id")
    locale = text(lookup(entry, kind.locale_field)) if kind.localised else None
    url_locale = kind.url_locale(locale) if locale else None
    if kind.localised and url_locale is None:
        return Refusal(UNMAPPABLE_PAYLOAD, f"entry {cms_id}: no {kind.locale_field} for {{locale}}")
    # The event's own time: a delete carries the entry as it was, with its last updatedAt.
    when = moment(document.get("createdAt")) or moment(entry.get("updatedAt"))
    if when is None:
        return Refusal(MISSING_VERSION, f"entry {cms_id}: no createdAt or updatedAt")
    slug = text(lookup(entry, kind.slug_field))
    url = page_url(str(kind.url_template), slug, url_locale) if slug else None
    name = entity_id(cms_id, locale)
    if gone:
        return unpublish(time_version(when, True), name, url)
    if url is None:
        return Refusal(MISSING_SLUG, f"entry {cms_id}: no {kind.slug_field}")
    updated = moment(entry.get("updatedAt")) or when
    title = lookup(entry, kind.title_field)
    return publish(url, time_version(when, False), name, w3c(updated), title)
