"""Template assertions: what `cdk deploy` creates, and how each piece is configured."""

from __future__ import annotations

from typing import Any

import pytest

from sitemap_infra.cdn import MAX_TTL_SECONDS
from sitemap_infra.monitoring import age_threshold_seconds
from sitemap_updater.resources import (
    DLQ_RETENTION_DAYS,
    EXTRA_OUTPUTS,
    FUNCTIONS,
    INDEX,
    MAX_MESSAGE_BYTES,
    NEWS_SWEEP_MINUTES,
    QUEUE_RETENTION_DAYS,
    RECONCILE,
    TABLE,
    VISIBILITY_TIMEOUT_FACTOR,
    output_key,
)
from sitemap_updater.settings import Settings
from tests.infra.conftest import CERTIFICATE_ARN, SITE, TOPIC_ARN, Synthesized, synthesize

DAY = 86_400


def ref(value: Any) -> str:
    """The logical ID a Ref / Fn::GetAtt points at."""
    if "Ref" in value:
        return str(value["Ref"])
    return str(value["Fn::GetAtt"][0])


def function_of(synth: Synthesized, name: str) -> tuple[str, dict[str, Any]]:
    return synth.logical_id(synth.stack.updater.functions[name]), synth.resources(
        "AWS::Lambda::Function"
    )[synth.logical_id(synth.stack.updater.functions[name])]


# -- the registry -------------------------------------------------------------------------


def test_registry_table(synthesized: Synthesized) -> None:
    (table,) = synthesized.resources("AWS::DynamoDB::Table").values()
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["KeySchema"] == [
        {"AttributeName": TABLE.partition_key, "KeyType": "HASH"},
        {"AttributeName": TABLE.sort_key, "KeyType": "RANGE"},
    ]
    assert props["AttributeDefinitions"] == [
        {"AttributeName": TABLE.partition_key, "AttributeType": "S"},
        {"AttributeName": TABLE.sort_key, "AttributeType": "S"},
        {"AttributeName": TABLE.shard_attribute, "AttributeType": "S"},
    ]
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {
        "AttributeName": TABLE.ttl_attribute,
        "Enabled": True,
    }
    (index,) = props["GlobalSecondaryIndexes"]  # URL records by shard: the reconciler's
    assert index["IndexName"] == TABLE.shard_index
    assert index["KeySchema"] == [{"AttributeName": TABLE.shard_attribute, "KeyType": "HASH"}]
    assert index["Projection"] == {
        "ProjectionType": "INCLUDE",
        "NonKeyAttributes": list(TABLE.shard_index_attributes),
    }
    assert "TableName" not in props  # no hard-coded physical names
    assert props["DeletionProtectionEnabled"] is True
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"


# -- the bucket ---------------------------------------------------------------------------


def test_site_bucket_is_private_encrypted_versioned_and_retained(default: Synthesized) -> None:
    bucket_id = default.logical_id(default.stack.updater.storage.bucket)
    bucket = default.resources("AWS::S3::Bucket")[bucket_id]
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    assert rule["NoncurrentVersionExpiration"]["NoncurrentDays"] > 0
    assert rule["ExpiredObjectDeleteMarker"] is True
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert "LoggingConfiguration" in props
    assert "BucketName" not in props
    assert bucket["DeletionPolicy"] == "Retain"


def _policy_statements(synth: Synthesized, bucket: Any) -> list[dict[str, Any]]:
    bucket_id = synth.logical_id(bucket)
    (policy,) = [
        p
        for p in synth.resources("AWS::S3::BucketPolicy").values()
        if ref(p["Properties"]["Bucket"]) == bucket_id
    ]
    return list(policy["Properties"]["PolicyDocument"]["Statement"])


@pytest.mark.parametrize("which", ["bucket", "logs"])
def test_buckets_refuse_plain_http_and_old_tls(default: Synthesized, which: str) -> None:
    statements = _policy_statements(default, getattr(default.stack.updater.storage, which))
    conditions = [s["Condition"] for s in statements if s["Effect"] == "Deny"]
    assert {"Bool": {"aws:SecureTransport": "false"}} in conditions
    assert {"NumericLessThan": {"s3:TlsVersion": 1.2}} in conditions


