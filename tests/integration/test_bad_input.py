"""Invariant 9: bad input never hurts good input."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from sitemap_updater.domain.records import EntityRecord
from sitemap_updater.handlers import ingest
from sitemap_updater.local.poller import FakeLambdaContext
from tests.conftest import SITE
from tests.integration.conftest import FaultInjector, Recorder, publish, site_entries
from tests.pipeline import Pipeline

BAD_BODIES = {
    "malformed_json": '{"type": "publish", "url": ',
    "not_an_object": '["https://www.example.com/x"]',
    "unknown_type": json.dumps({"type": "delete", "url": f"{SITE}/x", "version": 1}),
    "missing_field": json.dumps({"type": "publish", "url": f"{SITE}/x"}),
    "invalid_version": json.dumps({"type": "publish", "url": f"{SITE}/x", "version": "7"}),
    "url_foreign_host": json.dumps({"type": "publish", "url": "https://evil.test/x", "version": 1}),
    "url_forbidden_character": json.dumps(
        {"type": "publish", "url": f'{SITE}/"><script>alert(1)</script>', "version": 1}
    ),
    "invalid_lastmod": json.dumps(
        {"type": "publish", "url": f"{SITE}/x", "version": 1, "lastmod": "yesterday"}
    ),
    "invalid_priority": json.dumps(
        {"type": "publish", "url": f"{SITE}/x", "version": 1, "priority": 2}
    ),
    "body_too_large": json.dumps(
        {"type": "publish", "url": f"{SITE}/x", "version": 1, "pad": "x" * 300_000}
    ),
}


def dead_letters_by_reason(pipeline: Pipeline) -> dict[str, dict[str, Any]]:
    found = {}
    for message in pipeline.dead_letters():
        attributes = message.get("MessageAttributes", {})
        found[attributes["reason_code"]["StringValue"]] = {
            "reason": attributes["reason"]["StringValue"],
            "body": message["Body"],
            "queue": message["queue"],
        }
    return found


def test_each_bad_event_fails_alone_and_lands_in_the_dlq_with_its_reason(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    good = [json.dumps(publish(f"/good-{n}", 1)) for n in range(len(BAD_BODIES))]
    mixed = [body for pair in zip(good, BAD_BODIES.values(), strict=True) for body in pair]
    pipeline.send(mixed)  # every SQS batch holds good and bad records
    pipeline.drain()

    assert set(site_entries(pipeline.objects())) == {f"{SITE}/good-{n}" for n in range(10)}
    letters = dead_letters_by_reason(pipeline)
    assert set(letters) == set(BAD_BODIES)
    for code, body in BAD_BODIES.items():
        assert letters[code]["body"] == body
        assert letters[code]["queue"] == "ingest"
        assert letters[code]["reason"].startswith(f"{code}: ")
    # A fault that cannot pass is not retried, and each good event was committed once.
    assert sorted(committed_urls(recorder)) == sorted(f"{SITE}/good-{n}" for n in range(10))
    assert pipeline.function_errors == 0
    everything = b"".join(pipeline.objects().values())
    assert b"evil.test" not in everything
    assert b"script" not in everything


def transaction_urls(params: dict[str, Any]) -> list[str]:
    """The URLs whose records a TransactWriteItems call puts."""
    return [
        action["Put"]["Item"]["url"]["S"]
        for action in params.get("TransactItems", [])
        if "Put" in action and action["Put"]["Item"]["sk"]["S"] == "URL"
    ]


def committed_urls(recorder: Recorder) -> list[str]:
    """The URL of every URL record put by a registry transaction, once per put."""
    return [
        url
        for name, params in recorder.calls
        if name == "TransactWriteItems"
        for url in transaction_urls(params)
    ]


def _sqs_event(bodies: list[str]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m{n}",
                "receiptHandle": f"r{n}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:ingest",
                "awsRegion": "us-east-1",
            }
            for n, body in enumerate(bodies)
        ]
    }


def test_a_fault_that_may_pass_fails_only_its_own_record(
    pipeline: Pipeline, faults: FaultInjector
) -> None:
    def for_b(params: dict[str, Any]) -> bool:
        return f"{SITE}/b" in json.dumps(params.get("TransactItems", []))

    # Twice: the batch's one transaction (the batch then goes one by one), then /b's own.
    faults.fail("TransactWriteItems", when=for_b, times=2)
    event = _sqs_event([json.dumps(publish(path, 1)) for path in ("/a", "/b", "/c")])
    response = ingest.handler(event, FakeLambdaContext("ingest"), app_=pipeline.app)
    assert response == {"batchItemFailures": [{"itemIdentifier": "m1"}]}
    assert pipeline.app.registry.url_state(f"{SITE}/a").record is not None
    assert pipeline.app.registry.url_state(f"{SITE}/b").record is None
    assert pipeline.app.registry.url_state(f"{SITE}/c").record is not None


def test_a_fault_that_persists_dead_letters_after_max_receive_count(
    pipeline: Pipeline, faults: FaultInjector
) -> None:
    own_attempts = []

    def for_stuck(params: dict[str, Any]) -> bool:
        urls = transaction_urls(params)
        if urls == [f"{SITE}/stuck"]:
            own_attempts.append(1)
        return f"{SITE}/stuck" in urls

    faults.fail("TransactWriteItems", when=for_stuck, times=1000)
    pipeline.send_events([publish("/ok", 1), publish("/stuck", 1)])
    pipeline.drain()
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/ok"}
    letters = pipeline.dead_letters()
    assert [json.loads(m["Body"])["url"] for m in letters] == [f"{SITE}/stuck"]
    # It was tried maxReceiveCount (5) times, then SQS moved it; no reason attribute: the
    # reason is in the logs, and `local` reports it as dead-lettered.
    assert len(own_attempts) == 5
    assert "reason_code" not in letters[0].get("MessageAttributes", {})


def test_the_same_bad_event_from_an_envelope_is_rejected_the_same_way(
    pipeline: Pipeline,
) -> None:
    bad = {"type": "publish", "url": "https://evil.test/x", "version": 1}
    eventbridge = {"version": "0", "detail-type": "Page", "source": "cms", "detail": bad}
    sns = {"Type": "Notification", "TopicArn": "arn", "Message": json.dumps(eventbridge)}
    pipeline.send([json.dumps(eventbridge), json.dumps(sns)])
    pipeline.drain()
    codes = [m["MessageAttributes"]["reason_code"]["StringValue"] for m in pipeline.dead_letters()]
    assert codes == ["url_foreign_host", "url_foreign_host"]


def test_an_entry_no_registry_item_can_hold_is_rejected_for_good(
    pipeline: Pipeline, recorder: Recorder
) -> None:
    """A message under 256 KiB can hold an entry DynamoDB cannot store (an item holds 400 KB;
    non-ASCII image URLs are stored percent-encoded, three times their UTF-8 bytes). It is
    rejected with its reason, never retried, and its batch's other events are applied."""
    images = [
        {"loc": f"https://cdn.example.com/{n}/" + "\u4e2d" * 220 + ".jpg"} for n in range(360)
    ]
    huge = json.dumps({**publish("/huge", 1), "images": images}, ensure_ascii=False)
    assert len(huge.encode()) < 262_144
    small = [json.dumps(publish(f"/p{n}", 1)) for n in range(40)]
    event = _sqs_event([*small[:35], huge, *small[35:]])
    response = ingest.handler(event, FakeLambdaContext("ingest"), app_=pipeline.app)
    assert response == {"batchItemFailures": []}
    letters = dead_letters_by_reason(pipeline)
    assert set(letters) == {"entry_too_large"}
    assert "registry item holds" in letters["entry_too_large"]["reason"]
    registry = pipeline.app.registry
    assert all(registry.url_state(f"{SITE}/p{n}").record is not None for n in range(40))
    assert registry.url_state(f"{SITE}/huge").record is None
    # Each small event was committed once, in the batch's transactions.
    assert sorted(committed_urls(recorder)) == sorted(f"{SITE}/p{n}" for n in range(40))


