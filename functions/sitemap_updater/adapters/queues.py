"""SQS: rebuild and index requests (FIFO, one message group per shard / the index), and the
dead-letter queue that takes an event which can never succeed, with its reason."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sitemap_updater.adapters import clients
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.resources import (
    MAX_MESSAGE_BYTES,  # body and attributes (names, types, values)
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

INDEX_GROUP = "index"
REASON_ATTRIBUTE = "reason"
REASON_CODE_ATTRIBUTE = "reason_code"
SOURCE_ATTRIBUTE = "source_message_id"
MAX_REASON_CHARS = 1024
_BATCH = 10


def _dedup(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class Queues:
    """SQS adapter. Queue URLs are given; a failed send is raised so the source message retries."""

    def __init__(
        self,
        rebuild_queue_url: str,
        index_queue_url: str,
        dead_letter_url: str,
        client: SQSClient | None = None,
    ):
        self.rebuild_queue_url = rebuild_queue_url
        self.index_queue_url = index_queue_url
        self.dead_letter_url = dead_letter_url
        self.client: SQSClient = client or clients.client("sqs")

    def request_rebuilds(self, requests: Mapping[str, Sequence[str]]) -> None:
        """Ask for one rebuild per shard. ``requests`` maps shard -> the ids of the changes that
        touched it: the same changes give the same deduplication id, so a retried batch that
        already signalled is not signalled twice."""
        entries = [
            {
                "Id": f"m{number}",
                "MessageBody": json.dumps({"shard": shard}),
                "MessageGroupId": shard,
                "MessageDeduplicationId": _dedup(shard, *sorted(causes)),
            }
            for number, (shard, causes) in enumerate(sorted(requests.items()))
        ]
        self._send_batches(self.rebuild_queue_url, entries)

    def request_index(self, cause: str) -> None:
        """Ask for an index refresh; ``cause`` (e.g. shard and generation) deduplicates it."""
        self.client.send_message(
            QueueUrl=self.index_queue_url,
            MessageBody=json.dumps({"cause": cause}),
            MessageGroupId=INDEX_GROUP,
            MessageDeduplicationId=_dedup(cause),
        )

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        """Park an event that can never succeed, with why, for a person or a later redrive.

        The body goes whole; the attributes that say why take what room SQS's message limit
        leaves (a body near 1 MiB keeps its code and id, and as much of the reason as fits),
        so a large event is parked at once rather than retried until SQS parks it unexplained.
        """
        self.client.send_message(
            QueueUrl=self.dead_letter_url,
            MessageBody=body,
            MessageAttributes=reason_attributes(
                len(body.encode("utf-8", "surrogatepass")), code, source_message_id, reason
            ),
        )

    def _send_batches(self, queue_url: str, entries: list[dict[str, Any]]) -> None:
        for start in range(0, len(entries), _BATCH):
            chunk = entries[start : start + _BATCH]
            response = self.client.send_message_batch(QueueUrl=queue_url, Entries=chunk)  # type: ignore[arg-type]
            failed = response.get("Failed", [])
            if failed:
                details = ", ".join(f"{f['Id']}: {f.get('Code')}" for f in failed)
                raise RetryableError(f"could not send {len(failed)} message(s): {details}")


def reason_attributes(
    body_bytes: int, code: str, source_message_id: str, reason: str
) -> dict[str, Any]:
    """A dead letter's attributes, within what SQS's message limit leaves beside a body of
    ``body_bytes`` (SQS counts each attribute's name, type and value): the code and the
    source message id whole or not at all, then as much of the reason as fits."""
    room = MAX_MESSAGE_BYTES - body_bytes
    attributes: dict[str, Any] = {}

    def add(name: str, value: str) -> None:
        nonlocal room
        cost = len(name) + len("String") + len(value.encode("utf-8", "surrogatepass"))
        if value and cost <= room:
            attributes[name] = {"DataType": "String", "StringValue": value}
            room -= cost

    add(REASON_CODE_ATTRIBUTE, code)
    add(SOURCE_ATTRIBUTE, source_message_id)
    space = max(room - len(REASON_ATTRIBUTE) - len("String"), 0)
    text = reason[:MAX_REASON_CHARS].encode("utf-8", "surrogatepass")[:space]
    add(REASON_ATTRIBUTE, text.decode("utf-8", "ignore"))  # never half a character
    return attributes
