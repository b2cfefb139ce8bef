"""The stack and the code agree: every function's environment is the settings model's
variables (plus Powertools'), and the queues and table are what `sitemap-updater local`
creates on moto."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from moto import mock_aws

from sitemap_infra.config import validated_settings
from sitemap_infra.functions import powertools_environment
from sitemap_updater.local.stack import create_resources
from sitemap_updater.resources import (
    FUNCTIONS,
    METRICS_NAMESPACE,
    RESOURCE_SETTINGS,
    SERVICE_NAME,
    TABLE,
)
from sitemap_updater.settings import Settings
from tests.infra.conftest import SITE, Synthesized

POWERTOOLS = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}
RESOURCE_ENV = {Settings.model_fields[name].alias for name in RESOURCE_SETTINGS}


def environment(synth: Synthesized, name: str) -> dict[str, Any]:
    function_id = synth.logical_id(synth.stack.updater.functions[name])
    function = synth.resources("AWS::Lambda::Function")[function_id]
    return dict(function["Properties"]["Environment"]["Variables"])


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda spec: spec.name)
def test_environment_is_the_settings_model(synthesized: Synthesized, spec: Any) -> None:
    env = environment(synthesized, spec.name)
    assert set(env) == Settings.env_names() | POWERTOOLS
    service = synthesized.stack.updater.service
    assert {k: env[k] for k in POWERTOOLS} == powertools_environment(service)
    stack = synthesized.stack.stack_name
    assert env["POWERTOOLS_SERVICE_NAME"] == f"{SERVICE_NAME}:{stack}/SitemapUpdater"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE


def test_literal_values_are_the_validated_context(configured: Synthesized) -> None:
    env = environment(configured, "rebuild")
    literal = {k: v for k, v in env.items() if k in Settings.env_names() - RESOURCE_ENV}
    expected = validated_settings(
        {
            "site_url": SITE,
            "max_urls_per_shard": "5000",
            "compress_shards": "false",
            "cache_max_age_seconds": "120",
            "invalidate_paths": "true",
            "feed_entries": "20",
            "sitemap_format": "txt",
            "extra_sitemaps": f"{SITE}/shop/sitemap.xml",
        }
    ).to_env()
    assert literal == {k: v for k, v in expected.items() if k not in RESOURCE_ENV}
    assert literal["MAX_URLS_PER_SHARD"] == "5000"
    assert literal["SITE_URL"] == SITE


def test_every_function_starts_with_the_synthesized_environment(default: Synthesized) -> None:
    """What the code does at cold start: Settings.from_env on the environment (resource
    references stand in as names)."""
    for spec in FUNCTIONS:
        env = environment(default, spec.name)
        resolved = {k: v if isinstance(v, str) else json.dumps(v) for k, v in env.items()}
        settings = Settings.from_env(resolved)
        assert settings.site_url == SITE


def test_resource_variables_name_the_stacks_resources(default: Synthesized) -> None:
    updater = default.stack.updater
    env = environment(default, "ingest")
    assert env["TABLE_NAME"] == {"Ref": default.logical_id(updater.storage.table)}
    assert env["BUCKET_NAME"] == {"Ref": default.logical_id(updater.storage.bucket)}
    assert env["REBUILD_QUEUE_URL"] == {"Ref": default.logical_id(updater.queues["rebuild"].queue)}
    assert env["INDEX_QUEUE_URL"] == {"Ref": default.logical_id(updater.queues["index"].queue)}
    assert env["INGEST_DLQ_URL"] == {
        "Ref": default.logical_id(updater.queues["ingest"].dead_letter)
    }
    assert env["DISTRIBUTION_ID"] == {"Ref": default.logical_id(updater.distribution)}


def _local_queue_attributes() -> dict[str, dict[str, Any]]:
    """Each function's queue and DLQ as `sitemap-updater local` creates them on moto."""
    with mock_aws():
        local = create_resources(SITE)
        sqs = boto3.client("sqs", region_name="us-east-1")
        found = {}
        for name, queue in local.queues.items():
            attributes = sqs.get_queue_attributes(QueueUrl=queue.url, AttributeNames=["All"])
            dlq = sqs.get_queue_attributes(QueueUrl=queue.dlq_url, AttributeNames=["All"])
            found[name] = {"queue": attributes["Attributes"], "dlq": dlq["Attributes"]}
        return found


def test_queues_match_the_local_runtime(default: Synthesized) -> None:
    local = _local_queue_attributes()
    queues = default.resources("AWS::SQS::Queue")
    for spec in FUNCTIONS:
        pair = default.stack.updater.queues[spec.name]
        deployed = queues[default.logical_id(pair.queue)]["Properties"]
        deployed_dlq = queues[default.logical_id(pair.dead_letter)]["Properties"]
        mine = local[spec.name]["queue"]
        assert int(mine["VisibilityTimeout"]) == deployed["VisibilityTimeout"]
        assert int(mine["MessageRetentionPeriod"]) == deployed["MessageRetentionPeriod"]
        assert mine.get("FifoQueue") == ("true" if spec.fifo else None)
        assert deployed.get("FifoQueue", False) is spec.fifo
        assert (
            json.loads(mine["RedrivePolicy"])["maxReceiveCount"]
            == (deployed["RedrivePolicy"]["maxReceiveCount"])
        )
        dlq = local[spec.name]["dlq"]
        assert int(dlq["MessageRetentionPeriod"]) == deployed_dlq["MessageRetentionPeriod"]


def test_table_matches_the_local_runtime(default: Synthesized) -> None:
    with mock_aws():
        local = create_resources(SITE)
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        table = dynamodb.describe_table(TableName=local.settings.table_name)["Table"]
        ttl = dynamodb.describe_time_to_live(TableName=local.settings.table_name)
    (deployed,) = default.resources("AWS::DynamoDB::Table").values()
    assert table["KeySchema"] == deployed["Properties"]["KeySchema"]
    assert table["BillingModeSummary"]["BillingMode"] == deployed["Properties"]["BillingMode"]
    assert ttl["TimeToLiveDescription"]["AttributeName"] == TABLE.ttl_attribute
    assert deployed["Properties"]["TimeToLiveSpecification"]["AttributeName"] == TABLE.ttl_attribute
