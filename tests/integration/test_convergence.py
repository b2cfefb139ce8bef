"""Invariants 1 and 2: convergence to the newest events, and ordering by version."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from sitemap_updater.adapters.registry import url_key
from tests.conftest import SITE, FakeClock
from tests.integration.conftest import (
    FaultInjector,
    PipelineFactory,
    Recorder,
    publish,
    site_entries,
    unpublish,
)
from tests.pipeline import Pipeline

Fields = dict[str, str | None]


def expected_site(events: list[dict[str, Any]]) -> dict[str, Fields]:
    """The model: for each URL its newest event; published URLs with that event's fields."""
    newest: dict[str, dict[str, Any]] = {}
    for event in events:
        current = newest.get(event["url"])
        if current is None or event["version"] > current["version"]:
            newest[event["url"]] = event
    return {
        url: {
            "lastmod": event.get("lastmod"),
            "changefreq": event.get("changefreq"),
            "priority": event.get("priority"),
        }
        for url, event in newest.items()
        if event["type"] == "publish"
    }


def random_history(rng: random.Random, urls: int = 10, changes: int = 5) -> list[dict[str, Any]]:
    """Each URL's changes, versions growing; publish, update, unpublish and republish mixed."""
    events = []
    for number in range(urls):
        path = f"/page-{number}"
        for version in range(1, rng.randint(1, changes) + 1):
            if rng.random() < 0.3:
                events.append(unpublish(path, version))
                continue
            fields: dict[str, Any] = {}
            if rng.random() < 0.7:
                fields["lastmod"] = f"2026-11-{rng.randint(1, 28):02d}"
            if rng.random() < 0.5:
                fields["changefreq"] = rng.choice(["daily", "weekly", "monthly"])
            if rng.random() < 0.5:
                fields["priority"] = rng.choice(["0.3", "0.5", "0.8"])
            event = publish(path, version, **fields)
            if "priority" in fields:
                event["priority"] = float(fields["priority"])
            events.append(event)
    return events


