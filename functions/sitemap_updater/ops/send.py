"""``sitemap-updater send``: put events from files on the ingest queue, as a CMS would.

The files are read exactly as ``sitemap-updater local`` reads them (one event, a JSON
array, JSON Lines with each line sent as written, an SQS batch, or folders of those).
Bodies go out ten to a SendMessageBatch call (and at most 256 KiB per call); every entry
SQS refuses is reported with its origin and SQS's reason, and the command exits 1.
Events are not validated here: the ingest function does that, and sends what it rejects
to the dead-letter queue with the reason (see ``status`` and ``redrive``).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sitemap_updater.local.feeder import MessageBody, read_paths
from sitemap_updater.ops.errors import UserError
from sitemap_updater.ops.progress import Progress
from sitemap_updater.ops.resolve import resolve

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

MAX_BATCH_ENTRIES = 10
MAX_BATCH_BYTES = 262_144  # SendMessageBatch's payload limit (every body together)


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


def batches(bodies: Sequence[MessageBody]) -> Iterator[list[MessageBody]]:
    """Up to ten bodies per batch, and no more bytes than one batch may carry."""
    batch: list[MessageBody] = []
    size = 0
    for body in bodies:
        length = len(body.body.encode("utf-8", "surrogatepass"))
        if batch and (len(batch) == MAX_BATCH_ENTRIES or size + length > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(body)
        size += length
    if batch:
        yield batch


def send_bodies(
    sqs: SQSClient, queue_url: str, bodies: Sequence[MessageBody], progress: Progress
) -> SendResult:
    result = SendResult()
    for batch in batches(bodies):
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(number), "MessageBody": body.body} for number, body in enumerate(batch)
            ],
        )
        result.batches += 1
        result.sent += len(response.get("Successful", []))
        for failure in response.get("Failed", []):
            origin = batch[int(failure["Id"])].origin
            result.failed.append(
                Failure(origin, failure.get("Code", "?"), failure.get("Message", ""))
            )
        progress.advance(len(batch))
    return result


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
    for failure in result.failed:
        print(f"failed {failure.origin}: {failure.code}: {failure.message}")
    print(
        f"send: {result.sent:,} of {len(bodies):,} event(s) sent to {queue_url} "
        f"in {result.batches:,} batch(es); {len(result.failed):,} failed"
    )
    if args.json:
        print(
            json.dumps(
                {
                    "queue_url": queue_url,
                    "sent": result.sent,
                    "batches": result.batches,
                    "failed": [vars(failure) for failure in result.failed],
                }
            )
        )
    return 1 if result.failed else 0
