"""The webhook endpoint, only when connectors are configured: one function behind a Lambda
function URL (``POST /hooks/<name>``), EventBridge rules for partner event sources
(Shopify), read access to exactly the connectors' secrets, and an alarm on a burst of
refused (401) requests. docs/CONNECTORS.md says why a function URL rather than an HTTP API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import CfnOutput, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from sitemap_infra.bundling import ARCHITECTURE, RUNTIME
from sitemap_infra.functions import LOG_RETENTION, OLDER_RUNTIME, powertools_environment
from sitemap_infra.nag import acknowledge
from sitemap_infra.queues import QueuePair
from sitemap_updater.connectors import Connector
from sitemap_updater.observability import Metric
from sitemap_updater.resources import METRICS_NAMESPACE

HANDLER = "sitemap_updater.handlers.webhook.handler"
TIMEOUT = Duration.seconds(10)  # verify, map, send: well under a second when warm
MEMORY_MB = 256
REFUSED_BURST = 20  # 401s in five minutes: a forger, or a CMS with a stale secret
XRAY_ANY_RESOURCE = "X-Ray's trace actions support no resource other than '*' (active tracing)."


class Webhooks(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        connectors: Sequence[Connector],
        code: lambda_.Code,
        environment: Mapping[str, str],
        ingest: QueuePair,
        alarm_topic: sns.ITopic,
        service: str,
    ) -> None:
        super().__init__(scope, construct_id)
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="sitemap-updater webhook function",
        )
        log_group = logs.LogGroup(
            self, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        self.function = lambda_.Function(
            self,
            "Function",
            description="sitemap-updater: CMS webhooks to the ingest queue",
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=HANDLER,
            code=code,
            timeout=TIMEOUT,
            memory_size=MEMORY_MB,
            environment={**environment, **powertools_environment(service)},
            role=role,
            log_group=log_group,
            tracing=lambda_.Tracing.ACTIVE,
        )
        acknowledge(self.function, "AwsSolutions-L1", OLDER_RUNTIME)
        log_group.grant_write(role)
        queues = [ingest.queue.queue_arn, ingest.dead_letter.queue_arn]
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=queues)
        )
        for statement in secret_statements(connectors):
            role.add_to_principal_policy(statement)
        policy = role.node.find_child("DefaultPolicy")
        acknowledge(policy, "AwsSolutions-IAM5[Resource::*]", XRAY_ANY_RESOURCE)
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
        CfnOutput(self, "Url", value=self.url.url, description="POST <this>hooks/<name>")
        for connector in connectors:
            if connector.event_source:
                self._partner_rule(connector.name, connector.event_source)
        self.refused_alarm = self._refused_alarm(service, alarm_topic)

    def _partner_rule(self, name: str, source: str) -> events.Rule:
        """A partner event source's bus (created when the source is associated) to this
        function."""
        bus = events.EventBus.from_event_bus_name(self, f"{name}Bus", source)
        return events.Rule(
            self,
            f"{name}Rule",
            event_bus=bus,
            event_pattern=events.EventPattern(source=[source]),
            targets=[targets.LambdaFunction(self.function, retry_attempts=8)],
        )

    def _refused_alarm(self, service: str, topic: sns.ITopic) -> cloudwatch.Alarm:
        metric = cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=Metric.WEBHOOKS_REFUSED,
            dimensions_map={"service": service},
            statistic="Sum",
            period=Duration.minutes(5),
        )
        alarm = metric.create_alarm(
            self,
            "RefusedAlarm",
            alarm_description=f"{REFUSED_BURST}+ webhook requests refused (401) in 5 minutes",
            threshold=REFUSED_BURST,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(actions.SnsAction(topic))  # where every alarm goes
        alarm.add_ok_action(actions.SnsAction(topic))
        return alarm


def secret_statements(connectors: Sequence[Connector]) -> list[iam.PolicyStatement]:
    """Read access to exactly the connectors' secrets (Secrets Manager or SSM)."""
    arns = sorted({c.secret_arn for c in connectors if c.secret_arn})
    by_service = {
        "secretsmanager:GetSecretValue": [a for a in arns if ":secretsmanager:" in a],
        "ssm:GetParameter": [a for a in arns if ":ssm:" in a],
    }
    return [
        iam.PolicyStatement(actions=[action], resources=resources)
        for action, resources in by_service.items()
        if resources
    ]
