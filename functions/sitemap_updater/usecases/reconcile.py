"""Reconcile: repair where the bucket or the registry drifted from the registry's truth, a
slice of the shards per run, so that each is visited once per ``period`` at a flat cost. A
visit makes the shard's entries those its live URL records place there (each repair
conditional on the record: a concurrent commit is never undone), re-renders the shard by the
rebuild's restore path, and records the check (``status`` shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from math import ceil

from sitemap_updater.domain.dates import w3c
from sitemap_updater.domain.errors import ConcurrentChange, RetryableError
from sitemap_updater.domain.records import ShardOutput
from sitemap_updater.domain.sharding import DEFAULT_GROUP, parse_shard_id, shard_id
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import KnownShards, ReconcileRegistry
from sitemap_updater.usecases.rebuild import Rebuilt

REPAIRS = {Rebuilt.WRITTEN, Rebuilt.RESTORED, Rebuilt.DELETED}


def known_shards(
    registry: KnownShards, groups: Iterable[str] = (), outputs: Iterable[ShardOutput] | None = None
) -> list[ShardOutput]:
    """Every shard the registry knows, in shard order: those with a record, and every number
    up to the open shard of each group that has one, or that ``groups`` (the rules') names
    and has placed a page: filled but never rendered, a blank record. (A group only events
    name is known once one of its shards has a record.)"""
    records = registry.shard_outputs() if outputs is None else outputs
    known = {output.shard: output for output in records}
    recorded = {DEFAULT_GROUP} | {parse_shard_id(shard)[0] for shard in known}
    for group in sorted(recorded | set(groups)):
        _group, open_number = parse_shard_id(registry.open_shard(group))
        first = shard_id(group, 1)
        unrecorded = group not in recorded and open_number == 1
        if unrecorded and not registry.capacities([first])[first][0]:
            continue  # a rule's group with no page yet
        for number in range(1, open_number + 1):
            known.setdefault(shard_id(group, number), ShardOutput(shard_id(group, number)))
    return sorted(known.values(), key=lambda output: parse_shard_id(output.shard))


@dataclass(frozen=True)
class ReconcileResult:
    visited: list[str]
    entries_repaired: int
    shards_repaired: list[str]
    failed: dict[str, str]  # shard: why (due again next run)


@dataclass(kw_only=True)
class Reconcile:
    registry: ReconcileRegistry
    rebuild: Callable[..., Rebuilt]  # RebuildShard, called with restore=True
    period: timedelta
    interval: timedelta  # between runs
    clock: Callable[[], datetime]
    groups: frozenset[str] = frozenset()  # the group rules' (GroupRules.named)

    def due(self) -> list[str]:
        """This run's shards: those not checked within the period, least recently checked
        first, as many as keep the pace (shards times interval over period)."""
        shards = known_shards(self.registry, self.groups)
        checked_before = w3c(self.clock() - self.period)
        due = [s for s in shards if s.checked is None or s.checked <= checked_before]
        due.sort(key=lambda output: output.checked or "")  # stable: shard order within
        return [output.shard for output in due[: ceil(len(shards) * self.interval / self.period)]]

    def __call__(self) -> ReconcileResult:
        visited, entries, repaired, failed = self.due(), 0, [], {}
        for shard in visited:
            try:
                entries += self._repair_entries(shard)
                if self.rebuild(shard, restore=True) in REPAIRS:
                    repaired.append(shard)
                    logger.warning("shard repaired: its object was not the registry's", shard=shard)
                self.registry.mark_checked(shard, w3c(self.clock()))
            except RetryableError as exc:
                failed[shard] = f"{type(exc).__name__}: {exc}"
                logger.warning("shard not reconciled", shard=shard, reason=failed[shard])
        metrics.add_metric(name=Metric.SHARDS_CHECKED, unit="Count", value=len(visited))
        metrics.add_metric(name=Metric.SHARDS_REPAIRED, unit="Count", value=len(repaired))
        metrics.add_metric(name=Metric.ENTRIES_REPAIRED, unit="Count", value=entries)
        return ReconcileResult(visited, entries, repaired, failed)

    def _repair_entries(self, shard: str) -> int:
        """Make the shard's entries those its live records place there; how many changed."""
        placed = self.registry.placed_live(shard)
        listed = {entry.url for entry, _cid in self.registry.shard_entries(shard)}
        repaired = 0
        for url in sorted(placed ^ listed):
            state = self.registry.url_state(url)
            record = state.record
            wanted = record is not None and record.live and record.shard == shard
            if wanted == (self.registry.entry(shard, url) is not None):
                continue  # the index was behind, or a commit landed since
            try:
                if wanted:
                    self.registry.restore_entry(shard, url, state.cluster)
                else:
                    self.registry.remove_entry(shard, url)
            except ConcurrentChange:  # the record moved on: its own commit settled it
                continue
            repaired += 1
            logger.warning(
                "entry repaired",
                url=url,
                shard=shard,
                reason="live record without its entry: restored from the record (send the "
                "event again to restore its fields)"
                if wanted
                else "entry without a live record placing it here: removed",
            )
        return repaired
