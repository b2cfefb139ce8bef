"""SQS for IndexNow: the standard queue of changed URLs the ingest function fills and the
indexnow function drains, and its dead-letter queue (for what IndexNow refused)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sitemap_updater.adapters import clients
from sitemap_updater.adapters.queues import reason_attributes

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# URLs per message: 100 URLs of 2,048 characters are about 205 KB of JSON, under SQS's
# 256 KiB. An ingest batch (up to 100 events) is one message.
URLS_PER_MESSAGE = 100


def message_body(urls: Sequence[str]) -> str:
    return json.dumps({"urls": list(urls)}, ensure_ascii=False)


class IndexNowQueue:
    def __init__(self, queue_url: str, dead_letter_url: str, client: SQSClient | None = None):
        self.queue_url = queue_url
        self.dead_letter_url = dead_letter_url
        self.client: SQSClient = client or clients.client("sqs")

    def notify(self, urls: Sequence[str]) -> None:
        """Queue ``urls`` for submission (raises if SQS refuses)."""
        for start in range(0, len(urls), URLS_PER_MESSAGE):
            chunk = urls[start : start + URLS_PER_MESSAGE]
            self.client.send_message(QueueUrl=self.queue_url, MessageBody=message_body(chunk))

    def dead_letter(self, body: str, code: str, reason: str, source_message_id: str) -> None:
        """Park a message IndexNow refused, with why (``sitemap-updater redrive`` moves it
        back once the configuration is fixed)."""
        self.client.send_message(
            QueueUrl=self.dead_letter_url,
            MessageBody=body,
            MessageAttributes=reason_attributes(
                len(body.encode("utf-8", "surrogatepass")), code, source_message_id, reason
            ),
        )
