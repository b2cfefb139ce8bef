"""A rebuild applies the pending changes to the shard's previous bytes, and the index rewrites
one entry: the bytes are always a full rebuild's, and anything unexpected falls back to it.

The model test drives random histories (publishes, updates, unpublishes, hreflang cluster
changes, duplicates) with a crash injected between any two AWS calls, and after every step
checks, from clients of its own, that nothing is left pending and that a full rebuild from
the registry (``sitemap-updater rebuild --all``'s restore) finds every shard object and the
index exactly as it would write them.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
from collections import Counter
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test
from moto import mock_aws

from sitemap_updater.bootstrap import App, build_app
from sitemap_updater.domain.dates import w3c
from sitemap_updater.domain.events import parse_event
from sitemap_updater.domain.sharding import ShardFormat
from sitemap_updater.domain.stylesheet import STYLESHEET_HREF
from sitemap_updater.usecases import rebuild as rebuild_module
from sitemap_updater.usecases.publish_index import Restored
from sitemap_updater.usecases.rebuild import Rebuilt
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    FaultInjector,
    PipelineFactory,
    Recorder,
    publish,
    unpublish,
)
from tests.integration.test_model_based import OPERATIONS
from tests.pipeline import Pipeline

PROFILE = settings(
    max_examples=int(os.environ.get("PATCH_EXAMPLES", "40")),
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PATHS = ["/a", "/b", "/c", "/d", "/e", "/f"]
LANGS = ["en", "de", "fr"]
SHARD = "pages-00001"
KEY = f"sitemap-{SHARD}.xml.gz"
_SESSION = boto3.session.Session(region_name="us-east-1")
_prefixes = itertools.count(1)
PATHS_TAKEN: Counter[str] = Counter()  # over every example: the test must patch, and fall back


def pending_markers(app: App) -> list[Any]:
    registry = app.registry
    shards = {output.shard for output in registry.shard_outputs()}
    return [marker for shard in sorted(shards) for marker in registry.pending(shard)]


def assert_a_full_rebuild_changes_nothing(app: App) -> None:
    """What ``rebuild --all`` does: every shard rendered in full from the registry and
    compared with its object (hash and HEAD), then the index files."""
    for output in app.registry.shard_outputs():
        outcome = app.rebuild_shard(output.shard, restore=True)
        assert outcome in {Rebuilt.UNCHANGED, Rebuilt.ABSENT}, output  # ABSENT: deleted
    restored = app.publish_index.restore()
    assert not restored.behind, restored
    assert set(restored.index_files.values()) <= {Restored.UNCHANGED}, restored


def count_paths(recorder: Recorder) -> None:
    """Which way each rebuild went: a patch GETs its object; a full one Queries its entries.
    An index refresh patched when it read its records and fell back to no full publish (a
    Query of every shard's record)."""
    if any(n == "BatchGetItem" and "INDEXES" in str(p) for n, p in recorder.calls):
        PATHS_TAKEN["index patched" if shard_records_read(recorder) == 0 else "index full"] += 1
    for name, params in recorder.calls:
        if name == "GetObject" and params["Key"].startswith("sitemap-pages"):
            PATHS_TAKEN["patched"] += 1
        prefix = params.get("ExpressionAttributeValues", {}).get(":prefix", {})
        if name == "Query" and prefix == {"S": "URL#"}:
            PATHS_TAKEN["full"] += 1
    recorder.reset()


class PatchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.pipeline = Pipeline.create(
            SITE,
            {"MAX_URLS_PER_SHARD": 4, "MAX_SITEMAPS_PER_INDEX": 1},  # two index files
            visibility_timeout=0,
            clock=FakeClock(),
            prefix=f"patch{next(_prefixes)}",
            session=_SESSION,
        )
        self.recorder = Recorder(self.pipeline)
        self.faults = FaultInjector(self.pipeline, include_lambda_service=True)
        # The checks use clients of their own: no injected fault fires in them.
        self.checker = build_app(self.pipeline.app.settings, _SESSION, FakeClock())
        self.versions = dict.fromkeys(PATHS, 0)
        self.sent: list[dict[str, Any]] = []

    def _send(self, *events: dict[str, Any]) -> None:
        self.sent.extend(events)
        self.pipeline.send_events(list(events))
        self.pipeline.drain(timeout_seconds=120)
        count_paths(self.recorder)
        assert self.pipeline.dead_letters() == []
        assert pending_markers(self.checker) == []
        assert_a_full_rebuild_changes_nothing(self.checker)
        assert self.recorder.violations == []

    def _next(self, path: str) -> int:
        self.versions[path] += 1
        return self.versions[path]

    @rule(
        path=st.sampled_from(PATHS),
        lastmod=st.sampled_from(["2026-11-01", "2026-11-02T10:00:00Z", None]),
        priority=st.sampled_from([0.2, 0.9, None]),
    )
    def publish_page(self, path: str, lastmod: str | None, priority: float | None) -> None:
        fields = {"lastmod": lastmod, "priority": priority}
        event = publish(path, self._next(path), **{k: v for k, v in fields.items() if v})
        self._send(event)

    @rule(path=st.sampled_from(PATHS))
    def unpublish_page(self, path: str) -> None:
        self._send(unpublish(path, self._next(path)))

    @rule(
        path=st.sampled_from(PATHS),
        lang=st.sampled_from(LANGS),
        siblings=st.dictionaries(st.sampled_from(LANGS), st.sampled_from(PATHS), max_size=2),
    )
    def declare_alternates(self, path: str, lang: str, siblings: dict[str, str]) -> None:
        """A page joins, leaves or merges hreflang clusters (its siblings' entries change)."""
        alternates = [
            {"hreflang": other, "href": f"{SITE}{href}"}
            for other, href in sorted(siblings.items())
            if other != lang and href != path
        ]
        event = publish(path, self._next(path), hreflang=lang, alternates=alternates)
        self._send(event)

    @precondition(lambda self: bool(self.sent))
    @rule(data=st.data())
    def redeliver(self, data: st.DataObject) -> None:
        self._send(data.draw(st.sampled_from(self.sent)))

    @precondition(lambda self: self.faults.pending() < 3)
    @rule(operation=st.sampled_from(OPERATIONS), after=st.booleans(), later=st.integers(1, 4))
    def crash(self, operation: str, after: bool, later: int) -> None:
        """The next event's functions die before (or just after) one of their AWS calls."""
        seen = self.recorder.count(operation)
        self.faults.fail(operation, occurrence=seen + later, after=after)


@pytest.mark.slow
def test_patched_shards_and_index_are_always_a_full_rebuilds_bytes() -> None:
    PATHS_TAKEN.clear()
    with mock_aws():
        run_state_machine_as_test(PatchMachine, settings=PROFILE)
    assert PATHS_TAKEN["patched"] > 0, PATHS_TAKEN
    assert PATHS_TAKEN["full"] > 0, PATHS_TAKEN
    assert PATHS_TAKEN["index patched"] > 0, PATHS_TAKEN
    assert PATHS_TAKEN["index full"] > 0, PATHS_TAKEN


# -- each fallback, and the patches themselves, on one pipeline ------------------------------


def full_reads(recorder: Recorder) -> int:
    """Queries of a shard's entries in full."""
    return sum(
        1
        for name, params in recorder.calls
        if name == "Query"
        and params.get("ExpressionAttributeValues", {}).get(":prefix") == {"S": "URL#"}
    )


def shard_records_read(recorder: Recorder) -> int:
    """Queries of every shard's record (the index published in full)."""
    return sum(
        1
        for name, params in recorder.calls
        if name == "Query" and params["ExpressionAttributeValues"][":pk"] == {"S": "SHARDS"}
    )


@pytest.fixture
def pipeline(make_pipeline: PipelineFactory) -> Pipeline:
    return make_pipeline(MAX_URLS_PER_SHARD=len(PATHS))  # PATHS fill pages-00001


@pytest.fixture
def site(pipeline: Pipeline, recorder: Recorder) -> Pipeline:
    pipeline.send_events([publish(path, 1) for path in PATHS])
    pipeline.drain()
    recorder.reset()
    return pipeline


def test_one_change_reads_only_its_entry_and_rewrites_one_index_entry(
    site: Pipeline, recorder: Recorder, clock: FakeClock
) -> None:
    clock.advance(60)  # a new lastmod for the shard: its index entry changes
    site.send_events([publish("/c", 2, lastmod="2026-11-20")])
    site.drain()
    assert full_reads(recorder) == 0
    assert shard_records_read(recorder) == 0
    # Its entry; the index file's record with the shard's (no Query of index records).
    assert recorder.count("BatchGetItem") == 2
    assert not [p for name, p in recorder.calls if name == "Query" and "INDEXES" in str(p)]
    assert recorder.count("GetObject") == 1  # the shard's; the index's bytes are those it wrote
    assert recorder.puts == [KEY, "sitemap.xml"]
    assert pending_markers(site.app) == []
    assert_a_full_rebuild_changes_nothing(site.app)


def test_a_new_shard_publishes_the_index_in_full(site: Pipeline, recorder: Recorder) -> None:
    site.send_events([publish(f"/new-{n}", 1) for n in range(4)])  # pages-00002 opens
    site.drain()
    assert shard_records_read(recorder) >= 1
    assert "sitemap-pages-00002.xml.gz" in site.objects()
    assert_a_full_rebuild_changes_nothing(site.app)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(
            lambda s: s.s3.delete_object(Bucket=s.stack.settings.bucket_name, Key=KEY),
            id="missing",
        ),
        pytest.param(
            lambda s: s.s3.put_object(
                Bucket=s.stack.settings.bucket_name,
                Key=KEY,
                Body=gzip.compress(b"<urlset/>"),
                Metadata={"sha256": "0" * 64},
            ),
            id="altered",
        ),
    ],
)
def test_an_object_missing_or_altered_is_rebuilt_in_full(
    site: Pipeline, recorder: Recorder, damage: Any
) -> None:
    damage(site)
    site.send_events([publish("/c", 2, lastmod="2026-11-20")])
    site.drain()
    assert full_reads(recorder) >= 1  # then again, once the write on the old ETag lost
    assert_a_full_rebuild_changes_nothing(site.app)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(
            lambda s: s.s3.delete_object(Bucket=s.stack.settings.bucket_name, Key="sitemap.xml"),
            id="missing",
        ),
        pytest.param(
            lambda s: s.s3.put_object(
                Bucket=s.stack.settings.bucket_name, Key="sitemap.xml", Body=b"<sitemapindex/>"
            ),
            id="altered",
        ),
    ],
)
def test_an_index_missing_or_altered_behind_the_functions_back_is_published_in_full(
    site: Pipeline, recorder: Recorder, clock: FakeClock, damage: Any
) -> None:
    damage(site)  # the index function holds the bytes it wrote: its conditional write finds it
    clock.advance(60)
    site.send_events([publish("/c", 2, lastmod="2026-11-20")])
    site.drain()
    assert shard_records_read(recorder) >= 1
    assert b"sitemap-pages-00001.xml.gz" in site.objects()["sitemap.xml"]
    assert_a_full_rebuild_changes_nothing(site.app)


