"""Index Lambda: refresh the sitemap index and robots.txt. All requests share one FIFO
message group, so runs never overlap; a batch of requests is served by one run."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import SqsFifoPartialProcessor, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

# The use case, imported at init with the rest, not by the first request (bootstrap.py).
import sitemap_updater.usecases.publish_index  # noqa: F401
from sitemap_updater.bootstrap import App, app
from sitemap_updater.observability import logger, metrics


@logger.inject_lambda_context
@metrics.log_metrics
def handler(
    event: dict[str, Any], context: LambdaContext, app_: App | None = None
) -> PartialItemFailureResponse:
    publish = (app_ or app()).publish_index
    served = False

    def record_handler(record: SQSRecord) -> str:
        nonlocal served
        if served:
            return "coalesced"
        publish()
        served = True
        return "published"

    return process_partial_response(
        event=event,
        record_handler=record_handler,
        processor=SqsFifoPartialProcessor(skip_group_on_error=True),
        context=context,
    )
