"""The domain's own exceptions. Adapters translate SDK errors into these."""

from __future__ import annotations

MAX_DETAIL_CHARS = 300


class InvalidEvent(Exception):
    """An event that can never be applied: retrying it cannot help.

    ``code`` is a stable, machine-readable slug (it travels as a DLQ message attribute);
    ``detail`` says what exactly was wrong, for a person. It may quote part of the event
    (a field name, a host), so it is cut to :data:`MAX_DETAIL_CHARS`: the reason is logged
    and travels as a message attribute, and a hostile body must never be echoed whole.
    """

    def __init__(self, code: str, detail: str) -> None:
        if len(detail) > MAX_DETAIL_CHARS:
            cut = len(detail) - MAX_DETAIL_CHARS
            detail = f"{detail[:MAX_DETAIL_CHARS]}... ({cut:,} more characters)"
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail

    @property
    def reason(self) -> str:
        return f"{self.code}: {self.detail}"


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
    """An object would break a sitemap protocol limit. Never written. Placement prevents it;
    the one window is a rebuild that runs while a sibling's reservation is being grown after
    its hreflang cluster changed, so it is retried (and dead-lettered if it persists)."""
