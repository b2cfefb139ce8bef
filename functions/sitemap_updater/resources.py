"""The shape of the deployed resources, in one place: ``infra/`` builds them and
``sitemap-updater local`` creates the same ones on moto."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sitemap_updater.adapters.registry import (
    PARTITION_KEY,
    SHARD_ATTRIBUTE,
    SHARD_INDEX,
    SORT_KEY,
    TTL_ATTRIBUTE,
)

SERVICE_NAME = "sitemap-updater"
METRICS_NAMESPACE = "SitemapUpdater"
VISIBILITY_TIMEOUT_FACTOR = 6  # a queue's visibility timeout: six times its function's timeout
NEWS_SWEEP_MINUTES = 15  # the index's schedule: news ages out of the sitemaps with no event
RECONCILE_MINUTES = 60  # each run checks a slice of the shards (usecases/reconcile.py)
# A work queue keeps a message 4 days; its dead-letter queue 14 (SQS's maximum), longer than
# the source, because a standard queue's message keeps its first enqueue time when redriven.
QUEUE_RETENTION_DAYS = 4
DLQ_RETENTION_DAYS = 14
# SQS's maximum (body and attributes), set on every queue: MAX_EVENT_BYTES may be that large,
# and a rejected event is dead-lettered whole (adapters/queues.py).
MAX_MESSAGE_BYTES = 1_048_576


@dataclass(frozen=True)
class TableSpec:
    partition_key: str = PARTITION_KEY
    sort_key: str = SORT_KEY
    ttl_attribute: str = TTL_ATTRIBUTE
    # URL records by shard, for the reconciler (adapters/registry.py)
    shard_index: str = SHARD_INDEX
    shard_attribute: str = SHARD_ATTRIBUTE
    shard_index_attributes: tuple[str, ...] = ("url", "live")


@dataclass(frozen=True)
class FunctionSpec:
    """A Lambda function, the queue of its name it consumes, and how its events are batched."""

    name: str
    fifo: bool
    timeout_seconds: int
    memory_mb: int
    batch_size: int = 10
    batching_window_seconds: int = 0  # not supported on FIFO queues
    # Its event source mapping's invocations at once (context ``<name>_max_concurrency``): a
    # burst never throttles the function (docs/RELIABILITY.md#throttling).
    max_concurrency: int = 2
    max_receive_count: int = 5
    # A scheduled (EventBridge) sender cannot give a deduplication id: the queue derives it.
    content_based_deduplication: bool = False

    @property
    def handler(self) -> str:
        return f"sitemap_updater.handlers.{self.name}.handler"

    @property
    def visibility_timeout_seconds(self) -> int:
        """Six times the timeout, plus the batching window (AWS's guidance for SQS sources:
        a message gathered at the window's start is held that much longer)."""
        return self.timeout_seconds * VISIBILITY_TIMEOUT_FACTOR + self.batching_window_seconds


TABLE = TableSpec()

# Large batches, committed together (bench/work.py); concurrency: docs/DEPLOY.md#the-stack.
INGEST = FunctionSpec(
    "ingest",
    fifo=False,
    timeout_seconds=30,
    memory_mb=512,
    batch_size=100,
    batching_window_seconds=1,
    max_concurrency=5,
)
# Memory: the largest shards peak at 220-275 MB (docs/PERFORMANCE.md, bench/work.py).
REBUILD = FunctionSpec("rebuild", fifo=True, timeout_seconds=120, memory_mb=512, max_concurrency=5)
# One message group: one run at a time. Memory: 250 MB at 50,000 shards (docs/PERFORMANCE.md).
INDEX = FunctionSpec(
    "index", fifo=True, timeout_seconds=120, memory_mb=512, content_based_deduplication=True
)
FUNCTIONS = (INGEST, REBUILD, INDEX)
# Scheduled, with no queue: a run re-renders up to an hour's share of the shards.
RECONCILE = FunctionSpec("reconcile", fifo=False, timeout_seconds=900, memory_mb=1024)
# Only when INDEXNOW_KEY is set. Large batches (up to a minute's): one IndexNow request takes
# 10,000 URLs, and the engines prefer fewer, larger submissions.
INDEXNOW = FunctionSpec(
    "indexnow",
    fifo=False,
    timeout_seconds=60,
    memory_mb=256,
    batch_size=1000,
    batching_window_seconds=60,
    max_concurrency=2,  # few, large submissions: parallel ones only earn 429s
)


def functions_for(indexnow: bool) -> tuple[FunctionSpec, ...]:
    """The functions a deployment runs: the three, and IndexNow's when it is on."""
    return (*FUNCTIONS, INDEXNOW) if indexnow else FUNCTIONS


# A setting or stack output naming a queue -> (its function, whether the dead-letter queue).
QueueNames = Mapping[str, tuple[str, bool]]
# The settings naming the deployment's queues: the stack and the local runtime fill them in
# from the queues they create ("" for IndexNow's when it is off).
QUEUE_SETTINGS: QueueNames = {
    "rebuild_queue_url": (REBUILD.name, False),
    "index_queue_url": (INDEX.name, False),
    "ingest_queue_url": (INGEST.name, False),
    "ingest_dlq_url": (INGEST.name, True),
    "indexnow_queue_url": (INDEXNOW.name, False),
    "indexnow_dlq_url": (INDEXNOW.name, True),
}
# Settings the deployment fills in, never given: its resources' names, and the connectors
# (the webhook function's alone, from the connectors file).
RESOURCE_SETTINGS = frozenset(
    {"table_name", "bucket_name", "distribution_id", "connectors", *QUEUE_SETTINGS}
)
# Stack outputs (the CLI resolves ``--stack NAME`` from them): every settings variable
# (SITE_URL -> "SiteUrl"), and these for operators.
QUEUE_OUTPUTS: QueueNames = {
    "IngestQueueUrl": (INGEST.name, False),
    "RebuildDeadLetterQueueUrl": (REBUILD.name, True),
    "IndexDeadLetterQueueUrl": (INDEX.name, True),
}
EXTRA_OUTPUTS = (*QUEUE_OUTPUTS, "DistributionId", "DistributionDomainName")


def queue_urls(names: QueueNames, urls: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """``names`` from each deployed function's (queue URL, dead-letter queue URL)."""
    return {
        name: urls[function][dead_letter] if function in urls else ""
        for name, (function, dead_letter) in names.items()
    }


def output_key(env_name: str) -> str:
    """The stack output that carries a settings variable: ``SITE_URL`` -> ``SiteUrl``."""
    return "".join(part.capitalize() for part in env_name.lower().split("_"))
