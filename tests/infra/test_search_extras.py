"""The human view and IndexNow in the template: IndexNow's queue, dead-letter queue, function,
event source and alarms exist only when it is on; every function may do exactly what its code
does (the index function writes exactly the two static files); the environments are the
settings model; the attach mode routes /sitemap.xsl and /<key>.txt to the bucket; cdk-nag
stays clean."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from aws_cdk import App, Validations
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks
from moto import mock_aws

from sitemap_infra.cdn import PATH_PATTERNS
from sitemap_infra.monitoring import age_threshold_seconds
from sitemap_updater.local.stack import create_resources
from sitemap_updater.resources import INDEXNOW, VISIBILITY_TIMEOUT_FACTOR
from sitemap_updater.settings import Settings
from tests.infra.conftest import SITE, Synthesized, app_context, synthesize
from tests.infra.test_construct import SiteStack
from tests.infra.test_environment import POWERTOOLS, environment
from tests.infra.test_nag import ACKNOWLEDGED, _acknowledgements
from tests.infra.test_permissions import CONSUME, LOGS, XRAY, _log_group, expected, grants
from tests.infra.test_stack import function_of, queues, ref

KEY = "f0e1d2c3b4a5968778695a4b3c2d1e0f"


@pytest.fixture(scope="module")
def extras() -> Synthesized:
    """``cdk synth -c site_url=... -c stylesheet=true -c indexnow_key=...``."""
    return synthesize(site_url=SITE, stylesheet="true", indexnow_key=KEY)


def test_indexnow_has_its_own_standard_queue_and_dead_letter_queue(extras: Synthesized) -> None:
    pair = extras.stack.updater.queues[INDEXNOW.name]
    queue = queues(extras)[extras.logical_id(pair.queue)]["Properties"]
    dlq = queues(extras)[extras.logical_id(pair.dead_letter)]["Properties"]
    assert "FifoQueue" not in queue
    assert "FifoQueue" not in dlq
    # AWS's guidance for an SQS source: six times the timeout, plus the batching window.
    assert queue["VisibilityTimeout"] == (
        VISIBILITY_TIMEOUT_FACTOR * INDEXNOW.timeout_seconds + INDEXNOW.batching_window_seconds
    )
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [extras.logical_id(pair.dead_letter), "Arn"]},
        "maxReceiveCount": INDEXNOW.max_receive_count,
    }
    assert queue["SqsManagedSseEnabled"] is dlq["SqsManagedSseEnabled"] is True
    tls_only = {
        ref(q)
        for policy in extras.resources("AWS::SQS::QueuePolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Deny"
        and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for q in policy["Properties"]["Queues"]
    }
    assert {extras.logical_id(pair.queue), extras.logical_id(pair.dead_letter)} <= tls_only


def test_the_indexnow_function_and_its_event_source(extras: Synthesized) -> None:
    function_id, function = function_of(extras, INDEXNOW.name)
    props = function["Properties"]
    assert props["Handler"] == INDEXNOW.handler == "sitemap_updater.handlers.indexnow.handler"
    assert props["Timeout"] == INDEXNOW.timeout_seconds
    assert props["MemorySize"] == INDEXNOW.memory_mb
    assert props["TracingConfig"] == {"Mode": "Active"}
    (mapping,) = [
        m["Properties"]
        for m in extras.resources("AWS::Lambda::EventSourceMapping").values()
        if ref(m["Properties"]["FunctionName"]) == function_id
    ]
    pair = extras.stack.updater.queues[INDEXNOW.name]
    assert ref(mapping["EventSourceArn"]) == extras.logical_id(pair.queue)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BatchSize"] == INDEXNOW.batch_size == 1000
    assert mapping["MaximumBatchingWindowInSeconds"] == INDEXNOW.batching_window_seconds == 60
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": 2}  # few submissions at once
    visibility = queues(extras)[extras.logical_id(pair.queue)]["Properties"]["VisibilityTimeout"]
    assert visibility >= VISIBILITY_TIMEOUT_FACTOR * props["Timeout"]
    assert visibility >= props["Timeout"] + INDEXNOW.batching_window_seconds


def test_off_there_is_no_indexnow_resource(default: Synthesized) -> None:
    assert INDEXNOW.name not in default.stack.updater.queues.pairs
    assert INDEXNOW.name not in default.stack.updater.functions.functions
    assert len(default.resources("AWS::Lambda::Function")) == 4  # with the reconciler
    assert len(default.resources("AWS::SQS::Queue")) == 7  # three pairs and the sweep's DLQ


# -- permissions ----------------------------------------------------------------------------


def each(actions: set[str], *resources: str) -> set[tuple[str, str]]:
    return {(action, resource) for action in actions for resource in resources}


def test_each_function_gets_exactly_what_it_calls(extras: Synthesized) -> None:
    updater = extras.stack.updater
    bucket = f"{extras.logical_id(updater.storage.bucket)}.Arn"
    pair = updater.queues[INDEXNOW.name]
    queue = f"{extras.logical_id(pair.queue)}.Arn"
    dlq = f"{extras.logical_id(pair.dead_letter)}.Arn"
    files = each({"s3:GetObject", "s3:PutObject"}, f"{bucket}/sitemap.xsl", f"{bucket}/{KEY}.txt")
    assert grants(extras, "ingest") == expected(extras, "ingest", False) | each(
        {"sqs:SendMessage"}, queue
    )
    assert grants(extras, "rebuild") == expected(extras, "rebuild", False)
    assert grants(extras, "index") == expected(extras, "index", False) | files
    assert grants(extras, INDEXNOW.name) == (
        each(XRAY, "*")
        | each(LOGS, _log_group(extras, INDEXNOW.name))
        | each(CONSUME, queue)
        | each({"sqs:SendMessage"}, dlq)
    )


# -- environments ---------------------------------------------------------------------------


def test_every_function_gets_the_settings_model(extras: Synthesized) -> None:
    updater = extras.stack.updater
    pair = updater.queues[INDEXNOW.name]
    for name in ("ingest", "rebuild", "index", INDEXNOW.name):
        env = environment(extras, name)
        assert set(env) == Settings.env_names() | POWERTOOLS
        assert env["STYLESHEET"] == "true"
        assert env["INDEXNOW_KEY"] == KEY
        assert env["INDEXNOW_ENDPOINT"] == "https://api.indexnow.org/indexnow"
        assert env["INDEXNOW_QUEUE_URL"] == {"Ref": extras.logical_id(pair.queue)}
        assert env["INDEXNOW_DLQ_URL"] == {"Ref": extras.logical_id(pair.dead_letter)}
        resolved = {k: v if isinstance(v, str) else json.dumps(v) for k, v in env.items()}
        settings = Settings.from_env(resolved)  # what the function does at cold start
        assert settings.indexnow_key_file == f"{KEY}.txt"
        assert settings.stylesheet_href == "/sitemap.xsl"


def test_off_the_variables_are_empty(default: Synthesized) -> None:
    env = environment(default, "ingest")
    assert (env["STYLESHEET"], env["INDEXNOW_KEY"], env["INDEXNOW_QUEUE_URL"]) == ("false", "", "")


def test_the_queue_matches_the_local_runtime(extras: Synthesized) -> None:
    with mock_aws():
        local = create_resources(SITE, {"INDEXNOW_KEY": KEY})
        sqs = boto3.client("sqs", region_name="us-east-1")
        mine = local.queues[INDEXNOW.name]
        attributes = sqs.get_queue_attributes(QueueUrl=mine.url, AttributeNames=["All"])
        found: dict[str, Any] = attributes["Attributes"]
        assert local.settings.indexnow_queue_url == mine.url
        assert local.settings.indexnow_dlq_url == mine.dlq_url
    pair = extras.stack.updater.queues[INDEXNOW.name]
    deployed = queues(extras)[extras.logical_id(pair.queue)]["Properties"]
    assert int(found["VisibilityTimeout"]) == deployed["VisibilityTimeout"]
    assert int(found["MessageRetentionPeriod"]) == deployed["MessageRetentionPeriod"]
    assert "FifoQueue" not in found
    assert json.loads(found["RedrivePolicy"])["maxReceiveCount"] == INDEXNOW.max_receive_count


# -- monitoring and outputs -------------------------------------------------------------------


def test_indexnow_alarms(extras: Synthesized) -> None:
    found = [a["Properties"] for a in extras.resources("AWS::CloudWatch::Alarm").values()]
    pair = extras.stack.updater.queues[INDEXNOW.name]
    function_id, _ = function_of(extras, INDEXNOW.name)

    def on(metric: str, dimension: str) -> dict[str, Any]:
        (alarm,) = [
            a
            for a in found
            if a.get("MetricName") == metric
            and any(
                ref(d["Value"]) == dimension
                for d in a["Dimensions"]
                if isinstance(d["Value"], dict)
            )
        ]
        return alarm

    assert on("ApproximateNumberOfMessagesVisible", extras.logical_id(pair.dead_letter))
    age = on("ApproximateAgeOfOldestMessage", extras.logical_id(pair.queue))
    assert age["Threshold"] == age_threshold_seconds(INDEXNOW)
    assert on("Errors", function_id)["Threshold"] == 1
    assert on("Throttles", function_id)["Threshold"] == 1
    assert on("Duration", function_id)["Threshold"] == 0.8 * INDEXNOW.timeout_seconds * 1000
    (lost,) = [a for a in found if a.get("MetricName") == "IndexNowUrlsNotQueued"]
    assert lost["Namespace"] == "SitemapUpdater"
    assert lost["Threshold"] == 1
    assert (
        len(found) == 5 * 4 + 1 + 3 + 2 + 1
    )  # per function, IndexNow's, the stack's, reconcile's, freshness


def test_outputs_carry_the_new_settings(extras: Synthesized) -> None:
    outputs = extras.template.find_outputs("*")
    pair = extras.stack.updater.queues[INDEXNOW.name]
    assert outputs["Stylesheet"]["Value"] == "true"
    assert outputs["IndexnowKey"]["Value"] == KEY
    assert outputs["IndexnowQueueUrl"]["Value"] == {"Ref": extras.logical_id(pair.queue)}
    assert outputs["IndexnowDlqUrl"]["Value"] == {"Ref": extras.logical_id(pair.dead_letter)}


def test_cdk_nag_stays_clean_with_no_new_acknowledgement(extras: Synthesized) -> None:
    report = AwsSolutionsChecks(extras.app).validate_scope(extras.app)
    assert [v.rule_name for v in report.violations] == []
    assert set(_acknowledgements(extras)) == ACKNOWLEDGED


# -- attached to the site's own distribution ---------------------------------------------------


def test_attached_the_static_files_become_behaviours_too() -> None:
    app = App(context=app_context())
    stack = SiteStack(app, "Site", stylesheet=True, indexnow_key=KEY)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    template = Template.from_stack(stack).to_json()  # raises on a cdk-nag finding
    (distribution,) = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::CloudFront::Distribution"
    ]
    config = distribution["Properties"]["DistributionConfig"]
    behaviors = {b["PathPattern"]: b for b in config["CacheBehaviors"]}
    assert set(behaviors) == {*PATH_PATTERNS, "/sitemap.xsl", f"/{KEY}.txt"}
    bucket_origin = next(o for o in config["Origins"] if "S3OriginConfig" in o)
    for pattern in ("/sitemap.xsl", f"/{KEY}.txt"):
        assert behaviors[pattern]["TargetOriginId"] == bucket_origin["Id"]
        assert behaviors[pattern]["ViewerProtocolPolicy"] == "redirect-to-https"
