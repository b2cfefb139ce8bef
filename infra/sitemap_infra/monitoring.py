"""Alarms that mean "a person should look" and one dashboard of the whole flow.

Per queue: anything in its dead-letter queue; its oldest message older than two visibility
timeouts (it has been retried at least once and is still not done). Per function: errors,
i.e. whole-batch failures (a single bad record is a partial failure and goes to the DLQ).
With IndexNow on, its queue and function get the same three, plus one on URLs the ingest
function could not queue for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from sitemap_infra.queues import QueuePair, Queues
from sitemap_updater.observability import Metric
from sitemap_updater.resources import INDEXNOW, METRICS_NAMESPACE, RECONCILE, FunctionSpec

MIN_AGE_ALARM_SECONDS = 900
PERIOD = Duration.minutes(5)
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
    return max(MIN_AGE_ALARM_SECONDS, 2 * spec.visibility_timeout_seconds)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.Function],
        queues: Queues,
        alarm_topic: sns.ITopic | None = None,
        service: str,
    ) -> None:
        """``service``: the ``service`` dimension of the functions' own metrics
        (``updater.deployment_service``)."""
        super().__init__(scope, construct_id)
        self.service = service
        self.alarms: list[cloudwatch.Alarm] = []
        pairs = list(queues.pairs.values())  # IndexNow's too, when on
        for pair in pairs:
            self._function_alarms(pair, functions[pair.spec.name])
        self._reconcile_alarms(functions[RECONCILE.name])
        indexnow = INDEXNOW.name in queues.pairs
        if indexnow:
            self._alarm(
                "IndexNowUrlsNotQueued",
                self._pipeline_metric(Metric.INDEXNOW_NOT_QUEUED),
                threshold=1,
                description="The ingest function could not queue changed URLs for IndexNow "
                "(the sitemaps are fine). The URLs are in its log ('IndexNow URLs not queued').",
            )
        if alarm_topic is not None:
            for alarm in self.alarms:
                alarm.add_alarm_action(actions.SnsAction(alarm_topic))
                alarm.add_ok_action(actions.SnsAction(alarm_topic))
        fns = [functions[pair.spec.name] for pair in pairs]
        self.dashboard = self._dashboard(pairs, fns, indexnow=indexnow)

    def _function_alarms(self, pair: QueuePair, function: lambda_.Function) -> None:
        spec = pair.spec
        name = spec.name.capitalize()
        self._alarm(
            f"{name}DeadLetters",
            pair.dead_letter.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(1), statistic="Maximum"
            ),
            threshold=1,
            description=f"Messages in the {spec.queue} dead-letter queue: read their "
            "reason, fix, then redrive.",
        )
        self._alarm(
            f"{name}OldestMessage",
            pair.queue.metric_approximate_age_of_oldest_message(
                period=Duration.minutes(1), statistic="Maximum"
            ),
            threshold=age_threshold_seconds(spec),
            evaluation_periods=5,
            description=f"The {spec.queue} queue is not keeping up, or a message keeps "
            "failing (FIFO: it holds up its message group).",
        )
        self._alarm(
            f"{name}Errors",
            function.metric_errors(period=PERIOD, statistic="Sum"),
            threshold=1,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            description=f"The {spec.name} function failed whole batches.",
        )

    def _reconcile_alarms(self, function: lambda_.Function) -> None:
        repaired = cloudwatch.MathExpression(
            expression="shards + entries",
            using_metrics={
                "shards": self._pipeline_metric(Metric.SHARDS_REPAIRED),
                "entries": self._pipeline_metric(Metric.ENTRIES_REPAIRED),
            },
            period=PERIOD,
            label="Drift repaired",
        )
        self._alarm(
            "DriftRepaired",
            repaired,
            threshold=1,
            description="The reconciler (or a resent event) repaired a shard object or a "
            "registry entry that had drifted from the registry: the site is right again. "
            "Its log names each one ('shard repaired', 'entry repaired'); find the cause.",
        )
        self._alarm(
            "ReconcileErrors",
            function.metric_errors(period=Duration.hours(1), statistic="Sum"),
            threshold=1,
            evaluation_periods=2,
            datapoints_to_alarm=2,
            description="The reconcile function failed two runs in a row.",
        )

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        description: str,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int | None = None,
    ) -> None:
        self.alarms.append(
            cloudwatch.Alarm(
                self,
                construct_id,
                metric=metric,
                threshold=threshold,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                evaluation_periods=evaluation_periods,
                datapoints_to_alarm=datapoints_to_alarm,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            )
        )

    def _pipeline_metric(self, name: str) -> cloudwatch.Metric:
        """One of the functions' own metrics (Powertools EMF, dimension ``service``)."""
        return cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=name,
            dimensions_map={"service": self.service},
            statistic="Sum",
            period=PERIOD,
        )

    def _pipeline_graph(self, title: str, names: Sequence[str]) -> cloudwatch.GraphWidget:
        return _graph(title, [self._pipeline_metric(name) for name in names])

    def _dashboard(
        self, pairs: Sequence[QueuePair], fns: Sequence[lambda_.Function], *, indexnow: bool
    ) -> cloudwatch.Dashboard:
        dashboard = cloudwatch.Dashboard(
            self, "Dashboard", default_interval=Duration.hours(6), period_override=None
        )
        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24, height=3)
        )
        dashboard.add_widgets(
            _graph(
                "Messages waiting",
                [p.queue.metric_approximate_number_of_messages_visible() for p in pairs],
            ),
            _graph(
                "Age of the oldest message (s)",
                [p.queue.metric_approximate_age_of_oldest_message() for p in pairs],
            ),
            _graph(
                "Dead letters",
                [p.dead_letter.metric_approximate_number_of_messages_visible() for p in pairs],
            ),
        )
        dashboard.add_widgets(
            _graph("Invocations", [f.metric_invocations() for f in fns]),
            _graph(
                "Errors and throttles",
                [f.metric_errors(statistic="Sum") for f in fns]
                + [f.metric_throttles(statistic="Sum") for f in fns],
            ),
            _graph("Duration p99 (ms)", [f.metric_duration(statistic="p99") for f in fns]),
        )
        dashboard.add_widgets(*(self._pipeline_graph(*graph) for graph in PIPELINE_GRAPHS.items()))
        if indexnow:
            dashboard.add_widgets(self._pipeline_graph("IndexNow", INDEXNOW_GRAPH))
        return dashboard


def _graph(title: str, metrics: Sequence[cloudwatch.IMetric]) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(metrics), width=8, height=6)
