"""``sitemap-updater status``: how full the shards are, what is queued, what is dead-lettered.

* Shards, from the registry: entries and uncompressed bytes of each published object
  against the limits, and the placement view that decides when a shard closes (slots and
  bytes reserved: an unpublished page keeps its slot, so a republish lands in place).
* Queues, from SQS: messages visible, in flight and delayed. The age of the oldest
  message is CloudWatch's ``ApproximateAgeOfOldestMessage`` (the newest one-minute maximum
  of the last 15 minutes): SQS has no attribute for it, and peeking at a message would
  count as a receive and push it towards the dead-letter queue. Where CloudWatch has no
  data (an idle queue, moto, no permission) the age is shown as ``-``.
* Dead-letter queues: how many messages each holds (see ``redrive``).
* The index: its files, when they were last written (their lastmod) and the newest shard
  lastmod they list (when the site's sitemaps last changed).

Exit status 1 when a dead-letter queue holds messages, so a cron job or a check can alert.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sitemap_updater.domain.sharding import DEFAULT_GROUP, Limits, parse_shard_id
from sitemap_updater.ops.resolve import Deployment, resolve

if TYPE_CHECKING:
    from sitemap_updater.adapters.registry import Registry

SHOW_SHARDS = 30
_QUEUE_ATTRIBUTES = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


@dataclass(frozen=True)
class ShardStatus:
    shard: str
    entries: int  # listed in the published object
    bytes: int  # the object's uncompressed size
    slots: int  # placed URLs, unpublished ones included
    reserved_bytes: int
    fill: float  # 0..1: how close placement is to closing the shard
    lastmod: str | None
    state: str  # listed, unlisted, retiring, unpublished (no object yet)
    open: bool


@dataclass(frozen=True)
class QueueStatus:
    name: str
    url: str
    visible: int
    in_flight: int
    delayed: int
    oldest_seconds: float | None


def shard_statuses(registry: Registry, limits: Limits) -> list[ShardStatus]:
    outputs = {output.shard: output for output in registry.shard_outputs()}
    groups = {DEFAULT_GROUP} | {parse_shard_id(shard)[0] for shard in outputs}
    open_shards = {registry.open_shard(group) for group in groups}
    shards = sorted(set(outputs) | open_shards, key=parse_shard_id)
    capacities = registry.capacities(shards)
    statuses = []
    for shard in shards:
        output = outputs.get(shard)
        obj = output.obj if output else None
        slots, reserved = capacities[shard]
        if output is None or obj is None:
            state = "unpublished"
        elif output.retiring:
            state = "retiring"
        else:
            state = "listed" if output.listed else "unlisted"
        fill = max(slots / limits.max_urls_per_shard, reserved / limits.max_entry_bytes)
        statuses.append(
            ShardStatus(
                shard=shard,
                entries=obj.entries if obj else 0,
                bytes=obj.bytes if obj else 0,
                slots=slots,
                reserved_bytes=reserved,
                fill=fill,
                lastmod=obj.lastmod if obj else None,
                state=state,
                open=shard in open_shards,
            )
        )
    return statuses


def oldest_age(cloudwatch: Any, queue_url: str, now: datetime) -> float | None:
    """CloudWatch's newest ApproximateAgeOfOldestMessage, in seconds (None: no data)."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    try:
        points = cloudwatch.get_metric_statistics(
            Namespace="AWS/SQS",
            MetricName="ApproximateAgeOfOldestMessage",
            Dimensions=[{"Name": "QueueName", "Value": queue_url.rstrip("/").rsplit("/", 1)[-1]}],
            StartTime=now - timedelta(minutes=15),
            EndTime=now,
            Period=60,
            Statistics=["Maximum"],
        ).get("Datapoints", [])
    except (BotoCoreError, ClientError):
        return None
    if not points:
        return None
    return float(max(points, key=lambda point: point["Timestamp"])["Maximum"])


