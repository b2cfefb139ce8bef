"""Crashes between an object's write and its record, and the operators' restore racing the
functions: the index never names a missing shard, no object outlives the record that
accounts for it, served bytes follow the registry (invariants 1 and 6)."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from typing import Any

import pytest

from sitemap_updater.domain.errors import ConcurrentChange, WriteConflict
from sitemap_updater.usecases.publish_index import MAX_ATTEMPTS
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    PipelineFactory,
    index_locs,
    publish,
    shard_urls,
    unpublish,
)
from tests.integration.test_serialisation import apply
from tests.pipeline import Pipeline

SHARD_KEY = "sitemap-pages-00001.xml.gz"


class TimedOut(Exception):
    """The Lambda dying between two calls."""


def crash(*_: Any, **__: Any) -> None:
    raise TimedOut


def named_by_index(objects: dict[str, bytes]) -> list[str]:
    """The objects the index files name."""
    return [
        loc.removeprefix(f"{SITE}/")
        for key in ("sitemap.xml", "sitemap-index-2.xml")
        if key in objects
        for loc in index_locs(objects[key])
    ]


def named_and_missing(pipeline: Pipeline) -> list[str]:
    """Objects an index file names that do not exist."""
    objects = pipeline.objects()
    return [named for named in named_by_index(objects) if named not in objects]


def two_index_files(make_pipeline: PipelineFactory) -> Pipeline:
    """Pages /a and /b, each in its own shard, each shard in its own index file."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=1)
    apply(pipeline, publish("/a", 1))
    apply(pipeline, publish("/b", 1))
    pipeline.app.rebuild_shard("pages-00001")
    pipeline.app.rebuild_shard("pages-00002")
    pipeline.app.publish_index()
    return pipeline


