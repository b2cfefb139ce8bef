"""Recovery, as an operator would do it after each kind of loss (README, "Reliability").

* the bucket emptied (or objects lost or altered): ``sitemap-updater rebuild --all``
  restores every object byte for byte (``test_ops_rebuild.py`` has the command's own
  cases; here a bigger site, watched at every write, that goes on working after it);
* a poison message (a bug fails it every time): it lands in the dead-letter queue, the
  rest goes on; after the fix ``sitemap-updater redrive`` moves it back and the site
  converges;
* the registry restored from a point-in-time backup: the bucket is ahead of it, the
  next events and ``rebuild --all`` bring the site back to the registry, and replaying the
  events since the backup converges to the site as it was before.
"""

from __future__ import annotations

import json
import random
from typing import Any

import boto3
import pytest

from sitemap_updater.cli import main
from sitemap_updater.domain.robots import default_robots
from sitemap_updater.local.stack import register_stack
from sitemap_updater.ops import resolve
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    STACK,
    FaultInjector,
    PipelineFactory,
    Recorder,
    index_locs,
    publish,
    site_entries,
    unpublish,
)
from tests.integration.test_convergence import expected_site, normalised
from tests.pipeline import Pipeline


def every_entry(objects: dict[str, bytes]) -> dict[str, dict[str, str | None]]:
    """URL -> fields across every index file robots.txt names (each URL at most once)."""
    entries: dict[str, dict[str, str | None]] = {}
    for line in objects["robots.txt"].decode().splitlines():
        if line.startswith(f"Sitemap: {SITE}/"):
            index = line.removeprefix(f"Sitemap: {SITE}/")
            found = site_entries({**objects, "sitemap.xml": objects[index]})
            assert not set(found) & set(entries), "a URL is listed twice"
            entries |= found
    return entries


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """An operator command on the deployment, with its one-line JSON summary."""
    status = main([*argv, *STACK, "--json"])
    lines = capsys.readouterr().out.splitlines()
    return status, json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}


@pytest.fixture
def watched_commands(monkeypatch: pytest.MonkeyPatch) -> list[Recorder]:
    """Give each operator command's own session a Recorder's checks (set ``recorders[0]``)."""
    recorders: list[Recorder] = []
    real = resolve.session_for

    def watched(*args: Any) -> boto3.session.Session:
        session = real(*args)
        (recorder,) = recorders
        session.events.register("provide-client-params.*.*", recorder._record)
        session.events.register("after-call.s3.PutObject", recorder._after_put)
        session.events.register("after-call.s3.DeleteObject", recorder._after_delete)
        return session

    monkeypatch.setattr(resolve, "session_for", watched)
    return recorders


# -- the bucket lost ------------------------------------------------------------------------