def test_only_the_distribution_reads_the_bucket(default: Synthesized) -> None:
    statements = _policy_statements(default, default.stack.updater.storage.bucket)
    allows = [s for s in statements if s["Effect"] == "Allow"]
    (read,) = allows
    assert read["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert read["Action"] == ["s3:GetObject", "s3:ListBucket"]
    distribution = default.logical_id(default.stack.updater.distribution)
    source = read["Condition"]["StringEquals"]["AWS:SourceArn"]
    assert {"Ref": distribution} in source["Fn::Join"][1]


# -- the queues ---------------------------------------------------------------------------


def queues(synth: Synthesized) -> dict[str, dict[str, Any]]:
    return synth.resources("AWS::SQS::Queue")


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda spec: spec.name)
def test_each_queue_and_its_dead_letter_queue(default: Synthesized, spec: Any) -> None:
    pair = default.stack.updater.queues[spec.name]
    queue = queues(default)[default.logical_id(pair.queue)]["Properties"]
    dlq = queues(default)[default.logical_id(pair.dead_letter)]["Properties"]
    assert queue.get("FifoQueue", False) is spec.fifo
    assert dlq.get("FifoQueue", False) is spec.fifo  # a FIFO queue needs a FIFO DLQ
    assert queue["VisibilityTimeout"] == spec.visibility_timeout_seconds
    assert queue["MessageRetentionPeriod"] == QUEUE_RETENTION_DAYS * DAY
    assert dlq["MessageRetentionPeriod"] == DLQ_RETENTION_DAYS * DAY
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [default.logical_id(pair.dead_letter), "Arn"]},
        "maxReceiveCount": spec.max_receive_count,
    }
    for props in (queue, dlq):
        assert props["SqsManagedSseEnabled"] is True
        assert "QueueName" not in props
        # Set, not left to SQS's default (256 KiB until SQS raised its limit in 2025): a rejected
        # event of up to MAX_EVENT_BYTES is dead-lettered whole, with its reason.
        assert props["MaximumMessageSize"] == MAX_MESSAGE_BYTES == 1_048_576
    assert queue.get("ContentBasedDeduplication", False) is spec.content_based_deduplication


def test_the_index_runs_on_a_schedule_for_news_ageing(default: Synthesized) -> None:
    """News leaves the sitemaps two days after publication with no new event: a rule sends
    the index queue a message every NEWS_SWEEP_MINUTES (its FIFO group is the index's)."""
    rule = default.resources("AWS::Events::Rule")[
        default.logical_id(default.stack.updater.news_sweep)
    ]["Properties"]
    assert rule["ScheduleExpression"] == f"rate({NEWS_SWEEP_MINUTES} minutes)"
    assert rule["State"] == "ENABLED"
    (target,) = rule["Targets"]
    index = default.stack.updater.queues[INDEX.name].queue
    assert target["Arn"] == {"Fn::GetAtt": [default.logical_id(index), "Arn"]}
    assert target["SqsParameters"] == {"MessageGroupId": "index"}


def test_every_queue_refuses_plain_http(default: Synthesized) -> None:
    policies = default.resources("AWS::SQS::QueuePolicy").values()
    protected = {
        ref(queue)
        for policy in policies
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Deny"
        and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        for queue in policy["Properties"]["Queues"]
    }
    assert protected == set(queues(default))


