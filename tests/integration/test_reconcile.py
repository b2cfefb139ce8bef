"""The reconciler finds drift between the registry and the bucket and repairs it by itself: a
flat share of the shards per run, each once a period; status shows the checks and flags an
object the index names that is missing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.adapters.registry import entry_key
from sitemap_updater.cli import main
from sitemap_updater.handlers.reconcile import handler
from sitemap_updater.local.poller import FakeLambdaContext
from sitemap_updater.local.stack import register_stack
from sitemap_updater.usecases.ingest import Outcome
from sitemap_updater.usecases.ports import Message
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import STACK, PipelineFactory, publish, site_entries
from tests.integration.test_search_features import alt
from tests.pipeline import Pipeline

HOUR = 3600


@pytest.fixture
def four_shards(make_pipeline: PipelineFactory) -> Pipeline:
    """Four shards of two pages; the reconciler's period is four runs."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2, RECONCILE_PERIOD_HOURS=4)
    pipeline.send_events([publish(f"/p{n}", 1, lastmod="2026-11-01") for n in range(8)])
    pipeline.drain()
    return pipeline


def reconcile(pipeline: Pipeline) -> dict[str, Any]:
    result: dict[str, Any] = handler({}, FakeLambdaContext("reconcile"), app_=pipeline.app)
    return result


def test_each_run_checks_a_flat_share_least_recently_checked_first(
    four_shards: Pipeline, clock: FakeClock
) -> None:
    visited = []
    for _run in range(6):
        result = reconcile(four_shards)
        assert result["entries_repaired"] == 0
        assert result["shards_repaired"] == []
        visited.append(result["visited"])
        clock.advance(HOUR)
    # One shard a run (4 shards over 4 runs), each again once its period has passed.
    assert visited == [
        ["pages-00001"],
        ["pages-00002"],
        ["pages-00003"],
        ["pages-00004"],
        ["pages-00001"],
        ["pages-00002"],
    ]


def test_drift_is_repaired_and_counted(make_pipeline: PipelineFactory) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2, RECONCILE_PERIOD_HOURS=1)
    pipeline.send_events([publish(f"/p{n}", 1, lastmod="2026-11-01") for n in range(4)])
    pipeline.drain()
    before = pipeline.objects()
    bucket, table = pipeline.app.settings.bucket_name, pipeline.app.settings.table_name
    pipeline.s3.delete_object(Bucket=bucket, Key="sitemap-pages-00001.xml.gz")
    client = pipeline.app.registry.client
    # A live record left without its entry, and an entry no record places there.
    client.delete_item(TableName=table, Key=entry_key("pages-00002", f"{SITE}/p2"))
    stray = {**entry_key("pages-00002", f"{SITE}/stray"), "url": {"S": f"{SITE}/stray"}}
    client.put_item(TableName=table, Item=stray)

    result = reconcile(pipeline)

    assert result["visited"] == ["pages-00001", "pages-00002"]
    assert result["entries_repaired"] == 2
    assert result["shards_repaired"] == ["pages-00001", "pages-00002"]
    pipeline.drain()
    after = pipeline.objects()
    assert after["sitemap-pages-00001.xml.gz"] == before["sitemap-pages-00001.xml.gz"]
    entries = site_entries(after)
    assert set(entries) == {f"{SITE}/p{n}" for n in range(4)}
    assert entries[f"{SITE}/p2"]["lastmod"] is None  # restored from the record alone
    assert reconcile(pipeline)["visited"] == []  # all checked within the period

    # Sending the page's event again restores its fields.
    results = pipeline.app.ingest(_messages([publish("/p2", 1, lastmod="2026-11-01")]))
    assert [r.outcome for r in results.values()] == [Outcome.REPAIRED]
    pipeline.drain()
    assert site_entries(pipeline.objects())[f"{SITE}/p2"]["lastmod"] == "2026-11-01"
    assert pipeline.objects() == before


def test_a_duplicate_restores_its_missing_entry_in_a_batch(pipeline: Pipeline) -> None:
    pipeline.send_events([publish(f"/p{n}", 1, lastmod="2026-11-02") for n in range(3)])
    pipeline.drain()
    table = pipeline.app.settings.table_name
    pipeline.app.registry.client.delete_item(
        TableName=table, Key=entry_key("pages-00001", f"{SITE}/p1")
    )
    events = [publish(f"/p{n}", 1, lastmod="2026-11-02") for n in range(3)]
    outcomes = [r.outcome for r in pipeline.app.ingest(_messages(events)).values()]
    assert outcomes == [Outcome.DUPLICATE, Outcome.REPAIRED, Outcome.DUPLICATE]
    pipeline.drain()
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/p{n}" for n in range(3)}


def test_status_shows_the_checks_and_flags_a_missing_named_object(
    four_shards: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    register_stack(four_shards.stack)
    reconcile(four_shards)
    capsys.readouterr()  # the function's log lines
    assert main(["status", *STACK, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    checked = {s["shard"]: s["checked"] for s in report["shards"]}
    assert checked["pages-00001"] == "2026-11-21T12:00:00Z"
    assert checked["pages-00002"] is None
    assert report["reconciled"] == {"oldest_check": "2026-11-21T12:00:00Z", "never_checked": 3}
    assert report["missing_objects"] == []

    bucket = four_shards.app.settings.bucket_name
    four_shards.s3.delete_object(Bucket=bucket, Key="sitemap-pages-00003.xml.gz")
    assert main(["status", *STACK]) == 1
    out = capsys.readouterr().out
    assert "MISSING: sitemap-pages-00003.xml.gz is named by the index" in out
    assert "3 shard(s) never checked" in out


def _messages(events: list[dict[str, Any]]) -> list[Message]:
    return [Message(f"m{n}", json.dumps(event)) for n, event in enumerate(events)]


def test_a_relink_leaves_a_restored_entry_to_the_repair_its_resend_promises(
    make_pipeline: PipelineFactory,
) -> None:
    """The reconciler restores /de's lost entry from its record alone (URL and cluster) and
    says: send the event again to restore its fields. A duplicate of a live record whose
    entry is not its version's is REPAIRED. /en then newly links /de: rewritten by the relink
    with its record's version, the entry would look current, and the resend would be a plain
    duplicate that never brings /de's lastmod back."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, RECONCILE_PERIOD_HOURS=1)
    de = f"{SITE}/de"
    images = [{"loc": f"https://cdn.example.net/{n}-a-long-image-name.jpg"} for n in range(4)]
    pipeline.send_events([publish("/de", 1, images=images)])  # reserves a large entry
    pipeline.drain()
    pipeline.send_events([publish("/de", 2, lastmod="2026-11-01")])
    pipeline.drain()
    table = pipeline.app.settings.table_name
    record = pipeline.app.registry.url_state(de).record
    assert record is not None
    shard = record.shard
    assert shard is not None
    pipeline.app.registry.client.delete_item(TableName=table, Key=entry_key(shard, de))
    assert reconcile(pipeline)["entries_repaired"] == 1
    pipeline.drain()
    assert site_entries(pipeline.objects())[de]["lastmod"] is None  # restored from the record

    pipeline.send_events([publish("/en", 1, hreflang="en", alternates=[alt("/de", "de")])])
    pipeline.drain()
    pipeline.app.ingest(_messages([publish("/de", 2, lastmod="2026-11-01")]))
    pipeline.drain()

    assert site_entries(pipeline.objects())[de]["lastmod"] == "2026-11-01"
