"""Ingest Lambda: CMS events from the standard ingest queue (partial batch failures)."""

from __future__ import annotations

from aws_lambda_powertools.utilities.typing import LambdaContext

import sitemap_updater.usecases.ingest  # noqa: F401 - loaded at init (bootstrap.py)
from sitemap_updater.bootstrap import App, app
from sitemap_updater.handlers import Event, Response, messages_of, report
from sitemap_updater.observability import logged


@logged
def handler(event: Event, context: LambdaContext, app_: App | None = None) -> Response:
    # When the rebuild requests cannot be sent, every message but the rejected fails: SQS
    # delivers them again.
    outcomes = (app_ or app()).ingest(messages_of(event))
    return report(event, context, lambda record: outcomes[record.message_id].value_or_raise())
