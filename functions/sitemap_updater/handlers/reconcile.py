"""Reconcile Lambda: on its EventBridge schedule, check a slice of the shards against the
registry and repair what drifted (usecases/reconcile.py). A shard that failed stays due."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

import sitemap_updater.usecases.reconcile  # noqa: F401 - loaded at init (bootstrap.py)
from sitemap_updater.bootstrap import App, app
from sitemap_updater.handlers import Event
from sitemap_updater.observability import logged, logger


@logged
def handler(event: Event, context: LambdaContext, app_: App | None = None) -> dict[str, Any]:
    summary = asdict((app_ or app()).reconcile())
    logger.info("reconciled", **summary)
    return summary
