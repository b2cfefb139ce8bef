"""``sitemap-updater redrive``: dead letters back to their source queues, once each."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sitemap_updater.cli import main
from sitemap_updater.local.stack import LocalQueue
from sitemap_updater.ops.resolve import Deployment
from tests.integration.conftest import STACK, publish, site_entries
from tests.pipeline import Pipeline


def redrive(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    status = main(["redrive", *argv, *STACK, "--json"])
    out = capsys.readouterr().out.splitlines()
    return status, {q["queue"]: q for q in json.loads(out[-1])["queues"]}


def dead_letter_rebuilds(pipeline: Pipeline, queue: LocalQueue, shards: list[str]) -> None:
    """What the rebuild queue's redrive policy would have moved there after five failures."""
    for number, shard in enumerate(shards):
        pipeline.sqs.send_message(
            QueueUrl=queue.dlq_url,
            MessageBody=json.dumps({"shard": shard}),
            MessageGroupId=shard,
            MessageDeduplicationId=f"failed-{number}",
        )


def depth(pipeline: Pipeline, url: str) -> int:
    attributes = pipeline.sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


def test_dry_run_counts_and_moves_nothing(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    rebuild = deployed.stack.queues["rebuild"]
    dead_letter_rebuilds(deployed, rebuild, ["pages-00001", "pages-00002"])
    status = main(["redrive", "--dry-run", *STACK])
    out = capsys.readouterr().out
    assert status == 0
    assert f"rebuild: 2 message(s) in {rebuild.dlq_url} would move to {rebuild.url}" in out
    assert "ingest: 0 message(s)" in out
    assert out.rstrip().endswith("redrive --dry-run: nothing moved")
    assert depth(deployed, rebuild.dlq_url) == 2
    assert main(["redrive", "--dry-run", "--max-messages", "1", *STACK]) == 0
    out = capsys.readouterr().out
    assert f"rebuild: 1 (--max-messages) of 2 message(s) in {rebuild.dlq_url} would move" in out
    assert depth(deployed, rebuild.dlq_url) == 2


def test_fifo_dead_letters_go_back_to_their_queue_in_their_message_group(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    rebuild = deployed.stack.queues["rebuild"]
    dead_letter_rebuilds(deployed, rebuild, ["pages-00001"])

    status, queues = redrive(capsys, "--queue", "rebuild")

    assert status == 0
    assert set(queues) == {"rebuild"}
    assert (queues["rebuild"]["waiting"], queues["rebuild"]["moved"]) == (1, 1)
    assert depth(deployed, rebuild.dlq_url) == 0
    (message,) = deployed.sqs.receive_message(
        QueueUrl=rebuild.url, MessageSystemAttributeNames=["All"], VisibilityTimeout=0
    )["Messages"]
    assert message["Attributes"]["MessageGroupId"] == "pages-00001"
    assert json.loads(message["Body"]) == {"shard": "pages-00001"}


def test_a_fixed_event_is_applied_and_one_that_fails_again_is_not_looped(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest = deployed.stack.queues["ingest"]
    deployed.send(["{broken", json.dumps(publish("/ok", 1))])
    deployed.drain()
    deployed.sqs.send_message(QueueUrl=ingest.dlq_url, MessageBody=json.dumps(publish("/b", 1)))
    assert depth(deployed, ingest.dlq_url) == 2

    status, queues = redrive(capsys, "--queue", "ingest")
    assert status == 0
    assert (queues["ingest"]["waiting"], queues["ingest"]["moved"]) == (2, 2)
    moved = deployed.sqs.receive_message(
        QueueUrl=ingest.url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        VisibilityTimeout=0,
    )["Messages"]
    assert sorted(m["Body"] for m in moved) == sorted(["{broken", json.dumps(publish("/b", 1))])
    assert all("MessageAttributes" not in m for m in moved)  # the old reason is not carried
    deployed.drain()
    assert set(site_entries(deployed.objects())) == {
        "https://www.example.com/ok",
        "https://www.example.com/b",
    }
    (again,) = deployed.dead_letters()  # rejected again, with a fresh reason
    assert again["Body"] == "{broken"
    assert again["MessageAttributes"]["reason_code"]["StringValue"] == "malformed_json"


def test_redrive_names_the_reasons_and_warns_of_dead_letters_rejected_for_good(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    ingest = deployed.stack.queues["ingest"]
    deployed.send(["{broken", "{broken too"])
    deployed.drain()
    deployed.sqs.send_message(QueueUrl=ingest.dlq_url, MessageBody=json.dumps(publish("/b", 1)))
    capsys.readouterr()  # the handlers' metrics
    warning = (
        "ingest: {} dead letters rejected for good (2 malformed_json): they are rejected again "
        "unless their sender, the code or the settings changed since"
    )
    assert main(["redrive", "--dry-run", "--queue", "ingest", *STACK]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("  ingest: 2 malformed_json, e.g. {broken (not JSON: ")
    assert out[2] == f"  ingest: 1 retries_exhausted, e.g. {json.dumps(publish('/b', 1))}"
    assert out[3] == warning.format("would move")
    assert main(["redrive", "--queue", "ingest", *STACK, "--json"]) == 0
    *lines, summary = capsys.readouterr().out.splitlines()
    assert warning.format("moved") in lines
    assert json.loads(summary)["queues"][0]["rejected_for_good"] == {"malformed_json": 2}


def test_max_messages_moves_only_that_many(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    rebuild = deployed.stack.queues["rebuild"]
    dead_letter_rebuilds(deployed, rebuild, ["pages-00001", "pages-00002", "pages-00003"])
    status, queues = redrive(capsys, "--queue", "rebuild", "--max-messages", "2")
    assert (status, queues["rebuild"]["moved"]) == (0, 2)
    assert depth(deployed, rebuild.dlq_url) == 1


def visible_and_hidden(pipeline: Pipeline, url: str) -> tuple[int, int]:
    attributes = pipeline.sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


class Wrapped:
    """The deployment's SQS client with some calls replaced."""

    def __init__(self, client: Any, **replaced: Any) -> None:
        self._client = client
        self._replaced = replaced

    def __getattr__(self, name: str) -> Any:
        return self._replaced.get(name) or getattr(self._client, name)


def wrap_sqs(monkeypatch: pytest.MonkeyPatch, **replaced: Any) -> dict[str, Any]:
    """Replace calls of the commands' SQS client; clear the dict returned to stop."""

    def sqs(deployment: Deployment) -> Any:
        return Wrapped(deployment.client("sqs"), **replaced)

    monkeypatch.setattr(Deployment, "sqs", property(sqs))
    return replaced


def test_ten_large_dead_letters_are_sent_back_in_requests_that_fit(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ten ~230 KB events fit one receive but not one SendMessageBatch."""
    ingest = deployed.stack.queues["ingest"]
    bodies = [json.dumps({**publish(f"/big{n}", 1), "pad": "x" * 230_000}) for n in range(10)]
    for body in bodies:
        deployed.sqs.send_message(QueueUrl=ingest.dlq_url, MessageBody=body)

    status, queues = redrive(capsys, "--queue", "ingest")

    assert status == 0
    assert (queues["ingest"]["moved"], queues["ingest"]["failed"]) == (10, [])
    assert visible_and_hidden(deployed, ingest.dlq_url) == (0, 0)
    assert visible_and_hidden(deployed, ingest.url) == (10, 0)


def test_a_request_sqs_refuses_is_reported_and_its_messages_are_visible_again_at_once(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rebuild = deployed.stack.queues["rebuild"]
    dead_letter_rebuilds(deployed, rebuild, ["pages-00001", "pages-00002"])

    def refuse(**_: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "BatchRequestTooLong", "Message": "too long"}}, "SendMessageBatch"
        )

    replaced = wrap_sqs(monkeypatch, send_message_batch=refuse)
    status, queues = redrive(capsys, "--queue", "rebuild")

    assert status == 1
    assert queues["rebuild"]["moved"] == 0
    assert len(queues["rebuild"]["failed"]) == 2
    assert all("BatchRequestTooLong: too long" in f for f in queues["rebuild"]["failed"])
    assert visible_and_hidden(deployed, rebuild.dlq_url) == (2, 0)  # not hidden for 120 s
    replaced.clear()
    status, queues = redrive(capsys, "--queue", "rebuild")  # the next run moves them
    assert (status, queues["rebuild"]["moved"]) == (0, 2)


def test_a_dead_letter_sent_but_not_deleted_is_a_failure(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rebuild = deployed.stack.queues["rebuild"]
    dead_letter_rebuilds(deployed, rebuild, ["pages-00001"])

    def not_deleted(QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        return {
            "Successful": [],
            "Failed": [
                {"Id": e["Id"], "Code": "ReceiptHandleIsInvalid", "SenderFault": True}
                for e in Entries
            ],
        }

    wrap_sqs(monkeypatch, delete_message_batch=not_deleted)
    status, queues = redrive(capsys, "--queue", "rebuild")

    assert status == 1
    assert queues["rebuild"]["moved"] == 0
    (failure,) = queues["rebuild"]["failed"]
    assert "not deleted from the dead-letter queue" in failure
    assert "ReceiptHandleIsInvalid" in failure


def test_a_moved_event_that_fails_again_during_the_move_is_not_sent_twice(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingest function rejects a moved event again while the move goes on (its dead
    letter names the moved message in ``source_message_id``), and the dead-letter queue's
    count was high (it is approximate): the move does not send the event a second time."""
    ingest = deployed.stack.queues["ingest"]
    deployed.sqs.send_message(QueueUrl=ingest.dlq_url, MessageBody="{broken")
    real = deployed.sqs
    sends: list[str] = []

    def rejected_again(QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        response = real.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)
        for entry, item in zip(Entries, response["Successful"], strict=True):
            sends.append(entry["MessageBody"])
            real.send_message(
                QueueUrl=ingest.dlq_url,
                MessageBody=entry["MessageBody"],
                MessageAttributes={
                    "reason_code": {"DataType": "String", "StringValue": "malformed_json"},
                    "source_message_id": {"DataType": "String", "StringValue": item["MessageId"]},
                },
            )
        return response

    def overcounted(**kwargs: Any) -> Any:
        response = real.get_queue_attributes(**kwargs)
        response["Attributes"]["ApproximateNumberOfMessages"] = "3"
        return response

    wrap_sqs(monkeypatch, send_message_batch=rejected_again, get_queue_attributes=overcounted)
    status = main(["redrive", "--queue", "ingest", *STACK, "--json"])
    *lines, report = capsys.readouterr().out.splitlines()

    assert sends == ["{broken"]  # once, not again when it came back
    assert status == 0
    (queue,) = json.loads(report)["queues"]
    assert queue["moved"] == 1
    assert len(queue["returned"]) == 1
    assert "ingest: 1 moved message(s) failed again during the move" in "\n".join(lines)
    assert visible_and_hidden(deployed, ingest.dlq_url) == (1, 0)  # back, and visible at once


def test_ctrl_c_during_the_move_leaves_each_message_moved_or_visible_and_says_so(
    deployed: Pipeline, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten large dead letters go back one request each; Ctrl-C comes during the second. The
    one sent is deleted from the dead-letter queue (not left to be sent again), the nine not
    sent are visible there at once (not hidden for two minutes), and the report says so."""
    ingest = deployed.stack.queues["ingest"]
    for n in range(10):
        body = json.dumps({**publish(f"/big{n}", 1), "pad": "x" * 230_000})
        deployed.sqs.send_message(QueueUrl=ingest.dlq_url, MessageBody=body)
    real = deployed.sqs
    calls: list[int] = []

    def interrupted(QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
        calls.append(len(Entries))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real.send_message_batch(QueueUrl=QueueUrl, Entries=Entries)

    wrap_sqs(monkeypatch, send_message_batch=interrupted)
    status = main(["redrive", "--queue", "ingest", *STACK, "--json"])
    *lines, report = capsys.readouterr().out.splitlines()

    assert status == 130
    (queue,) = json.loads(report)["queues"]
    assert (queue["moved"], queue["failed"], queue["interrupted"]) == (1, [], True)
    assert visible_and_hidden(deployed, ingest.url) == (1, 0)
    assert visible_and_hidden(deployed, ingest.dlq_url) == (9, 0)
    assert "ingest: interrupted after moving 1" in "\n".join(lines)
