"""IndexNow: submit the URLs of applied changes, de-duplicated, in requests of at most
10,000, never in the way of the sitemaps. A message whose every chunk was accepted is done;
one whose chunk failed (endpoint down, throttling, timeout) fails, so SQS delivers it again
and then dead-letters it; one whose chunk was rejected (400/422: it can never succeed), or
whose body is not a list of this site's URLs, is dead-lettered at once with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sitemap_updater.domain.indexnow import MAX_URLS_PER_REQUEST, Verdict
from sitemap_updater.domain.urls import Site
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.usecases.ports import DeadLetters, Message, UrlSubmitter


@dataclass(frozen=True)
class SubmitResult:
    submitted: int  # URLs accepted
    retry: frozenset[str]  # message ids to fail, so SQS delivers them again
    dead_lettered: frozenset[str]  # message ids parked with their reason


@dataclass
class SubmitChanges:
    site: Site
    client: UrlSubmitter
    dead_letters: DeadLetters
    read_urls: Callable[[str], Sequence[str] | None]  # a message's URLs (queues adapter)
    max_urls_per_request: int = MAX_URLS_PER_REQUEST

    def __call__(self, messages: Sequence[Message], deadline: float | None = None) -> SubmitResult:
        senders: dict[str, list[str]] = {}  # URL -> ids of the messages that carry it
        bodies = {message.message_id: message.body for message in messages}
        rejected: dict[str, str] = {}  # message id -> why it is dead-lettered
        prefix = self.site.url_for("")
        for message in messages:
            urls = self.read_urls(message.body)
            if not urls or not all(url.startswith(prefix) for url in urls):
                rejected[message.message_id] = "malformed_message: not a list of this site's URLs"
                continue
            for url in urls:
                senders.setdefault(url, []).append(message.message_id)
        unique = list(senders)  # de-duplicated, in order of first appearance
        retry: set[str] = set()
        submitted = 0
        for start in range(0, len(unique), self.max_urls_per_request):
            chunk = unique[start : start + self.max_urls_per_request]
            ids = {message_id for url in chunk for message_id in senders[url]}
            outcome = self.client.submit(chunk, deadline)
            if outcome.verdict is Verdict.ACCEPTED:
                submitted += len(chunk)
                continue
            log = logger.error if outcome.verdict is Verdict.REJECTED else logger.warning
            log(
                "IndexNow submission " + outcome.verdict.value,
                status=outcome.status,
                reason=outcome.reason,
                attempts=outcome.attempts,
                urls=len(chunk),
            )
            if outcome.verdict is Verdict.REJECTED:
                for message_id in ids:
                    rejected.setdefault(message_id, f"indexnow_rejected: {outcome.reason}")
            else:
                retry |= ids
        parked: set[str] = set()
        for message_id, reason in rejected.items():
            if message_id in retry:  # it also waits for a retry; rejected again then
                continue
            code = reason.split(":", 1)[0]
            try:
                self.dead_letters.dead_letter(bodies[message_id], code, reason, message_id)
            except Exception as exc:  # noqa: BLE001 - whatever SQS raised: retry the message
                logger.warning("could not dead-letter", message_id=message_id, reason=str(exc))
                retry.add(message_id)
            else:
                parked.add(message_id)
        _count(Metric.INDEXNOW_SUBMITTED, submitted)
        _count(Metric.INDEXNOW_DEAD_LETTERED, len(parked))
        _count(Metric.INDEXNOW_RETRIED, len(retry))
        return SubmitResult(submitted, frozenset(retry), frozenset(parked))


def _count(name: str, value: int) -> None:
    if value:
        metrics.add_metric(name=name, unit="Count", value=value)
