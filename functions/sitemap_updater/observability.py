"""The one Logger and Metrics of the package (Powertools), and the metric names. No X-Ray
SDK: its import costs a cold start 100-200 ms, and Lambda's active tracing needs none. Log
keys are snake_case; metrics never carry a per-URL dimension.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics

# Lambda's JSON log format takes the level and time as given; the message names the place.
logger = Logger(use_rfc3339=True, location=None)
metrics = Metrics()
Handler = TypeVar("Handler", bound=Callable[..., Any])
# What every line of a function's own log group would repeat (log subscriptions carry it).
_REPEATED_KEYS = ("function_name", "function_arn", "function_memory_size")


def logged(handler: Handler) -> Handler:
    """Powertools' ``inject_lambda_context`` (keeping its request id and cold start only) and
    ``log_metrics``."""
    measured = metrics.log_metrics(handler)

    @functools.wraps(handler)
    def trimmed(*args: Any, **kwargs: Any) -> Any:
        logger.remove_keys(_REPEATED_KEYS)
        return measured(*args, **kwargs)

    return logger.inject_lambda_context(trimmed)  # type: ignore[return-value]


class Metric:
    EVENTS_APPLIED = "EventsApplied"
    EVENTS_DUPLICATE = "EventsDuplicate"
    EVENTS_STALE = "EventsStale"
    EVENTS_REJECTED = "EventsRejected"
    SHARDS_WRITTEN = "ShardsWritten"
    SHARDS_UNCHANGED = "ShardsUnchanged"
    SHARDS_DELETED = "ShardsDeleted"
    SHARD_MOVES = "EntriesMoved"
    SHARDS_CHECKED = "ShardsReconciled"
    SHARDS_REPAIRED = "ShardsRepaired"  # drift: found by the reconciler
    ENTRIES_REPAIRED = "EntriesRepaired"  # a live record without its entry, or the reverse
    INDEX_FILES_WRITTEN = "IndexFilesWritten"
    PUBLISH_TO_VISIBLE = "PublishToVisibleMs"  # SQS SentTimestamp of an event -> index written
    ROBOTS_WRITTEN = "RobotsTxtWritten"
    ROBOTS_TOO_LARGE = "RobotsTxtTooLarge"
    WRITE_CONFLICTS = "WriteConflicts"
    PATHS_INVALIDATED = "PathsInvalidated"
    INVALIDATIONS_FAILED = "InvalidationsFailed"
    SITE_FILES_WRITTEN = "SiteFilesWritten"
    INDEXNOW_QUEUED = "IndexNowUrlsQueued"
    INDEXNOW_NOT_QUEUED = "IndexNowUrlsNotQueued"  # lost: the ingest could not queue them
    INDEXNOW_SUBMITTED = "IndexNowUrlsSubmitted"
    INDEXNOW_RETRIED = "IndexNowMessagesRetried"
    INDEXNOW_DEAD_LETTERED = "IndexNowMessagesDeadLettered"
    WEBHOOKS_REFUSED = "WebhooksRefused"  # 401: unsigned, forged or stale (alarmed)
    WEBHOOK_EVENTS = "WebhookEventsQueued"
