"""SQS: rebuild and index requests (FIFO, one message group per shard / the index), the
queue of URLs for IndexNow, and the dead-letter queues that take a message which can never
succeed, with its reason. Each message's shape is defined here, for its writer and reader."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from botocore.exceptions import ClientError

from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.resources import MAX_MESSAGE_BYTES  # body and attributes

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

INDEX_GROUP = "index"
# A dead letter's attributes: why it can never succeed, and the message it was.
REASON_ATTRIBUTE = "reason"
REASON_CODE_ATTRIBUTE = "reason_code"
SOURCE_ATTRIBUTE = "source_message_id"
MAX_REASON_CHARS = 1024
_ATTRIBUTES_ROOM = 8192  # left beside a body that is cut to fit: the three attributes whole
# URLs per IndexNow message: 100 URLs of 2,048 characters are about 205 KB of JSON, under
# SQS's 256 KiB. An ingest batch (up to 100 events) is one message.
URLS_PER_MESSAGE = 100
MAX_BATCH_ENTRIES = 10
MAX_BATCH_BYTES = 262_144  # bodies per SendMessageBatch, as any queue takes; a larger one: alone
T = TypeVar("T")


class RebuildRequest(msgspec.Struct, frozen=True):
    shard: str


class IndexRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    cause: str  # e.g. the shard and its generation: it deduplicates the request
    shard: str | None = None  # the one shard whose entry changed (None: publish in full)
    sent: int | None = None  # when SQS received the oldest change it shows (epoch ms)
    files: bool = False  # only a site file changed (the feed): the index stays as it is


class UrlsMessage(msgspec.Struct, frozen=True):
    urls: list[str]


def encode(message: msgspec.Struct) -> str:
    return msgspec.json.encode(message).decode()


def index_request(body: str) -> IndexRequest | None:
    """The index request a body holds (None: another message, e.g. the schedule's)."""
    try:
        return msgspec.json.decode(body, type=IndexRequest)
    except msgspec.DecodeError:
        return None


def requested_urls(body: str) -> list[str] | None:
    """The URLs an IndexNow message names (None: not such a message)."""
    try:
        return msgspec.json.decode(body, type=UrlsMessage).urls
    except msgspec.DecodeError:
        return None


def requested_shard(body: str) -> str:
    """The shard a rebuild request names (msgspec.DecodeError: not a rebuild request)."""
    return msgspec.json.decode(body, type=RebuildRequest).shard


def _dedup(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class _DeadLetters:
    client: SQSClient
    dead_letter_url: str

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        """Park a message that can never succeed, with why (as much of it as SQS's message
        limit leaves room for: a large event is parked at once, never retried until SQS parks
        it unexplained). A body over the limit (a webhook's request) is parked cut, said so."""
        if (whole := text_bytes(body)) > MAX_MESSAGE_BYTES:
            data = body.encode("utf-8", "surrogatepass")[: MAX_MESSAGE_BYTES - _ATTRIBUTES_ROOM]
            body = data.decode("utf-8", "ignore")
            note = f" (the body cut to its first {text_bytes(body):,} of {whole:,} bytes)"
            reason = reason[: MAX_REASON_CHARS - len(note)] + note
        self.client.send_message(
            QueueUrl=self.dead_letter_url,
            MessageBody=body,
            MessageAttributes=reason_attributes(text_bytes(body), code, source_message_id, reason),
        )


@dataclass
class Queues(_DeadLetters):
    """The rebuild and index queues, and the ingest dead-letter queue. A failed send is
    raised, so the message that caused it is retried."""

    rebuild_queue_url: str
    index_queue_url: str
    dead_letter_url: str
    client: SQSClient

    def request_rebuilds(self, requests: Mapping[str, Sequence[str]]) -> None:
        """Ask for one rebuild per shard. ``requests`` maps shard -> the ids of the changes
        that touched it: the same changes give the same deduplication id, so a retried batch
        that already asked is not served twice."""
        entries: list[Any] = [
            {
                "Id": f"m{number}",
                "MessageBody": encode(RebuildRequest(shard)),
                "MessageGroupId": shard,
                "MessageDeduplicationId": _dedup(shard, *sorted(causes)),
            }
            for number, (shard, causes) in enumerate(sorted(requests.items()))
        ]
        _send_all(self.client, self.rebuild_queue_url, entries)

    def request_index(
        self, cause: str, *, shard: str | None = None, sent: int | None = None, files: bool = False
    ) -> None:
        self.client.send_message(
            QueueUrl=self.index_queue_url,
            MessageBody=encode(IndexRequest(cause, shard, sent, files)),
            MessageGroupId=INDEX_GROUP,
            MessageDeduplicationId=_dedup(cause),
        )


@dataclass
class IndexNowQueue(_DeadLetters):
    """The queue of changed URLs the ingest function fills and the indexnow function
    drains, and its dead-letter queue (for what IndexNow refused)."""

    queue_url: str
    dead_letter_url: str
    client: SQSClient

    def notify(self, urls: Sequence[str]) -> None:
        """Queue ``urls`` for submission (raises if SQS refuses)."""
        for start in range(0, len(urls), URLS_PER_MESSAGE):
            chunk = UrlsMessage(list(urls[start : start + URLS_PER_MESSAGE]))
            self.client.send_message(QueueUrl=self.queue_url, MessageBody=encode(chunk))


@dataclass
class IngestInbox(_DeadLetters):
    """The ingest queue as the webhook endpoint fills it, and its dead-letter queue."""

    queue_url: str
    dead_letter_url: str
    client: SQSClient

    def send(self, bodies: Sequence[str]) -> None:
        """Queue events (RetryableError if SQS refuses one: the sender retries them all,
        and what was queued is then a duplicate)."""
        entries = [{"Id": f"m{n}", "MessageBody": body} for n, body in enumerate(bodies)]
        try:
            _send_all(self.client, self.queue_url, entries)
        except ClientError as exc:
            raise RetryableError(f"ingest queue: {exc}") from exc


def _send_all(client: SQSClient, queue_url: str, entries: Sequence[Any]) -> None:
    """``entries`` in as few batches as SQS takes; RetryableError naming those it refused."""
    for chunk in sized_batches(entries, entry_bytes):
        if failed := client.send_message_batch(QueueUrl=queue_url, Entries=chunk).get("Failed"):
            details = ", ".join(f"{f['Id']}: {f.get('Code')}" for f in failed)
            raise RetryableError(f"could not send {len(failed)} message(s): {details}")


def text_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def entry_bytes(entry: Any) -> int:
    """What a SendMessageBatch entry counts against SQS's limits: its body and attributes."""
    size = text_bytes(entry["MessageBody"])
    for name, value in entry.get("MessageAttributes", {}).items():
        size += text_bytes(name) + text_bytes(value.get("DataType", ""))
        size += text_bytes(value.get("StringValue", "")) + len(value.get("BinaryValue", b""))
    return size


def sized_batches(items: Iterable[T], size: Callable[[T], int]) -> Iterator[list[T]]:
    """Up to ten items, and no more bytes than a batch may carry (a larger item goes alone)."""
    batch: list[T] = []
    total = 0
    for item in items:
        length = size(item)
        if batch and (len(batch) == MAX_BATCH_ENTRIES or total + length > MAX_BATCH_BYTES):
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += length
    if batch:
        yield batch


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
        cost = len(name) + len("String") + text_bytes(value)
        if value and cost <= room:
            attributes[name] = {"DataType": "String", "StringValue": value}
            room -= cost

    add(REASON_CODE_ATTRIBUTE, code)
    add(SOURCE_ATTRIBUTE, source_message_id)
    space = max(room - len(REASON_ATTRIBUTE) - len("String"), 0)
    text = reason[:MAX_REASON_CHARS].encode("utf-8", "surrogatepass")[:space]
    add(REASON_ATTRIBUTE, text.decode("utf-8", "ignore"))  # never half a character
    return attributes