def test_a_shard_written_but_not_recorded_is_replaced_when_the_registry_goes_back(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = pipeline.app
    apply(pipeline, publish("/a", 1))
    app.rebuild_shard("pages-00001")
    apply(pipeline, publish("/b", 1))
    with monkeypatch.context() as patched:
        patched.setattr(app.registry, "save_shard_output", crash)
        with pytest.raises(TimedOut):  # PutObject done, the record not
            app.rebuild_shard("pages-00001")
    apply(pipeline, unpublish("/b", 2))  # back to what the record describes
    clock.advance(5)
    app.rebuild_shard("pages-00001")
    assert shard_urls(pipeline.objects()[SHARD_KEY]) == [f"{SITE}/a"]


def test_an_index_written_but_not_recorded_never_names_a_deleted_shard(
    make_pipeline: PipelineFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1)
    app = pipeline.app
    apply(pipeline, publish("/a", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    apply(pipeline, publish("/b", 1))
    app.rebuild_shard("pages-00002")
    with monkeypatch.context() as patched:
        patched.setattr(app.registry, "save_index_output", crash)
        with pytest.raises(TimedOut):  # sitemap.xml names pages-00002; its record does not
            app.publish_index()
    apply(pipeline, unpublish("/b", 2))
    clock.advance(5)
    app.rebuild_shard("pages-00002")  # retiring
    app.publish_index()  # drops it, and must really drop it from sitemap.xml
    app.rebuild_shard("pages-00002")  # deleted
    assert "sitemap-pages-00002.xml.gz" not in pipeline.objects()
    assert named_and_missing(pipeline) == []


def test_the_first_index_file_written_but_not_recorded_is_still_deleted_with_its_shard(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by the model-based test: the site's only page was published and unpublished;
    # the index function died after writing the first sitemap.xml, before its record. With
    # no record naming it, it was never deleted, and it named the shard the retire deleted.
    app = pipeline.app
    apply(pipeline, publish("/d", 1))
    app.rebuild_shard("pages-00001")
    real = app.registry.save_index_output
    with monkeypatch.context() as patched:
        calls: list[int] = []

        def second_save_crashes(*args: Any, **kwargs: Any) -> None:
            calls.append(1)
            if len(calls) == 2:  # the record of what was written (the first: its intent)
                raise TimedOut
            real(*args, **kwargs)

        patched.setattr(app.registry, "save_index_output", second_save_crashes)
        with pytest.raises(TimedOut):
            app.publish_index()
    assert "sitemap.xml" in pipeline.objects()
    apply(pipeline, unpublish("/d", 2))
    clock.advance(5)
    app.rebuild_shard("pages-00001")  # retiring
    app.publish_index()
    app.rebuild_shard("pages-00001")  # deleted
    assert {"sitemap.xml", SHARD_KEY} & set(pipeline.objects()) == set()


def test_a_shard_written_but_never_recorded_is_deleted_when_its_page_goes(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = pipeline.app
    apply(pipeline, publish("/a", 1))
    with monkeypatch.context() as patched:
        patched.setattr(app.registry, "save_shard_output", crash)
        with pytest.raises(TimedOut):  # PutObject done, the shard's first record not
            app.rebuild_shard("pages-00001")
    assert SHARD_KEY in pipeline.objects()
    apply(pipeline, unpublish("/a", 2))
    clock.advance(5)
    app.rebuild_shard("pages-00001")
    assert SHARD_KEY not in pipeline.objects()


def test_a_shard_object_written_since_an_empty_read_is_left_to_its_writer(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild that read the shard empty (before the page's publish) finds the object the
    page's own rebuild has written and not recorded yet: deleting it would leave that
    rebuild's record, and the index after it, naming a missing object."""
    app = pipeline.app
    entries = app.registry.shard_entries

    def published_meanwhile(shard: str) -> Any:
        read = entries(shard)  # empty
        monkeypatch.setattr(app.registry, "shard_entries", entries)
        clock.advance(1)
        apply(pipeline, publish("/a", 1))
        with monkeypatch.context() as patched:  # the page's rebuild, between write and record
            patched.setattr(app.registry, "save_shard_output", crash)
            with pytest.raises(TimedOut):
                app.rebuild_shard("pages-00001")
        return read

    monkeypatch.setattr(app.registry, "shard_entries", published_meanwhile)
    app.rebuild_shard("pages-00001")
    assert SHARD_KEY in pipeline.objects()


def test_a_restore_racing_a_delete_leaves_no_orphan(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = pipeline.app
    apply(pipeline, publish("/gone", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    head = app.store.head

    def functions_run_meanwhile(key: str) -> Any:
        monkeypatch.setattr(app.store, "head", head)
        apply(pipeline, unpublish("/gone", 2))
        app.rebuild_shard("pages-00001")  # retiring
        app.publish_index()
        app.rebuild_shard("pages-00001")  # deleted
        return head(key)  # the restore now finds it missing, and writes it back

    monkeypatch.setattr(app.store, "head", functions_run_meanwhile)
    app.rebuild_shard("pages-00001", restore=True)
    assert SHARD_KEY not in pipeline.objects()
    assert app.registry.shard_output("pages-00001").obj is None


def test_a_restore_never_brings_back_a_retiring_shard(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hot rebuild that will delete a retiring shard has read it; a republish and a
    restore happen meanwhile. The restore leaves the revival to the shard's own rebuild."""
    app = pipeline.app
    apply(pipeline, publish("/p", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    apply(pipeline, unpublish("/p", 2))
    app.rebuild_shard("pages-00001")  # retiring
    app.publish_index()  # unlisted
    entries = app.registry.shard_entries

    def republished_and_restored_meanwhile(shard: str) -> Any:
        found = entries(shard)
        monkeypatch.setattr(app.registry, "shard_entries", entries)
        apply(pipeline, publish("/p", 3))
        assert app.rebuild_shard(shard, restore=True).value == "unchanged"
        return found

    monkeypatch.setattr(app.registry, "shard_entries", republished_and_restored_meanwhile)
    app.rebuild_shard("pages-00001")  # the delete it had read for
    app.publish_index()
    app.rebuild_shard("pages-00001")  # the republish's own rebuild
    app.publish_index()
    assert named_and_missing(pipeline) == []
    assert shard_urls(pipeline.objects()[SHARD_KEY]) == [f"{SITE}/p"]


def test_an_index_restore_racing_the_index_function_leaves_no_orphan_file(
    make_pipeline: PipelineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = two_index_files(make_pipeline)
    app = pipeline.app
    pipeline.s3.delete_object(Bucket=app.store.bucket, Key="sitemap-index-2.xml")  # lost
    head = app.store.head

    def index_function_runs_meanwhile(key: str) -> Any:
        if key == "sitemap-index-2.xml":
            monkeypatch.setattr(app.store, "head", head)
            apply(pipeline, unpublish("/b", 2))
            app.rebuild_shard("pages-00002")
            app.publish_index()  # one index file now
            app.rebuild_shard("pages-00002")
        return head(key)

    monkeypatch.setattr(app.store, "head", index_function_runs_meanwhile)
    with pytest.raises(ConcurrentChange):  # the operator runs it again
        app.publish_index.restore()
    assert "sitemap-index-2.xml" not in pipeline.objects()
    assert named_and_missing(pipeline) == []


def test_an_index_restore_leaves_robots_txt_to_an_index_function_that_moved_on(
    make_pipeline: PipelineFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=1)
    app = pipeline.app
    apply(pipeline, publish("/a", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    outputs = app.registry.index_outputs

    def second_file_published_meanwhile() -> Any:
        found = outputs()
        monkeypatch.setattr(app.registry, "index_outputs", outputs)
        apply(pipeline, publish("/b", 1))
        app.rebuild_shard("pages-00002")
        app.publish_index()  # sitemap-index-2.xml, and its line in robots.txt
        return found

    monkeypatch.setattr(app.registry, "index_outputs", second_file_published_meanwhile)
    result = app.publish_index.restore()
    assert result.robots is None
    robots = pipeline.objects()["robots.txt"]
    assert f"Sitemap: {SITE}/sitemap-index-2.xml".encode() in robots


def test_news_recorded_after_an_adopt_still_age_out(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = pipeline.app
    news = {
        "publication": {"name": "The Times", "language": "en"},
        "publication_date": clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "title": "Story",
    }
    apply(pipeline, publish("/story", 1, news=news))
    with monkeypatch.context() as patched:
        patched.setattr(app.registry, "save_shard_output", crash)
        with pytest.raises(TimedOut):
            app.rebuild_shard("pages-00001")
    app.rebuild_shard("pages-00001")  # SQS delivers it again
    assert app.registry.shard_output("pages-00001").news_expiry is not None
    app.publish_index()
    clock.advance(3 * 86_400)
    app.publish_index()  # the schedule's sweep asks for the shard's rebuild
    app.rebuild_shard("pages-00001")
    assert b"news:news" not in gzip.decompress(pipeline.objects()[SHARD_KEY])


class RecordingCdn:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def invalidate(self, keys: Sequence[str]) -> bool:
        self.calls.append(list(keys))
        return True


def test_files_written_by_an_attempt_that_lost_a_race_are_still_invalidated(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = pipeline.app
    cdn = RecordingCdn()
    monkeypatch.setattr(app.publish_index, "cdn", cdn)
    apply(pipeline, publish("/a", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    cdn.calls.clear()
    apply(pipeline, publish("/b", 1))
    clock.advance(60)
    app.rebuild_shard("pages-00001")
    put = app.store.put
    conflicts = iter(range(MAX_ATTEMPTS))  # every try of the first attempt's robots.txt

    def owner_keeps_editing_robots(key: str, *args: Any, **kwargs: Any) -> str:
        if key == "robots.txt" and next(conflicts, None) is not None:
            raise WriteConflict("the owner edited robots.txt")
        return put(key, *args, **kwargs)

    monkeypatch.setattr(app.store, "put", owner_keeps_editing_robots)
    pipeline.s3.put_object(  # a stale own line, so robots.txt needs a write
        Bucket=app.store.bucket,
        Key="robots.txt",
        Body=b"User-agent: *\nSitemap: http://www.example.com/sitemap.xml\n",
    )
    app.publish_index()
    assert "sitemap.xml" in [key for call in cdn.calls for key in call]


def answer_lost_once(app: Any, monkeypatch: pytest.MonkeyPatch, lost_key: str) -> list[str]:
    """The store's put of ``lost_key`` lands once but its answer is lost: botocore sends it
    again and the condition fails (WriteConflict). Returns the keys put, as they land."""
    put = app.store.put
    landed: list[str] = []

    def put_then_lose_the_answer(key: str, *args: Any, **kwargs: Any) -> str:
        etag = put(key, *args, **kwargs)
        landed.append(key)
        if key == lost_key and landed.count(key) == 1:
            raise WriteConflict(f"{key}: 412 Precondition Failed (the retry of a landed put)")
        return etag

    monkeypatch.setattr(app.store, "put", put_then_lose_the_answer)
    return landed


@pytest.mark.parametrize("lost_key", [SHARD_KEY, "sitemap.xml", "robots.txt"])
def test_an_object_whose_write_landed_with_its_answer_lost_is_still_invalidated(
    pipeline: Pipeline, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, lost_key: str
) -> None:
    app = pipeline.app
    cdn = RecordingCdn()
    monkeypatch.setattr(app.rebuild_shard, "cdn", cdn)
    monkeypatch.setattr(app.publish_index, "cdn", cdn)
    apply(pipeline, publish("/a", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    cdn.calls.clear()
    landed = answer_lost_once(app, monkeypatch, lost_key)
    apply(pipeline, publish("/b", 1))
    clock.advance(60)
    if lost_key == "robots.txt":  # a stale own line, so robots.txt needs a write
        pipeline.s3.put_object(
            Bucket=app.store.bucket,
            Key="robots.txt",
            Body=b"User-agent: *\nSitemap: http://www.example.com/sitemap.xml\n",
        )
    app.rebuild_shard("pages-00001")
    app.publish_index()
    assert lost_key in landed  # its bytes are the new ones, served from now on
    assert lost_key in [key for call in cdn.calls for key in call]


def test_robots_txt_over_the_limit_still_loses_the_line_of_a_dropped_index_file(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = two_index_files(make_pipeline)
    app = pipeline.app
    owners = pipeline.objects()["robots.txt"] + b"# " + b"x" * 520_000 + b"\n"
    pipeline.s3.put_object(Bucket=app.store.bucket, Key="robots.txt", Body=owners)
    apply(pipeline, unpublish("/b", 2))
    app.rebuild_shard("pages-00002")
    assert "sitemap-index-2.xml" in pipeline.objects()
    app.publish_index()
    assert "sitemap-index-2.xml" not in pipeline.objects()
    assert "sitemap-index-2.xml" not in app.registry.index_outputs()
    robots = pipeline.objects()["robots.txt"]
    assert b"sitemap-index-2.xml" not in robots
    assert b"x" * 520_000 in robots  # the owner's bytes, all of them


def test_a_shard_shifting_between_index_files_is_named_by_one_at_every_moment(
    make_pipeline: PipelineFactory,
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=2)
    app = pipeline.app
    for number, path in enumerate(["/a", "/b", "/c"], start=1):
        apply(pipeline, publish(path, 1))
        app.rebuild_shard(f"pages-0000{number}")
    app.publish_index()
    apply(pipeline, publish("/blog/x", 1, sitemap="blog"))  # sorts first: shifts the rest
    app.rebuild_shard("blog-00001")
    unnamed_after_each_put: list[list[str]] = []

    def look(**_: Any) -> None:
        named = set(named_by_index(pipeline.objects()))
        pages = {f"sitemap-pages-0000{n}.xml.gz" for n in (1, 2, 3)}
        unnamed_after_each_put.append(sorted(pages - named))

    app.store.client.meta.events.register("after-call.s3.PutObject", look)
    app.publish_index()
    assert unnamed_after_each_put == [[], []]  # both files rewritten, no shard left out


def test_a_retiring_shard_is_deleted_even_when_the_index_died_before_asking(
    pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index unlisted the emptied shard, then died before asking its rebuild to delete
    it: the next index run asks again, and no object outlives its last page."""
    app = pipeline.app
    apply(pipeline, publish("/p", 1))
    app.rebuild_shard("pages-00001")
    app.publish_index()
    apply(pipeline, unpublish("/p", 2))
    app.rebuild_shard("pages-00001")  # retiring
    with monkeypatch.context() as patched:
        patched.setattr(app.publish_index.retire, "request_rebuilds", crash)
        with pytest.raises(TimedOut):
            app.publish_index()  # unlisted, no request sent
    assert not app.registry.shard_output("pages-00001").listed
    app.publish_index()
    pipeline.drain()
    assert SHARD_KEY not in pipeline.objects()
    assert app.registry.shard_output("pages-00001").obj is None


@pytest.mark.parametrize("cut", ["robots_conflicts", "crash_before_robots"])
def test_a_full_publish_cut_short_finishes_before_the_index_is_patched(
    make_pipeline: PipelineFactory, monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    # /a/ sorts before pages: its new shard shifts every shard into the next file, and a
    # third file appears, which robots.txt must name once the publish is done.
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=2, GROUP_RULES="/a/=a")
    pipeline.send_events([publish(f"/p{n}", 1) for n in range(4)])
    pipeline.drain()
    store, put = pipeline.app.store, pipeline.app.store.put
    failures = MAX_ATTEMPTS if cut == "robots_conflicts" else 1

    def cut_short(key: str, *args: Any, **kwargs: Any) -> str:
        nonlocal failures
        if key == "robots.txt" and failures:
            failures -= 1
            raise WriteConflict(key) if cut == "robots_conflicts" else TimedOut
        return put(key, *args, **kwargs)

    monkeypatch.setattr(store, "put", cut_short)
    pipeline.send_events([publish("/a/x", 1)])
    pipeline.drain()
    robots = pipeline.objects()["robots.txt"]
    assert f"Sitemap: {SITE}/sitemap-index-3.xml".encode() in robots
    assert named_and_missing(pipeline) == []