# -- the functions ------------------------------------------------------------------------


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda spec: spec.name)
def test_functions(default: Synthesized, spec: Any) -> None:
    _, function = function_of(default, spec.name)
    props = function["Properties"]
    assert props["Runtime"] == "python3.12"
    assert props["Architectures"] == ["arm64"]
    assert props["Handler"] == spec.handler
    assert props["Timeout"] == spec.timeout_seconds
    assert props["MemorySize"] == spec.memory_mb
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert "FunctionName" not in props
    log_group = default.resources("AWS::Logs::LogGroup")[ref(props["LoggingConfig"]["LogGroup"])]
    assert log_group["Properties"]["RetentionInDays"] == 30
    # No START/END/REPORT lines; the functions' own INFO lines and EMF metrics kept.
    logging = {k: v for k, v in props["LoggingConfig"].items() if k != "LogGroup"}
    assert logging == {"LogFormat": "JSON", "SystemLogLevel": "WARN", "ApplicationLogLevel": "INFO"}


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda spec: spec.name)
def test_event_sources_report_batch_item_failures(default: Synthesized, spec: Any) -> None:
    function_id, function = function_of(default, spec.name)
    (mapping,) = [
        m["Properties"]
        for m in default.resources("AWS::Lambda::EventSourceMapping").values()
        if ref(m["Properties"]["FunctionName"]) == function_id
    ]
    queue_id = default.logical_id(default.stack.updater.queues[spec.name].queue)
    assert ref(mapping["EventSourceArn"]) == queue_id
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BatchSize"] == spec.batch_size
    if spec.fifo:  # Lambda rejects a batching window on a FIFO queue
        assert "MaximumBatchingWindowInSeconds" not in mapping
    else:
        assert mapping["MaximumBatchingWindowInSeconds"] == spec.batching_window_seconds > 0
    queue = queues(default)[queue_id]["Properties"]
    timeout = function["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= VISIBILITY_TIMEOUT_FACTOR * timeout
    # Every mapping is bounded: a burst never takes the account's concurrency.
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": spec.max_concurrency}
    assert {"ingest": 5, "rebuild": 5, "index": 2}[spec.name] == spec.max_concurrency


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda spec: spec.name)
def test_throttling_outlasts_the_alarm_before_it_can_dead_letter(
    default: Synthesized, spec: Any
) -> None:
    """docs/RELIABILITY.md#throttling: the mapping's maximum concurrency keeps a burst from
    throttling at all; throttling from outside must last maxReceiveCount visibility timeouts
    without a break to dead-letter a message, and the throttles alarm fires well before."""
    pair = default.stack.updater.queues[spec.name]
    queue = queues(default)[default.logical_id(pair.queue)]["Properties"]
    visibility = queue["VisibilityTimeout"]
    assert visibility >= VISIBILITY_TIMEOUT_FACTOR * spec.timeout_seconds
    assert visibility >= spec.timeout_seconds + spec.batching_window_seconds
    to_dead_letter = queue["RedrivePolicy"]["maxReceiveCount"] * visibility
    assert to_dead_letter >= 15 * 60
    function_id, _ = function_of(default, spec.name)
    throttles = by_metric(default)["Throttles", function_id]
    alarm_after = throttles["Period"] * throttles["DatapointsToAlarm"]
    assert alarm_after <= 10 * 60 < to_dead_letter


def test_max_concurrency_comes_from_context() -> None:
    synth = synthesize(site_url=SITE, rebuild_max_concurrency="12", index_max_concurrency=3)
    found = {
        ref(m["Properties"]["FunctionName"]): m["Properties"]["ScalingConfig"]
        for m in synth.resources("AWS::Lambda::EventSourceMapping").values()
    }
    functions = synth.stack.updater.functions
    assert found == {
        synth.logical_id(functions["ingest"]): {"MaximumConcurrency": 5},
        synth.logical_id(functions["rebuild"]): {"MaximumConcurrency": 12},
        synth.logical_id(functions["index"]): {"MaximumConcurrency": 3},
    }


# -- CloudFront ---------------------------------------------------------------------------


def distribution_config(synth: Synthesized) -> dict[str, Any]:
    (distribution,) = synth.resources("AWS::CloudFront::Distribution").values()
    return dict(distribution["Properties"]["DistributionConfig"])


