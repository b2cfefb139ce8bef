"""Context is validated at synth, by the code's own settings model, with clear messages."""

from __future__ import annotations

from typing import Any

import pytest

from sitemap_infra.app import create_app
from sitemap_infra.config import (
    DEFAULT_STACK_NAME,
    SETTING_KEYS,
    ConfigError,
    read_context,
    validated_concurrency,
    validated_settings,
)
from sitemap_updater.settings import Settings
from tests.infra.conftest import CERTIFICATE_ARN, SITE, TOPIC_ARN, app_context

FLAGS = {"@aws-cdk/core:enablePartitionLiterals": True, "aws:cdk:bundling-stacks": []}


def test_defaults_are_the_settings_models() -> None:
    config = read_context({**FLAGS, "site_url": SITE})
    defaults = Settings.model_fields
    assert config.resolved.max_urls_per_shard == defaults["max_urls_per_shard"].default
    assert config.resolved.compress_shards is True
    assert config.resolved.invalidate_paths is False
    assert config.stack_name == DEFAULT_STACK_NAME
    assert config.domain_name is None
    assert config.alarm_topic_arn is None


def test_context_strings_are_parsed_like_the_function_environment() -> None:
    config = read_context(
        {
            "site_url": "HTTPS://WWW.Example.com/",
            "max_urls_per_shard": "5000",
            "compress_shards": "false",
            "invalidate_paths": "true",
        }
    )
    assert config.resolved.site_url == SITE
    assert config.resolved.max_urls_per_shard == 5000
    assert config.resolved.compress_shards is False
    assert config.resolved.invalidate_paths is True


def test_setting_keys_are_the_tunable_settings() -> None:
    assert set(SETTING_KEYS) == {
        "site_url",
        "max_urls_per_shard",
        "max_shard_bytes",
        "max_sitemaps_per_index",
        "max_event_bytes",
        "tombstone_ttl_days",
        "compress_shards",
        "reconcile_period_hours",
        "cache_max_age_seconds",
        "invalidate_paths",
        "group_rules",
        "news_groups",
        "stylesheet",
        "indexnow_key",
        "indexnow_endpoint",
        "extra_sitemaps",
        "sitemap_format",
        "feed_entries",
    }


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({}, "site_url is required"),
        ({"site_url": "ftp://www.example.com"}, "site_url='ftp://www.example.com'"),
        ({"site_url": SITE, "max_urls_per_shard": "60000"}, "max_urls_per_shard='60000'.*50000"),
        ({"site_url": SITE, "max_urls_per_shard": "lots"}, "max_urls_per_shard='lots'"),
        ({"site_url": SITE, "compress_shards": "perhaps"}, "compress_shards='perhaps'"),
        ({"site_url": SITE, "tombstone_ttl_days": "7"}, "tombstone_ttl_days='7'"),
        ({"site_url": SITE, "max_url_per_shard": "5"}, "unknown context key.*max_url_per_shard"),
        ({"site_url": SITE, "table_name": "mine"}, "unknown context key.*table_name"),
        ({"site_url": SITE, "domain_name": "www.example.com"}, "give both or neither"),
        ({"site_url": SITE, "certificate_arn": CERTIFICATE_ARN}, "give both or neither"),
        (
            {
                "site_url": SITE,
                "domain_name": "sitemaps.example.com",
                "certificate_arn": CERTIFICATE_ARN,
            },
            "must be the site's host",
        ),
        (
            {
                "site_url": SITE,
                "domain_name": "www.example.com",
                "certificate_arn": CERTIFICATE_ARN.replace("us-east-1", "eu-west-1"),
            },
            "us-east-1",
        ),
        ({"site_url": SITE, "alarm_topic_arn": "on-call"}, "not an SNS topic ARN"),
        ({"site_url": SITE, "stack_name": "1st"}, "stack_name='1st'"),
        ({"site_url": SITE, "alarm_email": "on-call"}, "not an e-mail address"),
        ({"site_url": SITE, "rebuild_max_concurrency": "1"}, "rebuild_max_concurrency='1'"),
        ({"site_url": SITE, "index_max_concurrency": "2.5"}, "from 2 to 1000"),
        ({"site_url": SITE, "ingest_max_concurrency": 1001}, "from 2 to 1000"),
        ({"site_url": SITE, "rebuild_concurrency": "5"}, "unknown context key"),
    ],
)
def test_bad_context_fails_with_a_message_naming_the_key(
    context: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        read_context({**FLAGS, **context})


def test_a_full_configuration_is_accepted() -> None:
    config = read_context(
        {
            "site_url": SITE,
            "domain_name": "www.example.com",
            "certificate_arn": CERTIFICATE_ARN,
            "alarm_topic_arn": TOPIC_ARN,
            "stack_name": "Sitemaps-Prod",
        }
    )
    assert config.certificate_arn == CERTIFICATE_ARN
    assert config.stack_name == "Sitemaps-Prod"


def test_max_concurrency_per_function() -> None:
    config = read_context({"site_url": SITE, "rebuild_max_concurrency": "20"})
    assert config.max_concurrency == {"rebuild": 20}
    with pytest.raises(ConfigError, match="unknown function"):
        validated_concurrency({"rebuilds": 20})


def test_the_construct_validates_its_settings_too() -> None:
    with pytest.raises(ConfigError, match="unknown setting"):
        validated_settings({"site_url": SITE, "bucket_name": "x"})
    with pytest.raises(ConfigError, match="max_shard_bytes=1"):
        validated_settings({"site_url": SITE, "max_shard_bytes": 1})


def test_the_app_refuses_to_synthesize_a_bad_context() -> None:
    with pytest.raises(ConfigError, match="site_url is required"):
        create_app(app_context())
    with pytest.raises(ConfigError, match="subscribes the stack's own alarm topic"):
        create_app(
            app_context(site_url=SITE, alarm_email="a@example.com", alarm_topic_arn=TOPIC_ARN)
        )
