"""cdk-nag's AwsSolutions checks run in every synth: no unacknowledged finding, and each
acknowledgement carries its reason."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from cdk_nag import AwsSolutionsChecks

from tests.infra.conftest import Synthesized

ACKNOWLEDGED = {
    "AwsSolutions-CFR1",
    "AwsSolutions-CFR2",
    "AwsSolutions-CFR4",
    "AwsSolutions-SQS3",  # the news sweep's dead-letter queue (an EventBridge DLQ)
    "AwsSolutions-L1",  # python3.12: the asset is compiled by a local interpreter of that version
    "AwsSolutions-IAM5[Resource::*]",
    "AwsSolutions-IAM5[Resource::<SitemapUpdaterStorageSite78E2AF89.Arn>/sitemap-*]",
    "AwsSolutions-IAM5[Resource::<SitemapUpdaterStorageSite78E2AF89.Arn>/sitemap-index-*]",
    "AwsSolutions-IAM5[Resource::<SitemapUpdaterStorageRegistry54C14733.Arn>/index/*]",
}


def test_no_unacknowledged_finding(synthesized: Synthesized) -> None:
    report = AwsSolutionsChecks(synthesized.app).validate_scope(synthesized.app)
    assert [v.rule_name for v in report.violations] == []


def _acknowledgements(synth: Synthesized) -> dict[str, str]:
    found: dict[str, str] = {}
    key = Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    for construct in synth.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == key:  # data: {"<source>::<rule id>": reason}
                for rule, reason in entry.data.items():
                    found[rule.split("::", 1)[-1]] = reason
    return found


def test_each_acknowledgement_names_its_reason(default: Synthesized) -> None:
    found = _acknowledgements(default)
    assert set(found) == ACKNOWLEDGED
    for finding, reason in found.items():
        assert len(reason) > 40, finding


def test_a_custom_domain_needs_no_tls_acknowledgement(configured: Synthesized) -> None:
    assert "AwsSolutions-CFR4" not in _acknowledgements(configured)


def test_a_finding_fails_the_synth() -> None:
    """The checks are really on: a queue without a DLQ or TLS policy stops the synth."""
    app = App()
    stack = Stack(app, "Bad")
    sqs.Queue(stack, "Queue")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="AwsSolutions-SQS3"):
        Template.from_stack(stack)
