"""Shopify products, through Shopify's Amazon EventBridge partner event source: the topics
``products/create``, ``products/update`` and ``products/delete``.

No HTTP and no signature: only Shopify can put events on its partner event source, and the
rule that routes them is ours (shopify.dev, "Amazon EventBridge webhook delivery"). An event
is accepted if it is a ``shopifyWebhook`` from ``aws.partner/shopify.com/...``, and, when
``event_source`` is configured, from that source exactly.

The event: ``detail.payload`` is the webhook body (a product: ``id``, ``handle``, ``title``,
``status``, ``published_at``, ``updated_at``; a deleted product: ``{"id": ...}`` only) and
``detail.metadata`` its headers (``X-Shopify-Topic``, ``X-Shopify-Triggered-At``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitemap_updater.connectors.common import (
    ACCEPTED,
    MISSING_SLUG,
    MISSING_VERSION,
    UNMAPPABLE_PAYLOAD,
    WRONG_SOURCE,
    Mapped,
    Refusal,
    Verdict,
    identifier,
    ignored,
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

DETAIL_TYPE = "shopifyWebhook"
SOURCE_PREFIX = "aws.partner/shopify.com/"
LIVE = {"products/create", "products/update"}
GONE = "products/delete"


def verify_event(event: Mapping[str, Any], connector: Connector) -> Verdict:
    source = event.get("source")
    if event.get("detail-type") != DETAIL_TYPE or not isinstance(source, str):
        return Verdict(WRONG_SOURCE)
    if not source.startswith(SOURCE_PREFIX):
        return Verdict(WRONG_SOURCE)
    if connector.event_source is not None and source != connector.event_source:
        return Verdict(WRONG_SOURCE)
    return ACCEPTED


def map_event(event: Mapping[str, Any], connector: Connector) -> Mapped:
    topic = lookup(event, "detail.metadata.X-Shopify-Topic")
    if topic not in LIVE and topic != GONE:
        return ignored(f"topic {topic!r} is not handled")
    product = lookup(event, "detail.payload")
    if not isinstance(product, dict) or identifier(product.get("id")) is None:
        return mapped([Refusal(UNMAPPABLE_PAYLOAD, f"{topic}: no product id")])
    kind = connector.content_types.get("product")
    if kind is None:
        return ignored("products are not pages of this connector")
    if topic == GONE:
        return mapped([_deleted(event, product)])
    return mapped([_changed(product, kind)])


def _changed(product: dict[str, Any], kind: ContentType) -> dict[str, Any] | Refusal:
    cms_id, updated = str(identifier(product["id"])), moment(product.get("updated_at"))
    if updated is None:
        return Refusal(MISSING_VERSION, f"product {cms_id}: no updated_at")
    handle = text(lookup(product, kind.slug_field))
    url = page_url(str(kind.url_template), handle) if handle else None
    live = product.get("status", "active") == "active" and product.get("published_at") is not None
    if not live:  # a draft, archived, or not on the online store
        return unpublish(time_version(updated, True), cms_id, url)
    if url is None:
        return Refusal(MISSING_SLUG, f"product {cms_id}: no {kind.slug_field}")
    title = lookup(product, kind.title_field)
    return publish(url, time_version(updated, False), cms_id, w3c(updated), title)


def _deleted(event: Mapping[str, Any], product: dict[str, Any]) -> dict[str, Any] | Refusal:
    """A deleted product is only its id: the time is when Shopify triggered the webhook."""
    cms_id = str(identifier(product["id"]))
    when = moment(lookup(event, "detail.metadata.X-Shopify-Triggered-At")) or moment(
        event.get("time")
    )
    if when is None:
        return Refusal(MISSING_VERSION, f"product {cms_id}: no X-Shopify-Triggered-At or time")
    return unpublish(time_version(when, True), cms_id)
