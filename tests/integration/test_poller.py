"""The in-process event source mapping gathers batches as Lambda does: a batch larger than
ten takes several receives, yet holds each message once and counts one receive for it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from sitemap_updater.local.poller import EventSourceMapping, drain
from tests.integration.conftest import publish
from tests.pipeline import Pipeline


def make_queue(sqs: Any, visibility: int) -> tuple[str, str]:
    url = sqs.create_queue(QueueName="gather", Attributes={"VisibilityTimeout": str(visibility)})[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    return url, arn["QueueArn"]


def test_a_large_batch_holds_each_message_once_even_with_no_visibility_timeout() -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, arn = make_queue(sqs, visibility=0)
        for start in range(0, 25, 10):
            sqs.send_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(n), "MessageBody": f"m{n}"}
                    for n in range(start, min(start + 10, 25))
                ],
            )
        batches: list[list[dict[str, Any]]] = []

        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            batches.append(event["Records"])
            failed = [r for r in event["Records"] if r["body"] == "m3"]
            return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in failed]}

        mapping = EventSourceMapping(sqs, url, arn, "f", handler, batch_size=100)
        assert mapping.poll_once() == 25
        (records,) = batches
        assert sorted(r["body"] for r in records) == sorted(f"m{n}" for n in range(25))
        assert {r["attributes"]["ApproximateReceiveCount"] for r in records} == {"1"}
        # The failed one is back at once (the queue's timeout is zero), the others are gone.
        assert mapping.poll_once() == 1
        assert [r["body"] for r in batches[1]] == ["m3"]
        assert batches[1][0]["attributes"]["ApproximateReceiveCount"] == "2"


def test_drain_gives_up_at_its_deadline_on_a_function_that_keeps_making_work() -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, arn = make_queue(sqs, visibility=30)
        sqs.send_message(QueueUrl=url, MessageBody="again")

        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            sqs.send_message(QueueUrl=url, MessageBody="again")
            return {}

        with pytest.raises(TimeoutError, match=r"did not drain within 0\.5 s"):
            drain(sqs, [EventSourceMapping(sqs, url, arn, "f", handler)], timeout_seconds=0.5)


def test_messages_whose_delete_failed_come_back_after_the_queues_own_timeout() -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, arn = make_queue(sqs, visibility=0)
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": f"m{n}"} for n in range(3)]
        )
        failures = [1]

        def lost_delete(**_: Any) -> None:
            if failures:
                failures.pop()
                raise ConnectionError("the delete was lost")

        sqs.meta.events.register("before-call.sqs.DeleteMessageBatch", lost_delete)
        bodies: list[str] = []

        def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            bodies.extend(r["body"] for r in event["Records"])
            return {"batchItemFailures": []}

        mapping = EventSourceMapping(sqs, url, arn, "f", handler, batch_size=100)
        assert mapping.poll_once() == 3
        # Not held for the gathering's 60 s: delivered again at once, then deleted.
        assert mapping.poll_once() == 3
        assert mapping.poll_once() == 0
        assert sorted(bodies) == ["m0", "m0", "m1", "m1", "m2", "m2"]


def test_the_local_pipeline_lets_go_of_moto_s_copies_of_the_registry(
    pipeline: Pipeline,
) -> None:
    """moto keeps every model instance for its dashboard, and each DynamoDB transaction
    deep-copies the table: a long `local --serve` (a backfill into it) grew to gigabytes."""
    from moto.dynamodb.models.table import Table

    pipeline.send_events([publish(f"/p{n}", 1) for n in range(30)])
    pipeline.drain()
    assert len(pipeline.app.registry.shard_entries("pages-00001")) == 30
    assert len(Table.instances_tracked) <= 2  # the table, not a copy per transaction