def normalised(event: dict[str, Any]) -> dict[str, Any]:
    copy = dict(event)
    if "priority" in copy:
        copy["priority"] = str(copy["priority"])
    return copy


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_delivery_order_with_duplicates_converges_to_the_newest_events(
    make_pipeline: PipelineFactory, seed: int
) -> None:
    rng = random.Random(seed)
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=3)
    recorder = Recorder(pipeline)
    history = random_history(rng)
    deliveries = history + [rng.choice(history) for _ in range(len(history) // 2)]
    rng.shuffle(deliveries)
    # Deliver in rounds, draining between them: late, older events arrive after newer ones
    # were fully processed, not only within one batch.
    cut = len(deliveries) // 2
    for part in (deliveries[:cut], deliveries[cut:]):
        pipeline.send_events(part)
        pipeline.drain()

    assert site_entries(pipeline.objects()) == expected_site([normalised(e) for e in history])
    assert pipeline.function_errors == 0
    assert pipeline.dead_letters() == []
    assert recorder.violations == []


# Every step at which a Lambda can die: before a call reaches AWS, or after it succeeded
# but before the code saw the answer (a timeout after the write). Each is hit at its first
# and at a later occurrence.
CRASH_POINTS = [
    (operation, after, occurrence)
    for operation, after in [
        ("GetItem", False),
        ("TransactWriteItems", False),
        ("TransactWriteItems", True),
        ("SendMessageBatch", False),
        ("SendMessageBatch", True),
        ("Query", False),
        ("PutObject", False),
        ("PutObject", True),
        ("UpdateItem", False),
        ("UpdateItem", True),
        ("SendMessage", False),
        ("SendMessage", True),
        ("GetObject", False),
    ]
    for occurrence in (1, 3)
] + [("DeleteObject", False, 1), ("DeleteObject", True, 1)]

CRASH_HISTORY = [
    publish("/a", 1, lastmod="2026-11-01"),
    publish("/b", 1),
    publish("/c", 2, changefreq="daily"),
    unpublish("/b", 2),
    publish("/a", 2, lastmod="2026-11-02"),
    publish("/d", 1),
    unpublish("/d", 5),
    unpublish("/c", 3),  # empties the second shard: it retires and is deleted
]


@pytest.mark.parametrize(("operation", "after", "occurrence"), CRASH_POINTS)
def test_a_crash_between_any_two_steps_still_converges(
    make_pipeline: PipelineFactory, operation: str, after: bool, occurrence: int
) -> None:
    pipeline = make_pipeline(MAX_URLS_PER_SHARD=2)
    recorder = Recorder(pipeline)
    faults = FaultInjector(pipeline)
    faults.fail(operation, occurrence=occurrence, after=after)
    for event in CRASH_HISTORY:  # one by one: every step of every stage runs several times
        pipeline.send_events([event])
        pipeline.drain()

    assert faults.fired, f"the {operation} fault never fired"
    objects = pipeline.objects()
    assert site_entries(objects) == expected_site(CRASH_HISTORY)
    assert "sitemap-pages-00002.xml.gz" not in objects
    assert pipeline.dead_letters() == []
    assert recorder.violations == []


def test_an_older_publish_arriving_after_an_unpublish_cannot_bring_the_page_back(
    pipeline: Pipeline,
) -> None:
    pipeline.send_events([publish("/gone", 1), unpublish("/gone", 3)])
    pipeline.drain()
    pipeline.send_events([publish("/gone", 2, lastmod="2026-11-02")])  # late and older
    pipeline.drain()
    assert "sitemap.xml" not in pipeline.objects()  # nothing is published at all
    record = pipeline.app.registry.url_state(f"{SITE}/gone").record
    assert record is not None
    assert (record.version, record.live) == (Decimal(3), False)


def test_an_unpublish_leaves_a_tombstone_that_expires(pipeline: Pipeline, clock: FakeClock) -> None:
    pipeline.send_events([publish("/t", 1), unpublish("/t", 2), unpublish("/never-published", 4)])
    pipeline.drain()
    client = pipeline.app.registry.client
    table = pipeline.app.settings.table_name
    for path in ("/t", "/never-published"):
        item = client.get_item(TableName=table, Key=url_key(f"{SITE}{path}"))["Item"]
        assert item["live"] == {"BOOL": False}
        expires = int(item["expires_at"]["N"])
        assert expires == int(clock().timestamp()) + 30 * 86_400
    # A republish is live again and no longer expires.
    pipeline.send_events([publish("/t", 3)])
    pipeline.drain()
    item = client.get_item(TableName=table, Key=url_key(f"{SITE}/t"))["Item"]
    assert "expires_at" not in item
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/t"}


def test_an_equal_version_is_a_duplicate_and_changes_nothing(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    pipeline.send_events([publish("/dup", 7, lastmod="2026-11-07")])
    pipeline.drain()
    before = pipeline.objects()
    recorder.reset()
    # Same version, other fields: a duplicate delivery, not an update.
    pipeline.send_events([publish("/dup", 7, lastmod="2030-01-01"), publish("/dup", 7)])
    pipeline.drain()
    assert recorder.puts == []
    assert pipeline.objects() == before
    assert site_entries(before)[f"{SITE}/dup"]["lastmod"] == "2026-11-07"


def test_a_stale_event_changes_nothing(pipeline: Pipeline, recorder: Recorder) -> None:
    pipeline.send_events([publish("/s", 5, priority=0.9)])
    pipeline.drain()
    recorder.reset()
    pipeline.send_events([publish("/s", 4, priority=0.1), unpublish("/s", 3)])
    pipeline.drain()
    assert recorder.puts == []
    assert recorder.count("TransactWriteItems") == 0
    assert site_entries(pipeline.objects())[f"{SITE}/s"]["priority"] == "0.9"


@pytest.mark.parametrize("after", [False, True])
def test_a_crash_after_the_shard_write_still_reaches_the_index(
    pipeline: Pipeline, faults: FaultInjector, after: bool
) -> None:
    """Found by the model-based test: the retry adopts the written object and finds nothing
    to write; it must still ask for the index, or the site is never published."""
    faults.fail("UpdateItem", occurrence=1, after=after)  # the shard record, after PutObject
    pipeline.send_events([publish("/only", 1)])
    pipeline.drain()
    assert faults.fired
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/only"}


# What AWS answers when it throttles, as botocore would raise it after its own retries ran
# out: (operation, occurrence) -> (HTTP status, error code, cancellation reasons).
THROTTLES = {
    ("TransactWriteItems", 1): (400, "TransactionCanceledException", ["ThrottlingError"]),
    ("TransactWriteItems", 2): (400, "ProvisionedThroughputExceededException", None),
    ("GetItem", 3): (400, "ThrottlingException", None),
    ("Query", 1): (400, "RequestLimitExceeded", None),
    ("PutObject", 2): (503, "SlowDown", None),
    ("GetObject", 1): (503, "SlowDown", None),
    ("SendMessageBatch", 1): (400, "RequestThrottled", None),
    ("SendMessage", 2): (400, "RequestThrottled", None),
}


def test_throttling_anywhere_is_retried_until_it_passes(clock: FakeClock) -> None:
    """DynamoDB, S3 and SQS each throttle some calls (fewer per message than
    maxReceiveCount): each throttled message fails, alone, and SQS delivers it again; the
    site converges and nothing is dead-lettered."""
    from botocore.awsrequest import AWSResponse
    from moto import mock_aws

    with mock_aws():
        pipeline = Pipeline.create(
            SITE, {"MAX_URLS_PER_SHARD": 2}, visibility_timeout=0, clock=clock, prefix="thr"
        )
        recorder = Recorder(pipeline)
        seen: dict[str, int] = {}
        fired: list[str] = []

        def throttle(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            seen[model.name] = seen.get(model.name, 0) + 1
            answer = THROTTLES.get((model.name, seen[model.name]))
            if answer is None:
                return None
            status, code, reasons = answer
            fired.append(code)
            parsed: dict[str, Any] = {
                "Error": {"Code": code, "Message": "throttled (injected)"},
                "ResponseMetadata": {"HTTPStatusCode": status},
            }
            if reasons is not None:
                parsed["CancellationReasons"] = [{"Code": reason} for reason in reasons]
            return AWSResponse("https://aws.invalid", status, {}, None), parsed

        for client in (
            pipeline.app.store.client,
            pipeline.app.registry.client,
            pipeline.app.queues.client,
        ):
            client.meta.events.register("before-call.*.*", throttle)
        for event in CRASH_HISTORY:
            pipeline.send_events([event])
            pipeline.drain()

        assert len(fired) == len(THROTTLES)
        assert site_entries(pipeline.objects()) == expected_site(CRASH_HISTORY)
        assert pipeline.dead_letters() == []
        assert pipeline.function_errors >= 1  # the SendMessageBatch: the whole batch retried
        assert recorder.violations == []
