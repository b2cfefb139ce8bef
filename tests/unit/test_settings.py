"""Settings.from_env: the one settings model every function, the stack and the CLI read."""

from __future__ import annotations

import pytest

from sitemap_updater.domain.sharding import (
    PROTOCOL_MAX_BYTES,
    PROTOCOL_MAX_INDEX_ENTRIES,
    PROTOCOL_MAX_URLS,
    Limits,
)
from sitemap_updater.domain.urls import Site
from sitemap_updater.settings import SQS_MAX_RETENTION_DAYS, Settings, SettingsError

REQUIRED = {
    "SITE_URL": "https://www.example.com",
    "TABLE_NAME": "sitemap-registry",
    "BUCKET_NAME": "sitemap-site",
    "REBUILD_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/rebuild.fifo",
    "INDEX_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/index.fifo",
    "INGEST_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/ingest-dlq",
}


def env(**overrides: str) -> dict[str, str]:
    return {**REQUIRED, **overrides}


def problem(environ: dict[str, str]) -> str:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ)
    return str(raised.value)


def test_the_required_variables_and_the_defaults() -> None:
    settings = Settings.from_env(env())

    assert settings.site_url == "https://www.example.com"
    assert settings.table_name == REQUIRED["TABLE_NAME"]
    assert settings.bucket_name == REQUIRED["BUCKET_NAME"]
    assert settings.rebuild_queue_url == REQUIRED["REBUILD_QUEUE_URL"]
    assert settings.index_queue_url == REQUIRED["INDEX_QUEUE_URL"]
    assert settings.ingest_dlq_url == REQUIRED["INGEST_DLQ_URL"]
    assert settings.max_urls_per_shard == 10_000
    assert settings.max_shard_bytes == PROTOCOL_MAX_BYTES == 52_428_800
    assert settings.max_sitemaps_per_index == PROTOCOL_MAX_INDEX_ENTRIES
    assert settings.max_event_bytes == 262_144
    assert settings.tombstone_ttl_days == 30
    assert settings.compress_shards is True
    assert settings.cache_control == "public, max-age=60"
    assert settings.site == Site.parse("https://www.example.com")
    assert settings.limits == Limits(10_000, PROTOCOL_MAX_BYTES, PROTOCOL_MAX_INDEX_ENTRIES)


def test_with_no_argument_it_reads_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env(MAX_URLS_PER_SHARD="123").items():
        monkeypatch.setenv(name, value)

    assert Settings.from_env().max_urls_per_shard == 123


def test_unrelated_variables_are_ignored() -> None:
    settings = Settings.from_env(env(PATH="/usr/bin", AWS_REGION="eu-west-1"))

    assert "PATH" not in settings.to_env()


def test_every_missing_variable_is_named_at_once() -> None:
    message = problem({})

    assert message.startswith("invalid function environment: ")
    for name in REQUIRED:
        assert f"{name}: missing" in message


def test_only_the_missing_variables_are_named() -> None:
    environ = env()
    del environ["TABLE_NAME"], environ["INGEST_DLQ_URL"]

    message = problem(environ)

    assert "TABLE_NAME" in message
    assert "INGEST_DLQ_URL" in message
    for name in set(REQUIRED) - {"TABLE_NAME", "INGEST_DLQ_URL"}:
        assert name not in message


def test_a_settings_error_is_a_value_error() -> None:
    assert issubclass(SettingsError, ValueError)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_URLS_PER_SHARD", str(PROTOCOL_MAX_URLS + 1)),
        ("MAX_URLS_PER_SHARD", "0"),
        ("MAX_SHARD_BYTES", str(PROTOCOL_MAX_BYTES + 1)),
        ("MAX_SHARD_BYTES", "4095"),
        ("MAX_SITEMAPS_PER_INDEX", str(PROTOCOL_MAX_INDEX_ENTRIES + 1)),
        ("MAX_SITEMAPS_PER_INDEX", "0"),
        ("MAX_EVENT_BYTES", "1048577"),
        ("CACHE_MAX_AGE_SECONDS", "-1"),
        ("MAX_URLS_PER_SHARD", "ten thousand"),
        ("MAX_URLS_PER_SHARD", "1.5"),
    ],
)
def test_limits_outside_the_protocol_are_rejected_by_name(name: str, value: str) -> None:
    message = problem(env(**{name: value}))

    assert f"{name}: " in message
    assert message.count(": ") == 2  # "invalid function environment: NAME: why"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_URLS_PER_SHARD", str(PROTOCOL_MAX_URLS)),
        ("MAX_URLS_PER_SHARD", "1"),
        ("MAX_SHARD_BYTES", str(PROTOCOL_MAX_BYTES)),
        ("MAX_SITEMAPS_PER_INDEX", str(PROTOCOL_MAX_INDEX_ENTRIES)),
    ],
)
def test_the_protocol_limits_themselves_are_allowed(name: str, value: str) -> None:
    settings = Settings.from_env(env(**{name: value}))

    assert settings.to_env()[name] == value


