"""The one Logger and Metrics of the package (Powertools), and the metric names. No X-Ray
SDK: its import costs a cold start 100-200 ms, and Lambda's active tracing needs none. Log
keys are snake_case; metrics never carry a per-URL dimension.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

logger = Logger(use_rfc3339=True)  # Lambda's JSON log format takes the level and time as given
metrics = Metrics()


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
