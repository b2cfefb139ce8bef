"""moto as the local runtime runs it (``local.tuning.tune_moto``): the same answers as AWS
gives, in time that does not grow with the table or the queue. The tuning is for the whole
process, as in ``sitemap-updater local``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from sitemap_updater.local.tuning import tune_moto


@pytest.fixture
def aws() -> Iterator[None]:
    tune_moto()
    with mock_aws():
        yield


def items(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(item["pk"]["S"], item["sk"]["S"]) for item in answer["Items"]]


def test_a_query_reads_its_partition_in_key_order_and_pages(aws: None) -> None:
    dynamodb = boto3.client("dynamodb")
    dynamodb.create_table(
        TableName="t",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by-g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for pk in ("A", "B"):
        for sk in ("PEND#2", "URL#b", "PEND#1", "URL#a"):
            item = {"pk": {"S": pk}, "sk": {"S": sk}, "g": {"S": f"{pk}{sk[0]}"}}
            dynamodb.put_item(TableName="t", Item=item)
    query = {
        "TableName": "t",
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": {":pk": {"S": "A"}, ":prefix": {"S": "PEND#"}},
    }

    assert items(dynamodb.query(**query)) == [("A", "PEND#1"), ("A", "PEND#2")]
    first = dynamodb.query(**query, Limit=1, ScanIndexForward=False)
    assert items(first) == [("A", "PEND#2")]
    rest = dynamodb.query(**query, ExclusiveStartKey=first["LastEvaluatedKey"])
    assert items(rest) == []  # forward from PEND#2
    whole = dynamodb.query(
        TableName="t",
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "B"}},
    )
    assert [sk for _, sk in items(whole)] == ["PEND#1", "PEND#2", "URL#a", "URL#b"]
    none = dict(query, ExpressionAttributeValues={":pk": {"S": "C"}, ":prefix": {"S": "P"}})
    assert items(dynamodb.query(**none)) == []
    by_index = dynamodb.query(
        TableName="t",
        IndexName="by-g",
        KeyConditionExpression="g = :g",
        ExpressionAttributeValues={":g": {"S": "BU"}},
    )
    assert sorted(items(by_index)) == [("B", "URL#a"), ("B", "URL#b")]


def counts(sqs: Any, url: str) -> tuple[int, int]:
    names: Any = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return int(found[names[0]]), int(found[names[1]])


def test_queues_count_receive_and_delete_as_sqs_does(aws: None) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    for start in range(0, 25, 10):
        entries = [
            {"Id": str(n), "MessageBody": f"m{n}"} for n in range(start, min(25, start + 10))
        ]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    assert counts(sqs, url) == (25, 0)

    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert counts(sqs, url) == (15, 10)
    handles = [m["ReceiptHandle"] for m in received]
    entries = [{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles[:4])]
    entries.append({"Id": "bogus", "ReceiptHandle": "not-a-handle"})
    answer = sqs.delete_message_batch(QueueUrl=url, Entries=entries)
    assert len(answer["Successful"]) == 4
    assert [f["Code"] for f in answer["Failed"]] == ["ReceiptHandleIsInvalid"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handles[0])  # again: not an error
    assert counts(sqs, url) == (15, 6)

    # Received again, a message can still be deleted with its first receipt handle.
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=handles[4], VisibilityTimeout=0)
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert received[4]["MessageId"] in {m["MessageId"] for m in again["Messages"]}
    sqs.delete_message(QueueUrl=url, ReceiptHandle=handles[4])
    assert received[4]["MessageId"] not in {
        m["MessageId"]
        for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    }
    with pytest.raises(ClientError, match="ReceiptHandleIsInvalid"):
        sqs.delete_message(QueueUrl=url, ReceiptHandle="not-a-handle")


def test_a_fifo_queue_still_deduplicates_by_content(aws: None) -> None:
    sqs = boto3.client("sqs")
    attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    url = sqs.create_queue(QueueName="q.fifo", Attributes=attributes)["QueueUrl"]
    for _ in range(2):
        sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g")
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert found["ContentBasedDeduplication"] == "true"
    assert found["ApproximateNumberOfMessages"] == "2"