def test_the_tombstone_ttl_must_outlive_sqs_retention() -> None:
    assert SQS_MAX_RETENTION_DAYS == 14

    for days in ("14", "7", "0"):
        assert "TOMBSTONE_TTL_DAYS: Input should be greater than 14" in problem(
            env(TOMBSTONE_TTL_DAYS=days)
        )
    assert Settings.from_env(env(TOMBSTONE_TTL_DAYS="15")).tombstone_ttl_days == 15


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        ("on", True),
        ("false", False),
        ("False", False),
        ("0", False),
        ("no", False),
        ("off", False),
    ],
)
def test_booleans_are_parsed(text: str, value: bool) -> None:
    assert Settings.from_env(env(COMPRESS_SHARDS=text)).compress_shards is value


@pytest.mark.parametrize("text", ["maybe", "", "2", "enabled"])
def test_a_bad_boolean_is_rejected_by_name(text: str) -> None:
    assert "COMPRESS_SHARDS: Input should be a valid boolean" in problem(env(COMPRESS_SHARDS=text))


@pytest.mark.parametrize(
    "site_url",
    [
        "ftp://www.example.com",
        "https://www.example.com/blog",
        "www.example.com",
        "https://www.example.com;",  # a host no URL can hold: refused now, not event by event
        "http://[::1]:8080",
    ],
)
def test_a_site_url_that_is_not_an_http_origin_is_rejected(site_url: str) -> None:
    assert "SITE_URL: " in problem(env(SITE_URL=site_url))


def test_the_site_url_is_stored_as_its_origin() -> None:
    settings = Settings.from_env(env(SITE_URL="HTTPS://WWW.Example.COM:443/"))

    assert settings.site_url == "https://www.example.com"
    assert settings.to_env()["SITE_URL"] == "https://www.example.com"


def test_to_env_round_trips_through_from_env() -> None:
    settings = Settings.from_env(
        env(
            SITE_URL="http://127.0.0.1:8080",
            MAX_URLS_PER_SHARD="3",
            MAX_SHARD_BYTES="65536",
            MAX_SITEMAPS_PER_INDEX="2",
            MAX_EVENT_BYTES="2048",
            TOMBSTONE_TTL_DAYS="45",
            COMPRESS_SHARDS="no",
            CACHE_MAX_AGE_SECONDS="0",
        )
    )
    environ = settings.to_env()

    assert Settings.from_env(environ) == settings
    assert Settings.from_env(environ).to_env() == environ
    assert environ["COMPRESS_SHARDS"] == "false"
    assert environ["SITE_URL"] == "http://127.0.0.1:8080"
    assert all(isinstance(value, str) for value in environ.values())


def test_the_defaults_round_trip_too() -> None:
    settings = Settings.from_env(env())

    assert settings.to_env()["COMPRESS_SHARDS"] == "true"
    assert Settings.from_env(settings.to_env()) == settings


def test_env_names_are_the_keys_of_to_env() -> None:
    names = Settings.env_names()

    assert names == set(Settings.from_env(env()).to_env())
    assert set(REQUIRED) <= names
    assert all(name.isupper() for name in names)


def test_settings_are_immutable() -> None:
    settings = Settings.from_env(env())

    with pytest.raises(ValueError, match="frozen"):
        settings.max_urls_per_shard = 5  # type: ignore[misc]


