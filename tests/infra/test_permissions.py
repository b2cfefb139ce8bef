"""Least privilege: each function may call exactly what its adapters call, on its own
resources only (the template's policies, compared whole)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.conftest import Synthesized

CONSUME = {
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
}
XRAY = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}


def _resource(value: Any) -> str:
    """A readable name for a policy resource: ``Table.Arn``, ``Bucket.Arn/sitemap-*``, ..."""
    if value == "*":
        return "*"
    if "Fn::GetAtt" in value:
        return f"{value['Fn::GetAtt'][0]}.{value['Fn::GetAtt'][1]}"
    parts = value["Fn::Join"][1]
    if any(isinstance(p, dict) and p.get("Ref") == "AWS::Partition" for p in parts):
        (distribution,) = [p["Ref"] for p in parts if isinstance(p, dict) and "Ref" in p][-1:]
        return f"distribution/{distribution}"
    return "".join(_resource(p) if isinstance(p, dict) else p for p in parts)


def grants(synth: Synthesized, name: str) -> set[tuple[str, str]]:
    """(action, resource) pairs of the function's role, from every policy attached to it."""
    function = synth.stack.updater.functions[name]
    role_id = synth.logical_id(function.role)  # type: ignore[arg-type]
    role = synth.resources("AWS::IAM::Role")[role_id]["Properties"]
    assert "ManagedPolicyArns" not in role  # no AWS managed policy: only what is listed
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
        }
    ]
    pairs: set[tuple[str, str]] = set()
    for policy in synth.resources("AWS::IAM::Policy").values():
        props = policy["Properties"]
        if {"Ref": role_id} not in props["Roles"]:
            continue
        for statement in props["PolicyDocument"]["Statement"]:
            assert statement["Effect"] == "Allow"
            actions = statement["Action"]
            resources = statement["Resource"]
            for action in [actions] if isinstance(actions, str) else actions:
                for resource in resources if isinstance(resources, list) else [resources]:
                    pairs.add((action, _resource(resource)))
    return pairs


def expected(synth: Synthesized, name: str, invalidation: bool) -> set[tuple[str, str]]:
    updater = synth.stack.updater
    table = f"{synth.logical_id(updater.storage.table)}.Arn"
    bucket = f"{synth.logical_id(updater.storage.bucket)}.Arn"
    queue = {n: f"{synth.logical_id(updater.queues[n].queue)}.Arn" for n in updater.queues.pairs}
    ingest_dlq = f"{synth.logical_id(updater.queues['ingest'].dead_letter)}.Arn"
    logs = _log_group(synth, name)
    distribution = f"distribution/{synth.logical_id(updater.distribution)}"

    def each(actions: set[str], *resources: str) -> set[tuple[str, str]]:
        return {(a, r) for a in actions for r in resources}

    objects = {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"}
    common = each(XRAY, "*") | each(LOGS, logs) | each(CONSUME, queue[name])
    own = {
        "ingest": each({"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:BatchWriteItem",
                        "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, table)
        | each({"sqs:SendMessage"}, queue["rebuild"], ingest_dlq),
        "rebuild": each({"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query",
                         "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"}, table)
        | each(objects, f"{bucket}/sitemap-*")
        | each({"s3:ListBucket"}, bucket)
        | each({"sqs:SendMessage"}, queue["index"]),
        "index": each({"dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:UpdateItem",
                       "dynamodb:DeleteItem"}, table)
        | each(objects, f"{bucket}/sitemap.xml", f"{bucket}/sitemap-index-*")
        | each(objects - {"s3:DeleteObject"}, f"{bucket}/robots.txt")
        | each({"s3:ListBucket"}, bucket)
        | each({"sqs:SendMessage"}, queue["rebuild"]),
    }[name]  # fmt: skip
    if invalidation and name in ("rebuild", "index"):
        own |= each({"cloudfront:CreateInvalidation"}, distribution)
    if updater.functions.feed and name == "ingest":  # asks the index to publish the feed
        own |= each({"sqs:SendMessage"}, queue["index"])
    if updater.functions.feed and name == "index":  # reads the feed's item, writes feed.atom
        own |= each({"dynamodb:GetItem"}, table) | each(
            objects - {"s3:DeleteObject"}, f"{bucket}/feed.atom"
        )
    return common | own


def _log_group(synth: Synthesized, name: str) -> str:
    function = synth.resources("AWS::Lambda::Function")[
        synth.logical_id(synth.stack.updater.functions[name])
    ]
    return f"{function['Properties']['LoggingConfig']['LogGroup']['Ref']}.Arn"


@pytest.mark.parametrize("name", ["ingest", "rebuild", "index"])
def test_each_function_gets_exactly_what_it_calls(default: Synthesized, name: str) -> None:
    assert grants(default, name) == expected(default, name, invalidation=False)


@pytest.mark.parametrize("name", ["ingest", "rebuild", "index"])
def test_invalidation_adds_create_invalidation_on_that_distribution_only(
    configured: Synthesized, name: str
) -> None:
    assert grants(configured, name) == expected(configured, name, invalidation=True)


def test_no_wildcard_action_anywhere(synthesized: Synthesized) -> None:
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            for action in [actions] if isinstance(actions, str) else actions:
                assert "*" not in action, action