def test_an_emptied_bucket_is_restored_byte_for_byte_and_the_site_goes_on(
    make_pipeline: PipelineFactory,
    capsys: pytest.CaptureFixture[str],
    watched_commands: list[Recorder],
) -> None:
    """Five shards in three index files (each listed in robots.txt), one shard retired
    and deleted: every object goes, ``rebuild --all`` brings each back with the same bytes
    (robots.txt: the default one with our lines, the owner's being lost too), writing
    shards before the index files that name them; then new events work as before."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2, MAX_SITEMAPS_PER_INDEX=2)
    register_stack(pipeline.stack)
    recorder = Recorder(pipeline)
    watched_commands.append(recorder)
    history = [publish(f"/p{n}", 1, lastmod=f"2026-11-{n + 1:02d}") for n in range(12)]
    history += [unpublish("/p10", 2), unpublish("/p11", 2)]  # the sixth shard retires
    pipeline.send_events(history)
    pipeline.drain()
    before = pipeline.objects()
    assert set(before) == {
        "robots.txt",
        *(f"sitemap-pages-{n:05d}.xml.gz" for n in range(1, 6)),
        "sitemap-index-2.xml",
        "sitemap-index-3.xml",
        "sitemap.xml",
    }
    bucket = pipeline.app.settings.bucket_name
    for key in before:
        pipeline.s3.delete_object(Bucket=bucket, Key=key)

    status, summary = run(capsys, "rebuild", "--all")

    assert status == 0
    assert set(summary["shards"].values()) == {"restored", "absent"}
    assert summary["index_files"] == dict.fromkeys(
        ["sitemap.xml", "sitemap-index-2.xml", "sitemap-index-3.xml"], "restored"
    )
    assert summary["index_requested"] is False
    after = pipeline.objects()
    assert after == before
    urls = [
        f"{SITE}/{key}" for key in ("sitemap.xml", "sitemap-index-2.xml", "sitemap-index-3.xml")
    ]
    assert after["robots.txt"] == default_robots(urls)
    written = recorder.puts
    assert written.index("sitemap.xml") > max(
        written.index(f"sitemap-pages-{n:05d}.xml.gz") for n in range(1, 6)
    )

    pipeline.send_events([publish("/p0", 2, priority=0.9), publish("/new", 1)])
    pipeline.drain()
    events = [*history, publish("/p0", 2, priority=0.9), publish("/new", 1)]
    assert every_entry(pipeline.objects()) == expected_site([normalised(e) for e in events])
    assert recorder.violations == []


# -- a poison message -------------------------------------------------------------------------


def test_poison_messages_are_dead_lettered_then_redriven_after_the_fix(
    clock: FakeClock,
    make_pipeline: PipelineFactory,  # keeps moto's mock on
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A bug makes every try of one event fail, and every rebuild of one shard. Each fails
    maxReceiveCount times and goes to its dead-letter queue while everything else is
    published; ``status`` says so (exit 1). The bug is fixed (the faults removed);
    ``redrive`` moves both back and the site converges to every event."""
    pipeline = Pipeline.create(
        SITE, {"MAX_URLS_PER_SHARD": 2}, visibility_timeout=0, clock=clock, prefix="poison"
    )
    register_stack(pipeline.stack)
    recorder = Recorder(pipeline)
    faults = FaultInjector(pipeline)
    poison = f"{SITE}/poison"
    faults.fail(  # the ingest function's commit of that one URL, every time
        "TransactWriteItems", when=lambda params: poison in json.dumps(params), times=10**6
    )
    faults.fail(  # the rebuild of the second shard, every time
        "PutObject", when=lambda params: params["Key"].endswith("-00002.xml.gz"), times=10**6
    )
    events = [publish(f"/p{n}", 1) for n in range(4)] + [publish("/poison", 1)]
    pipeline.send_events(events[:2])  # the first shard is published
    pipeline.drain()
    pipeline.send_events(events[2:])
    pipeline.drain()

    letters = pipeline.dead_letters()
    assert sorted(letter["queue"] for letter in letters) == ["ingest", "rebuild"]
    (stuck_event,) = [m for m in letters if m["queue"] == "ingest"]
    assert json.loads(stuck_event["Body"]) == publish("/poison", 1)
    assert "reason_code" not in stuck_event.get("MessageAttributes", {})  # not bad input
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/p0", f"{SITE}/p1"}
    assert main(["status", *STACK]) == 1
    capsys.readouterr()

    faults.rules.clear()  # the fix is deployed
    status, summary = run(capsys, "redrive")
    assert status == 0
    assert {q["queue"]: q["moved"] for q in summary["queues"]} == {
        "ingest": 1,
        "rebuild": 1,
        "index": 0,
    }
    pipeline.drain()

    assert site_entries(pipeline.objects()) == expected_site(events)
    assert pipeline.dead_letters() == []
    assert main(["status", *STACK]) == 0
    assert recorder.violations == []


# -- the registry restored from a point-in-time backup ----------------------------------------


