"""Lambda entry points: parse, call one use case, report partial batch failures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.usecases.ports import Message


def messages_of(event: dict[str, Any]) -> list[Message]:
    """The SQS records of a Lambda event, as the use cases take them."""
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


def serve_once(
    event: dict[str, Any],
    context: LambdaContext,
    request: Callable[[SQSRecord], str],
    serve: Callable[[str], str],
) -> PartialItemFailureResponse:
    """A FIFO batch whose records ask for ``request``s: each served once, by the first record
    that asks (the others were sent before it read the registry: it serves them too)."""
    served: set[str] = set()

    def record_handler(record: SQSRecord) -> str:
        wanted = request(record)
        if wanted in served:
            return "coalesced"
        outcome = serve(wanted)
        served.add(wanted)
        return outcome

    processor = SqsFifoPartialProcessor(skip_group_on_error=True)
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
