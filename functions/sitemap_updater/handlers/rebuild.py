"""Rebuild Lambda: one shard per FIFO message group, one rebuild per shard in a batch."""

from __future__ import annotations

from aws_lambda_powertools.utilities.typing import LambdaContext

import sitemap_updater.usecases.rebuild  # noqa: F401 - loaded at init (bootstrap.py)
from sitemap_updater.adapters.queues import requested_shard
from sitemap_updater.bootstrap import App, app
from sitemap_updater.handlers import Event, Response, serve_once
from sitemap_updater.observability import logged


@logged
def handler(event: Event, context: LambdaContext, app_: App | None = None) -> Response:
    rebuild = (app_ or app()).rebuild_shard
    return serve_once(
        event, context, lambda record: requested_shard(record.body), lambda s: rebuild(s).value
    )
