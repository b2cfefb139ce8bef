"""Ingest Lambda: CMS events from the standard ingest queue (partial batch failures)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from sitemap_updater.bootstrap import App, app
from sitemap_updater.observability import logger, metrics
from sitemap_updater.usecases.ingest import IngestResult


@logger.inject_lambda_context
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, app_: App | None = None
) -> PartialItemFailureResponse:
    batch = (app_ or app()).ingest_batch()
    records = event["Records"]
    # The batch's plain changes are committed together first (a burst costs a few requests,
    # not two per event); each record then reports its outcome, or is applied on its own.
    batch.prepare([(record["messageId"], record["body"]) for record in records])

    def record_handler(record: SQSRecord) -> IngestResult:
        return batch.handle(record.message_id, record.body, redelivered=_redelivered(record))

    processor = BatchProcessor(event_type=EventType.SQS)
    with processor(records=records, handler=record_handler, lambda_context=context):
        processor.process()
    # Only after every record is committed: one rebuild request per touched shard. If this
    # raises, the whole batch is retried; its committed events come back as duplicates,
    # which ask for the rebuild again.
    batch.flush()
    return processor.response()


def _redelivered(record: SQSRecord) -> bool:
    """Whether SQS delivered this message before (its receive count is above one)."""
    count = record.raw_event.get("attributes", {}).get("ApproximateReceiveCount", "1")
    return str(count).isdigit() and int(count) > 1
