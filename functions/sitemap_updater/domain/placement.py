"""Where an event's entry goes, decided from the URL's record alone (pure).

* A URL never seen, or only ever unpublished, is placed in its group's open shard, which
  reserves one slot and the entry's bytes there.
* A known URL stays in its shard for life. If an update makes its entry larger than the
  bytes reserved for it, the shard must grow the reservation; if the shard has no room,
  the entry moves to the open shard (``move=True``), leaving its old shard.
* An unpublish keeps the URL's shard and reservation (so a republish lands in place) and
  removes the entry; a URL that was never placed gets a tombstone only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from sitemap_updater.domain.events import PageChange
from sitemap_updater.domain.records import UrlRecord
from sitemap_updater.domain.sharding import Reservation


@dataclass(frozen=True)
class Commit:
    """One atomic registry change: the URL record, its entry, and any reservation."""

    change: PageChange
    expected_version: Decimal | None  # the record must still hold this version (None: absent)
    shard: str | None  # the URL's shard after the commit
    previous_shard: str | None  # the shard its entry leaves, when it moves
    reservation: Reservation | None
    reserved: int  # bytes reserved for the URL after the commit
    tombstone_expires_at: int | None  # epoch seconds, for an unpublish

    @property
    def record(self) -> UrlRecord:
        return UrlRecord(
            url=self.change.url,
            version=self.change.version,
            live=self.change.live,
            shard=self.shard,
            reserved=self.reserved,
        )

    @property
    def touched(self) -> frozenset[str]:
        """Shards whose rendered output this commit may change."""
        return frozenset(s for s in (self.shard, self.previous_shard) if s is not None)


def plan_commit(
    record: UrlRecord | None,
    change: PageChange,
    size: int,
    *,
    open_shard: Callable[[], str],
    tombstone_expires_at: int,
    move: bool = False,
) -> Commit:
    """Plan the commit of ``change`` (newer than ``record``) whose entry takes ``size`` bytes."""
    expected = record.version if record else None
    placed = record.shard if record else None
    if not change.live:
        reserved = record.reserved if record else 0
        return Commit(change, expected, placed, None, None, reserved, tombstone_expires_at)
    if record is None or placed is None:
        target = open_shard()
        return Commit(change, expected, target, None, Reservation(target, 1, size), size, None)
    if size <= record.reserved:
        return Commit(change, expected, placed, None, None, record.reserved, None)
    if not move:
        growth = Reservation(placed, 0, size - record.reserved)
        return Commit(change, expected, placed, None, growth, size, None)
    target = open_shard()
    if target == placed:
        raise ValueError(f"cannot move an entry of {placed} into itself; close it first")
    return Commit(change, expected, target, placed, Reservation(target, 1, size), size, None)
