"""``sitemap-updater send``: put events from files on the ingest queue, as a CMS would; the
ingest function validates them (its rejections go to the dead-letter queue)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from sitemap_updater.adapters.queues import sized_batches, text_bytes
from sitemap_updater.local.feeder import MessageBody, read_paths
from sitemap_updater.ops.errors import (
    UserError,
    error_code,
    exit_status,
    interruptible,
    refused_entries,
)
from sitemap_updater.ops.progress import Progress, print_summary
from sitemap_updater.ops.resolve import resolve
from sitemap_updater.resources import MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# Request-level errors about the queue or the caller, not the batch: every later request
# would fail the same way, so sending stops there (the rest is counted as not sent).
FATAL_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidSecurity",
    }
)


@dataclass(frozen=True)
class Failure:
    origin: str
    code: str
    message: str


@dataclass
class SendResult:
    sent: int = 0
    batches: int = 0
    failed: list[Failure] = field(default_factory=list)
    not_sent: int = 0  # the request that stopped sending and the rest, or Ctrl-C's
    stopped: str | None = None  # that error
    interrupted: bool = False  # Ctrl-C: not_sent counts the rest, the request in flight too


def send_bodies(
    sqs: SQSClient, queue_url: str, bodies: Sequence[MessageBody], progress: Progress
) -> SendResult:
    """Send every body that fits in a message; report each one not sent, with its origin."""
    result = SendResult()
    fitting = []
    for body in bodies:
        if (length := text_bytes(body.body)) <= MAX_MESSAGE_BYTES:
            fitting.append(body)
            continue
        too_long = f"{length:,} bytes; an SQS message holds at most {MAX_MESSAGE_BYTES:,}"
        result.failed.append(Failure(body.origin, "MessageTooLong", too_long))
        progress.advance()
    done = 0  # bodies of the requests answered
    with interruptible(result):
        for batch in sized_batches(fitting, lambda body: text_bytes(body.body)):
            _send_batch(sqs, queue_url, batch, result)
            progress.advance(len(batch))
            if result.stopped:
                break
            done += len(batch)
    # Stopped: that request and the rest. Interrupted: the request in flight may or may not
    # have been taken. Either way sent + failed + not_sent is every body.
    if result.stopped or result.interrupted:
        result.not_sent = len(fitting) - done
    order = {body.origin: number for number, body in enumerate(bodies)}
    result.failed.sort(key=lambda failure: order.get(failure.origin, 0))  # in file order
    return result


def _send_batch(
    sqs: SQSClient, queue_url: str, batch: list[MessageBody], result: SendResult
) -> None:
    """One request. An error about the queue or the caller (or no AWS at all) sets
    ``result.stopped``: no later request would do better."""
    try:
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(number), "MessageBody": b.body} for number, b in enumerate(batch)],
        )
    except (ClientError, BotoCoreError) as exc:
        code, message = error_code(exc)
        if code in FATAL_CODES or isinstance(exc, BotoCoreError):  # counted as not sent
            result.stopped = f"{code}: {message}" if message else code
        else:  # about this request alone: each of its entries failed
            result.failed.extend(Failure(body.origin, code, message) for body in batch)
        return
    result.batches += 1
    result.sent += len(response.get("Successful", []))
    result.failed.extend(
        Failure(batch[number].origin, code, message)
        for number, code, message in refused_entries(response)
    )


def run(args: argparse.Namespace) -> int:
    try:
        bodies = read_paths(args.events)
    except FileNotFoundError as exc:
        raise UserError(str(exc)) from exc
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8 (UnicodeError is one)
        raise UserError(f"cannot read the events: {exc}") from exc
    if not bodies:
        raise UserError("no events in the given files")
    deployment = resolve(args)
    queue_url = deployment.value("IngestQueueUrl")
    with Progress("send", total=len(bodies)) as progress:
        result = send_bodies(deployment.sqs, queue_url, bodies, progress)
    lines = [f"failed {f.origin}: {f.code}: {f.message}" for f in result.failed]
    if result.stopped:
        lines.append(f"stopped: {result.stopped}; {result.not_sent:,} event(s) not sent")
    if result.interrupted:
        lines.append(
            f"interrupted: {result.not_sent:,} event(s) not sent (the request in flight may "
            "have been); sending the files again is harmless (equal versions are duplicates)"
        )
    lines.append(
        f"send: {result.sent:,} of {len(bodies):,} event(s) sent to {queue_url} "
        f"in {result.batches:,} batch(es); {len(result.failed):,} failed"
        + (f", {result.not_sent:,} not sent" if result.not_sent else "")
    )
    print_summary(lines, {"queue_url": queue_url, **asdict(result)}, args.json)
    return exit_status(
        interrupted=result.interrupted, failed=bool(result.failed or result.not_sent)
    )
