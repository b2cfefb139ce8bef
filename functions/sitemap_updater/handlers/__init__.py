"""Lambda entry points: parse, call one use case, report partial batch failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.base import BasePartialBatchProcessor
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.usecases.ports import Message

Event = dict[str, Any]
Response = PartialItemFailureResponse


def messages_of(event: Event) -> list[Message]:
    return [
        Message(
            record["messageId"],
            record["body"],
            redelivered=(_attribute(record, "ApproximateReceiveCount") or 1) > 1,
            sent_timestamp=_attribute(record, "SentTimestamp"),
        )
        for record in event.get("Records", [])
    ]


def _attribute(record: dict[str, Any], name: str) -> int | None:
    value = str(record.get("attributes", {}).get(name, ""))
    return int(value) if value.isdigit() else None


def report(
    event: Event,
    context: LambdaContext,
    outcome: Callable[[SQSRecord], str],
    processor: BasePartialBatchProcessor | None = None,
) -> Response:
    """Each record's ``outcome`` (raising fails that record alone) as Lambda's partial
    batch response; a standard queue's processor unless another is given."""
    return process_partial_response(
        event=event,
        record_handler=outcome,
        processor=processor or BatchProcessor(event_type=EventType.SQS),
        context=context,
    )


def serve_once(
    event: Event,
    context: LambdaContext,
    request: Callable[[SQSRecord], str],
    serve: Callable[[str], str],
) -> Response:
    """A FIFO batch whose records ask for ``request``s: each served once, by the first record
    that asks (the others were sent before it read the registry: it serves them too)."""
    served: set[str] = set()

    def outcome(record: SQSRecord) -> str:
        wanted = request(record)
        if wanted in served:
            return "coalesced"
        result = serve(wanted)
        served.add(wanted)
        return result

    return report(event, context, outcome, SqsFifoPartialProcessor(skip_group_on_error=True))