def test_a_clustered_move_no_registry_item_can_hold_leaves_the_page_where_it_was(
    pipeline: Pipeline,
) -> None:
    """A move by id out of an hreflang cluster retires its old URL before it moves: when
    DynamoDB could never store the moved entry, nothing is retired and the page stays."""
    pipeline.send_events(
        [
            publish(
                "/a",
                1,
                id="X",
                hreflang="en",
                alternates=[{"hreflang": "de", "href": f"{SITE}/de"}],
            ),
            publish("/de", 1, hreflang="de", alternates=[{"hreflang": "en", "href": f"{SITE}/a"}]),
        ]
    )
    pipeline.drain()
    images = [
        {"loc": f"https://cdn.example.com/{n}/" + "\u4e2d" * 220 + ".jpg"} for n in range(360)
    ]
    moved = publish("/b", 2, id="X", hreflang="en", images=images)
    moved["alternates"] = [{"hreflang": "de", "href": f"{SITE}/de"}]
    pipeline.send([json.dumps(moved, ensure_ascii=False)])
    pipeline.drain()

    assert set(dead_letters_by_reason(pipeline)) == {"entry_too_large"}
    registry = pipeline.app.registry
    record = registry.url_state(f"{SITE}/a").record
    assert record is not None
    assert record.live
    assert registry.url_state(f"{SITE}/b").record is None
    assert registry.entity("X") == EntityRecord(f"{SITE}/a", Decimal(1), True)
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/a", f"{SITE}/de"}


def test_a_rejected_event_is_dead_lettered_once_when_its_batch_fails_after_it(
    pipeline: Pipeline,
) -> None:
    """The rebuild request fails: the good event is delivered again, the rejected one is
    not (its dead letter is written already)."""
    faults = FaultInjector(pipeline)
    faults.fail("SendMessageBatch")
    pipeline.send([json.dumps(publish("/ok", 1)), "{not json"])
    pipeline.drain()

    assert faults.fired
    assert set(dead_letters_by_reason(pipeline)) == {"malformed_json"}
    assert len(pipeline.dead_letters()) == 1
    assert set(site_entries(pipeline.objects())) == {f"{SITE}/ok"}
