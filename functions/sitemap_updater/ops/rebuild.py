"""``sitemap-updater rebuild``: the rebuild use case run here in restore mode, so it works
when the functions do not. Safe next to them: every write is conditional, and a shard it
wrote is read again until a pass writes nothing (test_races.py); an index behind the
registry is left to the index function, asked through its queue."""

from __future__ import annotations

import argparse
import uuid
from collections import Counter
from typing import TYPE_CHECKING

from sitemap_updater.domain.errors import LimitExceeded, RetryableError
from sitemap_updater.domain.sharding import parse_shard_id
from sitemap_updater.ops.errors import UserError, exit_status
from sitemap_updater.ops.progress import Progress, print_summary
from sitemap_updater.ops.resolve import resolve

if TYPE_CHECKING:
    from sitemap_updater.bootstrap import App
    from sitemap_updater.usecases.publish_index import RestoreResult


def _rebuild(app: App, shards: list[str], failed: dict[str, str]) -> dict[str, str]:
    from sitemap_updater.observability import metrics  # noqa: PLC0415 - after resolve()

    outcomes = {}
    with Progress("rebuild", total=len(shards)) as progress:
        for shard in shards:
            try:
                outcomes[shard] = app.rebuild_shard(shard, restore=True).value
            except (RetryableError, LimitExceeded) as exc:
                failed[shard] = f"{type(exc).__name__}: {exc}"
            metrics.clear_metrics()  # counted for Lambda's EMF; never published from here
            progress.advance()
    return outcomes


def _restore_index(app: App, failed: dict[str, str]) -> RestoreResult | None:
    """Only the recorded bytes, only where they are missing; None if that failed."""
    from sitemap_updater.observability import metrics  # noqa: PLC0415 - after resolve()

    try:
        index = app.publish_index.restore()
    except RetryableError as exc:  # WriteConflict and ConcurrentChange are ones
        failed["index"] = f"{type(exc).__name__}: {exc}"
        index = None
    metrics.clear_metrics()
    return index


def run(args: argparse.Namespace) -> int:
    for shard in args.shard or []:
        try:
            parse_shard_id(shard)
        except ValueError as exc:
            raise UserError(f"--shard {shard!r}: a shard id is like pages-00001") from exc
    app = resolve(args).app
    from sitemap_updater.usecases.reconcile import known_shards  # noqa: PLC0415 - after resolve()

    known = [output.shard for output in known_shards(app.registry, app.settings.groups.named)]
    if unknown := [shard for shard in args.shard or [] if shard not in known]:
        raise UserError(
            f"--shard {unknown[0]}: the registry has no such shard (it has {len(known):,}: "
            f"{', '.join(known[:3])}{', ...' if len(known) > 3 else ''}; `status` lists them)"
        )
    shards = known if args.all else args.shard
    failed: dict[str, str] = {}
    outcomes = _rebuild(app, shards, failed)
    index = _restore_index(app, failed)
    files = {key: outcome.value for key, outcome in index.index_files.items()} if index else {}
    robots = index.robots.value if index and index.robots else None
    counts = sorted(Counter(outcomes.values()).items())
    lines = [f"failed {shard}: {reason}" for shard, reason in failed.items()]
    lines.append(
        f"rebuild: {len(shards):,} shard(s): "
        + ", ".join(f"{count:,} {outcome}" for outcome, count in counts)
        + (f", {len(failed):,} failed" if failed else "")
    )
    lines.extend(
        f"  {outcome} {shard}" for shard, outcome in outcomes.items() if outcome != "unchanged"
    )
    if index is not None:
        named = ", ".join(f"{key} {outcome}" for key, outcome in files.items()) or "no index files"
        lines.append(
            f"index: {named}; " + (f"robots.txt {robots}" if robots else "robots.txt left alone")
        )
    requested = index is None or index.behind
    if requested:
        app.queues.request_index(f"sitemap-updater rebuild {uuid.uuid4().hex}")
        lines.append(
            "index: behind the registry; asked the index function to publish it "
            "(a request is on the index queue)"
        )
    summary = {
        "shards": outcomes,
        "failed": failed,
        "index_files": files,
        "robots": robots,
        "index_requested": requested,
    }
    print_summary(lines, summary, args.json)
    return exit_status(failed=bool(failed))
