"""Connectors, configuration and shared pieces: the TOML file (and what a bad one says), the
secret values of Secrets Manager, CMS times as versions, and URLs from templates."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater import connectors
from sitemap_updater.connectors import ConfigError, Connector, ContentType, common
from sitemap_updater.domain import dates
from tests.unit.test_connectors_signing import SAMPLES

TEMPLATE = "https://www.example.com/{locale}/blog/{slug}"


def one(**entry: Any) -> Connector:
    (connector,) = connectors.parse({"connector": [entry]})
    return connector


def refused(document: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as raised:
        connectors.parse(document, "connectors.toml")
    return str(raised.value)


def test_the_sample_file() -> None:
    loaded = {c.name: c for c in connectors.parse(connectors.read(SAMPLES / "connectors.toml"))}

    assert sorted(loaded) == [
        "contentful",
        "ghost",
        "native",
        "sanity",
        "shopify",
        "strapi",
        "wordpress",
        "wp-webhooks",
    ]
    assert loaded["contentful"].content_types["blogPost"] == ContentType(
        url_template=TEMPLATE, locales=(("en-US", "en"), ("de-DE", "de"))
    )
    assert loaded["ghost"].secret_arn == (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:sitemap-updater/ghost-AbCdEf"
    )
    assert set(loaded["ghost"].content_types) == {"post", "page"}
    assert loaded["shopify"].content_types["product"].slug_field == "handle"
    assert loaded["sanity"].content_types["post"].locale_field == "language"
    assert loaded["native"].tolerance_seconds == 300


def test_defaults() -> None:
    ghost = one(name="blog", cms="ghost", secret="s")

    assert ghost == Connector(
        name="blog",
        cms="ghost",
        secrets=("s",),
        content_types={"post": ContentType(), "page": ContentType()},
    )
    wordpress = one(name="wp", cms="wp-webhooks", secret="s").content_types
    assert wordpress.keys() == {"post", "page"}
    assert wordpress["post"].title_field == "post_title"
    product = {"url_template": "https://www.example.com/products/{slug}"}
    assert one(name="s", cms="shopify", content_types={"product": product})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"cms": "ghost", "secret": "s"}, "'name' is required"),
        ({"name": "Blog", "cms": "ghost", "secret": "s"}, "name 'Blog'"),
        ({"name": "blog", "cms": "ghst", "secret": "s"}, "unknown cms 'ghst'"),
        ({"name": "blog", "cms": "ghost"}, "no secret"),
        ({"name": "blog", "cms": "ghost", "secret": ""}, "non-empty strings"),
        ({"name": "blog", "cms": "ghost", "secrets": list("abcdefghi")}, "at most 8"),
        ({"name": "blog", "cms": "ghost", "secret": "a", "secrets": ["b"]}, "not both"),
        ({"name": "blog", "cms": "ghost", "secret_arn": "arn:aws:s3:::bucket"}, "not a Secrets"),
        ({"name": "blog", "cms": "ghost", "secret": "s", "secert": "s"}, "unknown key 'secert'"),
        ({"name": "blog", "cms": "ghost", "secret": "s", "signature": "static"}, "'signature'"),
        ({"name": "blog", "cms": "ghost", "secret": "s", "tolerance_seconds": 0}, "1 to 3600"),
        ({"name": "blog", "cms": "ghost", "secret": "s", "tolerance_seconds": True}, "1 to 3600"),
        ({"name": "wp", "cms": "wp-webhooks", "secret": "s", "signature": "sha1"}, "'sha1'"),
        ({"name": "c", "cms": "contentful", "secret": "s", "locale_based_publishing": 1}, "true"),
        ({"name": "g", "cms": "ghost", "secret": "s", "locale_based_publishing": True}, "unknown"),
        ({"name": "n", "cms": "native", "secret": "s", "content_types": {}}, "no content_types"),
        ({"name": "s", "cms": "strapi", "secret": "s"}, "url_template"),
        ({"name": "s", "cms": "strapi", "secret": "s", "content_types": {"a": {}}}, "required"),
        ({"name": "s", "cms": "strapi", "secret": "s", "content_types": {"a": 1}}, "tables"),
    ],
)
def test_a_connector_that_cannot_be_used_is_refused_with_where_and_why(
    entry: dict[str, Any], message: str
) -> None:
    assert message in refused({"connector": [entry]})
    assert refused({"connector": [entry]}).startswith("connectors.toml: connector 1")


@pytest.mark.parametrize(
    ("content_type", "message"),
    [
        ({"url_template": "/blog/{slug}"}, "absolute http(s) URL"),
        ({"url_template": "https://www.example.com/blog/"}, "holds {slug}"),
        ({"url_template": "https://www.example.com/{lang}/{slug}"}, "holds {slug}"),
        ({"url_template": TEMPLATE, "slug_field": "a b"}, "slug_field 'a b'"),
        ({"url_template": TEMPLATE, "title_field": "seo title"}, "title_field 'seo title'"),
        ({"url_template": TEMPLATE, "locales": ["en"]}, "locales: a table"),
        ({"url_template": TEMPLATE, "template": "x"}, "unknown key 'template'"),
    ],
)
def test_a_content_type_that_cannot_be_used_is_refused(
    content_type: dict[str, Any], message: str
) -> None:
    entry = {"name": "s", "cms": "strapi", "secret": "s", "content_types": {"post": content_type}}

    error = refused({"connector": [entry]})
    assert "connector 1 (s): content type 'post': " in error
    assert message in error


def test_contentful_needs_its_locales_to_unpublish_a_localised_page() -> None:
    entry = {
        "name": "c",
        "cms": "contentful",
        "secret": "s",
        "content_types": {"blogPost": {"url_template": TEMPLATE}},
    }

    assert "needs locales" in refused({"connector": [entry]})


@pytest.mark.parametrize("cms", ["wp-webhooks", "ghost", "shopify"])
def test_a_locale_in_the_template_of_a_cms_that_sends_none_is_refused(cms: str) -> None:
    """Their payloads name no locale: the template could only be filled with nothing."""
    template = "https://www.example.com/{locale}/blog/{slug}"
    entry = {"name": "x", "cms": cms, "content_types": {"post": {"url_template": template}}}
    entry |= (
        {"event_source": "aws.partner/shopify.com/1/x"} if cms == "shopify" else {"secret": "s"}
    )

    assert f"{cms} names no locale: url_template cannot hold {{locale}}" in refused(
        {"connector": [entry]}
    )


def test_the_file_as_a_whole() -> None:
    entry = {"name": "blog", "cms": "ghost", "secret": "s"}

    assert "used twice" in refused({"connector": [entry, dict(entry)]})
    assert "unknown key 'connectors'" in refused({"connectors": [entry]})
    assert "array of tables" in refused({"connector": entry})
    assert connectors.parse({}) == ()


def test_a_file_that_is_not_toml_says_where(tmp_path: Path) -> None:
    path = tmp_path / "connectors.toml"
    path.write_text('[[connector]]\nname = "blog"\ncms = ghost\n', encoding="utf-8")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'# caf\xe9\n[[connector]]\nname = "x"\n')

    with pytest.raises(ConfigError, match=r"connectors.toml: not TOML: .*line 3"):
        connectors.read(path)
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        connectors.read(latin)
    with pytest.raises(ConfigError, match="cannot read it"):
        connectors.read(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("value", "secrets"),
    [
        ("only-one", ("only-one",)),
        ("  padded\n", ("padded",)),
        ('["new", "old"]', ("new", "old")),
        ('["new"]', ("new",)),
    ],
)
def test_a_secrets_manager_value_holds_one_or_two_secrets(value: str, secrets: tuple[str]) -> None:
    assert connectors.parse_secret_string(value) == secrets


@pytest.mark.parametrize(
    "value", ["", "[]", json.dumps(list("abcdefghi")), '["a", ""]', "[1]", "[oops"]
)
def test_a_secrets_manager_value_that_is_neither_is_refused(value: str) -> None:
    with pytest.raises(ConfigError):
        connectors.parse_secret_string(value)


# --- times and versions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "naive_utc", "ms"),
    [
        ("2026-03-20T09:30:00Z", False, 1773999000000),
        ("2026-03-20T09:30:00.5Z", False, 1773999000500),
        ("2026-03-20T09:30:00.123456789Z", False, 1773999000123),
        ("2026-03-20T10:30:00+01:00", False, 1773999000000),
        ("2026-03-20 09:30:00", True, 1773999000000),
        ("2026-03-20t09:30:00z", False, 1773999000000),  # RFC 3339 allows lower case
        ("1969-12-31T23:59:59.999Z", False, -1),
    ],
)
def test_a_cms_time_is_read_to_the_millisecond(value: str, naive_utc: bool, ms: int) -> None:
    moment = dates.moment(value, naive_utc)

    assert moment is not None
    assert dates.time_version(moment, unpublish=False) == ms * 10


@pytest.mark.parametrize(
    "value",
    [
        "2026-03-20 09:30:00",  # no zone, and not WordPress's
        "2026-03-20",
        "2026-13-20T09:30:00Z",
        "2026-03-20T25:30:00Z",
        "yesterday",
        "\uff12\uff10\uff12\uff16-03-20T09:30:00Z",  # digits, but not ASCII ones
        1773999000,
        None,
    ],
)
def test_a_time_that_is_not_rfc_3339_is_none(value: object) -> None:
    assert dates.moment(value) is None


def test_versions_order_as_the_cms_s_times_and_an_unpublish_wins_a_tie() -> None:
    at = datetime(2026, 3, 20, 9, 30, tzinfo=UTC)

    assert dates.time_version(at, False) == 17739990000000
    assert dates.time_version(at, True) == 17739990000001
    assert dates.version(1773999000001, False) > dates.time_version(at, True)
    assert dates.w3c(datetime(2026, 3, 20, 10, 30, 5, 999, tzinfo=UTC)) == "2026-03-20T10:30:05Z"


@pytest.mark.parametrize(
    ("slug", "url"),
    [
        ("spring-menu", "https://www.example.com/en/blog/spring-menu"),
        ("café au lait", "https://www.example.com/en/blog/caf%C3%A9%20au%20lait"),
        ("what?#now", "https://www.example.com/en/blog/what%3F%23now"),
        ("menus/spring", "https://www.example.com/en/blog/menus/spring"),
        (" spaced ", "https://www.example.com/en/blog/spaced"),
        ("ender's-game", "https://www.example.com/en/blog/ender's-game"),
        (
            "o'brien+sons;a=1,b:(c)@d!$*",
            "https://www.example.com/en/blog/o'brien+sons;a=1,b:(c)@d!$*",
        ),
        ('<b>"x"', "https://www.example.com/en/blog/%3Cb%3E%22x%22"),
        ("/about", "https://www.example.com/en/blog/about"),
        ("//menus/spring/", "https://www.example.com/en/blog/menus/spring/"),
        ("/", "https://www.example.com/en/blog/"),
    ],
)
def test_a_slug_goes_into_its_template_escaped(slug: str, url: str) -> None:
    assert common.page_url(TEMPLATE, slug, "en") == url


def test_a_slug_in_the_query_keeps_only_slashes_and_escapes() -> None:
    template = "https://www.example.com/p?slug={slug}"
    assert (
        common.page_url(template, "rock&roll=1+c")
        == "https://www.example.com/p?slug=rock%26roll%3D1%2Bc"
    )


def test_a_slug_in_both_path_and_query_is_escaped_for_each() -> None:
    template = "https://www.example.com/{slug}/?ref={slug}"
    assert common.page_url(template, "a&b=c") == "https://www.example.com/a&b=c/?ref=a%26b%3Dc"


def test_a_locale_goes_in_as_the_site_names_it() -> None:
    kind = ContentType(url_template=TEMPLATE, locales=(("en-US", "en"), ("de-DE", "de")))

    assert kind.url_locale("de-DE") == "de"
    assert kind.url_locale("fr-FR") is None
    assert ContentType(url_template=TEMPLATE).url_locale("pt-BR") == "pt-BR"
    assert common.page_url(TEMPLATE, "x", "pt/BR") == "https://www.example.com/pt%2FBR/blog/x"


def test_wp_webhooks_4_static_tokens_of_the_four_triggers_fit_one_connector() -> None:
    """4.x signs each trigger URL's own date_created and name: four triggers, four tokens,
    and rotating them, the old four too."""
    tokens = [f"token-{n}" for n in range(8)]
    entry = {"name": "wp", "cms": "wp-webhooks", "signature": "static", "secrets": tokens}
    (connector,) = connectors.parse({"connector": [entry]})
    assert connector.secrets == tuple(tokens)
