"""backfill's parallel writers, on an in-memory registry that keeps DynamoDB's conditions."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from lxml import etree

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.sharding import Limits
from sitemap_updater.domain.urls import Site
from sitemap_updater.ops.backfill import (
    BackfillResult,
    applier,
    entry_record,
    import_changes,
    page_changes,
)
from sitemap_updater.ops.crawl import Entry
from sitemap_updater.ops.extensions import Extensions
from sitemap_updater.ops.pages import Record, page_change
from sitemap_updater.ops.progress import Progress
from sitemap_updater.usecases.ingest import ApplyChange
from tests.fakes import MemoryRegistry

SITE = Site.parse("https://www.example.com")


def importer(registry: MemoryRegistry, workers: int) -> tuple[ApplyChange, int]:
    return ApplyChange(registry, registry.limits, 86_400, lambda: datetime.now(UTC)), workers


def pages(count: int) -> list[Record]:
    return [Record(f"t:{n}", {"url": f"https://www.example.com/p{n}"}) for n in range(count)]


def run(imp: tuple[ApplyChange, int], records: list[Record]) -> BackfillResult:
    (apply, workers), result = imp, BackfillResult()
    progress = Progress("t", enabled=False)
    changes = page_changes(records, SITE, Decimal(0), result, progress)
    import_changes(applier(apply), changes, result, progress, workers)
    return result


def test_parallel_writers_place_every_page_once_within_the_limits() -> None:
    registry = MemoryRegistry(Limits(max_urls_per_shard=30))
    result = run(importer(registry, workers=8), pages(200))
    assert (result.applied, result.rejected, result.failed) == (200, [], [])
    listed = [url for entries in registry.entries.values() for url in entries]
    assert sorted(listed) == sorted(f"https://www.example.com/p{n}" for n in range(200))
    assert all(len(entries) <= 30 for entries in registry.entries.values())
    assert result.shards == set(registry.entries)
    assert len(result.shards) >= 7

    again = run(importer(registry, workers=8), pages(200))
    assert (again.applied, again.duplicate) == (0, 200)
    assert again.shards == result.shards  # duplicates ask for their rebuild again


def test_a_page_whose_entry_was_lost_counts_as_applied_when_restored() -> None:
    registry = MemoryRegistry(Limits())
    run(importer(registry, workers=2), pages(3))
    ((shard, entries),) = registry.entries.items()
    del entries["https://www.example.com/p1"]
    again = run(importer(registry, workers=2), pages(3))
    assert (again.applied, again.duplicate, again.stale) == (1, 2, 0)
    assert "https://www.example.com/p1" in registry.entries[shard]


def test_a_throttled_write_is_retried_and_one_that_keeps_failing_is_reported() -> None:
    flaky = {"https://www.example.com/p1": 2, "https://www.example.com/p2": 99}
    registry = MemoryRegistry(Limits(), flaky=flaky)
    result = run(importer(registry, workers=2), pages(4))
    assert result.applied == 3
    assert [(f.origin, f.reason) for f in result.failed] == [("t:2", "RetryableError: throttled")]


def test_rejected_records_are_listed_and_never_written() -> None:
    registry = MemoryRegistry(Limits())
    records = [*pages(2), Record("t:bad", {"url": "https://www.example.com/a b"})]
    result = run(importer(registry, workers=2), records)
    assert result.applied == 2
    assert [(r.origin, r.reason.split(":")[0]) for r in result.rejected] == [
        ("t:bad", "url_whitespace")
    ]
    assert "https://www.example.com/a b" not in registry.urls


def test_a_sitemap_url_element_becomes_a_page_record() -> None:
    entry = Entry(loc="https://www.example.com/a", line=3, lastmod="", priority="0.50")
    record = entry_record("t:3", entry, Extensions(SITE))
    assert record == Record(
        "t:3", {"url": "https://www.example.com/a", "priority": Decimal("0.50")}
    )
    odd = entry_record("t:4", Entry(loc=None, line=4, priority="high"), Extensions(SITE))
    assert odd.value == {"priority": "high"}


def test_an_empty_url_element_is_refused_for_its_missing_url() -> None:
    empty = entry_record("t:5", Entry(loc=None, line=5), Extensions(SITE))
    with pytest.raises(InvalidEvent) as refused:
        page_change(empty, SITE)
    assert refused.value.reason == "missing_field: url is required"


def test_a_url_elements_extensions_become_contract_fields_and_the_rest_is_named() -> None:
    element = etree.fromstring(
        b'<url xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        b' xmlns:v="http://www.google.com/schemas/sitemap-video/1.1"'
        b' xmlns:xhtml="http://www.w3.org/1999/xhtml" xmlns:m="urn:mobile">'
        b"<loc>https://www.example.com/a</loc><m:mobile/><lastmod>2026-11-01</lastmod>"
        b"<loc>https://www.example.com/b</loc><lastmod>2026-11-02</lastmod>"
        b"<v:video><v:title> T </v:title><v:title>again</v:title><v:tag>a</v:tag><v:tag>b</v:tag>"
        b'<v:player_loc allow_embed="yes">\n https://cdn.example.net/p \n</v:player_loc>'
        b'<v:platform relationship=" deny ">tv  mobile</v:platform><v:live>Yes</v:live>'
        b'<v:uploader info="https://elsewhere.example/u">U</v:uploader><v:duration>long</v:duration>'
        b"</v:video>"
        b'<xhtml:link rel="alternate" media="only screen" href="https://m.example.com/a"/>'
        b'<xhtml:link rel="alternate" hreflang="fr" href=" https://www.example.com/fr/a "/>'
        b"</url>"
    )
    extensions = Extensions(SITE)
    record = entry_record("t:1", Entry("https://www.example.com/a", 1, element=element), extensions)
    assert record.value == {
        "url": "https://www.example.com/a",
        "videos": [
            {
                "title": "T",
                "tags": ["a", "b"],
                "player_loc": "https://cdn.example.net/p",
                "platform": {"relationship": "deny", "platforms": ["tv", "mobile"]},
                "live": True,
                "uploader": {"name": "U"},
                "duration": "long",  # the contract refuses it, with its reason
            }
        ],
        "alternates": [{"hreflang": "fr", "href": "https://www.example.com/fr/a"}],
    }
    assert record.dropped == (
        "m:mobile",
        "loc",  # a repeated page field: the first is kept
        "lastmod",
        "v:title",
        "v:player_loc @allow_embed",
        "v:uploader info https://elsewhere.example/u (on another site)",
        "xhtml:link https://m.example.com/a (not an hreflang alternate)",
    )
