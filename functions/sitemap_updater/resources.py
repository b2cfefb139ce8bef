"""The shape of the deployed resources, in one place for the CDK stack and the local runtime.

``infra/`` builds the real resources from these values and ``sitemap-updater local`` creates
the same ones on moto, so the two cannot drift apart.
"""

from __future__ import annotations

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
# The index also runs on a schedule: it asks for a rebuild of every shard whose news blocks
# have aged out (Google News: two days), so news leaves the sitemaps with no new event.
NEWS_SWEEP_MINUTES = 15
# The reconciler runs this often, each run a slice of the shards (usecases/reconcile.py).
RECONCILE_MINUTES = 60
# A work queue keeps a message 4 days; its dead-letter queue 14 (SQS's maximum), longer than
# the source, because a standard queue's message keeps its first enqueue time when redriven.
QUEUE_RETENTION_DAYS = 4
DLQ_RETENTION_DAYS = 14
# Every queue takes messages of up to 1 MiB (SQS's maximum, body and attributes), set on
# each queue rather than left to SQS's default: MAX_EVENT_BYTES may be that large, and a
# rejected event is dead-lettered whole (adapters/queues.py).
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
    """A Lambda function, the queue of the same name it consumes, and how its event source
    mapping batches."""

    name: str
    fifo: bool
    timeout_seconds: int
    memory_mb: int
    batch_size: int = 10
    batching_window_seconds: int = 0  # not supported on FIFO queues
    # How many invocations its event source mapping runs at once, by default (context key
    # ``<name>_max_concurrency``); Lambda's pollers receive no more than that many can take,
    # so a burst never throttles the function (docs/RELIABILITY.md#throttling).
    max_concurrency: int = 2
    max_receive_count: int = 5
    # A scheduled (EventBridge) sender cannot give a deduplication id: the queue derives it.
    content_based_deduplication: bool = False

    @property
    def queue(self) -> str:
        return self.name

    @property
    def handler(self) -> str:
        """module.function inside the asset."""
        return f"sitemap_updater.handlers.{self.name}.handler"

    @property
    def visibility_timeout_seconds(self) -> int:
        return self.timeout_seconds * VISIBILITY_TIMEOUT_FACTOR


TABLE = TableSpec()

# Up to 100 messages, collected for up to a second: ingest commits a batch's plain changes
# together (a read and a transaction per 32 events), and each batch asks once per shard for
# a rebuild, so a burst costs a fraction of a request per event (bench/work.py). At most
# five batches at once: every new URL of a group reserves room in the same open shard's
# capacity record, and a burst of new URLs spread over hundreds of invocations could spend
# its attempts on conflicts there (retried, then dead-lettered) instead of placing pages.
INGEST = FunctionSpec(
    "ingest",
    fifo=False,
    timeout_seconds=30,
    memory_mb=512,
    batch_size=100,
    batching_window_seconds=1,
    max_concurrency=5,
)
# Five shards at once: each rebuild reads its whole shard in one strongly consistent Query
# (about 2,500 read units for 10,000 URLs), and a backfill touching thousands of shards must
# leave the account's concurrency and the table's throughput to everything else.
REBUILD = FunctionSpec("rebuild", fifo=True, timeout_seconds=120, memory_mb=1024, max_concurrency=5)
# One message group: one run at a time whatever the setting (2 is Lambda's least).
INDEX = FunctionSpec(
    "index", fifo=True, timeout_seconds=120, memory_mb=1024, content_based_deduplication=True
)
FUNCTIONS = (INGEST, REBUILD, INDEX)
# Scheduled, with no queue: a run re-renders up to an hour's share of the shards.
RECONCILE = FunctionSpec("reconcile", fifo=False, timeout_seconds=900, memory_mb=1024)
# Optional: only when INDEXNOW_KEY is set (see functions_for). Its batches are large (up to
# a thousand messages of up to 100 URLs each, collected for up to a minute) because one
# IndexNow request takes 10,000 URLs and the engines prefer fewer, larger submissions.
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


# Stack outputs: the CLI resolves a deployment from these (``--stack NAME``). Every settings
# variable is an output (SITE_URL -> "SiteUrl"), plus what only operators need.
EXTRA_OUTPUTS = (
    "IngestQueueUrl",
    "RebuildDeadLetterQueueUrl",
    "IndexDeadLetterQueueUrl",
    "DistributionId",
    "DistributionDomainName",
)


def output_key(env_name: str) -> str:
    """The stack output that carries a settings variable: ``SITE_URL`` -> ``SiteUrl``."""
    return "".join(part.capitalize() for part in env_name.lower().split("_"))
