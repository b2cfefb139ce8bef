"""Pages named by their CMS id: a new URL retires the old one in the same commit, an
unpublish by id alone finds the URL, and any delivery order converges."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from msgspec.structs import replace

from sitemap_updater.domain.clusters import MAX_CLUSTER_MEMBERS, listings
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.events import PageChange
from sitemap_updater.domain.records import EntityRecord
from sitemap_updater.domain.render import URLSET_FRAME_BYTES
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.usecases.ingest import ApplyChange, Outcome
from tests.conftest import FakeClock
from tests.fakes import MemoryRegistry

SITE = "https://www.example.com"


def publish(path: str, version: int, entity: str | None = "42") -> PageChange:
    url = f"{SITE}{path}"
    return PageChange(url, Decimal(version), SitemapEntry(url=url), entity=entity)


def unpublish(path: str | None, version: int, entity: str | None = "42") -> PageChange:
    return PageChange(f"{SITE}{path}" if path else "", Decimal(version), None, entity=entity)


@pytest.fixture
def registry() -> MemoryRegistry:
    return MemoryRegistry(Limits())


@pytest.fixture
def ingest(registry: MemoryRegistry) -> ApplyChange:
    return ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())


def listed(registry: MemoryRegistry) -> set[str]:
    return {url for entries in registry.entries.values() for url in entries}


def test_a_new_slug_retires_the_old_url_in_the_same_commit(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(publish("/old-slug", 10))
    result = ingest(publish("/new-slug", 20))

    assert result.outcome is Outcome.APPLIED
    assert listed(registry) == {f"{SITE}/new-slug"}
    commit = registry.commits[-1]
    assert commit.retired is not None
    assert commit.retired.change.url == f"{SITE}/old-slug"
    old = registry.get_url(f"{SITE}/old-slug")
    assert old is not None
    assert not old.live
    assert old.version == 20
    old_url = f"{SITE}/old-slug"
    assert registry.entity("42") == EntityRecord(f"{SITE}/new-slug", Decimal(20), True, old_url)
    assert result.shards == {"pages-00001"}
    assert result.left == {old_url}  # for the feed and IndexNow
    again = ingest(publish("/new-slug", 20))  # its answer lost: delivered again
    assert again.outcome is Outcome.DUPLICATE
    assert again.left == {old_url}  # still named, for the feed and IndexNow
    # The next version names the last move's URL again too: that move's invocation may have
    # died before telling anyone, and its redelivery is stale now.
    assert ingest(publish("/newer-slug", 30)).left == {f"{SITE}/new-slug", old_url}
    assert ingest(publish("/newer-slug", 40)).left == {f"{SITE}/new-slug"}


def test_an_unpublish_by_id_alone_unpublishes_the_url_the_registry_has(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(publish("/post", 10))
    result = ingest(unpublish(None, 11))

    assert result.outcome is Outcome.APPLIED
    assert result.shards == {"pages-00001"}
    assert listed(registry) == set()
    assert result.left == {f"{SITE}/post"}
    assert registry.entity("42") == EntityRecord(f"{SITE}/post", Decimal(11), False)
    again = ingest(unpublish(None, 11))  # delivered again: its rebuild is asked for again
    assert (again.outcome, again.shards) == (Outcome.DUPLICATE, {"pages-00001"})
    assert ingest(publish("/post", 10)).outcome is Outcome.STALE


def test_an_unpublish_by_id_first_keeps_an_older_publish_out(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    first = ingest(unpublish(None, 11))
    assert first.outcome is Outcome.APPLIED
    assert first.left == set()  # no URL was listed
    assert registry.entity("42") == EntityRecord(None, Decimal(11), False)
    assert ingest(unpublish(None, 11)).outcome is Outcome.DUPLICATE
    assert ingest(publish("/post", 10)).outcome is Outcome.STALE
    assert listed(registry) == set()
    assert ingest(publish("/post", 12)).outcome is Outcome.APPLIED
    assert listed(registry) == {f"{SITE}/post"}


def test_an_older_publish_under_the_old_slug_is_stale(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(publish("/new-slug", 20))
    assert ingest(publish("/old-slug", 10)).outcome is Outcome.STALE
    assert listed(registry) == {f"{SITE}/new-slug"}


def test_the_same_version_under_another_url_is_stale_not_a_second_page(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(publish("/a", 20))
    assert ingest(publish("/b", 20)).outcome is Outcome.STALE
    assert listed(registry) == {f"{SITE}/a"}


def test_locales_are_entities_of_their_own(ingest: ApplyChange, registry: MemoryRegistry) -> None:
    ingest(publish("/en/post", 10, "42:en"))
    ingest(publish("/de/beitrag", 10, "42:de"))
    ingest(unpublish(None, 11, "42:de"))
    assert listed(registry) == {f"{SITE}/en/post"}


HISTORY = [
    publish("/first", 10),
    publish("/second", 20),
    unpublish(None, 30),
    publish("/third", 40),
]


@pytest.mark.parametrize("order", list(itertools.permutations(range(len(HISTORY)))))
def test_any_delivery_order_ends_with_the_newest_url_only(order: tuple[int, ...]) -> None:
    registry = MemoryRegistry(Limits())
    ingest = ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())
    for position in order:
        ingest(HISTORY[position])
    for position in order:  # every one again: duplicates change nothing
        ingest(HISTORY[position])
    assert listed(registry) == {f"{SITE}/third"}
    entity = registry.entity("42")
    assert entity is not None
    assert (entity.url, entity.version, entity.live) == (f"{SITE}/third", Decimal(40), True)


def test_a_retired_url_that_moved_on_is_left_alone(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    """Another entity published the old URL since: the entity's move does not unlist it."""
    ingest(publish("/shared", 10, "1"))
    ingest(publish("/shared", 30, "2"))
    ingest(publish("/elsewhere", 20, "1"))
    assert listed(registry) == {f"{SITE}/shared", f"{SITE}/elsewhere"}


