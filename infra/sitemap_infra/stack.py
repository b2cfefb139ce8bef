"""The stack ``cdk deploy`` creates: the SitemapUpdater construct with a distribution of its own,
and the outputs the operations CLI resolves a deployment from."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_sns as sns
from constructs import Construct

from sitemap_infra.config import DeployConfig, deployed_connectors
from sitemap_infra.updater import SitemapUpdater
from sitemap_updater.resources import EXTRA_OUTPUTS, QUEUE_OUTPUTS, output_key, queue_urls
from sitemap_updater.settings import Settings


class SitemapUpdaterStack(Stack):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: Any
    ) -> None:
        kwargs.setdefault(
            "description", f"sitemap-updater: XML sitemaps of {config.resolved.site_url}"
        )
        super().__init__(scope, construct_id, **kwargs)
        certificate = (
            acm.Certificate.from_certificate_arn(self, "Certificate", config.certificate_arn)
            if config.certificate_arn
            else None
        )
        topic = (
            sns.Topic.from_topic_arn(self, "AlarmTopic", config.alarm_topic_arn)
            if config.alarm_topic_arn
            else None
        )
        self.updater = updater = SitemapUpdater(
            self,
            "SitemapUpdater",
            site_url=config.resolved.site_url,
            settings={k: v for k, v in config.settings.items() if k != "site_url"},
            domain_name=config.domain_name,
            certificate=certificate,
            alarm_topic=topic,
            connectors=deployed_connectors(config.connectors) if config.connectors else None,
            alarm_email=config.alarm_email,
            max_concurrency=config.max_concurrency,
        )
        extra = {
            **queue_urls(QUEUE_OUTPUTS, updater.queues.urls()),
            "DistributionId": updater.distribution.distribution_id,
            "DistributionDomainName": updater.distribution.distribution_domain_name,
        }
        if updater.webhooks is not None:
            extra["WebhookUrl"] = updater.webhooks.url.url
        assert set(extra) - {"WebhookUrl"} == set(EXTRA_OUTPUTS), "EXTRA_OUTPUTS changed"  # noqa: S101
        outputs: dict[str, tuple[str, str | None]] = {k: (v, None) for k, v in extra.items()}
        env = updater.settings.to_env()
        for field in Settings.model_fields.values():
            # An empty setting (IndexNow off) has no output: CloudFormation wants a value, and
            # the operations CLI reads a missing output as the setting's default.
            if field.alias and env[field.alias] != "":
                outputs[output_key(field.alias)] = (env[field.alias], field.description)
        for key, (value, description) in sorted(outputs.items()):
            CfnOutput(self, key, value=value, description=description or key)
