"""Alarms that mean "a person should look" (each with a runbook line in
docs/OPERATIONS.md#runbook), the topic they notify on ALARM and on OK, and one dashboard.

The topic is the stack's own unless one is given: KMS-encrypted with a key CloudWatch may
use (SNS's AWS-managed key does not let CloudWatch publish), and only CloudWatch alarms of
this account and region may publish to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import ArnFormat, Aws, CfnCondition, Duration, Fn, RemovalPolicy, Stack
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from sitemap_infra.queues import QueuePair, Queues
from sitemap_updater.observability import Metric
from sitemap_updater.resources import INDEXNOW, METRICS_NAMESPACE, RECONCILE, FunctionSpec

PERIOD = Duration.minutes(5)
NEAR_TIMEOUT = 0.8  # of the function's timeout
CLOUDFRONT_5XX_PERCENT = 5
# Two of three periods: a single retried hiccup pages no one, a recurring one does.
SUSTAINED: dict[str, Any] = {"evaluation_periods": 3, "datapoints_to_alarm": 2}
PER_MINUTE: dict[str, Any] = {"period": Duration.minutes(1), "statistic": "Maximum"}
# The dashboard's graphs of the functions' own metrics, by title.
PIPELINE_GRAPHS = {
    "Events": (
        Metric.EVENTS_APPLIED,
        Metric.EVENTS_DUPLICATE,
        Metric.EVENTS_STALE,
        Metric.EVENTS_REJECTED,
    ),
    "Objects": (
        Metric.SHARDS_WRITTEN,
        Metric.SHARDS_UNCHANGED,
        Metric.SHARDS_DELETED,
        Metric.SHARDS_REPAIRED,
        Metric.ENTRIES_REPAIRED,
        Metric.INDEX_FILES_WRITTEN,
        Metric.ROBOTS_WRITTEN,
    ),
    "Conflicts and faults": (
        Metric.WRITE_CONFLICTS,
        Metric.SHARD_MOVES,
        Metric.ROBOTS_TOO_LARGE,
        Metric.INVALIDATIONS_FAILED,
    ),
}
INDEXNOW_GRAPH = (
    Metric.INDEXNOW_QUEUED,
    Metric.INDEXNOW_NOT_QUEUED,
    Metric.INDEXNOW_SUBMITTED,
    Metric.INDEXNOW_RETRIED,
    Metric.INDEXNOW_DEAD_LETTERED,
)


def age_threshold_seconds(spec: FunctionSpec) -> int:
    """Two visibility timeouts (retried at least once and still not done), at least 15 min."""
    return max(900, 2 * spec.visibility_timeout_seconds)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.Function],
        queues: Queues,
        table: dynamodb.ITable,
        news_sweep: events.IRule,
        distribution: cloudfront.Distribution,
        alarm_topic: sns.ITopic | None,
        alarm_email: str | None,
        service: str,
    ) -> None:
        """``service``: the ``service`` dimension of the functions' own metrics."""
        super().__init__(scope, construct_id)
        self.service = service
        self.topic = alarm_topic or self._topic(alarm_email)
        self.alarms: list[cloudwatch.Alarm] = []
        pairs = list(queues.pairs.values())  # IndexNow's too, when on
        for pair in pairs:
            self._function_alarms(pair, functions[pair.spec.name])
        self.alarm(
            "PublishToVisibleP99",
            self.pipeline_metric(Metric.PUBLISH_TO_VISIBLE, "p99"),
            threshold=900_000,  # 15 minutes: the pipeline is behind
            evaluation_periods=3,
            description="Published changes take long to reach the sitemap index (p99 of the "
            "time from SQS receiving the event to the index showing it).",
        )
        self._reconcile_alarms(functions[RECONCILE.name])
        indexnow = INDEXNOW.name in queues.pairs
        if indexnow:
            self.alarm(
                "IndexNowUrlsNotQueued",
                self.pipeline_metric(Metric.INDEXNOW_NOT_QUEUED),
                description="The ingest function could not queue changed URLs for IndexNow "
                "(the sitemaps are fine). The URLs are in its log ('IndexNow URLs not queued').",
            )
        self._stack_alarms(table, news_sweep)
        fns = [functions[pair.spec.name] for pair in pairs]
        # Before the CloudFront alarm: the alarm widget must not name a resource that a
        # condition may leave out.
        self._dashboard(pairs, fns, distribution, indexnow=indexnow)
        self._cdn_alarm(distribution)

    def _topic(self, email: str | None) -> sns.Topic:
        key = kms.Key(
            self,
            "AlarmKey",
            description="sitemap-updater: encrypts the alarm topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,  # it encrypts notifications in flight only
        )
        cloudwatch_service = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        key.grant(cloudwatch_service, "kms:Decrypt", "kms:GenerateDataKey*")
        topic = sns.Topic(self, "Alarms", master_key=key, enforce_ssl=True)
        alarms = Stack.of(self).format_arn(
            service="cloudwatch",
            resource="alarm",
            resource_name="*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[cloudwatch_service],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={"ArnLike": {"aws:SourceArn": alarms}},
            )
        )
        # Not even the account's own users and roles: only a service allowed above.
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={"Bool": {"aws:PrincipalIsAWSService": "false"}},
            )
        )
        if email is not None:
            topic.add_subscription(subscriptions.EmailSubscription(email))
        return topic

    def _function_alarms(self, pair: QueuePair, function: lambda_.Function) -> None:
        """A queue's dead letters and oldest message; its function's whole-batch failures (a
        bad record is a partial failure and goes to the DLQ), throttles and near-timeouts."""
        spec, name = pair.spec, pair.spec.name
        self.alarm(
            f"{name.capitalize()}DeadLetters",
            pair.dead_letter.metric_approximate_number_of_messages_visible(**PER_MINUTE),
            description=f"Messages in the {name} dead-letter queue: read their reason, fix, "
            "then redrive.",
        )
        self.alarm(
            f"{name.capitalize()}OldestMessage",
            pair.queue.metric_approximate_age_of_oldest_message(**PER_MINUTE),
            threshold=age_threshold_seconds(spec),
            evaluation_periods=5,
            description=f"The {name} queue is not keeping up, or a message keeps failing "
            "(FIFO: it holds up its message group).",
        )
        self.alarm(
            f"{name.capitalize()}Errors",
            function.metric_errors(period=PERIOD, statistic="Sum"),
            description=f"The {name} function failed whole batches.",
            **SUSTAINED,
        )
        self.alarm(
            f"{name.capitalize()}Throttles",
            function.metric_throttles(period=PERIOD, statistic="Sum"),
            description=f"Lambda refused to run the {name} function: the account's "
            "concurrency is spent elsewhere. Its messages wait in the queue.",
            **SUSTAINED,
        )
        self.alarm(
            f"{name.capitalize()}NearTimeout",
            function.metric_duration(period=PERIOD, statistic="Maximum"),
            threshold=NEAR_TIMEOUT * spec.timeout_seconds * 1000,
            description=f"A {name} run took over {NEAR_TIMEOUT:.0%} of its "
            f"{spec.timeout_seconds} s timeout: a larger one will time out.",
        )

    def _stack_alarms(self, table: dynamodb.ITable, news_sweep: events.IRule) -> None:
        self.alarm(
            "NewsSweepFailed",
            cloudwatch.Metric(
                namespace="AWS/Events",
                metric_name="FailedInvocations",
                dimensions_map={"RuleName": news_sweep.rule_name},
                statistic="Sum",
                period=PERIOD,
            ),
            description="The news sweep's schedule could not queue an index run, even after "
            "its retries (the event is in its dead-letter queue).",
        )
        throttled = {
            kind: table.metric(f"{kind.capitalize()}ThrottleEvents", statistic="Sum")
            for kind in ("read", "write")
        }
        self.alarm(
            "RegistryThrottled",
            cloudwatch.MathExpression(
                # DynamoDB publishes a throttle metric only when it throttles: a sum with one
                # of them absent would have no datapoint at all.
                expression="FILL(read, 0) + FILL(write, 0)",
                using_metrics=throttled,
                period=PERIOD,
            ),
            description="DynamoDB throttled the registry; the calls are retried, and records "
            "that still fail are delivered again.",
            **SUSTAINED,
        )

    def _cdn_alarm(self, distribution: cloudfront.Distribution) -> None:
        """CloudFront publishes its metrics in us-east-1 only, and an alarm reads its own
        region's: elsewhere the alarm is left out (a condition) rather than never firing."""
        alarm = self.alarm(
            "Cloudfront5xx",
            _cdn_5xx_rate(distribution),
            threshold=CLOUDFRONT_5XX_PERCENT,
            description=f"CloudFront answered 5xx to {CLOUDFRONT_5XX_PERCENT}% of requests or "
            "more (the whole distribution's): crawlers get errors.",
            **SUSTAINED,
        )
        region = CfnCondition(
            self, "InUsEast1", expression=Fn.condition_equals(Aws.REGION, "us-east-1")
        )
        alarm.node.default_child.cfn_options.condition = region  # type: ignore[union-attr]

    def _reconcile_alarms(self, function: lambda_.Function) -> None:
        repaired = cloudwatch.MathExpression(
            # Ingest emits only EntriesRepaired: without FILL its repairs show only when a
            # reconcile run falls in the same period.
            expression="FILL(shards, 0) + FILL(entries, 0)",
            using_metrics={
                "shards": self.pipeline_metric(Metric.SHARDS_REPAIRED),
                "entries": self.pipeline_metric(Metric.ENTRIES_REPAIRED),
            },
            period=PERIOD,
            label="Drift repaired",
        )
        self.alarm(
            "DriftRepaired",
            repaired,
            description="The reconciler (or a resent event) repaired a shard object or a "
            "registry entry that had drifted from the registry: the site is right again. "
            "Its log names each one ('shard repaired', 'entry repaired'); find the cause.",
        )
        self.alarm(
            "ReconcileErrors",
            function.metric_errors(period=Duration.hours(1), statistic="Sum"),
            evaluation_periods=2,
            datapoints_to_alarm=2,
            description="The reconcile function failed two runs in a row.",
        )

    def alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float = 1,
        description: str,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int | None = None,
        scope: Construct | None = None,
    ) -> cloudwatch.Alarm:
        """An alarm at ``threshold`` or above (default: any one) that notifies the topic (in
        ``scope``, default here and on the dashboard)."""
        alarm = cloudwatch.Alarm(
            scope or self,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        alarm.add_ok_action(actions.SnsAction(self.topic))
        if scope is None:
            self.alarms.append(alarm)
        return alarm

    def pipeline_metric(self, name: str, statistic: str = "Sum") -> cloudwatch.Metric:
        """One of the functions' own metrics (Powertools EMF, dimension ``service``)."""
        return cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=name,
            dimensions_map={"service": self.service},
            statistic=statistic,
            period=PERIOD,
        )

    def _pipeline_graph(self, title: str, names: Sequence[str]) -> cloudwatch.GraphWidget:
        return _graph(title, [self.pipeline_metric(name) for name in names])

    def _dashboard(
        self,
        pairs: Sequence[QueuePair],
        fns: Sequence[lambda_.Function],
        distribution: cloudfront.Distribution,
        *,
        indexnow: bool,
    ) -> None:
        dashboard = cloudwatch.Dashboard(
            self, "Dashboard", default_interval=Duration.hours(6), period_override=None
        )
        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=list(self.alarms), width=24, height=3
            )
        )
        waiting = [p.queue.metric_approximate_number_of_messages_visible() for p in pairs]
        oldest = [p.queue.metric_approximate_age_of_oldest_message() for p in pairs]
        dead = [p.dead_letter.metric_approximate_number_of_messages_visible() for p in pairs]
        dashboard.add_widgets(
            _graph("Messages waiting", waiting),
            _graph("Age of the oldest message (s)", oldest),
            _graph("Dead letters", dead),
        )
        failed = [f.metric_errors(statistic="Sum") for f in fns]
        failed += [f.metric_throttles(statistic="Sum") for f in fns]
        dashboard.add_widgets(
            _graph("Invocations", [f.metric_invocations() for f in fns]),
            _graph("Errors and throttles", failed),
            _graph("Duration p99 (ms)", [f.metric_duration(statistic="p99") for f in fns]),
        )
        dashboard.add_widgets(*(self._pipeline_graph(*graph) for graph in PIPELINE_GRAPHS.items()))
        # A dashboard reads any region: CloudFront's 5xx rate shows from us-east-1.
        cdn = _graph("CloudFront 5xx (%)", [_cdn_5xx_rate(distribution, "us-east-1")])
        freshness = [self.pipeline_metric(Metric.PUBLISH_TO_VISIBLE, p) for p in ("p50", "p99")]
        indexnow_graph = [self._pipeline_graph("IndexNow", INDEXNOW_GRAPH)] if indexnow else []
        dashboard.add_widgets(cdn, _graph("Publish to visible (ms)", freshness), *indexnow_graph)


def _cdn_5xx_rate(
    distribution: cloudfront.Distribution, region: str | None = None
) -> cloudwatch.Metric:
    """CloudFront's metrics carry ``Region=Global`` (CDK's own metric methods leave it out)."""
    return cloudwatch.Metric(
        namespace="AWS/CloudFront",
        metric_name="5xxErrorRate",
        dimensions_map={"DistributionId": distribution.distribution_id, "Region": "Global"},
        statistic="Average",
        period=PERIOD,
        region=region,
    )


def _graph(title: str, metrics: Sequence[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=8, height=6)
