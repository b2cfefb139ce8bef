"""Invariant 10: rebuilds of one shard are serialised (FIFO group = shard), and a rebuild
that read older registry state can never overwrite newer output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sitemap_updater.domain.entries import SitemapEntry
from sitemap_updater.domain.errors import WriteConflict
from sitemap_updater.domain.events import parse_event
from sitemap_updater.handlers import rebuild
from sitemap_updater.local.poller import FakeLambdaContext
from sitemap_updater.usecases.ingest import ApplyChange
from sitemap_updater.usecases.rebuild import Rebuilt
from tests.conftest import SITE
from tests.integration.conftest import (
    PipelineFactory,
    Recorder,
    publish,
    shard_urls,
    site_entries,
    unpublish,
)
from tests.pipeline import Pipeline


def apply(pipeline: Pipeline, event: dict[str, Any]) -> None:
    """Commit an event to the registry directly (no queues)."""
    change = parse_event(event, pipeline.app.settings.site)
    ApplyChange(
        registry=pipeline.app.registry,
        limits=pipeline.app.settings.limits,
        tombstone_ttl_seconds=86_400 * 30,
        clock=pipeline.app.clock,
    )(change)


def shard_body(pipeline: Pipeline, shard: str = "pages-00001") -> bytes:
    return pipeline.objects()[f"sitemap-{shard}.xml.gz"]


def test_rebuild_and_index_requests_are_fifo_grouped_by_shard_and_index(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)
    recorder = Recorder(pipeline)
    pipeline.send_events([publish("/a", 1), publish("/b", 1)])
    pipeline.drain()
    batches = [params for name, params in recorder.calls if name == "SendMessageBatch"]
    rebuild_entries = [entry for params in batches for entry in params["Entries"]]
    assert {e["MessageGroupId"] for e in rebuild_entries} == {"pages-00001", "pages-00002"}
    for entry in rebuild_entries:
        assert json.loads(entry["MessageBody"]) == {"shard": entry["MessageGroupId"]}
    index_requests = [params for name, params in recorder.calls if name == "SendMessage"]
    assert index_requests
    assert {params["MessageGroupId"] for params in index_requests} == {"index"}


def test_a_rebuild_that_read_older_state_cannot_overwrite_newer_output(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """Worker A reads the shard (old state) and stalls; worker B applies a newer change and
    writes; A wakes up and tries to write what it read. A's write must lose, and the shard
    must end with the newest state."""
    apply(pipeline, publish("/page", 1, priority=0.1))
    registry = pipeline.app.registry
    worker_b = pipeline.app.rebuild_shard
    real_entries = registry.shard_entries
    interleaved: list[list[tuple[SitemapEntry, str | None]]] = []

    def entries_then_b_runs(shard: str) -> list[tuple[SitemapEntry, str | None]]:
        entries = real_entries(shard)
        if not interleaved:
            interleaved.append(entries)
            # While A holds its (now stale) read, B commits a newer change and rebuilds.
            registry.shard_entries = real_entries  # type: ignore[method-assign]
            apply(pipeline, publish("/page", 2, priority=0.9))
            assert worker_b("pages-00001") is Rebuilt.WRITTEN
            registry.shard_entries = entries_then_b_runs  # type: ignore[method-assign]
        return entries

    registry.shard_entries = entries_then_b_runs  # type: ignore[method-assign]
    outcome = pipeline.app.rebuild_shard("pages-00001")  # worker A

    assert interleaved[0][0][0].priority == "0.1"  # A really did read the old state
    assert outcome is Rebuilt.UNCHANGED  # A's retry re-read the registry: B's bytes stand
    assert b"<priority>0.9</priority>" in _gunzip(shard_body(pipeline))
    assert recorder.puts == ["sitemap-pages-00001.xml.gz"]  # only B's write got through


def test_a_lost_record_update_is_adopted_from_the_object_itself(pipeline: Pipeline) -> None:
    """A crash between PutObject and the record update leaves the record behind the
    object; the next rebuild's conditional write fails, adopts what is stored, and succeeds."""
    apply(pipeline, publish("/p", 1))
    rebuild_shard = pipeline.app.rebuild_shard
    registry = pipeline.app.registry
    real_save = registry.save_shard_output
    registry.save_shard_output = _raise_once(real_save)  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        rebuild_shard("pages-00001")
    registry.save_shard_output = real_save  # type: ignore[method-assign]
    apply(pipeline, publish("/q", 1))
    assert rebuild_shard("pages-00001") is Rebuilt.WRITTEN
    assert shard_urls(shard_body(pipeline)) == [f"{SITE}/p", f"{SITE}/q"]
    output = registry.shard_output("pages-00001")
    assert output.obj is not None
    assert output.obj.entries == 2


