"""Ghost: the ``post.*`` and ``page.*`` webhooks.

Signature, as Ghost's webhook trigger computes it (``ghost/core/core/server/services/webhooks/
webhook-trigger.js``, TryGhost/Ghost)::

    X-Ghost-Signature: sha256=<hex HMAC-SHA256(secret, raw body + t)>, t=<milliseconds>

The payload (``serialize.js``) is ``{"post": {"current": {...}, "previous": {...}}}``, where
``previous`` holds only the changed fields; a deleted post has an empty ``current``. Ghost 6
also names the event in the body (``"event": "post.published"``, TryGhost/Ghost#24499); older
Ghosts do not, so the change is read from the statuses: the mapping works for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    fresh,
    hmac_sha256,
    identifier,
    ignored,
    load_object,
    lookup,
    mapped,
    moment,
    page_url,
    parameters,
    publish,
    text,
    time_version,
    unpublish,
    version,
)
from sitemap_updater.connectors.config import Connector, ContentType
from sitemap_updater.domain.dates import w3c

HEADER = "x-ghost-signature"
HANDLED = {
    f"{kind}.{event}"
    for kind in ("post", "page")
    for event in ("published", "published.edited", "unpublished", "deleted")
}


def verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    header = request.headers.get(HEADER)
    if header is None:
        return Verdict(MISSING_SIGNATURE)
    given = parameters(header)
    signature, signed_at = given.get("sha256"), digits(given.get("t"))
    if signature is None or signed_at is None:
        return Verdict(MALFORMED_SIGNATURE)
    stamp = str(given["t"]).encode("ascii")
    verdict = check(signature, secrets, lambda s: hmac_sha256(s, request.body, stamp).hex())
    if not verdict.accepted:
        return verdict
    return fresh(signed_at / 1000, request.now, connector.tolerance_seconds)


def map_request(request: Request, connector: Connector) -> Mapped:
    document = load_object(request.body)
    if isinstance(document, Refusal):
        return mapped([document])
    kind = next((k for k in ("post", "page") if k in document), None)
    event = document.get("event")
    if kind is None or not isinstance(document[kind], dict):
        return ignored(f"not a post or page webhook (event {event!r})")
    if event is not None and event not in HANDLED:
        return ignored(f"event {event!r} is not handled")
    if kind not in connector.content_types:
        return ignored(f"{kind}s are not pages of this connector")
    current, previous = document[kind].get("current"), document[kind].get("previous")
    if not isinstance(current, dict) or not isinstance(previous, dict | None):
        return mapped([Refusal(UNMAPPABLE_PAYLOAD, f"{kind}.current is not an object")])
    return _change(current, previous or {}, connector.content_types[kind], request)


def _change(
    current: dict[str, Any], previous: dict[str, Any], kind: ContentType, request: Request
) -> Mapped:
    if not current:  # deleted: what it was is in previous
        return mapped([_gone(previous, request)])
    if current.get("status") == "published":
        return mapped([_published(current, kind)])
    if previous.get("status") == "published":
        return mapped([_gone(current, request)])
    return ignored(f"not published (status {current.get('status')!r})")


def _published(post: dict[str, Any], kind: ContentType) -> dict[str, Any] | Refusal:
    cms_id, updated = identifier(post.get("id")), moment(post.get("updated_at"))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the post has no id")
    if updated is None:
        return Refusal(MISSING_VERSION, f"post {cms_id}: no updated_at")
    slug = text(post.get("slug"))
    if kind.url_template is not None:  # a headless Ghost: the site's URL, not Ghost's
        url = page_url(kind.url_template, slug) if slug else None
    else:
        url = text(post.get("url"))
    if url is None:
        return Refusal(MISSING_SLUG, f"post {cms_id}: no url and no slug")
    title = lookup(post, kind.title_field)
    return publish(url, time_version(updated, False), cms_id, w3c(updated), title)


def _gone(post: dict[str, Any], request: Request) -> dict[str, Any] | Refusal:
    """An unpublish by id: Ghost's URL for an unpublished post is its preview, not the page."""
    cms_id = identifier(post.get("id"))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the post has no id")
    updated = moment(post.get("updated_at"))
    if updated is not None:
        return unpublish(time_version(updated, True), cms_id)
    signed_at = digits(parameters(request.headers.get(HEADER, "")).get("t"))
    if signed_at is None:
        return Refusal(MISSING_VERSION, f"post {cms_id}: no updated_at")
    return unpublish(version(signed_at, True), cms_id)  # the time Ghost sent it: its clock
