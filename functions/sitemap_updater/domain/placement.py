"""Where an event's entry goes, decided from the URL's record alone (pure). A new URL (or one
only ever unpublished) takes a slot and its bytes in its group's open shard; a known URL stays
in its shard for life, growing its reservation, or moving to the open shard (``move=True``)
when its shard has no room; an unpublish keeps the shard and reservation, so a republish lands
in place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal

from sitemap_updater.domain.clusters import Cluster
from sitemap_updater.domain.contract import PageChange
from sitemap_updater.domain.records import UrlRecord
from sitemap_updater.domain.sharding import PROTOCOL_MAX_URLS, Reservation


@dataclass(frozen=True)
class ClusterWrite:
    """A cluster record's new state, committed with the URL's change, conditional on
    ``expected`` (None: new); ``absorbed`` clusters become redirects to it. ``targets``: pages
    it newly links, repointed conditionally on the (version, pointer) read, so no member's
    state is recorded stale. Members of absorbed clusters keep their pointer (the redirect
    resolves it), so absorbed clusters and targets number at most 63: a commit stays within
    DynamoDB's 100 actions."""

    cluster: Cluster
    expected: int | None
    absorbed: tuple[tuple[str, int], ...] = ()
    targets: tuple[tuple[str, Decimal | None, str | None], ...] = ()
    relinks: bool = True  # it changes the alternates another member lists: their shards rebuild


@dataclass(frozen=True)
class EntityWrite:
    """An entity record's new state, committed with its page's change (conditional on the
    version it was read at; None: absent)."""

    entity: str
    url: str | None
    version: Decimal
    live: bool
    expected: Decimal | None
    expires_at: int | None = None  # a tombstone's, as the URL's
    left: str | None = None  # the live URL it moves from


@dataclass(frozen=True)
class Commit:
    """One atomic registry change: the URL record, its entry, any reservation, any cluster."""

    change: PageChange
    expected_version: Decimal | None  # the record must still hold this version (None: absent)
    shard: str | None  # the URL's shard after the commit
    previous_shard: str | None  # the shard its entry leaves, when it moves
    reservation: Reservation | None
    reserved: int  # bytes reserved for the URL after the commit
    tombstone_expires_at: int | None  # epoch seconds, for an unpublish
    base: int = 0  # bytes of its entry without alternates
    cluster: ClusterWrite | None = None
    expected_cluster: str | None = None  # the record's cluster pointer when it was read
    entity: EntityWrite | None = None
    retired: Commit | None = None  # the entity's previous URL, unpublished in the same step

    @property
    def record(self) -> UrlRecord:
        return UrlRecord(
            url=self.change.url,
            version=self.change.version,
            live=self.change.live,
            shard=self.shard,
            reserved=self.reserved,
            base=self.base,
        )

    @property
    def cluster_id(self) -> str | None:
        return self.cluster.cluster.cid if self.cluster else None

    @property
    def touched(self) -> frozenset[str]:
        """Shards whose rendered output this commit may change."""
        own = frozenset(s for s in (self.shard, self.previous_shard) if s is not None)
        return own | self.retired.touched if self.retired else own


def plan_commit(
    record: UrlRecord | None,
    change: PageChange,
    size: int,
    *,
    open_shard: Callable[[], str],
    tombstone_expires_at: int,
    move: bool = False,
    base: int | None = None,
    max_slots: int = PROTOCOL_MAX_URLS,
) -> Commit:
    """Plan the commit of ``change`` (newer than ``record``, or a resize at its version)
    whose entry renders to ``size`` bytes (``base`` of them without alternates)."""
    expected = record.version if record else None
    placed = record.shard if record else None
    base = size if base is None else base

    def commit(
        shard: str | None,
        previous: str | None,
        reservation: Reservation | None,
        reserved: int,
        expires: int | None = None,
    ) -> Commit:
        return Commit(change, expected, shard, previous, reservation, reserved, expires, base)

    if not change.live:
        reserved = record.reserved if record else 0
        return commit(placed, None, None, reserved, tombstone_expires_at)
    if record is None or placed is None:
        target = open_shard()
        return commit(target, None, Reservation(target, 1, size, max_slots), size)
    if size <= record.reserved:
        return commit(placed, None, None, record.reserved)
    if not move:
        return commit(placed, None, Reservation(placed, 0, size - record.reserved, max_slots), size)
    target = open_shard()
    if target == placed:
        raise ValueError(f"cannot move an entry of {placed} into itself; close it first")
    return commit(target, placed, Reservation(target, 1, size, max_slots), size)


def combined_reservations(commits: Iterable[Commit]) -> list[Reservation]:
    """The commits' reservations summed per shard (in order of first appearance): what
    they claim together, checked against each shard's room in one condition."""
    combined: dict[str, Reservation] = {}
    for claim in filter(None, (commit.reservation for commit in commits)):
        held = combined.get(claim.shard, Reservation(claim.shard, 0, 0, claim.max_slots))
        slots, size = held.slots + claim.slots, held.bytes + claim.bytes
        most = min(held.max_slots, claim.max_slots)
        combined[claim.shard] = Reservation(claim.shard, slots, size, most)
    return list(combined.values())
