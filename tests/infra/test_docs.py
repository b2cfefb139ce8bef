"""docs/DEPLOY.md's "What is created" names every kind of resource the stack creates, and its
counts are the template's: an operator reads it to know what runs, and what costs, at rest."""

from __future__ import annotations

import re
from pathlib import Path

from tests.infra.conftest import Synthesized

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md"
# The words by which the paragraph names each kind of resource (policies are part of what
# they attach to: a role's, a bucket's, a queue's).
NAMED_AS = {
    "AWS::DynamoDB::Table": "DynamoDB registry",
    "AWS::S3::Bucket": "logs bucket",
    "AWS::SQS::Queue": "dead-letter queue",
    "AWS::Lambda::Function": "python3.12",
    "AWS::Lambda::EventSourceMapping": "SQS event sources",
    "AWS::Logs::LogGroup": "log group",
    "AWS::IAM::Role": "a role",
    "AWS::CloudFront::Distribution": "CloudFront",
    "AWS::CloudFront::OriginAccessControl": "origin access control",
    "AWS::CloudFront::CachePolicy": "cache policy",
    "AWS::CloudFront::ResponseHeadersPolicy": "security headers",
    "AWS::CloudFront::Function": "CloudFront function",
    "AWS::SNS::Topic": "SNS topic",
    "AWS::KMS::Key": "KMS key",
    "AWS::CloudWatch::Alarm": "alarms",
    "AWS::CloudWatch::Dashboard": "dashboard",
    "AWS::Events::Rule": "EventBridge schedule",
    "AWS::Lambda::Permission": "permission to invoke",
    "AWS::Lambda::EventInvokeConfig": "asynchronous invocation config",
}
PART_OF_ANOTHER = {
    "AWS::IAM::Policy",
    "AWS::S3::BucketPolicy",
    "AWS::SQS::QueuePolicy",
    "AWS::SNS::TopicPolicy",
}
NUMBERS = {"three": 3, "four": 4, "six": 6, "twenty-one": 21}


def what_is_created() -> str:
    text = DEPLOY.read_text()
    start = text.index("**What is created.**")
    return " ".join(text[start : text.index("\n\n", start)].split())


def test_every_kind_of_resource_is_named(default: Synthesized) -> None:
    kinds = {resource["Type"] for resource in default.json["Resources"].values()}
    assert kinds - PART_OF_ANOTHER <= set(NAMED_AS), "a new kind of resource: name it here"
    paragraph = what_is_created()
    missing = {kind: words for kind, words in NAMED_AS.items() if words not in paragraph}
    assert not missing


def test_the_counts_are_the_templates(default: Synthesized) -> None:
    paragraph = what_is_created()
    (alarms,) = re.findall(r"([\w-]+) alarms \(dead letters", paragraph)
    assert NUMBERS[alarms] == len(default.resources("AWS::CloudWatch::Alarm"))
    (functions,) = re.findall(r"(\w+) python3\.12", paragraph)
    assert NUMBERS[functions] == len(default.resources("AWS::Lambda::Function"))
