"""``sitemap-updater status``: shard fill, queues and their oldest message (CloudWatch: peeking
would count as a receive), dead letters by reason, the index, objects it names but the bucket
lacks. Exit status 1 on dead letters or a missing object, for alerts."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters.queues import REASON_ATTRIBUTE, REASON_CODE_ATTRIBUTE
from sitemap_updater.domain.sharding import GroupRules, Limits, parse_shard_id
from sitemap_updater.ops.errors import exit_status
from sitemap_updater.ops.progress import print_lines
from sitemap_updater.ops.resolve import Deployment, resolve
from sitemap_updater.usecases.reconcile import known_shards

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

    from sitemap_updater.adapters.registry import Registry
    from sitemap_updater.domain.records import ShardOutput

SHOW_SHARDS = 30
PEEK = 100  # dead letters read per queue for their reasons
# A dead letter without a reason_code was moved there by SQS after maxReceiveCount failed
# receives (a fault that may pass after a fix); one with a reason_code was rejected for good.
RETRIES_EXHAUSTED = "retries_exhausted"


@dataclass(frozen=True)
class ShardStatus:
    shard: str
    entries: int  # listed in the published object
    bytes: int  # the object's uncompressed size
    slots: int  # placed URLs, unpublished ones included: a republish lands in place
    max_slots: int  # its group's (a news group's shards hold 1,000 at most)
    reserved_bytes: int
    fill: float  # 0..1: how close placement is to closing the shard
    lastmod: str | None
    state: str  # listed, unlisted, retiring, unpublished (no object yet)
    open: bool
    checked: str | None  # the reconciler's last full check


@dataclass(frozen=True)
class QueueStatus:
    name: str
    url: str
    visible: int
    in_flight: int
    delayed: int
    oldest_seconds: float | None


def shard_statuses(
    registry: Registry, limits: Limits, records: list[ShardOutput], groups: GroupRules
) -> list[ShardStatus]:
    """Every shard the registry knows (``known_shards`` of the groups the rules name)."""
    outputs = {output.shard: output for output in known_shards(registry, groups.named, records)}
    shards = sorted(outputs, key=parse_shard_id)
    # known_shards goes up to each group's open shard: its last, in shard order.
    open_shards = set({parse_shard_id(shard)[0]: shard for shard in shards}.values())
    statuses = []
    for shard, (slots, reserved) in registry.capacities(shards).items():
        output = outputs.get(shard)
        obj = output.obj if output else None
        state = "unpublished"
        if output is not None and obj is not None:
            state = "retiring" if output.retiring else "listed" if output.listed else "unlisted"
        max_slots = groups.max_urls(parse_shard_id(shard)[0], limits)
        fill = max(slots / max_slots, reserved / limits.max_entry_bytes)
        entries, size, lastmod = (obj.entries, obj.bytes, obj.lastmod) if obj else (0, 0, None)
        row = (shard, entries, size, slots, max_slots, reserved, fill, lastmod, state)
        statuses.append(ShardStatus(*row, shard in open_shards, output.checked if output else None))
    return statuses


def missing_objects(deployment: Deployment, named: list[str]) -> list[str]:
    """The keys in ``named`` the bucket does not hold (one listing, not a HEAD each)."""
    pages = deployment.client("s3").get_paginator("list_objects_v2")
    listing = pages.paginate(Bucket=deployment.settings.bucket_name)
    held = {item["Key"] for page in listing for item in page.get("Contents", [])}
    return sorted(set(named) - held)


def reason_code(message: Any) -> str:
    attribute = message.get("MessageAttributes", {}).get(REASON_CODE_ATTRIBUTE, {})
    return str(attribute.get("StringValue") or RETRIES_EXHAUSTED)


def dead_letter_reasons(sqs: SQSClient, dlq_url: str, visible: int) -> list[dict[str, Any]]:
    """The count and a sample (body and reason, cut short) of each ``reason_code`` of up to
    PEEK dead letters, the most frequent first. Read, then visible again at once."""
    from sitemap_updater.local import poller  # noqa: PLC0415 - it logs: after resolve()

    held = poller.receive(sqs, dlq_url, min(visible, PEEK), VisibilityTimeout=30)
    poller.set_visibility(sqs, dlq_url, [message["ReceiptHandle"] for message in held], 0)
    samples: dict[str, str] = {}
    for message in held:
        code = reason_code(message)
        attributes: dict[str, Any] = dict(message.get("MessageAttributes", {}))
        reason = str(attributes.get(REASON_ATTRIBUTE, {}).get("StringValue", ""))
        why = f" ({reason.removeprefix(f'{code}: ')[:160]})" if reason else ""
        samples.setdefault(code, message["Body"][:120] + why)
    counts = Counter(reason_code(message) for message in held)
    return [
        {"code": code, "count": count, "sample": samples[code]}
        for code, count in counts.most_common()
    ]


def reason_lines(queue: str, reasons: list[dict[str, Any]], waiting: int) -> list[str]:
    read = sum(reason["count"] for reason in reasons)
    first = f" (the first {read:,} of {waiting:,})" if read < waiting else ""
    return [f"  {queue}{first}: {r['count']:,} {r['code']}, e.g. {r['sample']}" for r in reasons]


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
    except (BotoCoreError, ClientError):  # no permission, say
        return None
    newest = max(points, key=lambda point: point["Timestamp"], default=None)
    return None if newest is None else float(newest["Maximum"])


def queue_statuses(deployment: Deployment, now: datetime) -> list[QueueStatus]:
    from sitemap_updater.local.poller import queue_counts  # noqa: PLC0415 - it logs

    sqs, cloudwatch = deployment.sqs, deployment.client("cloudwatch")
    return [
        QueueStatus(name, url, *queue_counts(sqs, url), oldest_age(cloudwatch, url, now))
        for queue, urls in deployment.queues().items()
        for name, url in zip((queue, f"{queue} DLQ"), urls, strict=True)
        if url
    ]


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _shard_lines(shards: list[ShardStatus]) -> list[str]:
    shown = shards
    if len(shards) > SHOW_SHARDS:  # the open shards and the fullest others
        fullest = sorted(shards, key=lambda s: (not s.open, -s.fill))[:SHOW_SHARDS]
        shown = sorted(fullest, key=lambda s: parse_shard_id(s.shard))
    lines = [
        f"  {'shard':<16} {'entries':>9} {'bytes':>12} {'slots':>13} {'fill':>5}  "
        f"{'lastmod':<20}  {'checked':<20}  state"
    ]
    lines.extend(
        f"  {s.shard:<16} {s.entries:>9,} {s.bytes:>12,} "
        f"{f'{s.slots:,}/{s.max_slots:,}':>13} {s.fill:>5.0%}  "
        f"{s.lastmod or '-':<20}  {s.checked or '-':<20}  {s.state}{' (open)' if s.open else ''}"
        for s in shown
    )
    if len(shown) < len(shards):
        lines.append(f"  ... {len(shards) - len(shown):,} more (--json lists every shard)")
    return lines


def _table(
    report: dict[str, Any], shards: list[ShardStatus], queues: list[QueueStatus], limits: Limits
) -> list[str]:
    files = ", ".join(f"{k} ({v['entries']:,} shards)" for k, v in report["index_files"].items())
    lines = [
        f"site {report['site_url']}: {sum(s.entries for s in shards):,} URLs listed in "
        f"{sum(1 for s in shards if s.state == 'listed'):,} shard(s)",
        f"limits: {limits.max_urls_per_shard:,} URLs and {limits.max_shard_bytes:,} bytes "
        f"per shard, {limits.max_sitemaps_per_index:,} shards per index file",
        "shards (fill: how close placement is to closing the shard, by slots or bytes):",
        *_shard_lines(shards),
        "queues:",
        f"  {'queue':<12} {'visible':>8} {'in flight':>10} {'delayed':>8} {'oldest':>7}",
        *(
            f"  {q.name:<12} {q.visible:>8,} {q.in_flight:>10,} {q.delayed:>8,} "
            f"{_age(q.oldest_seconds):>7}"
            for q in queues
        ),
    ]
    if any(q.oldest_seconds is None for q in queues):
        lines.append("  (oldest: CloudWatch's ApproximateAgeOfOldestMessage; '-' = no data)")
    lines.append(
        f"index: {files or 'not published yet'}; written {report['newest_index_lastmod'] or '-'}; "
        f"newest shard lastmod it lists {report['newest_shard_lastmod'] or '-'}"
    )
    checks = report["reconciled"]
    lines.append(
        f"reconciler: oldest check {checks['oldest_check'] or '-'}; "
        f"{checks['never_checked']:,} shard(s) never checked"
    )
    lines.extend(f"MISSING: {key} is named by the index" for key in report["missing_objects"])
    if report["dead_letters"]:
        lines.append(
            f"dead letters: {report['dead_letters']:,} by reason_code (docs/EVENTS.md; "
            f"{RETRIES_EXHAUSTED}: failed every retry); `sitemap-updater redrive` moves them back"
        )
        waiting = {q.name: q.visible for q in queues}
        for name, found in report["dead_letter_reasons"].items():
            lines.extend(reason_lines(name, found, waiting[name]))
    return lines


def run(args: argparse.Namespace) -> int:
    deployment = resolve(args)
    settings, registry = deployment.settings, deployment.app.registry
    outputs = registry.shard_outputs()
    shards = shard_statuses(registry, settings.limits, outputs, settings.groups)
    queues = queue_statuses(deployment, datetime.now(UTC))
    indexes = {key: out.obj for key, out in sorted(registry.index_outputs().items()) if out.obj}
    listed = (s.lastmod for s in shards if s.lastmod and s.state == "listed")
    named = [o.obj.key for o in outputs if o.listed and o.obj] + [o.key for o in indexes.values()]
    checked = [s.checked for s in shards if s.checked]
    report = {
        "site_url": settings.site_url,
        "limits": asdict(settings.limits),
        "shards": [asdict(s) for s in shards],
        "queues": [asdict(q) for q in queues],
        "index_files": {
            k: {"entries": o.entries, "lastmod": o.lastmod} for k, o in indexes.items()
        },
        "newest_index_lastmod": max((obj.lastmod for obj in indexes.values()), default=None),
        "newest_shard_lastmod": max(listed, default=None),
        "reconciled": {
            "oldest_check": min(checked, default=None),
            "never_checked": len(shards) - len(checked),
        },
        "missing_objects": missing_objects(deployment, named),
        "dead_letters": sum(
            q.visible + q.in_flight + q.delayed for q in queues if q.name.endswith("DLQ")
        ),
        "dead_letter_reasons": {
            q.name: dead_letter_reasons(deployment.sqs, q.url, q.visible)
            for q in queues
            if q.name.endswith("DLQ") and q.visible
        },
    }
    print_lines(
        [json.dumps(report)] if args.json else _table(report, shards, queues, settings.limits)
    )
    return exit_status(failed=bool(report["dead_letters"] or report["missing_objects"]))