def test_too_many_pending_changes_are_rebuilt_in_full(
    site: Pipeline, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuild_module, "MAX_PATCHED", 1)
    site.send_events([publish("/a", 2, priority=0.3), publish("/b", 2, priority=0.4)])
    site.drain()
    assert full_reads(recorder) >= 1
    assert pending_markers(site.app) == []
    assert_a_full_rebuild_changes_nothing(site.app)


def test_other_render_settings_are_rebuilt_in_full(
    site: Pipeline, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stylesheet turned on: the record's rendering differs, the shard renders in full
    (and from then on is patched again)."""
    monkeypatch.setattr(site.app.rebuild_shard, "stylesheet", STYLESHEET_HREF)
    monkeypatch.setattr(site.app.publish_index, "stylesheet", STYLESHEET_HREF)
    site.send_events([publish("/c", 2, lastmod="2026-11-20")])
    site.drain()
    assert full_reads(recorder) == 1
    assert shard_records_read(recorder) == 1  # the index too: rendered in full
    assert b"xml-stylesheet" in gzip.decompress(site.objects()[KEY])
    assert b"xml-stylesheet" in site.objects()["sitemap.xml"]
    recorder.reset()
    site.send_events([publish("/d", 2, lastmod="2026-11-20")])
    site.drain()
    assert full_reads(recorder) == 0
    assert_a_full_rebuild_changes_nothing(site.app)


def test_text_shards_are_always_rebuilt_in_full(
    site: Pipeline, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switched to SITEMAP_FORMAT=txt: the record's rendering differs, and a text shard is
    never patched (only XML lines are), so every change reads the shard in full."""
    monkeypatch.setattr(site.app.rebuild_shard, "shard_format", ShardFormat(text=True))
    for version in (2, 3):
        site.send_events([publish("/c", version), unpublish("/d", version)])
        site.drain()
        assert full_reads(recorder) == 1
        recorder.reset()
    text = site.objects()[f"sitemap-{SHARD}.txt"].decode()
    assert text.splitlines() == [f"{SITE}{path}" for path in PATHS if path != "/d"]


def test_news_is_rebuilt_in_full(site: Pipeline, recorder: Recorder) -> None:
    news = {
        "publication": {"name": "The Example", "language": "en"},
        "publication_date": "2026-11-21T10:00:00Z",
        "title": "A story",
    }
    site.send_events([publish("/c", 2, news=news)])
    site.drain()
    assert full_reads(recorder) == 1
    recorder.reset()
    site.send_events([publish("/d", 2, lastmod="2026-11-20")])  # news in the shard: ages
    site.drain()
    assert full_reads(recorder) == 1
    assert_a_full_rebuild_changes_nothing(site.app)


def test_an_emptied_shard_retires_by_the_full_path(site: Pipeline) -> None:
    site.send_events([unpublish(path, 2) for path in PATHS])
    site.drain()
    site.drain()  # the index stops naming it; its rebuild then deletes it
    assert not any(key.startswith("sitemap-pages") for key in site.objects())
    assert pending_markers(site.app) == []


def test_a_newer_change_committed_meanwhile_stays_pending(site: Pipeline) -> None:
    """A rebuild deletes only the markers it read: one committed after its read survives,
    and its own rebuild applies it."""
    app = site.app
    registry = app.registry
    real_entries = registry.entries

    def entries_then_newer_commit(shard: str, urls: list[str]) -> Any:
        found = real_entries(shard, urls)
        registry.entries = real_entries  # type: ignore[method-assign]
        app.apply_change(parse_event(publish("/c", 3, priority=0.1), app.settings.site))
        return found

    registry.entries = entries_then_newer_commit  # type: ignore[method-assign]
    site.send_events([publish("/c", 2, priority=0.5)])
    site.drain()
    assert [marker.version for marker in registry.pending(SHARD)] == ["3"]
    app.rebuild_shard(SHARD)
    assert registry.pending(SHARD) == []
    assert b"<priority>0.1</priority>" in gzip.decompress(site.objects()[KEY])
    assert_a_full_rebuild_changes_nothing(app)


def test_freshness_is_measured_from_the_events_sent_timestamp(site: Pipeline) -> None:
    before = len(site.app.publish_index.latencies)
    site.send_events([publish("/c", 2, lastmod="2026-11-20")])
    site.drain()
    assert len(site.app.publish_index.latencies) == before + 1


def test_with_several_index_files_a_change_patches_the_file_naming_its_shard(
    make_pipeline: PipelineFactory, clock: FakeClock
) -> None:
    """Past one index file's 50,000 shards (here: 2 a file), a change still reads no shard
    record: only the file that names its shard is rewritten."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=2)
    pipeline.send_events([publish(f"/p{n}", 1) for n in range(5)])  # 5 shards, 3 files
    pipeline.drain()
    pipeline.send_events([publish("/p0", 2, lastmod="2026-11-01")])  # the files are whole
    pipeline.drain()
    recorder = Recorder(pipeline)
    clock.advance(60)
    pipeline.send_events([publish("/p3", 2, lastmod="2026-11-20")])  # pages-00004: file 2
    pipeline.drain()

    assert shard_records_read(recorder) == 0
    index_puts = [key for key in recorder.puts if "index" in key or key == "sitemap.xml"]
    assert index_puts == ["sitemap-index-2.xml"]
    shard_line = re.search(
        rb"00004.xml.gz</loc><lastmod>([^<]+)<", pipeline.objects()["sitemap-index-2.xml"]
    )
    assert shard_line is not None
    assert shard_line.group(1) == w3c(clock()).encode()  # when its bytes changed
    assert recorder.violations == []
    assert_a_full_rebuild_changes_nothing(pipeline.app)
