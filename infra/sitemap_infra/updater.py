"""The whole system as one construct, for this project's stack or another team's CDK app
(docs/DEPLOY.md). Given ``distribution`` (the site's own, in the same stack), the sitemap
paths become behaviours of it; without, it gets one of its own. ``settings``: the settings
model's fields by name. ``connectors``: the connectors file's document without secrets in
clear (``config.deployed_connectors``), for a webhook endpoint (None: none).
``alarm_topic``: where the alarms go (default: a topic of its own, which ``alarm_email``
subscribes to). ``max_concurrency``: function name -> its event source mapping's maximum
concurrency (default: ``resources.FunctionSpec.max_concurrency``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sitemap_infra.bundling import function_code
from sitemap_infra.cdn import SitemapCdn
from sitemap_infra.config import ConfigError, validated_concurrency, validated_settings
from sitemap_infra.functions import Functions
from sitemap_infra.monitoring import Monitoring
from sitemap_infra.nag import acknowledge
from sitemap_infra.queues import Queues, dead_letter_queue
from sitemap_infra.storage import Storage
from sitemap_infra.webhooks import Webhooks
from sitemap_updater.adapters.queues import INDEX_GROUP
from sitemap_updater.connectors import parse as parse_connectors
from sitemap_updater.resources import (
    INDEX,
    INGEST,
    NEWS_SWEEP_MINUTES,
    QUEUE_SETTINGS,
    RECONCILE,
    RECONCILE_MINUTES,
    SERVICE_NAME,
    functions_for,
    queue_urls,
)
from sitemap_updater.settings import Settings

NEWS_SWEEP_DEAD_LETTER = (
    "The dead-letter queue of the news sweep's EventBridge target (EventBridge's DeadLetterConfig, "
    "which cdk-nag does not recognise as one): it needs none of its own."
)


class SitemapUpdater(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        site_url: str,
        settings: Mapping[str, Any] | None = None,
        distribution: cloudfront.Distribution | None = None,
        domain_name: str | None = None,
        certificate: acm.ICertificate | None = None,
        alarm_topic: sns.ITopic | None = None,
        alarm_email: str | None = None,
        max_concurrency: Mapping[str, int] | None = None,
        code: lambda_.Code | None = None,
        connectors: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        _check_arguments(self, distribution, alarm_topic, alarm_email)
        tuned = validated_settings({**(settings or {}), "site_url": site_url})
        self.service = deployment_service(self)
        self.storage = Storage(self, "Storage")
        self.queues = Queues(self, "Queues", functions_for(bool(tuned.indexnow_key)))
        self.distribution = SitemapCdn(
            self,
            "Cdn",
            storage=self.storage,
            settings=tuned,
            distribution=distribution,
            domain_name=domain_name,
            certificate=certificate,
        ).distribution
        #: The functions' settings, with the deployed resources' names (tokens) filled in.
        self.settings: Settings = tuned.model_copy(update=self._resource_names())
        code = code or function_code()
        self.functions = Functions(
            self,
            "Functions",
            code=code,
            settings=self.settings,
            storage=self.storage,
            queues=self.queues,
            distribution=self.distribution,
            service=self.service,
            max_concurrency=validated_concurrency(max_concurrency or {}),
        )
        self.news_sweep = self._news_sweep()
        self._reconcile_schedule()
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            functions=self.functions.functions,
            queues=self.queues,
            table=self.storage.table,
            news_sweep=self.news_sweep,
            distribution=self.distribution,
            alarm_topic=alarm_topic,
            alarm_email=alarm_email,
            service=self.service,
        )
        self.webhooks = self._webhooks(connectors, code) if connectors else None

    def _resource_names(self) -> dict[str, str]:
        """``resources.RESOURCE_SETTINGS``, from the resources of this deployment."""
        return {
            "table_name": self.storage.table.table_name,
            "bucket_name": self.storage.bucket.bucket_name,
            "distribution_id": self.distribution.distribution_id,
            "connectors": "",  # the webhook function's alone
            **queue_urls(QUEUE_SETTINGS, self.queues.urls()),
        }

    def _webhooks(self, document: Mapping[str, Any], code: lambda_.Code) -> Webhooks:
        endpoint = {"connectors": json.dumps(document)}
        return Webhooks(
            self,
            "Webhooks",
            connectors=parse_connectors(document),
            code=code,
            environment=self.settings.model_copy(update=endpoint).to_env(),
            ingest=self.queues[INGEST.name],
            monitoring=self.monitoring,
        )

    def _news_sweep(self) -> events.Rule:
        """The index, on a schedule, asks for a rebuild of every shard whose news blocks aged
        out, with no new event. A delivery EventBridge cannot make within one period goes to
        its own dead-letter queue (the NewsSweepFailed alarm): the next sweep does the same
        work."""
        dead_letter = dead_letter_queue(self, "NewsSweepDeadLetter")
        acknowledge(dead_letter, "AwsSolutions-SQS3", NEWS_SWEEP_DEAD_LETTER)
        target = targets.SqsQueue(
            self.queues[INDEX.name].queue,
            message_group_id=INDEX_GROUP,
            dead_letter_queue=dead_letter,
            max_event_age=Duration.minutes(NEWS_SWEEP_MINUTES),
            retry_attempts=8,
        )
        return events.Rule(
            self,
            "NewsSweep",
            description="Runs the index so shards whose news blocks aged out are rebuilt",
            schedule=events.Schedule.rate(Duration.minutes(NEWS_SWEEP_MINUTES)),
            targets=[target],
        )

    def _reconcile_schedule(self) -> None:
        # The schedule's retry_attempts governs only EventBridge's delivery; Lambda would run
        # a failed run twice more on its own. The next hour's run takes up what one left.
        self.functions[RECONCILE.name].configure_async_invoke(retry_attempts=0)
        events.Rule(
            self,
            "ReconcileSchedule",
            description="Checks a slice of the shards against the registry, repairing drift",
            schedule=events.Schedule.rate(Duration.minutes(RECONCILE_MINUTES)),
            targets=[targets.LambdaFunction(self.functions[RECONCILE.name], retry_attempts=0)],
        )

    @property
    def ingest_queue(self) -> sqs.Queue:
        """Where the CMS sends its events (grant it ``grant_send_messages``)."""
        return self.queues[INGEST.name].queue


def _check_arguments(
    updater: Construct,
    distribution: cloudfront.Distribution | None,
    alarm_topic: sns.ITopic | None,
    alarm_email: str | None,
) -> None:
    if alarm_topic is not None and alarm_email is not None:
        raise ConfigError(
            "alarm_email subscribes the stack's own alarm topic: with an existing topic "
            "(alarm_topic_arn), subscribe the address where that topic is managed"
        )
    if distribution is not None and Stack.of(distribution) is not Stack.of(updater):
        # The bucket policy would name the distribution and the distribution the bucket:
        # across two stacks that is a dependency cycle CloudFormation cannot deploy.
        raise ConfigError(
            "SitemapUpdater must be in the same stack as the distribution it attaches to "
            f"({Stack.of(distribution).node.path})"
        )


def deployment_service(updater: Construct) -> str:
    """``sitemap-updater:<stack name>/<construct path in the stack>``: the ``service``
    dimension of the functions' metrics, unique in an account and region, so that two
    deployments there never count each other's metrics."""
    stack = Stack.of(updater)
    inside = updater.node.scopes[updater.node.scopes.index(stack) + 1 :]
    return f"{SERVICE_NAME}:{stack.stack_name}/{'/'.join(c.node.id for c in inside)}"
