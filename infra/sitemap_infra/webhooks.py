"""The webhook endpoint, only when connectors are configured: one function behind a Lambda
function URL (``POST /hooks/<name>``), EventBridge rules for partner event sources
(Shopify), read access to exactly the connectors' secrets, and an alarm on a burst of
refused (401) requests. docs/CONNECTORS.md says why a function URL rather than an HTTP API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import CfnOutput, Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sitemap_infra.functions import new_function
from sitemap_infra.monitoring import PER_MINUTE, Monitoring
from sitemap_infra.nag import acknowledge
from sitemap_infra.queues import QueuePair, dead_letter_queue
from sitemap_updater.connectors import Connector
from sitemap_updater.observability import Metric

HANDLER = "sitemap_updater.handlers.webhook.handler"
REFUSED_BURST = 20  # 401s in five minutes: a forger, or a CMS with a stale secret


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
        monitoring: Monitoring,
    ) -> None:
        super().__init__(scope, construct_id)
        self.failed: sqs.Queue | None = None  # partner events that failed (see _partner_rules)
        self.function = new_function(
            self,
            "",
            "Function",
            label="webhook",
            environment=environment,
            service=monitoring.service,
            description="sitemap-updater: CMS webhooks to the ingest queue",
            handler=HANDLER,
            code=code,
            timeout=Duration.seconds(10),  # verify, map, send: well under a second when warm
            memory_size=256,
        )
        queues = [ingest.queue.queue_arn, ingest.dead_letter.queue_arn]
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=queues)
        )
        arns = sorted({c.secret_arn for c in connectors if c.secret_arn})
        for service, action in (("secretsmanager", "GetSecretValue"), ("ssm", "GetParameter")):
            resources = [arn for arn in arns if f":{service}:" in arn]
            if resources:
                self.function.add_to_role_policy(
                    iam.PolicyStatement(actions=[f"{service}:{action}"], resources=resources)
                )
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
        CfnOutput(self, "Url", value=self.url.url, description="POST <this>hooks/<name>")
        if sources := {c.name: c.event_source for c in connectors if c.event_source}:
            self._partner_rules(sources, monitoring)
        monitoring.alarm(
            "RefusedAlarm",
            monitoring.pipeline_metric(Metric.WEBHOOKS_REFUSED),
            threshold=REFUSED_BURST,
            description=f"{REFUSED_BURST}+ webhook requests refused (401) in 5 minutes",
            scope=self,
        )

    def _partner_rules(self, sources: Mapping[str, str], monitoring: Monitoring) -> None:
        """A rule per partner bus (``sources``: connector name -> its event source, created when
        the source is associated), invoking the function asynchronously. An event neither
        delivered (EventBridge's retries) nor handled (Lambda's) is kept in a queue of its own,
        and alarms: nothing is lost."""
        self.failed = dead_letter_queue(self, "FailedEvents")
        acknowledge(
            self.failed,
            "AwsSolutions-SQS3",
            "It is a dead-letter queue: of the rules' targets and the function's asynchronous "
            "invocations, which cdk-nag does not recognise as such.",
        )
        self.function.configure_async_invoke(on_failure=destinations.SqsDestination(self.failed))
        for name, source in sources.items():
            target = targets.LambdaFunction(
                self.function, retry_attempts=8, dead_letter_queue=self.failed
            )
            events.Rule(
                self,
                f"{name}Rule",
                event_bus=events.EventBus.from_event_bus_name(self, f"{name}Bus", source),
                event_pattern=events.EventPattern(source=[source]),
                targets=[target],
            )
        monitoring.alarm(
            "FailedEventsAlarm",
            self.failed.metric_approximate_number_of_messages_visible(**PER_MINUTE),
            description="A partner event (Shopify) could not be delivered to or handled by "
            "the webhook function: it is kept in the FailedEvents queue (see OPERATIONS).",
            scope=self,
        )
