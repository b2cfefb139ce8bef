"""The webhook endpoint: verify a CMS's request, map it to events, queue them, answer (CMSes
wait 2-3 s: the ingest function does the rest).

401 for a request that is not the CMS's (counted: ``WebhooksRefused``, alarmed); 2xx for
everything else that was read, so that the CMS does not retry it (an unhandled topic, or a
payload that cannot be mapped: its reason in the ingest dead-letter queue); 503 when the
events could not be queued (the CMS retries). Never 410: Ghost deletes such a webhook.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sitemap_updater import connectors
from sitemap_updater.connectors import Connector, Mapped, Refusal, Request
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.observability import Metric, logger, metrics
from sitemap_updater.resources import MAX_MESSAGE_BYTES
from sitemap_updater.usecases.ports import IngestInbox, SecretValues

PATH_PREFIX = "/hooks/"
# A request's body may be as large as a function URL takes (Lambda's 6 MB): a CMS sends the
# whole entry, often with its state before the change (WordPress) or populated (Strapi), far
# over what the events it gives take.
MAX_BODY_BYTES = 6_291_456
# Events one request may give: each ten is one SendMessageBatch, all within the function's
# timeout (a CMS that retries a timed-out request would queue the first ones twice).
MAX_EVENTS = 1000


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]


@dataclass
class ReceiveWebhook:
    """One request to ``/hooks/<name>``, or one EventBridge event (Shopify)."""

    connectors: Mapping[str, Connector]
    secrets: SecretValues
    inbox: IngestInbox
    max_body_bytes: int = MAX_BODY_BYTES

    def too_large(self, length: int) -> Answer | None:
        """413 for a body over the limit: callers ask with its declared (or encoded) length
        before they read or decode it whole."""
        if length <= self.max_body_bytes:
            return None
        return Answer(413, {"error": f"the body is over {self.max_body_bytes} bytes"})

    def __call__(self, request: Request, request_id: str) -> Answer:
        name = request.path.split("?", 1)[0].removeprefix(PATH_PREFIX)
        connector = self.connectors.get(name) if request.path.startswith(PATH_PREFIX) else None
        if connector is None or connector.cms == "shopify":
            return Answer(404, {"error": "no connector at this path"})
        if request.method != "POST":
            return Answer(405, {"error": "POST only"})
        if (refused := self.too_large(len(request.body))) is not None:
            return refused
        try:
            verdict = connectors.verify(connector, request, self.secrets.values(connector))
        except RetryableError as exc:
            logger.error("webhook secret unavailable", connector=name, reason=str(exc))
            return Answer(503, {"error": "try again"})
        if not verdict.accepted:
            metrics.add_metric(name=Metric.WEBHOOKS_REFUSED, unit="Count", value=1)
            logger.warning("webhook refused", connector=name, reason_code=verdict.reason)
            return Answer(401, {"error": "unauthorized"})
        mapped = connectors.map_request(connector, request)
        if len(mapped.events) > MAX_EVENTS:
            logger.warning("webhook refused", connector=name, reason_code="too_many_events")
            return Answer(413, {"error": f"over {MAX_EVENTS:,} events: send them in parts"})
        try:
            return self._deliver(name, mapped, request.body, request_id)
        except RetryableError as exc:
            logger.error("webhook events not queued", connector=name, reason=str(exc))
            return Answer(503, {"error": "try again"})

    def from_eventbridge(self, event: Mapping[str, Any], event_id: str) -> None:
        """A partner event source's event (raises if it cannot be queued: EventBridge retries)."""
        for connector in self.connectors.values():
            if connectors.verify_event(connector, event).accepted:
                body = connectors.encode_event(event).encode()
                mapped = connectors.map_event(connector, event)
                self._deliver(connector.name, mapped, body, event_id)
                return
        metrics.add_metric(name=Metric.WEBHOOKS_REFUSED, unit="Count", value=1)
        logger.warning("event from no configured source", source=str(event.get("source")))

    def _deliver(self, name: str, mapped: Mapped, body: bytes, request_id: str) -> Answer:
        """Send the events; dead-letter the request's body once for each kind of refusal (a
        batch of a thousand bad lines is one dead letter, not a thousand copies of it)."""
        bodies, refusals = [], list(mapped.refusals)
        for number, event in enumerate(mapped.events, 1):
            try:
                encoded = connectors.encode_event(event)
            except ValueError as exc:
                refusals.append(Refusal("unknown_field", f"event {number}: {exc}"))
                continue
            if (size := len(encoded.encode())) <= MAX_MESSAGE_BYTES:
                bodies.append(encoded)
            else:  # no SQS message holds it: refused here, with the ingest's code
                why = (
                    f"event {number} is {size:,} bytes; an SQS message holds {MAX_MESSAGE_BYTES:,}"
                )
                refusals.append(Refusal("body_too_large", why))
        if bodies:
            self.inbox.send(bodies)
        text = body.decode("utf-8", "replace")
        for code in dict.fromkeys(refusal.code for refusal in refusals):
            same = [refusal for refusal in refusals if refusal.code == code]
            reason = same[0].reason
            if len(same) > 1:
                reason = f"{len(same)} items; the first: {reason}"
            self.inbox.dead_letter(text, code, reason, f"{name}:{request_id}")
            logger.warning(
                "webhook payload not mapped", connector=name, reason_code=code, reason=reason
            )
        if mapped.ignored is not None:
            logger.info("webhook ignored", connector=name, reason=mapped.ignored)
            return Answer(200, {"ignored": mapped.ignored})
        metrics.add_metric(name=Metric.WEBHOOK_EVENTS, unit="Count", value=len(bodies))
        return Answer(202, {"events": len(bodies), "dead_lettered": len(refusals)})