def test_a_conflicting_writer_that_never_stops_is_raised_for_sqs_to_retry(
    pipeline: Pipeline,
) -> None:
    apply(pipeline, publish("/p", 1))
    store = pipeline.app.store

    def always_conflicts(*args: Any, **kwargs: Any) -> str:
        raise WriteConflict("someone else keeps writing")

    store.put = always_conflicts  # type: ignore[method-assign]
    with pytest.raises(WriteConflict):
        pipeline.app.rebuild_shard("pages-00001")


def test_requests_for_one_shard_in_a_batch_cost_one_rebuild(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    apply(pipeline, publish("/p", 1))
    records = [
        {
            "messageId": f"m{n}",
            "receiptHandle": f"r{n}",
            "body": json.dumps({"shard": "pages-00001"}),
            "attributes": {"MessageGroupId": "pages-00001", "ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:rebuild.fifo",
            "awsRegion": "us-east-1",
        }
        for n in range(5)
    ]
    response = rebuild.handler(
        {"Records": records}, FakeLambdaContext("rebuild"), app_=pipeline.app
    )
    assert response == {"batchItemFailures": []}
    # One rebuild: its pending changes, then (no object yet to patch) the whole shard.
    assert recorder.count("Query") == 2
    assert recorder.puts == ["sitemap-pages-00001.xml.gz"]


def test_a_failed_rebuild_fails_the_rest_of_its_group_only(pipeline: Pipeline) -> None:
    apply(pipeline, publish("/p", 1))
    bodies = [("bad", "not json"), ("pages-00001", json.dumps({"shard": "pages-00001"}))]
    records = [
        {
            "messageId": f"m{n}",
            "receiptHandle": f"r{n}",
            "body": body,
            "attributes": {"MessageGroupId": group, "ApproximateReceiveCount": "1"},
            "messageAttributes": {},
            "md5OfBody": "",
            "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:rebuild.fifo",
            "awsRegion": "us-east-1",
        }
        for n, (group, body) in enumerate([*bodies, ("bad", json.dumps({"shard": "x"}))])
    ]
    response = rebuild.handler(
        {"Records": records}, FakeLambdaContext("rebuild"), app_=pipeline.app
    )
    # The malformed message fails, the next one of its group is not processed out of order;
    # the other group's message succeeds.
    assert response == {"batchItemFailures": [{"itemIdentifier": "m0"}, {"itemIdentifier": "m2"}]}
    assert "sitemap-pages-00001.xml.gz" in pipeline.objects()


def test_a_retiring_shard_republished_to_the_same_bytes_is_kept_not_rewritten(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    apply(pipeline, publish("/p", 1))
    rebuild_shard = pipeline.app.rebuild_shard
    assert rebuild_shard("pages-00001") is Rebuilt.WRITTEN
    pipeline.app.publish_index()  # names the shard: it is listed
    apply(pipeline, unpublish("/p", 2))
    assert rebuild_shard("pages-00001") is Rebuilt.RETIRING  # listed: the object must stay
    assert "sitemap-pages-00001.xml.gz" in pipeline.objects()
    apply(pipeline, publish("/p", 3))
    recorder.reset()
    assert rebuild_shard("pages-00001") is Rebuilt.WRITTEN  # revived, same bytes
    assert recorder.puts == []
    output = pipeline.app.registry.shard_output("pages-00001")
    assert not output.retiring
    assert output.obj is not None


def _raise_once(function: Any) -> Any:
    calls = []

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not calls:
            calls.append(1)
            raise RuntimeError("crashed before the record update")
        return function(*args, **kwargs)

    return wrapper


def _gunzip(body: bytes) -> bytes:
    import gzip

    return gzip.decompress(body)


# -- found by tests/integration/test_races.py --------------------------------------------------
# The rebuild and index functions run at the same time (different message groups), and
# `sitemap-updater rebuild` runs next to both. Each test below replays, step by step, one
# interleaving the threaded race test hit.


def test_a_retiring_shard_named_by_an_index_meanwhile_is_not_deleted(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """The rebuild reads the shard's record (not yet listed), the index function names the
    shard (listed), then the rebuild marks it retiring: it must not delete what the index
    now names."""
    apply(pipeline, publish("/p", 1))
    assert pipeline.app.rebuild_shard("pages-00001") is Rebuilt.WRITTEN
    apply(pipeline, unpublish("/p", 2))
    registry = pipeline.app.registry
    real_entries = registry.shard_entries

    def index_runs_meanwhile(shard: str) -> list[SitemapEntry]:
        registry.shard_entries = real_entries  # type: ignore[method-assign]
        pipeline.app.publish_index()  # names the shard: its record said listed=False before
        return real_entries(shard)

    registry.shard_entries = index_runs_meanwhile  # type: ignore[method-assign]
    assert pipeline.app.rebuild_shard("pages-00001") is Rebuilt.RETIRING
    assert "sitemap-pages-00001.xml.gz" in pipeline.objects()
    pipeline.app.publish_index()  # stops naming it and asks for its rebuild, which deletes
    assert pipeline.app.rebuild_shard("pages-00001") is Rebuilt.DELETED
    assert "sitemap.xml" not in pipeline.objects()
    assert "sitemap-pages-00001.xml.gz" not in pipeline.objects()


def test_an_index_does_not_name_a_shard_that_began_retiring_after_the_index_read_it(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """The index reads the shard (nameable, not yet listed); the rebuild retires and deletes
    it; the index must not go on to name it."""
    apply(pipeline, publish("/p", 1))
    assert pipeline.app.rebuild_shard("pages-00001") is Rebuilt.WRITTEN
    apply(pipeline, unpublish("/p", 2))
    registry = pipeline.app.registry
    real_outputs = registry.shard_outputs
    outcomes = []

    def rebuild_runs_meanwhile() -> list[Any]:
        read = real_outputs()
        if not outcomes:
            outcomes.append(pipeline.app.rebuild_shard("pages-00001"))
        return read

    registry.shard_outputs = rebuild_runs_meanwhile  # type: ignore[method-assign]
    pipeline.app.publish_index()
    assert outcomes == [Rebuilt.DELETED]  # nothing named it yet: deleting was right
    assert registry.index_outputs() == {}
    assert "sitemap.xml" not in pipeline.objects()


def test_a_retirement_never_deletes_the_object_a_concurrent_republish_wrote(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """Worker A reads the shard empty (retiring, unlisted) and stalls; the page is
    republished and worker B writes the shard; A's delete must not remove B's object."""
    apply(pipeline, publish("/p", 1, priority=0.1))
    worker_b = pipeline.app.rebuild_shard
    assert worker_b("pages-00001") is Rebuilt.WRITTEN
    pipeline.app.publish_index()
    apply(pipeline, unpublish("/p", 2))
    assert worker_b("pages-00001") is Rebuilt.RETIRING
    pipeline.app.publish_index()  # unlisted: the next rebuild deletes
    registry = pipeline.app.registry
    real_entries = registry.shard_entries

    def republished_meanwhile(shard: str) -> list[SitemapEntry]:
        entries = real_entries(shard)
        registry.shard_entries = real_entries  # type: ignore[method-assign]
        apply(pipeline, publish("/p", 3, priority=0.9))
        assert worker_b(shard) is Rebuilt.WRITTEN
        return entries  # A goes on with its stale, empty read

    registry.shard_entries = republished_meanwhile  # type: ignore[method-assign]
    assert pipeline.app.rebuild_shard("pages-00001") is Rebuilt.UNCHANGED  # worker A
    assert b"<priority>0.9</priority>" in _gunzip(shard_body(pipeline))
    output = registry.shard_output("pages-00001")
    assert output.obj is not None
    assert not output.retiring
    pipeline.app.publish_index()
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/p"}


def test_a_restore_never_puts_older_bytes_over_a_concurrent_rebuild(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """``sitemap-updater rebuild`` reads the shard (unchanged since its record), the page
    changes and the rebuild function writes the new bytes; the restore must not take those
    for an altered object and put the old bytes back."""
    apply(pipeline, publish("/p", 1, priority=0.1))
    worker = pipeline.app.rebuild_shard
    assert worker("pages-00001") is Rebuilt.WRITTEN
    registry = pipeline.app.registry
    real_entries = registry.shard_entries

    def changed_meanwhile(shard: str) -> list[SitemapEntry]:
        entries = real_entries(shard)
        registry.shard_entries = real_entries  # type: ignore[method-assign]
        apply(pipeline, publish("/p", 2, priority=0.9))
        assert worker(shard) is Rebuilt.WRITTEN
        return entries  # the restore goes on with its stale read

    registry.shard_entries = changed_meanwhile  # type: ignore[method-assign]
    recorder.reset()
    assert pipeline.app.rebuild_shard("pages-00001", restore=True) is Rebuilt.UNCHANGED
    assert recorder.puts == ["sitemap-pages-00001.xml.gz"]  # the function's write only
    assert b"<priority>0.9</priority>" in _gunzip(shard_body(pipeline))


def test_an_index_restore_never_puts_an_older_index_over_a_newer_one(
    pipeline: Pipeline, recorder: Recorder, clock: Any
) -> None:
    """The restore reads the index record; the index function publishes a newer index; the
    restore must report the index as behind, not write the old one back."""
    apply(pipeline, publish("/p", 1))
    pipeline.app.rebuild_shard("pages-00001")
    pipeline.app.publish_index()
    registry = pipeline.app.registry
    real_indexes = registry.index_outputs

    def published_meanwhile() -> dict[str, Any]:
        read = real_indexes()
        registry.index_outputs = real_indexes  # type: ignore[method-assign]
        clock.advance(60)
        apply(pipeline, publish("/p", 2, priority=0.9))
        pipeline.app.rebuild_shard("pages-00001")
        pipeline.app.publish_index()  # a new lastmod for the shard: a new index
        return read

    registry.index_outputs = published_meanwhile  # type: ignore[method-assign]
    recorder.reset()
    restored = pipeline.app.publish_index.restore()
    assert restored.behind
    assert recorder.puts == ["sitemap-pages-00001.xml.gz", "sitemap.xml"]  # no restore write
    index = pipeline.objects()["sitemap.xml"].decode()
    assert "<lastmod>2026-11-21T12:01:00Z</lastmod>" in index


def test_a_restore_that_read_before_a_change_does_not_leave_the_change_unrendered(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """``sitemap-updater rebuild`` runs outside the shard's message group: it reads a page,
    the page is unpublished and the function's rebuild (reading after) finds nothing to
    do; the restore then writes what it read. Nothing is queued behind it, so it must read
    again and put the shard right itself."""
    apply(pipeline, publish("/p", 1))  # committed; its rebuild has not run yet
    registry = pipeline.app.registry
    real_entries = registry.shard_entries
    function_outcomes = []

    def unpublished_meanwhile(shard: str) -> list[SitemapEntry]:
        entries = real_entries(shard)
        registry.shard_entries = real_entries  # type: ignore[method-assign]
        apply(pipeline, unpublish("/p", 2))
        function_outcomes.append(pipeline.app.rebuild_shard(shard))
        return entries  # the restore goes on with its stale read

    registry.shard_entries = unpublished_meanwhile  # type: ignore[method-assign]
    assert pipeline.app.rebuild_shard("pages-00001", restore=True) is Rebuilt.WRITTEN
    assert function_outcomes == [Rebuilt.ABSENT]
    assert "sitemap-pages-00001.xml.gz" not in pipeline.objects()  # read again, and retired
    assert registry.shard_output("pages-00001").obj is None
