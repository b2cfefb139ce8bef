"""IndexNow's rules (https://www.indexnow.org/documentation): the key, the request limit, and
what an answer means for its URLs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

MAX_URLS_PER_REQUEST = 10_000
KEY_PATTERN = re.compile(r"[a-zA-Z0-9-]{8,128}")  # use fullmatch


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"  # can never succeed: dead-letter now, with the reason
    FAILED = "failed"  # may pass later: SQS retries, then dead-letters


@dataclass(frozen=True)
class Submission:
    """How one request of up to 10,000 URLs ended."""

    verdict: Verdict
    status: int | None  # the last HTTP status; None when no answer came
    reason: str
    attempts: int


def verdict_for(status: int) -> Verdict | None:
    """ACCEPTED or REJECTED for a final answer; None when the answer says nothing final."""
    if status in (200, 202):  # 202: received, the key is still being validated
        return Verdict.ACCEPTED
    # The request itself is wrong (malformed, URLs not on the host, a key not in the key
    # format): the same bytes can never succeed.
    if status in (400, 422):
        return Verdict.REJECTED
    return None


def worth_retrying(status: int | None) -> bool:
    """Whether an immediate retry may get a different answer (throttling, a server fault,
    a timeout). 403 (key not valid) is not: the key file needs minutes, not seconds."""
    return status is None or status in (408, 429) or 500 <= status <= 599


def key_file(key: str) -> str:
    return f"{key}.txt"
