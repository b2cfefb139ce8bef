"""``sitemap-updater rebuild``: re-render shards from the registry and restore what was lost.

Each shard goes through the rebuild function's own use case (``RebuildShard``) in restore
mode, run right here rather than through the rebuild queue, so it works even when the
functions do not. That is safe next to a running pipeline: every write is conditional on
the ETag and generation it read, so an older read can never overwrite newer output; an
object of ours newer than its record (a rebuild between its write and its record) is never
taken for an altered one; and, as no rebuild is queued behind this command, a shard it
wrote is read again until a pass finds nothing to write (``tests/integration/test_races.py``).

* Bytes changed (the registry was edited, or a rebuild was lost): written with a new
  lastmod, and the index function is asked to refresh, as after any rebuild.
* Bytes unchanged: the object is checked (HEAD); missing or altered, it is written again
  byte for byte with its recorded lastmod. Present and intact, it is not touched.

Then the index files and robots.txt's Sitemap lines are restored the same way
(``PublishIndex.restore``): only the recorded bytes, only where they are missing. When the
registry has moved on since the index was published, the index function must publish it
(it runs one message group at a time; this command does not compete with it): a request
goes to the index queue.

``--all`` is every shard with a published record, plus every shard number up to each
group's open shard (shards that were filled but never rendered).
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections import Counter
from typing import TYPE_CHECKING

from sitemap_updater.domain.errors import LimitExceeded, RetryableError
from sitemap_updater.domain.sharding import DEFAULT_GROUP, parse_shard_id, shard_id
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.progress import Progress
from sitemap_updater.ops.resolve import resolve

if TYPE_CHECKING:
    from sitemap_updater.adapters.registry import Registry


def all_shards(registry: Registry) -> list[str]:
    """Every shard the registry knows: published records and numbers up to the open shard."""
    known = {output.shard for output in registry.shard_outputs()}
    groups = {DEFAULT_GROUP} | {parse_shard_id(shard)[0] for shard in known}
    for group in sorted(groups):
        _group, open_number = parse_shard_id(registry.open_shard(group))
        known.update(shard_id(group, number) for number in range(1, open_number + 1))
    return sorted(known, key=parse_shard_id)


def run(args: argparse.Namespace) -> int:
    wanted: list[str] = []
    for shard in args.shard or []:
        try:
            parse_shard_id(shard)
        except ValueError as exc:
            raise UserError(f"--shard {shard!r}: a shard id is like pages-00001") from exc
        wanted.append(shard)
    deployment = resolve(args)
    app = deployment.app
    from sitemap_updater.observability import metrics  # noqa: PLC0415

    shards = all_shards(app.registry) if args.all else wanted
    outcomes: dict[str, str] = {}
    failed: dict[str, str] = {}
    with Progress("rebuild", total=len(shards)) as progress:
        for shard in shards:
            try:
                outcomes[shard] = app.rebuild_shard(shard, restore=True).value
            except (RetryableError, LimitExceeded) as exc:
                failed[shard] = f"{type(exc).__name__}: {exc}"
            metrics.clear_metrics()  # counted for Lambda's EMF; never published from here
            progress.advance()
    try:
        index = app.publish_index.restore()
    except RetryableError as exc:  # WriteConflict and ConcurrentChange are ones
        failed["index"] = f"{type(exc).__name__}: {exc}"
        index = None
    requested = index is None or index.behind
    if requested:
        app.queues.request_index(f"sitemap-updater rebuild {uuid.uuid4().hex}")
    metrics.clear_metrics()

    counts = Counter(outcomes.values())
    lines = [f"failed {shard}: {reason}" for shard, reason in failed.items()]
    lines.append(
        f"rebuild: {len(shards):,} shard(s): "
        + ", ".join(f"{count:,} {outcome}" for outcome, count in sorted(counts.items()))
        + (f", {len(failed):,} failed" if failed else "")
    )
    lines.extend(
        f"  {outcome} {shard}" for shard, outcome in outcomes.items() if outcome != "unchanged"
    )
    if index is not None:
        files = ", ".join(f"{key} {outcome.value}" for key, outcome in index.index_files.items())
        robots = f"robots.txt {index.robots.value}" if index.robots else "robots.txt left alone"
        lines.append(f"index: {files or 'no index files'}; {robots}")
    if requested:
        lines.append(
            "index: behind the registry; asked the index function to publish it "
            "(a request is on the index queue)"
        )
    print("\n".join(lines), flush=True)
    if args.json:
        summary = {
            "shards": outcomes,
            "failed": failed,
            "index_files": {k: v.value for k, v in index.index_files.items()} if index else {},
            "robots": index.robots.value if index and index.robots else None,
            "index_requested": requested,
        }
        print(json.dumps(summary), flush=True)
    return 1 if failed else 0
