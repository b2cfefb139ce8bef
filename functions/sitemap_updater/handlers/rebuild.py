"""Rebuild Lambda: one shard per FIFO message group; requests for one shard in a batch are
served by a single rebuild (they were all sent before it read the registry)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

# The use case, imported at init with the rest, not by the first request (bootstrap.py).
import sitemap_updater.usecases.rebuild  # noqa: F401
from sitemap_updater.adapters.queues import requested_shard
from sitemap_updater.bootstrap import App, app
from sitemap_updater.observability import logger, metrics


@logger.inject_lambda_context
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, app_: App | None = None
) -> PartialItemFailureResponse:
    rebuild = (app_ or app()).rebuild_shard
    done: set[str] = set()

    def record_handler(record: SQSRecord) -> str:
        shard = requested_shard(record.body)
        if shard in done:
            return "coalesced"
        outcome = rebuild(shard)
        done.add(shard)
        return outcome.value

    return process_partial_response(
        event=event,
        record_handler=record_handler,
        processor=SqsFifoPartialProcessor(skip_group_on_error=True),
        context=context,
    )