def test_distribution_reads_the_bucket_through_origin_access_control(
    default: Synthesized,
) -> None:
    config = distribution_config(default)
    (origin,) = config["Origins"]
    (oac_id,) = default.resources("AWS::CloudFront::OriginAccessControl")
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": [oac_id, "Id"]}
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}
    (oac,) = default.resources("AWS::CloudFront::OriginAccessControl").values()
    assert oac["Properties"]["OriginAccessControlConfig"]["SigningBehavior"] == "always"
    behavior = config["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
    assert behavior["AllowedMethods"] == ["GET", "HEAD"]
    assert behavior["Compress"] is True
    assert config["HttpVersion"] == "http2and3"
    assert config["Logging"]["Bucket"]["Fn::GetAtt"][0] == default.logical_id(
        default.stack.updater.storage.logs
    )


def test_custom_domain_requires_a_modern_tls_policy(configured: Synthesized) -> None:
    config = distribution_config(configured)
    assert config["Aliases"] == ["www.example.com"]
    assert config["ViewerCertificate"] == {
        "AcmCertificateArn": CERTIFICATE_ARN,
        "MinimumProtocolVersion": "TLSv1.2_2025",
        "SslSupportMethod": "sni-only",
    }


@pytest.mark.parametrize(("fixture", "default_ttl"), [("default", 60), ("configured", 120)])
def test_cache_policy_fits_sitemaps(
    request: pytest.FixtureRequest, fixture: str, default_ttl: int
) -> None:
    synth: Synthesized = request.getfixturevalue(fixture)
    (policy,) = synth.resources("AWS::CloudFront::CachePolicy").values()
    config = policy["Properties"]["CachePolicyConfig"]
    assert config["DefaultTTL"] == default_ttl  # the objects' own max-age
    assert config["MinTTL"] == 0
    assert config["MaxTTL"] == MAX_TTL_SECONDS
    keys = config["ParametersInCacheKeyAndForwardedToOrigin"]
    assert keys["QueryStringsConfig"] == {"QueryStringBehavior": "none"}
    assert keys["CookiesConfig"] == {"CookieBehavior": "none"}
    assert keys["EnableAcceptEncodingGzip"] is True
    assert distribution_config(synth)["DefaultCacheBehavior"]["CachePolicyId"] == {
        "Ref": next(iter(synth.resources("AWS::CloudFront::CachePolicy")))
    }


# CloudFront's names are global to the account, not regional: without the region in them,
# the same stack deployed to a second region fails on "already exists".
ACCOUNT_GLOBAL_NAMES = {
    "AWS::CloudFront::CachePolicy": ("CachePolicyConfig", "Name"),
    "AWS::CloudFront::ResponseHeadersPolicy": ("ResponseHeadersPolicyConfig", "Name"),
    "AWS::CloudFront::OriginAccessControl": ("OriginAccessControlConfig", "Name"),
}


def test_cloudfront_names_differ_per_region(synthesized: Synthesized) -> None:
    found = 0
    for kind, (config, key) in ACCOUNT_GLOBAL_NAMES.items():
        for resource in synthesized.resources(kind).values():
            name = resource["Properties"][config][key]
            assert isinstance(name, dict), (kind, name)
            assert {"Ref": "AWS::Region"} in name["Fn::Join"][1], (kind, name)
            found += 1
    assert found == 3


def test_response_headers_policy(default: Synthesized) -> None:
    (policy,) = default.resources("AWS::CloudFront::ResponseHeadersPolicy").values()
    headers = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    assert headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"] >= 31_536_000
    assert headers["ContentTypeOptions"] == {"Override": True}
    assert headers["FrameOptions"]["FrameOption"] == "DENY"
    (policy_id,) = default.resources("AWS::CloudFront::ResponseHeadersPolicy")
    behavior = distribution_config(default)["DefaultCacheBehavior"]
    assert behavior["ResponseHeadersPolicyId"] == {"Ref": policy_id}


# -- monitoring ---------------------------------------------------------------------------


def alarms(synth: Synthesized) -> list[dict[str, Any]]:
    return [a["Properties"] for a in synth.resources("AWS::CloudWatch::Alarm").values()]


def _dimension(alarm: dict[str, Any]) -> str:
    dimension = alarm["Dimensions"][0]
    return ref(dimension["Value"]) if isinstance(dimension["Value"], dict) else dimension["Value"]


def by_metric(synth: Synthesized) -> dict[tuple[str, str], dict[str, Any]]:
    """(metric, first dimension's resource) -> alarm, for alarms on one metric."""
    return {(a["MetricName"], _dimension(a)): a for a in alarms(synth) if "MetricName" in a}


@pytest.mark.parametrize("spec", FUNCTIONS, ids=lambda spec: spec.name)
def test_alarms_per_queue_and_function(default: Synthesized, spec: Any) -> None:
    pair = default.stack.updater.queues[spec.name]
    found = by_metric(default)
    dlq = found["ApproximateNumberOfMessagesVisible", default.logical_id(pair.dead_letter)]
    assert dlq["Threshold"] == 1
    assert dlq["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    age = found["ApproximateAgeOfOldestMessage", default.logical_id(pair.queue)]
    assert age["Threshold"] == age_threshold_seconds(spec) >= spec.visibility_timeout_seconds
    function_id, _ = function_of(default, spec.name)
    errors = found["Errors", function_id]
    throttles = found["Throttles", function_id]
    assert errors["Threshold"] == throttles["Threshold"] == 1
    assert (throttles["EvaluationPeriods"], throttles["DatapointsToAlarm"]) == (3, 2)
    duration = found["Duration", function_id]
    assert (duration["Statistic"], duration["Threshold"]) == (
        "Maximum",
        0.8 * spec.timeout_seconds * 1000,  # ms, close to the timeout
    )
    for alarm in (dlq, age, errors, throttles, duration):
        assert alarm["TreatMissingData"] == "notBreaching"


def test_the_stacks_own_alarms(default: Synthesized) -> None:
    """The news sweep's failed deliveries, registry throttling, CloudFront 5xx."""
    updater = default.stack.updater
    found = by_metric(default)
    sweep = found["FailedInvocations", default.logical_id(updater.news_sweep)]
    assert (sweep["Namespace"], sweep["Threshold"]) == ("AWS/Events", 1)
    cdn = found["5xxErrorRate", default.logical_id(updater.distribution)]
    assert {"Name": "Region", "Value": "Global"} in cdn["Dimensions"]  # CloudFront's metrics
    assert cdn["Threshold"] == 5
    (throttled,) = [a for a in alarms(default) if "Throttle" in str(a.get("Metrics"))]
    names = {m["MetricStat"]["Metric"]["MetricName"] for m in throttled["Metrics"][1:]}
    assert names == {"ReadThrottleEvents", "WriteThrottleEvents"}
    # Each throttle metric exists only while DynamoDB throttles: either alone must count.
    assert throttled["Metrics"][0]["Expression"] == "FILL(read, 0) + FILL(write, 0)"


def test_the_cloudfront_alarm_exists_only_where_cloudfront_publishes(default: Synthesized) -> None:
    """us-east-1: an alarm elsewhere would read no data and never fire; the dashboard's alarm
    widget leaves it out (a widget naming a resource the condition removed fails the deploy)."""
    (alarm_id,) = [
        k
        for k, a in default.resources("AWS::CloudWatch::Alarm").items()
        if a["Properties"].get("MetricName") == "5xxErrorRate"
    ]
    alarm = default.resources("AWS::CloudWatch::Alarm")[alarm_id]
    condition = default.json["Conditions"][alarm["Condition"]]
    assert condition == {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}
    (dashboard,) = default.resources("AWS::CloudWatch::Dashboard").values()
    assert alarm_id not in str(dashboard["Properties"]["DashboardBody"])
    assert '"region":"us-east-1"' in str(dashboard["Properties"]["DashboardBody"])


@pytest.mark.parametrize("fixture", ["default", "configured"])
def test_every_alarm_notifies_on_alarm_and_ok(request: pytest.FixtureRequest, fixture: str) -> None:
    """By default to the stack's own topic; to an existing one when it is given."""
    synth: Synthesized = request.getfixturevalue(fixture)
    found = alarms(synth)
    assert len(found) == 5 * len(FUNCTIONS) + 3 + 2 + 1  # the reconciler's two, freshness
    topics = list(synth.resources("AWS::SNS::Topic"))
    expected = TOPIC_ARN if fixture == "configured" else {"Ref": topics[0]}
    assert len(topics) == (0 if fixture == "configured" else 1)
    for alarm in found:
        assert alarm["AlarmActions"] == [expected]
        assert alarm["OKActions"] == [expected]


def test_a_dashboard(default: Synthesized) -> None:
    (dashboard,) = default.resources("AWS::CloudWatch::Dashboard").values()
    assert "DashboardName" not in dashboard["Properties"]
    body = str(dashboard["Properties"]["DashboardBody"])
    for title in ("Messages waiting", "Dead letters", "Errors and throttles", "Events"):
        assert title in body


# -- outputs ------------------------------------------------------------------------------


def test_outputs_are_what_the_cli_reads(synthesized: Synthesized) -> None:
    """Every setting with a value (an empty one, e.g. IndexNow off, has no output: the CLI
    reads a missing output as the default) and the operator outputs."""
    outputs = synthesized.template.find_outputs("*")
    given = synthesized.stack.updater.settings.to_env()
    expected = {output_key(name) for name, value in given.items() if value != ""}
    assert set(outputs) == expected | set(EXTRA_OUTPUTS)
    required = {name for name, f in Settings.model_fields.items() if f.is_required()}
    assert expected >= {output_key(Settings.model_fields[name].alias or name) for name in required}


def test_output_values(default: Synthesized) -> None:
    outputs = default.template.find_outputs("*")
    updater = default.stack.updater
    assert outputs["SiteUrl"]["Value"] == SITE
    assert outputs["MaxUrlsPerShard"]["Value"] == "10000"
    assert outputs["InvalidatePaths"]["Value"] == "false"
    assert outputs["TableName"]["Value"] == {"Ref": default.logical_id(updater.storage.table)}
    assert outputs["BucketName"]["Value"] == {"Ref": default.logical_id(updater.storage.bucket)}
    queue = updater.queues["ingest"]
    assert outputs["IngestQueueUrl"]["Value"] == {"Ref": default.logical_id(queue.queue)}
    assert outputs["IngestDlqUrl"]["Value"] == {"Ref": default.logical_id(queue.dead_letter)}
    for name in ("rebuild", "index"):
        pair = updater.queues[name]
        key = f"{name.capitalize()}DeadLetterQueueUrl"
        assert outputs[key]["Value"] == {"Ref": default.logical_id(pair.dead_letter)}
        key = f"{name.capitalize()}QueueUrl"
        assert outputs[key]["Value"] == {"Ref": default.logical_id(pair.queue)}
    distribution = default.logical_id(updater.distribution)
    assert outputs["DistributionId"]["Value"] == {"Ref": distribution}
    assert outputs["DistributionDomainName"]["Value"] == {
        "Fn::GetAtt": [distribution, "DomainName"]
    }


def test_stack_name_comes_from_context(configured: Synthesized) -> None:
    assert configured.stack.stack_name == "Sitemaps-Prod"


def test_drift_repaired_by_ingest_alone_still_alarms(default: Synthesized) -> None:
    """Ingest emits EntriesRepaired without ShardsRepaired (only the reconciler emits that):
    the sum must not need both."""
    (drift,) = [a for a in alarms(default) if "EntriesRepaired" in str(a.get("Metrics"))]
    names = {m["MetricStat"]["Metric"]["MetricName"] for m in drift["Metrics"][1:]}
    assert names == {"ShardsRepaired", "EntriesRepaired"}
    assert drift["Metrics"][0]["Expression"] == "FILL(shards, 0) + FILL(entries, 0)"


def test_a_failed_reconcile_run_is_not_run_again_by_lambda(default: Synthesized) -> None:
    """The schedule's retries cover only EventBridge's delivery: Lambda's own two retries of
    an asynchronous invocation would run a failing 15-minute reconcile three times an hour."""
    reconcile = default.logical_id(default.stack.updater.functions[RECONCILE.name])
    (config,) = default.resources("AWS::Lambda::EventInvokeConfig").values()
    assert config["Properties"]["FunctionName"] == {"Ref": reconcile}
    assert config["Properties"]["MaximumRetryAttempts"] == 0
