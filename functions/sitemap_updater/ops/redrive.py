"""``sitemap-updater redrive``: move dead letters back to the queues they came from.

SQS's own StartMessageMoveTask would do this server-side, but it is not available
everywhere this command runs (moto, hence ``local``, lacks it), so the move is done here:
receive up to ten, send them to the source queue (ten to a request, and at most 256 KiB
per request, as ``send`` does), delete the ones sent. It is at least
once: a crash between send and delete leaves a copy in the dead-letter queue, and every
function here is idempotent, so a repeat does no harm.

* FIFO messages keep their MessageGroupId (the shard, or ``index``) and get a new
  deduplication id derived from the dead letter's id, so a retried move within SQS's
  five-minute window is not sent twice.
* The diagnostic attributes the ingest function adds (``reason``, ``reason_code``,
  ``source_message_id``) are dropped: they describe the failure that is being retried.
* Only the messages present when the move starts are moved (at most ``--max-messages``),
  and none twice: a dead letter that is a message this move sent (the same message id, as
  SQS's redrive policy keeps it, or the ingest function's ``source_message_id``) failed
  again during the move. It stays in the dead-letter queue, visible, and is counted as
  ``returned``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sitemap_updater.adapters.queues import (
    REASON_ATTRIBUTE,
    REASON_CODE_ATTRIBUTE,
    SOURCE_ATTRIBUTE,
)
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.progress import Progress
from sitemap_updater.ops.resolve import QueuePair, resolve
from sitemap_updater.ops.send import MAX_BATCH_ENTRIES, entry_bytes, error_code, sized_batches

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

DIAGNOSTIC_ATTRIBUTES = {REASON_ATTRIBUTE, REASON_CODE_ATTRIBUTE, SOURCE_ATTRIBUTE}
VISIBILITY_SECONDS = 120  # how long a received dead letter stays hidden while it is moved


@dataclass
class Moved:
    queue: str
    dlq_url: str
    source_url: str
    waiting: int  # in the dead-letter queue when the move started
    in_flight: int = 0  # received by someone else: back after their visibility timeout
    moved: int = 0
    failed: list[str] = field(default_factory=list)
    returned: list[str] = field(default_factory=list)  # ids of dead letters this move sent
    interrupted: bool = False  # Ctrl-C: the move stopped there


def _sent_by(message: Any, sent_ids: set[str]) -> bool:
    """Whether a dead letter is a message this move sent, failed again: SQS's redrive policy
    keeps the message id; the ingest function names it in ``source_message_id``."""
    source = message.get("MessageAttributes", {}).get(SOURCE_ATTRIBUTE, {})
    return message["MessageId"] in sent_ids or source.get("StringValue") in sent_ids


def approximate_counts(sqs: SQSClient, queue_url: str) -> tuple[int, int]:
    """(visible, in flight) messages of a queue."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes.get("ApproximateNumberOfMessages", "0")),
        int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
    )


def _entry(number: int, message: Any, fifo: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"Id": str(number), "MessageBody": message["Body"]}
    attributes = {
        name: {
            key: value[key] for key in ("DataType", "StringValue", "BinaryValue") if key in value
        }
        for name, value in message.get("MessageAttributes", {}).items()
        if name not in DIAGNOSTIC_ATTRIBUTES
    }
    if attributes:
        entry["MessageAttributes"] = attributes
    if fifo:
        entry["MessageGroupId"] = message["Attributes"]["MessageGroupId"]
        entry["MessageDeduplicationId"] = hashlib.sha256(
            f"redrive\x1f{message['MessageId']}".encode()
        ).hexdigest()
    return entry


