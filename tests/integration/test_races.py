"""Races on real threads: what FIFO ordering does not cover, or covers only in production.

Invariant 10 says two rebuilds of one shard never run at once, because the rebuild queue
has one FIFO message group per shard. But ``sitemap-updater rebuild`` runs the same use case
outside the queue, next to the functions, and the index function runs next to every
rebuild (another message group). So the code must be safe without the FIFO guarantee too.
These tests race the real use cases on real threads, many times, and check the invariants
at every write (the ``Recorder``) and after every race.

How moto takes it: each worker is a function instance of its own (own boto3 session and
clients), and every AWS request is serialised by one lock (``concurrency.Serialised``), not
run against moto's threaded server. moto's backends are not thread-safe (a DynamoDB
transaction can die on "dictionary changed size during iteration"), and its threaded
server calls the same backends from a thread per request, so it would need the same lock.
One request at a time is also what the real services promise: each PutObject, conditional
write and transaction is applied whole. What runs concurrently is everything between two
requests (reading, rendering, deciding, retrying), which is where the races are; barriers
and events make the dangerous orders happen (both workers read before either writes) and
seeded jitter varies the rest.
"""

from __future__ import annotations

import gzip
import itertools
import random
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from sitemap_updater.bootstrap import App
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.domain.events import parse_event
from sitemap_updater.domain.records import ShardOutput
from sitemap_updater.domain.sharding import ShardFormat
from sitemap_updater.usecases.rebuild import Rebuilt
from tests.conftest import SITE
from tests.integration.concurrency import Serialised, TickingClock, run_threads, worker_app
from tests.integration.conftest import (
    NS,
    PipelineFactory,
    Recorder,
    parse,
    publish,
    shard_urls,
    site_entries,
    unpublish,
)
from tests.pipeline import Pipeline
from tests.rendering import render_shard

SHARD = "pages-00001"
KEY = f"sitemap-{SHARD}.xml.gz"
RACES = 30
BARRIER_SECONDS = 20


def retrying(action: Callable[[], Any], attempts: int = 8) -> Any:
    """Run ``action`` as SQS would deliver its message: again after a retryable failure."""
    for attempt in range(attempts):
        try:
            return action()
        except RetryableError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.001)
    return None  # pragma: no cover


class Cms:
    """Commits page changes straight to the registry, as the ingest function would."""

    def __init__(self, app: App, rng: random.Random, paths: list[str]):
        self.app = app
        self.rng = rng
        self.paths = paths
        self.versions = dict.fromkeys(paths, 0)
        self.live: set[str] = set()

    def change(self) -> None:
        """Publish a page that is not listed; update or unpublish one that is."""
        path = self.rng.choice(self.paths)
        self.versions[path] += 1
        version = self.versions[path]
        if path in self.live and self.rng.random() < 0.5:
            event = unpublish(path, version)
            self.live.discard(path)
        else:
            self.live.add(path)
            day = self.rng.randint(1, 28)
            event = publish(path, version, lastmod=f"2026-11-{day:02d}")
        self._apply(event)

    def empty(self) -> None:
        """Unpublish every listed page: the shard retires, then is deleted."""
        for path in sorted(self.live):
            self.versions[path] += 1
            self._apply(unpublish(path, self.versions[path]))
        self.live.clear()

    def _apply(self, event: dict[str, Any]) -> None:
        retrying(lambda: self.app.apply_change(parse_event(event, self.app.settings.site)))


class Gate:
    """Makes one race: the first worker reads the registry, the CMS may commit a change, the
    second worker reads, and only then may either write (a barrier), in a random order."""

    def __init__(self, rng: random.Random, commit: Callable[[Cms], None] | None):
        self.rng = rng
        self.commit = commit
        self.first_read = threading.Event()
        self.committed = threading.Event()
        self.barrier = threading.Barrier(2, timeout=BARRIER_SECONDS)

    def arm(self, app: App, first: bool) -> None:
        """Wrap one worker's registry reads for its first attempt of this race."""
        registry = app.registry
        real_output = type(registry).shard_output.__get__(registry)
        armed = [True]

        def shard_output(shard: str) -> ShardOutput:
            if armed[0] and not first:
                assert self.committed.wait(BARRIER_SECONDS)
            return real_output(shard)

        def reading(real: Callable[..., Any]) -> Callable[..., Any]:
            """The worker's read of the shard's state: its entries in full (a restore), or its
            pending changes (the function, which then reads only the entries they name)."""

            def read(*args: Any) -> Any:
                entries = real(*args)
                if armed[0]:
                    armed[0] = False
                    if first:
                        self.first_read.set()
                    self.barrier.wait()  # both have read; now both write
                    time.sleep(self.rng.uniform(0, 0.003))
                return entries

            return read

        registry.shard_output = shard_output  # type: ignore[method-assign]
        registry.shard_entries = reading(registry.shard_entries)  # type: ignore[method-assign]
        registry.pending = reading(registry.pending)  # type: ignore[method-assign]

    def cms(self, cms: Cms) -> None:
        assert self.first_read.wait(BARRIER_SECONDS)
        if self.commit is not None:
            self.commit(cms)
        self.committed.set()