def snapshot(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Every item of the registry, as point-in-time recovery would restore them."""
    client = pipeline.app.registry.client
    pages = client.get_paginator("scan").paginate(
        TableName=pipeline.app.settings.table_name, ConsistentRead=True
    )
    return [item for page in pages for item in page.get("Items", [])]


def restore(pipeline: Pipeline, items: list[dict[str, Any]]) -> None:
    """What the README's procedure does: the table restored to a new one, its items copied
    back over the registry's (every item not in the backup deleted)."""
    client = pipeline.app.registry.client
    table = pipeline.app.settings.table_name
    keep = {(item["pk"]["S"], item["sk"]["S"]) for item in items}
    for item in snapshot(pipeline):
        if (item["pk"]["S"], item["sk"]["S"]) not in keep:
            client.delete_item(TableName=table, Key={"pk": item["pk"], "sk": item["sk"]})
    for item in items:
        client.put_item(TableName=table, Item=item)


def test_a_registry_restored_from_a_backup_converges_on_the_next_events_and_a_replay(
    make_pipeline: PipelineFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """The registry goes back to time T while the bucket shows what came after (updates,
    unpublishes, new URLs in a shard opened after T). Every object stays valid throughout.
    New events are applied on the restored registry; ``rebuild --all`` brings every shard
    and the index back to the registry (what the registry does not know is no longer
    named); replaying the events since T (the CMS re-sends them; duplicates too) converges
    to the site with every event."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=3)
    register_stack(pipeline.stack)
    recorder = Recorder(pipeline)
    rng = random.Random(6)
    before_t = [publish(f"/p{n}", 1, lastmod="2026-11-01") for n in range(8)]
    before_t += [unpublish("/p7", 2)]
    pipeline.send_events(before_t)
    pipeline.drain()
    backup = snapshot(pipeline)  # T

    after_t = [
        publish("/p0", 2, lastmod="2026-11-10"),
        unpublish("/p1", 2),
        publish("/p7", 3),  # back after its unpublish
        *(publish(f"/q{n}", 1, lastmod="2026-11-11") for n in range(4)),  # fills a new shard
    ]
    pipeline.send_events(after_t)
    pipeline.drain()
    assert "sitemap-pages-00004.xml.gz" in pipeline.objects()  # opened after T

    restore(pipeline, backup)
    new = [publish("/p6", 2, changefreq="daily"), publish("/r0", 1)]  # both in the third shard
    pipeline.send_events(new)
    pipeline.drain()
    # The shard they touched follows the restored registry, and so does the index (the
    # shard opened after T is no longer named); the first shard still shows what came
    # after T. Every object was valid at every write (the Recorder), none is missing.
    entries = site_entries(pipeline.objects())
    assert entries[f"{SITE}/p6"]["changefreq"] == "daily"
    assert f"{SITE}/r0" in entries
    assert not {f"{SITE}/q{n}" for n in range(4)} & set(entries)
    assert entries[f"{SITE}/p0"]["lastmod"] == "2026-11-10"
    assert f"{SITE}/p1" not in entries

    status, _summary = run(capsys, "rebuild", "--all")
    assert status == 0
    pipeline.drain()
    assert site_entries(pipeline.objects()) == expected_site([*before_t, *new])
    # Left over from after T, named by no index: a shard number the registry has not
    # reached again (the replay below reaches it, and it is overwritten).
    assert "sitemap-pages-00004.xml.gz" in pipeline.objects()

    replay = [*after_t, *new]  # the CMS re-sends everything since T: some are duplicates
    rng.shuffle(replay)
    pipeline.send_events(replay)
    pipeline.drain()
    objects = pipeline.objects()
    assert site_entries(objects) == expected_site([*before_t, *after_t, *new])
    named = {loc.removeprefix(f"{SITE}/") for loc in index_locs(objects["sitemap.xml"])}
    assert {key for key in objects if key.startswith("sitemap-pages-")} == named
    assert pipeline.dead_letters() == []
    assert recorder.violations == []
