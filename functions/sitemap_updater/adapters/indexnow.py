"""IndexNow's HTTP client (standard library only; docs/DEPLOY.md#indexnow). What may pass (429,
408, 5xx, no answer) is retried with backoff and jitter, honouring ``Retry-After``; else FAILED,
and SQS retries later. Redirects are not followed (urllib would turn the POST into a GET and
report its 200 as success): ``INDEXNOW_ENDPOINT`` must be the final URL.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sitemap_updater.domain.indexnow import (
    MAX_URLS_PER_REQUEST,
    Submission,
    Verdict,
    verdict_for,
    worth_retrying,
)

USER_AGENT = "sitemap-updater (+https://www.indexnow.org/)"
_REASON_BYTES = 300


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


@dataclass
class IndexNowClient:
    """Submits URLs of one host (``www.example.com``) to one IndexNow endpoint. ``sleep``,
    ``clock`` and ``jitter`` (0 <= x < 1) are injectable so tests need not wait."""

    endpoint: str
    key: str
    host: str
    key_location: str  # the key file's URL
    opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(_NoRedirects())
    )
    timeout_seconds: float = 10.0
    max_attempts: int = 4
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 8.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    jitter: Callable[[], float] = random.random

    def submit(self, urls: Sequence[str], deadline: float | None = None) -> Submission:
        """POST ``urls`` (1 to 10,000) once, retrying what may pass until ``deadline``
        (a ``clock()`` value) would be overrun."""
        if not 1 <= len(urls) <= MAX_URLS_PER_REQUEST:
            raise ValueError(f"IndexNow takes 1 to {MAX_URLS_PER_REQUEST} URLs, got {len(urls)}")
        payload = {"host": self.host, "key": self.key, "keyLocation": self.key_location}
        body = json.dumps({**payload, "urlList": list(urls)}, ensure_ascii=False).encode()
        status: int | None = None
        reason = ""
        attempt = 0
        while attempt < self.max_attempts:
            if deadline is not None and self.clock() + self.timeout_seconds > deadline:
                reason = f"{reason}; " if reason else ""
                reason += "no time left for a request in this invocation"
                break
            attempt += 1
            status, reason, retry_after = self._post(body)
            final = verdict_for(status) if status is not None else None
            if final is not None:
                return Submission(final, status, reason, attempt)
            if not worth_retrying(status) or attempt == self.max_attempts:
                break
            delay = self.delay(attempt, retry_after)
            if deadline is not None and self.clock() + delay + self.timeout_seconds > deadline:
                reason += "; no time left to retry in this invocation"
                break
            self.sleep(delay)
        return Submission(Verdict.FAILED, status, reason, attempt)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Exponential backoff with equal jitter: half the step, plus up to the other half;
        at least what ``Retry-After`` asked for."""
        step = min(self.max_backoff_seconds, self.backoff_seconds * 2.0 ** (attempt - 1))
        delay = step / 2 + self.jitter() * step / 2
        return max(delay, retry_after) if retry_after is not None else delay

    def _post(self, body: bytes) -> tuple[int | None, str, float | None]:
        """(status or None, reason, Retry-After seconds or None)."""
        request = urllib.request.Request(  # noqa: S310 - the endpoint is validated http(s)
            self.endpoint,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT},
        )
        try:
            with self.opener.open(request, timeout=self.timeout_seconds) as response:
                status = int(response.status)
                return status, _reason(status, response.read(_REASON_BYTES)), None
        except urllib.error.HTTPError as error:
            retry_after = _seconds(error.headers.get("Retry-After") if error.headers else None)
            try:
                detail: bytes | str = error.read(_REASON_BYTES)
            except (OSError, http.client.HTTPException):
                detail = b""
            if 300 <= error.code < 400:
                detail = f"redirected to {error.headers.get('Location')}" if error.headers else ""
            return error.code, _reason(error.code, detail), retry_after
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            return None, f"no answer: {type(error).__name__}: {error}", None


def _reason(status: int, detail: bytes | str) -> str:
    """One line of printable text: the endpoint's answer is a third party's bytes, and the
    reason goes into logs and into a dead-letter message attribute, where SQS refuses
    controls and noncharacters (NUL, ESC, U+FFFE): each becomes U+FFFD."""
    text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else detail
    phrase = http.client.responses.get(status, "")
    line = " ".join(f"HTTP {status} {phrase}: {text}".split())
    printable = "".join(char if char.isprintable() else "\ufffd" for char in line)
    return printable[:_REASON_BYTES].rstrip(": ")


def _seconds(value: str | None) -> float | None:
    """Retry-After as a number of seconds (an HTTP date is ignored: backoff applies)."""
    try:
        seconds = float(value or "")
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
