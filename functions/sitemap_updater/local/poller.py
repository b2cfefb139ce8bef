"""Lambda's SQS event source mapping, in-process (moto cannot run it without Docker): receive,
invoke with the event Lambda builds, delete what succeeded; failed messages come back after
the visibility timeout, and a handler that raises fails its whole batch, as on Lambda."""

from __future__ import annotations

import contextlib
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sitemap_updater.local.stack import REGION
from sitemap_updater.observability import logger, metrics

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import MessageTypeDef

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
# A batch of more than ten takes several receives: the messages received so far are held this
# long, so that a short visibility timeout cannot hand one back into the same batch (a receive
# counted each time). The ones the function does not finish get the queue's timeout back.
GATHER_HOLD_SECONDS = 60
_COUNTS: list[QueueAttributeNameType] = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


@dataclass
class FakeLambdaContext:
    """The fields Powertools reads from a Lambda context."""

    function_name: str
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = ""
    aws_request_id: str = ""

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


@dataclass
class EventSourceMapping:
    sqs: SQSClient
    queue_url: str
    queue_arn: str
    function_name: str
    handler: Handler
    batch_size: int = 10
    invocations: int = 0
    errors: int = 0  # invocations that raised

    def poll_once(self) -> int:
        """One receive-invoke-delete round (no batching window); returns how many came."""
        hold = {"VisibilityTimeout": GATHER_HOLD_SECONDS} if self.batch_size > 10 else {}
        messages = receive(self.sqs, self.queue_url, self.batch_size, **hold)
        if not messages:
            return 0
        event = {"Records": [self._record(message) for message in messages]}
        arn = f"arn:aws:lambda:{REGION}:123456789012:function:{self.function_name}"
        context = FakeLambdaContext(self.function_name, 1024, arn, str(uuid.uuid4()))
        self.invocations += 1
        try:
            # A function's stdout (Powertools' metric lines) is the local runtime's stderr, as
            # its log is: stdout is the command's.
            with contextlib.redirect_stdout(sys.stderr):
                result = self.handler(event, context)
        except Exception as exc:  # noqa: BLE001 - Lambda reports it; the batch is retried
            self.errors += 1
            self._warn("function error; batch will be retried", exc)
            self._release(messages)
            return len(messages)
        finally:  # disabled (the CLI's), Powertools keeps the values until the 100th
            metrics.clear_metrics()
        failed = {item["itemIdentifier"] for item in (result or {}).get("batchItemFailures", [])}
        self._release([m for m in messages if m["MessageId"] in failed])
        self._delete([m for m in messages if m["MessageId"] not in failed])
        return len(messages)

    def _warn(self, message: str, exc: Exception) -> None:
        logger.warning(message, function=self.function_name, reason=f"{type(exc).__name__}: {exc}")

    def _delete(self, done: list[MessageTypeDef]) -> None:
        start = 0
        try:
            for start in range(0, len(done), 10):
                entries = _entries(m["ReceiptHandle"] for m in done[start : start + 10])
                self.sqs.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as exc:  # noqa: BLE001 - as on Lambda: the messages come back later
            self._warn("could not delete processed messages; they will be delivered again", exc)
            self._release(done[start:])  # after the queue's timeout, not the gathering hold

    def _release(self, messages: Sequence[MessageTypeDef]) -> None:
        """Unfinished messages of a large batch: back to the queue's own visibility timeout."""
        if self.batch_size <= 10 or not messages:
            return
        handles = [message["ReceiptHandle"] for message in messages]
        set_visibility(self.sqs, self.queue_url, handles, self._queue_visibility)

    @cached_property
    def _queue_visibility(self) -> int:
        found = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["VisibilityTimeout"]
        )
        return int(found["Attributes"]["VisibilityTimeout"])

    def _record(self, message: MessageTypeDef) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": {
                name: {
                    "stringValue": value.get("StringValue"),
                    "dataType": value["DataType"],
                    "stringListValues": [],
                    "binaryListValues": [],
                }
                for name, value in message.get("MessageAttributes", {}).items()
            },
            "md5OfBody": message["MD5OfBody"],
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue_arn,
            "awsRegion": REGION,
        }


def receive(
    sqs: SQSClient, queue_url: str, limit: int | None = None, **options: Any
) -> list[MessageTypeDef]:
    """Up to ``limit`` messages (None: all it can see), each once, ten to a call while calls
    bring new ones (given a limit, as many as asked: an extra call would count a receive)."""
    messages: dict[str, MessageTypeDef] = {}
    while limit is None or len(messages) < limit:
        wanted = 10 if limit is None else min(10, limit - len(messages))
        received = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=wanted,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
            **options,
        ).get("Messages", [])
        fresh = [m for m in received if m["MessageId"] not in messages]
        messages.update((m["MessageId"], m) for m in fresh)
        if not fresh or (limit is not None and len(received) < wanted):
            break
    return list(messages.values())


def _entries(handles: Iterable[str], **fields: Any) -> list[Any]:
    return [{"Id": str(n), "ReceiptHandle": h, **fields} for n, h in enumerate(handles)]


def set_visibility(sqs: SQSClient, queue_url: str, handles: Sequence[str], seconds: int) -> None:
    """A new visibility timeout for received messages, ten to a request."""
    for start in range(0, len(handles), 10):
        entries = _entries(handles[start : start + 10], VisibilityTimeout=seconds)
        sqs.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)


def queue_counts(sqs: SQSClient, queue_url: str) -> tuple[int, int, int]:
    """Visible, in flight, delayed: SQS's approximate counts."""
    found = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=_COUNTS)["Attributes"]
    visible, in_flight, delayed = (int(found.get(name, "0")) for name in _COUNTS)
    return visible, in_flight, delayed


def queue_depth(sqs: SQSClient, queue_url: str) -> int:
    return sum(queue_counts(sqs, queue_url))


def poll_round(mappings: Iterable[EventSourceMapping]) -> int:
    """One round of every mapping; how many messages came. Then the model instances moto
    tracks for its dashboard (unused here; the data is untouched) are let go: a DynamoDB
    transaction deep-copies the table, so a long run held gigabytes."""
    from moto.core.model_instances import reset_model_data  # noqa: PLC0415 - the local extra

    received = sum(mapping.poll_once() for mapping in mappings)
    reset_model_data()
    return received


def drain(sqs: SQSClient, mappings: Sequence[EventSourceMapping], timeout_seconds: float) -> None:
    """Run the mappings until every source queue is empty, failed messages included."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        if time.monotonic() > deadline:  # also for functions that keep sending themselves work
            raise TimeoutError(f"queues did not drain within {timeout_seconds} s")
        if poll_round(mappings):
            continue
        # Empty twice in a row: a message whose visibility timeout ends between the reads of
        # two counts is in neither of one look.
        if all(queue_depth(sqs, m.queue_url) == 0 for _ in range(2) for m in mappings):
            return
        time.sleep(0.1)
