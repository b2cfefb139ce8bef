"""Ingest Lambda: CMS events from the standard ingest queue (partial batch failures)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

# The use case, imported at init with the rest, not by the first request (bootstrap.py).
import sitemap_updater.usecases.ingest  # noqa: F401
from sitemap_updater.bootstrap import App, app
from sitemap_updater.handlers import messages_of
from sitemap_updater.observability import logger, metrics


@logger.inject_lambda_context
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, app_: App | None = None
) -> PartialItemFailureResponse:
    # Raises when the rebuild requests cannot be sent: SQS delivers the whole batch again.
    outcomes = (app_ or app()).ingest(messages_of(event))

    def record_handler(record: SQSRecord) -> str:
        return outcomes[record.message_id].value_or_raise()

    return process_partial_response(
        event=event,
        record_handler=record_handler,
        processor=BatchProcessor(event_type=EventType.SQS),
        context=context,
    )
