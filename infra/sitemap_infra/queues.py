"""One queue per function, each with its dead-letter queue, shaped by ``resources.FUNCTIONS``
(FIFO or not, visibility timeout six times the consumer's timeout, receive count), the same
values ``sitemap-updater local`` creates on moto."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sitemap_updater.resources import (
    DLQ_RETENTION_DAYS,
    MAX_MESSAGE_BYTES,
    QUEUE_RETENTION_DAYS,
    FunctionSpec,
)


def dead_letter_queue(scope: Construct, construct_id: str, **options: Any) -> sqs.Queue:
    return sqs.Queue(
        scope,
        construct_id,
        retention_period=Duration.days(DLQ_RETENTION_DAYS),
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        **options,
    )


@dataclass(frozen=True)
class QueuePair:
    spec: FunctionSpec
    queue: sqs.Queue
    dead_letter: sqs.Queue


class Queues(Construct):
    def __init__(self, scope: Construct, construct_id: str, specs: Sequence[FunctionSpec]) -> None:
        super().__init__(scope, construct_id)
        self.pairs = {spec.name: self._pair(spec) for spec in specs}

    def _pair(self, spec: FunctionSpec) -> QueuePair:
        name = spec.name.capitalize()
        shared: dict[str, Any] = {
            "fifo": True if spec.fifo else None,
            "max_message_size_bytes": MAX_MESSAGE_BYTES,
        }
        dead_letter = dead_letter_queue(self, f"{name}DeadLetter", **shared)
        queue = sqs.Queue(
            self,
            name,
            content_based_deduplication=True if spec.content_based_deduplication else None,
            visibility_timeout=Duration.seconds(spec.visibility_timeout_seconds),
            retention_period=Duration.days(QUEUE_RETENTION_DAYS),
            dead_letter_queue=sqs.DeadLetterQueue(
                queue=dead_letter, max_receive_count=spec.max_receive_count
            ),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            **shared,
        )
        return QueuePair(spec=spec, queue=queue, dead_letter=dead_letter)

    def urls(self) -> dict[str, tuple[str, str]]:
        """Each function's (queue URL, dead-letter queue URL), for ``resources.queue_urls``."""
        return {
            name: (pair.queue.queue_url, pair.dead_letter.queue_url)
            for name, pair in self.pairs.items()
        }

    def __getitem__(self, name: str) -> QueuePair:
        return self.pairs[name]