def move(sqs: SQSClient, report: Moved, budget: int, progress: Progress) -> None:
    """Move up to ``budget`` messages from the dead-letter queue to the source queue.

    The sends are cut by bytes as well as count (ten large dead letters do not fit one
    request). A message SQS did not take, alone or with its whole request, is reported and
    made visible again when the move ends (not left hidden for the visibility timeout, nor
    received again and counted twice by this move). So is one this move sent that failed
    again and is back already: it is not sent a second time.

    Ctrl-C stops the move at once and leaves each message it holds moved or visible again:
    those sent are deleted from the dead-letter queue (not left there to be sent again), the
    others are released; ``report.interrupted`` says so.
    """
    fifo = report.source_url.endswith(".fifo")
    unmoved: list[str] = []  # receipt handles of messages that were not sent
    sent_ids: set[str] = set()  # the source queue's ids of the messages sent
    try:
        while report.moved + len(report.failed) < budget:
            messages = sqs.receive_message(
                QueueUrl=report.dlq_url,
                MaxNumberOfMessages=min(10, budget - report.moved - len(report.failed)),
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
                VisibilityTimeout=VISIBILITY_SECONDS,
                WaitTimeSeconds=1,
            ).get("Messages", [])
            if not messages:
                return
            progress.advance(len(messages))
            for message in [m for m in messages if _sent_by(m, sent_ids)]:
                messages.remove(message)
                unmoved.append(message["ReceiptHandle"])
                if message["MessageId"] not in report.returned:
                    report.returned.append(message["MessageId"])
            if not messages:
                continue
            entries = [_entry(n, message, fifo) for n, message in enumerate(messages)]
            sent: list[int] = []
            settled: set[int] = set()  # sent, or refused (and so already in unmoved)
            try:
                for batch in sized_batches(entries, entry_bytes):
                    refused: list[tuple[int, str, str]] = []
                    try:
                        response = sqs.send_message_batch(
                            QueueUrl=report.source_url,
                            Entries=batch,  # type: ignore[arg-type]
                        )
                    except ClientError as exc:  # the whole request refused: none of it was sent
                        code, text = error_code(exc)
                        refused = [(int(entry["Id"]), code, text) for entry in batch]
                    else:
                        successful = response.get("Successful", [])
                        sent.extend(int(item["Id"]) for item in successful)
                        sent_ids.update(item["MessageId"] for item in successful)
                        refused = [
                            (int(item["Id"]), item.get("Code", "?"), item.get("Message", ""))
                            for item in response.get("Failed", [])
                        ]
                    settled.update(sent)
                    for number, code, text in refused:
                        message = messages[number]
                        report.failed.append(f"{message['MessageId']}: {code}: {text}")
                        unmoved.append(message["ReceiptHandle"])
                        settled.add(number)
            except KeyboardInterrupt:  # the ones sent are deleted below; the rest released
                report.interrupted = True
                unmoved.extend(
                    message["ReceiptHandle"]
                    for number, message in enumerate(messages)
                    if number not in settled
                )
            report.moved += _delete(sqs, report, [messages[number] for number in sorted(sent)])
            if report.interrupted:
                return
    except KeyboardInterrupt:  # while receiving or deleting: what this move holds is released
        report.interrupted = True
    finally:
        _release(sqs, report.dlq_url, unmoved)


def _delete(sqs: SQSClient, report: Moved, done: list[Any]) -> int:
    """Delete the sent messages from the dead-letter queue; how many were deleted. One not
    deleted is a failure: its copy stays there and the next redrive would send it again."""
    if not done:
        return 0
    failures: list[tuple[Any, str, str]]
    try:
        response = sqs.delete_message_batch(
            QueueUrl=report.dlq_url,
            Entries=[
                {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]}
                for n, message in enumerate(done)
            ],
        )
    except ClientError as exc:
        code, text = error_code(exc)
        failures = [(message, code, text) for message in done]
    else:
        failures = [
            (done[int(item["Id"])], item.get("Code", "?"), item.get("Message", ""))
            for item in response.get("Failed", [])
        ]
    for message, code, text in failures:
        report.failed.append(
            f"{message['MessageId']}: sent, but not deleted from the dead-letter queue (a copy "
            f"stays there and would be sent again): {code}: {text}"
        )
    return len(done) - len(failures)