_INVALIDATION_BASE = {
    "SITE_URL": "https://www.example.com",
    "TABLE_NAME": "registry",
    "BUCKET_NAME": "bucket",
    "REBUILD_QUEUE_URL": "https://sqs/rebuild.fifo",
    "INDEX_QUEUE_URL": "https://sqs/index.fifo",
    "INGEST_DLQ_URL": "https://sqs/ingest-dlq",
}


def test_invalidation_is_off_by_default_and_round_trips_through_the_environment() -> None:
    settings = Settings.from_env(_INVALIDATION_BASE)
    assert settings.invalidate_paths is False
    assert settings.distribution_id == ""
    env = settings.to_env()
    assert env["INVALIDATE_PATHS"] == "false"
    assert env["DISTRIBUTION_ID"] == ""
    assert set(env) == Settings.env_names()
    assert Settings.from_env(env) == settings


def test_invalidation_needs_a_distribution() -> None:
    with pytest.raises(SettingsError, match="DISTRIBUTION_ID"):
        Settings.from_env({**_INVALIDATION_BASE, "INVALIDATE_PATHS": "true"})
    on = Settings.from_env(
        {**_INVALIDATION_BASE, "INVALIDATE_PATHS": "true", "DISTRIBUTION_ID": "E2ABC"}
    )
    assert on.invalidate_paths


def test_extra_sitemaps_are_kept_in_order_each_in_its_canonical_spelling() -> None:
    given = " https://www.example.com/shop/sitemap.xml ,https://WWW.example.com/vidéos.xml,"
    settings = Settings.from_env(env(EXTRA_SITEMAPS=given))
    assert settings.index_extras == (
        "https://www.example.com/shop/sitemap.xml",
        "https://www.example.com/vid%C3%A9os.xml",
    )
    assert Settings.from_env(env()).index_extras == ()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("https://shop.example.com/sitemap.xml", "host shop.example.com is not the site's host"),
        ("http://www.example.com/a.xml", "scheme http is not the site's https"),
        ("/shop/sitemap.xml", "not an absolute http(s) URL"),
        ("https://www.example.com/a b.xml", "whitespace"),
        ("https://www.example.com/<a>.xml", "<"),
        (f"https://www.example.com/{'a' * 2048}.xml", "over 2048"),
        ("https://www.example.com/sitemap.xml", "a file the updater writes itself"),
        ("https://www.example.com/sitemap-pages-00001.xml.gz", "a file the updater writes"),
        ("https://www.example.com/sitemap.xsl", "a file the updater writes"),
        ("https://www.example.com/a.xml,https://www.example.com/a.xml", "given twice"),
    ],
)
def test_an_extra_sitemap_the_index_cannot_list_is_refused_at_start(
    given: str, message: str
) -> None:
    found = problem(env(EXTRA_SITEMAPS=given))
    assert "EXTRA_SITEMAPS" in found
    assert message in found


def test_the_feed_is_listed_by_its_setting_not_as_an_extra_sitemap() -> None:
    feed = "https://www.example.com/feed.atom"
    assert Settings.from_env(env(EXTRA_SITEMAPS=feed)).index_extras == (feed,)  # someone's
    assert "leave it out" in problem(env(EXTRA_SITEMAPS=feed, FEED_ENTRIES="10"))


def test_extra_sitemaps_must_leave_room_for_our_shards_in_an_index_file() -> None:
    extras = ",".join(f"https://www.example.com/{n}.xml" for n in range(3))
    assert "leave no room" in problem(env(EXTRA_SITEMAPS=extras, MAX_SITEMAPS_PER_INDEX="3"))
    Settings.from_env(env(EXTRA_SITEMAPS=extras, MAX_SITEMAPS_PER_INDEX="4"))


def test_the_sitemap_format_is_xml_or_txt() -> None:
    assert Settings.from_env(env()).shard_format.text is False
    assert Settings.from_env(env(SITEMAP_FORMAT="txt")).shard_format.key("pages-00001") == (
        "sitemap-pages-00001.txt"
    )
    assert "SITEMAP_FORMAT" in problem(env(SITEMAP_FORMAT="csv"))