class Watch:
    """Every write of the shard and of the index, in the order S3 applied them."""

    def __init__(self) -> None:
        self.shard_lastmods: list[str] = []
        self.index_lastmods: list[str] = []

    def attach(self, app: App) -> None:
        app.store.client.meta.events.register("after-call.s3.PutObject", self._after_put)

    def _after_put(self, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code != 200:
            return
        params = context["recorded_params"]
        if params["Key"] == KEY:
            self.shard_lastmods.append(params["Metadata"]["lastmod"])
        elif params["Key"] == "sitemap.xml":
            for sitemap in parse(params["Body"]).findall("sm:sitemap", NS):
                if sitemap.findtext("sm:loc", namespaces=NS) == f"{SITE}/{KEY}":
                    self.index_lastmods.append(sitemap.findtext("sm:lastmod", namespaces=NS))


def never_backwards(values: list[str]) -> list[str]:
    return [f"{a} then {b}" for a, b in itertools.pairwise(values) if b < a]


def function(app: App, committed: bool, outcomes: list[str]) -> None:
    """The rebuild function. A change committed during the race sent its own rebuild request
    to the shard's message group: the function serves it after this run."""
    for _request in range(2 if committed else 1):
        outcomes.append(Rebuilt(retrying(lambda: app.rebuild_shard(SHARD))).value)


def operator(app: App, outcomes: list[str]) -> None:
    """``sitemap-updater rebuild --shard``, run by hand next to the function."""
    outcomes.append(Rebuilt(retrying(lambda: app.rebuild_shard(SHARD, restore=True))).value)


def publisher(app: App, delay: float) -> None:
    """The index function, starting at some moment during the race."""
    time.sleep(delay)
    retrying(app.publish_index)


def test_two_rebuild_workers_of_one_shard_never_regress_the_shard_or_the_index(
    make_pipeline: PipelineFactory,
) -> None:
    """The rebuild function and ``sitemap-updater rebuild`` (restore mode) rebuild one shard
    at once: both read the registry before either writes, the CMS commits a change between
    their reads (the function then serves that change's own request too, as its message
    group would), and the index function publishes at a random moment. Two pages only, and
    every sixth race empties the shard, so it retires, is deleted and comes back again and
    again.

    After each race the object is exactly a fresh render of the registry (or, with no live
    entry, retiring or gone) and its record describes it; across all races neither the
    shard's lastmod nor the index's lastmod for it ever goes backwards, nor the record's
    generation; the Recorder checks every object written and that no index ever names a
    missing shard; and in the end the site lists exactly the live pages."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=10)
    serialised = Serialised()
    serialised.app(pipeline.app)
    serialised.client(pipeline.s3)
    serialised.client(pipeline.sqs)
    clock = TickingClock()
    settings = pipeline.app.settings
    workers = [worker_app(settings, clock, serialised) for _ in range(2)]
    function_app, operator_app = workers
    indexer = worker_app(settings, clock, serialised)
    recorder = Recorder(pipeline)
    watch = Watch()
    for app in (*workers, indexer):
        recorder.watch(app)
        watch.attach(app)
    rng = random.Random(20261121)  # the schedule, drawn in this thread only
    cms = Cms(pipeline.app, random.Random(1), ["/a", "/b"])
    cms.change()
    function_app.rebuild_shard(SHARD)
    generations: list[int] = []
    outcomes: list[str] = []

    for race in range(RACES):
        # Every sixth race empties the shard and the next two change nothing, so it retires,
        # the index stops naming it and it is deleted, whatever the threads' timing; the
        # other races change a page, or (sometimes) nothing.
        step = race % 6
        commit = Cms.empty if step == 0 else None if step in (1, 2) else Cms.change
        if step > 2 and rng.random() < 0.1:
            commit = None
        gate = Gate(random.Random(rng.random()), commit)
        first = rng.randrange(2)
        for number, app in enumerate(workers):
            gate.arm(app, first=number == first)
        run_threads(
            [
                partial(function, function_app, gate.commit is not None, outcomes),
                partial(operator, operator_app, outcomes),
                partial(gate.cms, cms),
                partial(publisher, indexer, rng.uniform(0, 0.004)),
            ]
        )
        for app in workers:  # disarm: plain reads until the next race
            del app.registry.shard_output, app.registry.shard_entries

        entries = pipeline.app.registry.shard_entries(SHARD)
        output = pipeline.app.registry.shard_output(SHARD)
        stored = pipeline.objects().get(KEY)
        generations.append(output.generation)
        if entries:
            # No page of this test has alternates: each entry renders as stored.
            document = render_shard([entry for entry, _cluster in entries], settings.limits)
            assert stored == ShardFormat().body(document)
            assert output.obj is not None
            assert not output.retiring
            assert gzip.decompress(stored) == document
        else:
            assert output.retiring or output.obj is None
            assert (stored is None) == (output.obj is None)
        if output.obj is not None:
            head = pipeline.s3.head_object(Bucket=settings.bucket_name, Key=KEY)
            assert head["ETag"] == output.obj.etag
            assert head["Metadata"]["lastmod"] == output.obj.lastmod

    assert never_backwards(watch.shard_lastmods) == []
    assert never_backwards(watch.index_lastmods) == []
    assert generations == sorted(generations)
    assert {"written", "deleted", "retiring"} <= set(outcomes)  # writes and retirements
    function_app.rebuild_shard(SHARD)  # the requests still queued: the site settles
    pipeline.app.publish_index()
    listed = set(site_entries(pipeline.objects())) if "sitemap.xml" in pipeline.objects() else set()
    assert listed == {f"{SITE}{path}" for path in cms.live}
    assert recorder.violations == []


# -- robots.txt: the owner's edits while the index function refreshes it ----------------------

OWN_LINE = f"Sitemap: {SITE}/sitemap".encode()


def test_an_owners_edits_of_robots_txt_during_index_refreshes_are_never_lost(
    make_pipeline: PipelineFactory,
) -> None:
    """The owner uploads a new robots.txt (without our lines, as from their own repository)
    once per round, while the index function publishes a changed set of index files (one
    shard per index file, so robots.txt's Sitemap lines change every round). Every
    robots.txt we write must hold the owner's newest upload whole, plus only our lines; in
    some rounds the upload is forced between our read and our write (our write must be
    refused and redone), in the others it lands wherever the threads take it."""
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=1, MAX_SITEMAPS_PER_INDEX=1)
    serialised = Serialised()
    serialised.app(pipeline.app)
    serialised.client(pipeline.sqs)
    owner_s3 = serialised.client(pipeline.s3)
    indexer = worker_app(pipeline.app.settings, TickingClock(), serialised)
    recorder = Recorder(pipeline)
    recorder.watch(indexer)
    bucket = pipeline.app.settings.bucket_name
    uploads: list[bytes] = [b"User-agent: *\nDisallow: /private-0/\n"]
    owner_s3.put_object(Bucket=bucket, Key="robots.txt", Body=uploads[0])
    lost: list[str] = []
    refused: list[int] = []

    def owner_uploaded(http_response: Any, context: dict[str, Any], **_: Any) -> None:
        params = context.get("recorded_params") or {}
        if params.get("Key") == "robots.txt" and http_response.status_code == 200:
            uploads.append(params["Body"])  # in S3's order: requests are serialised

    def we_wrote(http_response: Any, context: dict[str, Any], **_: Any) -> None:
        params = context["recorded_params"]
        if params["Key"] != "robots.txt":
            return
        if http_response.status_code != 200:
            refused.append(http_response.status_code)
            return
        body: bytes = params["Body"]
        rest = body.removeprefix(uploads[-1])
        ours = [line for line in rest.splitlines() if line]
        if rest == body or not all(line.startswith(OWN_LINE) for line in ours):
            lost.append(f"wrote {body!r} over the owner's {uploads[-1]!r}")

    def stash(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["recorded_params"] = dict(params)

    owner_s3.meta.events.register("provide-client-params.s3.PutObject", stash)
    owner_s3.meta.events.register("after-call.s3.PutObject", owner_uploaded)
    indexer.store.client.meta.events.register("after-call.s3.PutObject", we_wrote)

    rng = random.Random(8)
    rounds = 15
    live: list[str] = []
    fresh = iter(range(1, 10_000))
    start = threading.Barrier(2, timeout=BARRIER_SECONDS)
    real_get = type(indexer.store).get.__get__(indexer.store)
    site = pipeline.app.settings.site

    for round_number in range(rounds):
        forced = round_number % 3 == 0
        read, uploaded = threading.Event(), threading.Event()
        jitter = rng.uniform(0, 0.03)

        def get_robots(
            key: str, forced: bool = forced, read: Any = read, up: Any = uploaded
        ) -> Any:
            found = real_get(key)
            if forced and key == "robots.txt" and not read.is_set():
                read.set()
                assert up.wait(BARRIER_SECONDS)  # the owner's upload lands now
            return found

        indexer.store.get = get_robots  # type: ignore[method-assign]
        if live and rng.random() < 0.35:
            change = unpublish(live.pop(rng.randrange(len(live))), 2)
        else:
            live.append(f"/page-{next(fresh)}")
            change = publish(live[-1], 1)

        def refresh(change: dict[str, Any] = change) -> None:
            start.wait()
            parsed = parse_event(change, site)
            pipeline.app.apply_change(parsed)
            record = pipeline.app.registry.url_state(parsed.url).record
            assert record is not None
            assert record.shard is not None
            retrying(lambda: indexer.rebuild_shard(str(record.shard)))
            retrying(indexer.publish_index)
            retrying(lambda: indexer.rebuild_shard(str(record.shard)))  # a retired one goes
            retrying(indexer.publish_index)

        def owner(
            number: int = round_number + 1,
            forced: bool = forced,
            read: Any = read,
            up: Any = uploaded,
            jitter: float = jitter,
        ) -> None:
            start.wait()
            if forced:
                assert read.wait(BARRIER_SECONDS)
            else:
                time.sleep(jitter)
            body = f"User-agent: *\nDisallow: /private-{number}/\n".encode()
            owner_s3.put_object(Bucket=bucket, Key="robots.txt", Body=body)
            up.set()

        run_threads([refresh, owner])

    del indexer.store.get
    retrying(indexer.publish_index)  # the next event's refresh puts our lines back
    final = pipeline.objects()["robots.txt"]
    assert lost == []
    assert len(refused) >= rounds // 3  # every forced round was refused once, at least
    assert final.startswith(uploads[-1])
    assert uploads[-1] == f"User-agent: *\nDisallow: /private-{rounds}/\n".encode()
    index_files = sorted(
        k for k in pipeline.objects() if k.startswith("sitemap") and "pages" not in k
    )
    assert final.removeprefix(uploads[-1]) == b"\n" + b"".join(
        f"Sitemap: {SITE}/{key}\n".encode() for key in sorted(index_files, key=_index_order)
    )
    assert recorder.violations == []


def _index_order(key: str) -> int:
    return (
        1 if key == "sitemap.xml" else int(key.removeprefix("sitemap-index-").removesuffix(".xml"))
    )


# -- placement: new URLs racing into a shard while it fills and closes ------------------------


def test_urls_published_while_their_shard_closes_are_placed_exactly_once(
    make_pipeline: PipelineFactory,
) -> None:
    """Four ingest workers (each with its own cache of the open shard) publish new URLs at
    once, some of them the same event delivered twice (at-least-once) or a newer version of
    it, short and long URLs, so shards close by count and by bytes under their feet. Each
    URL must end in exactly one shard (the one its record names), no shard over its limits,
    and each shard's reserved slots and bytes exactly what its URLs hold."""
    max_urls, max_bytes = 4, 4096
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=max_urls, MAX_SHARD_BYTES=max_bytes)
    serialised = Serialised()
    serialised.app(pipeline.app)
    serialised.client(pipeline.s3)
    serialised.client(pipeline.sqs)
    clock = TickingClock()
    settings = pipeline.app.settings
    workers = [worker_app(settings, clock, serialised) for _ in range(4)]
    recorder = Recorder(pipeline)
    refused: list[int] = []  # commits a shard's condition (or another commit) turned away
    for app in workers:
        app.registry.client.meta.events.register(
            "after-call.dynamodb.TransactWriteItems",
            lambda http_response, **_: (
                refused.append(1) if http_response.status_code != 200 else None
            ),
        )
    rng = random.Random(4)
    events: list[dict[str, Any]] = []
    shares: list[list[dict[str, Any]]] = [[] for _ in workers]
    for n in range(48):
        path = f"/new-{n}" + ("-" + "x" * rng.randint(900, 1400) if n % 3 == 0 else "")
        copies = [publish(path, 1, lastmod="2026-11-20")]
        if n % 4 == 1:
            copies.append(publish(path, 1, lastmod="2026-11-20"))  # delivered twice
        if n % 6 == 2:
            copies.append(publish(path, 2, lastmod="2026-11-21", changefreq="daily"))
        # The copies of one page go to different workers: they race each other.
        for number, event in enumerate(copies):
            shares[(n + number) % len(shares)].append(event)
        events += copies
    for share in shares:
        rng.shuffle(share)
    for app in workers:  # each has read the open shard (pages-00001) before the race
        app.apply_change._open_shard("pages")
    start = threading.Barrier(len(workers), timeout=BARRIER_SECONDS)

    def ingest(app: App, share: list[dict[str, Any]]) -> Callable[[], None]:
        jitter = random.Random(rng.random())  # one per thread

        def run() -> None:
            start.wait()
            for event in share:
                change = parse_event(event, settings.site)
                retrying(lambda change=change: app.apply_change(change))
                time.sleep(jitter.uniform(0, 0.001))

        return run

    run_threads([ingest(app, share) for app, share in zip(workers, shares, strict=True)])

    items = _scan(pipeline)
    records = {i["url"]["S"]: i for i in items if i["sk"]["S"] == "URL"}
    entries = [
        i for i in items if i["pk"]["S"].startswith("SHARD#") and i["sk"]["S"].startswith("URL#")
    ]
    capacity = {
        i["pk"]["S"].removeprefix("SHARD#"): i for i in items if i["sk"]["S"] == "#CAPACITY"
    }
    urls = {parse_event(e, settings.site).url for e in events}
    assert set(records) == urls
    placed: dict[str, list[str]] = {}
    for entry in entries:
        placed.setdefault(entry["url"]["S"], []).append(entry["pk"]["S"].removeprefix("SHARD#"))
    assert {url: [records[url]["shard"]["S"]] for url in urls} == placed  # once, where recorded
    room = settings.limits.max_entry_bytes
    for shard, item in capacity.items():
        mine = [r for r in records.values() if r["shard"]["S"] == shard]
        assert int(item["slots"]["N"]) == len(mine) <= max_urls, shard
        assert int(item["reserved_bytes"]["N"]) == sum(int(r["reserved"]["N"]) for r in mine)
        assert int(item["reserved_bytes"]["N"]) <= room, shard
    for url, record in records.items():  # the newest version won, wherever it was placed
        newest = max(
            (e for e in events if parse_event(e, settings.site).url == url),
            key=lambda e: e["version"],
        )
        assert int(record["version"]["N"]) == newest["version"]
    assert len(capacity) >= len(urls) // max_urls  # shards did fill and close
    # Workers collided: every worker first meant to place into pages-00001, which holds four.
    assert refused

    for shard in sorted(capacity):
        pipeline.app.rebuild_shard(shard)
    pipeline.app.publish_index()
    objects = pipeline.objects()
    assert set(site_entries(objects)) == urls  # and each listed exactly once
    for key, body in objects.items():
        if key.startswith("sitemap-pages-"):
            assert len(gzip.decompress(body)) <= max_bytes
            assert len(shard_urls(body)) <= max_urls
    assert recorder.violations == []


def _scan(pipeline: Pipeline) -> list[dict[str, Any]]:
    client = pipeline.app.registry.client
    pages = client.get_paginator("scan").paginate(TableName=pipeline.app.settings.table_name)
    return [item for page in pages for item in page.get("Items", [])]
