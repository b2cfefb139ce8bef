"""Contentful: ``ContentManagement.Entry.publish``, ``.unpublish``, ``.archive`` and ``.delete``
(the ``X-Contentful-Topic`` header).

Request verification, as ``verifyRequest`` and ``signRequest`` in Contentful's
node-apps-toolkit compute it (``src/requests/verify-request.ts``, ``sign-request.ts``,
``utils.ts``) and as the webhook docs describe it (Webhooks > Request verification)::

    x-contentful-signature      hex HMAC-SHA256(secret, canonical request)
    x-contentful-signed-headers the signed header names, comma-separated
    x-contentful-timestamp      milliseconds

    canonical request = METHOD \\n path \\n name:value;name:value (sorted by name) \\n raw body

Header names are lower-cased and values trimmed; the two ``x-contentful-signed-headers`` and
``x-contentful-timestamp`` are always among the signed ones. The path is the toolkit's
``getNormalizedEncodedURI``: the query escaped as ``querystring.escape``, then the whole
``encodeURI``-ed. The toolkit refuses a timestamp older than its TTL (30 s by default); the
connector allows ``tolerance_seconds`` either way, so that Contentful's retries still pass.

Payloads: an ``Entry`` (publish, archive) with ``sys`` and localised ``fields``
(``{"slug": {"en-US": "..."}}``), or a ``DeletedEntry`` (unpublish, delete) with ``sys`` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from sitemap_updater.connectors.common import (
    MALFORMED_SIGNATURE,
    MISSING_SIGNATURE,
    MISSING_SLUG,
    MISSING_VERSION,
    UNMAPPABLE_PAYLOAD,
    Mapped,
    Refusal,
    Request,
    Verdict,
    check,
    digits,
    entity_id,
    fresh,
    hmac_sha256,
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

SIGNATURE = "x-contentful-signature"
SIGNED_HEADERS = "x-contentful-signed-headers"
TIMESTAMP = "x-contentful-timestamp"
TOPIC = "x-contentful-topic"
GONE = {"unpublish": "deletedAt", "archive": "archivedAt", "delete": "deletedAt"}


def verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    headers = {name.strip(): value.strip() for name, value in request.headers.items()}
    signature, timestamp = headers.get(SIGNATURE), digits(headers.get(TIMESTAMP))
    if signature is None:
        return Verdict(MISSING_SIGNATURE)
    if timestamp is None or SIGNED_HEADERS not in headers:
        return Verdict(MALFORMED_SIGNATURE)
    try:
        canonical = canonical_request(request, headers, timestamp)
    except ValueError:  # a lone surrogate: encodeURI throws on it too
        return Verdict(MALFORMED_SIGNATURE)
    verdict = check(signature, secrets, lambda s: hmac_sha256(s, canonical).hex())
    if not verdict.accepted:
        return verdict
    return fresh(timestamp / 1000, request.now, connector.tolerance_seconds)


def canonical_request(request: Request, headers: dict[str, str], timestamp: int) -> bytes:
    # split(","), not trimmed: the toolkit's own pickHeaders misses " name" as well.
    names = set(headers[SIGNED_HEADERS].split(","))
    signed = {name: value for name, value in headers.items() if name in names}
    signed[TIMESTAMP] = str(timestamp)
    signed[SIGNED_HEADERS] = ",".join(sorted({*signed, SIGNED_HEADERS}))
    lines = ";".join(f"{name}:{signed[name]}" for name in sorted(signed))
    head = "\n".join((request.method, _encoded_path(request.path), lines, ""))
    return head.encode("utf-8") + request.body


def _encoded_path(path: str) -> str:
    pathname, *rest = path.split("?")
    search = quote(rest[0], safe="-_.!~*'()") if rest else ""  # querystring.escape
    uri = f"{pathname}?{search}" if search else pathname
    return quote(uri, safe=";,/?:@&=+$-_.!~*'()#")  # encodeURI


def map_request(request: Request, connector: Connector) -> Mapped:
    topic = request.headers.get(TOPIC, "")
    family, _, action = topic.rpartition(".")
    if family != "ContentManagement.Entry" or action not in {"publish", *GONE}:
        return ignored(f"topic {topic!r} is not handled")
    document = load_object(request.body)
    if isinstance(document, Refusal):
        return mapped([document])
    sys, fields = document.get("sys"), document.get("fields", {})
    if not isinstance(sys, dict) or text(sys.get("id")) is None or not isinstance(fields, dict):
        return mapped([Refusal(UNMAPPABLE_PAYLOAD, f"{topic}: no sys.id")])
    content_type = lookup(sys, "contentType.sys.id")
    kind = connector.content_types.get(content_type) if isinstance(content_type, str) else None
    if kind is None:
        return ignored(f"content type {content_type!r} is not a page of this connector")
    items = (
        _gone(sys, fields, kind, GONE[action]) if action in GONE else _published(sys, fields, kind)
    )
    return mapped(items) if items else ignored(f"entry {sys['id']}: in no locale this site serves")


def _locales(fields: dict[str, Any], kind: ContentType) -> list[str | None]:
    """The CMS locales to name pages by: each one served, or None for a template without one."""
    if not kind.localised:
        return [None]
    if not fields:  # a DeletedEntry: every locale the site serves
        return [cms for cms, _ in kind.locales]
    slugs = fields.get(kind.slug_field)
    present = list(slugs) if isinstance(slugs, dict) else []
    return [cms for cms in present if kind.url_locale(cms) is not None]


def _field(fields: dict[str, Any], name: str, locale: str | None, kind: ContentType) -> str | None:
    values = lookup(fields, name)
    if not isinstance(values, dict) or not values:
        return None
    if locale is None:  # no {locale}: the first served locale, else the first in the payload
        served = [cms for cms, _ in kind.locales if cms in values]
        locale = served[0] if served else next(iter(values))
    return text(values.get(locale))


def _url(fields: dict[str, Any], locale: str | None, kind: ContentType) -> str | None:
    slug = _field(fields, kind.slug_field, locale, kind)
    if slug is None:
        return None
    return page_url(str(kind.url_template), slug, kind.url_locale(locale) if locale else None)


def _published(
    sys: dict[str, Any], fields: dict[str, Any], kind: ContentType
) -> list[dict[str, Any] | Refusal]:
    cms_id, updated = str(sys["id"]), moment(sys.get("updatedAt"))
    if updated is None:
        return [Refusal(MISSING_VERSION, f"entry {cms_id}: no sys.updatedAt")]
    if not isinstance(lookup(fields, kind.slug_field), dict):
        return [Refusal(MISSING_SLUG, f"entry {cms_id}: no {kind.slug_field}")]
    events: list[dict[str, Any] | Refusal] = []
    for locale in _locales(fields, kind):
        url = _url(fields, locale, kind)
        if url is None:
            events.append(Refusal(MISSING_SLUG, f"entry {cms_id} ({locale}): no {kind.slug_field}"))
            continue
        name = entity_id(cms_id, locale)
        title = _field(fields, kind.title_field, locale, kind)
        events.append(publish(url, time_version(updated, False), name, w3c(updated), title))
    return events


def _gone(
    sys: dict[str, Any], fields: dict[str, Any], kind: ContentType, time_field: str
) -> list[dict[str, Any] | Refusal]:
    cms_id = str(sys["id"])
    when = moment(sys.get(time_field)) or moment(sys.get("updatedAt"))
    if when is None:
        return [Refusal(MISSING_VERSION, f"entry {cms_id}: no sys.{time_field}")]
    return [
        unpublish(time_version(when, True), entity_id(cms_id, locale), _url(fields, locale, kind))
        for locale in _locales(fields, kind)
    ]
