"""How far a page's cluster pointer can be from its cluster: a merge never rewrites the
pointers of the clusters it absorbs, so they reach the survivor through redirects. Merging
into the larger cluster bounds that at log2(64) = 6 redirects whatever the publish order;
keeping the smaller id let an unlucky order add one at every merge (63 for a full cluster).
And a settle that a sibling joins while it runs.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from decimal import Decimal

import msgspec
import pytest

from sitemap_updater.domain.clusters import MAX_CLUSTER_MEMBERS, MAX_REDIRECTS
from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.domain.events import PageChange
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.usecases.ingest import ApplyChange
from tests.conftest import FakeClock
from tests.fakes import MemoryRegistry

SITE = "https://www.example.com"
PAGES = [f"{SITE}/l{n:02d}" for n in range(MAX_CLUSTER_MEMBERS)]


class Site:
    """Translations published alone first (a cluster of one each), then linked."""

    def __init__(self) -> None:
        self.registry = MemoryRegistry(Limits())
        self.ingest = ApplyChange(
            self.registry, self.registry.limits, tombstone_ttl_seconds=100, clock=FakeClock()
        )
        self.versions: dict[str, int] = {}
        for url in PAGES:
            self.publish(url, ())

    def publish(self, url: str, declares: Sequence[str]) -> None:
        version = self.versions[url] = self.versions.get(url, 0) + 1
        alternates = tuple(sorted((lang(other), other) for other in declares if other != url))
        entry = SitemapEntry(url=url)
        change = PageChange(url, Decimal(version), entry, hreflang=lang(url), alternates=alternates)
        self.ingest(change)

    def by_cluster_id_descending(self) -> list[str]:
        """The pages in the order that makes each new cluster id the smallest yet."""
        return sorted(PAGES, key=lambda url: self.registry.url_state(url).cluster or "")[::-1]

    def longest_chain(self) -> int:
        """The most redirects from any cluster id (so from any pointer) to a live cluster."""

        def hops(cid: str) -> int:
            found, count = self.registry.cluster_records[cid], 0
            while isinstance(found, str):
                found, count = self.registry.cluster_records[found], count + 1
            return count

        return max(hops(cid) for cid in self.registry.cluster_records)

    def one_by_one(self, order: Sequence[str]) -> None:
        """Each page linked on its next revision, declaring the one before it."""
        for previous, url in itertools.pairwise(order):
            self.publish(url, [previous])

    def halves(self, order: Sequence[str]) -> None:
        """Each half linked first, then one page of the first half declares them all: with
        ids descending, the first page's cluster loses every one of the six merges."""
        if len(order) > 1:
            middle = len(order) // 2
            self.halves(order[:middle])
            self.halves(order[middle:])
            self.publish(order[0], order)


def lang(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_linking_translations_one_by_one_in_the_unluckiest_order_leaves_one_redirect() -> None:
    site = Site()
    site.one_by_one(site.by_cluster_id_descending())  # was 63 redirects
    assert site.longest_chain() == 1


def test_merging_halves_of_equal_size_is_the_worst_order_and_stays_within_six() -> None:
    site = Site()
    site.halves(site.by_cluster_id_descending())
    assert site.longest_chain() == int(math.log2(MAX_CLUSTER_MEMBERS)) == 6


@pytest.mark.parametrize("seed", range(5))
def test_any_order_of_links_stays_within_six_redirects(seed: int) -> None:
    site = Site()
    shuffled = random.Random(seed)
    groups = [[url] for url in PAGES]
    while len(groups) > 1:
        one, other = shuffled.sample(range(len(groups)), 2)
        linked = groups[one] + groups[other]
        site.publish(shuffled.choice(groups[one]), [shuffled.choice(groups[other])])
        groups = [g for n, g in enumerate(groups) if n not in (one, other)] + [linked]
    pointers = {site.registry.url_state(url).cluster or "" for url in PAGES}
    resolved = {cluster.cid: cluster for cluster in site.registry.clusters(pointers).values()}
    assert [len(cluster.all) for cluster in resolved.values()] == [MAX_CLUSTER_MEMBERS]
    assert site.longest_chain() <= 6


def test_a_page_whose_cluster_id_is_too_many_redirects_away_is_retried_not_split_off() -> None:
    """Past MAX_REDIRECTS the read used to leave the cluster out, so the page's publish
    started a cluster of its own that no sibling lists. Merges never get there (above); a
    registry that did is inconsistent, and the event now fails with the reason."""
    site = Site()
    site.publish(PAGES[1], [PAGES[0]])
    records = site.registry.cluster_records
    live = site.registry.url_state(PAGES[0]).cluster or ""
    chain = [f"redirect{n:02d}" for n in range(MAX_REDIRECTS + 1)]
    records.update(zip(chain, [*chain[1:], live], strict=True))
    site.registry.urls[PAGES[0]].cluster = chain[0]
    with pytest.raises(RetryableError, match="more than 16 redirects"):
        site.publish(PAGES[0], [PAGES[1]])
    site.registry.urls[PAGES[0]].cluster = chain[1]  # 16 redirects: followed
    site.publish(PAGES[0], [PAGES[1]])
    assert site.registry.url_state(PAGES[0]).cluster == live


def _page(path: str, version: int, lang: str | None = None, *declares: str) -> PageChange:
    url = f"{SITE}{path}"
    alternates = tuple(sorted((name, f"{SITE}/{name}") for name in declares))
    return PageChange(url, Decimal(version), SitemapEntry(url=url), lang, alternates)


def test_a_sibling_linked_while_a_settle_runs_is_relinked_by_the_next_change() -> None:
    """/en 2 settles its cluster. After it checked its siblings' entries, another invocation
    commits /fr, which links /it (published on its own), then dies before writing /it's entry
    again. /en 2's settle must not record the cluster settled, or /en 3 (a new lastmod) would
    skip the siblings and /it would never list its alternates."""
    registry = MemoryRegistry(Limits())
    ingest = ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())
    other = ApplyChange(registry, registry.limits, tombstone_ttl_seconds=100, clock=FakeClock())
    ingest(_page("/it", 1))
    ingest(_page("/en", 1, "en", "de"))
    ingest(_page("/de", 1, "de", "en"))
    checked = registry.unlinked

    def then_fr_links_it(entries: Sequence[tuple[str, str]]) -> set[str]:
        found = checked(entries)
        del registry.unlinked  # once
        other._resize = _dies  # type: ignore[method-assign]
        with pytest.raises(RuntimeError):
            other(_page("/fr", 1, "fr", "en", "it"))
        return found

    registry.unlinked = then_fr_links_it  # type: ignore[method-assign]
    ingest(_page("/en", 2, "en-GB", "de"))
    ingest(
        msgspec.structs.replace(
            _page("/en", 3, "en-GB", "de"),
            entry=SitemapEntry(url=f"{SITE}/en", lastmod="2026-11-20"),
        )
    )

    shard = registry.url_state(f"{SITE}/it").record.shard  # type: ignore[union-attr]
    assert registry.entries[shard][f"{SITE}/it"][1] is not None  # names the cluster


def _dies(*_: object, **__: object) -> frozenset[str]:
    raise RuntimeError("the invocation dies")