def test_an_unpublish_by_id_whose_url_holds_a_newer_version_still_keeps_older_publishes_out(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    """The URL was unpublished by URL alone, at a newer version: it stays as it is, and the
    id's newest event is still this unpublish."""
    ingest(publish("/a", 1))
    ingest(unpublish("/a", 5, entity=None))

    assert ingest(unpublish(None, 3)).outcome is Outcome.APPLIED
    assert registry.entity("42") == EntityRecord(f"{SITE}/a", Decimal(3), False)
    assert ingest(publish("/c", 2)).outcome is Outcome.STALE
    assert listed(registry) == set()
    assert ingest(unpublish(None, 3)).outcome is Outcome.DUPLICATE


def test_an_unpublish_by_id_at_its_url_s_own_version_still_keeps_older_publishes_out(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    """The CMS's two unpublishes (by URL, by id) of one instant: in either order, the id is
    gone at that version."""
    ingest(publish("/a", 1))
    ingest(unpublish("/a", 3, entity=None))

    assert ingest(unpublish(None, 3)).outcome is Outcome.APPLIED
    assert ingest(publish("/c", 2)).outcome is Outcome.STALE
    assert listed(registry) == set()


def clustered(path: str, version: int, lang: str, *declares: str, **kw: str | None) -> PageChange:
    url = f"{SITE}{path}"
    alternates = tuple(sorted((lang, f"{SITE}{href}") for lang, href in declares))
    entity = kw.get("entity")
    return PageChange(url, Decimal(version), SitemapEntry(url=url), lang, alternates, entity=entity)


def links(registry: MemoryRegistry, path: str) -> tuple[tuple[str, str], ...]:
    state = registry.url_state(f"{SITE}{path}")
    if state.cluster is None:
        return ()
    return listings(registry.clusters([state.cluster])[state.cluster]).get(f"{SITE}{path}", ())


def test_a_stale_move_of_a_page_in_a_cluster_leaves_its_url_and_its_links(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(clustered("/a", 1, "en", ("de", "/de"), entity="X"))
    ingest(clustered("/de", 1, "de", ("en", "/a")))
    ingest(unpublish("/b", 9, entity=None))
    linked = links(registry, "/de")

    assert ingest(clustered("/b", 2, "en", ("de", "/de"), entity="X")).outcome is Outcome.STALE
    assert listed(registry) == {f"{SITE}/a", f"{SITE}/de"}
    assert links(registry, "/de") == linked == ((("de", f"{SITE}/de"), ("en", f"{SITE}/a")))
    assert registry.entity("X") == EntityRecord(f"{SITE}/a", Decimal(1), True)


def test_a_refused_move_of_a_page_in_a_cluster_changes_nothing(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    ingest(clustered("/en", 1, "en", ("de", "/de"), entity="X"))
    ingest(clustered("/de", 1, "de"))
    crowd = [(f"x{n}", f"/x{n}") for n in range(MAX_CLUSTER_MEMBERS)]
    before = {url: registry.get_url(url) for url in (f"{SITE}/en", f"{SITE}/de")}

    with pytest.raises(InvalidEvent, match="cluster_too_large"):
        ingest(clustered("/en2", 2, "en", ("de", "/de"), *crowd, entity="X"))
    assert {url: registry.get_url(url) for url in before} == before
    assert registry.entity("X") == EntityRecord(f"{SITE}/en", Decimal(1), True)


@pytest.mark.parametrize("late", [False, True])
def test_an_unpublished_page_s_declarations_go_with_it_whatever_the_order(
    ingest: ApplyChange, registry: MemoryRegistry, late: bool
) -> None:
    """Its newest event, the unpublish, declares nothing: the pages it alone linked are
    linked no more, whether its publish came first or arrived late (and stale)."""
    ingest(clustered("/en", 1, None))  # type: ignore[arg-type]
    ingest(clustered("/de", 1, None))  # type: ignore[arg-type]
    hub = clustered("/hub", 1, "fr", ("en", "/en"), ("de", "/de"))
    gone = unpublish("/hub", 2, entity=None)
    for change in [gone, hub] if late else [hub, gone]:
        ingest(change)

    assert links(registry, "/en") == links(registry, "/de") == ()
    assert listed(registry) == {f"{SITE}/en", f"{SITE}/de"}


def test_a_page_moved_by_id_never_lists_the_url_it_leaves(
    ingest: ApplyChange, registry: MemoryRegistry
) -> None:
    """Its old URL, unpublished in the same commit, is a member listed nowhere, even when
    the page still declares it."""
    ingest(clustered("/old", 1, None, entity="X"))  # type: ignore[arg-type]
    ingest(clustered("/en", 1, "en"))
    ingest(clustered("/new", 2, "de", ("en", "/en"), ("fr", "/old"), entity="X"))

    both = (("de", f"{SITE}/new"), ("en", f"{SITE}/en"))
    assert links(registry, "/new") == links(registry, "/en") == both
    assert listed(registry) == {f"{SITE}/en", f"{SITE}/new"}


@pytest.mark.parametrize("room", range(300, 800, 50))
def test_a_clustered_move_either_happens_or_leaves_the_page_where_it_was(room: int) -> None:
    """Its old URL is retired first, on its own: the move is planned as it will be made
    after that (the old URL listed nowhere), so a move refused for its size refuses before
    anything is retired."""
    registry = MemoryRegistry(Limits(max_shard_bytes=room + URLSET_FRAME_BYTES))
    ingest = ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())
    ingest(clustered("/a", 1, "en", ("de", "/de"), entity="X"))
    ingest(clustered("/de", 1, "de", ("en", "/a")))
    moved = "/b" + "x" * 200
    refused = None
    try:
        ingest(clustered(moved, 2, "en", ("de", "/de"), entity="X"))
    except InvalidEvent as exc:
        refused = exc.code
    if refused is None:
        assert listed(registry) == {f"{SITE}{moved}", f"{SITE}/de"}
    else:
        assert refused == "entry_too_large"
        assert listed(registry) == {f"{SITE}/a", f"{SITE}/de"}
        assert registry.entity("X") == EntityRecord(f"{SITE}/a", Decimal(1), True)


def test_a_change_no_sibling_lists_differently_rebuilds_only_its_own_shard() -> None:
    """A new lastmod of one translation leaves every sibling's line as it is: once the
    cluster is settled, their shards are neither marked nor rebuilt. A new language rebuilds
    them, and so does a redelivery."""
    registry = MemoryRegistry(Limits(max_urls_per_shard=1))  # a shard per page
    ingest = ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())
    every = (("en", "/en"), ("de", "/de"), ("fr", "/fr"))
    for version, (lang, path) in enumerate(every, start=1):
        ingest(clustered(path, version, lang, *every))
    records = {path: registry.url_state(f"{SITE}{path}").record for _, path in every}
    shards = {path: record.shard for path, record in records.items() if record is not None}
    assert len(set(shards.values())) == 3
    registry.marked.clear()

    dated = clustered("/en", 10, "en", *every)
    dated = replace(dated, entry=SitemapEntry(f"{SITE}/en", lastmod="2026-11-28"))
    assert ingest(dated).shards == {shards["/en"]}
    assert set(registry.marked) <= {shards["/en"]}
    assert ingest(dated).shards == set(shards.values())  # a redelivery settles them all

    registry.marked.clear()
    british = ingest(clustered("/en", 11, "en-GB", ("en-GB", "/en"), *every[1:]))
    assert british.shards == set(shards.values())
    assert set(registry.marked) >= {shards["/de"], shards["/fr"]}