def _release(sqs: SQSClient, queue_url: str, handles: list[str]) -> None:
    """Make messages that were not moved visible again at once, for the next run. Best
    effort: one this fails for is visible again after VISIBILITY_SECONDS anyway."""
    for start in range(0, len(handles), MAX_BATCH_ENTRIES):
        try:
            sqs.change_message_visibility_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                    for n, handle in enumerate(handles[start : start + MAX_BATCH_ENTRIES])
                ],
            )
        except ClientError as exc:  # said, not raised: the move's own report comes first
            code, text = error_code(exc)
            print(
                f"redrive: {len(handles[start : start + MAX_BATCH_ENTRIES])} unmoved "
                f"message(s) stay hidden for {VISIBILITY_SECONDS} s: {code}: {text}",
                file=sys.stderr,
            )


def run(args: argparse.Namespace) -> int:
    if args.max_messages is not None and args.max_messages < 1:
        raise UserError("--max-messages must be at least 1")
    deployment = resolve(args)
    known = deployment.queues()
    chosen = set(args.queue or [pair.name for pair in known])
    pairs: list[QueuePair] = [pair for pair in known if pair.name in chosen]
    if "indexnow" in chosen and not any(pair.name == "indexnow" for pair in pairs):
        raise UserError("indexnow: this deployment has no IndexNow queue (INDEXNOW_KEY is empty)")
    for pair in pairs:
        if not pair.url or not pair.dlq_url:
            missing = "the queue" if not pair.url else "its dead-letter queue"
            raise UserError(
                f"{pair.name}: {missing} is unknown (give --stack, or --{pair.name}-queue-url "
                f"and --{pair.name}-dlq-url)"
            )
    sqs = deployment.sqs
    reports = [
        Moved(
            pair.name, str(pair.dlq_url), str(pair.url), *approximate_counts(sqs, str(pair.dlq_url))
        )
        for pair in pairs
    ]
    if not args.dry_run:
        total = sum(r.waiting for r in reports)
        with Progress("redrive", total=total) as progress:
            for report in reports:
                budget = min(report.waiting, args.max_messages or report.waiting)
                move(sqs, report, budget, progress)
                if report.interrupted:
                    break
    lines: list[str] = []
    for report in reports:
        lines.extend(f"failed {report.queue}: {failure}" for failure in report.failed)
        if report.in_flight:
            lines.append(
                f"{report.queue}: {report.in_flight:,} more message(s) in flight (being read "
                "elsewhere); run again once they are visible"
            )
        if args.dry_run:
            would = min(report.waiting, args.max_messages or report.waiting)
            capped = f" (--max-messages) of {report.waiting:,}" if would < report.waiting else ""
            lines.append(
                f"{report.queue}: {would:,}{capped} message(s) in {report.dlq_url} "
                f"would move to {report.source_url}"
            )
        else:
            lines.append(
                f"{report.queue}: moved {report.moved:,} of {report.waiting:,} message(s) from "
                f"{report.dlq_url} to {report.source_url}"
                + (f"; {len(report.failed):,} failed" if report.failed else "")
            )
        if report.interrupted:
            lines.append(
                f"{report.queue}: interrupted after moving {report.moved:,}; the messages not "
                "moved are in the dead-letter queue, visible again: run the same command to "
                "move them"
            )
        if report.returned:
            lines.append(
                f"{report.queue}: {len(report.returned):,} moved message(s) failed again during "
                "the move and are back in the dead-letter queue (not sent twice); see their "
                "reason before the next run"
            )
    if args.dry_run:
        lines.append("redrive --dry-run: nothing moved")
    print("\n".join(lines), flush=True)
    if args.json:
        print(json.dumps({"dry_run": args.dry_run, "queues": [vars(r) for r in reports]}))
    if any(report.interrupted for report in reports):
        return 130
    return 1 if any(report.failed for report in reports) else 0
