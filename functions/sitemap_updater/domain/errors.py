"""The domain's own exceptions. Adapters translate SDK errors into these."""

from __future__ import annotations

MAX_DETAIL_CHARS = 300


def cut(detail: str) -> str:
    """What was wrong, for a person, cut to :data:`MAX_DETAIL_CHARS`: it may quote the event,
    which must never be echoed whole (logs, dead-letter attributes)."""
    if len(detail) <= MAX_DETAIL_CHARS:
        return detail
    return f"{detail[:MAX_DETAIL_CHARS]}... ({len(detail) - MAX_DETAIL_CHARS:,} more characters)"


class InvalidEvent(Exception):
    """An event that can never be applied. ``code``: a stable slug (a DLQ message attribute);
    ``detail``: what was wrong (:func:`cut`)."""

    def __init__(self, code: str, detail: str) -> None:
        self.code = code
        self.detail = cut(detail)
        self.reason = f"{code}: {self.detail}"
        super().__init__(self.reason)


class RetryableError(Exception):
    """A fault that may pass (a lost race, a throttled call): fail the message so SQS retries."""


class ConcurrentChange(RetryableError):
    """Someone else changed the record we planned against; read again and re-plan."""


class ShardFull(Exception):
    """The shard cannot take this entry (entries or bytes); place it in the group's open shard."""

    def __init__(self, shard: str) -> None:
        super().__init__(f"shard {shard} has no room")
        self.shard = shard


class WriteConflict(RetryableError):
    """A conditional write lost: the object changed since it was read."""


class LimitExceeded(RetryableError):
    """An object would break a protocol limit: never written. Placement prevents it but for a
    rebuild racing a sibling's reservation growing after its hreflang cluster changed."""
