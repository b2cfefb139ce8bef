"""Sanity: GROQ-powered document webhooks, on create, update and delete.

Signature, as Sanity's webhook toolkit computes it (``src/signature.ts`` in
sanity-io/webhook-toolkit, ``@sanity/webhook``)::

    sanity-webhook-signature: t=<milliseconds>,v1=<base64url HMAC-SHA256(secret, "<t>.<raw body>")>

The toolkit itself checks no age; the connector allows ``tolerance_seconds`` either way.

The body is the webhook's GROQ projection, so docs/CONNECTORS.md gives the one to use::

    {_id, _type, _updatedAt, "slug": slug.current, title, language,
     "operation": delta::operation()}

``operation`` falls back to the ``sanity-operation`` header and ``_id`` to
``sanity-document-id`` (headers are not signed, the body is: the body wins). Drafts
(``drafts.``) and release versions (``versions.``) are not pages. Sanity keeps each language
in a document of its own, so ``_id`` alone names the page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sitemap_updater.connectors.common import (
    MALFORMED_SIGNATURE,
    MISSING_SIGNATURE,
    MISSING_SLUG,
    MISSING_VERSION,
    UNKNOWN_KEY,
    UNMAPPABLE_PAYLOAD,
    Mapped,
    Refusal,
    Request,
    Verdict,
    base64url,
    check,
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
    version,
)
from sitemap_updater.connectors.config import Connector, ContentType
from sitemap_updater.domain.dates import w3c

HEADER = "sanity-webhook-signature"
_SIGNATURE = re.compile(r"t=([0-9]{1,20})[, ]+v1=([^, ]+)", re.ASCII)  # the toolkit's, anchored
_OTHER_VERSION = re.compile(r"t=[0-9]+[, ]+v[0-9]+=", re.ASCII)


def verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    header = request.headers.get(HEADER)
    if header is None:
        return Verdict(MISSING_SIGNATURE)
    match = _SIGNATURE.fullmatch(header.strip())
    if match is None:
        return Verdict(UNKNOWN_KEY if _OTHER_VERSION.match(header.strip()) else MALFORMED_SIGNATURE)
    stamp, signature = match.groups()
    verdict = check(
        signature, secrets, lambda s: base64url(hmac_sha256(s, f"{stamp}.".encode(), request.body))
    )
    if not verdict.accepted:
        return verdict
    return fresh(int(stamp) / 1000, request.now, connector.tolerance_seconds)


def map_request(request: Request, connector: Connector) -> Mapped:
    document = load_object(request.body)
    if isinstance(document, Refusal):
        return mapped([document])
    operation = document.get("operation") or request.headers.get("sanity-operation")
    if operation not in {"create", "update", "delete"}:
        return ignored(f"operation {operation!r} is not handled")
    cms_id = text(document.get("_id")) or text(request.headers.get("sanity-document-id"))
    if cms_id is None:
        return mapped([Refusal(UNMAPPABLE_PAYLOAD, "no _id (project it: {_id, ...})")])
    if cms_id.startswith(("drafts.", "versions.")):
        return ignored(f"{cms_id} is a draft")
    doc_type = document.get("_type")
    kind = connector.content_types.get(doc_type) if isinstance(doc_type, str) else None
    if kind is None and not (operation == "delete" and doc_type is None):
        return ignored(f"document type {doc_type!r} is not a page of this connector")
    language = text(lookup(document, kind.locale_field)) if kind is not None else None
    if kind is not None and kind.localised and language and kind.url_locale(language) is None:
        return ignored(f"language {language!r} is not one the site serves")
    return mapped([_event(document, cms_id, operation == "delete", kind, request)])


def _event(
    document: dict[str, Any], cms_id: str, gone: bool, kind: ContentType | None, request: Request
) -> dict[str, Any] | Refusal:
    updated = moment(document.get("_updatedAt"))
    stamp = _SIGNATURE.fullmatch(request.headers.get(HEADER, "").strip())
    if updated is not None:
        change = time_version(updated, gone)
    elif stamp is not None:  # when Sanity signed it: its clock, not ours
        change = version(int(stamp.group(1)), gone)
    else:
        return Refusal(MISSING_VERSION, f"{cms_id}: no _updatedAt (project it)")
    url = _url(document, kind) if kind is not None else None
    if gone:
        return unpublish(change, cms_id, url)
    if kind is None or url is None:
        return Refusal(MISSING_SLUG, f"{cms_id}: no slug, or no language for {{locale}}")
    lastmod = w3c(updated) if updated is not None else None
    return publish(url, change, cms_id, lastmod, lookup(document, kind.title_field))


def _url(document: dict[str, Any], kind: ContentType) -> str | None:
    slug = text(lookup(document, kind.slug_field))
    locale = text(lookup(document, kind.locale_field)) if kind.localised else None
    url_locale = kind.url_locale(locale) if locale else None
    if slug is None or (kind.localised and url_locale is None):
        return None
    return page_url(str(kind.url_template), slug, url_locale)
