"""A dead letter fits SQS's message limit: the event whole, its reason as far as room allows."""

from __future__ import annotations

from typing import Any

import pytest

from sitemap_updater.adapters.queues import IndexNowQueue, IngestInbox, Queues, reason_attributes
from sitemap_updater.resources import MAX_MESSAGE_BYTES


class StrictSqs:
    """Refuses what SQS refuses: body and attributes (name, type and value) over 1 MiB."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **request: Any) -> dict[str, str]:
        size = len(request["MessageBody"].encode("utf-8"))
        for name, value in request.get("MessageAttributes", {}).items():
            size += len(name) + len(value["DataType"]) + len(value["StringValue"].encode("utf-8"))
        if size > MAX_MESSAGE_BYTES:
            raise ValueError(f"InvalidParameterValue: message of {size} bytes")
        self.sent.append(request)
        return {"MessageId": "m"}


def attributes_of(request: dict[str, Any]) -> dict[str, str]:
    return {name: value["StringValue"] for name, value in request["MessageAttributes"].items()}


def queues(sqs: StrictSqs) -> Queues:
    return Queues("rebuild.fifo", "index.fifo", "ingest-dlq", client=sqs)  # type: ignore[arg-type]


def test_a_small_event_is_parked_with_its_code_id_and_whole_reason() -> None:
    sqs = StrictSqs()
    queues(sqs).dead_letter('{"url": 1}', "invalid_url", "url must be a string", "id-1")
    (request,) = sqs.sent
    assert request["MessageBody"] == '{"url": 1}'
    assert attributes_of(request) == {
        "reason_code": "invalid_url",
        "source_message_id": "id-1",
        "reason": "url must be a string",
    }


@pytest.mark.parametrize(
    ("room", "kept"),
    [
        (4000, {"reason_code", "source_message_id", "reason"}),  # the reason whole
        (400, {"reason_code", "source_message_id", "reason"}),  # the reason cut
        (60, {"reason_code", "source_message_id"}),
        (40, {"reason_code"}),
        (0, set()),
    ],
)
def test_an_event_near_the_limit_is_parked_whole_with_what_fits_of_why(
    room: int, kept: set[str]
) -> None:
    """A body_too_large event may be up to 1 MiB: the reason's attributes must not push the
    message over, or the send fails, the event is retried five times and parked unexplained."""
    sqs = StrictSqs()
    body = "x" * (MAX_MESSAGE_BYTES - room)
    reason = "body is 1048000 bytes, over 262144 " + "é" * 600

    queues(sqs).dead_letter(body, "body_too_large", reason, "id-2")

    (request,) = sqs.sent
    assert request["MessageBody"] == body  # never cut
    attributes = attributes_of(request)
    assert set(attributes) == kept
    assert attributes.get("reason_code", "body_too_large") == "body_too_large"
    assert attributes.get("source_message_id", "id-2") == "id-2"
    assert reason.startswith(attributes.get("reason", ""))
    assert (attributes.get("reason") == reason) == (room == 4000)


def test_a_reason_is_cut_between_characters_never_inside_one() -> None:
    attributes = reason_attributes(MAX_MESSAGE_BYTES - 100, "c", "i", "é" * 100)
    used = sum(
        len(name) + len("String") + len(value["StringValue"].encode("utf-8"))
        for name, value in attributes.items()
    )
    assert used <= 100
    assert set(attributes["reason"]["StringValue"]) == {"é"}


def test_indexnow_dead_letters_fit_the_same_way() -> None:
    sqs = StrictSqs()
    queue = IndexNowQueue("indexnow", "indexnow-dlq", client=sqs)  # type: ignore[arg-type]
    body = "y" * (MAX_MESSAGE_BYTES - 50)
    queue.dead_letter(body, "indexnow_refused", "HTTP 422 " + "z" * 1000, "id-3")
    (request,) = sqs.sent
    assert request["MessageBody"] == body


def test_a_webhook_body_over_the_limit_is_parked_cut_and_says_so() -> None:
    sqs = StrictSqs()
    body = '{"post": "' + "caf\u00e9 " * 400_000 + '"}'  # 2.4 MB: a function URL takes 6
    queues(sqs).dead_letter(body, "malformed_json", "not JSON", "wp:r1")
    (request,) = sqs.sent
    kept = request["MessageBody"]
    assert body.startswith(kept)  # cut between characters, room left for why
    assert MAX_MESSAGE_BYTES - 8192 - 4 < len(kept.encode()) <= MAX_MESSAGE_BYTES - 8192
    reason = attributes_of(request)["reason"]
    cut, whole = len(kept.encode()), len(body.encode())
    assert reason == f"not JSON (the body cut to its first {cut:,} of {whole:,} bytes)"
    assert attributes_of(request)["reason_code"] == "malformed_json"


class BatchSqs:
    """Refuses a SendMessageBatch of more than ten entries or 256 KiB of bodies."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        if len(Entries) > 10 or sum(len(e["MessageBody"].encode()) for e in Entries) > 262_144:
            raise ValueError("BatchRequestTooLong")
        self.batches.append([e["MessageBody"] for e in Entries])
        return {"Successful": [{"Id": e["Id"]} for e in Entries]}


def test_events_are_queued_in_batches_sqs_takes() -> None:
    sqs = BatchSqs()
    bodies = [f'{{"n": {n}, "pad": "{"x" * 60_000}"}}' for n in range(9)] + ["{}"] * 12
    IngestInbox("ingest", "ingest-dlq", client=sqs).send(bodies)  # type: ignore[arg-type]
    assert [body for batch in sqs.batches for body in batch] == bodies
    assert [len(batch) for batch in sqs.batches] == [4, 4, 10, 3]


def test_a_cut_body_says_so_whatever_the_length_of_its_reason() -> None:
    sqs = StrictSqs()
    queues(sqs).dead_letter("x" * 3_000_000, "unmappable_payload", "why " * 400, "wp:r2")
    reason = attributes_of(sqs.sent[0])["reason"]
    assert reason.startswith("why why")
    assert reason.endswith(f" of {3_000_000:,} bytes)")
