"""The ingest use case against an in-memory registry (no AWS): ordering, placement, moves,
and the races the real registry reports as ConcurrentChange / ShardFull."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import ConcurrentChange, InvalidEvent, RetryableError
from sitemap_updater.domain.events import PageChange
from sitemap_updater.domain.placement import Commit, plan_commit
from sitemap_updater.domain.records import UrlRecord
from sitemap_updater.domain.render import URLSET_FRAME_BYTES
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.usecases.ingest import ApplyChange, Outcome
from tests.conftest import FakeClock
from tests.fakes import MemoryRegistry
from tests.rendering import entry_size

SITE = "https://www.example.com"


def change(path: str, version: int, live: bool = True, **fields: str) -> PageChange:
    url = f"{SITE}{path}"
    entry = SitemapEntry(url=url, **fields) if live else None
    return PageChange(url=url, version=Decimal(version), entry=entry)


@pytest.fixture
def registry() -> MemoryRegistry:
    return MemoryRegistry(Limits(max_urls_per_shard=2))


@pytest.fixture
def ingest(registry: MemoryRegistry) -> ApplyChange:
    return ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())


def test_newer_applies_equal_is_a_duplicate_older_is_stale(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    assert ingest(change("/a", 2)).outcome is Outcome.APPLIED
    duplicate = ingest(change("/a", 2, lastmod="2030-01-01"))
    assert duplicate.outcome is Outcome.DUPLICATE
    assert duplicate.shards == {"pages-00001"}  # asks for the rebuild a crash may have lost
    assert ingest(change("/a", 1)).outcome is Outcome.STALE
    assert registry.entries["pages-00001"][f"{SITE}/a"][0].lastmod is None
    assert len(registry.commits) == 1


def test_unpublish_of_an_unknown_url_leaves_a_tombstone_without_a_shard(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    result = ingest(change("/ghost", 5, live=False))
    assert result.outcome is Outcome.APPLIED
    assert result.shards == frozenset()
    assert registry.get_url(f"{SITE}/ghost") == UrlRecord(
        f"{SITE}/ghost", Decimal(5), False, None, 0
    )
    assert registry.commits[0].tombstone_expires_at == int(FakeClock()().timestamp()) + 100
    assert ingest(change("/ghost", 4)).outcome is Outcome.STALE


def test_a_full_shard_closes_and_the_next_one_opens(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    for path in ("/1", "/2", "/3"):
        ingest(change(path, 1))
    assert registry.shard_of(f"{SITE}/3") == "pages-00002"
    assert registry.open == {"pages": 2}


def test_an_entry_that_outgrows_its_shard_moves_and_leaves_the_old_one(
    registry: MemoryRegistry,
) -> None:
    a, b = "/a" + "-" * 100, "/b" + "-" * 100
    small = SitemapEntry(url=f"{SITE}{a}")
    room = URLSET_FRAME_BYTES + entry_size(small) * 2 + 20  # a and b fit; 20 bytes to spare
    registry.limits = Limits(max_urls_per_shard=10, max_shard_bytes=room)
    ingest = ApplyChange(registry, registry.limits, 100, FakeClock())
    ingest(change(a, 1))
    ingest(change(b, 1))
    result = ingest(change(a, 2, lastmod="2026-11-21T10:00:00Z", changefreq="monthly"))
    assert result.shards == {"pages-00001", "pages-00002"}
    assert registry.shard_of(f"{SITE}{a}") == "pages-00002"
    assert f"{SITE}{a}" not in registry.entries["pages-00001"]
    assert registry.get_url(f"{SITE}{a}").shard == "pages-00002"  # type: ignore[union-attr]


def test_growth_that_fits_reserves_more_bytes_in_place(registry: MemoryRegistry) -> None:
    ingest = ApplyChange(registry, Limits(), 100, FakeClock())
    registry.limits = Limits()
    ingest(change("/a", 1))
    before = registry.capacity["pages-00001"]
    ingest(change("/a", 2, changefreq="daily"))
    after = registry.capacity["pages-00001"]
    assert after[0] == before[0]  # no new slot
    assert after[1] > before[1]
    assert registry.shard_of(f"{SITE}/a") == "pages-00001"


def test_a_race_with_another_writer_is_replanned(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(change("/a", 1))
    rival = ApplyChange(registry, registry.limits, 100, FakeClock())
    registry.before_commit = lambda _: rival(change("/a", 3))  # between our read and commit
    assert ingest(change("/a", 2)).outcome is Outcome.STALE
    assert registry.get_url(f"{SITE}/a").version == 3  # type: ignore[union-attr]


def test_endless_races_are_raised_for_sqs_to_retry(registry: MemoryRegistry) -> None:
    class AlwaysRacing(MemoryRegistry):
        def commit(self, commit: Commit) -> None:
            raise ConcurrentChange(commit.change.url)

    racing = AlwaysRacing(registry.limits)
    with pytest.raises(RetryableError):
        ApplyChange(racing, racing.limits, 100, FakeClock())(change("/a", 1))


def test_an_entry_larger_than_any_shard_is_rejected_for_good(registry: MemoryRegistry) -> None:
    tiny = Limits(max_shard_bytes=4096)
    ingest = ApplyChange(registry, tiny, 100, FakeClock())
    with pytest.raises(InvalidEvent) as rejected:
        ingest(change("/" + "x" * 5000, 1))
    assert rejected.value.code == "entry_too_large"


def test_plan_commit_never_moves_an_entry_into_its_own_shard() -> None:
    record = UrlRecord(f"{SITE}/a", Decimal(1), True, "pages-00001", 10)
    with pytest.raises(ValueError, match="into itself"):
        plan_commit(
            record,
            change("/a", 2, lastmod="2026-11-21"),
            100,
            open_shard=lambda: "pages-00001",
            tombstone_expires_at=0,
            move=True,
        )


def test_plan_commit_keeps_shard_and_reservation_on_unpublish() -> None:
    record = UrlRecord(f"{SITE}/a", Decimal(1), True, "pages-00003", 57)
    commit = plan_commit(
        record, change("/a", 2, live=False), 0, open_shard=lambda: "x", tombstone_expires_at=9
    )
    assert (commit.shard, commit.reserved, commit.reservation) == ("pages-00003", 57, None)
    assert commit.tombstone_expires_at == 9
    assert commit.touched == {"pages-00003"}


def test_a_change_that_would_grow_a_sibling_past_any_shard_is_rejected(
    registry: MemoryRegistry,
) -> None:
    tiny = Limits(max_shard_bytes=4096)
    ingest = ApplyChange(registry, tiny, 100, FakeClock())
    images = tuple(f"https://cdn.example.com/{n:04d}.jpg" for n in range(60))
    count = max(n for n in range(60) if entry_size(_with_images(images[:n])) < tiny.max_entry_bytes)
    long = _with_images(images[:count])  # 100 bytes of room at most: less than two links
    assert tiny.max_entry_bytes - entry_size(long) < 100
    ingest(PageChange(long.url, Decimal(1), long, hreflang="en"))
    b = SitemapEntry(f"{SITE}/b")
    with pytest.raises(InvalidEvent) as rejected:
        ingest(PageChange(b.url, Decimal(1), b, hreflang="de", alternates=(("en", long.url),)))
    assert rejected.value.code == "entry_too_large"
    assert long.url in rejected.value.detail
    assert registry.get_url(b.url) is None  # nothing committed
    assert registry.shard_of(long.url) == "pages-00001"


def _with_images(images: tuple[str, ...]) -> SitemapEntry:
    return SitemapEntry(url=f"{SITE}/long", images=images)


def test_a_sibling_already_past_a_lowered_shard_size_does_not_hold_up_its_cluster(
    registry: MemoryRegistry,
) -> None:
    roomy, tiny = Limits(max_shard_bytes=8192), Limits(max_shard_bytes=4096)
    images = tuple(f"https://cdn.example.com/{n:04d}.jpg" for n in range(60))
    count = max(n for n in range(60) if entry_size(_with_images(images[:n])) < tiny.max_entry_bytes)
    long, b = _with_images(images[:count]), SitemapEntry(f"{SITE}/b")
    before = ApplyChange(registry, roomy, 100, FakeClock())
    before(PageChange(long.url, Decimal(1), long, hreflang="en"))
    before(PageChange(b.url, Decimal(1), b, hreflang="de", alternates=(("en", long.url),)))
    after = ApplyChange(registry, tiny, 100, FakeClock())  # MAX_SHARD_BYTES lowered
    newer = SitemapEntry(b.url, lastmod="2030-01-01")  # /long's entry stays as it is
    change = PageChange(b.url, Decimal(2), newer, hreflang="de", alternates=(("en", long.url),))
    assert after(change).outcome is Outcome.APPLIED
