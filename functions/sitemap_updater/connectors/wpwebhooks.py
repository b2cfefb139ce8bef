"""WordPress through the WP Webhooks plugin (Ironikus/wp-webhooks): its post triggers
``post_create``, ``post_update``, ``post_trash`` and ``post_delete``.

Signature, as the plugin computes it (``generate_trigger_signature`` in
``core/includes/classes/class-wp-webhooks-pro-webhook.php``)::

    X-WP-Webhook-Signature: base64(HMAC-SHA256(secret, data))

Up to 3.x ``data`` is the request body and ``secret`` the plugin's trigger secret (Settings):
``signature = "body"``. From 4.x ``data`` is the JSON of the trigger URL's ``date_created``,
``webhook_name`` and ``webhook_url_name``: the same value on every request of that URL, so it
is a shared token that does not cover the body. With ``signature = "static"`` the connector's
secret is that header value. There is no timestamp in either: a replayed request is at worst a
duplicate or stale event (versions order them).

The body (each trigger's ``get_demo``): ``post_id``, ``post`` (``get_post()``: ``post_status``,
``post_type``, ``post_name``, ``post_title``, ``post_modified_gmt``, ...), ``post_permalink``.
4.x names the trigger in ``X-WP-Webhook-Name``; 3.x does not, and the change is read from
``post_status`` (a post deleted without going through the trash then looks published).
"""

from __future__ import annotations

import base64
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
    hmac_sha256,
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

HEADER = "x-wp-webhook-signature"
TRIGGER = "x-wp-webhook-name"
HANDLED = {"post_create", "post_update", "post_trash", "post_delete"}
GONE = {"post_trash", "post_delete"}


def verify(request: Request, secrets: Sequence[str], connector: Connector) -> Verdict:
    header = request.headers.get(HEADER)
    if header is None:
        return Verdict(MISSING_SIGNATURE)
    if connector.signature == "static":
        return check(header.strip(), secrets, lambda s: s)
    return check(
        header.strip(),
        secrets,
        lambda s: base64.b64encode(hmac_sha256(s, request.body)).decode("ascii"),
    )


def map_request(request: Request, connector: Connector) -> Mapped:
    trigger = request.headers.get(TRIGGER)
    if trigger is not None and trigger not in HANDLED:
        return ignored(f"trigger {trigger!r} is not handled")
    document = load_object(request.body)
    if isinstance(document, Refusal):
        return mapped([document])
    post = document.get("post")
    if not isinstance(post, dict):
        return ignored("not a post trigger (no post object)")
    post_type = post.get("post_type")
    if not isinstance(post_type, str) or post_type not in connector.content_types:
        return ignored(f"post type {post_type!r} is not a page of this connector")
    public = post.get("post_status") == "publish" and not post.get("post_password")
    gone = trigger in GONE or not public
    return mapped([_event(document, post, gone, connector.content_types[post_type])])


def _event(
    document: dict[str, Any], post: dict[str, Any], gone: bool, kind: ContentType
) -> dict[str, Any] | Refusal:
    cms_id = identifier(post.get("ID", document.get("post_id")))
    if cms_id is None:
        return Refusal(UNMAPPABLE_PAYLOAD, "the post has no ID")
    modified = moment(post.get("post_modified_gmt"), naive_utc=True)
    if modified is None:
        return Refusal(MISSING_VERSION, f"post {cms_id}: no post_modified_gmt")
    if gone:  # a trashed post's permalink is not its page: the registry knows the page by id
        return unpublish(time_version(modified, True), cms_id)
    slug = text(post.get("post_name"))
    if kind.url_template is not None:
        url = page_url(kind.url_template, slug) if slug else None
    else:
        url = text(document.get("post_permalink"))
    if url is None:
        return Refusal(MISSING_SLUG, f"post {cms_id}: no permalink and no post_name")
    title = lookup(post, kind.title_field)
    return publish(url, time_version(modified, False), cms_id, w3c(modified), title)