def queue_statuses(deployment: Deployment, now: datetime) -> list[QueueStatus]:
    sqs, cloudwatch = deployment.sqs, deployment.client("cloudwatch")
    statuses = []
    for pair in deployment.queues():
        for name, url in ((pair.name, pair.url), (f"{pair.name} DLQ", pair.dlq_url)):
            if not url:
                continue
            attributes = sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=_QUEUE_ATTRIBUTES,  # type: ignore[arg-type]
            )["Attributes"]
            statuses.append(
                QueueStatus(
                    name=name,
                    url=url,
                    visible=int(attributes.get("ApproximateNumberOfMessages", "0")),
                    in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
                    delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
                    oldest_seconds=oldest_age(cloudwatch, url, now),
                )
            )
    return statuses


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _shard_lines(shards: list[ShardStatus], limits: Limits) -> list[str]:
    shown = shards
    if len(shards) > SHOW_SHARDS:  # the open shards and the fullest others
        fullest = sorted(shards, key=lambda s: (not s.open, -s.fill))[:SHOW_SHARDS]
        shown = sorted(fullest, key=lambda s: parse_shard_id(s.shard))
    lines = [
        f"  {'shard':<16} {'entries':>9} {'bytes':>12} {'slots':>13} {'fill':>5}  "
        f"{'lastmod':<20}  state"
    ]
    for s in shown:
        marker = " (open)" if s.open else ""
        lines.append(
            f"  {s.shard:<16} {s.entries:>9,} {s.bytes:>12,} "
            f"{f'{s.slots:,}/{limits.max_urls_per_shard:,}':>13} {s.fill:>5.0%}  "
            f"{s.lastmod or '-':<20}  {s.state}{marker}"
        )
    if len(shown) < len(shards):
        lines.append(f"  ... {len(shards) - len(shown):,} more (--json lists every shard)")
    return lines


def run(args: argparse.Namespace) -> int:
    deployment = resolve(args)
    settings, registry = deployment.settings, deployment.app.registry
    limits = settings.limits
    now = datetime.now(UTC)
    shards = shard_statuses(registry, limits)
    queues = queue_statuses(deployment, now)
    indexes = {
        key: output.obj for key, output in sorted(registry.index_outputs().items()) if output.obj
    }
    newest = max((obj.lastmod for obj in indexes.values()), default=None)
    newest_shard = max(
        (s.lastmod for s in shards if s.lastmod and s.state == "listed"), default=None
    )
    dead = sum(q.visible + q.in_flight + q.delayed for q in queues if q.name.endswith("DLQ"))
    if args.json:
        print(
            json.dumps(
                {
                    "site_url": settings.site_url,
                    "limits": asdict(limits),
                    "shards": [asdict(s) for s in shards],
                    "queues": [asdict(q) for q in queues],
                    "index_files": {
                        k: {"entries": o.entries, "lastmod": o.lastmod} for k, o in indexes.items()
                    },
                    "newest_index_lastmod": newest,
                    "newest_shard_lastmod": newest_shard,
                    "dead_letters": dead,
                }
            )
        )
        return 1 if dead else 0
    entries = sum(s.entries for s in shards)
    lines = [
        f"site {settings.site_url}: {entries:,} URLs listed in "
        f"{sum(1 for s in shards if s.state == 'listed'):,} shard(s)",
        f"limits: {limits.max_urls_per_shard:,} URLs and {limits.max_shard_bytes:,} bytes "
        f"per shard, {limits.max_sitemaps_per_index:,} shards per index file",
        "shards (fill: how close placement is to closing the shard, by slots or bytes):",
        *_shard_lines(shards, limits),
        "queues:",
        f"  {'queue':<12} {'visible':>8} {'in flight':>10} {'delayed':>8} {'oldest':>7}",
    ]
    lines.extend(
        f"  {q.name:<12} {q.visible:>8,} {q.in_flight:>10,} {q.delayed:>8,} "
        f"{_age(q.oldest_seconds):>7}"
        for q in queues
    )
    if any(q.oldest_seconds is None for q in queues):
        lines.append("  (oldest: CloudWatch's ApproximateAgeOfOldestMessage; '-' = no data)")
    files = ", ".join(f"{key} ({obj.entries:,} shards)" for key, obj in indexes.items())
    lines.append(
        f"index: {files or 'not published yet'}; written {newest or '-'}; "
        f"newest shard lastmod it lists {newest_shard or '-'}"
    )
    if dead:
        lines.append(f"dead letters: {dead:,} (see `sitemap-updater redrive --dry-run`)")
    print("\n".join(lines), flush=True)
    return 1 if dead else 0
