"""``sitemap-updater status``: fill levels, queues, dead letters, the index's lastmod."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.domain.events import parse_event
from sitemap_updater.local.stack import register_stack
from sitemap_updater.ops.status import shard_statuses
from sitemap_updater.usecases.reconcile import known_shards
from tests.integration.conftest import STACK, PipelineFactory, publish, unpublish
from tests.pipeline import Pipeline


def status_json(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["status", *STACK, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def small(make_pipeline: PipelineFactory) -> Pipeline:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=3)
    register_stack(pipeline.stack)
    pipeline.send_events([publish(f"/p{n}", 1, lastmod=f"2026-11-0{n + 1}") for n in range(5)])
    pipeline.drain()
    pipeline.send_events([unpublish("/p0", 2)])
    pipeline.drain()
    return pipeline


def test_status_reports_each_shards_fill_and_the_index(
    small: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = status_json(capsys)
    assert code == 0
    shards = {s["shard"]: s for s in report["shards"]}
    assert list(shards) == ["pages-00001", "pages-00002"]
    first, second = shards["pages-00001"], shards["pages-00002"]
    # /p0 was unpublished: two entries listed, but it keeps its slot (a republish lands here)
    assert (first["entries"], first["slots"], first["fill"], first["open"]) == (2, 3, 1.0, False)
    assert (second["entries"], second["slots"], second["open"]) == (2, 2, True)
    assert first["state"] == second["state"] == "listed"
    assert first["bytes"] > 0
    assert report["limits"]["max_urls_per_shard"] == 3
    assert report["index_files"] == {
        "sitemap.xml": {"entries": 2, "lastmod": "2026-11-21T12:00:00Z"}
    }
    assert report["newest_index_lastmod"] == "2026-11-21T12:00:00Z"
    assert report["newest_shard_lastmod"] == "2026-11-21T12:00:00Z"
    assert report["dead_letters"] == 0
    queues = {q["name"]: q for q in report["queues"]}
    assert list(queues) == ["ingest", "ingest DLQ", "rebuild", "rebuild DLQ", "index", "index DLQ"]
    assert all(q["visible"] == 0 and q["oldest_seconds"] is None for q in queues.values())


def test_status_counts_queued_and_dead_lettered_messages_and_exits_1_on_dead_letters(
    small: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    small.send(["{not json", json.dumps(publish("/q", 1))])
    code, report = status_json(capsys)
    queues = {q["name"]: q for q in report["queues"]}
    assert (code, queues["ingest"]["visible"]) == (0, 2)
    small.drain()
    code, report = status_json(capsys)
    assert (code, report["dead_letters"]) == (1, 1)


def test_status_as_a_table(small: Pipeline, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", *STACK]) == 0
    out = capsys.readouterr().out
    assert out.startswith("site https://www.example.com: 4 URLs listed in 2 shard(s)\n")
    assert "limits: 3 URLs and 52,428,800 bytes per shard, 50,000 shards per index file" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("pages-00002"))
    assert row.split()[1:2] == ["2"]
    assert row.endswith("listed (open)")
    assert "index: sitemap.xml (2 shards); written 2026-11-21T12:00:00Z" in out
    assert "'-' = no data" in out


def test_capacities_are_read_a_hundred_at_a_time(pipeline: Pipeline) -> None:
    from sitemap_updater.adapters.registry import capacity_key

    registry = pipeline.app.registry
    shards = [f"pages-{n:05d}" for n in range(1, 251)]
    for number, shard in enumerate(shards[:240]):
        registry.client.put_item(
            TableName=registry.table,
            Item={**capacity_key(shard), "slots": {"N": str(number)}, "reserved_bytes": {"N": "7"}},
        )
    calls: list[int] = []
    registry.client.meta.events.register(
        "provide-client-params.dynamodb.BatchGetItem",
        lambda params, **_: calls.append(len(params["RequestItems"][registry.table]["Keys"])),
    )
    found = registry.capacities(shards)
    assert calls == [100, 100, 50]
    assert found["pages-00001"] == (0, 7)
    assert found["pages-00240"] == (239, 7)
    assert found["pages-00250"] == (0, 0)  # no record: nothing reserved


def test_dead_letters_are_counted_per_reason_code_with_a_sample_and_left_visible(
    small: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = json.dumps({"type": "publish", "url": "https://other.example/x", "version": 1})
    small.send(["{not json", "[also not", foreign])
    small.drain()
    dlq = small.stack.queues["ingest"].dlq_url
    small.sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(publish("/retried", 1)))
    capsys.readouterr()  # the handlers' metrics
    for _ in range(2):  # read, and visible again for the next reader
        code, report = status_json(capsys)
        assert (code, report["dead_letters"]) == (1, 4)
        reasons = report["dead_letter_reasons"]["ingest DLQ"]
        assert [(r["code"], r["count"]) for r in reasons] == [
            ("malformed_json", 2),
            ("url_foreign_host", 1),
            ("retries_exhausted", 1),
        ]
    samples = {r["code"]: r["sample"] for r in reasons}
    assert samples["url_foreign_host"].startswith(f"{foreign} (url host ")
    assert samples["retries_exhausted"] == json.dumps(publish("/retried", 1))
    assert main(["status", *STACK]) == 1
    table = capsys.readouterr().out.splitlines()
    assert table[-4].startswith("dead letters: 4 by reason_code")
    assert table[-3].startswith("  ingest DLQ: 2 malformed_json, e.g. ")
    assert table[-1] == f"  ingest DLQ: 1 retries_exhausted, e.g. {samples['retries_exhausted']}"


def test_a_rule_group_s_shards_whose_rebuilds_were_lost_are_still_known(
    make_pipeline: Any,
) -> None:
    """Pages committed to a GROUP_RULES group whose rebuild requests never went (a backfill
    killed between the two): status, rebuild --all and the reconciler still see its shards,
    although none has a record yet; a rule's group with no page adds none."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2, GROUP_RULES="/shop/=shop, /blog/=blog")
    app = pipeline.app
    for n in range(5):  # committed only: no rebuild asked for
        app.apply_change(parse_event(publish(f"/shop/p{n}", 1), app.settings.site))
    groups = app.settings.groups.named

    known = [output.shard for output in known_shards(app.registry, groups)]
    assert known == ["pages-00001", "shop-00001", "shop-00002", "shop-00003"]
    statuses = shard_statuses(app.registry, app.settings.limits, [], app.settings.groups)
    assert [(s.shard, s.slots) for s in statuses if s.shard.startswith("shop")] == [
        ("shop-00001", 2),
        ("shop-00002", 2),
        ("shop-00003", 1),
    ]
    assert app.reconcile.groups == groups  # its shards are in the reconciler's round too


def test_a_news_shard_fills_against_its_group_s_limit(make_pipeline: Any) -> None:
    """A news group's shards hold 1,000 URLs (Google News), not MAX_URLS_PER_SHARD."""
    pipeline = make_pipeline(GROUP_RULES="/news/=news")
    app = pipeline.app
    for n in range(3):
        app.apply_change(parse_event(publish(f"/news/{n}", 1), app.settings.site))
        app.apply_change(parse_event(publish(f"/page/{n}", 1), app.settings.site))
    statuses = {
        s.shard: s
        for s in shard_statuses(app.registry, app.settings.limits, [], app.settings.groups)
    }
    assert (statuses["news-00001"].slots, statuses["news-00001"].max_slots) == (3, 1000)
    assert statuses["news-00001"].fill == pytest.approx(3 / 1000)
    assert statuses["pages-00001"].max_slots == app.settings.limits.max_urls_per_shard
