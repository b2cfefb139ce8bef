"""Connectors, mapping: every sample in events/cms/ to the events of our contract it stands
for (publish, update, slug change, unpublish with and without a URL, delete), topics that are
ignored, payloads that are refused with a reason, and versions that order as the CMS acted."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_updater import connectors
from sitemap_updater.connectors import Connector, ContentType, Mapped, Refusal, Request, common
from sitemap_updater.domain import dates
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.urls import Site
from tests.unit.test_connectors_signing import (
    CONNECTORS,
    NOW,
    event_sample,
    http_samples,
    sample,
    with_headers,
)

SPRING = "https://www.example.com/2026/03/spring-menu/"
SPRING_2026 = "https://www.example.com/2026/03/spring-menu-2026/"
GHOST_ID = "6650a1b2c3d4e5f601234567"
STRAPI_ID = "hgv1vny5cebq2l3czil1rpb3"
CONTENTFUL_ID = "5KsDBWseXY6QegucYAoacS"
SANITY_ID = "8a5e3c2b-1f4d-4e6a-9b7c-0d1e2f3a4b5c"
PRODUCT = "7981239813245"


def mapping(folder: str, name: str) -> Mapped:
    if folder == "shopify":
        return connectors.map_event(CONNECTORS["shopify"], event_sample(name))
    return connectors.map_request(CONNECTORS[folder], sample(folder, name))


def events(folder: str, name: str) -> list[dict[str, Any]]:
    result = mapping(folder, name)
    assert result.refusals == ()
    assert result.ignored is None
    return list(result.events)


def brief(folder: str, name: str) -> list[tuple[str, str | None, str | None]]:
    """(type, url, id) of each event."""
    return [(e["type"], e.get("url"), e.get("id")) for e in events(folder, name)]


# --- each CMS ----------------------------------------------------------------------------------


def test_ghost() -> None:
    assert events("ghost", "post-published") == [
        {
            "type": "publish",
            "url": "https://www.example.com/spring-menu/",
            "version": 1773999000000 * 10,  # updated_at 2026-03-20T09:30:00.000Z, in ms
            "lastmod": "2026-03-20T09:30:00Z",
            "id": GHOST_ID,
            "title": "Spring menu is here",
        }
    ]
    assert brief("ghost", "post-published-edited") == [
        ("publish", "https://www.example.com/spring-menu/", GHOST_ID)
    ]
    assert brief("ghost", "post-slug-changed") == [
        ("publish", "https://www.example.com/spring-menu-2026/", GHOST_ID)
    ]
    # Ghost's url for an unpublished post is its preview (/p/<uuid>/): the id says which page.
    assert events("ghost", "post-unpublished") == [
        {"type": "unpublish", "version": 1774267200000 * 10 + 1, "id": GHOST_ID}
    ]
    assert brief("ghost", "post-deleted") == [("unpublish", None, GHOST_ID)]
    assert brief("ghost", "page-published") == [
        ("publish", "https://www.example.com/about/", "6650a1b2c3d4e5f6012345aa")
    ]
    assert mapping("ghost", "post-added-draft").ignored == "event 'post.added' is not handled"
    assert "not a post or page" in str(mapping("ghost", "tag-added").ignored)


def test_ghost_5_without_the_event_field_reads_the_statuses() -> None:
    request = sample("ghost", "post-unpublished")
    body = json.loads(request.body)
    del body["event"]
    without = Request(request.method, request.path, request.headers, json.dumps(body).encode(), NOW)
    draft = json.loads(sample("ghost", "post-added-draft").body)
    del draft["event"]
    never = Request(request.method, request.path, request.headers, json.dumps(draft).encode(), NOW)

    assert events("ghost", "post-unpublished") == list(
        connectors.map_request(CONNECTORS["ghost"], without).events
    )
    assert connectors.map_request(CONNECTORS["ghost"], never).ignored == (
        "not published (status 'draft')"
    )


def test_ghost_headless_takes_the_site_s_url_from_a_template() -> None:
    headless = Connector(
        name="g",
        cms="ghost",
        content_types={"post": ContentType(url_template="https://www.example.com/news/{slug}")},
    )
    result = connectors.map_request(headless, sample("ghost", "post-slug-changed"))

    assert [e["url"] for e in result.events] == ["https://www.example.com/news/spring-menu-2026"]
    assert connectors.map_request(headless, sample("ghost", "page-published")).ignored


def test_ghost_deleted_without_updated_at_takes_the_time_ghost_signed_it() -> None:
    request = sample("ghost", "post-deleted")
    body = json.loads(request.body)
    del body["post"]["previous"]["updated_at"]
    signed = with_headers(request, x_ghost_signature="sha256=00, t=1774267260123")
    changed = Request(signed.method, signed.path, signed.headers, json.dumps(body).encode(), NOW)

    assert [e["version"] for e in connectors.map_request(CONNECTORS["ghost"], changed).events] == [
        17742672601231
    ]


def test_wordpress_through_wp_webhooks() -> None:
    assert events("wp-webhooks", "post-create") == [
        {
            "type": "publish",
            "url": SPRING,
            "version": 1773999000000 * 10,  # post_modified_gmt 2026-03-20 09:30:00 (UTC)
            "lastmod": "2026-03-20T09:30:00Z",
            "id": "1234",
            "title": "Spring menu is here",  # post_title
        }
    ]
    assert brief("wp-webhooks", "post-update") == [("publish", SPRING, "1234")]
    assert brief("wp-webhooks", "post-update-slug") == [("publish", SPRING_2026, "1234")]
    for gone in ("post-update-draft", "post-trash", "post-delete"):
        assert brief("wp-webhooks", gone) == [("unpublish", None, "1234")], gone
    assert brief("wp-webhooks", "page-update-v3") == [
        ("publish", "https://www.example.com/about/", "42")
    ]
    assert "not a page" in str(mapping("wp-webhooks", "attachment-update").ignored)
    assert mapping("wp-webhooks", "login-user").ignored == "trigger 'login_user' is not handled"


def test_wordpress_a_scheduled_post_goes_live_when_wordpress_publishes_it() -> None:
    """Scheduled, it is not public (an unpublish at post_modified); WordPress's cron then
    publishes it without touching post_modified: the publish is versioned by post_date."""
    request = sample("wp-webhooks", "post-update")
    body = json.loads(request.body)
    body["post"].update(post_status="future", post_date_gmt="2026-04-01 08:00:00")
    steps = []
    triggers = (("post_update", "future"), ("post_update", "publish"), ("post_delete", "publish"))
    for trigger, status in triggers:
        body["post"]["post_status"] = status
        headers = {**request.headers, "x-wp-webhook-name": trigger}
        step = Request(request.method, request.path, headers, json.dumps(body).encode(), NOW)
        steps += mapping_of("wp-webhooks", step).events

    gone, live, deleted = steps
    assert (gone["type"], gone["version"]) == ("unpublish", 1774087200000 * 10 + 1)
    assert (live["type"], live["version"]) == ("publish", 1775030400000 * 10)
    assert live["lastmod"] == "2026-04-01T08:00:00Z"
    # Deleted for good, post_modified still unchanged: the delete is newer than its publish.
    assert (deleted["type"], deleted["version"]) == ("unpublish", 1775030400000 * 10 + 1)


def test_wordpress_through_the_must_use_plugin() -> None:
    assert brief("wordpress", "publish") == [("publish", SPRING, "1234")]
    assert brief("wordpress", "update") == [("publish", SPRING, "1234")]
    assert brief("wordpress", "permalink-change") == [("publish", SPRING_2026, "1234")]
    assert brief("wordpress", "unpublish") == [("unpublish", None, "1234")]
    assert brief("wordpress", "trash") == [("unpublish", None, "42")]
    assert brief("wordpress", "delete") == [("unpublish", None, "43")]


def test_both_wordpress_connectors_give_one_change_the_same_event() -> None:
    """Moving from WP Webhooks to the must-use plugin keeps the ids and the versions."""
    pairs = [
        ("post-create", "publish"),
        ("post-update-slug", "permalink-change"),
        ("post-update-draft", "unpublish"),
    ]
    for webhooks, plugin in pairs:
        first, second = events("wp-webhooks", webhooks), events("wordpress", plugin)
        assert [(e["version"], e["id"], e.get("url")) for e in first] == [
            (e["version"], e["id"], e.get("url")) for e in second
        ]


def test_strapi() -> None:
    assert events("strapi", "v5-entry-publish") == [
        {
            "type": "publish",
            "url": "https://www.example.com/en/blog/spring-menu",
            "version": 1773999000512 * 10,  # the event's createdAt
            "lastmod": "2026-03-20T09:30:00Z",  # the entry's updatedAt
            "id": f"{STRAPI_ID}:en",
            "title": "Spring menu is here",
        }
    ]
    blog = "https://www.example.com/en/blog/"
    assert brief("strapi", "v5-entry-publish-update") == [
        ("publish", f"{blog}spring-menu", f"{STRAPI_ID}:en")
    ]
    assert brief("strapi", "v5-entry-publish-slug") == [
        ("publish", f"{blog}spring-menu-2026", f"{STRAPI_ID}:en")
    ]
    assert brief("strapi", "v5-entry-publish-de") == [
        ("publish", "https://www.example.com/de/blog/fruehlingskarte", f"{STRAPI_ID}:de")
    ]
    assert brief("strapi", "v5-entry-unpublish") == [
        ("unpublish", f"{blog}spring-menu-2026", f"{STRAPI_ID}:en")
    ]
    assert brief("strapi", "v5-entry-delete") == [("unpublish", None, f"{STRAPI_ID}:en")]
    assert brief("strapi", "v4-entry-update") == [
        ("publish", "https://www.example.com/opening-hours", "3:en")
    ]
    assert mapping("strapi", "v5-entry-update-draft").ignored == "entry.update of a draft"
    assert mapping("strapi", "media-create").ignored == "event 'media.create' is not handled"
    assert mapping("strapi", "v5-entry-publish-no-slug").refusals == (
        Refusal(common.MISSING_SLUG, "entry pw0a6m3k2lq9x8c7v6b5n4m3: no slug"),
    )


def test_strapi_names_a_content_type_by_model_or_uid() -> None:
    by_uid = Connector(
        name="s",
        cms="strapi",
        content_types={
            "api::article.article": ContentType(url_template="https://www.example.com/a/{slug}")
        },
    )
    result = connectors.map_request(by_uid, sample("strapi", "v5-entry-publish"))

    assert [e["url"] for e in result.events] == ["https://www.example.com/a/spring-menu"]


def test_contentful() -> None:
    en, de = f"{CONTENTFUL_ID}:en-US", f"{CONTENTFUL_ID}:de-DE"
    blog_en, blog_de = "https://www.example.com/en/blog/", "https://www.example.com/de/blog/"
    assert events("contentful", "entry-publish") == [
        {
            "type": "publish",
            "url": f"{blog_en}spring-menu",
            "version": 1773999000498 * 10,  # sys.updatedAt
            "lastmod": "2026-03-20T09:30:00Z",
            "id": en,
            "title": "Spring menu is here",  # fields.title, in the entry's locale
        },
        {
            "type": "publish",
            "url": f"{blog_de}fruehlingskarte",
            "version": 1773999000498 * 10,
            "lastmod": "2026-03-20T09:30:00Z",
            "id": de,
            "title": "Die Frühlingskarte ist da",
        },
    ]
    assert brief("contentful", "entry-publish-slug") == [
        ("publish", f"{blog_en}spring-menu-2026", en),
        ("publish", f"{blog_de}fruehlingskarte", de),
    ]
    # A DeletedEntry has no fields: one unpublish by id per locale the site serves.
    for gone in ("entry-unpublish", "entry-delete"):
        assert brief("contentful", gone) == [("unpublish", None, en), ("unpublish", None, de)]
    assert brief("contentful", "entry-archive") == [
        ("unpublish", f"{blog_en}spring-menu-2026", en),
        ("unpublish", f"{blog_de}fruehlingskarte", de),
    ]
    for topic in ("entry-auto-save", "asset-publish"):
        assert "is not handled" in str(mapping("contentful", topic).ignored)


def test_contentful_without_a_locale_in_the_template_names_the_entry_alone() -> None:
    kind = ContentType(
        url_template="https://www.example.com/blog/{slug}", locales=(("de-DE", "de"),)
    )
    one = Connector(name="c", cms="contentful", content_types={"blogPost": kind})

    published = connectors.map_request(one, sample("contentful", "entry-publish"))
    unpublished = connectors.map_request(one, sample("contentful", "entry-unpublish"))

    assert [(e["url"], e["id"]) for e in published.events] == [
        ("https://www.example.com/blog/fruehlingskarte", CONTENTFUL_ID)  # the first served locale
    ]
    assert [e["id"] for e in unpublished.events] == [CONTENTFUL_ID]


def test_contentful_a_served_locale_without_a_slug_has_no_page() -> None:
    kind = ContentType(
        url_template="https://www.example.com/{locale}/{slug}", locales=(("fr-FR", "fr"),)
    )
    french = Connector(name="c", cms="contentful", content_types={"blogPost": kind})

    # Its only served locale has no slug: there is no French page (by id, if there was one).
    assert [
        (e["type"], e.get("url"), e["id"])
        for e in connectors.map_request(french, sample("contentful", "entry-publish")).events
    ] == [("unpublish", None, f"{CONTENTFUL_ID}:fr-FR")]


def test_contentful_a_locale_without_its_own_slug_takes_the_default_locale_s() -> None:
    """Contentful leaves a locale without a value out of the payload, as it does every locale
    but the default of a field that is not localised: Contentful serves the default's value
    there (through the default fallback, for a localised field)."""
    request = sample("contentful", "entry-publish")
    body = json.loads(request.body)
    del body["fields"]["slug"]["de-DE"]
    english_only = Request(
        request.method, request.path, request.headers, json.dumps(body).encode(), NOW
    )

    changes = mapping_of("contentful", english_only).events

    assert [(e["type"], e.get("url"), e["id"], e["version"] % 10) for e in changes] == [
        ("publish", "https://www.example.com/en/blog/spring-menu", f"{CONTENTFUL_ID}:en-US", 0),
        ("publish", "https://www.example.com/de/blog/spring-menu", f"{CONTENTFUL_ID}:de-DE", 0),
    ]
    del body["fields"]["slug"]["en-US"]  # the default's gone too: so are the pages it made
    no_default = Request(
        request.method, request.path, request.headers, json.dumps(body).encode(), NOW
    )
    assert [(e["type"], e["id"]) for e in mapping_of("contentful", no_default).events] == [
        ("unpublish", f"{CONTENTFUL_ID}:en-US"),
        ("unpublish", f"{CONTENTFUL_ID}:de-DE"),
    ]


@pytest.mark.parametrize(
    ("by_locale", "german", "live"),
    [(True, "draft", False), (True, "changed", True), (True, None, False), (False, "draft", True)],
)
def test_contentful_locale_based_publishing_serves_only_the_locales_it_says_are_live(
    by_locale: bool, german: str | None, live: bool
) -> None:
    """sys.fieldStatus, for a site whose delivery follows it (locale_based_publishing): a
    publish of the English page leaves the German one in draft (or with changes not yet
    published: still served); a locale it does not list was added after the entry was
    published, and is not served until republished. A site whose delivery serves a published
    entry in every locale lists them all."""
    request = sample("contentful", "entry-publish")
    body = json.loads(request.body)
    states = {"en-US": "published"} | ({"de-DE": german} if german else {})
    body["sys"]["fieldStatus"] = {"*": states}
    signed = Request(request.method, request.path, request.headers, json.dumps(body).encode(), NOW)
    connector = replace(CONNECTORS["contentful"], locale_based_publishing=by_locale)

    changes = [(e["type"], e["id"]) for e in connectors.map_request(connector, signed).events]

    german_page = ("publish" if live else "unpublish", f"{CONTENTFUL_ID}:de-DE")
    assert changes == [("publish", f"{CONTENTFUL_ID}:en-US"), german_page]


def test_sanity() -> None:
    assert events("sanity", "create") == [
        {
            "type": "publish",
            "url": "https://www.example.com/en/blog/spring-menu",
            "version": 1773999000000 * 10,  # _updatedAt
            "lastmod": "2026-03-20T09:30:00Z",
            "id": SANITY_ID,
            "title": "Spring menu is here",
        }
    ]
    assert brief("sanity", "update-slug") == [
        ("publish", "https://www.example.com/en/blog/spring-menu-2026", SANITY_ID)
    ]
    assert brief("sanity", "update-de") == [
        (
            "publish",
            "https://www.example.com/de/blog/fruehlingskarte",
            "3f9d1a7e-6b2c-4d8e-a5f0-1c2b3a4d5e6f",
        )
    ]
    assert brief("sanity", "delete") == [("unpublish", None, SANITY_ID)]
    assert "is a draft" in str(mapping("sanity", "update-draft").ignored)
    assert "'author' is not a page" in str(mapping("sanity", "update-author").ignored)
    assert [r.code for r in mapping("sanity", "update-no-slug").refusals] == [common.MISSING_SLUG]


def test_sanity_takes_what_the_projection_leaves_out_from_its_headers() -> None:
    """A projection without operation and _updatedAt: the operation from the header, the
    version from the time Sanity signed the request."""
    request = sample("sanity", "update")
    body = {"_id": SANITY_ID, "_type": "post", "slug": {"current": "x"}, "language": "en"}
    signed = with_headers(request, sanity_webhook_signature="t=1774087200999,v1=abc")
    bare = Request(request.method, request.path, signed.headers, json.dumps(body).encode(), NOW)

    assert [(e["type"], e["url"], e["version"]) for e in mapping_of("sanity", bare).events] == [
        ("publish", "https://www.example.com/en/blog/x", 17740872009990)
    ]


def mapping_of(folder: str, request: Request) -> Mapped:
    return connectors.map_request(CONNECTORS[folder], request)


def test_shopify() -> None:
    products = "https://www.example.com/products/"
    assert events("shopify", "products-create") == [
        {
            "type": "publish",
            "url": f"{products}stoneware-plate",
            "version": 1773999000000 * 10,  # updated_at 2026-03-20T10:30:00+01:00
            "lastmod": "2026-03-20T09:30:00Z",
            "id": PRODUCT,
            "title": "Stoneware plate",
        }
    ]
    assert brief("shopify", "products-update") == [
        ("publish", f"{products}stoneware-plate", PRODUCT)
    ]
    assert brief("shopify", "products-update-handle") == [
        ("publish", f"{products}stoneware-plate-24", PRODUCT)
    ]
    assert brief("shopify", "products-update-draft") == [
        ("unpublish", f"{products}stoneware-plate-24", PRODUCT)
    ]
    # A deleted product is its id alone; the version is X-Shopify-Triggered-At's.
    assert events("shopify", "products-delete") == [
        {"type": "unpublish", "version": 1774357200535 * 10 + 1, "id": PRODUCT}
    ]
    assert mapping("shopify", "orders-create").ignored == "topic 'orders/create' is not handled"


@pytest.mark.parametrize("spell", [str.lower, lambda key: key.lower().removeprefix("x-")])
def test_shopify_headers_are_read_in_any_case_with_or_without_x(
    spell: Callable[[str], str],
) -> None:
    deleted = event_sample("products-delete")
    metadata = deleted["detail"]["metadata"]
    deleted["detail"]["metadata"] = {spell(key): value for key, value in metadata.items()}

    result = connectors.map_event(CONNECTORS["shopify"], deleted)

    assert list(result.events) == events("shopify", "products-delete")


def test_shopify_without_published_at_is_refused_not_taken_for_a_draft() -> None:
    """A subscription's includeFields can leave published_at out: that says nothing of
    whether the product is on the online store."""
    trimmed = event_sample("products-update")
    product = trimmed["detail"]["payload"]
    trimmed["detail"]["payload"] = {k: product[k] for k in ("id", "handle", "updated_at")}

    result = connectors.map_event(CONNECTORS["shopify"], trimmed)

    assert result.events == ()
    assert [r.code for r in result.refusals] == [common.UNMAPPABLE_PAYLOAD]


def test_native() -> None:
    assert brief("native", "publish") == [
        ("publish", "https://www.example.com/events/spring-fair", "evt-42")
    ]
    assert brief("native", "unpublish-by-id") == [("unpublish", None, "evt-42")]
    batch = events("native", "batch")
    assert [e["type"] for e in batch] == ["publish", "publish", "unpublish"]
    assert batch[1]["version"] == 12345678901234567890123456789012345678
    assert batch[1]["priority"] == Decimal("0.60000000000000000001")
    assert mapping("native", "empty").ignored == "no events in the body"


def test_native_json_lines_refuses_each_bad_line_alone() -> None:
    result = mapping("native", "lines")

    assert [e.get("id") for e in result.events] == ["evt-42", "evt-43"]
    assert result.refusals == (
        Refusal(common.MALFORMED_JSON, "line 2 is not JSON: duplicate key 'version'"),
        Refusal("not_an_object", "an event must be a JSON object, not list"),
    )


def test_native_events_are_sent_with_their_numbers_exactly() -> None:
    batch = events("native", "batch")

    assert json.loads(connectors.encode_event(batch[1]), parse_float=Decimal) == {
        "type": "publish",
        "url": "https://www.example.com/events/wine-night",
        "version": 12345678901234567890123456789012345678,
        "changefreq": "weekly",
        "priority": Decimal("0.60000000000000000001"),
    }


# --- what any connector does -------------------------------------------------------------------


@pytest.mark.parametrize(
    "folder", ["native", "wp-webhooks", "ghost", "strapi", "contentful", "sanity"]
)
@pytest.mark.parametrize("body", [b"", b"not json", b'{"a": 1, "a": 2}', b"[NaN]", b"\xff"])
def test_a_body_that_is_not_json_is_refused_not_raised(folder: str, body: bytes) -> None:
    request = next(sample(f, n) for f, n in http_samples() if f == folder)
    broken = Request(request.method, request.path, request.headers, body, NOW)

    result = connectors.map_request(CONNECTORS[folder], broken)

    assert result.events == ()
    if result.ignored is None:  # Contentful and WP Webhooks read the topic from a header first
        assert [r.code for r in result.refusals] == [common.MALFORMED_JSON]


@pytest.mark.parametrize(
    ("folder", "name", "body"),
    [
        ("ghost", "post-published", {"post": {"current": [], "previous": {}}}),
        ("ghost", "post-published", {"post": {"current": {"status": "published"}}}),
        ("wp-webhooks", "post-create", {"post": {"post_type": "post", "post_status": "publish"}}),
        ("strapi", "v5-entry-publish", {"event": "entry.publish", "model": "article"}),
        ("strapi", "v5-entry-publish", {"event": "entry.publish", "model": "article", "entry": {}}),
        ("contentful", "entry-publish", {"sys": {"type": "Entry"}}),
        ("contentful", "entry-publish", [1, 2]),
        ("sanity", "create", {"_type": "post", "operation": "create"}),
    ],
)
def test_a_payload_that_is_not_the_cms_s_shape_is_refused(
    folder: str, name: str, body: Any
) -> None:
    request = sample(folder, name)
    odd = Request(request.method, request.path, request.headers, json.dumps(body).encode(), NOW)
    if folder == "sanity":  # without the header, the id would come from there
        odd = Request(odd.method, odd.path, {"sanity-operation": "create"}, odd.body, NOW)

    result = connectors.map_request(CONNECTORS[folder], odd)

    assert result.events == ()
    assert [r.code for r in result.refusals] == [common.UNMAPPABLE_PAYLOAD]


@pytest.mark.parametrize(
    ("folder", "name", "part", "value", "reason"),
    [
        ("ghost", "post-published", ("post", "previous"), "oops", "post.previous is not"),
        ("ghost", "post-published", ("post", "previous"), [], "post.previous is not"),
        ("contentful", "entry-publish", ("fields",), [1], "fields is not an object"),
    ],
)
def test_the_refusal_names_the_part_that_is_wrong(
    folder: str, name: str, part: tuple[str, ...], value: Any, reason: str
) -> None:
    request = sample(folder, name)
    body = json.loads(request.body)
    parent = body
    for key in part[:-1]:
        parent = parent[key]
    parent[part[-1]] = value
    odd = Request(request.method, request.path, request.headers, json.dumps(body).encode(), NOW)

    result = connectors.map_request(CONNECTORS[folder], odd)

    assert [r.code for r in result.refusals] == [common.UNMAPPABLE_PAYLOAD]
    assert reason in result.refusals[0].reason


@pytest.mark.parametrize(
    ("folder", "name", "path"),
    [
        ("ghost", "post-published", ("post", "current", "updated_at")),
        ("wp-webhooks", "post-create", ("post", "post_modified_gmt")),
        ("strapi", "v5-entry-publish", None),
        ("contentful", "entry-publish", ("sys", "updatedAt")),
    ],
)
def test_a_page_without_a_time_is_refused_rather_than_given_an_arrival_time(
    folder: str, name: str, path: tuple[str, ...] | None
) -> None:
    request = sample(folder, name)
    body = json.loads(request.body)
    if path is None:  # Strapi: neither the event's time nor the entry's
        del body["createdAt"], body["entry"]["updatedAt"]
    else:
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = "yesterday"
    changed = Request(request.method, request.path, request.headers, json.dumps(body).encode(), NOW)

    result = connectors.map_request(CONNECTORS[folder], changed)

    assert [r.code for r in result.refusals] == [common.MISSING_VERSION]


def test_shopify_comes_through_eventbridge_only() -> None:
    assert connectors.map_request(CONNECTORS["shopify"], sample("native", "publish")).ignored
    assert connectors.map_event(CONNECTORS["ghost"], event_sample("products-update")).ignored
    broken = event_sample("products-update")
    broken["detail"]["payload"] = {"handle": "x"}
    assert [r.code for r in connectors.map_event(CONNECTORS["shopify"], broken).refusals] == [
        common.UNMAPPABLE_PAYLOAD
    ]


# --- ordering: the CMS's, never the arrival's --------------------------------------------------

LIFECYCLES = {
    "ghost": [
        "post-published",
        "post-published-edited",
        "post-slug-changed",
        "post-unpublished",
        "post-deleted",
    ],
    "wp-webhooks": [
        "post-create",
        "post-update",
        "post-update-slug",
        "post-update-draft",
        "post-trash",
        "post-delete",
    ],
    "wordpress": ["publish", "update", "permalink-change", "unpublish"],
    "strapi": [
        "v5-entry-publish",
        "v5-entry-publish-update",
        "v5-entry-publish-slug",
        "v5-entry-unpublish",
        "v5-entry-delete",
    ],
    "contentful": [
        "entry-publish",
        "entry-publish-update",
        "entry-publish-slug",
        "entry-unpublish",
        "entry-archive",
        "entry-delete",
    ],
    "sanity": ["create", "update", "update-slug", "delete"],
    "shopify": [
        "products-create",
        "products-update",
        "products-update-handle",
        "products-update-draft",
        "products-delete",
    ],
}


@pytest.mark.parametrize("folder", sorted(LIFECYCLES))
def test_each_change_of_a_page_has_a_newer_version_than_the_one_before(folder: str) -> None:
    """A page's changes in the order the CMS made them: each one wins over the one before (or
    is a duplicate of it, when a trash and a delete carry the same time), so delivery in any
    order converges on the last."""
    by_id: dict[str, list[int]] = {}
    for name in LIFECYCLES[folder]:
        for event in events(folder, name):
            by_id.setdefault(event["id"], []).append(event["version"])

    for versions in by_id.values():
        for before, after in pairwise(versions):
            both_unpublish = before % 10 == after % 10 == 1
            assert after > before or (after == before and both_unpublish), versions


def test_an_unpublish_wins_over_a_publish_of_the_same_instant() -> None:
    """Ghost's post.deleted carries the last edit's updated_at, to the second."""
    published = events("ghost", "post-unpublished")[0]["version"]
    deleted = events("ghost", "post-deleted")[0]["version"]

    assert deleted == published  # both carry updated_at 12:00:00 and both unpublish
    assert dates.version(1774267200000, True) > dates.version(1774267200000, False)
    assert dates.version(1774267200001, False) > dates.version(1774267200000, True)


def test_a_broken_pretty_printed_body_is_one_refusal_not_one_per_line() -> None:
    request = sample("native", "publish")
    broken = b'{\n  "type": "publish",\n  "url": "https://www.example.com/a",\n}\n'

    result = mapping_of("native", Request(request.method, request.path, {}, broken, NOW))

    assert [r.code for r in result.refusals] == [common.MALFORMED_JSON]
    assert result.refusals[0].reason.startswith("the body is not JSON")


def test_a_locale_the_site_does_not_serve_is_ignored_not_refused() -> None:
    only_de = ContentType(
        url_template="https://www.example.com/{locale}/{slug}", locales=(("de", "de"),)
    )
    strapi = Connector(name="s", cms="strapi", content_types={"article": only_de})
    by_language = ContentType(
        url_template="https://www.example.com/{locale}/{slug}",
        locale_field="language",
        locales=(("de", "de"),),
    )
    sanity = Connector(name="y", cms="sanity", content_types={"post": by_language})

    assert connectors.map_request(strapi, sample("strapi", "v5-entry-unpublish")).ignored == (
        "locale 'en' is not one the site serves"
    )
    assert connectors.map_request(sanity, sample("sanity", "update")).ignored == (
        "language 'en' is not one the site serves"
    )
    assert brief_of(strapi, sample("strapi", "v5-entry-publish-de")) == [
        ("publish", "https://www.example.com/de/fruehlingskarte", f"{STRAPI_ID}:de")
    ]


def brief_of(connector: Connector, request: Request) -> list[tuple[str, str | None, str | None]]:
    return [
        (e["type"], e.get("url"), e.get("id"))
        for e in connectors.map_request(connector, request).events
    ]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=30,
)
# Shapes each CMS sends, with any value where a value goes.
SHAPES = {
    "ghost": lambda v: {"event": "post.published", "post": {"current": v, "previous": v}},
    "wp-webhooks": lambda v: {"post": v, "post_permalink": v, "post_id": v},
    "strapi": lambda v: {"event": "entry.publish", "model": "article", "createdAt": v, "entry": v},
    "contentful": lambda v: {"sys": v, "fields": v},
    "sanity": lambda v: {
        "_id": v,
        "_type": "post",
        "operation": "create",
        "slug": v,
        "language": v,
    },
    "native": lambda v: v,
}


@settings(max_examples=200, deadline=None)
@given(folder=st.sampled_from(sorted(SHAPES)), value=JSON)
def test_any_json_in_a_cms_s_shape_maps_or_is_refused_never_raised(folder: str, value: Any) -> None:
    request = next(sample(f, n) for f, n in http_samples() if f == folder)
    body = json.dumps(SHAPES[folder](value)).encode()

    result = connectors.map_request(
        CONNECTORS[folder], Request(request.method, request.path, request.headers, body, NOW)
    )

    if folder != "native":  # native events go on as sent: the ingest judges them
        assert all(e["type"] in {"publish", "unpublish"} for e in result.events)
    assert all(r.code in REFUSALS for r in result.refusals)


@settings(max_examples=100, deadline=None)
@given(value=JSON)
def test_any_eventbridge_event_maps_or_is_refused_never_raised(value: Any) -> None:
    event = event_sample("products-update")
    for broken in (
        value,
        {**event, "detail": value},
        {**event, "detail": {**event["detail"], "payload": value}},
    ):
        if isinstance(broken, dict):
            assert isinstance(
                connectors.verify_event(CONNECTORS["shopify"], broken), connectors.Verdict
            )
            assert isinstance(connectors.map_event(CONNECTORS["shopify"], broken), Mapped)


REFUSALS = {
    common.MALFORMED_JSON,
    common.UNMAPPABLE_PAYLOAD,
    common.MISSING_SLUG,
    common.MISSING_VERSION,
    "not_an_object",
}


def test_the_cms_title_is_fitted_to_the_contract_or_left_out() -> None:
    """A title the contract would refuse never costs the page: it is fitted, or dropped."""
    strapi = Connector(
        name="s",
        cms="strapi",
        content_types={
            "article": ContentType(
                url_template="https://www.example.com/{locale}/blog/{slug}", title_field="seo.title"
            )
        },
    )
    request = sample("strapi", "v5-entry-publish")
    document = json.loads(request.body)
    for title, expected in [
        ("  Spring\x00 menu\u202e\n is here ", "Spring menu is here"),
        ("x" * 300, "x" * 255 + "\u2026"),
        ("\x01\u2066 ", None),
        ({"rich": "text"}, None),
    ]:
        document["entry"]["seo"] = {"title": title}
        body = json.dumps(document).encode()
        bare = Request(request.method, request.path, request.headers, body, NOW)
        (event,) = connectors.map_request(strapi, bare).events
        assert event.get("title") == expected
        parse_body(json.dumps(event).encode(), Site.parse("https://www.example.com"), 100_000)


# --- real payloads the samples do not show ------------------------------------------------------


def _post(connector: Connector, body: dict[str, Any], headers: dict[str, str]) -> Mapped:
    return connectors.map_request(
        connector, connectors.request("POST", "/hooks/x", headers, json.dumps(body).encode(), NOW)
    )


def test_a_slug_wordpress_stores_escaped_is_not_escaped_twice() -> None:
    """sanitize_title_with_dashes stores a non-ASCII post_name percent-encoded, in lower case."""
    kind = ContentType(url_template="https://www.example.com/blog/{slug}")
    wp = Connector(name="wp", cms="wp-webhooks", content_types={"post": kind})
    post = {
        "ID": 7,
        "post_type": "post",
        "post_status": "publish",
        "post_password": "",
        "post_name": "%d0%bf%d1%80%d0%b8%d0%b2%d0%b5%d1%82-50%",  # "привет-50%"
        "post_date_gmt": "2026-03-20 09:30:00",
        "post_modified_gmt": "2026-03-21 10:00:00",
    }
    body = {"post_id": 7, "post": post, "post_permalink": "https://wp.example.com/?p=7"}
    (event,) = _post(wp, body, {"x-wp-webhook-name": "post_update"}).events
    assert event["url"] == "https://www.example.com/blog/%d0%bf%d1%80%d0%b8%d0%b2%d0%b5%d1%82-50%25"


def test_strapi_ignores_a_locale_the_site_does_not_serve_even_without_locale_urls() -> None:
    """v5 emits entry.publish per locale, all sharing one documentId: a German entry must not
    move the English page of a site serving English only at /blog/{slug}."""
    kind = ContentType(url_template="https://www.example.com/blog/{slug}", locales=(("en", "en"),))
    strapi = Connector(name="s", cms="strapi", content_types={"article": kind})
    entry = {
        "id": 13,
        "documentId": STRAPI_ID,
        "slug": "fruehlingsmenue",
        "locale": "de",
        "updatedAt": "2026-03-20T09:30:59.000Z",
        "publishedAt": "2026-03-20T09:30:59.000Z",
    }
    body = {"event": "entry.publish", "model": "article", "uid": "api::article.article"}
    assert _post(strapi, {**body, "entry": entry}, {}).events == ()
    (english,) = _post(strapi, {**body, "entry": {**entry, "locale": "en"}}, {}).events
    assert english["id"] == f"{STRAPI_ID}:en"  # the locale names the page with the documentId


def test_contentful_a_slug_that_is_not_localised_makes_a_page_in_every_locale() -> None:
    """A field that is not localised holds the default locale's value only."""
    kind = ContentType(
        url_template="https://www.example.com/{locale}/blog/{slug}",
        locales=(("en-US", "en"), ("de-DE", "de")),
    )
    contentful = Connector(name="c", cms="contentful", content_types={"blogPost": kind})
    body = {
        "sys": {
            "id": CONTENTFUL_ID,
            "type": "Entry",
            "contentType": {"sys": {"type": "Link", "linkType": "ContentType", "id": "blogPost"}},
            "updatedAt": "2026-03-20T09:30:00.000Z",
        },
        "fields": {
            "slug": {"en-US": "spring-menu"},
            "title": {"en-US": "Spring menu", "de-DE": "Frühlingsmenü"},
        },
    }
    events = _post(contentful, body, {"x-contentful-topic": "ContentManagement.Entry.publish"})
    assert [(e["type"], e["url"], e["title"]) for e in events.events] == [
        ("publish", "https://www.example.com/en/blog/spring-menu", "Spring menu"),
        ("publish", "https://www.example.com/de/blog/spring-menu", "Frühlingsmenü"),
    ]
