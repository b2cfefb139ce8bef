"""IndexNow Lambda: URLs of applied changes from the standard indexnow queue, submitted in
requests of up to 10,000 (partial batch failures: see usecases/indexnow.py)."""

from __future__ import annotations

import time

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

import sitemap_updater.usecases.indexnow  # noqa: F401 - loaded at init (bootstrap.py)
from sitemap_updater.bootstrap import App, app
from sitemap_updater.handlers import Event, Response, messages_of, report
from sitemap_updater.observability import logged

# Stop starting HTTP attempts this long before the function's timeout: what is not
# submitted by then is failed, and SQS delivers it again.
SAFETY_SECONDS = 5.0


class NotSubmitted(Exception):
    """The message's URLs could not be submitted this time; SQS will deliver it again."""


@logged
def handler(event: Event, context: LambdaContext, app_: App | None = None) -> Response:
    submit = (app_ or app()).submit_indexnow
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - SAFETY_SECONDS
    result = submit(messages_of(event), deadline)

    def outcome(record: SQSRecord) -> str:
        if record.message_id in result.retry:
            raise NotSubmitted(record.message_id)
        return "dead-lettered" if record.message_id in result.dead_lettered else "submitted"

    # Every record failing is an outage of the endpoint, not of this function: report the
    # failures (SQS retries, then dead-letters) without counting a function error.
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return report(event, context, outcome, processor)
