"""``sitemap-updater redrive``: move dead letters back to the queues they came from: receive,
send, delete (moto lacks StartMessageMoveTask). At least once: every function is idempotent."""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sitemap_updater.adapters.queues import (
    MAX_BATCH_ENTRIES,
    REASON_ATTRIBUTE,
    REASON_CODE_ATTRIBUTE,
    SOURCE_ATTRIBUTE,
    entry_bytes,
    sized_batches,
)
from sitemap_updater.ops.errors import UserError, call_batch, error_code, exit_status, interruptible
from sitemap_updater.ops.progress import Progress, print_lines, print_summary
from sitemap_updater.ops.resolve import Deployment, resolve
from sitemap_updater.ops.status import (
    RETRIES_EXHAUSTED,
    dead_letter_reasons,
    reason_code,
    reason_lines,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# What the functions add to a dead letter: dropped, they describe the failure being retried.
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
    reasons: list[dict[str, Any]] = field(default_factory=list)  # --dry-run: what would move
    rejected_for_good: dict[str, int] = field(default_factory=dict)  # moved, by reason_code


def _entry(number: int, message: Any, fifo: bool) -> dict[str, Any]:
    """A FIFO message keeps its group, and its deduplication id is derived from the dead
    letter's, so a retried move within SQS's five-minute window is not sent twice."""
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
        dedup = hashlib.sha256(f"redrive\x1f{message['MessageId']}".encode())
        entry["MessageDeduplicationId"] = dedup.hexdigest()
    return entry


@dataclass
class _Mover:
    """One queue's move. Every message it receives ends moved, or visible again at the end
    (not hidden for the visibility timeout, nor received again and counted twice)."""

    sqs: SQSClient
    report: Moved
    unmoved: list[str] = field(default_factory=list)  # receipt handles to make visible again
    sent_ids: set[str] = field(default_factory=set)  # the source queue's ids of those sent

    def receive(self, count: int) -> list[Any]:
        return self.sqs.receive_message(
            QueueUrl=self.report.dlq_url,
            MaxNumberOfMessages=min(10, count),
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
            VisibilityTimeout=VISIBILITY_SECONDS,
            WaitTimeSeconds=1,
        ).get("Messages", [])

    def set_aside_returned(self, messages: list[Any]) -> list[Any]:
        """The messages this move has not sent. One it sent is back, failed again (SQS's
        redrive policy keeps the message id; the ingest function names it in
        ``source_message_id``): it stays in the dead-letter queue, not sent twice."""
        fresh = []
        for message in messages:
            source = message.get("MessageAttributes", {}).get(SOURCE_ATTRIBUTE, {})
            if message["MessageId"] in self.sent_ids or source.get("StringValue") in self.sent_ids:
                self.unmoved.append(message["ReceiptHandle"])
                if message["MessageId"] not in self.report.returned:
                    self.report.returned.append(message["MessageId"])
            else:
                fresh.append(message)
        return fresh

    def send(self, messages: list[Any]) -> None:
        """Send the messages (ten large dead letters do not fit one request), then delete the
        ones sent, after Ctrl-C too: left in the dead-letter queue, they would be sent again."""
        fifo = self.report.source_url.endswith(".fifo")
        entries = [_entry(number, message, fifo) for number, message in enumerate(messages)]
        sent: set[int] = set()
        with interruptible(self.report):
            for batch in sized_batches(entries, entry_bytes):
                taken, refused = call_batch(
                    self.sqs.send_message_batch, self.report.source_url, batch
                )
                sent.update(int(item["Id"]) for item in taken)
                self.sent_ids.update(item["MessageId"] for item in taken)
                for number, code, text in refused:
                    self.report.failed.append(f"{messages[number]['MessageId']}: {code}: {text}")
        self.unmoved.extend(m["ReceiptHandle"] for n, m in enumerate(messages) if n not in sent)
        for number in sent:
            if (code := reason_code(messages[number])) != RETRIES_EXHAUSTED:
                counts = self.report.rejected_for_good
                counts[code] = counts.get(code, 0) + 1
        self.report.moved += self._delete([messages[number] for number in sorted(sent)])

    def _delete(self, done: list[Any]) -> int:
        """How many sent messages were deleted from the dead-letter queue. One not deleted is
        a failure: its copy stays there and the next redrive would send it again."""
        if not done:
            return 0
        entries = [{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(done)]
        _, failures = call_batch(self.sqs.delete_message_batch, self.report.dlq_url, entries)
        for number, code, text in failures:
            self.report.failed.append(
                f"{done[number]['MessageId']}: sent, but not deleted from the dead-letter queue "
                f"(a copy stays there and would be sent again): {code}: {text}"
            )
        return len(done) - len(failures)

    def release(self) -> None:
        """The messages not moved visible at once (best effort: else after VISIBILITY_SECONDS)."""
        from sitemap_updater.local import poller  # noqa: PLC0415 - it logs: after resolve()

        for start in range(0, len(self.unmoved), MAX_BATCH_ENTRIES):
            handles = self.unmoved[start : start + MAX_BATCH_ENTRIES]
            try:
                poller.set_visibility(self.sqs, self.report.dlq_url, handles, 0)
            except ClientError as exc:  # said, not raised: the move's own report comes first
                code, text = error_code(exc)
                hidden = f"stay hidden for {VISIBILITY_SECONDS} s: {code}: {text}"
                print_lines([f"redrive: {len(handles)} unmoved message(s) {hidden}"], sys.stderr)


def move(sqs: SQSClient, report: Moved, budget: int, progress: Progress) -> None:
    """At most ``budget`` messages, of those there at the start: one failing again is not looped."""
    mover = _Mover(sqs, report)
    try:
        with interruptible(report):
            while (
                not report.interrupted and (left := budget - report.moved - len(report.failed)) > 0
            ):
                messages = mover.receive(left)
                if not messages:
                    break
                progress.advance(len(messages))
                mover.send(mover.set_aside_returned(messages))
    finally:
        mover.release()


def _queues(args: argparse.Namespace, deployment: Deployment) -> list[tuple[str, str, str]]:
    known = deployment.queues()
    chosen = set(args.queue or known)
    if "indexnow" in chosen and "indexnow" not in known:
        raise UserError("indexnow: this deployment has no IndexNow queue (INDEXNOW_KEY is empty)")
    for name, (url, dlq_url) in known.items():
        if name in chosen and not (url and dlq_url):
            missing = "the queue" if not url else "its dead-letter queue"
            raise UserError(
                f"{name}: {missing} is unknown (give --stack, or --{name}-queue-url "
                f"and --{name}-dlq-url)"
            )
    return [(name, str(dlq), str(url)) for name, (url, dlq) in known.items() if name in chosen]


def _budget(report: Moved, max_messages: int | None) -> int:
    return min(report.waiting, max_messages or report.waiting)


def _lines(report: Moved, args: argparse.Namespace) -> list[str]:
    queue = report.queue
    lines = [f"failed {queue}: {failure}" for failure in report.failed]
    if report.in_flight:
        lines.append(
            f"{queue}: {report.in_flight:,} more message(s) in flight (being read elsewhere); "
            "run again once they are visible"
        )
    if args.dry_run:
        would = _budget(report, args.max_messages)
        capped = f" (--max-messages) of {report.waiting:,}" if would < report.waiting else ""
        lines.append(
            f"{queue}: {would:,}{capped} message(s) in {report.dlq_url} "
            f"would move to {report.source_url}"
        )
        lines.extend(reason_lines(queue, report.reasons, report.waiting))
    else:
        lines.append(
            f"{queue}: moved {report.moved:,} of {report.waiting:,} message(s) from "
            f"{report.dlq_url} to {report.source_url}"
            + (f"; {len(report.failed):,} failed" if report.failed else "")
        )
    if report.interrupted:
        lines.append(
            f"{queue}: interrupted after moving {report.moved:,}; the messages not moved are "
            "in the dead-letter queue, visible again: run the same command to move them"
        )
    if report.rejected_for_good:
        codes = ", ".join(f"{count:,} {code}" for code, count in report.rejected_for_good.items())
        lines.append(
            f"{queue}: {'would move' if args.dry_run else 'moved'} dead letters rejected for good "
            f"({codes}): they are rejected again unless their sender, the code or the settings "
            "changed since"
        )
    if report.returned:
        lines.append(
            f"{queue}: {len(report.returned):,} moved message(s) failed again during the move "
            "and are back in the dead-letter queue (not sent twice); see their reason before "
            "the next run"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    deployment = resolve(args)
    from sitemap_updater.local.poller import queue_counts  # noqa: PLC0415 - it logs

    sqs = deployment.sqs
    reports = [
        Moved(name, dlq_url, url, *queue_counts(sqs, dlq_url)[:2])
        for name, dlq_url, url in _queues(args, deployment)
    ]
    if args.dry_run:
        for report in reports:
            report.reasons = dead_letter_reasons(sqs, report.dlq_url, report.waiting)
            report.rejected_for_good = {
                r["code"]: r["count"] for r in report.reasons if r["code"] != RETRIES_EXHAUSTED
            }
    else:
        with Progress("redrive", total=sum(r.waiting for r in reports)) as progress:
            for moved in reports:
                move(sqs, moved, _budget(moved, args.max_messages), progress)
                if moved.interrupted:
                    break
    lines = [line for moved in reports for line in _lines(moved, args)]
    if args.dry_run:
        lines.append("redrive --dry-run: nothing moved")
    print_summary(
        lines, {"dry_run": args.dry_run, "queues": [asdict(r) for r in reports]}, args.json
    )
    interrupted = any(r.interrupted for r in reports)
    return exit_status(interrupted=interrupted, failed=any(r.failed for r in reports))
