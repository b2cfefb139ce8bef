"""Lambda entry points: parse, call one use case, report partial batch failures."""

from __future__ import annotations

from typing import Any

from sitemap_updater.usecases.ports import Message


def messages_of(event: dict[str, Any]) -> list[Message]:
    """The SQS records of a Lambda event, as the use cases take them."""
    return [
        Message(
            record["messageId"],
            record["body"],
            redelivered=(_attribute(record, "ApproximateReceiveCount") or 1) > 1,
            sent_timestamp=_attribute(record, "SentTimestamp"),
        )
        for record in event.get("Records", [])
    ]


def _attribute(record: dict[str, Any], name: str) -> int | None:
    value = str(record.get("attributes", {}).get(name, ""))
    return int(value) if value.isdigit() else None
